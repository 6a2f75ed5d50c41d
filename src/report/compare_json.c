/* Rendering of a comparison: see report/compare_json.h. */
#include "report/compare_json.h"

#include <math.h>
#include <string.h>

#include "report/jsonw.h"

static json_t *side(const char *label, const char *const *dirs, size_t n) {
  json_t *o = json_object(), *a = json_array();
  if (!o || !a) {
    json_decref(o);
    json_decref(a);
    return NULL;
  }
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, json_string(dirs[i]));
  json_object_set_new(o, "label", json_string(label ? label : ""));
  json_object_set_new(o, "runs", a);
  return o;
}

static json_t *figure(const struct im_cmp_result *c, enum im_headline_fig f) {
  json_t *o = json_object();
  if (!o)
    return NULL;
  const char *und = c->verdict == IM_CMP_UNDEFINED ? c->why : NULL;
  const char *few = und ? und : c->n_a < 2 || c->n_b < 2 ? "fewer than 2 runs on a side" : NULL;
  int rc = 0;
  rc |= json_object_set_new(o, "unit", json_string(im_headline_fig_unit(f)));
  rc |= json_object_set_new(o, "better",
                            json_string(im_cmp_higher_is_better(f) ? "higher" : "lower"));
  rc |= im_jw_uint(o, "n_a", c->n_a);
  rc |= im_jw_uint(o, "n_b", c->n_b);
  rc |= im_jw_num(o, "mean_a", c->mean_a, c->n_a ? NULL : "no positive value");
  rc |= im_jw_num(o, "mean_b", c->mean_b, c->n_b ? NULL : "no positive value");
  rc |= im_jw_num(o, "ratio", c->ratio, und);
  rc |= im_jw_num(o, "ci_lo", c->lo, few);
  rc |= im_jw_num(o, "ci_hi", c->hi, few);
  rc |= im_jw_num(o, "df", isinf(c->df) ? NAN : c->df,
                  isinf(c->df) ? "zero variance on both sides" : few);
  rc |= im_jw_num(o, "p", c->p, few);
  rc |= im_jw_num(o, "p_holm", c->p_holm,
                  few                            ? few
                  : c->verdict == IM_CMP_TOO_FEW ? "fewer than 3 runs on a side: not tested"
                                                 : "not tested");
  rc |= json_object_set_new(o, "verdict", json_string(im_cmp_verdict_name(c->verdict)));
  if (c->why)
    rc |= json_object_set_new(o, "why", json_string(c->why));
  if (rc) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* o[key] = each run's value of figure f of stage s (null: none). */
static int run_values(json_t *o, const char *key, const struct im_headline *runs, size_t n,
                      size_t s, int f) {
  json_t *a = json_array();
  if (!a || json_object_set_new(o, key, a))
    return -1;
  for (size_t i = 0; i < n; i++) {
    double v = s < runs[i].n_stages ? runs[i].stage[s].v[f] : NAN;
    if (json_array_append_new(a, isfinite(v) ? json_real(v) : json_null()))
      return -1;
  }
  return 0;
}

json_t *im_cmp_to_json(const struct im_cmp_report *r, const struct im_cmp_meta *m) {
  json_t *root = json_object(), *stages = json_array();
  if (!root || !stages)
    goto fail;
  int rc = 0;
  rc |= json_object_set_new(root, "schema", json_string("infermeter-compare/1"));
  rc |= json_object_set_new(root, "a", side(m->label_a, m->dirs_a, r->runs_a));
  rc |= json_object_set_new(root, "b", side(m->label_b, m->dirs_b, r->runs_b));
  rc |= im_jw_num(root, "noise", r->noise, NULL);
  rc |= im_jw_num(root, "alpha", r->alpha, NULL);
  rc |= im_jw_uint(root, "min_runs", IM_CMP_MIN_RUNS);
  json_t *corr = json_pack("{s:s, s:I}", "method", "holm", "tests", (json_int_t)r->tests);
  rc |= corr ? json_object_set_new(root, "correction", corr) : -1;
  rc |= json_object_set_new(root, "forced", json_boolean(m->forced));
  rc |= json_object_set_new(root, "differences", json_string(m->differences ? m->differences : ""));
  rc |= json_object_set_new(root, "server_differences",
                            json_string(m->server_differences ? m->server_differences : ""));
  for (size_t s = 0; s < r->n_stages; s++) {
    json_t *st = json_object(), *figs = json_object();
    if (!st || !figs) {
      json_decref(st);
      json_decref(figs);
      goto fail;
    }
    rc |= im_jw_uint(st, "index", s);
    rc |= json_object_set_new(st, "label", json_string(r->stage[s].label));
    for (int f = 0; f < IM_FIG_COUNT; f++) {
      json_t *fj = figure(&r->stage[s].fig[f], (enum im_headline_fig)f);
      if (fj && m->runs_a && m->runs_b)
        rc |= run_values(fj, "values_a", m->runs_a, r->runs_a, s, f) |
              run_values(fj, "values_b", m->runs_b, r->runs_b, s, f);
      rc |= json_object_set_new(figs, im_headline_fig_name((enum im_headline_fig)f), fj);
    }
    rc |= json_object_set_new(st, "figures", figs);
    rc |= json_array_append_new(stages, st);
  }
  rc |= json_object_set_new(root, "stages", stages);
  stages = NULL;
  rc |= json_object_set_new(root, "improved", json_boolean(r->any_improved));
  rc |= json_object_set_new(root, "regressed", json_boolean(r->any_regressed));
  if (rc)
    goto fail;
  return root;
fail:
  json_decref(stages);
  json_decref(root);
  return NULL;
}

static void num(char *buf, size_t len, double v) {
  if (!isfinite(v))
    snprintf(buf, len, "-");
  else if (fabs(v) >= 1000)
    snprintf(buf, len, "%.0f", v);
  else if (fabs(v) >= 10)
    snprintf(buf, len, "%.2f", v);
  else
    snprintf(buf, len, "%.4g", v);
}

static void pval(char *buf, size_t len, double p) {
  if (isfinite(p))
    snprintf(buf, len, p < 1e-4 ? "%.1e" : "%.4f", p);
  else
    snprintf(buf, len, "-");
}

void im_cmp_print(FILE *out, const struct im_cmp_report *r, const struct im_cmp_meta *m) {
  fprintf(out, "A: %s (%zu run%s)\nB: %s (%zu run%s)\n", m->label_a, r->runs_a,
          r->runs_a == 1 ? "" : "s", m->label_b, r->runs_b, r->runs_b == 1 ? "" : "s");
  if (m->forced && m->differences && *m->differences)
    fprintf(out, "warning: compared with --force although the configurations differ: %s\n",
            m->differences);
  if (m->server_differences && *m->server_differences)
    fprintf(out, "Server settings (as the servers declared them), A vs B: %s\n",
            m->server_differences);
  for (size_t s = 0; s < r->n_stages; s++) {
    if (r->n_stages > 1)
      fprintf(out, "\nstage %zu%s%s\n", s, *r->stage[s].label ? ": " : "", r->stage[s].label);
    /* Within 80 columns (docs/cli.md, Width): p(Holm) decides, the raw p is
     * in results.json with every digit. */
    fprintf(out, "\n%-22s %8s %8s %6s %11s %7s %s\n", "figure", "A", "B", "B/A", "95% CI",
            "p(Holm)", "verdict");
    for (int f = 0; f < IM_FIG_COUNT; f++) {
      const struct im_cmp_result *c = &r->stage[s].fig[f];
      char name[64], a[24], b[24], ratio[24], ci[48], ph[24];
      snprintf(name, sizeof name, "%s %s", im_headline_fig_name((enum im_headline_fig)f),
               im_cmp_higher_is_better((enum im_headline_fig)f) ? "(+)" : "(-)");
      num(a, sizeof a, c->mean_a);
      num(b, sizeof b, c->mean_b);
      if (isfinite(c->ratio))
        snprintf(ratio, sizeof ratio, "%.3f", c->ratio);
      else
        snprintf(ratio, sizeof ratio, "-");
      if (isfinite(c->lo) && isfinite(c->hi))
        snprintf(ci, sizeof ci, "%.3f-%.3f", c->lo, c->hi);
      else
        snprintf(ci, sizeof ci, "-");
      pval(ph, sizeof ph, c->p_holm);
      fprintf(out, "%-22s %8s %8s %6s %11s %7s %s\n", name, a, b, ratio, ci, ph,
              im_cmp_verdict_name(c->verdict));
    }
  }
  fprintf(out,
          "\n(+) higher is better, (-) lower is better. A and B: means over the runs\n"
          "(percentiles: nearest rank, results.json's); B/A: ratio of geometric means,\n"
          "95%% CI by Welch's t on log(metric). A change is called when p(Holm) < %.2g\n"
          "(Holm's correction over the %zu figures tested) and the CI lies outside\n"
          "1 ± %.3g%%.\n",
          r->alpha, r->tests, r->noise * 100);
  if (r->runs_a < IM_CMP_MIN_RUNS || r->runs_b < IM_CMP_MIN_RUNS)
    fprintf(out,
            "Too few runs to call a change: %zu vs %zu, at least %d per side are needed "
            "(infermeter run --repeat %d).\n",
            r->runs_a, r->runs_b, IM_CMP_MIN_RUNS, IM_CMP_MIN_RUNS);
  fprintf(out, "Overall: %s\n",
          r->any_regressed && r->any_improved ? "some figures regressed, some improved"
          : r->any_regressed                  ? "regressed"
          : r->any_improved                   ? "improved"
                                              : "no change called");
}
