/* Figures of agent chains (docs/agents.md "Agent figures"): per hop and
 * per chain, from the records of requests that offered tools.
 *
 * Population (analyze/population.h): logical requests whose final attempt
 * offered tools (record key `tools`), grouped into chains by session and
 * ordered by turn; warm-up turns take part in no figure, and a chain
 * holding one is left out of the chain figures. A turn is a tool-call hop when it
 * completed with finish_reason "tool_calls"; hop k is the k-th turn of its
 * chain (k from 1). A turn that completed otherwise is the chain's final
 * answer. Per hop (completed hops only; hops past IM_AGENT_MAX_HOPS are
 * pooled into the last row):
 *   ttft_ms            t_first - t_start;
 *   tool_call_ms       t_last - t_start: the time to the complete tool call;
 *   args_tokens        output tokens - reasoning tokens: the arguments;
 * per final answer: ttft_ms, e2el_ms. Per chain whose turns all completed
 * and that ended with a final answer (`complete`):
 *   e2e_ms             the last turn's t_last - the first turn's t_start;
 *   model_ms           the sum of its turns' t_last - t_start;
 *   tool_ms            e2e - model: time in tools and between turns;
 *   model_share        model / e2e;
 *   hops               its tool-call turns.
 * A chain with a failed turn counts in chains_failed; one whose last turn
 * was still a tool call (its hops ran out or the run ended) in
 * chains_unfinished. Pure: no I/O, no global state. */
#ifndef IM_ANALYZE_AGENTS_H
#define IM_ANALYZE_AGENTS_H

#include <stdint.h>

#include "analyze/breakdown.h"
#include "analyze/population.h"

#define IM_AGENT_MAX_HOPS 16

struct im_agent_hop {
  uint64_t n;
  struct im_bd_dist ttft, tool_call, args_tokens;
};

struct im_agent_figs {
  uint64_t turns;      /* logical requests that offered tools */
  uint64_t tool_calls; /* completed turns ending in tool_calls */
  uint64_t chains, chains_complete, chains_failed, chains_unfinished;
  uint32_t max_hop; /* rows of hop[] in use */
  struct im_agent_hop hop[IM_AGENT_MAX_HOPS];
  struct {
    uint64_t n;
    struct im_bd_dist ttft, e2el;
  } final;
  struct im_bd_dist e2e, model, tool, model_share, hops; /* complete chains */
};

/* Fills f. IM_NOMEM (f then undefined). */
enum im_err im_agents_compute(const struct im_population *pop, const struct im_summary_config *sc,
                              struct im_agent_figs *f) IM_WUR;

#endif
