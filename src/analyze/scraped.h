/* The server's and the machine's figures of one stage (docs/metrics.md §5,
 * docs/server-metrics.md), computed from the samples of series.jsonl
 * (record/series.h) and what the client measured: prefix-cache hit rate,
 * KV-cache usage, queue maxima, preemptions and token counters over the
 * measured window, server-side TTFT/ITL quantiles and the gap to the
 * client's, Pearson r of KV usage against the hit rate, KV residency, TCP
 * state figures, GPU bandwidth, power, energy and tokens per joule, and
 * the time series cut to the stage.
 *
 * Pure: no I/O, no JSON; the same set and context give the same figures.
 * A figure that cannot be had is NaN, with its reason (not_collected,
 * not_available, kv_residency_reason, or an entry of nulls[]).
 * src/report/scraped_json.c renders them into results.json. */
#ifndef IM_ANALYZE_SCRAPED_H
#define IM_ANALYZE_SCRAPED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/machine.h"
#include "core/err.h"
#include "record/series.h"

/* What the figures need from the client side. */
struct im_server_ctx {
  int64_t t0_mono;              /* the stage's start: series times are relative to it */
  int64_t window_start_ns, window_end_ns; /* measured window, relative to t0_mono */
  double client_ttft_p50_ms, client_ttft_p99_ms; /* NaN when unknown */
  double output_tokens;         /* in the window, for tokens per joule */
  uint64_t connections_opened;  /* by the load engine */
  uint64_t attempts;            /* requests sent, for requests per connection */
  double kv_residency_ref;      /* reference line (0.68) */
  double kv_bytes_per_token;    /* KV bytes one GPU holds per token (declared), 0 unknown */
  double gpu_memory_bytes;      /* per GPU (declared), 0: from NVML when sampled */
  double bw_util_ref;           /* reference line (0.78) */
  /* Series: only samples with t - t0_mono in [series_from_ns, series_to_ns]
   * (a stage of a multi-stage run); both 0: every sample. */
  int64_t series_from_ns, series_to_ns;
};

#define IM_SERVER_MAX_NULLS 24

/* Why a figure is null: key is the figure's name in results.json. Both
 * strings are static. */
struct im_server_null {
  const char *key;
  const char *why;
};

/* One sample of a source's time series (seconds relative to t0_mono). */
struct im_server_series_pt {
  double t_s, kv_cache_usage, requests_running, requests_waiting;
  double prefix_cache_hit_rate;   /* over the interval since the previous sample */
  double preemptions;             /* since the source's first sample */
  double generation_tokens_per_s; /* over the interval since the previous sample */
};

/* The figures of one scraped endpoint. */
struct im_server_source_figs {
  char url[IM_SERIES_URL_LEN];
  bool dcgm;
  size_t scrapes;
  uint64_t failed_scrapes, malformed_lines, counter_resets;
  char engines[IM_SERIES_MAX_ENGINES][IM_SERIES_NAME_LEN];
  size_t n_engines;
  /* Non-empty when fewer than two scrapes succeeded: the figures below are
   * then not computed (nor rendered). */
  char not_collected[IM_SERIES_REASON_LEN + 32];
  double kv_cache_usage_mean, kv_cache_usage_max, prefix_cache_hit_rate;
  double waiting_max, running_max, preemptions, prompt_tokens, generation_tokens;
  double server_ttft_p50_ms, server_ttft_p99_ms, client_ttft_p50_ms, client_ttft_p99_ms;
  double ttft_gap_p50_ms, server_itl_p50_ms, server_itl_p99_ms;
  double kv_usage_hit_rate_r;
  /* The server's TTFT and ITL histograms over the window (bucket deltas
   * between the window's two samples, seconds; n = 0: not on the page). */
  struct im_series_hist ttft_window, itl_window;
  double kv_cache_capacity_tokens, kv_residency, kv_residency_max, kv_residency_ref;
  const char *kv_residency_reason; /* static; NULL when computed */
  struct im_server_null nulls[IM_SERVER_MAX_NULLS]; /* the other NaN figures */
  size_t n_nulls;
  struct im_series_labelled *per_series; /* the last page's, owned */
  size_t n_per_series;
  /* The engine's samples no concept maps, as the last page gave them
   * (name, with labels when any, and value; docs/server-metrics.md
   * "Everything else"). */
  struct im_series_raw unmapped[IM_SERIES_MAX_RAW];
  size_t n_unmapped;
  struct im_server_series_pt *series;    /* cut to the stage, owned */
  size_t n_series;
};

struct im_server_tcp_series_pt {
  double t_s;
  uint32_t established, time_wait, close_wait, syn_sent, fin_wait; /* fin_wait: 1 + 2 */
};

struct im_server_tcp_figs {
  uint64_t connections_opened;
  double requests_per_connection;
  char not_collected[IM_SERIES_REASON_LEN]; /* non-empty: no TCP sample, the rest unset */
  size_t samples;
  bool procfs; /* the last sample's path */
  uint32_t time_wait_max, established_max;
  double time_wait_growth_per_s;
  bool time_wait_growing;
  const char *warning; /* static; NULL when TIME_WAIT does not grow */
  struct im_server_tcp_series_pt *series; /* cut to the stage, owned */
  size_t n_series;
};

struct im_server_gpu_series_pt {
  double t_s, memory_used_bytes, power_w; /* sums over GPUs */
  double dram_bw_util, gpu_util_percent;  /* means over GPUs; NaN when none */
};

struct im_server_gpu_figs {
  char not_available[IM_SERIES_REASON_LEN]; /* non-empty: the figures are unset */
  unsigned gpus;
  bool has_mem;
  uint64_t memory_used_max_bytes, memory_total_bytes;
  double dram_bw_util_mean, dram_bw_util_max, dram_bw_util_ref;
  double tensor_active_mean, sm_active_mean, power_w_mean, energy_j;
  enum im_gpu_energy_source energy_source;
  double tokens_per_joule;
  bool sampled; /* some GPU sample in the run: the series is rendered */
  struct im_server_gpu_series_pt *series; /* cut to the stage, owned */
  size_t n_series;
};

struct im_server_figures {
  struct im_server_source_figs *src; /* one per source of the set, in index order */
  size_t n_src;
  struct im_server_tcp_figs tcp;
  struct im_server_gpu_figs gpu;
};

/* Computes every figure into *out (overwritten; release with
 * im_server_figures_cleanup, also after a failure). Sources are those the
 * set names; the window picks, per source, the last sample at or before its
 * start and the first at or after its end (the sample before the load and
 * the final one, when the window is the whole stage). IM_OK, IM_INVAL for
 * NULL arguments, IM_NOMEM. */
enum im_err im_server_figures_compute(const struct im_series_set *s, const struct im_server_ctx *ctx,
                                      struct im_server_figures *out) IM_WUR;

/* Frees what compute allocated; the struct may be computed into again.
 * NULL ok. */
void im_server_figures_cleanup(struct im_server_figures *f);

/* The histogram of the observations between two samples (a NULL or empty
 * `a`: since the server started): b's buckets less a's count of the same
 * le, and the _sum and _count differences. */
void im_server_hist_delta(const struct im_series_hist *a, const struct im_series_hist *b,
                          struct im_series_hist *out);

/* The q-quantile (0..1) of a histogram over the interval between two
 * samples (a NULL or empty `a`: since the server started), from the bucket
 * deltas with equal le, by im_prom_histogram_quantile's rules; in the
 * histogram's unit. NaN when b is empty, the buckets allow no estimate, or
 * nothing was observed. */
double im_server_hist_quantile(const struct im_series_hist *a, const struct im_series_hist *b,
                               double q);

#endif
