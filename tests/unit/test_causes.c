/* Root causes of SLO violations (analyze/causes.h) on hand-built records
 * and a hand-built server series: one planted cause at a time, each fires
 * alone; a run without a violation reports nothing, a violation without a
 * pattern is unexplained; one request, equal values and n < 3 fire
 * nothing; the verdicts of a run and of the same run 4 times faster (times
 * and limits divided by 4) are the same. */
#include <math.h>
#include <string.h>

#include "analyze/causes.h"
#include "check.h"

#define MS INT64_C(1000000)
#define N 30
#define MAXC 64

/* A stage's records, their chunk offsets, the server's series and its
 * figures, and the SLOs. */
struct fx {
  struct im_record r[N];
  uint32_t us[N][MAXC];
  size_t n;
  struct im_server_series_pt pts[64];
  struct im_server_source_figs src;
  struct im_server_figures sf;
  bool has_server;
  struct im_summary_config cfg;
  struct im_client_counters counters;
  const struct im_hostlat *host; /* the host probe's; NULL: none */
};

/* Request i: scheduled at i * spacing, first token after ttft, then
 * chunks - 1 gaps of gap each. */
static void req(struct fx *x, size_t i, int64_t spacing, int64_t ttft, uint32_t chunks,
                int64_t gap) {
  struct im_record *r = &x->r[i];
  memset(r, 0, sizeof *r);
  im_record_reset(r);
  r->id = r->logical_id = i + 1;
  r->attempt = 1;
  r->t_sched = r->t_sched_first = r->t_dispatch = r->t_start = r->t_send = (int64_t)i * spacing;
  r->t_first = r->t_start + ttft;
  r->chunk_us = x->us[i];
  r->n_chunks = chunks;
  for (uint32_t k = 0; k < chunks; k++)
    x->us[i][k] = (uint32_t)((ttft + (int64_t)k * gap) / 1000);
  r->t_last = r->t_end = r->t_start + (int64_t)x->us[i][chunks - 1] * 1000;
  r->output_tokens = chunks;
  r->prompt_tokens = 100;
  r->conn_new = i == 0;
  r->content_hash = i + 1;
}

/* Delays chunks k.. of request i by d (a stall before chunk k). */
static void stall(struct fx *x, size_t i, uint32_t k, int64_t d) {
  struct im_record *r = &x->r[i];
  for (uint32_t j = k; j < r->n_chunks; j++)
    x->us[i][j] += (uint32_t)(d / 1000);
  r->t_last = r->t_end = r->t_start + (int64_t)x->us[i][r->n_chunks - 1] * 1000;
}

/* n requests 100 ms apart, TTFT 20 ms, 21 chunks 10 ms apart (E2E 220 ms,
 * TPOT 10 ms); no SLO yet; no server. */
static void base(struct fx *x, size_t n) {
  memset(x, 0, sizeof *x);
  x->n = n;
  for (size_t i = 0; i < n; i++)
    req(x, i, 100 * MS, 20 * MS, 21, 10 * MS);
  im_summary_config_default(&x->cfg);
  x->cfg.window_end_ns = (int64_t)n * 100 * MS;
  x->counters = (struct im_client_counters){.scheduled = n, .dispatched = n, .cpu_share = 0.1};
  snprintf(x->sf.tcp.not_collected, sizeof x->sf.tcp.not_collected, "no TCP sample");
}

static void slo_e2el(struct fx *x, double ms) {
  x->cfg.has_slo_e2el = true;
  x->cfg.slo_e2el_ms = ms;
}

/* A server series: one sample every 100 ms over the run, KV usage 0.1,
 * nothing waiting, no preemption. */
static void server(struct fx *x) {
  x->has_server = true;
  x->src.n_series = x->n + 4;
  x->src.series = x->pts;
  for (size_t j = 0; j < x->src.n_series; j++)
    x->pts[j] = (struct im_server_series_pt){.t_s = (double)j * 0.1, .kv_cache_usage = 0.1};
  x->sf.src = &x->src;
  x->sf.n_src = 1;
}

/* Runs the stage analysis and the causes; *c gets the verdicts. */
static void analyze(struct fx *x, struct im_causes *c) {
  struct im_stage_input in = {.recs = x->r,
                              .n_recs = x->n,
                              .cfg = x->cfg,
                              .slo_target = 0.99,
                              .counters = x->counters,
                              .host = x->host,
                              .threads = 1};
  struct im_stage_figures f;
  CHECK_OK(im_stage_analyze(&in, &f));
  struct im_causes_input ci = {.f = &f,
                               .cfg = &in.cfg,
                               .slo_target = 0.99,
                               .server =
                                   x->has_server || !x->sf.tcp.not_collected[0] ? &x->sf : NULL};
  CHECK_OK(im_causes_compute(&ci, c));
  im_stage_figures_cleanup(&f);
}

/* The one SLO violated fires exactly `want` (IM_CAUSE_UNEXPLAINED: none). */
static void fires_only(struct fx *x, enum im_cause want, double *score) {
  struct im_causes c;
  analyze(x, &c);
  CHECK_EQ(c.n, 1);
  if (c.n != 1)
    return;
  const struct im_cause_slo *s = &c.slo[0];
  CHECK_EQ(s->n_fired, want == IM_CAUSE_UNEXPLAINED ? 0 : 1);
  for (int r = 0; r < IM_CAUSE_RULES_; r++) {
    bool fired = s->checks[r].status == IM_CAUSE_FIRED;
    if (fired != (r == (int)want))
      fprintf(stderr, "rule %s: %s (%s)\n", im_cause_name((enum im_cause)r),
              im_cause_status_name(s->checks[r].status), s->checks[r].why);
    CHECK_EQ(fired, r == (int)want);
    CHECK(s->checks[r].why[0] != '\0');
  }
  if (want != IM_CAUSE_TOP_P_COLLAPSE && !x->r[0].ngrams)
    CHECK_EQ(s->checks[IM_CAUSE_TOP_P_COLLAPSE].status, IM_CAUSE_NOT_CHECKED);
  if (score)
    *score = want == IM_CAUSE_UNEXPLAINED ? NAN : s->checks[want].score;
}

static void test_clean(void) {
  struct fx x;
  base(&x, N);
  slo_e2el(&x, 1000);
  server(&x);
  struct im_causes c;
  analyze(&x, &c);
  CHECK_EQ(c.n, 0); /* no SLO violated: nothing to explain */
  base(&x, N);
  analyze(&x, &c);
  CHECK_EQ(c.n, 0); /* no SLO given */
}

/* Every third request slow in its first token, with no pattern the rules
 * know: unexplained, and every rule says why. */
static void plant_unpatterned(struct fx *x) {
  for (size_t i = 0; i < x->n; i += 3)
    req(x, i, 100 * MS, 200 * MS, 21, 10 * MS);
}

static void test_unexplained(void) {
  struct fx x;
  base(&x, N);
  plant_unpatterned(&x);
  slo_e2el(&x, 300);
  server(&x);
  fires_only(&x, IM_CAUSE_UNEXPLAINED, NULL);
}

/* Temperatures 0.2 .. 1.65; the hottest third answers twice as long. */
static void plant_temperature(struct fx *x, int64_t unit) {
  for (size_t i = 0; i < x->n; i++) {
    bool hot = i >= x->n - x->n / 3;
    req(x, i, 100 * unit, 20 * unit, hot ? 42 : 21, 10 * unit);
    x->r[i].temperature = 0.2 + 0.05 * (double)i;
  }
}

static void test_temperature(void) {
  struct fx x;
  base(&x, N);
  plant_temperature(&x, MS);
  slo_e2el(&x, 300);
  double score = 0;
  fires_only(&x, IM_CAUSE_TEMPERATURE_OVERLOAD, &score);
  CHECK_NEAR(score, 1.0 / (0.5 / 10), 1e-9); /* every hot one over, no cold one */
  /* The same long answers without a temperature pattern: not applicable. */
  for (size_t i = 0; i < x.n; i++)
    x.r[i].temperature = 0.7;
  fires_only(&x, IM_CAUSE_UNEXPLAINED, NULL);
  /* The hot third over the limit but not longer: the rule needs both. */
  base(&x, N);
  for (size_t i = 0; i < x.n; i++) {
    x.r[i].temperature = 0.2 + 0.05 * (double)i;
    if (i >= 20)
      stall(&x, i, 14, 200 * MS);
  }
  slo_e2el(&x, 300);
  struct im_causes c;
  analyze(&x, &c);
  CHECK_EQ(c.n, 1);
  CHECK_EQ(c.slo[0].checks[IM_CAUSE_TEMPERATURE_OVERLOAD].status, IM_CAUSE_NOT_FIRED);
}

/* Two requests in three caught in a loop: they run to twice the length
 * (E2E 430 instead of 220 units) and repeat 90 % of their 4-grams; the rest
 * end normally and repeat 5 %. */
static void plant_top_p(struct fx *x, int64_t unit) {
  for (size_t i = 0; i < x->n; i++) {
    bool loop = i % 3 != 0;
    req(x, i, 100 * unit, 20 * unit, loop ? 42 : 21, 10 * unit);
    x->r[i].ngrams = x->r[i].n_chunks - 3;
    x->r[i].repetition = loop ? 0.9 : 0.05;
  }
}

static void test_top_p(void) {
  struct fx x;
  base(&x, N);
  plant_top_p(&x, MS);
  slo_e2el(&x, 300);
  double score = 0;
  fires_only(&x, IM_CAUSE_TOP_P_COLLAPSE, &score);
  CHECK_NEAR(score, 0.9 / 0.45, 1e-9);
  /* The same lengths without repetition: the rule is evaluated, not fired. */
  for (size_t i = 0; i < x.n; i++)
    x.r[i].repetition = 0.05;
  fires_only(&x, IM_CAUSE_UNEXPLAINED, NULL);
  struct im_causes c;
  analyze(&x, &c);
  CHECK_EQ(c.slo[0].checks[IM_CAUSE_TOP_P_COLLAPSE].status, IM_CAUSE_NOT_FIRED);
  /* Every answer loops to the same length: repetitive but not bimodal
   * (equal values: no bimodality coefficient). */
  base(&x, N);
  for (size_t i = 0; i < x.n; i++) {
    req(&x, i, 100 * MS, 20 * MS, 42, 10 * MS);
    x.r[i].ngrams = 39;
    x.r[i].repetition = 0.9;
  }
  slo_e2el(&x, 300);
  analyze(&x, &c);
  CHECK_EQ(c.n, 1);
  CHECK_EQ(c.slo[0].checks[IM_CAUSE_TOP_P_COLLAPSE].status, IM_CAUSE_NOT_FIRED);
  /* ... unless they ran to max_tokens: the loops say it by their finish
   * reason, where the moments of one mode cannot. */
  for (size_t i = 0; i < x.n; i++)
    snprintf(x.r[i].finish_reason, sizeof x.r[i].finish_reason, "length");
  fires_only(&x, IM_CAUSE_TOP_P_COLLAPSE, NULL);
  /* Under ignore_eos every answer runs to max_tokens: not evidence. */
  for (size_t i = 0; i < x.n; i++)
    x.r[i].ignore_eos = true;
  analyze(&x, &c);
  CHECK_EQ(c.slo[0].checks[IM_CAUSE_TOP_P_COLLAPSE].status, IM_CAUSE_NOT_FIRED);
}

/* The waiting queue grows by one every 100 ms; each request's TTFT with
 * it; decoding as fast for every request. */
static void plant_queueing(struct fx *x, int64_t unit) {
  for (size_t i = 0; i < x->n; i++) {
    req(x, i, 100 * unit, (20 + 15 * (int64_t)i) * unit, 21, 10 * unit);
    x->pts[i].requests_waiting = (double)i;
  }
  for (size_t j = x->n; j < x->src.n_series; j++)
    x->pts[j].requests_waiting = 0;
}

static void test_queueing(void) {
  struct fx x;
  base(&x, N);
  server(&x);
  plant_queueing(&x, MS);
  x.cfg.has_slo_ttft = true;
  x.cfg.slo_ttft_ms = 300;
  double score = 0;
  fires_only(&x, IM_CAUSE_QUEUEING, &score);
  CHECK(score >= 0.99);
  /* A server without a waiting queue, or no samples: not applicable. */
  x.src.waiting_max = NAN;
  struct im_causes c;
  analyze(&x, &c);
  CHECK_EQ(c.slo[0].checks[IM_CAUSE_QUEUEING].status, IM_CAUSE_NOT_APPLICABLE);
  x.has_server = false;
  fires_only(&x, IM_CAUSE_UNEXPLAINED, NULL);
}

/* From 2 s on, KV usage 0.99 and preemptions rising; the requests there
 * decode at 30 ms a token. */
static void plant_kv(struct fx *x, int64_t unit) {
  for (size_t j = 0; j < x->src.n_series; j++)
    if (x->pts[j].t_s >= 2.0 * (double)unit / 1e6) {
      x->pts[j].kv_cache_usage = 0.99;
      x->pts[j].preemptions = (double)j;
    }
  for (size_t i = 20; i < x->n; i++)
    req(x, i, 100 * unit, 20 * unit, 21, 30 * unit);
}

static void test_kv(void) {
  struct fx x;
  base(&x, N);
  server(&x);
  plant_kv(&x, MS);
  x.cfg.has_slo_tpot = true;
  x.cfg.slo_tpot_ms = 20;
  double score = 0;
  fires_only(&x, IM_CAUSE_KV_PRESSURE, &score);
  CHECK_NEAR(score, 1.0, 1e-9);
  /* KV full for the whole run and no preemption: no contrast with the
   * others, no verdict. */
  for (size_t j = 0; j < x.src.n_series; j++) {
    x.pts[j].kv_cache_usage = 0.99;
    x.pts[j].preemptions = 0;
  }
  fires_only(&x, IM_CAUSE_UNEXPLAINED, NULL);
  /* A preemption storm: the cache full all along (no contrast), the
   * preemptions rising while the violating requests run: KV pressure,
   * named before any interference. */
  for (size_t j = 0; j < x.src.n_series; j++)
    x.pts[j].preemptions = x.pts[j].t_s >= 2.0 ? (double)j : 0;
  fires_only(&x, IM_CAUSE_KV_PRESSURE, &score);
  struct im_causes c;
  analyze(&x, &c);
  CHECK_NEAR(c.slo[0].checks[IM_CAUSE_KV_PRESSURE].figs[4].value, 1.0, 1e-12);
  CHECK_STR(c.slo[0].checks[IM_CAUSE_KV_PRESSURE].figs[4].key, "violating_share_preempted");
}

/* A TTFT SLO violated only by requests the server never finished: from
 * 2 s on the cache is full and preemptions rise, and the requests sent
 * then are cut at the end-of-run grace (aborted, no first token). No
 * completed request is over the limit, so every other rule says nothing;
 * KV pressure is judged on the cut requests and named. Without the
 * pressure (a calm series) nothing is named. */
static void test_kv_cut(void) {
  struct fx x;
  base(&x, N);
  server(&x);
  for (size_t j = 0; j < x.src.n_series; j++)
    if (x.pts[j].t_s >= 2.0) {
      x.pts[j].kv_cache_usage = 0.99;
      x.pts[j].preemptions = (double)j;
    }
  for (size_t i = 20; i < x.n; i++) {
    struct im_record *r = &x.r[i];
    r->kind = IM_KIND_ABORTED;
    r->t_first = r->t_last = -1;
    r->n_chunks = 0;
    r->output_tokens = 0;
    r->t_end = r->t_start + 3000 * MS;
  }
  x.cfg.has_slo_ttft = true;
  x.cfg.slo_ttft_ms = 1000;
  double score = 0;
  fires_only(&x, IM_CAUSE_KV_PRESSURE, &score);
  CHECK_NEAR(score, 1.0, 1e-9);
  struct im_causes c;
  analyze(&x, &c);
  CHECK_EQ(c.slo[0].violating, 0);
  const struct im_cause_check *kv = &c.slo[0].checks[IM_CAUSE_KV_PRESSURE];
  CHECK(strstr(kv->why, "cut at the end-of-run grace") != NULL);
  CHECK_STR(kv->figs[5].key, "violating_cut_at_grace");
  CHECK_NEAR(kv->figs[5].value, (double)(N - 20), 0);
  server(&x); /* calm: KV 0.1, no preemption */
  fires_only(&x, IM_CAUSE_UNEXPLAINED, NULL);
}

static void test_client(void) {
  struct fx x;
  base(&x, N);
  plant_unpatterned(&x);
  slo_e2el(&x, 300);
  x.counters.dispatched = N / 2; /* half of the schedule never sent */
  fires_only(&x, IM_CAUSE_CLIENT_SATURATION, NULL);
}

/* TIME_WAIT grows; every other request opened its connection, and those
 * are the slow ones. */
static void test_churn(void) {
  struct fx x;
  base(&x, N);
  for (size_t i = 0; i < x.n; i++) {
    req(&x, i, 100 * MS, (i % 2 ? 20 : 200) * MS, 21, 10 * MS);
    x.r[i].conn_new = i % 2 == 0;
  }
  x.cfg.has_slo_ttft = true;
  x.cfg.slo_ttft_ms = 100;
  x.sf.tcp.not_collected[0] = '\0';
  x.sf.tcp.time_wait_growing = true;
  x.sf.tcp.time_wait_growth_per_s = 12;
  double score = 0;
  fires_only(&x, IM_CAUSE_CONNECTION_CHURN, &score);
  CHECK_NEAR(score, 1.0 / (0.5 / 15), 1e-9);
  /* TIME_WAIT steady: the same split is not churn. */
  x.sf.tcp.time_wait_growing = false;
  fires_only(&x, IM_CAUSE_UNEXPLAINED, NULL);
  /* Every request opened its connection: nothing to compare with. */
  x.sf.tcp.time_wait_growing = true;
  for (size_t i = 0; i < x.n; i++)
    x.r[i].conn_new = true;
  fires_only(&x, IM_CAUSE_UNEXPLAINED, NULL);
}

/* Requests of 41 chunks (E2E 420 ms, four decoding at once) and an engine
 * hiccup of 200 ms at 1.075 s and 2.075 s: every stream decoding then
 * stalls at once (outside every prefill). */
static void plant_hiccup(struct fx *x, int64_t unit) {
  for (size_t i = 0; i < x->n; i++) {
    req(x, i, 100 * unit, 20 * unit, 41, 10 * unit);
    for (int h = 1; h <= 2; h++) {
      int64_t at = (1000 * h + 75) * unit - x->r[i].t_start; /* since the start */
      for (uint32_t k = 1; k < 41; k++)
        if ((int64_t)x->us[i][k - 1] * 1000 < at && (int64_t)x->us[i][k] * 1000 >= at)
          stall(x, i, k, 200 * unit);
    }
  }
}

static void test_stall(void) {
  struct fx x;
  base(&x, N);
  server(&x);
  plant_hiccup(&x, MS);
  slo_e2el(&x, 500);
  double score = 0;
  fires_only(&x, IM_CAUSE_SERVER_STALL, &score);
  CHECK_NEAR(score, 1.0, 1e-9);
  /* A TTFT SLO is not explained by stalls after the first token. */
  struct fx y;
  base(&y, N);
  plant_hiccup(&y, MS);
  plant_unpatterned(&y);
  y.cfg.has_slo_ttft = true;
  y.cfg.slo_ttft_ms = 100;
  struct im_causes c;
  analyze(&y, &c);
  CHECK_EQ(c.n, 1);
  CHECK_EQ(c.slo[0].checks[IM_CAUSE_SERVER_STALL].status, IM_CAUSE_NOT_APPLICABLE);
}

/* The hiccup's stalls again, with every violating request's last token
 * read late by the host: 250 ms of its 620 ms E2E, more than half its 120
 * ms over the 500 ms limit: host noise carries the violation, and the
 * aligned stalls (reads held up together) are explained by it. 5 ms: a
 * share of the excess, reported, not a cause; the server stall stands. */
static void test_host_noise(void) {
  struct fx x;
  base(&x, N);
  server(&x);
  plant_hiccup(&x, MS);
  slo_e2el(&x, 500);
  for (size_t i = 0; i < x.n; i++) {
    struct im_record *r = &x.r[i];
    bool late = (double)(r->t_last - r->t_start) / 1e6 > 500;
    r->read_first_us = r->read_first_client_us = 0;
    r->read_last_us = late ? 250000 : 0;
    r->read_last_client_us = 0;
  }
  fires_only(&x, IM_CAUSE_HOST_NOISE, NULL);
  struct im_causes c;
  analyze(&x, &c);
  CHECK(strstr(c.slo[0].checks[IM_CAUSE_SERVER_STALL].why, "explained by host_noise") != NULL);
  for (size_t i = 0; i < x.n; i++)
    x.r[i].read_last_us = x.r[i].read_last_us ? 5000 : 0;
  fires_only(&x, IM_CAUSE_SERVER_STALL, NULL);
  analyze(&x, &c);
  const struct im_cause_check *h = &c.slo[0].checks[IM_CAUSE_HOST_NOISE];
  CHECK_EQ(h->status, IM_CAUSE_NOT_FIRED);
  CHECK(h->score > 0 && h->score < 0.1); /* 5 ms of about 120 ms over */
  /* Records that do not say who was late: not applicable. */
  for (size_t i = 0; i < x.n; i++)
    x.r[i].read_last_client_us = -1;
  analyze(&x, &c);
  CHECK_EQ(c.slo[0].checks[IM_CAUSE_HOST_NOISE].status, IM_CAUSE_NOT_APPLICABLE);
}

/* The hiccup's 200 ms stalls on a host whose probe saw wake-ups 250 ms
 * late: each stall is within what the host did, so it is the host's (the
 * server's loop on a shared machine held up every stream): host noise,
 * not a server stall. With the probe's worst at 20 ms the stalls stay the
 * server's. (Until the probe's per-time figures reach the analysis this
 * uses its run-wide maximum.) */
static void test_host_stalls(void) {
  struct fx x;
  base(&x, N);
  server(&x);
  plant_hiccup(&x, MS);
  slo_e2el(&x, 500);
  struct im_hostlat h;
  im_hostlat_init(&h, 10 * MS);
  h.wakes = 1000;
  h.max_ns = 250 * MS;
  x.host = &h;
  fires_only(&x, IM_CAUSE_HOST_NOISE, NULL);
  h.max_ns = 20 * MS;
  fires_only(&x, IM_CAUSE_SERVER_STALL, NULL);
  im_hostlat_cleanup(&h);
}

/* Aligned stalls too short to carry the violation: every request starts
 * at once and stalls 60 ms (6 gaps of 10) before chunk 20, so each parity's
 * stalls end together; the even ones wait 400 ms for their first token
 * (E2E 860 ms: 360 over the 500 ms limit, of which the stalls' 50 ms excess
 * is under half), the odd ones 20 ms (E2E 480: within). Every violating
 * request holds an aligned stall, yet the stalls carry none: not a server
 * stall. */
static void test_stall_not_carried(void) {
  struct fx x;
  base(&x, N);
  for (size_t i = 0; i < x.n; i++) {
    req(&x, i, 0, (i % 2 ? 20 : 400) * MS, 41, 10 * MS);
    stall(&x, i, 20, 60 * MS);
  }
  slo_e2el(&x, 500);
  struct im_causes c;
  analyze(&x, &c);
  CHECK_EQ(c.n, 1);
  const struct im_cause_check *st = &c.slo[0].checks[IM_CAUSE_SERVER_STALL];
  CHECK_EQ(st->status, IM_CAUSE_NOT_FIRED);
  CHECK_NEAR(st->score, 1.0, 1e-12); /* every violating request stalled */
  CHECK(strstr(st->why, "100% time-aligned") != NULL);
  CHECK(strstr(st->why, "excess over the limit or more in 0% of them") != NULL);
  /* The even ones' stalls 450 ms long carry it (E2E 1240, 340 over 900,
   * 440 of it the stall's). */
  for (size_t i = 0; i < x.n; i++) {
    req(&x, i, 0, (i % 2 ? 20 : 400) * MS, 41, 10 * MS);
    if (i % 2 == 0)
      stall(&x, i, 20, 450 * MS);
  }
  slo_e2el(&x, 900);
  analyze(&x, &c);
  CHECK_EQ(c.slo[0].checks[IM_CAUSE_SERVER_STALL].status, IM_CAUSE_FIRED);
}

/* Requests 3, 7, 11, ...: a 100 ms stall that begins 10 ms into the next
 * request's prefill (prefills cover a fifth of the time); one at a time,
 * never time-aligned. */
static void plant_prefill(struct fx *x, int64_t unit) {
  for (size_t i = 3; i + 1 < x->n; i += 4)
    stall(x, i, 10, 100 * unit); /* gap 9..10 begins at i*100 + 110 */
}

static void test_prefill(void) {
  struct fx x;
  base(&x, N);
  plant_prefill(&x, MS);
  slo_e2el(&x, 300);
  double score = 0;
  fires_only(&x, IM_CAUSE_PREFILL_INTERFERENCE, &score);
  CHECK(score > 4); /* every stall against about a fifth of the time */
  /* The same stalls 40 ms later, outside every prefill: chance. */
  base(&x, N);
  for (size_t i = 3; i + 1 < x.n; i += 4)
    stall(&x, i, 14, 100 * MS);
  slo_e2el(&x, 300);
  fires_only(&x, IM_CAUSE_UNEXPLAINED, NULL);
}

/* One request, n < 3 with two temperatures, equal values: nothing fires,
 * nothing is undefined behaviour. */
static void test_edges(void) {
  struct fx x;
  base(&x, 1);
  slo_e2el(&x, 100);
  server(&x);
  fires_only(&x, IM_CAUSE_UNEXPLAINED, NULL);
  base(&x, 2);
  x.r[0].temperature = 0.2;
  x.r[1].temperature = 1.2;
  slo_e2el(&x, 100);
  struct im_causes c;
  analyze(&x, &c);
  CHECK_EQ(c.n, 1);
  CHECK_EQ(c.slo[0].checks[IM_CAUSE_TEMPERATURE_OVERLOAD].status, IM_CAUSE_NOT_APPLICABLE);
  CHECK(isnan(c.slo[0].bimodality));
  /* Every request the same and every one over: zero variance. */
  base(&x, N);
  server(&x);
  slo_e2el(&x, 100);
  fires_only(&x, IM_CAUSE_UNEXPLAINED, NULL);
  analyze(&x, &c);
  CHECK(isnan(c.slo[0].checks[IM_CAUSE_QUEUEING].score)); /* constant series */
  /* Violations by failed requests only: no group rule fires. */
  base(&x, N);
  slo_e2el(&x, 1000);
  for (size_t i = 0; i < 5; i++)
    x.r[i].error = IM_EC_HTTP_5XX;
  fires_only(&x, IM_CAUSE_UNEXPLAINED, NULL);
  CHECK_OK(im_causes_compute(NULL, &c) == IM_INVAL ? IM_OK : IM_INVAL);
}

/* The verdicts and scores of a run and of the same run 4 times faster. */
static void test_time_scale(void) {
  void (*plant[])(struct fx *, int64_t) = {plant_temperature, plant_queueing, plant_kv,
                                           plant_hiccup,      plant_prefill,  plant_top_p};
  const double e2el_ms[] = {300, 300, 300, 500, 300, 300}; /* the plant's E2E limit */
  for (size_t p = 0; p < sizeof plant / sizeof *plant; p++) {
    struct im_causes c[2];
    for (int s = 0; s < 2; s++) {
      int64_t unit = s ? MS / 4 : MS;
      struct fx x;
      base(&x, N);
      for (size_t i = 0; i < N; i++)
        req(&x, i, 100 * unit, 20 * unit, 21, 10 * unit);
      server(&x);
      for (size_t j = 0; j < x.src.n_series; j++)
        x.pts[j].t_s *= (double)unit / 1e6;
      plant[p](&x, unit);
      x.cfg.window_end_ns = N * 100 * unit;
      x.cfg.has_slo_e2el = x.cfg.has_slo_ttft = x.cfg.has_slo_tpot = true;
      x.cfg.slo_e2el_ms = e2el_ms[p] * (double)unit / 1e6;
      x.cfg.slo_ttft_ms = 300 * (double)unit / 1e6;
      x.cfg.slo_tpot_ms = 20 * (double)unit / 1e6;
      analyze(&x, &c[s]);
    }
    CHECK_EQ(c[0].n, c[1].n);
    size_t fired = 0;
    for (size_t k = 0; k < c[1].n; k++)
      fired += c[1].slo[k].n_fired;
    if (!fired)
      fprintf(stderr, "plant %zu: nothing fired\n", p);
    CHECK_INT(fired, >, 0); /* the plant is found at both speeds */
    for (size_t k = 0; k < c[0].n && k < c[1].n; k++)
      for (int r = 0; r < IM_CAUSE_RULES_; r++) {
        CHECK_EQ(c[0].slo[k].checks[r].status, c[1].slo[k].checks[r].status);
        if (!isnan(c[0].slo[k].checks[r].score))
          CHECK_REL(c[1].slo[k].checks[r].score, c[0].slo[k].checks[r].score, 1e-6);
      }
  }
}

int main(void) {
  test_clean();
  test_unexplained();
  test_temperature();
  test_top_p();
  test_queueing();
  test_kv();
  test_kv_cut();
  test_client();
  test_churn();
  test_stall();
  test_prefill();
  test_host_noise();
  test_stall_not_carried();
  test_host_stalls();
  test_edges();
  test_time_scale();
  return CHECK_DONE();
}
