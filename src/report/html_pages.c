/* The routing page (`analyze-routing --html`) and the compare page
 * (`compare --html`): see report/html.h. Drawn with report/html_int.h's
 * helpers, in the run report's style. */
#include "report/html.h"
#include "record/json_get.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/html_int.h"

/* ---- the routing page (analyze-routing --html) ---------------------------- */

#define HM_ROWS 64  /* expert rows at most (neighbouring ids merged) */
#define HM_COLS 128 /* time columns at most (neighbouring points merged) */

/* The expert x time heat map of an analyze-routing document: each cell
 * the load of its experts relative to a uniform spread (share x experts),
 * coloured on a log scale. */
static void heat_map(struct page *p, const json_t *doc) {
  const json_t *ser = im__html_at(doc, "series");
  size_t np = json_array_size(ser), ne = (size_t)im_json_num(im__html_at(doc, "n_experts"), NAN);
  const char *title = "Expert × time heat map (load relative to uniform, all layers)";
  if (!np || !(ne > 0) || ne > 1u << 20) {
    im__html_empty_chart(p, title, "not collected: no step counts in the trace");
    return;
  }
  size_t rows = ne < HM_ROWS ? ne : HM_ROWS, g = (ne + rows - 1) / rows;
  rows = (ne + g - 1) / g;
  size_t cols = np < HM_COLS ? np : HM_COLS, k = (np + cols - 1) / cols;
  cols = (np + k - 1) / k;
  double *v = calloc(rows * cols, sizeof *v);
  if (!v) {
    p->err = IM_NOMEM;
    return;
  }
  double vmax = 0;
  for (size_t c = 0; c < cols; c++)
    for (size_t r = 0; r < rows; r++) {
      double sum = 0;
      size_t n = 0;
      for (size_t i = c * k; i < np && i < (c + 1) * k; i++) {
        const json_t *sh = im__html_at(json_array_get(ser, i), "expert_share");
        for (size_t e = r * g; e < ne && e < (r + 1) * g; e++, n++)
          sum += isfinite(im_json_num(json_array_get(sh, e), NAN)) ? im_json_num(json_array_get(sh, e), NAN) : 0;
      }
      v[c * rows + r] = n ? sum / (double)n * (double)ne : 0;
      vmax = fmax(vmax, v[c * rows + r]);
    }
  double s0 = im_json_num(im__html_at(json_array_get(ser, 0), "first_step"), NAN);
  const json_t *last = json_array_get(ser, np - 1);
  double s1 = im_json_num(im__html_at(last, "first_step"), NAN) + im_json_num(im__html_at(last, "steps"), NAN);
  struct axis ax = {s0, s1 > s0 ? s1 : s0 + 1, false, false};
  /* Diverging around uniform: red above it, blue below, full colour at the
   * furthest cell's ratio (either way, at least 1.1). */
  double vmin = vmax;
  for (size_t i = 0; i < rows * cols; i++)
    if (v[i] > 0)
      vmin = fmin(vmin, v[i]);
  double span = fmax(log(1.1), fmax(log(vmax > 0 ? vmax : 1), -log(vmin > 0 ? vmin : 1)));
  int cell = 4, h = IM_HTML_MT + (int)rows * cell + IM_HTML_MB;
  p->charts++;
  im__html_putf(p, "<figure class=\"chart wide\" data-points=\"%zu\"><figcaption>", rows * cols);
  im__html_esc(p, title);
  im__html_put(p, "</figcaption><div class=\"legend\"><span><i class=\"c1\"></i>more</span><span><i "
         "class=\"c0\"></i>fewer tokens than a uniform spread would route to the experts of a "
         "row over a column's steps; full colour at ");
  im__html_num(p, exp(span));
  im__html_put(p, "× or 1/");
  im__html_num(p, exp(span));
  im__html_putf(p, " (log scale; white: uniform) · %zu expert(s) a row, %zu point(s) a column</span>"
          "</div>", g, k);
  im__html_putf(p, "<svg viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", IM_HTML_TL_W, h);
  im__html_esc(p, title);
  im__html_put(p, "\">");
  double step = im__html_nice_step(ax.hi - ax.lo, 8);
  for (double t = ceil(ax.lo / step) * step; t <= ax.hi + step * 1e-9; t += step) {
    char b[32];
    im__html_fmt_tick(b, sizeof b, t);
    im__html_putf(p, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>",
         im__html_ax_map(&ax, t, IM_HTML_ML, IM_HTML_TL_W - IM_HTML_MR), h - IM_HTML_MB + 14, b);
  }
  for (size_t r = 0; r < rows; r += rows > 16 ? rows / 8 : 1)
    im__html_putf(p, "<text class=\"tick\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%zu</text>", IM_HTML_ML - 4,
         IM_HTML_MT + (int)r * cell + cell + 3, r * g);
  im__html_put(p, "<g shape-rendering=\"crispEdges\">");
  for (size_t c = 0; c < cols; c++) {
    const json_t *a = json_array_get(ser, c * k), *b = json_array_get(ser, (c + 1) * k - 1);
    if (!b)
      b = last;
    double x0 = im__html_ax_map(&ax, im_json_num(im__html_at(a, "first_step"), NAN), IM_HTML_ML, IM_HTML_TL_W - IM_HTML_MR),
           x1 = im__html_ax_map(&ax, im_json_num(im__html_at(b, "first_step"), NAN) + im_json_num(im__html_at(b, "steps"), NAN), IM_HTML_ML, IM_HTML_TL_W - IM_HTML_MR);
    for (size_t r = 0; r < rows; r++) {
      double x = v[c * rows + r], t = x > 0 ? log(x) / span : -1;
      im__html_putf(p, "<rect class=\"%s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
              "fill-opacity=\"%.2f\" stroke=\"none\"/>",
           t >= 0 ? "c1" : "c0", x0, IM_HTML_MT + (int)r * cell, fmax(x1 - x0, 0.5), cell,
           fmin(fabs(t), 1));
    }
  }
  im__html_put(p, "</g>");
  im__html_putf(p, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", IM_HTML_ML, h - IM_HTML_MB, IM_HTML_TL_W - IM_HTML_MR,
       h - IM_HTML_MB);
  im__html_putf(p, "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">engine step</text>"
          "<text class=\"label\" transform=\"translate(14,%d) rotate(-90)\" "
          "text-anchor=\"middle\">expert id</text></svg>",
       (IM_HTML_ML + IM_HTML_TL_W - IM_HTML_MR) / 2, h - 8, (IM_HTML_MT + h - IM_HTML_MB) / 2);
  im__html_put(p, "<details><summary>table</summary><div class=\"tw\"><table><tr><th>experts</th>"
         "<th>mean load (× uniform)</th><th>max load over time (× uniform)</th></tr>");
  for (size_t r = 0; r < rows; r++) {
    double sum = 0, mx = 0;
    for (size_t c = 0; c < cols; c++)
      sum += v[c * rows + r], mx = fmax(mx, v[c * rows + r]);
    im__html_putf(p, "<tr><td>%zu–%zu</td><td>", r * g, (r + 1) * g < ne ? (r + 1) * g - 1 : ne - 1);
    im__html_num(p, sum / (double)cols);
    im__html_put(p, "</td><td>");
    im__html_num(p, mx);
    im__html_put(p, "</td></tr>");
  }
  im__html_put(p, "</table></div></details></figure>");
  free(v);
}

/* A series of key of each element of arr against x_key (NULL: the index). */
static void obj_series(struct chart *c, const char *name, const json_t *arr, const char *x_key,
                       const char *key, double scale) {
  size_t n = json_array_size(arr);
  struct series *s = n ? im__html_add_series(c, name, n) : NULL;
  for (size_t i = 0; s && i < n; i++) {
    const json_t *e = json_array_get(arr, i);
    im__html_push_pt(s, x_key ? im_json_num(im__html_at(e, x_key), NAN) : (double)i, im_json_num(im__html_at(e, key), NAN) * scale);
  }
}

enum im_err im_html_routing(const json_t *doc, const char *title, struct im_buf *out) {
  if (!json_is_object(doc))
    return IM_INVAL;
  struct page pg = {.b = out}, *p = &pg;
  im__html_page_head(p, title);
  im__html_put(p, "<h1>infermeter routing report: ");
  im__html_esc(p, title);
  im__html_put(p, "</h1><p class=\"meta\">");
  im__html_putf(p, "<b>%.0f</b> engine steps, <b>%.0f</b> tokens of <b>%.0f</b> sequences · <b>%.0f</b> "
          "MoE layers × <b>%.0f</b> experts, top-<b>%.0f</b><br>jitter of the top-1 expert <b>",
       im_json_num(im__html_at(doc, "steps"), NAN), im_json_num(im__html_at(doc, "tokens"), NAN), im_json_num(im__html_at(doc, "sequences"), NAN),
       im_json_num(im__html_at(doc, "n_layers"), NAN), im_json_num(im__html_at(doc, "n_experts"), NAN), im_json_num(im__html_at(doc, "top_k"), NAN));
  static const char *const figs[][2] = {
      {"", "jitter"},
      {"</b> · Jaccard distance of consecutive top-k sets <b>", "jaccard_distance"},
      {"</b> · load over the trace: G1 skewness <b>", "g1_total_mean"},
      {"</b>, balancedness (mean/max) <b>", "balancedness_total_mean"},
      {"</b> (reference ", "balancedness_ref"}};
  im__html_put_figs(p, doc, figs, sizeof figs / sizeof figs[0]);
  im__html_put(p, "; means over layers, docs/deepseek.md)</p><h2>Expert load over time</h2>"
         "<div class=\"charts\">");
  heat_map(p, doc);
  const json_t *ser = im__html_at(doc, "series"), *layers = im__html_at(doc, "layers");
  struct chart t = {.title = "Load balance over time", .xlabel = "engine step",
                    .ylabel = "balancedness (mean/max) · G1 / 10",
                    .why_empty = "not collected: no step counts in the trace", .mark_x = NAN};
  obj_series(&t, "balancedness, mean over layers", ser, "first_step", "balancedness_mean", 1);
  obj_series(&t, "balancedness, worst layer-step", ser, "first_step", "balancedness_min", 1);
  obj_series(&t, "G1 skewness / 10", ser, "first_step", "g1_mean", 0.1);
  im__html_line_chart(p, &t);
  im__html_series_free(&t);
  im__html_put(p, "</div><h2>Per layer</h2><div class=\"charts\">");
  struct chart l = {.title = "Load skew per MoE layer (whole trace)", .xlabel = "MoE layer",
                    .ylabel = "balancedness (mean/max) · G1 / 10",
                    .why_empty = "not collected: no step counts in the trace", .intx = true,
                    .mark_x = NAN};
  obj_series(&l, "balancedness", layers, "layer", "balancedness_total", 1);
  obj_series(&l, "G1 skewness / 10", layers, "layer", "g1_total", 0.1);
  im__html_line_chart(p, &l);
  im__html_series_free(&l);
  struct chart j = {.title = "Routing jitter per MoE layer", .xlabel = "MoE layer",
                    .ylabel = "share of consecutive tokens",
                    .why_empty = "not collected: no per-token expert ids (serve "
                                 "--routing-detail N)",
                    .intx = true, .mark_x = NAN};
  obj_series(&j, "top-1 expert changed (jitter)", layers, "layer", "jitter", 1);
  obj_series(&j, "Jaccard distance of top-k sets", layers, "layer", "jaccard_distance", 1);
  im__html_line_chart(p, &j);
  im__html_series_free(&j);
  im__html_putf(p, "</div><p class=\"meta\">%u charts · generated by infermeter analyze-routing; every "
          "figure is defined in docs/deepseek.md and docs/metrics.md §8</p></body></html>\n",
       p->charts);
  return pg.err;
}

/* ---- the compare page (compare --html) ------------------------------------ */

#define FP_ROW 20

/* The ratios B/A of every figure of one stage with their 95 % CIs, the
 * noise band shaded around 1 (a forest plot). */
static void ratio_chart(struct page *p, const json_t *figs, double noise) {
  const char *title = "Ratio B/A per figure, with its 95% CI";
  size_t n = 0;
  double lo = 1 - noise, hi = 1 + noise;
  const char *k;
  const json_t *f;
  json_object_foreach((json_t *)figs, k, f) {
    double r = im_json_num(im__html_at(f, "ratio"), NAN), a = im_json_num(im__html_at(f, "ci_lo"), NAN), b = im_json_num(im__html_at(f, "ci_hi"), NAN);
    if (!isfinite(r))
      continue;
    n++;
    lo = fmin(lo, fmin(r, isfinite(a) ? a : r));
    hi = fmax(hi, fmax(r, isfinite(b) ? b : r));
  }
  if (!n) {
    im__html_empty_chart(p, title, "no figure has a value on both sides");
    return;
  }
  size_t rows = json_object_size(figs);
  double pad = (hi - lo) * 0.05;
  struct axis ax = {lo - pad, hi + pad, false, false};
  int ml = 150, h = IM_HTML_MT + (int)rows * FP_ROW + IM_HTML_MB;
  p->charts++;
  im__html_putf(p, "<figure class=\"chart wide\" data-points=\"%zu\"><figcaption>", n);
  im__html_esc(p, title);
  im__html_put(p, "</figcaption><div class=\"legend\"><span><i class=\"c2\"></i>improved</span><span><i "
         "class=\"c1\"></i>regressed</span><span><i class=\"c0\"></i>no change called</span>"
         "<span>shaded: the noise band ±");
  im__html_num(p, noise * 100);
  im__html_put(p, "%; dashed: 1 (no difference)</span></div>");
  im__html_putf(p, "<svg viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", IM_HTML_TL_W, h);
  im__html_esc(p, title);
  im__html_put(p, "\">");
  double step = im__html_nice_step(ax.hi - ax.lo, 10);
  for (double v = ceil(ax.lo / step) * step; v <= ax.hi + step * 1e-9; v += step) {
    double q = im__html_ax_map(&ax, v, ml, IM_HTML_TL_W - IM_HTML_MR);
    char b[32];
    im__html_fmt_tick(b, sizeof b, fabs(v) < step * 1e-9 ? 0 : v);
    im__html_putf(p, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
            "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>",
         q, IM_HTML_MT, q, h - IM_HTML_MB, q, h - IM_HTML_MB + 14, b);
  }
  double x0 = im__html_ax_map(&ax, 1 - noise, ml, IM_HTML_TL_W - IM_HTML_MR), x1 = im__html_ax_map(&ax, 1 + noise, ml, IM_HTML_TL_W - IM_HTML_MR);
  im__html_putf(p, "<rect class=\"shade\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\"/>", x0, IM_HTML_MT,
       x1 - x0, h - IM_HTML_MB - IM_HTML_MT);
  double one = im__html_ax_map(&ax, 1, ml, IM_HTML_TL_W - IM_HTML_MR);
  im__html_putf(p, "<line class=\"mark\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", one, IM_HTML_MT, one,
       h - IM_HTML_MB);
  size_t i = 0;
  json_object_foreach((json_t *)figs, k, f) {
    double y = IM_HTML_MT + (double)i++ * FP_ROW + FP_ROW / 2.0;
    im__html_putf(p, "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", ml - 6, y + 4);
    im__html_esc(p, k);
    im__html_put(p, "</text>");
    double r = im_json_num(im__html_at(f, "ratio"), NAN), a = im_json_num(im__html_at(f, "ci_lo"), NAN), b = im_json_num(im__html_at(f, "ci_hi"), NAN);
    if (!isfinite(r))
      continue;
    const char *v = im_json_str(im__html_at(f, "verdict"), "");
    const char *cls = !strcmp(v, "improved") ? "c2" : !strcmp(v, "regressed") ? "c1" : "c0";
    if (isfinite(a) && isfinite(b))
      im__html_putf(p, "<line class=\"line %s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", cls,
           im__html_ax_map(&ax, a, ml, IM_HTML_TL_W - IM_HTML_MR), y, im__html_ax_map(&ax, b, ml, IM_HTML_TL_W - IM_HTML_MR), y);
    im__html_putf(p, "<circle class=\"pt %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>", cls,
         im__html_ax_map(&ax, r, ml, IM_HTML_TL_W - IM_HTML_MR), y);
    im__html_esc(p, k);
    im__html_put(p, ": B/A ");
    im__html_num(p, r);
    im__html_put(p, ", CI ");
    im__html_num(p, a);
    im__html_put(p, " – ");
    im__html_num(p, b);
    im__html_put(p, ", ");
    im__html_esc(p, v);
    im__html_put(p, "</title></circle>");
  }
  im__html_putf(p, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", ml, h - IM_HTML_MB, IM_HTML_TL_W - IM_HTML_MR,
       h - IM_HTML_MB);
  im__html_putf(p, "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">ratio B/A of the "
          "geometric means (1: no difference)</text></svg>",
       (ml + IM_HTML_TL_W - IM_HTML_MR) / 2, h - 8);
  im__html_put(p, "<details><summary>table</summary><div class=\"tw\"><table><tr><th>figure</th><th>"
         "B/A</th><th>CI low</th><th>CI high</th></tr>");
  json_object_foreach((json_t *)figs, k, f) {
    im__html_put(p, "<tr><td>");
    im__html_esc(p, k);
    im__html_put(p, "</td><td>");
    im__html_num(p, im_json_num(im__html_at(f, "ratio"), NAN));
    im__html_put(p, "</td><td>");
    im__html_num(p, im_json_num(im__html_at(f, "ci_lo"), NAN));
    im__html_put(p, "</td><td>");
    im__html_num(p, im_json_num(im__html_at(f, "ci_hi"), NAN));
    im__html_put(p, "</td></tr>");
  }
  im__html_put(p, "</table></div></details></figure>");
}

/* The compare table of one stage: what `compare` prints. */
static void compare_table(struct page *p, const json_t *figs) {
  im__html_put(p, "<div class=\"ct\"><table><tr><th>figure</th><th>unit</th><th>better</th>"
         "<th>A (mean)</th><th>B (mean)</th><th>B/A</th><th>95% CI</th><th>p</th>"
         "<th>runs A / B</th><th>verdict</th></tr>");
  const char *k;
  const json_t *f;
  json_object_foreach((json_t *)figs, k, f) {
    im__html_put(p, "<tr><td>");
    im__html_esc(p, k);
    im__html_put(p, "</td><td>");
    im__html_esc(p, im_json_str(im__html_at(f, "unit"), ""));
    im__html_put(p, "</td><td>");
    im__html_esc(p, im_json_str(im__html_at(f, "better"), ""));
    static const char *const cells[][2] = {
        {"</td><td>", "mean_a"}, {"</td><td>", "mean_b"}, {"</td><td>", "ratio"},
        {"</td><td>", "ci_lo"},  {" – ", "ci_hi"},        {"</td><td>", "p"},
        {"</td><td>", "n_a"},    {" / ", "n_b"}};
    im__html_put_figs(p, f, cells, sizeof cells / sizeof cells[0]);
    const char *v = im_json_str(im__html_at(f, "verdict"), "?");
    im__html_put(p, "</td><td><span class=\"verdict ");
    im__html_put(p, !strcmp(v, "improved") ? "PASS" : !strcmp(v, "regressed") ? "FAIL" : "NONE");
    im__html_put(p, "\">");
    im__html_esc(p, v);
    im__html_put(p, "</span>");
    const char *why = im_json_str(im__html_at(f, "why"), NULL);
    if (why) {
      im__html_put(p, " <span class=\"fix\">");
      im__html_esc(p, why);
      im__html_put(p, "</span>");
    }
    im__html_put(p, "</td></tr>");
  }
  im__html_put(p, "</table></div>");
}

/* Each figure's runs of A and B as dots, with each side's mean. */
static void compare_dots(struct page *p, const json_t *figs) {
  const char *k;
  const json_t *f;
  json_object_foreach((json_t *)figs, k, f) {
    const json_t *va = im__html_at(f, "values_a"), *vb = im__html_at(f, "values_b");
    size_t na = json_array_size(va), nb = json_array_size(vb), n = na > nb ? na : nb;
    char ylabel[96];
    snprintf(ylabel, sizeof ylabel, "%s%s%s%s", k, *im_json_str(im__html_at(f, "unit"), "") ? " (" : "",
             im_json_str(im__html_at(f, "unit"), ""), *im_json_str(im__html_at(f, "unit"), "") ? ")" : "");
    struct chart c = {.title = k, .xlabel = "run", .ylabel = ylabel, .intx = true,
                      .why_empty = va ? "no run gave a value"
                                      : "not collected: the comparison has no per-run values",
                      .mark_x = NAN};
    const json_t *side[2] = {va, vb};
    const char *names[2] = {"A runs", "B runs"}, *means[2] = {"A mean", "B mean"},
               *keys[2] = {"mean_a", "mean_b"};
    for (int sd = 0; sd < 2; sd++) {
      size_t m = json_array_size(side[sd]);
      struct series *s = m ? im__html_add_series(&c, names[sd], m) : NULL;
      if (s)
        s->dots = true, s->colour = 1 + sd;
      for (size_t i = 0; s && i < m; i++)
        im__html_push_pt(s, (double)(i + 1), im_json_num(json_array_get(side[sd], i), NAN));
    }
    for (int sd = 0; sd < 2 && n; sd++) {
      struct series *s = im__html_add_series(&c, means[sd], 2);
      if (s)
        s->colour = 1 + sd;
      for (int e = 0; s && e < 2; e++)
        im__html_push_pt(s, e ? (double)n : 1.0, im_json_num(im__html_at(f, keys[sd]), NAN));
    }
    im__html_line_chart(p, &c);
    im__html_series_free(&c);
  }
}

static void compare_one(struct page *p, const json_t *cmp) {
  im__html_put(p, "<p class=\"meta\">A (baseline) <b>");
  im__html_esc(p, im_json_str(im__html_path(cmp, "a", "label"), "?"));
  im__html_putf(p, "</b>: %zu run(s) · B <b>", json_array_size(im__html_path(cmp, "a", "runs")));
  im__html_esc(p, im_json_str(im__html_path(cmp, "b", "label"), "?"));
  im__html_putf(p, "</b>: %zu run(s) · noise band ±", json_array_size(im__html_path(cmp, "b", "runs")));
  im__html_num(p, im_json_num(im__html_at(cmp, "noise"), NAN) * 100);
  im__html_put(p, "% · α ");
  im__html_num(p, im_json_num(im__html_at(cmp, "alpha"), NAN));
  im__html_put(p, " · a change is called with at least ");
  im__html_num(p, im_json_num(im__html_at(cmp, "min_runs"), NAN));
  im__html_put(p, " runs a side, p &lt; α and the whole CI outside the noise band "
         "(docs/statistics.md)</p>");
  const char *diff = im_json_str(im__html_at(cmp, "differences"), "");
  if (*diff) {
    im__html_put(p, "<p><span class=\"verdict WARN\">WARN</span> compared with --force although the "
           "configurations differ: ");
    im__html_esc(p, diff);
    im__html_put(p, "</p>");
  }
  im__html_put(p, "<p>");
  im__html_verdict_badge(p, json_is_true(im__html_at(cmp, "regressed")) ? "FAIL" : "PASS");
  im__html_put(p, json_is_true(im__html_at(cmp, "regressed")) ? " some figure regressed" : " no figure regressed");
  im__html_put(p, json_is_true(im__html_at(cmp, "improved")) ? "; some improved</p>" : "; none improved</p>");
  size_t i;
  const json_t *st;
  size_t ns = json_array_size(im__html_at(cmp, "stages"));
  json_array_foreach(im__html_at(cmp, "stages"), i, st) {
    const json_t *figs = im__html_at(st, "figures");
    if (ns > 1) {
      im__html_put(p, "<h3>stage ");
      im__html_esc(p, im_json_str(im__html_at(st, "label"), "?"));
      im__html_put(p, "</h3>");
    }
    compare_table(p, figs);
    im__html_put(p, "<div class=\"charts\">");
    ratio_chart(p, figs, im_json_num(im__html_at(cmp, "noise"), NAN));
    compare_dots(p, figs);
    im__html_put(p, "</div>");
  }
}

enum im_err im_html_compare(const json_t *doc, const char *title, struct im_buf *out) {
  if (!json_is_object(doc) && !json_is_array(doc))
    return IM_INVAL;
  struct page pg = {.b = out}, *p = &pg;
  im__html_page_head(p, title);
  im__html_put(p, "<h1>infermeter compare: ");
  im__html_esc(p, title);
  im__html_put(p, "</h1>");
  if (json_is_object(doc)) {
    compare_one(p, doc);
  } else {
    size_t i;
    const json_t *c;
    json_array_foreach(doc, i, c) {
      im__html_put(p, "<h2>");
      im__html_esc(p, im_json_str(im__html_path(c, "b", "label"), "?"));
      im__html_put(p, " against ");
      im__html_esc(p, im_json_str(im__html_path(c, "a", "label"), "?"));
      im__html_put(p, "</h2>");
      compare_one(p, c);
    }
  }
  im__html_putf(p, "<p class=\"meta\">%u charts · generated by infermeter compare; the formulas are in "
          "docs/statistics.md</p></body></html>\n",
       p->charts);
  return pg.err;
}

