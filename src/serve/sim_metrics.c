#include "serve/sim_metrics.h"

#include <stdlib.h>
#include <string.h>

/* Bucket bounds as vLLM V1 declares them (vllm/v1/metrics/loggers.py). */
static const double ttft_bounds[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                     0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0,
                                     20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
static const double itl_bounds[] = {0.01, 0.025, 0.05, 0.075, 0.1,  0.15, 0.2,
                                    0.3,  0.4,   0.5,  0.75,  1.0,  2.5,  5.0,
                                    7.5,  10.0,  20.0, 40.0,  80.0};
static const double latency_bounds[] = {0.3,  0.5,  0.8,  1.0,   1.5,   2.0,   2.5,
                                        5.0,  10.0, 15.0, 20.0,  30.0,  40.0,  50.0,
                                        60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
/* Simulator extras: engine step time and emission lateness (write time minus
 * the step's deadline), fine-grained because they are expected in ms/us. */
static const double step_bounds[] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.015, 0.02, 0.03,
                                     0.04,   0.05,  0.06,  0.08,  0.1,  0.15,  0.2,  0.5, 1.0};
static const double lateness_bounds[] = {1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4,
                                         1e-3, 2e-3, 5e-3, 1e-2, 5e-2, 1e-1};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
  const double *bounds;
  size_t n;
} layout[IM_H_COUNT_] = {
    [IM_H_TTFT] = {ttft_bounds, N(ttft_bounds)},
    [IM_H_ITL] = {itl_bounds, N(itl_bounds)},
    [IM_H_E2E] = {latency_bounds, N(latency_bounds)},
    [IM_H_QUEUE] = {latency_bounds, N(latency_bounds)},
    [IM_H_PREFILL] = {latency_bounds, N(latency_bounds)},
    [IM_H_DECODE] = {latency_bounds, N(latency_bounds)},
    [IM_H_STEP] = {step_bounds, N(step_bounds)},
    [IM_H_LATENESS] = {lateness_bounds, N(lateness_bounds)},
};

enum im_err im_sim_metrics_init(struct im_sim_metrics *m) {
  memset(m, 0, sizeof *m);
  size_t total = 0;
  for (size_t i = 0; i < IM_H_COUNT_; i++)
    total += layout[i].n + 1;
  m->storage = calloc(total, sizeof *m->storage);
  if (!m->storage)
    return IM_NOMEM;
  uint64_t *p = m->storage;
  for (size_t i = 0; i < IM_H_COUNT_; i++) {
    m->hist[i].bounds = layout[i].bounds;
    m->hist[i].n_bounds = layout[i].n;
    m->hist[i].counts = p;
    p += layout[i].n + 1;
  }
  return IM_OK;
}

void im_sim_metrics_cleanup(struct im_sim_metrics *m) {
  if (!m)
    return;
  free(m->storage);
  m->storage = NULL;
}

void im_sim_metrics_request(struct im_sim_metrics *m, const struct im_seq *s, enum im_finish why) {
  m->success[why == IM_FINISH_STOP ? 0 : why == IM_FINISH_LENGTH ? 1 : 2]++;
  if (why == IM_FINISH_ABORT || !s->t_first_token)
    return;
  im_prom_hist_observe(&m->hist[IM_H_TTFT], (double)(s->t_first_token - s->t_arrival) * 1e-9);
  im_prom_hist_observe(&m->hist[IM_H_E2E], (double)(s->t_end - s->t_arrival) * 1e-9);
  im_prom_hist_observe(&m->hist[IM_H_QUEUE], (double)(s->t_scheduled - s->t_arrival) * 1e-9);
  im_prom_hist_observe(&m->hist[IM_H_PREFILL], (double)(s->t_first_token - s->t_scheduled) * 1e-9);
  im_prom_hist_observe(&m->hist[IM_H_DECODE], (double)(s->t_end - s->t_first_token) * 1e-9);
}

static enum im_err gauge(struct im_buf *b, const char *name, const char *help, const char *labels,
                         double v) {
  enum im_err err = im_prom_family(b, name, "gauge", help);
  return err ? err : im_prom_sample(b, name, labels, v);
}

static enum im_err counter(struct im_buf *b, const char *name, const char *help,
                           const char *labels, double v) {
  enum im_err err = im_prom_family(b, name, "counter", help);
  return err ? err : im_prom_sample(b, name, labels, v);
}

static enum im_err hist(struct im_buf *b, const char *name, const char *help, const char *labels,
                        const struct im_prom_hist *h) {
  enum im_err err = im_prom_family(b, name, "histogram", help);
  return err ? err : im_prom_hist_write(b, name, labels, h);
}

static enum im_err expert_gauges(struct im_buf *b, const struct im_engine *e, const char *base) {
  uint32_t nl = 0, ne = 0;
  const uint32_t *counts = im_engine_last_expert_counts(e, &nl, &ne);
  if (!counts)
    return IM_OK;
  enum im_err err = im_prom_family(
      b, "infermeter_sim_expert_imbalance", "gauge",
      "Max over mean tokens per expert in the last engine step, per MoE layer.");
  char labels[256];
  for (uint32_t l = 0; l < nl && !err; l++) {
    uint64_t sum = 0, max = 0;
    for (uint32_t x = 0; x < ne; x++) {
      uint32_t c = counts[(size_t)l * ne + x];
      sum += c;
      max = c > max ? c : max;
    }
    double mean = (double)sum / ne;
    snprintf(labels, sizeof labels, "%s,layer=\"%u\"", base, l);
    err = im_prom_sample(b, "infermeter_sim_expert_imbalance", labels,
                         mean > 0 ? (double)max / mean : 0.0);
  }
  /* The load over the last ~IM_MOE_WINDOW_STEPS steps, per layer: max/mean
   * and G1 (the client's metrics.moe reads them; docs/deepseek.md). One
   * step's counts are too few at small batches to say anything of skew. */
  const double *w = im_engine_window_expert_load(e, &nl, &ne);
  if (!err && w)
    err = im_prom_family(b, "infermeter_sim_expert_window_imbalance", "gauge",
                         "Max over mean load per expert over the last ~128 engine steps, per "
                         "MoE layer.");
  for (uint32_t l = 0; w && l < nl && !err; l++) {
    snprintf(labels, sizeof labels, "%s,layer=\"%u\"", base, l);
    double sum = 0, max = 0;
    for (uint32_t x = 0; x < ne; x++) {
      sum += w[(size_t)l * ne + x];
      max = w[(size_t)l * ne + x] > max ? w[(size_t)l * ne + x] : max;
    }
    err = im_prom_sample(b, "infermeter_sim_expert_window_imbalance", labels,
                         sum > 0 ? max / (sum / ne) : 0.0);
  }
  /* How many independent picks the window's load weighs: the client's
   * chance level of skew (analyze/moe.h, a multinomial of this many picks
   * over the experts). */
  if (!err && w)
    err = im_prom_family(b, "infermeter_sim_expert_window_picks", "gauge",
                         "Routed expert picks in the windowed load, as independent draws "
                         "((sum of weights)^2 / sum of squared weights).");
  if (!err && w) {
    snprintf(labels, sizeof labels, "%s,experts=\"%u\"", base, ne);
    err = im_prom_sample(b, "infermeter_sim_expert_window_picks", labels,
                         im_engine_window_expert_picks(e));
  }
  if (!err && w)
    err = im_prom_family(b, "infermeter_sim_expert_window_g1", "gauge",
                         "Skewness (G1) of the load per expert over the last ~128 engine steps, "
                         "per MoE layer.");
  for (uint32_t l = 0; w && l < nl && !err; l++) {
    snprintf(labels, sizeof labels, "%s,layer=\"%u\"", base, l);
    err = im_prom_sample(b, "infermeter_sim_expert_window_g1", labels,
                         im_skewness_g1(w + (size_t)l * ne, ne));
  }
  return err;
}

void im_sim_engine_stats(const struct im_engine *e, const struct im_sim_metrics *m,
                         struct im_engine_stats *st) {
  im_engine_get_stats(e, st);
  uint64_t running = st->running + m->leaked_running;
  st->running = running > UINT32_MAX ? UINT32_MAX : (uint32_t)running;
}

enum im_err im_sim_metrics_write(struct im_buf *b, const struct im_sim_metrics *m,
                                 const struct im_engine *e, const char *model, double time_scale,
                                 bool prefix_caching) {
  struct im_engine_stats st;
  im_sim_engine_stats(e, m, &st);
  struct im_buf lb;
  im_buf_init(&lb, 512);
  enum im_err err = im_prom_label(&lb, "model_name", model);
  if (!err)
    err = im_prom_label(&lb, "engine", "0");
  if (err) {
    im_buf_cleanup(&lb);
    return err;
  }
  const char *L = lb.data;
  char l2[640];

  err = gauge(b, "vllm:num_requests_running", "Number of requests in model execution batches.", L,
              st.running);
  if (!err)
    err = gauge(b, "vllm:num_requests_waiting", "Number of requests waiting to be processed.", L,
                st.waiting);
  if (!err)
    err = gauge(b, "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", L,
                st.kv_usage);
  if (!err)
    err = counter(b, "vllm:prefix_cache_queries_total",
                  "Prefix cache queries, in terms of number of queried tokens.", L,
                  (double)st.kv.queries_tokens);
  if (!err)
    err = counter(b, "vllm:prefix_cache_hits_total",
                  "Prefix cache hits, in terms of number of cached tokens.", L,
                  (double)st.kv.hits_tokens);
  if (!err)
    err = counter(b, "vllm:num_preemptions_total", "Cumulative number of preemption from the engine.",
                  L, (double)st.preemptions);
  if (!err)
    err = counter(b, "vllm:prompt_tokens_total", "Number of prefill tokens processed.", L,
                  (double)st.prompt_tokens);
  if (!err)
    err = counter(b, "vllm:generation_tokens_total", "Number of generation tokens processed.", L,
                  (double)st.generation_tokens);
  if (!err)
    err = im_prom_family(b, "vllm:request_success_total", "counter",
                         "Count of successfully processed requests.");
  static const char *const reasons[] = {"stop", "length", "abort"};
  for (int i = 0; i < 3 && !err; i++) {
    snprintf(l2, sizeof l2, "%s,finished_reason=\"%s\"", L, reasons[i]);
    err = im_prom_sample(b, "vllm:request_success_total", l2, (double)m->success[i]);
  }
  static const struct {
    enum im_sim_hist h;
    const char *name, *help;
  } hists[] = {
      {IM_H_TTFT, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds."},
      {IM_H_ITL, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds."},
      {IM_H_E2E, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds."},
      {IM_H_QUEUE, "vllm:request_queue_time_seconds",
       "Histogram of time spent in WAITING phase for request."},
      {IM_H_PREFILL, "vllm:request_prefill_time_seconds",
       "Histogram of time spent in PREFILL phase for request."},
      {IM_H_DECODE, "vllm:request_decode_time_seconds",
       "Histogram of time spent in DECODE phase for request."},
      {IM_H_STEP, "infermeter_sim_step_duration_seconds",
       "Wall time of simulated engine steps (after --time-scale)."},
      {IM_H_LATENESS, "infermeter_sim_emission_lateness_seconds",
       "Time from a step's deadline to the hand-over of its chunk to the kernel (io_uring submission or write call)."},
  };
  for (size_t i = 0; i < N(hists) && !err; i++)
    err = hist(b, hists[i].name, hists[i].help, L, &m->hist[hists[i].h]);
  if (!err) {
    snprintf(l2, sizeof l2,
             "%s,block_size=\"%u\",num_gpu_blocks=\"%u\",enable_prefix_caching=\"%s\","
             "cache_dtype=\"auto\"",
             L, im_engine_block_size(e), im_engine_num_blocks(e),
             prefix_caching ? "True" : "False");
    err = gauge(b, "vllm:cache_config_info", "Information of the LLMEngine CacheConfig.", l2, 1);
  }
  /* Simulator extras. */
  if (!err)
    err = gauge(b, "infermeter_sim_hbm_bandwidth_utilization",
                "Modelled HBM bandwidth utilisation of the last engine step.", L, st.last_hbm_util);
  if (!err)
    err = gauge(b, "infermeter_sim_experts_touched",
                "Mean over MoE layers of distinct experts activated in the last step.", L,
                st.last_moe.distinct_mean);
  if (!err)
    err = gauge(b, "infermeter_sim_expert_skewness",
                "Mean over MoE layers of the skewness (G1) of tokens per expert, last step.", L,
                st.last_moe.skew_mean);
  if (!err)
    err = expert_gauges(b, e, L);
  if (!err)
    err = gauge(b, "infermeter_sim_kv_fragmentation",
                "KV slots allocated to running sequences and not holding a token, over the "
                "allocated slots.", L, st.kv_fragmentation);
  if (!err)
    err = gauge(b, "infermeter_sim_batch_sequences", "Sequences in the last engine step.", L,
                st.last_batch_seqs);
  if (!err)
    err = gauge(b, "infermeter_sim_batch_tokens", "Tokens computed in the last engine step.", L,
                st.last_batch_tokens);
  if (!err)
    err = counter(b, "infermeter_sim_steps_total", "Engine steps run.", L, (double)st.steps);
  if (!err)
    err = counter(b, "infermeter_sim_hiccups_total", "Engine-wide pauses injected.", L,
                  (double)st.hiccups);
  if (!err)
    err = gauge(b, "infermeter_sim_kv_blocks", "KV-cache capacity in blocks (after any shrink).", L,
                im_engine_num_blocks(e));
  if (!err)
    err = gauge(b, "infermeter_sim_time_scale", "Simulated seconds per wall second.", L, time_scale);
  if (!err)
    err = im_prom_family(b, "infermeter_sim_faults_injected_total", "counter",
                         "Faults injected, by kind.");
  for (int k = 0; k < IM_FAULT_KIND_COUNT && !err; k++) {
    snprintf(l2, sizeof l2, "%s,kind=\"%s\"", L, im_fault_kind_name((enum im_fault_kind)k));
    err = im_prom_sample(b, "infermeter_sim_faults_injected_total", l2, (double)m->faults[k]);
  }
  if (!err)
    err = counter(b, "infermeter_sim_client_aborts_total",
                  "Requests aborted because the client disconnected.", L, (double)m->client_aborts);
  if (!err)
    err = counter(b, "infermeter_sim_aborted_kv_blocks_freed_total",
                  "KV blocks freed by requests aborted on client disconnect.", L,
                  (double)m->aborted_blocks);
  if (!err)
    err = counter(b, "infermeter_sim_slow_clients_dropped_total",
                  "Connections dropped because their unread output exceeded the backlog limit.", L,
                  (double)m->truncated_backlog);
  if (!err)
    err = counter(b, "infermeter_sim_connections_opened_total", "TCP connections accepted.", L,
                  (double)m->connections_opened);
  if (!err)
    err = gauge(b, "infermeter_sim_connections", "TCP connections open now.", L,
                (double)m->connections_current);
  if (!err)
    err = im_prom_family(b, "infermeter_sim_http_responses_total", "counter",
                         "HTTP responses by status class.");
  for (int c = 1; c <= 5 && !err; c++) {
    snprintf(l2, sizeof l2, "%s,code=\"%dxx\"", L, c);
    err = im_prom_sample(b, "infermeter_sim_http_responses_total", l2,
                         (double)m->http_responses[c]);
  }
  im_buf_cleanup(&lb);
  return err;
}
