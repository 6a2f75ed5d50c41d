/* metrics.roofline of a stage in results.json (docs/deepseek.md,
 * docs/results-schema.md) and its lines in the terminal summary. Renders
 * only: every number comes from analyze/roofline.h; NaN as null. */
#ifndef IM_REPORT_ROOFLINE_JSON_H
#define IM_REPORT_ROOFLINE_JSON_H

#include <stdio.h>

#include "analyze/roofline.h"
#include "core/err.h"

struct json_t;

/* Sets metrics["roofline"] (replacing it): {"not_collected": reason} or
 * the figures, with the GPUs' measured DRAM bandwidth utilisation beside
 * the prediction (analyze/scraped.h's NVML/DCGM mean; NaN with dram_why
 * when not sampled). IM_INVAL for NULL arguments, IM_NOMEM. */
enum im_err im_roofline_json(const struct im_roofline *rl, double dram_util,
                             const char *dram_why, struct json_t *metrics) IM_WUR;

/* Two or three lines for the terminal (nothing when not collected). */
void im_roofline_text(FILE *f, const struct im_roofline *rl);

/* results.json's "bandwidth_knee": the points (sorted), the drop, and the
 * knee or null with its reason; NULL when out of memory. Text: one line. */
struct json_t *im_knee_json(const struct im_knee_point *pts, size_t n, double drop,
                            const struct im_knee *k);
void im_knee_text(FILE *f, const struct im_knee_point *pts, double drop, const struct im_knee *k);

#endif
