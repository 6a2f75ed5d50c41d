/* Shares of one plan over several processes (cli/shard.h), the merge of
 * their stage events (record/rundir_merge.h) and the clock alignment check
 * (analyze/clocksync.h). */
#include <stdlib.h>

#include "check.h"
#include "analyze/clocksync.h"
#include "cli/shard.h"
#include "core/hist.h"
#include "record/rundir_merge.h"
#include "workload/sched.h"

static void test_parse(void) {
  uint32_t i = 9, n = 9;
  CHECK_EQ(im__shard_parse("1/4", &i, &n), 0);
  CHECK_EQ(i, 1);
  CHECK_EQ(n, 4);
  const char *bad[] = {"4/4", "0/0", "-1/2", "1/", "/2", "a/2", "1/2x", "1/65537", "", "1"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
    CHECK_EQ(im__shard_parse(bad[k], &i, &n), -1);
  int64_t t = 0;
  CHECK_EQ(im__shard_parse_time("1796184000", &t), 0);
  CHECK_EQ(t, 1796184000LL * 1000000000);
  CHECK_EQ(im__shard_parse_time("1796184000.25", &t), 0);
  CHECK_EQ(t, 1796184000LL * 1000000000 + 250000000);
  /* 2026-12-02T04:00:00Z = 1796184000 (days from the epoch: 20789). */
  CHECK_EQ(im__shard_parse_time("2026-12-02T04:00:00Z", &t), 0);
  CHECK_EQ(t, 1796184000LL * 1000000000);
  CHECK_EQ(im__shard_parse_time("2026-12-02T05:00:00.5+01:00", &t), 0);
  CHECK_EQ(t, 1796184000LL * 1000000000 + 500000000);
  const char *bad_t[] = {"2026-12-02T04:00:00", "2026-13-02T04:00:00Z", "yesterday", "12.",
                         "2026-12-02", "", "1e9",
                         /* beyond int64 nanoseconds: refused, not wrapped */
                         "355555555554", "9999-12-31T23:59:59Z"};
  for (size_t k = 0; k < sizeof bad_t / sizeof bad_t[0]; k++)
    CHECK_EQ(im__shard_parse_time(bad_t[k], &t), -1);
}

/* The N shares of a Poisson schedule: disjoint, their union the schedule
 * exactly, each share near 1/N of it, and the same for the same seed. */
static void test_thin(void) {
  struct im_sched_spec sp = {.kind = IM_SCHED_POISSON, .rate = 100, .max_requests = 3000,
                             .seed = 42};
  int64_t *all = NULL;
  size_t n_all = 0;
  CHECK_OK(im_sched_generate(&sp, &all, &n_all));
  enum { N = 3 };
  int64_t *t[N];
  uint64_t *ix[N];
  size_t n[N], total = 0;
  for (uint32_t s = 0; s < N; s++) {
    CHECK_EQ(im_shard_thin(all, n_all, 7, s, N, &t[s], &ix[s], &n[s]), 0);
    total += n[s];
    CHECK(n[s] > 900 && n[s] < 1100);
  }
  CHECK_EQ(total, n_all);
  /* Merge back by index: every arrival once, at its time. */
  size_t k[N] = {0};
  bool exact = true;
  for (size_t j = 0; j < n_all; j++) {
    int owner = -1;
    for (int s = 0; s < N; s++)
      if (k[s] < n[s] && ix[s][k[s]] == j)
        owner = s;
    if (owner < 0 || t[owner][k[owner]] != all[j] || !im_shard_mine(7, j, (uint32_t)owner, N))
      exact = false;
    if (owner >= 0)
      k[owner]++;
  }
  CHECK(exact);
  /* Another seed deals otherwise; one shard takes everything. */
  size_t same = 0;
  for (size_t j = 0; j < n_all; j++)
    same += im_shard_mine(7, j, 0, N) == im_shard_mine(8, j, 0, N);
  CHECK(same < n_all);
  for (size_t j = 0; j < 100; j++)
    CHECK(im_shard_mine(7, j, 0, 1));
  for (int s = 0; s < N; s++) {
    free(t[s]);
    free(ix[s]);
  }
  free(all);
  /* C/N, the remainder to the lowest shards. */
  CHECK_EQ(im_shard_split(10, 0, 3), 4);
  CHECK_EQ(im_shard_split(10, 1, 3), 3);
  CHECK_EQ(im_shard_split(10, 2, 3), 3);
  CHECK_EQ(im_shard_split(0, 1, 3), 0);
  CHECK_EQ(im_shard_split(7, 0, 1), 7);
}

static void test_stage_merge(void) {
  struct im_rundir_stage a = {0}, b = {0}, m = {0};
  a.started = b.started = a.ended = b.ended = a.has_t0 = b.has_t0 = true;
  snprintf(a.label, sizeof a.label, "x");
  a.threads = 2;
  b.threads = 1;
  a.counters = (struct im_client_counters){.scheduled = 10, .dispatched = 9, .cpu_share = 0.2};
  b.counters = (struct im_client_counters){.scheduled = 5, .dispatched = 5, .cpu_share = 0.5,
                                           .fd_exhausted = 1};
  a.elapsed_ns = a.rule.elapsed_ns = 1000;
  b.elapsed_ns = b.rule.elapsed_ns = 900;
  b.rule.interrupted = true;
  a.connections_opened = 3;
  b.connections_opened = 4;
  struct im_client_sample sa[2] = {{.thread = 0, .t = 10}, {.thread = 1, .t = 20}};
  struct im_client_sample sb[1] = {{.thread = 0, .t = 30}};
  a.samples = sa;
  a.n_samples = 2;
  b.samples = sb;
  b.n_samples = 1;
  CHECK_OK(im_hist_init_default(&a.receive_lag));
  CHECK_OK(im_hist_init_default(&b.receive_lag));
  a.has_receive_lag = b.has_receive_lag = true;
  for (int i = 1; i <= 100; i++)
    CHECK(im_hist_record(&a.receive_lag, i * 1000));
  for (int i = 1; i <= 50; i++)
    CHECK(im_hist_record(&b.receive_lag, i * 3000));
  CHECK_OK(im_rundir_stage_merge(&m, &a, 0, m.threads));
  CHECK_OK(im_rundir_stage_merge(&m, &b, 200, m.threads));
  CHECK_STR(m.label, "x");
  CHECK_EQ(m.threads, 3);
  CHECK_EQ(m.counters.scheduled, 15);
  CHECK_EQ(m.counters.dispatched, 14);
  CHECK_EQ(m.counters.fd_exhausted, 1);
  CHECK_NEAR(m.counters.cpu_share, 0.5, 0);
  CHECK_EQ(m.connections_opened, 7);
  CHECK_EQ(m.elapsed_ns, 1100); /* b ended 900 after its origin, 200 after a's */
  CHECK(m.rule.interrupted);
  CHECK(m.ended);
  CHECK_EQ(m.n_samples, 3);
  CHECK_EQ(m.samples[2].thread, 2);
  CHECK_EQ(m.samples[2].t, 230);
  /* Exact: the merged histogram is the one of all the values. */
  CHECK_EQ(im_hist_count(&m.receive_lag), 150);
  struct im_hist ref;
  CHECK_OK(im_hist_init_default(&ref));
  CHECK_OK(im_hist_merge(&ref, &a.receive_lag));
  CHECK_OK(im_hist_merge(&ref, &b.receive_lag));
  CHECK_EQ(im_hist_percentile(&m.receive_lag, 99), im_hist_percentile(&ref, 99));
  CHECK_EQ(im_hist_max(&m.receive_lag), 150000);
  im_hist_cleanup(&ref);
  b.ended = false;
  struct im_rundir_stage m2 = {0};
  CHECK_OK(im_rundir_stage_merge(&m2, &a, 0, 0));
  CHECK_OK(im_rundir_stage_merge(&m2, &b, 0, 2));
  CHECK(!m2.ended);
  im_rundir_stage_cleanup(&m);
  im_rundir_stage_cleanup(&m2);
  im_hist_cleanup(&a.receive_lag);
  im_hist_cleanup(&b.receive_lag);
}

/* The host probe's figures: stages.jsonl's end event carries them and the
 * reader gives them back (counts by bound, stalls in order); an end event
 * without them (directories of older versions) reads as not measured; the
 * probes of two processes add, their stalls on the common clock. */
static void test_host(void) {
  struct im_hostlat h;
  im_hostlat_init(&h, 2000000);
  im_hostlat_add(&h, 1000, 0);
  im_hostlat_add(&h, 2000, 1500000);  /* late, not a stall */
  im_hostlat_add(&h, 9000, 4000000);  /* a stall */
  struct im_client_counters k = {.scheduled = 1, .dispatched = 1};
  json_t *end = im_rundir_end_json(0, 10000, false, &k, 1, "", NULL, 0);
  CHECK(end != NULL);
  CHECK_EQ(json_object_set_new(end, "host", im_rundir_host_json(&h)), 0);
  struct im_rundir rd = {0};
  CHECK_EQ(im_rundir_apply_event(&rd, end), 0);
  CHECK_EQ(rd.n_st, 1);
  const struct im_rundir_stage *s = &rd.st[0];
  CHECK(s->has_host);
  CHECK_EQ(s->host.period_ns, 2000000);
  CHECK_EQ(s->host.wakes, 3);
  CHECK_EQ(im_hostlat_late(&s->host), 2);
  CHECK_EQ(s->host.max_ns, 4000000);
  CHECK_EQ(s->host.n_stalls, 1);
  CHECK_EQ(s->host.stalls_total, 1);
  CHECK_EQ(s->host.stalls[0].t, 9000);
  CHECK_EQ(im_hostlat_stall_within(&s->host, 5000, 6000), 4000000); /* held off 5000..9000 */
  CHECK_EQ(im_hostlat_stall_within(&s->host, 9001, 20000), 0);
  for (int i = 0; i < IM_HOSTLAT_NBOUNDS; i++)
    CHECK_EQ(s->host.over[i], h.over[i]);
  /* An end event of an older version: not measured. */
  json_object_del(end, "host");
  CHECK_EQ(im_rundir_apply_event(&rd, end), 0);
  CHECK(!rd.st[0].has_host);
  CHECK_EQ(rd.st[0].host.wakes, 0);
  /* Two processes: counts add, the second's stall moved by its offset. */
  struct im_rundir_stage a = {0}, b = {0}, m = {0};
  a.started = b.started = a.ended = b.ended = true;
  a.has_host = b.has_host = true;
  a.host = h;
  im_hostlat_init(&b.host, 2000000);
  im_hostlat_add(&b.host, 500, 3000000);
  CHECK_OK(im_rundir_stage_merge(&m, &a, 0, 0));
  CHECK_OK(im_rundir_stage_merge(&m, &b, 100, 1));
  CHECK(m.has_host);
  CHECK_EQ(m.host.wakes, 4);
  CHECK_EQ(m.host.n_stalls, 2);
  CHECK_EQ(m.host.stalls[0].t, 600);
  CHECK_EQ(m.host.stalls[1].t, 9000);
  /* Written back as one directory's end event, read the same. */
  CHECK(m.host.stalls != a.host.stalls);
  im_rundir_stage_cleanup(&m);
  im_hostlat_cleanup(&b.host);
  im_hostlat_cleanup(&h);
  json_decref(end);
  im_rundir_free(&rd);
}

static void test_clock(void) {
  struct im_valid_check c;
  struct im_clock_shard s[2] = {{.index = 0, .measured = true},
                                {.index = 1, .measured = true, .offset_ns = -3000000,
                                 .rtt_ns = 40000}};
  im_clock_check(s, 2, 5.0, &c); /* error 0.02 ms, limit 0.5 ms */
  CHECK_STR(c.id, "clock_sync");
  CHECK_EQ(c.status, IM_CHECK_PASS);
  CHECK(strstr(c.evidence, "3.000 ms") != NULL);
  s[1].rtt_ns = 2000000; /* error 1 ms > 0.5 ms */
  im_clock_check(s, 2, 5.0, &c);
  CHECK_EQ(c.status, IM_CHECK_WARN);
  CHECK(strstr(c.evidence, "shard 1") != NULL);
  CHECK(c.fix[0] != '\0');
  s[0].measured = s[1].measured = false;
  im_clock_check(s, 2, 5.0, &c);
  CHECK_EQ(c.status, IM_CHECK_WARN);
  CHECK(strstr(c.evidence, "not measured") != NULL);
}

int main(void) {
  test_parse();
  test_thin();
  test_stage_merge();
  test_host();
  test_clock();
  return CHECK_DONE();
}
