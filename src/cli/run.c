/* infermeter run: drive load at a server (by default a built-in one started
 * in-process), record every attempt, write results, print the summary. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <netdb.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/run_int.h"
#include "im_version.h"
#include "infermeter/clock.h"
#include "infermeter/hist.h"
#include "infermeter/log.h"
#include "infermeter/rng.h"
#include "infermeter/sched.h"
#include "infermeter/stats.h"
#include "infermeter/summary.h"
#include "load/loader.h"
#include "load/dsworkload.h"
#include "load/synth.h"
#include "observe/observer.h"
#include "report/results.h"
#include "serve/server.h"


/* ---- signals ------------------------------------------------------------ */

static volatile int interrupted;
static int wake_fd = -1;

static void on_signal(int sig) {
  (void)sig;
  interrupted++;
  if (wake_fd >= 0) {
    uint64_t one = 1;
    ssize_t r = write(wake_fd, &one, sizeof one);
    (void)r;
  }
}

/* ---- the built-in server on its own thread ------------------------------- */

struct builtin {
  struct im_server *srv;
  pthread_t thread;
  bool running;
};

static void *server_main(void *arg) {
  struct builtin *b = arg;
  if (im_server_run(b->srv) != IM_OK)
    im_warn("built-in server stopped with an error");
  return NULL;
}

static int builtin_start(struct builtin *b, uint64_t seed) {
  struct im_server_config cfg;
  im_server_config_default(&cfg);
  cfg.port = 0;
  cfg.quiet = true;
  cfg.engine.seed = seed;
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
  if (!b->running)
    return;
  im_server_stop(b->srv);
  pthread_join(b->thread, NULL);
  im_server_free(b->srv);
  b->running = false;
}

/* ---- loader threads ------------------------------------------------------ */

struct shard {
  struct im_load_config cfg;
  struct im_load_result res;
  int64_t *times;
  enum im_err err;
  pthread_t thread;
};

static void *shard_main(void *arg) {
  struct shard *s = arg;
  s->err = im_load_run(&s->cfg, &s->res);
  return NULL;
}

/* The observers' final sample comes when the last loader has drained, while
 * its connections are still open (the TCP states then show them). */
struct drain {
  pthread_mutex_t mu;
  uint32_t left;
  struct im_observer *obs;
};

static void on_drained(void *ctx) {
  struct drain *d = ctx;
  pthread_mutex_lock(&d->mu);
  if (d->left && --d->left == 0)
    im_observer_stop(d->obs);
  pthread_mutex_unlock(&d->mu);
}

/* ---- the run ------------------------------------------------------------- */

static double lag_p99_ms(const struct im_record *r, size_t n) {
  double *v = malloc((n ? n : 1) * sizeof *v);
  size_t k = 0;
  if (!v)
    return NAN;
  for (size_t i = 0; i < n; i++)
    if (r[i].t_dispatch >= 0 && r[i].t_sched >= 0)
      v[k++] = (double)(r[i].t_dispatch - r[i].t_sched) / 1e6;
  im_stats_sort(v, k);
  double p = k ? im_stats_pct_nearest(v, k, 0.99) : 0.0;
  free(v);
  return p;
}

/* HDR histograms (ns, 3 significant digits) of the latency metrics over
 * successful measured attempts: they merge by adding counts, so threads,
 * repeated runs and MPI ranks combine exactly (docs/results-schema.md). */
static json_t *histograms_json(const struct im_record *recs, size_t n) {
  enum { TTFT, TPOT, ITL, E2EL, N_H };
  static const char *const names[N_H] = {"ttft_ns", "tpot_ns", "itl_ns", "e2el_ns"};
  struct im_hist h[N_H];
  json_t *out = json_object();
  for (int i = 0; i < N_H; i++)
    if (im_hist_init_default(&h[i]) != IM_OK) {
      for (int j = 0; j < i; j++)
        im_hist_cleanup(&h[j]);
      return out;
    }
  for (size_t i = 0; i < n; i++) {
    const struct im_record *r = &recs[i];
    if (r->kind != IM_KIND_MEASURED || r->error != IM_EC_NONE || r->t_first < 0)
      continue;
    (void)im_hist_record(&h[TTFT], r->t_first - r->t_start);
    (void)im_hist_record(&h[E2EL], r->t_last - r->t_start);
    if (r->output_tokens >= 2)
      (void)im_hist_record(&h[TPOT], (r->t_last - r->t_first) / (int64_t)(r->output_tokens - 1));
    for (uint32_t k = 1; k < r->n_chunks; k++)
      (void)im_hist_record(&h[ITL], ((int64_t)r->chunk_us[k] - (int64_t)r->chunk_us[k - 1]) * 1000);
  }
  for (int i = 0; i < N_H; i++) {
    json_t *j = NULL;
    if (im_hist_to_json(&h[i], &j) == IM_OK)
      json_object_set_new(out, names[i], j);
    im_hist_cleanup(&h[i]);
  }
  return out;
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

int im_cli_run(int argc, char **argv) {
  struct run_opts o;
  im__run_opts_default(&o);
  bool rate_given = false;
  int opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "h", im__run_options, NULL)) != -1) {
    if (opt == 'h') {
      im__run_usage(stdout);
      return EXIT_OK;
    }
    if (opt == '?' || im__run_apply(&o, opt, optarg, &rate_given)) {
      fprintf(stderr, "see: infermeter run --help\n");
      return EXIT_USAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "infermeter run: unexpected argument '%s' (see --help)\n", argv[optind]);
    return EXIT_USAGE;
  }
  if (o.concurrency && rate_given) {
    fprintf(stderr, "infermeter run: --rate and --concurrency exclude each other\n");
    return EXIT_USAGE;
  }
  if (o.sched_kind == IM_SCHED_RAMP && o.rate_end <= 0) {
    fprintf(stderr, "infermeter run: --schedule ramp needs --rate-end\n");
    return EXIT_USAGE;
  }
  if (!o.seed_given)
    o.seed = im_mix64((uint64_t)im_wall_ns() ^ ((uint64_t)getpid() << 32));
  bool builtin = o.url == NULL;
  if (builtin && !o.ignore_eos_given)
    o.ignore_eos = true;
  if (o.requests)
    o.duration_ns = 0;

  /* Descriptors: raise the soft limit, and refuse what it cannot hold. */
  uint64_t fd_limit = im_raise_fd_limit();
  uint64_t want_fds = (uint64_t)(o.concurrency ? o.concurrency : 0) + o.max_concurrency + 64;
  if (fd_limit && want_fds > fd_limit) {
    fprintf(stderr,
            "infermeter run: %" PRIu64 " connections need about %" PRIu64
            " file descriptors, but the limit is %" PRIu64 " (raise it with ulimit -n)\n",
            want_fds - 64, want_fds, fd_limit);
    return EXIT_USAGE;
  }

  /* API key: never printed, never recorded. */
  char *api_key = NULL;
  if (o.api_key_file) {
    if (!(api_key = im__run_read_key_file(o.api_key_file)))
      return EXIT_USAGE;
  } else if (getenv("INFERMETER_API_KEY") && *getenv("INFERMETER_API_KEY")) {
    api_key = strdup(getenv("INFERMETER_API_KEY"));
  } else if (getenv("OPENAI_API_KEY") && *getenv("OPENAI_API_KEY")) {
    api_key = strdup(getenv("OPENAI_API_KEY"));
  }

  curl_global_init(CURL_GLOBAL_DEFAULT);
  int rc = EXIT_USAGE;
  struct im_sched_spec sched_spec;
  memset(&sched_spec, 0, sizeof sched_spec);
  struct im_dataset ds;
  memset(&ds, 0, sizeof ds);
  size_t *order = NULL;
  bool use_ds = o.dataset && strcmp(o.dataset, "synthetic") && strcmp(o.dataset, "random");
  bool replay = false;
  struct builtin srv = {0};
  char url_buf[2048], outbuf[4096], salt[40];
  json_t *models = NULL, *version = NULL, *root = NULL;
  int64_t *times = NULL;
  size_t n_times = 0;
  struct shard *shards = NULL;
  int jsonl_fd = -1, raw_fd = -1;
  struct im_observer *obs = NULL;
  char scrape_default[2100];
  const char *url = o.url;
  char model_buf[512];
  const char *model = o.model;
  /* A dataset or trace file (docs/datasets.md), loaded before anything else
   * so that a bad file costs nothing. */
  if (use_ds) {
    enum im_ds_format fmt;
    struct im_ds_opts dopt;
    char dmsg[512];
    im_ds_opts_init(&dopt);
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
    replay = ds.items[0].timestamp_ns >= 0 && !rate_given && !o.concurrency;
    order = malloc(ds.n * sizeof *order);
    if (!order)
      goto out;
    for (size_t i = 0; i < ds.n; i++)
      order[i] = i;
    if (replay && !ds.ts_sorted) {
      /* Insertion sort by timestamp (traces come nearly sorted). */
      for (size_t i = 1; i < ds.n; i++)
        for (size_t j = i; j > 0 && ds.items[order[j]].timestamp_ns < ds.items[order[j - 1]].timestamp_ns; j--) {
          size_t t = order[j];
          order[j] = order[j - 1];
          order[j - 1] = t;
        }
    }
  }

  if (builtin) {
    int port = builtin_start(&srv, o.seed);
    if (port < 0) {
      fprintf(stderr, "infermeter run: cannot start the built-in server\n");
      goto out;
    }
    snprintf(url_buf, sizeof url_buf, "http://127.0.0.1:%d", port);
    url = url_buf;
  } else {
    snprintf(url_buf, sizeof url_buf, "%s", o.url);
    size_t n = strlen(url_buf);
    while (n && url_buf[n - 1] == '/')
      url_buf[--n] = '\0';
    if (n > 3 && !strcmp(url_buf + n - 3, "/v1"))
      url_buf[n - 3] = '\0';
    url = url_buf;
  }

  /* The schedule, computed ahead: a trace's own timestamps, or a process. */
  if (replay) {
    n_times = o.requests && o.requests < ds.n ? o.requests : ds.n;
    times = malloc(n_times * sizeof *times);
    if (!times)
      goto out;
    for (size_t i = 0; i < n_times; i++)
      times[i] = (int64_t)((double)ds.items[order[i]].timestamp_ns / o.trace_speed);
  } else if (!o.concurrency) {
    sched_spec = (struct im_sched_spec){.kind = o.sched_kind, .rate = o.rate, .rate_end = o.rate_end,
                                        .burstiness = o.burstiness, .duration_ns = o.duration_ns,
                                        .max_requests = o.requests, .seed = o.seed};
    if (o.sched_kind == IM_SCHED_POISSON && o.burstiness != 1.0)
      sched_spec.kind = IM_SCHED_GAMMA;
    const char *why = im_sched_check(&sched_spec);
    if (why || im_sched_generate(&sched_spec, &times, &n_times) != IM_OK) {
      fprintf(stderr, "infermeter run: bad schedule: %s\n", why ? why : "out of memory");
      goto out;
    }
  }
  /* Against a remote target, the plan is shown (and confirmed) before
   * anything at all is sent to it. */
  uint64_t planned = o.concurrency ? (o.requests ? o.requests : 0) : n_times;
  uint64_t planned_tokens = planned * ((uint64_t)o.input_len + o.output_len);

  if (!im__run_is_loopback(url)) {
    char red[2048];
    im__run_redact_url(url, red, sizeof red);
    if (planned)
      fprintf(stderr, "infermeter run: plan for %s: %" PRIu64 " requests, about %" PRIu64
                      " tokens (%u in + %u out each)\n", red, planned, planned_tokens,
              o.input_len, o.output_len);
    else
      fprintf(stderr, "infermeter run: plan for %s: closed loop of %u for %.0f s\n", red,
              o.concurrency, (double)o.duration_ns / 1e9);
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
  long st = im__run_http_get_json(url, "/v1/models", api_key, o.insecure, &models, err, sizeof err);
  if (st == 0) {
    char red[2048];
    im__run_redact_url(url, red, sizeof red);
    fprintf(stderr, "infermeter run: target %s unreachable: %s\n", red, err);
    rc = EXIT_UNREACHABLE;
    goto out;
  }
  im__run_http_get_json(url, "/version", api_key, o.insecure, &version, err, sizeof err);
  double discovery_ms = (double)(im_now_ns() - t_disc) / 1e6;
  if (!model) {
    json_t *id = json_object_get(json_array_get(json_object_get(models, "data"), 0), "id");
    if (!json_is_string(id)) {
      fprintf(stderr, "infermeter run: %s/v1/models answered %ld without a model id; pass --model\n",
              builtin ? "the built-in server" : "the target", st);
      rc = EXIT_UNREACHABLE;
      goto out;
    }
    snprintf(model_buf, sizeof model_buf, "%s", json_string_value(id));
    model = model_buf;
  }

  if (make_out_dir(&o, outbuf, sizeof outbuf))
    goto out;
  char jpath[4200];
  snprintf(jpath, sizeof jpath, "%s/requests.jsonl", o.out_dir);
  jsonl_fd = open(jpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (jsonl_fd < 0) {
    fprintf(stderr, "infermeter run: cannot write %s: %s\n", jpath, strerror(errno));
    goto out;
  }

  /* Every run gets its own salt: prompts never hit a previous run's cache. */
  snprintf(salt, sizeof salt, "%016" PRIx64, o.shared_cache ? o.seed : im_mix64(o.seed ^ (uint64_t)im_wall_ns()));
  struct im_synth synth = {.input_len = o.input_len, .output_len = o.output_len,
                           .range_ratio = o.range_ratio, .ignore_eos = o.ignore_eos,
                           .temperature = o.temperature, .top_p = o.top_p, .seed = o.seed,
                           .prefix_groups = o.prefix_groups, .prefix_len = o.prefix_len,
                           .prefix_share = o.prefix_groups && o.prefix_len && o.prefix_share == 0
                                               ? 1.0 : o.prefix_share};
  snprintf(synth.salt, sizeof synth.salt, "%.12s", o.shared_cache ? "shared" : salt);
  struct im_dsw dsw = {.ds = &ds, .order = order, .synth = &synth};
  synth.perturb = o.perturb;
  synth.times = times;
  synth.n_times = n_times;
  synth.sched = replay || o.concurrency ? NULL : &sched_spec;

  /* Signals: stop dispatching on the first, abort in-flight on the second;
   * installed whatever the inherited disposition (a background job starts
   * with SIGINT ignored). */
  wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  shards = calloc(o.threads, sizeof *shards);
  if (!shards)
    goto out;
  bool tty = isatty(STDERR_FILENO);
  for (uint32_t k = 0; k < o.threads; k++) {
    struct shard *s = &shards[k];
    struct im_load_config *c = &s->cfg;
    im_load_config_default(c);
    c->base_url = url;
    c->backend = o.backend;
    c->model = model;
    c->api_key = api_key;
    c->headers = o.headers;
    c->insecure = o.insecure;
    c->keepalive = o.keepalive;
    c->max_connections = o.max_connections ? (o.max_connections + o.threads - 1) / o.threads : 0;
    c->http2 = o.http2;
    c->continuous_usage = builtin;
    c->cache_salt = o.cache_salt ? salt : NULL;
    c->run_salt = salt;
    c->shard = k;
    c->n_shards = o.threads;
    if (!o.concurrency) {
      /* Deal the global schedule round-robin: the union is exact. */
      size_t mine = n_times / o.threads + (k < n_times % o.threads);
      s->times = malloc((mine ? mine : 1) * sizeof *s->times);
      if (!s->times)
        goto out;
      for (size_t i = k, j = 0; i < n_times; i += o.threads)
        s->times[j++] = times[i];
      c->times = s->times;
      c->n_times = mine;
    } else {
      c->concurrency = o.concurrency / o.threads + (k < o.concurrency % o.threads);
      c->duration_ns = o.duration_ns;
      c->max_requests = o.requests ? o.requests / o.threads + (k < o.requests % o.threads) : 0;
    }
    c->max_concurrency = o.max_concurrency ? (o.max_concurrency + o.threads - 1) / o.threads : 0;
    c->warmup_ns = o.warmup_ns;
    c->warmup_requests = o.warmup_requests;
    c->grace_ns = o.grace_ns;
    c->retries = o.retries;
    c->timeout_connect_ns = o.t_connect;
    c->timeout_ttft_ns = o.t_ttft;
    c->timeout_idle_ns = o.t_idle;
    c->timeout_total_ns = o.t_total;
    c->workload = use_ds ? im_dsw_request : im_synth_request;
    c->workload_ctx = use_ds ? (void *)&dsw : (void *)&synth;
    c->jsonl_fd = jsonl_fd;
    c->interrupt = &interrupted;
    c->wake_fd = k == 0 ? wake_fd : -1;
    c->progress_tty = k == 0 && tty && !o.no_progress;
    c->progress_plain = k == 0 && !tty && !o.no_progress;
  }
  /* Observers: a baseline sample now, before the load. */
  struct im_observer_config ocfg;
  im_observer_config_default(&ocfg);
  if (!o.no_scrape) {
    if (o.n_scrape) {
      for (size_t i = 0; i < o.n_scrape; i++)
        ocfg.scrape_urls[ocfg.n_scrape++] = o.scrape[i];
    } else {
      snprintf(scrape_default, sizeof scrape_default, "%s/metrics", url);
      ocfg.scrape_urls[ocfg.n_scrape++] = scrape_default;
    }
  }
  ocfg.dcgm_url = o.dcgm;
  ocfg.interval_ns = o.scrape_interval_ns;
  ocfg.api_key = api_key;
  ocfg.insecure = o.insecure;
  ocfg.sockstat = !o.no_sockstat && im__run_target_addr(url, &ocfg.target, &ocfg.target_len) == 0;
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

  struct drain drain = {.mu = PTHREAD_MUTEX_INITIALIZER, .left = o.threads, .obs = obs};
  for (uint32_t k = 0; k < o.threads && obs; k++) {
    shards[k].cfg.on_drained = on_drained;
    shards[k].cfg.on_drained_ctx = &drain;
  }
  if (!o.quiet)
    fprintf(stderr, "infermeter: %s %s, model %s, results in %s\n",
            builtin ? "built-in server at" : "target", url, model, o.out_dir);
  for (uint32_t k = 1; k < o.threads; k++)
    pthread_create(&shards[k].thread, NULL, shard_main, &shards[k]);
  shard_main(&shards[0]);
  for (uint32_t k = 1; k < o.threads; k++)
    pthread_join(shards[k].thread, NULL);
  im_observer_stop(obs); /* no-op when on_drained did it (the usual case) */
  for (uint32_t k = 0; k < o.threads; k++) {
    if (shards[k].err) {
      fprintf(stderr, "infermeter run: load engine failed: %s\n", im_strerror(shards[k].err));
      goto out;
    }
  }

  /* Merge the shards. */
  struct im_load_result all = {0};
  double cpu_share = 0;
  size_t total = 0;
  for (uint32_t k = 0; k < o.threads; k++)
    total += shards[k].res.n_records;
  all.records = calloc(total ? total : 1, sizeof *all.records);
  if (!all.records)
    goto out;
  for (uint32_t k = 0; k < o.threads; k++) {
    struct im_load_result *r = &shards[k].res;
    memcpy(all.records + all.n_records, r->records, r->n_records * sizeof *r->records);
    all.n_records += r->n_records;
    free(r->records);
    r->records = NULL;
    r->n_records = 0;
    all.scheduled += r->scheduled;
    all.dispatched += r->dispatched;
    all.fd_exhausted += r->fd_exhausted;
    all.port_exhausted += r->port_exhausted;
    all.interrupted |= r->interrupted;
    if (r->elapsed_ns > all.elapsed_ns)
      all.elapsed_ns = r->elapsed_ns;
    double share = r->elapsed_ns ? r->cpu_s / ((double)r->elapsed_ns / 1e9) : 0;
    cpu_share = share > cpu_share ? share : cpu_share;
    if (k == 0) {
      all.wall_start_ns = r->wall_start_ns;
      memcpy(all.first_error, r->first_error, sizeof all.first_error);
    }
  }

  /* The measured window: end of warm-up to the last scheduled arrival. */
  struct im_summary_config *sc = &o.scfg;
  sc->window_start_ns = o.warmup_ns;
  if (o.warmup_requests && times && o.warmup_requests < n_times)
    sc->window_start_ns = times[o.warmup_requests];
  int64_t last_sched = 0;
  for (size_t i = 0; i < all.n_records; i++)
    if (all.records[i].t_sched > last_sched && all.records[i].kind != IM_KIND_RETRY)
      last_sched = all.records[i].t_sched;
  sc->window_end_ns = o.concurrency ? (o.duration_ns ? o.duration_ns : last_sched) : last_sched;
  if (all.interrupted && sc->window_end_ns > all.elapsed_ns)
    sc->window_end_ns = all.elapsed_ns;
  if (sc->window_end_ns <= sc->window_start_ns)
    sc->window_start_ns = 0;

  struct im_summary sum;
  if (im_summary_compute(all.records, all.n_records, sc, &sum) != IM_OK) {
    fprintf(stderr, "infermeter run: out of memory computing the summary\n");
    goto out;
  }
  sum.scheduled = all.scheduled;
  sum.dispatched = all.dispatched;
  struct im_client_check check;
  im_client_check_compute(lag_p99_ms(all.records, all.n_records), all.scheduled, all.dispatched,
                          sc->slo_ttft_ms, sc->has_slo_ttft, cpu_share, all.fd_exhausted,
                          all.port_exhausted, &check);

  root = json_object();
  json_object_set_new(root, "schema", json_string("infermeter/results/v1"));
  json_t *manifest = im__run_manifest_json(&o, argc, argv, url, builtin, model, models, version,
                                   all.wall_start_ns, salt);
  json_object_set_new(manifest, "discovery_ms", json_real(discovery_ms));
  /* Record times are relative to this CLOCK_MONOTONIC instant; with it they
   * join a server's truth log on the same machine. */
  json_object_set_new(manifest, "t0_monotonic_ns", json_integer((json_int_t)shards[0].res.t0_mono));
  json_object_set_new(manifest, "interrupted", json_boolean(all.interrupted));
  json_object_set_new(root, "manifest", manifest);
  json_t *summary = json_object(), *metrics = json_object(), *audit = json_object();
  json_object_set_new(root, "summary", summary);
  json_object_set_new(root, "metrics", metrics);
  json_object_set_new(root, "audit", audit);
  if (im_summary_vllm_json(&sum, sc, summary) || im_summary_metrics_json(&sum, sc, metrics) ||
      im_client_check_json(&check, audit)) {
    fprintf(stderr, "infermeter run: out of memory writing results\n");
    goto out;
  }
  if (obs) {
    struct im_observer_context octx = {
        .t0_mono = shards[0].res.t0_mono,
        .window_start_ns = sc->window_start_ns,
        .window_end_ns = sc->window_end_ns,
        .client_ttft_p50_ms = NAN,
        .client_ttft_p99_ms = NAN,
        .output_tokens = sum.window_output_tok_rate * sum.window_s,
        .attempts = all.n_records,
        .kv_residency_ref = o.kv_residency_ref,
        .kv_bytes_per_token = o.kv_bytes_per_token,
        .gpu_memory_bytes = o.gpu_memory,
        .bw_util_ref = o.bw_util_ref,
    };
    for (uint32_t k = 0; k < o.threads; k++)
      octx.connections_opened += shards[k].res.connections_opened;
    for (size_t i = 0; i < sc->n_percentiles && sum.ttft.n; i++) {
      if (sc->percentiles[i] == 50)
        octx.client_ttft_p50_ms = sum.ttft.pct[i];
      if (sc->percentiles[i] == 99)
        octx.client_ttft_p99_ms = sum.ttft.pct[i];
    }
    json_t *series = json_object();
    json_object_set_new(root, "series", series);
    if (im_observer_json(obs, &octx, metrics, series) != IM_OK)
      im_warn("out of memory writing the observers' figures");
  }
  json_object_set_new(metrics, "histograms", histograms_json(all.records, all.n_records));
  /* The generator's own samples, per thread. */
  json_t *self = json_array();
  for (uint32_t k = 0; k < o.threads; k++) {
    const struct im_load_result *r = &shards[k].res;
    json_t *t = json_array(), *cpu = json_array(), *lag = json_array(), *inf = json_array();
    for (size_t i = 0; i < r->n_samples; i++) {
      json_array_append_new(t, json_real((double)r->samples[i].t / 1e9));
      json_array_append_new(cpu, json_real(r->samples[i].cpu_share));
      json_array_append_new(lag, json_real(r->samples[i].lag_max_ms));
      json_array_append_new(inf, json_integer(r->samples[i].in_flight));
    }
    json_array_append_new(self, json_pack("{s:o, s:o, s:o, s:o}", "t_s", t, "cpu_share", cpu,
                                          "dispatch_lag_max_ms", lag, "in_flight", inf));
  }
  json_t *series_root = json_object_get(root, "series");
  if (!series_root) {
    series_root = json_object();
    json_object_set_new(root, "series", series_root);
  }
  json_object_set_new(series_root, "client", self);
  /* What the responses say about the cache (usage.prompt_tokens_details,
   * DeepSeek's prompt_cache_hit_tokens, llama.cpp's timings.cache_n). */
  uint64_t ctok = 0, ptok = 0;
  for (size_t i = 0; i < all.n_records; i++) {
    const struct im_record *r = &all.records[i];
    if (r->kind == IM_KIND_MEASURED && r->error == IM_EC_NONE) {
      ctok += r->cached_tokens;
      ptok += r->prompt_tokens;
    }
  }
  json_object_set_new(metrics, "cache_client",
                      json_pack("{s:I, s:I, s:o}", "prompt_tokens", (json_int_t)ptok,
                                "cached_tokens", (json_int_t)ctok, "hit_rate",
                                ptok ? json_real((double)ctok / (double)ptok) : json_null()));
  json_t *client = json_pack("{s:f, s:I, s:I, s:I, s:f, s:I}", "elapsed_s",
                             (double)all.elapsed_ns / 1e9, "scheduled", (json_int_t)all.scheduled,
                             "dispatched", (json_int_t)all.dispatched, "attempts",
                             (json_int_t)all.n_records, "cpu_share", cpu_share, "threads",
                             (json_int_t)o.threads);
  json_object_set_new(metrics, "client", client);
  if (write_results(o.out_dir, root))
    goto out;

  if (!o.quiet) {
    im_report_text(stdout, &sum, sc, &check);
    if (all.first_error[0] && sum.failed)
      fprintf(stdout, "First error: %s\n", all.first_error);
    fprintf(stdout, "Results: %s/results.json, %s/requests.jsonl\n", o.out_dir, o.out_dir);
  }
  bool slo_failed = (sc->has_slo_ttft && sum.slo_ttft_attain < o.slo_target) ||
                    (sc->has_slo_tpot && sum.slo_tpot_attain < o.slo_target) ||
                    (sc->has_slo_e2el && sum.slo_e2el_attain < o.slo_target);
  rc = all.interrupted ? EXIT_INTERRUPTED
       : sum.completed == 0 && all.n_records && all.first_error[0] && !strncmp(all.first_error, "connect", 7)
           ? EXIT_UNREACHABLE
       : !check.valid ? EXIT_INVALID
       : slo_failed ? EXIT_SLO
                    : EXIT_OK;
  im_load_result_cleanup(&all);
out:
  if (shards) {
    for (uint32_t k = 0; k < o.threads; k++) {
      im_load_result_cleanup(&shards[k].res);
      free(shards[k].times);
    }
    free(shards);
  }
  if (jsonl_fd >= 0)
    close(jsonl_fd);
  im_observer_free(obs);
  if (raw_fd >= 0)
    close(raw_fd);
  builtin_stop(&srv);
  json_decref(models);
  json_decref(version);
  json_decref(root);
  free(times);
  free(order);
  im_dataset_cleanup(&ds);
  if (api_key) {
    memset(api_key, 0, strlen(api_key));
    free(api_key);
  }
  if (wake_fd >= 0)
    close(wake_fd);
  wake_fd = -1;
  curl_global_cleanup();
  return rc;
}
