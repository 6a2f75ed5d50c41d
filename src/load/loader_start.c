/* One start instant for the shards of a stage (loader.h, struct
 * im_load_start): a barrier after each shard's preparation; the thread
 * that completes it reads the clock once and calls on_start, so every
 * shard's records share one origin. */
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <stdbool.h>

#include "core/clock.h"
#include "load/loader_int.h"

enum im_err im_load_start_init(struct im_load_start *s, uint32_t n_shards,
                               void (*on_start)(void *ctx, int64_t t0_mono, int64_t wall_ns),
                               void *ctx) {
  if (!n_shards)
    return IM_INVAL;
  *s = (struct im_load_start){.n = n_shards, .on_start = on_start, .on_start_ctx = ctx};
  if (pthread_mutex_init(&s->mu, NULL))
    return IM_SYS;
  if (pthread_cond_init(&s->cv, NULL)) {
    pthread_mutex_destroy(&s->mu);
    return IM_SYS;
  }
  s->inited = true;
  return IM_OK;
}

void im_load_start_cleanup(struct im_load_start *s) {
  if (!s || !s->inited)
    return;
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  s->inited = false;
}

/* See loader_int.h. */
bool im__load_start_wait(struct im_load_start *s, bool ok, int64_t *t0, int64_t *wall) {
  pthread_mutex_lock(&s->mu);
  if (!ok)
    s->failed = true;
  if (++s->arrived == s->n) {
    /* The last shard ready: the stage starts now, for all. */
    if (s->at_mono > 0) {
      struct timespec ts = {.tv_sec = s->at_mono / 1000000000, .tv_nsec = s->at_mono % 1000000000};
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
      s->t0_mono = s->at_mono;
      s->wall_ns = s->at_wall;
    } else {
      s->t0_mono = im_now_ns();
      s->wall_ns = im_wall_ns();
    }
    if (!s->failed && s->on_start)
      s->on_start(s->on_start_ctx, s->t0_mono, s->wall_ns);
    s->released = true;
    pthread_cond_broadcast(&s->cv);
  }
  while (!s->released)
    pthread_cond_wait(&s->cv, &s->mu);
  bool go = !s->failed;
  *t0 = s->t0_mono;
  *wall = s->wall_ns;
  pthread_mutex_unlock(&s->mu);
  return go;
}

void im_load_start_abandon(struct im_load_start *s, uint32_t n) {
  int64_t t0, wall;
  /* The last of them releases the barrier; earlier ones would wait, so
   * arrive without waiting for all but the last. */
  for (uint32_t i = 0; i + 1 < n; i++) {
    pthread_mutex_lock(&s->mu);
    s->failed = true;
    if (++s->arrived == s->n) {
      s->released = true;
      pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
  }
  if (n)
    (void)im__load_start_wait(s, false, &t0, &wall);
}
