/* The report's per-target section: a run with several --url (docs/tls.md)
 * shows how the load split over the targets and whether one of them was
 * slower, from results.json's metrics.by_target. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>

#include "report/html_int.h"

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
    struct series *s = add_series(&c, fig[f][0], n);
    if (!s)
      break;
    s->dots = true;
    for (size_t i = 0; i < n; i++) {
      const json_t *t = json_array_get(bt, i);
      double v = jnum(path(t, fig[f][1], fig[f][2]));
      if (isfinite(v))
        push_pt(s, jnum(at(t, "target")), v);
    }
  }
  line_chart(p, &c);
  series_free(&c);
}

/* Completed and failed requests per target: the split of the load. */
static void target_split_chart(struct page *p, const json_t *bt) {
  struct chart c = {.title = "Requests by target", .xlabel = "target (index in --url order)",
                    .ylabel = "requests", .intx = true, .pad_x = true, .mark_x = NAN,
                    .why_empty = "no request reached a target"};
  size_t n = json_array_size(bt);
  struct series *done = add_series(&c, "completed", n), *bad = add_series(&c, "failed", n);
  for (size_t i = 0; done && bad && i < n; i++) {
    const json_t *t = json_array_get(bt, i);
    double x = jnum(at(t, "target"));
    push_pt(done, x, jnum(at(t, "completed")));
    push_pt(bad, x, jnum(at(t, "failed")));
  }
  if (done)
    done->dots = true;
  if (bad)
    bad->dots = true;
  line_chart(p, &c);
  series_free(&c);
}

void im__html_targets_section(struct page *p, const json_t *stage, const json_t *urls) {
  const json_t *bt = path(stage, "metrics", "by_target");
  if (!json_is_array(bt) || json_array_size(bt) == 0)
    return;
  put(p, "<h2>Targets</h2><p class=\"note\">Requests went round-robin over the targets "
         "(sessions and retries stay on theirs); every other figure on this page is over all "
         "targets together.</p><div class=\"charts\">");
  target_split_chart(p, bt);
  target_latency_chart(p, bt);
  put(p, "</div><table><tr><th>target</th><th>URL</th><th>completed</th><th>failed</th>"
         "<th>output tokens</th><th>TTFT p50</th><th>TTFT p99</th><th>TPOT p50</th>"
         "<th>ITL p99</th></tr>");
  size_t i;
  const json_t *t;
  json_array_foreach(bt, i, t) {
    double idx = jnum(at(t, "target"));
    put(p, "<tr><td>");
    num(p, idx);
    put(p, "</td><td>");
    esc(p, isfinite(idx) && idx >= 0 ? jstr(json_array_get(urls, (size_t)idx), "?") : "?");
    static const char *const cols[][2] = {{"completed", NULL},    {"failed", NULL},
                                          {"output_tokens", NULL}, {"ttft_ms", "p50"},
                                          {"ttft_ms", "p99"},      {"tpot_ms", "p50"},
                                          {"itl_ms", "p99"}};
    for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++) {
      put(p, "</td><td>");
      num(p, jnum(cols[k][1] ? path(t, cols[k][0], cols[k][1]) : at(t, cols[k][0])));
    }
    put(p, "</td></tr>");
  }
  put(p, "</table>");
}
