/* See report/analysis_json.h. */
#include "report/analysis_json.h"

#include <math.h>

#include "report/breakdown_json.h"
#include "report/jsonw.h"
#include "report/summary_json.h"

static int token_latency(json_t *a, const struct im_tokens *t, const struct im_summary_config *sc) {
  json_t *o = im_jw_child(a, "token_latency");
  struct im_dist mean, max;
  im_dist_from_hist(&mean, &t->win_mean, sc);
  im_dist_from_hist(&max, &t->win_max, sc);
  return !o || im_jw_uint(o, "window_gaps", t->cfg.window) ||
         im_jw_uint(o, "stride_gaps", t->cfg.stride) || im_jw_uint(o, "requests", t->requests) ||
         im_jw_uint(o, "gaps", t->gaps) || im_jw_uint(o, "windows", t->windows) ||
         im_dist_json(o, "window_mean_ms", &mean, sc) ||
         im_dist_json(o, "window_max_ms", &max, sc) ||
         json_object_set_new(o, "definition",
                             json_string("each completed request's gaps between token-bearing "
                                         "chunks (first token excluded) cut into windows of "
                                         "window_gaps gaps every stride_gaps gaps (whole windows "
                                         "only); window_mean_ms: each window's mean gap, "
                                         "window_max_ms: its largest; compare with "
                                         "metrics.latency_ms.itl (every gap pooled) and itl_token "
                                         "(each gap over its tokens)"));
}

static int stalls(json_t *a, const struct im_tokens *t) {
  json_t *o = im_jw_child(a, "stalls"), *pos = json_array(), *ctx = json_array();
  if (!o || !pos || !ctx || json_object_set_new(o, "by_position", pos) ||
      json_object_set_new(o, "by_context", ctx)) {
    if (!o) {
      json_decref(pos);
      json_decref(ctx);
    }
    return -1;
  }
  for (size_t b = 0; b < IM_TOKENS_POS_BUCKETS; b++)
    if (t->by_position[b])
      json_array_append_new(pos, json_pack("[I, I]", (json_int_t)(b * IM_TOKENS_POS_WIDTH),
                                           (json_int_t)t->by_position[b]));
  for (int k = 0; k < IM_CTX_BUCKETS; k++)
    json_array_append_new(ctx, json_pack("{s:s, s:I}", "bucket", im_breakdown_bucket_name(k),
                                         "count", (json_int_t)t->by_context[k]));
  json_t *idx = json_array();
  if (!idx || json_object_set_new(o, "by_index", idx))
    return -1;
  for (size_t b = 0; b <= IM_TOKENS_HIST_BINS; b++)
    if (t->by_index[b])
      json_array_append_new(idx, json_pack("[I, I]", (json_int_t)(b * t->hist_width),
                                           (json_int_t)t->by_index[b]));
  char where[96];
  im_tokens_peak_text(t, where, sizeof where);
  if (im_jw_uint(o, "index_width", t->hist_width) ||
      im_jw_uint(o, "peak_stalls", t->peak_stalls) ||
      json_object_set_new(o, "peak_spread",
                          t->stalls ? json_integer(t->peak_spread) : json_null()) ||
      json_object_set_new(o, "localisation", json_string(where)))
    return -1;
  return im_jw_num(o, "k", t->cfg.stall_k, NULL) || im_jw_uint(o, "count", t->stalls) ||
         im_jw_uint(o, "stalled_requests", t->stalled_requests) ||
         im_jw_uint(o, "host_stalls", t->host_stalls) ||
         im_jw_uint(o, "position_width", IM_TOKENS_POS_WIDTH) ||
         json_object_set_new(o, "peak_position", t->peak_position >= 0
                                                     ? json_integer(t->peak_position)
                                                     : json_null()) ||
         im_jw_uint(o, "time_aligned", t->aligned) ||
         im_jw_num(o, "aligned_share", t->aligned_share, "no stall") ||
         im_jw_num(o, "align_tolerance_ms", (double)t->align_tol_ns / 1e6, NULL) ||
         im_jw_num(o, "median_gap_ms", t->gaps ? (double)t->median_gap_ns / 1e6 : NAN, "no gap") ||
         json_object_set_new(o, "definition",
                             json_string("a gap longer than k times its request's median gap; "
                                         "placed by token index (tokens before it ended) and "
                                         "context (prompt + that index); time-aligned when stalls "
                                         "of at least two other requests end within "
                                         "align_tolerance_ms of it")) ||
         json_object_set_new(o, "localisation_definition",
                             json_string("peak_position: the median index of the densest 5-token "
                                         "window of stall indices; peak_stalls: the stalls within "
                                         "2 tokens of it; peak_spread: their largest distance to "
                                         "it; by_index: stalls by index in bins of index_width "
                                         "tokens (the last bin takes every index beyond 64 bins); "
                                         "by_position: the same in bins of position_width"));
}

/* analysis.probes: present only when probes were sent (--probe-rate). */
static int probes(json_t *a, const struct im_probes *p) {
  if (!p->sent)
    return 0;
  json_t *o = im_jw_child(a, "probes");
  const char *none = "no probe answered";
  if (!o || im_jw_uint(o, "sent", p->sent) || im_jw_uint(o, "failed", p->failed) ||
      im_jw_num(o, "p50_ms", p->p50_ms, none) || im_jw_num(o, "p99_ms", p->p99_ms, none) ||
      im_jw_num(o, "max_ms", p->max_ms, none) || im_jw_num(o, "k", p->stall_k, NULL) ||
      im_jw_uint(o, "stalls", p->stalls) || im_jw_num(o, "stall_share", p->stall_share, none))
    return -1;
  json_t *at = json_array();
  if (!at || json_object_set_new(o, "stalls_listed", at))
    return -1;
  for (size_t i = 0; i < p->n_listed; i++)
    if (json_array_append_new(at, json_pack("{s:f, s:f}", "at_s", p->stall_at_s[i], "latency_ms",
                                            p->stall_ms[i])))
      return -1;
  return json_object_set_new(o, "definition",
                             json_string("1-token requests (not streamed) at Poisson instants "
                                         "beside the load; latency t_end - t_start; a stall is "
                                         "a probe above k times the median probe latency; "
                                         "stalls_listed: the first 32, at_s from the stage's "
                                         "start"));
}

static int slo(json_t *a, const struct im_slo_verdicts *v, const struct im_summary_config *sc) {
  json_t *arr = json_array();
  if (!arr || json_object_set_new(a, "slo", arr))
    return -1;
  double lim[IM_SLO_COUNT_] = {sc->slo_ttft_ms, sc->slo_tpot_ms, sc->slo_e2el_ms, NAN};
  for (int k = 0; k < IM_SLO_COUNT_; k++) {
    if (!v->given[k])
      continue;
    const struct im_stats_early_stop *e = &v->es[k];
    json_t *o = json_object();
    if (!o || json_array_append_new(arr, o) ||
        json_object_set_new(o, "slo", json_string(im_slo_name((enum im_slo_kind)k))) ||
        im_jw_num(o, "limit_ms", lim[k], "every SLO at once") ||
        im_jw_num(o, "target", v->target, NULL) || im_jw_uint(o, "requests", v->n) ||
        im_jw_uint(o, "over", v->over[k]) ||
        json_object_set_new(o, "verdict", json_string(im_stats_verdict_name(e->verdict))) ||
        json_object_set_new(o, "more_requests_needed",
                            e->verdict == IM_VERDICT_INCONCLUSIVE && e->more_min >= 0
                                ? json_integer(e->more_min)
                                : json_null()))
      return -1;
  }
  return 0;
}

enum im_err im_analysis_json(const struct im_stage_figures *f, const struct im_summary_config *sc,
                             json_t *dst) {
  json_t *a = im_jw_child(dst, "analysis");
  json_t *lc = a ? im_breakdown_long_context_json(&f->bd) : NULL;
  if (!a || !lc || json_object_set_new(a, "long_context", lc) || token_latency(a, &f->tokens, sc) ||
      stalls(a, &f->tokens) || probes(a, &f->probes) || slo(a, &f->slo, sc))
    return IM_NOMEM;
  return IM_OK;
}

static void two(FILE *o, const char *label, const struct im_hist *h) {
  fprintf(o, "%-40s", label);
  if (!im_hist_count(h))
    fputs("-\n", o);
  else
    fprintf(o, "%.2f / %.2f\n", (double)im_hist_percentile(h, 0.5) / 1e6,
            (double)im_hist_percentile(h, 0.99) / 1e6);
}

void im_analysis_text(FILE *o, const struct im_stage_figures *f, const struct im_summary_config *sc) {
  (void)sc;
  const struct im_tokens *t = &f->tokens;
  fprintf(o, "---------- Token latency (docs/metrics.md §4) ---------\n");
  fprintf(o, "(a window: %u successive gaps between tokens of one request)\n", t->cfg.window);
  two(o, "ITL, every gap, p50 / p99 (ms):", &f->sum.hist[IM_H_ITL]);
  two(o, "ITL per token, p50 / p99 (ms):", &f->sum.hist[IM_H_ITL_TOKEN]);
  char label[64];
  snprintf(label, sizeof label, "Window mean, p50 / p99 (ms):");
  two(o, label, &t->win_mean);
  snprintf(label, sizeof label, "Window max, p50 / p99 (ms):");
  two(o, label, &t->win_max);
  char where[96];
  im_tokens_peak_text(t, where, sizeof where);
  if (t->stalls)
    fprintf(o, "Stalls (gap > %g x request median):     %s, in %llu requests; %.0f%% at "
               "the same moment as stalls of two other requests (the server paused)\n",
            t->cfg.stall_k, where, (unsigned long long)t->stalled_requests,
            100.0 * t->aligned_share);
  else
    fprintf(o, "Stalls (gap > %g x request median):     none\n", t->cfg.stall_k);
  if (t->host_stalls)
    fprintf(o, "  and %llu gap%s that a host stall explains (the machine paused, not the "
               "server; not counted as stalls)\n",
            (unsigned long long)t->host_stalls, t->host_stalls == 1 ? "" : "s");
  const struct im_probes *p = &f->probes;
  if (p->sent)
    fprintf(o, "Probes (1 token, Poisson):              %llu sent, %llu failed, p50 %.2f / p99 "
               "%.2f / max %.2f ms, %llu above %g x p50\n",
            (unsigned long long)p->sent, (unsigned long long)p->failed, p->p50_ms, p->p99_ms,
            p->max_ms, (unsigned long long)p->stalls, p->stall_k);
  const struct im_breakdown *b = &f->bd;
  if (!isnan(b->lc_growth))
    fprintf(o, "TTFT per uncached token, %s vs %s:  %+.0f%%%s\n",
            im_breakdown_bucket_name(b->lc_long_bucket), im_breakdown_bucket_name(b->lc_short_bucket),
            100.0 * b->lc_growth, b->lc_flag ? "  (above +210%: long contexts degrade)" : "");
  for (int k = 0; k < IM_SLO_COUNT_; k++) {
    const struct im_stats_early_stop *e = &f->slo.es[k];
    if (!f->slo.given[k])
      continue;
    fprintf(o, "SLO %-5s verdict (early stopping):       %s (%llu of %llu over)", 
            im_slo_name((enum im_slo_kind)k), im_stats_verdict_name(e->verdict),
            (unsigned long long)f->slo.over[k], (unsigned long long)f->slo.n);
    if (e->verdict == IM_VERDICT_INCONCLUSIVE && e->more_min >= 0)
      fprintf(o, ", %lld more requests needed", (long long)e->more_min);
    fputc('\n', o);
  }
}
