/* MoE expert-routing statistics (docs/metrics.md §8, docs/deepseek.md):
 * jitter of the top-1 expert and Jaccard distance of consecutive top-k
 * sets per sequence, load skew over experts (G1 skewness as pandas `skew`,
 * max/mean, balancedness = mean/max), the hottest experts, and a series
 * over time for the heat map.
 *
 * Two inputs:
 *   - a routing trace (serve --routing-log, read by `infermeter
 *     analyze-routing`): an accumulator fed one step or one token at a
 *     time, in bounded memory (state per layer and expert, a capped table
 *     of sequences, a series of at most IM_MOE_MAX_WINDOWS windows that
 *     merges neighbours and doubles its window when full);
 *   - what a run scraped (metrics.moe): per-layer gauges of the built-in
 *     server, SGLang's eplb_balancedness summary; every figure names its
 *     source, or says why it was not collected.
 *
 * Written from the definitions, independently of serve/moe.c. Pure: no
 * I/O, no JSON. */
#ifndef IM_ANALYZE_MOE_H
#define IM_ANALYZE_MOE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* Adjusted Fisher-Pearson skewness of n values,
 * G1 = sqrt(n (n-1)) / (n-2) * m3 / m2^1.5 (pandas Series.skew); 0 when
 * n < 3 or the values are all equal. */
double im_moe_g1(const double *v, size_t n);
/* max / mean of n counts (0 when all are 0). */
double im_moe_max_over_mean(const double *v, size_t n);

#define IM_MOE_MAX_LAYERS 256
#define IM_MOE_MAX_EXPERTS 1024
#define IM_MOE_MAX_TOPK 64
#define IM_MOE_MAX_SEQS 4096     /* sequences followed for jitter at once */
#define IM_MOE_MAX_WINDOWS 256   /* points of the series */
#define IM_MOE_HOTTEST 5

struct im_moe_acc; /* opaque */

/* A new accumulator; window_steps (>= 1) steps per series point to start
 * with. The shape (layers, experts, top-k) is taken from the first step
 * and the first token. IM_INVAL (window_steps 0), IM_NOMEM. */
enum im_err im_moe_acc_new(struct im_moe_acc **out, uint32_t window_steps) IM_WUR;
void im_moe_acc_free(struct im_moe_acc *a);

/* One engine step: counts[layer * n_experts + e] tokens routed to e.
 * IM_INVAL when the shape is out of the limits above or differs from the
 * first one seen (nothing is counted); IM_NOMEM. */
enum im_err im_moe_acc_step(struct im_moe_acc *a, uint64_t step, uint32_t n_layers,
                            uint32_t n_experts, const uint32_t *counts) IM_WUR;
/* One token of sequence seq (any key): ids[layer * top_k + k], slot 0 the
 * top-1 expert. Consecutive calls of one sequence are consecutive tokens.
 * A sequence beyond IM_MOE_MAX_SEQS at once is counted, not followed.
 * IM_INVAL as im_moe_acc_step (and for ids >= n_experts once known); IM_NOMEM. */
enum im_err im_moe_acc_token(struct im_moe_acc *a, uint64_t seq, uint32_t n_layers,
                             uint32_t top_k, const uint16_t *ids) IM_WUR;

struct im_moe_layer_stats {
  uint64_t transitions;        /* consecutive token pairs seen */
  double jitter;               /* share of them whose top-1 expert changed; NaN: none */
  double jaccard_distance;     /* mean 1 - |A n B| / |A u B| of the top-k sets; NaN: none */
  double g1_step_mean;         /* mean over steps of G1 of that step's counts */
  double max_over_mean_step_mean;
  double balancedness_step_mean; /* mean over steps of mean/max */
  double g1_total, balancedness_total; /* of the counts summed over all steps */
  uint32_t hottest[IM_MOE_HOTTEST];
  double hottest_share[IM_MOE_HOTTEST]; /* of the layer's routed tokens */
};

struct im_moe_window {
  uint64_t first_step, steps;  /* steps merged into this point */
  double g1_mean, balancedness_mean; /* over layers and steps */
  double balancedness_min;     /* worst layer-step */
};

struct im_moe_result {
  uint32_t n_layers, n_experts, top_k;
  uint64_t steps, tokens, sequences, sequences_not_followed;
  struct im_moe_layer_stats *layers;   /* n_layers, owned */
  double jitter, jaccard_distance, g1_step_mean, balancedness_step_mean; /* over layers */
  double g1_total_mean, balancedness_total_mean; /* means over layers of the totals' figures:
                                                    the skew of the load, without the
                                                    sampling noise of small steps */
  uint64_t window_steps;               /* steps per series point at the end */
  struct im_moe_window *series;        /* owned */
  size_t n_series;
  double *heat;                        /* n_series x n_experts: share of a point's tokens
                                          per expert, summed over layers; owned */
};

/* The figures so far. IM_NOMEM. Free with im_moe_result_cleanup. */
enum im_err im_moe_acc_result(const struct im_moe_acc *a, struct im_moe_result *out) IM_WUR;
void im_moe_result_cleanup(struct im_moe_result *r);

/* ---- what a run scraped ---------------------------------------------- */

/* Skew against chance (docs/metrics.md §8). Under uniform routing, a
 * window of N independent picks over E experts loads each expert about
 * Poisson(N/E); im_moe_chance_max_over_mean is the expected max/mean of
 * such a load, E[max] / (N/E) with P(max <= m) = F(m)^E (NaN when N or E is
 * 0). A layer is skewed when its balancedness is below the reference AND
 * its excess max/mean - 1 is at least IM_MOE_CHANCE_FACTOR times chance's
 * (routing of real and simulated engines is stickier than independent
 * draws: consecutive tokens of a sequence share experts, which about
 * doubles the excess of a balanced load, bench/README.md "MoE skew"). */
#define IM_MOE_CHANCE_FACTOR 3.0
double im_moe_chance_max_over_mean(double picks, uint32_t n_experts);

/* Per-layer load figures over a stage's scrapes. */
struct im_moe_scrape {
  const char *source;          /* static: "infermeter_sim", "sglang" or NULL (none) */
  size_t pages;                /* pages with a figure */
  uint32_t n_layers;           /* layers seen (sim) */
  double max_over_mean[IM_MOE_MAX_LAYERS];  /* mean over pages, per layer (sim) */
  double balancedness[IM_MOE_MAX_LAYERS];   /* mean over pages of 1/(max/mean) (sim) */
  double g1[IM_MOE_MAX_LAYERS];             /* mean over pages (sim) */
  double balancedness_mean;    /* over layers (sim) or SGLang's summary sum/count */
  /* Chance (sim pages carrying infermeter_sim_expert_window_picks): the
   * window's picks and the expected max/mean of a uniform load of as many,
   * means over the pages that had them; judged only when every page did. */
  size_t chance_pages;
  double picks_mean, chance_max_over_mean;
  uint32_t n_experts;          /* the experts label of the picks gauge */
  bool judged_against_chance;  /* set by im_moe_scrape_finish */
  size_t below_ref;            /* layers below the reference (skewed or not) */
  uint32_t worst_layer;        /* the lowest balancedness */
  double g1_mean, max_over_mean_mean;
  double sglang_sum0, sglang_count0; /* the first page's summary, for the delta */
  bool sglang_seen;
  /* The built-in server's KV fragmentation gauge (not an MoE figure; read
   * from the same pages): pages with it, mean and max. */
  size_t kv_frag_pages;
  double kv_frag_mean, kv_frag_max;
};

void im_moe_scrape_init(struct im_moe_scrape *s);
/* One /metrics page (Prometheus text). IM_NOMEM. */
enum im_err im_moe_scrape_page(struct im_moe_scrape *s, const char *page, size_t len) IM_WUR;
/* Means over the pages added; the skewed layers (below `ref`
 * balancedness, and beyond chance when it can be judged) are written to
 * low[] (at most max_low), their count returned. */
size_t im_moe_scrape_finish(struct im_moe_scrape *s, double ref, uint32_t *low, size_t max_low);

/* One phrase for every renderer (JSON, terminal, the audit's evidence):
 * "balancedness 0.62 over 58 layers (chance 0.58 for 5,700 picks per
 * window); none skewed" or "58 of 58 layers skewed, worst: layer 0 at
 * 0.04 (chance 0.55 ...)". */
void im_moe_scrape_summary(const struct im_moe_scrape *s, double ref, size_t n_low, char *buf,
                           size_t len);

struct im_valid_check;
/* The publishable audit's `moe_balance` check (docs/audit.md) of scraped
 * figures finished by im_moe_scrape_finish: WARN naming the layers below
 * ref, PASS otherwise; false (no check) when nothing was collected. */
bool im_moe_audit_check(const struct im_moe_scrape *s, double ref, const uint32_t *low,
                        size_t n_low, struct im_valid_check *out);

#endif
