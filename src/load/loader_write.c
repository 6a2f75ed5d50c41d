/* The record writer (loader_int.h, struct im__load_writer): requests.jsonl
 * lines are serialised and written on a thread of their own, fed by a
 * bounded queue, so that neither JSON nor write(2) sits between two socket
 * reads of the loop. When the queue is full the loop waits (never drops a
 * record) and the wait is counted in the result (writer_wait_ns,
 * writer_waits). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* One line, whole or not at all: a short write is cut back to the line's
 * start so that what was written stays readable. After a failure no line
 * is written (each record is counted in record_write_failures: it is in
 * the result, not on disk). */
static void write_line(struct im__load_writer *w, const struct im_record *r) {
  int fd = w->fd;
  if (fd < 0)
    return;
  if (atomic_load(&w->failed)) {
    w->res->record_write_failures++;
    return;
  }
  im_buf_reset(&w->line);
  enum im_err err = im_record_to_jsonl(r, &w->line);
  if (err) {
    w->res->record_write_failures++;
    write_failed(w, err == IM_LIMIT ? "a record above IM_RECORD_LINE_MAX" : "out of memory", 0);
    return;
  }
  off_t start = lseek(fd, 0, SEEK_END); /* -1 on a pipe or a device: no cutting back */
  const char *p = w->line.data;
  size_t left = w->line.len;
  while (left) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int e = n < 0 ? errno : EIO;
      if (left != w->line.len && start >= 0 && ftruncate(fd, start) != 0)
        e = errno;
      w->res->record_write_failures++;
      write_failed(w, left == w->line.len ? "write failed" : "short write", e);
      return;
    }
    p += n;
    left -= (size_t)n;
  }
}

static void *writer_main(void *arg) {
  struct im__load_writer *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->n && !w->stop)
      pthread_cond_wait(&w->not_empty, &w->mu);
    if (!w->n)
      break; /* stopped and drained */
    struct im_record r = w->q[w->head];
    w->head = (w->head + 1) % WRITER_QUEUE;
    w->n--;
    pthread_cond_signal(&w->not_full);
    pthread_mutex_unlock(&w->mu);
    write_line(w, &r);
    if (w->on_record)
      w->on_record(w->on_record_ctx, &r);
    if (keep(w, &r) != IM_OK && !w->err)
      w->err = IM_NOMEM;
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
  if (!(w->q = calloc(WRITER_QUEUE, sizeof *w->q)))
    return IM_NOMEM;
  if (pthread_mutex_init(&w->mu, NULL))
    goto fail_q;
  if (pthread_cond_init(&w->not_empty, NULL))
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
  w->q = NULL;
  return IM_SYS;
}

void im__load_writer_push(struct im__load_writer *w, struct im_record *r) {
  if (!w->on) { /* no thread (setup failed, or the run is ending without) */
    if (w->res)
      write_line(w, r);
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
  w->q = NULL;
  im_buf_cleanup(&w->line);
  w->on = false;
  return w->err;
}
