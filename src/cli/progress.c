/* The progress line (progress.h). */
#include "cli/progress.h"
#include "cli/term.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/thread.h"

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

static void print_line(struct im__progress *pr, bool final) {
  uint64_t sched = 0, sent = 0, done = 0, errors = 0, ttft_w = 0;
  uint32_t inflight = 0, queued = 0;
  double ttft = 0;
  for (uint32_t k = 0; k < pr->n; k++) {
    const struct im_load_progress *p = &pr->p[k];
    uint64_t d = LOAD(p->completed);
    int64_t t = LOAD(p->ttft_p50_ns);
    sched += LOAD(p->scheduled);
    sent += LOAD(p->dispatched);
    done += d;
    errors += LOAD(p->failed);
    inflight += (uint32_t)LOAD(p->in_flight);
    queued += (uint32_t)LOAD(p->queued);
    if (t > 0) { /* the loaders' medians, weighted by their successes */
      ttft += (double)t * (double)d;
      ttft_w += d;
    }
  }
  int64_t now = im_now_ns();
  double dt = (double)(now - pr->prev_t) * 1e-9;
  double rate = dt > 0 ? (double)(done - pr->prev_done) / dt : 0;
  pr->prev_t = now;
  pr->prev_done = done;
  uint64_t total = pr->total ? (sched > pr->total ? sched : pr->total) : sched;
  char bar[24] = "";
  if (pr->total && pr->tty) {
    int filled = (int)(20.0 * (double)sent / (double)pr->total);
    for (int i = 0; i < 20; i++)
      bar[i] = i < filled ? '#' : '.';
    bar[20] = '\0';
  }
  char ttft_text[32] = "-";
  if (ttft_w)
    snprintf(ttft_text, sizeof ttft_text, "%.1f ms", ttft / (double)ttft_w / 1e6);
  char line[320];
  int len = snprintf(line, sizeof line,
                     "%s%s%6.1fs  sent %" PRIu64 "/%" PRIu64 "  in flight %" PRIu32 "%s  done %" PRIu64
                     "  errors %" PRIu64 "  %.1f req/s  TTFT p50 %s",
                     bar, bar[0] ? " " : "", (double)(now - pr->t0) * 1e-9, sent, total, inflight,
                     queued ? " (+queued)" : "", done, errors, rate, ttft_text);
  /* On a terminal the line is redrawn in place: it must not wrap (a wrapped
   * line scrolls a new one at every update), so it is cut to the width. */
  if (pr->tty && len > 0) {
    int w = im__term_width(stderr) - 1;
    if (len > w && bar[0]) /* the bar goes first */
      memmove(line, line + 21, (size_t)(len -= 21) + 1);
    if (len > w)
      line[w] = '\0';
  }
  fprintf(stderr, "%s%s%s", pr->tty ? "\r\033[K" : "", line,
          pr->tty ? (final ? "\n" : "") : "\n");
  fflush(stderr);
}

static void *progress_main(void *arg) {
  struct im__progress *pr = arg;
  int64_t period = pr->tty ? 1000000000LL : 5000000000LL;
  struct timespec due;
  clock_gettime(CLOCK_MONOTONIC, &due);
  pthread_mutex_lock(&pr->mu);
  while (!pr->stop) {
    due.tv_sec += period / 1000000000LL;
    /* A timed wait, not a sleep: stop wakes it at once. */
    while (!pr->stop && pthread_cond_timedwait(&pr->cv, &pr->mu, &due) != ETIMEDOUT)
      ;
    if (!pr->stop)
      print_line(pr, false);
  }
  pthread_mutex_unlock(&pr->mu);
  return NULL;
}

void im__progress_start(struct im__progress *pr, const struct im_load_progress *p, uint32_t n,
                        uint64_t total, bool tty) {
  memset(pr, 0, sizeof *pr);
  pr->p = p;
  pr->n = n;
  pr->total = total;
  pr->tty = tty;
  pr->t0 = pr->prev_t = im_now_ns();
  pthread_condattr_t ca;
  if (pthread_condattr_init(&ca))
    return;
  bool ok = !pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) && !pthread_mutex_init(&pr->mu, NULL);
  if (ok && pthread_cond_init(&pr->cv, &ca)) {
    pthread_mutex_destroy(&pr->mu);
    ok = false;
  }
  pthread_condattr_destroy(&ca);
  if (!ok)
    return;
  int e = im_thread_start_background(&pr->thread, progress_main, pr);
  if (e) {
    im_warn("no progress line: cannot start its thread: %s", strerror(e));
    pthread_cond_destroy(&pr->cv);
    pthread_mutex_destroy(&pr->mu);
    return;
  }
  pr->on = true;
}

void im__progress_stop(struct im__progress *pr) {
  if (!pr->on)
    return;
  pthread_mutex_lock(&pr->mu);
  pr->stop = true;
  pthread_cond_signal(&pr->cv);
  pthread_mutex_unlock(&pr->mu);
  pthread_join(pr->thread, NULL);
  print_line(pr, true);
  pthread_cond_destroy(&pr->cv);
  pthread_mutex_destroy(&pr->mu);
  pr->on = false;
}
