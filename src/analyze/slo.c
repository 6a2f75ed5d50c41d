/* SLO verdicts by early stopping: see analyze/slo.h. */
#include "analyze/slo.h"

#include <string.h>

const char *im_slo_name(enum im_slo_kind k) {
  static const char *const names[IM_SLO_COUNT_] = {"ttft", "tpot", "e2el", "all"};
  return (unsigned)k < IM_SLO_COUNT_ ? names[k] : "?";
}

void im_slo_verdicts(const struct im_summary *s, const struct im_summary_config *cfg,
                     double target, struct im_slo_verdicts *v) {
  memset(v, 0, sizeof *v);
  v->target = target;
  v->n = s->slo_requests;
  bool given[IM_SLO_COUNT_] = {cfg->has_slo_ttft, cfg->has_slo_tpot, cfg->has_slo_e2el,
                               im_summary_has_slo(cfg)};
  uint64_t met[IM_SLO_COUNT_] = {s->slo_met_ttft, s->slo_met_tpot, s->slo_met_e2el,
                                 s->slo_met_all};
  for (int k = 0; k < IM_SLO_COUNT_; k++) {
    v->given[k] = given[k];
    v->over[k] = v->n - (met[k] < v->n ? met[k] : v->n);
    /* A share target of 1 (or none) has no quantile: never decided. */
    if (!given[k] || !v->n || !(target > 0 && target < 1) ||
        im_stats_early_stop((int64_t)v->n, (int64_t)v->over[k], target, IM_SLO_CONFIDENCE,
                            &v->es[k]) != IM_OK) {
      v->es[k] = (struct im_stats_early_stop){.verdict = IM_VERDICT_INCONCLUSIVE,
                                              .upper_rank = (int64_t)v->n + 1,
                                              .more_min = -1, .more_at_rate = -1};
      v->given[k] = given[k];
    }
  }
}

int64_t im_slo_min_requests(double target) {
  struct im_stats_early_stop es;
  if (!(target > 0 && target < 1) ||
      im_stats_early_stop(1, 0, target, IM_SLO_CONFIDENCE, &es) != IM_OK)
    return 0;
  return es.verdict == IM_VERDICT_PASS ? 1 : 1 + es.more_min;
}
