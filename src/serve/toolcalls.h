/* What the simulated server answers to agents (docs/agents.md "Tools and
 * structured output in serve"): tool calls when tools are offered, JSON when
 * a response_format asks for it.
 *
 * Tool calls: a chat request offering tools (and not tool_choice "none")
 * whose conversation holds fewer than max_hops tool results answers, with
 * probability call_prob, with a call of its first tool: arguments
 * {"query": "<generated text>"} of about args_tokens tokens (uniform in
 * [0.5, 1.5] x args_tokens, at least 4), streamed as delta.tool_calls
 * pieces (proto/oai_encode.h) ending with finish_reason "tool_calls".
 * Otherwise it answers in text. Reasoning, when the profile reasons, comes
 * first either way.
 *
 * Structured output: response_format json_object gives {"answer": "<text>"};
 * json_schema gives an object with the schema's properties in order: the
 * first string property holds the text, the others a value of their type
 * (number 1, integer 1, boolean true, array [], object {}, string "", null).
 * With probability invalid_json (a planted fault) the closing of the object
 * is left out, so the answer is not valid JSON. An answer cut by max_tokens
 * (finish_reason length) is not closed either, as a real server's is not.
 *
 * Not thread-safe; the server's loop thread only. */
#ifndef IM_SERVE_TOOLCALLS_H
#define IM_SERVE_TOOLCALLS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/rng.h"
#include "proto/oai_api.h"
#include "proto/oai_encode.h"

struct im_agent_policy {
  double call_prob;     /* default 1 */
  uint32_t max_hops;    /* default 8 */
  uint32_t args_tokens; /* default 32 */
  double invalid_json;  /* default 0 */
};

void im_agent_policy_default(struct im_agent_policy *p);

/* The shape of one answer. */
struct im_agent_answer {
  bool tool, json; /* a tool call / structured output; neither: plain */
  bool started;    /* the first answer piece went out */
  bool leave_open; /* planted invalid JSON */
  char call_id[48];
  char name[64];
  char *prefix, *suffix; /* JSON around the escaped text (owned) */
  struct im_buf piece;   /* work buffer */
};

/* Decides the answer to request r (rng draws the policy). *target_tokens:
 * the answer's length when it is a tool call (0: the engine draws it).
 * IM_NOMEM. */
enum im_err im_agent_plan(const struct im_agent_policy *pol, const struct im_api_req *r,
                          struct im_rng *rng, struct im_agent_answer *a,
                          uint32_t *target_tokens) IM_WUR;
/* Frees what plan allocated; NULL and never-planned (zeroed) are fine. */
void im_agent_answer_cleanup(struct im_agent_answer *a);
/* Whether answer pieces go through im_agent_chunk. */
static inline bool im_agent_active(const struct im_agent_answer *a) {
  return a->tool || a->json;
}
/* One SSE chunk of answer text (not reasoning) of an active answer into b:
 * its JSON-escaped form, with the prefix before the first piece and the
 * suffix after the last one (finish "stop"; "tool_calls" replaces "stop"
 * for a tool call). */
enum im_err im_agent_chunk(struct im_buf *b, const struct im_oai_ctx *c, struct im_agent_answer *a,
                           const char *text, size_t len, const char *finish,
                           const struct im_sim_usage *usage) IM_WUR;

#endif
