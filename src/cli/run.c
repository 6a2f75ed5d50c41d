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
#include <strings.h>
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
#include "load/session.h"
#include "workload/simpletok.h"
#include "load/synth.h"
#include "infermeter/stages.h"
#include "infermeter/chattmpl.h"
#include "infermeter/content.h"
#include "infermeter/tokenizer.h"
#include "analyze/breakdown.h"
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

/* ---- what every stage of a run shares ------------------------------------- */

struct run_env {
  struct run_opts *o;
  const char *url;
  bool builtin;
  const char *model;
  char *api_key;
  struct im_dataset *ds;
  size_t *order;
  bool use_ds, replay;
  char salt[40];
  int jsonl_fd;
  struct im_observer *obs;
  bool tty;
  size_t n_stages;
  struct im_tok *tok;             /* --tokenizer, or NULL */
  struct im_tok **toks;           /* one per loader thread (toks[0] = tok), or NULL */
  bool builtin_tok;               /* --tokenizer built-in: counts outputs too */
  bool exact;                     /* prompts of exact token lengths */
  enum im_chat_tmpl tmpl;
  bool has_mix;
  struct im_mix mix;
};

/* One stage's outcome, for the verdicts and the sweep. */
struct stage_res {
  struct im_summary sum;
  struct im_summary_config sc;
  struct im_client_check check;
  bool interrupted, unreachable, slo_failed;
  int64_t t0_mono, wall_start_ns;
  struct im_saturation sat;
  bool sat_judged;
  double throughput;              /* completed requests per s of the window */
  char first_error[256];
};

static bool slo_failed(const struct im_summary *sum, const struct im_summary_config *sc,
                       double target) {
  return (sc->has_slo_ttft && sum->slo_ttft_attain < target) ||
         (sc->has_slo_tpot && sum->slo_tpot_attain < target) ||
         (sc->has_slo_e2el && sum->slo_e2el_attain < target);
}

/* The stage's settings applied to a copy of the run's options. */
static void apply_stage(struct run_opts *so, const struct im_stage *st) {
  if (st->set & (1u << IM_PARAM_TEMPERATURE))
    so->temperature = st->values[IM_PARAM_TEMPERATURE];
  if (st->set & (1u << IM_PARAM_TOP_P))
    so->top_p = st->values[IM_PARAM_TOP_P];
  if (st->set & (1u << IM_PARAM_OUTPUT_LEN))
    so->output_len = (uint32_t)st->values[IM_PARAM_OUTPUT_LEN];
  if (st->set & (1u << IM_PARAM_INPUT_LEN))
    so->input_len = (uint32_t)st->values[IM_PARAM_INPUT_LEN];
  if (st->set & (1u << IM_PARAM_RATE)) {
    if (so->sessions || so->session_rate) {
      so->sessions = 0;
      so->session_rate = st->values[IM_PARAM_RATE];
    } else {
      so->rate = st->values[IM_PARAM_RATE];
      so->concurrency = 0;
    }
  }
  if (st->set & (1u << IM_PARAM_CONCURRENCY)) {
    if (so->sessions || so->session_rate) {
      so->session_rate = 0;
      so->sessions = (uint32_t)st->values[IM_PARAM_CONCURRENCY];
    } else {
      so->concurrency = (uint32_t)st->values[IM_PARAM_CONCURRENCY];
    }
  }
}

/* Output tokens of a stream without usage, with --tokenizer: ctx is the
 * loader thread's own workload (its own tokenizer). */
static uint32_t count_output(void *ctx, const char *text, size_t len) {
  const struct im_synth *sy = ctx;
  size_t n = 0;
  if (!len)
    return 0;
  if (!sy->tok)
    return (uint32_t)im_simpletok_encode(text, len, NULL, 0);
  if (im_tok_count(sy->tok, text, len, &n) != IM_OK)
    n = 0;
  return (uint32_t)n;
}

/* What one loader thread's workload needs: prompts are built on the
 * thread, and a tokenizer serves one thread, so each has its own. */
struct workload {
  struct im_synth synth;
  struct im_dsw dsw;
  struct im_sessions sess;
  struct im_session_ops sops;
};

/* Over-saturation of a stage (stages.h): the client's in-flight count per
 * second and the TTFT of measured requests by arrival, warm-up dropped. */
static void judge_saturation(const struct shard *shards, uint32_t threads,
                             const struct im_load_result *all, const struct im_summary_config *sc,
                             struct stage_res *out) {
  const struct im_load_result *r0 = &shards[0].res;
  size_t n = r0->n_samples, k = 0, m = 0;
  struct im_tpoint *inf = calloc(n ? n : 1, sizeof *inf);
  struct im_tpoint *tt = calloc(all->n_records ? all->n_records : 1, sizeof *tt);
  if (!inf || !tt)
    goto done;
  for (size_t i = 0; i < n; i++) {
    if (r0->samples[i].t < sc->window_start_ns)
      continue;
    double v = 0;
    for (uint32_t t = 0; t < threads; t++)
      if (i < shards[t].res.n_samples)
        v += shards[t].res.samples[i].in_flight;
    inf[k++] = (struct im_tpoint){(double)r0->samples[i].t / 1e9, v};
  }
  for (size_t i = 0; i < all->n_records; i++) {
    const struct im_record *r = &all->records[i];
    if (r->kind == IM_KIND_MEASURED && r->t_first >= 0)
      tt[m++] = (struct im_tpoint){(double)r->t_sched / 1e9, (double)(r->t_first - r->t_sched) / 1e6};
  }
  out->sat_judged = im_stage_check_saturation(inf, k, tt, m, &out->sat) == IM_OK;
done:
  free(inf);
  free(tt);
}

static json_t *saturation_json(const struct stage_res *sr) {
  if (!sr->sat_judged)
    return json_null();
  const struct im_saturation *s = &sr->sat;
  return json_pack("{s:b, s:f, s:f, s:f, s:f, s:s}", "oversaturated", s->growing,
                   "inflight_slope_per_s", isfinite(s->slope) ? s->slope : 0.0, "t_stat",
                   isfinite(s->t_stat) ? s->t_stat : 1e300, "inflight_first_third",
                   s->first_mean, "inflight_last_third", s->last_mean, "reason",
                   s->reason ? s->reason : "");
}

/* Runs one stage and writes its figures into dst (the results' root for a
 * single-stage run, else the stage's object). 0, or -1 when the stage could
 * not run (the reason said). */
static int run_stage(struct run_env *env, const struct run_opts *so, uint32_t stage,
                     bool last_stage, json_t *dst, struct stage_res *out) {
  struct run_opts *o = env->o;
  int rc = -1;
  int64_t *times = NULL;
  size_t n_times = 0;
  struct shard *shards = NULL;
  struct workload *wl = NULL;
  struct im_load_result all = {0};
  struct im_sched_spec sched_spec;
  memset(&sched_spec, 0, sizeof sched_spec);
  memset(out, 0, sizeof *out);
  bool sessions = so->sessions || so->session_rate;
  uint32_t closed = sessions ? so->sessions : so->concurrency;

  /* The schedule, computed ahead: a trace's own timestamps, or a process
   * (of requests, or of session starts). */
  if (env->replay) {
    n_times = o->requests && o->requests < env->ds->n ? o->requests : env->ds->n;
    times = malloc(n_times * sizeof *times);
    if (!times)
      goto out;
    for (size_t i = 0; i < n_times; i++)
      times[i] = (int64_t)((double)env->ds->items[env->order[i]].timestamp_ns / o->trace_speed);
  } else if (!closed) {
    double rate = sessions ? so->session_rate : so->rate;
    sched_spec = (struct im_sched_spec){.kind = so->sched_kind, .rate = rate, .rate_end = so->rate_end,
                                        .burstiness = so->burstiness, .duration_ns = so->duration_ns,
                                        .max_requests = so->requests, .seed = o->seed + stage};
    if (so->sched_kind == IM_SCHED_POISSON && so->burstiness != 1.0)
      sched_spec.kind = IM_SCHED_GAMMA;
    if (sessions && so->duration_ns == 0) /* --requests caps turns, not starts */
      sched_spec.duration_ns = (int64_t)((double)so->requests / rate * 1e9) + 1;
    const char *why = im_sched_check(&sched_spec);
    if (why || im_sched_generate(&sched_spec, &times, &n_times) != IM_OK) {
      fprintf(stderr, "infermeter run: bad schedule: %s\n", why ? why : "out of memory");
      goto out;
    }
  }

  struct im_synth synth = {.input_len = so->input_len, .output_len = so->output_len,
                           .range_ratio = so->range_ratio, .ignore_eos = so->ignore_eos,
                           .temperature = so->temperature, .top_p = so->top_p, .seed = o->seed,
                           .prefix_groups = so->prefix_groups, .prefix_len = so->prefix_len,
                           /* Prefix groups without --prefix-share: every request. */
                           .prefix_share = isnan(so->prefix_share) ? 1.0 : so->prefix_share};
  snprintf(synth.salt, sizeof synth.salt, "%.12s", o->shared_cache ? "shared" : env->salt);
  synth.exact = env->exact;
  synth.chat = so->backend == IM_BACKEND_CHAT;
  synth.tmpl = env->tmpl;
  synth.has_mix = env->has_mix;
  synth.mix = env->mix;
  synth.perturb = so->perturb;
  synth.times = sessions ? NULL : times;
  synth.n_times = sessions ? 0 : n_times;
  synth.sched = env->replay || closed ? NULL : &sched_spec;
  wl = calloc(o->threads, sizeof *wl);
  shards = calloc(o->threads, sizeof *shards);
  if (!shards || !wl)
    goto out;
  for (uint32_t k = 0; k < o->threads; k++) {
    struct workload *w = &wl[k];
    w->synth = synth;
    w->synth.tok = env->toks ? env->toks[k] : NULL;
    w->dsw = (struct im_dsw){.ds = env->ds, .order = env->order, .synth = &w->synth};
    w->sess = (struct im_sessions){.synth = &w->synth, .backend = so->backend, .turns = so->turns,
                                   .ctx_start = so->ctx_start ? so->ctx_start : so->input_len,
                                   .ctx_end = so->ctx_start ? so->ctx_end : so->input_len,
                                   .min_user = 32, .think_ns = so->think_ns};
    im_sessions_ops(&w->sess, &w->sops);
  }
  for (uint32_t k = 0; k < o->threads; k++) {
    struct shard *s = &shards[k];
    struct im_load_config *c = &s->cfg;
    im_load_config_default(c);
    c->base_url = env->url;
    c->backend = so->backend;
    c->model = env->model;
    c->api_key = env->api_key;
    c->headers = o->headers;
    c->insecure = o->insecure;
    c->keepalive = o->keepalive;
    c->max_connections = o->max_connections ? (o->max_connections + o->threads - 1) / o->threads : 0;
    c->http2 = o->http2;
    c->continuous_usage = env->builtin;
    c->cache_salt = o->cache_salt ? env->salt : NULL;
    c->run_salt = env->salt;
    c->shard = k;
    c->n_shards = o->threads;
    c->stage = stage;
    if (!closed) {
      /* Deal the global schedule round-robin: the union is exact. */
      size_t mine = n_times / o->threads + (k < n_times % o->threads);
      s->times = malloc((mine ? mine : 1) * sizeof *s->times);
      if (!s->times)
        goto out;
      for (size_t i = k, j = 0; i < n_times; i += o->threads)
        s->times[j++] = times[i];
      c->times = s->times;
      c->n_times = mine;
      if (sessions)
        c->duration_ns = so->duration_ns;
    } else {
      c->concurrency = closed / o->threads + (k < closed % o->threads);
      c->duration_ns = so->duration_ns;
    }
    if (closed || sessions)
      c->max_requests = so->requests ? so->requests / o->threads + (k < so->requests % o->threads) : 0;
    c->max_concurrency = o->max_concurrency ? (o->max_concurrency + o->threads - 1) / o->threads : 0;
    c->warmup_ns = so->warmup_ns;
    c->warmup_requests = so->warmup_requests;
    c->grace_ns = o->grace_ns;
    c->retries = o->retries;
    c->timeout_connect_ns = o->t_connect;
    c->timeout_ttft_ns = o->t_ttft;
    c->timeout_idle_ns = o->t_idle;
    c->timeout_total_ns = o->t_total;
    c->workload = env->use_ds ? im_dsw_request : im_synth_request;
    struct workload *w = &wl[k];
    c->workload_ctx = env->use_ds ? (void *)&w->dsw : sessions ? (void *)&w->sess : (void *)&w->synth;
    c->session = sessions ? &w->sops : NULL;
    if (env->toks || env->builtin_tok) {
      c->count_output = count_output;
      c->count_ctx = &w->synth;
    }
    c->jsonl_fd = env->jsonl_fd;
    c->interrupt = &interrupted;
    c->wake_fd = k == 0 ? wake_fd : -1;
    c->progress_tty = k == 0 && env->tty && !o->no_progress;
    c->progress_plain = k == 0 && !env->tty && !o->no_progress;
  }
  /* The observers' final sample comes when the last stage has drained. */
  struct drain drain = {.mu = PTHREAD_MUTEX_INITIALIZER, .left = o->threads, .obs = env->obs};
  for (uint32_t k = 0; k < o->threads && env->obs && last_stage; k++) {
    shards[k].cfg.on_drained = on_drained;
    shards[k].cfg.on_drained_ctx = &drain;
  }
  for (uint32_t k = 1; k < o->threads; k++)
    pthread_create(&shards[k].thread, NULL, shard_main, &shards[k]);
  shard_main(&shards[0]);
  for (uint32_t k = 1; k < o->threads; k++)
    pthread_join(shards[k].thread, NULL);
  if (last_stage)
    im_observer_stop(env->obs); /* no-op when on_drained did it (the usual case) */
  for (uint32_t k = 0; k < o->threads; k++) {
    if (shards[k].err) {
      fprintf(stderr, "infermeter run: load engine failed: %s\n", im_strerror(shards[k].err));
      goto out;
    }
  }

  /* Merge the shards. */
  double cpu_share = 0;
  size_t total = 0;
  for (uint32_t k = 0; k < o->threads; k++)
    total += shards[k].res.n_records;
  all.records = calloc(total ? total : 1, sizeof *all.records);
  if (!all.records)
    goto out;
  for (uint32_t k = 0; k < o->threads; k++) {
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
  out->t0_mono = shards[0].res.t0_mono;
  out->wall_start_ns = all.wall_start_ns;
  out->interrupted = all.interrupted;
  memcpy(out->first_error, all.first_error, sizeof out->first_error);

  /* The measured window: end of warm-up to the last scheduled arrival. */
  struct im_summary_config *sc = &out->sc;
  *sc = o->scfg;
  sc->window_start_ns = so->warmup_ns;
  if (so->warmup_requests && times && so->warmup_requests < n_times && !sessions)
    sc->window_start_ns = times[so->warmup_requests];
  int64_t last_sched = 0;
  for (size_t i = 0; i < all.n_records; i++)
    if (all.records[i].t_sched > last_sched && all.records[i].kind != IM_KIND_RETRY)
      last_sched = all.records[i].t_sched;
  sc->window_end_ns = closed ? (so->duration_ns ? so->duration_ns : last_sched) : last_sched;
  if (all.interrupted && sc->window_end_ns > all.elapsed_ns)
    sc->window_end_ns = all.elapsed_ns;
  if (sc->window_end_ns <= sc->window_start_ns)
    sc->window_start_ns = 0;

  struct im_summary *sum = &out->sum;
  if (im_summary_compute(all.records, all.n_records, sc, sum) != IM_OK) {
    fprintf(stderr, "infermeter run: out of memory computing the summary\n");
    goto out;
  }
  sum->scheduled = all.scheduled;
  sum->dispatched = all.dispatched;
  im_client_check_compute(lag_p99_ms(all.records, all.n_records), all.scheduled, all.dispatched,
                          sc->slo_ttft_ms, sc->has_slo_ttft, cpu_share, all.fd_exhausted,
                          all.port_exhausted, &out->check);
  /* vLLM's request_throughput: completed requests over the stage, first send
   * to last completion (the window may hold no completion in a short
   * closed-loop stage of long requests). */
  out->throughput = sum->request_throughput;
  out->slo_failed = slo_failed(sum, sc, o->slo_target);
  out->unreachable = sum->completed == 0 && all.n_records && all.first_error[0] &&
                     !strncmp(all.first_error, "connect", 7);
  judge_saturation(shards, o->threads, &all, sc, out);

  json_t *summary = json_object(), *metrics = json_object(), *audit = json_object();
  json_object_set_new(dst, "summary", summary);
  json_object_set_new(dst, "metrics", metrics);
  json_object_set_new(dst, "audit", audit);
  if (im_summary_vllm_json(sum, sc, summary) || im_summary_metrics_json(sum, sc, metrics) ||
      im_client_check_json(&out->check, audit)) {
    fprintf(stderr, "infermeter run: out of memory writing results\n");
    goto out;
  }
  json_t *series = json_object();
  json_object_set_new(dst, "series", series);
  if (env->obs) {
    struct im_observer_context octx = {
        .t0_mono = out->t0_mono,
        .window_start_ns = sc->window_start_ns,
        .window_end_ns = sc->window_end_ns,
        .client_ttft_p50_ms = NAN,
        .client_ttft_p99_ms = NAN,
        .output_tokens = sum->window_output_tok_rate * sum->window_s,
        .attempts = all.n_records,
        .kv_residency_ref = o->kv_residency_ref,
        .kv_bytes_per_token = o->kv_bytes_per_token,
        .gpu_memory_bytes = o->gpu_memory,
        .bw_util_ref = o->bw_util_ref,
    };
    for (uint32_t k = 0; k < o->threads; k++)
      octx.connections_opened += shards[k].res.connections_opened;
    for (size_t i = 0; i < sc->n_percentiles && sum->ttft.n; i++) {
      if (sc->percentiles[i] == 50)
        octx.client_ttft_p50_ms = sum->ttft.pct[i];
      if (sc->percentiles[i] == 99)
        octx.client_ttft_p99_ms = sum->ttft.pct[i];
    }
    if (im_observer_json(env->obs, &octx, metrics, series) != IM_OK)
      im_warn("out of memory writing the observers' figures");
  }
  json_object_set_new(metrics, "histograms", histograms_json(all.records, all.n_records));
  json_object_set_new(metrics, "by_context", im_breakdown_context_json(all.records, all.n_records, sc));
  if (so->mix)
    json_object_set_new(metrics, "by_class", im_breakdown_class_json(all.records, all.n_records, sc));
  if (sessions)
    json_object_set_new(metrics, "sessions", im_breakdown_sessions_json(all.records, all.n_records));
  /* The generator's own samples, per thread. */
  json_t *self = json_array();
  for (uint32_t k = 0; k < o->threads; k++) {
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
  json_object_set_new(series, "client", self);
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
                             (json_int_t)o->threads);
  json_object_set_new(metrics, "client", client);
  json_object_set_new(dst, "saturation", saturation_json(out));
  json_object_set_new(dst, "t0_monotonic_ns", json_integer((json_int_t)out->t0_mono));
  if (!o->quiet && env->n_stages == 1) {
    im_report_text(stdout, sum, sc, &out->check);
    im_breakdown_text(stdout, all.records, all.n_records, sc, so->mix != NULL);
    if (all.first_error[0] && sum->failed)
      fprintf(stdout, "First error: %s\n", all.first_error);
  }
  rc = 0;
out:
  im_load_result_cleanup(&all);
  if (shards) {
    for (uint32_t k = 0; k < o->threads; k++) {
      im_load_result_cleanup(&shards[k].res);
      free(shards[k].times);
    }
    free(shards);
  }
  free(wl);
  free(times);
  return rc;
}

/* ---- the stage plan -------------------------------------------------------- */

#define MAX_STAGES IM_GRID_MAX_STAGES

struct plan {
  struct im_grid grid;
  struct im_sweep sweep;
  bool has_sweep;
  size_t n_grid;   /* grid combinations (1 without a grid) */
};

static int plan_parse(const struct run_opts *o, struct plan *p) {
  char err[256];
  im_grid_init(&p->grid);
  for (size_t i = 0; i < o->n_grid; i++)
    if (im_grid_add(&p->grid, o->grid[i], err, sizeof err) != IM_OK) {
      fprintf(stderr, "infermeter run: %s\n", err);
      return -1;
    }
  p->n_grid = o->n_grid ? im_grid_count(&p->grid) : 1;
  p->has_sweep = o->sweep != NULL;
  if (p->has_sweep && im_sweep_parse(o->sweep, &p->sweep, err, sizeof err) != IM_OK) {
    fprintf(stderr, "infermeter run: %s\n", err);
    return -1;
  }
  return 0;
}

/* Stage `i` of the product grid x sweep (grid outer). */
static int plan_stage(const struct plan *p, size_t i, struct im_stage *st) {
  size_t ns = p->has_sweep ? p->sweep.nvalues : 1;
  struct im_stage g, w;
  memset(st, 0, sizeof *st);
  memset(&g, 0, sizeof g);
  memset(&w, 0, sizeof w);
  if (p->grid.naxes && im_grid_stage(&p->grid, i / ns, &g) != IM_OK)
    return -1;
  if (p->has_sweep && im_sweep_stage(&p->sweep, i % ns, &w) != IM_OK)
    return -1;
  *st = g;
  st->set |= w.set;
  for (int k = 0; k < IM_PARAM_COUNT_; k++)
    if (w.set & (1u << k))
      st->values[k] = w.values[k];
  size_t gl = strnlen(g.label, sizeof g.label);
  memcpy(st->label, g.label, gl);
  if (gl && w.label[0] && gl + 1 < sizeof st->label)
    st->label[gl++] = ',';
  size_t wl = strnlen(w.label, sizeof w.label);
  if (wl > sizeof st->label - 1 - gl)
    wl = sizeof st->label - 1 - gl;
  memcpy(st->label + gl, w.label, wl);
  st->label[gl + wl] = '\0';
  return 0;
}

static json_t *stage_params_json(const struct im_stage *st) {
  json_t *p = json_object();
  for (int k = 0; k < IM_PARAM_COUNT_; k++)
    if (st->set & (1u << k))
      json_object_set_new(p, im_stage_param_name((enum im_stage_param)k), json_real(st->values[k]));
  return p;
}

static void stage_line(FILE *f, size_t i, const char *label, const struct stage_res *sr,
                       const struct im_summary_config *sc) {
  double p50 = NAN, p99 = NAN;
  for (size_t k = 0; k < sc->n_percentiles && sr->sum.ttft.n; k++) {
    if (sc->percentiles[k] == 50)
      p50 = sr->sum.ttft.pct[k];
    if (sc->percentiles[k] == 99)
      p99 = sr->sum.ttft.pct[k];
  }
  char slo[16] = "-";
  if (sc->has_slo_ttft || sc->has_slo_tpot || sc->has_slo_e2el)
    snprintf(slo, sizeof slo, "%.3f", sr->sum.slo_all_attain);
  fprintf(f, "stage %zu %-36s %7.2f req/s  %8.1f out tok/s  TTFT p50/p99 %7.1f/%7.1f ms  "
             "SLO %5s%s%s\n",
          i, label[0] ? label : "-", sr->throughput, sr->sum.output_throughput, p50, p99,
          slo, sr->sat_judged && sr->sat.growing ? "  OVERSATURATED" : "",
          sr->check.valid ? "" : "  INVALID");
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
  struct plan plan;
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
  if (plan_parse(&o, &plan))
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
  if (cap_stages > MAX_STAGES) {
    fprintf(stderr, "infermeter run: %zu stages are too many (at most %d)\n", cap_stages, MAX_STAGES);
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
      if (plan_stage(&plan, i, &stages[i])) {
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
  wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
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
  for (size_t i = 0; i < env.n_stages && !interrupted; i++) {
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
    apply_stage(&so, &stages[i]);
    json_t *dst = root;
    if (stages_json) {
      dst = json_pack("{s:I, s:s, s:o}", "index", (json_int_t)i, "label", stages[i].label,
                      "params", stage_params_json(&stages[i]));
      json_array_append_new(stages_json, dst);
      if (!o.quiet)
        fprintf(stderr, "infermeter: stage %zu/%zu %s\n", i + 1, env.n_stages, stages[i].label);
    }
    if (run_stage(&env, &so, (uint32_t)i, i + 1 == env.n_stages, dst, &res[i]))
      goto out;
    ran = i + 1;
    if (stages_json && !o.quiet)
      stage_line(stdout, i, stages[i].label, &res[i], &res[i].sc);
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
  if (wake_fd >= 0)
    close(wake_fd);
  wake_fd = -1;
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
