/* metrics.moe of a stage and the output of `infermeter analyze-routing`
 * (docs/deepseek.md). Renders only: every number comes from analyze/moe.h;
 * NaN as null with its reason. */
#ifndef IM_REPORT_MOE_JSON_H
#define IM_REPORT_MOE_JSON_H

#include <stdio.h>

#include "analyze/moe.h"
#include "core/err.h"

struct json_t;

/* Sets metrics["moe"] from the scraped figures: per-layer balancedness,
 * G1 and max/mean with their source, the layers below ref (a warning),
 * and "not collected: reason" for what the source cannot give (jitter
 * needs per-token expert ids). IM_NOMEM. */
enum im_err im_moe_scrape_json(const struct im_moe_scrape *s, double ref, const uint32_t *low,
                               size_t n_low, struct json_t *metrics) IM_WUR;
/* The WARN line of low layers (nothing when there are none). */
void im_moe_scrape_text(FILE *f, const struct im_moe_scrape *s, double ref, const uint32_t *low,
                        size_t n_low);

/* Sets metrics["kv_fragmentation"]: the server's gauge over the window
 * (source, pages, mean, max) or not_collected. IM_NOMEM. */
enum im_err im_kv_frag_json(const struct im_moe_scrape *s, struct json_t *metrics) IM_WUR;

/* The analyze-routing document; NULL when out of memory. */
struct json_t *im_moe_result_json(const struct im_moe_result *r, double ref);

#endif
