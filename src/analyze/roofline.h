/* Roofline of the decode step (docs/metrics.md §9, docs/deepseek.md):
 * predicted bandwidth-bound and compute-bound step times of the measured
 * batch from the model and hardware description, achieved bandwidth
 * utilisation and MFU against the measured TPOT and throughput, KV size and
 * residency, per-user output speed, and the in-flight context lengths over
 * time reconstructed from the records.
 *
 * The formulas are written here from the definitions, independently of the
 * simulated server's performance model (model/perf.c), so that against
 * `serve` they are a consistency check: a mistake in one shows as a
 * disagreement with the other. Pure: no I/O, no JSON. */
#ifndef IM_ANALYZE_ROOFLINE_H
#define IM_ANALYZE_ROOFLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "model/desc.h"
#include "record/record.h"

struct im_roofline_sys {
  const struct im_model_desc *model;  /* NULL: not described */
  const struct im_hw_desc *hw;        /* NULL: not described */
  uint32_t gpus, tp, dp;              /* 0 taken as 1 */
  double kv_bytes_per_token_per_gpu;  /* 0: from the model */
  double gpu_memory_bytes;            /* 0: the hardware's */
  double bw_util_ref, mfu_ref, kv_residency_ref; /* reference lines (0.78, 0.32, 0.68) */
};

/* The decode step of one model replica (tp GPUs) running `batch` sequences
 * whose mean context is `context` tokens. */
struct im_roofline_pred {
  double batch, context;
  double distinct_experts;       /* expected per MoE layer: E (1 - (1 - k/E)^batch) */
  double weight_bytes_per_gpu;   /* (non-expert + MoE layers x distinct x expert) x bytes / tp */
  double kv_bytes_per_gpu;       /* batch x context x KV bytes per token per GPU / dp */
  double step_bytes_per_gpu;
  double bw_step_s;              /* step bytes / HBM bandwidth */
  double flops_per_gpu;          /* (2 active x batch + attention x batch x context) / tp */
  double compute_step_s;         /* flops / peak */
  bool bandwidth_bound;          /* bw_step_s >= compute_step_s */
};

/* 0 < batch, 0 <= context; sys->model and sys->hw set. */
void im_roofline_predict(const struct im_roofline_sys *sys, double batch, double context,
                         struct im_roofline_pred *out);
/* Achieved bandwidth utilisation: step bytes per GPU / (tpot_s x HBM
 * bandwidth); NaN when tpot_s <= 0. */
double im_roofline_bw_util(const struct im_roofline_sys *sys, const struct im_roofline_pred *p,
                           double tpot_s);
/* MFU = 2 x active params x output tok/s / (peak FLOP/s x gpus). */
double im_roofline_mfu(const struct im_roofline_sys *sys, double output_tok_s);

/* In-flight context lengths at one instant: requests sent and not ended;
 * context = prompt tokens + tokens received so far. */
struct im_inflight_pt {
  double t_s;            /* stage-relative */
  uint32_t n, decoding;  /* in flight; of those, past their first token */
  double min, max, mean, std; /* over the n contexts (0 when n == 0) */
  double tokens;         /* their sum */
};

/* n_pts instants evenly inside [from_ns, to_ns) (at the middle of n_pts
 * equal slices). Records of kind health or probe are skipped. *out is
 * malloc'd (caller frees). IM_NOMEM, IM_INVAL (n_pts 0 or empty span). */
enum im_err im_inflight_series(const struct im_record *r, size_t n, int64_t from_ns,
                               int64_t to_ns, size_t n_pts, struct im_inflight_pt **out) IM_WUR;

#define IM_ROOF_BUCKETS 9

/* Requests grouped by prompt length: [lo, hi) tokens (hi 0: no bound). */
struct im_roofline_bucket {
  uint32_t lo, hi;
  size_t n;
  double context_mean, tpot_mean_s, decode_tok_s;
  struct im_roofline_pred pred;
  double bw_util;
};

struct im_roofline {
  const char *not_collected;     /* static; NULL when computed */
  double kv_bytes_per_token;     /* whole model, one copy */
  double kv_bytes_per_token_per_gpu, kv_bytes_per_1k_tokens;
  char kv_formula[200];
  double batch_mean, context_mean, tpot_mean_s;
  double output_tok_s;           /* tokens that arrived in the window / its length */
  struct im_roofline_pred pred;
  double bw_util, mfu, output_tok_s_per_gpu;
  double itl_median_s;           /* median inter-token gap, pooled: a decode step
                                    without a prefill chunk in it */
  double decode_tok_s;           /* in-flight decoding / itl_median_s: decode throughput
                                    without prefill cost (all replicas) */
  size_t n_users;                /* requests with a TPOT */
  double user_tok_s_mean, user_tok_s_p10, user_tok_s_p50, user_tok_s_p90; /* 1 / TPOT */
  double kv_residency_mean, kv_residency_max;
  struct im_roofline_bucket buckets[IM_ROOF_BUCKETS];
  size_t n_buckets;              /* non-empty ones, ascending */
  struct im_inflight_pt *inflight; /* owned */
  size_t n_inflight;
  const struct im_roofline_sys *sys;
};

/* The roofline of one measured window [ws, we] (stage-relative ns) of
 * records r: TPOT from requests dispatched in the window (kind measured,
 * no error, >= 2 output tokens), batch and context from up to 120
 * in-flight instants, output tokens/s from the chunks that arrived in the
 * window (each record's share scaled to its output token count; unlike
 * rates.output_tok_per_s this counts requests still running). Without a
 * decoding request sets not_collected; without a model or hardware
 * description also sets it, after the measured figures (batch, context,
 * TPOT, decode_tok_s, per-user speeds, in-flight series: what the knee
 * needs) but without predictions. IM_OK or IM_NOMEM. */
enum im_err im_roofline_compute(const struct im_roofline_sys *sys, const struct im_record *r,
                                size_t n, int64_t ws, int64_t we,
                                struct im_roofline *out) IM_WUR;
void im_roofline_cleanup(struct im_roofline *rl);

/* The bandwidth knee of a context sweep: the first point i whose decode
 * throughput tput[i] falls more than `drop` (0.15) below the plateau, the
 * mean of the points before it (contexts ascending). Returns the index, or
 * -1 when there is no knee (or fewer than 2 points, or a bad value). */
long im_roofline_knee(const double *context, const double *tput, size_t n, double drop);

/* The most points im_knee_compute judges (a sweep has at most 64 values). */
#define IM_KNEE_MAX_POINTS 64

/* One stage of a context sweep. */
struct im_knee_point {
  size_t stage;
  double input_len;       /* the stage's prompt length */
  double context_mean;    /* in-flight context measured (roofline) */
  double decode_tok_s;    /* roofline decode_tok_s; NaN when not measured */
  int bound;              /* predicted: 1 bandwidth, 0 compute, -1 unknown */
};

struct im_knee {
  bool found;
  size_t at;              /* index into the sorted points */
  double plateau_tok_s;   /* mean decode throughput of the shorter contexts */
  double kv_bytes_per_sequence; /* KV bytes per token x context at the knee (0: unknown) */
  const char *reason;     /* static; why there is no knee */
};

/* Sorts pts by input_len and finds the knee (im_roofline_knee with drop)
 * over their decode throughput; kv_bytes_per_token 0 when unknown. */
void im_knee_compute(struct im_knee_point *pts, size_t n, double drop, double kv_bytes_per_token,
                     struct im_knee *out);

#endif
