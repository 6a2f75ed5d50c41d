/* What a load test needs from a server's /metrics page, whatever the engine:
 * one table (namemap.c) maps each engine's metric names to unified concepts
 * (KV-cache usage, prefix-cache queries/hits, running/waiting requests,
 * preemptions, token counters, server-side latency histograms, DCGM GPU
 * activity), with the source of every name; docs/server-metrics.md explains
 * the table, the derivations and each engine's gaps.
 *
 * One scrape gives one snapshot: im_nm_extract parses the page
 * (promparse.h), detects the engines present by their names, and for each
 * concept combines the series of the engine's preferred name:
 *   - per concept, a scalar aggregate over series (sum, max, mean, count)
 *     and a canonical value: the max for KV usage, the mean for rates and
 *     GPU activity ratios, the sum for everything else (counters,
 *     running/waiting, memory, power);
 *   - the per-series values keyed by their distinguishing labels (engine,
 *     dp_rank, gpu), for the scalar concepts;
 *   - for the histogram concepts, the cumulative buckets (le, count) summed
 *     across series with equal le, plus _sum and _count;
 *   - every sample mapped to no concept, kept raw (name, labels, value) in a
 *     bounded list.
 * Interval quantities come from two snapshots (im_nm_hit_rate,
 * im_nm_hist_quantile): hit rate = Δhits / Δqueries (docs/metrics.md §5).
 *
 * Thread safety: a snapshot belongs to one thread; the table is constant. */
#ifndef IM_OBSERVE_NAMEMAP_H
#define IM_OBSERVE_NAMEMAP_H

#include <stddef.h>

#include "core/err.h"
#include "proto/promparse.h"

enum im_nm_engine {
  IM_NM_VLLM_V1,
  IM_NM_VLLM_V0,
  IM_NM_SGLANG,
  IM_NM_LLAMACPP,
  IM_NM_TGI,
  IM_NM_TRTLLM,
  IM_NM_DCGM,
  IM_NM_INFERMETER, /* `infermeter serve`: vLLM V1 names plus infermeter_sim_* */
  IM_NM_ENGINE_COUNT_
};

enum im_nm_concept {
  IM_NM_KV_USAGE,          /* fraction of KV-cache blocks (or tokens) in use, 0..1 */
  IM_NM_PREFIX_QUERIES,    /* counter, prompt tokens looked up in the prefix cache */
  IM_NM_PREFIX_HITS,       /* counter, of those, tokens found */
  IM_NM_PREFIX_HIT_RATE,   /* gauge, engines that only export the rate */
  IM_NM_REQUESTS_RUNNING,  /* gauge */
  IM_NM_REQUESTS_WAITING,  /* gauge */
  IM_NM_PREEMPTIONS,       /* counter */
  IM_NM_PROMPT_TOKENS,     /* counter */
  IM_NM_GENERATION_TOKENS, /* counter */
  IM_NM_TTFT,              /* histogram, seconds */
  IM_NM_ITL,               /* histogram, seconds, one observation per token gap */
  IM_NM_TPOT,              /* histogram, seconds, one observation per request */
  IM_NM_E2E,               /* histogram, seconds */
  IM_NM_QUEUE_TIME,        /* histogram, seconds */
  IM_NM_GPU_DRAM_ACTIVE,   /* ratio 0..1, DCGM */
  IM_NM_GPU_TENSOR_ACTIVE, /* ratio 0..1 */
  IM_NM_GPU_SM_ACTIVE,     /* ratio 0..1 */
  IM_NM_GPU_FB_USED,       /* bytes (DCGM exports MiB; scaled) */
  IM_NM_GPU_FB_FREE,       /* bytes */
  IM_NM_GPU_POWER,         /* watts */
  IM_NM_CONCEPT_COUNT_
};

enum im_nm_agg { IM_NM_AGG_SUM, IM_NM_AGG_MAX, IM_NM_AGG_MEAN };

/* One row of the table: `name` of `engine` means `concept`. For histogram
 * concepts name is the family (samples name_bucket/_sum/_count); for the
 * others, the exact sample name. value * scale is in the concept's unit. */
struct im_nm_row {
  enum im_nm_engine engine;
  enum im_nm_concept concept;
  const char *name;
  double scale;
  /* 1: added to the concept's chosen row of the same family rather than
   * being an alternative to it (llama.cpp's prompt tokens are its uncached
   * counter plus its cached one). */
  int add;
};

/* The table, in preference order within an engine family (vLLM V1 and V0
 * are one family: the first row with data wins, so a V1 page that also
 * shows deprecated V0 names is not counted twice). *n gets the row count. */
const struct im_nm_row *im_nm_table(size_t *n);
const char *im_nm_engine_name(enum im_nm_engine e);   /* "vllm-v1", ... */
const char *im_nm_concept_name(enum im_nm_concept c); /* "kv_cache_usage", ... */
int im_nm_concept_is_hist(enum im_nm_concept c);
enum im_nm_agg im_nm_concept_agg(enum im_nm_concept c);

#define IM_NM_MAX_BUCKETS 64
#define IM_NM_KEY_MAX 96
#define IM_NM_DEFAULT_MAX_SERIES 1024
#define IM_NM_DEFAULT_MAX_RAW 8192
#define IM_NM_DEFAULT_MAX_RAW_BYTES ((size_t)2 << 20)

struct im_nm_value {
  int present; /* some series of the concept was on the page */
  size_t n;    /* series */
  double sum, max, mean;
  double value; /* the canonical aggregate (im_nm_concept_agg) */
};

struct im_nm_hist {
  int present;
  size_t n; /* buckets, ascending le, the last +Inf when the page had it */
  struct im_prom_bucket b[IM_NM_MAX_BUCKETS];
  double sum, count;
  size_t series;          /* series (distinct label sets) merged */
  size_t buckets_dropped; /* distinct le values beyond IM_NM_MAX_BUCKETS */
};

/* One series of a scalar concept. key: its distinguishing labels as
 * `engine=0,dp_rank=1` or `gpu=3` (page order, only engine, dp_rank and
 * gpu), "" when it has none. */
struct im_nm_series {
  enum im_nm_concept concept;
  enum im_nm_engine engine;
  char key[IM_NM_KEY_MAX];
  double value; /* scaled */
};

/* A sample no row maps. labels as Prometheus writes them, escaped, without
 * braces (`a="1",b="x"`), "" when none. Owned by the snapshot. */
struct im_nm_raw {
  const char *name;
  const char *labels;
  double value;
};

struct im_nm_limits {
  size_t max_series;    /* per-series records; 0: default */
  size_t max_raw;       /* raw samples kept; 0: default */
  size_t max_raw_bytes; /* bytes of raw names and labels; 0: default */
  struct im_promparse_limits parse;
};

struct im_nm_acc; /* private per-row accumulator */

struct im_nm_snapshot {
  unsigned engines; /* bit (1u << engine) per engine detected */
  int primary;      /* the serving engine (enum im_nm_engine), else DCGM, else -1 */
  struct im_nm_value v[IM_NM_CONCEPT_COUNT_]; /* scalar concepts */
  struct im_nm_hist *h;                       /* [IM_NM_CONCEPT_COUNT_]; histogram concepts only */
  struct im_nm_series *series;                /* n_series entries */
  size_t n_series, series_dropped;
  struct im_nm_raw *raw; /* n_raw entries, page order */
  size_t n_raw, raw_dropped;
  struct im_promparse_stats parse; /* of the page: samples, malformed lines */
  /* Private. */
  size_t max_series, max_raw;
  struct im_nm_acc *acc;
  size_t *series_row; /* table row of each series, until selection */
  size_t *raw_off;    /* name and labels offsets into raw_text, 2 per raw */
  struct im_buf raw_text;
  struct im_buf lab;
  struct im_promparse parser;
  void *index;
};

/* Allocates an empty snapshot; limits may be NULL. IM_NOMEM on failure
 * (*out NULL). Free with im_nm_snapshot_free. */
enum im_err im_nm_snapshot_new(struct im_nm_snapshot **out,
                               const struct im_nm_limits *limits) IM_WUR;
/* NULL ok. */
void im_nm_snapshot_free(struct im_nm_snapshot *s);

/* Parses one page (len bytes, need not be NUL-terminated) into s, replacing
 * what s held. Malformed lines are skipped and counted in s->parse.errors;
 * overflowing series or raw lists are counted in *_dropped. Returns IM_OK or
 * IM_NOMEM (s is then empty). */
enum im_err im_nm_extract(struct im_nm_snapshot *s, const char *page, size_t len) IM_WUR;

/* Prefix-cache hit rate over the interval between two snapshots of the same
 * server: Δhits / Δqueries when both counters are present in both and
 * Δqueries > 0; else, the hit-rate gauge of cur (an engine's own window);
 * else NaN. A counter that went down (server restart) gives NaN. */
double im_nm_hit_rate(const struct im_nm_snapshot *prev, const struct im_nm_snapshot *cur);

/* Difference cur - prev of a counter concept's canonical value; NaN when
 * either lacks it or it went down (restart). prev may be NULL (cur's value). */
double im_nm_delta(const struct im_nm_snapshot *prev, const struct im_nm_snapshot *cur,
                   enum im_nm_concept c);

/* The q-quantile of a histogram concept over the interval between two
 * snapshots (prev NULL: since the server started), from the bucket deltas
 * with equal le, by im_prom_histogram_quantile's rules. IM_NOTFOUND when cur
 * lacks the histogram, IM_INVAL when the buckets do not allow an estimate
 * (no +Inf bucket); *out NaN then, and also when there were no
 * observations. */
enum im_err im_nm_hist_quantile(const struct im_nm_snapshot *prev, const struct im_nm_snapshot *cur,
                                enum im_nm_concept c, double q, double *out) IM_WUR;

#endif
