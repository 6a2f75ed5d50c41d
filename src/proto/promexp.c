#include "proto/promexp.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static enum im_err escape(struct im_buf *b, const char *s, int quote) {
  enum im_err err = IM_OK;
  for (; *s && !err; s++) {
    if (*s == '\\')
      err = im_buf_puts(b, "\\\\");
    else if (*s == '\n')
      err = im_buf_puts(b, "\\n");
    else if (*s == '"' && quote)
      err = im_buf_puts(b, "\\\"");
    else
      err = im_buf_append(b, s, 1);
  }
  return err;
}

enum im_err im_prom_family(struct im_buf *b, const char *name, const char *type,
                           const char *help) {
  enum im_err err = im_buf_printf(b, "# HELP %s ", name);
  if (!err)
    err = escape(b, help, 0);
  if (!err)
    err = im_buf_printf(b, "\n# TYPE %s %s\n", name, type);
  return err;
}

static enum im_err put_value(struct im_buf *b, double v) {
  if (isnan(v))
    return im_buf_puts(b, "NaN");
  if (isinf(v))
    return im_buf_puts(b, v > 0 ? "+Inf" : "-Inf");
  if (v == floor(v) && fabs(v) < 1e15)
    return im_buf_printf(b, "%.0f", v);
  return im_buf_printf(b, "%.17g", v);
}

enum im_err im_prom_sample(struct im_buf *b, const char *name, const char *labels,
                           double value) {
  enum im_err err = (labels && *labels) ? im_buf_printf(b, "%s{%s} ", name, labels)
                                        : im_buf_printf(b, "%s ", name);
  if (!err)
    err = put_value(b, value);
  if (!err)
    err = im_buf_puts(b, "\n");
  return err;
}

enum im_err im_prom_label(struct im_buf *b, const char *key, const char *value) {
  enum im_err err = im_buf_printf(b, "%s%s=\"", b->len ? "," : "", key);
  if (!err)
    err = escape(b, value, 1);
  if (!err)
    err = im_buf_puts(b, "\"");
  return err;
}

void im_prom_hist_observe(struct im_prom_hist *h, double v) {
  size_t lo = 0, hi = h->n_bounds;
  while (lo < hi) { /* first bound >= v */
    size_t mid = (lo + hi) / 2;
    if (h->bounds[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  h->counts[lo]++;
  h->sum += v;
  h->count++;
}

enum im_err im_prom_hist_write(struct im_buf *b, const char *name, const char *labels,
                               const struct im_prom_hist *h) {
  char le[64], series[256];
  uint64_t cum = 0;
  enum im_err err = IM_OK;
  const char *sep = (labels && *labels) ? "," : "";
  snprintf(series, sizeof series, "%s_bucket", name);
  for (size_t i = 0; i <= h->n_bounds && !err; i++) {
    cum += h->counts[i];
    if (i < h->n_bounds)
      snprintf(le, sizeof le, "%g", h->bounds[i]);
    else
      snprintf(le, sizeof le, "+Inf");
    err = im_buf_printf(b, "%s{%s%sle=\"%s\"} %llu\n", series, labels ? labels : "", sep, le,
                        (unsigned long long)cum);
  }
  snprintf(series, sizeof series, "%s_sum", name);
  if (!err)
    err = im_prom_sample(b, series, labels, h->sum);
  snprintf(series, sizeof series, "%s_count", name);
  if (!err)
    err = im_prom_sample(b, series, labels, (double)h->count);
  return err;
}
