/* infermeter run --min-requests N|auto: sizes the run before it starts so
 * that it measures at least N requests; auto takes N from the SLOs'
 * early-stopping minimum (docs/statistics.md "Sizing a run"): the fewest
 * requests with which an SLO at share --slo-target can PASS at all (44 for
 * 0.9, 459 for 0.99). The size is fixed beforehand on purpose: a rule that
 * stops when the data look good (optional stopping) inflates false PASSes.
 *
 * Only what is known before the run can be sized: --requests (raised to N
 * plus the warm-up's requests) or, open loop, --duration (raised so that
 * the expected measured count is N + 3 sqrt(N), a Poisson shortfall below N
 * then being rarer than 1 in 700). A closed loop sized by time, sessions
 * and a ramp have no such count: refused with the way out. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "analyze/slo.h"
#include "run/run_int.h"

/* The lowest and highest rate the stages will run at (a rate sweep's
 * values, else --rate); *closed when a concurrency sweep makes the stages
 * closed loops. 1 for an auto sweep, -1 (said) for a bad plan. */
static int rate_range(const struct im_run_config *o, double *lo, double *hi, bool *closed) {
  *lo = *hi = o->rate;
  if (!o->sweep)
    return 0;
  struct run_plan *plan = calloc(1, sizeof *plan);
  if (!plan || im__run_plan_parse(o, plan)) {
    free(plan);
    return -1;
  }
  if (plan->has_sweep && plan->sweep.param == IM_PARAM_RATE && !plan->sweep.is_auto)
    for (size_t i = 0; i < plan->sweep.nvalues; i++) {
      *lo = i ? fmin(*lo, plan->sweep.values[i]) : plan->sweep.values[i];
      *hi = i ? fmax(*hi, plan->sweep.values[i]) : plan->sweep.values[i];
    }
  *closed |= plan->has_sweep && plan->sweep.param == IM_PARAM_CONCURRENCY;
  int auto_rate = plan->has_sweep && plan->sweep.is_auto;
  free(plan);
  return auto_rate ? 1 : 0;
}

int im__run_size(struct im_run_config *o) {
  if (!o->min_requests && !o->min_requests_auto)
    return 0;
  uint64_t need = o->min_requests;
  char why[160] = "";
  if (o->min_requests_auto) {
    bool slo = o->scfg.has_slo_ttft || o->scfg.has_slo_tpot || o->scfg.has_slo_e2el;
    int64_t m = im_slo_min_requests(o->slo_target);
    if (!slo || m <= 0) {
      im__run_say(IM_RUN_SAY_ERROR, "--min-requests auto sizes the run for the SLO verdicts: "
                      "give --slo and an --slo-target below 1, or --min-requests N");
      return -1;
    }
    need = (uint64_t)m;
    snprintf(why, sizeof why, " (an SLO at %g%% can PASS from %" PRIu64 " requests, MLPerf early "
                              "stopping at 99%% confidence)", 100.0 * o->slo_target, need);
  }
  bool closed = o->concurrency != 0;
  const char *refuse = NULL;
  if (o->sessions || o->session_rate > 0)
    refuse = "sessions have no request count known before the run";
  else if (o->sched_kind >= IM_SCHED_RAMP)
    refuse = "a ramp's request count is not sized; use --requests N";
  double lo = o->rate, hi = o->rate;
  int ar = rate_range(o, &lo, &hi, &closed);
  if (ar < 0)
    return -1;
  if (!refuse && ar > 0)
    refuse = "--sweep rate=auto picks its rates during the run; list them";
  if (!refuse && closed && !o->requests)
    refuse = "a closed loop sized by time has no request count known before the run: give "
             "--requests";
  if (!refuse && closed && o->warmup_ns > 0)
    refuse = "a closed loop's warm-up by time takes an unknown share of --requests: give the "
             "warm-up as a count (--warmup N)";
  if (refuse) {
    im__run_say(IM_RUN_SAY_ERROR, "--min-requests: %s", refuse);
    return -1;
  }
  double warm_s = (double)o->warmup_ns / 1e9;
  if (o->requests) {
    /* The warm-up's requests come out of --requests: by count exactly, by
     * time (open loop) at most rate W + 3 sqrt(rate W) but for 1 in 700. */
    double rw = hi * warm_s;
    uint64_t extra = o->warmup_ns > 0 ? (uint64_t)ceil(rw + 3.0 * sqrt(rw)) : o->warmup_requests;
    uint64_t want = need + extra;
    if (o->requests < want) {
      if (!o->quiet)
        im__run_say(IM_RUN_SAY_ERROR, "--min-requests: --requests %" PRIu64 " -> %" PRIu64
                        " (%" PRIu64 " measured + %" PRIu64 " warm-up)%s",
                o->requests, want, need, extra, why);
      o->requests = want;
    }
    return 0;
  }
  double measured_s = ((double)need + 3.0 * sqrt((double)need)) / lo;
  int64_t want_ns = (int64_t)ceil((warm_s + measured_s) * 1e3) * 1000000;
  if (o->duration_ns < want_ns) {
    if (!o->quiet)
      im__run_say(IM_RUN_SAY_ERROR, "--min-requests: --duration %.1fs -> %.1fs (%" PRIu64
                      " measured requests expected + 3 sd at %g req/s after a %.1f s warm-up)%s",
              (double)o->duration_ns / 1e9, (double)want_ns / 1e9, need, lo, warm_s, why);
    o->duration_ns = want_ns;
  }
  return 0;
}
