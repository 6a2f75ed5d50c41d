/* A run directory -> every analysis -> results.json, report.html, the
 * terminal text: see results/results.h. */
#include "results/results.h"
#include "results/results_int.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "record/rundir.h"
#include "core/clock.h"
#include "record/reader.h"
#include "analyze/causes.h"
#include "analyze/scraped.h"
#include "analyze/validity.h"
#include "record/series.h"
#include "report/html.h"
#include "report/targets_json.h"
#include "report/scraped_json.h"
#include "report/analysis_json.h"
#include "report/audit_json.h"
#include "report/breakdown_json.h"
#include "report/agents_json.h"
#include "report/reasoning_json.h"
#include "report/causes_json.h"
#include "report/summary_text.h"
#include "report/stage_json.h"
#include "report/roofline_json.h"
#include "record/sysdesc.h"
#include "report/moe_json.h"
#include "report/mix_json.h"
#include "report/timeline_json.h"
#include "workload/stages.h"



/* One stage's records, shallow copies (the chunk arrays stay with the
 * array read from disk). */
/* Stage `stage`'s records: all of them in place when every record is
 * that stage's (*copy NULL), else a copy (*copy, the caller frees it). NULL
 * when out of memory. */
static const struct im_record *stage_records(const struct im_record *all, size_t n,
                                             uint32_t stage, size_t *out_n,
                                             struct im_record **copy) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += all[i].stage == stage;
  *copy = NULL;
  *out_n = k;
  if (k == n && n)
    return all;
  struct im_record *v = malloc((k ? k : 1) * sizeof *v);
  *out_n = 0;
  if (!v)
    return NULL;
  for (size_t i = 0; i < n; i++)
    if (all[i].stage == stage)
      v[(*out_n)++] = all[i];
  *copy = v;
  return v;
}

/* A stage without its end line (the run was killed): what the records say. */
static void derive_counters(struct im_rundir_stage *s, const struct im_record *r, size_t n) {
  int64_t last = 0;
  memset(&s->counters, 0, sizeof s->counters);
  s->counters.cpu_share = NAN;
  for (size_t i = 0; i < n; i++) {
    if (r[i].attempt <= 1 && r[i].kind != IM_KIND_HEALTH && r[i].kind != IM_KIND_PROBE) {
      s->counters.scheduled++;
      s->counters.dispatched += r[i].t_dispatch >= 0;
    }
    if (r[i].t_end > last)
      last = r[i].t_end;
  }
  s->elapsed_ns = last;
  s->rule.interrupted = true;
  s->rule.elapsed_ns = last;
}

/* What a rate sweep's verdict needs of each stage. */
struct sweep_point {
  double rate, attain, throughput;
  int over;
  struct im_knee_point knee;  /* for a context sweep (analyze/roofline.h) */
};

/* A rate sweep's verdict: the highest rate whose goodput meets the SLOs
 * (workload/stages.h im_sweep_saturation_point). */
static json_t *sweep_json(const struct im_rundir *rd, const struct im_summary_config *sc,
                          const struct sweep_point *pts, size_t n, FILE *text, bool *has_point) {
  bool has_slo = im_summary_has_slo(sc);
  size_t first = rd->an.autosweep ? 1 : 0, m = n > first ? n - first : 0;
  double rates[IM_STAGE_MAX_VALUES], attain[IM_STAGE_MAX_VALUES];
  int over[IM_STAGE_MAX_VALUES];
  for (size_t k = 0; k < m && k < IM_STAGE_MAX_VALUES; k++) {
    rates[k] = pts[first + k].rate;
    attain[k] = has_slo ? pts[first + k].attain : 1.0;
    over[k] = pts[first + k].over;
  }
  size_t idx = 0;
  enum im_err e = m ? im_sweep_saturation_point(rates, attain, over, m, rd->an.slo_target, &idx)
                    : IM_NOTFOUND;
  *has_point = e == IM_OK;
  json_t *sw = json_pack("{s:s, s:b, s:b}", "param", "rate", "auto", rd->an.autosweep,
                         "stopped_early", rd->stopped_early);
  if (!sw)
    return NULL;
  if (rd->an.autosweep && n)
    json_object_set_new(sw, "max_throughput_rps",
                        isfinite(pts[0].throughput) ? json_real(pts[0].throughput) : json_null());
  json_object_set_new(sw, "slo_target", json_real(rd->an.slo_target));
  json_object_set_new(sw, "saturation_point",
                      e == IM_OK ? json_pack("{s:I, s:f, s:s}", "stage", (json_int_t)(first + idx),
                                             "rate", rates[idx], "label",
                                             rd->st[first + idx].label)
                                 : json_null());
  if (text && e == IM_OK)
    fprintf(text, "Saturation point: %.4g req/s (stage %zu): the highest rate whose goodput "
                  "meets the SLOs%s\n", rates[idx], first + idx,
            has_slo ? "" : " (no SLO given: over-saturation only)");
  else if (text && m == 0) /* rate=auto stopped after its throughput stage */
    fprintf(text, "Saturation point: not searched (no rate was swept)\n");
  else if (text)
    fprintf(text, "Saturation point: none (the lowest rate already fails)\n");
  /* Only a sweep that ran rates can miss its point (an "SLO failure"). */
  *has_point |= m == 0;
  return sw;
}

static enum im_err write_results(const char *dir, json_t *root, char *err, size_t err_len) {
  char path[4200], tmp[4300];
  snprintf(path, sizeof path, "%s/results.json", dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if (json_dump_file(root, tmp, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) != 0 ||
      rename(tmp, path) != 0)
    return im_errf(err, err_len, IM_IO, "cannot write %s: %s", path, strerror(errno));
  return IM_OK;
}

enum im_err im_results_html(const char *path, const json_t *root, const char *title,
                            enum im_err (*render)(const json_t *, const char *, struct im_buf *),
                            char *msg, size_t msg_len) {
  struct im_buf b;
  im_buf_init(&b, (size_t)1 << 30);
  enum im_err err = render(root, title, &b);
  char tmp[4300];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = err ? NULL : fopen(tmp, "w");
  bool ok = f && fwrite(b.data, 1, b.len, f) == b.len;
  if (f)
    ok = (fclose(f) == 0) && ok;
  ok = ok && rename(tmp, path) == 0;
  im_buf_cleanup(&b);
  if (!ok) {
    int e = errno;
    unlink(tmp);
    if (err)
      return im_errf(msg, msg_len, err, "cannot render the HTML report: %s", im_strerror(err));
    return im_errf(msg, msg_len, IM_IO, "cannot write %s: %s", path, strerror(e));
  }
  return IM_OK;
}

static void iso_time(int64_t wall_ns, char *buf, size_t len) {
  time_t secs = (time_t)(wall_ns / 1000000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* State of one report. */
struct rep {
  const char *dir;
  const struct im_results_opts *ro;
  struct im_verdict *out;
  struct im_rundir rd;
  struct im_summary_config scfg; /* from rd.an; the window is per stage */
  struct im_record *recs;
  size_t n_recs;
  struct im_read_report rr;
  struct im_series_set *series;  /* series.jsonl; NULL when the run wrote none */
  json_t *root, *stages;
  struct sweep_point *pts;
  struct im_sysdesc sys;          /* manifest.json's "system" */
  struct im_valid_check moe_check; /* the stage's moe_balance check ... */
  bool has_moe_check;             /* ... when metrics.moe was collected */
  struct im_roofline_sys rsys;
  char *err;                      /* the caller's message buffer */
  size_t err_len;
};

/* Says why the report stops (the first reason is kept); -1. */
__attribute__((format(printf, 2, 3))) static int fail(struct rep *p, const char *fmt, ...) {
  if (p->err_len && !p->err[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, p->err_len, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* A problem that does not stop the report, to the caller's note callback. */
__attribute__((format(printf, 2, 3))) static void note(struct rep *p, const char *fmt, ...) {
  if (!p->ro->note)
    return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  p->ro->note(p->ro->data, line);
}

static const char *str_at(const json_t *root, const char *a, const char *b, const char *c) {
  const json_t *v = json_object_get(root, a);
  if (b)
    v = json_object_get(v, b);
  if (c)
    v = json_object_get(v, c);
  return json_string_value(v);
}

/* The server's, TCP and GPU figures of a stage from series.jsonl
 * (analyze/scraped.h), into metrics and series. 0, or -1 when out of memory. */
static int server_figures(struct rep *p, const struct im_rundir_stage *s,
                          const struct im_stage_figures *f, const struct im_stage_input *in,
                          double window_tokens, json_t *dst, struct im_server_figures *figs) {
  const struct im_rundir_analysis *an = &p->rd.an;
  const struct im_summary *sum = &f->sum;
  struct im_server_ctx ctx = {
      .t0_mono = s->has_t0 ? s->t0_mono : 0,
      .window_start_ns = in->cfg.window_start_ns,
      .window_end_ns = in->cfg.window_end_ns,
      .client_ttft_p50_ms = NAN,
      .client_ttft_p99_ms = NAN,
      /* Tokens per joule: the tokens that arrived in the window (requests
       * still running too), as the energy is the window's (bench/gpu:
       * completed requests' tokens read 26-72 % low on an H200). */
      .output_tokens = window_tokens,
      .connections_opened = s->connections_opened,
      .attempts = in->n_recs,
      .kv_residency_ref = an->kv_residency_ref,
      .kv_bytes_per_token = an->kv_bytes_per_token,
      .gpu_memory_bytes = an->gpu_memory_bytes,
      .bw_util_ref = an->bw_util_ref,
  };
  if (p->stages) {
    /* A stage's series: from a little before its start (the sample before
     * the load) to its end. */
    ctx.series_from_ns = -an->scrape_interval_ns - 1;
    ctx.series_to_ns = s->elapsed_ns + an->scrape_interval_ns;
  }
  const struct im_hist *ttft = &sum->hist[IM_H_TTFT];
  if (im_hist_count(ttft)) {
    ctx.client_ttft_p50_ms = (double)im_hist_percentile(ttft, 0.5) / 1e6;
    ctx.client_ttft_p99_ms = (double)im_hist_percentile(ttft, 0.99) / 1e6;
  }
  return im_server_figures_compute(p->series, &ctx, figs) != IM_OK ||
                 im_server_json(figs, json_object_get(dst, "metrics"),
                                json_object_get(dst, "series")) != IM_OK
             ? -1
             : 0;
}

/* A setting is declared by --tag KEY=... or by the server's /version
 * "config" (the built-in server declares its own). */
static const char *declared(const json_t *manifest, const char *key) {
  const char *tag = str_at(manifest, "tags", key, NULL);
  if (tag)
    return tag;
  const json_t *cfg = json_object_get(json_object_get(json_object_get(manifest, "server"),
                                                      "version"), "config");
  const json_t *v = json_object_get(cfg, key);
  /* What the engine declared of itself (run/declare.c): its settings under
   * the audit's keys (analyze/validity.h). */
  if (!v)
    v = json_object_get(json_object_get(json_object_get(json_object_get(manifest, "server"),
                                                        "engine"), "settings"), key);
  return json_is_string(v) ? json_string_value(v) : v ? "declared by the server" : NULL;
}

static const char *declared_cb(const void *manifest, const char *key) {
  return declared(manifest, key);
}

/* The publishable audit of a stage: its figures, the manifest, and the
 * server's figures (NULL when the run sampled nothing). */
/* A failing server (exit 6, docs/audit.md "Failing server"): the share of
 * the stage's measured requests that failed, were refused or were aborted,
 * against --max-error-rate. Written as audit.error_rate; the worst stage's
 * counts go to the verdict. Non-zero when out of memory. */
static int stage_error_rate(struct rep *p, const struct im_stage_figures *f,
                            const struct im_rundir_stage *s, json_t *audit) {
  /* --max-error-rate of `report DIR`, else the run's own (its manifest),
   * else the default. */
  double limit = p->ro->max_error_rate > 0  ? p->ro->max_error_rate
                 : p->rd.an.max_error_rate > 0 ? p->rd.an.max_error_rate
                                                : IM_VERDICT_MAX_ERROR_RATE;
  uint64_t bad = f->sum.failed + f->sum.aborted;
  uint64_t n = f->sum.completed + bad;
  double share = n ? (double)bad / (double)n : 0.0;
  bool failing = n && share > limit;
  char classes[160] = "";
  size_t len = 0;
  for (int e = 1; e < IM_EC_COUNT_ && len < sizeof classes; e++)
    if (f->sum.by_error[e] && e != IM_EC_ABORTED)
      len += (size_t)snprintf(classes + len, sizeof classes - len, "%s%s=%llu", len ? " " : "",
                              im_errclass_name((enum im_errclass)e),
                              (unsigned long long)f->sum.by_error[e]);
  if (f->sum.aborted && len < sizeof classes)
    snprintf(classes + len, sizeof classes - len, "%saborted=%llu", len ? " " : "",
             (unsigned long long)f->sum.aborted);
  if (audit) {
    json_t *o = json_object();
    if (!o || json_object_set_new(audit, "error_rate", o) ||
        json_object_set_new(o, "requests", json_integer((json_int_t)n)) ||
        json_object_set_new(o, "failed", json_integer((json_int_t)f->sum.failed)) ||
        json_object_set_new(o, "aborted", json_integer((json_int_t)f->sum.aborted)) ||
        json_object_set_new(o, "share", json_real(share)) ||
        json_object_set_new(o, "limit", json_real(limit)) ||
        json_object_set_new(o, "classes", json_string(classes)) ||
        json_object_set_new(o, "first_error",
                            s->first_error[0] ? json_string(s->first_error) : json_null()) ||
        json_object_set_new(o, "failing", json_boolean(failing)))
      return -1;
  }
  if (failing && (!p->out->failing || share > (double)p->out->failed_n /
                                                  (double)(p->out->requests_n ? p->out->requests_n : 1))) {
    p->out->failing = true;
    p->out->failed_n = bad;
    p->out->requests_n = n;
    p->out->error_limit = limit;
    snprintf(p->out->failed_classes, sizeof p->out->failed_classes, "%s", classes);
    snprintf(p->out->first_error, sizeof p->out->first_error, "%s", s->first_error);
  }
  return 0;
}

static int stage_validity(struct rep *p, const struct im_stage_figures *f,
                          const struct im_stage_input *in, const struct im_rundir_stage *s,
                          const struct im_server_figures *sf, json_t *dst, struct im_validity *v) {
  const json_t *m = p->rd.manifest;
  /* The primary source: the first that is not a DCGM exporter. */
  const struct im_server_source_figs *srv = NULL;
  for (size_t k = 0; sf && k < sf->n_src && !srv; k++)
    srv = sf->src[k].dcgm ? NULL : &sf->src[k];
  char engine[200] = "";
  const char *e = declared(m, "engine");
  const char *ve = str_at(m, "server", "version", "engine");
  const char *vv = str_at(m, "server", "version", "version");
  /* The engine as it identified itself at discovery (run/declare.c). */
  const char *de = str_at(m, "server", "engine", "name");
  const char *dv = str_at(m, "server", "engine", "version");
  const char *mn = srv && srv->n_engines ? srv->engines[0] : NULL;
  if (e)
    snprintf(engine, sizeof engine, "%s", e);
  else if (ve)
    snprintf(engine, sizeof engine, "%s%s%s", ve, vv ? " " : "", vv ? vv : "");
  else if (de)
    snprintf(engine, sizeof engine, "%s%s%s", de, dv ? " " : "", dv ? dv : "");
  else if (mn)
    snprintf(engine, sizeof engine, "%s (from its metric names)", mn);
  /* Whose settings are asked: the first source that names a known engine. */
  enum im_valid_engine eid = im_valid_engine_of(e);
  if (eid == IM_VALID_ENGINE_UNKNOWN)
    eid = im_valid_engine_of(ve);
  if (eid == IM_VALID_ENGINE_UNKNOWN)
    eid = im_valid_engine_of(de);
  if (eid == IM_VALID_ENGINE_UNKNOWN)
    eid = im_valid_engine_of(mn);
  bool have_hr = srv && !srv->not_collected[0] && !isnan(srv->prefix_cache_hit_rate);
  const struct im_server_tcp_figs *tcp = sf && !sf->tcp.not_collected[0] ? &sf->tcp : NULL;
  struct im_validity_input vin = {
      .f = f, .cfg = &in->cfg, .engine = engine, .engine_id = eid, .publish = p->ro->publish,
      .model = str_at(m, "target", "model", NULL), .declared = declared_cb, .declared_ctx = m,
      .server_hit_rate = have_hr ? srv->prefix_cache_hit_rate : NAN,
      .server_hit_rate_why = !srv                    ? "no /metrics scraped"
                             : srv->not_collected[0] ? srv->not_collected
                                                     : "the server exports no prefix-cache counters",
      .time_wait_growing = tcp && tcp->time_wait_growing,
      .server_running_first = srv && srv->n_series ? srv->series[0].requests_running : NAN,
      .server_running_last = srv && srv->n_series ? srv->series[srv->n_series - 1].requests_running : NAN,
      .server_series = srv ? srv->series : NULL, .n_server_series = srv ? srv->n_series : 0,
      .time_wait_slope = tcp ? tcp->time_wait_growth_per_s : NAN,
      .connections_opened = s->connections_opened};
  vin.tls_insecure = json_is_true(
      json_object_get(json_object_get(json_object_get(m, "target"), "transport"), "insecure"));
  /* One of --repeat K runs: the configuration ran K times. */
  json_t *of = json_object_get(json_object_get(m, "repeat"), "of");
  vin.repeats = json_is_integer(of) && json_integer_value(of) > 0 ? (uint32_t)json_integer_value(of) : 1;
  if (im_validity_compute(&vin, v) != IM_OK)
    return -1;
  /* The MoE load skew (docs/deepseek.md), a WARN at most. */
  if (p->has_moe_check && v->n < IM_VALID_MAX_CHECKS)
    v->checks[v->n++] = p->moe_check;
  /* A directory of `infermeter import`: what its source did not record. */
  if (im__results_import_audit(m, v, json_object_get(dst, "audit")))
    return -1;
  /* A merged run: its shards' clock alignment (results/shards.c). */
  if (v->n < IM_VALID_MAX_CHECKS && im__results_clock_check(m, f->sum.itl.mean, &v->checks[v->n]))
    v->n++;
  if (im_validity_json(v, json_object_get(dst, "audit")) != IM_OK)
    return -1;
  p->out->not_publishable |= !v->publishable;
  return 0;
}

/* metrics.moe of a stage from the scraped pages of its measured window
 * (docs/deepseek.md). 0, or -1 when out of memory. */
static int stage_moe(struct rep *p, const struct im_rundir_stage *s,
                     const struct im_stage_input *in, json_t *dst, bool single) {
  /* Reference: balancedness below 0.5 on a layer is a WARN (docs/deepseek.md). */
  const double ref = 0.5;
  struct im_moe_scrape ms;
  uint32_t low[IM_MOE_MAX_LAYERS];
  int64_t t0 = s->has_t0 ? s->t0_mono : INT64_MIN / 4;
  if (im__results_moe_scrapes(p->dir, t0 + in->cfg.window_start_ns, t0 + in->cfg.window_end_ns,
                             &ms))
    return -1;
  size_t n_low = im_moe_scrape_finish(&ms, ref, low, IM_MOE_MAX_LAYERS);
  if (im_moe_scrape_json(&ms, ref, low, n_low, json_object_get(dst, "metrics")) != IM_OK ||
      im_kv_frag_json(&ms, json_object_get(dst, "metrics")) != IM_OK)
    return -1;
  if (p->ro->text && single && !p->ro->audit_only)
    im_moe_scrape_text(p->ro->text, &ms, ref, low, n_low);
  p->has_moe_check = im_moe_audit_check(&ms, ref, low, n_low, &p->moe_check);
  /* The code/text mix check rides along (docs/deepseek.md). */
  struct im_class_mix mix;
  if (im_mix_compute(in->recs, in->n_recs, in->cfg.window_start_ns, in->cfg.window_end_ns,
                     &mix) != IM_OK ||
      im_mix_json(&mix, json_object_get(dst, "metrics")) != IM_OK)
    return -1;
  if (p->ro->text && single && !p->ro->audit_only)
    im_mix_text(p->ro->text, &mix);
  return 0;
}

/* analysis.timeline: the slowest requests (analyze/timeline.h). 0 or -1
 * when out of memory. */
static int timeline_json(const struct im_stage_figures *f, const struct im_stage_input *in,
                         json_t *dst) {
  struct im_timeline tl;
  json_t *an = json_object_get(dst, "analysis"), *j = NULL;
  if (im_timeline_compute(&f->pop, IM_TIMELINE_REQUESTS, in->tokens.stall_k, &tl) != IM_OK ||
      !an || !(j = im_timeline_json(&tl)))
    return -1;
  return json_object_set_new(an, "timeline", j) ? -1 : 0;
}

/* Figures and JSON of stage i. 0 or -1 (said). */
static int report_stage(struct rep *p, size_t i, bool single) {
  struct im_rundir_stage *s = &p->rd.st[i];
  size_t n = 0;
  struct im_record *copy = NULL;
  const struct im_record *recs = stage_records(p->recs, p->n_recs, (uint32_t)i, &n, &copy);
  struct im_stage_figures f;
  struct im_server_figures sf;
  int rc = -1;
  memset(&f, 0, sizeof f);
  memset(&sf, 0, sizeof sf);
  if (!recs) {
    return fail(p, "out of memory");
  }
  if (!s->ended || s->error[0])
    derive_counters(s, recs, n);
  struct im_stage_input in = {.recs = recs, .n_recs = n, .cfg = p->scfg,
                              .slo_target = p->rd.an.slo_target, .counters = s->counters,
                              .samples = s->samples, .n_samples = s->n_samples,
                              .threads = s->threads ? s->threads : 1,
                              .receive_lag = s->has_receive_lag ? &s->receive_lag : NULL,
                              .host = s->has_host ? &s->host : NULL,
                              .timeslice_ns = p->rd.an.timeslice_ns};
  im_tokens_config_default(&in.tokens);
  if (p->rd.an.segment_window)
    in.tokens.window = p->rd.an.segment_window;
  if (p->rd.an.segment_stride)
    in.tokens.stride = p->rd.an.segment_stride;
  if (p->rd.an.stall_k > 1)
    in.tokens.stall_k = p->rd.an.stall_k;
  im_stage_window(recs, n, &s->rule, &in.cfg.window_start_ns, &in.cfg.window_end_ns);
  if (im_stage_analyze(&in, &f) != IM_OK) {
    fail(p, "stage %zu: out of memory computing its figures", i);
    goto out;
  }
  f.check.not_judged = im__results_import_unscheduled(p->rd.manifest);
  json_t *dst = p->root;
  if (p->stages) {
    dst = json_pack("{s:I, s:s, s:O?}", "index", (json_int_t)i, "label", s->label, "params",
                    s->params ? s->params : NULL);
    if (!dst || json_array_append_new(p->stages, dst))
      goto oom;
  }
  struct im_stage_meta meta = {.t0_mono = s->has_t0 ? s->t0_mono : -1,
                               .elapsed_ns = s->elapsed_ns, .by_class = s->by_class,
                               .sessions = s->sessions};
  if (im_stage_json(&f, &in, &meta, dst) ||
      json_object_set_new(dst, "interrupted", json_boolean(s->rule.interrupted)) ||
      json_object_set_new(dst, "error", s->error[0] ? json_string(s->error) : json_null()) ||
      timeline_json(&f, &in, dst))
    goto oom;
  struct im_roofline rl;
  enum im_err re = im_roofline_compute(&p->rsys, recs, n, in.cfg.window_start_ns,
                                       in.cfg.window_end_ns, &rl);
  double window_tokens =
      re == IM_OK && isfinite(rl.output_tok_s)
          ? rl.output_tok_s * (double)(in.cfg.window_end_ns - in.cfg.window_start_ns) / 1e9
          : f.sum.window_output_tok_rate * f.sum.window_s;
  if (p->series && server_figures(p, s, &f, &in, window_tokens, dst, &sf)) {
    im_roofline_cleanup(&rl);
    goto oom;
  }
  if (re == IM_OK)
    re = im_roofline_json(&rl, p->series && !sf.gpu.not_available[0] ? sf.gpu.dram_bw_util_mean
                                                                     : NAN,
                          !p->series ? "no observer samples (series.jsonl)"
                          : sf.gpu.not_available[0] ? sf.gpu.not_available
                                                    : "no DRAM counter sampled",
                          json_object_get(dst, "metrics"));
  if (re == IM_OK && p->ro->text && single && !p->ro->audit_only)
    im_roofline_text(p->ro->text, &rl);
  json_t *in_len = s->params ? json_object_get(s->params, "input_len") : NULL;
  p->pts[i].knee = (struct im_knee_point){
      .stage = i, .input_len = json_is_number(in_len) ? json_number_value(in_len) : NAN,
      .context_mean = rl.context_mean, .decode_tok_s = rl.decode_tok_s > 0 ? rl.decode_tok_s : NAN,
      .bound = rl.sys->model && rl.sys->hw && rl.decode_tok_s > 0 ? rl.pred.bandwidth_bound : -1};
  im_roofline_cleanup(&rl);
  if (re != IM_OK || stage_moe(p, s, &in, dst, single))
    goto oom;
  struct im_causes causes;
  struct im_causes_input cin = {.f = &f, .cfg = &in.cfg, .slo_target = in.slo_target,
                                .server = p->series ? &sf : NULL};
  if (im_causes_compute(&cin, &causes) != IM_OK || im_causes_json(&causes, dst) != IM_OK)
    goto oom;
  struct im_validity val;
  if (stage_validity(p, &f, &in, s, p->series ? &sf : NULL, dst, &val))
    goto oom;
  bool unreachable = f.sum.completed == 0 && n && !strncmp(s->first_error, "connect", 7);
  p->out->unreachable = i == 0 ? unreachable : p->out->unreachable && unreachable;
  p->out->invalid |= !f.check.valid;
  if (stage_error_rate(p, &f, s, json_object_get(dst, "audit")))
    goto oom;
  p->out->interrupted |= s->rule.interrupted;
  if (!p->rd.an.rate_sweep)
    p->out->slo_failed |= f.slo_failed;
  json_t *rate = s->params ? json_object_get(s->params, "rate") : NULL;
  p->pts[i] = (struct sweep_point){json_is_number(rate) ? json_number_value(rate) : NAN,
                                   f.sum.slo_all_attain, f.sum.request_throughput,
                                   f.sat_judged && f.sat.growing, p->pts[i].knee};
  FILE *t = p->ro->text;
  if (t && p->ro->audit_only) {
    if (!single)
      fprintf(t, "stage %zu %s\n", i, s->label);
    im_validity_text(t, &val, true);
  } else if (t && single) {
    im_report_text(t, &f.sum, &in.cfg, &f.check);
    if (p->series) /* the server's own view, when its /metrics was scraped */
      im_server_text(t, &sf, f.sum.window_s);
    im_breakdown_text(t, &f.bd, s->by_class);
    im_reasoning_text(t, &f.reasoning);
    im_agents_text(t, &f.agents);
    im_cancel_text(t, &f.cancel);
    im_models_text(t, &f.models);
    im_targets_text(t, &f.targets, json_object_get(json_object_get(p->rd.manifest, "target"), "urls"));
    im_analysis_text(t, &f, &in.cfg);
    im_causes_text(t, &causes);
    im_validity_text(t, &val, false);
    if (s->first_error[0] && f.sum.failed)
      fprintf(t, "First error: %s\n", s->first_error);
  } else if (t && p->ro->stage_lines) {
    im_report_stage_line(t, i, s->label, &f, &in.cfg);
  }
  rc = 0;
  goto out;
oom:
  fail(p, "out of memory writing the results");
out:
  im_server_figures_cleanup(&sf);
  im_stage_figures_cleanup(&f);
  free(copy);
  return rc;
}

/* results.json's manifest: manifest.json and what the stages told. */
static int add_manifest(struct rep *p, size_t n_stages) {
  json_t *m = json_deep_copy(p->rd.manifest);
  const struct im_rundir_stage *s0 = p->rd.n_st ? &p->rd.st[0] : NULL;
  if (!m)
    return -1;
  if (s0 && s0->has_t0 && s0->wall_start_ns >= 0) {
    char ts[64];
    iso_time(s0->wall_start_ns, ts, sizeof ts);
    json_object_set_new(m, "started_at", json_string(ts));
  }
  /* Record times are relative to this CLOCK_MONOTONIC instant (per stage:
   * stages[].t0_monotonic_ns); with it they join a server's truth log on
   * the same machine. */
  json_object_set_new(m, "t0_monotonic_ns",
                      s0 && s0->has_t0 ? json_integer(s0->t0_mono) : json_null());
  json_object_set_new(m, "interrupted", json_boolean(p->out->interrupted));
  json_object_set_new(m, "stages", json_integer((json_int_t)n_stages));
  json_t *in = json_pack("{s:I, s:I, s:b, s:I}", "requests_lines", (json_int_t)p->rr.lines,
                         "requests_skipped", (json_int_t)p->rr.bad, "requests_truncated_tail",
                         p->rr.truncated_tail, "stages_lines_skipped",
                         (json_int_t)p->rd.bad_lines);
  json_t *notes = json_array();
  for (size_t i = 0; notes && i < p->rr.n_notes; i++)
    json_array_append_new(notes, json_string(p->rr.notes[i]));
  if (in && notes)
    json_object_set_new(in, "notes", notes);
  else
    json_decref(notes);
  json_object_set_new(m, "input", in);
  return json_object_set_new(p->root, "manifest", m);
}

/* A context sweep (stages that set input_len): results.json's
 * "bandwidth_knee" (docs/deepseek.md). 0, or -1 when out of memory. */
static int knee_json(struct rep *p, size_t n_stages) {
  struct im_knee_point pts[IM_KNEE_MAX_POINTS];
  size_t n = 0;
  for (size_t i = 0; i < n_stages && n < IM_KNEE_MAX_POINTS; i++)
    if (!isnan(p->pts[i].knee.input_len))
      pts[n++] = p->pts[i].knee;
  if (n < 2)
    return 0;
  const double drop = 0.15; /* docs/metrics.md §9 */
  struct im_knee k;
  im_knee_compute(pts, n, drop,
                  p->sys.has_model ? im_model_kv_bytes_per_token(&p->sys.model) : 0, &k);
  json_t *j = im_knee_json(pts, n, drop, &k);
  if (!j || json_object_set_new(p->root, "bandwidth_knee", j))
    return -1;
  if (p->ro->text && !p->ro->audit_only)
    im_knee_text(p->ro->text, pts, drop, &k);
  return 0;
}

static int report_all(struct rep *p) {
  char err[512];
  if (im_rundir_read(p->dir, &p->rd, err, sizeof err)) {
    return fail(p, "%s", err);
  }
  const struct im_rundir_analysis *an = &p->rd.an;
  im_sysdesc_from_json(json_object_get(p->rd.manifest, "system"), &p->sys);
  p->rsys = (struct im_roofline_sys){
      .model = p->sys.has_model ? &p->sys.model : NULL, .hw = p->sys.has_hw ? &p->sys.hw : NULL,
      .gpus = p->sys.gpus, .tp = p->sys.tp, .dp = p->sys.dp,
      .kv_bytes_per_token_per_gpu = p->sys.kv_bytes_per_token_per_gpu,
      .gpu_memory_bytes = p->sys.gpu_memory_bytes, .bw_util_ref = an->bw_util_ref,
      .mfu_ref = p->sys.mfu_ref > 0 ? p->sys.mfu_ref : 0.32,
      .kv_residency_ref = an->kv_residency_ref};
  im_summary_config_default(&p->scfg);
  p->scfg.n_percentiles = an->n_percentiles;
  memcpy(p->scfg.percentiles, an->percentiles, sizeof an->percentiles);
  p->scfg.pct_metrics = an->pct_metrics;
  p->scfg.has_slo_ttft = an->has_slo_ttft;
  p->scfg.has_slo_tpot = an->has_slo_tpot;
  p->scfg.has_slo_e2el = an->has_slo_e2el;
  p->scfg.slo_ttft_ms = an->slo_ttft_ms;
  p->scfg.slo_tpot_ms = an->slo_tpot_ms;
  p->scfg.slo_e2el_ms = an->slo_e2el_ms;
  char path[4200];
  snprintf(path, sizeof path, "%s/requests.jsonl", p->dir);
  enum im_err e = im_records_read_path(path, &p->recs, &p->n_recs, &p->rr);
  if (e == IM_NOMEM || e == IM_INVAL || (e == IM_IO && errno != ENOENT)) {
    return fail(p, "%s: %s", path,
                e == IM_NOMEM ? "out of memory"
                : e == IM_INVAL ? "not a regular file: no records can be read from it"
                                : strerror(errno));
  }
  for (size_t i = 0; i < p->rr.n_notes; i++)
    note(p, "%s: %s", path, p->rr.notes[i]);
  /* The observers' samples; a run without observers has none. */
  snprintf(path, sizeof path, "%s/series.jsonl", p->dir);
  char why[256] = "";
  if (access(path, F_OK) == 0 && im_series_read(path, &p->series, why, sizeof why) != IM_OK) {
    return fail(p, "%s: %s", path, why[0] ? why : "cannot be read");
  }
  p->out->read_problems = p->rr.bad || p->rd.bad_lines;
  /* Stages: those the run started, and any that left records. */
  size_t n_stages = p->rd.n_st;
  for (size_t i = 0; i < p->n_recs; i++)
    if (p->recs[i].stage >= n_stages && p->recs[i].stage < 100000)
      n_stages = p->recs[i].stage + 1;
  if (n_stages > p->rd.n_st) {
    struct im_rundir_stage *v = realloc(p->rd.st, n_stages * sizeof *v);
    if (!v)
      return -1;
    for (size_t i = p->rd.n_st; i < n_stages; i++) {
      memset(&v[i], 0, sizeof v[i]);
      v[i].t0_mono = v[i].wall_start_ns = -1;
      v[i].threads = 1;
    }
    p->rd.st = v;
    p->rd.n_st = n_stages;
  }
  if (!(p->pts = calloc(n_stages ? n_stages : 1, sizeof *p->pts)) || !(p->root = json_object()))
    return -1;
  json_object_set_new(p->root, "schema", json_string("infermeter/results/v1"));
  if (p->rd.an.stages_planned > 1) {
    p->stages = json_array();
    if (!p->stages || json_object_set_new(p->root, "stages", p->stages))
      return -1;
  }
  for (size_t i = 0; i < n_stages; i++)
    if (report_stage(p, i, p->stages == NULL))
      return -1;
  p->out->stages = n_stages;
  p->out->interrupted |= !p->rd.run_ended || p->rd.run_interrupted;
  p->out->invalid |= im__results_shards_invalid(p->rd.manifest, p->ro->text); /* results/shards.c */
  if (p->rd.an.rate_sweep) {
    bool has_point = false;
    json_t *sw = sweep_json(&p->rd, &p->scfg, p->pts, n_stages, p->ro->text, &has_point);
    if (!sw || json_object_set_new(p->root, "sweep", sw))
      return -1;
    p->out->slo_failed |= !has_point;
  }
  if (n_stages > 1 && knee_json(p, n_stages))
    return -1;
  if (add_manifest(p, n_stages))
    return -1;
  char ts[64];
  iso_time(im_wall_ns(), ts, sizeof ts);
  json_object_set_new(p->root, "generated_at", json_string(ts));
  if (p->ro->audit_only)
    return 0;
  if (write_results(p->dir, p->root, p->err, p->err_len))
    return -1;
  if (p->ro->csv && im_results_csv(p->dir, p->root, p->err, p->err_len))
    return -1;
  if (p->ro->json && im_results_summary_json(p->ro->json, p->root, p->err, p->err_len))
    return -1;
  if (p->ro->no_html)
    return 0;
  char hpath[4200];
  if (!p->ro->html)
    snprintf(hpath, sizeof hpath, "%s/report.html", p->dir);
  return im_results_html(p->ro->html ? p->ro->html : hpath, p->root, p->dir, im_html_report,
                         p->err, p->err_len)
             ? -1
             : 0;
}

enum im_err im_results_dir(const char *dir, const struct im_results_opts *ro,
                           struct im_verdict *out, char *err, size_t err_len) {
  struct rep p = {.dir = dir, .ro = ro, .out = out, .err = err, .err_len = err_len};
  memset(out, 0, sizeof *out);
  if (err_len)
    err[0] = '\0';
  out->publish = ro->publish;
  int rc = report_all(&p);
  if (rc)
    fail(&p, "out of memory");
  im_rundir_free(&p.rd);
  im_records_free(p.recs, p.n_recs);
  im_series_free(p.series);
  json_decref(p.root);
  free(p.pts);
  return rc ? IM_IO : IM_OK;
}

