/* The live progress line of `infermeter run`, printed by a thread of its
 * own from the loaders' counters (load/loader.h, struct im_load_progress):
 * on a terminal one line redrawn every second, else a plain line every 5 s
 * (the loaders' loops never print).
 *
 * Ownership: the caller owns the counters and keeps them until
 * im__progress_stop has returned. Thread-safety: start and stop from one
 * thread; the printing thread blocks every signal. Failure: when its thread
 * cannot start, there is no progress line (a warning says so); the run goes
 * on. */
#ifndef IM_CLI_PROGRESS_H
#define IM_CLI_PROGRESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "load/loader.h"

struct im__progress {
  bool on, stop, tty;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  const struct im_load_progress *p; /* n loaders' counters */
  uint32_t n;
  uint64_t total; /* requests planned (0: unknown) */
  int64_t t0;     /* CLOCK_MONOTONIC at start */
  int64_t prev_t; /* for the current (not cumulative) rate */
  uint64_t prev_done;
};

/* Starts printing to stderr: tty selects the redrawn line. */
void im__progress_start(struct im__progress *pr, const struct im_load_progress *p, uint32_t n,
                        uint64_t total, bool tty);
/* Prints a last line (ending the terminal's redrawn one) and joins. No-op
 * when not started. */
void im__progress_stop(struct im__progress *pr);

#endif
