/* results.json's analysis.root_causes of a stage and its terminal lines:
 * renders analyze/causes.h's verdicts (docs/results-schema.md
 * "analysis.root_causes", docs/audit.md "Root causes"). */
#ifndef IM_REPORT_CAUSES_JSON_H
#define IM_REPORT_CAUSES_JSON_H

#include <stdio.h>

#include <jansson.h>

#include "analyze/causes.h"

/* dst["analysis"]["root_causes"] = an array: for each violated SLO, one
 * entry {slo, cause, score, evidence} per rule that fired, or one entry of
 * cause "unexplained" whose evidence.checked lists every rule with its
 * status and why; [] when no SLO was violated. dst["analysis"] is created
 * when absent. IM_NOMEM. */
enum im_err im_causes_json(const struct im_causes *c, json_t *dst) IM_WUR;
/* One line per entry, for people; nothing when no SLO was violated. */
void im_causes_text(FILE *o, const struct im_causes *c);

#endif
