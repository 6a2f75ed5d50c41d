/* Stages of a run: sampling perturbation ("entropy injection", docs/metrics.md
 * §6), grid mode (--grid, the cartesian product of sampling and length
 * parameters) and sweeps (--sweep rate=... / concurrency=..., with the
 * rate=auto planner, the over-saturation detector and the choice of the
 * saturation point).
 *
 * Pure functions: no I/O, no global state, thread-safe on distinct objects.
 * Parsers take a caller buffer `err` (may be NULL, `errlen` bytes) that
 * receives a message naming the flag, the part at fault and what is allowed. */
#ifndef INFERMETER_STAGES_H
#define INFERMETER_STAGES_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* ---- Sampling perturbation (docs/metrics.md §6) ---------------------------- */

/* For request id `id` (NUL-terminated; NULL acts as ""):
 *   h     = FNV-1a 64 of the id's bytes (im_fnv1a64)
 *   phase = ((h mod 100) / 50) * pi
 *   load  = current_rate / max_rate clamped to [0, 1] (NaN, e.g. 0/0, -> 0;
 *           a positive rate over max_rate 0 -> 1)
 *   *temperature = max(0.1, t0 + 0.3 * sin(phase) * load)
 *   *top_p       = max(0.1, p0 - 0.2 * |cos(phase)| * (1 - load))
 * Deterministic: the same arguments always give the same values. Either
 * output pointer may be NULL. */
void im_perturb(const char *id, double t0, double p0, double current_rate, double max_rate,
                double *temperature, double *top_p);

/* ---- Stages -------------------------------------------------------------- */

enum im_stage_param {
  IM_PARAM_TEMPERATURE, /* grid: finite, >= 0 */
  IM_PARAM_TOP_P,       /* grid: in (0, 1] */
  IM_PARAM_OUTPUT_LEN,  /* grid: integer in [1, IM_STAGE_MAX_LEN] (tokens) */
  IM_PARAM_INPUT_LEN,   /* grid: integer in [1, IM_STAGE_MAX_LEN] (tokens) */
  IM_PARAM_RATE,        /* sweep: finite, > 0 (requests/s) */
  IM_PARAM_CONCURRENCY, /* sweep: integer in [1, IM_STAGE_MAX_CONCURRENCY] */
  IM_PARAM_COUNT_
};

#define IM_STAGE_MAX_LEN 10000000
#define IM_STAGE_MAX_CONCURRENCY 1000000
/* Bounds on what a flag may make us hold: values per parameter, stages per
 * grid (the product), characters per spec string. */
#define IM_STAGE_MAX_VALUES 64
#define IM_GRID_MAX_STAGES 4096
#define IM_STAGE_SPEC_MAX 4096
/* Enough for four "name=value" pairs of any accepted value. */
#define IM_STAGE_LABEL_MAX 192

/* Flag spelling of a parameter ("temperature", "top_p", "output_len",
 * "input_len", "rate", "concurrency"); "?" outside the enum. */
const char *im_stage_param_name(enum im_stage_param param);

/* One stage: the parameters it sets (bit 1u << param in `set`), their
 * values, and a label such as "temperature=0.8,top_p=0.95" (parameters in
 * the order of their flags, values printed with %.15g). */
struct im_stage {
  unsigned set;
  double values[IM_PARAM_COUNT_];
  char label[IM_STAGE_LABEL_MAX];
};

/* ---- Grid mode (--grid NAME=V1,V2,..., repeatable) ------------------------ */

struct im_grid_axis {
  enum im_stage_param param;
  size_t nvalues;
  double values[IM_STAGE_MAX_VALUES];
};

/* Caller-embedded; im_grid_init gives an empty grid (no axes, 0 stages). */
struct im_grid {
  size_t naxes;
  struct im_grid_axis axes[4];
};

void im_grid_init(struct im_grid *grid);
/* Adds the axis of one --grid value: "NAME=V1,V2,..." with NAME one of
 * temperature, top_p, output_len, input_len, at least one value, values
 * distinct and in the parameter's range (spaces around values allowed).
 * IM_PARSE for a malformed spec (no '=', unknown name, empty or non-numeric
 * value), IM_INVAL for a value out of range, a repeated value or a parameter
 * already in the grid, IM_LIMIT past IM_STAGE_SPEC_MAX characters,
 * IM_STAGE_MAX_VALUES values or IM_GRID_MAX_STAGES stages in all. On error
 * the grid is unchanged and `err` says which part is at fault. */
enum im_err im_grid_add(struct im_grid *grid, const char *spec, char *err, size_t errlen) IM_WUR;
/* Number of stages: the product of the axes' sizes; 0 for an empty grid. */
size_t im_grid_count(const struct im_grid *grid);
/* Stage `index` of the product, in odometer order: the axes in the order
 * they were added, the LAST axis varying fastest, each axis's values in the
 * order given. So temperature=0.2,0.8 then top_p=0.5,0.95 gives
 * (0.2,0.5) (0.2,0.95) (0.8,0.5) (0.8,0.95). IM_INVAL when index >= count. */
enum im_err im_grid_stage(const struct im_grid *grid, size_t index, struct im_stage *out) IM_WUR;

/* ---- Sweeps (--sweep rate=V1,... | rate=auto | concurrency=V1,...) ------- */

/* Caller-embedded; filled by im_sweep_parse. */
struct im_sweep {
  enum im_stage_param param; /* IM_PARAM_RATE or IM_PARAM_CONCURRENCY */
  int is_auto;               /* rate=auto: values come from im_sweep_plan_auto */
  size_t nvalues;            /* 0 for rate=auto until planned */
  double values[IM_STAGE_MAX_VALUES];
};

/* Parses one --sweep value. Values are kept in the order given (they must
 * be distinct). "auto" is accepted for rate only. Errors as im_grid_add; on
 * error *sweep is zeroed. */
enum im_err im_sweep_parse(const char *spec, struct im_sweep *sweep, char *err,
                           size_t errlen) IM_WUR;
/* Stage `index` (< nvalues) of the sweep, label "rate=4" / "concurrency=32".
 * IM_STATE for an auto sweep not yet planned, IM_INVAL past the end. */
enum im_err im_sweep_stage(const struct im_sweep *sweep, size_t index, struct im_stage *out) IM_WUR;

/* rate=auto planner. Given the throughput (requests/s, finite, > 0)
 * measured by a first, unthrottled stage, sets the sweep's n rates
 * (1 <= n <= IM_STAGE_MAX_VALUES) to k / (n + 1) of it for k = 1..n,
 * ascending: evenly spaced, strictly below the maximum, the same gap below
 * the first as between neighbours (n = 9 gives 10 %, 20 %, ..., 90 %).
 * IM_STATE unless the sweep is a rate=auto one, IM_INVAL for bad arguments
 * (sweep unchanged). */
enum im_err im_sweep_plan_auto(struct im_sweep *sweep, double max_throughput, size_t n) IM_WUR;

/* ---- Over-saturation detector -------------------------------------------- */

/* One sample of a stage's time series: t in seconds (any origin), value. */
struct im_tpoint {
  double t;
  double v;
};

/* Fewest in-flight samples the detector judges; fewer -> not saturated. */
#define IM_SAT_MIN_POINTS 6
/* Least-squares slope t statistic counted as "significantly positive". */
#define IM_SAT_MIN_TSTAT 3.0

struct im_saturation {
  int growing;            /* 1: the stage's queue grows without bound */
  double slope;           /* in-flight least-squares slope, per second */
  double t_stat;          /* slope / its standard error (INFINITY for an exact fit) */
  double first_mean;      /* in-flight mean over the first third of the time span */
  double last_mean;       /* ... over the last third */
  double ttft_first_mean; /* TTFT means over the same thirds; NAN without TTFT */
  double ttft_last_mean;
  const char *reason; /* static text: the rule that decided */
};

/* Decides whether a stage was over-saturated ("growing without bound").
 * The rule, all parts required:
 *  1. at least IM_SAT_MIN_POINTS in-flight samples spanning a time > 0;
 *  2. the least-squares slope b of in-flight against t is significantly
 *     positive: b > 0 and b / se(b) >= IM_SAT_MIN_TSTAT (se from the
 *     residuals, n - 2 degrees of freedom; an exact fit counts when b > 0);
 *  3. the growth is material: b * span >= 1 (at least one more request in
 *     flight at the end than at the start);
 *  4. the mean in-flight over the last third of the time span is above
 *     the mean over the first third (thirds by time, not by sample count);
 *  5. when a TTFT series is given (nttft > 0), its last-third mean is not
 *     below its first-third mean: a real queue makes later requests wait
 *     longer, while a growing in-flight with falling TTFT is churn of long
 *     outputs, not a queue.
 * Samples need not be sorted. Callers should drop the warm-up (the first
 * request latency of the stage), whose ramp from 0 looks like growth.
 * IM_INVAL for NULL pointers or a non-finite sample; *out is filled on
 * IM_OK. */
enum im_err im_stage_check_saturation(const struct im_tpoint *inflight, size_t n,
                                      const struct im_tpoint *ttft, size_t nttft,
                                      struct im_saturation *out) IM_WUR;

/* Saturation point of a rate sweep: given n stages' rates (any order,
 * distinct), goodput attainment (fraction of requests meeting every SLO,
 * [0, 1]) and optionally over-saturation verdicts (NULL = none), sets *index
 * to the stage of the highest rate R such that EVERY stage with rate <= R
 * has attainment >= target and is not over-saturated. A stage that passes
 * above a failing one is treated as noise, not capacity: the point reported
 * is the last one before the first failure in rate order. IM_NOTFOUND when
 * the lowest rate already fails (*index untouched), IM_INVAL for n == 0,
 * NULL pointers, non-finite values or target outside [0, 1]. */
enum im_err im_sweep_saturation_point(const double *rates, const double *attainment,
                                      const int *oversaturated, size_t n, double target,
                                      size_t *index) IM_WUR;

#endif
