/* A/B comparison of one figure: see analyze/compare.h and
 * docs/statistics.md for the formulas and their sources. */
#include "analyze/compare.h"

#include <math.h>
#include <stdio.h>

#include "core/stats.h"

/* The most runs a side may have here: the logs are kept on the stack. */
#define CMP_MAX 1024

const char *im_cmp_verdict_name(enum im_cmp_verdict v) {
  switch (v) {
  case IM_CMP_NO_CHANGE:
    return "no change";
  case IM_CMP_IMPROVED:
    return "improved";
  case IM_CMP_REGRESSED:
    return "regressed";
  case IM_CMP_TOO_FEW:
    return "too few runs";
  case IM_CMP_UNDEFINED:
    return "n/a";
  }
  return "?";
}

static size_t logs_of(const double *x, size_t n, double *out) {
  size_t k = 0;
  for (size_t i = 0; i < n && k < CMP_MAX; i++)
    if (isfinite(x[i]) && x[i] > 0)
      out[k++] = log(x[i]);
  return k;
}

static double mean_exp(const double *l, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += exp(l[i]);
  return s / (double)n;
}

/* The verdict of a tested figure (enough runs on both sides) at p-value p:
 * changed when p < alpha and the whole interval lies outside the noise band. */
static enum im_cmp_verdict decide(const struct im_cmp_result *r, double p,
                                  const struct im_cmp_opts *opts) {
  bool outside = r->lo > 1 + opts->noise || r->hi < 1 - opts->noise;
  if (!(p < opts->alpha) || !outside)
    return IM_CMP_NO_CHANGE;
  bool up = r->ratio > 1;
  return up == opts->higher_is_better ? IM_CMP_IMPROVED : IM_CMP_REGRESSED;
}

enum im_err im_cmp_figure(const double *a, size_t n_a, const double *b, size_t n_b,
                          const struct im_cmp_opts *opts, struct im_cmp_result *out) {
  if (!opts || !out || (!a && n_a) || (!b && n_b) || !(opts->noise >= 0 && opts->noise < 1) ||
      !(opts->alpha > 0 && opts->alpha < 1) || n_a > CMP_MAX || n_b > CMP_MAX)
    return IM_INVAL;
  double la[CMP_MAX], lb[CMP_MAX];
  *out = (struct im_cmp_result){.ratio = NAN, .lo = NAN, .hi = NAN, .df = NAN, .p = NAN,
                                .p_holm = NAN, .mean_a = NAN, .mean_b = NAN};
  out->n_a = logs_of(a, n_a, la);
  out->n_b = logs_of(b, n_b, lb);
  if (out->n_a)
    out->mean_a = mean_exp(la, out->n_a);
  if (out->n_b)
    out->mean_b = mean_exp(lb, out->n_b);
  if (!out->n_a || !out->n_b) {
    out->verdict = IM_CMP_UNDEFINED;
    out->why = "no positive value on a side";
    return IM_OK;
  }
  double ma = im_stats_mean(la, out->n_a), mb = im_stats_mean(lb, out->n_b);
  double delta = mb - ma;
  out->ratio = exp(delta);
  if (out->n_a < 2 || out->n_b < 2) {
    out->verdict = IM_CMP_TOO_FEW;
    out->why = "fewer than 2 runs on a side: no interval, no test";
    return IM_OK;
  }
  double conf = 1 - opts->alpha;
  struct im_stats_welch w;
  enum im_err e = im_stats_welch(lb, out->n_b, la, out->n_a, conf, &w);
  if (e == IM_OK) {
    out->lo = exp(w.lo);
    out->hi = exp(w.hi);
    out->df = w.df;
    out->p = w.p;
  } else {
    /* Both sides have zero variance: no spread, the difference is exact. */
    out->lo = out->hi = out->ratio;
    out->df = INFINITY;
    out->p = delta == 0 ? 1.0 : 0.0;
  }
  if (out->n_a < IM_CMP_MIN_RUNS || out->n_b < IM_CMP_MIN_RUNS) {
    out->verdict = IM_CMP_TOO_FEW;
    out->why = "fewer than 3 runs on a side: no change is called";
    return IM_OK;
  }
  out->verdict = decide(out, out->p, opts);
  return IM_OK;
}

bool im_cmp_higher_is_better(enum im_headline_fig f) {
  switch (f) {
  case IM_FIG_REQUEST_THROUGHPUT:
  case IM_FIG_OUTPUT_THROUGHPUT:
  case IM_FIG_GOODPUT:
  case IM_FIG_SLO_ATTAINMENT:
  case IM_FIG_EFFECTIVE_QPS:
    return true;
  default:
    return false;
  }
}

static bool tested(const struct im_cmp_result *r) {
  return (r->verdict == IM_CMP_NO_CHANGE || r->verdict == IM_CMP_IMPROVED ||
          r->verdict == IM_CMP_REGRESSED) && !isnan(r->p);
}

/* Holm's correction over every tested figure of every stage (one family:
 * the comparison), then each tested figure's verdict again at its adjusted
 * p-value. */
static void holm(struct im_cmp_report *out) {
  static const size_t cap = IM_HEADLINE_MAX_STAGES * IM_FIG_COUNT;
  double p[IM_HEADLINE_MAX_STAGES * IM_FIG_COUNT], adj[IM_HEADLINE_MAX_STAGES * IM_FIG_COUNT];
  size_t n = 0;
  for (size_t s = 0; s < out->n_stages && n < cap; s++)
    for (int f = 0; f < IM_FIG_COUNT; f++, n++) {
      const struct im_cmp_result *r = &out->stage[s].fig[f];
      p[n] = tested(r) ? r->p : NAN;
    }
  im_stats_holm(p, n, adj);
  out->tests = 0;
  n = 0;
  for (size_t s = 0; s < out->n_stages && n < cap; s++)
    for (int f = 0; f < IM_FIG_COUNT; f++, n++) {
      struct im_cmp_result *r = &out->stage[s].fig[f];
      r->p_holm = adj[n];
      if (tested(r)) {
        out->tests++;
        struct im_cmp_opts o = {.noise = out->noise,
                                .alpha = out->alpha,
                                .higher_is_better = im_cmp_higher_is_better((enum im_headline_fig)f)};
        r->verdict = decide(r, r->p_holm, &o);
      }
      out->any_improved |= r->verdict == IM_CMP_IMPROVED;
      out->any_regressed |= r->verdict == IM_CMP_REGRESSED;
    }
}

enum im_err im_cmp_runs(const struct im_headline *a, size_t n_a, const struct im_headline *b,
                        size_t n_b, double noise, double alpha, struct im_cmp_report *out,
                        char *msg, size_t msg_len) {
  if (!n_a || !n_b)
    return im_errf(msg, msg_len, IM_INVAL, "a side has no run");
  if (n_a > IM_HEADLINE_MAX_RUNS || n_b > IM_HEADLINE_MAX_RUNS)
    return im_errf(msg, msg_len, IM_LIMIT, "more than %d runs on a side", IM_HEADLINE_MAX_RUNS);
  size_t ns = a[0].n_stages;
  for (size_t i = 0; i < n_a + n_b; i++) {
    const struct im_headline *h = i < n_a ? &a[i] : &b[i - n_a];
    if (h->n_stages != ns)
      return im_errf(msg, msg_len, IM_INVAL,
                     "%s has %zu stage(s) but %s has %zu: stages are compared by index, so "
                     "both sides need the same stage plan",
                     h->dir, h->n_stages, a[0].dir, ns);
  }
  out->runs_a = n_a;
  out->runs_b = n_b;
  out->noise = noise;
  out->alpha = alpha;
  out->n_stages = ns;
  out->any_improved = out->any_regressed = false;
  double va[IM_HEADLINE_MAX_RUNS], vb[IM_HEADLINE_MAX_RUNS];
  for (size_t s = 0; s < ns; s++) {
    snprintf(out->stage[s].label, sizeof out->stage[s].label, "%s", a[0].stage[s].label);
    for (int f = 0; f < IM_FIG_COUNT; f++) {
      for (size_t i = 0; i < n_a; i++)
        va[i] = a[i].stage[s].v[f];
      for (size_t i = 0; i < n_b; i++)
        vb[i] = b[i].stage[s].v[f];
      struct im_cmp_opts o = {.noise = noise,
                              .alpha = alpha,
                              .higher_is_better = im_cmp_higher_is_better((enum im_headline_fig)f)};
      enum im_err e = im_cmp_figure(va, n_a, vb, n_b, &o, &out->stage[s].fig[f]);
      if (e != IM_OK)
        return im_errf(msg, msg_len, e, "noise %g or alpha %g out of range", noise, alpha);
    }
  }
  holm(out);
  return IM_OK;
}
