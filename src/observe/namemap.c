#include "observe/namemap.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/promexp.h"

#define MIB 1048576.0

/* The name table. Sources (checked against the projects' files):
 *   [vllm1] vLLM V1: vllm/v1/metrics/loggers.py; docs/design/metrics.md
 *           ("v1 metrics", with the renames kv_cache_usage_perc <-
 *           gpu_cache_usage_perc, prefix_cache_{queries,hits} <-
 *           gpu_prefix_cache_{queries,hits}, and time_per_output_token ->
 *           inter_token_latency / request_time_per_output_token).
 *   [vllm0] vLLM V0: vllm/engine/metrics.py; docs/design/v1/metrics.md
 *           ("v0 metrics" list).
 *   [sgl]   SGLang: python/sglang/srt/metrics/collector.py
 *           (SchedulerMetricsCollector, TokenizerMetricsCollector);
 *           docs/references/production_metrics.md.
 *   [llama] llama.cpp: tools/server/server.cpp (handle_metrics) and
 *           tools/server/README.md ("GET /metrics"); kv_cache_usage_ratio
 *           only in builds that still export it.
 *   [tgi]   TGI: docs/source/reference/metrics.md
 *           (huggingface.co/docs/text-generation-inference/reference/metrics).
 *   [trt]   TensorRT-LLM: tensorrt_llm/metrics/collector.py
 *           (MetricsCollector, prefix "trtllm_").
 *   [dcgm]  dcgm-exporter: etc/default-counters.csv and
 *           etc/dcp-metrics-included.csv; units from DCGM's field docs
 *           (FB in MiB, power in W, PROF_* ratios 0..1).
 *   [im]    infermeter serve: src/serve/sim_metrics.c (vLLM V1 names).
 * Within an engine family, earlier rows are preferred (see namemap.h). */
static const struct im_nm_row table[] = {
    /* vLLM V1 [vllm1] (also what `infermeter serve` exports [im]) */
    {IM_NM_VLLM_V1, IM_NM_KV_USAGE, "vllm:kv_cache_usage_perc", 1, 0},
    {IM_NM_VLLM_V1, IM_NM_PREFIX_QUERIES, "vllm:prefix_cache_queries_total", 1, 0},
    {IM_NM_VLLM_V1, IM_NM_PREFIX_QUERIES, "vllm:gpu_prefix_cache_queries_total", 1, 0}, /* V1 < 0.10 */
    {IM_NM_VLLM_V1, IM_NM_PREFIX_HITS, "vllm:prefix_cache_hits_total", 1, 0},
    {IM_NM_VLLM_V1, IM_NM_PREFIX_HITS, "vllm:gpu_prefix_cache_hits_total", 1, 0}, /* V1 < 0.10 */
    {IM_NM_VLLM_V1, IM_NM_REQUESTS_RUNNING, "vllm:num_requests_running", 1, 0},
    {IM_NM_VLLM_V1, IM_NM_REQUESTS_WAITING, "vllm:num_requests_waiting", 1, 0},
    {IM_NM_VLLM_V1, IM_NM_PREEMPTIONS, "vllm:num_preemptions_total", 1, 0},
    {IM_NM_VLLM_V1, IM_NM_PROMPT_TOKENS, "vllm:prompt_tokens_total", 1, 0},
    {IM_NM_VLLM_V1, IM_NM_GENERATION_TOKENS, "vllm:generation_tokens_total", 1, 0},
    {IM_NM_VLLM_V1, IM_NM_TTFT, "vllm:time_to_first_token_seconds", 1, 0},
    {IM_NM_VLLM_V1, IM_NM_ITL, "vllm:inter_token_latency_seconds", 1, 0},
    {IM_NM_VLLM_V1, IM_NM_TPOT, "vllm:request_time_per_output_token_seconds", 1, 0},
    {IM_NM_VLLM_V1, IM_NM_E2E, "vllm:e2e_request_latency_seconds", 1, 0},
    {IM_NM_VLLM_V1, IM_NM_QUEUE_TIME, "vllm:request_queue_time_seconds", 1, 0},
    /* vLLM V0 [vllm0]; the shared names above serve V0 too */
    {IM_NM_VLLM_V0, IM_NM_KV_USAGE, "vllm:gpu_cache_usage_perc", 1, 0}, /* also early V1 */
    {IM_NM_VLLM_V0, IM_NM_PREFIX_HIT_RATE, "vllm:gpu_prefix_cache_hit_rate", 1, 0},
    /* V0 observes it per decode step per request: an inter-token latency
     * (V1 kept it as a deprecated alias of inter_token_latency). */
    {IM_NM_VLLM_V0, IM_NM_ITL, "vllm:time_per_output_token_seconds", 1, 0},
    /* SGLang [sgl] */
    {IM_NM_SGLANG, IM_NM_KV_USAGE, "sglang:token_usage", 1, 0},
    /* cached_tokens / prompt_tokens: both counted per finished request by
     * the tokenizer manager, so their ratio is the token hit rate. */
    {IM_NM_SGLANG, IM_NM_PREFIX_QUERIES, "sglang:prompt_tokens_total", 1, 0},
    {IM_NM_SGLANG, IM_NM_PREFIX_HITS, "sglang:cached_tokens_total", 1, 0},
    {IM_NM_SGLANG, IM_NM_PREFIX_HIT_RATE, "sglang:cache_hit_rate", 1, 0},
    {IM_NM_SGLANG, IM_NM_REQUESTS_RUNNING, "sglang:num_running_reqs", 1, 0},
    {IM_NM_SGLANG, IM_NM_REQUESTS_WAITING, "sglang:num_queue_reqs", 1, 0},
    /* The counter; sglang:num_retracted_reqs is a gauge of the last
     * interval and is kept raw, not summed as a counter. */
    {IM_NM_SGLANG, IM_NM_PREEMPTIONS, "sglang:num_retracted_requests_total", 1, 0},
    {IM_NM_SGLANG, IM_NM_PROMPT_TOKENS, "sglang:prompt_tokens_total", 1, 0},
    {IM_NM_SGLANG, IM_NM_GENERATION_TOKENS, "sglang:generation_tokens_total", 1, 0},
    {IM_NM_SGLANG, IM_NM_TTFT, "sglang:time_to_first_token_seconds", 1, 0},
    {IM_NM_SGLANG, IM_NM_ITL, "sglang:inter_token_latency_seconds", 1, 0},
    {IM_NM_SGLANG, IM_NM_E2E, "sglang:e2e_request_latency_seconds", 1, 0},
    {IM_NM_SGLANG, IM_NM_QUEUE_TIME, "sglang:queue_time_seconds", 1, 0},
    /* llama.cpp [llama] */
    {IM_NM_LLAMACPP, IM_NM_KV_USAGE, "llamacpp:kv_cache_usage_ratio", 1, 0},
    {IM_NM_LLAMACPP, IM_NM_REQUESTS_RUNNING, "llamacpp:requests_processing", 1, 0},
    {IM_NM_LLAMACPP, IM_NM_REQUESTS_WAITING, "llamacpp:requests_deferred", 1, 0},
    /* Since the builds that export prompt_tokens_cached_total (b10587,
     * 2026-08, at least), prompt_tokens_total counts the uncached prompt
     * tokens only: the prompt tokens and the prefix-cache queries are the
     * two counters' sum, the hits the cached one. Older builds have only
     * prompt_tokens_total (all prompt tokens) and no hit counter. */
    {IM_NM_LLAMACPP, IM_NM_PREFIX_QUERIES, "llamacpp:prompt_tokens_total", 1, 0},
    {IM_NM_LLAMACPP, IM_NM_PREFIX_QUERIES, "llamacpp:prompt_tokens_cached_total", 1, 1},
    {IM_NM_LLAMACPP, IM_NM_PREFIX_HITS, "llamacpp:prompt_tokens_cached_total", 1, 0},
    {IM_NM_LLAMACPP, IM_NM_PROMPT_TOKENS, "llamacpp:prompt_tokens_total", 1, 0},
    {IM_NM_LLAMACPP, IM_NM_PROMPT_TOKENS, "llamacpp:prompt_tokens_cached_total", 1, 1},
    {IM_NM_LLAMACPP, IM_NM_GENERATION_TOKENS, "llamacpp:tokens_predicted_total", 1, 0},
    /* TGI [tgi]: token counters are the _sum of its per-request length
     * histograms (cumulative, so they difference like counters). */
    {IM_NM_TGI, IM_NM_REQUESTS_RUNNING, "tgi_batch_current_size", 1, 0},
    {IM_NM_TGI, IM_NM_REQUESTS_WAITING, "tgi_queue_size", 1, 0},
    {IM_NM_TGI, IM_NM_PROMPT_TOKENS, "tgi_request_input_length_sum", 1, 0},
    {IM_NM_TGI, IM_NM_GENERATION_TOKENS, "tgi_request_generated_tokens_sum", 1, 0},
    {IM_NM_TGI, IM_NM_TPOT, "tgi_request_mean_time_per_token_duration", 1, 0},
    {IM_NM_TGI, IM_NM_E2E, "tgi_request_duration", 1, 0},
    {IM_NM_TGI, IM_NM_QUEUE_TIME, "tgi_request_queue_duration", 1, 0},
    /* TensorRT-LLM [trt] */
    {IM_NM_TRTLLM, IM_NM_KV_USAGE, "trtllm_kv_cache_utilization", 1, 0},
    {IM_NM_TRTLLM, IM_NM_PREFIX_QUERIES, "trtllm_prompt_tokens_total", 1, 0},
    {IM_NM_TRTLLM, IM_NM_PREFIX_HITS, "trtllm_prompt_cached_tokens_total", 1, 0},
    {IM_NM_TRTLLM, IM_NM_PREFIX_HIT_RATE, "trtllm_kv_cache_hit_rate", 1, 0},
    {IM_NM_TRTLLM, IM_NM_REQUESTS_RUNNING, "trtllm_num_requests_running", 1, 0},
    {IM_NM_TRTLLM, IM_NM_REQUESTS_WAITING, "trtllm_num_requests_waiting", 1, 0},
    {IM_NM_TRTLLM, IM_NM_PROMPT_TOKENS, "trtllm_prompt_tokens_total", 1, 0},
    {IM_NM_TRTLLM, IM_NM_GENERATION_TOKENS, "trtllm_generation_tokens_total", 1, 0},
    {IM_NM_TRTLLM, IM_NM_TTFT, "trtllm_time_to_first_token_seconds", 1, 0},
    {IM_NM_TRTLLM, IM_NM_TPOT, "trtllm_time_per_output_token_seconds", 1, 0},
    {IM_NM_TRTLLM, IM_NM_E2E, "trtllm_e2e_request_latency_seconds", 1, 0},
    {IM_NM_TRTLLM, IM_NM_QUEUE_TIME, "trtllm_request_queue_time_seconds", 1, 0},
    /* DCGM exporter [dcgm] */
    {IM_NM_DCGM, IM_NM_GPU_DRAM_ACTIVE, "DCGM_FI_PROF_DRAM_ACTIVE", 1, 0},
    {IM_NM_DCGM, IM_NM_GPU_TENSOR_ACTIVE, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1, 0},
    {IM_NM_DCGM, IM_NM_GPU_SM_ACTIVE, "DCGM_FI_PROF_SM_ACTIVE", 1, 0},
    {IM_NM_DCGM, IM_NM_GPU_FB_USED, "DCGM_FI_DEV_FB_USED", MIB, 0},
    {IM_NM_DCGM, IM_NM_GPU_FB_FREE, "DCGM_FI_DEV_FB_FREE", MIB, 0},
    {IM_NM_DCGM, IM_NM_GPU_POWER, "DCGM_FI_DEV_POWER_USAGE", 1, 0},
};
#define NROWS (sizeof table / sizeof table[0])

/* Name prefixes that identify an engine even on names the table lacks. */
static const struct {
  const char *prefix;
  enum im_nm_engine engine;
} prefixes[] = {
    {"infermeter_sim_", IM_NM_INFERMETER},
    {"vllm:", IM_NM_VLLM_V1},
    {"sglang:", IM_NM_SGLANG},
    {"llamacpp:", IM_NM_LLAMACPP},
    {"tgi_", IM_NM_TGI},
    {"trtllm_", IM_NM_TRTLLM},
    {"DCGM_FI_", IM_NM_DCGM},
};

/* vLLM V0 and V1 share the prefix; these names tell them apart [vllm0],
 * [vllm1]. A page with both kinds is V1 showing deprecated names. */
static const char *const vllm_v0_only[] = {"vllm:num_requests_swapped", "vllm:cpu_cache_usage_perc",
                                           "vllm:gpu_prefix_cache_hit_rate",
                                           "vllm:cpu_prefix_cache_hit_rate"};
static const char *const vllm_v1_only[] = {
    "vllm:kv_cache_usage_perc", "vllm:prefix_cache_queries_total",
    "vllm:gpu_prefix_cache_queries_total", "vllm:inter_token_latency_seconds_bucket",
    "vllm:request_time_per_output_token_seconds_bucket"};

static const char *const engine_names[IM_NM_ENGINE_COUNT_] = {
    "vllm-v1", "vllm-v0", "sglang", "llamacpp", "tgi", "trtllm", "dcgm", "infermeter"};

static const struct {
  const char *name;
  int hist;
  enum im_nm_agg agg;
} concepts[IM_NM_CONCEPT_COUNT_] = {
    [IM_NM_KV_USAGE] = {"kv_cache_usage", 0, IM_NM_AGG_MAX},
    [IM_NM_PREFIX_QUERIES] = {"prefix_cache_queries", 0, IM_NM_AGG_SUM},
    [IM_NM_PREFIX_HITS] = {"prefix_cache_hits", 0, IM_NM_AGG_SUM},
    [IM_NM_PREFIX_HIT_RATE] = {"prefix_cache_hit_rate", 0, IM_NM_AGG_MEAN},
    [IM_NM_REQUESTS_RUNNING] = {"requests_running", 0, IM_NM_AGG_SUM},
    [IM_NM_REQUESTS_WAITING] = {"requests_waiting", 0, IM_NM_AGG_SUM},
    [IM_NM_PREEMPTIONS] = {"preemptions", 0, IM_NM_AGG_SUM},
    [IM_NM_PROMPT_TOKENS] = {"prompt_tokens", 0, IM_NM_AGG_SUM},
    [IM_NM_GENERATION_TOKENS] = {"generation_tokens", 0, IM_NM_AGG_SUM},
    [IM_NM_TTFT] = {"ttft", 1, IM_NM_AGG_SUM},
    [IM_NM_ITL] = {"itl", 1, IM_NM_AGG_SUM},
    [IM_NM_TPOT] = {"tpot", 1, IM_NM_AGG_SUM},
    [IM_NM_E2E] = {"e2e", 1, IM_NM_AGG_SUM},
    [IM_NM_QUEUE_TIME] = {"queue_time", 1, IM_NM_AGG_SUM},
    [IM_NM_GPU_DRAM_ACTIVE] = {"gpu_dram_active", 0, IM_NM_AGG_MEAN},
    [IM_NM_GPU_TENSOR_ACTIVE] = {"gpu_tensor_active", 0, IM_NM_AGG_MEAN},
    [IM_NM_GPU_SM_ACTIVE] = {"gpu_sm_active", 0, IM_NM_AGG_MEAN},
    [IM_NM_GPU_FB_USED] = {"gpu_fb_used_bytes", 0, IM_NM_AGG_SUM},
    [IM_NM_GPU_FB_FREE] = {"gpu_fb_free_bytes", 0, IM_NM_AGG_SUM},
    [IM_NM_GPU_POWER] = {"gpu_power_watts", 0, IM_NM_AGG_SUM},
};

const struct im_nm_row *im_nm_table(size_t *n) {
  *n = NROWS;
  return table;
}
const char *im_nm_engine_name(enum im_nm_engine e) {
  return (unsigned)e < IM_NM_ENGINE_COUNT_ ? engine_names[e] : "unknown";
}
const char *im_nm_concept_name(enum im_nm_concept c) {
  return (unsigned)c < IM_NM_CONCEPT_COUNT_ ? concepts[c].name : "unknown";
}
int im_nm_concept_is_hist(enum im_nm_concept c) {
  return (unsigned)c < IM_NM_CONCEPT_COUNT_ && concepts[c].hist;
}
enum im_nm_agg im_nm_concept_agg(enum im_nm_concept c) {
  return (unsigned)c < IM_NM_CONCEPT_COUNT_ ? concepts[c].agg : IM_NM_AGG_SUM;
}

/* V0 rows share the V1 rows' family: one choice per concept for both. */
static enum im_nm_engine family_of(enum im_nm_engine e) {
  return e == IM_NM_VLLM_V0 ? IM_NM_VLLM_V1 : e;
}

/* ---- name index: sample name -> chain of (row, part) ---- */

enum part { P_SCALAR, P_BUCKET, P_SUM, P_COUNT };

struct ent {
  char *key;
  size_t row;
  enum part part;
  int next; /* next entry with the same key, -1 */
};

struct index {
  size_t nslots; /* power of two, > 2 * entries */
  int *slots;    /* first entry, -1 */
  struct ent ents[NROWS * 3];
  size_t nents;
};

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
  return h;
}

static int index_find(const struct index *ix, const char *key) {
  for (size_t i = hash_str(key) & (ix->nslots - 1);; i = (i + 1) & (ix->nslots - 1)) {
    int e = ix->slots[i];
    if (e < 0 || strcmp(ix->ents[e].key, key) == 0)
      return (int)i;
  }
}

static enum im_err index_add(struct index *ix, const char *name, const char *sfx, size_t row,
                             enum part part) {
  size_t nl = strlen(name), sl = strlen(sfx);
  char *key = malloc(nl + sl + 1);
  if (!key)
    return IM_NOMEM;
  memcpy(key, name, nl);
  memcpy(key + nl, sfx, sl + 1);
  int e = (int)ix->nents++;
  ix->ents[e] = (struct ent){key, row, part, -1};
  int slot = index_find(ix, key);
  if (ix->slots[slot] < 0) {
    ix->slots[slot] = e;
  } else {
    int t = ix->slots[slot];
    while (ix->ents[t].next >= 0)
      t = ix->ents[t].next;
    ix->ents[t].next = e;
  }
  return IM_OK;
}

static void index_free(struct index *ix) {
  if (!ix)
    return;
  for (size_t i = 0; i < ix->nents; i++)
    free(ix->ents[i].key);
  free(ix->slots);
  free(ix);
}

static struct index *index_build(void) {
  struct index *ix = calloc(1, sizeof *ix);
  if (!ix)
    return NULL;
  ix->nslots = 1024; /* > 2 * (NROWS * 3) */
  ix->slots = malloc(ix->nslots * sizeof *ix->slots);
  if (!ix->slots) {
    free(ix);
    return NULL;
  }
  for (size_t i = 0; i < ix->nslots; i++)
    ix->slots[i] = -1;
  enum im_err err = IM_OK;
  for (size_t r = 0; r < NROWS && !err; r++) {
    if (concepts[table[r].concept].hist) {
      err = index_add(ix, table[r].name, "_bucket", r, P_BUCKET);
      if (!err)
        err = index_add(ix, table[r].name, "_sum", r, P_SUM);
      if (!err)
        err = index_add(ix, table[r].name, "_count", r, P_COUNT);
    } else
      err = index_add(ix, table[r].name, "", r, P_SCALAR);
  }
  if (err) {
    index_free(ix);
    return NULL;
  }
  return ix;
}

/* ---- per-row accumulation ---- */

struct im_nm_acc {
  size_t n;
  double sum, max;
  size_t nb, dropped, series;
  struct im_prom_bucket b[IM_NM_MAX_BUCKETS];
  double hsum, hcount;
  int hist_seen;
};

struct run {
  struct im_nm_snapshot *s;
  int v0_marker, v1_marker;
  enum im_err err;
};

static void add_bucket(struct im_nm_acc *a, double le, double count) {
  for (size_t i = 0; i < a->nb; i++)
    if (a->b[i].le == le) {
      a->b[i].count += count;
      return;
    }
  if (a->nb == IM_NM_MAX_BUCKETS) {
    a->dropped++;
    return;
  }
  a->b[a->nb++] = (struct im_prom_bucket){le, count};
}

static void make_key(char *key, const struct im_prom_sample *smp) {
  size_t o = 0;
  key[0] = '\0';
  for (size_t i = 0; i < smp->n_labels; i++) {
    const char *n = smp->labels[i].name;
    if (strcmp(n, "engine") != 0 && strcmp(n, "dp_rank") != 0 && strcmp(n, "gpu") != 0)
      continue;
    size_t need = strlen(n) + 1 + strlen(smp->labels[i].value) + (o > 0);
    if (o + need >= IM_NM_KEY_MAX)
      break;
    o += (size_t)snprintf(key + o, IM_NM_KEY_MAX - o, "%s%s=%s", o ? "," : "", n,
                          smp->labels[i].value);
  }
}

static enum im_err keep_raw(struct im_nm_snapshot *s, const struct im_prom_sample *smp) {
  if (s->n_raw == s->max_raw) {
    s->raw_dropped++;
    return IM_OK;
  }
  im_buf_reset(&s->lab);
  enum im_err err = IM_OK;
  for (size_t i = 0; i < smp->n_labels && !err; i++)
    err = im_prom_label(&s->lab, smp->labels[i].name, smp->labels[i].value);
  size_t mark = s->raw_text.len;
  size_t name_off = s->raw_text.len;
  if (!err)
    err = im_buf_append(&s->raw_text, smp->name, strlen(smp->name) + 1);
  size_t lab_off = s->raw_text.len;
  if (!err)
    err = im_buf_append(&s->raw_text, s->lab.data ? s->lab.data : "", s->lab.len + 1);
  if (err == IM_LIMIT) {
    s->raw_text.len = mark;
    s->raw_dropped++;
    return IM_OK;
  }
  if (err)
    return err;
  s->raw_off[2 * s->n_raw] = name_off;
  s->raw_off[2 * s->n_raw + 1] = lab_off;
  s->raw[s->n_raw].value = smp->value;
  s->n_raw++;
  return IM_OK;
}

static enum im_err on_sample(void *ud, const struct im_prom_sample *smp) {
  struct run *rn = ud;
  struct im_nm_snapshot *s = rn->s;
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(smp->name, prefixes[i].prefix, strlen(prefixes[i].prefix)) == 0) {
      s->engines |= 1u << prefixes[i].engine;
      break;
    }
  if (smp->name[0] == 'v') {
    for (size_t i = 0; i < sizeof vllm_v0_only / sizeof *vllm_v0_only; i++)
      rn->v0_marker |= strcmp(smp->name, vllm_v0_only[i]) == 0;
    for (size_t i = 0; i < sizeof vllm_v1_only / sizeof *vllm_v1_only; i++)
      rn->v1_marker |= strcmp(smp->name, vllm_v1_only[i]) == 0;
  }
  const struct index *ix = s->index;
  int e = ix->slots[index_find(ix, smp->name)];
  if (e < 0)
    return keep_raw(s, smp);
  for (; e >= 0; e = ix->ents[e].next) {
    size_t r = ix->ents[e].row;
    struct im_nm_acc *a = &s->acc[r];
    double v = smp->value * table[r].scale;
    switch (ix->ents[e].part) {
    case P_SCALAR:
      if (isnan(v))
        break; /* a NaN gauge (no data yet) is no series */
      a->max = a->n ? fmax(a->max, v) : v;
      a->sum += v;
      a->n++;
      if (s->n_series == s->max_series) {
        s->series_dropped++;
        break;
      }
      struct im_nm_series *sr = &s->series[s->n_series];
      sr->concept = table[r].concept;
      sr->engine = table[r].engine;
      sr->value = v;
      make_key(sr->key, smp);
      s->series_row[s->n_series++] = r;
      break;
    case P_BUCKET: {
      const char *le = im_prom_sample_label(smp, "le");
      char *end;
      double b = le ? strtod(le, &end) : NAN;
      if (!le || *end || isnan(b) || isnan(smp->value))
        break;
      add_bucket(a, b, smp->value);
      a->hist_seen = 1;
      break;
    }
    case P_SUM:
      a->hsum += smp->value;
      a->hist_seen = 1;
      break;
    case P_COUNT:
      a->hcount += smp->value;
      a->series++;
      a->hist_seen = 1;
      break;
    }
  }
  return IM_OK;
}

static int cmp_bucket(const void *x, const void *y) {
  const struct im_prom_bucket *a = x, *b = y;
  return a->le < b->le ? -1 : a->le > b->le;
}

/* V0 or V1 from the markers seen; the primary engine. */
static void settle_engines(struct im_nm_snapshot *s, const struct run *rn) {
  if (s->engines & (1u << IM_NM_VLLM_V1)) {
    if (rn->v0_marker && !rn->v1_marker)
      s->engines = (s->engines & ~(1u << IM_NM_VLLM_V1)) | (1u << IM_NM_VLLM_V0);
  }
  s->primary = -1;
  if (s->engines & (1u << IM_NM_INFERMETER))
    s->primary = IM_NM_INFERMETER;
  else
    for (int e = 0; e < IM_NM_ENGINE_COUNT_ && s->primary < 0; e++)
      if (e != IM_NM_DCGM && (s->engines & (1u << e)))
        s->primary = e;
  if (s->primary < 0 && (s->engines & (1u << IM_NM_DCGM)))
    s->primary = IM_NM_DCGM;
}

/* Picks, per concept and engine family, the first row with data, and
 * combines the picks. */
static void finish(struct im_nm_snapshot *s, const struct run *rn) {
  unsigned char chosen[NROWS] = {0};
  for (size_t r = 0; r < NROWS; r++) {
    const struct im_nm_acc *a = &s->acc[r];
    if (!(concepts[table[r].concept].hist ? a->hist_seen : a->n > 0))
      continue;
    int taken = 0;
    for (size_t q = 0; q < r && !taken && !table[r].add; q++)
      taken = chosen[q] && table[q].concept == table[r].concept &&
              family_of(table[q].engine) == family_of(table[r].engine);
    if (taken)
      continue;
    chosen[r] = 1;
    enum im_nm_concept c = table[r].concept;
    if (concepts[c].hist) {
      struct im_nm_hist *h = &s->h[c];
      h->present = 1;
      h->sum += a->hsum;
      h->count += a->hcount;
      h->series += a->series;
      h->buckets_dropped += a->dropped;
      for (size_t i = 0; i < a->nb; i++) {
        size_t k = 0;
        while (k < h->n && h->b[k].le != a->b[i].le)
          k++;
        if (k < h->n)
          h->b[k].count += a->b[i].count;
        else if (h->n < IM_NM_MAX_BUCKETS)
          h->b[h->n++] = a->b[i];
        else
          h->buckets_dropped++;
      }
    } else {
      struct im_nm_value *v = &s->v[c];
      v->max = v->present ? fmax(v->max, a->max) : a->max;
      v->present = 1;
      v->sum += a->sum;
      v->n += a->n;
    }
  }
  for (int c = 0; c < IM_NM_CONCEPT_COUNT_; c++) {
    struct im_nm_value *v = &s->v[c];
    if (v->present) {
      v->mean = v->sum / (double)v->n;
      v->value = concepts[c].agg == IM_NM_AGG_MAX    ? v->max
                 : concepts[c].agg == IM_NM_AGG_MEAN ? v->mean
                                                     : v->sum;
    }
    if (s->h[c].n > 1)
      qsort(s->h[c].b, s->h[c].n, sizeof s->h[c].b[0], cmp_bucket);
  }
  size_t w = 0;
  for (size_t i = 0; i < s->n_series; i++)
    if (chosen[s->series_row[i]]) {
      s->series[w] = s->series[i];
      s->series_row[w++] = s->series_row[i];
    }
  s->n_series = w;
  for (size_t i = 0; i < s->n_raw; i++) {
    s->raw[i].name = s->raw_text.data + s->raw_off[2 * i];
    s->raw[i].labels = s->raw_text.data + s->raw_off[2 * i + 1];
  }
  settle_engines(s, rn);
}

static void reset(struct im_nm_snapshot *s) {
  s->engines = 0;
  s->primary = -1;
  memset(s->v, 0, sizeof s->v);
  memset(s->h, 0, IM_NM_CONCEPT_COUNT_ * sizeof *s->h);
  memset(s->acc, 0, NROWS * sizeof *s->acc);
  memset(&s->parse, 0, sizeof s->parse);
  s->n_series = s->series_dropped = s->n_raw = s->raw_dropped = 0;
  im_buf_reset(&s->raw_text);
}

enum im_err im_nm_snapshot_new(struct im_nm_snapshot **out, const struct im_nm_limits *lim) {
  *out = NULL;
  struct im_nm_snapshot *s = calloc(1, sizeof *s);
  if (!s)
    return IM_NOMEM;
  s->max_series = lim && lim->max_series ? lim->max_series : IM_NM_DEFAULT_MAX_SERIES;
  s->max_raw = lim && lim->max_raw ? lim->max_raw : IM_NM_DEFAULT_MAX_RAW;
  size_t raw_bytes = lim && lim->max_raw_bytes ? lim->max_raw_bytes : IM_NM_DEFAULT_MAX_RAW_BYTES;
  im_buf_init(&s->raw_text, raw_bytes);
  im_buf_init(&s->lab, raw_bytes);
  im_promparse_init(&s->parser, lim ? &lim->parse : NULL);
  s->h = calloc(IM_NM_CONCEPT_COUNT_, sizeof *s->h);
  s->acc = calloc(NROWS, sizeof *s->acc);
  s->series = calloc(s->max_series, sizeof *s->series);
  s->series_row = calloc(s->max_series, sizeof *s->series_row);
  s->raw = calloc(s->max_raw, sizeof *s->raw);
  s->raw_off = calloc(2 * s->max_raw, sizeof *s->raw_off);
  s->index = index_build();
  if (!s->h || !s->acc || !s->series || !s->series_row || !s->raw || !s->raw_off || !s->index) {
    im_nm_snapshot_free(s);
    return IM_NOMEM;
  }
  reset(s);
  *out = s;
  return IM_OK;
}

void im_nm_snapshot_free(struct im_nm_snapshot *s) {
  if (!s)
    return;
  im_buf_cleanup(&s->raw_text);
  im_buf_cleanup(&s->lab);
  im_promparse_cleanup(&s->parser);
  free(s->h);
  free(s->acc);
  free(s->series);
  free(s->series_row);
  free(s->raw);
  free(s->raw_off);
  index_free(s->index);
  free(s);
}

enum im_err im_nm_extract(struct im_nm_snapshot *s, const char *page, size_t len) {
  reset(s);
  struct run rn = {.s = s};
  struct im_promparse_cbs cbs = {on_sample, NULL, NULL, &rn};
  enum im_err err = im_promparse_page(&s->parser, page, len, &cbs, &s->parse);
  if (err) {
    reset(s);
    return err;
  }
  finish(s, &rn);
  return IM_OK;
}

double im_nm_delta(const struct im_nm_snapshot *prev, const struct im_nm_snapshot *cur,
                   enum im_nm_concept c) {
  if ((unsigned)c >= IM_NM_CONCEPT_COUNT_ || !cur->v[c].present)
    return NAN;
  if (!prev)
    return cur->v[c].value;
  if (!prev->v[c].present || cur->v[c].value < prev->v[c].value)
    return NAN;
  return cur->v[c].value - prev->v[c].value;
}

double im_nm_hit_rate(const struct im_nm_snapshot *prev, const struct im_nm_snapshot *cur) {
  double dq = im_nm_delta(prev, cur, IM_NM_PREFIX_QUERIES);
  double dh = im_nm_delta(prev, cur, IM_NM_PREFIX_HITS);
  if (dq > 0 && dh >= 0)
    return dh / dq;
  if (isnan(dq) && cur->v[IM_NM_PREFIX_HIT_RATE].present)
    return cur->v[IM_NM_PREFIX_HIT_RATE].value;
  return NAN;
}

enum im_err im_nm_hist_quantile(const struct im_nm_snapshot *prev, const struct im_nm_snapshot *cur,
                                enum im_nm_concept c, double q, double *out) {
  *out = NAN;
  if (!im_nm_concept_is_hist(c) || !cur->h[c].present)
    return IM_NOTFOUND;
  const struct im_nm_hist *h = &cur->h[c];
  struct im_prom_bucket d[IM_NM_MAX_BUCKETS];
  for (size_t i = 0; i < h->n; i++) {
    d[i] = h->b[i];
    if (prev && prev->h[c].present)
      for (size_t k = 0; k < prev->h[c].n; k++)
        if (prev->h[c].b[k].le == d[i].le) {
          d[i].count -= prev->h[c].b[k].count;
          break;
        }
  }
  return im_prom_histogram_quantile(q, d, h->n, out);
}
