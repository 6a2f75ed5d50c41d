/* The aggregate of a --repeat set (analyze/repeat.h): its results.json and
 * its terminal table. */
#ifndef IM_REPORT_REPEAT_JSON_H
#define IM_REPORT_REPEAT_JSON_H

#include <stdio.h>

#include <jansson.h>

#include "analyze/repeat.h"

/* {"schema": "infermeter/repeat/v1", "runs": [...], "figures": {...},
 *  "pooled_ms": {...}, "audit": {...}} (docs/results-schema.md "Repeated
 * runs"). NULL when out of memory. */
json_t *im_repeat_json(const struct im_repeat_set *set);
/* Each figure's mean +- half-width and CI width, marked when too wide, and
 * the set's verdict. */
void im_repeat_text(FILE *o, const struct im_repeat_set *set);

/* The headline figures of a one-stage results.json, as a --repeat set
 * reads each run's (NaN where absent). */
void im_repeat_values_json(const json_t *res, double v[IM_RF_COUNT_]);

#endif
