/* Everything infermeter computes about one stage of a run (a grid
 * combination or a sweep point; the whole run when it has one stage), from
 * what the stage left on disk: its records, its window, the engine's
 * counters and the client's own samples. `run` calls it as each stage ends
 * (its verdicts steer a sweep) and `report DIR` calls it again on the
 * records read back, so both give the same figures.
 *
 * Pure: no I/O, no global state; the figures point into the input's
 * records, which must outlive them. */
#ifndef IM_ANALYZE_STAGE_H
#define IM_ANALYZE_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/selfcheck.h"
#include "analyze/batch.h"
#include "analyze/breakdown.h"
#include "analyze/population.h"
#include "analyze/agents.h"
#include "analyze/cancel.h"
#include "analyze/models.h"
#include "analyze/reasoning.h"
#include "analyze/slo.h"
#include "analyze/targets.h"
#include "analyze/summary.h"
#include "analyze/probes.h"
#include "analyze/timeslice.h"
#include "analyze/tokens.h"
#include "workload/stages.h"

/* The measured window of a stage from its records: from the end of the
 * warm-up (warmup_ns, or the first non-warm-up arrival) to the last
 * scheduled arrival (closed loop: the duration), never past an
 * interruption; [0, end] when that leaves nothing. */
void im_stage_window(const struct im_record *recs, size_t n, const struct im_window_rule *rule,
                     int64_t *start_ns, int64_t *end_ns);

struct im_stage_input {
  const struct im_record *recs;  /* the stage's attempts (not owned) */
  size_t n_recs;
  struct im_summary_config cfg;  /* percentiles, SLOs and the window */
  double slo_target;             /* share of requests that must meet the SLOs (e.g. 0.99) */
  struct im_client_counters counters;
  const struct im_client_sample *samples; /* (not owned) */
  size_t n_samples;
  uint32_t threads;
  struct im_tokens_config tokens; /* segmented sampling and stalls (window 0: defaults) */
  const struct im_hist *receive_lag; /* the engine's, ns (NULL: not measured) */
  const struct im_hostlat *host; /* the host probe's (NULL: not measured) */
  int64_t timeslice_ns;          /* --timeslice (0: from the window's length, at most
                                    IM_STAGE_DEFAULT_TIMESLICE_NS: im_timeslice_auto_ns) */
};

#define IM_STAGE_DEFAULT_TIMESLICE_NS INT64_C(10000000000) /* 10 s */

struct im_stage_figures {
  struct im_population pop;
  struct im_summary sum;
  struct im_client_check check;
  struct im_breakdown bd;
  struct im_saturation sat;
  bool sat_judged;               /* enough samples to judge over-saturation */
  bool slo_failed;               /* an SLO's attainment fell below slo_target */
  struct im_slo_verdicts slo;    /* early-stopping verdicts of the SLOs */
  struct im_tokens tokens;       /* segmented sampling and stalls */
  struct im_batch_means bm;      /* batch-means intervals within the run */
  struct im_probes probes;       /* --probe-rate's requests */
  struct im_timeslices slices;   /* --timeslice */
  struct im_reasoning reasoning; /* reasoning models (analyze/reasoning.h) */
  struct im_agent_figs agents;   /* agent chains (analyze/agents.h) */
  struct im_cancel_figs cancel;  /* --cancel-after (analyze/cancel.h) */
  struct im_models models;       /* --model-mix (analyze/models.h) */
  struct im_targets targets;     /* several --url (analyze/targets.h) */
};

/* Computes every figure of the stage. IM_INVAL for an invalid config,
 * IM_NOMEM; on failure f is empty (cleanup is safe). */
enum im_err im_stage_analyze(const struct im_stage_input *in, struct im_stage_figures *f) IM_WUR;
void im_stage_figures_cleanup(struct im_stage_figures *f);

#endif
