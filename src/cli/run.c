/* infermeter run: drive load at a server (by default a built-in one started
 * in-process), record every attempt, write results, print the summary. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/run_int.h"
#include "infermeter/clock.h"
#include "infermeter/log.h"
#include "infermeter/rng.h"
#include "load/dsworkload.h"
#include "infermeter/tokenizer.h"
#include "observe/observer.h"
#include "serve/server.h"

/* ---- signals ------------------------------------------------------------ */

volatile int im__run_interrupted;
int im__run_wake_fd = -1;

static void on_signal(int sig) {
  (void)sig;
  im__run_interrupted++;
  if (im__run_wake_fd >= 0) {
    uint64_t one = 1;
    ssize_t r = write(im__run_wake_fd, &one, sizeof one);
    (void)r;
  }
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

static int builtin_start(struct builtin *b, uint64_t seed, const char *tokenizer) {
  struct im_server_config cfg;
  im_server_config_default(&cfg);
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
  if (pthread_create(&b->thread, NULL, server_main, b) != 0) {
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

static int write_results(const char *dir, json_t *root) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/results.json", dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if (json_dump_file(root, tmp, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) != 0 ||
      rename(tmp, path) != 0) {
    fprintf(stderr, "infermeter: cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}

static int make_out_dir(struct run_opts *o, char *buf, size_t cap) {
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
    fprintf(stderr, "infermeter: --out: cannot create %s: %s\n", buf, strerror(errno));
    return -1;
  }
  struct stat st;
  if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "infermeter: --out: %s is not a directory\n", buf);
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

int im_cli_run(int argc, char **argv) {
  struct run_opts o;
  im__run_opts_default(&o);
  bool rate_given = false;
  int opt;
  json_t *scenario_keep = NULL;
  const char *scn = im__run_scenario_arg(argc, argv);
  if (scn && im__run_scenario_load(&o, scn, &scenario_keep, &rate_given))
    return EXIT_USAGE;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "h", im__run_options, NULL)) != -1) {
    if (opt == 'h') {
      im__run_usage(stdout);
      json_decref(scenario_keep);
      return EXIT_OK;
    }
    if (opt == '?' || im__run_apply(&o, opt, optarg, &rate_given)) {
      fprintf(stderr, "see: infermeter run --help\n");
      json_decref(scenario_keep);
      return EXIT_USAGE;
    }
  }
  int rc = EXIT_USAGE;
  struct im_dataset ds;
  memset(&ds, 0, sizeof ds);
  size_t *order = NULL;
  struct builtin srv = {0};
  char url_buf[2048], outbuf[4096];
  json_t *models = NULL, *version = NULL, *root = NULL;
  int jsonl_fd = -1, raw_fd = -1;
  struct im_observer *obs = NULL;
  char scrape_default[2100];
  char model_buf[512];
  char *api_key = NULL;
  struct stage_res *res = NULL;
  struct im_stage *stages = NULL;
  struct run_plan plan;
  struct run_env env = {.o = &o, .jsonl_fd = -1};
  bool curl_inited = false;

  if (optind < argc) {
    fprintf(stderr, "infermeter run: unexpected argument '%s' (see --help)\n", argv[optind]);
    goto out;
  }
  bool sessions = o.sessions || o.session_rate;
  if (o.concurrency && rate_given) {
    fprintf(stderr, "infermeter run: --rate and --concurrency exclude each other\n");
    goto out;
  }
  if (o.sessions && o.session_rate) {
    fprintf(stderr, "infermeter run: --sessions and --session-rate exclude each other\n");
    goto out;
  }
  if (sessions && (o.concurrency || rate_given)) {
    fprintf(stderr, "infermeter run: with sessions, --sessions N or --session-rate R replace "
                    "--concurrency and --rate\n");
    goto out;
  }
  if (!sessions && (o.ctx_start || o.think_ns)) {
    fprintf(stderr, "infermeter run: --context-growth and --think-time need --sessions or "
                    "--session-rate\n");
    goto out;
  }
  if (o.sched_kind == IM_SCHED_RAMP && o.rate_end <= 0) {
    fprintf(stderr, "infermeter run: --schedule ramp needs --rate-end\n");
    goto out;
  }
  if (im__run_plan_parse(&o, &plan))
    goto out;
  /* Tokens: the tokenizer, the chat template and the content mix. */
  char msg[512];
  if (o.mix) {
    if (im_mix_parse(o.mix, &env.mix, msg, sizeof msg) != IM_OK) {
      fprintf(stderr, "infermeter run: %s\n", msg);
      goto out;
    }
    env.has_mix = true;
  }
  /* The built-in server applies DeepSeek-V3's template; elsewhere only what
   * is declared is counted. */
  env.tmpl = o.url == NULL ? IM_CHAT_DEEPSEEK_V3 : IM_CHAT_NONE;
  if (o.chat_template && im_chat_tmpl_parse(o.chat_template, &env.tmpl) != IM_OK) {
    fprintf(stderr, "infermeter run: --chat-template: expected deepseek-v3, deepseek-r1, chatml, "
                    "llama-3 or none, got '%s'\n", o.chat_template);
    goto out;
  }
  env.builtin_tok = o.tokenizer && !strcmp(o.tokenizer, "built-in");
  if (o.tokenizer && !env.builtin_tok && im_tok_load(o.tokenizer, &env.tok, msg, sizeof msg) != IM_OK) {
    fprintf(stderr, "infermeter run: --tokenizer: %s\n", msg);
    goto out;
  }
  if (env.tok) {
    /* A copy per loader thread (a tokenizer's caches serve one thread). */
    if (!(env.toks = calloc(o.threads, sizeof *env.toks)))
      goto out;
    env.toks[0] = env.tok;
    for (uint32_t k = 1; k < o.threads; k++)
      if (im_tok_load(o.tokenizer, &env.toks[k], msg, sizeof msg) != IM_OK) {
        fprintf(stderr, "infermeter run: --tokenizer: %s\n", msg);
        goto out;
      }
  }
  env.exact = !o.dataset || !strcmp(o.dataset, "random") || o.tokenizer || o.mix ||
              o.chat_template;
  if (!o.seed_given)
    o.seed = im_mix64((uint64_t)im_wall_ns() ^ ((uint64_t)getpid() << 32));
  env.builtin = o.url == NULL;
  if (env.builtin && !o.ignore_eos_given)
    o.ignore_eos = true;
  if (o.requests)
    o.duration_ns = 0;

  /* Descriptors: raise the soft limit, and refuse what it cannot hold. */
  uint64_t fd_limit = im_raise_fd_limit();
  uint64_t want_fds = (uint64_t)o.concurrency + o.sessions + o.max_concurrency + 64;
  if (fd_limit && want_fds > fd_limit) {
    fprintf(stderr,
            "infermeter run: %" PRIu64 " connections need about %" PRIu64
            " file descriptors, but the limit is %" PRIu64 " (raise it with ulimit -n)\n",
            want_fds - 64, want_fds, fd_limit);
    goto out;
  }

  /* API key: never printed, never recorded. */
  if (o.api_key_file) {
    if (!(api_key = im__run_read_key_file(o.api_key_file)))
      goto out;
  } else if (getenv("INFERMETER_API_KEY") && *getenv("INFERMETER_API_KEY")) {
    api_key = strdup(getenv("INFERMETER_API_KEY"));
  } else if (getenv("OPENAI_API_KEY") && *getenv("OPENAI_API_KEY")) {
    api_key = strdup(getenv("OPENAI_API_KEY"));
  }
  env.api_key = api_key;

  curl_global_init(CURL_GLOBAL_DEFAULT);
  curl_inited = true;
  if (o.trace) {
    if (o.dataset && strcmp(o.dataset, "synthetic") && strcmp(o.dataset, "random")) {
      fprintf(stderr, "infermeter run: --trace and --dataset %s exclude each other\n", o.dataset);
      goto out;
    }
    o.dataset = trace_format(o.trace);
    o.dataset_path = o.trace;
  }
  env.use_ds = o.dataset && strcmp(o.dataset, "synthetic") && strcmp(o.dataset, "random");
  if (env.use_ds && sessions) {
    fprintf(stderr, "infermeter run: sessions build their own prompts; drop --dataset\n");
    goto out;
  }
  /* A dataset or trace file (docs/datasets.md), loaded before anything else
   * so that a bad file costs nothing. */
  if (env.use_ds) {
    enum im_ds_format fmt;
    struct im_ds_opts dopt;
    char dmsg[512];
    im_ds_opts_init(&dopt);
    if (env.tok) {
      dopt.count = count_with_tok;
      dopt.count_ud = env.tok;
    }
    dopt.min_prompt_len = o.min_in;
    dopt.max_prompt_len = o.max_in;
    dopt.min_output_len = o.min_out;
    dopt.max_output_len = o.max_out;
    if (!o.dataset_path) {
      fprintf(stderr, "infermeter run: --dataset %s needs --dataset-path FILE\n", o.dataset);
      goto out;
    }
    if (im_ds_format_parse(o.dataset, &fmt) != IM_OK ||
        im_dataset_load(&ds, o.dataset_path, fmt, &dopt, dmsg, sizeof dmsg) != IM_OK) {
      fprintf(stderr, "infermeter run: %s\n", dmsg);
      goto out;
    }
    if (!ds.n) {
      fprintf(stderr, "infermeter run: %s holds no usable request\n", o.dataset_path);
      goto out;
    }
    /* Timestamps replay unless the user chose a schedule; order = by time. */
    env.replay = ds.items[0].timestamp_ns >= 0 && !rate_given && !o.concurrency && !o.sweep;
    order = malloc(ds.n * sizeof *order);
    if (!order)
      goto out;
    for (size_t i = 0; i < ds.n; i++)
      order[i] = i;
    if (env.replay && !ds.ts_sorted) {
      /* Insertion sort by timestamp (traces come nearly sorted). */
      for (size_t i = 1; i < ds.n; i++)
        for (size_t j = i; j > 0 && ds.items[order[j]].timestamp_ns < ds.items[order[j - 1]].timestamp_ns; j--) {
          size_t t = order[j];
          order[j] = order[j - 1];
          order[j - 1] = t;
        }
    }
  }
  env.ds = &ds;
  env.order = order;

  /* The stages: grid x sweep; rate=auto adds its rates after the first. */
  size_t n_stages = plan.n_grid * (plan.has_sweep ? (plan.sweep.is_auto ? 1 : plan.sweep.nvalues) : 1);
  bool autosweep = plan.has_sweep && plan.sweep.is_auto;
  size_t cap_stages = autosweep ? plan.n_grid * (1 + o.sweep_steps) : n_stages;
  if (cap_stages > IM__RUN_MAX_STAGES) {
    fprintf(stderr, "infermeter run: %zu stages are too many (at most %d)\n", cap_stages, IM__RUN_MAX_STAGES);
    goto out;
  }
  if (autosweep && plan.n_grid > 1) {
    fprintf(stderr, "infermeter run: --sweep rate=auto cannot be combined with --grid\n");
    goto out;
  }
  stages = calloc(cap_stages, sizeof *stages);
  res = calloc(cap_stages, sizeof *res);
  if (!stages || !res)
    goto out;
  if (autosweep) {
    /* The throughput stage: a closed loop that keeps the server full. */
    stages[0].set = 1u << IM_PARAM_CONCURRENCY;
    stages[0].values[IM_PARAM_CONCURRENCY] = o.concurrency ? o.concurrency : o.sessions ? o.sessions : 256;
    snprintf(stages[0].label, sizeof stages[0].label, "throughput,concurrency=%.0f",
             stages[0].values[IM_PARAM_CONCURRENCY]);
  } else {
    for (size_t i = 0; i < n_stages; i++)
      if (im__run_plan_stage(&plan, i, &stages[i])) {
        fprintf(stderr, "infermeter run: cannot plan stage %zu\n", i);
        goto out;
      }
  }
  env.n_stages = autosweep ? cap_stages : n_stages;

  if (env.builtin) {
    int port = builtin_start(&srv, o.seed, env.tok ? o.tokenizer : NULL);
    if (port < 0) {
      fprintf(stderr, "infermeter run: cannot start the built-in server\n");
      goto out;
    }
    snprintf(url_buf, sizeof url_buf, "http://127.0.0.1:%d", port);
  } else {
    snprintf(url_buf, sizeof url_buf, "%s", o.url);
    size_t n = strlen(url_buf);
    while (n && url_buf[n - 1] == '/')
      url_buf[--n] = '\0';
    if (n > 3 && !strcmp(url_buf + n - 3, "/v1"))
      url_buf[n - 3] = '\0';
  }
  env.url = url_buf;

  /* Against a remote target, the plan is shown (and confirmed) before
   * anything at all is sent to it. */
  if (!im__run_is_loopback(env.url)) {
    char red[2048];
    im__run_redact_url(env.url, red, sizeof red);
    uint64_t per_stage = o.requests ? o.requests
                         : (o.concurrency || sessions) ? 0
                                                       : (uint64_t)(o.rate * (double)o.duration_ns / 1e9);
    uint64_t planned = per_stage * env.n_stages;
    uint64_t planned_tokens = planned * ((uint64_t)o.input_len + o.output_len);
    if (planned)
      fprintf(stderr, "infermeter run: plan for %s: %" PRIu64 " requests in %zu stage(s), "
                      "about %" PRIu64 " tokens (%u in + %u out each)\n", red, planned,
              env.n_stages, planned_tokens, o.input_len, o.output_len);
    else
      fprintf(stderr, "infermeter run: plan for %s: %zu stage(s) of %.0f s, closed loop or "
                      "sessions (no fixed request count)\n", red, env.n_stages,
              (double)o.duration_ns / 1e9);
    if (o.max_total_tokens && (!planned || planned_tokens > o.max_total_tokens)) {
      fprintf(stderr, "infermeter run: the plan exceeds --max-total-tokens %" PRIu64
                      "; lower --rate, --duration or --requests\n", o.max_total_tokens);
      goto out;
    }
    if (!o.yes) {
      if (!isatty(STDIN_FILENO)) {
        fprintf(stderr, "infermeter run: not a terminal: add --yes to start against a remote target\n");
        goto out;
      }
      fprintf(stderr, "start? [y/N] ");
      char ans[16] = "";
      if (!fgets(ans, sizeof ans, stdin) || (ans[0] != 'y' && ans[0] != 'Y'))
        goto out;
    }
  }

  /* Discovery: the server's model list and version go into the manifest. */
  char err[256] = "";
  int64_t t_disc = im_now_ns();
  long st = im__run_http_get_json(env.url, "/v1/models", api_key, o.insecure, &models, err, sizeof err);
  if (st == 0) {
    char red[2048];
    im__run_redact_url(env.url, red, sizeof red);
    fprintf(stderr, "infermeter run: target %s unreachable: %s\n", red, err);
    rc = EXIT_UNREACHABLE;
    goto out;
  }
  im__run_http_get_json(env.url, "/version", api_key, o.insecure, &version, err, sizeof err);
  double discovery_ms = (double)(im_now_ns() - t_disc) / 1e6;
  env.model = o.model;
  if (!env.model) {
    json_t *id = json_object_get(json_array_get(json_object_get(models, "data"), 0), "id");
    if (!json_is_string(id)) {
      fprintf(stderr, "infermeter run: %s/v1/models answered %ld without a model id; pass --model\n",
              env.builtin ? "the built-in server" : "the target", st);
      rc = EXIT_UNREACHABLE;
      goto out;
    }
    snprintf(model_buf, sizeof model_buf, "%s", json_string_value(id));
    env.model = model_buf;
  }

  /* An infermeter serve found at --url applies DeepSeek-V3's template too. */
  json_t *owner = json_object_get(json_array_get(json_object_get(models, "data"), 0), "owned_by");
  if (!o.chat_template && json_is_string(owner) && !strcmp(json_string_value(owner), "infermeter"))
    env.tmpl = IM_CHAT_DEEPSEEK_V3;

  if (make_out_dir(&o, outbuf, sizeof outbuf))
    goto out;
  char jpath[4200];
  snprintf(jpath, sizeof jpath, "%s/requests.jsonl", o.out_dir);
  jsonl_fd = open(jpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (jsonl_fd < 0) {
    fprintf(stderr, "infermeter run: cannot write %s: %s\n", jpath, strerror(errno));
    goto out;
  }
  env.jsonl_fd = jsonl_fd;

  /* Every run gets its own salt: prompts never hit a previous run's cache. */
  snprintf(env.salt, sizeof env.salt, "%016" PRIx64,
           o.shared_cache ? o.seed : im_mix64(o.seed ^ (uint64_t)im_wall_ns()));

  /* Signals: stop dispatching on the first, abort in-flight on the second;
   * installed whatever the inherited disposition (a background job starts
   * with SIGINT ignored). */
  im__run_wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  env.tty = isatty(STDERR_FILENO);

  /* Observers: a baseline sample now, before the load. */
  struct im_observer_config ocfg;
  im_observer_config_default(&ocfg);
  if (!o.no_scrape) {
    if (o.n_scrape) {
      for (size_t i = 0; i < o.n_scrape; i++)
        ocfg.scrape_urls[ocfg.n_scrape++] = o.scrape[i];
    } else {
      snprintf(scrape_default, sizeof scrape_default, "%s/metrics", env.url);
      ocfg.scrape_urls[ocfg.n_scrape++] = scrape_default;
    }
  }
  ocfg.dcgm_url = o.dcgm;
  ocfg.interval_ns = o.scrape_interval_ns;
  ocfg.api_key = api_key;
  ocfg.insecure = o.insecure;
  ocfg.sockstat = !o.no_sockstat && im__run_target_addr(env.url, &ocfg.target, &ocfg.target_len) == 0;
  ocfg.gpu = !o.no_gpu;
  char rpath[4200];
  snprintf(rpath, sizeof rpath, "%s/scrapes.prom", o.out_dir);
  if (ocfg.n_scrape || ocfg.dcgm_url) {
    raw_fd = open(rpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    ocfg.raw_fd = raw_fd;
  }
  if (im_observer_start(&obs, &ocfg) != IM_OK) {
    im_warn("observers could not start; the run goes on without them");
    obs = NULL;
  }
  env.obs = obs;
  if (!o.quiet)
    fprintf(stderr, "infermeter: %s %s, model %s, %zu stage(s), results in %s\n",
            env.builtin ? "built-in server at" : "target", env.url, env.model, env.n_stages, o.out_dir);

  root = json_object();
  json_object_set_new(root, "schema", json_string("infermeter/results/v1"));
  json_t *stages_json = env.n_stages > 1 ? json_array() : NULL;
  if (stages_json)
    json_object_set_new(root, "stages", stages_json);
  size_t ran = 0;
  bool stopped_early = false;
  for (size_t i = 0; i < env.n_stages && !im__run_interrupted; i++) {
    if (autosweep && i == 1) {
      /* Plan the rates from the throughput the first stage measured. */
      if (!(res[0].throughput > 0) ||
          im_sweep_plan_auto(&plan.sweep, res[0].throughput, o.sweep_steps) != IM_OK) {
        fprintf(stderr, "infermeter run: the throughput stage completed no request; "
                        "no rates to sweep\n");
        break;
      }
      for (size_t k = 0; k < plan.sweep.nvalues; k++) {
        /* Three significant digits: rates people can read and repeat. */
        char v[32];
        snprintf(v, sizeof v, "%.3g", plan.sweep.values[k]);
        plan.sweep.values[k] = strtod(v, NULL);
      }
      for (size_t k = 0; k < plan.sweep.nvalues; k++)
        if (im_sweep_stage(&plan.sweep, k, &stages[1 + k]) != IM_OK)
          goto out;
    }
    struct run_opts so = o;
    im__run_apply_stage(&so, &stages[i]);
    json_t *dst = root;
    if (stages_json) {
      dst = json_pack("{s:I, s:s, s:o}", "index", (json_int_t)i, "label", stages[i].label,
                      "params", im__run_stage_params_json(&stages[i]));
      json_array_append_new(stages_json, dst);
      if (!o.quiet)
        fprintf(stderr, "infermeter: stage %zu/%zu %s\n", i + 1, env.n_stages, stages[i].label);
    }
    if (im__run_stage(&env, &so, (uint32_t)i, i + 1 == env.n_stages, dst, &res[i]))
      goto out;
    ran = i + 1;
    if (stages_json && !o.quiet)
      im__run_stage_line(stdout, i, stages[i].label, &res[i], &res[i].sc);
    /* A rate sweep stops at the first stage that over-saturates or fails
     * its SLOs (the higher rates can only fail too). */
    bool sweeping_rate = plan.has_sweep && plan.sweep.param == IM_PARAM_RATE && (!autosweep || i > 0);
    if (sweeping_rate && o.stop_on_saturation && i + 1 < env.n_stages &&
        ((res[i].sat_judged && res[i].sat.growing) || res[i].slo_failed) &&
        (!o.n_grid || (i + 1) % (plan.has_sweep ? plan.sweep.nvalues : 1) == 0)) {
      if (!o.quiet)
        fprintf(stdout, "sweep stops: stage %zu %s\n", i,
                res[i].slo_failed ? "failed its SLOs" : "is over-saturated");
      stopped_early = true;
      break;
    }
  }
  if (ran < env.n_stages)
    im_observer_stop(obs);
  if (!ran)
    goto out;

  /* The sweep's verdict: the highest rate whose goodput meets the SLOs. */
  json_t *sweep_json = NULL;
  if (plan.has_sweep && plan.sweep.param == IM_PARAM_RATE && plan.n_grid == 1) {
    size_t first = autosweep ? 1 : 0, n = ran > first ? ran - first : 0;
    double rates[IM_STAGE_MAX_VALUES], attain[IM_STAGE_MAX_VALUES];
    int over[IM_STAGE_MAX_VALUES];
    for (size_t k = 0; k < n; k++) {
      rates[k] = stages[first + k].values[IM_PARAM_RATE];
      attain[k] = o.scfg.has_slo_ttft || o.scfg.has_slo_tpot || o.scfg.has_slo_e2el
                      ? res[first + k].sum.slo_all_attain : 1.0;
      over[k] = res[first + k].sat_judged && res[first + k].sat.growing;
    }
    size_t idx = 0;
    enum im_err e = n ? im_sweep_saturation_point(rates, attain, over, n, o.slo_target, &idx)
                      : IM_NOTFOUND;
    sweep_json = json_pack("{s:s, s:b, s:b}", "param", "rate", "auto", autosweep,
                           "stopped_early", stopped_early);
    if (autosweep)
      json_object_set_new(sweep_json, "max_throughput_rps", json_real(res[0].throughput));
    json_object_set_new(sweep_json, "slo_target", json_real(o.slo_target));
    json_object_set_new(sweep_json, "saturation_point",
                        e == IM_OK ? json_pack("{s:I, s:f, s:s}", "stage", (json_int_t)(first + idx),
                                               "rate", rates[idx], "label", stages[first + idx].label)
                                   : json_null());
    json_object_set_new(root, "sweep", sweep_json);
    if (!o.quiet) {
      if (e == IM_OK)
        fprintf(stdout, "Saturation point: %.4g req/s (stage %zu): the highest rate whose goodput "
                        "meets the SLOs%s\n", rates[idx], first + idx,
                o.scfg.has_slo_ttft || o.scfg.has_slo_tpot || o.scfg.has_slo_e2el
                    ? "" : " (no SLO given: over-saturation only)");
      else
        fprintf(stdout, "Saturation point: none (the lowest rate already fails)\n");
    }
  }

  json_t *manifest = im__run_manifest_json(&o, argc, argv, env.url, env.builtin, env.model, models,
                                           version, res[0].wall_start_ns, env.salt);
  json_object_set_new(manifest, "discovery_ms", json_real(discovery_ms));
  /* Record times are relative to this CLOCK_MONOTONIC instant (per stage:
   * stages[].t0_monotonic_ns); with it they join a server's truth log on the
   * same machine. */
  json_object_set_new(manifest, "t0_monotonic_ns", json_integer((json_int_t)res[0].t0_mono));
  bool any_int = false;
  for (size_t i = 0; i < ran; i++)
    any_int |= res[i].interrupted;
  json_object_set_new(manifest, "interrupted", json_boolean(any_int));
  json_object_set_new(manifest, "stages", json_integer((json_int_t)ran));
  json_t *wl = json_object_get(manifest, "workload");
  json_object_set_new(wl, "exact_lengths", json_boolean(env.exact));
  json_object_set_new(wl, "tokenizer", o.tokenizer ? json_string(o.tokenizer) : json_string("built-in"));
  json_object_set_new(wl, "chat_template", json_string(im_chat_tmpl_name(env.tmpl)));
  if (env.has_mix)
    json_object_set_new(wl, "mix", json_pack("{s:f, s:f}", "text", env.mix.weight[IM_CONTENT_TEXT],
                                             "code", env.mix.weight[IM_CONTENT_CODE]));
  if (o.sessions || o.session_rate)
    json_object_set_new(wl, "sessions",
                        json_pack("{s:I, s:f, s:I, s:I, s:I, s:f}", "concurrent", (json_int_t)o.sessions,
                                  "rate", o.session_rate, "turns", (json_int_t)o.turns,
                                  "context_start", (json_int_t)(o.ctx_start ? o.ctx_start : o.input_len),
                                  "context_end", (json_int_t)(o.ctx_start ? o.ctx_end : o.input_len),
                                  "think_time_s", (double)o.think_ns / 1e9));
  if (scn)
    json_object_set_new(manifest, "scenario", json_string(scn));
  json_object_set_new(root, "manifest", manifest);
  if (write_results(o.out_dir, root))
    goto out;
  if (!o.quiet)
    fprintf(stdout, "Results: %s/results.json, %s/requests.jsonl\n", o.out_dir, o.out_dir);

  bool invalid = false, slo = false, unreachable = true;
  for (size_t i = 0; i < ran; i++) {
    invalid |= !res[i].check.valid;
    unreachable &= res[i].unreachable;
    /* In a rate sweep failing SLOs is what finds the point: only the
     * missing point counts. */
    if (!(plan.has_sweep && plan.sweep.param == IM_PARAM_RATE))
      slo |= res[i].slo_failed;
  }
  if (sweep_json && json_is_null(json_object_get(sweep_json, "saturation_point")))
    slo = true;
  rc = any_int ? EXIT_INTERRUPTED : unreachable ? EXIT_UNREACHABLE : invalid ? EXIT_INVALID
       : slo ? EXIT_SLO : EXIT_OK;
out:
  free(res);
  free(stages);
  if (jsonl_fd >= 0)
    close(jsonl_fd);
  im_observer_free(obs);
  if (raw_fd >= 0)
    close(raw_fd);
  builtin_stop(&srv);
  json_decref(models);
  json_decref(version);
  json_decref(root);
  json_decref(scenario_keep);
  free(order);
  im_dataset_cleanup(&ds);
  if (api_key) {
    memset(api_key, 0, strlen(api_key));
    free(api_key);
  }
  if (im__run_wake_fd >= 0)
    close(im__run_wake_fd);
  im__run_wake_fd = -1;
  if (curl_inited)
    curl_global_cleanup();
  if (env.toks) {
    for (uint32_t k = 1; k < o.threads; k++)
      im_tok_free(env.toks[k]);
    free(env.toks);
  }
  im_tok_free(env.tok);
  return rc;
}
