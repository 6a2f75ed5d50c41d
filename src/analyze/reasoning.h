/* Figures of reasoning models (docs/agents.md "Reasoning figures",
 * docs/metrics.md): per request, the reasoning phase (first token to first
 * answer token) and the answer phase, overall and per context bucket
 * (analyze/breakdown.h's buckets).
 *
 * Population (analyze/population.h): the final attempts of completed
 * non-warm-up logical requests that reasoned: usage reported reasoning
 * tokens, or the first answer chunk came after the first token. Per such
 * request:
 *   ttft, ttfa          t_first - t_start, t_answer - t_start (ms; ttfa only
 *                       when an answer chunk came);
 *   reasoning_tokens    usage's completion_tokens_details.reasoning_tokens,
 *                       else the tokens of the chunks that arrived before
 *                       t_answer (all of them without an answer);
 *   answer_tokens       output tokens - reasoning tokens (0 at least);
 *   tpot_reasoning      (arrival of the last reasoning chunk - t_first) /
 *                       (stream reasoning tokens - 1), with >= 2 of them;
 *   tpot_answer         (t_last - t_answer) / (stream answer tokens - 1),
 *                       with >= 2 of them;
 *   reasoning_share     (t_answer - t_first) / (t_last - t_start): the share
 *                       of E2E spent reasoning (t_last for t_answer when no
 *                       answer came).
 * Chunks read in the same buffer as the first answer chunk share its time
 * and count as answer. Pure: no I/O, no global state. */
#ifndef IM_ANALYZE_REASONING_H
#define IM_ANALYZE_REASONING_H

#include <stdint.h>

#include "analyze/breakdown.h"
#include "analyze/population.h"

struct im_reasoning_group {
  uint64_t n;
  struct im_bd_dist ttft, ttfa, reasoning_tokens, answer_tokens, tpot_reasoning, tpot_answer,
      reasoning_share;
};

struct im_reasoning {
  uint64_t n;                 /* completed requests that reasoned */
  uint64_t completed;         /* completed requests (the denominator) */
  uint64_t tokens_from_usage; /* of n: reasoning tokens from usage (else from the stream) */
  uint64_t no_answer;         /* of n: no answer chunk came (the reasoning used it all) */
  struct im_reasoning_group all, ctx[IM_CTX_BUCKETS];
};

/* Fills r. IM_NOMEM (r then undefined). */
enum im_err im_reasoning_compute(const struct im_population *pop,
                                 const struct im_summary_config *sc, struct im_reasoning *r) IM_WUR;

#endif
