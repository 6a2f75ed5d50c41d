/* infermeter serve: the built-in simulated LLM server. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/run_cli.h"
#include "cli/serve_agents.h"
#include "core/log.h"
#include "serve/server.h"

#define MAX_FAULTS 32

static void usage(FILE *out) {
  fprintf(out,
"usage: infermeter serve [OPTIONS]\n"
"\n"
"An OpenAI-compatible server in front of a simulated engine that behaves like\n"
"vLLM serving a DeepSeek model on GPUs, in real time (see docs/serve.md).\n"
"Endpoints: POST /v1/completions, /v1/chat/completions, /tokenize;\n"
"GET /v1/models, /health, /version, /metrics.\n"
"\n"
"Server:\n"
"  --host ADDR                  numeric address to listen on (default 127.0.0.1)\n"
"  --port N                     port; 0 picks a free one (default 8000). The first\n"
"                               line on stdout is 'listening on http://HOST:PORT'\n"
"  --model NAME                 served model id (default: the profile's, e.g. deepseek-v3)\n"
"  --reasoning-field NAME       reasoning_content (default, DeepSeek API and vLLM < 0.10)\n"
"                               or reasoning (newer vLLM)\n"
"  --dialect NAME               vllm (default) or deepseek-api: usage with\n"
"                               prompt_cache_hit_tokens/prompt_cache_miss_tokens, and a\n"
"                               503 for capacity (--fault 503) answered as a stream that\n"
"                               ends with finish_reason insufficient_system_resource\n"
"  --engine NAME                imitate that engine's identity: vllm, sglang, llamacpp,\n"
"                               tgi or trtllm (metric names, declaration endpoints,\n"
"                               error wordings, connection behaviour; docs/serve.md);\n"
"                               default infermeter (vLLM's names + infermeter_sim_*)\n"
"  --declare none               with --engine: declare no setting (no /version,\n"
"                               /get_server_info, /props, /slots, /info, no info gauge)\n"
"  --leak-cancelled             a request whose client disconnects stays counted as\n"
"                               running in the gauges and /slots (a fault: not freed)\n"
"  --max-body SIZE              largest request body (default 4MiB); larger gets 413\n"
"  --max-header SIZE            largest request head (default 16KiB); larger gets 431\n"
"  --idle-timeout DUR           close idle keep-alive connections after DUR (default 60s)\n"
"  --keepalive-interval DUR     ': keep-alive' comment to queued streams every DUR of\n"
"                               wall-clock time, whatever --time-scale (default 2s)\n"
"  --max-connections N          connections beyond N are closed at once (default 10000)\n"
"  --unix-socket PATH           listen on this unix socket instead of --host/--port (the\n"
"                               first line is then 'listening on unix:PATH')\n"
"  --api-key-file FILE          require 'Authorization: Bearer KEY' (KEY: the file's first\n"
"                               line) on /v1/ paths, else 401, as vLLM's --api-key\n"
"  --io MODE                    how each engine step's output is sent: uring (one\n"
"                               io_uring submission per step), write (one write() per\n"
"                               connection per step) or auto (default: uring when the\n"
"                               kernel allows it, else write); the second stdout line\n"
"                               says which\n"
"\n");
  fprintf(out,
"Engine (vLLM's names where they exist):\n"
"  --profile NAME               model + hardware profile (default deepseek-v3-8xh200);\n"
"                               --list-profiles shows them\n"
"  --max-num-seqs N             running sequences at most (default 256); more wait\n"
"  --max-num-batched-tokens N   token budget per engine step (default 8192)\n"
"  --block-size N               KV block size in tokens (default 64 for MLA, else 16)\n"
"  --kv-blocks N                KV cache size in blocks (default: from the profile)\n"
"  --gpu-memory-utilization F   fraction of GPU memory the engine may use (default 0.9)\n"
"  --max-model-len N            context length limit (default: the profile's)\n"
"  --enable-prefix-caching      hash-chained prefix caching (default on)\n"
"  --no-enable-prefix-caching   turn it off\n"
"  --mtp K                      multi-token prediction: K draft tokens per step (default 0)\n"
"  --mtp-accept P               acceptance probability of each draft (default 0.8)\n"
"  --no-moe-routing             skip the MoE routing simulation (experts = batch-1 bound)\n"
"  --seed N                     seed of every random choice (default 0)\n"
"  --time-scale K               run K times faster than real time (default 1)\n"
"\n"
"Logs:\n"
"  --tokenizer FILE             count prompts with this Hugging Face tokenizer.json\n"
"                               (default: the built-in tokenizer)\n"
"  --truth-log FILE             ground truth, JSONL: one record per chunk written to the\n"
"                               socket (CLOCK_MONOTONIC ns) and one per request\n"
"  --routing-log FILE           MoE routing, JSONL: per-layer expert counts of every step\n"
"  --routing-detail N           also log the per-layer top-k ids of the first N sequences\n"
"  --moe-zipf S                 expert popularity exponent: weight (rank+1)^-S (default 0,\n"
"                               uniform: balanced routing; 1.5 = heavily skewed)\n"
"  --moe-hot N:F                the N most popular experts of each layer weigh F times more\n"
"  --moe-drift P                per-step probability that a layer's popularity ranks drift\n"
"                               (two neighbouring ranks swap; default 0.01)\n"
"  --log-level LEVEL            error, warn (default), info, debug\n"
"  --quiet                      no 'listening on' line\n"
"\n"
"Faults (repeatable; see docs/serve.md):\n"
"  --fault KIND[:PROB][@k=v,...]  e.g. 429:0.2  reset:0.05@after_tokens=10\n"
"                               stall:0.01@token=50,ms=2000  hiccup@every=30s,ms=500\n"
"                               connection-close  kv-shrink@at=10s,fraction=0.5\n"
"                               kinds: 429 503 500 400 reset fin error-event stall slow\n"
"                               hiccup connection-close kv-shrink; a request header\n"
"                               'X-Infermeter-Fault: SPEC' applies one to that request\n"
"  --rate-limit R[:BURST]       token bucket: more than R requests/s get 429\n"
"\n"
"  --list-profiles              print the profiles and exit\n"
"  -h, --help                   this help\n");
  fprintf(out, "\n");
  im__serve_agent_help(out);
}

static struct im_server *running_server;

static void on_signal(int sig) {
  (void)sig;
  if (running_server)
    im_server_stop(running_server);
}

static void list_profiles(void) {
  for (size_t i = 0; i < im_profile_count(); i++) {
    const struct im_profile *p = im_profile_at(i);
    printf("%-28s model %-16s %s\n", p->name, p->model, p->description);
  }
}

static FILE *open_log(const char *flag, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "infermeter: %s: cannot write %s: %s\n", flag, path, strerror(errno));
    return NULL;
  }
  setvbuf(f, NULL, _IOFBF, 1 << 20);
  return f;
}

enum {
  O_HOST = 256, O_PORT, O_PROFILE, O_MODEL, O_SEED, O_SCALE, O_TRUTH, O_FAULT, O_SEQS, O_BATCHED,
  O_BLOCK, O_KVBLOCKS, O_GPUMEM, O_MAXLEN, O_PREFIX, O_NOPREFIX, O_MTP, O_MTPACC, O_NOMOE,
  O_RLOG, O_RDETAIL, O_MOEZIPF, O_MOEHOT, O_MOEDRIFT, O_REASONING, O_DIALECT, O_MAXBODY, O_MAXHDR, O_IDLE, O_KA, O_MAXCONN, O_RATE,
  O_LIST, O_QUIET, O_ENGINE, O_DECLARE, O_LEAK, O_LOGLEVEL, O_TOKENIZER, O_APIKEY, O_UNIX, O_IO
};

static const struct option options[] = {
    {"host", required_argument, 0, O_HOST},
    {"port", required_argument, 0, O_PORT},
    {"profile", required_argument, 0, O_PROFILE},
    {"model", required_argument, 0, O_MODEL},
    {"seed", required_argument, 0, O_SEED},
    {"time-scale", required_argument, 0, O_SCALE},
    {"truth-log", required_argument, 0, O_TRUTH},
    {"fault", required_argument, 0, O_FAULT},
    {"max-num-seqs", required_argument, 0, O_SEQS},
    {"max-num-batched-tokens", required_argument, 0, O_BATCHED},
    {"block-size", required_argument, 0, O_BLOCK},
    {"kv-blocks", required_argument, 0, O_KVBLOCKS},
    {"gpu-memory-utilization", required_argument, 0, O_GPUMEM},
    {"max-model-len", required_argument, 0, O_MAXLEN},
    {"enable-prefix-caching", no_argument, 0, O_PREFIX},
    {"no-enable-prefix-caching", no_argument, 0, O_NOPREFIX},
    {"mtp", required_argument, 0, O_MTP},
    {"mtp-accept", required_argument, 0, O_MTPACC},
    {"no-moe-routing", no_argument, 0, O_NOMOE},
    {"routing-log", required_argument, 0, O_RLOG},
    {"routing-detail", required_argument, 0, O_RDETAIL},
    {"moe-zipf", required_argument, 0, O_MOEZIPF},
    {"moe-hot", required_argument, 0, O_MOEHOT},
    {"moe-drift", required_argument, 0, O_MOEDRIFT},
    {"reasoning-field", required_argument, 0, O_REASONING},
    {"dialect", required_argument, 0, O_DIALECT},
    {"engine", required_argument, 0, O_ENGINE},
    {"declare", required_argument, 0, O_DECLARE},
    {"leak-cancelled", no_argument, 0, O_LEAK},
    {"max-body", required_argument, 0, O_MAXBODY},
    {"max-header", required_argument, 0, O_MAXHDR},
    {"idle-timeout", required_argument, 0, O_IDLE},
    {"keepalive-interval", required_argument, 0, O_KA},
    {"max-connections", required_argument, 0, O_MAXCONN},
    {"rate-limit", required_argument, 0, O_RATE},
    {"list-profiles", no_argument, 0, O_LIST},
    {"quiet", no_argument, 0, O_QUIET},
    {"tokenizer", required_argument, 0, O_TOKENIZER},
    {"log-level", required_argument, 0, O_LOGLEVEL},
    {"api-key-file", required_argument, 0, O_APIKEY},
    {"unix-socket", required_argument, 0, O_UNIX},
    {"io", required_argument, 0, O_IO},
    IM_SERVE_AGENT_OPTIONS,
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

/* An option not of this group (apply_option tries the next). */
enum { NOT_MINE = 1 };

/* The engine and its model: address, profile, scheduler, KV, MoE, faults,
 * the truth and routing logs. 0, -1 after printing why, or NOT_MINE. */
static int apply_engine(int opt, const char *arg, struct im_server_config *cfg,
                        struct im_fault *faults, const char **truth_path,
                        const char **routing_path, const char **tok_path) {
  struct im_engine_config *e = &cfg->engine;
  uint32_t u;
  char msg[256];
  switch (opt) {
  case O_HOST: cfg->host = arg; return 0;
  case O_PORT:
    if (im_arg_u32("--port", arg, 0, 65535, &u))
      return -1;
    cfg->port = (int)u;
    return 0;
  case O_PROFILE:
    e->profile = im_profile_find(arg);
    if (!e->profile) {
      fprintf(stderr, "infermeter: --profile: unknown profile '%s'; available:\n", arg);
      for (size_t i = 0; i < im_profile_count(); i++)
        fprintf(stderr, "  %s\n", im_profile_at(i)->name);
      return -1;
    }
    return 0;
  case O_MODEL: cfg->model = arg; return 0;
  case O_SEED: return im_arg_u64("--seed", arg, &e->seed);
  case O_SCALE: return im_arg_double("--time-scale", arg, 1e-3, 1e6, &e->time_scale);
  case O_TRUTH: *truth_path = arg; return 0;
  case O_TOKENIZER: *tok_path = arg; return 0;
  case O_FAULT:
    if (cfg->n_faults >= MAX_FAULTS) {
      fprintf(stderr, "infermeter: --fault: at most %d faults\n", MAX_FAULTS);
      return -1;
    }
    if (im_fault_parse(arg, &faults[cfg->n_faults], msg, sizeof msg)) {
      fprintf(stderr, "infermeter: --fault %s: %s\n", arg, msg);
      return -1;
    }
    cfg->n_faults++;
    return 0;
  case O_SEQS: return im_arg_u32("--max-num-seqs", arg, 1, 1u << 20, &e->max_num_seqs);
  case O_BATCHED:
    return im_arg_u32("--max-num-batched-tokens", arg, 1, 1u << 24, &e->max_num_batched_tokens);
  case O_BLOCK: return im_arg_u32("--block-size", arg, 1, 4096, &e->block_size);
  case O_KVBLOCKS: return im_arg_u32("--kv-blocks", arg, 1, 1u << 26, &e->kv_blocks);
  case O_GPUMEM: return im_arg_double("--gpu-memory-utilization", arg, 0.01, 1.0, &e->gpu_mem_util);
  case O_MAXLEN: return im_arg_u32("--max-model-len", arg, 2, 1u << 24, &e->max_model_len);
  case O_PREFIX: e->prefix_caching = true; return 0;
  case O_NOPREFIX: e->prefix_caching = false; return 0;
  case O_MTP: return im_arg_u32("--mtp", arg, 0, 16, &e->mtp_k);
  case O_MTPACC: return im_arg_double("--mtp-accept", arg, 0, 1, &e->mtp_accept);
  case O_NOMOE: e->moe_routing = false; return 0;
  case O_RLOG: *routing_path = arg; return 0;
  case O_RDETAIL: return im_arg_u32("--routing-detail", arg, 0, 1u << 20, &e->routing_detail);
  case O_MOEZIPF: return im_arg_double("--moe-zipf", arg, 0, 10, &e->moe_zipf);
  case O_MOEDRIFT: return im_arg_double("--moe-drift", arg, 0, 1, &e->moe_drift);
  case O_MOEHOT: {
    unsigned n = 0;
    double f = 0;
    char tail;
    if (sscanf(arg, "%u:%lf%c", &n, &f, &tail) != 2 || n > 1024 || !(f > 0) || f > 1e6) {
      fprintf(stderr, "infermeter serve: --moe-hot %s: expected N:F (N experts per layer F "
                      "times more popular, e.g. 4:10)\n", arg);
      return -1;
    }
    e->moe_hot_n = n;
    e->moe_hot_factor = f;
    return 0;
  }
  default:
    return NOT_MINE;
  }
}

/* The HTTP front: dialect, limits, keep-alive, rate limit, logging, I/O,
 * the API key, the agent policies. 0, or -1 after printing why. */
static int apply_front(int opt, const char *arg, struct im_server_config *cfg) {
  uint64_t u64;
  int64_t ns;
  switch (opt) {
  case O_REASONING:
    if (!strcmp(arg, "reasoning") || !strcmp(arg, "reasoning_content")) {
      cfg->reasoning_field_new = !strcmp(arg, "reasoning");
      return 0;
    }
    fprintf(stderr, "infermeter: --reasoning-field: expected reasoning or reasoning_content\n");
    return -1;
  case O_DIALECT:
    if (!strcmp(arg, "vllm") || !strcmp(arg, "deepseek-api")) {
      cfg->dialect_deepseek = !strcmp(arg, "deepseek-api");
      return 0;
    }
    fprintf(stderr, "infermeter: --dialect: expected vllm or deepseek-api, got '%s'\n", arg);
    return -1;
  case O_ENGINE: {
    int e = im_serve_engine_parse(arg);
    if (e < 0) {
      fprintf(stderr, "infermeter: --engine: expected infermeter, vllm, sglang, llamacpp, tgi or "
                      "trtllm, got '%s'\n", arg);
      return -1;
    }
    cfg->imitate = (enum im_serve_engine)e;
    return 0;
  }
  case O_LEAK:
    cfg->leak_cancelled = true;
    return 0;
  case O_DECLARE:
    if (!strcmp(arg, "none") || !strcmp(arg, "all")) {
      cfg->declare_none = !strcmp(arg, "none");
      return 0;
    }
    fprintf(stderr, "infermeter: --declare: expected none or all, got '%s'\n", arg);
    return -1;
  case O_MAXBODY:
    if (im_arg_size("--max-body", arg, &u64))
      return -1;
    cfg->max_body = (size_t)u64;
    return 0;
  case O_MAXHDR:
    if (im_arg_size("--max-header", arg, &u64) || u64 < 256) {
      if (u64 < 256)
        fprintf(stderr, "infermeter: --max-header: at least 256 bytes\n");
      return -1;
    }
    cfg->max_head = (size_t)u64;
    return 0;
  case O_IDLE:
    if (im_arg_duration("--idle-timeout", arg, &ns))
      return -1;
    cfg->idle_timeout_ns = ns;
    return 0;
  case O_KA:
    if (im_arg_duration("--keepalive-interval", arg, &ns) || ns <= 0) {
      if (ns <= 0)
        fprintf(stderr, "infermeter: --keepalive-interval: must be positive\n");
      return -1;
    }
    cfg->keepalive_comment_ns = ns;
    return 0;
  case O_MAXCONN: return im_arg_u32("--max-connections", arg, 1, 1u << 24, &cfg->max_connections);
  case O_RATE: {
    char rate[64];
    snprintf(rate, sizeof rate, "%s", arg);
    char *colon = strchr(rate, ':');
    if (colon)
      *colon = '\0';
    if (im_arg_double("--rate-limit", rate, 1e-6, 1e9, &cfg->rate_limit))
      return -1;
    return colon ? im_arg_double("--rate-limit burst", colon + 1, 1, 1e9, &cfg->rate_burst) : 0;
  }
  case O_LOGLEVEL:
    if (!strcmp(arg, "error"))
      im_log_set_level(IM_LOG_ERROR);
    else if (!strcmp(arg, "warn"))
      im_log_set_level(IM_LOG_WARN);
    else if (!strcmp(arg, "info"))
      im_log_set_level(IM_LOG_INFO);
    else if (!strcmp(arg, "debug"))
      im_log_set_level(IM_LOG_DEBUG);
    else {
      fprintf(stderr, "infermeter: --log-level: expected error, warn, info or debug\n");
      return -1;
    }
    return 0;
  case O_QUIET: cfg->quiet = true; return 0;
  case O_IO:
    if (!strcmp(arg, "auto"))
      cfg->io = IM_SERVE_IO_AUTO;
    else if (!strcmp(arg, "uring"))
      cfg->io = IM_SERVE_IO_URING;
    else if (!strcmp(arg, "write"))
      cfg->io = IM_SERVE_IO_WRITE;
    else {
      fprintf(stderr, "infermeter serve: --io: expected auto, uring or write, not '%s'\n", arg);
      return -1;
    }
    return 0;
  case O_UNIX:
    if (!*arg || strlen(arg) >= 108) { /* sun_path's size on Linux */
      fprintf(stderr, "infermeter serve: --unix-socket: a path of 1 to 107 bytes\n");
      return -1;
    }
    cfg->unix_socket = arg;
    return 0;
  case O_APIKEY: /* the first line of the file; freed by im_cli_serve */
    free((char *)cfg->api_key);
    char err[512];
    cfg->api_key = im_read_key_file(arg, err, sizeof err);
    if (!cfg->api_key)
      fprintf(stderr, "infermeter: --api-key-file: %s\n", err);
    return cfg->api_key ? 0 : -1;
  default:
    if (opt >= O_SERVE_AGENT_FIRST && opt < O_SERVE_AGENT_LAST)
      return im__serve_agent_opt(cfg, opt, (char *)arg); /* an argv string: writable */
    return -1;
  }
}

/* Applies one option to cfg; returns 0, or -1 after printing why. */
static int apply_option(int opt, const char *arg, struct im_server_config *cfg,
                        struct im_fault *faults, const char **truth_path,
                        const char **routing_path, const char **tok_path) {
  int rc = apply_engine(opt, arg, cfg, faults, truth_path, routing_path, tok_path);
  return rc == NOT_MINE ? apply_front(opt, arg, cfg) : rc;
}

int im_cli_serve(int argc, char **argv) {
  struct im_server_config cfg;
  im_server_config_default(&cfg);
  struct im_fault faults[MAX_FAULTS];
  const char *truth_path = NULL, *routing_path = NULL, *tok_path = NULL;
  int opt;
  optind = 1;
  while ((opt = im_getopt(argc, argv, "h", options, NULL)) != -1) {
    if (opt == 'h') {
      usage(stdout);
      return 0;
    }
    if (opt == O_LIST) {
      list_profiles();
      return 0;
    }
    if (opt == '?') {
      fprintf(stderr, "see: infermeter serve --help\n");
      return 1;
    }
    if (apply_option(opt, optarg, &cfg, faults, &truth_path, &routing_path, &tok_path)) {
      free((char *)cfg.api_key);
      return 1;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "infermeter serve: unexpected argument '%s' (see --help)\n", argv[optind]);
    return 1;
  }
  if (cfg.dialect_deepseek && cfg.reasoning_field_new) {
    fprintf(stderr, "infermeter serve: the DeepSeek API streams reasoning_content: drop "
                    "--reasoning-field reasoning or --dialect deepseek-api\n");
    return 1;
  }
  cfg.faults = faults;
  int rc = 1;
  FILE *truth = NULL, *routing = NULL;
  char msg[512];
  if (tok_path && im_tok_load(tok_path, &cfg.tokenizer, msg, sizeof msg) != IM_OK) {
    fprintf(stderr, "infermeter serve: --tokenizer: %s\n", msg);
    return 1;
  }
  if ((truth_path && !(truth = open_log("--truth-log", truth_path))) ||
      (routing_path && !(routing = open_log("--routing-log", routing_path)))) {
    if (truth)
      fclose(truth);
    im_tok_free(cfg.tokenizer);
    return 1;
  }
  cfg.truth_log = truth;
  cfg.engine.truth_log = truth;
  cfg.engine.routing_log = routing;
  im_raise_fd_limit();

  struct im_server *srv = NULL;
  /* The 'listening on' line is printed inside im_server_new, and a script
   * may stop the server as soon as it reads it: SIGINT and SIGTERM wait
   * (blocked) until the handler can reach the server. */
  sigset_t stop_sigs, old_mask;
  sigemptyset(&stop_sigs);
  sigaddset(&stop_sigs, SIGINT);
  sigaddset(&stop_sigs, SIGTERM);
  sigprocmask(SIG_BLOCK, &stop_sigs, &old_mask);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  if (im_server_new(&srv, &cfg) == IM_OK) {
    running_server = srv;
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    rc = im_server_run(srv) == IM_OK ? 0 : 1;
    running_server = NULL;
    im_server_free(srv);
  } else {
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
  }
  if (truth)
    fclose(truth);
  if (routing)
    fclose(routing);
  im_tok_free(cfg.tokenizer);
  free((char *)cfg.api_key);
  return rc;
}
