/* The record writer (loader_int.h, struct im__load_writer): requests.jsonl
 * lines are serialised and written on a thread of their own, fed by a
 * bounded queue, so that neither JSON nor write(2) sits between two socket
 * reads of the loop. The writer takes the queue in batches (one write(2)
 * and one wake-up per batch, not per record: at 40K requests a second a
 * futex and a write per record were a quarter of the client's system
 * calls). When the queue is full the loop waits (never drops a
 * record) and the wait is counted in the result (writer_wait_ns,
 * writer_waits). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/thread.h"
#include "load/loader_int.h"

/* Records waiting: a few seconds of a heavy load's completions. */
#define WRITER_QUEUE 4096

/* Appends r to the result's array (the writer's until it is joined). */
static enum im_err keep(struct im__load_writer *w, struct im_record *r) {
  struct im_load_result *res = w->res;
  if (res->n_records == w->cap_records) {
    size_t cap = w->cap_records ? w->cap_records * 2 : 256;
    struct im_record *p = realloc(res->records, cap * sizeof *p);
    if (!p) {
      im_record_cleanup(r);
      return IM_NOMEM;
    }
    res->records = p;
    w->cap_records = cap;
  }
  /* The run keeps every record until its end: its chunk arrays shrink to
   * what they hold (a live record's start at 64 chunks and grow by
   * doubling; a short answer's would be mostly empty). */
  if (r->chunk_us && r->cap_chunks > r->n_chunks && r->n_chunks) {
    uint32_t *us = realloc(r->chunk_us, (size_t)r->n_chunks * sizeof *us);
    uint16_t *tok = r->chunk_tokens ? realloc(r->chunk_tokens, (size_t)r->n_chunks * sizeof *tok)
                                    : NULL;
    if (us)
      r->chunk_us = us;
    if (tok)
      r->chunk_tokens = tok;
    if (us || tok) /* both hold at least n_chunks either way */
      r->cap_chunks = r->n_chunks;
  }
  res->records[res->n_records++] = *r;
  /* The chunk arrays now belong to the stored copy. */
  r->chunk_us = NULL;
  r->chunk_tokens = NULL;
  r->cap_chunks = r->n_chunks = 0;
  return IM_OK;
}

/* A failed write: the reason kept, the run told to stop (the record is
 * counted by the caller). */
static void write_failed(struct im__load_writer *w, const char *why, int e) {
  if (!w->res->record_write_error[0])
    snprintf(w->res->record_write_error, sizeof w->res->record_write_error,
             "requests.jsonl: %s%s%s", why, e ? ": " : "", e ? strerror(e) : "");
  atomic_store(&w->failed, true);
}

/* Writes the batch of lines in w->line, whole lines or
 * none: a short write is cut back to the end of the last whole line
 * written, so that what was written stays readable; each line not written
 * counts in record_write_failures. One lseek and (usually) one write(2) per
 * batch, not per record. */
static void flush_lines(struct im__load_writer *w) {
  int fd = w->fd;
  if (fd < 0 || !w->line.len)
    return;
  off_t start = lseek(fd, 0, SEEK_END); /* -1 on a pipe or a device: no cutting back */
  const char *p = w->line.data;
  size_t left = w->line.len;
  while (left) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int e = n < 0 ? errno : EIO;
      size_t done = w->line.len - left, whole = done, lost = 0;
      while (whole && w->line.data[whole - 1] != '\n')
        whole--;
      for (size_t i = whole; i < w->line.len; i++)
        lost += w->line.data[i] == '\n';
      if (done != whole && start >= 0 && ftruncate(fd, start + (off_t)whole) != 0)
        e = errno;
      w->res->record_write_failures += lost;
      write_failed(w, done == whole ? "write failed" : "short write", e);
      break;
    }
    p += n;
    left -= (size_t)n;
  }
  im_buf_reset(&w->line);
}

/* Serialises r onto the end of w->line (the batch being written). */
static void serialise(struct im__load_writer *w, const struct im_record *r) {
  if (w->fd < 0)
    return;
  if (atomic_load(&w->failed)) {
    w->res->record_write_failures++;
    return;
  }
  enum im_err err = im_record_to_jsonl(r, &w->line);
  if (err == IM_LIMIT && w->line.len) { /* the batch is full: out with it, then the line alone */
    flush_lines(w);
    err = atomic_load(&w->failed) ? IM_OK : im_record_to_jsonl(r, &w->line);
    if (atomic_load(&w->failed))
      w->res->record_write_failures++;
  }
  if (err) {
    w->res->record_write_failures++;
    write_failed(w, err == IM_LIMIT ? "a record above IM_RECORD_LINE_MAX" : "out of memory", 0);
  }
}

/* How long the writer lets a first record wait for others (a batch is one
 * write(2) and one wake-up instead of one per record). Records reach the
 * file at most this much later; the loop wakes the writer at once when
 * WRITER_BATCH records wait. */
#define WRITER_LINGER_NS 5000000
#define WRITER_BATCH 256
/* A batch's lines are written once they fill this much (memory bound). */
#define WRITER_FLUSH_BYTES ((size_t)1 << 20)

/* Takes what waits in the queue (at most WRITER_BATCH) into w->batch
 * (w->mu held); returns how many. */
static size_t take_batch(struct im__load_writer *w) {
  size_t k = w->n < WRITER_BATCH ? w->n : WRITER_BATCH;
  for (size_t i = 0; i < k; i++) {
    w->batch[i] = w->q[w->head];
    w->head = (w->head + 1) % WRITER_QUEUE;
  }
  w->n -= k;
  pthread_cond_signal(&w->not_full);
  return k;
}

static void *writer_main(void *arg) {
  struct im__load_writer *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->n && !w->stop) {
      w->idle = true;
      pthread_cond_wait(&w->not_empty, &w->mu);
      w->idle = false;
    }
    if (!w->n)
      break; /* stopped and drained */
    if (w->n < WRITER_BATCH && !w->stop) {
      struct timespec until;
      clock_gettime(CLOCK_MONOTONIC, &until);
      until.tv_nsec += WRITER_LINGER_NS;
      if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
      }
      while (w->n < WRITER_BATCH && !w->stop &&
             pthread_cond_timedwait(&w->not_empty, &w->mu, &until) == 0)
        ;
    }
    size_t k = take_batch(w);
    pthread_mutex_unlock(&w->mu);
    for (size_t i = 0; i < k; i++) {
      serialise(w, &w->batch[i]);
      if (w->line.len >= WRITER_FLUSH_BYTES)
        flush_lines(w);
    }
    flush_lines(w);
    for (size_t i = 0; i < k; i++) {
      if (w->on_record)
        w->on_record(w->on_record_ctx, &w->batch[i]);
      if (keep(w, &w->batch[i]) != IM_OK && !w->err)
        w->err = IM_NOMEM;
    }
    pthread_mutex_lock(&w->mu);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

enum im_err im__load_writer_start(struct im__load_writer *w, int fd, struct im_load_result *res) {
  memset(w, 0, sizeof *w);
  w->fd = fd;
  w->res = res;
  im_buf_init(&w->line, IM_RECORD_LINE_MAX);
  enum im_err err = IM_NOMEM;
  pthread_condattr_t ca;
  int ce;
  if (!(w->q = calloc(WRITER_QUEUE, sizeof *w->q)) ||
      !(w->batch = calloc(WRITER_BATCH, sizeof *w->batch)))
    goto fail_q;
  err = IM_SYS;
  if (pthread_mutex_init(&w->mu, NULL))
    goto fail_q;
  if (pthread_condattr_init(&ca))
    goto fail_mu;
  /* The linger's deadline is on the monotonic clock. */
  ce = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) || pthread_cond_init(&w->not_empty, &ca);
  pthread_condattr_destroy(&ca);
  if (ce)
    goto fail_mu;
  if (pthread_cond_init(&w->not_full, NULL))
    goto fail_ne;
  int e = im_thread_start_background(&w->thread, writer_main, w);
  if (e) {
    im_error("load engine: cannot start the record writer thread: %s", strerror(e));
    pthread_cond_destroy(&w->not_full);
    goto fail_ne;
  }
  w->on = true;
  return IM_OK;
fail_ne:
  pthread_cond_destroy(&w->not_empty);
fail_mu:
  pthread_mutex_destroy(&w->mu);
fail_q:
  free(w->q);
  free(w->batch);
  w->q = NULL;
  w->batch = NULL;
  return err;
}

void im__load_writer_push(struct im__load_writer *w, struct im_record *r) {
  if (!w->on) { /* no thread (setup failed, or the run is ending without) */
    if (w->res) {
      serialise(w, r);
      flush_lines(w);
    }
    if (w->res && w->on_record)
      w->on_record(w->on_record_ctx, r);
    if (w->res && keep(w, r) != IM_OK && !w->err)
      w->err = IM_NOMEM;
    return;
  }
  pthread_mutex_lock(&w->mu);
  if (w->n == WRITER_QUEUE) {
    int64_t t = im_now_ns();
    while (w->n == WRITER_QUEUE)
      pthread_cond_wait(&w->not_full, &w->mu);
    w->res->writer_wait_ns += im_now_ns() - t;
    w->res->writer_waits++;
  }
  w->q[(w->head + w->n) % WRITER_QUEUE] = *r;
  w->n++;
  /* A wake-up only when the writer sleeps with nothing to do, or when a
   * batch is full (it lingers meanwhile, WRITER_LINGER_NS): not one futex
   * call per record. */
  if (w->idle || w->n == WRITER_BATCH)
    pthread_cond_signal(&w->not_empty);
  pthread_mutex_unlock(&w->mu);
  r->chunk_us = NULL; /* the queue's now */
  r->chunk_tokens = NULL;
  r->cap_chunks = r->n_chunks = 0;
}

/* Writes everything queued, then joins. The result's records are the
 * caller's again afterwards. */
enum im_err im__load_writer_stop(struct im__load_writer *w) {
  if (!w->on) {
    im_buf_cleanup(&w->line);
    return w->err;
  }
  pthread_mutex_lock(&w->mu);
  w->stop = true;
  pthread_cond_signal(&w->not_empty);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  pthread_cond_destroy(&w->not_full);
  pthread_cond_destroy(&w->not_empty);
  pthread_mutex_destroy(&w->mu);
  free(w->q);
  free(w->batch);
  w->q = NULL;
  w->batch = NULL;
  im_buf_cleanup(&w->line);
  w->on = false;
  return w->err;
}
