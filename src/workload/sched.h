/* Arrival schedules of the load engine (open loop), computed ahead from a
 * seeded RNG, and the per-request workload draws of the built-in synthetic
 * generator. See docs/metrics.md §2 and docs/schedules.md.
 *
 * An open-loop schedule is a sorted array of arrival times (ns since the
 * schedule's start). The engine dispatches each at its absolute time; a late
 * dispatch never shifts later ones. For N threads the global schedule is
 * dealt round-robin (request i to thread i mod N), so the union of the
 * threads' arrivals is exactly the global process. */
#ifndef INFERMETER_SCHED_H
#define INFERMETER_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

enum im_sched_kind {
  IM_SCHED_POISSON,  /* exponential gaps at `rate` */
  IM_SCHED_GAMMA,    /* gamma gaps, shape = burstiness, mean 1/rate (vLLM's --burstiness) */
  IM_SCHED_CONSTANT, /* gaps exactly 1/rate */
  IM_SCHED_RAMP,     /* Poisson whose rate goes linearly from rate to rate_end */
  /* vLLM's --ramp-up-strategy linear|exponential (vllm/benchmarks/serve.py):
   * the rate steps with the request index, not the time: request i of N
   * (max_requests) comes a gap after request i-1 drawn at rate
   * r_i = rate + (rate_end - rate) p (linear) or rate (rate_end/rate)^p
   * (exponential), p = i / max(N - 1, 1); the gap is gamma of shape
   * burstiness (1: exponential) and mean 1/r_i, as vLLM draws it. */
  IM_SCHED_RAMP_REQ_LINEAR,
  IM_SCHED_RAMP_REQ_EXP,
};

struct im_sched_spec {
  enum im_sched_kind kind;
  double rate;         /* requests/s (> 0); INFINITY: a burst (below) */
  double rate_end;     /* RAMP only */
  double burstiness;   /* GAMMA shape (> 0); 1 = Poisson */
  int64_t duration_ns; /* arrivals in [0, duration) ... */
  uint64_t max_requests; /* ... and at most this many (0 = no cap) */
  uint64_t seed;
};

/* Most arrivals one schedule may hold (2^26, 512 MiB of times): a bound on
 * the allocation, whatever rate and duration the user gives. */
#define IM_SCHED_MAX_ARRIVALS ((uint64_t)1 << 26)

/* A rate of INFINITY (`--rate inf`, vLLM's default --request-rate) is a
 * burst: max_requests arrivals (it needs them), every one at 0, whatever
 * the kind (poisson, gamma and constant alike); a ramp cannot be one.
 *
 * Fills *out (malloc'ed, caller frees; NULL when *n is 0) with the sorted
 * arrival times and *n with their number. Poisson, gamma and ramp: the first
 * arrival comes one random gap after 0; constant: the first is at 0. IM_INVAL
 * for a bad spec (message via im_sched_check), IM_LIMIT when more than
 * IM_SCHED_MAX_ARRIVALS would be generated, IM_NOMEM. On error *out is NULL
 * and *n is 0. */
enum im_err im_sched_generate(const struct im_sched_spec *spec, int64_t **out, size_t *n) IM_WUR;
/* NULL when the spec is valid, else a static message naming the bad field. */
const char *im_sched_check(const struct im_sched_spec *spec);
/* Instantaneous scheduled rate at t (requests/s): rate, or the ramp's; the
 * vLLM ramps, which step with the request index, give their start rate. */
double im_sched_rate_at(const struct im_sched_spec *spec, int64_t t_ns);

/* vLLM's --random-range-ratio convention (vllm/benchmarks/datasets.py,
 * RandomDataset.get_sampling_params): a length uniform over the integers of
 * [floor(L(1-r)), ceil(L(1+r))], bounds computed in double, at least 1;
 * r in [0, 1) (r < 0 or NaN acts as 0, r > 1 as 1). Deterministic in
 * (seed, index); thread-safe. */
uint32_t im_sched_length(uint32_t mean, double range_ratio, uint64_t seed, uint64_t index);

#endif
