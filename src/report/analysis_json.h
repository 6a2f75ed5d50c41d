/* results.json's "analysis" of a stage and its terminal lines: token-level
 * latency by segmented sampling, stalls (docs/metrics.md §4) and the SLO
 * verdicts by early stopping (§11). Renders analyze/stage.h's figures. */
#ifndef IM_REPORT_ANALYSIS_JSON_H
#define IM_REPORT_ANALYSIS_JSON_H

#include <stdio.h>

#include <jansson.h>

#include "analyze/stage.h"

/* dst["analysis"] = {"token_latency", "stalls", "slo"}. IM_NOMEM. */
enum im_err im_analysis_json(const struct im_stage_figures *f, const struct im_summary_config *sc,
                             json_t *dst) IM_WUR;
/* The same for people, after the summary table. */
void im_analysis_text(FILE *o, const struct im_stage_figures *f, const struct im_summary_config *sc);

#endif
