/* The population rule (analyze/population.h) and the figures built on it:
 * one fixture of records, every figure that depends on which attempts count
 * worked out by hand next to its check. */
#include <math.h>
#include <string.h>

#include "analyze/cancel.h"
#include "analyze/selfcheck.h"
#include "analyze/population.h"
#include "analyze/stage.h"
#include "analyze/summary.h"
#include "check.h"

#define MS INT64_C(1000000)
#define SEC INT64_C(1000000000)

/* Chunk offsets shared by every successful attempt: only their gaps
 * (10 ms) enter a figure. */
static uint32_t chunks3[3] = {0, 0, 0};

/* An attempt scheduled, dispatched and started at t (+ lag on dispatch). */
static struct im_record att(uint64_t id, uint64_t logical, uint32_t attempt, enum im_req_kind kind,
                            int64_t t, int64_t lag) {
  struct im_record r;
  memset(&r, 0, sizeof r);
  im_record_reset(&r);
  r.id = id;
  r.logical_id = logical;
  r.attempt = attempt;
  r.kind = kind;
  r.t_sched = r.t_sched_first = t;
  r.t_dispatch = r.t_start = r.t_send = t + lag;
  r.prompt_tokens = 100;
  r.content_hash = 0x1000 + logical; /* distinct requests: no dup_fail */
  return r;
}

/* Succeeds: first token ttft after start, 3 chunks 10 ms apart. */
static void ok(struct im_record *r, int64_t ttft) {
  uint32_t us[3];
  r->t_first = r->t_start + ttft;
  r->t_last = r->t_first + 20 * MS;
  r->t_end = r->t_last + MS;
  us[0] = (uint32_t)(ttft / 1000);
  us[1] = us[0] + 10000;
  us[2] = us[0] + 20000;
  memcpy(chunks3, us, sizeof us);
  r->chunk_us = chunks3;
  r->n_chunks = 3;
  r->output_tokens = 3;
  r->output_source = IM_COUNT_USAGE;
  r->http_status = 200;
  r->cached_tokens = 40;
}

static void fail(struct im_record *r, enum im_errclass e) {
  r->error = e;
  r->t_end = r->t_start + 5 * MS;
  r->http_status = e == IM_EC_HTTP_5XX ? 503 : 0;
}

enum { N = 9 };

/* The fixture (window [1 s, 10 s]):
 *   L1  id 1: measured, at 2 s, succeeds, TTFT 100 ms
 *   L2  id 2: measured, at 3 s, fails (503); id 3: its retry at 3.5 s,
 *       succeeds with TTFT 200 ms (user-visible TTFT from 3 s: 700 ms)
 *   L4  id 4: warm-up at 0.5 s, succeeds (counts in no figure)
 *   L5  id 5: measured at 4 s, fails (reset)
 *   L6  id 6: aborted at 5 s
 *   id 7: health at 6 s; id 8: probe at 7 s (never in a logical request)
 *   L9  id 9: measured at 8 s, dispatched 3 ms late, succeeds, TTFT 50 ms */
static void fixture(struct im_record *r) {
  r[0] = att(1, 1, 1, IM_KIND_MEASURED, 2 * SEC, 0);
  ok(&r[0], 100 * MS);
  r[1] = att(2, 2, 1, IM_KIND_MEASURED, 3 * SEC, 0);
  fail(&r[1], IM_EC_HTTP_5XX);
  r[2] = att(3, 2, 2, IM_KIND_RETRY, 3 * SEC + 500 * MS, 0);
  r[2].t_sched_first = 3 * SEC;
  ok(&r[2], 200 * MS);
  r[3] = att(4, 4, 1, IM_KIND_WARMUP, 500 * MS, 0);
  ok(&r[3], 100 * MS);
  r[4] = att(5, 5, 1, IM_KIND_MEASURED, 4 * SEC, 0);
  fail(&r[4], IM_EC_RESET);
  r[5] = att(6, 6, 1, IM_KIND_ABORTED, 5 * SEC, 0);
  r[5].error = IM_EC_ABORTED;
  r[6] = att(7, 7, 1, IM_KIND_HEALTH, 6 * SEC, 0);
  r[6].t_end = r[6].t_start + MS;
  r[7] = att(8, 8, 1, IM_KIND_PROBE, 7 * SEC, 0);
  ok(&r[7], 10 * MS);
  r[8] = att(9, 9, 1, IM_KIND_MEASURED, 8 * SEC, 3 * MS);
  ok(&r[8], 50 * MS);
}

static void test_grouping(void) {
  struct im_record r[N];
  fixture(r);
  struct im_population p;
  CHECK_OK(im_population_build(r, N, SEC, 10 * SEC, &p));
  /* Logical requests: 1, 2 (two attempts), 4, 5, 6, 9; health and probe
   * stand apart. */
  CHECK_EQ(p.n_req, 6);
  CHECK_EQ(p.n_attempts, 7);
  CHECK_EQ(p.n_other, 2);
  enum im_outcome want[6] = {IM_OUTCOME_COMPLETED, IM_OUTCOME_COMPLETED, IM_OUTCOME_WARMUP,
                             IM_OUTCOME_FAILED,    IM_OUTCOME_ABORTED,   IM_OUTCOME_COMPLETED};
  for (int i = 0; i < 6; i++)
    CHECK_EQ(p.req[i].outcome, want[i]);
  /* L2: first attempt id 2, final id 3, user-visible base 3 s. */
  CHECK_EQ(p.req[1].first->id, 2);
  CHECK_EQ(p.req[1].final->id, 3);
  CHECK_EQ(p.req[1].end - p.req[1].begin, 2);
  CHECK_EQ(im_logical_sched_base(&p.req[1]), 3 * SEC);
  CHECK(im_population_in_window(&p, SEC));
  CHECK(im_population_in_window(&p, 10 * SEC));
  CHECK(!im_population_in_window(&p, 10 * SEC + 1));
  CHECK(!im_population_in_window(&p, -1));
  /* Input order does not change the grouping: reversed records. */
  struct im_record rev[N];
  for (int i = 0; i < N; i++)
    rev[i] = r[N - 1 - i];
  struct im_population q;
  CHECK_OK(im_population_build(rev, N, SEC, 10 * SEC, &q));
  CHECK_EQ(q.n_req, 6);
  for (size_t i = 0; i < q.n_req; i++) {
    CHECK_EQ(q.req[i].final->id, p.req[i].final->id);
    CHECK_EQ(q.req[i].outcome, p.req[i].outcome);
  }
  im_population_cleanup(&q);
  im_population_cleanup(&p);
  CHECK_EQ(im_population_build(r, N, 2, 1, &p), IM_INVAL);
}

static void test_figures(void) {
  struct im_record r[N];
  fixture(r);
  struct im_summary_config c;
  im_summary_config_default(&c);
  c.window_start_ns = SEC;
  c.window_end_ns = 10 * SEC;
  struct im_summary s;
  CHECK_OK(im_summary_compute(r, N, &c, &s));
  /* Outcomes once per logical request, warm-up left out. */
  CHECK_EQ(s.completed, 3);
  CHECK_EQ(s.failed, 1);
  CHECK_EQ(s.aborted, 1);
  /* TTFT over the final attempts of completed requests: 100, 200 (the
   * retry that succeeded), 50 ms; its histogram holds the same three. */
  CHECK_EQ(s.ttft.n, 3);
  CHECK_EQ(im_hist_count(&s.hist[IM_H_TTFT]), 3);
  CHECK_EQ(s.v_ttft.n, 3);
  CHECK_NEAR(s.ttft.min, 50.0, 1e-9);
  CHECK_NEAR(s.ttft.max, 200.0, 1e-9);
  CHECK_NEAR(s.ttft.mean, 350.0 / 3, 1e-9);
  /* From the schedule: L1 100, L2 3.5 s + 200 ms - 3 s = 700, L9 3 + 50 = 53. */
  CHECK_NEAR(s.ttft_sched.max, 700.0, 1e-9);
  CHECK_NEAR(s.ttft_sched.min, 53.0, 1e-9);
  /* ITL: two 10 ms gaps per completed request. */
  CHECK_EQ(s.itl.n, 6);
  CHECK_EQ(s.v_itl.n, 6);
  CHECK_NEAR(s.v_itl.mean, 10.0, 1e-9);
  /* Client delays over every attempt of non-warm-up requests: ids 1, 2,
   * 3, 5, 6, 9 (health, probe and the warm-up excluded). */
  CHECK_EQ(s.dispatch_lag.n, 6);
  CHECK_NEAR(s.dispatch_lag.max, 3.0, 1e-9);
  /* Census: every record. */
  CHECK_EQ(s.by_kind[IM_KIND_MEASURED], 4);
  CHECK_EQ(s.by_kind[IM_KIND_RETRY], 1);
  CHECK_EQ(s.by_kind[IM_KIND_WARMUP], 1);
  CHECK_EQ(s.by_kind[IM_KIND_HEALTH], 1);
  CHECK_EQ(s.by_kind[IM_KIND_PROBE], 1);
  CHECK_EQ(s.by_error[IM_EC_HTTP_5XX], 1);
  /* Effective rate: attempts dispatched in the window = all but the
   * warm-up (8); retry 1, health 1, probe 1 excluded -> 5 / 8. */
  CHECK_EQ(s.raw_attempts, 8);
  CHECK_EQ(s.retry_attempts, 1);
  CHECK_EQ(s.health_attempts, 1);
  CHECK_EQ(s.probe_attempts, 1);
  CHECK_NEAR(s.effective_ratio, 5.0 / 8.0, 1e-12);
  /* The classes table: measured = ids 1, 2, 5, 6, 9; one each of retry,
   * health, probe. The probe's latency: first token 10 ms + 20 ms. */
  CHECK_EQ(s.traffic[IM_TRAFFIC_MEASURED].count, 5);
  CHECK_EQ(s.traffic[IM_TRAFFIC_RETRY].count, 1);
  CHECK_EQ(s.traffic[IM_TRAFFIC_HEALTH].count, 1);
  CHECK_EQ(s.traffic[IM_TRAFFIC_PROBE].count, 1);
  CHECK_EQ(s.traffic[IM_TRAFFIC_DUP_FAIL].count, 0);
  CHECK_NEAR(s.traffic[IM_TRAFFIC_MEASURED].share, 5.0 / 8.0, 1e-12);
  CHECK_NEAR(s.traffic[IM_TRAFFIC_PROBE].p99_latency_ms, 30.0, 1e-9);
  CHECK(isnan(s.traffic[IM_TRAFFIC_DUP_FAIL].mean_latency_ms));
  /* Cache figures over completed final attempts: 3 x 40 of 3 x 100. */
  CHECK_EQ(s.cache_prompt_tokens, 300);
  CHECK_EQ(s.cache_cached_tokens, 120);
  CHECK_NEAR(s.cache_hit_rate, 0.4, 1e-12);
  /* Scheduled and dispatched in the window: first attempts of measured
   * and aborted requests (ids 1, 2, 5, 6, 9). */
  CHECK_EQ(s.scheduled, 5);
  CHECK_EQ(s.dispatched, 5);
  im_summary_cleanup(&s);
}

/* The self-check judges the same attempts as the dispatch-lag histogram. */
static void test_self_check(void) {
  struct im_record r[N];
  fixture(r);
  struct im_summary_config c;
  im_summary_config_default(&c);
  c.window_start_ns = SEC;
  c.window_end_ns = 10 * SEC;
  struct im_stage_input in = {.recs = r, .n_recs = N, .cfg = c, .slo_target = 0.99,
                              .counters = {.scheduled = 5, .dispatched = 5, .cpu_share = 0.1},
                              .threads = 1};
  struct im_stage_figures f;
  CHECK_OK(im_stage_analyze(&in, &f));
  /* 6 dispatches, 1 later than 1 ms: P(B >= 1 | 6, 0.01) = 1 - 0.99^6 =
   * 0.0585 >= 0.05, so one late dispatch among six passes. */
  CHECK_EQ(f.check.lag_n, 6);
  CHECK_EQ(f.check.lag_late, 1);
  CHECK_NEAR(f.check.lag_p_value, 1.0 - pow(0.99, 6), 1e-9);
  CHECK(f.check.pass_lag);
  /* Its p99 is the summary's (same histogram): the 3 ms dispatch. */
  CHECK_NEAR(f.check.dispatch_lag_p99_ms, 3.0, 1e-9);
  CHECK(f.check.valid);
  im_stage_figures_cleanup(&f);
  /* Two of six late: P(B >= 2 | 6, 0.01) = 0.00146 < 0.05: INVALID. */
  r[0].t_dispatch += 5 * MS;
  CHECK_OK(im_stage_analyze(&in, &f));
  CHECK_EQ(f.check.lag_late, 2);
  CHECK(!f.check.pass_lag);
  CHECK(!f.check.valid);
  im_stage_figures_cleanup(&f);
  /* One late dispatch again, but 15 ms late: the binomial test passes, the
   * hard cap max(10 ms, 10 % of the median TTFT = 10 ms) does not. */
  r[0].t_dispatch -= 5 * MS;
  r[8].t_dispatch = r[8].t_sched + 15 * MS;
  CHECK_OK(im_stage_analyze(&in, &f));
  CHECK_EQ(f.check.lag_late, 1);
  CHECK(f.check.pass_lag_test);
  CHECK_NEAR(f.check.dispatch_lag_cap_ms, 10.0, 10.0 * 1e-3); /* the median from the histogram */
  CHECK_NEAR(f.check.dispatch_lag_max_ms, 15.0, 1e-9);
  CHECK(!f.check.pass_lag_cap);
  CHECK(!f.check.valid);
  im_stage_figures_cleanup(&f);
  /* Receive lag, by the same rule from the engine's histogram: 100 reads,
   * 1 later than 1 ms passes (P(B >= 1) = 0.63); 5 later fail
   * (P(B >= 5 | 100, 0.01) = 0.0034). Dispatch lag back to clean. */
  r[8].t_dispatch = r[8].t_sched;
  struct im_hist rl;
  CHECK_OK(im_hist_init_default(&rl));
  for (int i = 0; i < 99; i++)
    CHECK(im_hist_record(&rl, 200000));
  CHECK(im_hist_record(&rl, 3 * MS));
  in.receive_lag = &rl;
  CHECK_OK(im_stage_analyze(&in, &f));
  CHECK(f.check.receive_measured);
  CHECK_EQ(f.check.recv_n, 100);
  CHECK_EQ(f.check.recv_late, 1);
  CHECK(f.check.pass_recv);
  CHECK(f.check.valid);
  im_stage_figures_cleanup(&f);
  for (int i = 0; i < 4; i++)
    CHECK(im_hist_record(&rl, 2 * MS));
  CHECK_OK(im_stage_analyze(&in, &f));
  CHECK_EQ(f.check.recv_late, 5);
  CHECK(!f.check.pass_recv);
  CHECK(!f.check.valid);
  im_stage_figures_cleanup(&f);
  im_hist_cleanup(&rl);
}

/* Who was late (analyze/selfcheck.h) on record fixtures: NA requests at
 * 2 req/s, TTFT 100 ms (+ 0.01 ms per request: a tight spread) from
 * dispatch, every record saying who caused its lag. */
#define NA 100
static void attributed(struct im_record *r, int64_t ttft_extra) {
  for (int i = 0; i < NA; i++) {
    r[i] = att((uint64_t)i + 1, (uint64_t)i + 1, 1, IM_KIND_MEASURED, SEC + i * 500 * MS, 0);
    ok(&r[i], 100 * MS + i * 10000 + ttft_extra);
    r[i].lag_client_us = 5;
    r[i].read_first_us = r[i].read_first_client_us = 10;
    r[i].read_last_us = r[i].read_last_client_us = 10;
  }
}

/* Delays the dispatch of r by lag, of which client is the client's. */
static void late(struct im_record *r, int64_t lag, int64_t client) {
  r->t_dispatch += lag;
  r->t_start += lag;
  r->t_send += lag;
  r->t_first += lag;
  r->t_last += lag;
  r->t_end += lag;
  r->lag_client_us = (int32_t)(client / 1000);
}

static void analyze_attr(struct im_record *r, const struct im_hostlat *host,
                         struct im_stage_figures *f) {
  struct im_summary_config c;
  im_summary_config_default(&c);
  c.window_start_ns = 0;
  c.window_end_ns = 60 * SEC;
  struct im_stage_input in = {.recs = r, .n_recs = NA, .cfg = c, .slo_target = 0.99,
                              .counters = {.scheduled = NA, .dispatched = NA, .cpu_share = 0.01},
                              .threads = 1, .host = host};
  CHECK_OK(im_stage_analyze(&in, f));
}

static void test_self_check_attribution(void) {
  struct im_record r[NA];
  struct im_stage_figures f;
  /* Clean. */
  attributed(r, 0);
  analyze_attr(r, NULL, &f);
  CHECK(f.check.attributed);
  CHECK(f.check.valid);
  CHECK_EQ(f.check.lag_late, 0);
  CHECK(strstr(f.check.summary, "no dispatch later than") != NULL);
  CHECK_STR(f.check.advice, "");
  im_stage_figures_cleanup(&f);

  /* Ten dispatches 3 ms late while the loop slept (the host's): the old
   * rule (10 of 100 late: P(B >= 10 | 100, 0.01) ~ 1e-8) failed this run;
   * it is VALID, with the host named and the effect quantified. */
  attributed(r, 0);
  for (int i = 0; i < 10; i++)
    late(&r[i * 10], 3 * MS, 20000);
  analyze_attr(r, NULL, &f);
  CHECK_EQ(f.check.lag_late, 10);
  CHECK_EQ(f.check.lag_late_host, 10);
  CHECK_EQ(f.check.lag_late_client, 0);
  CHECK(f.check.pass_lag);
  CHECK(f.check.pass_figures);
  CHECK(f.check.valid);
  CHECK(!f.check.host_warn); /* no stall past the cap */
  CHECK(strstr(f.check.summary, "10 dispatches 3.0-3.0 ms late, host") != NULL);
  CHECK(strstr(f.check.summary, "adds <= ") != NULL);
  CHECK(strstr(f.check.advice, "taskset") != NULL);
  CHECK(strstr(f.check.advice, "--threads N or") == NULL);
  im_stage_figures_cleanup(&f);

  /* The same lateness worked through by the client: INVALID, with the
   * client's advice. */
  attributed(r, 0);
  for (int i = 0; i < 10; i++)
    late(&r[i * 10], 3 * MS, 3 * MS);
  analyze_attr(r, NULL, &f);
  CHECK_EQ(f.check.lag_late_client, 10);
  CHECK(!f.check.pass_lag_test);
  CHECK(!f.check.valid);
  CHECK(strstr(f.check.advice, "--threads") != NULL);
  im_stage_figures_cleanup(&f);

  /* One 30 ms stall of the host, which the probe saw: a WARN, VALID. */
  attributed(r, 0);
  late(&r[50], 30 * MS, 50000);
  struct im_hostlat host;
  im_hostlat_init(&host, 2 * MS);
  for (int i = 0; i < 1000; i++)
    im_hostlat_add(&host, i * 2 * MS, 100000);
  im_hostlat_add(&host, r[50].t_sched + 29 * MS, 29 * MS);
  analyze_attr(r, &host, &f);
  CHECK(f.check.valid);
  CHECK(f.check.host_warn);
  CHECK_EQ(f.check.stalls_host, 1);
  CHECK_EQ(f.check.stalls_host_seen, 1);
  CHECK_EQ(f.check.host_wakes, 1001);
  CHECK_EQ(f.check.host_late, 1);
  CHECK(strstr(f.check.summary, "probe saw 0.1% late wake-ups") != NULL);
  CHECK(strstr(f.check.summary, "1 host stall past ") != NULL);
  CHECK(strstr(f.check.summary, " ms (seen by the probe)") != NULL);
  im_stage_figures_cleanup(&f);
  /* A second host stall the probe did not see: 1 of 2 seen, said so. */
  late(&r[80], 20 * MS, 50000);
  analyze_attr(r, &host, &f);
  CHECK(f.check.valid);
  CHECK_EQ(f.check.stalls_host, 2);
  CHECK_EQ(f.check.stalls_host_seen, 1);
  CHECK(strstr(f.check.summary, "2 host stalls past ") != NULL);
  CHECK(strstr(f.check.summary, " ms (1 seen by the probe)") != NULL);
  im_stage_figures_cleanup(&f);
  /* Without a probe, nothing is said of one. */
  analyze_attr(r, NULL, &f);
  CHECK(strstr(f.check.summary, "probe") == NULL);
  im_stage_figures_cleanup(&f);
  attributed(r, 0); /* back to the one stall */
  late(&r[50], 30 * MS, 50000);
  /* The same stall worked through by the client: INVALID by the cap. */
  r[50].lag_client_us = 30000;
  analyze_attr(r, &host, &f);
  CHECK(!f.check.pass_lag_cap);
  CHECK(!f.check.valid);
  im_stage_figures_cleanup(&f);
  im_hostlat_cleanup(&host);

  /* A client falling behind: its lag grows 0.1 ms per request (each below
   * the 1 ms limit for the first ten: the test alone would not see it
   * early). The last quarter's median exceeds the first's by far more
   * than 1 ms. */
  attributed(r, 0);
  for (int i = 0; i < NA; i++)
    late(&r[i], i * 100000, i * 100000);
  analyze_attr(r, NULL, &f);
  CHECK(!f.check.pass_growth);
  CHECK_NEAR(f.check.lag_growth_ms, 7.5, 1e-9);
  CHECK(!f.check.valid);
  CHECK(strstr(f.check.summary, "grew by 7.5 ms") != NULL);
  im_stage_figures_cleanup(&f);

  /* The client reads every first token 5 ms late (its own work): no
   * dispatch is late, but TTFT p50 moves by 5 ms, above max(1 % = 1.05 ms,
   * its CI half-width of about 0.1 ms). */
  attributed(r, 5 * MS);
  for (int i = 0; i < NA; i++)
    r[i].read_first_us = r[i].read_first_client_us = 5000;
  analyze_attr(r, NULL, &f);
  CHECK(f.check.pass_lag);
  CHECK(!f.check.pass_figures);
  CHECK_STR(f.check.fig[0].name, "TTFT p50");
  CHECK_NEAR(f.check.fig[0].value_ms - f.check.fig[0].client_free_ms, 5.0, 1e-6);
  CHECK(!f.check.fig[0].pass);
  CHECK(f.check.fig[3].pass); /* E2E p50: its last read was on time */
  CHECK(!f.check.valid);
  im_stage_figures_cleanup(&f);
  /* ... and 0.5 ms (below 1 %): VALID. */
  attributed(r, 0);
  for (int i = 0; i < NA; i++)
    r[i].read_first_us = r[i].read_first_client_us = 500;
  analyze_attr(r, NULL, &f);
  CHECK(f.check.pass_figures);
  CHECK(f.check.valid);
  im_stage_figures_cleanup(&f);

  /* A burst: every request due at 1 s, dispatched 1 ms apart by the
   * client (lag up to 99 ms, all the client's): not judged, VALID. */
  attributed(r, 0);
  for (int i = 0; i < NA; i++) {
    int64_t d = SEC + i * MS;
    r[i].t_sched = r[i].t_sched_first = SEC;
    r[i].t_dispatch = d;
    r[i].lag_client_us = (int32_t)((d - SEC) / 1000);
  }
  analyze_attr(r, NULL, &f);
  CHECK(f.check.burst);
  CHECK(f.check.pass_lag);
  CHECK(f.check.pass_growth);
  CHECK(f.check.pass_figures);
  CHECK(f.check.valid);
  CHECK(strstr(f.check.summary, "a burst") != NULL);
  im_stage_figures_cleanup(&f);
}

/* The window rule: warm-up by time or by requests, closed loops, cuts. */
static void test_window(void) {
  struct im_record r[N];
  fixture(r);
  int64_t a, b;
  struct im_window_rule rule = {.warmup_ns = SEC};
  im_stage_window(r, N, &rule, &a, &b);
  CHECK_EQ(a, SEC);
  CHECK_EQ(b, 8 * SEC); /* the last first-attempt arrival (the probe at 7 s counts too) */
  rule = (struct im_window_rule){.warmup_by_requests = true};
  im_stage_window(r, N, &rule, &a, &b);
  CHECK_EQ(a, 2 * SEC); /* the first non-warm-up arrival */
  rule = (struct im_window_rule){.closed = true, .duration_ns = 9 * SEC, .warmup_ns = SEC};
  im_stage_window(r, N, &rule, &a, &b);
  CHECK_EQ(b, 9 * SEC);
  rule = (struct im_window_rule){.warmup_ns = SEC, .interrupted = true, .elapsed_ns = 5 * SEC};
  im_stage_window(r, N, &rule, &a, &b);
  CHECK_EQ(b, 5 * SEC);
  rule = (struct im_window_rule){.warmup_ns = 20 * SEC};
  im_stage_window(r, N, &rule, &a, &b);
  CHECK_EQ(a, 0); /* nothing after the warm-up: the whole stage */
  /* A burst (--rate inf): every arrival at 0; the window runs to the end
   * of the last attempt, not to the last arrival (it would be empty). */
  int64_t last_end = 0;
  for (int i = 0; i < N; i++) {
    r[i].t_sched = 0;
    if (r[i].t_end > last_end)
      last_end = r[i].t_end;
  }
  CHECK(last_end > 0);
  rule = (struct im_window_rule){.burst = true};
  im_stage_window(r, N, &rule, &a, &b);
  CHECK_EQ(a, 0);
  CHECK_EQ(b, last_end);
  rule.burst = false;
  im_stage_window(r, N, &rule, &a, &b);
  CHECK_EQ(b, 0); /* the same records read as a schedule: an empty window */
  rule = (struct im_window_rule){.burst = true, .interrupted = true, .elapsed_ns = last_end / 2};
  im_stage_window(r, N, &rule, &a, &b);
  CHECK_EQ(b, last_end / 2); /* a cut burst ends at the cut */
}

/* Attempts the client let go (record.h `cancelled`, issue 29 point 8): a
 * cancelled warm-up stays a warm-up, is neither a success nor a failure
 * (no dup_fail for a later identical request), and is counted; a measured
 * attempt marked cancelled in a hand-written file is CANCELLED. */
static void test_cancelled(void) {
  enum { M = 4 };
  struct im_record r[M];
  /* id 1: warm-up at 0.5 s, cut by the client before a token. */
  r[0] = att(1, 1, 1, IM_KIND_WARMUP, 500 * MS, 0);
  r[0].cancelled = true;
  r[0].http_status = 200;
  r[0].t_end = r[0].t_start + 20 * MS;
  r[0].content_hash = 0x77;
  /* id 2: measured at 1.2 s, the same request: not a retry of a failure. */
  r[1] = att(2, 2, 1, IM_KIND_MEASURED, 1200 * MS, 0);
  ok(&r[1], 100 * MS);
  r[1].content_hash = 0x77;
  /* id 3: warm-up with tokens, let go: no success either. */
  r[2] = att(3, 3, 1, IM_KIND_WARMUP, 600 * MS, 0);
  ok(&r[2], 50 * MS);
  r[2].cancelled = true;
  /* id 4: kind measured but marked cancelled. */
  r[3] = att(4, 4, 1, IM_KIND_MEASURED, 2 * SEC, 0);
  ok(&r[3], 50 * MS);
  r[3].cancelled = true;
  CHECK(!im_attempt_succeeded(&r[2]));
  CHECK(!im_attempt_succeeded(&r[3]));
  CHECK(im_attempt_succeeded(&r[1]));
  struct im_population p;
  CHECK_OK(im_population_build(r, M, SEC, 10 * SEC, &p));
  CHECK_EQ(p.n_req, 4);
  enum im_outcome want[4] = {IM_OUTCOME_WARMUP, IM_OUTCOME_COMPLETED, IM_OUTCOME_WARMUP,
                             IM_OUTCOME_CANCELLED};
  for (int i = 0; i < 4; i++)
    CHECK_EQ(p.req[i].outcome, want[i]);
  struct im_summary_config c;
  im_summary_config_default(&c);
  c.window_start_ns = 0;
  c.window_end_ns = 10 * SEC;
  struct im_cancel_figs cf;
  CHECK_OK(im_cancel_compute(&p, &c, &cf));
  CHECK_EQ(cf.warmup, 2);
  CHECK_EQ(cf.cancelled, 1);
  CHECK_EQ(cf.requests, 2);
  struct im_summary s;
  CHECK_OK(im_summary_compute(r, M, &c, &s));
  CHECK_EQ(s.by_kind[IM_KIND_WARMUP], 2);
  CHECK_EQ(s.by_kind_cancelled[IM_KIND_WARMUP], 2);
  CHECK_EQ(s.by_kind_cancelled[IM_KIND_MEASURED], 1);
  CHECK_EQ(s.by_error[IM_EC_TRUNCATED], 0);
  CHECK_EQ(s.dup_fail, 0);
  CHECK_EQ(s.completed, 1);
  CHECK_EQ(s.failed, 0);
  im_summary_cleanup(&s);
  im_population_cleanup(&p);
}

int main(void) {
  test_cancelled();
  test_grouping();
  test_figures();
  test_self_check();
  test_self_check_attribution();
  test_window();
  return CHECK_DONE();
}
