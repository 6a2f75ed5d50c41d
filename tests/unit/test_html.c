/* The HTML report's drawing (report/html.h, report/html_int.h), without a
 * browser (tests/html/check.js checks the same in Chromium where there is
 * one): tick labels unique per axis, ticks on a log axis within a decade,
 * curves drawn in order of x, SLO thresholds, values on hover; the header
 * says what was run; a check not judged is not a pass; a repeat set's
 * forest plot. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/buf.h"
#include "report/html.h"
#include "report/html_int.h"

/* How many times needle occurs in hay. */
static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
    n++;
  return n;
}

/* The texts of the tick labels of one axis (cls "tx" or "ty") in html, at
 * most cap; returns how many. */
static size_t ticks(const char *html, const char *cls, char (*out)[32], size_t cap) {
  char open[48];
  snprintf(open, sizeof open, "class=\"tick %s\"", cls);
  size_t n = 0;
  for (const char *p = html; n < cap && (p = strstr(p, open)) != NULL; p++) {
    const char *a = strchr(p, '>'), *b = a ? strchr(a, '<') : NULL;
    if (!b)
      break;
    snprintf(out[n++], sizeof out[0], "%.*s", (int)(b - a - 1), a + 1);
  }
  return n;
}

static void check_unique(const char *html, const char *cls) {
  char t[64][32];
  size_t n = ticks(html, cls, t, 64);
  CHECK(n >= 2);
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      if (!strcmp(t[i], t[j]))
        IM__FAIL("%s tick label '%s' repeats (%zu and %zu)", cls, t[i], i, j);
  im_test_checks++;
}

/* Draws c into a fresh page; the caller frees the text. */
static char *draw(struct chart *c, const json_t *slo) {
  struct im_buf b;
  im_buf_init(&b, IM_TEST_BUF_MAX);
  struct page p = {.b = &b, .slo = slo};
  im__html_line_chart(&p, c);
  im__html_series_free(c);
  CHECK_OK(p.err);
  char *s = strdup(b.data ? b.data : "");
  im_buf_cleanup(&b);
  return s;
}

static void test_axes(void) {
  /* A roofline over contexts 1087.0-1088.0: labels read 1087.2, not 1087. */
  struct chart c = {.title = "t", .xlabel = "x", .ylabel = "y", .mark_x = NAN};
  struct series *s = im__html_add_series(&c, "s", 4);
  for (int i = 0; i < 4; i++)
    im__html_push_pt(s, 1087.0 + 0.3 * i, 1000.0 + 0.1 * i);
  char *h = draw(&c, NULL);
  check_unique(h, "tx");
  check_unique(h, "ty");
  free(h);
  /* A long label at the right edge ends there, not past the picture. */
  struct chart r = {.title = "t", .xlabel = "x", .ylabel = "y", .mark_x = NAN};
  s = im__html_add_series(&r, "s", 2);
  im__html_push_pt(s, 1027.0, 1);
  im__html_push_pt(s, 1029.0, 2);
  h = draw(&r, NULL);
  CHECK(strstr(h, "text-anchor=\"end\">1029.0</text>") != NULL);
  free(h);
  /* A log axis from 12 to 18 ms: no 1-2-5 mark inside, linear ticks instead. */
  struct chart l = {.title = "t", .xlabel = "x", .ylabel = "y", .logx = true, .mark_x = NAN};
  s = im__html_add_series(&l, "s", 2);
  im__html_push_pt(s, 12, 0.1);
  im__html_push_pt(s, 18, 1);
  h = draw(&l, NULL);
  check_unique(h, "tx");
  free(h);
}

/* Points given out of order (a rate=auto sweep's stages) are drawn left
 * to right, their labels with them. */
static void test_sorted(void) {
  struct chart c = {.title = "t", .xlabel = "x", .ylabel = "y", .mark_x = NAN};
  struct series *s = im__html_add_series(&c, "s", 3);
  static const char *const lab[] = {"three", "one", "two"};
  s->labels = malloc(3 * sizeof *s->labels);
  double xs[] = {3, 1, 2};
  for (int i = 0; i < 3; i++) {
    im__html_push_pt(s, xs[i], xs[i] * 10);
    s->labels[i] = lab[i];
  }
  char *h = draw(&c, NULL);
  const char *d = strstr(h, "<path class=\"line");
  CHECK(d != NULL);
  double x0 = -1, x;
  int steps = 0;
  for (const char *p = d ? strstr(d, "d=\"") + 3 : ""; *p && *p != '"'; p++)
    if ((*p == 'M' || *p == 'L') && sscanf(p + 1, "%lf", &x) == 1) {
      CHECK(x >= x0);
      x0 = x, steps++;
    }
  CHECK_EQ(steps, 3);
  const char *one = strstr(h, ">one</text>"), *two = strstr(h, ">two</text>"),
             *three = strstr(h, ">three</text>");
  CHECK(one && two && three && one < two && two < three);
  free(h);
}

/* An SLO within twice the data's top is a dashed line; one far above is
 * named in the legend; every point carries its value on hover, a long
 * series through at most ~150 invisible targets. */
static void test_slo_and_hover(void) {
  struct chart c = {.title = "t", .xlabel = "time (s)", .ylabel = "ms", .mark_x = NAN};
  struct series *s = im__html_add_series(&c, "TTFT p50", 400);
  for (int i = 0; i < 400; i++)
    im__html_push_pt(s, i, 40 + i % 7);
  c.hline[0] = 60, c.hline_label[0] = "TTFT SLO";
  c.hline[1] = 500, c.hline_label[1] = "TPOT SLO";
  char *h = draw(&c, NULL);
  CHECK_EQ(count(h, "<line class=\"slo\""), 1);
  CHECK(strstr(h, "TPOT SLO 500 ms: above the chart") != NULL);
  size_t hov = count(h, "<circle class=\"hov");
  CHECK(hov >= 100 && hov <= 160);
  CHECK(strstr(h, "<title>TTFT p50 — time (s): 399, ms: 40</title>") != NULL);
  free(h);
}

static char *page(const char *json) {
  json_error_t e;
  json_t *doc = json_loads(json, 0, &e);
  CHECK(doc != NULL);
  struct im_buf b;
  im_buf_init(&b, IM_TEST_BUF_MAX);
  CHECK_OK(im_html_report(doc, "t", &b));
  char *s = strdup(b.data ? b.data : "");
  im_buf_cleanup(&b);
  json_decref(doc);
  return s;
}

/* The header says what ran: a concurrency sweep's values and a sessions
 * run's sessions, never the unused poisson default. */
static void test_header(void) {
  char *h =
      page("{\"schema\": \"infermeter/results/v1\", \"manifest\": {\"schedule\": {\"kind\": "
           "\"closed\", \"requests\": 16, \"sweep\": {\"param\": \"concurrency\", \"values\": "
           "[1, 8], \"auto\": false}}, \"workload\": {\"dataset\": \"synthetic\", "
           "\"input_len\": 64}}, \"stages\": []}");
  CHECK(strstr(h, "<b data-k=\"manifest.schedule.sweep.values\">1, 8</b> in flight") != NULL);
  CHECK(strstr(h, "poisson") == NULL);
  free(h);
  h = page(
      "{\"schema\": \"infermeter/results/v1\", \"manifest\": {\"schedule\": {\"kind\": "
      "\"poisson\", \"rate\": 2, \"duration_s\": 4}, \"workload\": {\"dataset\": \"synthetic\", "
      "\"input_len\": 1024, \"sessions\": {\"concurrent\": 3, \"turns\": 3, "
      "\"context_start\": 256, \"context_end\": 1024}}}}");
  CHECK(strstr(h, "<b>sessions</b>: <b data-k=\"manifest.workload.sessions.concurrent\">3</b>") !=
        NULL);
  char *what = strstr(h, "id=\"what-ran\""), *end = what ? strstr(what, "</p>") : NULL;
  CHECK(end != NULL);
  if (end)
    *end = '\0';
  CHECK(what && strstr(what, "req/s") == NULL); /* an old manifest's unused rate is not shown */
  CHECK(what && strstr(what, "input <b") == NULL);
  CHECK(what && strstr(what, "context <b") != NULL);
  free(h);
}

/* A check that passed because it was not judged says so. */
static void test_not_judged(void) {
  char *h =
      page("{\"schema\": \"infermeter/results/v1\", \"audit\": {\"publishable\": {\"verdict\": "
           "\"PUBLISHABLE\", \"checks\": [{\"id\": \"steady_state\", \"status\": \"PASS\", "
           "\"evidence\": \"too few requests: not judged\"}, {\"id\": \"errors\", \"status\": "
           "\"PASS\", \"evidence\": \"0 failed\"}]}}}");
  CHECK(strstr(h, "NOT JUDGED</span> <b>steady_state</b>") != NULL);
  CHECK(strstr(h, "<b>errors</b>") == NULL);
  free(h);
}

/* Panels say the truth: a server scraped without KV series is not "no
 * server metrics scraped"; a roofline not computed gives its reason, not
 * "no request in flight"; no goodput tile without an SLO. */
static void test_panels(void) {
  char *h =
      page("{\"schema\": \"infermeter/results/v1\", \"series\": {\"server\": [{\"t_s\": "
           "[0, 1], \"requests_running\": [1, 2], \"kv_cache_usage\": [null, null]}]}, "
           "\"metrics\": {\"roofline\": {\"not_collected\": \"the model is not described\"}}}");
  CHECK(
      strstr(h, "KV cache and prefix cache (scraped)</figcaption><p class=\"why\">scraped, but") !=
      NULL);
  CHECK(strstr(h, "not collected: the model is not described") != NULL);
  CHECK(strstr(h, "no request in flight") == NULL);
  CHECK(strstr(h, "goodput") == NULL);
  free(h);
}

/* A repeat set: one forest plot; no tile for a figure no run gave. */
static void test_repeat(void) {
  char *h = page("{\"schema\": \"infermeter/repeat/v1\", \"max_ci_width\": 0.08, \"runs\": "
                 "[{\"exit\": 0}, {\"exit\": 6}], \"figures\": {\"ttft_p99_ms\": {\"values\": [10, "
                 "12], \"n\": 2, \"mean\": 11, \"ci95_lo\": 9, \"ci95_hi\": 13}, \"goodput_rps\": "
                 "{\"values\": [null, null], \"n\": 0, \"mean\": null}}}");
  CHECK_EQ(count(h, "<figcaption>"), 1);
  CHECK(strstr(h, "TTFT p99 (ms)") != NULL);
  CHECK(strstr(h, "<div class=\"k\">Goodput") == NULL);
  CHECK(strstr(h, "class=\"run-ok\"") && strstr(h, "class=\"run-fail\""));
  CHECK(strstr(h, "class=\"limit\"") != NULL);
  free(h);
}

int main(void) {
  test_axes();
  test_sorted();
  test_slo_and_hover();
  test_header();
  test_not_judged();
  test_panels();
  test_repeat();
  return CHECK_DONE();
}
