/* The client self-check's JSON and the terminal summary. */
#include "report/summary_text.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

#include "report/jsonw.h"

static json_t *check(const char *name, double value, double limit, const char *op, bool pass,
                     const char *fix) {
  json_t *o = json_pack("{s:s}", "name", name);
  if (!o || im_jw_num(o, "value", value, "nothing to judge") ||
      im_jw_num(o, "limit", limit, NULL) || json_object_set_new(o, "op", json_string(op)) ||
      json_object_set_new(o, "pass", json_boolean(pass)) ||
      (!pass && json_object_set_new(o, "fix", json_string(fix)))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* Who was late (new keys of audit.client_check, docs/results-schema.md):
 * the attribution of late dispatches and reads, the host probe, the
 * figures' moves, the one-line summary and its advice; and the checks
 * lag_growth and figures_moved. */
static enum im_err attribution_json(const struct im_client_check *c, json_t *cc, json_t *checks) {
  json_t *who = json_object(), *figs = json_array();
  if (!who || !figs) {
    json_decref(who);
    json_decref(figs);
    return IM_NOMEM;
  }
  int bad = json_object_set_new(who, "attributed", json_boolean(c->attributed)) ||
            json_object_set_new(who, "burst", json_boolean(c->burst)) ||
            im_jw_uint(who, "late_dispatches_client", c->lag_late_client) ||
            im_jw_uint(who, "late_dispatches_host", c->lag_late_host) ||
            im_jw_num(who, "host_lag_min_ms", c->host_lag_min_ms, "none") ||
            im_jw_num(who, "host_lag_max_ms", c->host_lag_max_ms, "none") ||
            im_jw_num(who, "client_lag_max_ms", c->client_lag_max_ms, NULL) ||
            im_jw_uint(who, "stalls_client", c->stalls_client) ||
            im_jw_uint(who, "stalls_host", c->stalls_host) ||
            im_jw_uint(who, "stalls_host_seen_by_probe", c->stalls_host_seen) ||
            im_jw_uint(who, "late_reads_client", c->recv_late_client) ||
            im_jw_num(who, "read_client_max_ms", c->recv_client_max_ms, NULL) ||
            json_object_set_new(who, "host_warn", json_boolean(c->host_warn));
  if (!bad && c->host_wakes) {
    json_t *hp = json_object();
    bad = !hp || json_object_set_new(who, "host_probe", hp) ||
          im_jw_uint(hp, "wakes", c->host_wakes) || im_jw_uint(hp, "late", c->host_late) ||
          im_jw_num(hp, "late_share", (double)c->host_late / (double)c->host_wakes, NULL) ||
          im_jw_num(hp, "late_ms", IM_HOSTLAT_LATE_NS / 1e6, NULL) ||
          im_jw_num(hp, "max_ms", c->host_max_ms, NULL);
  } else if (!bad) {
    bad = json_object_set_new(who, "host_probe", json_null());
  }
  for (size_t i = 0; !bad && i < c->n_fig; i++) {
    const struct im_check_figure *f = &c->fig[i];
    json_t *o = json_pack("{s:s}", "name", f->name);
    bad = !o || json_array_append_new(figs, o) || im_jw_num(o, "value_ms", f->value_ms, NULL) ||
          im_jw_num(o, "client_free_ms", f->client_free_ms, NULL) ||
          im_jw_num(o, "host_stall_free_ms", f->stall_free_ms, NULL) ||
          im_jw_num(o, "lag_free_ms", f->all_free_ms, NULL) ||
          im_jw_num(o, "tolerance_ms", f->tolerance_ms, "no CI bound: unlimited") ||
          json_object_set_new(o, "pass", json_boolean(f->pass));
  }
  if (bad || json_object_set_new(who, "figures", figs)) {
    json_decref(who);
    return IM_NOMEM;
  }
  figs = NULL;
  if (json_object_set_new(cc, "attribution", who) ||
      json_object_set_new(cc, "summary", json_string(c->summary)) ||
      json_object_set_new(cc, "advice", c->advice[0] ? json_string(c->advice) : json_null()))
    return IM_NOMEM;
  json_t *g = check("lag_growth", c->lag_growth_ms, c->dispatch_lag_limit_ms, "<=", c->pass_growth,
                    "the client fell further behind its schedule as the run went on: use "
                    "--threads N or a lower rate");
  json_t *m = check("figures_moved", c->pass_figures ? 0.0 : 1.0, 0, "<=", c->pass_figures,
                    "the client's (or a host stall's) delay moved a headline figure by more than "
                    "max(1 % of it, its 95 % CI half-width): see attribution.figures");
  if (!g || !m || json_array_append_new(checks, g) || json_array_append_new(checks, m))
    return IM_NOMEM;
  return IM_OK;
}

enum im_err im_client_check_json(const struct im_client_check *c, json_t *audit) {
  json_t *cc = json_object(), *checks = json_array();
  if (!cc || !checks) {
    json_decref(cc);
    json_decref(checks);
    return IM_NOMEM;
  }
  /* Dispatch lag: the share of dispatches later than L, judged by a
   * one-sided binomial test (analyze/selfcheck.h); the p99 and the test's
   * p-value are its evidence. */
  json_t *lag =
      check("dispatch_lag_late_share", c->lag_n ? (double)c->lag_late / (double)c->lag_n : NAN,
            IM_CHECK_LATE_SHARE, "<=", c->pass_lag,
            "the client could not send on time: use --threads, lower the rate, or "
            "run the generator on an idle machine");
  if (!lag || im_jw_num(lag, "lag_limit_ms", c->dispatch_lag_limit_ms, NULL) ||
      im_jw_uint(lag, "dispatches", c->lag_n) || im_jw_uint(lag, "late", c->lag_late) ||
      im_jw_num(lag, "p_value", c->lag_p_value, NULL) ||
      im_jw_num(lag, "dispatch_lag_p99_ms", c->dispatch_lag_p99_ms, "no dispatch") ||
      im_jw_num(lag, "dispatch_lag_max_ms", c->dispatch_lag_max_ms, "no dispatch") ||
      im_jw_num(lag, "dispatch_lag_cap_ms", c->dispatch_lag_cap_ms, NULL) ||
      json_object_set_new(lag, "pass_test", json_boolean(c->pass_lag_test)) ||
      json_object_set_new(lag, "pass_cap", json_boolean(c->pass_lag_cap))) {
    json_decref(lag);
    json_decref(cc);
    json_decref(checks);
    return IM_NOMEM;
  }
  json_array_append_new(checks, lag);
  if (c->receive_measured) {
    json_t *rl = check("receive_lag_late_share", (double)c->recv_late / (double)c->recv_n,
                       IM_CHECK_LATE_SHARE, "<=", c->pass_recv,
                       "the client read arriving data late, so token times are late: use "
                       "--threads, a lower rate, or an idle machine for the generator");
    if (!rl || im_jw_num(rl, "lag_limit_ms", c->dispatch_lag_limit_ms, NULL) ||
        im_jw_uint(rl, "reads", c->recv_n) || im_jw_uint(rl, "late", c->recv_late) ||
        im_jw_num(rl, "p_value", c->recv_p_value, NULL) ||
        im_jw_num(rl, "receive_lag_p99_ms", c->receive_lag_p99_ms, NULL) ||
        im_jw_num(rl, "receive_lag_max_ms", c->receive_lag_max_ms, NULL) ||
        im_jw_num(rl, "receive_lag_cap_ms", c->dispatch_lag_cap_ms, NULL)) {
      json_decref(rl);
      json_decref(cc);
      json_decref(checks);
      return IM_NOMEM;
    }
    json_array_append_new(checks, rl);
  }
  json_array_append_new(checks, check("dispatched_share", c->dispatched_share, 0.999,
                                      ">=", c->pass_dispatched,
                                      "requests were scheduled but never sent: the client fell "
                                      "behind or the run was cut short"));
  json_array_append_new(checks, check("generator_cpu_share", c->cpu_share, 0.8, "<=", c->pass_cpu,
                                      "the generator thread was busy more than 80 % of the time: "
                                      "use --threads"));
  json_array_append_new(checks, check("fd_exhaustion", (double)c->fd_exhausted, 0, "<=", c->pass_fd,
                                      "raise the file-descriptor limit (ulimit -n)"));
  json_array_append_new(checks,
                        check("port_exhaustion", (double)c->port_exhausted, 0, "<=", c->pass_port,
                              "ephemeral ports ran out: keep connections alive "
                              "(--keepalive on) or widen net.ipv4.ip_local_port_range"));
  if (attribution_json(c, cc, checks) != IM_OK) {
    json_decref(cc);
    json_decref(checks);
    return IM_NOMEM;
  }
  json_object_set_new(cc, "verdict",
                      json_string(c->not_judged ? "NOT_JUDGED"
                                  : c->valid    ? "VALID"
                                                : "INVALID"));
  json_object_set_new(cc, "checks", checks);
  json_object_set_new(audit, "client_check", cc);
  return IM_OK;
}

/* label, then v with `digits` decimals ("-" for NaN). */
static void line(FILE *o, const char *label, int digits, double v) {
  fprintf(o, "%-40s", label);
  if (isnan(v))
    fputs("-", o);
  else
    fprintf(o, "%.*f", digits, v);
  fputc('\n', o);
}

static void line2(FILE *o, const char *label, int digits, double a, double b) {
  fprintf(o, "%-40s", label);
  if (isnan(a))
    fputs("-", o);
  else
    fprintf(o, "%.*f", digits, a);
  fputs(" / ", o);
  if (isnan(b))
    fputs("-", o);
  else
    fprintf(o, "%.*f", digits, b);
  fputc('\n', o);
}

static void section(FILE *o, const char *title) {
  int pad = 50 - (int)strlen(title) - 2;
  if (pad < 0)
    pad = 0;
  fprintf(o, "%.*s %s %.*s\n", pad / 2, "--------------------------", title, pad - pad / 2,
          "--------------------------");
}

static void vstat(FILE *o, const char *name, const struct im_vllm_stat *v,
                  const struct im_summary_config *cfg) {
  char label[64];
  snprintf(label, sizeof label, "Mean %s (ms):", name);
  line(o, label, 2, v->mean);
  snprintf(label, sizeof label, "Median %s (ms):", name);
  line(o, label, 2, v->median);
  /* vLLM's table shows P99 (the median is above) for infermeter's default
   * list; a list given (--percentiles, vLLM's --metric-percentiles) is
   * printed whole, as vLLM prints its --metric-percentiles. */
  static const double dflt[] = {50, 90, 95, 99, 99.9};
  bool given = cfg->n_percentiles != 5 || memcmp(cfg->percentiles, dflt, sizeof dflt);
  for (size_t i = 0; i < cfg->n_percentiles; i++) {
    if (!given && cfg->percentiles[i] != 99)
      continue;
    snprintf(label, sizeof label, "P%g %s (ms):", cfg->percentiles[i], name);
    line(o, label, 2, v->pct[i]);
  }
}

void im_report_text(FILE *o, const struct im_summary *s, const struct im_summary_config *cfg,
                    const struct im_client_check *c) {
  fprintf(o, "============ Serving Benchmark Result ============\n");
  line(o, "Successful requests:", 0, (double)s->completed);
  line(o, "Failed requests:", 0, (double)s->failed);
  line(o, "Benchmark duration (s):", 2, s->duration_s);
  line(o, "Total input tokens:", 0, (double)s->total_input_tokens);
  line(o, "Total generated tokens:", 0, (double)s->total_output_tokens);
  line(o, "Request throughput (req/s):", 2, s->request_throughput);
  if (cfg->has_slo_ttft || cfg->has_slo_tpot || cfg->has_slo_e2el)
    line(o, "Request goodput (req/s):", 2, s->request_goodput);
  line(o, "Output token throughput (tok/s):", 2, s->output_throughput);
  line(o, "Total Token throughput (tok/s):", 2, s->total_token_throughput);
  /* The metrics of --percentile-metrics (0: all), in vLLM's order. */
  static const char *const title[] = {"Time to First Token",
                                      "Time per Output Token (excl. 1st token)",
                                      "Inter-token Latency", "End-to-end Latency"};
  static const char *const name[] = {"TTFT", "TPOT", "ITL", "E2EL"};
  const struct im_vllm_stat *vs[] = {&s->v_ttft, &s->v_tpot, &s->v_itl, &s->v_e2el};
  for (int m = IM_PM_TTFT; m <= IM_PM_E2EL; m++) {
    if (cfg->pct_metrics && !(cfg->pct_metrics & (1u << m)))
      continue;
    section(o, title[m]);
    vstat(o, name[m], vs[m], cfg);
  }
  /* The headline throughput is vLLM's "Request throughput" above (results.json
   * summary.request_throughput); the rates below are labelled for what they
   * measure, and percentiles here are nearest-rank (docs/metrics.md). */
  fprintf(o, "============ infermeter: measured window =========\n");
  fprintf(o, "(warm-up and drain left out; percentiles: nearest rank. Above: vLLM's\n"
             "layout, all requests, interpolated percentiles; the headline throughput\n"
             "is its Request throughput.)\n");
  line(o, "Window (s):", 2, s->window_s);
  line2(o, "Offered load, scheduled / sent (req/s):", 3, s->scheduled_rate, s->dispatched_rate);
  line(o, "Completions in the window (req/s):", 3, s->window_request_rate);
  line(o, "Output tokens in the window (tok/s):", 2, s->window_output_tok_rate);
  line2(o, "All attempts / user requests (req/s):", 3, s->raw_qps, s->effective_qps);
  if (s->raw_attempts > s->traffic[IM_TRAFFIC_MEASURED].count) {
    fprintf(o, "  %-38s", "traffic classes (count, p99 ms):");
    for (int t = 0; t < IM_TRAFFIC_COUNT_; t++)
      if (s->traffic[t].count)
        fprintf(o, " %s %llu (%.1f)", im_traffic_name((enum im_traffic)t),
                (unsigned long long)s->traffic[t].count, s->traffic[t].p99_latency_ms);
    fputc('\n', o);
  }
  line2(o, "Concurrency mean / max:", 2, s->concurrency_mean, (double)s->concurrency_max);
  if (s->cache_cached_tokens) /* a shared prefix hit the server's cache (usage.*.cached_tokens) */
    fprintf(o, "%-40s%.3f (%llu of %llu prompt tokens)\n",
            "Prefix-cache hit rate (responses):", s->cache_hit_rate,
            (unsigned long long)s->cache_cached_tokens, (unsigned long long)s->cache_prompt_tokens);
  for (size_t i = 0; i < cfg->n_percentiles; i++) {
    if (cfg->percentiles[i] != 99.0)
      continue;
    line2(o, "P99 TTFT from schedule / queue (ms):", 2,
          s->ttft_sched.n ? s->ttft_sched.pct[i] : NAN,
          s->queue_wait.n ? s->queue_wait.pct[i] : NAN);
  }
  if (cfg->has_slo_ttft || cfg->has_slo_tpot || cfg->has_slo_e2el) {
    line(o, "SLO attainment, all (%):", 1, 100.0 * s->slo_all_attain);
    if (cfg->has_slo_ttft)
      line(o, "  ttft (%):", 1, 100.0 * s->slo_ttft_attain);
    if (cfg->has_slo_tpot)
      line(o, "  tpot (%):", 1, 100.0 * s->slo_tpot_attain);
    if (cfg->has_slo_e2el)
      line(o, "  e2el (%):", 1, 100.0 * s->slo_e2el_attain);
  }
  uint64_t errs = 0;
  for (int e = 1; e < IM_EC_COUNT_; e++)
    errs += s->by_error[e];
  if (errs) {
    fprintf(o, "Errors by class:");
    for (int e = 1; e < IM_EC_COUNT_; e++)
      if (s->by_error[e])
        fprintf(o, " %s=%llu", im_errclass_name((enum im_errclass)e),
                (unsigned long long)s->by_error[e]);
    fputc('\n', o);
  }
  if (c) {
    if (c->not_judged) { /* an imported run without a schedule (docs/import.md) */
      fprintf(o, "Client self-check:                       NOT_JUDGED (imported: no schedule, "
                 "no generator samples)\n");
      fprintf(o, "==================================================\n");
      return;
    }
    fprintf(o, "Client self-check:                       %s%s: %s\n",
            c->valid ? "VALID" : "INVALID", c->valid && c->host_warn ? " (host WARN)" : "",
            c->summary);
    if (c->advice[0])
      fprintf(o, "                                         advice: %s\n", c->advice);
  }
  fprintf(o, "==================================================\n");
}

void im_report_stage_line(FILE *f, size_t i, const char *label, const struct im_stage_figures *fg,
                          const struct im_summary_config *sc) {
  if (!fg->sum.completed) { /* nothing to put in the columns */
    fprintf(f, "stage %zu %s  no measured request (all warm-up, or none completed)%s\n", i,
            label[0] ? label : "-", fg->check.valid ? "" : "  INVALID");
    return;
  }
  double p50 = NAN, p99 = NAN;
  for (size_t k = 0; k < sc->n_percentiles && fg->sum.ttft.n; k++) {
    if (sc->percentiles[k] == 50)
      p50 = fg->sum.ttft.pct[k];
    if (sc->percentiles[k] == 99)
      p99 = fg->sum.ttft.pct[k];
  }
  char slo[16] = "-";
  if (im_summary_has_slo(sc))
    snprintf(slo, sizeof slo, "%.3f", fg->sum.slo_all_attain);
  /* One line per stage, within 80 columns for labels of up to ~10
   * characters: the throughputs are vLLM's (all requests), the TTFT
   * percentiles infermeter's (nearest rank over the measured window). */
  char slo_part[24] = "";
  if (im_summary_has_slo(sc))
    snprintf(slo_part, sizeof slo_part, "  SLO %s", slo);
  fprintf(f, "stage %zu %s  %.2f req/s  %.1f tok/s  TTFT p50 %.1f p99 %.1f ms%s%s%s\n", i,
          label[0] ? label : "-", fg->sum.request_throughput, fg->sum.output_throughput, p50, p99,
          slo_part, fg->sat_judged && fg->sat.growing ? "  OVERSATURATED" : "",
          fg->check.valid ? "" : "  INVALID");
}
