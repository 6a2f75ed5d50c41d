/* Unit tests of src/analyze/summary.c: hand-made records with known answers
 * (the arithmetic is written next to each expected number). */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "check.h"
#include "analyze/summary.h"
#include "core/stats.h"
#include "report/summary_json.h"

#define MS INT64_C(1000000)
#define SEC INT64_C(1000000000)

/* A successful first attempt: every time -1 except the ones set below. */
static struct im_record rec(uint64_t id, int64_t t_start) {
  struct im_record r;
  memset(&r, 0, sizeof r);
  r.id = r.logical_id = id;
  r.attempt = 1;
  r.kind = IM_KIND_MEASURED;
  r.t_sched = r.t_sched_first = r.t_dispatch = r.t_start = r.t_send = r.t_hdr = t_start;
  r.t_first = r.t_answer = r.t_last = r.t_end = -1;
  r.temperature = r.top_p = NAN;
  r.prompt_tokens = 10;
  r.output_source = IM_COUNT_USAGE;
  return r;
}

/* Attaches n chunks at us[i] µs after t_start with tok[i] tokens (tok NULL:
 * one each); output_tokens is their sum. */
static void chunks(struct im_record *r, uint32_t *us, uint16_t *tok, uint32_t n) {
  r->chunk_us = us;
  r->chunk_tokens = tok;
  r->n_chunks = n;
  r->t_first = r->t_start + (int64_t)us[0] * 1000;
  r->t_last = r->t_start + (int64_t)us[n - 1] * 1000;
  r->t_end = r->t_last + MS;
  r->output_tokens = 0;
  for (uint32_t i = 0; i < n; i++)
    r->output_tokens += tok ? tok[i] : 1;
}

static struct im_summary_config config(int64_t ws, int64_t we) {
  struct im_summary_config c;
  im_summary_config_default(&c);
  c.window_start_ns = ws;
  c.window_end_ns = we;
  return c;
}

/* Multi-token chunks (MTP): itl pools one value per gap, itl_token one per
 * token. */
static void test_itl_vs_itl_token(void) {
  /* A: chunks at 100, 120, 150, 160 ms with 1, 2, 3, 1 tokens (n_out 7).
   * Gaps 20, 30, 10 ms. itl_token: 20/2 twice, 30/3 three times, 10/1 once
   * = six values of 10. ttft 100, e2el 160, tpot (160-100)/(7-1) = 10.
   * B: single-token chunks at 50, 60, 80 ms: gaps 10, 20 in both. */
  static uint32_t ua[] = {100000, 120000, 150000, 160000};
  static uint16_t ta[] = {1, 2, 3, 1};
  static uint32_t ub[] = {50000, 60000, 80000};
  struct im_record r[2] = {rec(1, 0), rec(2, SEC)};
  chunks(&r[0], ua, ta, 4);
  chunks(&r[1], ub, NULL, 3);
  struct im_summary_config c = config(0, 10 * SEC);
  struct im_summary s;
  memset(&s, 0, sizeof s);
  CHECK_OK(im_summary_compute(r, 2, &c, &s));
  CHECK_EQ(s.completed, 2);
  /* itl: {20, 30, 10, 10, 20}: n 5, mean 90/5 = 18, max 30. */
  CHECK_EQ(s.itl.n, 5);
  CHECK_NEAR(s.itl.mean, 18.0, 1e-9);
  CHECK_NEAR(s.itl.max, 30.0, 1e-9);
  CHECK_EQ(s.v_itl.n, 5);
  CHECK_NEAR(s.v_itl.mean, 18.0, 1e-9);
  /* itl_token: {10 x6, 10, 20}: n 8, mean 90/8 = 11.25, max 20. */
  CHECK_EQ(s.itl_token.n, 8);
  CHECK_NEAR(s.itl_token.mean, 11.25, 1e-9);
  CHECK_NEAR(s.itl_token.max, 20.0, 1e-9);
  /* ttft never enters itl: the smallest itl is 10, not 50 or 100. */
  CHECK_NEAR(s.itl.min, 10.0, 1e-9);
  /* tpot: A (160-100)/6 = 10, B (80-50)/2 = 15. */
  CHECK_EQ(s.tpot.n, 2);
  CHECK_NEAR(s.tpot.mean, 12.5, 1e-9);
  CHECK_EQ(s.total_output_tokens, 10);
  /* No t_answer: ttfa has no samples. */
  CHECK_EQ(s.ttfa.n, 0);
  CHECK(isnan(s.ttfa.mean));
  im_summary_cleanup(&s);
}

/* Reasoning: the answer comes after the reasoning tokens; one-token outputs
 * have no tpot. */
static void test_ttfa_and_single_token(void) {
  static uint32_t ua[] = {100000, 200000, 300000, 400000};
  static uint32_t ub[] = {70000};
  struct im_record r[2] = {rec(1, 0), rec(2, 0)};
  chunks(&r[0], ua, NULL, 4);
  r[0].t_answer = 300 * MS; /* ttfa = 300 - 0 ms, ttft 100 ms */
  r[0].reasoning_tokens = 2;
  chunks(&r[1], ub, NULL, 1); /* n_out 1 */
  struct im_summary_config c = config(0, 10 * SEC);
  struct im_summary s;
  memset(&s, 0, sizeof s);
  CHECK_OK(im_summary_compute(r, 2, &c, &s));
  CHECK_EQ(s.ttfa.n, 1);
  CHECK_NEAR(s.ttfa.mean, 300.0, 1e-9);
  CHECK_NEAR(s.ttft.max, 100.0, 1e-9);
  /* tpot only for A: (400-100)/3 = 100; B (n_out 1) is excluded. */
  CHECK_EQ(s.tpot.n, 1);
  CHECK_EQ(s.v_tpot.n, 1);
  CHECK_NEAR(s.tpot.mean, 100.0, 1e-9);
  CHECK_EQ(s.ttft.n, 2);
  im_summary_cleanup(&s);
}

/* Warm-up, health, probe, aborted and cancelled records stay out of the
 * latency figures and are counted by kind; a cancelled one is not failed. */
static void test_exclusions(void) {
  static uint32_t u[] = {10000, 20000};
  struct im_record r[7];
  for (int i = 0; i < 7; i++) {
    r[i] = rec((uint64_t)i + 1, i * SEC);
    chunks(&r[i], u, NULL, 2);
  }
  r[1].kind = IM_KIND_WARMUP;
  r[2].kind = IM_KIND_HEALTH;
  r[3].kind = IM_KIND_PROBE;
  r[4].kind = IM_KIND_ABORTED;
  r[4].error = IM_EC_ABORTED;
  r[5].error = IM_EC_HTTP_5XX; /* failed measured request */
  r[5].n_chunks = 0;
  r[5].t_first = r[5].t_last = -1;
  r[6].kind = IM_KIND_CANCELLED; /* left by the client, tokens and all */
  struct im_summary_config c = config(0, 10 * SEC);
  struct im_summary s;
  memset(&s, 0, sizeof s);
  CHECK_OK(im_summary_compute(r, 7, &c, &s));
  CHECK_EQ(s.completed, 1);
  CHECK_EQ(s.failed, 1);
  CHECK_EQ(s.aborted, 1);
  CHECK_EQ(s.ttft.n, 1);
  CHECK_EQ(s.e2el.n, 1);
  for (int k = 0; k < IM_KIND_COUNT_; k++)
    CHECK_EQ(s.by_kind[k], k == IM_KIND_MEASURED ? 2 : (k == IM_KIND_RETRY ? 0 : 1));
  CHECK_EQ(s.by_error[IM_EC_NONE], 5);
  CHECK_EQ(s.by_error[IM_EC_ABORTED], 1);
  CHECK_EQ(s.by_error[IM_EC_HTTP_5XX], 1);
  CHECK_EQ(s.total_input_tokens, 10);
  CHECK_EQ(s.total_output_tokens, 2);
  /* kind mean latency: every kind's record has e2el 20 ms, except the failed
   * measured one, whose latency runs to t_end (no token: t_end - t_start =
   * 20 ms + 1 ms), so measured = (20 + 21)/2 = 20.5. */
  CHECK_NEAR(s.kind_mean_e2el_ms[IM_KIND_MEASURED], 20.5, 1e-9);
  CHECK_NEAR(s.kind_mean_e2el_ms[IM_KIND_HEALTH], 20.0, 1e-9);
  CHECK(isnan(s.kind_mean_e2el_ms[IM_KIND_RETRY]));
  im_summary_cleanup(&s);
}

/* A retried request counts once, by its final attempt; its user-visible
 * latency counts from attempt 1's schedule. */
static void test_retry(void) {
  static uint32_t u[] = {200000, 250000};
  struct im_record r[3] = {rec(10, 1000 * MS), rec(11, 1100 * MS), rec(12, 0)};
  r[0].error = IM_EC_HTTP_5XX;
  r[0].t_end = 1050 * MS;
  r[1].logical_id = 10;
  r[1].attempt = 2;
  r[1].kind = IM_KIND_RETRY;
  r[1].t_sched_first = 1000 * MS;
  chunks(&r[1], u, NULL, 2);
  /* A warm-up request's retry stays out too. */
  r[2].kind = IM_KIND_WARMUP;
  r[2].error = IM_EC_RESET;
  r[2].t_end = 5 * MS;
  struct im_record w = rec(13, 10 * MS);
  w.logical_id = 12;
  w.attempt = 2;
  w.kind = IM_KIND_RETRY;
  chunks(&w, u, NULL, 2);
  struct im_record all[4] = {r[0], r[1], r[2], w};
  struct im_summary_config c = config(0, 10 * SEC);
  struct im_summary s;
  memset(&s, 0, sizeof s);
  CHECK_OK(im_summary_compute(all, 4, &c, &s));
  CHECK_EQ(s.completed, 1);
  CHECK_EQ(s.failed, 0);
  /* ttft from attempt 2's t_start: 200 ms; ttft_sched from attempt 1's
   * schedule: 1100 + 200 - 1000 = 300 ms; e2el 250, e2el_sched 350. */
  CHECK_NEAR(s.ttft.mean, 200.0, 1e-9);
  CHECK_NEAR(s.ttft_sched.mean, 300.0, 1e-9);
  CHECK_NEAR(s.e2el.mean, 250.0, 1e-9);
  CHECK_NEAR(s.e2el_sched.mean, 350.0, 1e-9);
  CHECK_EQ(s.by_kind[IM_KIND_RETRY], 2);
  /* vLLM duration: first send 1000 ms to last completion 1100 + 250 ms. */
  CHECK_NEAR(s.duration_s, 0.35, 1e-12);
  /* Client delays over both measured attempts (not the warm-up ones). */
  CHECK_EQ(s.dispatch_lag.n, 2);
  im_summary_cleanup(&s);
}

/* vLLM's linear interpolation vs our nearest rank on five values. */
static void test_percentiles(void) {
  static uint32_t u[5][1] = {{10000}, {20000}, {30000}, {40000}, {100000}};
  struct im_record r[5];
  for (int i = 0; i < 5; i++) {
    r[i] = rec((uint64_t)i + 1, i * SEC);
    chunks(&r[i], u[i], NULL, 1);
  }
  struct im_summary_config c = config(0, 10 * SEC);
  double ps[] = {50, 90, 99, 99.9};
  memcpy(c.percentiles, ps, sizeof ps);
  c.n_percentiles = 4;
  struct im_summary s;
  memset(&s, 0, sizeof s);
  CHECK_OK(im_summary_compute(r, 5, &c, &s));
  /* ttft = {10, 20, 30, 40, 100} ms. Nearest rank ceil(p n), n = 5:
   * p50 -> rank ceil(2.5) = 3 -> 30; p90 -> ceil(4.5) = 5 -> 100;
   * p99 -> ceil(4.95) = 5 -> 100; p99.9 -> 100. Ours are read from the
   * histogram: within its 0.1 % bound of the exact value (docs/metrics.md
   * §2), and exact at the ends (min and max are kept exactly). */
  CHECK_NEAR(s.ttft.pct[0], 30.0, 30.0 * 1e-3);
  CHECK(s.ttft.pct[0] >= 30.0);
  CHECK_NEAR(s.ttft.pct[1], 100.0, 1e-9);
  CHECK_NEAR(s.ttft.pct[2], 100.0, 1e-9);
  CHECK_NEAR(s.ttft.pct[3], 100.0, 1e-9);
  /* Linear, h = (n-1) p = 4p: p50 h = 2 -> 30; p90 h = 3.6 -> 40 + 0.6*60
   * = 76; p99 h = 3.96 -> 40 + 0.96*60 = 97.6; p99.9 h = 3.996 -> 40 +
   * 0.996*60 = 99.76. */
  CHECK_NEAR(s.v_ttft.pct[0], 30.0, 1e-9);
  CHECK_NEAR(s.v_ttft.pct[1], 76.0, 1e-9);
  CHECK_NEAR(s.v_ttft.pct[2], 97.6, 1e-9);
  CHECK_NEAR(s.v_ttft.pct[3], 99.76, 1e-9);
  CHECK_NEAR(s.v_ttft.median, 30.0, 1e-9);
  /* mean 200/5 = 40; squared deviations 900+400+100+0+3600 = 5000:
   * population std sqrt(5000/5) = 31.6227766..., sample sqrt(5000/4) =
   * 35.3553390... */
  CHECK_NEAR(s.ttft.mean, 40.0, 1e-9);
  CHECK_NEAR(s.v_ttft.mean, 40.0, 1e-9);
  CHECK_NEAR(s.v_ttft.std, 31.6227766017, 1e-9);
  /* From bucket midpoints: within 0.1 %. */
  CHECK_NEAR(s.ttft.std, 35.3553390593, 35.36 * 1e-3);
  CHECK_NEAR(s.ttft.min, 10.0, 1e-9);
  CHECK_NEAR(s.ttft.max, 100.0, 1e-9);
  /* One chunk each: no itl, no tpot. */
  CHECK_EQ(s.itl.n, 0);
  CHECK(isnan(s.v_itl.mean));
  im_summary_cleanup(&s);
}

/* scheduled_rps of an open loop, whose window ends on its last arrival
 * (docs/metrics.md §2): that arrival is the window's end, not one of the
 * arrivals it is a rate of: (n - 1) / T, unbiased for Poisson arrivals. */
static void test_scheduled_rate(void) {
  static uint32_t u[] = {1000000};
  struct im_record r[3] = {rec(1, 1 * SEC), rec(2, 4 * SEC), rec(3, 9 * SEC)};
  for (int i = 0; i < 3; i++)
    chunks(&r[i], u, NULL, 1);
  struct im_summary_config c = config(1 * SEC, 9 * SEC); /* warm-up 1 s, last arrival 9 s */
  struct im_summary s;
  memset(&s, 0, sizeof s);
  CHECK_OK(im_summary_compute(r, 3, &c, &s));
  CHECK_EQ(s.scheduled, 3);                          /* the count keeps every arrival */
  CHECK_NEAR(s.scheduled_rate, 2.0 / 8.0, 1e-12);    /* (3 - 1) / 8 s, not 3 / 8 s */
  im_summary_cleanup(&s);
  /* A window that does not end on an arrival counts them all. */
  struct im_summary_config c2 = config(0, 10 * SEC);
  memset(&s, 0, sizeof s);
  CHECK_OK(im_summary_compute(r, 3, &c2, &s));
  CHECK_NEAR(s.scheduled_rate, 3.0 / 10.0, 1e-12);
  im_summary_cleanup(&s);
}

/* Window throughput counts only completions inside the window. */
static void test_window(void) {
  static uint32_t u1[] = {1000000, 2000000, 3000000}; /* 1, 2, 3 s */
  static uint32_t u2[] = {1000000, 5000000};
  struct im_record r[2] = {rec(1, 2 * SEC), rec(2, 7 * SEC)};
  chunks(&r[0], u1, NULL, 3); /* completes at 5 s, 3 tokens */
  chunks(&r[1], u2, NULL, 2); /* completes at 12 s: after the window */
  struct im_summary_config c = config(0, 10 * SEC);
  struct im_summary s;
  memset(&s, 0, sizeof s);
  CHECK_OK(im_summary_compute(r, 2, &c, &s));
  CHECK_NEAR(s.window_s, 10.0, 1e-12);
  CHECK_EQ(s.window_completed, 1);
  CHECK_NEAR(s.window_request_rate, 0.1, 1e-12);    /* 1 / 10 s */
  CHECK_NEAR(s.window_output_tok_rate, 0.3, 1e-12); /* 3 / 10 s */
  CHECK_NEAR(s.window_total_tok_rate, 1.3, 1e-12);  /* (10 + 3) / 10 s */
  CHECK_NEAR(s.completed_rate, 0.1, 1e-12);
  /* Both scheduled (2 s, 7 s) and dispatched in the window: 0.2 /s. */
  CHECK_EQ(s.scheduled, 2);
  CHECK_NEAR(s.scheduled_rate, 0.2, 1e-12);
  CHECK_NEAR(s.dispatched_rate, 0.2, 1e-12);
  /* vLLM counts both over first send (2 s) to last completion (12 s). */
  CHECK_NEAR(s.duration_s, 10.0, 1e-12);
  CHECK_NEAR(s.request_throughput, 0.2, 1e-12);
  CHECK_NEAR(s.output_throughput, 0.5, 1e-12);      /* 5 / 10 */
  CHECK_NEAR(s.total_token_throughput, 2.5, 1e-12); /* (20 + 5) / 10 */
  /* vLLM's token buckets from the first start (2 s): A's chunks at 3, 4, 5 s
   * -> buckets 1, 2, 3; B's at 8, 12 s -> 6, 10: at most 1 per second. */
  CHECK_NEAR(s.max_output_tokens_per_s, 1.0, 1e-12);
  im_summary_cleanup(&s);
}

/* Concurrency over [t_start, t_last): [0,10), [5,15), [10,20) s. */
static void test_concurrency(void) {
  static uint32_t u[] = {1000000, 10000000};
  struct im_record r[3] = {rec(1, 0), rec(2, 5 * SEC), rec(3, 10 * SEC)};
  for (int i = 0; i < 3; i++)
    chunks(&r[i], u, NULL, 2);
  struct im_summary_config c = config(0, 30 * SEC);
  struct im_summary s;
  memset(&s, 0, sizeof s);
  CHECK_OK(im_summary_compute(r, 3, &c, &s));
  /* In flight: 1 on [0,5), 2 on [5,10), 2 on [10,15) (the first ends as
   * the third starts: not 3), 1 on [15,20). Area 5 + 10 + 10 + 5 = 30
   * over the span 20 s: mean 1.5; max 2. */
  CHECK_NEAR(s.concurrency_mean, 1.5, 1e-12);
  CHECK_EQ(s.concurrency_max, 2);
  CHECK_EQ(s.max_concurrent_requests, 2);
  im_summary_cleanup(&s);
}

/* SLO attainment per SLO and all; goodput. */
static void test_slo(void) {
  static uint32_t ua[] = {40000, 150000}; /* ttft 40, e2el 150: good */
  static uint32_t ub[] = {60000, 150000}; /* ttft 60: misses ttft */
  static uint32_t uc[] = {40000, 300000}; /* e2el 300: misses e2el */
  struct im_record r[4] = {rec(1, 0), rec(2, SEC), rec(3, 2 * SEC), rec(4, 3 * SEC)};
  chunks(&r[0], ua, NULL, 2);
  chunks(&r[1], ub, NULL, 2);
  chunks(&r[2], uc, NULL, 2);
  r[3].error = IM_EC_TIMEOUT_TTFT; /* failed: meets nothing */
  r[3].t_end = 3 * SEC + 100 * MS;
  struct im_summary_config c = config(0, 10 * SEC);
  c.has_slo_ttft = c.has_slo_e2el = true;
  c.slo_ttft_ms = 50;
  c.slo_e2el_ms = 200;
  struct im_summary s;
  memset(&s, 0, sizeof s);
  CHECK_OK(im_summary_compute(r, 4, &c, &s));
  /* Over 4 measured requests: ttft met by A and C -> 0.5; e2el by A and B
   * -> 0.5; all by A -> 0.25. */
  CHECK_NEAR(s.slo_ttft_attain, 0.5, 1e-12);
  CHECK_NEAR(s.slo_e2el_attain, 0.5, 1e-12);
  CHECK_NEAR(s.slo_all_attain, 0.25, 1e-12);
  CHECK(isnan(s.slo_tpot_attain));
  CHECK_EQ(s.goodput_requests, 1);
  CHECK_NEAR(s.goodput_rps, 0.1, 1e-12); /* 1 / 10 s */
  /* vLLM: 1 good / duration (0 to C's end at 2.3 s... D ends at 3.1 s). */
  CHECK_NEAR(s.duration_s, 3.1, 1e-12);
  CHECK_NEAR(s.request_goodput, 1 / 3.1, 1e-12);
  /* A tpot SLO: one-token requests count as meeting it (vLLM). */
  static uint32_t ud[] = {10000};
  struct im_record one = rec(5, 0);
  chunks(&one, ud, NULL, 1);
  struct im_summary_config c2 = config(0, 10 * SEC);
  c2.has_slo_tpot = true;
  c2.slo_tpot_ms = 1;
  im_summary_cleanup(&s);
  CHECK_OK(im_summary_compute(&one, 1, &c2, &s));
  CHECK_NEAR(s.slo_tpot_attain, 1.0, 1e-12);
  /* No SLO: goodput undefined, vLLM's request_goodput 0. */
  struct im_summary_config c3 = config(0, 10 * SEC);
  im_summary_cleanup(&s);
  CHECK_OK(im_summary_compute(r, 4, &c3, &s));
  CHECK(isnan(s.goodput_rps));
  CHECK(isnan(s.slo_all_attain));
  CHECK_NEAR(s.request_goodput, 0.0, 0);
  im_summary_cleanup(&s);
}

/* Effective rate: retries, health, probes and dup_fail are not user work. */
static void test_effective_rate(void) {
  static uint32_t u[] = {10000, 20000};
  struct im_record r[8];
  /* U1 fails at 1.2 s. */
  r[0] = rec(1, 1 * SEC);
  r[0].prompt_tokens = 100;
  r[0].requested_tokens = 50;
  r[0].error = IM_EC_HTTP_5XX;
  r[0].t_end = 1200 * MS;
  /* R1: its policy retry at 1.3 s (not a dup_fail: a retry). */
  r[1] = rec(2, 1300 * MS);
  r[1].logical_id = 1;
  r[1].attempt = 2;
  r[1].kind = IM_KIND_RETRY;
  r[1].prompt_tokens = 100;
  r[1].requested_tokens = 50;
  chunks(&r[1], u, NULL, 2);
  /* U2: same content, another logical request, 0.3 s after the failure. */
  r[2] = rec(3, 1500 * MS);
  r[2].prompt_tokens = 100;
  r[2].requested_tokens = 50;
  chunks(&r[2], u, NULL, 2);
  /* U3: same content 1.8 s after the failure: user work. */
  r[3] = rec(4, 3 * SEC);
  r[3].prompt_tokens = 100;
  r[3].requested_tokens = 50;
  chunks(&r[3], u, NULL, 2);
  /* U4: other content 0.2 s after: user work. */
  r[4] = rec(5, 1400 * MS);
  r[4].prompt_tokens = 200;
  r[4].requested_tokens = 50;
  chunks(&r[4], u, NULL, 2);
  r[5] = rec(6, 2 * SEC);
  r[5].kind = IM_KIND_HEALTH;
  r[5].t_end = 2 * SEC + 4 * MS;
  r[6] = rec(7, 4 * SEC);
  r[6].kind = IM_KIND_PROBE;
  chunks(&r[6], u, NULL, 1);
  /* Dispatched after the window: not counted. */
  r[7] = rec(8, 11 * SEC);
  chunks(&r[7], u, NULL, 2);
  struct im_summary_config c = config(0, 10 * SEC);
  struct im_summary s;
  memset(&s, 0, sizeof s);
  CHECK_OK(im_summary_compute(r, 8, &c, &s));
  /* raw = U1 R1 U2 U3 U4 H P = 7 in 10 s; excluded 1 + 1 + 1 + 1 = 4. */
  CHECK_EQ(s.raw_attempts, 7);
  CHECK_EQ(s.retry_attempts, 1);
  CHECK_EQ(s.health_attempts, 1);
  CHECK_EQ(s.probe_attempts, 1);
  CHECK_EQ(s.dup_fail, 1);
  CHECK_NEAR(s.raw_qps, 0.7, 1e-12);
  CHECK_NEAR(s.effective_qps, 0.3, 1e-12);
  CHECK_NEAR(s.effective_ratio, 3.0 / 7.0, 1e-12);
  CHECK_NEAR(s.dup_fail_mean_e2el_ms, 20.0, 1e-9);
  CHECK_NEAR(s.kind_mean_e2el_ms[IM_KIND_HEALTH], 4.0, 1e-9);
  /* The logical request U1/R1 completed once. */
  CHECK_EQ(s.failed, 0);
  CHECK_EQ(s.completed, 5);
  im_summary_cleanup(&s);
}

static double num(const json_t *o, const char *key) {
  const json_t *v = json_object_get(o, key);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

/* vLLM's keys with the right values; null, never NaN, for undefined ones. */
static void test_json(void) {
  static uint32_t u[5][2] = {
      {10000, 20000}, {20000, 40000}, {30000, 60000}, {40000, 80000}, {100000, 200000}};
  struct im_record r[5];
  for (int i = 0; i < 5; i++) {
    r[i] = rec((uint64_t)i + 1, i * SEC);
    chunks(&r[i], u[i], NULL, 2);
  }
  struct im_summary_config c = config(0, 10 * SEC);
  double ps[] = {0.1, 50, 90, 99, 99.9, 99.99};
  memcpy(c.percentiles, ps, sizeof ps);
  c.n_percentiles = 6;
  struct im_summary s;
  memset(&s, 0, sizeof s);
  CHECK_OK(im_summary_compute(r, 5, &c, &s));
  json_t *v = json_object(), *m = json_object();
  CHECK_OK(im_summary_vllm_json(&s, &c, v));
  CHECK_OK(im_summary_metrics_json(&s, &c, m));
  CHECK_EQ(json_integer_value(json_object_get(v, "completed")), 5);
  CHECK_EQ(json_integer_value(json_object_get(v, "failed")), 0);
  CHECK_EQ(json_integer_value(json_object_get(v, "total_input_tokens")), 50);
  CHECK_EQ(json_integer_value(json_object_get(v, "total_output_tokens")), 10);
  CHECK_EQ(json_integer_value(json_object_get(v, "max_concurrent_requests")), 1);
  /* duration: first send 0 to last completion 4 s + 200 ms = 4.2 s. */
  CHECK_NEAR(num(v, "duration"), 4.2, 1e-12);
  CHECK_NEAR(num(v, "request_throughput"), 5 / 4.2, 1e-12);
  CHECK_NEAR(num(v, "output_throughput"), 10 / 4.2, 1e-12);
  CHECK_NEAR(num(v, "total_token_throughput"), 60 / 4.2, 1e-12);
  CHECK(json_is_null(json_object_get(v, "request_goodput")));
  /* ttft {10, 20, 30, 40, 100} as in test_percentiles. */
  CHECK_NEAR(num(v, "mean_ttft_ms"), 40.0, 1e-9);
  CHECK_NEAR(num(v, "median_ttft_ms"), 30.0, 1e-9);
  CHECK_NEAR(num(v, "std_ttft_ms"), 31.6227766017, 1e-9);
  CHECK_NEAR(num(v, "p50_ttft_ms"), 30.0, 1e-9);
  CHECK_NEAR(num(v, "p90_ttft_ms"), 76.0, 1e-9);
  CHECK_NEAR(num(v, "p99_ttft_ms"), 97.6, 1e-9);
  CHECK_NEAR(num(v, "p99.9_ttft_ms"), 99.76, 1e-9);
  /* p99.99: h = 4 * 0.9999 = 3.9996 -> 40 + 0.9996 * 60 = 99.976;
   * p0.1: h = 0.004 -> 10 + 0.004 * 10 = 10.04. */
  CHECK_NEAR(num(v, "p99.99_ttft_ms"), 99.976, 1e-9);
  CHECK_NEAR(num(v, "p0.1_ttft_ms"), 10.04, 1e-9);
  /* e2el = 2 * ttft; tpot = (e2el - ttft)/1 = ttft; itl = one gap = ttft. */
  CHECK_NEAR(num(v, "mean_e2el_ms"), 80.0, 1e-9);
  CHECK_NEAR(num(v, "mean_tpot_ms"), 40.0, 1e-9);
  CHECK_NEAR(num(v, "p99_itl_ms"), 97.6, 1e-9);
  CHECK(json_object_get(v, "p99.9_e2el_ms") != NULL);
  /* Ours: nearest rank p90 = 100; p99.9 key under latency_ms.ttft. */
  const json_t *ttft = json_object_get(json_object_get(m, "latency_ms"), "ttft");
  CHECK_EQ(json_integer_value(json_object_get(ttft, "n")), 5);
  CHECK_NEAR(num(ttft, "p90"), 100.0, 1e-9);
  CHECK_NEAR(num(ttft, "p99.9"), 100.0, 1e-9);
  CHECK_NEAR(num(ttft, "std"), 35.3553390593, 35.36 * 1e-3);
  /* No t_answer anywhere: ttfa's figures are null. */
  const json_t *ttfa = json_object_get(json_object_get(m, "latency_ms"), "ttfa");
  CHECK_EQ(json_integer_value(json_object_get(ttfa, "n")), 0);
  CHECK(json_is_null(json_object_get(ttfa, "mean")));
  CHECK(json_is_null(json_object_get(ttfa, "p50")));
  CHECK(json_object_get(json_object_get(m, "kinds"), "measured") != NULL);
  CHECK(json_object_get(json_object_get(m, "errors"), "http_5xx") != NULL);
  CHECK_NEAR(num(json_object_get(m, "rates"), "completed_rps"), 0.5, 1e-12);
  char *txt = json_dumps(m, JSON_COMPACT);
  char *vtxt = json_dumps(v, JSON_COMPACT);
  CHECK(txt && !strstr(txt, "nan") && !strstr(txt, "NaN") && !strstr(txt, "inf"));
  CHECK(vtxt && !strstr(vtxt, "nan") && !strstr(vtxt, "NaN") && !strstr(vtxt, "inf"));
  free(txt);
  free(vtxt);
  json_decref(v);
  json_decref(m);

  /* No records: every figure null, the counts 0, still valid JSON. */
  im_summary_cleanup(&s);
  CHECK_OK(im_summary_compute(NULL, 0, &c, &s));
  v = json_object();
  m = json_object();
  CHECK_OK(im_summary_vllm_json(&s, &c, v));
  CHECK_OK(im_summary_metrics_json(&s, &c, m));
  CHECK_EQ(json_integer_value(json_object_get(v, "completed")), 0);
  CHECK(json_is_null(json_object_get(v, "mean_ttft_ms")));
  CHECK(json_is_null(json_object_get(v, "request_throughput")));
  CHECK(json_is_null(json_object_get(v, "duration")));
  txt = json_dumps(m, JSON_COMPACT);
  CHECK(txt && !strstr(txt, "nan") && !strstr(txt, "NaN"));
  free(txt);
  json_decref(v);
  json_decref(m);
  im_summary_cleanup(&s);
}

static void test_invalid_config(void) {
  struct im_summary s;
  memset(&s, 0, sizeof s);
  struct im_summary_config c = config(10, 5); /* ends before it starts */
  im_summary_cleanup(&s);
  CHECK_EQ(im_summary_compute(NULL, 0, &c, &s), IM_INVAL);
  c = config(0, 10);
  c.percentiles[0] = 0;
  im_summary_cleanup(&s);
  CHECK_EQ(im_summary_compute(NULL, 0, &c, &s), IM_INVAL);
  c = config(0, 10);
  c.n_percentiles = IM_MAX_PERCENTILES + 1;
  im_summary_cleanup(&s);
  CHECK_EQ(im_summary_compute(NULL, 0, &c, &s), IM_INVAL);
  c = config(0, 10);
  c.has_slo_ttft = true;
  c.slo_ttft_ms = NAN;
  im_summary_cleanup(&s);
  CHECK_EQ(im_summary_compute(NULL, 0, &c, &s), IM_INVAL);
  /* An empty window: window rates undefined. */
  c = config(5, 5);
  im_summary_cleanup(&s);
  CHECK_OK(im_summary_compute(NULL, 0, &c, &s));
  CHECK(isnan(s.window_request_rate));
  CHECK(isnan(s.raw_qps));
  im_summary_cleanup(&s);
}

/* The percentiles' order-statistic intervals (docs/statistics.md): values
 * 10, 20, ... 10n ns are exact in the histogram, so each bound is the value
 * at the rank im_stats_pct_ci gives (checked there against enumeration). */
static void test_pct_ci(void) {
  struct im_summary_config cfg;
  im_summary_config_default(&cfg); /* 50 90 95 99 99.9 */
  cfg.percentiles[4] = 100;        /* the maximum: no interval */
  struct im_hist h;
  CHECK_OK(im_hist_init_default(&h));
  const int ns[] = {10, 100};
  for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
    int n = ns[t];
    im_hist_reset(&h);
    for (int i = n; i >= 1; i--)
      CHECK(im_hist_record(&h, 10 * i));
    struct im_dist d;
    im_dist_from_hist(&d, &h, &cfg);
    for (size_t i = 0; i < 4; i++) {
      struct im_stats_pct_ci ci;
      CHECK_OK(im_stats_pct_ci(n, cfg.percentiles[i] / 100, 0.95, &ci));
      if (ci.lo_rank >= 1)
        CHECK_NEAR(d.pct_lo[i], 10.0 * (double)ci.lo_rank / 1e6, 1e-12);
      else
        CHECK(isnan(d.pct_lo[i]));
      if (ci.hi_rank <= n)
        CHECK_NEAR(d.pct_hi[i], 10.0 * (double)ci.hi_rank / 1e6, 1e-12);
      else
        CHECK(isnan(d.pct_hi[i]));
      CHECK_NEAR(d.pct_cov[i], ci.coverage, 1e-15);
      CHECK(d.pct_cov[i] >= 0.95);
      if (!isnan(d.pct_lo[i]))
        CHECK(d.pct_lo[i] <= d.pct[i]);
      if (!isnan(d.pct_hi[i]))
        CHECK(d.pct_hi[i] >= d.pct[i]);
    }
    CHECK(isnan(d.pct_cov[4]) && isnan(d.pct_lo[4]) && isnan(d.pct_hi[4]));
    if (n == 10) {
      /* Median of 10: [x(2), x(9)] (coverage 1 - 2 * 11/1024); p90 of 10:
       * P(B <= 6) = 0.0128 <= 0.025 < P(B <= 7) = 0.0702, so lo = x(7), and
       * no upper bound (P(B >= 10) = 0.349 > 0.025). */
      CHECK_NEAR(d.pct_lo[0], 20e-6, 1e-15);
      CHECK_NEAR(d.pct_hi[0], 90e-6, 1e-15);
      CHECK_NEAR(d.pct_cov[0], 1 - 22.0 / 1024, 1e-12);
      CHECK_NEAR(d.pct_lo[1], 70e-6, 1e-15);
      CHECK(isnan(d.pct_hi[1]));
    }
    /* In JSON: p50_ci beside p50; a missing side is null with its reason. */
    json_t *o = json_object();
    CHECK(im_dist_json(o, "x", &d, &cfg) == 0);
    json_t *x = json_object_get(o, "x");
    CHECK(json_is_object(json_object_get(x, "p50_ci")));
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(x, "p50_ci"), "lo")),
               d.pct_lo[0], 1e-15);
    CHECK(json_is_null(json_object_get(x, "p100_ci")));
    if (n == 10) {
      json_t *c = json_object_get(x, "p90_ci");
      CHECK(json_is_null(json_object_get(c, "hi")));
      CHECK(json_is_string(json_object_get(json_object_get(c, "null_reasons"), "hi")));
    }
    json_decref(o);
  }
  /* Values that fall inside a wider bucket: lo is its lowest value, hi its
   * highest, so the interval can only widen (by at most 0.1 %). */
  im_hist_reset(&h);
  for (int i = 1; i <= 100; i++)
    CHECK(im_hist_record(&h, 1000003 * i));
  struct im_dist d;
  im_dist_from_hist(&d, &h, &cfg);
  struct im_stats_pct_ci ci;
  CHECK_OK(im_stats_pct_ci(100, 0.5, 0.95, &ci));
  double xl = 1000003.0 * (double)ci.lo_rank / 1e6, xh = 1000003.0 * (double)ci.hi_rank / 1e6;
  CHECK(d.pct_lo[0] <= xl && d.pct_lo[0] >= xl * 0.999);
  CHECK(d.pct_hi[0] >= xh && d.pct_hi[0] <= xh * 1.001);
  im_hist_cleanup(&h);
  /* Empty: no interval. */
  struct im_hist e;
  CHECK_OK(im_hist_init_default(&e));
  im_dist_from_hist(&d, &e, &cfg);
  CHECK(isnan(d.pct_cov[0]));
  im_hist_cleanup(&e);
}

int main(void) {
  test_scheduled_rate();
  test_itl_vs_itl_token();
  test_ttfa_and_single_token();
  test_exclusions();
  test_retry();
  test_percentiles();
  test_window();
  test_concurrency();
  test_slo();
  test_effective_rate();
  test_json();
  test_invalid_config();
  test_pct_ci();
  return CHECK_DONE();
}
