/* The headline figures of a run directory's results.json, read back for
 * `compare` and the run history (docs/results-schema.md; docs/statistics.md).
 *
 * A run directory holds results.json with one stage at the top level or a
 * `stages[]` array. A repeat directory holds run-1/ ... run-K/, each a full
 * run directory (plus an aggregate results.json, which is not read here):
 * im_headline_list_runs() tells the two apart.
 *
 * Everything here is bounded: results.json is read up to
 * IM_HEADLINE_MAX_FILE bytes, at most IM_HEADLINE_MAX_STAGES stages and
 * IM_HEADLINE_MAX_RUNS runs. Functions are reentrant (no global state);
 * errors are written into the caller's msg buffer naming the file. */
#ifndef IM_RECORD_HEADLINE_H
#define IM_RECORD_HEADLINE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

#define IM_HEADLINE_MAX_STAGES 64
#define IM_HEADLINE_MAX_RUNS 256
#define IM_HEADLINE_MAX_FILE (256u << 20)
#define IM_HEADLINE_PATH 1024
/* Caps of the canonical manifest pieces (compact JSON, keys sorted); a
 * longer piece is an IM_LIMIT error. */
#define IM_HEADLINE_IDENT 8192

/* The figures, in table order. */
enum im_headline_fig {
  IM_FIG_REQUEST_THROUGHPUT, /* summary.request_throughput, req/s */
  IM_FIG_OUTPUT_THROUGHPUT,  /* summary.output_throughput, tok/s */
  IM_FIG_GOODPUT,            /* summary.request_goodput, req/s (null without an SLO) */
  IM_FIG_TTFT_P50,           /* metrics.latency_ms.ttft.p50 ... */
  IM_FIG_TTFT_P90,
  IM_FIG_TTFT_P99,
  IM_FIG_TPOT_P50,
  IM_FIG_TPOT_P90,
  IM_FIG_TPOT_P99,
  IM_FIG_ITL_P50,
  IM_FIG_ITL_P90,
  IM_FIG_ITL_P99,
  IM_FIG_E2EL_P50,
  IM_FIG_E2EL_P90,
  IM_FIG_E2EL_P99,
  IM_FIG_SLO_ATTAINMENT, /* metrics.slo.attainment.all, fraction */
  IM_FIG_EFFECTIVE_QPS,  /* metrics.effective_rate.effective_qps */
  IM_FIG_COUNT
};

/* Stable short name of a figure ("request_throughput", "ttft_p99_ms", ...),
 * used as the JSON key and the history column; NULL out of range. */
const char *im_headline_fig_name(enum im_headline_fig f);
/* Its unit for display ("req/s", "tok/s", "ms", "" for a fraction). */
const char *im_headline_fig_unit(enum im_headline_fig f);

/* One stage: each figure, NaN when results.json has null or lacks it. */
struct im_headline_stage {
  double v[IM_FIG_COUNT];
  char label[160]; /* the stage's label ("" for a one-stage run) */
};

/* One run directory's headline. The identity pieces are the manifest's
 * values as compact JSON with sorted keys ("null" when absent), so equal
 * strings mean equal configurations. */
struct im_headline {
  char dir[IM_HEADLINE_PATH];
  char started_at[40];              /* manifest.started_at ("" if absent) */
  char target[512];                 /* manifest.target.url */
  char model[256];                  /* manifest.target.model */
  char tags[IM_HEADLINE_IDENT];     /* manifest.tags */
  char schedule[IM_HEADLINE_IDENT]; /* manifest.schedule, with manifest.stages as "stages" */
  char workload[IM_HEADLINE_IDENT]; /* manifest.workload */
  char server[IM_HEADLINE_IDENT];   /* the settings the server declared of itself:
                                       manifest.server.engine.settings, else the
                                       built-in server's manifest.server.version.config
                                       ("null": neither, or too long to keep) */
  char verdict[64];                 /* audit.client_check.verdict ("" if absent) */
  char publishable[64];             /* audit.publishable.verdict ("" if absent) */
  size_t n_stages;                  /* 1 for a one-stage run */
  struct im_headline_stage stage[IM_HEADLINE_MAX_STAGES];
};

/* Reads DIR/results.json into *out (the caller's struct; about 45 KiB: keep
 * it on the heap). IM_NOTFOUND when the file does not exist, IM_PARSE when it
 * is not the results format, IM_LIMIT when it exceeds a cap. */
enum im_err im_headline_read(const char *dir, struct im_headline *out, char *msg,
                             size_t msg_len) IM_WUR;

/* The runs of a directory: when DIR holds run-N/results.json entries (a
 * repeat directory), their paths in increasing N, *is_repeat = true;
 * otherwise DIR itself, *is_repeat = false. paths is an array of `cap`
 * buffers of IM_HEADLINE_PATH bytes; *n receives the count. IM_NOTFOUND
 * when DIR is not a directory; IM_LIMIT when it holds more than cap runs. */
enum im_err im_headline_list_runs(const char *dir, char (*paths)[IM_HEADLINE_PATH], size_t cap,
                                  size_t *n, bool *is_repeat, char *msg, size_t msg_len) IM_WUR;

/* Names the differences between two identity pieces (compact JSON from
 * im_headline): for objects, the keys whose values differ ("input_len: 32
 * vs 64"), joined by "; " under `prefix` ("workload."). Writes "" when
 * they are equal; truncates to out_len. Returns true when they differ. */
bool im_headline_diff(const char *prefix, const char *a, const char *b, char *out, size_t out_len);

/* 64-bit FNV-1a of model, schedule, workload and tags, as 16 hex digits:
 * the history's workload digest (equal digests: comparable runs). */
void im_headline_digest(const struct im_headline *h, char out[17]);

#endif
