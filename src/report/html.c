/* The HTML report: see report/html.h. */
#include "report/html.h"
#include "record/json_get.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hist.h"
#include "record/hist_json.h"
#include "report/html_int.h"

/* ---- output --------------------------------------------------------------- */

void im__html_put(struct page *p, const char *s) {
  if (!p->err)
    p->err = im_buf_puts(p->b, s);
}

void im__html_putf(struct page *p, const char *fmt, ...) {
  if (p->err)
    return;
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0)
    p->err = IM_INVAL;
  else if ((size_t)n < sizeof tmp)
    p->err = im_buf_append(p->b, tmp, (size_t)n);
  else {
    char *big = malloc((size_t)n + 1);
    if (!big) {
      p->err = IM_NOMEM;
      return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    p->err = im_buf_append(p->b, big, (size_t)n);
    free(big);
  }
}

/* Text into HTML (element content and quoted attribute values). */
void im__html_esc(struct page *p, const char *s) {
  for (; s && *s && !p->err; s++) {
    switch (*s) {
    case '<': im__html_put(p, "&lt;"); break;
    case '>': im__html_put(p, "&gt;"); break;
    case '&': im__html_put(p, "&amp;"); break;
    case '"': im__html_put(p, "&quot;"); break;
    case '\'': im__html_put(p, "&#39;"); break;
    default: p->err = im_buf_append(p->b, s, 1);
    }
  }
}

/* A number for people: 3 significant digits, thousands as is. */
static void fmt_num(char *buf, size_t n, double v) {
  if (isnan(v))
    snprintf(buf, n, "–");
  else if (fabs(v) >= 1000 || v == floor(v))
    snprintf(buf, n, "%.0f", v);
  else if (fabs(v) >= 100)
    snprintf(buf, n, "%.1f", v);
  else if (fabs(v) >= 1)
    snprintf(buf, n, "%.2f", v);
  else
    snprintf(buf, n, "%.3g", v);
}

void im__html_num(struct page *p, double v) {
  char b[64];
  fmt_num(b, sizeof b, v);
  im__html_put(p, b);
}

void im__html_put_figs(struct page *p, const json_t *o, const char *const (*pairs)[2], size_t n) {
  for (size_t i = 0; i < n; i++) {
    im__html_put(p, pairs[i][0]);
    im__html_num(p, im_json_num(im__html_at(o, pairs[i][1]), NAN));
  }
}

/* ---- JSON access ---------------------------------------------------------- */

const json_t *im__html_at(const json_t *o, const char *key) {
  return json_is_object(o) ? json_object_get(o, key) : NULL;
}

const json_t *im__html_path(const json_t *o, const char *a, const char *b) {
  return im__html_at(im__html_at(o, a), b);
}

/* ---- charts --------------------------------------------------------------- */




static size_t colour_of(const struct chart *c, size_t i) {
  return c->s[i].colour ? (size_t)(c->s[i].colour - 1) % 6 : i % 6;
}

void im__html_series_free(struct chart *c) {
  for (size_t i = 0; i < c->ns; i++) {
    free(c->s[i].x);
    free(c->s[i].y);
    free(c->s[i].labels);
  }
  c->ns = 0;
}

/* Appends a series of n points (copies of x, y); NaN y are skipped. */
struct series *im__html_add_series(struct chart *c, const char *name, size_t cap) {
  if (c->ns == sizeof c->s / sizeof c->s[0])
    return NULL;
  struct series *s = &c->s[c->ns];
  s->x = malloc((cap ? cap : 1) * sizeof *s->x);
  s->y = malloc((cap ? cap : 1) * sizeof *s->y);
  if (!s->x || !s->y) {
    free(s->x);
    free(s->y);
    return NULL;
  }
  s->name = name;
  s->n = 0;
  s->labels = NULL;
  s->dots = s->linear = false;
  s->colour = 0;
  c->ns++;
  return s;
}

void im__html_push_pt(struct series *s, double x, double y) {
  if (isfinite(x) && isfinite(y))
    s->x[s->n] = x, s->y[s->n] = y, s->n++;
}

/* Round tick steps: 1, 2, 5 x 10^k giving about `want` ticks. */
double im__html_nice_step(double span, int want) {
  double raw = span / want, mag = pow(10, floor(log10(raw))), f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}


double im__html_ax_map(const struct axis *a, double v, double from, double to) {
  double t = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo))
                    : (v - a->lo) / (a->hi - a->lo);
  return from + t * (to - from);
}

/* A tick label: at most 4 significant digits, no trailing zeros. */
void im__html_fmt_tick(char *buf, size_t n, double v) { snprintf(buf, n, "%.4g", v); }

void im__html_fmt_tick_step(char *buf, size_t n, double v, double step) {
  if (!(step > 0) || fabs(v) >= 1e9 || fabs(v) < step * 1e-9) {
    im__html_fmt_tick(buf, n, fabs(v) < step * 1e-9 ? 0 : v);
    return;
  }
  /* Decimals of the step (0.25 -> 2, 5 -> 0), at most 6. */
  int d = 0;
  for (double s = step; d < 6 && fabs(s - round(s)) > 1e-6 * fmax(1, s); s *= 10)
    d++;
  snprintf(buf, n, "%.*f", d, v);
}

/* A tick label at q pixels along the x axis (class tx) or the y axis (ty). */
static void tick_label(struct page *p, bool x, double q, const char *b) {
  /* About 6.5 units a character at 11 px: a label at the chart's right
   * edge ends there instead of running out of the picture. */
  double half = 3.3 * (double)strlen(b);
  const char *anchor = q + half > IM_HTML_W - 1 ? "end" : "middle";
  if (x)
    im__html_putf(p, "<text class=\"tick tx\" x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">%s</text>",
                  q + half > IM_HTML_W - 1 ? IM_HTML_W - 1.0 : q, IM_HTML_H - IM_HTML_MB + 14, anchor, b);
  else
    im__html_putf(p, "<text class=\"tick ty\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
                  IM_HTML_ML - 4, q + 4, b);
}

/* Linear ticks between lo and hi (for a log axis within one decade, where
 * too few of its 1..9 x 10^k marks fall). */
static void linear_ticks(struct page *p, const struct axis *a, bool x, double px0, double px1) {
  double step = im__html_nice_step(a->hi - a->lo, 4);
  for (double v = ceil(a->lo / step) * step; v <= a->hi * 1.0001; v += step) {
    double q = im__html_ax_map(a, v, px0, px1);
    char b[32];
    im__html_fmt_tick_step(b, sizeof b, v, step);
    tick_label(p, x, q, b);
  }
}

static void draw_ticks(struct page *p, const struct axis *a, bool x) {
  double px0 = x ? IM_HTML_ML : IM_HTML_H - IM_HTML_MB, px1 = x ? IM_HTML_W - IM_HTML_MR : IM_HTML_MT;
  /* Within about a decade every mantissa gets a label, else 1, 2 and 5. */
  bool dense = a->log && log10(a->hi / a->lo) < 1.2;
  if (a->log) {
    int labelled = 0;
    for (double d = pow(10, floor(log10(a->lo))); d <= a->hi * 1.0001; d *= 10)
      for (int m = 1; m < 10; m++)
        labelled += d * m >= a->lo * 0.9999 && d * m <= a->hi * 1.0001 &&
                    (dense || m == 1 || m == 2 || m == 5);
    if (labelled < 3) { /* within one decade: linear ticks on the log scale */
      linear_ticks(p, a, x, px0, px1);
      return;
    }
    for (double d = pow(10, floor(log10(a->lo))); d <= a->hi * 1.0001; d *= 10)
      for (int m = 1; m < 10; m++) {
        double v = d * m;
        if (v < a->lo * 0.9999 || v > a->hi * 1.0001)
          continue;
        double q = im__html_ax_map(a, v, px0, px1);
        bool major = dense || m == 1 || m == 2 || m == 5;
        if (x)
          im__html_putf(p, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", q, IM_HTML_MT, q,
               IM_HTML_H - IM_HTML_MB);
        if (!major)
          continue;
        char b[32];
        im__html_fmt_tick(b, sizeof b, v);
        tick_label(p, x, q, b);
      }
    return;
  }
  double step = im__html_nice_step(a->hi - a->lo, x ? 6 : 5);
  if (a->integer && step < 1)
    step = 1;
  for (double v = ceil(a->lo / step) * step; v <= a->hi + step * 1e-9; v += step) {
    double q = im__html_ax_map(a, v, px0, px1);
    char b[32];
    im__html_fmt_tick_step(b, sizeof b, v, step);
    if (x)
      im__html_putf(p, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", q,
                    IM_HTML_MT, q, IM_HTML_H - IM_HTML_MB);
    else
      im__html_putf(p, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>",
                    IM_HTML_ML, q, IM_HTML_W - IM_HTML_MR, q);
    tick_label(p, x, q, b);
  }
}

/* The table behind a chart. */
static void chart_table(struct page *p, const struct chart *c) {
  im__html_put(p, "<details><summary>table</summary><div class=\"tw\"><table><tr><th>series</th><th>");
  im__html_esc(p, c->xlabel);
  im__html_put(p, "</th><th>");
  im__html_esc(p, c->ylabel);
  im__html_put(p, "</th></tr>");
  for (size_t i = 0; i < c->ns; i++)
    for (size_t k = 0; k < c->s[i].n; k++) {
      im__html_put(p, "<tr><td>");
      im__html_esc(p, c->s[i].name);
      if (c->s[i].labels) {
        im__html_put(p, " ");
        im__html_esc(p, c->s[i].labels[k]);
      }
      im__html_put(p, "</td><td>");
      im__html_num(p, c->s[i].x[k]);
      im__html_put(p, "</td><td>");
      im__html_num(p, c->s[i].y[k]);
      im__html_put(p, "</td></tr>");
    }
  im__html_put(p, "</table></div></details>");
}

void im__html_empty_chart(struct page *p, const char *title, const char *why) {
  im__html_put(p, "<figure class=\"chart empty\"><figcaption>");
  im__html_esc(p, title);
  im__html_put(p, "</figcaption><p class=\"why\">");
  im__html_esc(p, why);
  im__html_put(p, "</p></figure>");
}

/* Orders a series by x (insertion sort: the series are short and most
 * arrive sorted), its labels with it, so that a curve never doubles back. */
static void sort_by_x(struct series *s) {
  for (size_t i = 1; i < s->n; i++)
    for (size_t j = i; j > 0 && s->x[j] < s->x[j - 1]; j--) {
      double tx = s->x[j], ty = s->y[j];
      s->x[j] = s->x[j - 1], s->y[j] = s->y[j - 1];
      s->x[j - 1] = tx, s->y[j - 1] = ty;
      if (s->labels) {
        const char *tl = s->labels[j];
        s->labels[j] = s->labels[j - 1];
        s->labels[j - 1] = tl;
      }
    }
}

/* The threshold lines of c (an SLO, in ms) on the y axis ay; those out of
 * its range are named in the legend instead (hline_legend). */
static bool hline_shown(const struct chart *c, int i) {
  return c->hline_label[i] && isfinite(c->hline[i]);
}

static void hline_legend(struct page *p, const struct chart *c, const struct axis *ay) {
  for (int i = 0; i < 2; i++) {
    if (!hline_shown(c, i))
      continue;
    im__html_put(p, "<span class=\"slo-key\"><i style=\"background:var(--warn)\"></i>");
    im__html_esc(p, c->hline_label[i]);
    im__html_put(p, " ");
    im__html_num(p, c->hline[i]);
    im__html_put(p, c->hline[i] > ay->hi ? " ms: above the chart</span>"
                    : c->hline[i] < ay->lo ? " ms: below the chart</span>" : " ms (dashed)</span>");
  }
}

static void draw_hlines(struct page *p, const struct chart *c, const struct axis *ay) {
  for (int i = 0; i < 2; i++) {
    if (!hline_shown(c, i) || c->hline[i] > ay->hi || c->hline[i] < ay->lo)
      continue;
    double q = im__html_ax_map(ay, c->hline[i], IM_HTML_H - IM_HTML_MB, IM_HTML_MT);
    im__html_putf(p, "<line class=\"slo\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"><title>",
                  IM_HTML_ML, q, IM_HTML_W - IM_HTML_MR, q);
    im__html_esc(p, c->hline_label[i]);
    im__html_put(p, ": ");
    im__html_num(p, c->hline[i]);
    im__html_putf(p, " ms</title></line><text class=\"tick slo\" x=\"%d\" y=\"%.1f\" "
                     "text-anchor=\"end\">", IM_HTML_W - IM_HTML_MR - 2, q - 3);
    im__html_esc(p, c->hline_label[i]);
    im__html_put(p, "</text>");
  }
}

/* The points of series i with their values on hover (an SVG <title>, no
 * script): visible dots up to 60 points, invisible hover targets beyond
 * (every k-th of a long series, at most about 150: the page stays small). */
static void draw_points(struct page *p, const struct chart *c, size_t i, const struct axis *ax,
                        const struct axis *ay) {
  const struct series *s = &c->s[i];
  bool visible = s->n <= 60 || s->dots;
  size_t every = s->n > 150 ? (s->n + 149) / 150 : 1;
  for (size_t k = 0; k < s->n; k++) {
    if ((c->logx && !(s->x[k] > 0)) || (k % every && k != s->n - 1))
      continue;
    double x = im__html_ax_map(ax, s->x[k], IM_HTML_ML, IM_HTML_W - IM_HTML_MR),
           y = im__html_ax_map(ay, s->y[k], IM_HTML_H - IM_HTML_MB, IM_HTML_MT);
    im__html_putf(p, "<circle class=\"%s c%zu\" cx=\"%.1f\" cy=\"%.1f\" r=\"%s\"><title>",
                  visible ? "pt" : "hov", colour_of(c, i), x, y, s->dots ? "3.5" : visible ? "2.5" : "4");
    im__html_esc(p, s->name);
    if (s->labels) {
      im__html_put(p, " ");
      im__html_esc(p, s->labels[k]);
    }
    im__html_put(p, " — ");
    im__html_esc(p, c->xlabel);
    im__html_put(p, ": ");
    im__html_num(p, s->x[k]);
    im__html_put(p, ", ");
    im__html_esc(p, c->ylabel);
    im__html_put(p, ": ");
    im__html_num(p, s->y[k]);
    im__html_put(p, "</title></circle>");
    if (s->labels && s->n <= 16) {
      /* Right of the point, or left of it near the right edge (never clipped). */
      bool left = x > IM_HTML_W - IM_HTML_MR - 90;
      im__html_putf(p, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\"%s>", left ? x - 5 : x + 5,
                    y < IM_HTML_MT + 12 ? y + 14 : y - 5, left ? " text-anchor=\"end\"" : "");
      im__html_esc(p, s->labels[k]);
      im__html_put(p, "</text>");
    }
  }
}

void im__html_line_chart(struct page *p, struct chart *c) {
  size_t pts = 0;
  for (size_t i = 0; i < c->ns; i++)
    sort_by_x(&c->s[i]);
  struct axis ax = {INFINITY, -INFINITY, c->logx, c->intx}, ay = {0, -INFINITY, false, false};
  for (size_t i = 0; i < c->ns; i++)
    for (size_t k = 0; k < c->s[i].n; k++) {
      double x = c->s[i].x[k], y = c->s[i].y[k];
      if (c->logx && !(x > 0))
        continue;
      pts++;
      ax.lo = fmin(ax.lo, x), ax.hi = fmax(ax.hi, x);
      ay.lo = fmin(ay.lo, y), ay.hi = fmax(ay.hi, y);
    }
  if (!pts) {
    im__html_empty_chart(p, c->title, c->why_empty ? c->why_empty : "no data");
    return;
  }
  if (ax.hi <= ax.lo)
    ax.hi = c->logx ? ax.lo * 2 : ax.lo + 1, ax.lo = c->logx ? ax.lo / 2 : ax.lo - (ax.lo > 0);
  if (c->logx && c->mark_x > 0 && c->mark_x >= ax.lo / 100 && c->mark_x <= ax.hi * 100)
    ax.lo = fmin(ax.lo, c->mark_x / 1.2), ax.hi = fmax(ax.hi, c->mark_x * 1.2); /* an SLO in sight */
  if (ay.hi <= ay.lo)
    ay.hi = ay.lo + 1;
  for (int i = 0; i < 2; i++) /* an SLO up to twice the data's top is drawn */
    if (c->hline_label[i] && c->hline[i] > ay.hi && c->hline[i] <= 2 * ay.hi)
      ay.hi = c->hline[i];
  ay.hi += (ay.hi - ay.lo) * 0.05;
  if (!c->logx) {
    double st = im__html_nice_step(ax.hi - ax.lo, 6);
    ax.lo = floor(ax.lo / st) * st, ax.hi = ceil(ax.hi / st) * st;
  }
  if (c->pad_x)
    ax.lo -= 0.5, ax.hi += 0.5;
  p->charts++;
  im__html_putf(p, "<figure class=\"chart\" data-points=\"%zu\"><figcaption>", pts);
  im__html_esc(p, c->title);
  im__html_put(p, "</figcaption><div class=\"legend\">");
  for (size_t i = 0; i < c->ns; i++) {
    im__html_putf(p, "<span><i class=\"c%zu\"></i>", colour_of(c, i));
    im__html_esc(p, c->s[i].name);
    im__html_put(p, "</span>");
  }
  hline_legend(p, c, &ay);
  im__html_put(p, "</div>");
  if (c->note) {
    im__html_put(p, "<div class=\"note\">");
    im__html_esc(p, c->note);
    im__html_put(p, "</div>");
  }
  im__html_putf(p, "<svg viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", IM_HTML_W, IM_HTML_H);
  im__html_esc(p, c->title);
  im__html_put(p, "\">");
  draw_ticks(p, &ax, true);
  draw_ticks(p, &ay, false);
  im__html_putf(p, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", IM_HTML_ML, IM_HTML_H - IM_HTML_MB, IM_HTML_W - IM_HTML_MR,
       IM_HTML_H - IM_HTML_MB);
  im__html_putf(p, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", IM_HTML_ML, IM_HTML_MT, IM_HTML_ML, IM_HTML_H - IM_HTML_MB);
  im__html_putf(p, "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">", (IM_HTML_ML + IM_HTML_W - IM_HTML_MR) / 2,
       IM_HTML_H - 8);
  im__html_esc(p, c->xlabel);
  im__html_putf(p, "</text><text class=\"label\" transform=\"translate(14,%d) rotate(-90)\" "
          "text-anchor=\"middle\">",
       (IM_HTML_MT + IM_HTML_H - IM_HTML_MB) / 2);
  im__html_esc(p, c->ylabel);
  im__html_put(p, "</text>");
  bool shade = c->shade_hi > c->shade_lo; /* false for NaN and the zero default */
  if (shade && c->shade_lo > ax.lo) {
    double q = im__html_ax_map(&ax, fmin(c->shade_lo, ax.hi), IM_HTML_ML, IM_HTML_W - IM_HTML_MR);
    im__html_putf(p, "<rect class=\"shade\" x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\"><title>"
            "warm-up: before the measured window</title></rect>",
         IM_HTML_ML, IM_HTML_MT, q - IM_HTML_ML, IM_HTML_H - IM_HTML_MB - IM_HTML_MT);
  }
  if (shade && c->shade_hi < ax.hi) {
    double q = im__html_ax_map(&ax, fmax(c->shade_hi, ax.lo), IM_HTML_ML, IM_HTML_W - IM_HTML_MR);
    im__html_putf(p, "<rect class=\"shade\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\"><title>"
            "after the measured window (draining)</title></rect>",
         q, IM_HTML_MT, (double)(IM_HTML_W - IM_HTML_MR) - q, IM_HTML_H - IM_HTML_MB - IM_HTML_MT);
  }
  if (!isnan(c->mark_x) && c->mark_x >= ax.lo && c->mark_x <= ax.hi) {
    double q = im__html_ax_map(&ax, c->mark_x, IM_HTML_ML, IM_HTML_W - IM_HTML_MR);
    im__html_putf(p, "<line class=\"mark\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", q, IM_HTML_MT, q,
         IM_HTML_H - IM_HTML_MB);
    if (c->mark_label) {
      bool left = q > IM_HTML_W - IM_HTML_MR - 90;
      im__html_putf(p, "<text class=\"tick mk\" x=\"%.1f\" y=\"%d\"%s>", left ? q - 3 : q + 3,
                    IM_HTML_MT + 10, left ? " text-anchor=\"end\"" : "");
      im__html_esc(p, c->mark_label);
      im__html_put(p, "</text>");
    }
  }
  draw_hlines(p, c, &ay);
  for (size_t i = 0; i < c->ns; i++) {
    const struct series *s = &c->s[i];
    if (s->dots)
      goto points;
    im__html_putf(p, "<path class=\"line c%zu\" d=\"", colour_of(c, i));
    double prev_y = NAN;
    bool first = true;
    for (size_t k = 0; k < s->n; k++) {
      if (c->logx && !(s->x[k] > 0))
        continue;
      double x = im__html_ax_map(&ax, s->x[k], IM_HTML_ML, IM_HTML_W - IM_HTML_MR), y = im__html_ax_map(&ay, s->y[k], IM_HTML_H - IM_HTML_MB, IM_HTML_MT);
      if (c->step && !s->linear && !first)
        im__html_putf(p, "L%.1f %.1f", x, prev_y);
      im__html_putf(p, "%s%.1f %.1f", first ? "M" : "L", x, y);
      prev_y = y;
      first = false;
    }
    im__html_put(p, "\"><title>");
    im__html_esc(p, s->name);
    im__html_put(p, "</title></path>");
  points:
    draw_points(p, c, i, &ax, &ay);
  }
  im__html_put(p, "</svg>");
  chart_table(p, c);
  im__html_put(p, "</figure>");
}

/* Vertical bars, one per label. */
static void bar_chart(struct page *p, const char *title, const char *xlabel, const char *ylabel,
                      const char *const *labels, const double *v, size_t n, const char *why) {
  double hi = 0;
  size_t pts = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(v[i])) {
      hi = fmax(hi, v[i]);
      pts++;
    }
  if (!pts || !(hi > 0)) {
    im__html_empty_chart(p, title, why);
    return;
  }
  p->charts++;
  struct axis ay = {0, hi * 1.08, false, false};
  im__html_putf(p, "<figure class=\"chart\" data-points=\"%zu\"><figcaption>", pts);
  im__html_esc(p, title);
  im__html_putf(p, "</figcaption><svg viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", IM_HTML_W, IM_HTML_H);
  im__html_esc(p, title);
  im__html_put(p, "\">");
  draw_ticks(p, &ay, false);
  double slot = (double)(IM_HTML_W - IM_HTML_ML - IM_HTML_MR) / (double)n;
  for (size_t i = 0; i < n; i++) {
    double x = IM_HTML_ML + slot * (double)i + slot * 0.15;
    if (isfinite(v[i])) {
      double y = im__html_ax_map(&ay, v[i], IM_HTML_H - IM_HTML_MB, IM_HTML_MT);
      im__html_putf(p, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>",
           x, y, slot * 0.7, (double)(IM_HTML_H - IM_HTML_MB) - y);
      im__html_esc(p, labels[i]);
      im__html_put(p, ": ");
      im__html_num(p, v[i]);
      im__html_put(p, "</title></rect>");
    }
    if (n <= 24 || i % (n / 12 + 1) == 0) {
      im__html_putf(p, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">",
           x + slot * 0.35, IM_HTML_H - IM_HTML_MB + 14);
      im__html_esc(p, labels[i]);
      im__html_put(p, "</text>");
    }
  }
  im__html_putf(p, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", IM_HTML_ML, IM_HTML_H - IM_HTML_MB, IM_HTML_W - IM_HTML_MR,
       IM_HTML_H - IM_HTML_MB);
  im__html_putf(p, "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">", (IM_HTML_ML + IM_HTML_W - IM_HTML_MR) / 2,
       IM_HTML_H - 8);
  im__html_esc(p, xlabel);
  im__html_putf(p, "</text><text class=\"label\" transform=\"translate(14,%d) rotate(-90)\" "
          "text-anchor=\"middle\">",
       (IM_HTML_MT + IM_HTML_H - IM_HTML_MB) / 2);
  im__html_esc(p, ylabel);
  im__html_put(p, "</text></svg><details><summary>table</summary><div class=\"tw\"><table><tr><th>");
  im__html_esc(p, xlabel);
  im__html_put(p, "</th><th>");
  im__html_esc(p, ylabel);
  im__html_put(p, "</th></tr>");
  for (size_t i = 0; i < n; i++) {
    im__html_put(p, "<tr><td>");
    im__html_esc(p, labels[i]);
    im__html_put(p, "</td><td>");
    im__html_num(p, v[i]);
    im__html_put(p, "</td></tr>");
  }
  im__html_put(p, "</table></div></details></figure>");
}

/* ---- sections ------------------------------------------------------------- */

static const char *const css =
    ":root{--fg:#1b1f24;--bg:#fff;--mut:#5b6470;--grid:#e3e6ea;--card:#f6f8fa;--pass:#1a7f37;"
    "--warn:#9a6700;--fail:#cf222e;--c0:#0969da;--c1:#d1242f;--c2:#1a7f37;--c3:#8250df;"
    "--c4:#bc4c00;--c5:#1b7c83}"
    "@media(prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--mut:#9aa4ae;"
    "--grid:#262c34;--card:#161b22;--pass:#3fb950;--warn:#d29922;--fail:#f85149;--c0:#58a6ff;"
    "--c1:#ff7b72;--c2:#3fb950;--c3:#bc8cff;--c4:#ffa657;--c5:#39c5cf}}"
    "body{font:14px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg);"
    "max-width:1360px;margin:0 auto;padding:16px}"
    "h1{font-size:22px;margin:4px 0}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px "
    "solid var(--grid);padding-bottom:4px}h3{font-size:15px;margin:16px 0 6px}"
    ".meta{color:var(--mut)}.meta b{color:var(--fg);font-weight:600}"
    ".verdict{display:inline-block;padding:2px 10px;border-radius:12px;font-weight:700;"
    "color:#fff}.PASS,.VALID,.PUBLISHABLE{background:var(--pass)}.WARN{background:var(--warn)}"
    ".FAIL,.INVALID,.NOT_PUBLISHABLE{background:var(--fail)}.NONE,.NOT_JUDGED{background:var(--mut)}"
    /* A run that failed shows no green badge (docs/report.md) */
    ".verdict.muted{background:var(--mut)}"
    ".failbox{border:2px solid var(--fail);border-radius:8px;padding:8px 12px;margin:8px 0}"
    ".failbox .big{font-size:17px;font-weight:700}.warnbox{border-color:var(--warn)}"
    ".tiles{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:8px}"
    ".tile{background:var(--card);border-radius:8px;padding:8px 10px}.tile .v{font-size:20px;"
    "font-weight:650}.tile .k{color:var(--mut);font-size:12px}"
    ".charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:12px}"
    "figure.wide{grid-column:1/-1}figure.chart{margin:0;background:var(--card);border-radius:8px;padding:8px}"
    "figcaption{font-weight:600;margin-bottom:2px}svg{width:100%;height:auto}"
    ".legend span{margin-right:12px;font-size:12px;color:var(--mut)}.legend i{display:"
    "inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}"
    ".grid{stroke:var(--grid);stroke-width:1}.axis{stroke:var(--mut);stroke-width:1}"
    ".mark{stroke:var(--fail);stroke-dasharray:4 3}.shade{fill:var(--mut);opacity:.12}"
    ".tick{fill:var(--mut);font-size:11px}.label{fill:var(--fg);font-size:12px}"
    "circle.hov{fill:transparent;stroke:none}line.slo{stroke:var(--warn);stroke-width:1.5;"
    "stroke-dasharray:6 3}text.slo{fill:var(--warn)}.run-ok{fill:var(--pass)}"
    ".run-warn{fill:var(--warn)}.run-fail{fill:var(--fail)}.ci{stroke:var(--fg);stroke-width:2}"
    ".mean{fill:var(--fg)}.limit{fill:var(--pass);opacity:.12}"
    "rect.stall{stroke:var(--card);stroke-width:1}.line{fill:none;stroke-width:1.8}.bar{fill:var(--c0)}"
    ".c0{stroke:var(--c0);fill:var(--c0)}.c1{stroke:var(--c1);fill:var(--c1)}"
    ".c2{stroke:var(--c2);fill:var(--c2)}.c3{stroke:var(--c3);fill:var(--c3)}"
    ".c4{stroke:var(--c4);fill:var(--c4)}.c5{stroke:var(--c5);fill:var(--c5)}"
    "path.line{fill:none}.legend i.c0{background:var(--c0)}.legend i.c1{background:var(--c1)}"
    ".legend i.c2{background:var(--c2)}.legend i.c3{background:var(--c3)}.legend i.c4"
    "{background:var(--c4)}.legend i.c5{background:var(--c5)}"
    ".empty .why,.note{color:var(--mut);font-style:italic}.note{font-size:12px}"
    "table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;border-bottom:1px "
    "solid var(--grid);text-align:left}.tw{max-height:240px;overflow:auto}"
    "details summary{cursor:pointer;color:var(--mut);font-size:12px}"
    "ul.checks{list-style:none;padding:0}ul.checks li{margin:6px 0}.fix{color:var(--mut)}"
    "@media print{.tw{max-height:none}details{display:block}}";

void im__html_verdict_badge(struct page *p, const char *v) {
  im__html_put(p, "<span class=\"verdict ");
  im__html_esc(p, v);
  im__html_put(p, "\">");
  im__html_esc(p, v);
  im__html_put(p, "</span>");
}

static void tile(struct page *p, const char *label, double v, const char *unit) {
  im__html_put(p, "<div class=\"tile\"><div class=\"v\">");
  im__html_num(p, v);
  im__html_put(p, " <small>");
  im__html_esc(p, unit);
  im__html_put(p, "</small></div><div class=\"k\">");
  im__html_esc(p, label);
  im__html_put(p, "</div></div>");
}

static void tiles(struct page *p, const json_t *sum) {
  im__html_put(p, "<h2>Headline</h2><div class=\"tiles\">");
  tile(p, "request throughput", im_json_num(im__html_at(sum, "request_throughput"), NAN), "req/s");
  if (im__html_at(p->slo, "ttft_ms") || im__html_at(p->slo, "tpot_ms") || im__html_at(p->slo, "e2el_ms"))
    tile(p, "goodput (within the SLO)", im_json_num(im__html_at(sum, "request_goodput"), NAN), "req/s");
  tile(p, "output throughput", im_json_num(im__html_at(sum, "output_throughput"), NAN), "tok/s");
  tile(p, "completed", im_json_num(im__html_at(sum, "completed"), NAN), "requests");
  tile(p, "failed", im_json_num(im__html_at(sum, "failed"), NAN), "requests");
  static const char *const m[] = {"ttft", "tpot", "itl", "e2el"};
  for (size_t i = 0; i < 4; i++)
    for (int q = 0; q < 2; q++) {
      char key[32], label[40];
      snprintf(key, sizeof key, "%s_%s_ms", q ? "p99" : "p50", m[i]);
      snprintf(label, sizeof label, "%s %s", m[i], q ? "p99" : "p50");
      tile(p, label, im_json_num(im__html_at(sum, key), NAN), "ms");
    }
  im__html_put(p, "</div>");
}

#define CDF_POINTS 250

/* A CDF series of one im-hist-1 histogram (ns), x in ms. */
static void cdf_series(struct chart *c, const char *name, const json_t *hj) {
  struct im_hist h;
  if (!hj || im_hist_from_json(&h, hj) != IM_OK)
    return;
  int64_t n = im_hist_count(&h);
  if (n > 0) {
    size_t cap = 0;
    struct im_hist_iter it;
    im_hist_iter_init(&it, &h);
    while (im_hist_iter_next(&it))
      cap++;
    /* At most ~CDF_POINTS points: every k-th bucket and the last, so the
     * page stays small however many distinct values a long run holds. */
    size_t k = cap > CDF_POINTS ? (cap + CDF_POINTS - 1) / CDF_POINTS : 1, i = 0;
    struct series *s = im__html_add_series(c, name, cap / k + 2);
    if (s) {
      im_hist_iter_init(&it, &h);
      while (im_hist_iter_next(&it))
        if (++i % k == 0 || it.cumulative == n)
          im__html_push_pt(s, (double)it.highest / 1e6, (double)it.cumulative / (double)n);
    }
  }
  im_hist_cleanup(&h);
}

/* A CDF series of a scraped histogram {"le_ms", "cumulative", "count"}
 * (metrics.server.server_*_histogram): the share at each bucket bound. */
static void server_cdf_series(struct chart *c, const char *name, const json_t *h) {
  const json_t *le = im__html_at(h, "le_ms"), *cum = im__html_at(h, "cumulative");
  double total = im_json_num(im__html_at(h, "count"), NAN);
  size_t n = json_array_size(le);
  if (!(total > 0) || !n || json_array_size(cum) != n)
    return;
  /* From the last empty bound to the first full one: the buckets beyond
   * say nothing and would stretch the axis over decades. */
  size_t lo = 0, hi = n - 1;
  for (size_t i = 0; i < n; i++)
    if (!(im_json_num(json_array_get(cum, i), NAN) > 0))
      lo = i;
  for (size_t i = n; i-- > lo;)
    if (im_json_num(json_array_get(cum, i), NAN) >= total)
      hi = i;
  struct series *s = im__html_add_series(c, name, hi - lo + 1);
  if (s)
    s->linear = true;
  for (size_t i = lo; s && i <= hi; i++)
    im__html_push_pt(s, im_json_num(json_array_get(le, i), NAN), im_json_num(json_array_get(cum, i), NAN) / total);
}

/* The SLO on key (ttft_ms, tpot_ms, e2el_ms) of the run, NaN when none. */
static double slo_of(const struct page *p, const char *key) {
  return im_json_num(im__html_at(p->slo, key), NAN);
}

static void latency_section(struct page *p, const json_t *stage) {
  const json_t *hs = im__html_path(stage, "metrics", "histograms"), *srv = im__html_path(stage, "metrics", "server");
  im__html_put(p, "<h2>Latency distributions</h2><div class=\"charts\">");
  static const struct {
    const char *title, *keys[2], *names[2], *server, *slo;
  } cdfs[] = {
      {"TTFT (cumulative share)", {"ttft_ns", "ttft_sched_ns"}, {"from send", "from schedule"},
       "server_ttft_histogram", "ttft_ms"},
      {"TPOT (cumulative share)", {"tpot_ns", NULL}, {"per request", NULL}, NULL, "tpot_ms"},
      {"ITL (cumulative share)", {"itl_ns", "itl_token_ns"}, {"per chunk", "per token"},
       "server_itl_histogram", NULL},
      {"E2E latency (cumulative share)", {"e2el_ns", "e2el_sched_ns"}, {"from send", "from schedule"},
       NULL, "e2el_ms"},
  };
  const char *no_srv = srv ? im_json_str(im__html_at(srv, "not_collected"), NULL) : "no server metrics scraped";
  char note[256], mark[48];
  for (size_t i = 0; i < sizeof cdfs / sizeof cdfs[0]; i++) {
    struct chart c = {.title = cdfs[i].title, .xlabel = "latency (ms, log scale)",
                      .ylabel = "share of values ≤ x", .logx = true, .step = true,
                      .why_empty = "no completed request in the measured window",
                      .mark_x = cdfs[i].slo ? slo_of(p, cdfs[i].slo) : NAN, .mark_label = mark};
    if (cdfs[i].slo)
      snprintf(mark, sizeof mark, "SLO %g ms", c.mark_x);
    for (int k = 0; k < 2; k++)
      if (cdfs[i].keys[k])
        cdf_series(&c, cdfs[i].names[k], im__html_at(hs, cdfs[i].keys[k]));
    if (cdfs[i].server) {
      size_t before = c.ns;
      server_cdf_series(&c, "server (its scraped histogram)",
                        im__html_at(srv, cdfs[i].server));
      if (c.ns == before) {
        snprintf(note, sizeof note, "server's histogram: not collected: %s",
                 no_srv ? no_srv : "the scraped page has no such histogram, or it counted "
                                   "nothing in the measured window");
        c.note = note;
      }
    }
    im__html_line_chart(p, &c);
    im__html_series_free(&c);
  }
  im__html_put(p, "</div>");
}

/* Series from parallel arrays obj.t_s and obj.<key>. */
static void arr_series(struct chart *c, const char *name, const json_t *obj, const char *key,
                       double scale) {
  const json_t *t = im__html_at(obj, "t_s"), *v = im__html_at(obj, key);
  if (!json_is_array(t) || !json_is_array(v))
    return;
  size_t n = json_array_size(t) < json_array_size(v) ? json_array_size(t) : json_array_size(v);
  struct series *s = n ? im__html_add_series(c, name, n) : NULL;
  for (size_t i = 0; s && i < n; i++)
    im__html_push_pt(s, im_json_num(json_array_get(t, i), NAN), im_json_num(json_array_get(v, i), NAN) * scale);
}

static void slice_series(struct chart *c, const char *name, const json_t *slices, const char *a,
                         const char *b) {
  size_t n = json_array_size(slices);
  struct series *s = n ? im__html_add_series(c, name, n) : NULL;
  for (size_t i = 0; s && i < n; i++) {
    const json_t *e = json_array_get(slices, i);
    double x = (im_json_num(im__html_at(e, "start_s"), NAN) + im_json_num(im__html_at(e, "end_s"), NAN)) / 2;
    im__html_push_pt(s, x, b ? im_json_num(im__html_path(e, a, b), NAN) : im_json_num(im__html_at(e, a), NAN));
  }
}

static void time_section(struct page *p, const json_t *stage) {
  const json_t *sl = im__html_at(im__html_path(stage, "metrics", "timeslices"), "slices");
  const json_t *win = im__html_path(stage, "metrics", "window");
  double w0 = im_json_num(im__html_at(win, "start_ns"), NAN) / 1e9, w1 = im_json_num(im__html_at(win, "end_ns"), NAN) / 1e9;
  im__html_put(p, "<h2>Over time</h2><p class=\"meta\">");
  double slice = im_json_num(im__html_at(im__html_path(stage, "metrics", "timeslices"), "slice_s"), NAN);
  if (!isnan(slice)) {
    im__html_put(p, "One point per slice of <b id=\"slice-s\">");
    im__html_num(p, slice);
    im__html_putf(p, " s</b> (%zu slices of the measured window; --timeslice sets it). ",
                  json_array_size(sl));
  }
  im__html_put(p, "Shaded: outside the measured window (warm-up before it, draining after it).</p>"
                  "<div class=\"charts\">");
  const char *none = "no time slice (--timeslice): no measured window";
#define TIMECHART(title_, ylabel_, why_)                                                         \
  {.title = (title_), .xlabel = "time since start (s)", .ylabel = (ylabel_), .why_empty = (why_),  \
   .mark_x = NAN, .shade_lo = w0, .shade_hi = w1}
  struct chart c = TIMECHART("Throughput per time slice", "per second", none);
  slice_series(&c, "completed req/s", sl, "request_throughput", NULL);
  slice_series(&c, "output tok/s / 100", sl, "output_throughput", NULL);
  if (c.ns == 2)
    for (size_t i = 0; i < c.s[1].n; i++)
      c.s[1].y[i] /= 100;
  im__html_line_chart(p, &c);
  im__html_series_free(&c);
  /* The other charts: series of time slices (src NULL) or of a sampled
   * source's parallel arrays. */
  const json_t *srv = json_array_get(im__html_path(stage, "series", "server"), 0);
  const json_t *cl = json_array_get(im__html_path(stage, "series", "client"), 0);
  const json_t *tcp = im__html_path(stage, "series", "tcp");
  const char *no_srv = srv ? "scraped, but the server's metrics have none of these series (its "
                             "engine exports other names: docs/server-metrics.md)"
                           : "no server metrics scraped (--scrape URL, or the target has none)";
  const struct {
    const char *title, *ylabel, *why;
    const json_t *src;
    struct {
      const char *name, *key, *sub;
      double scale;
    } s[4];
  } charts[] = {
      {"TTFT and ITL per time slice", "ms", none, NULL,
       {{"TTFT p50", "ttft_ms", "p50", 1}, {"TTFT p99", "ttft_ms", "p99", 1},
        {"ITL p50", "itl_ms", "p50", 1}, {"ITL p99", "itl_ms", "p99", 1}}},
      {"E2E latency per time slice", "ms", none, NULL,
       {{"E2EL p50", "e2el_ms", "p50", 1}, {"E2EL p99", "e2el_ms", "p99", 1}}},
      {"Server queue (scraped)", "requests", no_srv, srv,
       {{"running", "requests_running", NULL, 1}, {"waiting", "requests_waiting", NULL, 1},
        {"preemptions (cumulative)", "preemptions", NULL, 1}}},
      {"KV cache and prefix cache (scraped)", "percent", no_srv, srv,
       {{"KV usage", "kv_cache_usage", NULL, 100},
        {"prefix hit rate", "prefix_cache_hit_rate", NULL, 100}}},
      {"Client: in flight and dispatch lag", "requests / ms", "no client sample", cl,
       {{"in flight", "in_flight", NULL, 1}, {"dispatch lag max (ms)", "dispatch_lag_max_ms", NULL, 1}}},
      {"TCP connections to the target", "sockets", "no TCP sample (--no-sockstat, or not Linux)", tcp,
       {{"established", "established", NULL, 1}, {"TIME_WAIT", "time_wait", NULL, 1}}},
  };
  for (size_t i = 0; i < sizeof charts / sizeof charts[0]; i++) {
    struct chart ch = TIMECHART(charts[i].title, charts[i].ylabel, charts[i].why);
    if (i == 0) { /* TTFT and ITL: the TTFT and TPOT SLOs */
      ch.hline[0] = slo_of(p, "ttft_ms"), ch.hline_label[0] = "TTFT SLO";
      ch.hline[1] = slo_of(p, "tpot_ms"), ch.hline_label[1] = "TPOT SLO";
    } else if (i == 1) {
      ch.hline[0] = slo_of(p, "e2el_ms"), ch.hline_label[0] = "E2EL SLO";
    }
    for (size_t k = 0; k < 4 && charts[i].s[k].name; k++) {
      if (charts[i].src)
        arr_series(&ch, charts[i].s[k].name, charts[i].src, charts[i].s[k].key,
                   charts[i].s[k].scale);
      else
        slice_series(&ch, charts[i].s[k].name, sl, charts[i].s[k].key, charts[i].s[k].sub);
    }
    im__html_line_chart(p, &ch);
    im__html_series_free(&ch);
  }
#undef TIMECHART
  im__html_put(p, "</div>");
}

static void breakdown_section(struct page *p, const json_t *stage) {
  const json_t *bc = im__html_path(stage, "metrics", "by_context");
  size_t n = json_array_size(bc);
  if (!n)
    return;
  im__html_put(p, "<h2>By context length</h2><div class=\"charts\">");
  const char *labels[16];
  double v50[16], v99[16], tp[16];
  if (n > 16)
    n = 16;
  for (size_t i = 0; i < n; i++) {
    const json_t *b = json_array_get(bc, i);
    labels[i] = im_json_str(im__html_at(b, "bucket"), "?");
    v50[i] = im_json_num(im__html_path(b, "ttft_ms", "p50"), NAN);
    v99[i] = im_json_num(im__html_path(b, "ttft_ms", "p99"), NAN);
    tp[i] = im_json_num(im__html_path(b, "tpot_ms", "p50"), NAN);
  }
  bar_chart(p, "TTFT p50 by prompt length", "context bucket (tokens)", "ms", labels, v50, n,
            "no completed request");
  bar_chart(p, "TTFT p99 by prompt length", "context bucket (tokens)", "ms", labels, v99, n,
            "no completed request");
  bar_chart(p, "TPOT p50 by prompt length", "context bucket (tokens)", "ms", labels, tp, n,
            "no completed request");
  im__html_put(p, "</div>");
}

/* The slowest requests as a Gantt-like strip (analysis.timeline): one row
 * per request, every row from its own t_sched, its phases as bars and its
 * stalls marked over the decode bar. */
#define TL_ROW 16

static void tl_bar(struct page *p, const struct axis *ax, double y, double a, double b,
                   const char *cls, const char *what, const char *hint) {
  if (!(b > a) || isnan(a))
    return;
  double x0 = im__html_ax_map(ax, a, IM_HTML_ML, IM_HTML_TL_W - IM_HTML_MR), x1 = im__html_ax_map(ax, b, IM_HTML_ML, IM_HTML_TL_W - IM_HTML_MR);
  im__html_putf(p, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\"><title>", cls, x0,
       y, fmax(x1 - x0, 1.0), TL_ROW - 4);
  im__html_esc(p, what);
  im__html_put(p, ": ");
  im__html_num(p, b - a);
  im__html_put(p, " ms");
  if (hint)
    im__html_esc(p, hint);
  im__html_put(p, "</title></rect>");
}

static void timeline_chart(struct page *p, const json_t *tl) {
  const json_t *rq = im__html_at(tl, "requests");
  size_t n = json_array_size(rq);
  const char *title = "Slowest requests by E2EL: where their time went";
  if (!n) {
    im__html_empty_chart(p, title, tl ? "no completed request" : "not collected: no timeline in results.json");
    return;
  }
  struct axis ax = {0, 0, false, false};
  for (size_t i = 0; i < n; i++)
    ax.hi = fmax(ax.hi, im_json_num(im__html_at(json_array_get(rq, i), "last_ms"), NAN));
  if (!(ax.hi > 0))
    ax.hi = 1;
  ax.hi = ceil(ax.hi / im__html_nice_step(ax.hi, 6)) * im__html_nice_step(ax.hi, 6);
  int h = IM_HTML_MT + (int)n * TL_ROW + IM_HTML_MB;
  p->charts++;
  im__html_putf(p, "<figure class=\"chart wide\" data-points=\"%zu\"><figcaption>", n);
  im__html_esc(p, title);
  im__html_put(p, "</figcaption><div class=\"legend\"><span><i class=\"c5\"></i>waiting on the client "
         "(schedule → start)</span><span><i class=\"c4\"></i>connect</span><span><i "
         "class=\"c0\"></i>to the first token</span><span><i class=\"c2\"></i>decode</span>"
         "<span><i class=\"c1\"></i>stall (gap above ");
  im__html_num(p, im_json_num(im__html_at(tl, "stall_k"), NAN));
  im__html_put(p, " × the request's median)</span></div>");
  im__html_putf(p, "<svg viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", IM_HTML_TL_W, h);
  im__html_esc(p, title);
  im__html_put(p, "\">");
  /* The x ticks of draw_ticks sit under a chart of height H: draw ours. */
  double step = im__html_nice_step(ax.hi, 6);
  for (double v = 0; v <= ax.hi + step * 1e-9; v += step) {
    double q = im__html_ax_map(&ax, v, IM_HTML_ML, IM_HTML_TL_W - IM_HTML_MR);
    char b[32];
    im__html_fmt_tick(b, sizeof b, v);
    im__html_putf(p, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
            "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>",
         q, IM_HTML_MT, q, h - IM_HTML_MB, q, h - IM_HTML_MB + 14, b);
  }
  for (size_t i = 0; i < n; i++) {
    const json_t *e = json_array_get(rq, i), *st = im__html_at(e, "stalls_listed");
    double y = IM_HTML_MT + (double)i * TL_ROW + 2;
    double s = im_json_num(im__html_at(e, "start_ms"), NAN), c = im_json_num(im__html_at(e, "send_ms"), NAN), f = im_json_num(im__html_at(e, "first_ms"), NAN),
           l = im_json_num(im__html_at(e, "last_ms"), NAN);
    im__html_putf(p, "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">#%.0f</text>", IM_HTML_ML - 4,
         y + TL_ROW - 6, im_json_num(im__html_at(e, "id"), NAN));
    tl_bar(p, &ax, y, 0, s, "c5", "waiting on the client", NULL);
    tl_bar(p, &ax, y, s, c, "c4", "connect", NULL);
    tl_bar(p, &ax, y, isnan(c) ? s : c, f, "c0", "to the first token", NULL);
    char hint[96];
    snprintf(hint, sizeof hint, ", %.0f tokens, %.0f stalls", im_json_num(im__html_at(e, "output_tokens"), NAN),
             im_json_num(im__html_at(e, "stalls"), NAN));
    tl_bar(p, &ax, y, f, l, "c2", "decode", hint);
    for (size_t k = 0; k < json_array_size(st); k++) {
      const json_t *g = json_array_get(st, k);
      snprintf(hint, sizeof hint, " gap after %.0f tokens", im_json_num(json_array_get(g, 2), NAN));
      tl_bar(p, &ax, y - 1, im_json_num(json_array_get(g, 0), NAN), im_json_num(json_array_get(g, 1), NAN), "c1 stall",
             "stall", hint);
    }
  }
  im__html_putf(p, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", IM_HTML_ML, h - IM_HTML_MB, IM_HTML_TL_W - IM_HTML_MR,
       h - IM_HTML_MB);
  im__html_putf(p, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", IM_HTML_ML, IM_HTML_MT, IM_HTML_ML, h - IM_HTML_MB);
  im__html_putf(p, "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">ms since the "
          "request was scheduled</text>",
       (IM_HTML_ML + IM_HTML_TL_W - IM_HTML_MR) / 2, h - 8);
  im__html_putf(p, "<text class=\"label\" transform=\"translate(14,%d) rotate(-90)\" "
          "text-anchor=\"middle\">request (logical id)</text></svg>",
       (IM_HTML_MT + h - IM_HTML_MB) / 2);
  im__html_put(p, "<details><summary>table</summary><div class=\"tw\"><table><tr><th>request</th>"
         "<th>scheduled at (s)</th><th>waiting (ms)</th><th>connect (ms)</th><th>TTFT (ms)</th>"
         "<th>decode (ms)</th><th>E2EL (ms)</th><th>output tokens</th><th>stalls</th>"
         "<th>stalls at (ms from schedule)</th></tr>");
  for (size_t i = 0; i < n; i++) {
    const json_t *e = json_array_get(rq, i), *st = im__html_at(e, "stalls_listed");
    double s = im_json_num(im__html_at(e, "start_ms"), NAN), c = im_json_num(im__html_at(e, "send_ms"), NAN), f = im_json_num(im__html_at(e, "first_ms"), NAN),
           l = im_json_num(im__html_at(e, "last_ms"), NAN);
    double cells[] = {im_json_num(im__html_at(e, "scheduled_s"), NAN), s, c - s, f - s, l - f,
                      im_json_num(im__html_at(e, "e2el_ms"), NAN), im_json_num(im__html_at(e, "output_tokens"), NAN), im_json_num(im__html_at(e, "stalls"), NAN)};
    im__html_put(p, "<tr><td>#");
    im__html_num(p, im_json_num(im__html_at(e, "id"), NAN));
    im__html_put(p, " ");
    im__html_esc(p, im_json_str(im__html_at(e, "request_id"), ""));
    for (size_t k = 0; k < sizeof cells / sizeof cells[0]; k++) {
      im__html_put(p, "</td><td>");
      im__html_num(p, cells[k]);
    }
    im__html_put(p, "</td><td>");
    for (size_t k = 0; k < json_array_size(st); k++) {
      if (k)
        im__html_put(p, ", ");
      im__html_num(p, im_json_num(json_array_get(json_array_get(st, k), 0), NAN));
      im__html_put(p, "–");
      im__html_num(p, im_json_num(json_array_get(json_array_get(st, k), 1), NAN));
    }
    im__html_put(p, "</td></tr>");
  }
  im__html_put(p, "</table></div></details></figure>");
}

static void tokens_section(struct page *p, const json_t *stage) {
  const json_t *an = im__html_at(stage, "analysis"), *st = im__html_at(an, "stalls");
  im__html_put(p, "<h2>Token latency and stalls</h2><div class=\"charts\">");
  timeline_chart(p, im__html_at(an, "timeline"));
  const json_t *tl = im__html_at(an, "token_latency");
  static const char *const q[] = {"p50", "p90", "p95", "p99", "p99.9"};
  double v[3][5];
  const char *keys[3] = {"window_mean_ms", "window_max_ms", NULL};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 5; i++)
      v[k][i] = im_json_num(im__html_path(tl, keys[k], q[i]), NAN);
  for (int i = 0; i < 5; i++)
    v[2][i] = im_json_num(im__html_path(im__html_path(stage, "metrics", "latency_ms"), "itl", q[i]), NAN);
  struct chart c = {.title = "Segmented windows vs pooled ITL", .xlabel = "percentile",
                    .ylabel = "ms", .why_empty = "no request with enough tokens for a window",
                    .mark_x = NAN};
  const char *names[3] = {"window mean", "window max", "pooled ITL"};
  for (int k = 0; k < 3; k++) {
    struct series *s = im__html_add_series(&c, names[k], 5);
    for (int i = 0; s && i < 5; i++)
      im__html_push_pt(s, atof(q[i] + 1), v[k][i]);
  }
  im__html_line_chart(p, &c);
  im__html_series_free(&c);
  const json_t *bp = im__html_at(st, "by_position");
  size_t n = json_array_size(bp);
  char lab[64][24];
  const char *labels[64];
  double cnt[64];
  if (n > 64)
    n = 64;
  for (size_t i = 0; i < n; i++) {
    const json_t *e = json_array_get(bp, i);
    snprintf(lab[i], sizeof lab[i], "%.0f", im_json_num(json_array_get(e, 0), NAN));
    labels[i] = lab[i];
    cnt[i] = im_json_num(json_array_get(e, 1), NAN);
  }
  bar_chart(p, "Stalls by token position", "first token index of the bucket", "stalls", labels,
            cnt, n, "no stall (no gap above k x its request's median)");
  const json_t *pr = im__html_at(an, "probes");
  if (pr) {
    const json_t *ls = im__html_at(pr, "stalls_listed");
    struct chart s = {.title = "Probe stalls", .xlabel = "time since start (s)",
                      .ylabel = "probe latency (ms)", .why_empty = "no probe stall", .mark_x = NAN,
                      .shade_lo = NAN, .shade_hi = NAN};
    struct series *se = im__html_add_series(&s, "stalled probe", json_array_size(ls));
    for (size_t i = 0; se && i < json_array_size(ls); i++)
      im__html_push_pt(se, im_json_num(im__html_at(json_array_get(ls, i), "at_s"), NAN),
              im_json_num(im__html_at(json_array_get(ls, i), "latency_ms"), NAN));
    im__html_line_chart(p, &s);
    im__html_series_free(&s);
  }
  im__html_put(p, "</div>");
}

/* A series of parallel arrays at key of obj against the array index. */
static void index_series(struct chart *c, const char *name, const json_t *arr, double x0) {
  size_t n = json_array_size(arr);
  struct series *s = n ? im__html_add_series(c, name, n) : NULL;
  for (size_t i = 0; s && i < n; i++)
    im__html_push_pt(s, x0 + (double)i, im_json_num(json_array_get(arr, i), NAN));
}

/* Roofline, in-flight contexts and MoE skew (docs/deepseek.md). */
static void deepseek_section(struct page *p, const json_t *stage) {
  const json_t *rl = im__html_path(stage, "metrics", "roofline"), *moe = im__html_path(stage, "metrics", "moe");
  if (!rl && !moe)
    return;
  im__html_put(p, "<h2>Model and hardware (roofline, MoE)</h2><p class=\"meta\">");
  if (rl) {
    im__html_put(p, "achieved bandwidth utilisation <b>");
    im__html_num(p, im_json_num(im__html_at(rl, "achieved_bandwidth_utilisation"), NAN));
    im__html_put(p, "</b> (reference ");
    im__html_num(p, im_json_num(im__html_at(rl, "bw_util_ref"), NAN));
    im__html_put(p, ") · MFU <b>");
    im__html_num(p, im_json_num(im__html_at(rl, "mfu"), NAN));
    im__html_put(p, "</b> (reference ");
    im__html_num(p, im_json_num(im__html_at(rl, "mfu_ref"), NAN));
    im__html_put(p, ") · output tok/s per GPU <b>");
    im__html_num(p, im_json_num(im__html_at(rl, "output_tok_per_s_per_gpu"), NAN));
    im__html_put(p, "</b> · per-user output speed p50 <b>");
    im__html_num(p, im_json_num(im__html_path(rl, "per_user_output_tok_per_s", "p50"), NAN));
    im__html_put(p, " tok/s</b>");
  }
  im__html_put(p, "</p><div class=\"charts\">");
  const json_t *ic = im__html_at(rl, "inflight_context");
  /* Why there is no series: the roofline's own reason when it has one. */
  char why[320];
  snprintf(why, sizeof why, "not collected: %s",
           im_json_str(im__html_at(rl, "not_collected"),
                       ic ? "every sample instant fell between requests"
                          : "no roofline for this stage (the model and hardware are not described: "
                            "--model-config, --hardware)"));
  struct chart c = {.title = "In-flight context lengths (rebuilt from the records)",
                    .xlabel = "time since start (s)", .ylabel = "tokens",
                    .why_empty = why, .mark_x = NAN};
  arr_series(&c, "max", ic, "max", 1);
  arr_series(&c, "mean", ic, "mean", 1);
  arr_series(&c, "min", ic, "min", 1);
  im__html_line_chart(p, &c);
  im__html_series_free(&c);
  const json_t *bc = im__html_at(rl, "by_context");
  size_t n = json_array_size(bc);
  struct chart b = {.title = "Decode step: measured against the roofline",
                    .xlabel = "mean context (tokens)", .ylabel = "ms per step",
                    .why_empty = "no decode measured", .mark_x = NAN};
  struct series *m = im__html_add_series(&b, "measured TPOT", n), *bw = im__html_add_series(&b, "bandwidth-bound", n),
                *cp = im__html_add_series(&b, "compute-bound", n);
  for (size_t i = 0; m && bw && cp && i < n; i++) {
    const json_t *e = json_array_get(bc, i);
    double x = im_json_num(im__html_at(e, "context_mean"), NAN);
    im__html_push_pt(m, x, im_json_num(im__html_at(e, "tpot_mean_ms"), NAN));
    im__html_push_pt(bw, x, im_json_num(im__html_path(e, "predicted", "bandwidth_bound_step_ms"), NAN));
    im__html_push_pt(cp, x, im_json_num(im__html_path(e, "predicted", "compute_bound_step_ms"), NAN));
  }
  im__html_line_chart(p, &b);
  im__html_series_free(&b);
  const json_t *pl = im__html_at(moe, "per_layer");
  struct chart l = {.title = "MoE load per layer (scraped)", .xlabel = "MoE layer",
                    .ylabel = "balancedness (mean/max) · G1 / 10",
                    .why_empty = im_json_str(im__html_path(moe, "null_reasons", "per_layer"),
                                      "no per-layer expert load scraped"),
                    .mark_x = NAN};
  index_series(&l, "balancedness", im__html_at(pl, "balancedness"), 0);
  index_series(&l, "G1 skewness / 10", im__html_at(pl, "g1"), 0);
  if (l.ns == 2)
    for (size_t i = 0; i < l.s[1].n; i++)
      l.s[1].y[i] /= 10;
  im__html_line_chart(p, &l);
  im__html_series_free(&l);
  if (moe)
    im__html_empty_chart(p, "MoE expert × time heat map",
                "not collected: a run scrapes per-layer load only; the expert × time map "
                "needs per-step expert counts, which a routing trace has (serve "
                "--routing-log FILE, then infermeter analyze-routing FILE --html OUT)");
  im__html_put(p, "</div>");
}

/* Reasoning models and agent chains (docs/agents.md). */
static void agents_section(struct page *p, const json_t *stage) {
  const json_t *rs = im__html_path(stage, "metrics", "reasoning"), *ag = im__html_path(stage, "metrics", "agents");
  if (!rs && !ag)
    return;
  im__html_put(p, "<h2>Reasoning and agents</h2><div class=\"charts\">");
  const json_t *bc = im__html_at(rs, "by_context");
  size_t n = json_array_size(bc) < 16 ? json_array_size(bc) : 16;
  const char *labels[16];
  double share[16], ttfa[16], ttft[16];
  for (size_t i = 0; i < n; i++) {
    const json_t *b = json_array_get(bc, i);
    labels[i] = im_json_str(im__html_at(b, "bucket"), "?");
    share[i] = 100 * im_json_num(im__html_path(b, "reasoning_share", "p50"), NAN);
    ttfa[i] = im_json_num(im__html_path(b, "ttfa_ms", "p50"), NAN);
    ttft[i] = im_json_num(im__html_path(b, "ttft_ms", "p50"), NAN);
  }
  if (rs) {
    bar_chart(p, "Share of E2E spent reasoning (p50) by prompt length", "context bucket (tokens)",
              "percent", labels, share, n, "no request reasoned");
    bar_chart(p, "Time to first answer token (p50) by prompt length", "context bucket (tokens)",
              "ms", labels, ttfa, n, "no answer token");
    bar_chart(p, "TTFT (p50, first reasoning token) by prompt length", "context bucket (tokens)",
              "ms", labels, ttft, n, "no first token");
  }
  const json_t *hops = im__html_at(ag, "per_hop");
  size_t h = json_array_size(hops) < 16 ? json_array_size(hops) : 16;
  char hl[16][16];
  const char *hlabels[16];
  double call[16], httft[16];
  for (size_t i = 0; i < h; i++) {
    const json_t *e = json_array_get(hops, i);
    snprintf(hl[i], sizeof hl[i], "hop %.0f", im_json_num(im__html_at(e, "hop"), NAN));
    hlabels[i] = hl[i];
    call[i] = im_json_num(im__html_path(e, "tool_call_ms", "p50"), NAN);
    httft[i] = im_json_num(im__html_path(e, "ttft_ms", "p50"), NAN);
  }
  if (ag) {
    bar_chart(p, "Time to the complete tool call (p50) per hop", "hop of the chain", "ms", hlabels,
              call, h, "no tool call");
    bar_chart(p, "TTFT (p50) per hop", "hop of the chain", "ms", hlabels, httft, h,
              "no tool call");
    const json_t *pc = im__html_at(ag, "per_chain");
    const char *pl[2] = {"model", "tools"};
    double pv[2] = {im_json_num(im__html_path(pc, "model_ms", "p50"), NAN), im_json_num(im__html_path(pc, "tool_ms", "p50"), NAN)};
    bar_chart(p, "Where a chain's time goes (p50)", "", "ms", pl, pv, 2, "no complete chain");
  }
  im__html_put(p, "</div>");
}

static void causes_section(struct page *p, const json_t *stage) {
  const json_t *rc = im__html_path(stage, "analysis", "root_causes");
  im__html_put(p, "<h2>Root causes of SLO violations</h2>");
  if (!json_array_size(rc)) {
    im__html_put(p, "<p class=\"meta\">no SLO was violated (or none was given with --slo)</p>");
    return;
  }
  im__html_put(p, "<ul class=\"checks\">");
  size_t i;
  const json_t *e;
  json_array_foreach(rc, i, e) {
    im__html_put(p, "<li><b>");
    im__html_esc(p, im_json_str(im__html_at(e, "slo"), "?"));
    im__html_put(p, "</b>: <b>");
    im__html_esc(p, im_json_str(im__html_at(e, "cause"), "?"));
    im__html_put(p, "</b> ");
    im__html_esc(p, im_json_str(im__html_path(e, "evidence", "why"), ""));
    im__html_put(p, "</li>");
  }
  im__html_put(p, "</ul>");
}

static void stage_sections(struct page *p, const json_t *stage, const json_t *urls) {
  tiles(p, im__html_at(stage, "summary"));
  im__html_targets_section(p, stage, urls);
  latency_section(p, stage);
  time_section(p, stage);
  breakdown_section(p, stage);
  tokens_section(p, stage);
  deepseek_section(p, stage);
  agents_section(p, stage);
  causes_section(p, stage);
}

/* Throughput against per-user speed over the stages (the Pareto
 * trade-off of a deployment): each stage a point, the stages no other
 * beats on both axes joined as the frontier. */
static void pareto_chart(struct page *p, const json_t *st) {
  size_t n = json_array_size(st);
  bool per_gpu = n > 0;
  for (size_t i = 0; i < n; i++)
    per_gpu &= im_json_num(im__html_at(im__html_path(json_array_get(st, i), "metrics", "roofline"), "gpus"), NAN) > 0;
  struct chart c = {.title = "Throughput against per-user speed (Pareto)",
                    .xlabel = "per-user output speed p50 (tok/s, 1 / TPOT)",
                    .ylabel = per_gpu ? "output tok/s per GPU" : "output tok/s (GPUs not declared)",
                    .why_empty = "not collected: no stage decoded a request (per-user speed needs "
                                 "two output tokens)",
                    .mark_x = NAN};
  struct series *pts = im__html_add_series(&c, "stage", n);
  if (!pts)
    return;
  pts->dots = true;
  pts->labels = malloc((n ? n : 1) * sizeof *pts->labels);
  for (size_t i = 0; i < n; i++) {
    const json_t *e = json_array_get(st, i), *rl = im__html_path(e, "metrics", "roofline");
    size_t before = pts->n;
    im__html_push_pt(pts, im_json_num(im__html_path(rl, "per_user_output_tok_per_s", "p50"), NAN),
            per_gpu ? im_json_num(im__html_at(rl, "output_tok_per_s_per_gpu"), NAN)
                    : im_json_num(im__html_path(e, "summary", "output_throughput"), NAN));
    if (pts->labels && pts->n > before)
      pts->labels[before] = im_json_str(im__html_at(e, "label"), "?");
  }
  /* The frontier: by speed descending, each point with more throughput
   * than every faster one. */
  size_t m = pts->n, *ord = malloc((m ? m : 1) * sizeof *ord);
  struct series *fr = ord ? im__html_add_series(&c, "Pareto frontier", m) : NULL;
  if (fr) {
    for (size_t i = 0; i < m; i++)
      ord[i] = i;
    for (size_t i = 1; i < m; i++) /* insertion sort, by x descending */
      for (size_t j = i; j > 0 && pts->x[ord[j]] > pts->x[ord[j - 1]]; j--) {
        size_t t = ord[j];
        ord[j] = ord[j - 1];
        ord[j - 1] = t;
      }
    double best = -INFINITY;
    for (size_t i = 0; i < m; i++)
      if (pts->y[ord[i]] > best) {
        best = pts->y[ord[i]];
        im__html_push_pt(fr, pts->x[ord[i]], best);
      }
  }
  free(ord);
  im__html_line_chart(p, &c);
  im__html_series_free(&c);
}

/* A run of stages: the throughput-latency curve, then each stage. */
static void stages_section(struct page *p, const json_t *root) {
  const json_t *st = im__html_at(root, "stages");
  size_t n = json_array_size(st);
  im__html_put(p, "<h2>Stages</h2><div class=\"charts\">");
  struct chart c = {.title = "Latency against throughput", .xlabel = "request throughput (req/s)",
                    .ylabel = "ms", .why_empty = "no stage completed a request", .mark_x = NAN};
  const char *names[3] = {"TTFT p99", "TPOT p99", "ITL p99"};
  const char *keys[3] = {"p99_ttft_ms", "p99_tpot_ms", "p99_itl_ms"};
  for (int k = 0; k < 3; k++) {
    struct series *s = im__html_add_series(&c, names[k], n);
    for (size_t i = 0; s && i < n; i++) {
      const json_t *sum = im__html_at(json_array_get(st, i), "summary");
      im__html_push_pt(s, im_json_num(im__html_at(sum, "request_throughput"), NAN), im_json_num(im__html_at(sum, keys[k]), NAN));
    }
  }
  c.hline[0] = slo_of(p, "ttft_ms"), c.hline_label[0] = "TTFT SLO";
  c.hline[1] = slo_of(p, "tpot_ms"), c.hline_label[1] = "TPOT SLO";
  const json_t *sat = im__html_path(root, "sweep", "saturation_point");
  double sat_stage = im_json_num(im__html_at(sat, "stage"), NAN);
  if (!isnan(sat_stage) && sat_stage >= 0 && (size_t)sat_stage < n) {
    c.mark_x = im_json_num(im__html_path(json_array_get(st, (size_t)sat_stage), "summary", "request_throughput"), NAN);
    c.mark_label = "saturation";
  }
  im__html_line_chart(p, &c);
  im__html_series_free(&c);
  pareto_chart(p, st);
  const json_t *knee = im__html_at(root, "bandwidth_knee");
  if (knee) {
    struct chart k = {.title = "Decode throughput against context (bandwidth knee)",
                      .xlabel = "mean context (tokens)", .ylabel = "decode tok/s",
                      .why_empty = "no context sweep",
                      .mark_x = im_json_num(im__html_path(knee, "knee", "context_mean"), NAN)};
    k.mark_label = "knee";
    const json_t *pts = im__html_at(knee, "points");
    struct series *s = im__html_add_series(&k, "decode throughput", json_array_size(pts));
    for (size_t i = 0; s && i < json_array_size(pts); i++) {
      const json_t *e = json_array_get(pts, i);
      im__html_push_pt(s, im_json_num(im__html_at(e, "context_mean"), NAN), im_json_num(im__html_at(e, "decode_tok_per_s"), NAN));
    }
    im__html_line_chart(p, &k);
    im__html_series_free(&k);
  }
  im__html_put(p, "</div><table><tr><th>stage</th><th>req/s</th><th>tok/s</th><th>TTFT p50</th>"
         "<th>TTFT p99</th><th>TPOT p50</th><th>TPOT p99</th><th>failed</th></tr>");
  for (size_t i = 0; i < n; i++) {
    const json_t *s = json_array_get(st, i), *sum = im__html_at(s, "summary");
    im__html_put(p, "<tr><td>");
    im__html_esc(p, im_json_str(im__html_at(s, "label"), "?"));
    static const char *const cols[] = {"request_throughput", "output_throughput", "p50_ttft_ms",
                                       "p99_ttft_ms",        "p50_tpot_ms",       "p99_tpot_ms",
                                       "failed"};
    for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++) {
      im__html_put(p, "</td><td>");
      im__html_num(p, im_json_num(im__html_at(sum, cols[k]), NAN));
    }
    im__html_put(p, "</td></tr>");
  }
  im__html_put(p, "</table>");
  for (size_t i = 0; i < n; i++) {
    const json_t *s = json_array_get(st, i);
    im__html_put(p, "<details><summary><h3 style=\"display:inline\">stage ");
    im__html_esc(p, im_json_str(im__html_at(s, "label"), "?"));
    im__html_put(p, "</h3></summary>");
    im__html_audit_section(p, im__html_at(s, "audit"), im__html_failing_of(im__html_at(s, "audit")));
    stage_sections(p, s, im__html_path(im__html_at(root, "manifest"), "target", "urls"));
    im__html_put(p, "</details>");
  }
}

void im__html_page_head(struct page *p, const char *title) {
  im__html_put(p, "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
         "<meta name=\"color-scheme\" content=\"light dark\"><title>infermeter: ");
  im__html_esc(p, title);
  im__html_put(p, "</title><style>");
  im__html_put(p, css);
  im__html_put(p, "</style></head><body>");
}

enum im_err im_html_report(const json_t *root, const char *title, struct im_buf *out) {
  if (!json_is_object(root))
    return IM_INVAL;
  struct page pg = {.b = out, .slo = im__html_path(root, "manifest", "slo")}, *p = &pg;
  im__html_page_head(p, title);
  const char *schema = im_json_str(im__html_at(root, "schema"), "");
  if (json_is_object(im__html_at(root, "manifest")) || !strstr(schema, "repeat")) {
    im__html_header(p, root, title);
  } else {
    im__html_put(p, "<h1>infermeter report: ");
    im__html_esc(p, title);
    im__html_putf(p, "</h1><p class=\"meta\">a set of <b>%zu</b> repeated runs of one configuration (each "
            "run's own report is in its directory: ",
         json_array_size(im__html_at(root, "runs")));
    size_t i;
    const json_t *r;
    json_array_foreach(im__html_at(root, "runs"), i, r) {
      if (i)
        im__html_put(p, ", ");
      im__html_esc(p, im_json_str(im__html_at(r, "dir"), "?"));
      im__html_put(p, "/report.html");
    }
    im__html_put(p, ")</p>");
  }
  im__html_audit_section(p, im__html_at(root, "audit"), im__html_run_failing(root));
  if (strstr(schema, "repeat"))
    im__html_repeat_section(p, root);
  else if (im__html_at(root, "stages"))
    stages_section(p, root);
  else
    stage_sections(p, root, im__html_path(im__html_at(root, "manifest"), "target", "urls"));
  im__html_putf(p, "<p class=\"meta\">%u charts · generated by infermeter from results.json (",
       p->charts);
  im__html_esc(p, im_json_str(im__html_at(root, "generated_at"), ""));
  im__html_put(p, "); every figure is defined in docs/metrics.md</p></body></html>\n");
  return pg.err;
}
