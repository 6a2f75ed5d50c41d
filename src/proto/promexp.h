/* Writing the Prometheus text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/).
 *
 * Labels are passed as a preformatted, already escaped string without
 * braces (`model_name="deepseek-v3",engine="0"`), built with
 * im_prom_label(); NULL or "" means no labels. All functions append to a
 * bounded im_buf and return its error (IM_LIMIT when the page outgrows it). */
#ifndef INFERMETER_PROMEXP_H
#define INFERMETER_PROMEXP_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

/* `# HELP name help` and `# TYPE name type` (type: counter, gauge,
 * histogram, summary, untyped). help is escaped as the format requires. */
enum im_err im_prom_family(struct im_buf *b, const char *name, const char *type,
                           const char *help) IM_WUR;
/* One sample line: name{labels} value. Values print as Go's strconv does
 * for floats in this format: +Inf, -Inf, NaN, integers without exponent. */
enum im_err im_prom_sample(struct im_buf *b, const char *name, const char *labels,
                           double value) IM_WUR;
/* Appends `key="value"` (with a leading comma when b is not empty),
 * escaping backslash, double quote and newline in value. */
enum im_err im_prom_label(struct im_buf *b, const char *key, const char *value) IM_WUR;

/* A cumulative histogram: counts[i] observations <= bounds[i] (not
 * cumulative: per bucket), counts[n_bounds] above the last bound. */
struct im_prom_hist {
  const double *bounds;
  size_t n_bounds;
  uint64_t *counts; /* n_bounds + 1 */
  double sum;
  uint64_t count;
};

/* Records one observation (v <= bound goes in that bucket, as Prometheus). */
void im_prom_hist_observe(struct im_prom_hist *h, double v);
/* Writes name_bucket{labels,le=...} (cumulative, +Inf last), name_sum and
 * name_count. The family line is written separately. */
enum im_err im_prom_hist_write(struct im_buf *b, const char *name, const char *labels,
                               const struct im_prom_hist *h) IM_WUR;

#endif
