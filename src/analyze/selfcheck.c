/* The client self-check: see analyze/selfcheck.h. */
#include "analyze/selfcheck.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

/* The client's part of an attempt's dispatch lag, ns: the record's when it
 * says, else all of it (who was late is unknown: the client answers). */
static int64_t client_lag_ns(const struct im_record *r) {
  if (r->t_sched < 0 || r->t_dispatch < 0)
    return 0;
  int64_t lag = r->t_dispatch - r->t_sched;
  if (lag <= 0)
    return 0;
  if (r->lag_client_us < 0)
    return lag;
  int64_t c = (int64_t)r->lag_client_us * 1000;
  return c < lag ? c : lag;
}

static int64_t lag_ns(const struct im_record *r) {
  if (r->t_sched < 0 || r->t_dispatch < 0 || r->t_dispatch < r->t_sched)
    return 0;
  return r->t_dispatch - r->t_sched;
}

static int64_t us_ns(int32_t us) { return us > 0 ? (int64_t)us * 1000 : 0; }

/* The receive-lag half of the check. The count of late reads and the cap
 * come from the engine's histogram; with the records' attribution only the
 * client's late reads and stalls are judged. */
static void receive_check(const struct im_population *pop, const struct im_hist *h,
                          int64_t limit_ns, struct im_client_check *c) {
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
  c->receive_lag_p99_ms = (double)im_hist_percentile(h, 0.99) / 1e6;
  c->receive_lag_max_ms = (double)im_hist_max(h) / 1e6;
  if (!c->attributed) {
    c->recv_late_client = c->recv_late;
    c->recv_client_max_ms = c->receive_lag_max_ms;
  } else {
    int64_t mx = 0;
    for (size_t a = 0; a < pop->n_attempts; a++) {
      const struct im_record *r = pop->attempts[a];
      c->recv_late_client += r->late_reads_client;
      if (us_ns(r->read_first_client_us) > mx)
        mx = us_ns(r->read_first_client_us);
      if (us_ns(r->read_last_client_us) > mx)
        mx = us_ns(r->read_last_client_us);
    }
    c->recv_client_max_ms = (double)mx / 1e6;
  }
  c->recv_p_value = im_stats_binom_sf((int64_t)c->recv_late_client, (int64_t)c->recv_n,
                                      IM_CHECK_LATE_SHARE);
  c->pass_recv = !(c->recv_p_value < 1.0 - IM_CHECK_CONFIDENCE) &&
                 !(c->recv_client_max_ms > c->dispatch_lag_cap_ms);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts it). */
static double median_i64(int64_t *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_i64);
  return n % 2 ? (double)v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + (double)v[n / 2]);
}

/* Lag growth: the median client lag of the last quarter of the dispatches
 * (in schedule order) minus the first quarter's. */
static void growth_check(const struct im_population *pop, int64_t limit_ns,
                         struct im_client_check *c) {
  c->pass_growth = true;
  size_t n = c->lag_n;
  if (n < IM_CHECK_GROWTH_MIN_N || c->burst)
    return;
  int64_t(*v)[2] = malloc(n * sizeof *v);
  if (!v)
    return;
  size_t k = 0;
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_logical *g = &pop->req[i];
    if (g->outcome == IM_OUTCOME_WARMUP)
      continue;
    for (size_t a = g->begin; a < g->end && k < n; a++) {
      const struct im_record *r = pop->attempts[a];
      if (r->t_sched >= 0 && r->t_dispatch >= 0) {
        v[k][0] = r->t_sched;
        v[k][1] = client_lag_ns(r);
        k++;
      }
    }
  }
  n = k;
  qsort(v, n, sizeof *v, cmp_i64); /* by the first member: t_sched */
  size_t q = n / 4;
  int64_t *first = malloc(q * sizeof *first), *last = malloc(q * sizeof *last);
  if (first && last) {
    for (size_t i = 0; i < q; i++) {
      first[i] = v[i][1];
      last[i] = v[n - q + i][1];
    }
    c->lag_growth_ms = (median_i64(last, q) - median_i64(first, q)) / 1e6;
    c->pass_growth = !(c->lag_growth_ms * 1e6 > (double)limit_ns);
  }
  free(first);
  free(last);
  free(v);
}

/* The nearest-rank p-quantile of sorted x, and the half-width of its
 * distribution-free CI (INFINITY when a bound is missing). */
static double pct_and_half(const double *x, size_t n, double p, double *half) {
  double q = im_stats_pct_nearest(x, n, p);
  struct im_stats_pct_ci ci;
  *half = INFINITY;
  if (im_stats_pct_ci((int64_t)n, p, IM_CHECK_FIGURE_CONF, &ci) == IM_OK && ci.lo_rank >= 1 &&
      ci.hi_rank <= (int64_t)n)
    *half = 0.5 * (x[ci.hi_rank - 1] - x[ci.lo_rank - 1]);
  return q;
}

/* One request's figures: from the schedule, and with delays taken out. */
enum { V_SCHED, V_CLIENT_FREE, V_STALL_FREE, V_ALL_FREE, V_COUNT };

static void figures_check(const struct im_population *pop, int64_t cap_ns,
                          struct im_client_check *c) {
  c->pass_figures = true;
  size_t n = 0;
  for (size_t i = 0; i < pop->n_req; i++)
    n += pop->req[i].outcome == IM_OUTCOME_COMPLETED;
  if (!n)
    return;
  double *v[2][V_COUNT];
  bool ok = true;
  for (int m = 0; m < 2; m++)
    for (int j = 0; j < V_COUNT; j++)
      ok &= (v[m][j] = malloc(n * sizeof(double))) != NULL;
  if (ok) {
    size_t k = 0;
    for (size_t i = 0; i < pop->n_req; i++) {
      const struct im_logical *g = &pop->req[i];
      if (g->outcome != IM_OUTCOME_COMPLETED)
        continue;
      const struct im_record *f = g->final;
      int64_t base = f->t_sched_first >= 0 ? f->t_sched_first : f->t_sched;
      if (base < 0)
        base = f->t_start;
      int64_t client = 0, all = 0, stall = 0;
      for (size_t a = g->begin; a < g->end; a++) {
        const struct im_record *r = pop->attempts[a];
        int64_t cl = c->burst ? 0 : client_lag_ns(r), lg = c->burst ? 0 : lag_ns(r);
        client += cl;
        all += lg;
        if (lg > cap_ns && cl <= cap_ns)
          stall += lg - cl; /* a host stall: its host part */
      }
      int64_t rf = us_ns(f->read_first_client_us), rl = us_ns(f->read_last_client_us);
      int64_t rfa = us_ns(f->read_first_us), rla = us_ns(f->read_last_us);
      double ttft = (double)(f->t_first - base) / 1e6, e2e = (double)(f->t_last - base) / 1e6;
      v[0][V_SCHED][k] = ttft;
      v[0][V_CLIENT_FREE][k] = ttft - (double)(client + rf) / 1e6;
      v[0][V_STALL_FREE][k] = ttft - (double)(client + rf + stall) / 1e6;
      v[0][V_ALL_FREE][k] = ttft - (double)(all + (rfa > rf ? rfa : rf)) / 1e6;
      v[1][V_SCHED][k] = e2e;
      v[1][V_CLIENT_FREE][k] = e2e - (double)(client + rl) / 1e6;
      v[1][V_STALL_FREE][k] = e2e - (double)(client + rl + stall) / 1e6;
      v[1][V_ALL_FREE][k] = e2e - (double)(all + (rla > rl ? rla : rl)) / 1e6;
      k++;
    }
    for (int m = 0; m < 2; m++)
      for (int j = 0; j < V_COUNT; j++)
        im_stats_sort(v[m][j], n);
    static const struct {
      int m;
      double p;
      const char *name;
    } want[IM_CHECK_MAX_FIGURES] = {{0, 0.5, "TTFT p50"},
                                    {0, 0.9, "TTFT p90"},
                                    {0, 0.99, "TTFT p99"},
                                    {1, 0.5, "E2E latency p50"},
                                    {1, 0.99, "E2E latency p99"}};
    for (size_t w = 0; w < IM_CHECK_MAX_FIGURES; w++) {
      struct im_check_figure *fg = &c->fig[c->n_fig++];
      double half;
      const double *const *vm = (const double *const *)v[want[w].m];
      fg->name = want[w].name;
      fg->value_ms = pct_and_half(vm[V_SCHED], n, want[w].p, &half);
      double dummy;
      fg->client_free_ms = pct_and_half(vm[V_CLIENT_FREE], n, want[w].p, &dummy);
      fg->stall_free_ms = pct_and_half(vm[V_STALL_FREE], n, want[w].p, &dummy);
      fg->all_free_ms = pct_and_half(vm[V_ALL_FREE], n, want[w].p, &dummy);
      fg->tolerance_ms = fmax(IM_CHECK_FIGURE_SHARE * fabs(fg->value_ms), half);
      fg->pass = !(fg->value_ms - fg->client_free_ms > fg->tolerance_ms) &&
                 !(fg->value_ms - fg->stall_free_ms > fg->tolerance_ms);
      c->pass_figures &= fg->pass;
    }
  }
  for (int m = 0; m < 2; m++)
    for (int j = 0; j < V_COUNT; j++)
      free(v[m][j]);
}

/* Whether every request is due at the same instant (a burst, --rate inf). */
static bool is_burst(const struct im_population *pop) {
  int64_t t = -1;
  size_t n = 0;
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_logical *g = &pop->req[i];
    if (g->outcome == IM_OUTCOME_WARMUP || !g->first || g->first->t_sched < 0)
      continue;
    if (n++ && g->first->t_sched != t)
      return false;
    t = g->first->t_sched;
  }
  return n >= 2;
}

static void say(char *dst, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void say(char *dst, size_t cap, size_t *len, const char *fmt, ...) {
  if (*len >= cap)
    return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(dst + *len, cap - *len, fmt, ap);
  va_end(ap);
  if (w > 0)
    *len = *len + (size_t)w < cap ? *len + (size_t)w : cap;
}

/* The figure whose move by all lag is the largest, relative. */
static const struct im_check_figure *worst_all(const struct im_client_check *c) {
  const struct im_check_figure *w = NULL;
  double best = -1;
  for (size_t i = 0; i < c->n_fig; i++) {
    const struct im_check_figure *f = &c->fig[i];
    double rel = f->value_ms > 0 ? (f->value_ms - f->all_free_ms) / f->value_ms : 0;
    if (rel > best) {
      best = rel;
      w = f;
    }
  }
  return w;
}

/* The parts are joined by "; ": none doubled, none leading or trailing. */
static void tidy(char *s) {
  char *w = s;
  for (const char *r = s; *r;) {
    if (r[0] == ';' && r[1] == ' ' && (w == s || (w >= s + 2 && w[-2] == ';' && w[-1] == ' ') ||
                                      !r[2] || (r[2] == ';' && r[3] == ' '))) {
      r += 2; /* a separator with nothing on one side */
      continue;
    }
    *w++ = *r++;
  }
  *w = '\0';
  while (w > s && (w[-1] == ' ' || w[-1] == ';'))
    *--w = '\0';
}

static void describe(struct im_client_check *c) {
  size_t n = 0, cap = sizeof c->summary;
  char *s = c->summary;
  if (c->burst)
    say(s, cap, &n, "a burst (every request due at once): dispatch lag not judged, latency "
                    "counts from dispatch");
  bool client = !c->pass_lag || !c->pass_growth || !c->pass_recv || !c->pass_dispatched ||
                !c->pass_cpu || !c->pass_fd || !c->pass_port;
  bool figs_client = false, figs_stall = false;
  for (size_t i = 0; i < c->n_fig; i++) {
    const struct im_check_figure *f = &c->fig[i];
    if (f->value_ms - f->client_free_ms > f->tolerance_ms)
      figs_client = true;
    else if (f->value_ms - f->stall_free_ms > f->tolerance_ms)
      figs_stall = true;
  }
  if (!c->burst && c->lag_late_client)
    say(s, cap, &n, "%llu of %llu dispatches late because the client was busy (up to %.1f ms); ",
        (unsigned long long)c->lag_late_client, (unsigned long long)c->lag_n,
        c->client_lag_max_ms);
  if (!c->burst && c->lag_late_host)
    say(s, cap, &n, "%llu dispatch%s %.1f-%.1f ms late, host", (unsigned long long)c->lag_late_host,
        c->lag_late_host == 1 ? "" : "es", c->host_lag_min_ms, c->host_lag_max_ms);
  else if (!c->burst && !c->lag_late)
    say(s, cap, &n, "no dispatch later than %.3f ms", c->dispatch_lag_limit_ms);
  if (c->host_wakes)
    say(s, cap, &n, " (probe saw %.1f%% late wake-ups, max %.1f ms)",
        100.0 * (double)c->host_late / (double)c->host_wakes, c->host_max_ms);
  if (c->stalls_host) {
    say(s, cap, &n, "; %llu host stall%s past %.1f ms", (unsigned long long)c->stalls_host,
        c->stalls_host == 1 ? "" : "s", c->dispatch_lag_cap_ms);
    if (c->host_wakes && c->stalls_host_seen == c->stalls_host)
      say(s, cap, &n, c->stalls_host == 1 ? " (seen by the probe)" : " (all seen by the probe)");
    else if (c->host_wakes && c->stalls_host_seen)
      say(s, cap, &n, " (%llu seen by the probe)", (unsigned long long)c->stalls_host_seen);
    else if (c->host_wakes)
      say(s, cap, &n, " (not seen by the probe)");
  }
  if (c->recv_late)
    say(s, cap, &n, "; %llu of %llu reads later than %.3f ms, %llu by the client's work",
        (unsigned long long)c->recv_late, (unsigned long long)c->recv_n, c->dispatch_lag_limit_ms,
        (unsigned long long)c->recv_late_client);
  const struct im_check_figure *w = worst_all(c);
  if (w && w->value_ms > 0)
    say(s, cap, &n, "; adds <= %.2f%% to %s", 100.0 * (w->value_ms - w->all_free_ms) / w->value_ms,
        w->name);
  if (!c->pass_growth)
    say(s, cap, &n, "; the client's lag grew by %.1f ms over the run", c->lag_growth_ms);
  if (figs_client)
    say(s, cap, &n, "; the client's delay moves a headline figure past its tolerance");
  else if (figs_stall)
    say(s, cap, &n, "; a host stall moves a headline figure past its tolerance");
  if (!c->pass_cpu)
    say(s, cap, &n, "; generator CPU %.0f%%", 100.0 * c->cpu_share);
  if (!c->pass_dispatched)
    say(s, cap, &n, "; dispatched %.2f%% of scheduled", 100.0 * c->dispatched_share);
  if (!c->pass_fd || !c->pass_port)
    say(s, cap, &n, "; %s exhausted", !c->pass_fd ? "file descriptors" : "ephemeral ports");
  tidy(s);

  if (client || figs_client)
    snprintf(c->advice, sizeof c->advice,
             "the client was busy: use --threads N or a lower rate%s",
             !c->pass_fd || !c->pass_port ? "; raise ulimit -n or keep connections alive" : "");
  else if (figs_stall || c->host_warn || c->lag_late_host ||
           (c->host_wakes && c->host_late * 100 > c->host_wakes))
    snprintf(c->advice, sizeof c->advice,
             "the host was late, not the client: an idle machine, or the generator on its own "
             "CPUs at a higher priority (taskset -c, chrt -f); --threads would not help");
}

void im_client_check_compute_host(const struct im_population *pop, const struct im_summary *s,
                                  const struct im_summary_config *cfg,
                                  const struct im_client_counters *k,
                                  const struct im_hist *receive_lag, const struct im_hostlat *host,
                                  struct im_client_check *c) {
  memset(c, 0, sizeof *c);
  c->dispatch_lag_limit_ms = IM_CHECK_LAG_FLOOR_MS;
  if (cfg->has_slo_ttft && cfg->slo_ttft_ms * IM_CHECK_LAG_SLO_SHARE > c->dispatch_lag_limit_ms)
    c->dispatch_lag_limit_ms = cfg->slo_ttft_ms * IM_CHECK_LAG_SLO_SHARE;
  const struct im_hist *h = &s->hist[IM_H_DISPATCH_LAG];
  c->dispatch_lag_p99_ms = im_hist_count(h) ? (double)im_hist_percentile(h, 0.99) / 1e6 : NAN;
  const struct im_hist *ttft = &s->hist[IM_H_TTFT];
  double median_ttft_ms = im_hist_count(ttft) ? (double)im_hist_percentile(ttft, 0.5) / 1e6 : 0.0;
  c->dispatch_lag_cap_ms = IM_CHECK_LAG_CAP_FLOOR_MS;
  if (median_ttft_ms * IM_CHECK_LAG_CAP_TTFT_SHARE > c->dispatch_lag_cap_ms)
    c->dispatch_lag_cap_ms = median_ttft_ms * IM_CHECK_LAG_CAP_TTFT_SHARE;
  int64_t limit_ns = (int64_t)llround(c->dispatch_lag_limit_ms * 1e6);
  int64_t cap_ns = (int64_t)llround(c->dispatch_lag_cap_ms * 1e6);
  c->burst = is_burst(pop);
  if (host && host->wakes) {
    c->host_wakes = host->wakes;
    c->host_late = im_hostlat_late(host);
    c->host_max_ms = (double)host->max_ns / 1e6;
  }
  /* The same attempts as the histogram: every attempt of a non-warm-up
   * logical request that was dispatched. */
  c->host_lag_min_ms = c->host_lag_max_ms = NAN;
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_logical *g = &pop->req[i];
    if (g->outcome == IM_OUTCOME_WARMUP)
      continue;
    for (size_t a = g->begin; a < g->end; a++) {
      const struct im_record *r = pop->attempts[a];
      if (r->t_sched < 0 || r->t_dispatch < 0)
        continue;
      c->attributed |= r->lag_client_us >= 0;
      c->lag_n++;
      int64_t lag = r->t_dispatch - r->t_sched, cl = client_lag_ns(r);
      if ((double)cl / 1e6 > c->client_lag_max_ms)
        c->client_lag_max_ms = (double)cl / 1e6;
      if (lag > limit_ns) {
        c->lag_late++;
        if (cl > limit_ns) {
          c->lag_late_client++;
        } else {
          c->lag_late_host++;
          double ms = (double)lag / 1e6;
          if (!(ms >= c->host_lag_min_ms))
            c->host_lag_min_ms = ms;
          if (!(ms <= c->host_lag_max_ms))
            c->host_lag_max_ms = ms;
        }
      }
      if (lag > cap_ns) {
        if (cl > cap_ns) {
          c->stalls_client++;
        } else {
          c->stalls_host++;
          c->stalls_host_seen += host && im_hostlat_stall_within(host, r->t_sched, r->t_dispatch) > 0;
        }
      }
    }
  }
  c->dispatch_lag_max_ms = im_hist_count(h) ? (double)im_hist_max(h) / 1e6 : NAN;
  if (c->burst) {
    /* Every request due at once: there is no schedule to be late for. */
    c->lag_p_value = NAN;
    c->pass_lag_test = c->pass_lag_cap = true;
    c->stalls_client = c->stalls_host = c->stalls_host_seen = 0;
    c->lag_late_client = c->lag_late_host = 0;
  } else {
    c->lag_p_value =
        im_stats_binom_sf((int64_t)c->lag_late_client, (int64_t)c->lag_n, IM_CHECK_LATE_SHARE);
    c->pass_lag_test = !(c->lag_p_value < 1.0 - IM_CHECK_CONFIDENCE);
    c->pass_lag_cap = c->stalls_client == 0;
  }
  c->pass_lag = c->pass_lag_test && c->pass_lag_cap;
  c->host_warn = c->stalls_host > 0;
  receive_check(pop, receive_lag, limit_ns, c);
  growth_check(pop, limit_ns, c);
  figures_check(pop, cap_ns, c);
  c->dispatched_share = k->scheduled ? (double)k->dispatched / (double)k->scheduled : 1.0;
  c->pass_dispatched = c->dispatched_share >= IM_CHECK_DISPATCHED_MIN;
  c->cpu_share = k->cpu_share;
  c->pass_cpu = k->cpu_share <= IM_CHECK_CPU_MAX;
  c->fd_exhausted = k->fd_exhausted;
  c->port_exhausted = k->port_exhausted;
  c->pass_fd = k->fd_exhausted == 0;
  c->pass_port = k->port_exhausted == 0;
  c->valid = c->pass_lag && c->pass_recv && c->pass_growth && c->pass_figures &&
             c->pass_dispatched && c->pass_cpu && c->pass_fd && c->pass_port;
  describe(c);
}

void im_client_check_compute(const struct im_population *pop, const struct im_summary *s,
                             const struct im_summary_config *cfg,
                             const struct im_client_counters *k,
                             const struct im_hist *receive_lag, struct im_client_check *c) {
  im_client_check_compute_host(pop, s, cfg, k, receive_lag, NULL, c);
}
