/* Reaching the target (docs/tls.md): net/net.h's checks and error
 * sentences, the record's `target` key both ways, the figures per target
 * (analyze/targets.h) on hand-built records, and the audit's
 * tls_verification check. The paths themselves are tested against real
 * servers in tests/e2e/test_tls.sh, test_auth.sh, test_netpaths.sh and
 * test_targets.sh. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analyze/stage.h"
#include "analyze/targets.h"
#include "analyze/validity.h"
#include "core/buf.h"
#include "net/net.h"
#include "record/record.h"
#include "check.h"

#define MS INT64_C(1000000)
#define SEC INT64_C(1000000000)

static void test_check(void) {
  char msg[512] = "";
  struct im_net n = {0};
  CHECK_EQ(im_net_check(&n, msg, sizeof msg), 0);
  CHECK_EQ(im_net_check(NULL, msg, sizeof msg), 0);
  /* A readable file: this test's own source. */
  const char *here = "tests/unit/test_net.c";
  CHECK_EQ(access(here, R_OK), 0);
  n.cacert = here;
  CHECK_EQ(im_net_check(&n, msg, sizeof msg), 0);
  n.cacert = "tests/unit/no-such-ca.pem";
  CHECK_EQ(im_net_check(&n, msg, sizeof msg), -1);
  CHECK(strstr(msg, "--cacert tests/unit/no-such-ca.pem: cannot read it") != NULL);
  n.cacert = "";
  CHECK_EQ(im_net_check(&n, msg, sizeof msg), -1);
  CHECK(strstr(msg, "--cacert: an empty path") != NULL);
  n.cacert = NULL;
  n.cert = here;
  CHECK_EQ(im_net_check(&n, msg, sizeof msg), -1);
  CHECK(strstr(msg, "--cert without --key") != NULL);
  n.cert = NULL;
  n.key = here;
  CHECK_EQ(im_net_check(&n, msg, sizeof msg), -1);
  CHECK(strstr(msg, "--key without --cert") != NULL);
  n.cert = here;
  CHECK_EQ(im_net_check(&n, msg, sizeof msg), 0);
  n.unix_socket = "";
  CHECK_EQ(im_net_check(&n, msg, sizeof msg), -1);
  CHECK(strstr(msg, "--unix-socket") != NULL);
  CHECK_EQ(im_net_check_file("--key", "tests/unit/none.key", msg, sizeof msg), -1);
  CHECK(strstr(msg, "--key tests/unit/none.key") != NULL);
}

static void test_describe(void) {
  char out[1024];
  struct im_net with_cert = {.cert = "c.pem", .key = "k.pem"};
  im_net_describe(CURLE_PEER_FAILED_VERIFICATION, "unable to get local issuer certificate", NULL,
                  true, out, sizeof out);
  CHECK(strstr(out, "(unable to get local issuer certificate)") != NULL);
  CHECK(strstr(out, "pass --cacert FILE") != NULL);
  CHECK(strstr(out, "--insecure") != NULL);
  /* TLS 1.3's refusal of a missing client certificate, read as an alert. */
  im_net_describe(CURLE_RECV_ERROR, "tlsv13 alert certificate required", NULL, true, out,
                  sizeof out);
  CHECK(strstr(out, "asks for a client certificate: pass --cert FILE --key FILE") != NULL);
  /* ... or seen as a closed connection: a hint, only without --cert. */
  im_net_describe(CURLE_SEND_ERROR, "Broken pipe", NULL, true, out, sizeof out);
  CHECK(strstr(out, "requires a client certificate") != NULL);
  im_net_describe(CURLE_SEND_ERROR, "Broken pipe", &with_cert, true, out, sizeof out);
  CHECK(strstr(out, "client certificate") == NULL);
  im_net_describe(CURLE_GOT_NOTHING, NULL, NULL, false, out, sizeof out); /* http:// */
  CHECK(strstr(out, "client certificate") == NULL);
  im_net_describe(CURLE_SSL_CERTPROBLEM, "unable to set private key file", &with_cert, true, out,
                  sizeof out);
  CHECK(strstr(out, "check --cert and --key") != NULL);
  /* A detail equal to libcurl's sentence is not repeated; no fix for a
   * refused connection. */
  const char *what = curl_easy_strerror(CURLE_COULDNT_CONNECT);
  im_net_describe(CURLE_COULDNT_CONNECT, what, NULL, true, out, sizeof out);
  CHECK_STR(out, what);
  im_net_describe(CURLE_COULDNT_CONNECT, NULL, NULL, true, out, sizeof out);
  CHECK_STR(out, what);
}

static struct im_record rec(uint64_t i, uint16_t target, bool failed, int64_t ttft) {
  static uint32_t chunks[4] = {0, 10000, 20000, 30000};
  struct im_record r;
  memset(&r, 0, sizeof r);
  im_record_reset(&r);
  r.id = r.logical_id = i + 1;
  r.attempt = 1;
  r.kind = IM_KIND_MEASURED;
  r.target = target;
  r.t_sched = r.t_sched_first = r.t_dispatch = r.t_start = r.t_send = (int64_t)i * SEC;
  r.prompt_tokens = 100;
  r.content_hash = i + 1;
  if (failed) {
    r.error = IM_EC_HTTP_5XX;
    r.http_status = 503;
    r.t_end = r.t_start + 5 * MS;
    return r;
  }
  r.http_status = 200;
  r.t_first = r.t_start + ttft;
  r.t_last = r.t_first + 30 * MS;
  r.t_end = r.t_last;
  r.chunk_us = chunks;
  r.n_chunks = 4;
  r.output_tokens = 4;
  r.output_source = IM_COUNT_USAGE;
  return r;
}

static void test_record_target(void) {
  struct im_record r = rec(0, 3, false, 100 * MS), back;
  memset(&back, 0, sizeof back);
  im_record_reset(&back);
  struct im_buf b;
  im_buf_init(&b, 1 << 20);
  char msg[256];
  CHECK_OK(im_record_to_jsonl(&r, &b));
  CHECK(strstr(b.data, "\"target\":2") != NULL); /* the index in manifest.target.urls */
  CHECK_OK(im_record_from_json(b.data, b.len, &back, msg, sizeof msg));
  CHECK_EQ(back.target, 3);
  im_record_reset(&back); /* as the reader does before each line */
  /* One target: no key, read back as 0. */
  r.target = 0;
  im_buf_reset(&b);
  CHECK_OK(im_record_to_jsonl(&r, &b));
  CHECK(strstr(b.data, "\"target\"") == NULL);
  CHECK_OK(im_record_from_json(b.data, b.len, &back, msg, sizeof msg));
  CHECK_EQ(back.target, 0);
  im_record_reset(&back);
  /* Out of range: refused, naming the field. */
  r.target = 1;
  im_buf_reset(&b);
  CHECK_OK(im_record_to_jsonl(&r, &b));
  char *at = strstr(b.data, "\"target\":0");
  CHECK(at != NULL);
  if (at) {
    struct im_buf bad;
    im_buf_init(&bad, 1 << 20);
    CHECK_OK(im_buf_printf(&bad, "%.*s\"target\":16%s", (int)(at - b.data), b.data,
                           at + strlen("\"target\":0")));
    CHECK(im_record_from_json(bad.data, bad.len, &back, msg, sizeof msg) != IM_OK);
    CHECK(strstr(msg, "\"target\"") != NULL);
    im_buf_cleanup(&bad);
  }
  im_record_cleanup(&back);
  im_buf_cleanup(&b);
}

/* Target 0: 6 requests at TTFT 100 ms; target 2 (the third URL): 3 at
 * 300 ms and one failure; target 1 received nothing. */
static void test_targets(void) {
  struct im_record r[10];
  for (int i = 0; i < 6; i++)
    r[i] = rec((uint64_t)i, 1, false, 100 * MS);
  for (int i = 6; i < 9; i++)
    r[i] = rec((uint64_t)i, 3, false, 300 * MS);
  r[9] = rec(9, 3, true, 0);
  struct im_stage_input in = {.recs = r, .n_recs = 10, .slo_target = 0.99,
                              .counters = {.scheduled = 10, .dispatched = 10, .cpu_share = 0.1},
                              .threads = 1};
  im_summary_config_default(&in.cfg);
  in.cfg.window_end_ns = 20 * SEC;
  struct im_stage_figures f;
  CHECK_OK(im_stage_analyze(&in, &f));
  const struct im_targets *t = &f.targets;
  CHECK_EQ(t->n, 2);
  CHECK_EQ(t->g[0].index, 0);
  CHECK_EQ(t->g[0].completed, 6);
  CHECK_EQ(t->g[0].failed, 0);
  CHECK_EQ(t->g[0].output_tokens, 24);
  CHECK_NEAR(t->g[0].ttft.p50, 100.0, 1e-9);
  CHECK_NEAR(t->g[0].tpot.p50, 10.0, 1e-9); /* 30 ms over 3 gaps */
  CHECK_EQ(t->g[1].index, 2);
  CHECK_EQ(t->g[1].completed, 3);
  CHECK_EQ(t->g[1].failed, 1);
  CHECK_NEAR(t->g[1].ttft.p50, 300.0, 1e-9);
  CHECK_EQ(t->g[1].itl.n, 9);
  /* The whole stage is both together. */
  CHECK_EQ(f.sum.completed, 9);
  im_stage_figures_cleanup(&f);
  /* One target: no figures per target. */
  for (int i = 0; i < 10; i++)
    r[i].target = 0;
  CHECK_OK(im_stage_analyze(&in, &f));
  CHECK_EQ(f.targets.n, 0);
  im_stage_figures_cleanup(&f);
}

static const struct im_valid_check *find(const struct im_validity *v, const char *id) {
  for (size_t i = 0; i < v->n; i++)
    if (!strcmp(v->checks[i].id, id))
      return &v->checks[i];
  return NULL;
}

static void test_audit(void) {
  struct im_record r[10];
  for (int i = 0; i < 10; i++)
    r[i] = rec((uint64_t)i, 0, false, 100 * MS);
  struct im_stage_input in = {.recs = r, .n_recs = 10, .slo_target = 0.99,
                              .counters = {.scheduled = 10, .dispatched = 10, .cpu_share = 0.1},
                              .threads = 1};
  im_summary_config_default(&in.cfg);
  in.cfg.window_end_ns = 20 * SEC;
  struct im_stage_figures f;
  CHECK_OK(im_stage_analyze(&in, &f));
  struct im_validity_input vin = {.f = &f, .cfg = &in.cfg, .repeats = 3, .engine = "vllm",
                                  .model = "m", .server_hit_rate = NAN,
                                  .time_wait_slope = NAN, .connections_opened = 1};
  struct im_validity v;
  CHECK_OK(im_validity_compute(&vin, &v));
  CHECK(find(&v, "tls_verification") == NULL); /* verified: no line at all */
  bool before = v.publishable;
  vin.tls_insecure = true;
  CHECK_OK(im_validity_compute(&vin, &v));
  const struct im_valid_check *c = find(&v, "tls_verification");
  CHECK(c != NULL);
  if (c) {
    CHECK_EQ(c->status, IM_CHECK_WARN);
    CHECK(strstr(c->evidence, "--insecure") != NULL);
    CHECK(strstr(c->fix, "--cacert") != NULL);
  }
  CHECK_EQ(v.publishable, before); /* a WARN never changes the verdict */
  CHECK(v.n <= IM_VALID_MAX_CHECKS);
  im_stage_figures_cleanup(&f);
}

int main(void) {
  test_check();
  test_describe();
  test_record_target();
  test_targets();
  test_audit();
  return CHECK_DONE();
}
