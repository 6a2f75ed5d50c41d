/* Options of `infermeter serve` for agents (docs/agents.md): the tool-call
 * policy and structured output's planted faults (serve/toolcalls.h). Kept
 * apart from serve.c's table; serve.c splices the entries in. */
#ifndef IM_CLI_SERVE_AGENTS_H
#define IM_CLI_SERVE_AGENTS_H

#include <getopt.h>
#include <stdio.h>

#include "serve/server.h"

enum {
  O_SERVE_AGENT_FIRST = 0x1100,
  O_TOOL_CALL_PROB = O_SERVE_AGENT_FIRST,
  O_TOOL_MAX_HOPS,
  O_TOOL_ARGS_LEN,
  O_INVALID_JSON,
  O_LORA_MODULES,
  O_MAX_LORAS,
  O_LORA_STEP_COST,
  O_LORA_SWAP_COST,
  O_NATIVE_WINDOW,
  O_ROPE_SLOWDOWN,
  O_SERVE_AGENT_LAST
};

/* clang-format off */
#define IM_SERVE_AGENT_OPTIONS                                   \
  {"tool-call-prob", required_argument, 0, O_TOOL_CALL_PROB},   \
  {"tool-max-hops", required_argument, 0, O_TOOL_MAX_HOPS},     \
  {"tool-args-len", required_argument, 0, O_TOOL_ARGS_LEN},     \
  {"invalid-json-rate", required_argument, 0, O_INVALID_JSON}, \
  {"lora-modules", required_argument, 0, O_LORA_MODULES},       \
  {"max-loras", required_argument, 0, O_MAX_LORAS},             \
  {"lora-step-cost", required_argument, 0, O_LORA_STEP_COST},   \
  {"lora-swap-cost", required_argument, 0, O_LORA_SWAP_COST},   \
  {"native-window", required_argument, 0, O_NATIVE_WINDOW},     \
  {"rope-slowdown", required_argument, 0, O_ROPE_SLOWDOWN}
/* clang-format on */

/* Applies one option (code in [O_SERVE_AGENT_FIRST, O_SERVE_AGENT_LAST))
 * to cfg; 0, or -1 with a message on stderr naming the flag. arg must stay
 * valid and may be modified (--lora-modules splits it in place: an argv
 * string, which C lets a program modify). */
int im__serve_agent_opt(struct im_server_config *cfg, int code, char *arg);
/* The help section. */
void im__serve_agent_help(FILE *o);

#endif
