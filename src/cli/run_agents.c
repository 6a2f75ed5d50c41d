/* Reasoning and agent options of `infermeter run`: see cli/run_agents.h. */
#include "cli/run_agents.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "model/perf.h"
#include "proto/oai_api_ext.h"
#include "serve/server.h"


void im__run_agent_cleanup(struct im_run_agent_opts *a) {
  free(a->run_json);
  free(a->json_schema);
  free(a->mix_buf);
  a->mix_buf = NULL;
  a->n_mix = 0;
  a->run_json = a->json_schema = NULL;
  a->response_format = false;
}

/* json_object, or json_schema:FILE (also json_schema=FILE): OpenAI's
 * response_format, which vLLM's structured outputs honour. */
static int parse_format(struct im_run_agent_opts *a, const char *arg) {
  im__run_agent_cleanup(a);
  json_t *rf = NULL;
  if (!strcmp(arg, "json_object")) {
    rf = json_pack("{s:{s:s}}", "response_format", "type", "json_object");
  } else if (!strncmp(arg, "json_schema", 11) && (arg[11] == ':' || arg[11] == '=') && arg[12]) {
    json_error_t e;
    json_t *schema = json_load_file(arg + 12, 0, &e);
    if (!schema || !json_is_object(schema)) {
      fprintf(stderr, "infermeter: --response-format: %s: %s\n", arg + 12,
              schema ? "the schema must be a JSON object" : e.text);
      json_decref(schema);
      return -1;
    }
    a->json_schema = json_dumps(schema, JSON_COMPACT);
    rf = json_pack("{s:{s:s, s:{s:s, s:o}}}", "response_format", "type", "json_schema",
                   "json_schema", "name", "infermeter", "schema", schema);
  } else {
    fprintf(stderr,
            "infermeter: --response-format: expected json_object or json_schema:FILE, "
            "got '%s'\n",
            arg);
    return -1;
  }
  a->run_json = rf ? json_dumps(rf, JSON_COMPACT) : NULL;
  json_decref(rf);
  if (!a->run_json) {
    fprintf(stderr, "infermeter: --response-format: out of memory\n");
    return -1;
  }
  a->response_format = true;
  return 0;
}

/* name=w[,name=w...]: weights > 0, normalised; "base" is the run's model. */
static int parse_mix(struct im_run_agent_opts *a, const char *arg) {
  free(a->mix_buf);
  a->n_mix = 0;
  if (!(a->mix_buf = strdup(arg)))
    return -1;
  double w[16], sum = 0;
  for (char *save = NULL, *tok = strtok_r(a->mix_buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq || eq == tok || a->n_mix == 16 || strlen(tok) > 63 ||
        im_arg_double("--model-mix", eq + 1, 1e-9, 1e9, &w[a->n_mix]))
      goto bad;
    *eq = '\0';
    a->mix_names[a->n_mix] = strcmp(tok, "base") ? tok : NULL;
    sum += w[a->n_mix++];
  }
  if (!a->n_mix)
    goto bad;
  double cum = 0;
  for (size_t i = 0; i < a->n_mix; i++)
    a->mix_cum[i] = (cum += w[i] / sum);
  a->mix_cum[a->n_mix - 1] = 1.0;
  return 0;
bad:
  fprintf(stderr,
          "infermeter: --model-mix: expected name=weight,... (at most 16, names up to "
          "63 bytes, 'base' for the run's model), got '%s'\n",
          arg);
  a->n_mix = 0;
  return -1;
}

/* DUR[:SHARE] or N(t|tok|tokens)[:SHARE]. */
static int parse_cancel(struct im_run_agent_opts *a, const char *arg) {
  char what[64];
  const char *colon = strchr(arg, ':');
  size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
  double share = 1.0;
  if (n == 0 || n >= sizeof what ||
      (colon && im_arg_double("--cancel-after (share)", colon + 1, 0, 1, &share)))
    goto bad;
  memcpy(what, arg, n);
  what[n] = '\0';
  char *end = NULL;
  unsigned long long tokens = strtoull(what, &end, 10);
  a->cancel_after_ns = 0;
  a->cancel_after_tokens = 0;
  if (end != what && (!strcmp(end, "t") || !strcmp(end, "tok") || !strcmp(end, "tokens"))) {
    if (tokens < 1 || tokens > 10000000)
      goto bad;
    a->cancel_after_tokens = (uint32_t)tokens;
  } else if (im_arg_duration("--cancel-after", what, &a->cancel_after_ns) ||
             a->cancel_after_ns <= 0) {
    goto bad;
  }
  a->cancel_share = share;
  return 0;
bad:
  fprintf(stderr,
          "infermeter: --cancel-after: expected DUR or N tokens with an optional share, "
          "e.g. 2s, 2s:0.3, 50t:0.25 (got '%s')\n",
          arg);
  return -1;
}

int im__run_agent_opt(struct im_run_agent_opts *a, int code, const char *arg) {
  switch (code) {
  case O_REASONING_EFFORT:
    if (im_effort_parse(arg) < 0) {
      fprintf(stderr,
              "infermeter: --reasoning-effort: expected none, minimal, low, medium, "
              "high or max, got '%s'\n",
              arg);
      return -1;
    }
    a->reasoning_effort = arg;
    return 0;
  case O_THINKING:
    if (strcmp(arg, "on") && strcmp(arg, "off")) {
      fprintf(stderr, "infermeter: --thinking: expected on or off, got '%s'\n", arg);
      return -1;
    }
    a->thinking = !strcmp(arg, "on") ? 1 : -1;
    return 0;
  case O_AGENT_HOPS:
    return im_arg_u32("--agent-hops", arg, 1, 64, &a->agent_hops);
  case O_TOOL_LATENCY:
    return im_arg_duration("--tool-latency", arg, &a->tool_latency_ns);
  case O_TOOL_RESULT_LEN:
    return im_arg_u32("--tool-result-len", arg, 1, 1000000, &a->tool_result_len);
  case O_CANCEL_AFTER:
    return parse_cancel(a, arg);
  case O_RESPONSE_FORMAT:
    return parse_format(a, arg);
  case O_MODEL_MIX:
    return parse_mix(a, arg);
  case O_SERVE_PROFILE:
    if (!im_profile_find(arg)) {
      fprintf(stderr,
              "infermeter: --serve-profile: no profile '%s' (infermeter serve --help "
              "lists them)\n",
              arg);
      return -1;
    }
    a->serve_profile = arg;
    return 0;
  case O_SERVE_TIME_SCALE:
    return im_arg_double("--serve-time-scale", arg, 1e-3, 1e3, &a->serve_time_scale);
  default:
    return -1;
  }
}




void im__run_agent_help(FILE *o) {
  /* clang-format off */
  fprintf(o,
          "Reasoning and agents (docs/agents.md):\n"
          "  --reasoning-effort E      send reasoning_effort E (none, minimal, low, medium, high,\n"
          "                            max; DeepSeek API and vLLM), recorded per request\n"
          "  --thinking on|off         send DeepSeek's thinking {type} and vLLM's\n"
          "                            chat_template_kwargs.thinking, recorded per request\n"
          "  --agent-hops N            sessions are agent chains: tools are offered, each tool\n"
          "                            call is answered with a tool result and the next turn is\n"
          "                            sent, up to N tool-call hops or a final answer\n"
          "  --tool-latency DUR        time the simulated tool takes (default 200ms)\n"
          "  --tool-result-len N       tokens of each tool result message (default 512)\n"
          "  --cancel-after DUR|Nt[:SHARE]  abandon SHARE of the requests (default all) DUR\n"
"                            after they were sent, or after N tokens (e.g. 50t),\n"
"                            closing the connection; kind cancelled, out of the\n"
"                            latency figures, share in metrics.cancelled\n"
"  --response-format json_object | json_schema:FILE\n"
"                            ask for structured output (OpenAI response_format) and\n"
"                            check each answer parses (and fits the schema's types,\n"
"                            required keys, enums); a failure is the error class\n"
"                            invalid_json\n"
"  --model-mix base=0.5,lora-a=0.3,lora-b=0.2\n"
"                            each request (each session) asks for one of these\n"
"                            served model names by weight ('base': --model);\n"
"                            recorded per request, figures per model\n"
"  --serve-profile NAME      profile of the built-in server (without --url), e.g.\n"
          "                            deepseek-r1-8xh200 (default: infermeter serve's)\n"
          "  --serve-time-scale K      the built-in server runs K times faster than real time\n"
          "                            (serve --time-scale; recorded in manifest.server)\n"
          "\n");
  /* clang-format on */
}
