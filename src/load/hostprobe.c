/* The host probe: see load/hostprobe.h. */
#include "load/hostprobe.h"

#include <errno.h>
#include <signal.h>
#include <time.h>

#include "core/clock.h"

static void *probe_main(void *arg) {
  struct im_host_probe *p = arg;
  int64_t period = p->lat.period_ns;
  int64_t due = im_now_ns() + period;
  while (!atomic_load_explicit(&p->stop, memory_order_relaxed)) {
    struct timespec ts = {.tv_sec = due / 1000000000, .tv_nsec = due % 1000000000};
    int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    if (rc == EINTR)
      continue;
    int64_t now = im_now_ns();
    im_hostlat_add(&p->lat, now - p->t0, now - due);
    /* The next deadline is the next multiple of the period after now: a
     * long stall is one late wake-up, not a burst of catch-up ones. */
    due += period;
    if (due <= now)
      due += ((now - due) / period + 1) * period;
  }
  return NULL;
}

enum im_err im_host_probe_start(struct im_host_probe *p, int64_t t0, int64_t period_ns) {
  im_hostlat_init(&p->lat, period_ns > 0 ? period_ns : IM_HOST_PROBE_PERIOD_NS);
  p->t0 = t0;
  p->started = false;
  atomic_store(&p->stop, false);
  pthread_attr_t attr;
  if (pthread_attr_init(&attr))
    return IM_SYS;
  /* The caller's policy, priority and affinity (the engine's loop). */
  (void)pthread_attr_setinheritsched(&attr, PTHREAD_INHERIT_SCHED);
  (void)pthread_attr_setstacksize(&attr, 64 * 1024);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&p->thread, &attr, probe_main, p);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (rc)
    return IM_SYS;
  p->started = true;
  return IM_OK;
}

void im_host_probe_stop(struct im_host_probe *p) {
  if (!p->started)
    return;
  atomic_store(&p->stop, true);
  pthread_join(p->thread, NULL);
  p->started = false;
}
