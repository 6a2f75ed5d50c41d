/* Tests of the Prometheus text parser (src/proto/promparse.c). Every event
 * is rendered to one text line and the whole transcript compared, so each
 * case reads as data. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "proto/promexp.h"
#include "proto/promparse.h"

static const char *sfx_name(enum im_prom_suffix s) {
  static const char *n[] = {"",        "bucket", "sum",    "count", "total",
                            "created", "gsum",   "gcount", "info"};
  return n[s];
}

static enum im_err on_sample(void *ud, const struct im_prom_sample *s) {
  struct im_buf *b = ud;
  enum im_err e = im_buf_printf(b, "S%zu %s", s->line, s->name);
  if (strcmp(s->family, s->name) != 0 || s->type != IM_PROM_NONE)
    e = e ? e
          : im_buf_printf(b, " [%s %s%s%s]", s->family, im_prom_type_name(s->type),
                          s->suffix ? " " : "", sfx_name(s->suffix));
  for (size_t i = 0; i < s->n_labels && !e; i++) {
    e = im_buf_printf(b, "%s%s=", i ? "," : " {", s->labels[i].name);
    for (size_t k = 0; k < s->labels[i].value_len && !e; k++) {
      char c = s->labels[i].value[k];
      e = c == '\n' ? im_buf_puts(b, "<NL>") : im_buf_append(b, &c, 1);
    }
  }
  if (s->n_labels && !e)
    e = im_buf_puts(b, "}");
  if (!e)
    e = im_buf_printf(b, " %.17g", s->value);
  if (s->has_timestamp && !e)
    e = im_buf_printf(b, " @%.17g", s->timestamp);
  return e ? e : im_buf_puts(b, "\n");
}

static enum im_err on_meta(void *ud, const struct im_prom_meta *m) {
  static const char *k[] = {"HELP", "TYPE", "UNIT", "EOF"};
  struct im_buf *b = ud;
  enum im_err e = im_buf_printf(b, "M%zu %s %s ", m->line, k[m->kind], m->name);
  for (const char *t = m->text; *t && !e; t++)
    e = *t == '\n' ? im_buf_puts(b, "<NL>") : im_buf_append(b, t, 1);
  return e ? e : im_buf_puts(b, "\n");
}

static enum im_err on_error(void *ud, const struct im_prom_error *er) {
  return im_buf_printf(ud, "E%zu %s\n", er->line, er->reason);
}

static struct im_promparse_stats last;

/* Parses page with the given limits (NULL: defaults) and returns the
 * transcript (static storage, valid until the next call). */
static const char *run_lim(const char *page, size_t len, const struct im_promparse_limits *lim) {
  static struct im_buf out;
  im_buf_cleanup(&out);
  im_buf_init(&out, IM_TEST_BUF_MAX);
  struct im_promparse p;
  im_promparse_init(&p, lim);
  struct im_promparse_cbs cbs = {on_sample, on_meta, on_error, &out};
  CHECK_OK(im_promparse_page(&p, page, len, &cbs, &last));
  im_promparse_cleanup(&p);
  if (im_buf_puts(&out, "") != IM_OK)
    return "";
  return out.data;
}

static const char *run(const char *page) {
  return run_lim(page, strlen(page), NULL);
}

static void test_basic_families(void) {
  const char *page =
      "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
      "# TYPE vllm:prompt_tokens_total counter\n"
      "vllm:prompt_tokens_total{engine=\"0\"} 1e+06\n"
      "\n"
      "# a plain comment\n"
      "untyped_metric 7\n";
  CHECK_STR(
      run(page),
      "M1 HELP vllm:num_requests_running Number of requests in model execution batches.\n"
      "M2 TYPE vllm:num_requests_running gauge\n"
      "S3 vllm:num_requests_running [vllm:num_requests_running gauge] {engine=0,model_name=m} 3\n"
      "M4 TYPE vllm:prompt_tokens_total counter\n"
      "S5 vllm:prompt_tokens_total [vllm:prompt_tokens_total counter] {engine=0} 1000000\n"
      "S8 untyped_metric 7\n");
  CHECK_EQ(last.lines, 8);
  CHECK_EQ(last.samples, 3);
  CHECK_EQ(last.meta, 3);
  CHECK_EQ(last.errors, 0);
}

static void test_histogram_summary(void) {
  const char *page = "# TYPE h histogram\n"
                     "h_bucket{le=\"0.1\"} 1\n"
                     "h_bucket{le=\"+Inf\"} 2\n"
                     "h_sum 0.3\n"
                     "h_count 2\n"
                     "h_created 1.7e9\n"
                     "h_other 1\n"
                     "# TYPE s summary\n"
                     "s{quantile=\"0.5\"} 0.2\n"
                     "s{quantile=\"0.99\"} NaN\n"
                     "s_sum 1\n"
                     "s_count 5\n"
                     "s_bucket 1\n";
  CHECK_STR(run(page), "M1 TYPE h histogram\n"
                       "S2 h_bucket [h histogram bucket] {le=0.1} 1\n"
                       "S3 h_bucket [h histogram bucket] {le=+Inf} 2\n"
                       "S4 h_sum [h histogram sum] 0.29999999999999999\n"
                       "S5 h_count [h histogram count] 2\n"
                       "S6 h_created [h histogram created] 1700000000\n"
                       "S7 h_other 1\n"
                       "M8 TYPE s summary\n"
                       "S9 s [s summary] {quantile=0.5} 0.20000000000000001\n"
                       "S10 s [s summary] {quantile=0.99} nan\n"
                       "S11 s_sum [s summary sum] 1\n"
                       "S12 s_count [s summary count] 5\n"
                       "S13 s_bucket 1\n");
}

static void test_openmetrics(void) {
  const char *page = "# TYPE foo counter\n"
                     "# UNIT foo seconds\n"
                     "# HELP foo Help with \\\\ and \\n escapes.\n"
                     "foo_total 17 1520879607.789\n"
                     "foo_created 1520872607.5\n"
                     "foo_total{a=\"b\"} 1 # {trace_id=\"KOO5S4vxi0o\"} 0.67\n"
                     "# TYPE g gaugehistogram\n"
                     "g_bucket{le=\"+Inf\"} 3\n"
                     "g_gsum 4\n"
                     "g_gcount 3\n"
                     "# TYPE i info\n"
                     "i_info{version=\"1.0\"} 1\n"
                     "# TYPE st stateset\n"
                     "st{st=\"a\"} 1\n"
                     "# TYPE u unknown\n"
                     "u 2\n"
                     "# EOF\n"
                     "\n";
  CHECK_STR(run(page), "M1 TYPE foo counter\n"
                       "M2 UNIT foo seconds\n"
                       "M3 HELP foo Help with \\ and <NL> escapes.\n"
                       "S4 foo_total [foo counter total] 17 @1520879607.789\n"
                       "S5 foo_created [foo counter created] 1520872607.5\n"
                       "S6 foo_total [foo counter total] {a=b} 1\n"
                       "M7 TYPE g gaugehistogram\n"
                       "S8 g_bucket [g gaugehistogram bucket] {le=+Inf} 3\n"
                       "S9 g_gsum [g gaugehistogram gsum] 4\n"
                       "S10 g_gcount [g gaugehistogram gcount] 3\n"
                       "M11 TYPE i info\n"
                       "S12 i_info [i info info] {version=1.0} 1\n"
                       "M13 TYPE st stateset\n"
                       "S14 st [st stateset] {st=a} 1\n"
                       "M15 TYPE u unknown\n"
                       "S16 u [u unknown] 2\n"
                       "M17 EOF  \n");
  CHECK(last.saw_eof);
  CHECK_EQ(last.errors, 0);
  /* Text after # EOF: one error, nothing more read. */
  CHECK_STR(run("a 1\n# EOF\nb 2\nc 3\n"), "S1 a 1\nM2 EOF  \nE3 text after # EOF\n");
}

static void test_values_and_timestamps(void) {
  const char *page = "a +Inf\nb -Inf\nc NaN\nd Inf\ne 1e+06\nf -1.5E-3\ng 0\nh 12345678901234\n"
                     "i 1 1712345678901\nj 2 -5\nk nan\nl +inf\nm 0x10\n";
  CHECK_STR(run(page),
            "S1 a inf\nS2 b -inf\nS3 c nan\nS4 d inf\nS5 e 1000000\nS6 f -0.0015\nS7 g 0\n"
            "S8 h 12345678901234\nS9 i 1 @1712345678901\nS10 j 2 @-5\nS11 k nan\n"
            "S12 l inf\nS13 m 16\n");
}

static void test_escapes_and_spacing(void) {
  const char *page = "x{path=\"C:\\\\dir\\\\\",q=\"say \\\"hi\\\"\",nl=\"a\\nb\"} 1\n"
                     "  y { a = \"1\" , b=\"2\", } \t 2  \n"
                     "z{} 3\n"
                     "crlf{a=\"1\"} 4\r\n"
                     "w{a=\"{}#,=\"} 5\n";
  CHECK_STR(run(page), "S1 x {path=C:\\dir\\,q=say \"hi\",nl=a<NL>b} 1\n"
                       "S2 y {a=1,b=2} 2\n"
                       "S3 z 3\n"
                       "S4 crlf {a=1} 4\n"
                       "S5 w {a={}#,=} 5\n");
}

/* What im_prom_label writes, the parser reads back unchanged. */
static void test_escape_round_trip(void) {
  const char *vals[] = {"plain", "back\\slash", "q\"uote", "new\nline", "\\\"\n\\n", "", "{}=,#"};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
    struct im_buf lab, page;
    im_buf_init(&lab, IM_TEST_BUF_MAX);
    im_buf_init(&page, IM_TEST_BUF_MAX);
    CHECK_OK(im_prom_label(&lab, "v", vals[i]));
    CHECK_OK(im_prom_sample(&page, "rt", lab.data, 1.5));
    struct im_buf want;
    im_buf_init(&want, IM_TEST_BUF_MAX);
    CHECK_OK(im_buf_puts(&want, "S1 rt {v="));
    for (const char *c = vals[i]; *c; c++)
      CHECK_OK(*c == '\n' ? im_buf_puts(&want, "<NL>") : im_buf_append(&want, c, 1));
    CHECK_OK(im_buf_puts(&want, "} 1.5\n"));
    CHECK_STR(run(page.data), want.data);
    im_buf_cleanup(&lab);
    im_buf_cleanup(&page);
    im_buf_cleanup(&want);
  }
}

static void test_malformed(void) {
  const char *page = "ok 1\n"
                     "1bad 2\n"
                     "m{a=\"x\" 3\n"
                     "m{a=\"x\\q\"} 3\n"
                     "m{a=x} 3\n"
                     "m{a=\"1\",a=\"2\"} 3\n"
                     "m{9=\"1\"} 3\n"
                     "m\n"
                     "m abc\n"
                     "m 1 2 3\n"
                     "m 1 notatime\n"
                     "m{a=\"1\"b=\"2\"} 3\n"
                     "# TYPE m bogus\n"
                     "# TYPE\n"
                     "# HELP 9x text\n"
                     "m+1 4\n"
                     "m{a:b=\"1\"} 5\n"
                     "m{a=\"unterminated\n"
                     "m nan(0x1)\n"
                     "m{a=\"\\\n"
                     "still_ok 6";
  CHECK_STR(run(page), "S1 ok 1\n"
                       "E2 bad metric name\n"
                       "E3 expected ',' or '}' after label value\n"
                       "E4 bad escape in label value\n"
                       "E5 expected '\"' to open label value\n"
                       "E6 duplicate label name\n"
                       "E7 bad label name\n"
                       "E8 missing value\n"
                       "E9 bad value\n"
                       "E10 unexpected text after value\n"
                       "E11 bad timestamp\n"
                       "E12 expected ',' or '}' after label value\n"
                       "E13 unknown metric type\n"
                       "E14 metadata line without a metric name\n"
                       "E15 bad metric name in metadata line\n"
                       "E16 bad character after metric name\n"
                       "E17 expected '=' after label name\n"
                       "E18 unterminated label value\n"
                       "E19 bad value\n"
                       "E20 unterminated label value\n"
                       "S21 still_ok 6\n");
  CHECK_EQ(last.errors, 19);
  CHECK_EQ(last.samples, 2);
}

static void test_limits(void) {
  struct im_promparse_limits lim = {.max_line = 32, .max_labels = 2, .max_name = 8};
  const char *page = "short 1\n"
                     "this_line_is_longer_than_thirty_two_bytes 1\n"
                     "abcdefghi 1\n"
                     "a{x=\"1\",y=\"2\",z=\"3\"} 1\n"
                     "a{x=\"1\",y=\"2\"} 1\n"
                     "a{abcdefghi=\"1\"} 1\n";
  CHECK_STR(run_lim(page, strlen(page), &lim), "S1 short 1\n"
                                               "E2 line too long\n"
                                               "E3 metric name too long\n"
                                               "E4 too many labels\n"
                                               "S5 a {x=1,y=2} 1\n"
                                               "E6 label name too long\n");
  /* A NUL byte in a label value is kept and counted. */
  static const char nul[] = "n{a=\"x\0y\"} 1\n";
  CHECK_STR(run_lim(nul, sizeof nul - 1, NULL), "S1 n {a=x");
}

/* The family context: HELP of another name opens it untyped; a sample whose
 * name only shares a prefix is its own family. */
static void test_family_context(void) {
  const char *page = "# TYPE c counter\n"
                     "c_total 1\n"
                     "c_totalx 2\n"
                     "# HELP d Something.\n"
                     "c_total 3\n"
                     "d 4\n"
                     "# TYPE e_total counter\n"
                     "e_total 5\n";
  CHECK_STR(run(page), "M1 TYPE c counter\n"
                       "S2 c_total [c counter total] 1\n"
                       "S3 c_totalx 2\n"
                       "M4 HELP d Something.\n"
                       "S5 c_total 3\n"
                       "S6 d 4\n"
                       "M7 TYPE e_total counter\n"
                       "S8 e_total [e_total counter] 5\n");
}

static enum im_err stop_cb(void *ud, const struct im_prom_sample *s) {
  (void)s;
  return ++*(int *)ud == 2 ? IM_FULL : IM_OK;
}

static void test_callback_stop_and_label_lookup(void) {
  int n = 0;
  struct im_promparse p;
  im_promparse_init(&p, NULL);
  struct im_promparse_cbs cbs = {stop_cb, NULL, NULL, &n};
  const char *page = "a 1\nb 2\nc 3\n";
  CHECK_EQ(im_promparse_page(&p, page, strlen(page), &cbs, NULL), IM_FULL);
  CHECK_EQ(n, 2);
  /* Empty page, NULL callbacks. */
  struct im_promparse_stats st;
  CHECK_OK(im_promparse_page(&p, NULL, 0, NULL, &st));
  CHECK_EQ(st.lines, 0);
  im_promparse_cleanup(&p);
  im_promparse_cleanup(NULL);

  struct im_prom_label l[2] = {{"engine", "0", 1}, {"dp_rank", "3", 1}};
  struct im_prom_sample s = {.labels = l, .n_labels = 2};
  CHECK_STR(im_prom_sample_label(&s, "dp_rank"), "3");
  CHECK(im_prom_sample_label(&s, "gpu") == NULL);
}

static double quant(double q, const struct im_prom_bucket *b, size_t n) {
  double v;
  enum im_err e = im_prom_histogram_quantile(q, b, n, &v);
  return e ? -12345 : v;
}

static void test_histogram_quantile(void) {
  /* 10 observations: 2 <= 0.1, 6 <= 0.5 (4 in (0.1,0.5]), 9 <= 1, 1 above. */
  struct im_prom_bucket b[] = {{0.1, 2}, {0.5, 6}, {1.0, 9}, {INFINITY, 10}};
  /* q=0.5: rank 5, in (0.1,0.5]: 0.1 + 0.4 * (5-2)/4 = 0.4 */
  CHECK_NEAR(quant(0.5, b, 4), 0.4, 1e-12);
  /* q=0.1: rank 1, first bucket, lower bound 0: 0.1 * 1/2 = 0.05 */
  CHECK_NEAR(quant(0.1, b, 4), 0.05, 1e-12);
  /* q=0.9: rank 9, in (0.5,1]: 0.5 + 0.5 * 3/3 = 1.0 */
  CHECK_NEAR(quant(0.9, b, 4), 1.0, 1e-12);
  /* q=0.75: rank 7.5: 0.5 + 0.5 * 1.5/3 = 0.75 */
  CHECK_NEAR(quant(0.75, b, 4), 0.75, 1e-12);
  /* q=0.95: rank 9.5 in +Inf bucket: largest finite le */
  CHECK_NEAR(quant(0.95, b, 4), 1.0, 0);
  CHECK_NEAR(quant(1.0, b, 4), 1.0, 0);
  /* q=0: lower bound of the first bucket */
  CHECK_NEAR(quant(0, b, 4), 0, 0);
  CHECK(quant(-0.1, b, 4) == -INFINITY);
  CHECK(quant(1.1, b, 4) == INFINITY);
  CHECK(isnan(quant(NAN, b, 4)));

  /* Deltas of two scrapes: the caller subtracts bucket by bucket. */
  struct im_prom_bucket t0[] = {{0.1, 100}, {0.5, 200}, {1.0, 300}, {INFINITY, 300}};
  struct im_prom_bucket t1[] = {{0.1, 100}, {0.5, 210}, {1.0, 330}, {INFINITY, 340}};
  struct im_prom_bucket d[4];
  for (int i = 0; i < 4; i++)
    d[i] = (struct im_prom_bucket){t1[i].le, t1[i].count - t0[i].count};
  /* 40 new: 0, 10, 30, 40. q=0.5: rank 20 in (0.5,1]: 0.5 + 0.5 * 10/20 = 0.75 */
  CHECK_NEAR(quant(0.5, d, 4), 0.75, 1e-12);
  /* q=0.2: rank 8 in (0.1,0.5]: 0.1 + 0.4 * 8/10 = 0.42 */
  CHECK_NEAR(quant(0.2, d, 4), 0.42, 1e-12);

  /* No observations in the interval: NaN. */
  struct im_prom_bucket empty[] = {{1, 0}, {INFINITY, 0}};
  CHECK(isnan(quant(0.5, empty, 2)));
  struct im_prom_bucket reset[] = {{1, -5}, {INFINITY, -5}};
  CHECK(isnan(quant(0.5, reset, 2)));
  /* Non-monotonic counts are raised to the running maximum: 0.1->5, 0.5->5
   * (was 3), 1->8, +Inf 10. q=0.5: rank 5 in first bucket: 0.1 * 5/5 = 0.1 */
  struct im_prom_bucket nm[] = {{0.1, 5}, {0.5, 3}, {1.0, 8}, {INFINITY, 10}};
  CHECK_NEAR(quant(0.5, nm, 4), 0.1, 1e-12);
  /* q=0.6: rank 6; 0.5 bucket empty after the fix; (0.5,1]: 0.5 + 0.5 * 1/3 */
  CHECK_NEAR(quant(0.6, nm, 4), 0.5 + 0.5 / 3, 1e-12);
  /* First bucket with le <= 0 returns its bound. */
  struct im_prom_bucket neg[] = {{-1, 4}, {1, 8}, {INFINITY, 8}};
  CHECK_NEAR(quant(0.25, neg, 3), -1, 0);
  /* (-1, 1]: rank 6: -1 + 2 * 2/4 = 0 */
  CHECK_NEAR(quant(0.75, neg, 3), 0, 1e-12);

  double v;
  struct im_prom_bucket noinf[] = {{0.1, 1}, {0.5, 2}};
  CHECK_EQ(im_prom_histogram_quantile(0.5, noinf, 2, &v), IM_INVAL);
  CHECK(isnan(v));
  struct im_prom_bucket unsorted[] = {{0.5, 1}, {0.1, 2}, {INFINITY, 2}};
  CHECK_EQ(im_prom_histogram_quantile(0.5, unsorted, 3, &v), IM_INVAL);
  CHECK_EQ(im_prom_histogram_quantile(0.5, b + 3, 1, &v), IM_INVAL);
  CHECK_EQ(im_prom_histogram_quantile(0.5, NULL, 0, &v), IM_INVAL);
}

int main(void) {
  test_basic_families();
  test_histogram_summary();
  test_openmetrics();
  test_values_and_timestamps();
  test_escapes_and_spacing();
  test_escape_round_trip();
  test_malformed();
  test_limits();
  test_family_context();
  test_callback_stop_and_label_lookup();
  test_histogram_quantile();
  return CHECK_DONE();
}
