/* Open-loop arrival schedules and the synthetic length draw (docs/schedules.md).
 *
 * Every arrival time is kept as a running sum in long double seconds (or, for
 * the constant schedule, computed directly from its index) and converted to
 * ns on its own, so rounding to whole ns never accumulates across arrivals. */
#include "workload/sched.h"

#include <math.h>
#include <stdlib.h>

#include "core/rng.h"

#define NS_PER_S 1e9L

const char *im_sched_check(const struct im_sched_spec *spec) {
  if (!spec)
    return "schedule: no spec";
  if (spec->rate > 0.0 && isinf(spec->rate)) {
    if (spec->kind != IM_SCHED_POISSON && spec->kind != IM_SCHED_GAMMA &&
        spec->kind != IM_SCHED_CONSTANT)
      return "schedule: a rate of inf (a burst) cannot ramp";
    if (spec->max_requests == 0)
      return "schedule: a rate of inf (a burst: every request at once) needs a request count";
    if (spec->max_requests > IM_SCHED_MAX_ARRIVALS)
      return "schedule: request count above the limit of 2^26 arrivals";
    return NULL;
  }
  if (!(spec->rate > 0.0) || !isfinite(spec->rate))
    return "schedule: rate must be a finite number > 0 (requests/s), or inf (a burst)";
  if (spec->duration_ns < 0)
    return "schedule: duration must not be negative";
  if (spec->duration_ns == 0 && spec->max_requests == 0)
    return "schedule: give a duration or a request count (both are 0: the run would never end)";
  if (spec->max_requests > IM_SCHED_MAX_ARRIVALS)
    return "schedule: request count above the limit of 2^26 arrivals";
  double peak = spec->rate;
  switch (spec->kind) {
  case IM_SCHED_POISSON:
  case IM_SCHED_CONSTANT:
    break;
  case IM_SCHED_GAMMA:
    if (!(spec->burstiness > 0.0) || !isfinite(spec->burstiness))
      return "schedule: burstiness (gamma shape) must be a finite number > 0 (1 = Poisson)";
    break;
  case IM_SCHED_RAMP:
    if (!(spec->rate_end > 0.0) || !isfinite(spec->rate_end))
      return "schedule: a ramp needs an end rate > 0 (requests/s)";
    if (spec->duration_ns <= 0)
      return "schedule: a ramp needs a duration (the rate ramps over it)";
    if (spec->rate_end > peak)
      peak = spec->rate_end;
    break;
  case IM_SCHED_RAMP_REQ_LINEAR:
  case IM_SCHED_RAMP_REQ_EXP:
    /* vLLM's checks: both rates given, start <= end, exponential from > 0. */
    if (!(spec->rate_end > 0.0) || !isfinite(spec->rate_end) || spec->rate_end < spec->rate)
      return "schedule: a vLLM ramp needs an end rate >= the start rate (requests/s)";
    if (spec->max_requests == 0)
      return "schedule: a vLLM ramp steps with the request index: give a request count";
    if (!(spec->burstiness > 0.0) || !isfinite(spec->burstiness))
      return "schedule: burstiness (gamma shape) must be a finite number > 0 (1 = Poisson)";
    peak = spec->rate_end;
    break;
  default:
    return "schedule: unknown kind";
  }
  /* Without a request cap the duration bounds the array: refuse a schedule
   * whose expected size is already near the limit (the generator still stops
   * with IM_LIMIT should a random one overshoot). */
  if (spec->max_requests == 0 &&
      (double)spec->duration_ns / 1e9 * peak > 0.9 * IM_SCHED_MAX_ARRIVALS)
    return "schedule: rate x duration exceeds the limit of 2^26 arrivals; "
           "shorten the duration or cap the request count";
  return NULL;
}

double im_sched_rate_at(const struct im_sched_spec *spec, int64_t t_ns) {
  if (spec->kind != IM_SCHED_RAMP || spec->duration_ns <= 0)
    return spec->rate;
  double f = (double)t_ns / (double)spec->duration_ns;
  if (f < 0.0)
    f = 0.0;
  if (f > 1.0)
    f = 1.0;
  return spec->rate + (spec->rate_end - spec->rate) * f;
}

/* Growable output array, bounded by IM_SCHED_MAX_ARRIVALS. */
struct arr {
  int64_t *v;
  size_t n, cap;
};

static enum im_err arr_push(struct arr *a, int64_t x) {
  if (a->n == a->cap) {
    if (a->cap >= IM_SCHED_MAX_ARRIVALS)
      return IM_LIMIT;
    size_t cap = a->cap ? a->cap * 2 : 1024;
    if (cap > IM_SCHED_MAX_ARRIVALS)
      cap = IM_SCHED_MAX_ARRIVALS;
    int64_t *v = realloc(a->v, cap * sizeof *v);
    if (!v)
      return IM_NOMEM;
    a->v = v;
    a->cap = cap;
  }
  a->v[a->n++] = x;
  return IM_OK;
}

/* Seconds (long double) to ns, rounded to nearest; saturates at INT64_MAX
 * (only reachable with absurd rates, and then the duration cap stops us). */
static int64_t sec_to_ns(long double s) {
  long double ns = s * NS_PER_S;
  if (ns >= 9.2e18L)
    return INT64_MAX;
  return (int64_t)llroundl(ns);
}

/* Inverse of the ramp's cumulative intensity
 *   Lambda(t) = r0 t + a t^2,  a = (r1 - r0) / (2 D),
 * i.e. the t >= 0 with Lambda(t) = s. Written as 2s / (r0 + sqrt(r0^2 + 4as))
 * (the conjugate of the quadratic formula) so that a -> 0 (flat ramp) does
 * not cancel catastrophically. The discriminant stays >= r1^2 >= 0 for every
 * s <= Lambda(D), the only range used. */
static long double ramp_inverse(long double r0, long double a, long double s) {
  long double disc = r0 * r0 + 4.0L * a * s;
  if (disc < 0.0L)
    disc = 0.0L;
  return 2.0L * s / (r0 + sqrtl(disc));
}

enum im_err im_sched_generate(const struct im_sched_spec *spec, int64_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (im_sched_check(spec))
    return IM_INVAL;

  if (isinf(spec->rate)) { /* a burst: every arrival at 0 */
    if (!(*out = calloc(spec->max_requests, sizeof **out)))
      return IM_NOMEM;
    *n = spec->max_requests;
    return IM_OK;
  }
  struct im_rng rng;
  im_rng_seed(&rng, spec->seed);
  struct arr a = {0};
  enum im_err err = IM_OK;
  const uint64_t max_n = spec->max_requests ? spec->max_requests : UINT64_MAX;
  const int64_t dur = spec->duration_ns; /* 0: no time cap */
  const long double rate = spec->rate;
  /* Ramp constants, in seconds. */
  const long double D = (long double)dur / NS_PER_S;
  const long double ramp_a =
      spec->kind == IM_SCHED_RAMP ? (spec->rate_end - rate) / (2.0L * D) : 0.0L;
  const long double ramp_total =
      spec->kind == IM_SCHED_RAMP ? D * (rate + spec->rate_end) / 2.0L : 0.0L;
  /* Gamma scale so that the mean gap is 1/rate (vLLM: theta = 1/(rate*k)). */
  const double gamma_scale =
      spec->kind == IM_SCHED_GAMMA ? 1.0 / (spec->rate * spec->burstiness) : 0.0;

  long double sum = 0.0L; /* Poisson/ramp: sum of Exp(1); gamma: seconds */
  for (uint64_t i = 0; i < max_n; i++) {
    long double t; /* seconds */
    switch (spec->kind) {
    case IM_SCHED_POISSON:
      sum += im_rng_exp(&rng);
      t = sum / rate;
      break;
    case IM_SCHED_GAMMA:
      sum += im_rng_gamma(&rng, spec->burstiness) * gamma_scale;
      t = sum;
      break;
    case IM_SCHED_CONSTANT:
      t = (long double)i / rate;
      break;
    case IM_SCHED_RAMP_REQ_LINEAR:
    case IM_SCHED_RAMP_REQ_EXP: {
      double p = (double)i / (double)(max_n > 1 ? max_n - 1 : 1);
      double r = spec->kind == IM_SCHED_RAMP_REQ_LINEAR
                     ? spec->rate + (spec->rate_end - spec->rate) * p
                     : spec->rate * pow(spec->rate_end / spec->rate, p);
      sum += spec->burstiness == 1.0 ? (long double)im_rng_exp(&rng) / r
                                     : im_rng_gamma(&rng, spec->burstiness) /
                                           (r * spec->burstiness);
      t = sum;
      break;
    }
    case IM_SCHED_RAMP:
      /* Time rescaling: unit-rate Poisson points mapped through Lambda^-1. */
      sum += im_rng_exp(&rng);
      if (sum >= ramp_total)
        goto done;
      t = ramp_inverse(rate, ramp_a, sum);
      break;
    default:
      err = IM_INVAL;
      goto done;
    }
    int64_t ns = sec_to_ns(t);
    if (dur > 0 && ns >= dur)
      break;
    if (ns == INT64_MAX)
      break;
    err = arr_push(&a, ns);
    if (err)
      goto done;
  }
done:
  if (err) {
    free(a.v);
    return err;
  }
  if (a.n == 0) {
    free(a.v);
    a.v = NULL;
  }
  *out = a.v;
  *n = a.n;
  return IM_OK;
}

uint32_t im_sched_length(uint32_t mean, double range_ratio, uint64_t seed, uint64_t index) {
  double r = range_ratio;
  if (!(r > 0.0)) /* also NaN */
    r = 0.0;
  if (r > 1.0)
    r = 1.0;
  /* Bounds exactly as vLLM computes them in double precision (see
   * docs/schedules.md), so the same (L, r) gives the same interval. */
  double lo_d = floor((double)mean * (1.0 - r));
  double hi_d = ceil((double)mean * (1.0 + r));
  uint64_t lo = (uint64_t)lo_d, hi = (uint64_t)hi_d;
  if (lo < 1)
    lo = 1;
  if (hi < 1)
    hi = 1;
  if (hi > UINT32_MAX)
    hi = UINT32_MAX;
  if (lo > hi)
    lo = hi;
  if (lo == hi)
    return (uint32_t)lo;
  /* A private stream per (seed, index): the value does not depend on how many
   * draws were made before, nor on which thread asks. */
  struct im_rng rng;
  im_rng_seed(&rng, im_mix64(seed ^ im_mix64(index ^ 0x6c656e677468ULL /* "length" */)));
  return (uint32_t)(lo + im_rng_below(&rng, hi - lo + 1));
}
