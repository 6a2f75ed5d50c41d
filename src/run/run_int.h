/* Internals of run/, shared by its files: run.c (the run), stage.c (one
 * stage), plan.c, size.c, shard.c, mpi_stage.c, target.c (the target
 * before the run, the manifest), server.c (what the target counts),
 * ready.c, urls.c, reference.c, repeat.c, config.c. Names carry the
 * im__run_ prefix. Not for other modules: run/run.h is the interface. */
#ifndef IM_RUN_RUN_INT_H
#define IM_RUN_RUN_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include <jansson.h>

#include "core/buf.h"
#include "text/chattmpl.h"
#include "text/content.h"
#include "workload/sched.h"
#include "workload/stages.h"
#include "analyze/repeat.h"
#include "analyze/summary.h"
#include "record/sysdesc.h"
#include "load/loader.h"
#include "net/http_json.h"
#include "net/net.h"
#include "run/run.h"
#include "workload/shard.h"
#include "report/verdict.h"

/* Exit statuses by their short names (report/verdict.h). */
enum { EXIT_OK = IM_EXIT_OK, EXIT_USAGE = IM_EXIT_USAGE, EXIT_UNREACHABLE = IM_EXIT_UNREACHABLE,
       EXIT_INVALID = IM_EXIT_INVALID, EXIT_NOT_PUBLISHABLE = IM_EXIT_NOT_PUBLISHABLE,
       EXIT_ENGINE = IM_EXIT_ENGINE, EXIT_SLO = IM_EXIT_SLO, EXIT_INTERRUPTED = IM_EXIT_INTERRUPTED };




struct json_t;
struct im_dataset;
struct im_observer;
struct im_tok;
struct im_srvtok;
struct im_health;
struct im_live_export;

/* What every stage of a run shares. */
struct run_env {
  struct im_run_config *o;
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
  struct im_srvtok *srvtok;       /* --tokenizer server (run/server.c), or NULL */
  bool exact;                     /* prompts of exact token lengths */
  enum im_chat_tmpl tmpl;
  bool has_mix;
  struct im_mix mix;
  bool engine_failed;             /* a loader failed (its reason printed): EXIT_ENGINE */
  const struct im_run_hooks *hooks; /* the caller's (never NULL) */
};


/* One stage's outcome in memory, for the sweep while the run goes on. The
 * published figures come from the run directory (results/results.h). */
struct stage_res {
  bool interrupted, unreachable, slo_failed, oversaturated, valid;
  int64_t t0_mono, wall_start_ns;
  double throughput;              /* vLLM's request_throughput of the stage */
  double slo_all_attain;
  int64_t elapsed_ns;
  uint64_t connections_opened;
  char first_error[256];
};

/* run.c: what the run says, to the hooks of the im_run call on this thread
 * (run/run.h); the text stream of those hooks, or NULL. */
void im__run_say(enum im_run_say kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
FILE *im__run_text(void);
/* Makes h the hooks of this thread's diagnostics; returns the previous. */
const struct im_run_hooks *im__run_say_push(const struct im_run_hooks *h);

/* run.c: the signal handler's state (the first signal stops dispatching,
 * the second aborts requests in flight; wake_fd wakes loader 0). */
extern atomic_int im__run_interrupted;
extern int im__run_wake_fd;

/* server.c: what the target itself says about token counts. */
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
int im__run_context_check(const struct run_env *env, const struct im_run_config *o,
                          const struct im_stage *stages, json_t *models, const struct im_net *net);

/* stage.c */
/* Runs one stage: its start, t0 and end events go to stages.jsonl, its
 * records to requests.jsonl; its figures (computed in memory too, for the
 * sweep) into out, and a multi-stage run's stage line to stdout. 0, or -1
 * when the stage could not run (the reason said). */
int im__run_stage(struct run_env *env, const struct im_run_config *so, uint32_t stage, bool last_stage,
                  const char *label, struct json_t *params, struct stage_res *out);
/* The figures that steer a sweep (throughput, SLOs, over-saturation, the
 * self-check, unreachable) from a stage's figures: the stage's own, or
 * under MPI the ranks' merged (run/mpi.h). */
struct im_stage_figures;
void im__run_stage_res_set(struct stage_res *out, const struct im_stage_figures *f,
                           size_t n_records, const char *first_error);

/* plan.c: the stages of a run, grid x sweep (grid outer). */
#define IM__RUN_MAX_STAGES IM_GRID_MAX_STAGES
struct run_plan {
  struct im_grid grid;
  struct im_sweep sweep;
  bool has_sweep;
  size_t n_grid;   /* grid combinations (1 without a grid) */
};
int im__run_plan_parse(const struct im_run_config *o, struct run_plan *p);
/* Stage i of the product (sweep values fastest); 0 or -1. */
int im__run_plan_stage(const struct run_plan *p, size_t i, struct im_stage *st);
/* The stage's settings applied to a copy of the run's options. */
void im__run_apply_stage(struct im_run_config *so, const struct im_stage *st);
struct json_t *im__run_stage_params_json(const struct im_stage *st);

/* size.c: --min-requests N|auto raises --requests or --duration so
 * the run measures enough requests; 0, or -1 after saying why. */
int im__run_size(struct im_run_config *o);
/* --repeat-stage i (a run of --repeat K over stages): makes o a one-stage
 * run with stage i's settings (o->rate_given when it sets the rate). 0 or
 * -1 (said). */
int im__run_select_stage(struct im_run_config *o);
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
int im__run_reference(const struct im_run_config *o, struct im__run_ref *ref);

/* shard.c: --shard i/N and --start-at inside a run (workload/shard.h, docs/distributed.md). */
/* 0, or -1 after saying what does not fit. */
int im__run_shard_check(const struct im_run_config *o);
/* Shards other than 0 run no observers (one scrape of the server, not N). */
void im__run_shard_defaults(struct im_run_config *o);
/* CLOCK_REALTIME ns -> CLOCK_MONOTONIC ns of this process, from the pair
 * of reads (of several) that were closest together; *err_ns their spacing
 * (the conversion's uncertainty). */
int64_t im__run_wall_to_mono(int64_t wall_ns, int64_t *err_ns);
/* Waits (interruptibly) until a second before --start-at; -1 interrupted. */
int im__run_shard_wait(const struct im_run_config *o);
/* The manifest's "shard" object (NULL when not sharded). */
struct json_t *im__run_shard_json(const struct im_run_config *o);

/* target.c */
/* ready.c */
/* --ready-timeout: polls GET url/v1/models once a second until it answers
 * 200 (0) or timeout_ns passed or the run was interrupted (-1, said). */
/* run/declare.c: GET url+path into out (appended); the HTTP status, 0 when
 * no answer (2 s timeout). */
long im__run_get_text(const char *url, const char *path, const struct im_net *net,
                      struct im_buf *out);
/* The engine as the target declares itself (manifest.server.engine):
 * {"name", "version", "from", "settings": {KEY: VALUE}} under the audit's
 * keys (analyze/validity.h), or NULL when nothing identifies it (and for
 * infermeter serve, whose /version says it all). New reference. */
json_t *im__run_engine_declared(const char *url, const char *api_key, const struct im_net *net,
                                const json_t *models, const json_t *version);
int im__run_wait_ready(const char *url, const char *api_key, const struct im_net *net,
                       int64_t timeout_ns, bool tty);
/* --profile-server: POST url/start_profile (start) or /stop_profile; false
 * (said, the run goes on) when the server has none or refuses. */
bool im__run_profile(const char *url, const char *api_key, const struct im_net *net, bool start);
/* transport.c: the client transport a run with o uses against url (the
 * first target; NULL: the built-in server): im_load_transport_pick's
 * answer (-1 with why when --transport h1 cannot serve it). */
int im__run_transport(const struct im_run_config *o, const char *url, char *why, size_t cap);
struct json_t *im__run_manifest_json(const struct im_run_config *o, const char *url, bool builtin, const char *model,
                                     struct json_t *models, struct json_t *version,
                                     int64_t wall_start_ns, const char *salt);

/* target.c: -v: the settings of the manifest, one line each (im_info). */
void im__run_verbose_manifest(const json_t *manifest);
/* config.c: a run bounded by --requests without --warmup: the first tenth
 * of the requests are its warm-up (a warm-up by time could take all of them). */
void im__run_default_warmup(struct im_run_config *o);
/* The checks of options that exclude or need each other; NULL, or why. */
const char *im__run_check_opts(const struct im_run_config *o, char *buf, size_t cap);
/* agents.c: the checks and policies of docs/agents.md's options. */
void im__run_agent_defaults(struct im_run_agent_opts *a);
const char *im__run_agent_check(const struct im_run_agent_opts *a, bool sessions, bool chat);
bool im__run_agent_eos_free(const struct im_run_agent_opts *a);
struct im_server_config;
void im__run_agent_serve(const struct im_run_agent_opts *a, struct im_server_config *cfg);

#endif
