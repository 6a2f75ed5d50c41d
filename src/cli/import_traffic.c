/* `infermeter import --otlp-traces`: the traffic's effective request rate
 * and a replayable trace of its user requests (cli/import_int.h). The
 * figures are the report's (analyze/summary.c, docs/metrics.md §3), read
 * back from results.json; nothing is computed here. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cli/import_int.h"
#include "record/json_get.h"

int im__otlp_summary(const char *dir, FILE *text) {
  char path[4200];
  snprintf(path, sizeof path, "%s/results.json", dir);
  json_error_t je;
  json_t *root = json_load_file(path, 0, &je);
  const json_t *m = json_object_get(root, "metrics"), *er = json_object_get(m, "effective_rate"),
               *cl = json_object_get(er, "classes"), *errs = json_object_get(m, "errors");
  if (!json_is_object(cl)) {
    fprintf(stderr, "infermeter import: %s: no effective_rate figures\n", path);
    json_decref(root);
    return -1;
  }
  if (text) {
    double att = im_json_num_of(er, "attempts", NAN);
    fprintf(text, "---------- Traffic of the trace (docs/metrics.md §3) ----------\n");
    fprintf(text, "%-40s%.3f / %.3f (%.1f%% user work)\n",
            "Raw / effective rate (req/s):", im_json_num_of(er, "raw_qps", NAN), im_json_num_of(er, "effective_qps", NAN),
            100 * im_json_num_of(er, "effective_ratio", NAN));
    fprintf(text, "%-16s %8s %8s %14s %14s\n", "class", "spans", "share", "mean lat (ms)",
            "p99 lat (ms)");
    static const char *const rows[][2] = {{"measured", "user requests"},
                                          {"retry", "retries"},
                                          {"health", "health checks"},
                                          {"probe", "probes"},
                                          {"dup_fail", "dup_fail"}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
      const json_t *c = json_object_get(cl, rows[i][0]);
      fprintf(text, "%-16s %8.0f %7.1f%% %14.2f %14.2f\n", rows[i][1], im_json_num_of(c, "count", NAN),
              100 * im_json_num_of(c, "share", NAN), im_json_num_of(c, "mean_latency_ms", NAN), im_json_num_of(c, "p99_latency_ms", NAN));
    }
    /* Errors cut across the classes (a failed retry is a retry). */
    double none = im_json_num_of(errs, "none", NAN), total = 0;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)errs, k, v) total += json_is_number(v) ? json_number_value(v) : 0;
    fprintf(text,
            "%-16s %8.0f %7.1f%%   (of %.0f spans: http_5xx %.0f, http_429 %.0f, "
            "http_4xx %.0f)\n",
            "errors", total - none, total > 0 ? 100 * (total - none) / total : 0.0, att,
            im_json_num_of(errs, "http_5xx", NAN), im_json_num_of(errs, "http_429", NAN), im_json_num_of(errs, "http_4xx", NAN));
  }
  json_decref(root);
  return 0;
}

int im__write_user_trace(const struct im_import *im, const char *path, uint32_t in_len,
                         uint32_t out_len, FILE *text) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "infermeter import: --trace-out %s: %s\n", path, strerror(errno));
    return -1;
  }
  fprintf(f, "TIMESTAMP,ContextTokens,GeneratedTokens\n");
  int64_t t0 = -1;
  size_t n = 0;
  for (size_t i = 0; i < im->n; i++) {
    const struct im_record *r = &im->recs[i];
    if (r->kind != IM_KIND_MEASURED || r->attempt > 1)
      continue;
    if (t0 < 0)
      t0 = r->t_start;
    fprintf(f, "%.6f,%u,%u\n", (double)(r->t_start - t0) / 1e9,
            r->prompt_tokens ? r->prompt_tokens : in_len,
            r->output_tokens ? r->output_tokens : out_len);
    n++;
  }
  if (fclose(f) != 0) {
    fprintf(stderr, "infermeter import: --trace-out %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (text)
    fprintf(text,
            "Trace of the %zu user requests: %s (infermeter run --dataset azure "
            "--dataset-path %s)\n",
            n, path, path);
  return 0;
}
