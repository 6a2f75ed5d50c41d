/* What the target says of itself, read into the manifest before the run
 * (manifest.server.engine; docs/server-metrics.md "Per engine"): the
 * engine's name and version and the settings it declares, under the
 * audit's keys (analyze/validity.h), so that the audit asks the user to
 * --tag only the rest. And the target's requests in flight, for --repeat's
 * drain between runs (run/repeat.c).
 *
 * Where each engine declares (facts from each project's documentation):
 *   vLLM: GET /version {"version"} (nothing else); /metrics'
 *     vllm:cache_config_info labels cache_dtype, enable_prefix_caching,
 *     block_size, num_gpu_blocks.
 *   SGLang: GET /get_server_info, its server args (tp_size, dp_size,
 *     kv_cache_dtype, quantization, max_running_requests,
 *     disable_radix_cache, enable_torch_compile, disable_cuda_graph,
 *     speculative_algorithm, context_length) and "version".
 *   llama.cpp: GET /props (total_slots, default_generation_settings.n_ctx,
 *     build_info, model_path: the GGUF file, whose name carries its weight
 *     type by convention).
 *   TGI: GET /info (version, model_dtype, max_concurrent_requests,
 *     max_batch_total_tokens, max_total_tokens).
 *   Any: /v1/models' owned_by ("vllm", "sglang", "llamacpp", "tgi") names
 *     the engine when no endpoint declares anything. */
#include <curl/curl.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/buf.h"
#include "proto/promparse.h"
#include "run/run_int.h"

static size_t on_body(char *d, size_t s, size_t n, void *ud) {
  struct im_buf *b = ud;
  return im_buf_append(b, d, s * n) == IM_OK ? s * n : 0;
}

long im__run_get_text(const char *url, const char *path, const struct im_net *net,
                      struct im_buf *out) {
  char full[2200];
  snprintf(full, sizeof full, "%s%s", url, path);
  CURL *c = curl_easy_init();
  long status = 0;
  if (!c)
    return 0;
  curl_easy_setopt(c, CURLOPT_URL, full);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 2000L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  im_net_apply(c, net, true);
  if (curl_easy_perform(c) != CURLE_OK ||
      curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK)
    status = 0;
  curl_easy_cleanup(c);
  return status;
}

/* settings[key] = a JSON value's text (strings as they are, numbers
 * written, booleans "on"/"off", null "none"); nothing when v is absent or
 * not a scalar. */
static void put(json_t *settings, const char *key, const json_t *v) {
  char buf[64];
  if (json_is_string(v))
    snprintf(buf, sizeof buf, "%s", json_string_value(v));
  else if (json_is_integer(v))
    snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
  else if (json_is_real(v))
    snprintf(buf, sizeof buf, "%g", json_real_value(v));
  else if (json_is_boolean(v))
    snprintf(buf, sizeof buf, "%s", json_is_true(v) ? "on" : "off");
  else if (json_is_null(v))
    snprintf(buf, sizeof buf, "none");
  else
    return;
  json_object_set_new(settings, key, json_string(buf));
}

/* A boolean declared the other way round (disable_X): "on" / "off". */
static void put_negated(json_t *settings, const char *key, const json_t *v) {
  if (json_is_boolean(v))
    json_object_set_new(settings, key, json_string(json_is_true(v) ? "off" : "on"));
}

/* The GGUF weight type in a model file's name ("...-Q4_K_M.gguf",
 * "...-F16.gguf"): the last '-' or '.' separated part before ".gguf" that
 * starts with Q, IQ, F or BF and a digit; "" when none. */
static void gguf_type(const char *path, char *out, size_t cap) {
  out[0] = '\0';
  const char *end = path ? strstr(path, ".gguf") : NULL;
  if (!end)
    return;
  const char *p = end;
  while (p > path && p[-1] != '-' && p[-1] != '.' && p[-1] != '/')
    p--;
  size_t n = (size_t)(end - p);
  bool ok = n > 1 && n < cap &&
            ((p[0] == 'Q' && isdigit((unsigned char)p[1])) ||
             (p[0] == 'F' && isdigit((unsigned char)p[1])) ||
             (n > 2 && p[0] == 'I' && p[1] == 'Q' && isdigit((unsigned char)p[2])) ||
             (n > 2 && p[0] == 'B' && p[1] == 'F' && isdigit((unsigned char)p[2])));
  if (ok) {
    memcpy(out, p, n);
    out[n] = '\0';
  }
}

static json_t *engine_obj(const char *name, const char *version, const char *from) {
  return json_pack("{s:s, s:s?, s:s, s:o}", "name", name, "version", version, "from", from,
                   "settings", json_object());
}

struct cache_info {
  json_t *settings;
};

/* vllm:cache_config_info's labels into the settings. */
static enum im_err on_cache_info(void *ud, const struct im_prom_sample *s) {
  struct cache_info *ci = ud;
  if (strcmp(s->name, "vllm:cache_config_info"))
    return IM_OK;
  const char *dt = im_prom_sample_label(s, "cache_dtype");
  const char *pc = im_prom_sample_label(s, "enable_prefix_caching");
  if (dt)
    json_object_set_new(ci->settings, "kv_cache_dtype", json_string(dt));
  if (pc)
    json_object_set_new(ci->settings, "enable_prefix_caching",
                        json_string(!strcasecmp(pc, "true") ? "on" : "off"));
  return IM_OK;
}

static void vllm_cache_info(const char *url, const struct im_net *net, json_t *settings) {
  struct im_buf b;
  im_buf_init(&b, (size_t)32 << 20);
  if (im__run_get_text(url, "/metrics", net, &b) == 200) {
    struct cache_info ci = {settings};
    struct im_promparse pp;
    struct im_promparse_cbs cbs = {.sample = on_cache_info, .ud = &ci};
    im_promparse_init(&pp, NULL);
    if (im_promparse_page(&pp, b.data, b.len, &cbs, NULL) != IM_OK)
      json_object_clear(settings); /* a page it cannot read declares nothing */
    im_promparse_cleanup(&pp);
  }
  im_buf_cleanup(&b);
}

static json_t *from_sglang(const json_t *info) {
  const json_t *v = json_object_get(info, "version");
  json_t *e = engine_obj("sglang", json_is_string(v) ? json_string_value(v) : NULL,
                         "/get_server_info");
  json_t *st = json_object_get(e, "settings");
  put(st, "tp", json_object_get(info, "tp_size"));
  put(st, "dp", json_object_get(info, "dp_size"));
  put(st, "kv_cache_dtype", json_object_get(info, "kv_cache_dtype"));
  put(st, "quantization", json_object_get(info, "quantization"));
  put(st, "max_num_seqs", json_object_get(info, "max_running_requests"));
  put_negated(st, "enable_prefix_caching", json_object_get(info, "disable_radix_cache"));
  put(st, "torch_compile", json_object_get(info, "enable_torch_compile"));
  put_negated(st, "cuda_graph", json_object_get(info, "disable_cuda_graph"));
  put(st, "speculative", json_object_get(info, "speculative_algorithm"));
  put(st, "context_length", json_object_get(info, "context_length"));
  return e;
}

static json_t *from_llamacpp(const json_t *props) {
  const json_t *b = json_object_get(props, "build_info");
  json_t *e = engine_obj("llama.cpp", json_is_string(b) ? json_string_value(b) : NULL, "/props");
  json_t *st = json_object_get(e, "settings");
  put(st, "slots", json_object_get(props, "total_slots"));
  put(st, "n_ctx", json_object_get(json_object_get(props, "default_generation_settings"), "n_ctx"));
  put(st, "build", b);
  const json_t *mp = json_object_get(props, "model_path");
  char wt[32];
  gguf_type(json_is_string(mp) ? json_string_value(mp) : NULL, wt, sizeof wt);
  if (wt[0])
    json_object_set_new(st, "weight_type", json_string(wt));
  return e;
}

static json_t *from_tgi(const json_t *info) {
  const json_t *v = json_object_get(info, "version");
  json_t *e = engine_obj("tgi", json_is_string(v) ? json_string_value(v) : NULL, "/info");
  json_t *st = json_object_get(e, "settings");
  put(st, "dtype", json_object_get(info, "model_dtype"));
  put(st, "max_num_seqs", json_object_get(info, "max_concurrent_requests"));
  put(st, "max_batch_total_tokens", json_object_get(info, "max_batch_total_tokens"));
  put(st, "max_total_tokens", json_object_get(info, "max_total_tokens"));
  return e;
}

json_t *im__run_engine_declared(const char *url, const char *api_key, const struct im_net *net,
                                const json_t *models, const json_t *version) {
  /* infermeter serve says everything in its own /version (its "config"). */
  if (json_is_string(json_object_get(version, "engine")))
    return NULL;
  char err[256];
  json_t *doc = NULL, *e = NULL;
  if (im_http_get_json(url, "/get_server_info", api_key, net, &doc, err, sizeof err) == 200 &&
      json_is_object(doc) && json_object_get(doc, "tp_size"))
    e = from_sglang(doc);
  json_decref(doc);
  doc = NULL;
  if (!e && im_http_get_json(url, "/props", api_key, net, &doc, err, sizeof err) == 200 &&
      json_is_object(doc) && (json_object_get(doc, "total_slots") ||
                              json_object_get(doc, "default_generation_settings")))
    e = from_llamacpp(doc);
  json_decref(doc);
  doc = NULL;
  if (!e && im_http_get_json(url, "/info", api_key, net, &doc, err, sizeof err) == 200 &&
      json_is_object(doc) && json_object_get(doc, "model_id") &&
      json_object_get(doc, "max_total_tokens"))
    e = from_tgi(doc);
  json_decref(doc);
  /* vLLM's /version is {"version"} alone. */
  const json_t *vv = json_object_get(version, "version");
  if (!e && json_is_string(vv) && json_object_size(version) == 1) {
    e = engine_obj("vllm", json_string_value(vv), "/version");
    vllm_cache_info(url, net, json_object_get(e, "settings"));
  }
  if (e)
    return e;
  /* Nothing declared: /v1/models' owned_by may still name it. */
  const json_t *owner = json_object_get(json_array_get(json_object_get(models, "data"), 0),
                                        "owned_by");
  static const char *const owners[][2] = {{"vllm", "vllm"},       {"sglang", "sglang"},
                                          {"llamacpp", "llama.cpp"}, {"tgi", "tgi"},
                                          {"tensorrt_llm", "trtllm"}, {"trtllm", "trtllm"}};
  for (size_t i = 0; json_is_string(owner) && i < sizeof owners / sizeof owners[0]; i++)
    if (!strcmp(json_string_value(owner), owners[i][0]))
      return engine_obj(owners[i][1], NULL, "/v1/models owned_by");
  return NULL;
}
