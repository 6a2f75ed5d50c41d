/* `vllm bench serve`'s flags on `infermeter run` (docs/migrating.md): the
 * command line is translated before parsing, each vLLM flag into the
 * infermeter flag of the same meaning; a vLLM flag infermeter cannot honour
 * is refused by name, never accepted silently. --save-result (with
 * --save-detailed, --result-dir, --result-filename) makes the run also
 * write vLLM's flat result file. Flag names and the result file's keys are
 * those of vLLM's benchmark (vllm/benchmarks/serve.py). */
#ifndef IM_CLI_VLLM_COMPAT_H
#define IM_CLI_VLLM_COMPAT_H

#include <stdbool.h>

struct im__vllm {
  bool used;                /* some vLLM flag was given */
  bool save_result, save_detailed;
  const char *result_dir, *result_filename;
  const char *backend;      /* as given (the file's "backend") */
  const char *label;        /* --label */
  const char *metadata[32]; /* KEY=VALUE, also tags */
  /* vLLM's --metric-percentiles and --percentile-metrics as given (NULL:
   * vLLM's defaults "99" and "ttft,tpot,itl"): the keys of the file. */
  const char *metric_percentiles, *percentile_metrics;
  long long num_prompts;    /* the measured requests (-1: a duration) */
  long long num_warmups;    /* warm-up requests before them */
  const char *ramp, *ramp_start, *ramp_end; /* --ramp-up-* (NULL: none) */
  int n_metadata;
  char *owned[36];          /* strings the translation made (freed by im__vllm_free) */
  int n_owned;
};

/* Translates argv (argc entries, argv[0] the subcommand) into *out_argv
 * (*out_argc entries; the caller frees the array with free(), its strings
 * are argv's or static), filling *v. 0, or -1 after saying why (a flag
 * that cannot be honoured, a malformed value). */
int im__vllm_translate(int argc, char **argv, int *out_argc, char ***out_argv,
                       struct im__vllm *v);

/* Frees the strings the translation made (the translated argv's). */
void im__vllm_free(struct im__vllm *v);

/* Writes vLLM's flat result file of the run in dir as v asks
 * (results/vllm_file.h) and says where. 0, or -1 after saying why. */
int im__vllm_save(const char *dir, const struct im__vllm *v);

#endif
