/* The built-in server's endpoints (OpenAI API, models, version, metrics,
 * tokenize) and the streams that carry the engine's tokens to the clients. */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "im_version.h"
#include "core/clock.h"
#include "core/grow.h"
#include "core/log.h"
#include "serve/rope.h"
#include "serve/server_int.h"
#include "text/chattmpl.h"
#include "text/promptgen.h"
#include "text/simpletok.h"

/* ---- streams ------------------------------------------------------------ */

void im__srv_stream_free(struct stream *st) {
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
  im_agent_answer_cleanup(&st->agent);
  free(st);
}

/* Writes one SSE payload as an HTTP chunk (or raw for HTTP/1.0). */
void im__srv_stream_send(struct stream *st, const char *data, size_t len) {
  struct im_server *s = st->c->srv;
  if (!st->chunked) {
    im__srv_conn_write(st->c, data, len);
    return;
  }
  struct im_buf *f = &s->frame;
  im_buf_reset(f);
  if (im_buf_put_hex(f, len) || im_buf_append(f, "\r\n", 2) || im_buf_append(f, data, len) ||
      im_buf_append(f, "\r\n", 2)) {
    im__srv_conn_fail(st->c);
    return;
  }
  im__srv_conn_write(st->c, f->data, f->len);
}

static void stream_end_chunked(struct stream *st) {
  if (st->chunked)
    im__srv_conn_write(st->c, "0\r\n\r\n", 5);
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
    im__srv_conn_flush(c); /* what this step wrote goes before the reset */
    im_engine_abort(s->engine, st->seq);
    im__srv_stream_free(st);
    if (!c->closing && !c->failing) {
      c->closing = true;
      s->metrics.connections_current--;
      uv_read_stop((uv_stream_t *)&c->tcp);
      if (uv_tcp_close_reset(&c->tcp, im__srv_on_conn_closed) < 0)
        uv_close((uv_handle_t *)&c->tcp, im__srv_on_conn_closed);
    }
    return true;
  }
  if (st->plan.fin_after >= 0 && n >= st->plan.fin_after) {
    s->metrics.faults[IM_FAULT_FIN]++;
    im_engine_abort(s->engine, st->seq);
    im__srv_stream_free(st);
    c->close_after_write = true;
    if (!c->writing && !c->pending.len)
      im__srv_conn_close(c);
    return true;
  }
  if (st->plan.error_after >= 0 && n >= st->plan.error_after) {
    s->metrics.faults[IM_FAULT_ERROR_EVENT]++;
    /* vLLM's streaming generators yield the error as a data event, then
     * [DONE] (serving_chat.py: create_streaming_error_response). */
    static const char ev[] =
        "data: {\"error\":{\"message\":\"simulated engine error (infermeter fault "
        "error-event)\",\"type\":\"InternalServerError\",\"param\":null,\"code\":500}}\n\n";
    im__srv_stream_send(st, ev, sizeof ev - 1);
    im__srv_stream_send(st, "data: [DONE]\n\n", 14);
    stream_end_chunked(st);
    im_engine_abort(s->engine, st->seq);
    im__srv_stream_free(st);
    im__srv_response_done(c);
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

static bool record_chunk(struct im_server *s, const struct stream *st, uint32_t index, uint32_t n,
                         int64_t deadline);

static void truth_chunk(struct im_server *s, const char *id, uint32_t index, uint32_t n,
                        int64_t t_write, int64_t t_done, int64_t deadline) {
  char line[256];
  char *p = PUT_LIT(line, "{\"type\":\"chunk\",\"id\":\"");
  p = put_lit(p, id, strlen(id)); /* <= 95 bytes, JSON-safe (copy_request_id) */
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
  const char *finish = seq->n_out < seq->target_out ? NULL
                       : st->insufficient        ? "insufficient_system_resource"
                       : seq->capped             ? "length"
                                                 : "stop";
  if (!st->streaming) {
    if (im_buf_append(reasoning ? &st->rtext : &st->text, text, len))
      im__srv_conn_fail(st->c);
    return;
  }
  struct im_buf *b = &s->scratch;
  im_buf_reset(b);
  enum im_err err = IM_OK;
  if (st->oai.kind == IM_API_CHAT && !st->role_sent) {
    err = im_oai_role_chunk(b, &st->oai);
    st->role_sent = true;
  }
  struct im_oai_lp lp = {.n_tokens = n, .n_alt = st->lp_n, .alt = st->lp_alt};
  if (!err && !reasoning && im_agent_active(&st->agent))
    err = im_agent_chunk(b, &st->oai, &st->agent, text, len, finish,
                         st->continuous ? &st->usage : NULL);
  else if (!err)
    err = im_oai_chunk_lp(b, &st->oai, text, len, reasoning, finish,
                          st->continuous ? &st->usage : NULL, st->logprobs ? &lp : NULL);
  if (err) {
    im__srv_conn_fail(st->c);
    return;
  }
  /* Inside an engine step the bytes are gathered and sent at its end: the
   * chunk is recorded then, with the instants of the send that carried it
   * (im__srv_chunks_sent). Otherwise (a connection with a backlog, or outside
   * a step) the write's start is when the bytes reach the kernel (on
   * loopback the peer may read them before write() returns); its end
   * bounds it. */
  int64_t t_write = s->batching ? 0 : im_now_ns();
  im__srv_stream_send(st, b->data, b->len);
  if (s->batching && im_outbatch_slot_of(&s->ob, &st->c->oref) && record_chunk(s, st, index, n, deadline)) {
    stream_faults(st);
    return;
  }
  if (!t_write)
    t_write = im_now_ns();
  int64_t t_done = im_now_ns();
  im_prom_hist_observe(&s->metrics.hist[IM_H_LATENESS], (double)(t_write - deadline) * 1e-9);
  if (s->cfg.truth_log)
    truth_chunk(s, st->req_id, index, n, t_write, t_done, deadline);
  stream_faults(st);
}

/* Keeps a chunk gathered in this step for im__srv_chunks_sent. */
static bool record_chunk(struct im_server *s, const struct stream *st, uint32_t index, uint32_t n,
                         int64_t deadline) {
  if (im_grow((void **)&s->chunks, &s->chunks_cap, s->n_chunks, sizeof *s->chunks, 256))
    return false;
  struct sent_chunk *k = &s->chunks[s->n_chunks++];
  *k = (struct sent_chunk){.slot = st->c->oref.slot, .index = index, .n = n, .deadline = deadline};
  if (s->cfg.truth_log)
    memcpy(k->id, st->req_id, sizeof k->id); /* both 96 bytes, NUL-terminated */
  return true;
}

/* The step's output is sent: each chunk's lateness and truth record, with
 * ns = just before the syscall that carried its bytes (the io_uring_enter of
 * the whole step under --io uring, the connection's write() otherwise) and
 * write_done_ns = when that syscall returned. */
void im__srv_chunks_sent(struct im_server *s) {
  for (size_t i = 0; i < s->n_chunks; i++) {
    const struct sent_chunk *k = &s->chunks[i];
    const struct im_outslot *sl = &s->ob.slot[k->slot];
    im_prom_hist_observe(&s->metrics.hist[IM_H_LATENESS], (double)(sl->ns - k->deadline) * 1e-9);
    if (s->cfg.truth_log)
      truth_chunk(s, k->id, k->index, k->n, sl->ns, sl->done_ns, k->deadline);
  }
  s->n_chunks = 0;
}

static void on_finish(struct im_seq *seq, enum im_finish why) {
  struct stream *st = seq->ctx;
  struct conn *c = st->c;
  struct im_server *s = c->srv;
  const char *finish = st->insufficient          ? "insufficient_system_resource"
                       : why == IM_FINISH_LENGTH ? "length"
                                                 : "stop";
  struct im_buf *b = &s->scratch;
  im_buf_reset(b);
  st->seq = NULL;
  if (st->streaming) {
    enum im_err err = IM_OK;
    /* llama.cpp's usage says nothing of reasoning tokens. */
    struct im_sim_usage u = st->usage;
    if (s->cfg.imitate == IM_SERVE_ENGINE_LLAMACPP)
      u.reasoning = 0;
    if (st->include_usage)
      err = im_oai_usage_chunk(b, &st->oai, &u);
    if (!err)
      err = im_buf_puts(b, "data: [DONE]\n\n");
    if (err) {
      im__srv_stream_free(st);
      im__srv_conn_fail(c);
      return;
    }
    im__srv_stream_send(st, b->data, b->len);
    stream_end_chunked(st);
    im__srv_stream_free(st);
    /* llama.cpp closes after every stream, whatever its head announced. */
    if (im__srv_imitate_close_after_stream(s))
      c->close_after_write = true;
    if (s->metrics.http_responses[2]++, !c->closing)
      im__srv_response_done(c);
    return;
  }
  enum im_err err = im_oai_response(b, &st->oai, st->text.data ? st->text.data : "", st->text.len,
                                    st->usage.reasoning ? (st->rtext.data ? st->rtext.data : "") : NULL,
                                    st->rtext.len, finish, &st->usage);
  char extra[160];
  snprintf(extra, sizeof extra, "X-Request-Id: %s\r\n", st->req_id);
  im__srv_stream_free(st);
  if (err) {
    im__srv_conn_fail(c);
    return;
  }
  /* im__srv_respond() uses s->frame, not s->scratch, so b stays valid. */
  im__srv_respond(c, 200, "application/json", b->data, b->len, extra);
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
 * messages (text/chattmpl.h, the template clients count with too). */
static enum im_err prompt_text(const struct im_api_req *r, struct im_buf *out) {
  if (r->kind == IM_API_COMPLETIONS)
    return im_buf_puts(out, r->prompt ? r->prompt : "");
  struct im_chat_msg *m = calloc(r->n_messages ? r->n_messages : 1, sizeof *m);
  if (!m)
    return IM_NOMEM;
  for (size_t i = 0; i < r->n_messages; i++) {
    const struct im_api_msg *a = &r->messages[i];
    m[i] = (struct im_chat_msg){a->role, strlen(a->role), a->content ? a->content : "",
                                a->content ? strlen(a->content) : 0};
  }
  enum im_err err = im_chat_render(IM_CHAT_DEEPSEEK_V3, m, r->n_messages, out);
  free(m);
  return err;
}

/* Token ids of the request's prompt; *ids is malloc'ed. */
static enum im_err prompt_ids(struct im_tok *tok, const struct im_api_req *r, uint32_t **ids,
                              uint32_t *n, bool *code) {
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
  im_buf_init(&t, IM_PROMPT_TEXT_MAX);
  enum im_err err = prompt_text(r, &t);
  if (!err) {
    size_t count = 0;
    if (tok)
      err = im_tok_count(tok, t.data, t.len, &count);
    else
      count = im_simpletok_encode(t.data, t.len, NULL, 0);
    *ids = err ? NULL : malloc((count ? count : 1) * sizeof **ids);
    if (!err && !*ids) {
      err = IM_NOMEM;
    } else if (!err) {
      size_t got = count;
      if (tok)
        err = im_tok_encode(tok, t.data, t.len, *ids, count, &got);
      else
        got = im_simpletok_encode(t.data, t.len, *ids, count);
      *n = (uint32_t)got;
      *code = im_text_looks_like_code(t.data, t.len);
      if (err) {
        free(*ids);
        *ids = NULL;
      }
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
    im__srv_respond_error(c, 400, msg, NULL);
    return;
  }
  uint32_t *ids = NULL;
  uint32_t n_ids = 0;
  bool code = false;
  struct im_fault_plan plan;
  im_fault_plan_none(&plan);
  bool insufficient = false;

  uint32_t lora = im_lora_find(s->lora, r.model); /* an adapter's name is a model */
  if (r.model && strcmp(r.model, s->model) != 0 && !lora) {
    snprintf(msg, sizeof msg, "The model `%.200s` does not exist.", r.model);
    im__srv_respond_error(c, 404, msg, NULL);
    goto out;
  }
  im_fault_plan_request(s->faults, s->n_faults, &s->rng, im__srv_sim_now(s, now), &plan);
  const struct im_http_header *fh = header(c, "x-infermeter-fault");
  if (fh && im_fault_plan_header(fh->value, fh->value_len, &plan, msg, sizeof msg)) {
    im__srv_respond_error(c, 400, msg, NULL);
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
    /* The DeepSeek API has no capacity status: an overloaded request is
     * answered, then cut with finish_reason insufficient_system_resource
     * after its first token (docs/deepseek.md). */
    insufficient = plan.status == 503 && s->cfg.dialect_deepseek;
    plan.applied &= insufficient ? ~(1u << IM_FAULT_503) : ~0u;
  }
  if (plan.status && !insufficient) {
    char extra[64] = "";
    if (plan.retry_after_s > 0)
      snprintf(extra, sizeof extra, "Retry-After: %d\r\n", plan.retry_after_s);
    snprintf(msg, sizeof msg, "simulated %d (infermeter fault injection)", plan.status);
    im__srv_respond_error(c, plan.status, msg, extra);
    goto out;
  }
  plan.status = 0;
  if (prompt_ids(s->cfg.tokenizer, &r, &ids, &n_ids, &code)) {
    im__srv_respond_error_close(c, 500, "out of memory");
    goto out;
  }
  uint32_t max_len = im_engine_max_model_len(s->engine);
  if (n_ids == 0) {
    im__srv_respond_error(c, 400, "The prompt is empty.", NULL);
    goto out;
  }
  /* Too long for the context: each imitated engine's own answer (imitate.c). */
  if (im__srv_imitate_overflow(c, r.stream, n_ids, &r.max_tokens, max_len))
    goto out;
  struct stream *st = calloc(1, sizeof *st);
  if (!st) {
    im__srv_respond_error_close(c, 500, "out of memory");
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
  st->usage.cache_hit_fields = s->cfg.dialect_deepseek;
  st->insufficient = insufficient;
  for (int k = 0; k < IM_FAULT_KIND_COUNT; k++)
    if ((plan.applied >> k & 1u) && k != IM_FAULT_RESET && k != IM_FAULT_FIN &&
        k != IM_FAULT_ERROR_EVENT)
      s->metrics.faults[k]++; /* stream-ending kinds are counted when they fire */

  double scale = s->cfg.engine.time_scale;
  /* connection-close@ms: the first request of a connection reaches the
   * engine after the connection's setup (handshake), as it would behind TLS. */
  int64_t delay = c->n_requests++ == 0 ? (int64_t)((double)s->conn_setup_ns / scale) : 0;
  struct im_seq_params p = {
      .request_id = st->req_id,
      .prompt = ids,
      .n_prompt = n_ids,
      .max_tokens = insufficient ? 1 : r.max_tokens > 0 ? (uint32_t)r.max_tokens : 0,
      .min_tokens = r.min_tokens > 0 ? (uint32_t)r.min_tokens : 0,
      .ignore_eos = r.ignore_eos,
      .temperature = r.temperature,
      .top_p = r.top_p,
      .has_seed = r.has_seed,
      .seed = (uint64_t)r.seed,
      .cache_salt = r.cache_salt ? im_fnv1a64(r.cache_salt, strlen(r.cache_salt)) | 1 : 0,
      .code = code,
      .effort = (int)r.effort,
      .thinking = r.thinking,
      .lora = lora,
      .slow_ns = (int64_t)((double)plan.slow_ns / scale),
      .stall_token = plan.stall_token,
      .stall_ns = (int64_t)((double)plan.stall_ns / scale),
      .delay_ns = delay,
      .sink = &sink,
      .ctx = st,
  };
  c->stream = st;
  st->next = s->streams;
  if (s->streams)
    s->streams->prev = st;
  s->streams = st;
  if (im_agent_plan(&s->cfg.agent, &r, &s->rng, &st->agent, &p.target_tokens)) {
    im__srv_stream_free(st);
    im__srv_respond_error_close(c, 500, "out of memory");
    goto out;
  }
  if (im_engine_submit(s->engine, &p, now, &st->seq)) {
    im__srv_stream_free(st);
    im__srv_respond_error_close(c, 500, "engine refused the request");
    goto out;
  }
  st->usage.cached = 0;
  st->last_keepalive = now;
  if (r.want_logprobs) {
    st->logprobs = true;
    st->lp_n = r.logprobs < 20 ? r.logprobs : 20;
    im_textgen_top_logprobs(&st->seq->gen, st->lp_n, st->lp_alt);
  }
  if (st->streaming) {
    bool keep = im__srv_decide_keep_alive(c) && st->chunked;
    struct im_buf *f = &s->frame;
    im_buf_reset(f);
    if (im_buf_printf(f,
                      "HTTP/1.1 200 OK\r\nServer: infermeter-sim/%s\r\n"
                      "Content-Type: text/event-stream; charset=utf-8\r\n"
                      "Cache-Control: no-cache\r\nX-Request-Id: %s\r\n%s%s\r\n",
                      IM_VERSION, st->req_id,
                      st->chunked ? "Transfer-Encoding: chunked\r\n" : "",
                      keep ? "Connection: keep-alive\r\n" : "Connection: close\r\n")) {
      im__srv_conn_fail(c);
      goto out;
    }
    im__srv_conn_write(c, f->data, f->len);
  }
  im__srv_arm_engine(s);
out:
  free(ids);
  im_api_req_cleanup(&r);
}

/* The engine learns cached tokens at admission; streams read them at the end. */
void im__srv_on_request_end(void *ctx, const struct im_seq *seq, enum im_finish why) {
  struct im_server *s = ctx;
  im_sim_metrics_request(&s->metrics, seq, why);
  struct stream *st = seq->ctx;
  if (st && st->seq == seq)
    st->usage.cached = seq->n_cached;
}

void im__srv_on_step(void *ctx, const struct im_step_cost *cost, double wall_s,
                    const struct im_moe_step_stats *moe, uint32_t n_seqs, uint32_t n_tokens) {
  (void)cost;
  (void)moe;
  (void)n_seqs;
  (void)n_tokens;
  struct im_server *s = ctx;
  im_prom_hist_observe(&s->metrics.hist[IM_H_STEP], wall_s);
  if (s->batching)
    im__srv_flush(s); /* the step's tokens leave before the next step is planned */
}

/* Answers 200 with the JSON in b (500 when building it failed); frees b. */
static void respond_json(struct conn *c, enum im_err err, struct im_buf *b) {
  if (err)
    im__srv_respond_error(c, 500, "out of memory", NULL);
  else
    im__srv_respond(c, 200, "application/json", b->data, b->len, NULL);
  im_buf_cleanup(b);
}

static void handle_models(struct conn *c) {
  struct im_server *s = c->srv;
  struct im_buf b;
  im_buf_init(&b, 1u << 20);
  int64_t created = s->t0 ? im_wall_ns() / 1000000000 : 0;
  enum im_err err = im_buf_printf(
      &b,
      "{\"object\":\"list\",\"data\":[{\"id\":\"%s\",\"object\":\"model\",\"created\":%" PRId64
      ",\"owned_by\":\"%s\",\"root\":\"%s\",\"parent\":null",
      s->model, created, im__srv_imitate_owner(s), s->model);
  if (!err && im__srv_imitate_lists_len(s))
    err = im_buf_printf(&b, ",\"max_model_len\":%u", im_engine_max_model_len(s->engine));
  if (!err)
    err = im_buf_puts(&b, "}");
  /* vLLM lists each LoRA adapter after the base model, its path as root and
   * the base model as parent (serving_models.py). */
  const struct im_lora_config *lc = s->lora ? im_lora_config(s->lora) : NULL;
  for (size_t i = 0; !err && lc && i < lc->n; i++) {
    err = im_buf_puts(&b, ",{\"id\":\"");
    if (!err)
      err = im_buf_json_escape(&b, lc->names[i], strlen(lc->names[i]));
    if (!err)
      err = im_buf_printf(&b, "\",\"object\":\"model\",\"created\":%" PRId64
                              ",\"owned_by\":\"infermeter\",\"root\":\"", created);
    if (!err)
      err = im_buf_json_escape(&b, lc->paths[i], strlen(lc->paths[i]));
    if (!err)
      err = im_buf_printf(&b, "\",\"parent\":\"%s\",\"max_model_len\":%u}", s->model,
                          im_engine_max_model_len(s->engine));
  }
  if (!err)
    err = im_buf_puts(&b, "]}");
  respond_json(c, err, &b);
}

/* vllm:lora_requests_info and the swap count (serve/lora.h). */
static enum im_err lora_metrics(struct im_server *s, struct im_buf *b) {
  if (!s->lora)
    return IM_OK;
  struct im_buf run, wait;
  im_buf_init(&run, 64u << 10);
  im_buf_init(&wait, 64u << 10);
  enum im_err err = im_engine_lora_info(s->engine, &run, &wait);
  if (!err)
    err = im_lora_prom(b, s->lora, run.data, wait.data, (double)im_wall_ns() / 1e9);
  im_buf_cleanup(&run);
  im_buf_cleanup(&wait);
  return err;
}

/* POST /start_profile, /stop_profile (vLLM's and SGLang's profiler
 * control): nothing is profiled here; the calls are counted so that a
 * client's --profile-server can be checked. */
static enum im_err profile_metrics(const struct im_server *s, struct im_buf *b) {
  char t[512];
  int n = snprintf(t, sizeof t,
                   "# HELP infermeter_sim_profile_requests_total Profiler control requests "
                   "received (POST /start_profile, /stop_profile).\n"
                   "# TYPE infermeter_sim_profile_requests_total counter\n"
                   "infermeter_sim_profile_requests_total{action=\"start\"} %llu\n"
                   "infermeter_sim_profile_requests_total{action=\"stop\"} %llu\n",
                   (unsigned long long)s->profile_starts, (unsigned long long)s->profile_stops);
  return im_buf_append(b, t, (size_t)n);
}

/* serve --io: how the engine steps' output is sent now. */
static enum im_err output_metrics(const struct im_server *s, struct im_buf *b) {
  return im_buf_printf(b,
                       "# HELP infermeter_sim_output_io_info How each engine step's output is sent "
                       "(serve --io): one io_uring submission, or write() per connection.\n"
                       "# TYPE infermeter_sim_output_io_info gauge\n"
                       "infermeter_sim_output_io_info{io=\"%s\"} 1\n",
                       im_server_io(s));
}

static void handle_profile(struct conn *c, bool start) {
  struct im_server *s = c->srv;
  if (start)
    s->profile_starts++;
  else
    s->profile_stops++;
  im__srv_respond(c, 200, "application/json", "{}", 2, NULL);
}

static void handle_version(struct conn *c) {
  struct im_server *s = c->srv;
  const struct im_profile *p = im_engine_profile(s->engine);
  const struct im_engine_config *e = &s->cfg.engine;
  char body[2048], rope[160] = "null";
  /* The trained window and its RoPE extension (serve/rope.h). */
  struct im_rope_window w = im_rope_window_of(p);
  uint32_t native = e->native_window ? e->native_window : w.native;
  if (native)
    snprintf(rope, sizeof rope,
             "{\"native_window\":%u,\"type\":\"%s\",\"factor\":%g,\"slowdown\":%g}", native,
             w.method[0] ? w.method : "declared", w.factor, e->rope_slowdown);
  /* "config": the settings a load test must declare (docs/serve.md): the
   * simulated engine knows its own, so it says them. It has no compiler:
   * torch_compile is "n/a". */
  int n = snprintf(body, sizeof body,
                   "{\"version\":\"%s\",\"engine\":\"infermeter-sim\",\"git\":\"%s\","
                   "\"profile\":\"%s\",\"model\":\"%s\",\"time_scale\":%g,"
                   "\"num_gpu_blocks\":%u,\"block_size\":%u,\"max_model_len\":%u,"
                   "\"config\":{\"torch_compile\":\"n/a\",\"tp\":%u,\"dp\":%u,"
                   "\"quantization\":\"%s\",\"kv_cache_dtype\":\"%s\",\"max_num_seqs\":%u,"
                   "\"enable_prefix_caching\":%s,\"speculative\":\"%s\"},\"rope\":%s,"
                   /* Its entries in model/desc.h's table: a client's roofline
                    * (docs/deepseek.md) picks them up. */
                   "\"system\":{\"model_preset\":\"%s\",\"hardware\":\"%s\",\"gpus\":%u}}",
                   IM_VERSION, IM_GIT_HASH, p->name, s->model, e->time_scale,
                   im_engine_num_blocks(s->engine), im_engine_block_size(s->engine),
                   im_engine_max_model_len(s->engine), p->tp,
                   p->dp_attention ? p->dp_attention : 1, p->weight_bytes <= 1.0 ? "fp8" : "none",
                   "auto" /* every profile's KV cache is 2-byte (docs/perf-model.md) */,
                   e->max_num_seqs,
                   e->prefix_caching ? "true" : "false", e->mtp_k ? "mtp" : "none", rope,
                   p->model_preset ? p->model_preset : "", p->hw_preset ? p->hw_preset : "",
                   p->n_gpus);
  im__srv_respond(c, 200, "application/json", body, (size_t)n, NULL);
}

enum im_err im__srv_metrics_page(struct im_server *s, struct im_buf *b) {
  enum im_err err = im_sim_metrics_write(b, &s->metrics, s->engine, s->model,
                                         s->cfg.engine.time_scale, s->cfg.engine.prefix_caching);
  if (!err)
    err = lora_metrics(s, b);
  if (!err)
    err = profile_metrics(s, b);
  if (!err)
    err = output_metrics(s, b);
  return err;
}

static void handle_metrics(struct conn *c) {
  struct im_server *s = c->srv;
  struct im_buf b;
  im_buf_init(&b, 4u << 20);
  if (im__srv_metrics_page(s, &b)) {
    im_buf_cleanup(&b);
    im__srv_respond_error(c, 500, "metrics page too large", NULL);
    return;
  }
  im__srv_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len, NULL);
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
    im__srv_respond_error(c, 400, msg, NULL);
    return;
  }
  uint32_t *ids = NULL, n = 0;
  bool code;
  struct im_buf b;
  im_buf_init(&b, IM_SERVE_OUT_MAX);
  enum im_err err = prompt_ids(c->srv->cfg.tokenizer, &r, &ids, &n, &code);
  if (!err)
    err = im_buf_printf(&b, "{\"count\":%u,\"max_model_len\":%u,\"tokens\":[", n,
                        im_engine_max_model_len(c->srv->engine));
  for (uint32_t i = 0; i < n && !err; i++)
    err = im_buf_printf(&b, i ? ",%u" : "%u", ids[i]);
  if (!err)
    err = im_buf_puts(&b, "]}");
  respond_json(c, err, &b);
  free(ids);
  im_api_req_cleanup(&r);
}

static bool path_is(const struct im_http_request *r, const char *p) {
  size_t n = strlen(p);
  return r->path_len == n && memcmp(r->path, p, n) == 0;
}

/* vLLM's --api-key (vllm/entrypoints/openai/api_server.py, its
 * authentication middleware): every path under /v1 needs "Authorization:
 * Bearer <key>", else 401 {"error": "Unauthorized"}; /health, /metrics,
 * /version and /tokenize stay open. Compared in time independent of where
 * the first difference is. */
static bool authorized(const struct im_http_request *r, const char *key) {
  if (!key || r->path_len < 3 || memcmp(r->path, "/v1", 3) || (r->path_len > 3 && r->path[3] != '/'))
    return true;
  const struct im_http_header *h = im_http_find_header(r, "Authorization");
  size_t kl = strlen(key);
  if (!h || h->value_len != 7 + kl || strncasecmp(h->value, "Bearer ", 7))
    return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < kl; i++)
    diff |= (unsigned char)(h->value[7 + i] ^ key[i]);
  return diff == 0;
}

void im__srv_handle_request(struct conn *c) {
  struct im_http_request *r = &c->parser.req;
  bool get = r->method == IM_HTTP_GET || r->method == IM_HTTP_HEAD;
  bool post = r->method == IM_HTTP_POST;
  if (!authorized(r, c->srv->cfg.api_key)) {
    im__srv_respond_error(c, 401, "Unauthorized", "WWW-Authenticate: Bearer\r\n");
    return;
  }
  if (im__srv_imitate_route(c))
    return;
  static const struct {
    const char *path;
    bool post;
  } routes[] = {{"/health", false},          {"/version", false},  {"/v1/models", false},
                {"/metrics", false},         {"/tokenize", true},  {"/v1/completions", true},
                {"/v1/chat/completions", true}, {"/start_profile", true},
                {"/stop_profile", true}};
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
    if (!path_is(r, routes[i].path))
      continue;
    if (routes[i].post ? !post : !get) {
      im__srv_respond_error(c, 405, "Method Not Allowed", routes[i].post ? "Allow: POST\r\n"
                                                                 : "Allow: GET, HEAD\r\n");
      return;
    }
    switch (i) {
    case 0: im__srv_respond(c, 200, "text/plain", "", 0, NULL); return;
    case 1: handle_version(c); return;
    case 2: handle_models(c); return;
    case 3: handle_metrics(c); return;
    case 4: handle_tokenize(c); return;
    case 5: handle_generate(c, IM_API_COMPLETIONS); return;
    case 6: handle_generate(c, IM_API_CHAT); return;
    default: handle_profile(c, i == 7); return;
    }
  }
  im__srv_respond_error(c, 404, "Not Found", NULL);
}

