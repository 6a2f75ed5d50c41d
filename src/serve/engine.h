/* The simulated inference engine: vLLM V1-style continuous batching over a
 * paged KV cache, stepping in real time on CLOCK_MONOTONIC deadlines.
 *
 * The engine owns sequences from im_engine_submit until its finish callback
 * (or im_engine_abort) and never touches the network: it reports tokens and
 * ends through the sink callbacks, which the HTTP layer implements. It does
 * not run a loop of its own either: the owner calls im_engine_next_deadline()
 * to learn when to call im_engine_tick() (the server uses a timerfd so steps
 * end on time to the microsecond). Single-threaded.
 *
 * One step (docs/serve.md):
 *   1. schedule: running sequences first (decode: 1 token, or 1 + MTP drafts;
 *      unfinished prefill: a chunk within the token budget), preempting the
 *      newest running sequence when KV blocks run out; then, if nothing was
 *      preempted, admit waiting sequences (prefix-cache lookup, chunked
 *      prefill) while seats (max_num_seqs) and budget last;
 *   2. cost: MoE routing of the step's tokens, then the performance model
 *      gives the step time; noise and --time-scale apply; the step ends at
 *      an absolute deadline;
 *   3. at the deadline: sequences whose prompt is fully computed sample
 *      tokens, which go to their sinks; finished sequences free their
 *      blocks (cached blocks stay hit-able). */
#ifndef IM_SERVE_ENGINE_H
#define IM_SERVE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/err.h"
#include "serve/kv.h"
#include "serve/lora.h"
#include "serve/moe.h"
#include "model/perf.h"
#include "text/textgen.h"

struct im_engine_config {
  const struct im_profile *profile;
  uint32_t max_num_seqs;           /* 256 */
  uint32_t max_num_batched_tokens; /* 8192 */
  uint32_t block_size;             /* 0: 64 for MLA profiles, else 16 */
  uint32_t kv_blocks;              /* 0: from the profile and gpu_mem_util */
  double gpu_mem_util;             /* 0.9 */
  uint32_t max_model_len;          /* 0: the profile's */
  bool prefix_caching;             /* true */
  double time_scale;               /* 1: real time; K: K times faster */
  uint32_t mtp_k;                  /* speculative draft tokens per step (0 off) */
  double mtp_accept;               /* acceptance probability of each draft */
  bool moe_routing;                /* simulate routing (MoE profiles) */
  uint32_t routing_detail;         /* sequences whose top-k ids are logged */
  double moe_zipf;                 /* expert popularity exponent (0: balanced; serve --moe-zipf) */
  uint32_t moe_hot_n;              /* experts per layer made moe_hot_factor x more popular */
  double moe_hot_factor;           /* (--moe-hot N:F; 0 / 1: none) */
  double moe_drift;                /* per-step probability of a popularity drift (0.01) */
  uint64_t seed;
  FILE *routing_log;               /* JSONL per step, or NULL */
  FILE *truth_log;                 /* JSONL per request end, or NULL (chunks are
                                      logged by the HTTP layer, which writes them) */
  struct im_lora *lora;            /* LoRA adapters (serve/lora.h; borrowed), or NULL */
  uint32_t native_window;          /* serve/rope.h: attention slows past it (0: the
                                      profile's declared window; UINT32_MAX: off) */
  double rope_slowdown;            /* 1.5; 1: off */
};

void im_engine_config_default(struct im_engine_config *cfg);

/* ARRIVING: submitted with a delay (params.delay_ns: a new connection's
 * setup), not yet in the waiting queue. */
enum im_seq_state { IM_SEQ_WAITING, IM_SEQ_RUNNING, IM_SEQ_DONE, IM_SEQ_ARRIVING };
enum im_finish { IM_FINISH_NONE, IM_FINISH_STOP, IM_FINISH_LENGTH, IM_FINISH_ABORT };

struct im_seq;

/* Callbacks into the owner of a sequence. */
struct im_seq_sink {
  /* New tokens: n tokens whose text is text[0..len); reasoning tells which
   * channel (the split happens between calls, never inside one). The
   * pointer is valid during the call only. */
  void (*on_tokens)(struct im_seq *seq, const char *text, size_t len, uint32_t n,
                    bool reasoning, int64_t deadline_ns);
  /* The sequence finished (stop or length). Called once, after its last
   * on_tokens; the engine frees the sequence right after the call. */
  void (*on_finish)(struct im_seq *seq, enum im_finish why);
};

struct im_seq_params {
  const char *request_id;          /* copied; "" ok */
  const uint32_t *prompt;          /* token ids, copied */
  uint32_t n_prompt;
  uint32_t max_tokens;             /* already defaulted by the caller */
  uint32_t min_tokens;
  bool ignore_eos;
  double temperature, top_p;
  bool has_seed;
  uint64_t seed;
  uint64_t cache_salt;             /* 0: none */
  bool code;                       /* prompt looks like code */
  int effort;                      /* enum im_effort: reasoning_effort asked (0 unset) */
  int thinking;                    /* 0 not said, 1 on, -1 off (serve/reasoning.h) */
  uint32_t target_tokens;          /* the answer's length when the caller decides it (a tool
                                      call's arguments; not with ignore_eos); 0: drawn */
  uint32_t lora;                   /* LoRA adapter id (serve/lora.h), 0: the base model */
  int64_t slow_ns;                 /* fault: every token this much later (real ns) */
  int64_t stall_token;             /* fault: pause before this token (-1 none) */
  int64_t stall_ns;
  int64_t delay_ns;                /* reaches the waiting queue this long after
                                      submission (connection setup); 0: at once */
  const struct im_seq_sink *sink;
  void *ctx;                       /* the owner's */
};

/* A sequence as the sink sees it (fields read-only outside the engine). */
struct im_seq {
  struct im_seq *prev, *next;      /* waiting or running list */
  uint64_t num;                    /* engine-wide sequence number */
  char request_id[96];
  enum im_seq_state state;
  uint32_t *tokens;                /* prompt, then generated */
  uint32_t n_prompt, n_tokens, cap_tokens;
  uint32_t n_computed;             /* tokens whose KV is computed */
  uint32_t n_out, target_out, max_tokens, n_reasoning;
  bool capped;                     /* target_out == max_tokens reached by length */
  uint32_t n_cached;               /* prompt tokens hit in the prefix cache (first admission) */
  uint32_t preemptions;
  uint32_t sched_tokens;           /* tokens scheduled in the current step */
  bool prefill_done;
  int64_t t_arrival, t_scheduled, t_first_token, t_last_token, t_end; /* real ns */
  int64_t paused_until;            /* real ns; faults stall/slow */
  int64_t slow_ns, stall_token, stall_ns;
  struct im_kv_seq kv;
  struct im_moe_seq moe;
  struct im_textgen gen;
  struct im_rng rng;
  const struct im_seq_sink *sink;
  void *ctx;
  bool detail;                     /* routing detail logged */
  uint32_t lora;                   /* LoRA adapter id, 0: base */
};

struct im_engine_stats {
  uint64_t steps, preemptions, prompt_tokens, generation_tokens, aborted;
  uint64_t finished_stop, finished_length;
  uint64_t hiccups;
  uint32_t running, waiting;
  double kv_usage;
  /* Running sequences: (allocated token slots - tokens whose KV is
   * computed) / allocated slots; 0 when nothing is allocated. */
  double kv_fragmentation;
  struct im_kv_stats kv;
  /* Last step. */
  double last_step_s, last_hbm_util;
  struct im_moe_step_stats last_moe;
  uint32_t last_batch_seqs, last_batch_tokens;
};

/* Observer of step-level figures for /metrics (histograms). */
struct im_engine_observer {
  void (*on_step)(void *ctx, const struct im_step_cost *cost, double wall_s,
                  const struct im_moe_step_stats *moe, uint32_t n_seqs, uint32_t n_tokens);
  /* A request ended (finished or aborted) with these real-time figures. */
  void (*on_request_end)(void *ctx, const struct im_seq *seq, enum im_finish why);
  void *ctx;
};

struct im_engine;

enum im_err im_engine_new(struct im_engine **out, const struct im_engine_config *cfg) IM_WUR;
void im_engine_free(struct im_engine *e);
void im_engine_set_observer(struct im_engine *e, const struct im_engine_observer *obs);

/* Capacity figures after construction. */
uint32_t im_engine_num_blocks(const struct im_engine *e);
uint32_t im_engine_block_size(const struct im_engine *e);
uint32_t im_engine_max_model_len(const struct im_engine *e);
const struct im_profile *im_engine_profile(const struct im_engine *e);

/* Queues a request (arrival at now_ns). The prompt must be shorter than
 * max_model_len - leaving room for one token (checked by the caller, which
 * answers 400). On success *out is the sequence, valid until on_finish
 * returns or im_engine_abort is called. */
enum im_err im_engine_submit(struct im_engine *e, const struct im_seq_params *params,
                             int64_t now_ns, struct im_seq **out) IM_WUR;
/* Removes a sequence (client went away, or a fault ended it): frees its
 * blocks, counts it aborted; no callback is made. */
void im_engine_abort(struct im_engine *e, struct im_seq *seq);

/* When the owner must call im_engine_tick next: an absolute CLOCK_MONOTONIC
 * ns, or -1 when idle (nothing to do until a submit). */
int64_t im_engine_next_deadline(const struct im_engine *e);
/* Advances the engine at now_ns: completes the step whose deadline passed
 * (emitting tokens) and starts the next one. */
void im_engine_tick(struct im_engine *e, int64_t now_ns);

/* Engine-wide faults. */
void im_engine_hiccup(struct im_engine *e, int64_t pause_ns);
enum im_err im_engine_resize_kv(struct im_engine *e, double fraction) IM_WUR;

void im_engine_get_stats(const struct im_engine *e, struct im_engine_stats *out);
/* Per-layer load over the recent steps (serve/moe.h im_moe_window; NULL
 * for dense profiles). */
/* The windowed load's picks as independent draws (serve/moe.h); 0 without
 * MoE routing or before any token. */
double im_engine_window_expert_picks(const struct im_engine *e);
const double *im_engine_window_expert_load(const struct im_engine *e, uint32_t *n_layers,
                                           uint32_t *n_experts);
/* The comma-separated LoRA adapters of the running and of the waiting
 * sequences (vLLM's vllm:lora_requests_info labels); nothing without LoRA. */
enum im_err im_engine_lora_info(const struct im_engine *e, struct im_buf *running,
                                struct im_buf *waiting) IM_WUR;
/* Per-layer counts of the last step's routing (NULL for dense profiles). */
const uint32_t *im_engine_last_expert_counts(const struct im_engine *e, uint32_t *n_layers,
                                             uint32_t *n_experts);

#endif
