/* Summaries of the machine's series in series.jsonl (record/series.h):
 * TCP states toward the target and GPU counters (docs/metrics.md §5).
 * Pure functions: no I/O, no allocation, thread-safe. */
#ifndef IM_ANALYZE_MACHINE_H
#define IM_ANALYZE_MACHINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "record/series.h"

/* ---- TCP states ---- */

struct im_tcp_summary {
  size_t n;
  double span_s; /* last t - first t */
  uint32_t time_wait_max;
  uint32_t established_max;
  double time_wait_growth_per_s; /* least-squares slope of TIME_WAIT on t;
                                    NaN with fewer than 2 distinct times */
  bool growing;
};

/* Summarises n points given in time order. growing is true when TIME_WAIT
 * rises through the run, all of:
 *   - n >= 6 (so that thirds hold at least 2 points);
 *   - slope > 1 socket/s (smaller drifts are noise at a 1 s cadence);
 *   - mean TIME_WAIT of the last third of the points > mean of the first
 *     third (a slope pulled up by one burst alone is not growth);
 *   - slope / standard error of the slope >= 2 (about 95 % one-sided for
 *     long series; an exact line, with zero error, passes).
 * n == 0 gives zeros and a NaN slope. */
void im_tcp_summarize(const struct im_series_tcp *pts, size_t n, struct im_tcp_summary *out);

/* ---- GPU counters ---- */

enum im_gpu_energy_source {
  IM_GPU_ENERGY_NONE = 0, /* neither counter nor power in the window */
  IM_GPU_ENERGY_COUNTER,  /* total-energy counter deltas only */
  IM_GPU_ENERGY_POWER,    /* integrated power only (trapezoidal rule) */
  IM_GPU_ENERGY_MIXED,    /* counters where they were valid, power elsewhere */
};

struct im_gpu_summary {
  size_t n_snapshots; /* snapshots with t_ns inside the window */
  unsigned n_gpus;    /* most GPUs seen in one snapshot */
  bool has_mem;
  uint64_t mem_used_max_bytes; /* over GPUs and time */
  uint64_t mem_total_bytes;    /* total memory of the GPU that had that max */
  /* Over GPUs and snapshots with a value; NaN when none: */
  double dram_bw_util_mean, dram_bw_util_max;
  double tensor_active_mean, sm_active_mean;
  double power_w_mean; /* mean per-snapshot sum over GPUs */
  /* Energy of all GPUs over the window ∩ the series' time span: */
  double energy_j; /* NaN when energy_source is NONE */
  enum im_gpu_energy_source energy_source;
  double energy_covered_s; /* seconds of the window some GPU's energy covers */
};

/* Summarises snaps[0..n) (t_ns non-decreasing) over the window
 * [t0_ns, t1_ns]; pass INT64_MIN, INT64_MAX for the whole series.
 *
 * Energy, per GPU and per pair of consecutive snapshots: the counter delta
 * when both ends have a counter and it did not go backwards (a driver
 * reload resets it), else the trapezoid of the two power readings, else
 * nothing (a gap). A pair that straddles a window edge contributes the part
 * inside, assuming constant power within the pair for counters and linear
 * power for readings.
 *
 * Returns IM_OK; IM_INVAL for NULL arguments (snaps may be NULL when n is
 * 0), t1_ns < t0_ns or timestamps that go backwards. */
enum im_err im_gpu_summarize(const struct im_gpu_snapshot *snaps, size_t n, int64_t t0_ns,
                             int64_t t1_ns, struct im_gpu_summary *out) IM_WUR;

/* tokens / energy_j, or NaN when energy_j is NaN or not positive. */
double im_gpu_tokens_per_joule(double tokens, double energy_j);

/* Name of an energy source: "none", "counter", "power", "mixed". */
const char *im_gpu_energy_source_name(enum im_gpu_energy_source s);

#endif
