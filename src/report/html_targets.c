/* The report's per-target section: a run with several --url (docs/tls.md)
 * shows how the load split over the targets and whether one of them was
 * slower, from results.json's metrics.by_target. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>

#include "report/html_int.h"
#include "record/json_get.h"

/* Latency percentiles per target, one series each, drawn as dots over the
 * target index so an outlier replica stands out. */
static void target_latency_chart(struct page *p, const json_t *bt) {
  static const char *const fig[][3] = {
      {"TTFT p50", "ttft_ms", "p50"},
      {"TTFT p99", "ttft_ms", "p99"},
      {"TPOT p50", "tpot_ms", "p50"},
      {"ITL p99", "itl_ms", "p99"},
  };
  struct chart c = {.title = "Latency by target", .xlabel = "target (index in --url order)",
                    .ylabel = "ms", .intx = true, .pad_x = true, .mark_x = NAN,
                    .why_empty = "no target completed a request"};
  size_t n = json_array_size(bt);
  for (size_t f = 0; f < sizeof fig / sizeof fig[0]; f++) {
    struct series *s = im__html_add_series(&c, fig[f][0], n);
    if (!s)
      break;
    s->dots = true;
    for (size_t i = 0; i < n; i++) {
      const json_t *t = json_array_get(bt, i);
      double v = im_json_num(im__html_path(t, fig[f][1], fig[f][2]), NAN);
      if (isfinite(v))
        im__html_push_pt(s, im_json_num(im__html_at(t, "target"), NAN), v);
    }
  }
  im__html_line_chart(p, &c);
  im__html_series_free(&c);
}

/* Completed and failed requests per target: the split of the load. */
static void target_split_chart(struct page *p, const json_t *bt) {
  struct chart c = {.title = "Requests by target", .xlabel = "target (index in --url order)",
                    .ylabel = "requests", .intx = true, .pad_x = true, .mark_x = NAN,
                    .why_empty = "no request reached a target"};
  size_t n = json_array_size(bt);
  struct series *done = im__html_add_series(&c, "completed", n), *bad = im__html_add_series(&c, "failed", n);
  for (size_t i = 0; done && bad && i < n; i++) {
    const json_t *t = json_array_get(bt, i);
    double x = im_json_num(im__html_at(t, "target"), NAN);
    im__html_push_pt(done, x, im_json_num(im__html_at(t, "completed"), NAN));
    im__html_push_pt(bad, x, im_json_num(im__html_at(t, "failed"), NAN));
  }
  if (done)
    done->dots = true;
  if (bad)
    bad->dots = true;
  im__html_line_chart(p, &c);
  im__html_series_free(&c);
}

void im__html_targets_section(struct page *p, const json_t *stage, const json_t *urls) {
  const json_t *bt = im__html_path(stage, "metrics", "by_target");
  if (!json_is_array(bt) || json_array_size(bt) == 0)
    return;
  im__html_put(p, "<h2>Targets</h2><p class=\"note\">Requests went round-robin over the targets "
         "(sessions and retries stay on theirs); every other figure on this page is over all "
         "targets together.</p><div class=\"charts\">");
  target_split_chart(p, bt);
  target_latency_chart(p, bt);
  im__html_put(p, "</div><table><tr><th>target</th><th>URL</th><th>completed</th><th>failed</th>"
         "<th>output tokens</th><th>TTFT p50</th><th>TTFT p99</th><th>TPOT p50</th>"
         "<th>ITL p99</th></tr>");
  size_t i;
  const json_t *t;
  json_array_foreach(bt, i, t) {
    double idx = im_json_num(im__html_at(t, "target"), NAN);
    im__html_put(p, "<tr><td>");
    im__html_num(p, idx);
    im__html_put(p, "</td><td>");
    im__html_esc(p, isfinite(idx) && idx >= 0 ? im_json_str(json_array_get(urls, (size_t)idx), "?") : "?");
    static const char *const cols[][2] = {{"completed", NULL},    {"failed", NULL},
                                          {"output_tokens", NULL}, {"ttft_ms", "p50"},
                                          {"ttft_ms", "p99"},      {"tpot_ms", "p50"},
                                          {"itl_ms", "p99"}};
    for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++) {
      im__html_put(p, "</td><td>");
      im__html_num(p, im_json_num(cols[k][1] ? im__html_path(t, cols[k][0], cols[k][1]) : im__html_at(t, cols[k][0]), NAN));
    }
    im__html_put(p, "</td></tr>");
  }
  im__html_put(p, "</table>");
}
