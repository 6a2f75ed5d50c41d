/* A run's configuration: its defaults, the checks of options that exclude
 * or need each other, and what is derived before the run (run/run.h). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_int.h"

void im_run_config_default(struct im_run_config *o) {
  memset(o, 0, sizeof *o);
  o->rate = 2.0;
  o->burstiness = 1.0;
  o->sched_kind = IM_SCHED_POISSON;
  o->duration_ns = 30 * 1000000000LL;
  o->warmup_ns = 5 * 1000000000LL;
  o->grace_ns = 10 * 1000000000LL;
  o->retry_backoff_max_ns = 30 * 1000000000LL;
  o->input_len = 1024;
  o->output_len = 128;
  o->temperature = NAN;
  o->top_p = NAN;
  o->slo_target = 0.99;
  o->repeat = 1;
  o->cooldown_ns = -1; /* not given: run/repeat.c decides */
  o->keepalive = true;
  o->keep_ngrams = 4096;
  o->otlp_sample = 1.0;
  im__run_agent_defaults(&o->agent);
  o->threads = 1;
  o->t_connect = 5 * 1000000000LL;
  o->t_ttft = 60 * 1000000000LL;
  o->t_idle = 30 * 1000000000LL;
  o->t_total = 600 * 1000000000LL;
  o->scrape_interval_ns = 1000000000;
  o->trace_speed = 1.0;
  o->turns = 8;
  o->prefix_share = NAN;
  o->sweep_steps = 5;
  o->stop_on_saturation = true;
  o->kv_residency_ref = 0.68; /* docs/metrics.md §9 reference lines */
  o->bw_util_ref = 0.78;
  static const double pct[] = {50, 90, 95, 99, 99.9};
  memcpy(o->scfg.percentiles, pct, sizeof pct);
  o->scfg.n_percentiles = 5;
}

void im__run_default_warmup(struct im_run_config *o) {
  if (!o->requests || o->warmup_given || o->sessions || o->session_rate > 0)
    return;
  if (isinf(o->rate) && !o->concurrency) {
    /* A burst: the warm-up's requests would go out with the measured ones
     * and warm nothing (vLLM's burst has none either). */
    o->warmup_ns = 0;
    o->warmup_requests = 0;
    return;
  }
  o->warmup_ns = 0;
  o->warmup_requests = o->requests / 10;
}

const char *im__run_check_opts(const struct im_run_config *o, char *buf, size_t cap) {
  bool sessions = o->sessions || o->session_rate > 0, rate_given = o->rate_given;
  const char *why = NULL;
  if (im_net_check(&o->net, buf, cap) || im__run_transport(o, o->url, buf, cap) < 0)
    why = buf;
  else if (o->concurrency && rate_given)
    why = "--rate and --concurrency exclude each other";
  else if (o->sessions && o->session_rate > 0)
    why = "--sessions and --session-rate exclude each other";
  else if (sessions && (o->concurrency || rate_given))
    why = "with sessions, --sessions N or --session-rate R replace --concurrency and --rate";
  else if (!sessions && (o->ctx_start || o->think_ns))
    why = "--context-growth and --think-time need --sessions or --session-rate";
  else if (isinf(o->rate) && !o->concurrency && !sessions && !o->requests)
    why = "--rate inf (a burst: every request at once) needs --requests N";
  else if (isinf(o->rate) && !o->concurrency && !sessions && o->sched_kind >= IM_SCHED_RAMP)
    why = "--rate inf (a burst) cannot ramp: drop --schedule ramp or give a finite --rate";
  else if (o->sched_kind == IM_SCHED_RAMP && o->rate_end <= 0)
    why = "--schedule ramp needs --rate-end";
  else if (o->sched_kind >= IM_SCHED_RAMP_REQ_LINEAR && (o->rate_end < o->rate || !o->requests))
    why = "a vLLM ramp (--schedule vllm-ramp-*) needs --rate-end >= --rate and --requests N";
  else if (o->n_reference && o->repeat < 2 && !o->repeat_of)
    why = "--reference tests the runs of --repeat K (K >= 2) against it";
  else
    why = im__run_agent_check(&o->agent, sessions, o->backend == IM_BACKEND_CHAT);
  return why;
}

int im__run_select_stage(struct im_run_config *o) {
  struct run_plan *plan = calloc(1, sizeof *plan);
  struct im_stage st;
  int rc = -1;
  if (!plan || im__run_plan_parse(o, plan))
    goto out;
  /* An auto sweep has no rates yet: 0 stages. */
  size_t n = plan->n_grid * (plan->has_sweep ? plan->sweep.nvalues : 1);
  if (o->repeat_stage > n || im__run_plan_stage(plan, o->repeat_stage - 1, &st)) {
    im__run_say(IM_RUN_SAY_ERROR, "--repeat-stage %" PRIu32 ": the plan has %zu stages",
                o->repeat_stage, n);
    goto out;
  }
  im__run_apply_stage(o, &st);
  if (st.set & (1u << IM_PARAM_RATE))
    o->rate_given = true;
  snprintf(o->repeat_stage_label, sizeof o->repeat_stage_label, "%s", st.label);
  o->n_grid = 0; /* from here on a one-stage run with the stage's settings */
  o->sweep = NULL;
  rc = 0;
out:
  free(plan);
  return rc;
}

enum im_err im_run_prepare(struct im_run_config *o, const struct im_run_hooks *h, char *err,
                           size_t err_len) {
  char buf[512];
  const char *why = im__run_check_opts(o, buf, sizeof buf);
  if (why)
    return im_errf(err, err_len, IM_INVAL, "%s", why);
  /* The steps below say their own reasons through h; err stays empty. */
  /* h NULL: the hooks of the call this one is inside (a replicate's). */
  const struct im_run_hooks *outer = h ? im__run_say_push(h) : NULL;
  enum im_err e = IM_OK;
  if (im__run_shard_check(o)) {
    e = im_errf(err, err_len, IM_INVAL, "%s", "");
  } else {
    im__run_shard_defaults(o);
    im__run_default_warmup(o);
    if ((o->repeat_stage && im__run_select_stage(o)) || im__run_size(o))
      e = im_errf(err, err_len, IM_INVAL, "%s", "");
  }
  if (h)
    im__run_say_push(outer);
  return e;
}
