/* The repeat set's page (report/html_int.h): figures in words with their
 * units, one forest plot of every figure's mean and 95 % CI against the
 * CI-width limit, each run's value as a dot coloured by its exit status.
 * Reads the keys of the set's results.json (docs/statistics.md): per
 * figure mean, ci95_lo, ci95_hi, values, n, wide, runs_needed, reference;
 * max_ci_width; runs[].exit. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/html_int.h"

const char *im__html_figure_words(const char *key, char *buf, size_t n) {
  static const char *const fixed[][2] = {
      {"request_throughput", "Request throughput (req/s)"},
      {"output_throughput", "Output throughput (tok/s)"},
      {"goodput_rps", "Goodput (req/s within the SLO)"},
      {"slo_attainment", "SLO attainment (share of requests)"},
      {"effective_qps", "Effective request rate (req/s)"},
  };
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    if (!strcmp(key, fixed[i][0]))
      return fixed[i][1];
  /* ttft_p99_ms -> "TTFT p99 (ms)" */
  char metric[16], q[16];
  if (sscanf(key, "%15[a-z0-9]_%15[p0-9.]_ms", metric, q) == 2) {
    for (char *c = metric; *c; c++)
      if (*c >= 'a' && *c <= 'z')
        *c = (char)(*c - 'a' + 'A');
    snprintf(buf, n, "%s %s (ms)", metric, q);
    return buf;
  }
  return key;
}

/* What a figure's interval is around: its `estimate` (the pooled quantile
 * of a p90/p99 with an order-statistic CI, else the mean over the runs);
 * the mean in a results.json from before that key. */
static double centre(const json_t *f) {
  double e = im_json_num(im__html_at(f, "estimate"), NAN);
  return isfinite(e) ? e : im_json_num(im__html_at(f, "mean"), NAN);
}

/* "pooled" for an order-statistic CI over every run's requests, else "mean". */
static const char *centre_word(const json_t *f) {
  const json_t *k = im__html_at(f, "ci_kind");
  return json_is_string(k) && !strcmp(json_string_value(k), "pooled_order_statistic")
             ? "pooled estimate"
             : "mean";
}

/* A figure has something to draw: a centre and its CI. */
static bool drawn(const json_t *f) {
  return isfinite(centre(f)) && centre(f) != 0 &&
         isfinite(im_json_num(im__html_at(f, "ci95_lo"), NAN)) &&
         isfinite(im_json_num(im__html_at(f, "ci95_hi"), NAN));
}

/* Per cent off the mean. */
static double rel(double v, double mean) {
  return (v / mean - 1) * 100;
}

/* "lo – hi", or a dash and why when either is missing. */
static void ci_range(struct page *p, double lo, double hi, const char *why) {
  if (isnan(lo) || isnan(hi)) {
    im__html_put(p, "– ");
    im__html_put(p, why);
    return;
  }
  im__html_num(p, lo);
  im__html_put(p, " – ");
  im__html_num(p, hi);
}

#define FP_LABEL 330 /* the labels' column */
#define FP_ROW 26

static void forest_axis(struct page *p, const struct axis *ax, int h) {
  double step = im__html_nice_step(ax->hi - ax->lo, 8);
  for (double v = ceil(ax->lo / step) * step; v <= ax->hi + step * 1e-9; v += step) {
    double q = im__html_ax_map(ax, v, FP_LABEL, IM_HTML_TL_W - IM_HTML_MR);
    char b[32];
    im__html_fmt_tick_step(b, sizeof b, v, step);
    im__html_putf(p,
                  "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
                  "<text class=\"tick tx\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s%s</text>",
                  q, IM_HTML_MT, q, h - IM_HTML_MB, q, h - IM_HTML_MB + 14, v > 0 ? "+" : "", b);
  }
  im__html_putf(p, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", FP_LABEL,
                h - IM_HTML_MB, IM_HTML_TL_W - IM_HTML_MR, h - IM_HTML_MB);
  im__html_putf(p,
                "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">per cent off "
                "the figure's mean (each row on its own scale: value / mean − 1)</text>",
                (FP_LABEL + IM_HTML_TL_W - IM_HTML_MR) / 2, h - 8);
}

/* One row: the label, the CI as a bar with the mean, each run's dot. */
static void forest_row(struct page *p, const struct axis *ax, double y, const char *key,
                       const json_t *f, const json_t *runs) {
  char words[64];
  const char *name = im__html_figure_words(key, words, sizeof words);
  double mu = centre(f), lo = im_json_num(im__html_at(f, "ci95_lo"), NAN),
         hi = im_json_num(im__html_at(f, "ci95_hi"), NAN);
  im__html_putf(p, "<text class=\"label\" x=\"4\" y=\"%.1f\">", y + 4);
  im__html_esc(p, name);
  im__html_putf(p, "</text><text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">",
                FP_LABEL - 8, y + 4);
  im__html_num(p, mu);
  im__html_put(p, " [");
  im__html_num(p, lo);
  im__html_put(p, " – ");
  im__html_num(p, hi);
  im__html_put(p, "]</text>");
  double x0 = im__html_ax_map(ax, rel(lo, mu), FP_LABEL, IM_HTML_TL_W - IM_HTML_MR),
         x1 = im__html_ax_map(ax, rel(hi, mu), FP_LABEL, IM_HTML_TL_W - IM_HTML_MR),
         xm = im__html_ax_map(ax, 0, FP_LABEL, IM_HTML_TL_W - IM_HTML_MR);
  im__html_putf(p, "<line class=\"ci\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"><title>", x0,
                y, x1, y);
  im__html_esc(p, name);
  im__html_putf(p, ": 95%% CI (%s) ",
                strcmp(centre_word(f), "mean") ? "pooled requests" : "of the mean");
  im__html_num(p, lo);
  im__html_put(p, " – ");
  im__html_num(p, hi);
  if (json_is_true(im__html_at(f, "wide"))) {
    im__html_put(p, ", wider than the limit: ");
    im__html_num(p, im_json_num(im__html_at(f, "runs_needed"), NAN));
    im__html_put(p, " runs would bring it within");
  }
  im__html_putf(p,
                "</title></line><rect class=\"mean\" x=\"%.1f\" y=\"%.1f\" width=\"6\" "
                "height=\"6\" transform=\"rotate(45 %.1f %.1f)\"><title>%s ",
                xm - 3, y - 3, xm, y, centre_word(f));
  im__html_num(p, mu);
  im__html_put(p, "</title></rect>");
  double ref = im_json_num(im__html_at(f, "reference"), NAN);
  if (isfinite(ref) && rel(ref, mu) >= ax->lo && rel(ref, mu) <= ax->hi) {
    double xr = im__html_ax_map(ax, rel(ref, mu), FP_LABEL, IM_HTML_TL_W - IM_HTML_MR);
    im__html_putf(p,
                  "<line class=\"mark\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"><title>"
                  "reference ",
                  xr, y - 8, xr, y + 8);
    im__html_num(p, ref);
    im__html_put(p, "</title></line>");
  }
  const json_t *vals = im__html_at(f, "values");
  for (size_t i = 0; i < json_array_size(vals); i++) {
    double v = im_json_num(json_array_get(vals, i), NAN);
    if (!isfinite(v))
      continue;
    double e = im_json_num(im__html_at(json_array_get(runs, i), "exit"), NAN);
    const char *cls = e == 0 ? "run-ok" : isnan(e) ? "run-warn" : "run-fail";
    double xv = im__html_ax_map(ax, fmax(ax->lo, fmin(ax->hi, rel(v, mu))), FP_LABEL,
                                IM_HTML_TL_W - IM_HTML_MR);
    im__html_putf(p, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\"><title>run %zu: ", cls,
                  xv, y + ((double)(i % 3) - 1) * 4, i + 1);
    im__html_num(p, v);
    if (isnan(e))
      im__html_put(p, " (exit status not recorded)");
    else
      im__html_putf(p, " (exit %.0f%s)", e, e == 0 ? ": passed" : "");
    im__html_put(p, "</title></circle>");
  }
}

/* The forest plot: a row per figure with a value; those without are named
 * under it. */
static void forest_plot(struct page *p, const json_t *root) {
  const json_t *figs = im__html_at(root, "figures"), *runs = im__html_at(root, "runs"), *f;
  const char *k;
  double lim = im_json_num(im__html_at(root, "max_ci_width"), NAN) * 50; /* ± half, in % */
  struct axis ax = {-1, 1, false, false};
  size_t rows = 0, dots = 0;
  json_object_foreach((json_t *)figs, k, f) {
    if (!drawn(f))
      continue;
    rows++;
    double mu = centre(f);
    double ends[] = {rel(im_json_num(im__html_at(f, "ci95_lo"), NAN), mu),
                     rel(im_json_num(im__html_at(f, "ci95_hi"), NAN), mu)};
    for (int e = 0; e < 2; e++)
      ax.lo = fmin(ax.lo, ends[e]), ax.hi = fmax(ax.hi, ends[e]);
    dots += json_array_size(im__html_at(f, "values"));
  }
  if (!rows) {
    im__html_empty_chart(p, "Every figure: mean and 95% CI",
                         "no figure has a CI: fewer than 2 runs gave a value");
    return;
  }
  if (isfinite(lim))
    ax.lo = fmin(ax.lo, -lim), ax.hi = fmax(ax.hi, lim);
  double span = fmax(-ax.lo, ax.hi) * 1.1, st = im__html_nice_step(2 * span, 8);
  ax.hi = ceil(span / st) * st, ax.lo = -ax.hi;
  int h = IM_HTML_MT + (int)rows * FP_ROW + IM_HTML_MB;
  p->charts++;
  im__html_putf(p,
                "<figure class=\"chart wide\" data-points=\"%zu\"><figcaption>Every figure: "
                "mean and 95%% CI of the mean, each run a dot</figcaption><div class=\"legend\">"
                "<span><i class=\"c2\"></i>CI-width limit (a CI inside the band is narrow "
                "enough)</span><span>◆ mean, — 95%% CI</span><span><i style=\"background:"
                "var(--pass)\"></i>run passed (exit 0)</span><span><i style=\"background:"
                "var(--fail)\"></i>run failed (exit ≠ 0)</span><span><i class=\"c1\"></i>"
                "reference (--reference)</span></div>",
                rows + dots);
  im__html_putf(p, "<svg viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"forest plot\">",
                IM_HTML_TL_W, h);
  forest_axis(p, &ax, h);
  if (isfinite(lim) && lim > 0) {
    double a = im__html_ax_map(&ax, -lim, FP_LABEL, IM_HTML_TL_W - IM_HTML_MR),
           b = im__html_ax_map(&ax, lim, FP_LABEL, IM_HTML_TL_W - IM_HTML_MR);
    im__html_putf(p,
                  "<rect class=\"limit\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\"><title>"
                  "limit: a CI no wider than %.3g%% of the mean (--max-ci-width), ±%.3g%% "
                  "around it</title></rect>",
                  a, IM_HTML_MT, b - a, h - IM_HTML_MB - IM_HTML_MT, 2 * lim, lim);
    im__html_putf(p, "<text class=\"tick\" x=\"%.1f\" y=\"%d\">limit ±%.3g%%</text>", b + 3,
                  IM_HTML_MT + 10, lim);
  }
  size_t r = 0;
  json_object_foreach((json_t *)figs, k, f) if (drawn(f))
      forest_row(p, &ax, IM_HTML_MT + ((double)r++ + 0.5) * FP_ROW, k, f, runs);
  im__html_put(p, "</svg><details><summary>table</summary><div class=\"tw\"><table><tr><th>figure"
                  "</th><th>estimate (mean, or pooled p90/p99)</th><th>95% CI</th><th>CI width "
                  "(%)</th><th>runs</th>"
                  "<th>each run</th></tr>");
  json_object_foreach((json_t *)figs, k, f) {
    char words[64];
    im__html_put(p, "<tr><td>");
    im__html_esc(p, im__html_figure_words(k, words, sizeof words));
    im__html_put(p, "</td><td>");
    im__html_num(p, centre(f));
    im__html_put(p, "</td><td>");
    ci_range(p, im_json_num(im__html_at(f, "ci95_lo"), NAN),
             im_json_num(im__html_at(f, "ci95_hi"), NAN), "");
    im__html_put(p, "</td><td>");
    im__html_num(p, 100 * im_json_num(im__html_at(f, "ci_width_rel"), NAN));
    im__html_put(p, "</td><td>");
    im__html_num(p, im_json_num(im__html_at(f, "n"), NAN));
    im__html_put(p, "</td><td>");
    const json_t *vals = im__html_at(f, "values");
    for (size_t i = 0; i < json_array_size(vals); i++) {
      im__html_put(p, i ? ", " : "");
      im__html_num(p, im_json_num(json_array_get(vals, i), NAN));
    }
    im__html_put(p, "</td></tr>");
  }
  im__html_put(p, "</table></div></details></figure>");
}

/* A tile of a repeated figure: the mean and its 95 % CI. */
static void ci_tile(struct page *p, const char *key, const json_t *f) {
  char words[64];
  im__html_put(p, "<div class=\"tile\"><div class=\"v\">");
  im__html_num(p, im_json_num(im__html_at(f, "mean"), NAN));
  im__html_put(p, "</div><div class=\"k\">");
  im__html_esc(p, im__html_figure_words(key, words, sizeof words));
  im__html_put(p, ", mean of ");
  im__html_num(p, im_json_num(im__html_at(f, "n"), NAN));
  im__html_put(p, " runs<br>95% CI ");
  ci_range(p, im_json_num(im__html_at(f, "ci95_lo"), NAN),
           im_json_num(im__html_at(f, "ci95_hi"), NAN), "(fewer than 2 runs with a value)");
  im__html_put(p, "</div></div>");
}

static void pooled_tiles(struct page *p, const json_t *pool) {
  im__html_put(p, "<h2>Latency percentiles over every request of every run (95% CI, "
                  "distribution-free)</h2><div class=\"tiles\">");
  static const char *const m[] = {"ttft", "tpot", "itl", "e2el"}, *const q[] = {"p50", "p99"};
  for (size_t i = 0; i < 4; i++)
    for (size_t j = 0; j < 2; j++) {
      char ci[16], key[32], words[64];
      snprintf(ci, sizeof ci, "%s_ci", q[j]);
      snprintf(key, sizeof key, "%s_%s_ms", m[i], q[j]);
      const json_t *d = im__html_at(pool, m[i]), *c = im__html_at(d, ci);
      im__html_put(p, "<div class=\"tile\"><div class=\"v\">");
      im__html_num(p, im_json_num(im__html_at(d, q[j]), NAN));
      im__html_put(p, " <small>ms</small></div><div class=\"k\">");
      im__html_esc(p, im__html_figure_words(key, words, sizeof words));
      im__html_put(p, "<br>95% CI ");
      ci_range(p, im_json_num(im__html_at(c, "lo"), NAN), im_json_num(im__html_at(c, "hi"), NAN),
               "(too few values)");
      im__html_put(p, "</div></div>");
    }
  im__html_put(p, "</div>");
}

void im__html_repeat_section(struct page *p, const json_t *root) {
  const json_t *figs = im__html_at(root, "figures"), *f;
  const char *k;
  im__html_put(p,
               "<h2>Headline (mean over the runs, 95% CI of the mean)</h2><div class=\"tiles\">");
  size_t absent = 0;
  json_object_foreach((json_t *)figs, k, f) {
    if (im_json_num(im__html_at(f, "n"), 0) > 0)
      ci_tile(p, k, f);
    else
      absent++;
  }
  im__html_put(p, "</div>");
  if (absent) { /* goodput and SLO attainment without an SLO: no card, a line */
    im__html_put(p, "<p class=\"meta\" id=\"not-shown\">not shown, no run gave a value: ");
    size_t i = 0;
    json_object_foreach((json_t *)figs, k, f) {
      if (im_json_num(im__html_at(f, "n"), 0) > 0)
        continue;
      char words[64];
      im__html_put(p, i++ ? ", " : "");
      im__html_esc(p, im__html_figure_words(k, words, sizeof words));
    }
    im__html_put(p, " (goodput and SLO attainment need an SLO: --slo)</p>");
  }
  if (im__html_at(root, "pooled_ms"))
    pooled_tiles(p, im__html_at(root, "pooled_ms"));
  im__html_put(p, "<h2>Repeated runs</h2><div class=\"charts\">");
  forest_plot(p, root);
  im__html_put(p, "</div>");
}
