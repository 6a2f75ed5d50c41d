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

struct run_agent_opts {
  const char *reasoning_effort; /* --reasoning-effort (NULL: not sent) */
  int thinking;                 /* --thinking on|off: 1 / -1 (0: not sent) */
  uint32_t agent_hops;          /* --agent-hops N (0: no agent chains) */
  int64_t tool_latency_ns;      /* --tool-latency DUR (default 200 ms) */
  uint32_t tool_result_len;     /* --tool-result-len N tokens (default 512) */
  const char *serve_profile;    /* --serve-profile: the built-in server's (NULL: default) */
  int64_t cancel_after_ns;      /* --cancel-after DUR[:SHARE] */
  uint32_t cancel_after_tokens; /* --cancel-after Nt[:SHARE] */
  double cancel_share;          /* default 1 */
  /* --response-format json_object | json_schema:FILE: the request field
   * (run_json, owned) and the schema the answers are checked against
   * (compact JSON, owned; NULL for json_object). */
  bool response_format;
  char *run_json;
  char *json_schema;
  /* --model-mix name=w,...: names (NULL for "base", the run's model) and
   * cumulative weights (the last 1); mix_buf owns the names. */
  const char *mix_names[16];
  double mix_cum[16];
  size_t n_mix;
  char *mix_buf;
};

enum {
  O_AGENT_FIRST = 0x1000,
  O_REASONING_EFFORT = O_AGENT_FIRST,
  O_THINKING,
  O_AGENT_HOPS,
  O_TOOL_LATENCY,
  O_TOOL_RESULT_LEN,
  O_SERVE_PROFILE,
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
  {"cancel-after", required_argument, 0, O_CANCEL_AFTER},         \
  {"response-format", required_argument, 0, O_RESPONSE_FORMAT},   \
  {"model-mix", required_argument, 0, O_MODEL_MIX}
/* clang-format on */

/* Defaults (tool latency 200 ms, tool results 512 tokens). */
void im__run_agent_defaults(struct run_agent_opts *a);
/* Frees what the options allocated (the response format's JSON). */
void im__run_agent_cleanup(struct run_agent_opts *a);
/* Applies one option (code in [O_AGENT_FIRST, O_AGENT_LAST)); 0, or -1
 * with a message on stderr naming the flag. */
int im__run_agent_opt(struct run_agent_opts *a, int code, const char *arg);
/* NULL, or why the agent options do not fit the run (sessions: --sessions
 * or --session-rate given; chat: the chat backend). */
const char *im__run_agent_check(const struct run_agent_opts *a, bool sessions, bool chat);
/* Whether the options want answers that end by themselves, so the built-in
 * server's default --ignore-eos is not applied: structured output (its
 * JSON must close) and reasoning controls (the split between reasoning and
 * answer would be cut at max_tokens). */
bool im__run_agent_eos_free(const struct run_agent_opts *a);
struct im_server_config;
/* What the options ask of the built-in server (its profile, ...). */
void im__run_agent_serve(const struct run_agent_opts *a, struct im_server_config *cfg);
/* The help section. */
void im__run_agent_help(FILE *o);

#endif
