/* results.json's metrics.agents and its terminal lines: renders
 * analyze/agents.h's figures (docs/agents.md "Agent figures"). */
#ifndef IM_REPORT_AGENTS_JSON_H
#define IM_REPORT_AGENTS_JSON_H

#include <stdio.h>

#include <jansson.h>

#include "analyze/agents.h"
#include "analyze/cancel.h"
#include "analyze/models.h"

/* {"turns", "tool_calls", "chains", "chains_complete", "chains_failed",
 *  "chains_unfinished", "per_hop": [{"hop", "n", "ttft_ms", "tool_call_ms",
 *  "args_tokens"}...], "final_answer": {"n", "ttft_ms", "e2el_ms"},
 *  "per_chain": {"e2e_ms", "model_ms", "tool_ms", "model_share", "hops"}}
 * (distributions null when empty). NULL when out of memory. */
json_t *im_agents_json(const struct im_agent_figs *f, const struct im_summary_config *sc);
/* {"requests", "cancelled", "share", "before_first_token", "after_ms",
 *  "tokens"}: analyze/cancel.h. NULL when out of memory. */
json_t *im_cancel_json(const struct im_cancel_figs *c, const struct im_summary_config *sc);
/* One line for people (nothing without cancellations). */
void im_cancel_text(FILE *o, const struct im_cancel_figs *c);
/* {"<model>": {"n", "ttft_ms", "tpot_ms", "itl_ms"}, ...}: analyze/models.h.
 * NULL when out of memory. */
json_t *im_models_json(const struct im_models *m, const struct im_summary_config *sc);
/* A table for people (nothing without a model mix). */
void im_models_text(FILE *o, const struct im_models *m);
/* A few lines for people (nothing without agent turns). */
void im_agents_text(FILE *o, const struct im_agent_figs *f);

#endif
