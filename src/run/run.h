/* The stage runner as a library call (docs/architecture.md, "run"):
 * im_run takes a configuration (what `infermeter run`'s options say),
 * finds the target (the built-in server, started in-process, or --url),
 * plans the stages (grid x sweep, rate=auto), writes the run directory as
 * it goes (manifest.json, stages.jsonl, requests.jsonl, series.jsonl,
 * scrapes.prom) and runs every stage with the load engine (load/). It does
 * not compute the published figures: results/ reads the directory back
 * (run and results never use each other). --repeat K is im_run_repeat:
 * im_run once per replicate, each in its own directory.
 *
 * Sinks (export/: OTLP, the live /metrics page, the pushgateway) and the
 * terminal attach through struct im_run_hooks; run never includes them.
 *
 * Errors: im_run returns enum im_err with a message in the outcome; what
 * the run has to say on the way (a plan, a warning, a stage starting) goes
 * to hooks->say, its text (stage lines) to hooks->text. Nothing here writes
 * to stdout or stderr.
 * Ownership: the caller owns the configuration and everything it points
 * to for the duration of the call; im_run copies what it changes.
 * Threads: one im_run at a time per thread (the diagnostics of a call go
 * to that call's hooks); the load engine's threads, the observer and the
 * built-in server run inside the call and are joined before it returns.
 * im_run_interrupt is async-signal-safe. */
#ifndef IM_RUN_RUN_H
#define IM_RUN_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyze/summary.h"
#include "core/err.h"
#include "load/loader.h"
#include "net/net.h"
#include "record/record.h"
#include "record/sysdesc.h"
#include "workload/sched.h"
#include "workload/stages.h"

struct im_observer;

#define IM_RUN_MAX_TAGS 64
#define IM_RUN_MAX_HEADERS 32

/* Reasoning, agents, cancellation, structured output (docs/agents.md). */
struct im_run_agent_opts {
  const char *reasoning_effort; /* --reasoning-effort (NULL: not sent) */
  int thinking;                 /* --thinking on|off: 1 / -1 (0: not sent) */
  uint32_t agent_hops;          /* --agent-hops N (0: no agent chains) */
  int64_t tool_latency_ns;      /* --tool-latency DUR (default 200 ms) */
  uint32_t tool_result_len;     /* --tool-result-len N tokens (default 512) */
  const char *serve_profile;    /* --serve-profile: the built-in server's (NULL: default) */
  double serve_time_scale;      /* --serve-time-scale K: the built-in server's (0: real time) */
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

/* One run split over several generator processes (docs/distributed.md). */
struct im_run_shard_opts {
  uint32_t index, count;      /* --shard i/N (count 0: not sharded) */
  bool start_at_given;        /* --start-at TIME */
  int64_t start_at_wall_ns;   /* CLOCK_REALTIME ns since the epoch */
  int64_t inject_offset_ns;   /* --clock-offset-inject (tests only): added to
                                 this process's wall clock as MPI measures it */
  bool mpi;                   /* set when launched under mpirun (run/mpi.h) */
  char plan_digest[17];       /* a hash of what defines the plan (the caller's:
                                 cli/shard.h), 16 hex digits */
  int64_t clock_offset_ns;    /* MPI: rank 0's wall clock minus this rank's */
  int64_t clock_rtt_ns;       /* MPI: the round trip of that measurement */
  int64_t clock_correction_ns; /* added to start_at_wall_ns for this machine's
                                  CLOCK_REALTIME of the start (MPI) */
};

/* A run's configuration: the options of `infermeter run` (docs/cli.md),
 * filled by im_run_config_default and then by the caller. */
struct im_run_config {
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
  const char *tags[IM_RUN_MAX_TAGS];
  size_t n_tags;
  const char *headers[IM_RUN_MAX_HEADERS + 1];
  size_t n_headers;
  uint32_t retries;
  int64_t retry_backoff_max_ns;
  int64_t t_connect, t_ttft, t_idle, t_total;
  uint64_t max_total_tokens;
  struct im_net net;            /* --cacert, --cert/--key, --proxy, --unix-socket, --insecure */
  bool yes, insecure, keepalive, http2, cache_salt, shared_cache, quiet, no_progress, publish;
  double max_error_rate;         /* --max-error-rate (0: the default, 5 %) */
  int transport;                /* --transport: enum im_load_transport (load/loader.h) */
  bool csv, json, verbose; /* --output-format csv, --json, -v (the command line's) */
  uint32_t repeat;              /* --repeat K (1: a single run) */
  int64_t cooldown_ns;          /* --cooldown; -1: not given (run/repeat.c's defaults) */
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
  struct im_run_agent_opts agent;  /* reasoning, agents (docs/agents.md) */
  struct im_run_shard_opts shard;  /* --shard, --start-at, MPI rank (workload/shard.h, docs/distributed.md) */
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
  bool rate_given;              /* --rate given: a dataset's timestamps do not replay */
  /* The command line as typed, for the manifest (secrets redacted there). */
  const char *const *command_words;
  int n_command_words;
  /* Tokens */
  const char *tokenizer;
  const char *chat_template;
  const char *mix;
};

/* Runs of --repeat K over the stages of --grid/--sweep, in all. */
#define IM_REPEAT_MAX_CELLS 1000

/* What the run has to say, one line each, without a trailing newline. */
enum im_run_say {
  IM_RUN_SAY_ERROR,  /* why the run stops, or a problem it goes on with */
  IM_RUN_SAY_INFO,   /* what is being done: the plan, a stage, a file */
  IM_RUN_SAY_STATUS, /* a waiting line redrawn in place on a terminal (ends
                        with a newline when it is the last) */
  IM_RUN_SAY_PLAIN   /* a continuation of the line before, as it is */
};

/* Where a run reports besides its directory. Every member may be NULL. */
struct im_run_hooks {
  void (*say)(void *data, enum im_run_say kind, const char *line);
  FILE *text;                  /* the stage lines of a multi-stage run */
  /* A remote target: the plan was said; true starts the run. NULL: start. */
  bool (*confirm)(void *data);
  /* The run directory exists and the target is known: sinks start here
   * (model and url for their labels; health/probe pollers to hook). */
  void (*on_start)(void *data, const char *dir, struct im_observer *obs);
  /* A stage's loaders are about to dispatch: their n counters (the
   * progress line, the live gauges) until on_stage_end; total: requests
   * planned (0: unknown). */
  void (*on_stage_start)(void *data, const struct im_load_progress *p, uint32_t n,
                         uint64_t total);
  void (*on_stage_end)(void *data);
  /* Every record as it is written (any loader's writer thread, the health
   * poller's, the prober's). */
  void (*on_record)(void *data, const struct im_record *r);
  /* The load is over, every record on disk: sinks that follow the
   * directory send their last, and take what they need of the observer
   * (freed when im_run returns). Called once after on_start, also when
   * the run stops before its load. */
  void (*on_load_end)(void *data);
  bool tty;                    /* stderr is a terminal (progress style, waiting lines) */
  void *data;
};

/* What a run did. */
struct im_run_outcome {
  char dir[4096];              /* the run directory */
  char salt[40];               /* the run's id (cache salt) */
  bool started;                /* a stage began: the directory has records */
  bool engine_failed;          /* a loader failed (exit 5) */
  bool failed;                 /* no stage could run to its end */
  int exit;                    /* an exit status decided before any figure (1, 2, 130), else -1 */
  char err[1024];              /* why, when im_run returns an error */
};

/* --repeat K (docs/statistics.md): what the caller does with each
 * replicate and with each stage's set of runs. */
struct im_repeat_run;
struct im_run_set_hooks {
  /* Runs one replicate (its configuration prepared: directory, seed,
   * repeat index, stage): im_run and its results; its exit status. */
  int (*run_one)(void *data, const struct im_run_config *replicate);
  /* One stage's runs are done (a set without stages: all of them): the
   * set's statistics into dir (results/set.h); an exit status (0, or 1
   * when they cannot be written) and *publishable. ref_value: --reference
   * per figure (NaN: none), NULL without references. */
  int (*set_done)(void *data, const char *dir, struct im_repeat_run *runs, size_t n,
                  const double *ref_value, const char *ref_source, bool *publishable);
  void *data;
};

/* The defaults of every option (docs/cli.md). */
void im_run_config_default(struct im_run_config *c);
/* The checks and the settings derived before anything runs (options that
 * exclude each other, shards, the default warm-up, --min-requests sizing,
 * --repeat-stage); what it has to say goes to h->say. IM_OK, or IM_INVAL
 * with err saying what (empty when h->say said it already). */
enum im_err im_run_prepare(struct im_run_config *c, const struct im_run_hooks *h, char *err,
                           size_t err_len) IM_WUR;
/* Runs c (prepared). IM_OK when the run happened (the figures may still
 * fail); else an error with out->err and out->exit saying why. */
enum im_err im_run(const struct im_run_config *c, const struct im_run_hooks *h,
                   struct im_run_outcome *out) IM_WUR;
/* --repeat K: K independent runs of c (DIR/run-1 .. DIR/run-K; with
 * stages, DIR/stage-S/run-K in a seeded random order), each after a random
 * 0-2 s start offset and, against --url, once the server has drained. The
 * worst of the runs' exit statuses (report/verdict.h im_verdict_worst);
 * *runs: how many ran. */
int im_run_repeat(const struct im_run_config *c, const struct im_run_hooks *h,
                  const struct im_run_set_hooks *sh, size_t *runs);
/* Stops dispatching at the first call, aborts the requests in flight at
 * the second. Async-signal-safe. */
void im_run_interrupt(void);
/* Whether im_run_interrupt was called. */
bool im_run_interrupted(void);

#endif
