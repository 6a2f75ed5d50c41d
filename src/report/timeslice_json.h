/* metrics.timeslices of results.json (analyze/timeslice.h; schema
 * $defs/timeslices). */
#ifndef IM_REPORT_TIMESLICE_JSON_H
#define IM_REPORT_TIMESLICE_JSON_H

#include <jansson.h>

#include "analyze/timeslice.h"

/* A new object, or NULL when out of memory. */
json_t *im_timeslices_json(const struct im_timeslices *t);

#endif
