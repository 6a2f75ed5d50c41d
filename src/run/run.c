/* im_run (run/run.h): the target found or started, the stages planned and
 * run, the run directory written as it goes. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <inttypes.h>
#include <math.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "observe/health.h"
#include "run/mpi.h"
#include "run/run_int.h"
#include "run/urls.h"
#include "record/sysdesc.h"
#include "record/rundir.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/proc.h"
#include "core/thread.h"
#include "workload/dsworkload.h"
#include "text/tokenizer.h"
#include "observe/observer.h"
#include "serve/server.h"

/* ---- signals ------------------------------------------------------------ */

atomic_int im__run_interrupted;
int im__run_wake_fd = -1;

/* Async-signal-safe: a lock-free atomic (checked at compile time) and
 * write(2). */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the interrupt flag must be lock-free");
void im_run_interrupt(void) {
  atomic_fetch_add(&im__run_interrupted, 1);
  if (im__run_wake_fd >= 0) {
    uint64_t one = 1;
    ssize_t r = write(im__run_wake_fd, &one, sizeof one);
    (void)r;
  }
}

bool im_run_interrupted(void) { return atomic_load(&im__run_interrupted) > 0; }

/* ---- what the run says ---------------------------------------------------- */

/* The hooks of the im_run call on this thread (set for its duration). */
static _Thread_local const struct im_run_hooks *say_hooks;

void im__run_say(enum im_run_say kind, const char *fmt, ...) {
  const struct im_run_hooks *h = say_hooks;
  if (!h || !h->say)
    return;
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  h->say(h->data, kind, line);
}

FILE *im__run_text(void) { return say_hooks ? say_hooks->text : NULL; }

const struct im_run_hooks *im__run_say_push(const struct im_run_hooks *h) {
  const struct im_run_hooks *prev = say_hooks;
  say_hooks = h;
  return prev;
}

/* ---- the built-in server on its own thread ------------------------------- */

struct builtin {
  struct im_server *srv;
  struct im_tok *tok;
  pthread_t thread;
  bool running;
};

static void *server_main(void *arg) {
  struct builtin *b = arg;
  if (im_server_run(b->srv) != IM_OK)
    im_warn("built-in server stopped with an error");
  return NULL;
}

static int builtin_start(struct builtin *b, uint64_t seed, const char *tokenizer,
                         const struct im_run_agent_opts *ag) {
  struct im_server_config cfg;
  im_server_config_default(&cfg);
  im__run_agent_serve(ag, &cfg); /* --serve-profile and the agent policies */
  cfg.port = 0;
  cfg.quiet = true;
  cfg.engine.seed = seed;
  /* The server counts prompts with the run's tokenizer too (its own copy:
   * a tokenizer serves one thread). */
  char msg[256];
  if (tokenizer && im_tok_load(tokenizer, &b->tok, msg, sizeof msg) != IM_OK)
    return -1;
  cfg.tokenizer = b->tok;
  if (im_server_new(&b->srv, &cfg) != IM_OK)
    return -1;
  /* Only the main thread handles the run's signals. */
  int e = im_thread_start(&b->thread, server_main, b);
  if (e != 0) {
    im__run_say(IM_RUN_SAY_ERROR, "cannot start the built-in server's thread: %s", strerror(e));
    im_server_free(b->srv);
    return -1;
  }
  b->running = true;
  return im_server_port(b->srv);
}

static void builtin_stop(struct builtin *b) {
  if (b->running) {
    im_server_stop(b->srv);
    pthread_join(b->thread, NULL);
    im_server_free(b->srv);
    b->running = false;
  }
  im_tok_free(b->tok);
  b->tok = NULL;
}

static int make_out_dir(struct im_run_config *o, char *buf, size_t cap) {
  if (!o->out_dir) {
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    char name[64];
    strftime(name, sizeof name, "results/run-%Y%m%d-%H%M%S", &tm);
    mkdir("results", 0755);
    snprintf(buf, cap, "%s", name);
  } else {
    snprintf(buf, cap, "%s", o->out_dir);
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
    im__run_say(IM_RUN_SAY_INFO, "--out: cannot create %s: %s", buf, strerror(errno));
    return -1;
  }
  struct stat st;
  if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
    im__run_say(IM_RUN_SAY_INFO, "--out: %s is not a directory", buf);
    return -1;
  }
  o->out_dir = buf;
  return 0;
}

/* ShareGPT lengths counted with --tokenizer (before any loader thread). */
static size_t count_with_tok(const char *text, size_t len, void *ud) {
  size_t n = 0;
  return im_tok_count(ud, text, len, &n) == IM_OK ? n : 0;
}

/* --trace FILE: the format from the file (.csv: Azure; a first line with
 * "hash_ids": Mooncake; else the jsonl request format). */
static const char *trace_format(const char *path) {
  size_t n = strlen(path);
  if (n > 4 && !strcasecmp(path + n - 4, ".csv"))
    return "azure";
  FILE *f = fopen(path, "r");
  char line[4096] = "";
  if (f) {
    if (!fgets(line, sizeof line, f))
      line[0] = '\0';
    fclose(f);
  }
  return strstr(line, "\"hash_ids\"") ? "mooncake" : "jsonl";
}

/* ---- the run --------------------------------------------------------------- */

/* Everything a run holds, released by run_cleanup whatever step failed. */
struct run {
  struct im_run_config o;       /* the caller's, with what the run derives */
  const struct im_run_hooks *h;
  struct run_env env;
  struct im_dataset ds;
  size_t *order;
  struct builtin srv;
  char url[2048], out_dir[4096], model[512], scrape_default[2100];
  json_t *models, *version;
  json_t *engine_decl;           /* what the engine declares of itself (run/declare.c), or NULL */
  struct im_sysdesc sys;  /* model, GPU, parallelism (record/sysdesc.h) */
  int jsonl_fd, raw_fd, stages_fd, series_fd;
  char series_path[4200];
  char *api_key;
  struct run_plan plan;
  bool autosweep;
  struct im_stage *stages;
  struct stage_res *res;
  size_t ran;
  struct im_health health, probe;
  struct im_record_hook hook;   /* the pollers' records to hooks->on_record */
  bool started;     /* a stage began (its start line is in stages.jsonl) */
  bool failed;      /* no stage ran to its end */
  bool hooked;      /* on_start was called: on_load_end will be, once */
  bool stopped_early;
  double discovery_ms;
  bool curl_inited;
  struct im__run_urls urls;     /* several --url (run/urls.h) */
};

/* The tokenizer (a copy per loader thread: its caches serve one thread),
 * the chat template and the content mix. */
static int setup_tokens(struct run *r) {
  struct im_run_config *o = &r->o;
  struct run_env *env = &r->env;
  char msg[512];
  if (o->mix) {
    if (im_mix_parse(o->mix, &env->mix, msg, sizeof msg) != IM_OK) {
      im__run_say(IM_RUN_SAY_ERROR, "%s", msg);
      return -1;
    }
    env->has_mix = true;
  }
  /* The built-in server applies DeepSeek-V3's template; elsewhere only what
   * is declared is counted (discovery may still recognise an infermeter). */
  env->tmpl = o->url == NULL ? IM_CHAT_DEEPSEEK_V3 : IM_CHAT_NONE;
  if (o->chat_template && im_chat_tmpl_parse(o->chat_template, &env->tmpl) != IM_OK) {
    im__run_say(IM_RUN_SAY_ERROR, "--chat-template: expected deepseek-v3, deepseek-r1, chatml, "
                    "llama-3 or none, got '%s'", o->chat_template);
    return -1;
  }
  env->builtin_tok = o->tokenizer && !strcmp(o->tokenizer, "built-in");
  /* --tokenizer server: the target counts, once it is known (discover). */
  if (o->tokenizer && !env->builtin_tok && strcmp(o->tokenizer, "server")) {
    if (!(env->toks = calloc(o->threads, sizeof *env->toks)))
      return -1;
    for (uint32_t k = 0; k < o->threads; k++)
      if (im_tok_load(o->tokenizer, &env->toks[k], msg, sizeof msg) != IM_OK) {
        im__run_say(IM_RUN_SAY_ERROR, "--tokenizer: %s", msg);
        return -1;
      }
    env->tok = env->toks[0];
  }
  env->exact = !o->dataset || !strcmp(o->dataset, "random") || o->tokenizer || o->mix ||
               o->chat_template;
  return 0;
}

/* Descriptors: raise the soft limit, and refuse what it cannot hold. */
static int check_fds(const struct im_run_config *o) {
  uint64_t fd_limit = im_raise_fd_limit();
  uint64_t want = (uint64_t)o->concurrency + o->sessions + o->max_concurrency + 64;
  if (fd_limit && want > fd_limit) {
    im__run_say(IM_RUN_SAY_ERROR, "%" PRIu64 " connections need about %" PRIu64
            " file descriptors, but the limit is %" PRIu64 " (raise it with ulimit -n)",
            want - 64, want, fd_limit);
    return -1;
  }
  return 0;
}

/* The API key: never printed, never recorded. */
static int read_api_key(struct run *r) {
  const char *env_key = getenv("INFERMETER_API_KEY");
  if (!env_key || !*env_key)
    env_key = getenv("OPENAI_API_KEY");
  if (r->o.api_key_file) {
    char err[512];
    if (!(r->api_key = im_read_key_file(r->o.api_key_file, err, sizeof err))) {
      im__run_say(IM_RUN_SAY_INFO, "--api-key-file: %s", err);
      return -1;
    }
  } else if (env_key && *env_key && !(r->api_key = strdup(env_key))) {
    return -1;
  }
  r->env.api_key = r->api_key;
  return 0;
}

/* A dataset or trace file (docs/datasets.md), loaded before anything else
 * so that a bad file costs nothing. */
static int load_dataset(struct run *r) {
  struct im_run_config *o = &r->o;
  struct run_env *env = &r->env;
  env->ds = &r->ds;
  if (o->trace) {
    if (o->dataset && strcmp(o->dataset, "synthetic") && strcmp(o->dataset, "random")) {
      im__run_say(IM_RUN_SAY_ERROR, "--trace and --dataset %s exclude each other", o->dataset);
      return -1;
    }
    o->dataset = trace_format(o->trace);
    o->dataset_path = o->trace;
  }
  env->use_ds = o->dataset && strcmp(o->dataset, "synthetic") && strcmp(o->dataset, "random");
  if (!env->use_ds)
    return 0;
  if (o->sessions || o->session_rate > 0) {
    im__run_say(IM_RUN_SAY_ERROR, "sessions build their own prompts; drop --dataset");
    return -1;
  }
  if (!o->dataset_path) {
    im__run_say(IM_RUN_SAY_ERROR, "--dataset %s needs --dataset-path FILE", o->dataset);
    return -1;
  }
  enum im_ds_format fmt;
  struct im_ds_opts dopt;
  char dmsg[512];
  im_ds_opts_init(&dopt);
  if (env->tok) {
    dopt.count = count_with_tok;
    dopt.count_ud = env->tok;
  }
  dopt.min_prompt_len = o->min_in;
  dopt.max_prompt_len = o->max_in;
  dopt.min_output_len = o->min_out;
  dopt.max_output_len = o->max_out;
  if (im_ds_format_parse(o->dataset, &fmt) != IM_OK ||
      im_dataset_load(&r->ds, o->dataset_path, fmt, &dopt, dmsg, sizeof dmsg) != IM_OK) {
    im__run_say(IM_RUN_SAY_ERROR, "%s", dmsg);
    return -1;
  }
  if (!r->ds.n) {
    im__run_say(IM_RUN_SAY_ERROR, "%s holds no usable request", o->dataset_path);
    return -1;
  }
  /* Timestamps replay unless the user chose a schedule; order = by time. */
  const struct im_ds_item *it = r->ds.items;
  env->replay = it[0].timestamp_ns >= 0 && !o->rate_given && !o->concurrency && !o->sweep;
  if (!(r->order = malloc(r->ds.n * sizeof *r->order)))
    return -1;
  size_t *ord = r->order;
  for (size_t i = 0; i < r->ds.n; i++)
    ord[i] = i;
  if (env->replay && !r->ds.ts_sorted) {
    /* Insertion sort by timestamp (traces come nearly sorted). */
    for (size_t i = 1; i < r->ds.n; i++)
      for (size_t j = i; j > 0 && it[ord[j]].timestamp_ns < it[ord[j - 1]].timestamp_ns; j--) {
        size_t t = ord[j];
        ord[j] = ord[j - 1];
        ord[j - 1] = t;
      }
  }
  env->order = r->order;
  return 0;
}

/* The stages: grid x sweep; rate=auto plans its rates after its first
 * (throughput) stage, so only that one is known now. */
static int plan_stages(struct run *r) {
  const struct im_run_config *o = &r->o;
  struct run_plan *plan = &r->plan;
  if (im__run_plan_parse(o, plan))
    return -1;
  r->autosweep = plan->has_sweep && plan->sweep.is_auto;
  size_t n = plan->n_grid * (plan->has_sweep ? (r->autosweep ? 1 : plan->sweep.nvalues) : 1);
  size_t cap = r->autosweep ? plan->n_grid * (1 + o->sweep_steps) : n;
  if (cap > IM__RUN_MAX_STAGES) {
    im__run_say(IM_RUN_SAY_ERROR, "%zu stages are too many (at most %d)", cap, IM__RUN_MAX_STAGES);
    return -1;
  }
  if (r->autosweep && plan->n_grid > 1) {
    im__run_say(IM_RUN_SAY_ERROR, "--sweep rate=auto cannot be combined with --grid");
    return -1;
  }
  r->stages = calloc(cap, sizeof *r->stages);
  r->res = calloc(cap, sizeof *r->res);
  if (!r->stages || !r->res)
    return -1;
  if (r->autosweep) {
    /* The throughput stage: a closed loop that keeps the server full. */
    struct im_stage *st = &r->stages[0];
    st->set = 1u << IM_PARAM_CONCURRENCY;
    st->values[IM_PARAM_CONCURRENCY] = o->concurrency ? o->concurrency : o->sessions ? o->sessions : 256;
    snprintf(st->label, sizeof st->label, "throughput,concurrency=%.0f",
             st->values[IM_PARAM_CONCURRENCY]);
  } else {
    for (size_t i = 0; i < n; i++)
      if (im__run_plan_stage(plan, i, &r->stages[i])) {
        im__run_say(IM_RUN_SAY_ERROR, "cannot plan stage %zu", i);
        return -1;
      }
  }
  r->env.n_stages = cap;
  return 0;
}

/* The built-in server (started now), or the --url without a trailing
 * slash or /v1. */
static int start_target(struct run *r) {
  if (r->env.builtin) {
    int port = builtin_start(&r->srv, r->o.seed, r->env.tok ? r->o.tokenizer : NULL, &r->o.agent);
    if (port < 0) {
      im__run_say(IM_RUN_SAY_ERROR, "cannot start the built-in server");
      return -1;
    }
    snprintf(r->url, sizeof r->url, "http://127.0.0.1:%d", port);
  } else {
    im_url_normalize(r->o.url, r->url, sizeof r->url);
    if (im__run_urls_init(&r->urls, &r->o))
      return -1;
    if (r->urls.n > 1) {
      r->env.urls = (const char *const *)r->urls.url;
      r->env.n_urls = r->urls.n;
    }
  }
  r->env.url = r->url;
  return 0;
}

/* Against a remote target, the plan is shown (and held to
 * --max-total-tokens) before anything at all is sent to it (ask false);
 * the question comes once discovery found the target reachable (ask
 * true: only the question). */
static int confirm_remote(const struct run *r, bool ask) {
  const struct im_run_config *o = &r->o;
  if (im_url_is_loopback(r->url) && im__run_urls_loopback(&r->urls))
    return 0;
  if (ask)
    return o->yes || !r->h->confirm || r->h->confirm(r->h->data) ? 0 : -1;
  char red[2048];
  im_url_redact(r->url, red, sizeof red);
  uint64_t per_stage = o->requests ? o->requests
                       : (o->concurrency || o->sessions || o->session_rate > 0)
                           ? 0
                           : (uint64_t)(o->rate * (double)o->duration_ns / 1e9);
  uint64_t planned = per_stage * r->env.n_stages;
  uint64_t planned_tokens = planned * ((uint64_t)o->input_len + o->output_len);
  if (o->quiet && o->yes) /* -q --yes: nothing to confirm, nothing to say */
    ;
  else if (planned)
    im__run_say(IM_RUN_SAY_ERROR, "plan for %s: %" PRIu64 " requests in %zu stage(s), "
                    "about %" PRIu64 " tokens (%u in + %u out each)", red, planned,
            r->env.n_stages, planned_tokens, o->input_len, o->output_len);
  else
    im__run_say(IM_RUN_SAY_ERROR, "plan for %s: %zu stage(s) of %.0f s, closed loop or "
                    "sessions (no fixed request count)", red, r->env.n_stages,
            (double)o->duration_ns / 1e9);
  for (uint32_t k = 1; k < r->urls.n; k++) { /* several --url: spread over all */
    im_url_redact(r->urls.url[k], red, sizeof red);
    im__run_say(IM_RUN_SAY_ERROR, "and target %u: %s", k, red);
  }
  if (o->max_total_tokens && (!planned || planned_tokens > o->max_total_tokens)) {
    im__run_say(IM_RUN_SAY_ERROR, "the plan exceeds --max-total-tokens %" PRIu64
                    "; lower --rate, --duration or --requests", o->max_total_tokens);
    return -1;
  }
  return 0;
}

/* Discovery: the server's model list and version go into the manifest.
 * -1: go on; else the exit status. */
static int discover(struct run *r) {
  const struct im_run_config *o = &r->o;
  char err[1024] = "";
  if (o->ready_timeout_ns > 0 &&
      im__run_wait_ready(r->url, r->api_key, &o->net, o->ready_timeout_ns, r->h->tty))
    return im__run_interrupted ? EXIT_INTERRUPTED : EXIT_UNREACHABLE;
  int64_t t0 = im_now_ns();
  long st = im_http_get_json(r->url, "/v1/models", r->api_key, &o->net, &r->models, err,
                                  sizeof err);
  if (st == 0) {
    char red[2048];
    im_url_redact(r->url, red, sizeof red);
    im__run_say(IM_RUN_SAY_ERROR, "target %s unreachable: %s (GET /v1/models failed: check "
                    "--url and that the server is up, e.g. curl %s/v1/models)", red, err, red);
    return EXIT_UNREACHABLE;
  }
  char models_err[sizeof err];
  snprintf(models_err, sizeof models_err, "%s", err);
  if (st == 401 || st == 403) { /* the key (never printed) is missing or refused */
    char red[2048];
    im_url_redact(r->url, red, sizeof red);
    im__run_say(IM_RUN_SAY_ERROR, "target %s refused GET /v1/models (HTTP %ld): %s", red, st,
            r->api_key ? "the API key was not accepted; check the key in --api-key-file, "
                         "$INFERMETER_API_KEY or $OPENAI_API_KEY"
                       : "it needs an API key; pass --api-key-file FILE or set "
                         "$INFERMETER_API_KEY or $OPENAI_API_KEY");
    return EXIT_UNREACHABLE;
  }
  int other = im__run_urls_check(&r->urls, r->api_key, &o->net);
  if (other >= 0)
    return other;
  im_http_get_json(r->url, "/version", r->api_key, &o->net, &r->version, err, sizeof err);
  r->engine_decl = im__run_engine_declared(r->url, r->api_key, &o->net, r->models, r->version);
  r->discovery_ms = (double)(im_now_ns() - t0) / 1e6;
  struct im_sys_flags fl = o->sys;
  fl.kv_bytes_per_token = o->kv_bytes_per_token;
  fl.gpu_memory = o->gpu_memory;
  if (im_sysdesc_resolve(&fl, r->version, &r->sys, err, sizeof err)) {
    im__run_say(IM_RUN_SAY_ERROR, "%s", err);
    return EXIT_USAGE;
  }
  json_t *first = json_array_get(json_object_get(r->models, "data"), 0);
  r->env.model = o->model;
  if (!r->env.model) {
    json_t *id = json_object_get(first, "id");
    if (!json_is_string(id)) {
      char red[2048];
      im_url_redact(r->url, red, sizeof red);
      im__run_say(IM_RUN_SAY_ERROR, "GET %s/v1/models answered %ld without a model id%s%s: pass "
                  "--model NAME, or check that --url is the server's base URL",
                  r->env.builtin ? "(the built-in server)" : red, st, models_err[0] ? "; " : "",
                  models_err);
      return EXIT_UNREACHABLE;
    }
    snprintf(r->model, sizeof r->model, "%s", json_string_value(id));
    r->env.model = r->model;
  }
  /* An infermeter serve found at --url applies DeepSeek-V3's template too. */
  json_t *owner = json_object_get(first, "owned_by");
  if (!o->chat_template && json_is_string(owner) && !strcmp(json_string_value(owner), "infermeter"))
    r->env.tmpl = IM_CHAT_DEEPSEEK_V3;
  return -1;
}

/* DIR/name, new and empty, opened for appends (whole lines from any
 * thread, O_APPEND); its path into path. The descriptor, or -1 (errno). */
static int open_in_dir(const char *dir, const char *name, char *path, size_t cap) {
  snprintf(path, cap, "%s/%s", dir, name);
  return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
}

/* The results folder, requests.jsonl, and the run's salt (every run gets
 * its own: prompts never hit a previous run's cache). */
static int open_outputs(struct run *r) {
  struct im_run_config *o = &r->o;
  if (make_out_dir(o, r->out_dir, sizeof r->out_dir))
    return -1;
  char path[4200];
  r->jsonl_fd = open_in_dir(o->out_dir, "requests.jsonl", path, sizeof path);
  if (r->jsonl_fd < 0) {
    im__run_say(IM_RUN_SAY_ERROR, "cannot write %s: %s", path, strerror(errno));
    return -1;
  }
  r->env.jsonl_fd = r->jsonl_fd;
  snprintf(r->env.salt, sizeof r->env.salt, "%016" PRIx64,
           o->shared_cache ? o->seed : im_mix64(o->seed ^ (uint64_t)im_wall_ns()));
  return 0;
}

/* Observers: a baseline sample now, before the load. */
static void start_observers(struct run *r) {
  const struct im_run_config *o = &r->o;
  struct im_observer_config ocfg;
  im_observer_config_default(&ocfg);
  if (!o->no_scrape) {
    if (o->n_scrape) {
      for (size_t i = 0; i < o->n_scrape; i++)
        ocfg.scrape_urls[ocfg.n_scrape++] = o->scrape[i];
    } else {
      snprintf(r->scrape_default, sizeof r->scrape_default, "%s/metrics", r->url);
      ocfg.scrape_urls[ocfg.n_scrape++] = r->scrape_default;
      for (uint32_t k = 1; k < r->urls.n && ocfg.n_scrape < IM_OBS_MAX_SCRAPE; k++)
        ocfg.scrape_urls[ocfg.n_scrape++] = r->urls.scrape[k]; /* each target's */
    }
  }
  ocfg.dcgm_url = o->dcgm;
  ocfg.interval_ns = o->scrape_interval_ns;
  ocfg.api_key = r->api_key;
  ocfg.net = &o->net;
  ocfg.sockstat = !o->no_sockstat && !o->net.unix_socket && im_url_resolve(r->url, &ocfg.target, &ocfg.target_len) == 0;
  ocfg.gpu = !o->no_gpu;
  char path[4200];
  if (ocfg.n_scrape || ocfg.dcgm_url) {
    r->raw_fd = open_in_dir(o->out_dir, "scrapes.prom", path, sizeof path);
    ocfg.raw_fd = r->raw_fd;
  }
  /* Every sample, as it is taken (record/series.h); the figures are computed
   * from it at the end of each stage. */
  r->series_fd = open_in_dir(o->out_dir, "series.jsonl", r->series_path, sizeof r->series_path);
  if (r->series_fd < 0)
    im_warn("cannot write %s (%s): results.json will lack the server's figures", r->series_path,
            strerror(errno));
  ocfg.series_fd = r->env.series_fd = r->series_fd;
  r->env.series_path = r->series_path;
  if (im_observer_start(&r->env.obs, &ocfg) != IM_OK) {
    im_warn("observers could not start; the run goes on without them");
    r->env.obs = NULL;
  }
}

/* rate=auto's throughput stage measured nothing: why, and what to change. */
static void say_auto_empty(const struct im_run_config *o) {
  double d = (double)o->duration_ns / 1e9, w = (double)o->warmup_ns / 1e9;
  if (o->requests && o->warmup_requests >= o->requests)
    im__run_say(IM_RUN_SAY_ERROR, "--sweep rate=auto: the throughput stage measured no request: "
                "its %" PRIu64 " requests were all warm-up (--warmup %" PRIu64 "); give more "
                "--requests or a smaller --warmup; no rates swept", o->requests, o->warmup_requests);
  else if (!o->requests && o->duration_ns > 0 && o->warmup_ns >= o->duration_ns)
    im__run_say(IM_RUN_SAY_ERROR, "--sweep rate=auto: the throughput stage measured no request: "
                "its %g s were all warm-up (--warmup %g s); give a --duration longer than the "
                "warm-up (e.g. --duration %gs) or a shorter --warmup; no rates swept", d, w,
                w + 10.0);
  else
    im__run_say(IM_RUN_SAY_ERROR, "--sweep rate=auto: the throughput stage completed no request "
                "in its measured window; lengthen --duration (or --requests), or check that the "
                "server answers (its errors are in the stage's summary); no rates swept");
}

/* rate=auto: the rates below the throughput the first stage measured. */
static int plan_auto_rates(struct run *r) {
  struct im_sweep *sw = &r->plan.sweep;
  if (!(r->res[0].throughput > 0) ||
      im_sweep_plan_auto(sw, r->res[0].throughput, r->o.sweep_steps) != IM_OK) {
    say_auto_empty(&r->o);
    return -1;
  }
  for (size_t k = 0; k < sw->nvalues; k++) {
    /* Three significant digits: rates people can read and repeat. */
    char v[32];
    snprintf(v, sizeof v, "%.3g", sw->values[k]);
    sw->values[k] = strtod(v, NULL);
  }
  for (size_t k = 0; k < sw->nvalues; k++)
    if (im_sweep_stage(sw, k, &r->stages[1 + k]) != IM_OK)
      return -1;
  return 0;
}

/* Whether a rate sweep stops after stage i: the first stage that
 * over-saturates or fails its SLOs ends it (higher rates only do worse). */
static bool sweep_stops(const struct run *r, size_t i) {
  const struct run_plan *p = &r->plan;
  const struct stage_res *sr = &r->res[i];
  bool sweeping_rate = p->has_sweep && p->sweep.param == IM_PARAM_RATE && (!r->autosweep || i > 0);
  return sweeping_rate && r->o.stop_on_saturation && i + 1 < r->env.n_stages &&
         (sr->oversaturated || sr->slo_failed) &&
         (!r->o.n_grid || (i + 1) % (p->has_sweep ? p->sweep.nvalues : 1) == 0);
}

/* Runs the stages in order. 0 when at least one ran. */
static int run_stages(struct run *r) {
  const struct im_run_config *o = &r->o;
  struct run_env *env = &r->env;
  for (size_t i = 0; i < env->n_stages && !im__run_interrupted; i++) {
    if (r->autosweep && i == 1 && plan_auto_rates(r))
      break;
    struct im_run_config so = *o;
    /* MPI: rank 0's stage, started on every rank at one instant (run/mpi.h). */
    if (im__mpi.on && i > 0 && im__mpi_stage_begin((uint32_t)i, &r->stages[i], &so))
      break;
    im__run_apply_stage(&so, &r->stages[i]);
    json_t *params = NULL;
    if (env->n_stages > 1) {
      params = im__run_stage_params_json(&r->stages[i]);
      if (!o->quiet)
        im__run_say(IM_RUN_SAY_INFO, "stage %zu/%zu %s", i + 1, env->n_stages, r->stages[i].label);
    }
    r->started = true;
    int rc = im__run_stage(env, &so, (uint32_t)i, i + 1 == env->n_stages,
                           env->n_stages > 1 ? r->stages[i].label : "", params, &r->res[i]);
    /* MPI: the ranks' stage merged at rank 0; its figures steer the sweep. */
    bool peers_stop = im__mpi.on && i + 1 < env->n_stages &&
                      im__mpi_stage_end(o, (uint32_t)i, rc != 0, &r->res[i]);
    json_decref(params);
    if (rc)
      return -1;
    r->ran = i + 1;
    if (peers_stop)
      break;
    if (sweep_stops(r, i)) {
      if (!o->quiet)
        if (im__run_text())
          fprintf(im__run_text(), "sweep stops: stage %zu %s\n", i,
                  r->res[i].slo_failed ? "failed its SLOs" : "is over-saturated");
      r->stopped_early = true;
      break;
    }
  }
  if (r->ran < env->n_stages)
    im_observer_stop(env->obs);
  return r->ran ? 0 : -1;
}

/* manifest.schedule says what ran, not the options' unused defaults: a
 * sessions run is paced by its sessions (no request rate); a sweep names
 * its parameter and values, and a concurrency sweep is closed-loop. */
static void schedule_as_run(const struct run *r, json_t *sched) {
  const struct im_run_config *o = &r->o;
  if (o->sessions || o->session_rate > 0) {
    json_object_set_new(sched, "kind", json_string("sessions"));
    json_object_del(sched, "rate");
    json_object_del(sched, "burstiness");
    json_object_del(sched, "rate_end");
    if (o->sessions)
      json_object_set_new(sched, "sessions", json_integer((json_int_t)o->sessions));
    if (o->session_rate > 0)
      json_object_set_new(sched, "session_rate", json_real(o->session_rate));
  }
  if (!r->plan.has_sweep)
    return;
  const struct im_sweep *sw = &r->plan.sweep;
  bool conc = sw->param == IM_PARAM_CONCURRENCY;
  json_t *vals = json_array();
  for (size_t i = 0; i < sw->nvalues; i++)
    json_array_append_new(vals, conc ? json_integer((json_int_t)sw->values[i]) : json_real(sw->values[i]));
  json_object_set_new(sched, "sweep", json_pack("{s:s, s:o, s:b}", "param", conc ? "concurrency" : "rate",
                                                "values", vals, "auto", sw->is_auto != 0));
  json_object_del(sched, "rate"); /* each stage's is in its params */
  if (conc) {
    json_object_set_new(sched, "kind", json_string("closed"));
    json_object_del(sched, "concurrency");
    json_object_del(sched, "burstiness");
    json_object_del(sched, "rate_end");
  }
}

/* The manifest: the run's settings, the target's answers, the workload as
 * it was made; written before the load (manifest.json), completed by the
 * report with what the stages told. */
static json_t *manifest_json(const struct run *r) {
  const struct im_run_config *o = &r->o;
  const struct run_env *env = &r->env;
  json_t *m = im__run_manifest_json(o, env->url, env->builtin, env->model,
                                    r->models, r->version, im_wall_ns(), env->salt);
  json_object_set_new(m, "discovery_ms", json_real(r->discovery_ms));
  if (r->engine_decl)
    json_object_set(json_object_get(m, "server"), "engine", r->engine_decl);
  json_object_set_new(m, "system", im_sysdesc_json(&r->sys));
  json_t *wl = json_object_get(m, "workload");
  json_object_set_new(wl, "exact_lengths", json_boolean(env->exact));
  json_object_set_new(wl, "tokenizer", json_string(o->tokenizer ? o->tokenizer : "built-in"));
  json_object_set_new(wl, "chat_template", json_string(im_chat_tmpl_name(env->tmpl)));
  if (env->has_mix)
    json_object_set_new(wl, "mix", json_pack("{s:f, s:f}", "text", env->mix.weight[IM_CONTENT_TEXT],
                                             "code", env->mix.weight[IM_CONTENT_CODE]));
  if (o->sessions || o->session_rate > 0)
    json_object_set_new(wl, "sessions",
                        json_pack("{s:I, s:f, s:I, s:I, s:I, s:f}", "concurrent", (json_int_t)o->sessions,
                                  "rate", o->session_rate, "turns", (json_int_t)o->turns,
                                  "context_start", (json_int_t)(o->ctx_start ? o->ctx_start : o->input_len),
                                  "context_end", (json_int_t)(o->ctx_start ? o->ctx_end : o->input_len),
                                  "think_time_s", (double)o->think_ns / 1e9));
  schedule_as_run(r, json_object_get(m, "schedule"));
  if (o->scenario)
    json_object_set_new(m, "scenario", json_string(o->scenario));
  if (o->shard.count)
    json_object_set_new(m, "shard", im__run_shard_json(o));
  if (o->repeat_of > 1)
    json_object_set_new(m, "repeat", json_pack("{s:I, s:I}", "index", (json_int_t)o->repeat_index,
                                               "of", (json_int_t)o->repeat_of));
  if (o->repeat_of > 1 && o->repeat_stage)
    json_object_set_new(json_object_get(m, "repeat"), "stage",
                        json_pack("{s:I, s:s}", "index", (json_int_t)o->repeat_stage, "label",
                                  o->repeat_stage_label));
  return m;
}

/* manifest.json and stages.jsonl, before the load. */
static int open_run_files(struct run *r) {
  const struct im_run_config *o = &r->o;
  const struct run_plan *p = &r->plan;
  char path[4200];
  r->stages_fd = open_in_dir(o->out_dir, "stages.jsonl", path, sizeof path);
  if (r->stages_fd < 0) {
    im__run_say(IM_RUN_SAY_ERROR, "cannot write %s: %s", path, strerror(errno));
    return -1;
  }
  r->env.stages_fd = r->stages_fd;
  bool rate_sweep = p->has_sweep && p->sweep.param == IM_PARAM_RATE && p->n_grid == 1;
  json_t *m = manifest_json(r);
  im__run_verbose_manifest(m);
  struct im_rundir_analysis an = {.n_percentiles = o->scfg.n_percentiles,
                                  .has_slo_ttft = o->scfg.has_slo_ttft,
                                  .has_slo_tpot = o->scfg.has_slo_tpot,
                                  .has_slo_e2el = o->scfg.has_slo_e2el,
                                  .slo_ttft_ms = o->scfg.slo_ttft_ms,
                                  .slo_tpot_ms = o->scfg.slo_tpot_ms,
                                  .slo_e2el_ms = o->scfg.slo_e2el_ms,
                                  .slo_target = o->slo_target,
                                  .pct_metrics = o->scfg.pct_metrics,
                                  .stages_planned = r->env.n_stages,
                                  .rate_sweep = rate_sweep,
                                  .autosweep = r->autosweep,
                                  .kv_residency_ref = o->kv_residency_ref,
                                  .bw_util_ref = o->bw_util_ref,
                                  .kv_bytes_per_token = r->sys.kv_bytes_per_token_per_gpu,
                                  .gpu_memory_bytes = r->sys.gpu_memory_bytes,
                                  .scrape_interval_ns = o->scrape_interval_ns,
                                  .segment_window = o->segment_window,
                                  .segment_stride = o->segment_stride,
                                  .stall_k = o->stall_k,
                                  .timeslice_ns = o->timeslice_ns,
                                  .max_error_rate = o->max_error_rate};
  memcpy(an.percentiles, o->scfg.percentiles, sizeof an.percentiles);
  int rc = m ? im_rundir_write_manifest(o->out_dir, m, &an) : -1;
  json_decref(m);
  if (rc)
    im__run_say(IM_RUN_SAY_ERROR, "cannot write %s/manifest.json: %s", o->out_dir,
            strerror(errno));
  return rc;
}

static void run_cleanup(struct run *r) {
  im__run_srvtok_stop(&r->env);
  im_health_stop(&r->health);
  im_health_stop(&r->probe);
  free(r->res);
  free(r->stages);
  im__run_urls_free(&r->urls);
  if (r->jsonl_fd >= 0)
    close(r->jsonl_fd);
  if (r->stages_fd >= 0)
    close(r->stages_fd);
  im_observer_free(r->env.obs);
  if (r->raw_fd >= 0)
    close(r->raw_fd);
  if (r->series_fd >= 0)
    close(r->series_fd);
  builtin_stop(&r->srv);
  json_decref(r->models);
  json_decref(r->version);
  json_decref(r->engine_decl);
  free(r->order);
  im_dataset_cleanup(&r->ds);
  if (r->api_key) {
    memset(r->api_key, 0, strlen(r->api_key));
    free(r->api_key);
  }
  if (im__run_wake_fd >= 0)
    close(im__run_wake_fd);
  im__run_wake_fd = -1;
  if (r->curl_inited)
    curl_global_cleanup();
  if (r->env.toks) {
    for (uint32_t k = 0; k < r->o.threads; k++)
      im_tok_free(r->env.toks[k]);
    free(r->env.toks);
  }
}


/* The pollers' records, to the caller's hook. */
static void poller_record(void *ctx, const struct im_record *rec) {
  const struct run *r = ctx;
  r->h->on_record(r->h->data, rec);
}

/* --health-interval and --probe-rate beside the load. 0 or -1 (said). */
static int start_pollers(struct run *r) {
  const struct im_run_config *o = &r->o;
  char err[512];
  if (o->health_interval_ns) {
    if (im_health_start(&r->health, r->url, o->health_path, o->health_interval_ns, &o->net,
                        r->api_key, r->jsonl_fd, err, sizeof err)) {
      im__run_say(IM_RUN_SAY_ERROR, "%s", err);
      return -1;
    }
    r->env.health = &r->health;
  }
  if (o->probe_rate > 0) {
    bool chat = o->backend == IM_BACKEND_CHAT;
    if (im_probe_start(&r->probe, r->url, chat ? "/v1/chat/completions" : "/v1/completions",
                       r->env.model, chat, o->probe_rate, o->seed, &o->net, r->api_key,
                       r->jsonl_fd, err, sizeof err)) {
      im__run_say(IM_RUN_SAY_ERROR, "%s", err);
      return -1;
    }
    r->env.probe = &r->probe;
  }
  if (r->h->on_record) {
    r->hook = (struct im_record_hook){.fn = poller_record, .ctx = r};
    im_health_hook(r->env.health, &r->hook);
    im_health_hook(r->env.probe, &r->hook);
  }
  return 0;
}

/* The load is over (or never began after on_start): the sinks take their
 * last from the observer before it is freed. Once. */
static void load_end(struct run *r) {
  if (r->hooked && r->h->on_load_end)
    r->h->on_load_end(r->h->data);
  r->hooked = false;
}

/* Everything from the target to the last stage. -1: went on to the end;
 * else an exit status decided before any figure. */
static int run_all(struct run *r) {
  struct im_run_config *o = &r->o;
  if (setup_tokens(r))
    return IM_EXIT_USAGE;
  if (!o->seed_given)
    o->seed = im_mix64((uint64_t)im_wall_ns() ^ ((uint64_t)getpid() << 32));
  r->env.builtin = o->url == NULL;
  if (!r->env.builtin && (o->agent.serve_time_scale > 0 || o->agent.serve_profile))
    im__run_say(IM_RUN_SAY_INFO, "--serve-profile and --serve-time-scale set the built-in "
                                 "server: ignored with --url");
  if (r->env.builtin && !o->ignore_eos_given && !im__run_agent_eos_free(&o->agent))
    o->ignore_eos = true; /* structured output and reasoning end by themselves */
  if (o->requests)
    o->duration_ns = 0;
  if (check_fds(o) || read_api_key(r))
    return IM_EXIT_USAGE;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  r->curl_inited = true;
  if (load_dataset(r) || plan_stages(r) || start_target(r) || confirm_remote(r, false))
    return IM_EXIT_USAGE;
  int d = discover(r); /* reachable first: a remote target's question comes after */
  if (d >= 0)
    return d;
  if (confirm_remote(r, true))
    return IM_EXIT_USAGE;
  if ((o->tokenizer && !strcmp(o->tokenizer, "server") &&
       im__run_srvtok_start(&r->env, &o->net)) ||
      im__run_context_check(&r->env, o, r->stages, r->models, &o->net))
    return IM_EXIT_USAGE;
  if (open_outputs(r) || open_run_files(r))
    return IM_EXIT_USAGE;
  im__run_wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  r->env.tty = r->h->tty;
  start_observers(r);
  if (r->h->on_start)
    r->h->on_start(r->h->data, o->out_dir, r->env.obs);
  r->hooked = true;
  if (start_pollers(r))
    return IM_EXIT_USAGE;
  if (!o->quiet)
    im__run_say(IM_RUN_SAY_INFO, "%s %s, model %s, %zu stage(s), results in %s",
                r->env.builtin ? "built-in server at" : "target", r->url, r->env.model,
                r->env.n_stages, o->out_dir);
  /* A stage that fails keeps what the others measured: the results are
   * written from the directory whatever happened (the failed stage's end
   * line carries its error). */
  if (im__run_shard_wait(o)) /* interrupted before --start-at */
    return IM_EXIT_INTERRUPTED;
  bool profiling = o->profile_server && im__run_profile(r->url, r->api_key, &o->net, true);
  r->failed = run_stages(r) != 0;
  if (profiling)
    (void)im__run_profile(r->url, r->api_key, &o->net, false);
  im_health_stop(&r->health);
  im_health_stop(&r->probe);
  load_end(r);
  if (r->started && im_rundir_append(r->stages_fd, im_rundir_run_end_json(
                                                       r->stopped_early, im__run_interrupted > 0)))
    im_warn("cannot write stages.jsonl: %s", strerror(errno));
  return -1;
}

enum im_err im_run(const struct im_run_config *c, const struct im_run_hooks *h,
                   struct im_run_outcome *out) {
  static const struct im_run_hooks none = {0};
  memset(out, 0, sizeof *out);
  out->exit = -1;
  struct run *r = calloc(1, sizeof *r);
  if (!r) {
    out->exit = IM_EXIT_USAGE;
    return im_errf(out->err, sizeof out->err, IM_NOMEM, "out of memory");
  }
  r->o = *c;
  r->h = h ? h : &none;
  r->jsonl_fd = r->raw_fd = r->stages_fd = r->series_fd = -1;
  r->env.o = &r->o;
  r->env.jsonl_fd = r->env.stages_fd = r->env.series_fd = -1;
  r->env.hooks = r->h;
  const struct im_run_hooks *outer = say_hooks; /* a replicate inside --repeat */
  say_hooks = r->h;
  out->exit = run_all(r);
  im_health_stop(&r->health);
  im_health_stop(&r->probe);
  load_end(r); /* a run that stopped between on_start and its load */
  snprintf(out->dir, sizeof out->dir, "%s", r->o.out_dir ? r->o.out_dir : "");
  snprintf(out->salt, sizeof out->salt, "%s", r->env.salt);
  out->started = r->started;
  out->failed = r->failed;
  out->engine_failed = r->env.engine_failed;
  run_cleanup(r); /* it says a few things too (the target's token counts) */
  say_hooks = outer;
  free(r);
  if (out->exit >= 0) {
    im_errf(out->err, sizeof out->err, IM_STATE, "the run did not start (exit %d)", out->exit);
    return IM_STATE;
  }
  return IM_OK;
}
