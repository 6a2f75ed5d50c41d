/* The reasoning profile of the simulated server: see serve/reasoning.h. */
#include "serve/reasoning.h"

#include <math.h>

int im_reasoning_difficulty(uint32_t n_prompt, bool code) {
  int d = n_prompt < 1024 ? 0 : n_prompt < 8192 ? 1 : 2;
  if (code && d < 2)
    d++;
  return d;
}

static double effort_factor(enum im_effort e) {
  switch (e) {
  case IM_EFFORT_NONE:
    return 0.0;
  case IM_EFFORT_LOW:
    return 0.4;
  case IM_EFFORT_HIGH:
    return 1.6;
  case IM_EFFORT_MAX:
    return 2.5;
  default:
    return 1.0; /* unset, medium */
  }
}

void im_reasoning_split(struct im_rng *rng, const struct im_profile *p,
                        const struct im_reasoning_ask *a, uint32_t drawn, uint32_t max_tokens,
                        bool ignore_eos, uint32_t *reasoning, uint32_t *total, bool *capped) {
  static const double difficulty[3] = {0.6, 1.0, 1.8};
  double share = p->reasoning_share;
  bool on = p->reasoning && a->thinking >= 0 && share > 0;
  if (drawn < 1)
    drawn = 1;
  double r = 0;
  uint32_t answer = drawn;
  if (on) {
    double t = isnan(a->temperature) ? 1.0 : a->temperature;
    const double sigma = 0.5;
    double noise = exp(sigma * im_rng_normal(rng) - sigma * sigma / 2);
    r = (double)drawn * share * difficulty[im_reasoning_difficulty(a->n_prompt, a->code)] *
        (0.6 + 0.4 * t) * effort_factor(a->effort) * noise;
    double ans = (double)drawn * (1.0 - share);
    answer = ans < 1 ? 1 : (uint32_t)ans;
  }
  uint64_t want = (uint64_t)answer + (r > 4e9 ? 4000000000u : (uint64_t)r);
  if (ignore_eos)
    want = max_tokens;
  *capped = *capped || ignore_eos || want > max_tokens;
  *total = want > max_tokens ? max_tokens : (uint32_t)want;
  uint32_t rr = r > 4e9 ? 4000000000u : (uint32_t)r;
  if (!on || (*total <= 1 && ignore_eos))
    rr = 0;
  else if (rr >= *total)
    /* A chain as long as max_tokens leaves no answer (max_tokens reached
     * before it, finish_reason length), as a real server streams it; with
     * ignore_eos one answer token remains. */
    rr = !ignore_eos && rr >= max_tokens ? *total : *total - 1;
  *reasoning = rr;
}
