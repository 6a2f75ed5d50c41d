/* A run directory, as `run` writes it and `report DIR` reads it back
 * (docs/results-schema.md "Run directory"):
 *
 *   manifest.json   the run's settings, target and analysis configuration,
 *                   written once before the load (atomically)
 *   stages.jsonl    one line per event, appended as it happens: a stage's
 *                   start (its plan), its t0 (the start instant), its end
 *                   (the engine's counters and the client's own samples),
 *                   and the run's end
 *   requests.jsonl  one line per attempt (record/record.h)
 *   scrapes.prom    the raw /metrics pages
 *   results.json    derived: written by `report` (and by `run` through it)
 *
 * A directory whose run was killed has no end lines for the last stage:
 * the reader marks that stage interrupted and report derives what it can
 * from the records. */
#ifndef IM_RECORD_RUNDIR_H
#define IM_RECORD_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/err.h"
#include "core/hist.h"
#include "core/hostlat.h"

/* What the load engine counted over a stage (not derivable from records:
 * an arrival that was never dispatched leaves no record). */
struct im_client_counters {
  uint64_t scheduled, dispatched;   /* arrivals due before the stage ended, and sent */
  double cpu_share;                 /* the busiest loader thread's CPU / wall */
  uint64_t fd_exhausted, port_exhausted;
};

/* One self-sample of a loader thread (once a second): docs/metrics.md §10. */
struct im_client_sample {
  uint32_t thread;
  int64_t t;          /* stage-relative ns */
  double cpu_share;   /* the thread's CPU over the interval / wall */
  double lag_max_ms;  /* largest dispatch lag in the interval */
  uint32_t in_flight;
};

/* How the measured window is found (docs/metrics.md §2). */
struct im_window_rule {
  int64_t warmup_ns;          /* time-based warm-up (0: none) */
  bool warmup_by_requests;    /* --warmup-requests N: the window starts at arrival N */
  bool closed;                /* closed loop: the window ends at duration_ns */
  int64_t duration_ns;        /* closed loop's duration (0: until the requests run out) */
  bool burst;                 /* every request due at once (--rate inf): the window ends
                                 at the last attempt's end, as vLLM's duration does */
  bool interrupted;           /* the stage was cut short ... */
  int64_t elapsed_ns;         /* ... after this long (the window ends there at the latest) */
};

/* How many percentiles a run may ask for (analyze/summary.h's
 * IM_MAX_PERCENTILES is the same). */
#define IM_RUNDIR_MAX_PERCENTILES 8

/* What the analysis is configured with, as manifest.json's "analysis". */
struct im_rundir_analysis {
  double percentiles[IM_RUNDIR_MAX_PERCENTILES];
  size_t n_percentiles;
  bool has_slo_ttft, has_slo_tpot, has_slo_e2el;
  double slo_ttft_ms, slo_tpot_ms, slo_e2el_ms;
  double slo_target;
  unsigned pct_metrics; /* analyze/summary.h's; 0: all */
  size_t stages_planned;
  bool rate_sweep, autosweep;     /* a rate sweep (without a grid); rate=auto */
  /* The observers' figures (analyze/scraped.h): reference lines and what
   * the user declared. */
  double kv_residency_ref, bw_util_ref, kv_bytes_per_token, gpu_memory_bytes;
  int64_t scrape_interval_ns;
  /* Token-level analysis (docs/metrics.md §4) and time slices (§2); 0:
   * the defaults (absent from manifests of older versions). */
  uint32_t segment_window, segment_stride;
  double stall_k;
  int64_t timeslice_ns;
  /* --max-error-rate as a share (0: not given, the default applies;
   * absent from manifests of older versions), so that `report DIR` judges
   * a failing server by the run's own limit. */
  double max_error_rate;
};

struct im_rundir_stage {
  bool started, has_t0, ended;
  char label[160];
  json_t *params;                 /* owned; NULL for a one-stage run */
  struct im_window_rule rule;
  uint32_t threads;
  bool by_class, sessions;
  int64_t t0_mono, wall_start_ns; /* -1 when unknown */
  int64_t elapsed_ns;
  struct im_client_counters counters;
  uint64_t connections_opened;
  char first_error[256];
  char error[300];                /* why the stage failed ("" when it did not) */
  struct im_hist receive_lag;     /* the engine's (ns), when has_receive_lag */
  bool has_receive_lag;
  /* The host probe's wake-up lateness through the stage (load/hostprobe.h),
   * stalls on the stage's clock; has_host false: not measured (directories
   * of older versions, --no-host-probe). Owned. */
  struct im_hostlat host;
  bool has_host;
  struct im_client_sample *samples; /* owned */
  size_t n_samples;
};

struct im_rundir {
  json_t *manifest;               /* manifest.json (owned), its "analysis" removed */
  struct im_rundir_analysis an;
  struct im_rundir_stage *st;     /* owned */
  size_t n_st;
  bool run_ended, stopped_early, run_interrupted;
  uint64_t bad_lines;             /* stages.jsonl lines skipped */
};

/* Reads manifest.json and stages.jsonl of dir. 0, or -1 with the reason in
 * err (no manifest: not a run directory, or a file that does not parse). */
int im_rundir_read(const char *dir, struct im_rundir *rd, char *err, size_t errlen);
void im_rundir_free(struct im_rundir *rd);
/* Applies one stages.jsonl event to rd, as im_rundir_read does line by
 * line (rd zero-filled at first): 0, 1 when it is not an event (ignored),
 * -1 out of memory. */
int im_rundir_apply_event(struct im_rundir *rd, const json_t *ev);

/* Writers, for `run`. Each returns 0, or -1 with errno set. */
/* manifest.json (atomically), with analysis = the analysis configuration. */
int im_rundir_write_manifest(const char *dir, json_t *manifest,
                             const struct im_rundir_analysis *an);
/* Appends one event line to stages.jsonl (fd opened O_APPEND) with one write. */
int im_rundir_append(int fd, json_t *line);
json_t *im_rundir_start_json(size_t stage, const char *label, json_t *params,
                              const struct im_window_rule *rule, uint32_t threads, bool by_class,
                              bool sessions);
json_t *im_rundir_t0_json(size_t stage, int64_t t0_mono, int64_t wall_start_ns);
json_t *im_rundir_end_json(size_t stage, int64_t elapsed_ns, bool interrupted,
                            const struct im_client_counters *k, uint64_t connections_opened,
                            const char *first_error, const struct im_client_sample *samples,
                            size_t n_samples);
json_t *im_rundir_run_end_json(bool stopped_early, bool interrupted);
/* The host probe's figures, as the end event's "host" (NULL when out of
 * memory): {"period_ns", "wakes", "over_ns": [bounds], "over": [counts],
 * "max_ns", "stalls_total", "stalls": [[t, late_ns], ...]}. */
json_t *im_rundir_host_json(const struct im_hostlat *h);
/* Reads it back into h (zero-filled by the call): IM_OK, IM_PARSE when j
 * is not such an object (h then empty), IM_NOMEM. */
enum im_err im_rundir_host_from_json(const json_t *j, struct im_hostlat *h) IM_WUR;

#endif
