/* Options of `infermeter run` for reasoning models and agents
 * (docs/agents.md): reasoning controls, agent chains of tool calls,
 * cancellation, structured output. Kept apart from run_opts.c's table so
 * each concern stays in its own file; run_opts.c splices the entries in. */
#ifndef IM_CLI_RUN_AGENTS_H
#define IM_CLI_RUN_AGENTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "run/run.h"


enum {
  O_AGENT_FIRST = 0x1000,
  O_REASONING_EFFORT = O_AGENT_FIRST,
  O_THINKING,
  O_AGENT_HOPS,
  O_TOOL_LATENCY,
  O_TOOL_RESULT_LEN,
  O_SERVE_PROFILE,
  O_SERVE_TIME_SCALE,
  O_CANCEL_AFTER,
  O_RESPONSE_FORMAT,
  O_MODEL_MIX,
  O_AGENT_LAST
};

/* clang-format off */
#define IM_RUN_AGENT_OPTIONS                                       \
  {"reasoning-effort", required_argument, 0, O_REASONING_EFFORT}, \
  {"thinking", required_argument, 0, O_THINKING},                 \
  {"agent-hops", required_argument, 0, O_AGENT_HOPS},             \
  {"tool-latency", required_argument, 0, O_TOOL_LATENCY},         \
  {"tool-result-len", required_argument, 0, O_TOOL_RESULT_LEN},   \
  {"serve-profile", required_argument, 0, O_SERVE_PROFILE},       \
  {"serve-time-scale", required_argument, 0, O_SERVE_TIME_SCALE}, \
  {"cancel-after", required_argument, 0, O_CANCEL_AFTER},         \
  {"response-format", required_argument, 0, O_RESPONSE_FORMAT},   \
  {"model-mix", required_argument, 0, O_MODEL_MIX}
/* clang-format on */

/* Defaults (tool latency 200 ms, tool results 512 tokens). */

/* Frees what the options allocated (the response format's JSON). */
void im__run_agent_cleanup(struct im_run_agent_opts *a);
/* Applies one option (code in [O_AGENT_FIRST, O_AGENT_LAST)); 0, or -1
 * with a message on stderr naming the flag. */
int im__run_agent_opt(struct im_run_agent_opts *a, int code, const char *arg);
/* NULL, or why the agent options do not fit the run (sessions: --sessions
 * or --session-rate given; chat: the chat backend). */

/* Whether the options want answers that end by themselves, so the built-in
 * server's default --ignore-eos is not applied: structured output (its
 * JSON must close) and reasoning controls (the split between reasoning and
 * answer would be cut at max_tokens). */

struct im_server_config;
/* What the options ask of the built-in server (its profile, ...). */

/* The help section. */
void im__run_agent_help(FILE *o);

#endif
