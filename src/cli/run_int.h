/* Internals of `infermeter run`, shared by its files: run.c (the run),
 * run_opts.c (options and help), run_target.c (talking to the target before
 * the run, redaction, the manifest). Names carry the im__run_ prefix. */
#ifndef IM_CLI_RUN_INT_H
#define IM_CLI_RUN_INT_H

#include <getopt.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include <jansson.h>

#include "text/chattmpl.h"
#include "text/content.h"
#include "workload/sched.h"
#include "workload/stages.h"
#include "analyze/repeat.h"
#include "analyze/summary.h"
#include "record/sysdesc.h"
#include "load/loader.h"
#include "net/net.h"
#include "cli/run_agents.h"
#include "cli/shard.h"

#define MAX_TAGS 64
#define MAX_HEADERS 32

/* Exit status (README "Exit status"): 4 is NOT_PUBLISHABLE under --publish,
 * 5 a load engine that failed (a record write that failed, a thread that
 * could not start). */
enum { EXIT_OK = 0, EXIT_USAGE = 1, EXIT_UNREACHABLE = 2, EXIT_INVALID = 3,
       EXIT_NOT_PUBLISHABLE = 4, EXIT_ENGINE = 5, EXIT_SLO = 99, EXIT_INTERRUPTED = 130 };

struct run_opts {
  const char *url;               /* the first --url (NULL: the built-in server) */
  const char *urls[IM_RECORD_MAX_TARGETS]; /* every --url (docs/tls.md) */
  uint32_t n_urls;
  bool urls_from_scenario;       /* urls came from --scenario (the command line replaces them) */
  enum im_backend backend;
  const char *model;
  double rate, burstiness, rate_end;
  enum im_sched_kind sched_kind;
  uint32_t concurrency, max_concurrency, max_connections;
  int64_t duration_ns;
  uint64_t requests;
  int64_t warmup_ns;
  uint64_t warmup_requests;
  bool warmup_given; /* --warmup on the command line or in the scenario */
  int64_t grace_ns;
  uint64_t seed;
  bool seed_given;
  const char *out_dir;
  uint32_t input_len, output_len;
  double range_ratio;
  bool ignore_eos, ignore_eos_given;
  double temperature, top_p;
  struct im_summary_config scfg;
  double slo_target;
  const char *tags[MAX_TAGS];
  size_t n_tags;
  const char *headers[MAX_HEADERS + 1];
  size_t n_headers;
  uint32_t retries;
  int64_t retry_backoff_max_ns;
  int64_t t_connect, t_ttft, t_idle, t_total;
  uint64_t max_total_tokens;
  struct im_net net;            /* --cacert, --cert/--key, --proxy, --unix-socket, --insecure */
  bool yes, insecure, keepalive, http2, cache_salt, shared_cache, quiet, no_progress, publish;
  double max_error_rate;         /* --max-error-rate (0: the default, 5 %) */
  int transport;                /* --transport: enum im_load_transport (load/loader.h) */
  bool csv, json, verbose; /* --output-format csv, --json, -v (cli/output.h) */
  uint32_t repeat;              /* --repeat K (1: a single run) */
  int64_t cooldown_ns;          /* --cooldown */
  uint32_t repeat_index, repeat_of; /* this run is repeat i of K (set by --repeat) */
  uint32_t repeat_stage;        /* run only stage i (1-based) of the plan (set by --repeat) */
  char repeat_stage_label[IM_STAGE_LABEL_MAX];
  double max_ci_width;          /* --max-ci-width PCT as a fraction (0: the default 8 %) */
  uint64_t min_requests;        /* --min-requests N (0: none) */
  bool min_requests_auto;       /* --min-requests auto */
  const char *reference[32];    /* --reference FILE|metric=value (repeatable) */
  size_t n_reference;
  int64_t health_interval_ns;   /* --health-interval (0: none) */
  int64_t ready_timeout_ns;     /* --ready-timeout: wait this long for the target (0: no wait) */
  bool profile_server;          /* --profile-server: /start_profile, /stop_profile around the load */
  uint32_t keep_ngrams;         /* --keep-text (0: off) */
  uint32_t logprobs;            /* --logprobs N (0: not asked) */
  uint32_t segment_window, segment_stride; /* --segment-window/--segment-stride (0: 8, 4) */
  double stall_k;               /* --stall-k (0: 5) */
  int64_t timeslice_ns;         /* --timeslice (0: 10 s) */
  const char *otlp;             /* --otlp URL (NULL: none) */
  double otlp_sample;           /* --otlp-sample */
  bool otlp_protobuf;           /* --otlp-protocol http/protobuf */
  const char *provider;         /* --provider */
  double probe_rate;            /* --probe-rate, probes per second (0: none) */
  const char *metrics_listen;   /* --metrics-listen [ADDR:]PORT (NULL: none) */
  int64_t metrics_linger_ns;    /* --metrics-linger */
  const char *pushgateway;      /* --pushgateway URL (NULL: none) */
  const char *health_path;      /* --health-path (NULL: /health) */
  const char *history;          /* --history PATH (NULL: $XDG_DATA_HOME/infermeter/history.db) */
  bool no_history;              /* --no-history */
  bool no_context_check;        /* --no-context-check */
  const char *api_key_file;
  struct run_agent_opts agent;  /* reasoning, agents (cli/run_agents.h) */
  struct run_shard_opts shard;  /* --shard, --start-at, MPI rank (cli/shard.h) */
  uint32_t threads;
  const char *scrape[8];
  size_t n_scrape;
  bool no_scrape, no_sockstat, no_gpu;
  const char *dcgm;
  int64_t scrape_interval_ns;
  double kv_residency_ref, bw_util_ref;
  uint32_t prefix_groups, prefix_len;
  double prefix_share;
  double kv_bytes_per_token, gpu_memory;
  struct im_sys_flags sys;      /* --model-config, --hardware, --gpus/--tp/--dp */
  const char *dataset, *dataset_path, *trace;
  uint32_t min_in, max_in, min_out, max_out;  /* sharegpt length filters (0: none) */
  double trace_speed;
  bool perturb;
  /* Sessions (docs/workloads.md) */
  uint32_t sessions;            /* concurrent sessions (closed) */
  double session_rate;          /* sessions started per second (open) */
  uint32_t turns;
  uint32_t ctx_start, ctx_end;  /* --context-growth */
  int64_t think_ns;
  /* Stages (docs/scenarios.md) */
  const char *grid[4];
  size_t n_grid;
  bool grid_from_scenario;
  const char *sweep;
  uint32_t sweep_steps;
  bool stop_on_saturation;
  bool applying_scenario;
  const char *scenario;
  /* Tokens */
  const char *tokenizer;
  const char *chat_template;
  const char *mix;
};

struct json_t;
struct im_dataset;
struct im_observer;
struct im_tok;
struct im_srvtok;
struct im_health;
struct im__run_live;

/* What every stage of a run shares. */
struct run_env {
  struct run_opts *o;
  const char *url;
  const char *const *urls;        /* several --url: every target (normalised), n_urls > 1 */
  uint32_t n_urls;
  bool builtin;
  const char *model;
  char *api_key;
  struct im_dataset *ds;
  size_t *order;
  bool use_ds, replay;
  char salt[40];
  int jsonl_fd;
  int stages_fd;                  /* stages.jsonl (record/rundir.h) */
  struct im_health *health;      /* the health poller, or NULL */
  struct im_health *probe;       /* the prober (--probe-rate), or NULL */
  int series_fd;                  /* DIR/series.jsonl (O_APPEND), -1: not written */
  const char *series_path;        /* its path, or NULL */
  struct im_observer *obs;
  bool tty;
  size_t n_stages;
  struct im_tok *tok;             /* --tokenizer, or NULL */
  struct im_tok **toks;           /* one per loader thread (toks[0] = tok), or NULL */
  bool builtin_tok;               /* --tokenizer built-in: counts outputs too */
  struct im_srvtok *srvtok;       /* --tokenizer server (cli/run_server.c), or NULL */
  bool exact;                     /* prompts of exact token lengths */
  enum im_chat_tmpl tmpl;
  bool has_mix;
  struct im_mix mix;
  bool engine_failed;             /* a loader failed (its reason printed): EXIT_ENGINE */
  struct im__run_live *live;      /* --metrics-listen (cli/run_live.h), or NULL */
};


/* One stage's outcome in memory, for the sweep while the run goes on. The
 * published figures come from the run directory (cli/report.h). */
struct stage_res {
  bool interrupted, unreachable, slo_failed, oversaturated, valid;
  int64_t t0_mono, wall_start_ns;
  double throughput;              /* vLLM's request_throughput of the stage */
  double slo_all_attain;
  int64_t elapsed_ns;
  uint64_t connections_opened;
  char first_error[256];
};

/* run.c: the signal handler's state (the first signal stops dispatching,
 * the second aborts requests in flight; wake_fd wakes loader 0). */
extern atomic_int im__run_interrupted;
extern int im__run_wake_fd;

/* run_server.c: what the target itself says about token counts. */
/* --tokenizer server: a client of the target's /tokenize in env->srvtok,
 * checked by one count. 0, or -1 with the reason printed. */
int im__run_srvtok_start(struct run_env *env, const struct im_net *net);
/* Says how many counts the target made (unless --quiet) and frees env->srvtok. */
void im__run_srvtok_stop(struct run_env *env);
/* An im_synth_count_fn over env->srvtok (ctx): prompts as the server counts them. */
enum im_err im__run_srvtok_count(void *ctx, const char *text, size_t len, const char *messages_json,
                                 bool chat, uint32_t *n);
/* Output tokens of an answer (no special tokens) by the server; 0 on failure. */
uint32_t im__run_srvtok_output(void *ctx, const char *text, size_t len);
/* The stages' largest prompt + max_tokens (multi-turn sessions: the last
 * turn's context plus its answer) against the server's context limit
 * (vLLM's and serve's max_model_len in /v1/models `models`, else llama.cpp's
 * n_ctx from /props or /slots). 0 when it fits, the limit is unknown or
 * --no-context-check; -1 with the numbers printed when a stage cannot fit. */
struct im_stage;
int im__run_context_check(const struct run_env *env, const struct run_opts *o,
                          const struct im_stage *stages, json_t *models, const struct im_net *net);

/* run_stage.c */
/* Runs one stage: its start, t0 and end events go to stages.jsonl, its
 * records to requests.jsonl; its figures (computed in memory too, for the
 * sweep) into out, and a multi-stage run's stage line to stdout. 0, or -1
 * when the stage could not run (the reason said). */
int im__run_stage(struct run_env *env, const struct run_opts *so, uint32_t stage, bool last_stage,
                  const char *label, struct json_t *params, struct stage_res *out);
/* The figures that steer a sweep (throughput, SLOs, over-saturation, the
 * self-check, unreachable) from a stage's figures: the stage's own, or
 * under MPI the ranks' merged (cli/mpi.h). */
struct im_stage_figures;
void im__run_stage_res_set(struct stage_res *out, const struct im_stage_figures *f,
                           size_t n_records, const char *first_error);

/* run_plan.c: the stages of a run, grid x sweep (grid outer). */
#define IM__RUN_MAX_STAGES IM_GRID_MAX_STAGES
struct run_plan {
  struct im_grid grid;
  struct im_sweep sweep;
  bool has_sweep;
  size_t n_grid;   /* grid combinations (1 without a grid) */
};
int im__run_plan_parse(const struct run_opts *o, struct run_plan *p);
/* Stage i of the product (sweep values fastest); 0 or -1. */
int im__run_plan_stage(const struct run_plan *p, size_t i, struct im_stage *st);
/* The stage's settings applied to a copy of the run's options. */
void im__run_apply_stage(struct run_opts *so, const struct im_stage *st);
struct json_t *im__run_stage_params_json(const struct im_stage *st);

/* repeat.c: --repeat K: K runs of argv (each with its own --out DIR/run-k
 * and --seed), then DIR/results.json with the statistics over them. The
 * exit status: the worst of the runs' (README's precedence). */
int im__run_repeat(int argc, char **argv, const struct run_opts *o);
/* run_size.c: --min-requests N|auto raises --requests or --duration so
 * the run measures enough requests; 0, or -1 after saying why. */
int im__run_size(struct run_opts *o);
/* Runs of --repeat K over the stages of --grid/--sweep, in all. */
#define IM_REPEAT_MAX_CELLS 1000
/* --repeat-stage i (a run of --repeat K over stages): makes o a one-stage
 * run with stage i's settings (rate_given when it sets the rate). 0 or -1
 * (said). */
int im__run_select_stage(struct run_opts *o, bool *rate_given);
/* reference.c: the --reference values per figure (NaN: none), n of them,
 * and where they came from. */
struct im__run_ref {
  double value[IM_RF_COUNT_];
  size_t n;
  char source[600];
};
/* Resolves o->reference[] (FILE: a run's or a repeat set's results.json, or
 * its directory, or a JSON object {"figure": number}; metric=value); 0, or
 * -1 after saying why. */
int im__run_reference(const struct run_opts *o, struct im__run_ref *ref);
/* Adds a run (or a --repeat set) directory to the history; a failure is a
 * warning, never the exit status. */
void im__run_add_history(const struct run_opts *o, const char *dir);

/* run_shard.c: --shard i/N and --start-at inside a run (cli/shard.h). */
/* 0, or -1 after saying what does not fit. */
int im__run_shard_check(const struct run_opts *o);
/* Shards other than 0 run no observers (one scrape of the server, not N). */
void im__run_shard_defaults(struct run_opts *o);
/* Waits (interruptibly) until a second before --start-at; -1 interrupted. */
int im__run_shard_wait(const struct run_opts *o);
/* The manifest's "shard" object (NULL when not sharded). */
struct json_t *im__run_shard_json(const struct run_opts *o, int argc, char **argv);

/* run_opts.c */
void im__run_usage(FILE *o);
/* -q, -v, --json after parsing (cli/run_output.c): what goes to the
 * terminal. -1: go on; else the exit status of a usage error. */
int im__run_output_mode(struct run_opts *o);
/* -v: the settings of the manifest, one line each on stderr. */
void im__run_verbose_manifest(const json_t *manifest);
void im__run_opts_default(struct run_opts *o);
extern const struct option im__run_options[];
/* Applies one option; 0, or -1 after saying what is wrong. */
int im__run_apply(struct run_opts *o, int opt, const char *arg, bool *rate_given);

/* run_scenario.c */
/* The value of --scenario in argv (either "--scenario F" or "--scenario=F"),
 * or NULL. */
const char *im__run_scenario_arg(int argc, char **argv);
/* Applies a scenario file's settings to o (keys are run's long option
 * names). *keep receives what must outlive o (free with json_decref).
 * 0, or -1 after saying what is wrong (file, key, why). */
int im__run_scenario_load(struct run_opts *o, const char *path, struct json_t **keep,
                          bool *rate_given);

/* run_target.c */
/* GET base+path: the HTTP status (0 when unreachable, err says why) and the
 * body as JSON in *out (NULL when not JSON). */
long im__run_http_get_json(const char *base, const char *path, const char *api_key,
                           const struct im_net *net,
                           struct json_t **out, char *err, size_t err_len);
/* The same with a method: GET when post is NULL, else POST of that JSON. */
long im__run_http_json(const char *base, const char *path, const char *post, const char *api_key,
                       const struct im_net *net, struct json_t **out, char *err, size_t err_len);
bool im__run_is_loopback(const char *url);
/* The URL without credentials, for outputs. */
void im__run_redact_url(const char *url, char *out, size_t cap);

/* run_ready.c */
/* --ready-timeout: polls GET url/v1/models once a second until it answers
 * 200 (0) or timeout_ns passed or the run was interrupted (-1, said). */
int im__run_wait_ready(const char *url, const char *api_key, const struct im_net *net,
                       int64_t timeout_ns, bool tty);
/* --profile-server: POST url/start_profile (start) or /stop_profile; false
 * (said, the run goes on) when the server has none or refuses. */
bool im__run_profile(const char *url, const char *api_key, const struct im_net *net, bool start);
/* The first line of the file, or NULL after saying why; caller frees. */
char *im__run_read_key_file(const char *path);
/* host:port of the URL, resolved once; 0 on success. */
int im__run_target_addr(const char *url, struct sockaddr_storage *out, socklen_t *len);
/* run_transport.c: the client transport a run with o uses against url (the
 * first target; NULL: the built-in server): im_load_transport_pick's
 * answer (-1 with why when --transport h1 cannot serve it). */
int im__run_transport(const struct run_opts *o, const char *url, char *why, size_t cap);
struct json_t *im__run_manifest_json(const struct run_opts *o, int argc, char **argv,
                                     const char *url, bool builtin, const char *model,
                                     struct json_t *models, struct json_t *version,
                                     int64_t wall_start_ns, const char *salt);

/* A run bounded by --requests without --warmup: the first tenth of the
 * requests are its warm-up (a warm-up by time could take all of them). */
void im__run_default_warmup(struct run_opts *o);

#endif
