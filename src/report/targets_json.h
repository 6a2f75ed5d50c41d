/* results.json's metrics.by_target and its terminal table: renders
 * analyze/targets.h's figures (docs/tls.md "Several targets"). */
#ifndef IM_REPORT_TARGETS_JSON_H
#define IM_REPORT_TARGETS_JSON_H

#include <stdio.h>

#include <jansson.h>

#include "analyze/targets.h"

/* [{"target", "completed", "failed", "output_tokens", "ttft_ms", "tpot_ms",
 *   "itl_ms"}...] in target order ("target": the index in
 * manifest.target.urls). NULL when out of memory. */
json_t *im_targets_json(const struct im_targets *t, const struct im_summary_config *sc);
/* A table for people, each target named by its URL in urls (the manifest's
 * target.urls array, or NULL) (nothing with one target). */
void im_targets_text(FILE *o, const struct im_targets *t, const json_t *urls);

#endif
