/* The built-in server: connections, HTTP routing and streaming on a libuv
 * loop; the engine's step deadlines on a timerfd (libuv timers have
 * millisecond resolution, too coarse for steps of a few hundred us under
 * --time-scale). Everything runs on one thread. */
#include "serve/server_int.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "im_version.h"
#include "core/clock.h"
#include "core/log.h"


static void process_input(struct conn *c);

/* ---- configuration ------------------------------------------------------ */

void im_server_config_default(struct im_server_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->host = "127.0.0.1";
  cfg->port = 8000;
  im_engine_config_default(&cfg->engine);
  cfg->max_body = 4u << 20;
  cfg->max_head = 16u << 10;
  cfg->idle_timeout_ns = 60 * 1000000000LL;
  cfg->keepalive_comment_ns = 2 * 1000000000LL;
  cfg->max_connections = 10000;
  cfg->max_output_backlog = 8u << 20;
  im_agent_policy_default(&cfg->agent);
  im_lora_config_default(&cfg->lora);
}

/* Simulated ns since start (fault windows and rates are simulated time). */
int64_t im__srv_sim_now(const struct im_server *s, int64_t now) {
  return (int64_t)((double)(now - s->t0) * s->cfg.engine.time_scale);
}

/* ---- engine timer ------------------------------------------------------- */

void im__srv_arm_engine(struct im_server *s) {
  int64_t d = im_engine_next_deadline(s->engine);
  if (d == s->armed_at)
    return;
  struct itimerspec its;
  memset(&its, 0, sizeof its);
  if (d >= 0) {
    if (d == 0)
      d = 1; /* an all-zero it_value would disarm */
    its.it_value.tv_sec = d / 1000000000;
    its.it_value.tv_nsec = d % 1000000000;
  }
  if (timerfd_settime(s->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
    s->armed_at = d;
}

static void run_ready(struct im_server *s) {
  while (s->ready) {
    struct conn *c = s->ready;
    s->ready = c->ready_next;
    c->on_ready = false;
    c->ready_next = NULL;
    process_input(c);
  }
}

static void on_engine_timer(uv_poll_t *h, int status, int events) {
  (void)status;
  (void)events;
  struct im_server *s = h->data;
  uint64_t expirations;
  if (read(s->tfd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
    im_warn("timerfd read: %s", strerror(errno));
  s->armed_at = -2;
  s->batching = true;
  im_engine_tick(s->engine, im_now_ns());
  s->batching = false;
  im__srv_flush(s); /* what start_step wrote (im__srv_on_step sent the rest) */
  run_ready(s);
  im__srv_arm_engine(s);
}

/* ---- output ------------------------------------------------------------- */

static void start_write(struct conn *c);

static void on_write(uv_write_t *req, int status) {
  struct conn *c = req->data;
  c->writing = false;
  im_buf_reset(&c->inflight);
  if (status < 0) {
    im__srv_conn_fail(c);
    return;
  }
  if (c->pending.len)
    start_write(c);
  else if (c->close_after_write && !c->stream)
    im__srv_conn_close(c);
}

static void start_write(struct conn *c) {
  struct im_buf tmp = c->inflight;
  c->inflight = c->pending;
  c->pending = tmp;
  im_buf_reset(&c->pending);
  uv_buf_t b = uv_buf_init(c->inflight.data, (unsigned)c->inflight.len);
  c->wreq.data = c;
  int r = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write);
  if (r < 0) {
    im__srv_conn_fail(c);
    return;
  }
  c->writing = true;
}

/* Keeps bytes the socket did not take (up to max_output_backlog; a client
 * that reads slower than the engine writes is dropped, as vLLM's server
 * would eventually time out) and has libuv write them when it can. */
static void conn_queue(struct conn *c, const char *data, size_t len) {
  if (c->pending.len + len > c->srv->cfg.max_output_backlog ||
      im_buf_append(&c->pending, data, len)) {
    c->srv->metrics.truncated_backlog++;
    im__srv_conn_fail(c);
    return;
  }
  if (!c->writing)
    start_write(c);
}

/* Writes at once when the socket takes the bytes, else queues them. */
static void conn_write_now(struct conn *c, const char *data, size_t len) {
  if (c->closing || c->failing || !len)
    return;
  if (!c->writing && !c->pending.len) {
    uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
    int r = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (r == (int)len)
      return;
    if (r == UV_EAGAIN || r == UV_ENOSYS)
      r = 0;
    if (r < 0) {
      im__srv_conn_fail(c);
      return;
    }
    data += r;
    len -= (size_t)r;
  }
  conn_queue(c, data, len);
}

/* Sends the connection's bytes gathered in this engine step now (before a
 * close, or when its bytes would otherwise be out of order). */
void im__srv_conn_flush(struct conn *c) {
  struct im_server *s = c->srv;
  struct im_outslot *sl = im_outbatch_slot_of(&s->ob, &c->oref);
  if (!sl)
    return;
  sl->flushed = true;
  sl->ns = im_now_ns();
  conn_write_now(c, im_outbatch_data(&s->ob, sl), sl->len);
  sl->done_ns = im_now_ns();
}

/* Queues bytes for the client. Inside an engine step they are gathered per
 * connection and sent when the step's callbacks are done (im__srv_flush);
 * otherwise written at once when the socket takes them. */
void im__srv_conn_write(struct conn *c, const char *data, size_t len) {
  if (c->closing || c->failing || !len)
    return;
  struct im_server *s = c->srv;
  if (s->batching) {
    /* One unsent slot per connection: a partial send of an earlier one
     * must not let a later one overtake it. */
    struct im_outslot *sl = im_outbatch_slot_of(&s->ob, &c->oref);
    if (sl && c->oref.slot != s->ob.n - 1)
      im__srv_conn_flush(c);
    if (c->closing || c->failing)
      return;
    if (!c->writing && !c->pending.len) {
      if (im_outbatch_add(&s->ob, c, &c->oref, data, len) == IM_OK)
        return;
      im__srv_conn_flush(c);
    }
  }
  conn_write_now(c, data, len);
}

/* serve --io uring: every gathered slot in one submission (or as few as the
 * ring allows). Slots it could not submit are left to im__srv_flush. */
static void send_uring(struct im_server *s) {
  struct im_outbatch *b = &s->ob;
  if (s->sends_cap < b->n) {
    struct im_uring_send *p = realloc(s->sends, b->n * sizeof *p);
    uint32_t *q = realloc(s->send_slot, b->n * sizeof *q);
    if (p)
      s->sends = p;
    if (q)
      s->send_slot = q;
    if (!p || !q)
      return; /* im__srv_flush writes them */
    s->sends_cap = b->n;
  }
  size_t n = 0;
  for (uint32_t i = 0; i < b->n; i++) {
    struct im_outslot *sl = &b->slot[i];
    struct conn *c = sl->owner;
    int fd;
    if (sl->flushed || c->closing || c->failing ||
        uv_fileno((uv_handle_t *)&c->tcp, &fd) < 0)
      continue;
    s->sends[n] = (struct im_uring_send){.fd = fd, .data = im_outbatch_data(b, sl), .len = sl->len};
    s->send_slot[n++] = i;
  }
  if (!n)
    return;
  enum im_err err = im_uring_send_all(s->uring, s->sends, n);
  for (size_t j = 0; j < n; j++) {
    struct im_uring_send *v = &s->sends[j];
    if (!v->ns)
      continue; /* not submitted */
    struct im_outslot *sl = &b->slot[s->send_slot[j]];
    struct conn *c = sl->owner;
    sl->flushed = true;
    sl->ns = v->ns;
    sl->done_ns = v->done_ns;
    int res = v->res == -EAGAIN ? 0 : v->res;
    if (res < 0)
      im__srv_conn_fail(c);
    else if ((size_t)res < sl->len)
      conn_queue(c, (const char *)v->data + res, sl->len - (size_t)res);
  }
  if (err) {
    im_warn("serve: io_uring submission failed; writing with write() from now on");
    im_uring_close(s->uring);
    s->uring = NULL;
  }
}

/* Sends what the engine step gathered (from im__srv_on_step, at the end of
 * the step's callbacks, before the next step's scheduling and MoE routing
 * run; and after im_engine_tick for anything written since), then records its chunks (truth log,
 * lateness histogram) with the instants of the sends that carried them. */
void im__srv_flush(struct im_server *s) {
  struct im_outbatch *b = &s->ob;
  if (s->uring && b->n)
    send_uring(s);
  for (uint32_t i = 0; i < b->n; i++) {
    struct im_outslot *sl = &b->slot[i];
    if (sl->flushed)
      continue;
    sl->flushed = true;
    sl->ns = im_now_ns();
    conn_write_now(sl->owner, im_outbatch_data(b, sl), sl->len);
    sl->done_ns = im_now_ns();
  }
  im__srv_chunks_sent(s);
  im_outbatch_reset(b);
}

/* Called after the last byte of a response is queued. */
void im__srv_response_done(struct conn *c) {
  if (c->closing)
    return;
  if (c->close_after_write) {
    if (!c->writing && !c->pending.len)
      im__srv_conn_close(c);
    return;
  }
  enum im_err r = im_http_next(&c->parser);
  c->pstate = r;
  c->head_checked = false;
  if (r != IM_AGAIN && !c->on_ready) {
    /* A pipelined request is already buffered: handle it on the next pass,
     * outside whatever callback we are in. */
    c->on_ready = true;
    c->ready_next = c->srv->ready;
    c->srv->ready = c;
  }
}

static const char *status_text(int status) {
  switch (status) {
  case 100: return "Continue";
  case 200: return "OK";
  case 400: return "Bad Request";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 413: return "Content Too Large";
  case 429: return "Too Many Requests";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 503: return "Service Unavailable";
  default: return "Unknown";
  }
}

/* A whole response with a body. extra: more header lines, each ending CRLF. */
/* Whether the response about to start keeps the connection; draws the
 * connection-close fault. A closing response marks the connection. */
bool im__srv_decide_keep_alive(struct conn *c) {
  struct im_server *s = c->srv;
  bool keep = c->parser.req.keep_alive && !c->close_after_write && !s->stopping;
  if (keep && s->conn_close_fault && im_rng_uniform(&s->rng) < s->conn_close_prob) {
    keep = false;
    s->metrics.faults[IM_FAULT_CONNECTION_CLOSE]++;
  }
  if (!keep)
    c->close_after_write = true;
  return keep;
}

void im__srv_respond(struct conn *c, int status, const char *ctype, const char *body, size_t len,
                    const char *extra) {
  struct im_server *s = c->srv;
  bool keep = im__srv_decide_keep_alive(c);
  struct im_buf *f = &s->frame;
  im_buf_reset(f);
  bool head_only = c->parser.req.method == IM_HTTP_HEAD;
  enum im_err err = im_buf_printf(
      f,
      "HTTP/1.1 %d %s\r\nServer: infermeter-sim/%s\r\nContent-Type: %s\r\n"
      "Content-Length: %zu\r\nConnection: %s\r\n%s\r\n",
      status, status_text(status), IM_VERSION, ctype, len, keep ? "keep-alive" : "close",
      extra ? extra : "");
  if (!err && !head_only)
    err = im_buf_append(f, body, len);
  if (err) {
    im__srv_conn_fail(c);
    return;
  }
  if (status >= 100 && status < 600)
    s->metrics.http_responses[status / 100]++;
  im__srv_conn_write(c, f->data, f->len);
  im__srv_response_done(c);
}

void im__srv_respond_error(struct conn *c, int status, const char *msg, const char *extra) {
  struct im_buf b;
  im_buf_init(&b, 8192);
  if (im_oai_error(&b, status, msg)) {
    im_buf_cleanup(&b);
    im__srv_conn_fail(c);
    return;
  }
  im__srv_respond(c, status, "application/json", b.data, b.len, extra);
  im_buf_cleanup(&b);
}

/* An error after which the connection is closed, reading and dropping what
 * the client still sends so the close does not turn into a reset. */
void im__srv_respond_error_close(struct conn *c, int status, const char *msg) {
  c->close_after_write = true;
  im__srv_respond_error(c, status, msg, NULL);
}

/* ---- input -------------------------------------------------------------- */

static void check_head(struct conn *c) {
  struct im_http_request *r = &c->parser.req;
  c->head_checked = true;
  if (r->content_length >= 0 && (uint64_t)r->content_length > c->srv->cfg.max_body) {
    /* Answer from Content-Length before reading the body; with Expect the
     * client then sends nothing; without it the body is read and dropped. */
    im_http_discard_body(&c->parser);
    char msg[160];
    snprintf(msg, sizeof msg, "Request body of %" PRId64 " bytes exceeds the limit of %zu bytes.",
             r->content_length, c->srv->cfg.max_body);
    im__srv_respond_error_close(c, 413, msg);
    return;
  }
  if (r->expect_continue)
    im__srv_conn_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
}

static void process_input(struct conn *c) {
  while (!c->closing && !c->failing && !c->stream && !c->close_after_write) {
    enum im_err r = c->pstate;
    if (r == IM_AGAIN) {
      if (c->parser.head_done && !c->head_checked)
        check_head(c);
      return;
    }
    if (r == IM_OK) {
      im__srv_handle_request(c);
      continue; /* im__srv_respond() ran im_http_next() when the answer was immediate */
    }
    switch (r) {
    case IM_LIMIT:
      im__srv_respond_error_close(c, c->parser.head_done ? 413 : 431,
                          c->parser.head_done ? "Request body too large."
                                              : "Request head too large.");
      break;
    case IM_UNSUPPORTED:
      im__srv_respond_error_close(c, 501, "Transfer-Encoding not supported.");
      break;
    default:
      im__srv_respond_error_close(c, 400, "Malformed HTTP request.");
      break;
    }
    return;
  }
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  struct conn *c = h->data;
  buf->base = c->srv->readbuf;
  buf->len = sizeof c->srv->readbuf;
}

static void read_cb(uv_stream_t *h, ssize_t nread, const uv_buf_t *buf) {
  struct conn *c = h->data;
  struct im_server *s = c->srv;
  if (nread < 0) {
    /* EOF or error: the client is gone (a half-close would be legal HTTP,
     * but no LLM client sends one; treating it as a disconnect is what
     * frees the engine's blocks promptly). */
    if (c->draining || (!c->stream && !c->writing && !c->pending.len))
      im__srv_conn_close(c);
    else
      im__srv_conn_fail(c);
    return;
  }
  if (nread == 0)
    return;
  c->last_activity = im_now_ns();
  if (c->draining)
    return;
  bool was_ready = c->pstate == IM_OK;
  enum im_err r = im_http_feed(&c->parser, buf->base, (size_t)nread);
  if (!was_ready || r != IM_AGAIN)
    c->pstate = was_ready ? IM_OK : r;
  if (c->pstate != IM_OK && c->pstate != IM_AGAIN && c->stream) {
    /* Garbage pipelined behind a streaming request: finish the stream, then
     * close. */
    c->close_after_write = true;
    return;
  }
  process_input(c);
  run_ready(s);
  im__srv_arm_engine(s);
}

/* ---- connection lifecycle ----------------------------------------------- */

void im__srv_on_conn_closed(uv_handle_t *h) {
  struct conn *c = h->data;
  struct im_server *s = c->srv;
  if (c->prev)
    c->prev->next = c->next;
  else
    s->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  struct conn **pp = &s->ready;
  while (*pp && *pp != c)
    pp = &(*pp)->ready_next;
  if (*pp)
    *pp = c->ready_next;
  for (pp = &s->failing; *pp && *pp != c; pp = &(*pp)->fail_next)
    ;
  if (*pp)
    *pp = c->fail_next;
  im_http_parser_cleanup(&c->parser);
  im_buf_cleanup(&c->pending);
  im_buf_cleanup(&c->inflight);
  free(c);
}

static void detach_stream(struct conn *c) {
  struct stream *st = c->stream;
  if (!st)
    return;
  struct im_server *s = c->srv;
  if (st->seq) {
    s->metrics.client_aborts++;
    s->metrics.leaked_running += s->cfg.leak_cancelled;
    s->metrics.aborted_blocks += st->seq->kv.n_blocks;
    im_engine_abort(s->engine, st->seq);
    st->seq = NULL;
  }
  im__srv_stream_free(st);
}

/* The client is gone or misbehaves: the connection is closed at once, but
 * only after the current loop turn (the reaper below). Callers are often
 * deep inside a write for a stream (on_tokens, on_finish, the keep-alive
 * sweep); freeing the stream under them is what used to crash the server
 * under load, so nothing is freed here: the connection stops reading and
 * writing, and its stream stays valid until the reaper detaches it. */
void im__srv_conn_fail(struct conn *c) {
  if (c->closing || c->failing)
    return;
  c->failing = true;
  uv_read_stop((uv_stream_t *)&c->tcp);
  c->fail_next = c->srv->failing;
  c->srv->failing = c;
}

/* uv_check: runs after each poll phase, outside every other callback. */
static void reap_failed(uv_check_t *h) {
  struct im_server *s = h->data;
  while (s->failing) {
    struct conn *c = s->failing;
    s->failing = c->fail_next;
    c->fail_next = NULL;
    if (c->closing)
      continue;
    detach_stream(c);
    c->closing = true;
    s->metrics.connections_current--;
    uv_close((uv_handle_t *)&c->tcp, im__srv_on_conn_closed);
  }
  im__srv_arm_engine(s);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  struct conn *c = req->data;
  if (status < 0 && !c->closing) {
    c->closing = true;
    c->srv->metrics.connections_current--;
    uv_close((uv_handle_t *)&c->tcp, im__srv_on_conn_closed);
  }
}

/* Graceful close after the last response: send FIN, then keep reading and
 * dropping until the client closes (or a short timeout in the sweep), so
 * unread request bytes never turn the close into a reset. */
void im__srv_conn_close(struct conn *c) {
  if (c->closing || c->failing)
    return;
  im__srv_conn_flush(c); /* this step's bytes first (uv_shutdown waits for writes) */
  detach_stream(c);
  if (c->draining)
    return;
  c->draining = true;
  c->drain_since = im_now_ns();
  c->sreq.data = c;
  if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
    c->closing = true;
    c->srv->metrics.connections_current--;
    uv_close((uv_handle_t *)&c->tcp, im__srv_on_conn_closed);
  }
}

static void on_connection(uv_stream_t *ls, int status) {
  struct im_server *s = ls->data;
  if (status < 0) {
    im_warn("accept: %s", uv_strerror(status));
    return;
  }
  struct conn *c = calloc(1, sizeof *c);
  if (!c)
    return;
  c->srv = s;
  if (s->cfg.unix_socket)
    uv_pipe_init(&s->loop, &c->pipe, 0);
  else
    uv_tcp_init(&s->loop, &c->tcp);
  c->tcp.data = c;
  if (uv_accept(ls, (uv_stream_t *)&c->tcp) < 0) {
    uv_close((uv_handle_t *)&c->tcp, (uv_close_cb)free);
    return;
  }
  c->next = s->conns;
  if (s->conns)
    s->conns->prev = c;
  s->conns = c;
  s->metrics.connections_opened++;
  s->metrics.connections_current++;
  if (s->metrics.connections_current > s->cfg.max_connections || s->stopping) {
    im__srv_conn_fail(c);
    return;
  }
  if (!s->cfg.unix_socket)
    uv_tcp_nodelay(&c->tcp, 1);
  struct im_http_limits lim;
  im_http_limits_default(&lim);
  lim.max_body = s->cfg.max_body;
  lim.max_head = s->cfg.max_head;
  im_http_parser_init(&c->parser, &lim);
  c->pstate = IM_AGAIN;
  /* Responses not yet written: a client that does not read is cut off at
   * IM_SERVE_OUT_MAX. */
  im_buf_init(&c->pending, IM_SERVE_OUT_MAX);
  im_buf_init(&c->inflight, IM_SERVE_OUT_MAX);
  c->id = ++s->next_conn;
  c->last_activity = im_now_ns();
  uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
}

/* ---- periodic work ------------------------------------------------------ */

static void on_sweep(uv_timer_t *t) {
  struct im_server *s = t->data;
  int64_t now = im_now_ns();
  int64_t ka = s->cfg.keepalive_comment_ns; /* wall-clock, like the DeepSeek API's */
  for (struct stream *st = s->streams; st; st = st->next) {
    if (st->streaming && st->seq && st->seq->state == IM_SEQ_WAITING &&
        now - st->last_keepalive >= ka) {
      st->last_keepalive = now;
      im__srv_stream_send(st, ": keep-alive\n\n", 14);
    }
  }
  for (struct conn *c = s->conns, *next; c; c = next) {
    next = c->next;
    if (c->closing)
      continue;
    if (c->draining && now - c->drain_since > 2000000000LL) {
      c->closing = true;
      s->metrics.connections_current--;
      uv_close((uv_handle_t *)&c->tcp, im__srv_on_conn_closed);
    } else if (!c->draining && !c->stream && !c->writing &&
               now - c->last_activity > s->cfg.idle_timeout_ns) {
      im__srv_conn_close(c);
    }
  }
}

static void on_hiccup(uv_timer_t *t) {
  struct im_server *s = t->data;
  for (size_t i = 0; i < s->n_faults; i++) {
    const struct im_fault *f = &s->faults[i];
    int64_t sn = im__srv_sim_now(s, im_now_ns());
    if (f->kind != IM_FAULT_HICCUP || sn < f->from_ns || (f->to_ns >= 0 && sn > f->to_ns))
      continue;
    im_engine_hiccup(s->engine, (int64_t)((double)f->ms_ns / s->cfg.engine.time_scale));
    s->metrics.faults[IM_FAULT_HICCUP]++;
  }
}

static void on_shrink(uv_timer_t *t) {
  struct im_server *s = t->data;
  for (size_t i = 0; i < s->n_faults; i++) {
    if (s->faults[i].kind != IM_FAULT_KV_SHRINK)
      continue;
    if (im_engine_resize_kv(s->engine, s->faults[i].fraction) == IM_OK)
      s->metrics.faults[IM_FAULT_KV_SHRINK]++;
  }
  im__srv_arm_engine(s);
}

static void close_walk(uv_handle_t *h, void *arg) {
  (void)arg;
  if (uv_is_closing(h))
    return;
  if ((h->type == UV_TCP || h->type == UV_NAMED_PIPE) && h->data &&
      ((struct conn *)h->data)->srv) {
    struct conn *c = h->data;
    if (&c->tcp == (uv_tcp_t *)h) {
      detach_stream(c);
      c->closing = true;
      uv_close(h, im__srv_on_conn_closed);
      return;
    }
  }
  uv_close(h, NULL);
}

static void on_stop(uv_async_t *a) {
  struct im_server *s = a->data;
  s->stopping = true;
  uv_walk(&s->loop, close_walk, NULL);
}

/* ---- lifecycle ---------------------------------------------------------- */

/* serve --unix-socket: a stale socket file (a previous run's) is replaced;
 * any other file at the path is an error. */
static int bind_unix(struct im_server *s) {
  struct stat st;
  if (lstat(s->cfg.unix_socket, &st) == 0 && S_ISSOCK(st.st_mode))
    unlink(s->cfg.unix_socket);
  uv_pipe_init(&s->loop, &s->listener_pipe, 0);
  s->listener_pipe.data = s;
  int r = uv_pipe_bind(&s->listener_pipe, s->cfg.unix_socket);
  if (!r)
    r = uv_listen((uv_stream_t *)&s->listener_pipe, 4096, on_connection);
  if (r < 0) {
    im_error("cannot listen on unix socket %s: %s", s->cfg.unix_socket, uv_strerror(r));
    return r;
  }
  s->bound_unix = true;
  return 0;
}

static int bind_listener(struct im_server *s) {
  if (s->cfg.unix_socket)
    return bind_unix(s);
  struct sockaddr_storage addr;
  int r = uv_ip4_addr(s->cfg.host, s->cfg.port, (struct sockaddr_in *)&addr);
  if (r < 0)
    r = uv_ip6_addr(s->cfg.host, s->cfg.port, (struct sockaddr_in6 *)&addr);
  if (r < 0) {
    im_error("--host %s is not a numeric IPv4 or IPv6 address", s->cfg.host);
    return r;
  }
  uv_tcp_init(&s->loop, &s->listener);
  s->listener.data = s;
  r = uv_tcp_bind(&s->listener, (struct sockaddr *)&addr, 0);
  if (!r)
    r = uv_listen((uv_stream_t *)&s->listener, 4096, on_connection);
  if (r < 0) {
    im_error("cannot listen on %s port %d: %s", s->cfg.host, s->cfg.port, uv_strerror(r));
    return r;
  }
  struct sockaddr_storage got;
  int len = sizeof got;
  uv_tcp_getsockname(&s->listener, (struct sockaddr *)&got, &len);
  s->port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                                            : ((struct sockaddr_in *)&got)->sin_port);
  return 0;
}

enum im_err im_server_new(struct im_server **out, const struct im_server_config *cfg) {
  struct im_server *s = calloc(1, sizeof *s);
  if (!s)
    return IM_NOMEM;
  enum im_err err = IM_SYS;
  s->cfg = *cfg;
  s->tfd = -1;
  s->armed_at = -2;
  s->cfg.faults = NULL;
  /* A peer that closes while we write must not kill the process. */
  signal(SIGPIPE, SIG_IGN);
  if (cfg->n_faults) {
    s->faults = malloc(cfg->n_faults * sizeof *s->faults);
    if (!s->faults) {
      err = IM_NOMEM;
      goto fail;
    }
    memcpy(s->faults, cfg->faults, cfg->n_faults * sizeof *s->faults);
    s->n_faults = cfg->n_faults;
  }
  for (size_t i = 0; i < s->n_faults; i++) {
    if (s->faults[i].kind == IM_FAULT_CONNECTION_CLOSE) {
      s->conn_close_fault = true;
      s->conn_close_prob = s->faults[i].prob;
      s->conn_setup_ns = s->faults[i].ms_ns;
    }
  }
  im_rng_seed(&s->rng, im_mix64(cfg->engine.seed ^ 0x5e12e7ULL));
  im_buf_init(&s->scratch, IM_SERVE_OUT_MAX);
  im_buf_init(&s->frame, IM_SERVE_OUT_MAX);
  im_outbatch_init(&s->ob, IM_SERVE_OUT_MAX);
  if (cfg->io != IM_SERVE_IO_WRITE) {
    char why[160];
    err = im_uring_open(&s->uring, 1024, why, sizeof why);
    if (err == IM_NOMEM)
      goto fail;
    if (err && cfg->io == IM_SERVE_IO_URING) {
      im_error("--io uring: io_uring is not available (%s); use --io write or auto", why);
      goto fail;
    }
    if (err)
      im_info("serve: io_uring not available (%s): writing with write()", why);
  }
  if ((err = im_sim_metrics_init(&s->metrics)))
    goto fail;
  if (s->cfg.lora.n && (err = im_lora_new(&s->lora, &s->cfg.lora)))
    goto fail;
  s->cfg.engine.lora = s->lora;
  if ((err = im_engine_new(&s->engine, &s->cfg.engine)))
    goto fail;
  const struct im_profile *p = im_engine_profile(s->engine);
  snprintf(s->model, sizeof s->model, "%s", cfg->model ? cfg->model : p->model);
  struct im_engine_observer obs = {.on_step = im__srv_on_step, .on_request_end = im__srv_on_request_end, .ctx = s};
  im_engine_set_observer(s->engine, &obs);

  err = IM_SYS;
  if (uv_loop_init(&s->loop) < 0)
    goto fail;
  s->loop_init = true;
  if (bind_listener(s) < 0)
    goto fail;
  s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (s->tfd < 0) {
    im_error("timerfd_create: %s", strerror(errno));
    goto fail;
  }
  uv_poll_init(&s->loop, &s->engine_poll, s->tfd);
  s->engine_poll.data = s;
  uv_poll_start(&s->engine_poll, UV_READABLE, on_engine_timer);
  uv_async_init(&s->loop, &s->stop_async, on_stop);
  s->stop_async.data = s;
  uv_check_init(&s->loop, &s->reaper);
  s->reaper.data = s;
  uv_check_start(&s->reaper, reap_failed);
  s->t0 = im_now_ns();
  s->bucket_t = s->t0;
  s->bucket = cfg->rate_burst > 0 ? cfg->rate_burst : (cfg->rate_limit > 1 ? cfg->rate_limit : 1);

  int64_t period = cfg->keepalive_comment_ns / 4;
  if (period < 10000000)
    period = 10000000;
  if (period > 1000000000)
    period = 1000000000;
  uv_timer_init(&s->loop, &s->sweep_timer);
  s->sweep_timer.data = s;
  uv_timer_start(&s->sweep_timer, on_sweep, (uint64_t)(period / 1000000), (uint64_t)(period / 1000000));
  for (size_t i = 0; i < s->n_faults; i++) {
    const struct im_fault *f = &s->faults[i];
    if (f->kind == IM_FAULT_HICCUP && !uv_is_active((uv_handle_t *)&s->hiccup_timer)) {
      uint64_t every = (uint64_t)((double)f->every_ns / s->cfg.engine.time_scale / 1e6);
      uv_timer_init(&s->loop, &s->hiccup_timer);
      s->hiccup_timer.data = s;
      uv_timer_start(&s->hiccup_timer, on_hiccup, every ? every : 1, every ? every : 1);
    }
    if (f->kind == IM_FAULT_KV_SHRINK && !uv_is_active((uv_handle_t *)&s->shrink_timer)) {
      uint64_t at = (uint64_t)((double)f->at_ns / s->cfg.engine.time_scale / 1e6);
      uv_timer_init(&s->loop, &s->shrink_timer);
      s->shrink_timer.data = s;
      uv_timer_start(&s->shrink_timer, on_shrink, at, 0);
    }
  }
  if (!cfg->quiet && cfg->unix_socket) {
    printf("listening on unix:%s\n", cfg->unix_socket);
    fflush(stdout);
  } else if (!cfg->quiet) {
    printf("listening on http://%s%s%s:%d\n", strchr(cfg->host, ':') ? "[" : "", cfg->host,
           strchr(cfg->host, ':') ? "]" : "", s->port);
    fflush(stdout);
  }
  if (!cfg->quiet) {
    /* The second line: how output is sent (serve --io). */
    printf("output: %s\n", s->uring ? "io_uring, one submission per engine step"
                                    : "write(), one per connection per engine step");
    fflush(stdout);
  }
  *out = s;
  return IM_OK;
fail:
  im_server_free(s);
  return err;
}

int im_server_port(const struct im_server *s) { return s->port; }

const char *im_server_io(const struct im_server *s) { return s->uring ? "uring" : "write"; }

enum im_err im_server_run(struct im_server *s) {
  uv_run(&s->loop, UV_RUN_DEFAULT);
  return IM_OK;
}

void im_server_stop(struct im_server *s) { uv_async_send(&s->stop_async); }

void im_server_free(struct im_server *s) {
  if (!s)
    return;
  if (s->loop_init) {
    uv_walk(&s->loop, close_walk, NULL);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&s->loop) != 0)
      im_warn("event loop closed with handles still open");
  }
  if (s->tfd >= 0)
    close(s->tfd);
  if (s->bound_unix)
    unlink(s->cfg.unix_socket);
  im_engine_free(s->engine);
  im_lora_free(s->lora);
  im_sim_metrics_cleanup(&s->metrics);
  im_buf_cleanup(&s->scratch);
  im_buf_cleanup(&s->frame);
  im_outbatch_cleanup(&s->ob);
  im_uring_close(s->uring);
  free(s->sends);
  free(s->send_slot);
  free(s->chunks);
  free(s->faults);
  free(s);
}
