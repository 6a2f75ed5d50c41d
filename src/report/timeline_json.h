/* analysis.timeline of results.json (analyze/timeline.h; docs/metrics.md
 * §4 "Timeline of the slowest requests"): times in ms from each request's
 * own t_sched. */
#ifndef IM_REPORT_TIMELINE_JSON_H
#define IM_REPORT_TIMELINE_JSON_H

#include <jansson.h>

#include "analyze/timeline.h"

/* A new object, or NULL when out of memory. */
json_t *im_timeline_json(const struct im_timeline *tl);

#endif
