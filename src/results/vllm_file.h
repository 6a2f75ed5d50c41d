/* vLLM's flat result file of a run (`infermeter run --save-result`): the
 * keys and their meaning as vLLM's benchmark writes them (vllm/benchmarks/
 * serve.py: main_async, benchmark, calculate_metrics,
 * compute_result_filename); docs/migrating.md lists them. The figures come
 * from the run directory's results.json (its one-stage "summary", computed
 * vLLM's way by analyze/summary.h) and, with save_detailed, the per-request
 * arrays from its requests.jsonl.
 *
 * Errors: returns enum im_err and fills err with one line (what and
 * where); nothing is printed. Ownership: the caller keeps every string it
 * passes. Threads: no global state. */
#ifndef IM_RESULTS_VLLM_FILE_H
#define IM_RESULTS_VLLM_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

struct im_vllm_file {
  bool save_detailed;        /* add vLLM's per-request arrays */
  const char *result_dir;    /* where the file goes (NULL: ".") */
  const char *result_filename; /* its name (NULL: vLLM's default name) */
  const char *backend;       /* the file's "backend" (NULL: the manifest's) */
  const char *label;         /* vLLM's --label (NULL: none) */
  const char *const *metadata; /* n_metadata KEY=VALUE strings */
  int n_metadata;
  /* vLLM's --metric-percentiles and --percentile-metrics as given (NULL:
   * vLLM's defaults "99" and "ttft,tpot,itl"): which keys the file holds. */
  const char *metric_percentiles, *percentile_metrics;
  long long num_prompts;     /* > 0: as given; else completed + failed */
  const char *ramp, *ramp_start, *ramp_end; /* --ramp-up-* (NULL: none) */
};

/* Writes vLLM's result file for the run directory dir as f asks; the
 * file's path goes to path (path_len bytes). */
enum im_err im_vllm_file_write(const char *dir, const struct im_vllm_file *f, char *path,
                               size_t path_len, char *err, size_t err_len) IM_WUR;

#endif
