/* results.json and the terminal summary of a run (docs/results-schema.md). */
#ifndef IM_REPORT_SUMMARY_TEXT_H
#define IM_REPORT_SUMMARY_TEXT_H

#include <stdbool.h>
#include <stdio.h>

#include "core/err.h"
#include "analyze/selfcheck.h"
#include "analyze/stage.h"
#include "analyze/summary.h"

struct json_t;

/* The client self-check (analyze/selfcheck.h) under audit.client_check. */
enum im_err im_client_check_json(const struct im_client_check *c, struct json_t *audit) IM_WUR;

/* Prints the summary table (vLLM's layout first, then ours). */
void im_report_text(FILE *out, const struct im_summary *s, const struct im_summary_config *cfg,
                    const struct im_client_check *check);

/* One line per stage of a multi-stage run: throughput, TTFT p50/p99, SLO
 * attainment, over-saturation, the self-check. */
void im_report_stage_line(FILE *f, size_t i, const char *label, const struct im_stage_figures *fg,
                          const struct im_summary_config *sc);

#endif
