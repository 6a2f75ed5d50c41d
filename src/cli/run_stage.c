/* One stage of `infermeter run`: its schedule, its workload per loader
 * thread, the loader threads, and its figures (summary, server metrics,
 * breakdowns, over-saturation). */
#include <inttypes.h>

#include <jansson.h>
#include <math.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/progress.h"
#include "cli/run_int.h"
#include "analyze/breakdown.h"
#include "core/hist.h"
#include "record/hist_json.h"
#include "core/log.h"
#include "core/thread.h"
#include "core/stats.h"
#include "text/tokenizer.h"
#include "workload/dsworkload.h"
#include "workload/session.h"
#include "workload/synth.h"
#include "observe/observer.h"
#include "text/simpletok.h"

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

static bool slo_failed(const struct im_summary *sum, const struct im_summary_config *sc,
                       double target) {
  return (sc->has_slo_ttft && sum->slo_ttft_attain < target) ||
         (sc->has_slo_tpot && sum->slo_tpot_attain < target) ||
         (sc->has_slo_e2el && sum->slo_e2el_attain < target);
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
  if (sy->tok_mu)
    pthread_mutex_lock(sy->tok_mu);
  if (im_tok_count(sy->tok, text, len, &n) != IM_OK)
    n = 0;
  if (sy->tok_mu)
    pthread_mutex_unlock(sy->tok_mu);
  return (uint32_t)n;
}

/* What one loader thread's workload needs: prompts are built on the
 * thread, and a tokenizer serves one thread, so each has its own. */
struct workload {
  struct im_synth synth;
  pthread_mutex_t tok_mu;     /* the loader's builder thread shares the tokenizer */
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

/* A stage being run: what its steps share. */
struct stage {
  struct run_env *env;
  const struct run_opts *o;   /* the run's options */
  const struct run_opts *so;  /* this stage's */
  uint32_t index;
  bool sessions;
  uint32_t closed;            /* closed-loop slots or sessions (0: open loop) */
  int64_t *times;             /* open loop: arrivals (of requests or sessions) */
  size_t n_times;
  struct im_sched_spec sched;
  struct workload *wl;        /* one per loader thread */
  struct shard *shards;
  struct im_load_start start; /* the shards' one start instant */
  struct im_load_result all;  /* the shards' records merged */
  double cpu_share;           /* the busiest loader thread's */
  struct stage_res *out;
};

/* The schedule, computed ahead: a trace's own timestamps, or a process (of
 * requests, or of session starts). Closed loops have none. */
static int stage_schedule(struct stage *st) {
  const struct run_opts *o = st->o, *so = st->so;
  struct run_env *env = st->env;
  if (env->replay) {
    st->n_times = o->requests && o->requests < env->ds->n ? o->requests : env->ds->n;
    if (!(st->times = malloc(st->n_times * sizeof *st->times)))
      return -1;
    for (size_t i = 0; i < st->n_times; i++)
      st->times[i] = (int64_t)((double)env->ds->items[env->order[i]].timestamp_ns / o->trace_speed);
    return 0;
  }
  if (st->closed)
    return 0;
  double rate = st->sessions ? so->session_rate : so->rate;
  st->sched = (struct im_sched_spec){.kind = so->sched_kind, .rate = rate, .rate_end = so->rate_end,
                                     .burstiness = so->burstiness, .duration_ns = so->duration_ns,
                                     .max_requests = so->requests, .seed = o->seed + st->index};
  if (so->sched_kind == IM_SCHED_POISSON && so->burstiness != 1.0)
    st->sched.kind = IM_SCHED_GAMMA;
  if (st->sessions && so->duration_ns == 0) /* --requests caps turns, not starts */
    st->sched.duration_ns = (int64_t)((double)so->requests / rate * 1e9) + 1;
  const char *why = im_sched_check(&st->sched);
  if (why || im_sched_generate(&st->sched, &st->times, &st->n_times) != IM_OK) {
    fprintf(stderr, "infermeter run: bad schedule: %s\n", why ? why : "out of memory");
    return -1;
  }
  return 0;
}

/* The workload of each loader thread: the same prompts, its own tokenizer. */
static int stage_workloads(struct stage *st) {
  const struct run_opts *o = st->o, *so = st->so;
  struct run_env *env = st->env;
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
  synth.times = st->sessions ? NULL : st->times;
  synth.n_times = st->sessions ? 0 : st->n_times;
  synth.sched = env->replay || st->closed ? NULL : &st->sched;
  if (!(st->wl = calloc(o->threads, sizeof *st->wl)))
    return -1;
  for (uint32_t k = 0; k < o->threads; k++) {
    struct workload *w = &st->wl[k];
    w->synth = synth;
    w->synth.tok = env->toks ? env->toks[k] : NULL;
    /* Sessions build turns on the loader's builder thread too. */
    if (st->sessions && w->synth.tok) {
      if (pthread_mutex_init(&w->tok_mu, NULL))
        return -1;
      w->synth.tok_mu = &w->tok_mu;
    }
    w->dsw = (struct im_dsw){.ds = env->ds, .order = env->order, .synth = &w->synth};
    w->sess = (struct im_sessions){.synth = &w->synth, .backend = so->backend, .turns = so->turns,
                                   .ctx_start = so->ctx_start ? so->ctx_start : so->input_len,
                                   .ctx_end = so->ctx_start ? so->ctx_end : so->input_len,
                                   .min_user = 32, .think_ns = so->think_ns};
    im_sessions_ops(&w->sess, &w->sops);
  }
  return 0;
}

/* Loader thread k's configuration: its share of the schedule (the global
 * schedule dealt round-robin, so the union is exact), of the slots and of
 * the caps. */
static int shard_config(struct stage *st, uint32_t k) {
  const struct run_opts *o = st->o, *so = st->so;
  struct run_env *env = st->env;
  struct shard *s = &st->shards[k];
  struct im_load_config *c = &s->cfg;
  uint32_t n = o->threads;
  im_load_config_default(c);
  c->base_url = env->url;
  c->backend = so->backend;
  c->model = env->model;
  c->api_key = env->api_key;
  c->headers = o->headers;
  c->insecure = o->insecure;
  c->keepalive = o->keepalive;
  c->max_connections = o->max_connections ? (o->max_connections + n - 1) / n : 0;
  c->http2 = o->http2;
  c->continuous_usage = env->builtin;
  c->cache_salt = o->cache_salt ? env->salt : NULL;
  c->run_salt = env->salt;
  c->shard = k;
  c->n_shards = n;
  c->stage = st->index;
  c->start = &st->start;
  if (!st->closed) {
    size_t mine = st->n_times / n + (k < st->n_times % n);
    if (!(s->times = malloc((mine ? mine : 1) * sizeof *s->times)))
      return -1;
    for (size_t i = k, j = 0; i < st->n_times; i += n)
      s->times[j++] = st->times[i];
    c->times = s->times;
    c->n_times = mine;
    if (st->sessions)
      c->duration_ns = so->duration_ns;
  } else {
    c->concurrency = st->closed / n + (k < st->closed % n);
    c->duration_ns = so->duration_ns;
  }
  if (st->closed || st->sessions)
    c->max_requests = so->requests ? so->requests / n + (k < so->requests % n) : 0;
  c->max_concurrency = o->max_concurrency ? (o->max_concurrency + n - 1) / n : 0;
  c->warmup_ns = so->warmup_ns;
  c->warmup_requests = so->warmup_requests;
  c->grace_ns = o->grace_ns;
  c->retries = o->retries;
  c->retry_backoff_max_ns = o->retry_backoff_max_ns;
  c->timeout_connect_ns = o->t_connect;
  c->timeout_ttft_ns = o->t_ttft;
  c->timeout_idle_ns = o->t_idle;
  c->timeout_total_ns = o->t_total;
  struct workload *w = &st->wl[k];
  c->workload = env->use_ds ? im_dsw_request : im_synth_request;
  c->workload_ctx = env->use_ds ? (void *)&w->dsw : st->sessions ? (void *)&w->sess : (void *)&w->synth;
  c->session = st->sessions ? &w->sops : NULL;
  if (env->toks || env->builtin_tok) {
    c->count_output = count_output;
    c->count_ctx = &w->synth;
  }
  c->jsonl_fd = env->jsonl_fd;
  c->interrupt = &im__run_interrupted;
  c->wake_fd = k == 0 ? im__run_wake_fd : -1;
  return 0;
}

/* The stage's start, on disk as it happens (one short line in
 * DIR/stages.jsonl): a crash leaves the origin of requests.jsonl's times. */
struct started {
  const char *dir;
  uint32_t stage;
};

static void on_start(void *ctx, int64_t t0_mono, int64_t wall_ns) {
  const struct started *sd = ctx;
  char path[4096], line[160];
  if (!sd->dir || snprintf(path, sizeof path, "%s/stages.jsonl", sd->dir) >= (int)sizeof path)
    return;
  int n = snprintf(line, sizeof line,
                   "{\"stage\":%" PRIu32 ",\"t0_monotonic_ns\":%" PRId64 ",\"wall_ns\":%" PRId64 "}\n",
                   sd->stage, t0_mono, wall_ns);
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  ssize_t w = write(fd, line, (size_t)n);
  (void)w; /* a label for crash recovery: results.json has the same */
  close(fd);
}

/* Runs the loader threads to the end; on the last stage the observers take
 * their final sample when the last thread has drained. Loader threads block
 * the run's signals: only the main thread (shard 0) handles them. */
static int stage_load(struct stage *st, bool last_stage) {
  uint32_t n = st->o->threads, made = 1;
  struct im_load_progress *prog = calloc(n, sizeof *prog);
  struct im__progress pr = {0};
  uint64_t total = 0;
  struct drain drain = {.mu = PTHREAD_MUTEX_INITIALIZER, .left = n, .obs = st->env->obs};
  struct started sd = {.dir = st->o->out_dir, .stage = st->index};
  int rc = 0;
  for (uint32_t k = 0; k < n && st->env->obs && last_stage; k++) {
    st->shards[k].cfg.on_drained = on_drained;
    st->shards[k].cfg.on_drained_ctx = &drain;
  }
  if (!prog || im_load_start_init(&st->start, n, on_start, &sd) != IM_OK) {
    fprintf(stderr, "infermeter run: cannot create the loaders' start barrier\n");
    free(prog);
    return -1;
  }
  for (uint32_t k = 0; k < n; k++) {
    const struct im_load_config *c = &st->shards[k].cfg;
    st->shards[k].cfg.progress = &prog[k];
    total += c->session ? c->max_requests : c->times ? c->n_times : c->max_requests;
  }
  if (!st->o->no_progress)
    im__progress_start(&pr, prog, n, total, st->env->tty);
  for (; made < n; made++) {
    int e = im_thread_start(&st->shards[made].thread, shard_main, &st->shards[made]);
    if (e) {
      fprintf(stderr, "infermeter run: cannot start loader thread %" PRIu32 " of %" PRIu32 ": %s\n",
              made + 1, n, strerror(e));
      im_load_start_abandon(&st->start, n - made);
      rc = -1;
      break;
    }
  }
  shard_main(&st->shards[0]);
  for (uint32_t k = 1; k < made; k++)
    pthread_join(st->shards[k].thread, NULL);
  im__progress_stop(&pr);
  free(prog);
  im_load_start_cleanup(&st->start);
  if (last_stage)
    im_observer_stop(st->env->obs); /* no-op when on_drained did it (the usual case) */
  for (uint32_t k = 0; k < made && !rc; k++) {
    if (st->shards[k].err) {
      const char *why = st->shards[k].res.record_write_error;
      fprintf(stderr, "infermeter run: load engine failed: %s%s%s\n", im_strerror(st->shards[k].err),
              why[0] ? ": " : "", why);
      st->env->engine_failed = true;
      rc = -1;
    }
  }
  return rc;
}

/* The shards' records and counters in one result. */
static int stage_merge(struct stage *st) {
  struct im_load_result *all = &st->all;
  size_t total = 0;
  for (uint32_t k = 0; k < st->o->threads; k++)
    total += st->shards[k].res.n_records;
  if (!(all->records = calloc(total ? total : 1, sizeof *all->records)))
    return -1;
  for (uint32_t k = 0; k < st->o->threads; k++) {
    struct im_load_result *r = &st->shards[k].res;
    memcpy(all->records + all->n_records, r->records, r->n_records * sizeof *r->records);
    all->n_records += r->n_records;
    free(r->records);
    r->records = NULL;
    r->n_records = 0;
    all->scheduled += r->scheduled;
    all->dispatched += r->dispatched;
    all->fd_exhausted += r->fd_exhausted;
    all->port_exhausted += r->port_exhausted;
    all->interrupted |= r->interrupted;
    if (r->elapsed_ns > all->elapsed_ns)
      all->elapsed_ns = r->elapsed_ns;
    double share = r->elapsed_ns ? r->cpu_s / ((double)r->elapsed_ns / 1e9) : 0;
    st->cpu_share = share > st->cpu_share ? share : st->cpu_share;
    if (k == 0) {
      all->wall_start_ns = r->wall_start_ns;
      memcpy(all->first_error, r->first_error, sizeof all->first_error);
    }
  }
  struct stage_res *out = st->out;
  out->t0_mono = st->shards[0].res.t0_mono;
  out->wall_start_ns = all->wall_start_ns;
  out->interrupted = all->interrupted;
  memcpy(out->first_error, all->first_error, sizeof out->first_error);
  return 0;
}

/* The measured window (end of warm-up to the last scheduled arrival), the
 * summary, the client self-check and the verdicts. */
static int stage_summary(struct stage *st) {
  const struct run_opts *o = st->o, *so = st->so;
  const struct im_load_result *all = &st->all;
  struct stage_res *out = st->out;
  struct im_summary_config *sc = &out->sc;
  *sc = o->scfg;
  sc->window_start_ns = so->warmup_ns;
  if (so->warmup_requests && st->times && so->warmup_requests < st->n_times && !st->sessions)
    sc->window_start_ns = st->times[so->warmup_requests];
  int64_t last_sched = 0;
  for (size_t i = 0; i < all->n_records; i++)
    if (all->records[i].t_sched > last_sched && all->records[i].kind != IM_KIND_RETRY)
      last_sched = all->records[i].t_sched;
  sc->window_end_ns = st->closed ? (so->duration_ns ? so->duration_ns : last_sched) : last_sched;
  if (all->interrupted && sc->window_end_ns > all->elapsed_ns)
    sc->window_end_ns = all->elapsed_ns;
  if (sc->window_end_ns <= sc->window_start_ns)
    sc->window_start_ns = 0;

  struct im_summary *sum = &out->sum;
  if (im_summary_compute(all->records, all->n_records, sc, sum) != IM_OK) {
    fprintf(stderr, "infermeter run: out of memory computing the summary\n");
    return -1;
  }
  sum->scheduled = all->scheduled;
  sum->dispatched = all->dispatched;
  im_client_check_compute(lag_p99_ms(all->records, all->n_records), all->scheduled, all->dispatched,
                          sc->slo_ttft_ms, sc->has_slo_ttft, st->cpu_share, all->fd_exhausted,
                          all->port_exhausted, &out->check);
  /* vLLM's request_throughput: completed requests over the stage, first send
   * to last completion (the window may hold no completion in a short
   * closed-loop stage of long requests). */
  out->throughput = sum->request_throughput;
  out->slo_failed = slo_failed(sum, sc, o->slo_target);
  out->unreachable = sum->completed == 0 && all->n_records && all->first_error[0] &&
                     !strncmp(all->first_error, "connect", 7);
  judge_saturation(st->shards, o->threads, all, sc, out);
  return 0;
}

/* The server's and the machine's figures over the stage's window. */
static void observer_json(const struct stage *st, json_t *metrics, json_t *series) {
  const struct run_opts *o = st->o;
  const struct stage_res *out = st->out;
  const struct im_summary *sum = &out->sum;
  const struct im_summary_config *sc = &out->sc;
  struct im_observer_context octx = {
      .t0_mono = out->t0_mono,
      .window_start_ns = sc->window_start_ns,
      .window_end_ns = sc->window_end_ns,
      .client_ttft_p50_ms = NAN,
      .client_ttft_p99_ms = NAN,
      .output_tokens = sum->window_output_tok_rate * sum->window_s,
      .attempts = st->all.n_records,
      .kv_residency_ref = o->kv_residency_ref,
      .kv_bytes_per_token = o->kv_bytes_per_token,
      .gpu_memory_bytes = o->gpu_memory,
      .bw_util_ref = o->bw_util_ref,
  };
  if (st->env->n_stages > 1) {
    /* A stage's series: from a little before its start (the sample before
     * the load) to its end. */
    octx.series_from_ns = -o->scrape_interval_ns - 1;
    octx.series_to_ns = st->all.elapsed_ns + o->scrape_interval_ns;
  }
  for (uint32_t k = 0; k < o->threads; k++)
    octx.connections_opened += st->shards[k].res.connections_opened;
  for (size_t i = 0; i < sc->n_percentiles && sum->ttft.n; i++) {
    if (sc->percentiles[i] == 50)
      octx.client_ttft_p50_ms = sum->ttft.pct[i];
    if (sc->percentiles[i] == 99)
      octx.client_ttft_p99_ms = sum->ttft.pct[i];
  }
  if (im_observer_json(st->env->obs, &octx, metrics, series) != IM_OK)
    im_warn("out of memory writing the observers' figures");
}

/* The generator's own samples, per thread. */
static json_t *client_series_json(const struct stage *st) {
  json_t *self = json_array();
  for (uint32_t k = 0; k < st->o->threads; k++) {
    const struct im_load_result *r = &st->shards[k].res;
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
  return self;
}

/* What the responses say about the cache (usage.prompt_tokens_details,
 * DeepSeek's prompt_cache_hit_tokens, llama.cpp's timings.cache_n). */
static json_t *cache_client_json(const struct im_load_result *all) {
  uint64_t ctok = 0, ptok = 0;
  for (size_t i = 0; i < all->n_records; i++) {
    const struct im_record *r = &all->records[i];
    if (r->kind == IM_KIND_MEASURED && r->error == IM_EC_NONE) {
      ctok += r->cached_tokens;
      ptok += r->prompt_tokens;
    }
  }
  return json_pack("{s:I, s:I, s:o}", "prompt_tokens", (json_int_t)ptok, "cached_tokens",
                   (json_int_t)ctok, "hit_rate",
                   ptok ? json_real((double)ctok / (double)ptok) : json_null());
}

/* Everything the stage measured, into dst. */
static int stage_json(const struct stage *st, json_t *dst) {
  const struct run_opts *o = st->o;
  const struct stage_res *out = st->out;
  const struct im_load_result *all = &st->all;
  const struct im_summary_config *sc = &out->sc;
  json_t *summary = json_object(), *metrics = json_object(), *audit = json_object();
  json_t *series = json_object();
  json_object_set_new(dst, "summary", summary);
  json_object_set_new(dst, "metrics", metrics);
  json_object_set_new(dst, "audit", audit);
  json_object_set_new(dst, "series", series);
  if (im_summary_vllm_json(&out->sum, sc, summary) || im_summary_metrics_json(&out->sum, sc, metrics) ||
      im_client_check_json(&out->check, audit)) {
    fprintf(stderr, "infermeter run: out of memory writing results\n");
    return -1;
  }
  if (st->env->obs)
    observer_json(st, metrics, series);
  json_object_set_new(metrics, "histograms", histograms_json(all->records, all->n_records));
  json_object_set_new(metrics, "by_context", im_breakdown_context_json(all->records, all->n_records, sc));
  if (st->so->mix)
    json_object_set_new(metrics, "by_class", im_breakdown_class_json(all->records, all->n_records, sc));
  if (st->sessions)
    json_object_set_new(metrics, "sessions", im_breakdown_sessions_json(all->records, all->n_records));
  json_object_set_new(series, "client", client_series_json(st));
  json_object_set_new(metrics, "cache_client", cache_client_json(all));
  json_object_set_new(metrics, "client",
                      json_pack("{s:f, s:I, s:I, s:I, s:f, s:I}", "elapsed_s",
                                (double)all->elapsed_ns / 1e9, "scheduled", (json_int_t)all->scheduled,
                                "dispatched", (json_int_t)all->dispatched, "attempts",
                                (json_int_t)all->n_records, "cpu_share", st->cpu_share, "threads",
                                (json_int_t)o->threads));
  json_object_set_new(dst, "saturation", saturation_json(out));
  json_object_set_new(dst, "t0_monotonic_ns", json_integer((json_int_t)out->t0_mono));
  return 0;
}

/* See run_int.h. */
int im__run_stage(struct run_env *env, const struct run_opts *so, uint32_t index, bool last_stage,
                  json_t *dst, struct stage_res *out) {
  memset(out, 0, sizeof *out);
  struct stage st = {.env = env, .o = env->o, .so = so, .index = index, .out = out,
                     .sessions = so->sessions || so->session_rate};
  st.closed = st.sessions ? so->sessions : so->concurrency;
  int rc = -1;
  if (stage_schedule(&st) || stage_workloads(&st) ||
      !(st.shards = calloc(st.o->threads, sizeof *st.shards)))
    goto out;
  for (uint32_t k = 0; k < st.o->threads; k++)
    if (shard_config(&st, k))
      goto out;
  if (stage_load(&st, last_stage) || stage_merge(&st) || stage_summary(&st) || stage_json(&st, dst))
    goto out;
  if (!st.o->quiet && env->n_stages == 1) {
    im_report_text(stdout, &out->sum, &out->sc, &out->check);
    im_breakdown_text(stdout, st.all.records, st.all.n_records, &out->sc, so->mix != NULL);
    if (st.all.first_error[0] && out->sum.failed)
      fprintf(stdout, "First error: %s\n", st.all.first_error);
  }
  rc = 0;
out:
  im_load_result_cleanup(&st.all);
  if (st.shards) {
    for (uint32_t k = 0; k < st.o->threads; k++) {
      im_load_result_cleanup(&st.shards[k].res);
      free(st.shards[k].times);
    }
    free(st.shards);
  }
  for (uint32_t k = 0; st.wl && k < st.o->threads; k++)
    if (st.wl[k].synth.tok_mu)
      pthread_mutex_destroy(&st.wl[k].tok_mu);
  free(st.wl);
  free(st.times);
  return rc;
}
