/* serve --engine: the built-in server wearing another engine's identity
 * (server.h enum im_serve_engine; docs/serve.md "Engine imitation",
 * docs/server-metrics.md "Per engine"). The simulated engine underneath is
 * the same; what changes is what a client can read from outside: the metric
 * names of /metrics, the declaration endpoints, the error wordings and the
 * streamed-error shape, and the connection behaviour. It is the test
 * vehicle of the engine-aware judgement (tests/e2e/test_engines.sh).
 *
 * What each engine says, as its projects document it (facts, not code):
 *   vLLM    GET /version {"version"}; vllm:cache_config_info labels
 *           (vllm/v1/metrics/loggers.py); context overflow 400 "This
 *           model's maximum context length is L tokens. However, you
 *           requested T tokens (P in the messages, M in the completion)..."
 *           (vllm/entrypoints/openai/serving_engine.py).
 *   SGLang  GET /get_server_info: the server args (tp_size, dp_size,
 *           kv_cache_dtype, quantization, max_running_requests,
 *           disable_radix_cache, enable_torch_compile, disable_cuda_graph,
 *           speculative_algorithm, context_length) and "version"; overflow
 *           400 "The input (P tokens) is longer than the model's context
 *           length (L tokens)." (python/sglang/srt/managers/tokenizer_manager.py).
 *   llama.cpp (build b10587, 2026-08, as issue 29 recorded it): GET /props
 *           (default_generation_settings.n_ctx, total_slots, model_path,
 *           build_info), GET /slots (one object per slot: id, n_ctx,
 *           is_processing); /metrics without kv_cache_usage_ratio but with
 *           llamacpp:prompt_tokens_cached_total, and prompt_tokens_total
 *           counting uncached tokens only; the first oversize request gets
 *           a plain HTTP 400 {"error": {"code", "message", "type":
 *           "exceed_context_size_error", "n_prompt_tokens", "n_ctx"}}, later
 *           ones a 200 stream of one `data: {"error": ...}`; a prompt that
 *           fits but whose max_tokens does not is cut at the context
 *           (finish_reason length); the connection is closed after every
 *           streamed response although the head says keep-alive.
 *   TGI     GET /info (model_id, model_dtype, max_concurrent_requests,
 *           max_input_tokens, max_total_tokens, max_batch_total_tokens,
 *           version, sha); overflow 422 {"error": "Input validation error:
 *           `inputs` tokens + `max_new_tokens` must be <= L. Given: P
 *           `inputs` tokens and M `max_new_tokens`", "error_type":
 *           "validation"} (router/src/validation.rs).
 *   TensorRT-LLM (trtllm-serve): no declaration endpoint; trtllm_* metric
 *           names (tensorrt_llm/metrics/collector.py); its overflow wording
 *           is not recorded here: vLLM's is used (its OpenAI server follows
 *           vLLM's protocol).
 * --declare none: no declaration endpoint answers (404) and no info gauge
 * is exported. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "im_version.h"
#include "proto/promexp.h"
#include "serve/server_int.h"

static const char *const engine_names[IM_SERVE_ENGINE_COUNT_] = {
    "infermeter", "vllm", "sglang", "llamacpp", "tgi", "trtllm"};

/* The versions the imitations announce: the builds their facts come from. */
#define VLLM_VERSION "0.11.0"
#define SGLANG_VERSION "0.5.4"
#define LLAMACPP_BUILD "b10587-1f2e3d4c"
#define TGI_VERSION "3.3.6"

const char *im_serve_engine_name(enum im_serve_engine e) {
  return (unsigned)e < IM_SERVE_ENGINE_COUNT_ ? engine_names[e] : "unknown";
}

int im_serve_engine_parse(const char *name) {
  for (int i = 0; name && i < IM_SERVE_ENGINE_COUNT_; i++)
    if (!strcmp(name, engine_names[i]))
      return i;
  return -1;
}

const char *im__srv_imitate_owner(const struct im_server *s) {
  if (s->cfg.declare_none && s->cfg.imitate != IM_SERVE_ENGINE_INFERMETER)
    return "owner"; /* says nothing of who it is either */
  switch (s->cfg.imitate) {
  case IM_SERVE_ENGINE_VLLM: return "vllm";
  case IM_SERVE_ENGINE_SGLANG: return "sglang";
  case IM_SERVE_ENGINE_LLAMACPP: return "llamacpp";
  case IM_SERVE_ENGINE_TGI: return "tgi";
  case IM_SERVE_ENGINE_TRTLLM: return "tensorrt_llm";
  default: return "infermeter";
  }
}

bool im__srv_imitate_lists_len(const struct im_server *s) {
  /* vLLM and SGLang put max_model_len in /v1/models; the others do not. */
  return s->cfg.imitate <= IM_SERVE_ENGINE_SGLANG;
}

bool im__srv_imitate_close_after_stream(const struct im_server *s) {
  return s->cfg.imitate == IM_SERVE_ENGINE_LLAMACPP;
}

static void respond_buf(struct conn *c, int status, enum im_err err, struct im_buf *b) {
  if (err)
    im__srv_respond_error(c, 500, "out of memory", NULL);
  else
    im__srv_respond(c, status, "application/json", b->data, b->len, NULL);
  im_buf_cleanup(b);
}

/* ---- declaration endpoints ------------------------------------------------ */

static const char *quant_of(const struct im_profile *p) {
  return p->weight_bytes <= 1.0 ? "fp8" : NULL;
}

/* The GGUF weight type llama.cpp's model file would carry. */
static const char *gguf_type_of(const struct im_profile *p) {
  return p->weight_bytes <= 1.0 ? "Q8_0" : "BF16";
}

static void sglang_server_info(struct conn *c) {
  struct im_server *s = c->srv;
  const struct im_profile *p = im_engine_profile(s->engine);
  const struct im_engine_config *e = &s->cfg.engine;
  const char *q = quant_of(p);
  struct im_buf b;
  im_buf_init(&b, 1u << 16);
  enum im_err err = im_buf_printf(
      &b,
      "{\"version\":\"%s\",\"model_path\":\"%s\",\"tp_size\":%u,\"dp_size\":%u,"
      "\"kv_cache_dtype\":\"auto\",\"quantization\":%s%s%s,\"max_running_requests\":%u,"
      "\"disable_radix_cache\":%s,\"enable_torch_compile\":false,\"disable_cuda_graph\":false,"
      "\"speculative_algorithm\":%s,\"context_length\":%u,\"chunked_prefill_size\":%u}",
      SGLANG_VERSION, s->model, p->tp, p->dp_attention ? p->dp_attention : 1, q ? "\"" : "",
      q ? q : "null", q ? "\"" : "", e->max_num_seqs, e->prefix_caching ? "false" : "true",
      e->mtp_k ? "\"NEXTN\"" : "null", im_engine_max_model_len(s->engine),
      e->max_num_batched_tokens);
  respond_buf(c, 200, err, &b);
}

static void llamacpp_props(struct conn *c) {
  struct im_server *s = c->srv;
  const struct im_profile *p = im_engine_profile(s->engine);
  struct im_buf b;
  im_buf_init(&b, 1u << 16);
  enum im_err err = im_buf_printf(
      &b,
      "{\"default_generation_settings\":{\"id\":0,\"n_ctx\":%u,\"speculative\":false,"
      "\"is_processing\":false,\"params\":{\"n_predict\":-1,\"temperature\":0.8}},"
      "\"total_slots\":%u,\"model_alias\":\"%s\",\"model_path\":\"/models/%s-%s.gguf\","
      "\"modalities\":{\"vision\":false,\"audio\":false},\"build_info\":\"%s\"}",
      im_engine_max_model_len(s->engine), s->cfg.engine.max_num_seqs, s->model, s->model,
      gguf_type_of(p), LLAMACPP_BUILD);
  respond_buf(c, 200, err, &b);
}

static void llamacpp_slots(struct conn *c) {
  struct im_server *s = c->srv;
  struct im_engine_stats st;
  im_sim_engine_stats(s->engine, &s->metrics, &st);
  struct im_buf b;
  im_buf_init(&b, 4u << 20);
  /* One object per slot; as many busy as the engine runs (or holds waiting). */
  uint32_t n = s->cfg.engine.max_num_seqs, busy = st.running + st.waiting;
  enum im_err err = im_buf_puts(&b, "[");
  for (uint32_t i = 0; i < n && !err; i++)
    err = im_buf_printf(&b, "%s{\"id\":%u,\"n_ctx\":%u,\"speculative\":false,\"is_processing\":%s}",
                        i ? "," : "", i, im_engine_max_model_len(s->engine),
                        i < busy ? "true" : "false");
  if (!err)
    err = im_buf_puts(&b, "]");
  respond_buf(c, 200, err, &b);
}

static void tgi_info(struct conn *c) {
  struct im_server *s = c->srv;
  const struct im_profile *p = im_engine_profile(s->engine);
  uint32_t len = im_engine_max_model_len(s->engine);
  struct im_buf b;
  im_buf_init(&b, 1u << 16);
  enum im_err err = im_buf_printf(
      &b,
      "{\"model_id\":\"%s\",\"model_sha\":null,\"model_dtype\":\"%s\",\"model_device_type\":"
      "\"cuda\",\"max_concurrent_requests\":%u,\"max_best_of\":2,\"max_stop_sequences\":4,"
      "\"max_input_tokens\":%u,\"max_total_tokens\":%u,\"max_batch_total_tokens\":%u,"
      "\"validation_workers\":2,\"version\":\"%s\",\"sha\":\"0000000\","
      "\"router\":\"text-generation-router\"}",
      s->model, p->weight_bytes <= 1.0 ? "torch.float8_e4m3fn" : "torch.bfloat16",
      s->cfg.engine.max_num_seqs, len ? len - 1 : 0, len, s->cfg.engine.max_num_batched_tokens,
      TGI_VERSION);
  respond_buf(c, 200, err, &b);
}

/* ---- /metrics --------------------------------------------------------------- */

static enum im_err gauge(struct im_buf *b, const char *name, const char *help, const char *lab,
                         double v) {
  enum im_err err = im_prom_family(b, name, "gauge", help);
  return err ? err : im_prom_sample(b, name, lab, v);
}

static enum im_err counter(struct im_buf *b, const char *name, const char *help, const char *lab,
                           double v) {
  enum im_err err = im_prom_family(b, name, "counter", help);
  return err ? err : im_prom_sample(b, name, lab, v);
}

static enum im_err hist(struct im_buf *b, const char *name, const char *help, const char *lab,
                        const struct im_prom_hist *h) {
  enum im_err err = im_prom_family(b, name, "histogram", help);
  return err ? err : im_prom_hist_write(b, name, lab, h);
}

/* vLLM: the built-in page without the simulator's extras (and without
 * cache_config_info under --declare none). */
static enum im_err vllm_metrics(struct im_server *s, struct im_buf *out) {
  struct im_buf page;
  im_buf_init(&page, 4u << 20);
  enum im_err err = im__srv_metrics_page(s, &page);
  const char *p = page.data ? page.data : "", *end = p + page.len;
  while (!err && p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
    bool drop = memmem(p, n, "infermeter_sim_", 15) ||
                (s->cfg.declare_none && memmem(p, n, "vllm:cache_config_info", 22));
    if (!drop)
      err = im_buf_append(out, p, n);
    p += n;
  }
  im_buf_cleanup(&page);
  return err;
}

static enum im_err sglang_metrics(struct im_server *s, struct im_buf *b,
                                  const struct im_engine_stats *st) {
  char lab[200];
  snprintf(lab, sizeof lab, "model_name=\"%s\"", s->model);
  enum im_err err =
      gauge(b, "sglang:num_running_reqs", "The number of running requests.", lab, st->running);
  if (!err)
    err = gauge(b, "sglang:num_queue_reqs", "The number of requests in the waiting queue.", lab,
                st->waiting);
  if (!err)
    err = gauge(b, "sglang:token_usage", "The token usage.", lab, st->kv_usage);
  if (!err)
    err = counter(b, "sglang:prompt_tokens_total", "Number of prefill tokens processed.", lab,
                  (double)st->kv.queries_tokens);
  if (!err)
    err = counter(b, "sglang:cached_tokens_total", "Number of cached prompt tokens.", lab,
                  (double)st->kv.hits_tokens);
  if (!err)
    err = counter(b, "sglang:generation_tokens_total", "Number of generation tokens processed.",
                  lab, (double)st->generation_tokens);
  if (!err)
    err = counter(b, "sglang:num_retracted_requests_total", "Total number of retracted requests.",
                  lab, (double)st->preemptions);
  if (!err)
    err = hist(b, "sglang:time_to_first_token_seconds", "Histogram of time to first token.", lab,
               &s->metrics.hist[IM_H_TTFT]);
  if (!err)
    err = hist(b, "sglang:e2e_request_latency_seconds", "Histogram of e2e request latency.", lab,
               &s->metrics.hist[IM_H_E2E]);
  return err;
}

/* llama.cpp: no labels, no histograms; prompt_tokens_total counts the
 * uncached prompt tokens only, prompt_tokens_cached_total the rest; the
 * tokens/s gauges are those of the last busy period (kept raw by a client). */
static enum im_err llamacpp_metrics(struct im_server *s, struct im_buf *b,
                                    const struct im_engine_stats *st) {
  const struct im_prom_hist *pre = &s->metrics.hist[IM_H_PREFILL];
  const struct im_prom_hist *dec = &s->metrics.hist[IM_H_DECODE];
  double uncached = (double)(st->kv.queries_tokens - st->kv.hits_tokens);
  enum im_err err = counter(b, "llamacpp:prompt_tokens_total", "Number of prompt tokens processed.",
                            "", uncached);
  if (!err)
    err = counter(b, "llamacpp:prompt_tokens_cached_total",
                  "Number of prompt tokens taken from the cache.", "",
                  (double)st->kv.hits_tokens);
  if (!err)
    err = counter(b, "llamacpp:prompt_seconds_total", "Prompt process time", "", pre->sum);
  if (!err)
    err = counter(b, "llamacpp:tokens_predicted_total", "Number of generation tokens processed.",
                  "", (double)st->generation_tokens);
  if (!err)
    err = counter(b, "llamacpp:tokens_predicted_seconds_total", "Predict process time", "",
                  dec->sum);
  if (!err)
    err = counter(b, "llamacpp:n_decode_total", "Total number of llama_decode() calls", "",
                  (double)st->steps);
  if (!err)
    err = gauge(b, "llamacpp:prompt_tokens_seconds", "Average prompt throughput in tokens/s.", "",
                pre->sum > 0 ? uncached / pre->sum : 0.0);
  if (!err)
    err = gauge(b, "llamacpp:predicted_tokens_seconds",
                "Average generation throughput in tokens/s.", "",
                dec->sum > 0 ? (double)st->generation_tokens / dec->sum : 0.0);
  if (!err)
    err = gauge(b, "llamacpp:requests_processing", "Number of requests processing.", "",
                st->running);
  if (!err)
    err = gauge(b, "llamacpp:requests_deferred", "Number of requests deferred.", "", st->waiting);
  return err;
}

static enum im_err tgi_metrics(struct im_server *s, struct im_buf *b,
                               const struct im_engine_stats *st) {
  enum im_err err = gauge(b, "tgi_batch_current_size", "Current batch size", "", st->running);
  if (!err)
    err = gauge(b, "tgi_queue_size", "Current queue size", "", st->waiting);
  /* Its token counters are histograms' _sum; a one-bucket histogram says
   * the same. */
  if (!err)
    err = im_prom_family(b, "tgi_request_input_length", "histogram", "Input token length");
  if (!err)
    err = im_prom_sample(b, "tgi_request_input_length_sum", "", (double)st->kv.queries_tokens);
  if (!err)
    err = im_prom_family(b, "tgi_request_generated_tokens", "histogram", "Generated tokens");
  if (!err)
    err = im_prom_sample(b, "tgi_request_generated_tokens_sum", "", (double)st->generation_tokens);
  if (!err)
    err = hist(b, "tgi_request_duration", "Request duration", "", &s->metrics.hist[IM_H_E2E]);
  if (!err)
    err = hist(b, "tgi_request_queue_duration", "Queue duration", "",
               &s->metrics.hist[IM_H_QUEUE]);
  return err;
}

static enum im_err trtllm_metrics(struct im_server *s, struct im_buf *b,
                                  const struct im_engine_stats *st) {
  enum im_err err = gauge(b, "trtllm_num_requests_running", "Running requests.", "", st->running);
  if (!err)
    err = gauge(b, "trtllm_num_requests_waiting", "Waiting requests.", "", st->waiting);
  if (!err)
    err = gauge(b, "trtllm_kv_cache_utilization", "KV cache utilization.", "", st->kv_usage);
  if (!err)
    err = counter(b, "trtllm_prompt_tokens_total", "Prompt tokens.", "",
                  (double)st->kv.queries_tokens);
  if (!err)
    err = counter(b, "trtllm_prompt_cached_tokens_total", "Prompt tokens from the cache.", "",
                  (double)st->kv.hits_tokens);
  if (!err)
    err = counter(b, "trtllm_generation_tokens_total", "Generation tokens.", "",
                  (double)st->generation_tokens);
  if (!err)
    err = hist(b, "trtllm_time_to_first_token_seconds", "Time to first token.", "",
               &s->metrics.hist[IM_H_TTFT]);
  if (!err)
    err = hist(b, "trtllm_e2e_request_latency_seconds", "End-to-end latency.", "",
               &s->metrics.hist[IM_H_E2E]);
  return err;
}

static void imitate_metrics(struct conn *c) {
  struct im_server *s = c->srv;
  struct im_engine_stats st;
  im_sim_engine_stats(s->engine, &s->metrics, &st);
  struct im_buf b;
  im_buf_init(&b, 4u << 20);
  enum im_err err = IM_OK;
  switch (s->cfg.imitate) {
  case IM_SERVE_ENGINE_VLLM: err = vllm_metrics(s, &b); break;
  case IM_SERVE_ENGINE_SGLANG: err = sglang_metrics(s, &b, &st); break;
  case IM_SERVE_ENGINE_LLAMACPP: err = llamacpp_metrics(s, &b, &st); break;
  case IM_SERVE_ENGINE_TGI: err = tgi_metrics(s, &b, &st); break;
  default: err = trtllm_metrics(s, &b, &st); break;
  }
  if (err)
    im__srv_respond_error(c, 500, "metrics page too large", NULL);
  else
    im__srv_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len, NULL);
  im_buf_cleanup(&b);
}

static bool path_is(const struct im_http_request *r, const char *p) {
  size_t n = strlen(p);
  return r->path_len == n && memcmp(r->path, p, n) == 0;
}

bool im__srv_imitate_route(struct conn *c) {
  struct im_server *s = c->srv;
  const struct im_http_request *r = &c->parser.req;
  enum im_serve_engine e = s->cfg.imitate;
  if (e == IM_SERVE_ENGINE_INFERMETER ||
      (r->method != IM_HTTP_GET && r->method != IM_HTTP_HEAD))
    return false;
  if (path_is(r, "/metrics")) {
    imitate_metrics(c);
    return true;
  }
  /* Each engine's declaration endpoint; every other one is not found, as on
   * that engine (and all of them under --declare none). */
  bool decl = !s->cfg.declare_none;
  if (path_is(r, "/version")) {
    if (decl && e == IM_SERVE_ENGINE_VLLM) {
      static const char body[] = "{\"version\":\"" VLLM_VERSION "\"}";
      im__srv_respond(c, 200, "application/json", body, sizeof body - 1, NULL);
    } else {
      im__srv_respond_error(c, 404, "Not Found", NULL);
    }
    return true;
  }
  if (path_is(r, "/get_server_info") || path_is(r, "/props") || path_is(r, "/slots") ||
      path_is(r, "/info")) {
    if (decl && e == IM_SERVE_ENGINE_SGLANG && path_is(r, "/get_server_info"))
      sglang_server_info(c);
    else if (decl && e == IM_SERVE_ENGINE_LLAMACPP && path_is(r, "/props"))
      llamacpp_props(c);
    else if (decl && e == IM_SERVE_ENGINE_LLAMACPP && path_is(r, "/slots"))
      llamacpp_slots(c);
    else if (decl && e == IM_SERVE_ENGINE_TGI && path_is(r, "/info"))
      tgi_info(c);
    else
      im__srv_respond_error(c, 404, "Not Found", NULL);
    return true;
  }
  return false;
}

/* ---- context overflow ---------------------------------------------------- */

/* llama.cpp's error object for an oversize prompt. */
static enum im_err llamacpp_error(struct im_buf *b, uint32_t n_prompt, uint32_t n_ctx) {
  return im_buf_printf(b,
                       "{\"error\":{\"code\":400,\"message\":\"request (%u tokens) exceeds the "
                       "available context size (%u tokens), try increasing it\",\"type\":"
                       "\"exceed_context_size_error\",\"n_prompt_tokens\":%u,\"n_ctx\":%u}}",
                       n_prompt, n_ctx, n_prompt, n_ctx);
}

bool im__srv_imitate_overflow(struct conn *c, bool streaming, uint32_t n_prompt,
                              int64_t *max_tokens, uint32_t max_len) {
  struct im_server *s = c->srv;
  uint64_t out = *max_tokens > 0 ? (uint64_t)*max_tokens : 1;
  uint64_t want = (uint64_t)n_prompt + out;
  if (n_prompt < max_len && want <= max_len)
    return false;
  char msg[512];
  struct im_buf b;
  im_buf_init(&b, 8192);
  enum im_err err = IM_OK;
  switch (s->cfg.imitate) {
  case IM_SERVE_ENGINE_LLAMACPP:
    if (n_prompt < max_len) { /* it fits: generation stops at the context */
      *max_tokens = (int64_t)(max_len - n_prompt);
      im_buf_cleanup(&b);
      return false;
    }
    if (!s->overflow_answered || !streaming) {
      s->overflow_answered = true;
      err = llamacpp_error(&b, n_prompt, max_len);
      respond_buf(c, 400, err, &b);
      return true;
    }
    /* Later ones: a stream of one error event, then the connection closes. */
    err = im_buf_puts(&b, "data: ");
    if (!err)
      err = llamacpp_error(&b, n_prompt, max_len);
    if (!err)
      err = im_buf_puts(&b, "\n\n");
    c->close_after_write = true;
    if (err)
      im__srv_respond_error(c, 500, "out of memory", NULL);
    else
      im__srv_respond(c, 200, "text/event-stream", b.data, b.len, NULL);
    im_buf_cleanup(&b);
    return true;
  case IM_SERVE_ENGINE_SGLANG:
    if (n_prompt >= max_len)
      snprintf(msg, sizeof msg,
               "The input (%u tokens) is longer than the model's context length (%u tokens).",
               n_prompt, max_len);
    else
      snprintf(msg, sizeof msg,
               "Requested token count exceeds the model's maximum context length of %u tokens. "
               "You requested a total of %" PRIu64 " tokens: %u tokens from the input messages "
               "and %" PRIu64 " tokens for the completion. Please reduce the number of tokens in "
               "the input messages or the completion to fit within the limit.",
               max_len, want, n_prompt, out);
    im_buf_cleanup(&b);
    im__srv_respond_error(c, 400, msg, NULL);
    return true;
  case IM_SERVE_ENGINE_TGI:
    err = im_buf_printf(&b,
                        "{\"error\":\"Input validation error: `inputs` tokens + `max_new_tokens` "
                        "must be <= %u. Given: %u `inputs` tokens and %" PRIu64
                        " `max_new_tokens`\",\"error_type\":\"validation\"}",
                        max_len, n_prompt, out);
    respond_buf(c, 422, err, &b);
    return true;
  default:
    snprintf(msg, sizeof msg,
             "This model's maximum context length is %u tokens. However, you requested %" PRIu64
             " tokens (%u in the messages, %" PRIu64
             " in the completion). Please reduce the length of the messages or completion.",
             max_len, want, n_prompt, out);
    im_buf_cleanup(&b);
    im__srv_respond_error(c, 400, msg, NULL);
    return true;
  }
}
