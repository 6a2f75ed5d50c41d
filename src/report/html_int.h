/* Internal to the HTML renderers (report/html.c: the run, stage and repeat
 * pages and the drawing; report/html_pages.c: the routing and compare
 * pages): the page being written, the chart model and the drawing helpers
 * they share, under the im__html_ prefix (private to report/). */
#ifndef IM_REPORT_HTML_INT_H
#define IM_REPORT_HTML_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"
#include "core/err.h"
#include "record/json_get.h"

/* The page being written: the first error sticks, later writes are skipped. */
struct page {
  struct im_buf *b;
  enum im_err err;
  unsigned charts;
  const json_t *slo; /* manifest.slo of the run (NULL: none), drawn as thresholds */
};

/* Chart geometry (SVG user units): width, height, margins. */
#define IM_HTML_W 640
#define IM_HTML_H 280
#define IM_HTML_ML 64
#define IM_HTML_MR 16
#define IM_HTML_MT 16
#define IM_HTML_MB 44

#define IM_HTML_TL_W (2 * IM_HTML_W) /* charts drawn across the page: twice a chart's width */

struct series {
  const char *name;
  double *x, *y;
  size_t n;
  bool bars; /* drawn as points joined by steps (CDFs) when false */
  bool linear; /* joined by straight lines even in a step chart (bucket bounds) */
  bool dots;   /* points only, not joined */
  int colour;  /* 1 + the colour's index; 0: by the series' position */
  const char **labels; /* a name per point, written beside it (NULL: none; the
                          array is owned, the strings are not) */
};

struct chart {
  const char *title, *xlabel, *ylabel;
  bool logx, step;
  struct series s[8];
  size_t ns;
  const char *why_empty;
  bool intx;          /* x takes whole values (run numbers) */
  bool pad_x;         /* half a unit of room left and right (dots at whole x) */
  double mark_x;      /* a vertical marker (NaN: none) */
  const char *mark_label;
  double shade_lo, shade_hi; /* x outside [lo, hi] shaded: outside the measured window
                                (no shading unless lo < hi) */
  const char *note;   /* a line under the legend (e.g. why a series is missing) */
  /* Horizontal threshold lines (an SLO) at hline[i] on the y axis, drawn
   * when hline_label[i] is set; the y axis stretches to hold one up to
   * twice the data's top, a higher one is written, not drawn. */
  double hline[2];
  const char *hline_label[2];
};

struct axis {
  double lo, hi;
  bool log, integer; /* integer: ticks at whole numbers only */
};

/* Output: text as is, printf-style, escaped for HTML, a number for people. */
void im__html_put(struct page *p, const char *s);
__attribute__((format(printf, 2, 3))) void im__html_putf(struct page *p, const char *fmt, ...);
void im__html_esc(struct page *p, const char *s);
void im__html_num(struct page *p, double v);

/* For each of the n pairs {text, key}: the text as is, then o[key] as a
 * number for people. */
void im__html_put_figs(struct page *p, const json_t *o, const char *const (*pairs)[2], size_t n);

/* JSON access that tolerates absent keys: NULL, NaN, or the default. */
const json_t *im__html_at(const json_t *o, const char *key);
const json_t *im__html_path(const json_t *o, const char *a, const char *b);

/* Series of a chart: a new one (room for cap points; NULL when full or out
 * of memory), a point (NaN skipped), and freeing every series. */
struct series *im__html_add_series(struct chart *c, const char *name, size_t cap);
void im__html_push_pt(struct series *s, double x, double y);
void im__html_series_free(struct chart *c);

/* Axes: a round tick step for about `want` ticks, a value to pixels, a
 * tick label. */
double im__html_nice_step(double span, int want);
/* A tick label of v on an axis whose ticks are step apart: as many
 * decimals as the step needs, so neighbours never read the same. */
void im__html_fmt_tick_step(char *buf, size_t n, double v, double step);
double im__html_ax_map(const struct axis *a, double v, double from, double to);
void im__html_fmt_tick(char *buf, size_t n, double v);

/* Charts: one that says why it is empty, and the line/step chart. */
void im__html_empty_chart(struct page *p, const char *title, const char *why);
void im__html_line_chart(struct page *p, struct chart *c);

/* A verdict as a coloured badge; the document's head (styles) and <body>. */
void im__html_verdict_badge(struct page *p, const char *v);
/* The top of a run's page (html_verdict.c): what was run (manifest and
 * sweep of root, each field marked data-k="its results.json path"); the
 * verdict of an audit, a failing stage's error_rate (failing, NULL: none)
 * or failures under the limit first. im__html_failing_of: the error_rate
 * of an audit whose server failed, else NULL; im__html_run_failing: the
 * worst of the run's and its stages'. */
void im__html_header(struct page *p, const json_t *root, const char *title);
void im__html_audit_section(struct page *p, const json_t *audit, const json_t *failing);
const json_t *im__html_failing_of(const json_t *audit);
const json_t *im__html_run_failing(const json_t *root);

/* The repeat set's page body (html_repeat.c): the headline figures, the
 * forest plot of every figure's mean and 95 % CI, each run's value. */
void im__html_repeat_section(struct page *p, const json_t *root);
/* A figure key of results.json (ttft_p99_ms, request_throughput...) in
 * words with its unit, e.g. "TTFT p99 (ms)"; the key itself when unknown. */
const char *im__html_figure_words(const char *key, char *buf, size_t n);

void im__html_page_head(struct page *p, const char *title);

/* The per-target section (html_targets.c): metrics.by_target of a run with
 * several --url; urls is manifest.target.urls (labels), NULL if absent. */
void im__html_targets_section(struct page *p, const json_t *stage, const json_t *urls);

#endif
