/* The publishable audit (docs/metrics.md §10; docs/audit.md has every rule
 * with its thresholds): whether a stage's figures can be published, why,
 * and what to change. Kept apart from the client self-check (audit.h),
 * which decides exit status 3: this verdict changes the exit status only
 * under `--publish`.
 *
 * Each check is PASS, WARN (a caveat printed with the figures) or FAIL (not
 * publishable), with its evidence and its fix. Pure: no I/O. */
#ifndef IM_ANALYZE_VALIDITY_H
#define IM_ANALYZE_VALIDITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/scraped.h"
#include "analyze/stage.h"

/* Thresholds (docs/audit.md). */
#define IM_VALID_MIN_REPEATS 3
#define IM_VALID_LONG_CONTEXT 32768       /* tokens: the declared long-context range */
#define IM_VALID_MIN_WINDOW_S 60.0
#define IM_VALID_WINDOW_E2E_FACTOR 10.0   /* window >= 10 x p99 E2E */
#define IM_VALID_MIN_EFFECTIVE 0.9
#define IM_VALID_ERRORS_WARN 0.01
#define IM_VALID_ERRORS_FAIL 0.05
#define IM_VALID_STEADY_RATIO 0.1         /* halves differing by more than 10 % ... */
#define IM_VALID_STEADY_P 0.05            /* ... with Welch p below this */
#define IM_VALID_NEW_CONN_SHARE 0.9       /* a new connection for this share of attempts */
#define IM_VALID_CANCEL_SETTLE_S 0.1      /* a server frees a cancelled request within this */

/* The engines whose settings the audit knows (docs/server-metrics.md "Per
 * engine"); UNKNOWN gets the generic list. */
enum im_valid_engine {
  IM_VALID_ENGINE_UNKNOWN,
  IM_VALID_ENGINE_VLLM,
  IM_VALID_ENGINE_SGLANG,
  IM_VALID_ENGINE_LLAMACPP,
  IM_VALID_ENGINE_TGI,
  IM_VALID_ENGINE_TRTLLM,
  IM_VALID_ENGINE_INFERMETER,
  IM_VALID_ENGINE_COUNT_
};

/* A setting of an engine that a published run must declare. key is the
 * name of --tag KEY=VALUE (and of manifest.server.engine.settings); alias,
 * when not NULL, another key that says the same ("slots" and "parallel").
 * critical: it changes throughput by multiples, so its absence FAILs the
 * check (else a WARN). */
struct im_valid_setting {
  const char *key, *alias;
  bool critical;
  const char *what; /* the engine's own name for it, for the fix */
};

/* The engine a name designates: the start of a --tag engine=NAME@VERSION,
 * of the manifest's identified engine, of /version's "engine", or of a
 * metric-name family ("vllm-v1", "llamacpp (from its metric names)").
 * Case-insensitive; UNKNOWN when none matches. */
enum im_valid_engine im_valid_engine_of(const char *name);
/* "vLLM", "SGLang", "llama.cpp", "TGI", "TensorRT-LLM", "infermeter serve",
 * "an unidentified engine". */
const char *im_valid_engine_label(enum im_valid_engine e);
/* The settings of engine e (the generic list for UNKNOWN); *n gets their
 * count. Static. */
const struct im_valid_setting *im_valid_engine_settings(enum im_valid_engine e, size_t *n);

struct im_validity_input {
  const struct im_stage_figures *f;
  const struct im_summary_config *cfg;
  uint32_t repeats;              /* runs of this configuration */
  bool publish;                  /* --publish: fewer than 3 runs FAIL (else WARN) */
  uint32_t long_context;         /* tokens (0: IM_VALID_LONG_CONTEXT) */
  const char *engine;            /* NULL or "": unknown (as printed) */
  enum im_valid_engine engine_id; /* whose settings are asked (UNKNOWN: the generic list) */
  const char *model;
  /* A setting's value as declared by --tag or by the server itself (the
   * manifest), NULL when neither did; NULL function: nothing declared. */
  const char *(*declared)(const void *ctx, const char *key);
  const void *declared_ctx;
  double server_hit_rate;        /* the server's prefix-cache hit rate; NaN: none */
  const char *server_hit_rate_why; /* why there is none (NULL: not scraped) */
  bool time_wait_growing;        /* the TCP observer's warning */
  /* The server's running requests at the first and the last scrape of the
   * stage (NaN: not scraped), for the cancellations check; and the stage's
   * scrapes (NULL: none), from which that check takes the first scrape at
   * least IM_VALID_CANCEL_SETTLE_S after the last cancel instead of the
   * last one (series times and records share the stage's origin). */
  double server_running_first, server_running_last;
  const struct im_server_series_pt *server_series;
  size_t n_server_series;
  double time_wait_slope;        /* sockets per second; NaN unknown */
  uint64_t connections_opened;
  /* The run skipped TLS verification (--insecure, manifest.target.transport):
   * the check tls_verification is a WARN (absent otherwise). */
  bool tls_insecure;
};

enum im_check_status { IM_CHECK_PASS, IM_CHECK_WARN, IM_CHECK_FAIL };

struct im_valid_check {
  const char *id;                /* "client_check", "repeats", ... (static) */
  enum im_check_status status;
  char evidence[480];
  char fix[320];                 /* "" when it passes */
};

#define IM_VALID_MAX_CHECKS 15
struct im_validity {
  bool publishable;              /* no FAIL */
  size_t n;
  struct im_valid_check checks[IM_VALID_MAX_CHECKS];
  /* The workload as it was: prompt and output lengths of completed requests. */
  uint64_t prompt_min, prompt_p50, prompt_max, prompt_distinct;
  uint64_t output_min, output_p50, output_max;
};

/* "PASS", "WARN", "FAIL". */
const char *im_check_status_name(enum im_check_status s);
/* Runs every check. IM_NOMEM only. */
enum im_err im_validity_compute(const struct im_validity_input *in, struct im_validity *v) IM_WUR;

#endif
