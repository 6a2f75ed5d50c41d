/* The client self-check: see analyze/selfcheck.h. */
#include "analyze/selfcheck.h"

#include <math.h>
#include <string.h>

#include "core/stats.h"

/* The receive-lag half of the check: the same binomial test and cap. */
static void receive_check(const struct im_hist *h, int64_t limit_ns, struct im_client_check *c) {
  c->pass_recv = true;
  c->receive_lag_p99_ms = c->receive_lag_max_ms = c->recv_p_value = NAN;
  if (!h || !im_hist_count(h))
    return;
  c->receive_measured = true;
  c->recv_n = (uint64_t)im_hist_count(h);
  struct im_hist_iter it;
  im_hist_iter_init(&it, h);
  while (im_hist_iter_next(&it))
    if (it.lowest > limit_ns)
      c->recv_late += (uint64_t)it.count;
  c->recv_p_value = im_stats_binom_sf((int64_t)c->recv_late, (int64_t)c->recv_n,
                                      IM_CHECK_LATE_SHARE);
  c->receive_lag_p99_ms = (double)im_hist_percentile(h, 0.99) / 1e6;
  c->receive_lag_max_ms = (double)im_hist_max(h) / 1e6;
  c->pass_recv = !(c->recv_p_value < 1.0 - IM_CHECK_CONFIDENCE) &&
                 !(c->receive_lag_max_ms > c->dispatch_lag_cap_ms);
}

void im_client_check_compute(const struct im_population *pop, const struct im_summary *s,
                             const struct im_summary_config *cfg,
                             const struct im_client_counters *k,
                             const struct im_hist *receive_lag, struct im_client_check *c) {
  memset(c, 0, sizeof *c);
  c->dispatch_lag_limit_ms = IM_CHECK_LAG_FLOOR_MS;
  if (cfg->has_slo_ttft && cfg->slo_ttft_ms * IM_CHECK_LAG_SLO_SHARE > c->dispatch_lag_limit_ms)
    c->dispatch_lag_limit_ms = cfg->slo_ttft_ms * IM_CHECK_LAG_SLO_SHARE;
  const struct im_hist *h = &s->hist[IM_H_DISPATCH_LAG];
  c->dispatch_lag_p99_ms = im_hist_count(h) ? (double)im_hist_percentile(h, 0.99) / 1e6 : NAN;
  /* The same attempts as the histogram: every attempt of a non-warm-up
   * logical request that was dispatched. */
  int64_t limit_ns = (int64_t)llround(c->dispatch_lag_limit_ms * 1e6);
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_logical *g = &pop->req[i];
    if (g->outcome == IM_OUTCOME_WARMUP)
      continue;
    for (size_t a = g->begin; a < g->end; a++) {
      const struct im_record *r = pop->attempts[a];
      if (r->t_sched < 0 || r->t_dispatch < 0)
        continue;
      c->lag_n++;
      c->lag_late += r->t_dispatch - r->t_sched > limit_ns;
    }
  }
  c->lag_p_value = im_stats_binom_sf((int64_t)c->lag_late, (int64_t)c->lag_n, IM_CHECK_LATE_SHARE);
  c->pass_lag_test = !(c->lag_p_value < 1.0 - IM_CHECK_CONFIDENCE);
  const struct im_hist *ttft = &s->hist[IM_H_TTFT];
  double median_ttft_ms = im_hist_count(ttft) ? (double)im_hist_percentile(ttft, 0.5) / 1e6 : 0.0;
  c->dispatch_lag_cap_ms = IM_CHECK_LAG_CAP_FLOOR_MS;
  if (median_ttft_ms * IM_CHECK_LAG_CAP_TTFT_SHARE > c->dispatch_lag_cap_ms)
    c->dispatch_lag_cap_ms = median_ttft_ms * IM_CHECK_LAG_CAP_TTFT_SHARE;
  c->dispatch_lag_max_ms = im_hist_count(h) ? (double)im_hist_max(h) / 1e6 : NAN;
  c->pass_lag_cap = !(c->dispatch_lag_max_ms > c->dispatch_lag_cap_ms);
  c->pass_lag = c->pass_lag_test && c->pass_lag_cap;
  receive_check(receive_lag, limit_ns, c);
  c->dispatched_share = k->scheduled ? (double)k->dispatched / (double)k->scheduled : 1.0;
  c->pass_dispatched = c->dispatched_share >= IM_CHECK_DISPATCHED_MIN;
  c->cpu_share = k->cpu_share;
  c->pass_cpu = k->cpu_share <= IM_CHECK_CPU_MAX;
  c->fd_exhausted = k->fd_exhausted;
  c->port_exhausted = k->port_exhausted;
  c->pass_fd = k->fd_exhausted == 0;
  c->pass_port = k->port_exhausted == 0;
  c->valid = c->pass_lag && c->pass_recv && c->pass_dispatched && c->pass_cpu && c->pass_fd &&
             c->pass_port;
}
