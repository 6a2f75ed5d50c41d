/* vLLM's flat result file of a run (results/vllm_file.h). */
#include "results/vllm_file.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "record/reader.h"
#include "record/record.h"
#include "report/jsonw.h" /* im_jw_pct_word: vLLM's str(int(p)) if whole, else str(p) */

static json_t *num_or(const json_t *v) { return json_is_number(v) ? json_deep_copy(v) : json_null(); }

/* Whether word (a comma-separated list item) is in list. */
static bool in_list(const char *list, const char *word, size_t n) {
  for (const char *p = list; *p;) {
    size_t k = strcspn(p, ",");
    if (k == n && !strncmp(p, word, n))
      return true;
    p += k + (p[k] == ',');
  }
  return false;
}

/* Whether a key of the summary belongs in vLLM's file: vLLM writes mean,
 * median, std and the --metric-percentiles (default 99) of the metrics of
 * --percentile-metrics (default ttft,tpot,itl) only (serve.py). */
static bool vllm_key_kept(const char *key, const struct im_vllm_file *v) {
  if (!strcmp(key, "null_reasons")) /* infermeter's: why a figure is null */
    return false;
  size_t n = strlen(key);
  if (n < 4 || strcmp(key + n - 3, "_ms"))
    return true;
  const char *metric = key + n - 3;
  while (metric > key && metric[-1] != '_')
    metric--;
  size_t mlen = (size_t)(key + n - 3 - metric);
  if (metric == key || !in_list("ttft,tpot,itl,e2el", metric, mlen))
    return true;
  if (!in_list(v->percentile_metrics ? v->percentile_metrics : "ttft,tpot,itl", metric, mlen))
    return false;
  size_t slen = (size_t)(metric - 1 - key); /* the statistic: mean, median, std, pP */
  if ((slen == 4 && !strncmp(key, "mean", 4)) || (slen == 6 && !strncmp(key, "median", 6)) ||
      (slen == 3 && !strncmp(key, "std", 3)))
    return true;
  const char *list = v->metric_percentiles ? v->metric_percentiles : "99";
  for (const char *p = list; *p;) {
    char word[32];
    im_jw_pct_word(strtod(p, NULL), word, sizeof word);
    if (key[0] == 'p' && strlen(word) == slen - 1 && !strncmp(key + 1, word, slen - 1))
      return true;
    p += strcspn(p, ",");
    p += *p == ',';
  }
  return false;
}

/* Orders attempts by logical request, the last attempt first. */
static int by_request(const void *x, const void *y) {
  const struct im_record *a = *(const struct im_record *const *)x, *b = *(const struct im_record *const *)y;
  if (a->logical_id != b->logical_id)
    return a->logical_id < b->logical_id ? -1 : 1;
  return a->attempt > b->attempt ? -1 : a->attempt < b->attempt;
}

/* --save-detailed: vLLM's per-request arrays from DIR/requests.jsonl, one
 * entry per user request in the order they were sent (its final attempt;
 * warm-ups excluded), as serve.py's benchmark() lists its outputs: a
 * failure has ttft 0, no itls, latency 0 and output length 0. */
static void add_arrays(const char *dir, json_t *out) {
  char path[4200];
  snprintf(path, sizeof path, "%s/requests.jsonl", dir);
  struct im_record *recs = NULL;
  size_t n = 0;
  struct im_read_report rr;
  memset(&rr, 0, sizeof rr);
  json_t *in = json_array(), *ol = json_array(), *st = json_array(), *tt = json_array(),
         *it = json_array(), *lat = json_array(), *qt = json_array(), *gt = json_array(),
         *er = json_array();
  const struct im_record **ord = NULL;
  bool *final = NULL;
  if (im_records_read_path(path, &recs, &n, &rr) == IM_OK && n &&
      (ord = malloc(n * sizeof *ord)) && (final = calloc(n, sizeof *final))) {
    for (size_t i = 0; i < n; i++)
      ord[i] = &recs[i];
    qsort(ord, n, sizeof *ord, by_request);
    for (size_t i = 0; i < n; i++)
      final[ord[i] - recs] = i == 0 || ord[i - 1]->logical_id != ord[i]->logical_id;
  }
  for (size_t i = 0; final && i < n; i++) {
    const struct im_record *r = &recs[i];
    if (!final[i] || (r->kind != IM_KIND_MEASURED && r->kind != IM_KIND_RETRY))
      continue;
    bool ok = r->error == IM_EC_NONE && r->t_first >= 0;
    json_array_append_new(in, json_integer(r->prompt_tokens));
    json_array_append_new(ol, json_integer(ok ? r->output_tokens : 0));
    json_array_append_new(st, json_real((double)r->t_start / 1e9));
    json_array_append_new(tt, json_real(ok ? (double)(r->t_first - r->t_start) / 1e9 : 0.0));
    json_array_append_new(lat, json_real(ok ? (double)(r->t_last - r->t_start) / 1e9 : 0.0));
    json_array_append_new(qt, json_real((double)(r->t_start - r->t_dispatch) / 1e9));
    json_t *gaps = json_array();
    for (uint32_t k = 1; ok && r->chunk_us && k < r->n_chunks; k++)
      json_array_append_new(gaps, json_real((double)(r->chunk_us[k] - r->chunk_us[k - 1]) / 1e6));
    json_array_append_new(it, gaps);
    json_array_append_new(gt, json_string(""));
    json_array_append_new(er, json_string(ok ? "" : im_errclass_name(r->error)));
  }
  free(ord);
  free(final);
  im_records_free(recs, n);
  json_object_set_new(out, "input_lens", in);
  json_object_set_new(out, "output_lens", ol);
  json_object_set_new(out, "ttfts", tt);
  json_object_set_new(out, "itls", it);
  json_object_set_new(out, "latencies", lat);
  json_object_set_new(out, "start_times", st);
  json_object_set_new(out, "queue_times", qt);
  json_object_set_new(out, "generated_texts", gt);
  json_object_set_new(out, "errors", er);
}

enum im_err im_vllm_file_write(const char *dir, const struct im_vllm_file *v, char *file,
                               size_t file_len, char *err, size_t err_len) {
  char path[4200];
  snprintf(path, sizeof path, "%s/results.json", dir);
  json_error_t je;
  json_t *res = json_load_file(path, 0, &je);
  const json_t *sum = json_object_get(res, "summary"), *m = json_object_get(res, "manifest");
  if (!json_is_object(sum)) {
    json_decref(res);
    return im_errf(err, err_len, IM_INVAL,
                   "--save-result: %s has no one-stage summary (a sweep writes none: vLLM's "
                   "file holds one configuration)", path);
  }
  const json_t *sch = json_object_get(m, "schedule"), *tgt = json_object_get(m, "target");
  const char *model = json_string_value(json_object_get(tgt, "model"));
  const char *backend = v->backend ? v->backend : json_string_value(json_object_get(tgt, "backend"));
  const char *tok = json_string_value(json_object_get(json_object_get(m, "workload"), "tokenizer"));
  time_t now = time(NULL);
  char date[32];
  strftime(date, sizeof date, "%Y%m%d-%H%M%S", localtime(&now));
  double rate = json_number_value(json_object_get(sch, "rate"));
  json_t *out = json_object();
  json_object_set_new(out, "date", json_string(date));
  json_object_set_new(out, "endpoint_type", json_string(backend ? backend : "openai-chat"));
  json_object_set_new(out, "backend", json_string(backend ? backend : "openai-chat"));
  json_object_set_new(out, "label", v->label ? json_string(v->label) : json_null());
  json_object_set_new(out, "model_id", json_string(model ? model : ""));
  json_object_set_new(out, "tokenizer_id", json_string(tok && strcmp(tok, "built-in") ? tok : model ? model : ""));
  json_object_set_new(out, "num_prompts",
                      v->num_prompts > 0
                          ? json_integer(v->num_prompts)
                          : json_integer(json_integer_value(json_object_get(sum, "completed")) +
                                         json_integer_value(json_object_get(sum, "failed"))));
  for (int i = 0; i < v->n_metadata; i++) {
    const char *eq = strchr(v->metadata[i], '=');
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(eq - v->metadata[i]), v->metadata[i]);
    json_object_set_new(out, key, json_string(eq + 1));
  }
  /* "inf" for a burst, and with a ramp (its --request-rate stays inf). */
  json_object_set_new(out, "request_rate", json_is_number(json_object_get(sch, "rate")) && !v->ramp
                                               ? json_real(rate)
                                               : json_string("inf"));
  json_object_set_new(out, "burstiness", json_is_number(json_object_get(sch, "burstiness"))
                                             ? json_deep_copy(json_object_get(sch, "burstiness"))
                                             : json_real(1.0));
  json_object_set_new(out, "max_concurrency", num_or(json_object_get(sch, "max_concurrency")));
  if (v->ramp) { /* serve.py writes these with a ramp */
    json_object_set_new(out, "ramp_up_strategy", json_string(v->ramp));
    json_object_set_new(out, "ramp_up_start_rps", json_integer(atoll(v->ramp_start)));
    json_object_set_new(out, "ramp_up_end_rps", json_integer(atoll(v->ramp_end)));
  }
  /* The benchmark's figures, computed vLLM's way (analyze/summary.h). */
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)sum, key, val)
    if (vllm_key_kept(key, v))
      json_object_set(out, key, val);
  if (v->save_detailed)
    add_arrays(dir, out);
  if (v->result_dir && mkdir(v->result_dir, 0755) && errno != EEXIST) {
    enum im_err e = im_errf(err, err_len, IM_IO, "--result-dir %s: %s", v->result_dir,
                            strerror(errno));
    json_decref(out);
    json_decref(res);
    return e;
  }
  const char *rdir = v->result_dir ? v->result_dir : ".";
  if (v->result_filename && v->result_filename[0] == '/')
    snprintf(file, file_len, "%s", v->result_filename);
  else if (v->result_filename)
    snprintf(file, file_len, "%s/%s", rdir, v->result_filename);
  else {
    const char *base = model ? strrchr(model, '/') : NULL;
    char rs[32], conc[48] = "";
    if (!json_is_number(json_object_get(sch, "rate")) || rate >= 100000) /* a burst */
      snprintf(rs, sizeof rs, "inf");
    else { /* Python's str() of vLLM's float rate: 20.0, 2.5 */
      im_jw_pct_word(rate, rs, sizeof rs - 2);
      if (!strchr(rs, '.') && !strchr(rs, 'e'))
        strcat(rs, ".0");
    }
    if (json_is_integer(json_object_get(sch, "max_concurrency")))
      snprintf(conc, sizeof conc, "-concurrency%lld",
               (long long)json_integer_value(json_object_get(sch, "max_concurrency")));
    const char *label = v->label ? v->label : backend ? backend : "openai-chat";
    const char *mbase = base ? base + 1 : model ? model : "model";
    if (v->ramp) /* compute_result_filename in serve.py */
      snprintf(file, file_len, "%s/%s-ramp-up-%s-%sqps-%sqps%s-%s-%s.json", rdir, label,
               v->ramp, v->ramp_start, v->ramp_end, conc, mbase, date);
    else
      snprintf(file, file_len, "%s/%s-%sqps%s-%s-%s.json", rdir, label, rs, conc,
               mbase, date);
  }
  int rc = json_dump_file(out, file, JSON_REAL_PRECISION(17));
  json_decref(out);
  json_decref(res);
  if (rc)
    return im_errf(err, err_len, IM_IO, "--save-result: cannot write %s: %s", file,
                   strerror(errno));
  return IM_OK;
}
