/* Options of `infermeter serve` for agents (docs/agents.md): the tool-call
 * policy and structured output's planted faults (serve/agent.h). Kept
 * apart from serve.c's table; serve.c splices the entries in. */
#ifndef IM_CLI_SERVE_AGENTS_H
#define IM_CLI_SERVE_AGENTS_H

#include <getopt.h>
#include <stdio.h>

#include "serve/agent.h"

enum {
  O_SERVE_AGENT_FIRST = 0x1100,
  O_TOOL_CALL_PROB = O_SERVE_AGENT_FIRST,
  O_TOOL_MAX_HOPS,
  O_TOOL_ARGS_LEN,
  O_INVALID_JSON,
  O_SERVE_AGENT_LAST
};

/* clang-format off */
#define IM_SERVE_AGENT_OPTIONS                                   \
  {"tool-call-prob", required_argument, 0, O_TOOL_CALL_PROB},   \
  {"tool-max-hops", required_argument, 0, O_TOOL_MAX_HOPS},     \
  {"tool-args-len", required_argument, 0, O_TOOL_ARGS_LEN},     \
  {"invalid-json-rate", required_argument, 0, O_INVALID_JSON}
/* clang-format on */

/* Applies one option (code in [O_SERVE_AGENT_FIRST, O_SERVE_AGENT_LAST));
 * 0, or -1 with a message on stderr naming the flag. */
int im__serve_agent_opt(struct im_agent_policy *p, int code, const char *arg);
/* The help section. */
void im__serve_agent_help(FILE *o);

#endif
