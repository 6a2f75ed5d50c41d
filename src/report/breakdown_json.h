/* JSON and terminal tables of the breakdowns (analyze/breakdown.h). */
#ifndef IM_REPORT_BREAKDOWN_JSON_H
#define IM_REPORT_BREAKDOWN_JSON_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "analyze/breakdown.h"

/* {"mean", "pP"...} of a distribution; null without samples. NULL when out
 * of memory. */
json_t *im_bd_dist_json(const struct im_bd_dist *d, const struct im_summary_config *sc);
/* [{"bucket":"0-4K","lo":0,"hi":4096,"n":..,"ttft_ms":{"mean","p50",...},
 *   "tpot_ms":{...},"ttft_per_uncached_token_ms":{...}}, ...]: every bucket;
 * a distribution without samples is null. NULL when out of memory. */
json_t *im_breakdown_context_json(const struct im_breakdown *b, const struct im_summary_config *sc);
/* {"text": {"n", "ttft_ms", "tpot_ms"}, "code": {...}}. NULL when out of memory. */
json_t *im_breakdown_class_json(const struct im_breakdown *b, const struct im_summary_config *sc);
/* {"sessions", "turns_completed", "turns_per_session_mean", "max_turn",
 *  "context_tokens_max", "turns_failed"}. NULL when out of memory. */
json_t *im_breakdown_sessions_json(const struct im_breakdown *b);
/* {"shortest_bucket", "longest_bucket", "ttft_per_uncached_token_growth",
 *  "reference", "flagged"}: docs/metrics.md §9's long-context robustness
 * (median TTFT per uncached token, longest bucket over shortest, minus 1;
 * flagged above +210 %). NULL when out of memory. */
json_t *im_breakdown_long_context_json(const struct im_breakdown *b);
/* The tables for people: by context when a request belongs to a session or
 * the requests span more than one bucket; by class when by_class. */
void im_breakdown_text(FILE *f, const struct im_breakdown *b, bool by_class);

#endif
