/* Simulated Mixture-of-Experts routing.
 *
 * Each routed token picks top_k of n_experts in every MoE layer, group-limited
 * like DeepSeek-V3 (first topk_groups of n_groups groups, then top_k experts
 * inside them). Popularity is skewed (per-layer Zipf-like weights with
 * exponent zipf_s over a per-layer random permutation), tilted by a
 * per-request topic, and drifts slowly over steps. Consecutive tokens of one
 * sequence keep each of their previous experts with probability stickiness
 * (temporal correlation), so jitter (docs/metrics.md §8) is below 1.
 *
 * Implementation (see moe.c): the exact sampler above generates, per
 * (layer, topic), a cyclic chain of chain_len consecutive routing decisions;
 * a sequence walks its topic's chains from a position derived from its key
 * (and jumps to a new position with probability 1/256 per token), so routing
 * a token costs one contiguous table read and top_k counter updates per
 * layer.
 *
 * Per step the module counts tokens per (layer, expert) and the distinct
 * experts each layer activates; the engine feeds the latter to the
 * performance model. Single-threaded. */
#ifndef IM_SERVE_MOE_H
#define IM_SERVE_MOE_H

#include <stdint.h>

#include "core/err.h"

struct im_moe_config {
  uint32_t n_layers;     /* MoE layers (DeepSeek-V3: 58) */
  uint32_t n_experts;    /* routed experts per layer (256), at most 1024 */
  uint32_t top_k;        /* experts per token (8) */
  uint32_t n_groups;     /* expert groups (8); 1 = no group limit */
  uint32_t topk_groups;  /* groups per token (4) */
  double zipf_s;         /* popularity exponent (0.6) */
  uint32_t hot_n;        /* the hot_n most popular experts of each layer ... */
  double hot_factor;     /* ... weigh hot_factor x more (0 experts / 1: none) */
  double stickiness;     /* P(keep a previous expert) for the next token (0.5) */
  uint32_t n_topics;     /* request topics (16) */
  double topic_boost;    /* weight multiplier of a topic's favoured experts (4) */
  double drift;          /* per-step probability that a layer's ranks drift (0.01) */
  uint32_t max_routed_per_call; /* a prefill chunk routes at most this many tokens
                                   exactly and scales counts (64) */
  uint32_t chain_len;    /* routing decisions precomputed per (layer, topic);
                            a power of two in [16, 4096] (256) */
  uint64_t seed;
};

/* Fills cfg with DeepSeek-V3's shape and the defaults above. */
void im_moe_config_default(struct im_moe_config *cfg);

struct im_moe; /* opaque */

/* Per-sequence routing state, embedded in the caller's request. */
struct im_moe_seq {
  uint16_t *prev;   /* n_layers * top_k experts of the last token routed with
                       ids_out; owned */
  uint64_t rstate;  /* per-sequence random stream (jumps), from the key */
  uint32_t pos;     /* position in the topic's routing chain */
  uint32_t topic;
  int has_prev;
};

struct im_moe_step_stats {
  uint64_t tokens;          /* tokens routed this step (after scaling) */
  double distinct_mean;     /* mean over layers of distinct experts */
  uint32_t distinct_max;
  double skew_mean;         /* mean over layers of adjusted Fisher-Pearson G1 */
  double imbalance_mean;    /* mean over layers of max/mean count */
};

/* Validates cfg (IM_INVAL; IM_LIMIT when the chains would exceed 64 MiB)
 * and generates the routing chains: about 0.1 s of CPU for the defaults. */
enum im_err im_moe_new(struct im_moe **out, const struct im_moe_config *cfg) IM_WUR;
void im_moe_free(struct im_moe *moe);
const struct im_moe_config *im_moe_config(const struct im_moe *moe);

/* Prepares a sequence; its topic is derived from key (e.g. a hash of the
 * request id) so a replayed request routes alike. */
enum im_err im_moe_seq_init(const struct im_moe *moe, struct im_moe_seq *seq, uint64_t key) IM_WUR;
void im_moe_seq_cleanup(struct im_moe_seq *seq);

/* Starts a step: clears the per-step counts and applies drift. */
void im_moe_step_begin(struct im_moe *moe);
/* Routes n_tokens consecutive tokens of seq in the current step. When
 * ids_out is non-NULL it receives the top_k ids per layer of the last token
 * (n_layers * top_k entries), for the routing detail log. */
void im_moe_route(struct im_moe *moe, struct im_moe_seq *seq, uint32_t n_tokens,
                  uint16_t *ids_out);
/* Per-step results, valid until the next im_moe_step_begin. */
const uint32_t *im_moe_counts(const struct im_moe *moe);   /* [layer * n_experts + e] */
const uint16_t *im_moe_distinct(const struct im_moe *moe); /* [layer] */
/* Steps of the windowed load below (mean age of its exponential decay). */
#define IM_MOE_WINDOW_STEPS 128
/* Load per (layer, expert) over the recent steps, [layer * n_experts + e]:
 * each finished step's counts added after multiplying the sum so far by
 * 1 - 1/IM_MOE_WINDOW_STEPS (steps without tokens skipped). */
const double *im_moe_window(const struct im_moe *moe);
/* The window's picks as independent draws: (sum of pick weights)^2 / sum of
 * squared weights, a pick of a step weighing (1 - 1/IM_MOE_WINDOW_STEPS)^age
 * times its scale (n_tokens / routed for a prefill call routed in part).
 * Under uniform routing a layer's window load per expert has the variance
 * of a multinomial of this many picks (the client's chance level,
 * analyze/moe.h); 0 before any token. */
double im_moe_window_effective_picks(const struct im_moe *moe);
void im_moe_step_stats(const struct im_moe *moe, struct im_moe_step_stats *out);

/* Adjusted Fisher-Pearson skewness G1 of n values (pandas' skew); 0 when
 * n < 3 or all values are equal. Exposed for tests and the analysis side. */
double im_skewness_g1(const double *v, uint32_t n);

#endif
