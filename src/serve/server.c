/* The built-in server: connections, HTTP routing and streaming on a libuv
 * loop; the engine's step deadlines on a timerfd (libuv timers have
 * millisecond resolution, too coarse for steps of a few hundred us under
 * --time-scale). Everything runs on one thread. */
#include "serve/server.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "im_version.h"
#include "infermeter/buf.h"
#include "infermeter/clock.h"
#include "infermeter/log.h"
#include "infermeter/rng.h"
#include "serve/api.h"
#include "serve/http.h"
#include "serve/oai_encode.h"
#include "serve/sim_metrics.h"
#include "workload/simpletok.h"

struct stream;

struct conn {
  uv_tcp_t tcp;                 /* first member: handle pointers cast back */
  struct im_server *srv;
  struct conn *prev, *next;     /* all connections */
  struct conn *ready_next;      /* pending-input list */
  struct conn *fail_next;       /* failed, to be closed after this loop turn */
  bool on_ready;
  bool failing;
  uint64_t id;
  struct im_http_parser parser;
  enum im_err pstate;           /* last parser result */
  bool head_checked;
  struct stream *stream;        /* request being answered, or NULL */
  struct im_buf pending, inflight;
  uv_write_t wreq;
  uv_shutdown_t sreq;
  bool writing, closing, draining, close_after_write, shut;
  int64_t last_activity, drain_since;
};

struct stream {
  struct stream *prev, *next;   /* active streams */
  struct conn *c;
  struct im_seq *seq;
  struct im_oai_ctx oai;
  char id[48];
  char req_id[96];
  bool streaming, include_usage, continuous, chunked, role_sent;
  struct im_sim_usage usage;
  int64_t last_keepalive, t_prev_token;
  struct im_buf text, rtext;    /* non-streaming answer */
  struct im_fault_plan plan;
};

struct im_server {
  struct im_server_config cfg;
  char model[128];
  uv_loop_t loop;
  bool loop_init;
  uv_tcp_t listener;
  uv_async_t stop_async;
  uv_poll_t engine_poll;
  uv_timer_t sweep_timer, hiccup_timer, shrink_timer;
  int tfd;
  int64_t armed_at;
  struct im_engine *engine;
  struct im_sim_metrics metrics;
  struct im_fault *faults;
  size_t n_faults;
  bool conn_close_fault;
  double conn_close_prob;
  struct im_rng rng;
  double bucket;                /* rate-limit tokens */
  int64_t bucket_t;
  int64_t t0;
  struct conn *conns;
  struct conn *ready;
  struct conn *failing;         /* see conn_fail */
  uv_check_t reaper;
  struct stream *streams;
  uint64_t next_conn, next_req;
  int port;
  bool stopping;
  struct im_buf scratch, frame;
  char readbuf[65536];
  int64_t sweep_period_ns;
};

static void conn_close(struct conn *c);
static void conn_fail(struct conn *c);
static void on_conn_closed(uv_handle_t *h);
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
}

/* Simulated ns since start (fault windows and rates are simulated time). */
static int64_t sim_now(const struct im_server *s, int64_t now) {
  return (int64_t)((double)(now - s->t0) * s->cfg.engine.time_scale);
}

/* ---- engine timer ------------------------------------------------------- */

static void arm_engine(struct im_server *s) {
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
  im_engine_tick(s->engine, im_now_ns());
  run_ready(s);
  arm_engine(s);
}

/* ---- output ------------------------------------------------------------- */

static void start_write(struct conn *c);

static void on_write(uv_write_t *req, int status) {
  struct conn *c = req->data;
  c->writing = false;
  im_buf_reset(&c->inflight);
  if (status < 0) {
    conn_fail(c);
    return;
  }
  if (c->pending.len)
    start_write(c);
  else if (c->close_after_write && !c->stream)
    conn_close(c);
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
    conn_fail(c);
    return;
  }
  c->writing = true;
}

/* Queues bytes for the client: written at once when the socket takes them,
 * else kept (up to max_output_backlog; a client that reads slower than the
 * engine writes is dropped, as vLLM's server would eventually time out). */
static void conn_write(struct conn *c, const char *data, size_t len) {
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
      conn_fail(c);
      return;
    }
    data += r;
    len -= (size_t)r;
  }
  if (c->pending.len + len > c->srv->cfg.max_output_backlog ||
      im_buf_append(&c->pending, data, len)) {
    c->srv->metrics.truncated_backlog++;
    conn_fail(c);
    return;
  }
  if (!c->writing)
    start_write(c);
}

/* Called after the last byte of a response is queued. */
static void conn_response_done(struct conn *c) {
  if (c->closing)
    return;
  if (c->close_after_write) {
    if (!c->writing && !c->pending.len)
      conn_close(c);
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
static bool decide_keep_alive(struct conn *c) {
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

static void respond(struct conn *c, int status, const char *ctype, const char *body, size_t len,
                    const char *extra) {
  struct im_server *s = c->srv;
  bool keep = decide_keep_alive(c);
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
    conn_fail(c);
    return;
  }
  if (status >= 100 && status < 600)
    s->metrics.http_responses[status / 100]++;
  conn_write(c, f->data, f->len);
  conn_response_done(c);
}

static void respond_error(struct conn *c, int status, const char *msg, const char *extra) {
  struct im_buf b;
  im_buf_init(&b, 8192);
  if (im_oai_error(&b, status, msg)) {
    im_buf_cleanup(&b);
    conn_fail(c);
    return;
  }
  respond(c, status, "application/json", b.data, b.len, extra);
  im_buf_cleanup(&b);
}

/* An error after which the connection is closed, reading and dropping what
 * the client still sends so the close does not turn into a reset. */
static void respond_error_close(struct conn *c, int status, const char *msg) {
  c->close_after_write = true;
  respond_error(c, status, msg, NULL);
}

/* ---- streams ------------------------------------------------------------ */

static void stream_free(struct stream *st) {
  struct im_server *s = st->c->srv;
  if (st->prev)
    st->prev->next = st->next;
  else
    s->streams = st->next;
  if (st->next)
    st->next->prev = st->prev;
  st->c->stream = NULL;
  im_buf_cleanup(&st->text);
  im_buf_cleanup(&st->rtext);
  free(st);
}

/* Writes one SSE payload as an HTTP chunk (or raw for HTTP/1.0). */
static void stream_send(struct stream *st, const char *data, size_t len) {
  struct im_server *s = st->c->srv;
  if (!st->chunked) {
    conn_write(st->c, data, len);
    return;
  }
  struct im_buf *f = &s->frame;
  im_buf_reset(f);
  if (im_buf_printf(f, "%zx\r\n", len) || im_buf_append(f, data, len) ||
      im_buf_append(f, "\r\n", 2)) {
    conn_fail(st->c);
    return;
  }
  conn_write(st->c, f->data, f->len);
}

static void stream_end_chunked(struct stream *st) {
  if (st->chunked)
    conn_write(st->c, "0\r\n\r\n", 5);
  else
    st->c->close_after_write = true; /* HTTP/1.0: the body ends with the connection */
}

/* Faults that end a stream after N tokens. Returns true if it ended. */
static bool stream_faults(struct stream *st) {
  struct im_server *s = st->c->srv;
  uint32_t n = st->usage.completion;
  struct conn *c = st->c;
  if (st->plan.reset_after >= 0 && n >= st->plan.reset_after) {
    s->metrics.faults[IM_FAULT_RESET]++;
    im_engine_abort(s->engine, st->seq);
    stream_free(st);
    if (!c->closing && !c->failing) {
      c->closing = true;
      s->metrics.connections_current--;
      uv_read_stop((uv_stream_t *)&c->tcp);
      if (uv_tcp_close_reset(&c->tcp, on_conn_closed) < 0)
        uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
    }
    return true;
  }
  if (st->plan.fin_after >= 0 && n >= st->plan.fin_after) {
    s->metrics.faults[IM_FAULT_FIN]++;
    im_engine_abort(s->engine, st->seq);
    stream_free(st);
    c->close_after_write = true;
    if (!c->writing && !c->pending.len)
      conn_close(c);
    return true;
  }
  if (st->plan.error_after >= 0 && n >= st->plan.error_after) {
    s->metrics.faults[IM_FAULT_ERROR_EVENT]++;
    /* vLLM's streaming generators yield the error as a data event, then
     * [DONE] (serving_chat.py: create_streaming_error_response). */
    static const char ev[] =
        "data: {\"error\":{\"message\":\"simulated engine error (infermeter fault "
        "error-event)\",\"type\":\"InternalServerError\",\"param\":null,\"code\":500}}\n\n";
    stream_send(st, ev, sizeof ev - 1);
    stream_send(st, "data: [DONE]\n\n", 14);
    stream_end_chunked(st);
    im_engine_abort(s->engine, st->seq);
    stream_free(st);
    conn_response_done(c);
    return true;
  }
  return false;
}

/* Appends v in decimal; the truth log is written per chunk, so no printf. */
static char *put_i64(char *p, int64_t v) {
  char tmp[24];
  int n = 0;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0)
    *p++ = '-';
  while (n)
    *p++ = tmp[--n];
  return p;
}

static char *put_lit(char *p, const char *s, size_t n) {
  memcpy(p, s, n);
  return p + n;
}

#define PUT_LIT(p, s) put_lit((p), (s), sizeof(s) - 1)

static void truth_chunk(struct im_server *s, const struct stream *st, uint32_t index, uint32_t n,
                        int64_t t_write, int64_t t_done, int64_t deadline) {
  char line[256];
  char *p = PUT_LIT(line, "{\"type\":\"chunk\",\"id\":\"");
  p = put_lit(p, st->req_id, strlen(st->req_id)); /* <= 95 bytes, JSON-safe (copy_request_id) */
  p = PUT_LIT(p, "\",\"index\":");
  p = put_i64(p, index);
  p = PUT_LIT(p, ",\"tokens\":");
  p = put_i64(p, n);
  p = PUT_LIT(p, ",\"ns\":");
  p = put_i64(p, t_write);
  p = PUT_LIT(p, ",\"write_done_ns\":");
  p = put_i64(p, t_done);
  p = PUT_LIT(p, ",\"deadline_ns\":");
  p = put_i64(p, deadline);
  p = PUT_LIT(p, "}\n");
  fwrite(line, 1, (size_t)(p - line), s->cfg.truth_log);
}

static void on_tokens(struct im_seq *seq, const char *text, size_t len, uint32_t n, bool reasoning,
                      int64_t deadline) {
  struct stream *st = seq->ctx;
  struct im_server *s = st->c->srv;
  if (st->t_prev_token)
    im_prom_hist_observe(&s->metrics.hist[IM_H_ITL], (double)(deadline - st->t_prev_token) * 1e-9);
  st->t_prev_token = deadline;
  uint32_t index = st->usage.completion;
  st->usage.completion += n;
  if (reasoning)
    st->usage.reasoning += n;
  const char *finish =
      seq->n_out >= seq->target_out ? (seq->capped ? "length" : "stop") : NULL;
  if (!st->streaming) {
    if (im_buf_append(reasoning ? &st->rtext : &st->text, text, len))
      conn_fail(st->c);
    return;
  }
  struct im_buf *b = &s->scratch;
  im_buf_reset(b);
  enum im_err err = IM_OK;
  if (st->oai.kind == IM_API_CHAT && !st->role_sent) {
    err = im_oai_role_chunk(b, &st->oai);
    st->role_sent = true;
  }
  if (!err)
    err = im_oai_chunk(b, &st->oai, text, len, reasoning, finish,
                       st->continuous ? &st->usage : NULL);
  if (err) {
    conn_fail(st->c);
    return;
  }
  /* The write's start is when the bytes reach the kernel (on loopback the
   * peer may read them before write() returns); its end bounds it. */
  int64_t t_write = im_now_ns();
  stream_send(st, b->data, b->len);
  int64_t t_done = im_now_ns();
  im_prom_hist_observe(&s->metrics.hist[IM_H_LATENESS], (double)(t_write - deadline) * 1e-9);
  if (s->cfg.truth_log)
    truth_chunk(s, st, index, n, t_write, t_done, deadline);
  stream_faults(st);
}

static void on_finish(struct im_seq *seq, enum im_finish why) {
  struct stream *st = seq->ctx;
  struct conn *c = st->c;
  struct im_server *s = c->srv;
  const char *finish = why == IM_FINISH_LENGTH ? "length" : "stop";
  struct im_buf *b = &s->scratch;
  im_buf_reset(b);
  st->seq = NULL;
  if (st->streaming) {
    enum im_err err = IM_OK;
    if (st->include_usage)
      err = im_oai_usage_chunk(b, &st->oai, &st->usage);
    if (!err)
      err = im_buf_puts(b, "data: [DONE]\n\n");
    if (err) {
      stream_free(st);
      conn_fail(c);
      return;
    }
    stream_send(st, b->data, b->len);
    stream_end_chunked(st);
    stream_free(st);
    if (s->metrics.http_responses[2]++, !c->closing)
      conn_response_done(c);
    return;
  }
  enum im_err err = im_oai_response(b, &st->oai, st->text.data ? st->text.data : "", st->text.len,
                                    st->usage.reasoning ? (st->rtext.data ? st->rtext.data : "") : NULL,
                                    st->rtext.len, finish, &st->usage);
  char extra[160];
  snprintf(extra, sizeof extra, "X-Request-Id: %s\r\n", st->req_id);
  stream_free(st);
  if (err) {
    conn_fail(c);
    return;
  }
  /* respond() uses s->frame, not s->scratch, so b stays valid. */
  respond(c, 200, "application/json", b->data, b->len, extra);
}

static const struct im_seq_sink sink = {on_tokens, on_finish};

/* ---- request handlers --------------------------------------------------- */

static const struct im_http_header *header(struct conn *c, const char *name) {
  return im_http_find_header(&c->parser.req, name);
}

static void copy_request_id(struct conn *c, char *out, size_t cap) {
  const struct im_http_header *h = header(c, "x-request-id");
  size_t n = 0;
  if (h) {
    /* Keep it printable and JSON-safe; it is echoed into logs. */
    for (size_t i = 0; i < h->value_len && n + 1 < cap; i++) {
      char ch = h->value[i];
      if (ch > 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
        out[n++] = ch;
    }
  }
  if (n == 0)
    n = (size_t)snprintf(out, cap, "req-%" PRIu64, ++c->srv->next_req);
  out[n < cap ? n : cap - 1] = '\0';
}

/* Renders the prompt text the model sees: DeepSeek-V3's chat format for
 * messages (tokenizer_config.json chat_template, simplified: no tools). */
static enum im_err prompt_text(const struct im_api_req *r, struct im_buf *out) {
  if (r->kind == IM_API_COMPLETIONS)
    return im_buf_puts(out, r->prompt ? r->prompt : "");
  enum im_err err = im_buf_puts(out, "<\xef\xbd\x9c" "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>");
  for (size_t i = 0; i < r->n_messages && !err; i++) {
    const struct im_chat_msg *m = &r->messages[i];
    if (!strcmp(m->role, "user"))
      err = im_buf_puts(out, "<\xef\xbd\x9cUser\xef\xbd\x9c>");
    else if (!strcmp(m->role, "assistant"))
      err = im_buf_puts(out, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>");
    if (!err)
      err = im_buf_puts(out, m->content ? m->content : "");
    if (!err && !strcmp(m->role, "assistant"))
      err = im_buf_puts(out, "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>");
  }
  if (!err)
    err = im_buf_puts(out, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>");
  return err;
}

/* Token ids of the request's prompt; *ids is malloc'ed. */
static enum im_err prompt_ids(const struct im_api_req *r, uint32_t **ids, uint32_t *n, bool *code) {
  *code = false;
  if (r->prompt_ids) {
    *ids = malloc((r->n_prompt_ids ? r->n_prompt_ids : 1) * sizeof **ids);
    if (!*ids)
      return IM_NOMEM;
    memcpy(*ids, r->prompt_ids, r->n_prompt_ids * sizeof **ids);
    *n = (uint32_t)r->n_prompt_ids;
    return IM_OK;
  }
  struct im_buf t;
  im_buf_init(&t, 0);
  enum im_err err = prompt_text(r, &t);
  if (!err) {
    size_t count = im_simpletok_encode(t.data, t.len, NULL, 0);
    *ids = malloc((count ? count : 1) * sizeof **ids);
    if (!*ids) {
      err = IM_NOMEM;
    } else {
      *n = (uint32_t)im_simpletok_encode(t.data, t.len, *ids, count);
      *code = im_text_looks_like_code(t.data, t.len);
    }
  }
  im_buf_cleanup(&t);
  return err;
}

static bool rate_limited(struct im_server *s, int64_t now) {
  if (s->cfg.rate_limit <= 0)
    return false;
  double burst = s->cfg.rate_burst > 0 ? s->cfg.rate_burst : (s->cfg.rate_limit > 1 ? s->cfg.rate_limit : 1);
  double rate = s->cfg.rate_limit * s->cfg.engine.time_scale;
  s->bucket += (double)(now - s->bucket_t) * 1e-9 * rate;
  if (s->bucket > burst)
    s->bucket = burst;
  s->bucket_t = now;
  if (s->bucket < 1.0)
    return true;
  s->bucket -= 1.0;
  return false;
}

static void handle_generate(struct conn *c, enum im_api_kind kind) {
  struct im_server *s = c->srv;
  struct im_http_request *hr = &c->parser.req;
  struct im_api_req r;
  char msg[512];
  int64_t now = im_now_ns();
  if (im_api_decode(kind, hr->body, hr->body_len, &r, msg, sizeof msg)) {
    respond_error(c, 400, msg, NULL);
    return;
  }
  uint32_t *ids = NULL;
  uint32_t n_ids = 0;
  bool code = false;
  struct im_fault_plan plan;
  im_fault_plan_none(&plan);

  if (r.model && strcmp(r.model, s->model) != 0) {
    snprintf(msg, sizeof msg, "The model `%.200s` does not exist.", r.model);
    respond_error(c, 404, msg, NULL);
    goto out;
  }
  im_fault_plan_request(s->faults, s->n_faults, &s->rng, sim_now(s, now), &plan);
  const struct im_http_header *fh = header(c, "x-infermeter-fault");
  if (fh && im_fault_plan_header(fh->value, fh->value_len, &plan, msg, sizeof msg)) {
    respond_error(c, 400, msg, NULL);
    goto out;
  }
  if (!plan.status && rate_limited(s, now)) {
    plan.status = 429;
    plan.retry_after_s = 1;
    plan.applied |= 1u << IM_FAULT_429;
  }
  if (plan.status) {
    static const enum im_fault_kind by_status[][2] = {
        {429, IM_FAULT_429}, {503, IM_FAULT_503}, {500, IM_FAULT_500}, {400, IM_FAULT_400}};
    for (size_t i = 0; i < 4; i++)
      if ((int)by_status[i][0] == plan.status)
        s->metrics.faults[by_status[i][1]]++;
    char extra[64] = "";
    if (plan.retry_after_s > 0)
      snprintf(extra, sizeof extra, "Retry-After: %d\r\n", plan.retry_after_s);
    snprintf(msg, sizeof msg, "simulated %d (infermeter fault injection)", plan.status);
    respond_error(c, plan.status, msg, extra);
    goto out;
  }
  if (prompt_ids(&r, &ids, &n_ids, &code)) {
    respond_error_close(c, 500, "out of memory");
    goto out;
  }
  uint32_t max_len = im_engine_max_model_len(s->engine);
  uint64_t want = (uint64_t)n_ids + (r.max_tokens > 0 ? (uint64_t)r.max_tokens : 1);
  if (n_ids == 0) {
    respond_error(c, 400, "The prompt is empty.", NULL);
    goto out;
  }
  if (n_ids >= max_len || want > max_len) {
    snprintf(msg, sizeof msg,
             "This model's maximum context length is %u tokens. However, you requested %" PRIu64
             " tokens (%u in the messages, %" PRIu64
             " in the completion). Please reduce the length of the messages or completion.",
             max_len, want, n_ids, want - n_ids);
    respond_error(c, 400, msg, NULL);
    goto out;
  }
  struct stream *st = calloc(1, sizeof *st);
  if (!st) {
    respond_error_close(c, 500, "out of memory");
    goto out;
  }
  st->c = c;
  copy_request_id(c, st->req_id, sizeof st->req_id);
  snprintf(st->id, sizeof st->id, "%s%016" PRIx64, kind == IM_API_CHAT ? "chatcmpl-" : "cmpl-",
           im_mix64(s->next_req ^ (uint64_t)now));
  st->oai.kind = kind;
  st->oai.id = st->id;
  st->oai.created = im_wall_ns() / 1000000000;
  st->oai.model = s->model;
  st->oai.reasoning_new = s->cfg.reasoning_field_new;
  st->streaming = r.stream;
  st->include_usage = r.include_usage;
  st->continuous = r.continuous_usage;
  st->chunked = hr->version_minor >= 1;
  st->plan = plan;
  im_buf_init(&st->text, 64u << 20);
  im_buf_init(&st->rtext, 64u << 20);
  st->usage.prompt = n_ids;
  for (int k = 0; k < IM_FAULT_KIND_COUNT; k++)
    if ((plan.applied >> k & 1u) && k != IM_FAULT_RESET && k != IM_FAULT_FIN &&
        k != IM_FAULT_ERROR_EVENT)
      s->metrics.faults[k]++; /* stream-ending kinds are counted when they fire */

  double scale = s->cfg.engine.time_scale;
  struct im_seq_params p = {
      .request_id = st->req_id,
      .prompt = ids,
      .n_prompt = n_ids,
      .max_tokens = r.max_tokens > 0 ? (uint32_t)r.max_tokens : 0,
      .min_tokens = r.min_tokens > 0 ? (uint32_t)r.min_tokens : 0,
      .ignore_eos = r.ignore_eos,
      .temperature = r.temperature,
      .top_p = r.top_p,
      .has_seed = r.has_seed,
      .seed = (uint64_t)r.seed,
      .cache_salt = r.cache_salt ? im_fnv1a64(r.cache_salt, strlen(r.cache_salt)) | 1 : 0,
      .code = code,
      .slow_ns = (int64_t)((double)plan.slow_ns / scale),
      .stall_token = plan.stall_token,
      .stall_ns = (int64_t)((double)plan.stall_ns / scale),
      .sink = &sink,
      .ctx = st,
  };
  c->stream = st;
  st->next = s->streams;
  if (s->streams)
    s->streams->prev = st;
  s->streams = st;
  if (im_engine_submit(s->engine, &p, now, &st->seq)) {
    stream_free(st);
    respond_error_close(c, 500, "engine refused the request");
    goto out;
  }
  st->usage.cached = 0;
  st->last_keepalive = now;
  if (st->streaming) {
    bool keep = decide_keep_alive(c) && st->chunked;
    struct im_buf *f = &s->frame;
    im_buf_reset(f);
    if (im_buf_printf(f,
                      "HTTP/1.1 200 OK\r\nServer: infermeter-sim/%s\r\n"
                      "Content-Type: text/event-stream; charset=utf-8\r\n"
                      "Cache-Control: no-cache\r\nX-Request-Id: %s\r\n%s%s\r\n",
                      IM_VERSION, st->req_id,
                      st->chunked ? "Transfer-Encoding: chunked\r\n" : "",
                      keep ? "Connection: keep-alive\r\n" : "Connection: close\r\n")) {
      conn_fail(c);
      goto out;
    }
    conn_write(c, f->data, f->len);
  }
  arm_engine(s);
out:
  free(ids);
  im_api_req_cleanup(&r);
}

/* The engine learns cached tokens at admission; streams read them at the end. */
static void on_request_end(void *ctx, const struct im_seq *seq, enum im_finish why) {
  struct im_server *s = ctx;
  im_sim_metrics_request(&s->metrics, seq, why);
  struct stream *st = seq->ctx;
  if (st && st->seq == seq)
    st->usage.cached = seq->n_cached;
}

static void on_step(void *ctx, const struct im_step_cost *cost, double wall_s,
                    const struct im_moe_step_stats *moe, uint32_t n_seqs, uint32_t n_tokens) {
  (void)cost;
  (void)moe;
  (void)n_seqs;
  (void)n_tokens;
  struct im_server *s = ctx;
  im_prom_hist_observe(&s->metrics.hist[IM_H_STEP], wall_s);
}

static void handle_models(struct conn *c) {
  struct im_server *s = c->srv;
  char body[1024];
  int n = snprintf(body, sizeof body,
                   "{\"object\":\"list\",\"data\":[{\"id\":\"%s\",\"object\":\"model\",\"created\":%" PRId64
                   ",\"owned_by\":\"infermeter\",\"root\":\"%s\",\"parent\":null,\"max_model_len\":%u}]}",
                   s->model, s->t0 ? im_wall_ns() / 1000000000 : 0, s->model,
                   im_engine_max_model_len(s->engine));
  respond(c, 200, "application/json", body, (size_t)n, NULL);
}

static void handle_version(struct conn *c) {
  struct im_server *s = c->srv;
  const struct im_profile *p = im_engine_profile(s->engine);
  char body[1024];
  int n = snprintf(body, sizeof body,
                   "{\"version\":\"%s\",\"engine\":\"infermeter-sim\",\"git\":\"%s\","
                   "\"profile\":\"%s\",\"model\":\"%s\",\"time_scale\":%g,"
                   "\"num_gpu_blocks\":%u,\"block_size\":%u,\"max_model_len\":%u}",
                   IM_VERSION, IM_GIT_HASH, p->name, s->model, s->cfg.engine.time_scale,
                   im_engine_num_blocks(s->engine), im_engine_block_size(s->engine),
                   im_engine_max_model_len(s->engine));
  respond(c, 200, "application/json", body, (size_t)n, NULL);
}

static void handle_metrics(struct conn *c) {
  struct im_server *s = c->srv;
  struct im_buf b;
  im_buf_init(&b, 4u << 20);
  if (im_sim_metrics_write(&b, &s->metrics, s->engine, s->model, s->cfg.engine.time_scale,
                           s->cfg.engine.prefix_caching)) {
    im_buf_cleanup(&b);
    respond_error(c, 500, "metrics page too large", NULL);
    return;
  }
  respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len, NULL);
  im_buf_cleanup(&b);
}

static void handle_tokenize(struct conn *c) {
  struct im_http_request *hr = &c->parser.req;
  /* vLLM's /tokenize takes {prompt} or {messages} (serving_tokenization.py). */
  json_t *root = json_loadb(hr->body ? hr->body : "", hr->body_len, 0, NULL);
  bool chat = root && json_is_object(root) && json_object_get(root, "messages");
  json_decref(root);
  struct im_api_req r;
  char msg[512];
  if (im_api_decode(chat ? IM_API_CHAT : IM_API_COMPLETIONS, hr->body, hr->body_len, &r, msg,
                    sizeof msg)) {
    respond_error(c, 400, msg, NULL);
    return;
  }
  uint32_t *ids = NULL, n = 0;
  bool code;
  struct im_buf b;
  im_buf_init(&b, 0);
  enum im_err err = prompt_ids(&r, &ids, &n, &code);
  if (!err)
    err = im_buf_printf(&b, "{\"count\":%u,\"max_model_len\":%u,\"tokens\":[", n,
                        im_engine_max_model_len(c->srv->engine));
  for (uint32_t i = 0; i < n && !err; i++)
    err = im_buf_printf(&b, i ? ",%u" : "%u", ids[i]);
  if (!err)
    err = im_buf_puts(&b, "]}");
  if (err)
    respond_error(c, 500, "out of memory", NULL);
  else
    respond(c, 200, "application/json", b.data, b.len, NULL);
  im_buf_cleanup(&b);
  free(ids);
  im_api_req_cleanup(&r);
}

static bool path_is(const struct im_http_request *r, const char *p) {
  size_t n = strlen(p);
  return r->path_len == n && memcmp(r->path, p, n) == 0;
}

static void handle_request(struct conn *c) {
  struct im_http_request *r = &c->parser.req;
  bool get = r->method == IM_HTTP_GET || r->method == IM_HTTP_HEAD;
  bool post = r->method == IM_HTTP_POST;
  static const struct {
    const char *path;
    bool post;
  } routes[] = {{"/health", false},          {"/version", false},  {"/v1/models", false},
                {"/metrics", false},         {"/tokenize", true},  {"/v1/completions", true},
                {"/v1/chat/completions", true}};
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
    if (!path_is(r, routes[i].path))
      continue;
    if (routes[i].post ? !post : !get) {
      respond_error(c, 405, "Method Not Allowed", routes[i].post ? "Allow: POST\r\n"
                                                                 : "Allow: GET, HEAD\r\n");
      return;
    }
    switch (i) {
    case 0: respond(c, 200, "text/plain", "", 0, NULL); return;
    case 1: handle_version(c); return;
    case 2: handle_models(c); return;
    case 3: handle_metrics(c); return;
    case 4: handle_tokenize(c); return;
    case 5: handle_generate(c, IM_API_COMPLETIONS); return;
    default: handle_generate(c, IM_API_CHAT); return;
    }
  }
  respond_error(c, 404, "Not Found", NULL);
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
    respond_error_close(c, 413, msg);
    return;
  }
  if (r->expect_continue)
    conn_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
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
      handle_request(c);
      continue; /* respond() ran im_http_next() when the answer was immediate */
    }
    switch (r) {
    case IM_LIMIT:
      respond_error_close(c, c->parser.head_done ? 413 : 431,
                          c->parser.head_done ? "Request body too large."
                                              : "Request head too large.");
      break;
    case IM_UNSUPPORTED:
      respond_error_close(c, 501, "Transfer-Encoding not supported.");
      break;
    default:
      respond_error_close(c, 400, "Malformed HTTP request.");
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
      conn_close(c);
    else
      conn_fail(c);
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
  arm_engine(s);
}

/* ---- connection lifecycle ----------------------------------------------- */

static void on_conn_closed(uv_handle_t *h) {
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
    s->metrics.aborted_blocks += st->seq->kv.n_blocks;
    im_engine_abort(s->engine, st->seq);
    st->seq = NULL;
  }
  stream_free(st);
}

/* The client is gone or misbehaves: the connection is closed at once, but
 * only after the current loop turn (the reaper below). Callers are often
 * deep inside a write for a stream (on_tokens, on_finish, the keep-alive
 * sweep); freeing the stream under them is what used to crash the server
 * under load, so nothing is freed here: the connection stops reading and
 * writing, and its stream stays valid until the reaper detaches it. */
static void conn_fail(struct conn *c) {
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
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
  }
  arm_engine(s);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  struct conn *c = req->data;
  if (status < 0 && !c->closing) {
    c->closing = true;
    c->srv->metrics.connections_current--;
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
  }
}

/* Graceful close after the last response: send FIN, then keep reading and
 * dropping until the client closes (or a short timeout in the sweep), so
 * unread request bytes never turn the close into a reset. */
static void conn_close(struct conn *c) {
  if (c->closing || c->failing)
    return;
  detach_stream(c);
  if (c->draining)
    return;
  c->draining = true;
  c->drain_since = im_now_ns();
  c->sreq.data = c;
  if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
    c->closing = true;
    c->srv->metrics.connections_current--;
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
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
    conn_fail(c);
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  struct im_http_limits lim;
  im_http_limits_default(&lim);
  lim.max_body = s->cfg.max_body;
  lim.max_head = s->cfg.max_head;
  im_http_parser_init(&c->parser, &lim);
  c->pstate = IM_AGAIN;
  im_buf_init(&c->pending, 0);
  im_buf_init(&c->inflight, 0);
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
      stream_send(st, ": keep-alive\n\n", 14);
    }
  }
  for (struct conn *c = s->conns, *next; c; c = next) {
    next = c->next;
    if (c->closing)
      continue;
    if (c->draining && now - c->drain_since > 2000000000LL) {
      c->closing = true;
      s->metrics.connections_current--;
      uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
    } else if (!c->draining && !c->stream && !c->writing &&
               now - c->last_activity > s->cfg.idle_timeout_ns) {
      conn_close(c);
    }
  }
}

static void on_hiccup(uv_timer_t *t) {
  struct im_server *s = t->data;
  for (size_t i = 0; i < s->n_faults; i++) {
    const struct im_fault *f = &s->faults[i];
    int64_t sn = sim_now(s, im_now_ns());
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
  arm_engine(s);
}

static void close_walk(uv_handle_t *h, void *arg) {
  (void)arg;
  if (uv_is_closing(h))
    return;
  if (h->type == UV_TCP && h->data && ((struct conn *)h->data)->srv) {
    struct conn *c = h->data;
    if (&c->tcp == (uv_tcp_t *)h) {
      detach_stream(c);
      c->closing = true;
      uv_close(h, on_conn_closed);
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

static int bind_listener(struct im_server *s) {
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
    }
  }
  im_rng_seed(&s->rng, im_mix64(cfg->engine.seed ^ 0x5e12e7ULL));
  im_buf_init(&s->scratch, 0);
  im_buf_init(&s->frame, 0);
  if ((err = im_sim_metrics_init(&s->metrics)))
    goto fail;
  if ((err = im_engine_new(&s->engine, &s->cfg.engine)))
    goto fail;
  const struct im_profile *p = im_engine_profile(s->engine);
  snprintf(s->model, sizeof s->model, "%s", cfg->model ? cfg->model : p->model);
  struct im_engine_observer obs = {.on_step = on_step, .on_request_end = on_request_end, .ctx = s};
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
  if (!cfg->quiet) {
    printf("listening on http://%s%s%s:%d\n", strchr(cfg->host, ':') ? "[" : "", cfg->host,
           strchr(cfg->host, ':') ? "]" : "", s->port);
    fflush(stdout);
  }
  *out = s;
  return IM_OK;
fail:
  im_server_free(s);
  return err;
}

int im_server_port(const struct im_server *s) { return s->port; }

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
  im_engine_free(s->engine);
  im_sim_metrics_cleanup(&s->metrics);
  im_buf_cleanup(&s->scratch);
  im_buf_cleanup(&s->frame);
  free(s->faults);
  free(s);
}
