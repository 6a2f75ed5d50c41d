/* The host probe (docs/metrics.md §10): how late the host wakes a thread
 * that asked to be woken, measured beside the load engine through a run.
 *
 * A thread sleeps to absolute CLOCK_MONOTONIC deadlines one period apart
 * (clock_nanosleep, TIMER_ABSTIME) and records, at every wake-up, how late
 * it came: its clock read minus the deadline. It does nothing else, so its
 * lateness is the host's alone (timer slack, other processes holding the
 * CPUs, a hypervisor's steal), never the client's. It is created by the
 * engine's loop thread and inherits that thread's scheduling policy,
 * priority and CPU affinity (PTHREAD_INHERIT_SCHED): it sees what the loop
 * would see, not what a SCHED_IDLE thread would. Cost: one wake-up per
 * period (IM_HOST_PROBE_PERIOD_NS: 500 a second, a few µs each).
 *
 * Ownership: the caller embeds struct im_host_probe (zero-filled); start
 * and stop are called by one thread; `lat` is read only after stop has
 * returned, and freed with im_hostlat_cleanup. The probe thread blocks
 * every signal. */
#ifndef IM_LOAD_HOSTPROBE_H
#define IM_LOAD_HOSTPROBE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "core/hostlat.h"

#define IM_HOST_PROBE_PERIOD_NS 2000000

struct im_host_probe {
  pthread_t thread;
  atomic_bool stop;
  bool started;
  int64_t t0;                      /* CLOCK_MONOTONIC origin of the run */
  struct im_hostlat lat;
};

/* Starts the probe on a new thread, lateness stored run-relative to t0
 * (CLOCK_MONOTONIC ns). IM_OK, or IM_SYS when the thread cannot be created
 * (p is then left stopped: stop is a no-op on it). */
enum im_err im_host_probe_start(struct im_host_probe *p, int64_t t0, int64_t period_ns) IM_WUR;
/* Stops and joins the probe (within one period); no-op when not started. */
void im_host_probe_stop(struct im_host_probe *p);

#endif
