/* The publishable audit: see analyze/validity.h and docs/audit.md. */
#include "analyze/validity.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/stats.h"

/* The settings of each engine that change what a run measures, by the
 * engine's own options (facts from each project's documentation):
 *   vLLM: -O / --enforce-eager (torch.compile and CUDA graphs),
 *     --tensor-parallel-size, --data-parallel-size, --kv-cache-dtype,
 *     --quantization, --max-num-seqs, --enable-prefix-caching,
 *     --speculative-config.
 *   SGLang: --enable-torch-compile, --disable-cuda-graph, --tp-size,
 *     --dp-size, --kv-cache-dtype, --quantization, --max-running-requests,
 *     --disable-radix-cache, --speculative-algorithm.
 *   llama.cpp: --parallel (slots), --ctx-size (n_ctx), the model file's
 *     weight type, the build, --batch-size, --ubatch-size, --n-gpu-layers,
 *     --flash-attn, --cache-type-k.
 *   TGI: --cuda-graphs, --quantize, --num-shard, --max-batch-total-tokens,
 *     --max-concurrent-requests, PREFIX_CACHING, --speculate.
 *   TensorRT-LLM: the CUDA graph config of its PyTorch backend, tp/pp sizes,
 *     the KV-cache dtype, quantization, max_batch_size, max_num_tokens,
 *     enable_block_reuse, the speculative config.
 * critical: a setting that changes throughput by multiples on that engine. */
static const struct im_valid_setting generic_settings[] = {
    {"torch_compile", NULL, true, "compilation (torch.compile, CUDA graphs)"},
    {"tp", NULL, false, "tensor parallelism"},
    {"dp", NULL, false, "data parallelism"},
    {"kv_cache_dtype", NULL, false, "KV-cache dtype"},
    {"quantization", NULL, false, "weight quantization"},
    {"max_num_seqs", NULL, false, "concurrent sequences"},
    {"enable_prefix_caching", NULL, false, "prefix caching"},
    {"speculative", NULL, false, "speculative decoding"},
};
static const struct im_valid_setting vllm_settings[] = {
    {"torch_compile", NULL, true, "-O / --enforce-eager"},
    {"tp", NULL, false, "--tensor-parallel-size"},
    {"dp", NULL, false, "--data-parallel-size"},
    {"kv_cache_dtype", NULL, false, "--kv-cache-dtype"},
    {"quantization", NULL, false, "--quantization"},
    {"max_num_seqs", NULL, false, "--max-num-seqs"},
    {"enable_prefix_caching", NULL, false, "--enable-prefix-caching"},
    {"speculative", NULL, false, "--speculative-config"},
};
static const struct im_valid_setting sglang_settings[] = {
    {"torch_compile", NULL, true, "--enable-torch-compile"},
    {"cuda_graph", NULL, true, "--disable-cuda-graph"},
    {"tp", NULL, false, "--tp-size"},
    {"dp", NULL, false, "--dp-size"},
    {"kv_cache_dtype", NULL, false, "--kv-cache-dtype"},
    {"quantization", NULL, false, "--quantization"},
    {"max_num_seqs", "max_running_requests", false, "--max-running-requests"},
    {"enable_prefix_caching", NULL, false, "--disable-radix-cache"},
    {"speculative", NULL, false, "--speculative-algorithm"},
};
static const struct im_valid_setting llamacpp_settings[] = {
    {"slots", "parallel", true, "--parallel"},
    {"n_ctx", NULL, true, "--ctx-size"},
    {"weight_type", "quantization", true, "the GGUF file's type"},
    {"build", NULL, false, "the build"},
    {"n_batch", NULL, false, "--batch-size"},
    {"n_ubatch", NULL, false, "--ubatch-size"},
    {"n_gpu_layers", NULL, false, "--n-gpu-layers"},
    {"flash_attn", NULL, false, "--flash-attn"},
    {"kv_cache_dtype", NULL, false, "--cache-type-k/-v"},
};
static const struct im_valid_setting tgi_settings[] = {
    {"cuda_graphs", NULL, true, "--cuda-graphs"},
    {"quantization", NULL, true, "--quantize"},
    {"tp", "num_shard", false, "--num-shard"},
    {"max_batch_total_tokens", NULL, false, "--max-batch-total-tokens"},
    {"max_num_seqs", "max_concurrent_requests", false, "--max-concurrent-requests"},
    {"enable_prefix_caching", NULL, false, "PREFIX_CACHING"},
    {"speculative", NULL, false, "--speculate"},
};
static const struct im_valid_setting trtllm_settings[] = {
    {"cuda_graphs", NULL, true, "cuda_graph_config"},
    {"tp", NULL, false, "tensor_parallel_size"},
    {"pp", NULL, false, "pipeline_parallel_size"},
    {"kv_cache_dtype", NULL, false, "kv_cache_config.dtype"},
    {"quantization", NULL, false, "the checkpoint's quantization"},
    {"max_num_seqs", "max_batch_size", false, "max_batch_size"},
    {"max_num_tokens", NULL, false, "max_num_tokens"},
    {"enable_prefix_caching", "enable_block_reuse", false, "enable_block_reuse"},
    {"speculative", NULL, false, "speculative_config"},
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

const struct im_valid_setting *im_valid_engine_settings(enum im_valid_engine e, size_t *n) {
  switch (e) {
  case IM_VALID_ENGINE_VLLM:
  case IM_VALID_ENGINE_INFERMETER: *n = N_OF(vllm_settings); return vllm_settings;
  case IM_VALID_ENGINE_SGLANG: *n = N_OF(sglang_settings); return sglang_settings;
  case IM_VALID_ENGINE_LLAMACPP: *n = N_OF(llamacpp_settings); return llamacpp_settings;
  case IM_VALID_ENGINE_TGI: *n = N_OF(tgi_settings); return tgi_settings;
  case IM_VALID_ENGINE_TRTLLM: *n = N_OF(trtllm_settings); return trtllm_settings;
  default: *n = N_OF(generic_settings); return generic_settings;
  }
}

enum im_valid_engine im_valid_engine_of(const char *name) {
  static const struct {
    const char *prefix;
    enum im_valid_engine e;
  } names[] = {
      {"infermeter", IM_VALID_ENGINE_INFERMETER}, {"vllm", IM_VALID_ENGINE_VLLM},
      {"sglang", IM_VALID_ENGINE_SGLANG},         {"llama.cpp", IM_VALID_ENGINE_LLAMACPP},
      {"llamacpp", IM_VALID_ENGINE_LLAMACPP},     {"llama-server", IM_VALID_ENGINE_LLAMACPP},
      {"tgi", IM_VALID_ENGINE_TGI},               {"text-generation-inference", IM_VALID_ENGINE_TGI},
      {"trtllm", IM_VALID_ENGINE_TRTLLM},         {"tensorrt", IM_VALID_ENGINE_TRTLLM},
  };
  for (size_t i = 0; name && i < N_OF(names); i++)
    if (!strncasecmp(name, names[i].prefix, strlen(names[i].prefix)))
      return names[i].e;
  return IM_VALID_ENGINE_UNKNOWN;
}

const char *im_valid_engine_label(enum im_valid_engine e) {
  static const char *const labels[IM_VALID_ENGINE_COUNT_] = {
      "an unidentified engine", "vLLM", "SGLang", "llama.cpp", "TGI", "TensorRT-LLM",
      "infermeter serve"};
  return (unsigned)e < IM_VALID_ENGINE_COUNT_ ? labels[e] : labels[0];
}

const char *im_check_status_name(enum im_check_status s) {
  return s == IM_CHECK_PASS ? "PASS" : s == IM_CHECK_WARN ? "WARN" : "FAIL";
}

/* Appends a check; evidence and fix are printf formats (fix may be NULL). */
static struct im_valid_check *add(struct im_validity *v, const char *id, enum im_check_status st) {
  struct im_valid_check *c = &v->checks[v->n++];
  memset(c, 0, sizeof *c);
  c->id = id;
  c->status = st;
  if (st == IM_CHECK_FAIL)
    v->publishable = false;
  return c;
}

__attribute__((format(printf, 3, 4))) static void say(char *buf, size_t cap, const char *fmt,
                                                     ...) {
  size_t len = strlen(buf);
  if (len + 1 >= cap)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, cap - len, fmt, ap);
  va_end(ap);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Prompt and output lengths of the completed requests. */
static enum im_err lengths(const struct im_population *pop, struct im_validity *v) {
  size_t n = 0;
  uint64_t *p = malloc((pop->n_req ? pop->n_req : 1) * sizeof *p);
  uint64_t *o = malloc((pop->n_req ? pop->n_req : 1) * sizeof *o);
  if (!p || !o) {
    free(p);
    free(o);
    return IM_NOMEM;
  }
  for (size_t i = 0; i < pop->n_req; i++) {
    if (pop->req[i].outcome != IM_OUTCOME_COMPLETED)
      continue;
    const struct im_record *r = pop->req[i].final;
    p[n] = r->prompt_tokens ? r->prompt_tokens : r->context_tokens;
    o[n++] = r->output_tokens;
  }
  qsort(p, n, sizeof *p, cmp_u64);
  qsort(o, n, sizeof *o, cmp_u64);
  if (n) {
    v->prompt_min = p[0];
    v->prompt_max = p[n - 1];
    v->prompt_p50 = p[(n - 1) / 2];
    v->output_min = o[0];
    v->output_max = o[n - 1];
    v->output_p50 = o[(n - 1) / 2];
  }
  for (size_t i = 0; i < n; i++)
    v->prompt_distinct += !i || p[i] != p[i - 1];
  free(p);
  free(o);
  return IM_OK;
}

static void check_client(const struct im_validity_input *in, struct im_validity *v) {
  const struct im_client_check *cc = &in->f->check;
  struct im_valid_check *c = add(v, "client_check",
                                  !cc->valid       ? IM_CHECK_FAIL
                                  : cc->host_warn ? IM_CHECK_WARN
                                                  : IM_CHECK_PASS);
  say(c->evidence, sizeof c->evidence, "client self-check %s: %s", cc->valid ? "VALID" : "INVALID",
      cc->summary);
  if (!cc->valid)
    say(c->fix, sizeof c->fix, "the figures describe the client: %s, then run again",
        cc->advice[0] ? cc->advice : "see the self-check's checks");
  else if (cc->host_warn)
    say(c->fix, sizeof c->fix, "%s", cc->advice);
}

static void check_repeats(const struct im_validity_input *in, struct im_validity *v) {
  bool ok = in->repeats >= IM_VALID_MIN_REPEATS;
  struct im_valid_check *c =
      add(v, "repeats", ok ? IM_CHECK_PASS : in->publish ? IM_CHECK_FAIL : IM_CHECK_WARN);
  say(c->evidence, sizeof c->evidence, "%u run%s of this configuration; at least %d independent "
                                       "runs are needed for a confidence interval",
      in->repeats, in->repeats == 1 ? "" : "s", IM_VALID_MIN_REPEATS);
  if (!ok)
    say(c->fix, sizeof c->fix, "run the same configuration %d times (--repeat %d: independent "
                               "runs, each with its own salt) and report the mean with its 95%% CI",
        IM_VALID_MIN_REPEATS, IM_VALID_MIN_REPEATS);
}

static void check_workload(const struct im_validity_input *in, struct im_validity *v) {
  const struct im_summary *s = &in->f->sum;
  uint32_t lc = in->long_context ? in->long_context : IM_VALID_LONG_CONTEXT;
  bool one_length = s->completed >= 2 && v->prompt_distinct == 1;
  bool no_long = v->prompt_max < lc;
  bool short_out = s->output_shortfall_requests > 0;
  enum im_check_status st = one_length ? IM_CHECK_FAIL
                            : no_long || short_out ? IM_CHECK_WARN
                                                   : IM_CHECK_PASS;
  struct im_valid_check *c = add(v, "workload", st);
  say(c->evidence, sizeof c->evidence,
      "prompt tokens min %llu, median %llu, max %llu (%llu distinct); output tokens min %llu, "
      "median %llu, max %llu",
      (unsigned long long)v->prompt_min, (unsigned long long)v->prompt_p50,
      (unsigned long long)v->prompt_max, (unsigned long long)v->prompt_distinct,
      (unsigned long long)v->output_min, (unsigned long long)v->output_p50,
      (unsigned long long)v->output_max);
  if (one_length)
    say(c->fix, sizeof c->fix, "every prompt had one length: vary it (--range-ratio, a dataset, "
                               "sessions with --context-growth)");
  if (no_long) {
    say(c->evidence, sizeof c->evidence, "; no prompt reaches the long-context range (%u tokens)",
        lc);
    say(c->fix, sizeof c->fix, "%sinclude contexts up to %u tokens (--context-growth, "
                               "--input-len)", c->fix[0] ? "; " : "", lc);
  }
  if (short_out) {
    say(c->evidence, sizeof c->evidence, "; %llu requests returned fewer tokens than asked "
                                         "under ignore_eos (%llu tokens short)",
        (unsigned long long)s->output_shortfall_requests,
        (unsigned long long)s->output_shortfall_tokens);
    say(c->fix, sizeof c->fix, "%sthe server ignored ignore_eos: check its support or drop "
                               "--ignore-eos", c->fix[0] ? "; " : "");
  }
}

static const char *declared_value(const struct im_validity_input *in,
                                  const struct im_valid_setting *st) {
  if (!in->declared)
    return NULL;
  const char *v = in->declared(in->declared_ctx, st->key);
  return v ? v : st->alias ? in->declared(in->declared_ctx, st->alias) : NULL;
}

/* Engine-aware (docs/audit.md "server_config"): FAIL for an unknown engine
 * or model, and for a critical setting that exists on the identified engine
 * (the generic list, torch_compile among them, when none is identified)
 * and is neither declared by the server nor tagged; WARN for another
 * undeclared setting of that engine. */
static void check_server_config(const struct im_validity_input *in, struct im_validity *v) {
  bool eng = in->engine && in->engine[0], mod = in->model && in->model[0];
  size_t n_set = 0;
  const struct im_valid_setting *set = im_valid_engine_settings(in->engine_id, &n_set);
  char crit[240] = "", other[240] = "", known[240] = "";
  size_t n_crit = 0, n_other = 0, n_known = 0;
  for (size_t i = 0; i < n_set; i++) {
    const char *val = declared_value(in, &set[i]);
    if (val) {
      if (n_known < 4)
        say(known, sizeof known, "%s%s %s", n_known ? ", " : "", set[i].key, val);
      n_known++;
    } else if (set[i].critical) {
      say(crit, sizeof crit, "%s%s (%s)", n_crit++ ? ", " : "", set[i].key, set[i].what);
    } else {
      say(other, sizeof other, "%s%s", n_other++ ? ", " : "", set[i].key);
    }
  }
  enum im_check_status st = !eng || !mod || n_crit ? IM_CHECK_FAIL
                            : n_other               ? IM_CHECK_WARN
                                                    : IM_CHECK_PASS;
  struct im_valid_check *c = add(v, "server_config", st);
  say(c->evidence, sizeof c->evidence, "engine %s, model %s; settings of %s",
      eng ? in->engine : "unknown", mod ? in->model : "unknown",
      im_valid_engine_label(in->engine_id));
  if (n_known)
    say(c->evidence, sizeof c->evidence, "; declared: %s%s", known, n_known > 4 ? ", ..." : "");
  if (n_crit)
    say(c->evidence, sizeof c->evidence, "; unknown: %s", crit);
  if (n_other)
    say(c->evidence, sizeof c->evidence, "; undeclared: %s", other);
  if (n_crit)
    say(c->fix, sizeof c->fix, "declare %s with --tag KEY=VALUE (each changes throughput by "
                               "multiples)", crit);
  if (!eng)
    say(c->fix, sizeof c->fix, "%sdeclare --tag engine=NAME@VERSION", c->fix[0] ? "; " : "");
  if (n_other)
    say(c->fix, sizeof c->fix, "%sdeclare the other settings: --tag KEY=VALUE for %s",
        c->fix[0] ? "; " : "", other);
}

static void check_cache(const struct im_validity_input *in, struct im_validity *v) {
  const struct im_summary *s = &in->f->sum;
  bool server = !isnan(in->server_hit_rate);
  bool client = s->cache_cached_tokens > 0 && !isnan(s->cache_hit_rate);
  struct im_valid_check *c = add(v, "cache_metrics", server || client ? IM_CHECK_PASS
                                                                       : IM_CHECK_FAIL);
  if (server)
    say(c->evidence, sizeof c->evidence, "prefix-cache hit rate %.3f from the server's metrics",
        in->server_hit_rate);
  else
    say(c->evidence, sizeof c->evidence, "no hit rate from the server's metrics (%s)",
        in->server_hit_rate_why ? in->server_hit_rate_why : "not scraped");
  if (client)
    say(c->evidence, sizeof c->evidence, "; %.3f from the responses' cached tokens",
        s->cache_hit_rate);
  else
    say(c->evidence, sizeof c->evidence, "; the responses reported no cached tokens");
  if (!server && !client)
    say(c->fix, sizeof c->fix, "scrape the server's /metrics (--scrape URL) or use a server that "
                               "reports cached tokens in usage, so the cache's effect is known");
}

static void check_samples(const struct im_validity_input *in, struct im_validity *v) {
  const struct im_summary *s = &in->f->sum;
  const struct im_summary_config *cfg = in->cfg;
  char ev[480] = "", fix[320] = "";
  bool warn = false;
  /* The highest percentile asked for: how many requests bound it. */
  double top = 0;
  for (size_t i = 0; i < cfg->n_percentiles; i++)
    top = cfg->percentiles[i] > top ? cfg->percentiles[i] : top;
  struct im_stats_early_stop es;
  if (top > 0 && top < 100 &&
      im_stats_early_stop((int64_t)(s->completed ? s->completed : 1), 0, top / 100.0,
                          IM_SLO_CONFIDENCE, &es) == IM_OK &&
      es.verdict == IM_VERDICT_INCONCLUSIVE && es.more_min > 0) {
    warn = true;
    say(ev, sizeof ev, "p%g of %llu requests has no 99%% upper bound (%lld more needed); ", top,
        (unsigned long long)s->completed, (long long)es.more_min);
    say(fix, sizeof fix, "run at least %lld requests for p%g, or report lower percentiles; ",
        (long long)(s->completed + (uint64_t)es.more_min), top);
  }
  for (int k = 0; k < IM_SLO_COUNT_; k++) {
    const struct im_stats_early_stop *e = &in->f->slo.es[k];
    if (in->f->slo.given[k] && e->verdict == IM_VERDICT_INCONCLUSIVE) {
      warn = true;
      say(ev, sizeof ev, "SLO %s INCONCLUSIVE (%lld more requests needed); ",
          im_slo_name((enum im_slo_kind)k), (long long)e->more_min);
    }
  }
  double p99_e2el_s = (double)im_hist_percentile(&s->hist[IM_H_E2EL], 0.99) / 1e9;
  if (s->window_s < IM_VALID_MIN_WINDOW_S || s->window_s < IM_VALID_WINDOW_E2E_FACTOR * p99_e2el_s) {
    warn = true;
    say(ev, sizeof ev, "measured window %.1f s (p99 E2E %.2f s)", s->window_s, p99_e2el_s);
    say(fix, sizeof fix, "measure at least %.0f s (60 s and 10 x the p99 E2E)",
        fmax(IM_VALID_MIN_WINDOW_S, IM_VALID_WINDOW_E2E_FACTOR * p99_e2el_s));
  } else {
    say(ev, sizeof ev, "measured window %.1f s", s->window_s);
  }
  if (s->completed == 0) {
    /* Nothing to publish: every request fell in the warm-up, failed or was
     * cut at the end; a summary of zero requests must not pass. */
    struct im_valid_check *c = add(v, "samples", IM_CHECK_FAIL);
    snprintf(c->evidence, sizeof c->evidence,
             "no measured request completed (measured window %.1f s)", s->window_s);
    snprintf(c->fix, sizeof c->fix, "make the run longer than its warm-up (--duration, "
                                    "--requests) or shorten the warm-up (--warmup)");
    return;
  }
  struct im_valid_check *c = add(v, "samples", warn ? IM_CHECK_WARN : IM_CHECK_PASS);
  snprintf(c->evidence, sizeof c->evidence, "%s", ev);
  if (warn)
    snprintf(c->fix, sizeof c->fix, "%s", fix);
}

/* Batch means (analyze/batch.h): Welch's t on the log batch medians of TTFT
 * and TPOT, the first half of the batches against the second. The batches,
 * not the requests, are the independent units: requests under queueing
 * are correlated, and a test over them finds drift in ordinary
 * autocorrelation. */
static enum im_err check_steady(const struct im_validity_input *in, struct im_validity *v) {
  const struct im_batch_means *bm = &in->f->bm;
  static const enum im_batch_fig figs[2] = {IM_BF_TTFT_P50, IM_BF_TPOT_P50};
  static const char *const names[2] = {"TTFT", "TPOT"};
  char ev[sizeof v->checks[0].evidence] = "";
  bool drift = false, judged = false;
  for (int k = 0; k < 2; k++) {
    const struct im_batch_ci *c = &bm->fig[figs[k]];
    if (!c->drift_judged)
      continue;
    judged = true;
    bool d = c->drift_p < IM_VALID_STEADY_P && fabs(c->drift_ratio - 1.0) > IM_VALID_STEADY_RATIO;
    drift |= d;
    say(ev, sizeof ev, "%smedian %s %.3f ms +- %.1f%% (batch means, %zu batches), second half / "
                       "first = %.3f (Welch p = %.3g)%s",
        ev[0] ? "; " : "", names[k], c->mean, 100.0 * c->rel_half, c->batches, c->drift_ratio,
        c->drift_p, d ? " DRIFT" : "");
  }
  const struct im_batch_ci *tp = &bm->fig[IM_BF_THROUGHPUT];
  if (tp->ok)
    say(ev, sizeof ev, "; throughput %.3f req/s +- %.1f%%", tp->mean, 100.0 * tp->rel_half);
  struct im_valid_check *c = add(v, "steady_state", drift ? IM_CHECK_WARN : IM_CHECK_PASS);
  if (judged)
    say(c->evidence, sizeof c->evidence, "%s", ev);
  else
    say(c->evidence, sizeof c->evidence, "too few completed requests for %d batches of %d "
                                         "(%zu): not judged", IM_BATCH_MIN, IM_BATCH_MIN_SIZE,
        bm->requests);
  if (drift)
    say(c->fix, sizeof c->fix, "the server did not reach a steady state: lengthen the warm-up "
                               "(--warmup) or lower the rate if latency keeps growing");
  return IM_OK;
}

static void check_effective(const struct im_validity_input *in, struct im_validity *v) {
  const struct im_summary *s = &in->f->sum;
  bool low = s->effective_ratio < IM_VALID_MIN_EFFECTIVE;
  struct im_valid_check *c = add(v, "effective_rate", low ? IM_CHECK_WARN : IM_CHECK_PASS);
  say(c->evidence, sizeof c->evidence, "raw %.3f req/s, effective %.3f req/s (ratio %.3f): retry "
                                       "%llu, health %llu, probe %llu, dup_fail %llu of %llu",
      s->raw_qps, s->effective_qps, s->effective_ratio, (unsigned long long)s->retry_attempts,
      (unsigned long long)s->health_attempts, (unsigned long long)s->probe_attempts,
      (unsigned long long)s->dup_fail, (unsigned long long)s->raw_attempts);
  if (low)
    say(c->fix, sizeof c->fix, "report the effective rate, not the raw one: the classes above "
                               "are not user work");
}

/* Churn is the connections opened beyond those the simultaneous requests
 * needed: N requests in flight at once hold N connections, which is reuse
 * at its best, not churn. */
static void check_connections(const struct im_validity_input *in, struct im_validity *v) {
  uint64_t attempts = in->f->pop.n_attempts;
  uint64_t needed = in->f->sum.concurrency_max;
  uint64_t extra = in->connections_opened > needed ? in->connections_opened - needed : 0;
  uint64_t beyond = attempts > needed ? attempts - needed : 0;
  double share = beyond ? (double)extra / (double)beyond : 0.0;
  bool churn = beyond >= 10 && share >= IM_VALID_NEW_CONN_SHARE;
  bool tw = in->time_wait_growing;
  struct im_valid_check *c = add(v, "connections", churn || tw ? IM_CHECK_WARN : IM_CHECK_PASS);
  say(c->evidence, sizeof c->evidence,
      "%llu connections opened for %llu attempts, %llu in flight at most (%llu opened beyond "
      "those)",
      (unsigned long long)in->connections_opened, (unsigned long long)attempts,
      (unsigned long long)needed, (unsigned long long)extra);
  if (!isnan(in->time_wait_slope))
    say(c->evidence, sizeof c->evidence, "; TIME_WAIT %+.1f sockets/s", in->time_wait_slope);
  if (churn || tw)
    say(c->fix, sizeof c->fix,
        "connections are not reused: infermeter closes a connection only under --keepalive "
        "off (then: --keepalive on); otherwise the server closed it after each response "
        "(Connection: close, or a close after the stream while announcing keep-alive): "
        "configure its keep-alive; connect time is inside TTFT");
}

/* The end of the stage's last request, and whether it was cancelled late
 * enough to matter (ns from the stage's origin; -1 when none): the running
 * count can only return to its start once every request has ended. */
static int64_t last_end_ns(const struct im_population *pop) {
  int64_t t = -1;
  for (size_t i = 0; i < pop->n_req; i++)
    if (pop->req[i].final->t_end > t)
      t = pop->req[i].final->t_end;
  return t;
}

/* Requests the client abandoned must leave the server (docs/agents.md
 * "Cancellation"): its running count returns to where it started, judged
 * from the first scrape taken at least IM_VALID_CANCEL_SETTLE_S after the
 * stage's last request ended, the last cancel included (a scrape 0.15 ms
 * after it races the server's handling of the disconnect; one before the
 * other requests ended counts them); with no such scrape, "not judged". A
 * WARN, never a FAIL. */
static void check_cancelled(const struct im_validity_input *in, struct im_validity *v) {
  const struct im_cancel_figs *cf = &in->f->cancel;
  if (!cf->cancelled)
    return;
  double a = in->server_running_first, b = in->server_running_last;
  bool settled_known = in->server_series && in->n_server_series;
  double after_s = NAN;
  if (settled_known) {
    int64_t lc = last_end_ns(&in->f->pop);
    double need = (double)lc / 1e9 + IM_VALID_CANCEL_SETTLE_S;
    b = NAN;
    for (size_t i = 0; i < in->n_server_series && isnan(b); i++)
      if (in->server_series[i].t_s >= need && !isnan(in->server_series[i].requests_running)) {
        b = in->server_series[i].requests_running;
        after_s = in->server_series[i].t_s - (double)lc / 1e9;
      }
  }
  bool known = !isnan(a) && !isnan(b);
  bool unsettled = settled_known && !isnan(a) && isnan(b);
  struct im_valid_check *c =
      add(v, "cancelled_freed", unsettled || (known && b <= a) ? IM_CHECK_PASS : IM_CHECK_WARN);
  if (unsettled)
    say(c->evidence, sizeof c->evidence,
        "%llu requests cancelled; not judged: no scrape came %.1f s or more after the last "
        "request ended",
        (unsigned long long)cf->cancelled, IM_VALID_CANCEL_SETTLE_S);
  else if (known && !isnan(after_s))
    say(c->evidence, sizeof c->evidence,
        "%llu requests cancelled; the server's running requests: %g at the first scrape, %g at "
        "a scrape %.1f s after the last request ended",
        (unsigned long long)cf->cancelled, a, b, after_s);
  else if (known)
    say(c->evidence, sizeof c->evidence,
        "%llu requests cancelled; the server's running requests: %g at the first scrape, %g at "
        "the last",
        (unsigned long long)cf->cancelled, a, b);
  else
    say(c->evidence, sizeof c->evidence,
        "%llu requests cancelled; the server's running requests were not scraped",
        (unsigned long long)cf->cancelled);
  if (!unsettled && (!known || b > a))
    say(c->fix, sizeof c->fix, "check that the server aborts a request whose client disconnects "
                               "(scrape its /metrics: running requests should drop back)");
}

static void check_errors(const struct im_validity_input *in, struct im_validity *v) {
  const struct im_summary *s = &in->f->sum;
  uint64_t all = s->completed + s->failed;
  double share = all ? (double)s->failed / (double)all : 0.0;
  enum im_check_status st = share > IM_VALID_ERRORS_FAIL   ? IM_CHECK_FAIL
                            : share > IM_VALID_ERRORS_WARN ? IM_CHECK_WARN
                                                           : IM_CHECK_PASS;
  struct im_valid_check *c = add(v, "errors", st);
  say(c->evidence, sizeof c->evidence, "%llu of %llu requests failed (%.2f%%); latencies are over "
                                       "the successes, with this share beside them",
      (unsigned long long)s->failed, (unsigned long long)all, 100.0 * share);
  /* The DeepSeek API's overload answer is a 200 stream cut short: named,
   * since no HTTP status shows it (docs/deepseek.md). */
  if (s->by_error[IM_EC_INSUFFICIENT])
    say(c->evidence, sizeof c->evidence,
        "; %llu attempt%s ended with finish_reason insufficient_system_resource (cut by the "
        "server for lack of capacity)",
        (unsigned long long)s->by_error[IM_EC_INSUFFICIENT],
        s->by_error[IM_EC_INSUFFICIENT] == 1 ? "" : "s");
  if (st != IM_CHECK_PASS)
    say(c->fix, sizeof c->fix, "a server that refuses load looks faster: lower the rate until "
                               "failures stay under 1%%, or report the failure share with every "
                               "latency");
}

/* --insecure: the figures came from a server whose identity was not
 * checked (docs/audit.md). A WARN, never a FAIL: a lab gateway with a
 * self-signed certificate is common, and the figures stand. */
static void check_tls(const struct im_validity_input *in, struct im_validity *v) {
  if (!in->tls_insecure)
    return;
  struct im_valid_check *c = add(v, "tls_verification", IM_CHECK_WARN);
  say(c->evidence, sizeof c->evidence, "the run skipped TLS certificate verification "
                                       "(--insecure): the server answering was not authenticated");
  say(c->fix, sizeof c->fix, "pass --cacert FILE with the CA that signed the server's "
                             "certificate instead of --insecure");
}

enum im_err im_validity_compute(const struct im_validity_input *in, struct im_validity *v) {
  memset(v, 0, sizeof *v);
  v->publishable = true;
  enum im_err err = lengths(&in->f->pop, v);
  if (err)
    return err;
  check_client(in, v);
  check_repeats(in, v);
  check_workload(in, v);
  check_server_config(in, v);
  check_cache(in, v);
  check_samples(in, v);
  if ((err = check_steady(in, v)))
    return err;
  check_effective(in, v);
  check_connections(in, v);
  check_errors(in, v);
  check_cancelled(in, v);
  check_tls(in, v);
  return IM_OK;
}
