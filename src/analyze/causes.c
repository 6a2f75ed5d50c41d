/* Root causes of SLO violations: see analyze/causes.h and docs/audit.md. */
#include "analyze/causes.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

static const char *const cause_names[IM_CAUSE_RULES_ + 1] = {
    "temperature_overload", "top_p_collapse",       "queueing",
    "kv_pressure",          "client_saturation",    "connection_churn",
    "server_stall",         "prefill_interference", "host_noise",
    "unexplained"};

const char *im_cause_name(enum im_cause c) {
  return (unsigned)c <= IM_CAUSE_RULES_ ? cause_names[c] : "?";
}

const char *im_cause_status_name(enum im_cause_status s) {
  return s == IM_CAUSE_FIRED            ? "fired"
         : s == IM_CAUSE_NOT_FIRED      ? "not_fired"
         : s == IM_CAUSE_NOT_APPLICABLE ? "not_applicable"
                                        : "not_checked";
}

/* One completed request as the rules see it. */
struct req {
  const struct im_record *r;
  double v[IM_SLO_ALL]; /* ms: TTFT, TPOT, E2EL, as summary.c's SLO check */
  bool stalled;         /* holds a stall */
  double stall_ms;      /* its stalls' time beyond its median gap, less the host's part: */
  double stall_host_ms; /* of each stall, up to the longest wake-up lateness the host probe
                           saw in the run (a loop the host held that long stalls every
                           stream it serves) */
};

/* A stall: the gap [t0, t1] (run-relative ns) of request `req`. */
struct gap {
  int64_t t0, t1;
  size_t req;
};

/* A prefill: [a, b) = [t_start, t_first) of a completed request. */
struct span {
  int64_t a, b;
};

/* What every rule of a stage reads, built once. */
struct ctx {
  const struct im_causes_input *in;
  struct req *req;
  size_t n;
  struct gap *gaps;
  size_t n_gaps, cap_gaps;
  struct span *pre;   /* by start */
  int64_t *pre_reach; /* pre_reach[i]: the latest end among pre[0..i] */
  size_t n_pre;
  double pre_cover; /* share of the requests' span inside some prefill; NaN: no span */
  const struct im_server_source_figs *src; /* the primary source's series; NULL: none */
  double *a, *b;                           /* scratch, n each */
  const struct im_record **cut; /* requests cut at the end-of-run grace (aborted) */
  size_t n_cut;
};

/* The SLO being explained. */
struct slo_view {
  enum im_slo_kind k;
  double lim;
  uint64_t over; /* completed requests above lim */
};

static bool over(const struct ctx *c, const struct slo_view *s, size_t i) {
  return c->req[i].v[s->k] > s->lim;
}

static void fig(struct im_cause_check *ck, const char *key, double v) {
  if (ck->n_figs < IM_CAUSE_MAX_FIGS)
    ck->figs[ck->n_figs++] = (struct im_cause_fig){key, v};
}

__attribute__((format(printf, 3, 4))) static void verdict(struct im_cause_check *ck,
                                                         enum im_cause_status st,
                                                         const char *fmt, ...) {
  ck->status = st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ck->why, sizeof ck->why, fmt, ap);
  va_end(ap);
}

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

static int cmp_span(const void *x, const void *y) {
  const struct span *a = x, *b = y;
  return (a->a > b->a) - (a->a < b->a);
}

/* The median of n values (sorted in place); NaN when n == 0. */
static double median(double *v, size_t n) {
  im_stats_sort(v, n);
  return im_stats_pct_linear(v, n, 0.5);
}

/* ---- what the rules read */

static void primary_source(struct ctx *c) {
  const struct im_server_figures *sf = c->in->server;
  for (size_t k = 0; sf && k < sf->n_src && !c->src; k++)
    if (!sf->src[k].dcgm && !sf->src[k].not_collected[0] && sf->src[k].n_series)
      c->src = &sf->src[k];
}

static enum im_err push_gap(struct ctx *c, struct gap g) {
  if (c->n_gaps == c->cap_gaps) {
    size_t cap = c->cap_gaps ? c->cap_gaps * 2 : 64;
    struct gap *v = realloc(c->gaps, cap * sizeof *v);
    if (!v)
      return IM_NOMEM;
    c->gaps = v;
    c->cap_gaps = cap;
  }
  c->gaps[c->n_gaps++] = g;
  return IM_OK;
}

/* Stalls of request i by analyze/tokens.h's rule: a gap longer than k times
 * the request's (lower) median gap. g and sorted have room for its gaps. */
static enum im_err stalls_of(struct ctx *c, size_t i, int64_t *g, int64_t *sorted) {
  const struct im_record *r = c->req[i].r;
  double k = c->in->f->tokens.cfg.stall_k;
  const struct im_client_check *ck = &c->in->f->check;
  double host_ms = ck->host_wakes && ck->host_max_ms > 0 ? ck->host_max_ms : 0.0;
  size_t n = 0;
  for (uint32_t j = 1; r->chunk_us && j < r->n_chunks; j++)
    g[n++] = ((int64_t)r->chunk_us[j] - (int64_t)r->chunk_us[j - 1]) * 1000;
  if (!n)
    return IM_OK;
  memcpy(sorted, g, n * sizeof *g);
  qsort(sorted, n, sizeof *sorted, cmp_i64);
  int64_t med = sorted[(n - 1) / 2];
  for (size_t j = 0; j < n && med > 0; j++) {
    if (!((double)g[j] > k * (double)med))
      continue;
    c->req[i].stalled = true;
    double ex = (double)(g[j] - med) / 1e6, host = ex < host_ms ? ex : host_ms;
    c->req[i].stall_ms += ex - host;
    c->req[i].stall_host_ms += host;
    enum im_err err = push_gap(c, (struct gap){r->t_start + (int64_t)r->chunk_us[j] * 1000,
                                               r->t_start + (int64_t)r->chunk_us[j + 1] * 1000, i});
    if (err)
      return err;
  }
  return IM_OK;
}

static enum im_err all_stalls(struct ctx *c) {
  size_t longest = 1;
  for (size_t i = 0; i < c->n; i++)
    longest = c->req[i].r->n_chunks > longest ? c->req[i].r->n_chunks : longest;
  int64_t *g = malloc(longest * sizeof *g), *sorted = malloc(longest * sizeof *sorted);
  enum im_err err = g && sorted ? IM_OK : IM_NOMEM;
  for (size_t i = 0; i < c->n && !err; i++)
    err = stalls_of(c, i, g, sorted);
  free(g);
  free(sorted);
  return err;
}

/* Prefill intervals by start, their running reach, and the share of the
 * requests' span [first start, last token] that some prefill covers. */
static void prefills(struct ctx *c) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t i = 0; i < c->n; i++) {
    const struct im_record *r = c->req[i].r;
    lo = r->t_start < lo ? r->t_start : lo;
    hi = r->t_last > hi ? r->t_last : hi;
    if (r->t_first > r->t_start)
      c->pre[c->n_pre++] = (struct span){r->t_start, r->t_first};
  }
  qsort(c->pre, c->n_pre, sizeof *c->pre, cmp_span);
  int64_t covered = 0, cur_a = 0, cur_b = INT64_MIN;
  for (size_t i = 0; i < c->n_pre; i++) {
    const struct span *p = &c->pre[i];
    c->pre_reach[i] = i && c->pre_reach[i - 1] > p->b ? c->pre_reach[i - 1] : p->b;
    if (p->a > cur_b) {
      covered += cur_b > cur_a ? cur_b - cur_a : 0;
      cur_a = p->a;
    }
    cur_b = p->b > cur_b ? p->b : cur_b;
  }
  covered += c->n_pre && cur_b > cur_a ? cur_b - cur_a : 0;
  c->pre_cover = hi > lo ? (double)covered / (double)(hi - lo) : NAN;
}

/* Whether some request was in its prefill at t: pre[j].a <= t < pre[j].b. */
static bool in_prefill(const struct ctx *c, int64_t t) {
  size_t lo = 0, hi = c->n_pre; /* first start after t */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (c->pre[mid].a <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo > 0 && c->pre_reach[lo - 1] > t;
}

static void ctx_free(struct ctx *c) {
  free(c->req);
  free(c->gaps);
  free(c->pre);
  free(c->pre_reach);
  free(c->a);
  free(c->b);
  free(c->cut);
}

static enum im_err ctx_build(struct ctx *c, const struct im_causes_input *in) {
  memset(c, 0, sizeof *c);
  c->in = in;
  const struct im_population *pop = &in->f->pop;
  size_t cap = pop->n_req ? pop->n_req : 1;
  c->req = calloc(cap, sizeof *c->req);
  c->pre = malloc(cap * sizeof *c->pre);
  c->pre_reach = malloc(cap * sizeof *c->pre_reach);
  c->a = malloc(cap * sizeof *c->a);
  c->b = malloc(cap * sizeof *c->b);
  c->cut = malloc(cap * sizeof *c->cut);
  if (!c->req || !c->pre || !c->pre_reach || !c->a || !c->b || !c->cut)
    return IM_NOMEM;
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_record *r = pop->req[i].final;
    if (pop->req[i].outcome == IM_OUTCOME_ABORTED)
      c->cut[c->n_cut++] = r;
    if (pop->req[i].outcome != IM_OUTCOME_COMPLETED)
      continue;
    struct req *q = &c->req[c->n++];
    q->r = r;
    q->v[IM_SLO_TTFT] = (double)(r->t_first - r->t_start) / 1e6;
    q->v[IM_SLO_E2EL] = (double)(r->t_last - r->t_start) / 1e6;
    q->v[IM_SLO_TPOT] = r->output_tokens >= 2 ? (q->v[IM_SLO_E2EL] - q->v[IM_SLO_TTFT]) /
                                                    (double)(r->output_tokens - 1)
                                              : 0.0;
  }
  primary_source(c);
  prefills(c);
  return all_stalls(c);
}

/* ---- the rules */

/* A request's temperature and its index, for the thirds. */
struct temp_at {
  double t;
  size_t i;
};

static int cmp_temp(const void *x, const void *y) {
  const struct temp_at *a = x, *b = y;
  return (a->t > b->t) - (a->t < b->t);
}

/* Violations and mean output tokens of a third. */
static void third(const struct ctx *c, const struct slo_view *s, const struct temp_at *t, size_t n,
                  uint64_t *n_over, double *out_mean) {
  double out = 0;
  *n_over = 0;
  for (size_t k = 0; k < n; k++) {
    *n_over += over(c, s, t[k].i);
    out += c->req[t[k].i].r->output_tokens;
  }
  *out_mean = out / (double)n;
}

/* Mean output entropy (--logprobs) of the n requests at t; NaN: none has one. */
static double third_entropy(const struct ctx *c, const struct temp_at *t, size_t n) {
  double sum = 0;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    double h = c->req[t[i].i].r->entropy;
    if (!isnan(h))
      sum += h, k++;
  }
  return k ? sum / (double)k : NAN;
}

static void check_temperature(const struct ctx *c, const struct slo_view *s,
                              struct im_cause_check *ck) {
  struct temp_at *t = malloc((c->n ? c->n : 1) * sizeof *t);
  size_t m = 0;
  if (!t) {
    verdict(ck, IM_CAUSE_NOT_APPLICABLE, "not checked: out of memory");
    return;
  }
  for (size_t i = 0; i < c->n; i++)
    if (!isnan(c->req[i].r->temperature))
      t[m++] = (struct temp_at){c->req[i].r->temperature, i};
  qsort(t, m, sizeof *t, cmp_temp);
  if (m < 3 || t[0].t == t[m - 1].t) {
    verdict(ck, IM_CAUSE_NOT_APPLICABLE,
            m == 0  ? "no request sent a temperature"
            : m < 3 ? "fewer than 3 completed requests sent a temperature"
                    : "every request sent the same temperature");
    free(t);
    return;
  }
  size_t n3 = m / 3;
  uint64_t o_cold, o_hot;
  double out_cold, out_hot;
  third(c, s, t, n3, &o_cold, &out_cold);
  third(c, s, t + m - n3, n3, &o_hot, &out_hot);
  double p_cold = (double)o_cold / (double)n3, p_hot = (double)o_hot / (double)n3;
  ck->score = p_hot / fmax(p_cold, IM_CAUSE_EMPTY_GROUP / (double)n3);
  fig(ck, "requests_per_third", (double)n3);
  fig(ck, "hot_temperature_min", t[m - n3].t);
  fig(ck, "cold_temperature_max", t[n3 - 1].t);
  fig(ck, "hot_share_over", p_hot);
  fig(ck, "cold_share_over", p_cold);
  fig(ck, "hot_output_tokens_mean", out_hot);
  fig(ck, "cold_output_tokens_mean", out_cold);
  /* Evidence only (--logprobs): sampling flattens as temperature rises. */
  double h_hot = third_entropy(c, t + m - n3, n3), h_cold = third_entropy(c, t, n3);
  if (!isnan(h_hot) || !isnan(h_cold)) {
    fig(ck, "hot_entropy_mean", h_hot);
    fig(ck, "cold_entropy_mean", h_cold);
  }
  /* Against chance: were the thirds alike, each of their violations would
   * fall in the hottest with probability 1/2. */
  double p = o_hot ? im_stats_binom_sf((int64_t)o_hot, (int64_t)(o_hot + o_cold), 0.5) : 1.0;
  /* Lengths carry it: the violating requests answered longer than the
   * others (a TTFT is not lengthened by the answer: not asked there). */
  double len_v = 0, len_o = 0;
  uint64_t nv = 0, no = 0;
  for (size_t i = 0; i < c->n; i++)
    if (over(c, s, i))
      len_v += c->req[i].r->output_tokens, nv++;
    else
      len_o += c->req[i].r->output_tokens, no++;
  len_v = nv ? len_v / (double)nv : NAN;
  len_o = no ? len_o / (double)no : 0.0;
  fig(ck, "p_value", p);
  fig(ck, "violating_output_tokens_mean", len_v);
  bool longer = s->k == IM_SLO_TTFT || len_v > len_o;
  bool fires = o_hot > 0 && ck->score >= IM_CAUSE_TEMP_RATIO && p < IM_CAUSE_TEMP_P &&
               out_hot > out_cold && longer;
  verdict(ck, fires ? IM_CAUSE_FIRED : IM_CAUSE_NOT_FIRED,
          "%.0f%% of the hottest third (T >= %.3g) over the limit against %.0f%% of the coldest "
          "(T <= %.3g): ratio %.2f (fires at >= %.0f), P = %.3g against chance (fires below "
          "%.2f); mean output %.0f against %.0f tokens, %.0f in violating requests against %.0f",
          100 * p_hot, t[m - n3].t, 100 * p_cold, t[n3 - 1].t, ck->score, IM_CAUSE_TEMP_RATIO,
          p, IM_CAUSE_TEMP_P, out_hot, out_cold, len_v, len_o);
  free(t);
}

/* Top-p collapse: the requests over the limit repeat themselves (mean
 * repetition rate of their answers above 0.45) and the values are bimodal
 * (BC above 0.555): some answers loop to max_tokens, the rest end. */
static void check_top_p(const struct ctx *c, const struct slo_view *s, const struct im_cause_slo *o,
                        struct im_cause_check *ck) {
  double sum_over = 0, sum_within = 0;
  size_t n_over = 0, n_within = 0;
  for (size_t i = 0; i < c->n; i++) {
    const struct im_record *r = c->req[i].r;
    if (!r->ngrams || !(r->repetition >= 0))
      continue;
    if (over(c, s, i))
      sum_over += r->repetition, n_over++;
    else
      sum_within += r->repetition, n_within++;
  }
  double rep_over = n_over ? sum_over / (double)n_over : NAN;
  double rep_within = n_within ? sum_within / (double)n_within : NAN;
  fig(ck, "repetition_over_mean", rep_over);
  fig(ck, "repetition_within_mean", rep_within);
  fig(ck, "repetition_measured", (double)(n_over + n_within));
  fig(ck, "repetition_threshold", IM_CAUSE_REPETITION);
  fig(ck, "bimodality_coefficient", o->bimodality);
  fig(ck, "bimodality_threshold", IM_CAUSE_BIMODAL);
  if (n_over == 0) {
    verdict(ck, IM_CAUSE_NOT_CHECKED,
            "not checked: no request over the limit carries a repetition rate (--keep-text off, "
            "or answers of fewer than 4 streamed pieces); the bimodality coefficient of the values "
            "is %.3f",
            o->bimodality);
    return;
  }
  ck->score = rep_over / IM_CAUSE_REPETITION;
  /* Two groups: looping answers run to max_tokens, the others end. Said
   * by the values' bimodality, or directly by the finish reasons (a
   * sample dominated by the loops is not bimodal by its moments). */
  uint64_t loops = 0;
  for (size_t i = 0; i < c->n; i++) {
    const struct im_record *r = c->req[i].r;
    loops += over(c, s, i) && !r->ignore_eos && !strcmp(r->finish_reason, "length");
  }
  double loop_share = s->over ? (double)loops / (double)s->over : NAN;
  fig(ck, "over_limit_share_at_max_tokens", loop_share);
  bool bimodal = o->bimodality > IM_CAUSE_BIMODAL, ran_out = loop_share >= IM_CAUSE_LOOP_SHARE;
  bool fires = rep_over > IM_CAUSE_REPETITION && (bimodal || ran_out);
  verdict(ck, fires ? IM_CAUSE_FIRED : IM_CAUSE_NOT_FIRED,
          "answers over the limit repeat %.0f%% of their 4-grams (fires above %.0f%%; %.0f%% within "
          "the limit); the values' bimodality coefficient is %.3f (%s %.3f) and %.0f%% of the "
          "answers over the limit ran to max_tokens (two groups at >= %.0f%%)",
          100 * rep_over, 100 * IM_CAUSE_REPETITION, 100 * (n_within ? rep_within : 0.0),
          o->bimodality, bimodal ? "above" : "not above", IM_CAUSE_BIMODAL, 100 * loop_share,
          100 * IM_CAUSE_LOOP_SHARE);
}

/* The first sample of src at or after t_s (s; n_series when none), or
 * strictly after it. */
static size_t sample_from(const struct im_server_source_figs *src, double t_s, bool after) {
  size_t lo = 0, hi = src->n_series;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (after ? src->series[mid].t_s <= t_s : src->series[mid].t_s < t_s)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The waiting count of the sample nearest to t_s that has one; NaN when
 * none. */
static double waiting_at(const struct im_server_source_figs *src, double t_s) {
  size_t lo = sample_from(src, t_s, false);
  double best = NAN, dist = INFINITY;
  for (size_t j = lo > 0 ? lo - 1 : 0; j < src->n_series; j++) {
    double d = fabs(src->series[j].t_s - t_s);
    if (isnan(src->series[j].requests_waiting))
      continue;
    if (d < dist) {
      dist = d;
      best = src->series[j].requests_waiting;
    } else if (src->series[j].t_s > t_s) {
      break;
    }
  }
  return best;
}

/* Median TPOT of violating requests and of the others. */
static void tpot_medians(const struct ctx *c, const struct slo_view *s, double *med_v,
                         double *med_o, size_t *n_o) {
  size_t nv = 0, no = 0;
  for (size_t i = 0; i < c->n; i++) {
    if (over(c, s, i))
      c->a[nv++] = c->req[i].v[IM_SLO_TPOT];
    else
      c->b[no++] = c->req[i].v[IM_SLO_TPOT];
  }
  *med_v = median(c->a, nv);
  *med_o = median(c->b, no);
  *n_o = no;
}

static void check_queueing(const struct ctx *c, const struct slo_view *s,
                           struct im_cause_check *ck) {
  if (!c->src || isnan(c->src->waiting_max)) {
    verdict(ck, IM_CAUSE_NOT_APPLICABLE,
            !c->src ? "no server samples (the waiting queue was not scraped)"
                    : "the server exports no waiting-queue length");
    return;
  }
  size_t m = 0;
  for (size_t i = 0; i < c->n; i++) {
    const struct im_record *r = c->req[i].r;
    double w = waiting_at(c->src, (double)(r->t_sched >= 0 ? r->t_sched : r->t_start) / 1e9);
    if (isnan(w))
      continue;
    c->a[m] = c->req[i].v[IM_SLO_TTFT];
    c->b[m++] = w;
  }
  double r = m ? im_stats_pearson(c->a, c->b, m) : NAN;
  double med_v, med_o;
  size_t n_o;
  tpot_medians(c, s, &med_v, &med_o, &n_o);
  ck->score = r;
  fig(ck, "pearson_r", r);
  fig(ck, "requests_paired", (double)m);
  fig(ck, "waiting_max", c->src->waiting_max);
  fig(ck, "violating_tpot_median_ms", med_v);
  fig(ck, "others_tpot_median_ms", med_o);
  if (!m) {
    verdict(ck, IM_CAUSE_NOT_APPLICABLE, "the server exports no waiting-queue length");
    return;
  }
  bool flat = n_o && med_v <= IM_CAUSE_ITL_FLAT * med_o;
  bool fires = r >= IM_CAUSE_QUEUE_R && flat;
  verdict(ck, fires ? IM_CAUSE_FIRED : IM_CAUSE_NOT_FIRED,
          "TTFT against the waiting queue at arrival: r = %.2f%s (fires at >= %.2f); median "
          "TPOT %.3g ms of violating requests against %.3g ms of the others%s (flat up to %.1fx)",
          r, isnan(r) ? " (a constant series)" : "", IM_CAUSE_QUEUE_R, med_v, med_o,
          n_o ? "" : " (none met the limit)", IM_CAUSE_ITL_FLAT);
}

/* Whether the samples overlapping [t0, t1] (s) show KV pressure; *preempted:
 * whether preemptions rose over them. */
static bool kv_pressed(const struct im_server_source_figs *src, double t0, double t1,
                       bool *preempted) {
  size_t a = sample_from(src, t0, true), b = sample_from(src, t1, false);
  a = a ? a - 1 : 0;                             /* the last at or before t0 */
  b = b < src->n_series ? b : src->n_series - 1; /* the first at or after t1 */
  if (b < a)
    b = a;
  *preempted = src->series[b].preemptions > src->series[a].preemptions;
  for (size_t j = a; j <= b; j++)
    if (src->series[j].kv_cache_usage >= IM_CAUSE_KV_USAGE)
      return true;
  return *preempted;
}

static void check_kv(const struct ctx *c, const struct slo_view *s, struct im_cause_check *ck) {
  if (!c->src) {
    verdict(ck, IM_CAUSE_NOT_APPLICABLE, "no server samples (KV usage and preemptions)");
    return;
  }
  /* When no completed request is over the limit, the violations are the
   * requests the server never finished (cut at the end-of-run grace): they
   * are the violating ones here, judged over their time until the cut. */
  bool by_cut = !s->over && c->n_cut;
  uint64_t pv = 0, po = 0, no = 0, pre_v = 0, nv = by_cut ? c->n_cut : s->over;
  for (size_t i = 0; i < c->n + (by_cut ? c->n_cut : 0); i++) {
    const struct im_record *r = i < c->n ? c->req[i].r : c->cut[i - c->n];
    bool preempted;
    bool p = kv_pressed(c->src, (double)r->t_start / 1e9,
                        (double)(r->t_end >= r->t_last ? r->t_end : r->t_last) / 1e9, &preempted);
    if (i >= c->n || over(c, s, i)) {
      pv += p;
      pre_v += preempted;
    } else {
      po += p;
      no++;
    }
  }
  double sv = nv ? (double)pv / (double)nv : NAN;
  double so = no ? (double)po / (double)no : 0.0;
  ck->score = sv;
  fig(ck, "violating_share_pressed", sv);
  fig(ck, "others_share_pressed", so);
  fig(ck, "kv_cache_usage_max", c->src->kv_cache_usage_max);
  fig(ck, "preemptions", c->src->preemptions);
  /* A full cache all the time explains nothing by itself (the contrast);
   * preemptions during the violating requests do: a preempted sequence
   * waits and is computed again, whatever the others went through. */
  double sp = nv ? (double)pre_v / (double)nv : NAN;
  fig(ck, "violating_share_preempted", sp);
  fig(ck, "violating_cut_at_grace", by_cut ? (double)c->n_cut : 0.0);
  bool fires = (sv >= IM_CAUSE_KV_SHARE && sv >= IM_CAUSE_KV_CONTRAST * so) ||
               sp >= IM_CAUSE_KV_SHARE;
  verdict(ck, fires ? IM_CAUSE_FIRED : IM_CAUSE_NOT_FIRED,
          "%.0f%% of violating requests%s ran while preemptions rose or KV usage reached %.2f, "
          "against %.0f%% of the others (fires at >= %.0f%% and >= %.0fx); preemptions rose "
          "during %.0f%% of them (fires at >= %.0f%%)",
          100 * sv, by_cut ? " (those cut at the end-of-run grace, never finished)" : "",
          IM_CAUSE_KV_USAGE, 100 * so, 100 * IM_CAUSE_KV_SHARE, IM_CAUSE_KV_CONTRAST,
          100 * sp, 100 * IM_CAUSE_KV_SHARE);
}

static void check_client(const struct ctx *c, struct im_cause_check *ck) {
  const struct im_client_check *k = &c->in->f->check;
  ck->score = k->valid ? 0.0 : 1.0;
  fig(ck, "dispatch_lag_p99_ms", k->dispatch_lag_p99_ms);
  fig(ck, "dispatch_lag_limit_ms", k->dispatch_lag_limit_ms);
  fig(ck, "late_dispatches", (double)k->lag_late);
  fig(ck, "dispatched_share", k->dispatched_share);
  fig(ck, "generator_cpu_share", k->cpu_share);
  verdict(ck, k->valid ? IM_CAUSE_NOT_FIRED : IM_CAUSE_FIRED, "the client self-check is %s%s",
          k->valid ? "VALID" : "INVALID",
          k->valid ? "" : ": the figures describe the load generator (docs/metrics.md §10)");
}

static void check_churn(const struct ctx *c, const struct slo_view *s, struct im_cause_check *ck) {
  const struct im_server_tcp_figs *tcp = c->in->server ? &c->in->server->tcp : NULL;
  if (!tcp || tcp->not_collected[0]) {
    verdict(ck, IM_CAUSE_NOT_APPLICABLE, "no TCP samples (TIME_WAIT not counted)");
    return;
  }
  uint64_t n_new = 0, o_new = 0, o_old = 0;
  for (size_t i = 0; i < c->n; i++) {
    bool nw = c->req[i].r->conn_new, o = over(c, s, i);
    n_new += nw;
    o_new += nw && o;
    o_old += !nw && o;
  }
  uint64_t n_old = c->n - n_new;
  double p_new = n_new ? (double)o_new / (double)n_new : NAN;
  double p_old = n_old ? (double)o_old / (double)n_old : NAN;
  ck->score = n_new && n_old ? p_new / fmax(p_old, IM_CAUSE_EMPTY_GROUP / (double)n_old) : NAN;
  fig(ck, "time_wait_growth_per_s", tcp->time_wait_growth_per_s);
  fig(ck, "time_wait_max", tcp->time_wait_max);
  fig(ck, "new_connection_requests", (double)n_new);
  fig(ck, "reused_connection_requests", (double)n_old);
  fig(ck, "new_share_over", p_new);
  fig(ck, "reused_share_over", p_old);
  bool fires = tcp->time_wait_growing && o_new > 0 && n_old && ck->score >= IM_CAUSE_CONN_RATIO;
  verdict(ck, fires ? IM_CAUSE_FIRED : IM_CAUSE_NOT_FIRED,
          "TIME_WAIT %s; %.0f%% of %llu requests that opened their connection over the limit "
          "against %.0f%% of %llu that reused one: ratio %.2f (fires at >= %.0f)",
          tcp->time_wait_growing ? "growing" : "not growing", 100 * p_new,
          (unsigned long long)n_new, 100 * p_old, (unsigned long long)n_old, ck->score,
          IM_CAUSE_CONN_RATIO);
}

/* Share of violating (or other) requests holding a stall. */
static double stalled_share(const struct ctx *c, const struct slo_view *s, bool violating) {
  uint64_t n = 0, st = 0;
  for (size_t i = 0; i < c->n; i++)
    if (over(c, s, i) == violating) {
      n++;
      st += c->req[i].stalled;
    }
  return n ? (double)st / (double)n : NAN;
}

/* What a delay of request q (ms, the part of its SLO value it added) is
 * for the SLO: its stalls' time beyond the median gap, or the host's part
 * of its late reads (record/record.h). */
static double stall_delay(const struct req *q, enum im_slo_kind k) {
  uint32_t n = q->r->output_tokens;
  return k == IM_SLO_E2EL ? q->stall_ms : k == IM_SLO_TPOT && n >= 2 ? q->stall_ms / (n - 1) : 0.0;
}

static double host_ms(int32_t all_us, int32_t client_us) {
  return all_us > 0 && client_us >= 0 && all_us > client_us ? (all_us - client_us) / 1e3 : 0.0;
}

static double host_delay(const struct req *q, enum im_slo_kind k) {
  const struct im_record *r = q->r;
  double first = host_ms(r->read_first_us, r->read_first_client_us);
  double last = host_ms(r->read_last_us, r->read_last_client_us);
  uint32_t n = r->output_tokens;
  if (k == IM_SLO_TTFT)
    return first;
  if (k == IM_SLO_E2EL)
    return last + q->stall_host_ms;
  return n >= 2 ? ((last > first ? last - first : 0.0) + q->stall_host_ms) / (n - 1) : 0.0;
}

/* The share of the violating requests whose delay makes up at least
 * IM_CAUSE_CARRY_EXCESS of their excess over the limit (value - L): the
 * delay carries the violation, by the same limit-relative measure for
 * every cause (a few ms of a busy host beside seconds over the limit do
 * not). NaN without a violation. */
static double carried(const struct ctx *c, const struct slo_view *s,
                      double (*delay)(const struct req *, enum im_slo_kind)) {
  uint64_t n = 0, k = 0;
  for (size_t i = 0; i < c->n; i++)
    if (over(c, s, i)) {
      n++;
      k += delay(&c->req[i], s->k) >= IM_CAUSE_CARRY_EXCESS * (c->req[i].v[s->k] - s->lim);
    }
  return n ? (double)k / (double)n : NAN;
}

static void check_stall(const struct ctx *c, const struct slo_view *s, struct im_cause_check *ck) {
  const struct im_tokens *t = &c->in->f->tokens;
  if (s->k == IM_SLO_TTFT) {
    verdict(ck, IM_CAUSE_NOT_APPLICABLE, "a TTFT SLO: stalls come after the first token");
    return;
  }
  double sv = stalled_share(c, s, true);
  ck->score = sv;
  fig(ck, "stalls", (double)t->stalls);
  fig(ck, "aligned_share", t->aligned_share);
  fig(ck, "violating_share_stalled", sv);
  fig(ck, "others_share_stalled", stalled_share(c, s, false));
  if (!t->stalls) {
    verdict(ck, IM_CAUSE_NOT_FIRED, "no stall in the stage");
    return;
  }
  double cs = carried(c, s, stall_delay);
  fig(ck, "violating_share_carried", cs);
  bool fires = t->aligned_share >= IM_CAUSE_STALL_ALIGNED && sv >= IM_CAUSE_STALL_SHARE &&
               cs >= IM_CAUSE_CARRY_SHARE;
  verdict(ck, fires ? IM_CAUSE_FIRED : IM_CAUSE_NOT_FIRED,
          "%llu stalls, %.0f%% time-aligned (fires at >= %.0f%%); %.0f%% of violating requests "
          "hold a stall (fires at >= %.0f%%); their stalls make up half their excess over the "
          "limit or more in %.0f%% of them (fires at >= %.0f%%)",
          (unsigned long long)t->stalls, 100 * t->aligned_share, 100 * IM_CAUSE_STALL_ALIGNED,
          100 * sv, 100 * IM_CAUSE_STALL_SHARE, 100 * cs, 100 * IM_CAUSE_CARRY_SHARE);
}

static void check_prefill(const struct ctx *c, const struct slo_view *s,
                          struct im_cause_check *ck) {
  if (s->k == IM_SLO_TTFT) {
    verdict(ck, IM_CAUSE_NOT_APPLICABLE, "a TTFT SLO: stalls come after the first token");
    return;
  }
  uint64_t n = 0, k = 0;
  for (size_t g = 0; g < c->n_gaps; g++)
    if (over(c, s, c->gaps[g].req)) {
      n++;
      k += in_prefill(c, c->gaps[g].t0);
    }
  double share = n ? (double)k / (double)n : NAN;
  double p =
      n && !isnan(c->pre_cover) ? im_stats_binom_sf((int64_t)k, (int64_t)n, c->pre_cover) : NAN;
  ck->score = c->pre_cover > 0 ? share / c->pre_cover : NAN;
  fig(ck, "stalls_in_violating", (double)n);
  fig(ck, "during_prefill_share", share);
  fig(ck, "prefill_time_share", c->pre_cover);
  fig(ck, "p_value", p);
  if (!n) {
    verdict(ck, IM_CAUSE_NOT_FIRED, "no stall inside a violating request");
    return;
  }
  double cs = carried(c, s, stall_delay);
  fig(ck, "violating_share_carried", cs);
  bool fires = share >= IM_CAUSE_PREFILL_SHARE && p < IM_CAUSE_PREFILL_P &&
               cs >= IM_CAUSE_CARRY_SHARE;
  verdict(ck, fires ? IM_CAUSE_FIRED : IM_CAUSE_NOT_FIRED,
          "%.0f%% of %llu stalls in violating requests began during another request's prefill "
          "(fires at >= %.0f%%), against %.0f%% of the time covered by prefills: P = %.3g "
          "(fires below %.2f); their stalls make up half the excess over the limit or more in "
          "%.0f%% of violating requests (fires at >= %.0f%%)",
          100 * share, (unsigned long long)n, 100 * IM_CAUSE_PREFILL_SHARE, 100 * c->pre_cover, p,
          IM_CAUSE_PREFILL_P, 100 * cs, 100 * IM_CAUSE_CARRY_SHARE);
}

/* Host noise: the host's part of the late reads that ended the SLO's
 * values (the first token's read for TTFT, the last's for E2E, their
 * difference per token for TPOT; record/record.h). It is a cause only when
 * it carries the violation by the rule every delay meets (at least half the
 * violating requests within the limit without it); otherwise its share of
 * the violations' excess over the limit is reported beside the causes. */
static void check_host(const struct ctx *c, const struct slo_view *s, struct im_cause_check *ck) {
  double excess = 0, host = 0, worst = 0;
  uint64_t measured = 0, n = 0;
  for (size_t i = 0; i < c->n; i++) {
    const struct im_record *r = c->req[i].r;
    if (!over(c, s, i))
      continue;
    n++;
    if ((r->read_first_client_us < 0 || r->read_last_client_us < 0) &&
        !(c->req[i].stall_host_ms > 0))
      continue;
    measured++;
    double e = c->req[i].v[s->k] - s->lim, h = host_delay(&c->req[i], s->k);
    excess += e;
    host += h < e ? h : e;
    worst = h > worst ? h : worst;
  }
  const struct im_client_check *k = &c->in->f->check;
  fig(ck, "host_share_of_excess", excess > 0 ? host / excess : NAN);
  fig(ck, "host_lag_max_ms", measured ? worst : NAN);
  fig(ck, "late_dispatches_host", (double)k->lag_late_host);
  fig(ck, "probe_late_share",
      k->host_wakes ? (double)k->host_late / (double)k->host_wakes : NAN);
  if (!measured) {
    verdict(ck, IM_CAUSE_NOT_APPLICABLE,
            n ? "the records do not say who was late (other tools, older versions)"
              : "no completed request is over the limit");
    return;
  }
  double cs = carried(c, s, host_delay);
  ck->score = excess > 0 ? host / excess : 0.0;
  fig(ck, "violating_share_carried", cs);
  bool fires = cs >= IM_CAUSE_CARRY_SHARE;
  verdict(ck, fires ? IM_CAUSE_FIRED : IM_CAUSE_NOT_FIRED,
          "the host's late reads are %.1f%% of the violations' excess over the limit (at most "
          "%.3g ms in a request); they make up half the excess or more in %.0f%% of violating "
          "requests (a cause at >= %.0f%%)",
          100 * ck->score, worst, 100 * cs, 100 * IM_CAUSE_CARRY_SHARE);
}

/* ---- one violated SLO */

/* Stalls coincide with prefills as a consequence of KV pressure (preempted
 * sequences are prefilled again, and new requests wait for blocks inside
 * their [t_start, t_first)) and of an engine stall (every prefill under
 * way is held up with the decodes): prefill interference is then not
 * reported as a cause of its own. */
static void explained_by(struct im_cause_slo *o, enum im_cause what, enum im_cause by) {
  struct im_cause_check *ck = &o->checks[what];
  if (ck->status != IM_CAUSE_FIRED || o->checks[by].status != IM_CAUSE_FIRED)
    return;
  char was[sizeof ck->why];
  memcpy(was, ck->why, sizeof was);
  verdict(ck, IM_CAUSE_NOT_FIRED, "explained by %s, which fired: %s", im_cause_name(by), was);
}

static void precedence(struct im_cause_slo *o) {
  /* Late reads of a busy host look like stalls of every stream at once. */
  explained_by(o, IM_CAUSE_SERVER_STALL, IM_CAUSE_HOST_NOISE);
  explained_by(o, IM_CAUSE_PREFILL_INTERFERENCE, IM_CAUSE_HOST_NOISE);
  /* Preempted sequences stall together when the cache runs out. */
  explained_by(o, IM_CAUSE_SERVER_STALL, IM_CAUSE_KV_PRESSURE);
  struct im_cause_check *pf = &o->checks[IM_CAUSE_PREFILL_INTERFERENCE];
  enum im_cause by = o->checks[IM_CAUSE_KV_PRESSURE].status == IM_CAUSE_FIRED
                         ? IM_CAUSE_KV_PRESSURE
                         : IM_CAUSE_SERVER_STALL;
  if (pf->status != IM_CAUSE_FIRED || o->checks[by].status != IM_CAUSE_FIRED)
    return;
  char was[sizeof pf->why];
  memcpy(was, pf->why, sizeof was);
  verdict(pf, IM_CAUSE_NOT_FIRED, "explained by %s, which fired: %s", im_cause_name(by), was);
}

static void explain(const struct ctx *c, enum im_slo_kind k, double lim, double attain,
                    struct im_cause_slo *o) {
  struct slo_view s = {.k = k, .lim = lim};
  memset(o, 0, sizeof *o);
  for (size_t i = 0; i < c->n; i++) {
    c->a[i] = c->req[i].v[k];
    s.over += over(c, &s, i);
  }
  o->slo = k;
  o->limit_ms = lim;
  o->attainment = attain;
  o->target = c->in->slo_target;
  o->requests = c->n;
  o->violating = s.over;
  o->bimodality = im_stats_bimodality(c->a, c->n);
  for (int r = 0; r < IM_CAUSE_RULES_; r++) {
    o->checks[r].cause = (enum im_cause)r;
    o->checks[r].score = NAN;
  }
  check_temperature(c, &s, &o->checks[IM_CAUSE_TEMPERATURE_OVERLOAD]);
  check_top_p(c, &s, o, &o->checks[IM_CAUSE_TOP_P_COLLAPSE]);
  check_queueing(c, &s, &o->checks[IM_CAUSE_QUEUEING]);
  check_kv(c, &s, &o->checks[IM_CAUSE_KV_PRESSURE]);
  check_client(c, &o->checks[IM_CAUSE_CLIENT_SATURATION]);
  check_churn(c, &s, &o->checks[IM_CAUSE_CONNECTION_CHURN]);
  check_stall(c, &s, &o->checks[IM_CAUSE_SERVER_STALL]);
  check_prefill(c, &s, &o->checks[IM_CAUSE_PREFILL_INTERFERENCE]);
  check_host(c, &s, &o->checks[IM_CAUSE_HOST_NOISE]);
  precedence(o);
  for (int r = 0; r < IM_CAUSE_RULES_; r++) {
    struct im_cause_check *ck = &o->checks[r];
    /* A group rule says nothing when no completed request violated (the
     * violations were failed or aborted requests). */
    if (!s.over && r != IM_CAUSE_CLIENT_SATURATION && ck->status != IM_CAUSE_NOT_APPLICABLE &&
        ck->status != IM_CAUSE_NOT_CHECKED &&
        !(r == IM_CAUSE_KV_PRESSURE && c->n_cut)) /* judged on the cut requests */
      verdict(ck, IM_CAUSE_NOT_FIRED,
              "no completed request is over the limit (the violations "
              "are failed or aborted requests)");
    o->n_fired += ck->status == IM_CAUSE_FIRED;
  }
}

enum im_err im_causes_compute(const struct im_causes_input *in, struct im_causes *out) {
  if (!in || !in->f || !in->cfg || !out)
    return IM_INVAL;
  memset(out, 0, sizeof *out);
  const struct im_summary_config *cfg = in->cfg;
  const struct im_summary *sum = &in->f->sum;
  const bool given[IM_SLO_ALL] = {cfg->has_slo_ttft, cfg->has_slo_tpot, cfg->has_slo_e2el};
  const double lim[IM_SLO_ALL] = {cfg->slo_ttft_ms, cfg->slo_tpot_ms, cfg->slo_e2el_ms};
  const double att[IM_SLO_ALL] = {sum->slo_ttft_attain, sum->slo_tpot_attain, sum->slo_e2el_attain};
  bool any = false;
  for (int k = 0; k < IM_SLO_ALL; k++)
    any |= given[k] && att[k] < in->slo_target;
  if (!any)
    return IM_OK;
  struct ctx c;
  enum im_err err = ctx_build(&c, in);
  for (int k = 0; k < IM_SLO_ALL && !err; k++)
    if (given[k] && att[k] < in->slo_target)
      explain(&c, (enum im_slo_kind)k, lim[k], att[k], &out->slo[out->n++]);
  ctx_free(&c);
  if (err)
    memset(out, 0, sizeof *out);
  return err;
}
