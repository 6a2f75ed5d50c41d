/* /metrics of the built-in server: vLLM V1's names, types and labels
 * (vllm/v1/metrics/loggers.py, docs/usage/metrics.md), plus simulator
 * extras under infermeter_sim_. Observations are in real (wall) seconds, as
 * a client measures them, whatever --time-scale is. */
#ifndef IM_SERVE_SIM_METRICS_H
#define IM_SERVE_SIM_METRICS_H

#include <stdint.h>

#include "core/buf.h"
#include "proto/promexp.h"
#include "serve/engine.h"
#include "serve/fault.h"

enum im_sim_hist {
  IM_H_TTFT,
  IM_H_ITL,
  IM_H_E2E,
  IM_H_QUEUE,
  IM_H_PREFILL,
  IM_H_DECODE,
  IM_H_STEP,
  IM_H_LATENESS,
  IM_H_COUNT_
};

struct im_sim_metrics {
  struct im_prom_hist hist[IM_H_COUNT_];
  uint64_t *storage;
  uint64_t success[3];             /* stop, length, abort */
  uint64_t faults[IM_FAULT_KIND_COUNT];
  uint64_t http_responses[6];      /* by status class 1xx..5xx (index 1..5) */
  uint64_t connections_opened, connections_current;
  uint64_t client_aborts;          /* requests aborted because the client left */
  uint64_t aborted_blocks;         /* KV blocks held by those requests, freed */
  uint64_t truncated_backlog;      /* clients dropped for not reading */
  uint64_t leaked_running;         /* serve --leak-cancelled: requests whose client
                                      left, still counted as running */
};

enum im_err im_sim_metrics_init(struct im_sim_metrics *m) IM_WUR;
void im_sim_metrics_cleanup(struct im_sim_metrics *m);
/* Records a finished or aborted request's engine-side figures. */
void im_sim_metrics_request(struct im_sim_metrics *m, const struct im_seq *s, enum im_finish why);

/* The engine's figures as the server reports them: im_engine_get_stats,
 * with the requests leaked by --leak-cancelled still counted as running
 * (every gauge and /slots read them through here). */
void im_sim_engine_stats(const struct im_engine *e, const struct im_sim_metrics *m,
                         struct im_engine_stats *st);

/* Writes the whole page. */
enum im_err im_sim_metrics_write(struct im_buf *b, const struct im_sim_metrics *m,
                                 const struct im_engine *e, const char *model,
                                 double time_scale, bool prefix_caching) IM_WUR;

#endif
