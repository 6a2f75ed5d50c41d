/* One stage's figures: see analyze/stage.h. */
#include "analyze/stage.h"

#include <stdlib.h>
#include <string.h>

void im_stage_window(const struct im_record *recs, size_t n, const struct im_window_rule *rule,
                     int64_t *start_ns, int64_t *end_ns) {
  int64_t start = rule->warmup_ns, last_sched = 0, first_measured = -1;
  for (size_t i = 0; i < n; i++) {
    const struct im_record *r = &recs[i];
    if (r->kind == IM_KIND_RETRY || r->attempt > 1)
      continue;
    if (r->t_sched > last_sched)
      last_sched = r->t_sched;
    if ((r->kind == IM_KIND_MEASURED || r->kind == IM_KIND_ABORTED ||
         r->kind == IM_KIND_CANCELLED) && r->t_sched >= 0 &&
        (first_measured < 0 || r->t_sched < first_measured))
      first_measured = r->t_sched;
  }
  if (rule->warmup_by_requests && !rule->closed && first_measured >= 0)
    start = first_measured;
  int64_t end = rule->closed && rule->duration_ns ? rule->duration_ns : last_sched;
  if (rule->burst && !rule->closed) {
    /* A burst (every request due at once): the window runs to the end of
     * the last attempt, as vLLM's duration does. */
    for (size_t i = 0; i < n; i++)
      if (recs[i].t_end > end)
        end = recs[i].t_end;
  }
  if (rule->interrupted && end > rule->elapsed_ns)
    end = rule->elapsed_ns;
  if (end <= start)
    start = 0;
  if (end < start)
    end = start;
  *start_ns = start;
  *end_ns = end;
}

static bool slo_failed(const struct im_summary *s, const struct im_summary_config *c,
                       double target) {
  return (c->has_slo_ttft && s->slo_ttft_attain < target) ||
         (c->has_slo_tpot && s->slo_tpot_attain < target) ||
         (c->has_slo_e2el && s->slo_e2el_attain < target);
}

/* Over-saturation (workload/stages.h): the client's in-flight count per
 * second (summed over threads, k-th sample of each) and the TTFT of
 * measured requests by arrival, warm-up dropped. */
static enum im_err judge_saturation(const struct im_stage_input *in, struct im_stage_figures *f) {
  size_t n0 = 0;
  for (size_t i = 0; i < in->n_samples; i++)
    n0 += in->samples[i].thread == 0;
  struct im_tpoint *inf = calloc(n0 ? n0 : 1, sizeof *inf);
  struct im_tpoint *tt = calloc(in->n_recs ? in->n_recs : 1, sizeof *tt);
  size_t *seen = calloc(in->threads ? in->threads : 1, sizeof *seen);
  enum im_err err = IM_NOMEM;
  if (!inf || !tt || !seen)
    goto out;
  /* inf[k]: time of thread 0's k-th sample, in-flight summed over threads. */
  for (size_t i = 0; i < in->n_samples; i++) {
    const struct im_client_sample *s = &in->samples[i];
    if (s->thread >= in->threads)
      continue;
    size_t k = seen[s->thread]++;
    if (k >= n0)
      continue;
    if (s->thread == 0)
      inf[k].t = (double)s->t / 1e9;
    inf[k].v += s->in_flight;
  }
  size_t k = 0, m = 0;
  for (size_t i = 0; i < n0; i++)
    if (inf[i].t * 1e9 >= (double)in->cfg.window_start_ns)
      inf[k++] = inf[i];
  for (size_t i = 0; i < in->n_recs; i++) {
    const struct im_record *r = &in->recs[i];
    if (r->kind == IM_KIND_MEASURED && r->t_first >= 0)
      tt[m++] = (struct im_tpoint){(double)r->t_sched / 1e9, (double)(r->t_first - r->t_sched) / 1e6};
  }
  f->sat_judged = im_stage_check_saturation(inf, k, tt, m, &f->sat) == IM_OK;
  err = IM_OK;
out:
  free(inf);
  free(tt);
  free(seen);
  return err;
}

enum im_err im_stage_analyze(const struct im_stage_input *in, struct im_stage_figures *f) {
  memset(f, 0, sizeof *f);
  enum im_err err = im_population_build(in->recs, in->n_recs, in->cfg.window_start_ns,
                                        in->cfg.window_end_ns, &f->pop);
  if (!err)
    err = im_summary_compute_pop(&f->pop, &in->cfg, &f->sum);
  if (!err)
    err = im_breakdown_compute(&f->pop, &in->cfg, &f->bd);
  if (!err)
    err = im_reasoning_compute(&f->pop, &in->cfg, &f->reasoning);
  if (!err)
    err = im_agents_compute(&f->pop, &in->cfg, &f->agents);
  if (!err)
    err = im_cancel_compute(&f->pop, &in->cfg, &f->cancel);
  if (!err)
    err = im_models_compute(&f->pop, &in->cfg, &f->models);
  if (!err)
    err = im_targets_compute(&f->pop, &in->cfg, &f->targets);
  if (!err)
    err = judge_saturation(in, f);
  struct im_tokens_config tc = in->tokens;
  if (!tc.window) /* not configured: docs/metrics.md §4's defaults */
    im_tokens_config_default(&tc);
  tc.host = in->host; /* a host stall is not the server's (analyze/tokens.h) */
  if (!err)
    err = im_tokens_compute(&f->pop, &tc, &f->tokens);
  if (!err)
    err = im_batch_means_compute(&f->pop, &f->bm);
  if (!err)
    err = im_probes_compute(&f->pop, tc.stall_k, &f->probes);
  if (!err)
    err = im_timeslices_compute(&f->pop,
                                in->timeslice_ns > 0
                                    ? in->timeslice_ns
                                    : im_timeslice_auto_ns(f->pop.window_end_ns - f->pop.window_start_ns,
                                                           IM_STAGE_DEFAULT_TIMESLICE_NS),
                                &f->slices);
  if (err) {
    im_stage_figures_cleanup(f);
    return err;
  }
  im_client_check_compute_host(&f->pop, &f->sum, &in->cfg, &in->counters, in->receive_lag,
                               in->host, &f->check);
  f->slo_failed = slo_failed(&f->sum, &in->cfg, in->slo_target);
  im_slo_verdicts(&f->sum, &in->cfg, in->slo_target, &f->slo);
  return IM_OK;
}

void im_stage_figures_cleanup(struct im_stage_figures *f) {
  if (!f)
    return;
  im_summary_cleanup(&f->sum);
  im_tokens_cleanup(&f->tokens);
  im_timeslices_cleanup(&f->slices);
  im_population_cleanup(&f->pop);
  memset(f, 0, sizeof *f);
}
