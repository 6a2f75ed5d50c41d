/* Agent options of `infermeter serve`: see cli/serve_agents.h. */
#include "cli/serve_agents.h"

#include "cli/args.h"

int im__serve_agent_opt(struct im_server_config *cfg, int code, char *arg) {
  struct im_agent_policy *p = &cfg->agent;
  char err[160];
  int64_t ns;
  switch (code) {
  case O_LORA_MODULES:
    if (im_lora_config_parse(&cfg->lora, arg, err, sizeof err)) {
      fprintf(stderr, "infermeter serve: --lora-modules: %s\n", err);
      return -1;
    }
    return 0;
  case O_NATIVE_WINDOW:
    return im_arg_u32("--native-window", arg, 1, UINT32_MAX - 1, &cfg->engine.native_window);
  case O_ROPE_SLOWDOWN:
    return im_arg_double("--rope-slowdown", arg, 1, 100, &cfg->engine.rope_slowdown);
  case O_MAX_LORAS:
    return im_arg_u32("--max-loras", arg, 1, 64, &cfg->lora.max_loras);
  case O_LORA_STEP_COST:
    if (im_arg_duration("--lora-step-cost", arg, &ns))
      return -1;
    cfg->lora.step_cost_s = (double)ns / 1e9;
    return 0;
  case O_LORA_SWAP_COST:
    if (im_arg_duration("--lora-swap-cost", arg, &ns))
      return -1;
    cfg->lora.swap_s = (double)ns / 1e9;
    return 0;
  case O_TOOL_CALL_PROB:
    return im_arg_double("--tool-call-prob", arg, 0, 1, &p->call_prob);
  case O_TOOL_MAX_HOPS:
    return im_arg_u32("--tool-max-hops", arg, 0, 1000, &p->max_hops);
  case O_TOOL_ARGS_LEN:
    return im_arg_u32("--tool-args-len", arg, 1, 100000, &p->args_tokens);
  case O_INVALID_JSON:
    return im_arg_double("--invalid-json-rate", arg, 0, 1, &p->invalid_json);
  default:
    return -1;
  }
}

void im__serve_agent_help(FILE *o) {
  /* clang-format off */
  fprintf(o,
"Agents (docs/agents.md): a chat request offering tools is answered with a\n"
"streamed tool call (finish_reason tool_calls) while the conversation holds\n"
"fewer tool results than --tool-max-hops and tool_choice is not \"none\":\n"
"  --tool-call-prob P           probability of a tool call at each hop (default 1)\n"
"  --tool-max-hops N            answer in text after N tool results (default 8)\n"
"  --tool-args-len N            mean tokens of a call's arguments (default 32)\n"
"  --invalid-json-rate P        share of response_format answers left as invalid\n"
"                               JSON (a planted fault; default 0)\n"
"LoRA adapters (vLLM's flags; requested by name as the model):\n"
"  --lora-modules NAME=PATH[,NAME=PATH...]  adapters (repeatable; PATH is a label)\n"
"  --max-loras N                distinct adapters in a batch and GPU slots (default 1);\n"
"                               a request whose adapter would exceed it waits\n"
"  --lora-step-cost DUR         step time per distinct adapter in a batch (default 0.5ms)\n"
"  --lora-swap-cost DUR         step time to load an adapter into a slot (default 25ms)\n"
"Contexts past the trained window (serve/rope.h):\n"
"  --native-window N            trained context window (default: the profile's;\n"
"                               DeepSeek-V3/R1 4096, YaRN x40)\n"
"  --rope-slowdown F            attention past it is F times slower (default 1.5;\n"
"                               1 turns it off)\n"
"\n");
  /* clang-format on */
}
