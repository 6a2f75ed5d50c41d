/* One stage of `infermeter run`: its schedule, its workload per loader
 * thread, the loader threads, and its figures (summary, server metrics,
 * breakdowns, over-saturation). */
#include <inttypes.h>

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "observe/health.h"
#include "run/run_int.h"
#include "analyze/stage.h"
#include "record/hist_json.h"
#include "record/rundir.h"
#include "core/log.h"
#include "core/thread.h"
#include "core/stats.h"
#include "text/tokenizer.h"
#include "workload/agent.h"
#include "workload/dsworkload.h"
#include "workload/session.h"
#include "workload/synth.h"
#include "observe/observer.h"
#include "report/summary_text.h"
#include "text/simpletok.h"

/* ---- loader threads ------------------------------------------------------ */

struct shard {
  struct im_load_config cfg;
  struct im_load_result res;
  int64_t *times;
  uint64_t *index;            /* --shard: the plan's index of each arrival */
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

/* Output tokens of a stream without usage, with --tokenizer: ctx is the
 * loader thread's own workload (its own tokenizer). */
static uint32_t count_output(void *ctx, const char *text, size_t len) {
  const struct im_synth *sy = ctx;
  size_t n = 0;
  if (!len)
    return 0;
  if (sy->server_count)
    return im__run_srvtok_output(sy->server_ctx, text, len);
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
  struct im_agents agents;    /* --agent-hops: chains instead of chat sessions */
};

/* A stage being run: what its steps share. */
struct stage {
  struct run_env *env;
  const struct im_run_config *o;   /* the run's options */
  const struct im_run_config *so;  /* this stage's */
  uint32_t index;
  bool sessions;
  uint32_t closed;            /* closed-loop slots or sessions (0: open loop) */
  int64_t *times;             /* open loop: arrivals (of requests or sessions) */
  size_t n_times;
  int64_t *mine;              /* this process's share of them (workload/shard.h, docs/distributed.md): times */
  uint64_t *mine_index;       /* ... or its own array with their indices (--shard) */
  size_t n_mine;
  struct im_sched_spec sched;
  struct workload *wl;        /* one per loader thread */
  struct shard *shards;
  struct im_load_start start; /* the shards' one start instant */
  struct im_load_result all;  /* the shards' records merged */
  double cpu_share;           /* the busiest loader thread's */
  struct stage_res *out;
  const char *label;
  char error[300];            /* why the stage failed ("" when it did not) */
};

/* The schedule, computed ahead: a trace's own timestamps, or a process (of
 * requests, or of session starts). Closed loops have none. */
static int stage_schedule(struct stage *st) {
  const struct im_run_config *o = st->o, *so = st->so;
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
    im__run_say(IM_RUN_SAY_ERROR, "bad schedule: %s", why ? why : "out of memory");
    return -1;
  }
  return 0;
}

/* --shard i/N (workload/shard.h, docs/distributed.md): this process's arrivals of the whole plan. */
static int stage_share(struct stage *st) {
  const struct im_run_shard_opts *sh = &st->o->shard;
  st->mine = st->times;
  st->n_mine = st->n_times;
  if (!sh->count || !st->times)
    return 0;
  return im_shard_thin(st->times, st->n_times, st->o->seed + st->index, sh->index, sh->count,
                        &st->mine, &st->mine_index, &st->n_mine) == IM_OK
             ? 0
             : -1;
}

/* The workload of each loader thread: the same prompts, its own tokenizer. */
static int stage_workloads(struct stage *st) {
  const struct im_run_config *o = st->o, *so = st->so;
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
  synth.server_count = env->srvtok ? im__run_srvtok_count : NULL;
  synth.server_ctx = env->srvtok;
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
    if (so->agent.agent_hops) {
      w->agents = (struct im_agents){.synth = &w->synth, .hops = so->agent.agent_hops,
                                     .tool_result_len = so->agent.tool_result_len,
                                     .tool_latency_ns = so->agent.tool_latency_ns};
      im_agents_ops(&w->agents, &w->sops);
    }
  }
  return 0;
}

/* Loader thread k's configuration: its share of the schedule (the global
 * schedule dealt round-robin, so the union is exact), of the slots and of
 * the caps. */
static int shard_config(struct stage *st, uint32_t k) {
  const struct im_run_config *o = st->o, *so = st->so;
  struct run_env *env = st->env;
  struct shard *s = &st->shards[k];
  struct im_load_config *c = &s->cfg;
  uint32_t n = o->threads;
  uint32_t sh_n = o->shard.count ? o->shard.count : 1, sh_i = o->shard.count ? o->shard.index : 0;
  im_load_config_default(c);
  c->base_url = env->url;
  c->base_urls = env->urls;
  c->n_urls = env->n_urls;
  c->backend = so->backend;
  c->model = env->model;
  c->api_key = env->api_key;
  c->headers = o->headers;
  c->insecure = o->insecure;
  c->net = &o->net;
  c->keepalive = o->keepalive;
  uint64_t max_conn = im_shard_split(o->max_connections, sh_i, sh_n);
  c->max_connections = max_conn ? (uint32_t)((max_conn + n - 1) / n) : 0;
  c->http2 = o->http2;
  c->transport = (enum im_load_transport)o->transport;
  c->continuous_usage = env->builtin;
  c->cache_salt = o->cache_salt ? env->salt : NULL;
  c->reasoning_effort = o->agent.reasoning_effort;
  c->thinking = o->agent.thinking;
  c->cancel_after_ns = o->agent.cancel_after_ns;
  c->cancel_after_tokens = o->agent.cancel_after_tokens;
  c->cancel_share = o->agent.cancel_share;
  c->cancel_seed = o->seed;
  c->run_json = o->agent.run_json;
  c->check_json = o->agent.response_format;
  c->json_schema = o->agent.json_schema;
  c->mix_names = o->agent.mix_names;
  c->mix_cum = o->agent.mix_cum;
  c->n_mix = o->agent.n_mix;
  c->mix_seed = o->seed ^ 0x6d6978ULL;
  c->run_salt = env->salt;
  c->shard = k;
  c->n_shards = n;
  c->proc_shard = sh_i; /* ids unique over the processes (workload/shard.h, docs/distributed.md) */
  c->proc_shards = sh_n;
  c->stage = st->index;
  c->start = &st->start;
  if (!st->closed) {
    size_t mine = st->n_mine / n + (k < st->n_mine % n);
    if (!(s->times = malloc((mine ? mine : 1) * sizeof *s->times)) ||
        (st->mine_index && !(s->index = malloc((mine ? mine : 1) * sizeof *s->index))))
      return -1;
    for (size_t i = k, j = 0; i < st->n_mine; i += n, j++) {
      s->times[j] = st->mine[i];
      if (s->index)
        s->index[j] = st->mine_index[i];
    }
    c->times = s->times;
    c->n_times = mine;
    c->indices = s->index;
    if (st->sessions)
      c->duration_ns = so->duration_ns;
  } else {
    uint64_t closed = im_shard_split(st->closed, sh_i, sh_n);
    c->concurrency = (uint32_t)(closed / n + (k < closed % n));
    c->duration_ns = so->duration_ns;
    if (!c->concurrency) { /* more threads than slots: this one has no arrivals */
      static const int64_t no_arrivals[1];
      c->times = no_arrivals;
      c->n_times = 0;
    }
  }
  if (st->closed || st->sessions) {
    /* A closed loop's requests go to the threads that have slots. */
    uint64_t slots = st->closed ? im_shard_split(st->closed, sh_i, sh_n) : n;
    uint32_t active = slots < n ? (uint32_t)slots : n;
    c->max_requests =
        k < active ? im_shard_split(im_shard_split(so->requests, sh_i, sh_n), k, active) : 0;
  }
  uint64_t max_conc = im_shard_split(o->max_concurrency, sh_i, sh_n);
  c->max_concurrency = max_conc ? (uint32_t)((max_conc + n - 1) / n) : 0;
  c->warmup_ns = so->warmup_ns;
  c->warmup_requests = so->warmup_requests;
  c->grace_ns = o->grace_ns;
  c->retries = o->retries;
  c->keep_ngrams = o->keep_ngrams;
  c->logprobs = o->logprobs;
  c->retry_backoff_max_ns = o->retry_backoff_max_ns;
  c->timeout_connect_ns = o->t_connect;
  c->timeout_ttft_ns = o->t_ttft;
  c->timeout_idle_ns = o->t_idle;
  c->timeout_total_ns = o->t_total;
  struct workload *w = &st->wl[k];
  c->workload = env->use_ds ? im_dsw_request : im_synth_request;
  c->workload_ctx = env->use_ds ? (void *)&w->dsw : st->sessions ? (void *)&w->sess : (void *)&w->synth;
  c->session = st->sessions ? &w->sops : NULL;
  if (st->sessions && so->agent.agent_hops)
    c->workload_ctx = &w->agents;
  if (env->toks || env->builtin_tok || env->srvtok) {
    c->count_output = count_output;
    c->count_ctx = &w->synth;
  }
  c->jsonl_fd = env->jsonl_fd;
  c->interrupt = &im__run_interrupted;
  c->wake_fd = k == 0 ? im__run_wake_fd : -1;
  return 0;
}

/* The stage's start, on disk as it happens (its t0 line in stages.jsonl,
 * written once by the loader thread that releases the start barrier, before
 * any dispatch): a crash leaves the origin of requests.jsonl's times. */
struct started {
  int fd;
  uint32_t stage;
  bool agreed;   /* it started at an agreed instant (its wall clock is that) */
  struct im_health *health, *probe;
};

static void on_start(void *ctx, int64_t t0_mono, int64_t wall_ns) {
  const struct started *sd = ctx;
  json_t *t0 = sd->fd >= 0 ? im_rundir_t0_json(sd->stage, t0_mono, wall_ns) : NULL;
  if (t0 && sd->agreed)
    json_object_set_new(t0, "agreed_start", json_true());
  if (sd->fd >= 0 && im_rundir_append(sd->fd, t0))
    im_warn("cannot write the stage's start to stages.jsonl: %s", strerror(errno));
  im_health_stage(sd->health, sd->stage, t0_mono);
  im_health_stage(sd->probe, sd->stage, t0_mono);
}

/* Runs the loader threads to the end; on the last stage the observers take
 * their final sample when the last thread has drained. Loader threads block
 * the run's signals: only the main thread (shard 0) handles them. */
static int stage_load(struct stage *st, bool last_stage) {
  uint32_t n = st->o->threads, made = 1;
  struct im_load_progress *prog = calloc(n, sizeof *prog);
  uint64_t total = 0;
  struct drain drain = {.mu = PTHREAD_MUTEX_INITIALIZER, .left = n, .obs = st->env->obs};
  struct started sd = {.fd = st->env->stages_fd, .stage = st->index, .health = st->env->health,
                       .probe = st->env->probe};
  int rc = 0;
  for (uint32_t k = 0; k < n && st->env->obs && last_stage; k++) {
    st->shards[k].cfg.on_drained = on_drained;
    st->shards[k].cfg.on_drained_ctx = &drain;
  }
  if (!prog || im_load_start_init(&st->start, n, on_start, &sd) != IM_OK) {
    im__run_say(IM_RUN_SAY_ERROR, "cannot create the loaders' start barrier");
    free(prog);
    return -1;
  }
  /* The agreed instant (workload/shard.h, docs/distributed.md): stage 0's, and under MPI every
   * stage's (run/mpi.h: im__mpi_stage_begin). */
  const struct im_run_shard_opts *sh = &st->so->shard;
  if ((st->index == 0 || sh->mpi) && sh->start_at_given) {
    st->start.at_wall = sh->start_at_wall_ns;
    st->start.at_mono = im__run_wall_to_mono(st->start.at_wall + sh->clock_correction_ns, NULL);
    sd.agreed = true;
  }
  for (uint32_t k = 0; k < n; k++) {
    const struct im_load_config *c = &st->shards[k].cfg;
    st->shards[k].cfg.progress = &prog[k];
    if (st->env->hooks->on_record) {
      st->shards[k].cfg.on_record = st->env->hooks->on_record;
      st->shards[k].cfg.on_record_ctx = st->env->hooks->data;
    }
    total += c->session ? c->max_requests : c->times ? c->n_times : c->max_requests;
  }
  if (st->env->hooks->on_stage_start)
    st->env->hooks->on_stage_start(st->env->hooks->data, prog, n, total);
  for (; made < n; made++) {
    int e = im_thread_start(&st->shards[made].thread, shard_main, &st->shards[made]);
    if (e) {
      im__run_say(IM_RUN_SAY_ERROR, "cannot start loader thread %" PRIu32 " of %" PRIu32 ": %s",
              made + 1, n, strerror(e));
      im_load_start_abandon(&st->start, n - made);
      rc = -1;
      break;
    }
  }
  shard_main(&st->shards[0]);
  for (uint32_t k = 1; k < made; k++)
    pthread_join(st->shards[k].thread, NULL);
  if (st->env->hooks->on_stage_end)
    st->env->hooks->on_stage_end(st->env->hooks->data);
  free(prog);
  im_load_start_cleanup(&st->start);
  if (last_stage)
    im_observer_stop(st->env->obs); /* no-op when on_drained did it (the usual case) */
  for (uint32_t k = 0; k < made && !rc; k++) {
    if (st->shards[k].err) {
      const char *why = st->shards[k].res.record_write_error;
      snprintf(st->error, sizeof st->error, "load engine failed: %s%s%s",
               im_strerror(st->shards[k].err), why[0] ? ": " : "", why);
      im__run_say(IM_RUN_SAY_ERROR, "%s", st->error);
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
    if (r->n_records) /* a thread without slots recorded nothing (records NULL) */
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

/* The window rule of this stage (analyze/stage.h). */
static struct im_window_rule window_rule(const struct stage *st) {
  const struct im_run_config *so = st->so;
  return (struct im_window_rule){.warmup_ns = so->warmup_ns,
                                 .warmup_by_requests = so->warmup_requests && !st->sessions &&
                                                       !st->closed,
                                 .closed = st->closed != 0, .duration_ns = so->duration_ns,
                                 /* --rate inf: every request due at once */
                                 .burst = !st->closed && !st->env->replay && isinf(so->rate)};
}

/* The client's own samples of every loader thread, on the stage's clock. */
static struct im_client_sample *client_samples(const struct stage *st, size_t *n) {
  size_t total = 0;
  for (uint32_t k = 0; k < st->o->threads; k++)
    total += st->shards[k].res.n_samples;
  struct im_client_sample *v = calloc(total ? total : 1, sizeof *v);
  *n = 0;
  for (uint32_t k = 0; v && k < st->o->threads; k++) {
    const struct im_load_result *r = &st->shards[k].res;
    for (size_t i = 0; i < r->n_samples; i++)
      v[(*n)++] = (struct im_client_sample){.thread = k, .t = r->samples[i].t,
                                            .cpu_share = r->samples[i].cpu_share,
                                            .lag_max_ms = r->samples[i].lag_max_ms,
                                            .in_flight = r->samples[i].in_flight};
  }
  return v;
}

/* See run_int.h. */
void im__run_stage_res_set(struct stage_res *out, const struct im_stage_figures *f,
                           size_t n_records, const char *first_error) {
  out->throughput = f->sum.request_throughput;
  out->slo_all_attain = f->sum.slo_all_attain;
  out->slo_failed = f->slo_failed;
  out->oversaturated = f->sat_judged && f->sat.growing;
  out->valid = f->check.valid;
  out->unreachable = f->sum.completed == 0 && n_records && first_error[0] &&
                     !strncmp(first_error, "connect", 7);
}

/* What the stage did, on disk (stages.jsonl: its end), then its
 * figures in memory for the sweep and the stage line (the same functions
 * `report` runs on the records read back). */
static int stage_finish(struct stage *st) {
  const struct im_run_config *o = st->o;
  struct run_env *env = st->env;
  const struct im_load_result *all = &st->all;
  struct stage_res *out = st->out;
  size_t n_samples = 0;
  struct im_client_sample *samples = client_samples(st, &n_samples);
  struct im_client_counters k = {.scheduled = all->scheduled, .dispatched = all->dispatched,
                                 .cpu_share = st->cpu_share, .fd_exhausted = all->fd_exhausted,
                                 .port_exhausted = all->port_exhausted};
  uint64_t opened = 0;
  for (uint32_t t = 0; t < o->threads; t++)
    opened += st->shards[t].res.connections_opened;
  /* The receive lag of every loader thread, merged (docs/metrics.md §10). */
  struct im_hist rl;
  bool have_rl = im_hist_init_default(&rl) == IM_OK;
  for (uint32_t t = 0; have_rl && t < o->threads; t++)
    have_rl = im_hist_merge(&rl, &st->shards[t].res.receive_lag) == IM_OK;
  json_t *end = im_rundir_end_json(st->index, all->elapsed_ns, all->interrupted, &k, opened,
                                   all->first_error, samples, n_samples);
  json_t *rlj = NULL;
  if (end && have_rl && im_hist_to_json(&rl, &rlj) == IM_OK)
    json_object_set_new(end, "receive_lag", rlj);
  /* The host probe beside shard 0's loop (docs/metrics.md §10): its
   * figures go to disk so `report DIR` judges with them too. */
  const struct im_hostlat *host = o->threads && st->shards[0].res.host.period_ns
                                      ? &st->shards[0].res.host
                                      : NULL;
  if (end && host)
    json_object_set_new(end, "host", im_rundir_host_json(host));
  if (!samples || im_rundir_append(env->stages_fd, end)) {
    im_hist_cleanup(&rl);
    im__run_say(IM_RUN_SAY_ERROR, "cannot write stages.jsonl: %s", strerror(errno));
    free(samples);
    return -1;
  }
  struct im_window_rule rule = window_rule(st);
  rule.interrupted = all->interrupted;
  rule.elapsed_ns = all->elapsed_ns;
  struct im_stage_input in = {.recs = all->records, .n_recs = all->n_records, .cfg = o->scfg,
                              .slo_target = o->slo_target, .counters = k, .samples = samples,
                              .n_samples = n_samples, .threads = o->threads,
                              .receive_lag = have_rl ? &rl : NULL, .host = host};
  im_stage_window(all->records, all->n_records, &rule, &in.cfg.window_start_ns,
                  &in.cfg.window_end_ns);
  struct im_stage_figures f;
  enum im_err aerr = im_stage_analyze(&in, &f);
  im_hist_cleanup(&rl);
  if (aerr != IM_OK) {
    im__run_say(IM_RUN_SAY_ERROR, "out of memory computing the stage's figures");
    free(samples);
    return -1;
  }
  out->elapsed_ns = all->elapsed_ns;
  out->connections_opened = opened;
  im__run_stage_res_set(out, &f, all->n_records, all->first_error);
  if (!o->quiet && env->n_stages > 1 && im__run_text())
    im_report_stage_line(im__run_text(), st->index, st->label, &f, &in.cfg);
  im_stage_figures_cleanup(&f);
  free(samples);
  return 0;
}

/* A stage that failed still ends on disk, with its error: the report keeps
 * every other stage and shows this one's records, marked interrupted. */
static void stage_failed(struct stage *st) {
  struct im_client_counters k = {0};
  json_t *end = im_rundir_end_json(st->index, 0, true, &k, 0, st->error, NULL, 0);
  if (end)
    json_object_set_new(end, "error", json_string(st->error[0] ? st->error : "the stage failed"));
  if (im_rundir_append(st->env->stages_fd, end))
    im_warn("cannot write stages.jsonl: %s", strerror(errno));
}

/* See run_int.h. */
int im__run_stage(struct run_env *env, const struct im_run_config *so, uint32_t index, bool last_stage,
                  const char *label, json_t *params, struct stage_res *out) {
  memset(out, 0, sizeof *out);
  struct stage st = {.env = env, .o = env->o, .so = so, .index = index, .out = out,
                     .label = label, .sessions = so->sessions || so->session_rate > 0};
  st.closed = st.sessions ? so->sessions : so->concurrency;
  int rc = -1;
  struct im_window_rule rule = window_rule(&st);
  if (im_rundir_append(env->stages_fd, im_rundir_start_json(index, label, params, &rule,
                                                              st.o->threads, so->mix != NULL,
                                                              st.sessions))) {
    im__run_say(IM_RUN_SAY_ERROR, "cannot write stages.jsonl: %s", strerror(errno));
    return -1;
  }
  if (stage_schedule(&st) || stage_share(&st) || stage_workloads(&st) ||
      !(st.shards = calloc(st.o->threads, sizeof *st.shards)))
    goto out;
  for (uint32_t k = 0; k < st.o->threads; k++)
    if (shard_config(&st, k))
      goto out;
  if (stage_load(&st, last_stage)) {
    stage_failed(&st);
    goto out;
  }
  if (stage_merge(&st) || stage_finish(&st))
    goto out;
  rc = 0;
out:
  im_load_result_cleanup(&st.all);
  if (st.shards) {
    for (uint32_t k = 0; k < st.o->threads; k++) {
      im_load_result_cleanup(&st.shards[k].res);
      free(st.shards[k].times);
      free(st.shards[k].index);
    }
    free(st.shards);
  }
  for (uint32_t k = 0; st.wl && k < st.o->threads; k++)
    if (st.wl[k].synth.tok_mu)
      pthread_mutex_destroy(&st.wl[k].tok_mu);
  free(st.wl);
  if (st.mine != st.times)
    free(st.mine);
  free(st.mine_index);
  free(st.times);
  return rc;
}
