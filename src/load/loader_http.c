/* The load engine's HTTP side: request bodies and headers, libcurl easy
 * handles, and the callbacks that read a streaming response into the
 * attempt's record (one clock read per received buffer). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/stats.h"
#include "load/loader_int.h"
#include "net/net.h"
#include "proto/oai_logprobs.h"
#include "proto/retry_after.h"

/* ---- request building --------------------------------------------------- */

/* model: the record's (--model-mix), "" for the run's. */
static enum im_err build_body(const struct loader *L, const struct im_req_spec *s,
                              const char *model, struct im_buf *b) {
  const struct im_load_config *c = L->cfg;
  struct im_oai_body body = {.model = model[0] ? model : c->model, .chat = c->backend == IM_BACKEND_CHAT,
                             .prompt = s->prompt, .prompt_len = s->prompt_len,
                             .messages_json = s->messages_json, .extra_json = s->extra_json,
                             .max_tokens = s->max_tokens, .ignore_eos = s->ignore_eos,
                             .temperature = s->temperature, .top_p = s->top_p,
                             .continuous_usage = c->continuous_usage, .cache_salt = c->cache_salt,
                             .logprobs = c->logprobs,
                             .reasoning_effort = c->reasoning_effort, .thinking = c->thinking,
                             .run_json = c->run_json};
  return im_oai_body_encode(&body, b);
}

/* ---- response handling -------------------------------------------------- */

/* Marks the stream malformed, keeping the first reason. */
static void set_malformed(struct attempt *a, const char *why) {
  a->malformed = true;
  if (!a->reason[0])
    snprintf(a->reason, sizeof a->reason, "%s", why);
}

/* The server's own words for an error, truncated, for first_error. */
static void keep_reason(struct attempt *a, const char *p, size_t n) {
  if (a->reason[0])
    return;
  if (n > sizeof a->reason - 1)
    n = sizeof a->reason - 1;
  for (size_t i = 0; i < n; i++) /* one line of printable text */
    a->reason[i] = (unsigned char)p[i] < 0x20 || p[i] == 0x7f ? ' ' : p[i];
  a->reason[n] = '\0';
}

/* --keep-text: one streamed piece (the chunk's text: content, else
 * reasoning, else completions text, else tool-call arguments) joins the
 * 4-grams of the answer. A piece is a token for servers that stream one
 * token per chunk (vLLM, SGLang, llama.cpp, the built-in server). */
static void keep_piece(struct attempt *a, const struct im_oai_chunk *c) {
  const struct im_oai_str *s = c->content.len     ? &c->content
                               : c->reasoning.len ? &c->reasoning
                                                  : &c->text;
  uint64_t h = im_fnv1a64(s->ptr ? s->ptr : "", s->len);
  if (a->n_pieces >= 3 && a->n_grams < a->L->cfg->keep_ngrams) {
    if (a->n_grams == a->cap_grams) {
      uint32_t cap = a->cap_grams ? 2 * a->cap_grams : 256;
      if (cap > a->L->cfg->keep_ngrams)
        cap = a->L->cfg->keep_ngrams;
      uint64_t *g = realloc(a->grams, cap * sizeof *g);
      if (!g)
        return; /* the rate is then over the 4-grams that fitted */
      a->grams = g;
      a->cap_grams = cap;
    }
    a->grams[a->n_grams++] = im_stats_ngram4(a->last_pieces, h);
  }
  a->n_pieces++;
  a->last_pieces[0] = a->last_pieces[1];
  a->last_pieces[1] = a->last_pieces[2];
  a->last_pieces[2] = h;
}

/* A usage count the record can hold and the summary can expand: negative
 * (absent) counts are left alone by the caller. */
static bool usage_ok(struct attempt *a, const char *field, int64_t v) {
  if (v <= IM_LOAD_MAX_USAGE_TOKENS)
    return true;
  char why[160];
  snprintf(why, sizeof why, "usage.%s claims %" PRId64 " tokens (limit %lld)", field, v,
           (long long)IM_LOAD_MAX_USAGE_TOKENS);
  set_malformed(a, why);
  return false;
}

enum im_err im__load_on_sse_event(void *ud, const struct im_sse_event *ev) {
  struct attempt *a = ud;
  struct loader *L = a->L;
  struct im_record *r = &a->rec;
  if (a->cancelled)
    return IM_OK; /* abandoned: what else arrived in this read is not read */
  if (ev->kind == IM_SSE_COMMENT) {
    r->keepalives++;
    return IM_OK;
  }
  if (ev->kind == IM_SSE_FIELD) {
    /* llama.cpp server streams "error: {...}" (a field the SSE standard
     * ignores) then "data: [DONE]" when the prompt exceeds its context:
     * a failure, not an empty success. */
    if (ev->type_len == 5 && !memcmp(ev->type, "error", 5)) {
      a->error_event = true;
      keep_reason(a, ev->data, ev->data_len);
    }
    return IM_OK;
  }
  if (im_oai_chunk_decode(&L->chunk, ev->data, ev->data_len) != IM_OK) {
    set_malformed(a, "a chunk that is not JSON");
    return IM_OK;
  }
  const struct im_oai_chunk *c = &L->chunk;
  if (c->kind == IM_OAI_DONE) {
    if (a->saw_done)
      set_malformed(a, "[DONE] twice");
    a->saw_done = true;
    return IM_OK;
  }
  if (a->saw_done)
    set_malformed(a, "data after [DONE]");
  if (c->kind == IM_OAI_ERROR) {
    a->error_event = true;
    if (c->err_message.ptr)
      keep_reason(a, c->err_message.ptr, c->err_message.len);
    return IM_OK;
  }
  if (c->has_usage) {
    const struct im_oai_usage *u = &c->usage;
    if (!usage_ok(a, "prompt_tokens", u->prompt_tokens) ||
        !usage_ok(a, "completion_tokens", u->completion_tokens) ||
        !usage_ok(a, "cached_tokens", u->cached_tokens) ||
        !usage_ok(a, "prompt_cache_hit_tokens", u->cache_hit_tokens) ||
        !usage_ok(a, "reasoning_tokens", u->reasoning_tokens))
      return IM_OK;
    a->usage_seen = true;
    if (u->prompt_tokens >= 0)
      r->prompt_tokens = (uint32_t)u->prompt_tokens;
    if (u->completion_tokens >= 0)
      r->output_tokens = (uint32_t)u->completion_tokens;
    if (u->reasoning_tokens >= 0) {
      r->reasoning_tokens = (uint32_t)u->reasoning_tokens;
      a->usage_reasoning = true;
    }
  }
  if (c->has_timings && c->timings.cache_n > IM_LOAD_MAX_USAGE_TOKENS) {
    set_malformed(a, "timings.cache_n out of range");
    return IM_OK;
  }
  /* Usage's cached counts, DeepSeek's cache hits, llama.cpp's cache_n or
   * prompt_tokens - prompt_n (proto/oai_chunk.h), from this chunk. */
  int64_t cached = im_oai_cached_tokens(c->has_usage ? &c->usage : NULL,
                                        c->has_timings ? &c->timings : NULL);
  if (cached >= 0)
    r->cached_tokens = (uint32_t)cached;
  if (c->finish_reason.ptr) {
    size_t n = c->finish_reason.len < sizeof r->finish_reason - 1 ? c->finish_reason.len
                                                                  : sizeof r->finish_reason - 1;
    memcpy(r->finish_reason, c->finish_reason.ptr, n);
    r->finish_reason[n] = '\0';
  }
  if (c->cls != IM_OAI_TOKENS)
    return IM_OK;
  /* Tokens in this chunk: the growth of continuous usage when the server
   * sends it, else 1 (a count from the text needs the real tokenizer). */
  uint32_t n = 1;
  if (c->has_usage && c->usage.completion_tokens >= 0) {
    /* Both counts are within [0, IM_LOAD_MAX_USAGE_TOKENS]: no overflow. */
    int64_t delta = c->usage.completion_tokens - (a->usage_completion < 0 ? 0 : a->usage_completion);
    if (delta > IM_LOAD_MAX_CHUNK_TOKENS) {
      char why[160];
      snprintf(why, sizeof why, "usage claims %" PRId64 " tokens in one chunk (limit %d)", delta,
               IM_LOAD_MAX_CHUNK_TOKENS);
      set_malformed(a, why);
      return IM_OK;
    }
    n = delta > 0 ? (uint32_t)delta : 1;
    a->usage_completion = c->usage.completion_tokens;
  }
  /* Reasoning counted from the stream, for usage without reasoning_tokens
   * (issue 29, loader.c). */
  if (c->reasoning.len && !c->content.len && !c->text.len)
    a->stream_reasoning += n;
  if (a->capture && L->cfg->session && L->cfg->session->agent && c->n_tool_calls) {
    /* An agent's next turn echoes the tool calls (workload/spec.h). */
    if ((!a->tool_seen && im_buf_append(&a->answer, "", 1) != IM_OK) ||
        im_buf_append(&a->answer, c->tool_calls_json.ptr, c->tool_calls_json.len) != IM_OK ||
        im_buf_append(&a->answer, "\n", 1) != IM_OK)
      a->capture = false;
    a->tool_seen = true;
  } else if (a->capture && !a->tool_seen) { /* a session's next turn sends the answer back */
    const struct im_oai_str *txt = c->content.len ? &c->content : &c->text;
    if (txt->len && im_buf_append(&a->answer, txt->ptr, txt->len) != IM_OK)
      a->capture = false; /* over the bound: the history keeps what fitted */
  }
  if (a->capture_reasoning && c->reasoning.len &&
      im_buf_append(&a->reasoning, c->reasoning.ptr, c->reasoning.len) != IM_OK)
    a->capture_reasoning = false;
  if (a->L->cfg->keep_ngrams)
    keep_piece(a, c);
  /* An unreadable logprobs object adds nothing: the entropy is over the
   * tokens whose alternatives could be read. */
  if (a->L->cfg->logprobs && c->logprobs_json.len) {
    enum im_err e = im_oai_logprobs_entropy(c->logprobs_json.ptr, c->logprobs_json.len,
                                            &a->entropy_sum, &a->entropy_tokens);
    (void)e;
  }
  int64_t t = a->last_chunk; /* the arrival time of this read, set by on_write */
  if (r->t_first < 0) {
    r->t_first = t;
    r->read_first_us = L->read_lag_us;
    r->read_first_client_us = L->read_client_us;
  }
  if (r->t_answer < 0 && (c->content.len || c->text.len))
    r->t_answer = t;
  r->t_last = t;
  r->read_last_us = L->read_lag_us;
  r->read_last_client_us = L->read_client_us;
  enum im_err err = im_record_add_chunk(r, t, n);
  im__load_cancel_count(L, a, n);
  return err;
}

void im__load_recv_lag(struct loader *L, struct attempt *a, int64_t now, bool stamped) {
  L->read_lag_us = L->read_client_us = -1;
  if (L->t_wake >= 0) {
    /* receive_lag: how long the readable socket waited for the loop to read
     * it after epoll_wait returned (docs/metrics.md §10); the client's part
     * is what the loop worked in that time, the rest the host's (the loop
     * was runnable and not running). */
    int64_t lag = now - L->t_wake;
    if (lag > L->recv_lag_max_ns)
      L->recv_lag_max_ns = lag;
    (void)im_hist_record(&L->res->receive_lag, lag);
    int64_t client = im__load_client_part(L, L->t_wake, now);
    if (stamped) /* the token times are the kernel's: the wait is in no figure */
      lag = client = 0;
    L->read_lag_us = im__load_us(lag);
    L->read_client_us = im__load_us(client);
    if (a && lag > (int64_t)IM_RECORD_LATE_READ_US * 1000) {
      a->rec.late_reads++;
      a->rec.late_reads_client += client > (int64_t)IM_RECORD_LATE_READ_US * 1000;
    }
  }
}

void im__load_on_ctype(struct attempt *a, const char *v, size_t n) {
  while (n && (*v == ' ' || *v == '\t')) {
    v++;
    n--;
  }
  while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
    n--;
  if (n > sizeof a->ctype - 1)
    n = sizeof a->ctype - 1;
  memcpy(a->ctype, v, n);
  a->ctype[n] = '\0';
}

bool im__load_body(struct attempt *a, const char *data, size_t len, int64_t now) {
  if (a->head_len < sizeof a->head - 1) {
    size_t k = sizeof a->head - 1 - a->head_len;
    if (k > len)
      k = len;
    for (size_t i = 0; i < k; i++) /* printable, one line */
      a->head[a->head_len + i] =
          (unsigned char)data[i] < 0x20 || data[i] == 0x7f || data[i] == '"' ? ' ' : data[i];
    a->head_len = (uint8_t)(a->head_len + k);
    a->head[a->head_len] = '\0';
  }
  if (a->rec.http_status != 200) {
    size_t room = ERRBODY_MAX - a->errbody.len;
    return !(room && im_buf_append(&a->errbody, data, len < room ? len : room));
  }
  a->last_chunk = now;
  enum im_err err = im_sse_feed(&a->sse, data, len);
  if (a->cancelled)
    return false; /* the user leaves: the transfer ends, its connection closes */
  if (err != IM_OK) {
    set_malformed(a, err == IM_LIMIT ? "an SSE line or event above the size limit"
                                     : "the SSE stream could not be read");
    return false; /* aborts the transfer: CURLE_WRITE_ERROR */
  }
  return true;
}

static size_t on_write(char *data, size_t size, size_t n, void *ud) {
  struct attempt *a = ud;
  size_t len = size * n;
  /* One clock read per received buffer: every event in it arrived then. */
  int64_t now = rel_now(a->L);
  im__load_recv_lag(a->L, a, now, false);
  return im__load_body(a, data, len, now) ? len : 0;
}

void im__load_on_status(struct attempt *a, int code, int64_t now, long port) {
  a->ctype[0] = a->head[0] = '\0';
  a->head_len = 0;
  if (code >= 200 || a->rec.t_hdr < 0) {
    a->rec.http_status = code;
    if (a->rec.t_hdr < 0) {
      a->rec.t_hdr = now;
      a->local_port = port;
    }
  }
}

void im__load_on_retry_after(struct attempt *a, const char *v, size_t n) {
  /* Strict (RFC 9110 §10.2.3): an unreadable value is ignored, and
   * the backoff applies. */
  int64_t d;
  if (im_retry_after_parse(v, n, im_wall_ns() / 1000000000, &d) == IM_OK)
    a->retry_after_s = d;
}

static size_t on_header(char *data, size_t size, size_t n, void *ud) {
  struct attempt *a = ud;
  size_t len = size * n;
  if (len > 5 && memcmp(data, "HTTP/", 5) == 0) {
    const char *sp = memchr(data, ' ', len);
    if (sp && sp + 4 <= data + len) {
      int code = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
      /* The local port while the connection is surely open (without
       * keep-alive it is closed, and the port gone, at the end). */
      long port = 0;
      if (a->rec.t_hdr < 0 && curl_easy_getinfo(a->easy, CURLINFO_LOCAL_PORT, &port) != CURLE_OK)
        port = 0;
      im__load_on_status(a, code, rel_now(a->L), port);
    }
  } else if (len > 12 && strncasecmp(data, "retry-after:", 12) == 0) {
    im__load_on_retry_after(a, data + 12, len - 12);
  } else if (len > 13 && strncasecmp(data, "content-type:", 13) == 0) {
    im__load_on_ctype(a, data + 13, len - 13);
  }
  return len;
}

static struct curl_slist *add_header(struct curl_slist *l, const char *h, bool *ok) {
  struct curl_slist *n = curl_slist_append(l, h);
  if (!n) {
    *ok = false;
    return l;
  }
  return n;
}

/* v as 16 lower-case hex digits at p; returns the end. */
static char *put_hex16(char *p, uint64_t v) {
  for (int i = 15; i >= 0; i--, v >>= 4)
    p[i] = "0123456789abcdef"[v & 15];
  return p + 16;
}

/* "im-<salt>-<id>" into dst[cap], cut to fit as snprintf would. */
static void request_id(char *dst, size_t cap, const char *salt, uint64_t id) {
  char digits[24], *d = digits + sizeof digits;
  do {
    *--d = (char)('0' + id % 10);
    id /= 10;
  } while (id);
  size_t n = 0;
  const char *const parts[] = {"im-", salt, "-"};
  for (size_t i = 0; i < 3; i++)
    for (const char *s = parts[i]; *s && n + 1 < cap; s++)
      dst[n++] = *s;
  for (; d < digits + sizeof digits && n + 1 < cap; d++)
    dst[n++] = *d;
  dst[n] = '\0';
}

/* Builds an attempt's HTTP request (body, headers, easy handle) without
 * sending it: done ahead of time, off the dispatch path. */
enum im_err im__load_build_http(struct loader *L, struct attempt *a) {
  const struct im_load_config *c = L->cfg;
  struct im_record *r = &a->rec;
  bool ok = true;
  curl_slist_free_all(a->hdrs); /* a build that failed half-way may be retried */
  a->hdrs = NULL;
  if (a->spec.prompt || a->spec.messages_json) { /* a retry arrives with its body built */
    im_buf_reset(&a->body);
    if (build_body(L, &a->spec, a->rec.model, &a->body))
      return IM_NOMEM;
    /* The body holds the prompt now; the text itself would double the
     * memory of every stream in flight. */
    im_req_spec_cleanup(&a->spec);
  }
  r->content_hash = im_fnv1a64(a->body.data, a->body.len);
  request_id(r->request_id, sizeof r->request_id, c->run_salt ? c->run_salt : "0", r->id);
  const char *path = c->backend == IM_BACKEND_CHAT ? "/v1/chat/completions" : "/v1/completions";
  /* The headers every request carries. W3C trace context: version 00, a
   * trace id per logical request, a span id per attempt, sampled. Formatted
   * by hand: three snprintf calls were 4,000 instructions per request. */
  char rid[sizeof r->request_id + 16], tp[128];
  size_t rl = strnlen(r->request_id, sizeof r->request_id - 1);
  memcpy(rid, "X-Request-Id: ", 14);
  memcpy(rid + 14, r->request_id, rl);
  rid[14 + rl] = '\0';
  char *p = tp;
  memcpy(p, "traceparent: 00-", 16);
  p = put_hex16(p + 16, L->trace_run);
  p = put_hex16(p, im_trace_request(r->logical_id));
  *p++ = '-';
  p = put_hex16(p, im_trace_span(L->trace_run, r->id));
  memcpy(p, "-01", 4);
  const char *const lines[] = {"Content-Type: application/json", "Accept: text/event-stream",
                               rid, tp, NULL};
  if (L->h1) /* the h1 transport adds Host, Authorization, --header, Content-Length */
    return im__load_h1_build(L, a, path, lines);
  a->easy = curl_easy_init();
  if (!a->easy)
    return IM_NOMEM;
  for (const char *const *l = lines; *l; l++)
    a->hdrs = add_header(a->hdrs, *l, &ok);
  /* No Expect: 100-continue round trip on large prompts. */
  a->hdrs = add_header(a->hdrs, "Expect:", &ok);
  if (c->api_key) {
    struct im_buf auth;
    im_buf_init(&auth, 8192);
    if (im_buf_printf(&auth, "Authorization: Bearer %s", c->api_key) == IM_OK)
      a->hdrs = add_header(a->hdrs, auth.data, &ok);
    else
      ok = false;
    im_buf_cleanup(&auth);
  }
  for (const char *const *h = c->headers; h && *h; h++)
    a->hdrs = add_header(a->hdrs, *h, &ok);
  if (!ok)
    return IM_NOMEM;
  struct im_buf url;
  im_buf_init(&url, 8192);
  const char *base = c->n_urls > 1 && r->target ? c->base_urls[r->target - 1] : c->base_url;
  if (im_buf_printf(&url, "%s%s", base, path)) {
    im_buf_cleanup(&url);
    return IM_NOMEM;
  }
  CURL *e = a->easy;
  curl_easy_setopt(e, CURLOPT_URL, url.data);
  im_buf_cleanup(&url);
  curl_easy_setopt(e, CURLOPT_POST, 1L);
  /* The body goes out from our buffer with the head (no read callback, so
   * libcurl allocates no upload buffer per transfer). */
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)a->body.len);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, a->body.data);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, a->hdrs);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, a);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, a);
  curl_easy_setopt(e, CURLOPT_PRIVATE, a);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  /* SSE events are a few hundred bytes: a 4 KiB receive buffer (libcurl's
   * default is 16 KiB) keeps 10,000 streams within memory. */
  curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 4096L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(c->timeout_connect_ns / 1000000));
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, im__load_cancel_timeout_ms(L, a));
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
                   c->http2 ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_1_1);
  /* HTTP/2: a request waits for a connection being set up to say whether it
   * multiplexes, rather than opening its own (streams share connections). */
  if (c->http2)
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
  if (c->insecure) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  im_net_apply(e, c->net, true);
  if (!c->keepalive)
    curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
  return IM_OK;
}

/* Hands an attempt to libcurl, building it first if it was not prepared;
 * t_start is now. */
enum im_errclass im__load_classify(struct attempt *a, CURLcode res) {
  struct im_record *r = &a->rec;
  if (r->error != IM_EC_NONE)
    return r->error; /* set by our own timeouts or an abort */
  switch (res) {
  case CURLE_OK:
    break;
  case CURLE_COULDNT_CONNECT:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
    return IM_EC_CONNECT;
  case CURLE_OPERATION_TIMEDOUT:
    return r->t_send < 0 ? IM_EC_TIMEOUT_CONNECT : IM_EC_TIMEOUT_TOTAL;
  case CURLE_RECV_ERROR:
  case CURLE_SEND_ERROR:
    return r->t_hdr < 0 && r->t_send < 0 ? IM_EC_CONNECT : IM_EC_RESET;
  case CURLE_PARTIAL_FILE:
  case CURLE_GOT_NOTHING:
    return IM_EC_TRUNCATED;
  case CURLE_WRITE_ERROR:
    return IM_EC_MALFORMED;
  default:
    return r->t_hdr < 0 ? IM_EC_CONNECT : IM_EC_TRUNCATED;
  }
  int st = r->http_status;
  if (st == 429)
    return IM_EC_HTTP_429;
  if (st >= 500)
    return IM_EC_HTTP_5XX;
  if (st != 200)
    return IM_EC_HTTP_4XX;
  if (a->error_event)
    return IM_EC_ERROR_EVENT;
  if (a->malformed)
    return IM_EC_MALFORMED;
  if (!strcmp(r->finish_reason, "insufficient_system_resource"))
    return IM_EC_INSUFFICIENT;
  /* A 200 stream without a token is no answer, whatever ended it. */
  if (r->n_chunks == 0)
    return IM_EC_NO_OUTPUT;
  if (!a->saw_done)
    return IM_EC_TRUNCATED;
  return IM_EC_NONE;
}

bool im__load_retryable(enum im_errclass e) {
  switch (e) {
  case IM_EC_CONNECT:
  case IM_EC_TIMEOUT_CONNECT:
  case IM_EC_HTTP_429:
  case IM_EC_HTTP_5XX:
  case IM_EC_RESET:
  case IM_EC_TRUNCATED:
  case IM_EC_ERROR_EVENT:
  case IM_EC_INSUFFICIENT:
    return true;
  default:
    return false;
  }
}

