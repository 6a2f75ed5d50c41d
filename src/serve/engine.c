/* The simulated engine. See engine.h for the step structure; the reasons
 * for the choices that are not obvious are given where they are made. */
#include "serve/engine.h"
#include "serve/reasoning.h"
#include "serve/rope.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/rng.h"

struct seq_list {
  struct im_seq *head, *tail;
  uint32_t n;
};

struct im_engine {
  struct im_engine_config cfg;
  const struct im_profile *prof;
  struct im_kv *kv;
  struct im_moe *moe;         /* NULL for dense profiles or routing off */
  uint32_t block_size, num_blocks, max_model_len;
  uint32_t native_window;          /* serve/rope.h; UINT32_MAX: none */
  struct seq_list arriving, waiting, running; /* arriving: by t_arrival */
  struct im_rng rng;
  uint64_t next_num;

  bool in_step;
  int64_t step_start, step_deadline;
  int64_t last_step_end;      /* deadline of the last completed step, -1 none */
  int64_t wake_at;            /* when idle: next tick wanted, -1 none */
  int64_t hiccup_pending_ns;
  bool dispatching;           /* inside sink callbacks */
  bool abort_pending;

  struct im_step_cost last_cost;
  struct im_moe_step_stats last_moe;
  uint32_t last_seqs, last_tokens;
  struct im_engine_stats stats;
  struct im_engine_observer obs;
  uint16_t *detail_ids;       /* n_moe_layers * top_k */
  char *text;                 /* emission text scratch */
  size_t text_cap;
};

void im_engine_config_default(struct im_engine_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->profile = im_profile_default();
  /* vLLM's defaults for its OpenAI server on datacenter GPUs
   * (vllm/engine/arg_utils.py: max_num_seqs 256 when unset for
   * GPUs with large memory, max_num_batched_tokens 8192 for the API server). */
  cfg->max_num_seqs = 256;
  cfg->max_num_batched_tokens = 8192;
  cfg->gpu_mem_util = 0.9;
  cfg->prefix_caching = true;
  cfg->time_scale = 1.0;
  cfg->rope_slowdown = 1.5;
  cfg->mtp_accept = 0.8;
  cfg->moe_routing = true;
  /* Balanced routing, as a production deployment with expert-parallel load
   * balancing shows: skew only when asked for (--moe-zipf, --moe-hot). */
  cfg->moe_zipf = 0.0;
  cfg->moe_hot_factor = 1.0;
  cfg->moe_drift = 0.01;
  cfg->seed = 0;
}

/* ---- lists ---------------------------------------------------------------- */

static void list_push_back(struct seq_list *l, struct im_seq *s) {
  s->next = NULL;
  s->prev = l->tail;
  if (l->tail)
    l->tail->next = s;
  else
    l->head = s;
  l->tail = s;
  l->n++;
}

static void list_push_front(struct seq_list *l, struct im_seq *s) {
  s->prev = NULL;
  s->next = l->head;
  if (l->head)
    l->head->prev = s;
  else
    l->tail = s;
  l->head = s;
  l->n++;
}

static void list_remove(struct seq_list *l, struct im_seq *s) {
  if (s->prev)
    s->prev->next = s->next;
  else
    l->head = s->next;
  if (s->next)
    s->next->prev = s->prev;
  else
    l->tail = s->prev;
  s->prev = s->next = NULL;
  l->n--;
}

/* ---- construction --------------------------------------------------------- */

static bool profile_is_mla(const struct im_profile *p) { return p->kv_replicated_tp; }

enum im_err im_engine_new(struct im_engine **out, const struct im_engine_config *cfg) {
  enum im_err err = IM_NOMEM;
  struct im_engine *e = calloc(1, sizeof *e);
  if (!e)
    return IM_NOMEM;
  e->cfg = *cfg;
  e->prof = cfg->profile ? cfg->profile : im_profile_default();
  if (e->cfg.time_scale <= 0)
    e->cfg.time_scale = 1.0;
  if (!e->cfg.max_num_seqs || !e->cfg.max_num_batched_tokens) {
    err = IM_INVAL;
    goto fail;
  }
  /* FlashMLA, which vLLM uses for DeepSeek's MLA, needs 64-token blocks. */
  e->block_size = cfg->block_size ? cfg->block_size : (profile_is_mla(e->prof) ? 64 : 16);
  e->max_model_len = cfg->max_model_len ? cfg->max_model_len : e->prof->max_model_len;
  e->native_window = cfg->native_window ? cfg->native_window : im_rope_window_of(e->prof).native;
  if (!e->native_window)
    e->native_window = UINT32_MAX; /* none declared: no slowdown */
  if (cfg->kv_blocks) {
    e->num_blocks = cfg->kv_blocks;
  } else {
    uint64_t tokens = im_perf_kv_capacity_tokens(e->prof, cfg->gpu_mem_util);
    uint64_t blocks = tokens / e->block_size;
    if (blocks > (1u << 26))
      blocks = 1u << 26;
    e->num_blocks = (uint32_t)blocks;
  }
  if (e->num_blocks == 0) {
    im_error("profile %s leaves no memory for the KV cache at gpu_memory_utilization %.2f",
             e->prof->name, cfg->gpu_mem_util);
    err = IM_INVAL;
    goto fail;
  }
  err = im_kv_new(&e->kv, e->num_blocks, e->block_size, cfg->prefix_caching);
  if (err)
    goto fail;
  if (e->prof->n_moe_layers && cfg->moe_routing) {
    struct im_moe_config mc;
    im_moe_config_default(&mc);
    mc.n_layers = e->prof->n_moe_layers;
    mc.n_experts = e->prof->n_experts;
    mc.top_k = e->prof->top_k;
    mc.n_groups = e->prof->n_expert_groups ? e->prof->n_expert_groups : 1;
    mc.topk_groups = e->prof->topk_groups ? e->prof->topk_groups : mc.n_groups;
    mc.seed = im_mix64(cfg->seed ^ 0x6d6f65ULL);
    mc.zipf_s = cfg->moe_zipf;
    mc.hot_n = cfg->moe_hot_n;
    mc.hot_factor = cfg->moe_hot_factor;
    mc.drift = cfg->moe_drift;
    /* Topics tilt popularity too: only beside a skew that was asked for. */
    if (!(cfg->moe_zipf > 0) && !(cfg->moe_hot_n && cfg->moe_hot_factor != 1.0))
      mc.topic_boost = 1.0;
    err = im_moe_new(&e->moe, &mc);
    if (err)
      goto fail;
    e->detail_ids = calloc((size_t)mc.n_layers * mc.top_k, sizeof *e->detail_ids);
    if (!e->detail_ids) {
      err = IM_NOMEM;
      goto fail;
    }
  }
  im_rng_seed(&e->rng, cfg->seed);
  e->last_step_end = -1;
  e->wake_at = -1;
  *out = e;
  return IM_OK;
fail:
  im_engine_free(e);
  return err;
}

static void seq_free(struct im_engine *e, struct im_seq *s) {
  im_kv_seq_cleanup(e->kv, &s->kv);
  im_moe_seq_cleanup(&s->moe);
  free(s->tokens);
  free(s);
}

void im_engine_free(struct im_engine *e) {
  if (!e)
    return;
  struct seq_list *lists[] = {&e->arriving, &e->waiting, &e->running};
  for (size_t i = 0; i < 3; i++) {
    while (lists[i]->head) {
      struct im_seq *s = lists[i]->head;
      list_remove(lists[i], s);
      seq_free(e, s);
    }
  }
  im_kv_free(e->kv);
  im_moe_free(e->moe);
  free(e->detail_ids);
  free(e->text);
  free(e);
}

void im_engine_set_observer(struct im_engine *e, const struct im_engine_observer *obs) {
  e->obs = *obs;
}

uint32_t im_engine_num_blocks(const struct im_engine *e) { return e->num_blocks; }
uint32_t im_engine_block_size(const struct im_engine *e) { return e->block_size; }
uint32_t im_engine_max_model_len(const struct im_engine *e) { return e->max_model_len; }
const struct im_profile *im_engine_profile(const struct im_engine *e) { return e->prof; }

/* ---- submit / abort ------------------------------------------------------- */

enum im_err im_engine_submit(struct im_engine *e, const struct im_seq_params *p, int64_t now_ns,
                             struct im_seq **out) {
  if (!p->n_prompt || p->n_prompt >= e->max_model_len || !p->sink)
    return IM_INVAL;
  struct im_seq *s = calloc(1, sizeof *s);
  if (!s)
    return IM_NOMEM;
  uint32_t room = e->max_model_len - p->n_prompt;
  uint32_t max_tokens = p->max_tokens ? p->max_tokens : room;
  if (max_tokens > room)
    max_tokens = room;
  s->num = ++e->next_num;
  snprintf(s->request_id, sizeof s->request_id, "%s", p->request_id ? p->request_id : "");
  uint64_t seed = p->has_seed ? im_mix64(p->seed) : im_mix64(e->cfg.seed ^ (s->num * 0x9e37ULL));
  im_rng_seed(&s->rng, seed);
  if (p->ignore_eos) {
    s->target_out = max_tokens;
    s->capped = true;
  } else {
    s->target_out = im_textgen_sample_len(&s->rng, e->prof->out_len_mean, p->temperature,
                                          max_tokens, &s->capped);
  }
  if (p->min_tokens && s->target_out < p->min_tokens)
    s->target_out = p->min_tokens < max_tokens ? p->min_tokens : max_tokens;
  if (p->target_tokens && !p->ignore_eos) {
    s->target_out = p->target_tokens < max_tokens ? p->target_tokens : max_tokens;
    s->capped = p->target_tokens > max_tokens;
  }
  /* A sequence caught in a sampling loop never samples its end-of-sequence
   * token: it runs to max_tokens (what a collapse under low top_p looks
   * like from outside, docs/metrics.md §7; its text loops in textgen). */
  double degen = im_textgen_degeneracy(p->temperature, p->top_p);
  if (!p->ignore_eos && degen > 0.0 && im_rng_uniform(&s->rng) < degen) {
    s->target_out = max_tokens;
    s->capped = true;
  }
  if (e->prof->reasoning) { /* serve/reasoning.h: grows with difficulty and temperature */
    struct im_reasoning_ask ask = {(enum im_effort)p->effort, p->thinking, p->n_prompt, p->code, p->temperature};
    im_reasoning_split(&s->rng, e->prof, &ask, s->target_out, max_tokens, p->ignore_eos,
                       &s->n_reasoning, &s->target_out, &s->capped);
  }
  s->max_tokens = max_tokens;
  s->cap_tokens = p->n_prompt + s->target_out + e->cfg.mtp_k + 1;
  s->tokens = malloc((size_t)s->cap_tokens * sizeof *s->tokens);
  if (!s->tokens) {
    free(s);
    return IM_NOMEM;
  }
  memcpy(s->tokens, p->prompt, (size_t)p->n_prompt * sizeof *s->tokens);
  s->n_prompt = s->n_tokens = p->n_prompt;
  im_kv_seq_init(&s->kv, p->cache_salt);
  if (e->moe) {
    enum im_err err = im_moe_seq_init(e->moe, &s->moe, im_fnv1a64(s->tokens, 4u * (p->n_prompt < 64 ? p->n_prompt : 64)));
    if (err) {
      free(s->tokens);
      free(s);
      return err;
    }
    s->detail = e->cfg.routing_detail && s->num <= e->cfg.routing_detail;
  }
  im_textgen_init(&s->gen, im_rng_u64(&s->rng), p->temperature, p->top_p, p->code);
  s->lora = p->lora;
  s->slow_ns = p->slow_ns;
  s->stall_token = p->stall_token;
  s->stall_ns = p->stall_ns;
  s->sink = p->sink;
  s->ctx = p->ctx;
  s->t_arrival = now_ns + (p->delay_ns > 0 ? p->delay_ns : 0);
  if (p->delay_ns > 0) {
    /* Kept in arrival order: delays are equal within a server, so the back. */
    s->state = IM_SEQ_ARRIVING;
    list_push_back(&e->arriving, s);
  } else {
    s->state = IM_SEQ_WAITING;
    list_push_back(&e->waiting, s);
  }
  if (!e->in_step && (e->wake_at < 0 || e->wake_at > s->t_arrival))
    e->wake_at = s->t_arrival;
  *out = s;
  return IM_OK;
}

static void seq_unlink(struct im_engine *e, struct im_seq *s) {
  if (s->state == IM_SEQ_ARRIVING)
    list_remove(&e->arriving, s);
  else if (s->state == IM_SEQ_WAITING)
    list_remove(&e->waiting, s);
  else if (s->state == IM_SEQ_RUNNING)
    list_remove(&e->running, s);
  s->state = IM_SEQ_DONE;
}

void im_engine_abort(struct im_engine *e, struct im_seq *s) {
  /* The owner may free its context right after this call. */
  s->ctx = NULL;
  if (e->dispatching) {
    /* Called from a sink callback: the step's loop still walks the running
     * list, so the sequence is only marked and swept after the loop. */
    s->sink = NULL;
    e->abort_pending = true;
    return;
  }
  seq_unlink(e, s);
  e->stats.aborted++;
  s->t_end = s->t_end ? s->t_end : s->t_arrival;
  if (e->obs.on_request_end)
    e->obs.on_request_end(e->obs.ctx, s, IM_FINISH_ABORT);
  seq_free(e, s);
}

static void sweep_aborted(struct im_engine *e) {
  if (!e->abort_pending)
    return;
  e->abort_pending = false;
  struct seq_list *lists[] = {&e->arriving, &e->waiting, &e->running};
  for (size_t i = 0; i < 3; i++) {
    struct im_seq *s = lists[i]->head;
    while (s) {
      struct im_seq *next = s->next;
      if (!s->sink)
        im_engine_abort(e, s);
      s = next;
    }
  }
}

/* ---- scheduling ----------------------------------------------------------- */

static void preempt(struct im_engine *e, struct im_seq *s) {
  /* Recompute preemption (vLLM V1): blocks are freed (their hashes stay
   * cached, so re-admission usually hits them) and the request goes back to
   * the front of the waiting queue. */
  list_remove(&e->running, s);
  im_kv_release(e->kv, &s->kv);
  s->n_computed = 0;
  s->sched_tokens = 0;
  s->state = IM_SEQ_WAITING;
  s->preemptions++;
  e->stats.preemptions++;
  list_push_front(&e->waiting, s);
}

static bool is_paused(struct im_seq *s, int64_t now) {
  if (s->stall_token >= 0 && s->prefill_done && s->n_out >= (uint64_t)s->stall_token) {
    s->paused_until = now + s->stall_ns;
    s->stall_token = -1;
  }
  return s->paused_until > now;
}

/* Returns the number of tokens scheduled. */
static uint32_t schedule(struct im_engine *e, int64_t now) {
  uint32_t budget = e->cfg.max_num_batched_tokens;
  bool preempted = false;
  struct im_lora *lora = e->cfg.lora;
  if (lora) { /* serve/lora.h: the batch's adapters, at most max_loras */
    im_lora_begin(lora);
    for (struct im_seq *s = e->running.head; s; s = s->next)
      im_lora_note(lora, s->lora);
  }

  for (struct im_seq *s = e->running.head; s && budget;) {
    if (is_paused(s, now)) {
      s = s->next;
      continue;
    }
    uint32_t need = s->n_tokens - s->n_computed;
    uint32_t n = need < budget ? need : budget;
    uint32_t lookahead = s->prefill_done ? e->cfg.mtp_k : 0;
    bool self_preempted = false;
    while (im_kv_allocate(e->kv, &s->kv, s->n_computed + n + lookahead) == IM_FULL) {
      struct im_seq *victim = e->running.tail;
      preempt(e, victim);
      preempted = true;
      if (victim == s) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted)
      break; /* everything after s was preempted before it */
    s->sched_tokens = n;
    budget -= n;
    s = s->next;
  }

  /* vLLM V1 admits nothing in a step that had to preempt. */
  for (struct im_seq *next = e->waiting.head;
       !preempted && budget && next && e->running.n < e->cfg.max_num_seqs;) {
    struct im_seq *s = next;
    next = s->next;
    if (lora && !im_lora_admit(lora, s->lora))
      continue; /* vLLM skips it: its adapter would exceed max_loras */
    if (s->kv.n_blocks == 0) {
      uint32_t hit = 0;
      if (im_kv_acquire_prefix(e->kv, &s->kv, s->tokens, s->n_tokens, &hit))
        break;
      s->n_computed = hit;
      if (!s->t_scheduled)
        s->n_cached = hit < s->n_prompt ? hit : s->n_prompt;
    }
    uint32_t need = s->n_tokens - s->n_computed;
    uint32_t n = need < budget ? need : budget;
    if (im_kv_allocate(e->kv, &s->kv, s->n_computed + n) == IM_FULL) {
      im_kv_release(e->kv, &s->kv);
      s->n_computed = 0;
      break;
    }
    list_remove(&e->waiting, s);
    list_push_back(&e->running, s);
    s->state = IM_SEQ_RUNNING;
    if (!s->t_scheduled)
      s->t_scheduled = now;
    s->sched_tokens = n;
    budget -= n;
  }
  return e->cfg.max_num_batched_tokens - budget;
}

/* ---- steps ---------------------------------------------------------------- */

static void log_routing(struct im_engine *e, int64_t start) {
  FILE *f = e->cfg.routing_log;
  const struct im_moe_config *mc = im_moe_config(e->moe);
  const uint32_t *counts = im_moe_counts(e->moe);
  fprintf(f, "{\"step\":%" PRIu64 ",\"t_ns\":%" PRId64 ",\"seqs\":%u,\"tokens\":%u,\"counts\":[",
          e->stats.steps, start, e->last_seqs, e->last_tokens);
  for (uint32_t l = 0; l < mc->n_layers; l++) {
    fputs(l ? ",[" : "[", f);
    for (uint32_t x = 0; x < mc->n_experts; x++)
      fprintf(f, x ? ",%u" : "%u", counts[(size_t)l * mc->n_experts + x]);
    fputc(']', f);
  }
  fputs("]}\n", f);
}

static void log_detail(struct im_engine *e, const struct im_seq *s, int64_t start) {
  const struct im_moe_config *mc = im_moe_config(e->moe);
  FILE *f = e->cfg.routing_log;
  fprintf(f, "{\"step\":%" PRIu64 ",\"t_ns\":%" PRId64 ",\"seq\":\"%s\",\"token\":%u,\"topk\":[",
          e->stats.steps, start, s->request_id[0] ? s->request_id : "-", s->n_out);
  for (uint32_t l = 0; l < mc->n_layers; l++) {
    fputs(l ? ",[" : "[", f);
    for (uint32_t k = 0; k < mc->top_k; k++)
      fprintf(f, k ? ",%u" : "%u", e->detail_ids[(size_t)l * mc->top_k + k]);
    fputc(']', f);
  }
  fputs("]}\n", f);
}

/* Starts a step at `start`; returns false when nothing could be scheduled. */
static bool start_step(struct im_engine *e, int64_t start) {
  uint32_t tokens = schedule(e, start);
  if (!tokens)
    return false;

  struct im_step_shape shape = {0};
  double beyond = 0; /* attention pairs past the native window (serve/rope.h) */
  if (e->moe)
    im_moe_step_begin(e->moe);
  for (struct im_seq *s = e->running.head; s; s = s->next) {
    if (!s->sched_tokens)
      continue;
    /* A decode step with MTP verifies the drafts too: 1 + k tokens of compute. */
    uint32_t compute = s->sched_tokens + (s->prefill_done ? e->cfg.mtp_k : 0);
    shape.n_seqs++;
    shape.n_tokens += compute;
    shape.kv_read_tokens += s->n_computed + s->sched_tokens;
    shape.attn_pairs += (double)compute * (s->n_computed + s->sched_tokens / 2.0);
    if (s->n_computed + s->sched_tokens > e->native_window)
      beyond += (double)compute * (s->n_computed + s->sched_tokens - e->native_window);
    if (e->moe) {
      bool detail = s->detail && s->prefill_done && e->cfg.routing_log;
      im_moe_route(e->moe, &s->moe, compute, detail ? e->detail_ids : NULL);
      if (detail)
        log_detail(e, s, start);
    }
  }
  if (e->moe) {
    shape.experts_per_layer = im_moe_distinct(e->moe);
    im_moe_step_stats(e->moe, &e->last_moe);
  }
  im_perf_step(e->prof, &shape, &e->last_cost);
  if (e->cfg.lora)
    e->last_cost.total_s += im_lora_cost(e->cfg.lora);
  e->last_cost.total_s +=
      im_rope_extra_s(e->prof, &shape, &e->last_cost, beyond, e->cfg.rope_slowdown);
  double sigma = e->prof->noise_sigma;
  double noise = sigma > 0 ? exp(sigma * im_rng_normal(&e->rng) - 0.5 * sigma * sigma) : 1.0;
  double dur_s = e->last_cost.total_s * noise / e->cfg.time_scale;
  int64_t dur = (int64_t)(dur_s * 1e9) + e->hiccup_pending_ns;
  if (e->hiccup_pending_ns) {
    e->hiccup_pending_ns = 0;
    e->stats.hiccups++;
  }
  e->last_seqs = shape.n_seqs;
  e->last_tokens = shape.n_tokens;
  e->step_start = start;
  e->step_deadline = start + (dur > 0 ? dur : 1);
  e->in_step = true;
  e->stats.steps++;
  if (e->moe && e->cfg.routing_log)
    log_routing(e, start);
  return true;
}

static const char *finish_name(enum im_finish why) {
  return why == IM_FINISH_LENGTH ? "length" : why == IM_FINISH_STOP ? "stop" : "abort";
}

static void truth_request(struct im_engine *e, const struct im_seq *s, enum im_finish why) {
  fprintf(e->cfg.truth_log,
          "{\"type\":\"request\",\"id\":\"%s\",\"seq\":%" PRIu64 ",\"arrival_ns\":%" PRId64
          ",\"queue_exit_ns\":%" PRId64 ",\"first_token_ns\":%" PRId64 ",\"end_ns\":%" PRId64
          ",\"prompt_tokens\":%u,\"cached_tokens\":%u,\"output_tokens\":%u,"
          "\"reasoning_tokens\":%u,\"preemptions\":%u,\"finish\":\"%s\"}\n",
          s->request_id, s->num, s->t_arrival, s->t_scheduled, s->t_first_token, s->t_end,
          s->n_prompt, s->n_cached, s->n_out, s->n_out < s->n_reasoning ? s->n_out : s->n_reasoning,
          s->preemptions, finish_name(why));
}

static void finish_seq(struct im_engine *e, struct im_seq *s, int64_t t) {
  enum im_finish why = s->capped ? IM_FINISH_LENGTH : IM_FINISH_STOP;
  list_remove(&e->running, s);
  s->state = IM_SEQ_DONE;
  s->t_end = t;
  im_kv_release(e->kv, &s->kv);
  if (why == IM_FINISH_LENGTH)
    e->stats.finished_length++;
  else
    e->stats.finished_stop++;
  if (e->cfg.truth_log)
    truth_request(e, s, why);
  if (e->obs.on_request_end)
    e->obs.on_request_end(e->obs.ctx, s, why);
  if (s->sink)
    s->sink->on_finish(s, why);
  seq_free(e, s);
}

static enum im_err text_reserve(struct im_engine *e, size_t need) {
  if (need <= e->text_cap)
    return IM_OK;
  size_t cap = e->text_cap ? e->text_cap * 2 : 1024;
  while (cap < need)
    cap *= 2;
  char *p = realloc(e->text, cap);
  if (!p)
    return IM_NOMEM;
  e->text = p;
  e->text_cap = cap;
  return IM_OK;
}

/* Generates m tokens for s and hands them to its sink, split at the
 * reasoning/answer boundary. */
static void emit(struct im_engine *e, struct im_seq *s, uint32_t m, int64_t t) {
  while (m && s->sink) {
    bool reasoning = s->n_out < s->n_reasoning;
    uint32_t n = m;
    if (reasoning && s->n_out + n > s->n_reasoning)
      n = s->n_reasoning - s->n_out;
    size_t len = 0;
    for (uint32_t i = 0; i < n; i++) {
      const char *piece;
      size_t plen;
      uint32_t id = im_textgen_next(&s->gen, &piece, &plen);
      if (text_reserve(e, len + plen + 1))
        break;
      memcpy(e->text + len, piece, plen);
      len += plen;
      s->tokens[s->n_tokens++] = id;
    }
    s->n_out += n;
    m -= n;
    s->sink->on_tokens(s, e->text, len, n, reasoning, t);
  }
}

static void complete_step(struct im_engine *e, int64_t t) {
  e->in_step = false;
  e->dispatching = true;
  uint64_t gen = 0, prompt = 0;
  for (struct im_seq *s = e->running.head; s;) {
    struct im_seq *next = s->next;
    uint32_t n = s->sched_tokens;
    if (!n || !s->sink) {
      s = next;
      continue;
    }
    s->sched_tokens = 0;
    if (!s->prefill_done)
      prompt += n;
    s->n_computed += n;
    if (s->n_computed < s->n_tokens) {
      im_kv_commit(e->kv, &s->kv, s->tokens, s->n_computed);
      s = next;
      continue;
    }
    /* Every known token is computed: the model samples. */
    uint32_t m = 1;
    if (s->prefill_done && e->cfg.mtp_k) {
      for (uint32_t k = 0; k < e->cfg.mtp_k && im_rng_uniform(&s->rng) < e->cfg.mtp_accept; k++)
        m++;
    }
    if (m > s->target_out - s->n_out)
      m = s->target_out - s->n_out;
    s->prefill_done = true;
    if (!s->t_first_token)
      s->t_first_token = t;
    s->t_last_token = t;
    emit(e, s, m, t);
    gen += m;
    s->n_computed = s->n_tokens - 1;
    im_kv_commit(e->kv, &s->kv, s->tokens, s->n_computed);
    if (s->slow_ns)
      s->paused_until = t + s->slow_ns;
    if (s->n_out >= s->target_out && s->sink)
      finish_seq(e, s, t);
    s = next;
  }
  e->dispatching = false;
  sweep_aborted(e);
  e->stats.generation_tokens += gen;
  e->stats.prompt_tokens += prompt;
  e->last_step_end = t;
  if (e->obs.on_step) {
    struct im_moe_step_stats none = {0};
    e->obs.on_step(e->obs.ctx, &e->last_cost, (double)(t - e->step_start) * 1e-9,
                   e->moe ? &e->last_moe : &none, e->last_seqs, e->last_tokens);
  }
}

/* Arrivals whose setup is over join the waiting queue. */
static void admit_arrivals(struct im_engine *e, int64_t now) {
  while (e->arriving.head && e->arriving.head->t_arrival <= now) {
    struct im_seq *s = e->arriving.head;
    list_remove(&e->arriving, s);
    s->state = IM_SEQ_WAITING;
    list_push_back(&e->waiting, s);
  }
}

/* Earliest time a paused running sequence resumes or an arrival's setup
 * ends, or -1. */
static int64_t earliest_resume(const struct im_engine *e) {
  int64_t best = e->arriving.head ? e->arriving.head->t_arrival : -1;
  for (const struct im_seq *s = e->running.head; s; s = s->next)
    if (s->paused_until && (best < 0 || s->paused_until < best))
      best = s->paused_until;
  return best;
}

void im_engine_tick(struct im_engine *e, int64_t now) {
  int64_t start = now;
  if (e->in_step) {
    if (now < e->step_deadline)
      return;
    complete_step(e, e->step_deadline);
    /* Steps chain on absolute deadlines so that small wake-up delays do not
     * accumulate; after a long stall of the process (more than 5 ms behind)
     * the chain restarts from now rather than running a burst of steps. */
    start = now - e->last_step_end > 5000000 ? now : e->last_step_end;
  } else if (e->wake_at < 0 || now < e->wake_at) {
    return;
  }
  e->wake_at = -1;
  admit_arrivals(e, now);
  if (start_step(e, start))
    return;
  /* Nothing schedulable: every running sequence is paused by a fault, or the
   * KV cache is full with nothing running (cannot happen with a valid
   * max_model_len), or there is no work at all. */
  int64_t resume = earliest_resume(e);
  if (resume >= 0)
    e->wake_at = resume > now ? resume : now + 1000;
}

int64_t im_engine_next_deadline(const struct im_engine *e) {
  return e->in_step ? e->step_deadline : e->wake_at;
}

void im_engine_hiccup(struct im_engine *e, int64_t pause_ns) { e->hiccup_pending_ns += pause_ns; }

enum im_err im_engine_resize_kv(struct im_engine *e, double fraction) {
  double blocks = e->num_blocks * fraction;
  if (blocks < 1)
    blocks = 1;
  enum im_err err = im_kv_resize(e->kv, (uint32_t)blocks);
  if (!err)
    e->num_blocks = (uint32_t)blocks;
  return err;
}

void im_engine_get_stats(const struct im_engine *e, struct im_engine_stats *out) {
  *out = e->stats;
  out->running = e->running.n;
  out->waiting = e->waiting.n;
  out->kv_usage = im_kv_usage(e->kv);
  uint64_t slots = 0, used = 0;
  for (const struct im_seq *q = e->running.head; q; q = q->next) {
    slots += (uint64_t)q->kv.n_blocks * e->block_size;
    used += q->n_computed;
  }
  out->kv_fragmentation = slots > used ? (double)(slots - used) / (double)slots : 0.0;
  im_kv_get_stats(e->kv, &out->kv);
  out->last_step_s = e->last_cost.total_s;
  out->last_hbm_util = e->last_cost.hbm_util;
  out->last_moe = e->last_moe;
  out->last_batch_seqs = e->last_seqs;
  out->last_batch_tokens = e->last_tokens;
}

const double *im_engine_window_expert_load(const struct im_engine *e, uint32_t *n_layers,
                                           uint32_t *n_experts) {
  if (!e->moe)
    return NULL;
  const struct im_moe_config *mc = im_moe_config(e->moe);
  *n_layers = mc->n_layers;
  *n_experts = mc->n_experts;
  return im_moe_window(e->moe);
}

double im_engine_window_expert_picks(const struct im_engine *e) {
  return e->moe ? im_moe_window_effective_picks(e->moe) : 0.0;
}

const uint32_t *im_engine_last_expert_counts(const struct im_engine *e, uint32_t *n_layers,
                                             uint32_t *n_experts) {
  if (!e->moe)
    return NULL;
  const struct im_moe_config *mc = im_moe_config(e->moe);
  *n_layers = mc->n_layers;
  *n_experts = mc->n_experts;
  return im_moe_counts(e->moe);
}

enum im_err im_engine_lora_info(const struct im_engine *e, struct im_buf *running,
                                struct im_buf *waiting) {
  if (!e->cfg.lora)
    return IM_OK;
  uint32_t ids[256];
  const struct seq_list *lists[2] = {&e->running, &e->waiting};
  struct im_buf *out[2] = {running, waiting};
  for (int k = 0; k < 2; k++) {
    size_t n = 0;
    for (const struct im_seq *s = lists[k]->head; s && n < 256; s = s->next)
      if (s->lora)
        ids[n++] = s->lora;
    enum im_err err = im_lora_names(e->cfg.lora, ids, n, out[k]);
    if (err)
      return err;
  }
  return IM_OK;
}
