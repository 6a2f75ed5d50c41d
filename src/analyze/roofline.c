/* Roofline of the decode step (contract in roofline.h; worked examples in
 * docs/deepseek.md, checked by tests/unit/test_roofline.c). */
#include "analyze/roofline.h"
#include "core/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double deg(uint32_t v) { return v ? (double)v : 1.0; }

static double kv_per_gpu(const struct im_roofline_sys *s) {
  return s->kv_bytes_per_token_per_gpu > 0
             ? s->kv_bytes_per_token_per_gpu
             : im_model_kv_bytes_per_token_per_gpu(s->model, s->tp, s->dp);
}

void im_roofline_predict(const struct im_roofline_sys *s, double batch, double context,
                         struct im_roofline_pred *o) {
  const struct im_model_desc *m = s->model;
  memset(o, 0, sizeof *o);
  o->batch = batch;
  o->context = context;
  double tp = deg(s->tp), dp = deg(s->dp);
  double expert = im_model_expert_params(m), moe_l = (double)im_model_moe_layers(m);
  double all_experts = moe_l * (double)m->routed_experts * expert;
  if (moe_l > 0 && m->routed_experts) {
    /* Each of `batch` tokens picks top_k of E experts; under uniform
     * routing a given expert is missed by all with (1 - k/E)^batch. Skewed
     * routing activates fewer, so this is an upper bound of the bytes. */
    double e = (double)m->routed_experts, k = (double)m->top_k;
    o->distinct_experts = k >= e ? e : e * (1.0 - pow(1.0 - k / e, batch));
  }
  double touched = m->total_params - all_experts + moe_l * o->distinct_experts * expert;
  o->weight_bytes_per_gpu = touched * m->weight_bytes / tp;
  o->kv_bytes_per_gpu = batch * context * kv_per_gpu(s) / dp;
  o->step_bytes_per_gpu = o->weight_bytes_per_gpu + o->kv_bytes_per_gpu;
  o->bw_step_s = o->step_bytes_per_gpu / s->hw->hbm_bw;
  o->flops_per_gpu =
      (2.0 * m->active_params * batch + im_model_attn_flops_per_ctx(m) * batch * context) / tp;
  o->compute_step_s = o->flops_per_gpu / im_hw_peak_flops(s->hw, m);
  o->bandwidth_bound = o->bw_step_s >= o->compute_step_s;
}

double im_roofline_bw_util(const struct im_roofline_sys *s, const struct im_roofline_pred *p,
                           double tpot_s) {
  return tpot_s > 0 ? p->step_bytes_per_gpu / (tpot_s * s->hw->hbm_bw) : NAN;
}

double im_roofline_mfu(const struct im_roofline_sys *s, double output_tok_s) {
  return 2.0 * s->model->active_params * output_tok_s /
         (im_hw_peak_flops(s->hw, s->model) * deg(s->gpus));
}

/* Tokens of r received by run-relative time t. */
static double tokens_by(const struct im_record *r, int64_t t) {
  if (r->t_start < 0 || t < r->t_start || !r->n_chunks)
    return 0.0;
  int64_t rel = (t - r->t_start) / 1000; /* µs, as chunk_us */
  size_t lo = 0, hi = r->n_chunks;      /* first chunk after rel */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((int64_t)r->chunk_us[mid] <= rel)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (!r->chunk_tokens)
    return (double)lo;
  double sum = 0;
  for (size_t i = 0; i < lo; i++)
    sum += r->chunk_tokens[i];
  return sum;
}

enum im_err im_inflight_series(const struct im_record *r, size_t n, int64_t from_ns,
                               int64_t to_ns, size_t n_pts, struct im_inflight_pt **out) {
  *out = NULL;
  if (!n_pts || to_ns <= from_ns)
    return IM_INVAL;
  struct im_inflight_pt *v = calloc(n_pts, sizeof *v);
  if (!v)
    return IM_NOMEM;
  double step = (double)(to_ns - from_ns) / (double)n_pts;
  for (size_t i = 0; i < n_pts; i++) {
    int64_t t = from_ns + (int64_t)(step * ((double)i + 0.5));
    struct im_inflight_pt *p = &v[i];
    double sum = 0, sq = 0;
    p->t_s = (double)t / 1e9;
    for (size_t k = 0; k < n; k++) {
      const struct im_record *q = &r[k];
      if (q->kind == IM_KIND_HEALTH || q->kind == IM_KIND_PROBE || q->t_start < 0 ||
          t < q->t_start || (q->t_end >= 0 && t >= q->t_end))
        continue;
      double ctx = (double)q->prompt_tokens + tokens_by(q, t);
      if (!p->n || ctx < p->min)
        p->min = ctx;
      if (!p->n || ctx > p->max)
        p->max = ctx;
      p->n++;
      p->decoding += q->t_first >= 0 && t >= q->t_first;
      sum += ctx;
      sq += ctx * ctx;
    }
    if (p->n) {
      p->tokens = sum;
      p->mean = sum / p->n;
      double var = sq / p->n - p->mean * p->mean;
      p->std = var > 0 ? sqrt(var) : 0.0;
    }
  }
  *out = v;
  return IM_OK;
}

static bool tpot_of(const struct im_record *r, int64_t ws, int64_t we, double *tpot_s) {
  if (r->kind != IM_KIND_MEASURED || r->error != IM_EC_NONE || r->output_tokens < 2 ||
      r->t_dispatch < ws || r->t_dispatch > we || r->t_first < 0 || r->t_last <= r->t_first)
    return false;
  *tpot_s = (double)(r->t_last - r->t_first) / 1e9 / (double)(r->output_tokens - 1);
  return true;
}

/* The q-quantile of sorted v (nearest rank). */
static double quantile(const double *v, size_t n, double q) {
  size_t i = (size_t)ceil(q * (double)n);
  return v[i ? i - 1 : 0];
}

static const uint32_t bucket_lo[IM_ROOF_BUCKETS] = {0,     1024,  2048,  4096, 8192,
                                                    16384, 32768, 65536, 131072};

static size_t bucket_of(uint32_t prompt) {
  size_t b = 0;
  while (b + 1 < IM_ROOF_BUCKETS && prompt >= bucket_lo[b + 1])
    b++;
  return b;
}

/* The median inter-token gap (s) pooled over the requests with a TPOT:
 * the step time of a decode step without a prefill chunk in it (under
 * chunked prefill a minority of steps carry one and are long; TPOT's mean
 * includes them). NaN when there is no gap. IM_NOMEM. */
static enum im_err itl_median(const struct im_record *r, size_t n, int64_t ws, int64_t we,
                              double *out) {
  size_t total = 0;
  double t;
  *out = NAN;
  for (size_t i = 0; i < n; i++)
    if (tpot_of(&r[i], ws, we, &t) && r[i].n_chunks > 1)
      total += r[i].n_chunks - 1;
  if (!total)
    return IM_OK;
  double *g = malloc(total * sizeof *g);
  if (!g)
    return IM_NOMEM;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (!tpot_of(&r[i], ws, we, &t))
      continue;
    for (uint32_t j = 1; j < r[i].n_chunks && k < total; j++) {
      double tok = r[i].chunk_tokens && r[i].chunk_tokens[j] ? r[i].chunk_tokens[j] : 1.0;
      double d = (double)r[i].chunk_us[j] - (double)r[i].chunk_us[j - 1];
      g[k++] = (d > 0 ? d : 0) / 1e6 / tok;
    }
  }
  im_stats_sort(g, k);
  *out = k ? quantile(g, k, 0.5) : NAN;
  free(g);
  return IM_OK;
}

/* Per-request figures: TPOT mean, per-user speeds, buckets (predictions
 * only when s is non-NULL: the system is described). */
static enum im_err per_request(const struct im_roofline_sys *s, const struct im_record *r,
                               size_t n, int64_t ws, int64_t we, struct im_roofline *o) {
  double *speed = malloc((n ? n : 1) * sizeof *speed);
  double bsum[IM_ROOF_BUCKETS] = {0}, bctx[IM_ROOF_BUCKETS] = {0};
  size_t bn[IM_ROOF_BUCKETS] = {0};
  if (!speed)
    return IM_NOMEM;
  double tsum = 0, ssum = 0, t;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (!tpot_of(&r[i], ws, we, &t))
      continue;
    speed[k++] = 1.0 / t;
    tsum += t;
    ssum += 1.0 / t;
    size_t b = bucket_of(r[i].prompt_tokens);
    bn[b]++;
    bsum[b] += t;
    bctx[b] += (double)r[i].prompt_tokens + (double)r[i].output_tokens / 2.0;
  }
  o->n_users = k;
  if (k) {
    im_stats_sort(speed, k);
    o->tpot_mean_s = tsum / (double)k;
    o->user_tok_s_mean = ssum / (double)k;
    o->user_tok_s_p10 = quantile(speed, k, 0.10);
    o->user_tok_s_p50 = quantile(speed, k, 0.50);
    o->user_tok_s_p90 = quantile(speed, k, 0.90);
  }
  free(speed);
  for (size_t b = 0; b < IM_ROOF_BUCKETS; b++) {
    if (!bn[b])
      continue;
    struct im_roofline_bucket *u = &o->buckets[o->n_buckets++];
    u->lo = bucket_lo[b];
    u->hi = b + 1 < IM_ROOF_BUCKETS ? bucket_lo[b + 1] : 0;
    u->n = bn[b];
    u->context_mean = bctx[b] / (double)bn[b];
    u->tpot_mean_s = bsum[b] / (double)bn[b];
    u->decode_tok_s = o->batch_mean / u->tpot_mean_s;
    u->bw_util = NAN;
    if (s) {
      im_roofline_predict(s, o->batch_mean, u->context_mean, &u->pred);
      u->bw_util = im_roofline_bw_util(s, &u->pred, u->tpot_mean_s);
    }
  }
  return IM_OK;
}

static void kv_formula(const struct im_model_desc *m, char *buf, size_t len) {
  if (m->attn == IM_ATTN_MLA)
    snprintf(buf, len, "MLA: layers %u x (kv_lora_rank %u + qk_rope_head_dim %u) x %g B", m->layers,
             m->kv_lora_rank, m->qk_rope_head_dim, m->kv_bytes);
  else
    snprintf(buf, len, "GQA: 2 x layers %u x kv_heads %u x head_dim %u x %g B", m->layers,
             m->kv_heads, m->head_dim, m->kv_bytes);
}

/* Output tokens that arrived inside [ws, we] over its length: each
 * record's chunks in the window, scaled to its output token count (usage
 * may count more tokens than chunks). */
static double window_tok_s(const struct im_record *r, size_t n, int64_t ws, int64_t we) {
  double tok = 0;
  for (size_t i = 0; i < n; i++) {
    const struct im_record *q = &r[i];
    if (q->kind == IM_KIND_HEALTH || q->kind == IM_KIND_PROBE || !q->n_chunks || q->t_start < 0)
      continue;
    double in = tokens_by(q, we) - tokens_by(q, ws - 1), all = tokens_by(q, INT64_MAX);
    if (all > 0)
      tok += in * ((double)q->output_tokens > all ? (double)q->output_tokens : all) / all;
  }
  return tok / ((double)(we - ws) / 1e9);
}

enum im_err im_roofline_compute(const struct im_roofline_sys *s, const struct im_record *r,
                                size_t n, int64_t ws, int64_t we, struct im_roofline *o) {
  memset(o, 0, sizeof *o);
  o->sys = s;
  o->bw_util = o->mfu = NAN;
  bool described = s->model && s->hw;
  if (described) {
    o->kv_bytes_per_token = im_model_kv_bytes_per_token(s->model);
    o->kv_bytes_per_token_per_gpu = kv_per_gpu(s);
    o->kv_bytes_per_1k_tokens = 1000.0 * o->kv_bytes_per_token;
    kv_formula(s->model, o->kv_formula, sizeof o->kv_formula);
  }
  if (we <= ws) {
    o->not_collected = "empty measured window";
    return IM_OK;
  }
  o->output_tok_s = window_tok_s(r, n, ws, we);
  o->output_tok_s_per_gpu = o->output_tok_s / deg(s->gpus);
  if (described)
    o->mfu = im_roofline_mfu(s, o->output_tok_s);
  /* One instant per 250 ms of window, 8 to 120. */
  size_t pts = (size_t)((we - ws) / 250000000);
  pts = pts < 8 ? 8 : pts > 120 ? 120 : pts;
  enum im_err e = im_inflight_series(r, n, ws, we, pts, &o->inflight);
  if (e)
    return e;
  o->n_inflight = pts;
  double bsum = 0, cwsum = 0, dec = 0, res_sum = 0;
  double mem = !described ? 0 : s->gpu_memory_bytes > 0 ? s->gpu_memory_bytes : s->hw->mem_bytes;
  for (size_t i = 0; i < pts; i++) {
    const struct im_inflight_pt *p = &o->inflight[i];
    bsum += p->decoding;
    cwsum += p->tokens;
    dec += p->n;
    if (!described)
      continue;
    /* Residency: the KV bytes one GPU holds for the in-flight contexts
     * over its memory (each DP rank holds 1/dp of the sequences). */
    double res = p->tokens * o->kv_bytes_per_token_per_gpu / deg(s->dp) / mem;
    res_sum += res;
    if (res > o->kv_residency_max)
      o->kv_residency_max = res;
  }
  o->kv_residency_mean = res_sum / (double)pts;
  /* Each model replica (tp GPUs) runs its share of the batch. */
  double replicas = deg(s->gpus) / deg(s->tp);
  o->batch_mean = bsum / (double)pts / (replicas >= 1 ? replicas : 1);
  o->context_mean = dec > 0 ? cwsum / dec : 0;
  if ((e = per_request(described ? s : NULL, r, n, ws, we, o)))
    return e;
  if (!(o->batch_mean > 0) || !o->n_users) {
    o->not_collected = "no decoding request in the measured window";
    return IM_OK;
  }
  if ((e = itl_median(r, n, ws, we, &o->itl_median_s)))
    return e;
  o->decode_tok_s = bsum / (double)pts / o->itl_median_s;
  if (!described) {
    o->not_collected = !s->model ? "model not described (--model-config; or a target that "
                                   "declares it, as the built-in server does)"
                                 : "hardware not described (--hardware)";
    return IM_OK;
  }
  im_roofline_predict(s, o->batch_mean, o->context_mean, &o->pred);
  o->bw_util = im_roofline_bw_util(s, &o->pred, o->tpot_mean_s);
  return IM_OK;
}

void im_roofline_cleanup(struct im_roofline *rl) {
  if (!rl)
    return;
  free(rl->inflight);
  rl->inflight = NULL;
  rl->n_inflight = 0;
}

long im_roofline_knee(const double *context, const double *tput, size_t n, double drop) {
  if (n < 2 || !(drop > 0) || drop >= 1)
    return -1;
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(tput[i]) || !isfinite(context[i]) || (i && context[i] <= context[i - 1]))
      return -1;
    if (i && tput[i] < (1.0 - drop) * (sum / (double)i))
      return (long)i;
    sum += tput[i];
  }
  return -1;
}

static int cmp_point(const void *a, const void *b) {
  const struct im_knee_point *x = a, *y = b;
  return (x->input_len > y->input_len) - (x->input_len < y->input_len);
}

void im_knee_compute(struct im_knee_point *pts, size_t n, double drop, double kv_bytes_per_token,
                     struct im_knee *out) {
  memset(out, 0, sizeof *out);
  if (n < 2) {
    out->reason = "fewer than two contexts";
    return;
  }
  qsort(pts, n, sizeof *pts, cmp_point);
  double ctx[IM_KNEE_MAX_POINTS], tput[IM_KNEE_MAX_POINTS];
  size_t m = n < IM_KNEE_MAX_POINTS ? n : IM_KNEE_MAX_POINTS;
  for (size_t i = 0; i < m; i++) {
    ctx[i] = pts[i].input_len;
    tput[i] = pts[i].decode_tok_s;
    if (!isfinite(tput[i])) {
      out->reason = "a stage has no decode throughput (nothing decoded in its window)";
      return;
    }
    if (i && ctx[i] == ctx[i - 1]) {
      out->reason = "two stages share a context length (a grid over other parameters)";
      return;
    }
  }
  long k = im_roofline_knee(ctx, tput, m, drop);
  if (k < 0) {
    out->reason = "throughput never fell below the plateau by the drop";
    return;
  }
  out->found = true;
  out->at = (size_t)k;
  double sum = 0;
  for (size_t i = 0; i < (size_t)k; i++)
    sum += tput[i];
  out->plateau_tok_s = sum / (double)k;
  out->kv_bytes_per_sequence = kv_bytes_per_token * pts[k].context_mean;
}
