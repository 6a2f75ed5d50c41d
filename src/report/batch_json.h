/* metrics.batch_means of results.json (analyze/batch.h; docs/results-schema.md). */
#ifndef IM_REPORT_BATCH_JSON_H
#define IM_REPORT_BATCH_JSON_H

#include <jansson.h>

#include "analyze/batch.h"

/* {"requests", "batches", "request_throughput": {...}, "ttft_p50_ms": {...},
 *  ...}; NULL when out of memory. */
json_t *im_batch_means_json(const struct im_batch_means *bm);

#endif
