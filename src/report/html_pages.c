/* The routing page (`analyze-routing --html`) and the compare page
 * (`compare --html`): see report/html.h. Drawn with report/html_int.h's
 * helpers, in the run report's style. */
#include "report/html.h"

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
  const json_t *ser = at(doc, "series");
  size_t np = json_array_size(ser), ne = (size_t)jnum(at(doc, "n_experts"));
  const char *title = "Expert × time heat map (load relative to uniform, all layers)";
  if (!np || !(ne > 0) || ne > 1u << 20) {
    empty_chart(p, title, "not collected: no step counts in the trace");
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
        const json_t *sh = at(json_array_get(ser, i), "expert_share");
        for (size_t e = r * g; e < ne && e < (r + 1) * g; e++, n++)
          sum += isfinite(jnum(json_array_get(sh, e))) ? jnum(json_array_get(sh, e)) : 0;
      }
      v[c * rows + r] = n ? sum / (double)n * (double)ne : 0;
      vmax = fmax(vmax, v[c * rows + r]);
    }
  double s0 = jnum(at(json_array_get(ser, 0), "first_step"));
  const json_t *last = json_array_get(ser, np - 1);
  double s1 = jnum(at(last, "first_step")) + jnum(at(last, "steps"));
  struct axis ax = {s0, s1 > s0 ? s1 : s0 + 1, false, false};
  /* Diverging around uniform: red above it, blue below, full colour at the
   * furthest cell's ratio (either way, at least 1.1). */
  double vmin = vmax;
  for (size_t i = 0; i < rows * cols; i++)
    if (v[i] > 0)
      vmin = fmin(vmin, v[i]);
  double span = fmax(log(1.1), fmax(log(vmax > 0 ? vmax : 1), -log(vmin > 0 ? vmin : 1)));
  int cell = 4, h = MT + (int)rows * cell + MB;
  p->charts++;
  putf(p, "<figure class=\"chart wide\" data-points=\"%zu\"><figcaption>", rows * cols);
  esc(p, title);
  put(p, "</figcaption><div class=\"legend\"><span><i class=\"c1\"></i>more</span><span><i "
         "class=\"c0\"></i>fewer tokens than a uniform spread would route to the experts of a "
         "row over a column's steps; full colour at ");
  num(p, exp(span));
  put(p, "× or 1/");
  num(p, exp(span));
  putf(p, " (log scale; white: uniform) · %zu expert(s) a row, %zu point(s) a column</span>"
          "</div>", g, k);
  putf(p, "<svg viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", TL_W, h);
  esc(p, title);
  put(p, "\">");
  double step = nice_step(ax.hi - ax.lo, 8);
  for (double t = ceil(ax.lo / step) * step; t <= ax.hi + step * 1e-9; t += step) {
    char b[32];
    fmt_tick(b, sizeof b, t);
    putf(p, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>",
         ax_map(&ax, t, ML, TL_W - MR), h - MB + 14, b);
  }
  for (size_t r = 0; r < rows; r += rows > 16 ? rows / 8 : 1)
    putf(p, "<text class=\"tick\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%zu</text>", ML - 4,
         MT + (int)r * cell + cell + 3, r * g);
  put(p, "<g shape-rendering=\"crispEdges\">");
  for (size_t c = 0; c < cols; c++) {
    const json_t *a = json_array_get(ser, c * k), *b = json_array_get(ser, (c + 1) * k - 1);
    if (!b)
      b = last;
    double x0 = ax_map(&ax, jnum(at(a, "first_step")), ML, TL_W - MR),
           x1 = ax_map(&ax, jnum(at(b, "first_step")) + jnum(at(b, "steps")), ML, TL_W - MR);
    for (size_t r = 0; r < rows; r++) {
      double x = v[c * rows + r], t = x > 0 ? log(x) / span : -1;
      putf(p, "<rect class=\"%s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
              "fill-opacity=\"%.2f\" stroke=\"none\"/>",
           t >= 0 ? "c1" : "c0", x0, MT + (int)r * cell, fmax(x1 - x0, 0.5), cell,
           fmin(fabs(t), 1));
    }
  }
  put(p, "</g>");
  putf(p, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", ML, h - MB, TL_W - MR,
       h - MB);
  putf(p, "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">engine step</text>"
          "<text class=\"label\" transform=\"translate(14,%d) rotate(-90)\" "
          "text-anchor=\"middle\">expert id</text></svg>",
       (ML + TL_W - MR) / 2, h - 8, (MT + h - MB) / 2);
  put(p, "<details><summary>table</summary><div class=\"tw\"><table><tr><th>experts</th>"
         "<th>mean load (× uniform)</th><th>max load over time (× uniform)</th></tr>");
  for (size_t r = 0; r < rows; r++) {
    double sum = 0, mx = 0;
    for (size_t c = 0; c < cols; c++)
      sum += v[c * rows + r], mx = fmax(mx, v[c * rows + r]);
    putf(p, "<tr><td>%zu–%zu</td><td>", r * g, (r + 1) * g < ne ? (r + 1) * g - 1 : ne - 1);
    num(p, sum / (double)cols);
    put(p, "</td><td>");
    num(p, mx);
    put(p, "</td></tr>");
  }
  put(p, "</table></div></details></figure>");
  free(v);
}

/* A series of key of each element of arr against x_key (NULL: the index). */
static void obj_series(struct chart *c, const char *name, const json_t *arr, const char *x_key,
                       const char *key, double scale) {
  size_t n = json_array_size(arr);
  struct series *s = n ? add_series(c, name, n) : NULL;
  for (size_t i = 0; s && i < n; i++) {
    const json_t *e = json_array_get(arr, i);
    push_pt(s, x_key ? jnum(at(e, x_key)) : (double)i, jnum(at(e, key)) * scale);
  }
}

enum im_err im_html_routing(const json_t *doc, const char *title, struct im_buf *out) {
  if (!json_is_object(doc))
    return IM_INVAL;
  struct page pg = {.b = out}, *p = &pg;
  page_head(p, title);
  put(p, "<h1>infermeter routing report: ");
  esc(p, title);
  put(p, "</h1><p class=\"meta\">");
  putf(p, "<b>%.0f</b> engine steps, <b>%.0f</b> tokens of <b>%.0f</b> sequences · <b>%.0f</b> "
          "MoE layers × <b>%.0f</b> experts, top-<b>%.0f</b><br>jitter of the top-1 expert <b>",
       jnum(at(doc, "steps")), jnum(at(doc, "tokens")), jnum(at(doc, "sequences")),
       jnum(at(doc, "n_layers")), jnum(at(doc, "n_experts")), jnum(at(doc, "top_k")));
  static const char *const figs[][2] = {
      {"", "jitter"},
      {"</b> · Jaccard distance of consecutive top-k sets <b>", "jaccard_distance"},
      {"</b> · load over the trace: G1 skewness <b>", "g1_total_mean"},
      {"</b>, balancedness (mean/max) <b>", "balancedness_total_mean"},
      {"</b> (reference ", "balancedness_ref"}};
  put_figs(p, doc, figs, sizeof figs / sizeof figs[0]);
  put(p, "; means over layers, docs/deepseek.md)</p><h2>Expert load over time</h2>"
         "<div class=\"charts\">");
  heat_map(p, doc);
  const json_t *ser = at(doc, "series"), *layers = at(doc, "layers");
  struct chart t = {.title = "Load balance over time", .xlabel = "engine step",
                    .ylabel = "balancedness (mean/max) · G1 / 10",
                    .why_empty = "not collected: no step counts in the trace", .mark_x = NAN};
  obj_series(&t, "balancedness, mean over layers", ser, "first_step", "balancedness_mean", 1);
  obj_series(&t, "balancedness, worst layer-step", ser, "first_step", "balancedness_min", 1);
  obj_series(&t, "G1 skewness / 10", ser, "first_step", "g1_mean", 0.1);
  line_chart(p, &t);
  series_free(&t);
  put(p, "</div><h2>Per layer</h2><div class=\"charts\">");
  struct chart l = {.title = "Load skew per MoE layer (whole trace)", .xlabel = "MoE layer",
                    .ylabel = "balancedness (mean/max) · G1 / 10",
                    .why_empty = "not collected: no step counts in the trace", .intx = true,
                    .mark_x = NAN};
  obj_series(&l, "balancedness", layers, "layer", "balancedness_total", 1);
  obj_series(&l, "G1 skewness / 10", layers, "layer", "g1_total", 0.1);
  line_chart(p, &l);
  series_free(&l);
  struct chart j = {.title = "Routing jitter per MoE layer", .xlabel = "MoE layer",
                    .ylabel = "share of consecutive tokens",
                    .why_empty = "not collected: no per-token expert ids (serve "
                                 "--routing-detail N)",
                    .intx = true, .mark_x = NAN};
  obj_series(&j, "top-1 expert changed (jitter)", layers, "layer", "jitter", 1);
  obj_series(&j, "Jaccard distance of top-k sets", layers, "layer", "jaccard_distance", 1);
  line_chart(p, &j);
  series_free(&j);
  putf(p, "</div><p class=\"meta\">%u charts · generated by infermeter analyze-routing; every "
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
    double r = jnum(at(f, "ratio")), a = jnum(at(f, "ci_lo")), b = jnum(at(f, "ci_hi"));
    if (!isfinite(r))
      continue;
    n++;
    lo = fmin(lo, fmin(r, isfinite(a) ? a : r));
    hi = fmax(hi, fmax(r, isfinite(b) ? b : r));
  }
  if (!n) {
    empty_chart(p, title, "no figure has a value on both sides");
    return;
  }
  size_t rows = json_object_size(figs);
  double pad = (hi - lo) * 0.05;
  struct axis ax = {lo - pad, hi + pad, false, false};
  int ml = 150, h = MT + (int)rows * FP_ROW + MB;
  p->charts++;
  putf(p, "<figure class=\"chart wide\" data-points=\"%zu\"><figcaption>", n);
  esc(p, title);
  put(p, "</figcaption><div class=\"legend\"><span><i class=\"c2\"></i>improved</span><span><i "
         "class=\"c1\"></i>regressed</span><span><i class=\"c0\"></i>no change called</span>"
         "<span>shaded: the noise band ±");
  num(p, noise * 100);
  put(p, "%; dashed: 1 (no difference)</span></div>");
  putf(p, "<svg viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", TL_W, h);
  esc(p, title);
  put(p, "\">");
  double step = nice_step(ax.hi - ax.lo, 10);
  for (double v = ceil(ax.lo / step) * step; v <= ax.hi + step * 1e-9; v += step) {
    double q = ax_map(&ax, v, ml, TL_W - MR);
    char b[32];
    fmt_tick(b, sizeof b, fabs(v) < step * 1e-9 ? 0 : v);
    putf(p, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
            "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>",
         q, MT, q, h - MB, q, h - MB + 14, b);
  }
  double x0 = ax_map(&ax, 1 - noise, ml, TL_W - MR), x1 = ax_map(&ax, 1 + noise, ml, TL_W - MR);
  putf(p, "<rect class=\"shade\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\"/>", x0, MT,
       x1 - x0, h - MB - MT);
  double one = ax_map(&ax, 1, ml, TL_W - MR);
  putf(p, "<line class=\"mark\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", one, MT, one,
       h - MB);
  size_t i = 0;
  json_object_foreach((json_t *)figs, k, f) {
    double y = MT + (double)i++ * FP_ROW + FP_ROW / 2.0;
    putf(p, "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", ml - 6, y + 4);
    esc(p, k);
    put(p, "</text>");
    double r = jnum(at(f, "ratio")), a = jnum(at(f, "ci_lo")), b = jnum(at(f, "ci_hi"));
    if (!isfinite(r))
      continue;
    const char *v = jstr(at(f, "verdict"), "");
    const char *cls = !strcmp(v, "improved") ? "c2" : !strcmp(v, "regressed") ? "c1" : "c0";
    if (isfinite(a) && isfinite(b))
      putf(p, "<line class=\"line %s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", cls,
           ax_map(&ax, a, ml, TL_W - MR), y, ax_map(&ax, b, ml, TL_W - MR), y);
    putf(p, "<circle class=\"pt %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>", cls,
         ax_map(&ax, r, ml, TL_W - MR), y);
    esc(p, k);
    put(p, ": B/A ");
    num(p, r);
    put(p, ", CI ");
    num(p, a);
    put(p, " – ");
    num(p, b);
    put(p, ", ");
    esc(p, v);
    put(p, "</title></circle>");
  }
  putf(p, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", ml, h - MB, TL_W - MR,
       h - MB);
  putf(p, "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">ratio B/A of the "
          "geometric means (1: no difference)</text></svg>",
       (ml + TL_W - MR) / 2, h - 8);
  put(p, "<details><summary>table</summary><div class=\"tw\"><table><tr><th>figure</th><th>"
         "B/A</th><th>CI low</th><th>CI high</th></tr>");
  json_object_foreach((json_t *)figs, k, f) {
    put(p, "<tr><td>");
    esc(p, k);
    put(p, "</td><td>");
    num(p, jnum(at(f, "ratio")));
    put(p, "</td><td>");
    num(p, jnum(at(f, "ci_lo")));
    put(p, "</td><td>");
    num(p, jnum(at(f, "ci_hi")));
    put(p, "</td></tr>");
  }
  put(p, "</table></div></details></figure>");
}

/* The compare table of one stage: what `compare` prints. */
static void compare_table(struct page *p, const json_t *figs) {
  put(p, "<div class=\"ct\"><table><tr><th>figure</th><th>unit</th><th>better</th>"
         "<th>A (mean)</th><th>B (mean)</th><th>B/A</th><th>95% CI</th><th>p</th>"
         "<th>runs A / B</th><th>verdict</th></tr>");
  const char *k;
  const json_t *f;
  json_object_foreach((json_t *)figs, k, f) {
    put(p, "<tr><td>");
    esc(p, k);
    put(p, "</td><td>");
    esc(p, jstr(at(f, "unit"), ""));
    put(p, "</td><td>");
    esc(p, jstr(at(f, "better"), ""));
    static const char *const cells[][2] = {
        {"</td><td>", "mean_a"}, {"</td><td>", "mean_b"}, {"</td><td>", "ratio"},
        {"</td><td>", "ci_lo"},  {" – ", "ci_hi"},        {"</td><td>", "p"},
        {"</td><td>", "n_a"},    {" / ", "n_b"}};
    put_figs(p, f, cells, sizeof cells / sizeof cells[0]);
    const char *v = jstr(at(f, "verdict"), "?");
    put(p, "</td><td><span class=\"verdict ");
    put(p, !strcmp(v, "improved") ? "PASS" : !strcmp(v, "regressed") ? "FAIL" : "NONE");
    put(p, "\">");
    esc(p, v);
    put(p, "</span>");
    const char *why = jstr(at(f, "why"), NULL);
    if (why) {
      put(p, " <span class=\"fix\">");
      esc(p, why);
      put(p, "</span>");
    }
    put(p, "</td></tr>");
  }
  put(p, "</table></div>");
}

/* Each figure's runs of A and B as dots, with each side's mean. */
static void compare_dots(struct page *p, const json_t *figs) {
  const char *k;
  const json_t *f;
  json_object_foreach((json_t *)figs, k, f) {
    const json_t *va = at(f, "values_a"), *vb = at(f, "values_b");
    size_t na = json_array_size(va), nb = json_array_size(vb), n = na > nb ? na : nb;
    char ylabel[96];
    snprintf(ylabel, sizeof ylabel, "%s%s%s%s", k, *jstr(at(f, "unit"), "") ? " (" : "",
             jstr(at(f, "unit"), ""), *jstr(at(f, "unit"), "") ? ")" : "");
    struct chart c = {.title = k, .xlabel = "run", .ylabel = ylabel, .intx = true,
                      .why_empty = va ? "no run gave a value"
                                      : "not collected: the comparison has no per-run values",
                      .mark_x = NAN};
    const json_t *side[2] = {va, vb};
    const char *names[2] = {"A runs", "B runs"}, *means[2] = {"A mean", "B mean"},
               *keys[2] = {"mean_a", "mean_b"};
    for (int sd = 0; sd < 2; sd++) {
      size_t m = json_array_size(side[sd]);
      struct series *s = m ? add_series(&c, names[sd], m) : NULL;
      if (s)
        s->dots = true, s->colour = 1 + sd;
      for (size_t i = 0; s && i < m; i++)
        push_pt(s, (double)(i + 1), jnum(json_array_get(side[sd], i)));
    }
    for (int sd = 0; sd < 2 && n; sd++) {
      struct series *s = add_series(&c, means[sd], 2);
      if (s)
        s->colour = 1 + sd;
      for (int e = 0; s && e < 2; e++)
        push_pt(s, e ? (double)n : 1.0, jnum(at(f, keys[sd])));
    }
    line_chart(p, &c);
    series_free(&c);
  }
}

static void compare_one(struct page *p, const json_t *cmp) {
  put(p, "<p class=\"meta\">A (baseline) <b>");
  esc(p, jstr(path(cmp, "a", "label"), "?"));
  putf(p, "</b>: %zu run(s) · B <b>", json_array_size(path(cmp, "a", "runs")));
  esc(p, jstr(path(cmp, "b", "label"), "?"));
  putf(p, "</b>: %zu run(s) · noise band ±", json_array_size(path(cmp, "b", "runs")));
  num(p, jnum(at(cmp, "noise")) * 100);
  put(p, "% · α ");
  num(p, jnum(at(cmp, "alpha")));
  put(p, " · a change is called with at least ");
  num(p, jnum(at(cmp, "min_runs")));
  put(p, " runs a side, p &lt; α and the whole CI outside the noise band "
         "(docs/statistics.md)</p>");
  const char *diff = jstr(at(cmp, "differences"), "");
  if (*diff) {
    put(p, "<p><span class=\"verdict WARN\">WARN</span> compared with --force although the "
           "configurations differ: ");
    esc(p, diff);
    put(p, "</p>");
  }
  put(p, "<p>");
  verdict_badge(p, json_is_true(at(cmp, "regressed")) ? "FAIL" : "PASS");
  put(p, json_is_true(at(cmp, "regressed")) ? " some figure regressed" : " no figure regressed");
  put(p, json_is_true(at(cmp, "improved")) ? "; some improved</p>" : "; none improved</p>");
  size_t i;
  const json_t *st;
  size_t ns = json_array_size(at(cmp, "stages"));
  json_array_foreach(at(cmp, "stages"), i, st) {
    const json_t *figs = at(st, "figures");
    if (ns > 1) {
      put(p, "<h3>stage ");
      esc(p, jstr(at(st, "label"), "?"));
      put(p, "</h3>");
    }
    compare_table(p, figs);
    put(p, "<div class=\"charts\">");
    ratio_chart(p, figs, jnum(at(cmp, "noise")));
    compare_dots(p, figs);
    put(p, "</div>");
  }
}

enum im_err im_html_compare(const json_t *doc, const char *title, struct im_buf *out) {
  if (!json_is_object(doc) && !json_is_array(doc))
    return IM_INVAL;
  struct page pg = {.b = out}, *p = &pg;
  page_head(p, title);
  put(p, "<h1>infermeter compare: ");
  esc(p, title);
  put(p, "</h1>");
  if (json_is_object(doc)) {
    compare_one(p, doc);
  } else {
    size_t i;
    const json_t *c;
    json_array_foreach(doc, i, c) {
      put(p, "<h2>");
      esc(p, jstr(path(c, "b", "label"), "?"));
      put(p, " against ");
      esc(p, jstr(path(c, "a", "label"), "?"));
      put(p, "</h2>");
      compare_one(p, c);
    }
  }
  putf(p, "<p class=\"meta\">%u charts · generated by infermeter compare; the formulas are in "
          "docs/statistics.md</p></body></html>\n",
       p->charts);
  return pg.err;
}

