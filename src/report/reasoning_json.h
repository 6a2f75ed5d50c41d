/* results.json's metrics.reasoning and its terminal lines: renders
 * analyze/reasoning.h's figures (docs/agents.md "Reasoning figures"). */
#ifndef IM_REPORT_REASONING_JSON_H
#define IM_REPORT_REASONING_JSON_H

#include <stdio.h>

#include <jansson.h>

#include "analyze/reasoning.h"

/* {"requests", "completed", "tokens_from_usage", "no_answer",
 *  "all": GROUP, "by_context": [{"bucket", "lo", "hi", GROUP...}]} with
 * GROUP = {"n", "ttft_ms", "ttfa_ms", "reasoning_tokens", "answer_tokens",
 * "tpot_reasoning_ms", "tpot_answer_ms", "reasoning_share"} (each a
 * distribution, null when empty). NULL when out of memory. */
json_t *im_reasoning_json(const struct im_reasoning *r, const struct im_summary_config *sc);
/* A few lines for people (nothing when no request reasoned). */
void im_reasoning_text(FILE *f, const struct im_reasoning *r);

#endif
