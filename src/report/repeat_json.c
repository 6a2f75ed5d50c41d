/* See report/repeat_json.h. */
#include "report/repeat_json.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "analyze/validity.h"
#include "report/jsonw.h"
#include "report/summary_json.h"

/* "reference": the one-sample t-test against --reference, or null. */
static int reference(json_t *o, const struct im_repeat_ref *r) {
  if (!r->given)
    return json_object_set_new(o, "reference", json_null());
  json_t *c = im_jw_child(o, "reference");
  const char *few = "fewer than 2 runs with a value";
  return !c || im_jw_num(c, "value", r->value, NULL) ||
         im_jw_num(c, "ratio", r->ratio,
                   r->value == 0 ? "the reference is 0" : "no run with a value") ||
         im_jw_num(c, "t", r->t,
                   r->tested ? "zero variance over the runs: the difference is exact" : few) ||
         im_jw_num(c, "df", r->df, few) || im_jw_num(c, "p", r->p, few) ||
         json_object_set_new(c, "significant", json_boolean(r->tested && r->significant));
}

/* "homogeneity": the pooled CI's k-sample quantile test, or null. */
static int homogeneity(json_t *o, const struct im_repeat_stat *st) {
  if (!st->homog_tested)
    return json_object_set_new(o, "homogeneity", json_null());
  json_t *c = im_jw_child(o, "homogeneity");
  return !c || im_jw_num(c, "chi2", st->homog_chi2, NULL) ||
         im_jw_num(c, "df", st->homog_df, NULL) || im_jw_num(c, "p", st->homog_p, NULL) ||
         im_jw_num(c, "min_expected", st->homog_min_expected, NULL) ||
         im_jw_num(c, "alpha", IM_REPEAT_HOMOG_ALPHA, NULL) ||
         im_jw_num(c, "design_effect", st->deff, NULL) ||
         im_jw_num(c, "design_effect_df", st->deff_df, NULL);
}

static json_t *figure(const struct im_repeat_set *set, int f) {
  const struct im_repeat_stat *st = &set->stat[f];
  json_t *o = json_object(), *vals = json_array();
  if (!o || !vals || json_object_set_new(o, "values", vals)) {
    json_decref(o);
    return NULL;
  }
  for (size_t r = 0; r < set->runs; r++)
    json_array_append_new(vals,
                          isfinite(set->values[f][r]) ? json_real(set->values[f][r]) : json_null());
  const char *few = "fewer than 2 runs with a value";
  const char *cwhy = st->kind == IM_CI_POOLED
                         ? "too few pooled requests to bound this side of the order-statistic "
                           "interval"
                         : few;
  if (im_jw_uint(o, "n", st->n) || im_jw_num(o, "mean", st->mean, "no run with a value") ||
      im_jw_num(o, "s", st->s, few) || im_jw_num(o, "ci95_lo", st->lo, cwhy) ||
      im_jw_num(o, "ci95_hi", st->hi, cwhy) || im_jw_num(o, "half_width", st->half, cwhy) ||
      im_jw_num(o, "ci_width_rel", st->rel_width, cwhy) ||
      im_jw_num(o, "min", st->min, "no run with a value") ||
      im_jw_num(o, "max", st->max, "no run with a value") || im_jw_num(o, "cv", st->cv, few) ||
      json_object_set_new(o, "wide", json_boolean(st->n >= 2 && st->wide)) ||
      im_jw_uint(o, "runs_needed", st->runs_needed) ||
      json_object_set_new(o, "runs_needed_capped", json_boolean(st->runs_needed_capped)) ||
      json_object_set_new(o, "ci_kind", json_string(im_repeat_ci_name(st->kind))) ||
      im_jw_num(o, "estimate", st->estimate, "no run with a value") ||
      json_object_set_new(o, "exempt", json_boolean(st->exempt)) ||
      json_object_set_new(o, "heterogeneous", json_boolean(st->heterogeneous)) ||
      homogeneity(o, st) ||
      json_object_set_new(o, "higher_is_better",
                          json_boolean(im_repeat_fig_higher_better((enum im_repeat_fig)f))) ||
      reference(o, &set->ref[f])) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *check(const char *id, int status, const char *evidence, const char *fix) {
  json_t *o = json_pack("{s:s, s:s, s:s}", "id", id, "status",
                        im_check_status_name((enum im_check_status)status), "evidence", evidence);
  if (o && status != IM_CHECK_PASS && fix)
    json_object_set_new(o, "fix", json_string(fix));
  return o;
}

/* Appends item to buf (joined by sep) only whole: an item that would not
 * fit with room for the closing "and N more" is counted in *left instead,
 * so no figure is ever cut. */
static void add_item(char *buf, size_t len, const char *sep, const char *item, size_t *left) {
  size_t have = strlen(buf), need = (have ? strlen(sep) : 0) + strlen(item);
  if (*left || have + need + 24 >= len) {
    (*left)++;
    return;
  }
  snprintf(buf + have, len - have, "%s%s", have ? sep : "", item);
}

static void close_items(char *buf, size_t len, size_t left) {
  size_t have = strlen(buf);
  if (left)
    snprintf(buf + have, len - have, ", and %zu more", left);
}

/* One failing figure of the ci_width check: its width and the runs its
 * spread would need ("> N" past the cap), or that its runs differ. */
static void fig_item(char *item, size_t len, int f, const struct im_repeat_stat *st) {
  const char *name = im_repeat_fig_name((enum im_repeat_fig)f);
  char runs[48];
  if (st->runs_needed)
    snprintf(runs, sizeof runs, ", %s%zu runs", st->runs_needed_capped ? "> " : "",
             st->runs_needed);
  else
    runs[0] = '\0';
  if (st->heterogeneous)
    snprintf(item, len, "%s (heterogeneous: the runs' tails differ, p = %.2g)", name, st->homog_p);
  else if (isfinite(st->rel_width))
    snprintf(item, len, "%s (%.1f%%%s)", name, 100.0 * st->rel_width, runs);
  else
    snprintf(item, len, "%s (no bounded interval%s)", name,
             st->kind == IM_CI_POOLED ? ": too few requests for this percentile" : "");
}

static json_t *audit(const struct im_repeat_set *set) {
  char ev[600] = "", wide[400] = "", fails[400] = "", item[400], fix[200];
  size_t nw = 0, nf = 0, wl = 0, fl = 0;
  /* The widest first: what the summary drops is the least wide. */
  int order[IM_RF_COUNT_];
  for (int f = 0; f < IM_RF_COUNT_; f++)
    order[f] = f;
  for (int i = 1; i < IM_RF_COUNT_; i++)
    for (int j = i; j > 0 && set->stat[order[j]].rel_width > set->stat[order[j - 1]].rel_width;
         j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  for (int i = 0; i < IM_RF_COUNT_; i++) {
    int f = order[i];
    const struct im_repeat_stat *st = &set->stat[f];
    if (!(st->n >= 2 && (st->wide || st->heterogeneous)) || st->exempt)
      continue;
    nw++;
    fig_item(item, sizeof item, f, st);
    add_item(wide, sizeof wide, ", ", item, &wl);
  }
  close_items(wide, sizeof wide, wl);
  for (size_t r = 0; r < set->runs; r++)
    if (!set->run[r].publishable_but_repeats) {
      nf++;
      snprintf(item, sizeof item, "run-%zu: %s", r + 1, set->run[r].fails);
      add_item(fails, sizeof fails, "; ", item, &fl);
    }
  close_items(fails, sizeof fails, fl);
  json_t *checks = json_array();
  char inside[96];
  snprintf(inside, sizeof inside, "every figure's 95%% CI is within %g%% of its value",
           100.0 * set->max_width);
  snprintf(fix, sizeof fix,
           "more runs (or longer ones): the number after each figure would "
           "bring its CI within %g%% at this spread",
           100.0 * set->max_width);
  snprintf(ev, sizeof ev, "%zu of %zu runs", set->runs, set->planned);
  json_array_append_new(checks, check("repeats", set->repeats_status, ev,
                                      "run the configuration at least 3 times (--repeat 3)"));
  if (set->exempt_why[0]) {
    /* The exemption (or why not) is said whole: the figures' list may be
     * summarised, this sentence is not. */
    char both[1200];
    snprintf(both, sizeof both, "%s; %s", nw ? wide : inside, set->exempt_why);
    json_array_append_new(checks, check("ci_width", set->ci_status, both, fix));
  } else {
    json_array_append_new(checks, check("ci_width", set->ci_status, nw ? wide : inside, fix));
  }
  json_array_append_new(checks, check("runs", set->runs_status,
                                      nf ? fails : "every run passes the audit but for repeats",
                                      "fix what each run's audit names (infermeter audit "
                                      "DIR/run-K)"));
  return json_pack("{s:s, s:o}", "verdict", set->publishable ? "PUBLISHABLE" : "NOT_PUBLISHABLE",
                   "checks", checks);
}

json_t *im_repeat_json(const struct im_repeat_set *set) {
  json_t *root = json_pack("{s:s, s:I, s:I}", "schema", "infermeter/repeat/v1", "planned",
                           (json_int_t)set->planned, "completed", (json_int_t)set->runs);
  json_t *runs = json_array(), *figs = json_object(), *pooled = json_object();
  if (!root || !runs || !figs || !pooled) {
    json_decref(root);
    json_decref(runs);
    json_decref(figs);
    json_decref(pooled);
    return NULL;
  }
  json_object_set_new(root, "runs", runs);
  json_object_set_new(root, "figures", figs);
  json_object_set_new(root, "pooled_ms", pooled);
  json_object_set_new(root, "max_ci_width", json_real(set->max_width));
  json_object_set_new(root, "throughput_exemption",
                      json_pack("{s:b, s:s}", "exempt", set->tput_exempt, "reason",
                                set->exempt_why[0] ? set->exempt_why
                                                   : "closed loop: the throughputs measure the "
                                                     "server and are judged like every figure"));
  json_object_set_new(root, "reference_source",
                      set->ref_source ? json_string(set->ref_source) : json_null());
  for (size_t r = 0; r < set->runs; r++) {
    const struct im_repeat_run *ru = &set->run[r];
    char seed[24];
    snprintf(seed, sizeof seed, "%" PRIu64, ru->seed);
    json_array_append_new(runs, json_pack("{s:s, s:s, s:f, s:i}", "dir", ru->dir, "seed", seed,
                                          "start_offset_s", ru->start_offset_s, "exit", ru->exit));
  }
  for (int f = 0; f < IM_RF_COUNT_; f++) {
    json_t *o = figure(set, f);
    if (!o || json_object_set_new(figs, im_repeat_fig_name((enum im_repeat_fig)f), o)) {
      json_decref(root);
      return NULL;
    }
  }
  static const char *const lat[4] = {"ttft", "tpot", "itl", "e2el"};
  for (int m = 0; m < 4; m++) {
    if (im_dist_json(pooled, lat[m], &set->pooled[m], &set->pooled_cfg)) {
      json_decref(root);
      return NULL;
    }
  }
  json_t *a = audit(set);
  if (!a || json_object_set_new(root, "audit", a)) {
    json_decref(root);
    return NULL;
  }
  return root;
}

void im_repeat_text(FILE *o, const struct im_repeat_set *set) {
  fprintf(o, "============ infermeter: %zu repeated runs =============\n", set->runs);
  bool refs = false;
  for (int f = 0; f < IM_RF_COUNT_; f++)
    refs |= set->ref[f].given;
  /* Within 80 columns (docs/cli.md, Width): with a reference the interval
   * itself gives way to the reference's columns (results.json has both). */
  if (refs)
    fprintf(o, "%-20s %10s %7s %-2s %9s %7s %6s\n", "figure", "value", "width", "CI", "reference",
            "ratio", "p");
  else
    fprintf(o, "%-20s %10s %21s %7s %s\n", "figure", "value", "95% CI", "width", "CI");
  for (int f = 0; f < IM_RF_COUNT_; f++) {
    const struct im_repeat_stat *st = &set->stat[f];
    const struct im_repeat_ref *r = &set->ref[f];
    if (!st->n)
      continue;
    char ref[80] = "";
    char pv[16] = "";
    if (r->tested && r->p < 0.001)
      snprintf(pv, sizeof pv, "<0.001");
    else if (r->tested)
      snprintf(pv, sizeof pv, "%.3f", r->p);
    if (r->given)
      snprintf(ref, sizeof ref, " %9.3f %7.3f %6s%s", r->value, r->ratio, pv,
               r->tested && r->significant ? " differs" : "");
    char mark[32] = "", ci[64] = "-";
    if (st->n >= 2 && st->heterogeneous)
      snprintf(mark, sizeof mark, "  HET");
    else if (st->n >= 2 && st->wide)
      snprintf(mark, sizeof mark, "  > %g%%%s", 100.0 * set->max_width,
               st->exempt ? ", exempt" : "");
    /* A side no rank bounds (too few pooled requests) reads "-", as does
     * the width it leaves undefined. */
    char lo[24] = "-", hi[24] = "-", width[16] = "-";
    if (isfinite(st->lo))
      snprintf(lo, sizeof lo, "%.6g", st->lo);
    if (isfinite(st->hi))
      snprintf(hi, sizeof hi, "%.6g", st->hi);
    if (isfinite(st->lo) || isfinite(st->hi))
      snprintf(ci, sizeof ci, "[%s, %s]", lo, hi);
    if (isfinite(st->rel_width))
      snprintf(width, sizeof width, "%.1f%%", 100.0 * st->rel_width);
    const char *kind = st->kind == IM_CI_POOLED ? "P" : "t";
    if (refs)
      fprintf(o, "%-20s %10.3f %7s %-2s%s%s\n", im_repeat_fig_name((enum im_repeat_fig)f),
              st->estimate, width, kind, ref, mark);
    else
      fprintf(o, "%-20s %10.3f %21s %7s %s%s\n", im_repeat_fig_name((enum im_repeat_fig)f),
              st->estimate, ci, width, kind, mark);
  }
  fprintf(o,
          "value: the mean over the runs (CI t: Student-t over the runs) or, for p90\n"
          "and p99, the percentile of every run's requests pooled (CI P: order-statistic\n"
          "interval, valid when the runs pass a homogeneity test; HET: they do not;\n"
          "both corrected for the design effect of requests that share the server's\n"
          "steps). width: the 95%% CI's, in %% of the value (\"> %g%%\": above the limit;\n"
          "\"exempt\": an open-loop throughput, judged as achieved / offered rate).\n",
          100.0 * set->max_width);
  if (refs)
    fprintf(o,
            "reference: %s; p: one-sample t-test of the runs against it (\"differs\": "
            "p < 0.05)\n",
            set->ref_source ? set->ref_source : "given");
  for (size_t r = 0; r < set->runs; r++)
    fprintf(o, "run-%zu: exit %d; %s\n", r + 1, set->run[r].exit,
            set->run[r].publishable_but_repeats ? "its audit passes (but for repeats)"
                                                : set->run[r].fails);
  if (set->exempt_why[0])
    fprintf(o, "%s\n", set->exempt_why);
  json_t *a = audit(set);
  fprintf(o, "Publishable (the set):                   %s\n",
          set->publishable ? "PUBLISHABLE" : "NOT_PUBLISHABLE");
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(a, "checks"), i, c) {
    const char *st = json_string_value(json_object_get(c, "status"));
    if (st && strcmp(st, "PASS"))
      fprintf(o, "  %-4s %-14s %s\n", st, json_string_value(json_object_get(c, "id")),
              json_string_value(json_object_get(c, "evidence")));
  }
  json_decref(a);
}

/* A number at a path of keys in a run's results.json; NaN when absent. */
static double num_at(const json_t *root, const char *a, const char *b, const char *c,
                     const char *d) {
  const json_t *v = json_object_get(root, a);
  if (b)
    v = json_object_get(v, b);
  if (c)
    v = json_object_get(v, c);
  if (d)
    v = json_object_get(v, d);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

void im_repeat_values_json(const json_t *res, double v[IM_RF_COUNT_]) {
  static const char *const lat[4] = {"ttft", "tpot", "itl", "e2el"};
  static const char *const pct[3] = {"p50", "p90", "p99"};
  v[IM_RF_REQ_TPUT] = num_at(res, "summary", "request_throughput", NULL, NULL);
  v[IM_RF_OUT_TPUT] = num_at(res, "summary", "output_throughput", NULL, NULL);
  v[IM_RF_GOODPUT] = num_at(res, "metrics", "slo", "goodput_rps", NULL);
  v[IM_RF_SLO] = num_at(res, "metrics", "slo", "attainment", "all");
  v[IM_RF_EFFECTIVE] = num_at(res, "metrics", "effective_rate", "effective_qps", NULL);
  for (int m = 0; m < 4; m++)
    for (int k = 0; k < 3; k++)
      v[IM_RF_TTFT_P50 + m * 3 + k] = num_at(res, "metrics", "latency_ms", lat[m], pct[k]);
}
