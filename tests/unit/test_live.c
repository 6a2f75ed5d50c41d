/* report/live.h: the live page's buckets, counts and text; cli's
 * --metrics-listen address parsing; concurrent observers (TSan). */
#include <pthread.h>

#include "check.h"
#include "export/metrics_listen.h"
#include "report/live.h"

static void test_bounds(void) {
  size_t n;
  const double *b = im_live_bounds(&n);
  CHECK_INT(n, >=, 91);
  CHECK_NEAR(b[0], 1e-4, 1e-12);
  CHECK_INT(b[n - 1], >=, 600);
  bool has_thr = false;
  for (size_t i = 0; i < n; i++) {
    has_thr |= b[i] == 1.2;
    if (i) {
      CHECK(b[i] > b[i - 1]);
      /* At least 4 per doubling: no step above 2^(1/4), rounding allowed. */
      CHECK_INT(b[i] / b[i - 1] <= 1.19 * 1.01, ==, 1);
    }
  }
  CHECK(has_thr);
}

static struct im_record rec(enum im_req_kind kind, int status, enum im_errclass ec) {
  struct im_record r;
  memset(&r, 0, sizeof r);
  im_record_reset(&r);
  r.kind = kind;
  r.attempt = 1;
  r.http_status = status;
  r.error = ec;
  r.t_sched = 0;
  r.t_dispatch = 2000000; /* 2 ms late: above L = 1 ms */
  r.t_start = 2000000;
  r.t_first = r.t_start + 1200000000; /* TTFT exactly 1.2 s */
  r.t_last = r.t_first + 100000000;
  r.t_end = r.t_last;
  r.prompt_tokens = 10;
  r.output_tokens = 11;
  r.n_chunks = 0;
  r.temperature = r.top_p = NAN;
  return r;
}

/* The value after prefix, up to the end of its line ("" when absent). */
static const char *val(const char *page, const char *prefix) {
  static char out[8][64];
  static int k;
  char *o = out[k++ % 8];
  const char *p = strstr(page, prefix);
  p = p ? p + strlen(prefix) : "";
  size_t n = strcspn(p, "\n");
  if (n >= sizeof out[0])
    n = sizeof out[0] - 1;
  memcpy(o, p, n);
  o[n] = 0;
  return o;
}

static void test_page(void) {
  struct im_live *l;
  CHECK_OK(im_live_new(&l));
  im_live_set_late_limit(l, 1000000);
  struct im_record ok = rec(IM_KIND_MEASURED, 200, IM_EC_NONE);
  ok.n_chunks = 1;
  struct im_record r429 = rec(IM_KIND_MEASURED, 429, IM_EC_HTTP_429);
  r429.t_first = -1;
  struct im_record probe = rec(IM_KIND_PROBE, 200, IM_EC_NONE);
  probe.n_chunks = 1;
  im_live_observe(l, &ok);
  im_live_observe(l, &ok);
  im_live_observe(l, &r429);
  im_live_observe(l, &probe);
  struct im_buf b;
  im_buf_init(&b, 1 << 20);
  CHECK_OK(im_live_render(l, &b));
  CHECK_OK(im_buf_append(&b, "", 1));
  const char *page = b.data;
  CHECK_STR(
      val(page, "infermeter_requests_total{kind=\"measured\",status=\"2xx\",error=\"none\"} "),
      "2");
  CHECK_STR(
      val(page, "infermeter_requests_total{kind=\"measured\",status=\"4xx\",error=\"http_429\"} "),
      "1");
  CHECK_STR(val(page, "infermeter_requests_total{kind=\"probe\",status=\"2xx\",error=\"none\"} "),
            "1");
  /* Only the measured successes in the latency histograms; 1.2 s lands in
   * the 1.2 bucket (v <= le), not above it. */
  CHECK_STR(val(page, "infermeter_ttft_seconds_count "), "2");
  CHECK_STR(val(page, "infermeter_ttft_seconds_bucket{le=\"1.2\"} "), "2");
  CHECK_STR(val(page, "infermeter_ttft_seconds_bucket{le=\"1.16\"} "), "0");
  CHECK_STR(val(page, "\ninfermeter_output_tokens_total "), "44");
  CHECK_STR(val(page, "\ninfermeter_dispatched_late_total "), "4");
  /* TPOT = 0.1 s / 10 tokens = 10 ms. */
  CHECK_STR(val(page, "infermeter_tpot_seconds_sum "), "0.02");
  /* Segmented windows: 17 chunks 10 ms apart are 16 gaps, windows of 8
   * starting at gaps 1, 5, 9: three means of 10 ms. Sampling bands. */
  struct im_record st = rec(IM_KIND_MEASURED, 200, IM_EC_NONE);
  uint32_t us[17];
  for (int i = 0; i < 17; i++)
    us[i] = 1200000 + 10000 * (uint32_t)i;
  st.chunk_us = us;
  st.n_chunks = 17;
  st.temperature = 1.2;
  im_live_observe(l, &st);
  im_buf_reset(&b);
  CHECK_OK(im_live_render(l, &b));
  CHECK_OK(im_buf_append(&b, "", 1));
  page = b.data;
  CHECK_STR(val(page, "\ninfermeter_itl_window_mean_seconds_count "), "3");
  CHECK_NEAR(strtod(val(page, "\ninfermeter_itl_window_mean_seconds_sum "), NULL), 0.03, 1e-12);
  CHECK_STR(val(page, "\ninfermeter_itl_seconds_count "), "16");
  CHECK_STR(val(page, "\ninfermeter_temperature_requests_total{band=\"1-1.5\"} "), "1");
  CHECK_STR(val(page, "\ninfermeter_temperature_requests_total{band=\"unset\"} "), "2");
  CHECK_STR(val(page, "\ninfermeter_top_p_requests_total{band=\"unset\"} "), "3");
  /* No gauges before they are set; then with a server concept. */
  CHECK(!strstr(page, "infermeter_in_flight"));
  struct im_live_gauges g = {.in_flight = 3,
                             .queued = NAN,
                             .scheduled = 5,
                             .dispatched = 5,
                             .dispatch_lag_max_s = 0.001,
                             .receive_lag_max_s = NAN,
                             .time_wait = 7,
                             .established = NAN,
                             .client_valid = 1,
                             .dispatch_late_limit_s = 0.001,
                             .run_elapsed_s = 1,
                             .n_server = 2,
                             .server_name = {"kv_cache_usage", "bad name"},
                             .server_value = {0.5, 1}};
  im_live_set_gauges(l, &g);
  im_buf_reset(&b);
  CHECK_OK(im_live_render(l, &b));
  CHECK_OK(im_buf_append(&b, "", 1));
  page = b.data;
  CHECK_STR(val(page, "\ninfermeter_in_flight "), "3");
  CHECK_STR(val(page, "\ninfermeter_tcp_time_wait "), "7");
  CHECK_STR(val(page, "\ninfermeter_server_kv_cache_usage "), "0.5");
  CHECK(!strstr(page, "infermeter_queued "));
  CHECK(!strstr(page, "bad name"));
  im_buf_cleanup(&b);
  im_live_free(l);
  im_live_free(NULL);
}

struct worker {
  struct im_live *l;
  int n;
};

static void *work(void *arg) {
  struct worker *w = arg;
  struct im_record r = rec(IM_KIND_MEASURED, 200, IM_EC_NONE);
  r.n_chunks = 1;
  for (int i = 0; i < w->n; i++)
    im_live_observe(w->l, &r);
  return NULL;
}

/* Writers of several loaders at once and a scrape in between: no count
 * lost (and clean under TSan). */
static void test_threads(void) {
  struct im_live *l;
  CHECK_OK(im_live_new(&l));
  pthread_t t[4];
  struct worker w = {l, 5000};
  for (int i = 0; i < 4; i++)
    CHECK_EQ(pthread_create(&t[i], NULL, work, &w), 0);
  struct im_buf b;
  im_buf_init(&b, 1 << 20);
  CHECK_OK(im_live_render(l, &b));
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  im_buf_reset(&b);
  CHECK_OK(im_live_render(l, &b));
  CHECK_OK(im_buf_append(&b, "", 1));
  CHECK_STR(val(b.data, "infermeter_ttft_seconds_count "), "20000");
  im_buf_cleanup(&b);
  im_live_free(l);
}

static void test_parse(void) {
  char host[64], msg[256];
  uint16_t port = 0;
  CHECK_OK(im_metrics_listen_parse("9464", host, sizeof host, &port, msg, sizeof msg));
  CHECK_STR(host, "127.0.0.1");
  CHECK_EQ(port, 9464);
  CHECK_OK(im_metrics_listen_parse("0.0.0.0:80", host, sizeof host, &port, msg, sizeof msg));
  CHECK_STR(host, "0.0.0.0");
  CHECK_EQ(port, 80);
  CHECK_OK(im_metrics_listen_parse("[::1]:9", host, sizeof host, &port, msg, sizeof msg));
  CHECK_STR(host, "::1");
  CHECK_EQ(port, 9);
  const char *bad[] = {"",         "x",   "70000",   "-1",      "localhost:80",
                       "1.2.3.4:", ":80", "[::1]80", "[::1:80", "1.2.3.4:80x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_EQ(im_metrics_listen_parse(bad[i], host, sizeof host, &port, msg, sizeof msg), IM_INVAL);
    CHECK(strstr(msg, "--metrics-listen") != NULL);
  }
}

int main(void) {
  test_bounds();
  test_page();
  test_threads();
  test_parse();
  return CHECK_DONE();
}
