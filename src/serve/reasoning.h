/* The simulated server's reasoning profile (docs/agents.md "Reasoning in
 * serve"): how many reasoning tokens a request of a reasoning profile
 * streams before its answer.
 *
 * The total output length is first drawn as before (textgen's length
 * model, growing with temperature); the profile's reasoning_share of it is
 * the reasoning budget at the reference point (a medium prompt, T = 1,
 * effort medium). The drawn reasoning length is that budget times
 *   difficulty  0.6 (prompt < 1,024 tokens), 1.0 (< 8,192), 1.8 (longer);
 *               a prompt that looks like code counts one class harder;
 *   temperature 0.6 + 0.4 T (T = 0: 0.6, T = 1: 1, T = 2: 1.4);
 *   effort      none 0, low 0.4, medium 1, high 1.6, max 2.5 (absent:
 *               medium); thinking off: 0;
 *   noise       log-normal, sigma 0.5, mean 1;
 * and the answer keeps (1 - share) of the drawn length. Reasoning counts
 * against max_tokens, as in vLLM: a long chain can leave the answer cut
 * (finish_reason length). Pure; deterministic for a given RNG state. */
#ifndef IM_SERVE_REASONING_H
#define IM_SERVE_REASONING_H

#include <stdbool.h>
#include <stdint.h>

#include "core/rng.h"
#include "model/perf.h"
#include "proto/oai_api.h"

struct im_reasoning_ask {
  enum im_effort effort; /* IM_EFFORT_UNSET: medium */
  int thinking;          /* 0 not said, 1 on, -1 off */
  uint32_t n_prompt;
  bool code;
  double temperature;
};

/* Difficulty class of a prompt: 0 easy, 1 medium, 2 hard (see above). */
int im_reasoning_difficulty(uint32_t n_prompt, bool code);

/* Splits a drawn output length `drawn` (>= 1) into reasoning and answer
 * tokens for profile p: *reasoning (0 for a profile without reasoning or
 * thinking off) and *total (reasoning + answer, at most max_tokens; when
 * ignore_eos, exactly max_tokens with at least one answer token; without
 * it, a reasoning chain of max_tokens or more leaves no answer token). *capped
 * (in: the drawn length was already cut) is also set when max_tokens cut
 * the total. */
void im_reasoning_split(struct im_rng *rng, const struct im_profile *p,
                        const struct im_reasoning_ask *a, uint32_t drawn, uint32_t max_tokens,
                        bool ignore_eos, uint32_t *reasoning, uint32_t *total, bool *capped);

#endif
