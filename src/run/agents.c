/* The checks and policies of the reasoning and agent options
 * (docs/agents.md); their parsing is the command line's. */
#include <string.h>

#include "run/run_int.h"
#include "serve/server.h"

void im__run_agent_defaults(struct im_run_agent_opts *a) {
  memset(a, 0, sizeof *a);
  a->tool_latency_ns = 200000000;
  a->tool_result_len = 512;
  a->cancel_share = 1.0;
}

bool im__run_agent_eos_free(const struct im_run_agent_opts *a) {
  return a->response_format || a->reasoning_effort || a->thinking;
}

const char *im__run_agent_check(const struct im_run_agent_opts *a, bool sessions, bool chat) {
  if (a->agent_hops && !sessions)
    return "--agent-hops needs --sessions N or --session-rate R (each session is a chain)";
  if (a->agent_hops && !chat)
    return "--agent-hops needs the chat backend (tools and tool messages)";
  return NULL;
}

void im__run_agent_serve(const struct im_run_agent_opts *a, struct im_server_config *cfg) {
  if (a->serve_profile)
    cfg->engine.profile = im_profile_find(a->serve_profile);
  if (a->serve_time_scale > 0)
    cfg->engine.time_scale = a->serve_time_scale;
}
