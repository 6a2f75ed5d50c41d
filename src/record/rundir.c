/* The run directory's manifest and stage events: see record/rundir.h. */
#include "record/rundir.h"
#include "record/json_get.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/hist_json.h"
#include "record/reader.h"

/* ---- writing */

int im_rundir_write_manifest(const char *dir, json_t *manifest,
                             const struct im_rundir_analysis *an) {
  json_t *m = json_deep_copy(manifest), *pct = json_array();
  if (!m || !pct) {
    json_decref(m);
    json_decref(pct);
    errno = ENOMEM;
    return -1;
  }
  for (size_t i = 0; i < an->n_percentiles && i < IM_RUNDIR_MAX_PERCENTILES; i++)
    json_array_append_new(pct, json_real(an->percentiles[i]));
  json_t *a = json_pack("{s:o, s:o?, s:o?, s:o?, s:f, s:I, s:b, s:b, s:f, s:f, s:f, s:f, s:I}",
                        "percentiles", pct,
                        "slo_ttft_ms", an->has_slo_ttft ? json_real(an->slo_ttft_ms) : NULL,
                        "slo_tpot_ms", an->has_slo_tpot ? json_real(an->slo_tpot_ms) : NULL,
                        "slo_e2el_ms", an->has_slo_e2el ? json_real(an->slo_e2el_ms) : NULL,
                        "slo_target", an->slo_target, "stages_planned",
                        (json_int_t)an->stages_planned, "rate_sweep", an->rate_sweep,
                        "autosweep", an->autosweep, "kv_residency_ref", an->kv_residency_ref,
                        "bw_util_ref", an->bw_util_ref, "kv_bytes_per_token",
                        an->kv_bytes_per_token, "gpu_memory_bytes", an->gpu_memory_bytes,
                        "scrape_interval_ns", (json_int_t)an->scrape_interval_ns);
  if (a && an->pct_metrics)
    json_object_set_new(a, "percentile_metrics", json_integer(an->pct_metrics));
  if (a && ((an->segment_window &&
              json_object_set_new(a, "segment_window", json_integer(an->segment_window))) ||
             (an->segment_stride &&
              json_object_set_new(a, "segment_stride", json_integer(an->segment_stride))) ||
             (an->stall_k > 0 && json_object_set_new(a, "stall_k", json_real(an->stall_k))) ||
             (an->timeslice_ns > 0 &&
              json_object_set_new(a, "timeslice_ns", json_integer(an->timeslice_ns))) ||
             (an->max_error_rate > 0 &&
              json_object_set_new(a, "max_error_rate", json_real(an->max_error_rate))))) {
    json_decref(a);
    a = NULL;
  }
  if (!a || json_object_set_new(m, "analysis", a)) {
    json_decref(m);
    errno = ENOMEM;
    return -1;
  }
  char path[4200], tmp[4300];
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int rc = json_dump_file(m, tmp, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) == 0 &&
                   rename(tmp, path) == 0
               ? 0
               : -1;
  json_decref(m);
  return rc;
}

int im_rundir_append(int fd, json_t *line) {
  char *s = line ? json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
  json_decref(line);
  if (!s) {
    errno = ENOMEM;
    return -1;
  }
  size_t len = strlen(s);
  s[len] = '\n'; /* json_dumps's NUL: replaced, written with the line */
  ssize_t w = write(fd, s, len + 1);
  free(s);
  if (w != (ssize_t)(len + 1)) {
    if (w >= 0)
      errno = ENOSPC;
    return -1;
  }
  return 0;
}

json_t *im_rundir_start_json(size_t stage, const char *label, json_t *params,
                              const struct im_window_rule *rule, uint32_t threads, bool by_class,
                              bool sessions) {
  json_t *ev = json_pack("{s:s, s:I, s:s, s:O?, s:{s:I, s:b, s:b, s:I}, s:I, s:b, s:b}", "event",
                         "start", "stage", (json_int_t)stage, "label", label ? label : "",
                         "params", params, "rule", "warmup_ns", (json_int_t)rule->warmup_ns,
                         "warmup_by_requests", rule->warmup_by_requests, "closed", rule->closed,
                         "duration_ns", (json_int_t)rule->duration_ns, "threads",
                         (json_int_t)threads, "by_class", by_class, "sessions", sessions);
  /* Only a burst says so: the start events of other stages stay as they were. */
  if (ev && rule->burst &&
      json_object_set_new(json_object_get(ev, "rule"), "burst", json_true())) {
    json_decref(ev);
    return NULL;
  }
  return ev;
}

json_t *im_rundir_t0_json(size_t stage, int64_t t0_mono, int64_t wall_start_ns) {
  return json_pack("{s:s, s:I, s:I, s:I}", "event", "t0", "stage", (json_int_t)stage,
                   "t0_monotonic_ns", (json_int_t)t0_mono, "wall_start_ns",
                   (json_int_t)wall_start_ns);
}

json_t *im_rundir_end_json(size_t stage, int64_t elapsed_ns, bool interrupted,
                            const struct im_client_counters *k, uint64_t connections_opened,
                            const char *first_error, const struct im_client_sample *samples,
                            size_t n_samples) {
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < n_samples; i++) {
    const struct im_client_sample *s = &samples[i];
    /* NaN (not measured) as null: jansson refuses NaN. */
    json_array_append_new(arr, json_pack("[I, I, o, o, I]", (json_int_t)s->thread, (json_int_t)s->t,
                                         isfinite(s->cpu_share) ? json_real(s->cpu_share) : json_null(),
                                         isfinite(s->lag_max_ms) ? json_real(s->lag_max_ms) : json_null(),
                                         (json_int_t)s->in_flight));
  }
  return json_pack("{s:s, s:I, s:I, s:b, s:I, s:I, s:f, s:I, s:I, s:I, s:s, s:o}", "event", "end",
                   "stage", (json_int_t)stage, "elapsed_ns", (json_int_t)elapsed_ns, "interrupted",
                   interrupted, "scheduled", (json_int_t)k->scheduled, "dispatched",
                   (json_int_t)k->dispatched, "cpu_share", isfinite(k->cpu_share) ? k->cpu_share : 0.0, "fd_exhausted",
                   (json_int_t)k->fd_exhausted, "port_exhausted", (json_int_t)k->port_exhausted,
                   "connections_opened", (json_int_t)connections_opened, "first_error",
                   first_error ? first_error : "", "samples", arr);
}

json_t *im_rundir_run_end_json(bool stopped_early, bool interrupted) {
  return json_pack("{s:s, s:b, s:b}", "event", "run_end", "stopped_early", stopped_early,
                   "interrupted", interrupted);
}

json_t *im_rundir_host_json(const struct im_hostlat *h) {
  json_t *bounds = json_array(), *over = json_array(), *stalls = json_array();
  for (int i = 0; bounds && over && i < IM_HOSTLAT_NBOUNDS; i++)
    if (json_array_append_new(bounds, json_integer(im_hostlat_bounds_ns[i])) ||
        json_array_append_new(over, json_integer((json_int_t)h->over[i]))) {
      json_decref(stalls);
      stalls = NULL;
    }
  for (uint32_t i = 0; stalls && i < h->n_stalls; i++)
    if (json_array_append_new(stalls, json_pack("[I, I]", (json_int_t)h->stalls[i].t,
                                                (json_int_t)h->stalls[i].late_ns))) {
      json_decref(stalls);
      stalls = NULL;
    }
  if (!bounds || !over || !stalls) {
    json_decref(bounds);
    json_decref(over);
    json_decref(stalls);
    return NULL;
  }
  return json_pack("{s:I, s:I, s:o, s:o, s:I, s:I, s:o}", "period_ns", (json_int_t)h->period_ns,
                   "wakes", (json_int_t)h->wakes, "over_ns", bounds, "over", over, "max_ns",
                   (json_int_t)h->max_ns, "stalls_total", (json_int_t)h->stalls_total, "stalls",
                   stalls);
}

enum im_err im_rundir_host_from_json(const json_t *j, struct im_hostlat *h) {
  memset(h, 0, sizeof *h);
  json_t *wakes = json_object_get(j, "wakes"), *bounds = json_object_get(j, "over_ns"),
         *over = json_object_get(j, "over"), *stalls = json_object_get(j, "stalls");
  if (!json_is_object(j) || !json_is_integer(wakes) || json_integer_value(wakes) < 0)
    return IM_PARSE;
  im_hostlat_init(h, (int64_t)json_integer_value(json_object_get(j, "period_ns")));
  h->wakes = (uint64_t)json_integer_value(wakes);
  h->max_ns = (int64_t)json_integer_value(json_object_get(j, "max_ns"));
  /* Counts by bound, matched by value: a file of a version with other
   * bounds keeps the ones both know (the others stay 0). */
  for (size_t i = 0; i < json_array_size(bounds) && i < json_array_size(over); i++) {
    json_int_t b = json_integer_value(json_array_get(bounds, i));
    for (int k = 0; k < IM_HOSTLAT_NBOUNDS; k++)
      if (im_hostlat_bounds_ns[k] == b)
        h->over[k] = (uint64_t)json_integer_value(json_array_get(over, i));
  }
  size_t n = json_array_size(stalls);
  if (n > IM_HOSTLAT_MAX_STALLS)
    n = IM_HOSTLAT_MAX_STALLS;
  if (n && !(h->stalls = calloc(n, sizeof *h->stalls)))
    return IM_NOMEM;
  h->cap_stalls = (uint32_t)n;
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(stalls, i);
    if (!json_is_array(e) || json_array_size(e) != 2)
      continue;
    h->stalls[h->n_stalls++] = (struct im_host_stall){
        (int64_t)json_integer_value(json_array_get(e, 0)),
        (int64_t)json_integer_value(json_array_get(e, 1))};
  }
  int64_t total = (int64_t)json_integer_value(json_object_get(j, "stalls_total"));
  h->stalls_total = total > (int64_t)h->n_stalls ? (uint64_t)total : h->n_stalls;
  return IM_OK;
}

/* ---- reading */

static int read_analysis(struct im_rundir *rd, const json_t *a, char *err, size_t errlen) {
  static const double def[] = {50, 90, 95, 99, 99.9};
  struct im_rundir_analysis *an = &rd->an;
  memcpy(an->percentiles, def, sizeof def);
  an->n_percentiles = sizeof def / sizeof def[0];
  an->slo_target = 0.99;
  an->stages_planned = 1;
  if (!json_is_object(a)) {
    snprintf(err, errlen, "manifest.json has no \"analysis\" object");
    return -1;
  }
  json_t *pct = json_object_get(a, "percentiles");
  if (json_is_array(pct) && json_array_size(pct) && json_array_size(pct) <= IM_RUNDIR_MAX_PERCENTILES) {
    an->n_percentiles = json_array_size(pct);
    for (size_t i = 0; i < an->n_percentiles; i++)
      an->percentiles[i] = json_number_value(json_array_get(pct, i));
  }
  json_t *pm = json_object_get(a, "percentile_metrics");
  an->pct_metrics = json_is_integer(pm) ? (unsigned)json_integer_value(pm) & 15u : 0;
  const char *keys[3] = {"slo_ttft_ms", "slo_tpot_ms", "slo_e2el_ms"};
  bool *has[3] = {&an->has_slo_ttft, &an->has_slo_tpot, &an->has_slo_e2el};
  double *val[3] = {&an->slo_ttft_ms, &an->slo_tpot_ms, &an->slo_e2el_ms};
  for (int i = 0; i < 3; i++) {
    json_t *v = json_object_get(a, keys[i]);
    *has[i] = json_is_number(v);
    *val[i] = *has[i] ? json_number_value(v) : 0;
  }
  an->slo_target = im_json_num_of(a, "slo_target", 0.99);
  int64_t sp = im_json_int_of(a, "stages_planned", 1);
  an->stages_planned = sp > 0 ? (size_t)sp : 1;
  an->rate_sweep = im_json_true_of(a, "rate_sweep");
  an->autosweep = im_json_true_of(a, "autosweep");
  an->kv_residency_ref = im_json_num_of(a, "kv_residency_ref", 0.68);
  an->bw_util_ref = im_json_num_of(a, "bw_util_ref", 0.78);
  an->kv_bytes_per_token = im_json_num_of(a, "kv_bytes_per_token", 0);
  an->gpu_memory_bytes = im_json_num_of(a, "gpu_memory_bytes", 0);
  an->scrape_interval_ns = im_json_int_of(a, "scrape_interval_ns", 1000000000);
  int64_t w = im_json_int_of(a, "segment_window", 0), st = im_json_int_of(a, "segment_stride", 0);
  an->segment_window = w > 0 && w <= 1000000 ? (uint32_t)w : 0;
  an->segment_stride = st > 0 && st <= 1000000 ? (uint32_t)st : 0;
  double k = im_json_num_of(a, "stall_k", 0);
  an->stall_k = k > 1 ? k : 0;
  int64_t ts = im_json_int_of(a, "timeslice_ns", 0);
  an->timeslice_ns = ts > 0 ? ts : 0;
  double mer = im_json_num_of(a, "max_error_rate", 0);
  an->max_error_rate = mer > 0 && mer <= 1 ? mer : 0;
  return 0;
}

static struct im_rundir_stage *stage_at(struct im_rundir *rd, int64_t i) {
  if (i < 0 || i > 100000)
    return NULL;
  while ((size_t)i >= rd->n_st) {
    struct im_rundir_stage *v = realloc(rd->st, (rd->n_st + 1) * sizeof *v);
    if (!v)
      return NULL;
    rd->st = v;
    memset(&rd->st[rd->n_st], 0, sizeof *rd->st);
    rd->st[rd->n_st].t0_mono = rd->st[rd->n_st].wall_start_ns = -1;
    rd->st[rd->n_st].threads = 1;
    rd->n_st++;
  }
  return &rd->st[i];
}

static int read_samples(struct im_rundir_stage *s, const json_t *arr) {
  size_t n = json_array_size(arr);
  if (!n)
    return 0;
  if (!(s->samples = calloc(n, sizeof *s->samples)))
    return -1;
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(arr, i);
    if (!json_is_array(e) || json_array_size(e) != 5)
      continue;
    struct im_client_sample *c = &s->samples[s->n_samples++];
    c->thread = (uint32_t)json_integer_value(json_array_get(e, 0));
    c->t = (int64_t)json_integer_value(json_array_get(e, 1));
    json_t *cpu = json_array_get(e, 2), *lag = json_array_get(e, 3);
    c->cpu_share = json_is_number(cpu) ? json_number_value(cpu) : NAN;
    c->lag_max_ms = json_is_number(lag) ? json_number_value(lag) : NAN;
    c->in_flight = (uint32_t)json_integer_value(json_array_get(e, 4));
  }
  return 0;
}

/* One stages.jsonl event; -1 only when out of memory. */
int im_rundir_apply_event(struct im_rundir *rd, const json_t *ev) {
  const char *kind = json_string_value(json_object_get(ev, "event"));
  if (!kind)
    return 1;
  if (!strcmp(kind, "run_end")) {
    rd->run_ended = true;
    rd->stopped_early = im_json_true_of(ev, "stopped_early");
    rd->run_interrupted = im_json_true_of(ev, "interrupted");
    return 0;
  }
  struct im_rundir_stage *s = stage_at(rd, im_json_int_of(ev, "stage", -1));
  if (!s)
    return 1;
  if (!strcmp(kind, "start")) {
    const json_t *rule = json_object_get(ev, "rule");
    s->started = true;
    const char *label = json_string_value(json_object_get(ev, "label"));
    snprintf(s->label, sizeof s->label, "%s", label ? label : "");
    json_t *p = json_object_get(ev, "params");
    json_decref(s->params);
    s->params = json_is_object(p) ? json_incref(p) : NULL;
    s->rule.warmup_ns = im_json_int_of(rule, "warmup_ns", 0);
    s->rule.warmup_by_requests = im_json_true_of(rule, "warmup_by_requests");
    s->rule.closed = im_json_true_of(rule, "closed");
    s->rule.duration_ns = im_json_int_of(rule, "duration_ns", 0);
    s->rule.burst = im_json_true_of(rule, "burst");
    s->threads = (uint32_t)im_json_int_of(ev, "threads", 1);
    s->by_class = im_json_true_of(ev, "by_class");
    s->sessions = im_json_true_of(ev, "sessions");
  } else if (!strcmp(kind, "t0")) {
    s->has_t0 = true;
    s->t0_mono = im_json_int_of(ev, "t0_monotonic_ns", -1);
    s->wall_start_ns = im_json_int_of(ev, "wall_start_ns", -1);
  } else if (!strcmp(kind, "end")) {
    s->ended = true;
    s->elapsed_ns = im_json_int_of(ev, "elapsed_ns", 0);
    s->rule.interrupted = im_json_true_of(ev, "interrupted");
    s->rule.elapsed_ns = s->elapsed_ns;
    s->counters.scheduled = (uint64_t)im_json_int_of(ev, "scheduled", 0);
    s->counters.dispatched = (uint64_t)im_json_int_of(ev, "dispatched", 0);
    s->counters.cpu_share = im_json_num_of(ev, "cpu_share", 0);
    s->counters.fd_exhausted = (uint64_t)im_json_int_of(ev, "fd_exhausted", 0);
    s->counters.port_exhausted = (uint64_t)im_json_int_of(ev, "port_exhausted", 0);
    s->connections_opened = (uint64_t)im_json_int_of(ev, "connections_opened", 0);
    const char *fe = json_string_value(json_object_get(ev, "first_error"));
    snprintf(s->first_error, sizeof s->first_error, "%s", fe ? fe : "");
    const char *er = json_string_value(json_object_get(ev, "error"));
    snprintf(s->error, sizeof s->error, "%s", er ? er : "");
    free(s->samples);
    s->samples = NULL;
    s->n_samples = 0;
    if (read_samples(s, json_object_get(ev, "samples")))
      return -1;
    if (s->has_receive_lag)
      im_hist_cleanup(&s->receive_lag);
    s->has_receive_lag =
        im_hist_from_json(&s->receive_lag, json_object_get(ev, "receive_lag")) == IM_OK;
    /* The host probe's figures (absent before it was recorded: not measured). */
    im_hostlat_cleanup(&s->host);
    enum im_err he = im_rundir_host_from_json(json_object_get(ev, "host"), &s->host);
    if (he == IM_NOMEM)
      return -1;
    s->has_host = he == IM_OK;
  } else {
    return 1;
  }
  return 0;
}

static int read_stages(struct im_rundir *rd, const char *dir, char *err, size_t errlen) {
  char path[4200];
  snprintf(path, sizeof path, "%s/stages.jsonl", dir);
  FILE *f = fopen(path, "rb");
  if (!f)
    return 0; /* killed before the first stage started: no stage */
  struct stat st; /* only a regular file ends: a device may read forever */
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    snprintf(err, errlen, "%s is not a regular file", path);
    return -1;
  }
  struct im_jsonl_reader *r = NULL;
  int rc = -1;
  if (im_jsonl_open(f, (size_t)64 << 20, &r) != IM_OK) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  for (;;) {
    const char *line;
    size_t len;
    uint64_t no;
    enum im_err e = im_jsonl_next(r, &line, &len, &no);
    if (e == IM_NOTFOUND)
      break;
    if (e == IM_IO) {
      snprintf(err, errlen, "%s: read error", path);
      goto out;
    }
    json_t *ev = e == IM_OK ? json_loadb(line, len, 0, NULL) : NULL;
    int a = ev ? im_rundir_apply_event(rd, ev) : 1;
    json_decref(ev);
    if (a < 0) {
      snprintf(err, errlen, "out of memory");
      goto out;
    }
    rd->bad_lines += a > 0;
  }
  rc = 0;
out:
  im_jsonl_close(r);
  fclose(f);
  return rc;
}

int im_rundir_read(const char *dir, struct im_rundir *rd, char *err, size_t errlen) {
  memset(rd, 0, sizeof *rd);
  char path[4200];
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  json_error_t je;
  rd->manifest = json_load_file(path, 0, &je);
  if (!rd->manifest) {
    if (access(path, F_OK) != 0)
      snprintf(err, errlen, "%s has no manifest.json: not a directory written by infermeter run "
                            "(or the run stopped before it began)", dir);
    else
      snprintf(err, errlen, "%s:%d: %s", path, je.line, je.text);
    return -1;
  }
  json_t *a = json_incref(json_object_get(rd->manifest, "analysis"));
  json_object_del(rd->manifest, "analysis");
  int rc = read_analysis(rd, a, err, errlen);
  json_decref(a);
  if (rc || read_stages(rd, dir, err, errlen)) {
    im_rundir_free(rd);
    return -1;
  }
  return 0;
}

void im_rundir_free(struct im_rundir *rd) {
  if (!rd)
    return;
  json_decref(rd->manifest);
  for (size_t i = 0; i < rd->n_st; i++) {
    json_decref(rd->st[i].params);
    free(rd->st[i].samples);
    if (rd->st[i].has_receive_lag)
      im_hist_cleanup(&rd->st[i].receive_lag);
    im_hostlat_cleanup(&rd->st[i].host);
  }
  free(rd->st);
  memset(rd, 0, sizeof *rd);
}
