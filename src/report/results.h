/* results.json and the terminal summary of a run (docs/results-schema.md). */
#ifndef IM_REPORT_RESULTS_H
#define IM_REPORT_RESULTS_H

#include <stdbool.h>
#include <stdio.h>

#include "core/err.h"
#include "analyze/summary.h"

struct json_t;

/* The client self-check (docs/metrics.md §10). */
struct im_client_check {
  double dispatch_lag_p99_ms, dispatch_lag_limit_ms;
  double dispatched_share;          /* dispatched / scheduled */
  double cpu_share;                 /* generator CPU / wall, per thread (max) */
  unsigned long long fd_exhausted, port_exhausted;
  bool pass_lag, pass_dispatched, pass_cpu, pass_fd, pass_port;
  bool valid;
};

/* lag_p99_ms: nearest-rank p99 of dispatch_lag over every dispatched attempt. */
void im_client_check_compute(double lag_p99_ms, unsigned long long scheduled,
                             unsigned long long dispatched, double ttft_slo_ms, bool has_ttft_slo,
                             double cpu_share, unsigned long long fd_exhausted,
                             unsigned long long port_exhausted, struct im_client_check *out);
enum im_err im_client_check_json(const struct im_client_check *c, struct json_t *audit) IM_WUR;

/* Prints the summary table (vLLM's layout first, then ours). */
void im_report_text(FILE *out, const struct im_summary *s, const struct im_summary_config *cfg,
                    const struct im_client_check *check);

#endif
