/* Agent chains (--agent-hops N, docs/agents.md "Agent chains"): each
 * session is a chain of chat turns where the model is offered tools.
 *
 * Turn 0 sends one user message of about --input-len tokens (the run's
 * prompt text) with "tools" (two functions, `search` and `fetch`, OpenAI
 * schema). While the model answers with tool calls (finish_reason
 * "tool_calls"), the next turn appends the assistant message with its
 * tool_calls (id, name and arguments as streamed) and, per call, a "tool"
 * message of --tool-result-len tokens answering it; it is sent
 * --tool-latency after the answer ended (the tool's run time). Turn N (the
 * (N+1)-th) adds "tool_choice": "none", so a chain has at most N tool-call
 * hops and ends with a final answer; it ends earlier when the model
 * answers in text. Requests do not send ignore_eos (the model must be free
 * to stop). Chat backend only. Deterministic in (seed, session). */
#ifndef IM_WORKLOAD_AGENT_H
#define IM_WORKLOAD_AGENT_H

#include <stdint.h>

#include "workload/spec.h"
#include "workload/synth.h"

struct im_agents {
  const struct im_synth *synth; /* salt, seed, lengths, sampling */
  uint32_t hops;                /* tool-call hops at most (>= 1) */
  uint32_t tool_result_len;     /* tokens of each tool result */
  int64_t tool_latency_ns;
};

/* The loader's session hooks for a (ctx = a): turns = hops + 1. */
void im_agents_ops(const struct im_agents *a, struct im_session_ops *ops);

/* The tool calls of an answer as the loader captured it (workload/spec.h):
 * parsed from the NUL-separated tool_calls deltas, merged by index. At most
 * IM_AGENT_MAX_CALLS calls; returns their number (0: none or unreadable).
 * Strings are malloc'ed into calls; free with im_agent_calls_free. */
#define IM_AGENT_MAX_CALLS 8
struct im_agent_call {
  char *id, *name, *arguments;
};
size_t im_agent_parse_calls(const char *answer, size_t len, struct im_agent_call *calls);
void im_agent_calls_free(struct im_agent_call *calls, size_t n);

#endif
