/* The statistics of a --repeat set (results/set.h): its results.json and
 * report from the runs' own, and `report DIR` of a set. */
#include "results/set.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analyze/population.h"
#include "core/log.h"
#include "record/hist_json.h"
#include "record/reader.h"
#include "report/html.h"
#include "report/repeat_json.h"
#include "results/results.h"

/* Appends id to list (", "-separated) only whole; when it would not fit,
 * the list ends in " ..." once, so an id is never cut. */
static void add_id(char *list, size_t len, const char *id) {
  size_t have = strlen(list), need = (have ? 2 : 0) + strlen(id);
  if (have >= 4 && !strcmp(list + have - 4, " ..."))
    return;
  if (have + need + 5 > len) {
    if (have + 5 <= len)
      snprintf(list + have, len - have, " ...");
    return;
  }
  snprintf(list + have, len - have, "%s%s", have ? ", " : "", id);
}

/* Run r's schedule: open loop at an offered rate, oversaturated, its
 * window's scheduled and completed requests (the throughput exemption). */
static void take_schedule(const json_t *res, struct im_repeat_run *ru) {
  const json_t *sched = json_object_get(json_object_get(res, "manifest"), "schedule");
  const char *kind = json_string_value(json_object_get(sched, "kind"));
  const json_t *rate = json_object_get(sched, "rate");
  const json_t *counts = json_object_get(json_object_get(res, "metrics"), "counts");
  const json_t *sch = json_object_get(counts, "scheduled"), *done = json_object_get(counts, "completed");
  ru->open_loop = kind && json_is_number(rate) &&
                  (!strcmp(kind, "poisson") || !strcmp(kind, "gamma") || !strcmp(kind, "constant"));
  ru->rate = ru->open_loop ? json_number_value(rate) : NAN;
  ru->oversaturated = json_is_true(json_object_get(json_object_get(res, "saturation"), "oversaturated"));
  ru->offered = json_is_number(sch) ? json_number_value(sch) : NAN;
  ru->achieved = json_is_number(done) ? json_number_value(done) : NAN;
}

static const char *const hist_keys[4] = {"ttft_ns", "tpot_ns", "itl_ns", "e2el_ns"};

/* Run r's histograms (empty where missing or of another layout) counted
 * against the pooled p90 and p99 (the homogeneity test). */
static enum im_err count_run(struct im_repeat_set *set, size_t r, const char *dir,
                             const struct im_hist *pool) {
  char path[4300];
  snprintf(path, sizeof path, "%s/results.json", dir);
  json_t *res = json_load_file(path, 0, NULL);
  const json_t *hists = json_object_get(json_object_get(res, "metrics"), "histograms");
  struct im_hist h[4];
  enum im_err rc = IM_OK;
  memset(h, 0, sizeof h);
  for (int m = 0; m < 4 && rc == IM_OK; m++) {
    if (im_hist_from_json(&h[m], json_object_get(hists, hist_keys[m])) == IM_OK &&
        h[m].bucket_count == pool[m].bucket_count && h[m].sub_bits == pool[m].sub_bits &&
        h[m].unit_shift == pool[m].unit_shift)
      continue;
    im_hist_cleanup(&h[m]);
    rc = im_hist_init_default(&h[m]);
  }
  if (rc == IM_OK)
    im_repeat_count_run(set, r, h, pool);
  for (int m = 0; m < 4; m++)
    im_hist_cleanup(&h[m]);
  json_decref(res);
  return rc;
}

static int by_start(const void *a, const void *b) {
  const struct im_record *x = *(const struct im_record *const *)a;
  const struct im_record *y = *(const struct im_record *const *)b;
  return (x->t_start > y->t_start) - (x->t_start < y->t_start);
}

/* Latency m of the completed requests ok[0..n) (in start order) into v,
 * with per[j] values of request j (ITL: its gaps); the values' count. */
static size_t order_values(struct im_record *const *ok, size_t n, int m, int64_t *v,
                           uint32_t *per, size_t *units) {
  size_t at = 0, u = 0;
  for (size_t j = 0; j < n; j++) {
    const struct im_record *r = ok[j];
    uint32_t c = 0;
    if (m == 0 || m == 3) {
      v[at + c++] = m == 0 ? r->t_first - r->t_start : r->t_last - r->t_start;
    } else if (m == 1 && r->output_tokens >= 2) {
      v[at + c++] = llround((double)(r->t_last - r->t_first) / (r->output_tokens - 1));
    } else if (m == 2 && r->chunk_us) {
      for (uint32_t i = 1; i < r->n_chunks; i++)
        v[at + c++] = ((int64_t)r->chunk_us[i] - (int64_t)r->chunk_us[i - 1]) * 1000;
    }
    if (c)
      per[u++] = c;
    at += c;
  }
  *units = u;
  return at;
}

/* Run r's requests in time order (its requests.jsonl: measured attempts
 * that succeeded, by start), each latency's design effect against the
 * pooled p90 and p99 (docs/statistics.md "Design effect"). Without a
 * readable requests.jsonl the run's order is unknown: the test and the
 * interval go uncorrected for it. */
static enum im_err order_run(struct im_repeat_set *set, size_t r, const char *dir,
                             const struct im_hist *pool) {
  char path[4300];
  snprintf(path, sizeof path, "%s/requests.jsonl", dir);
  struct im_record *recs = NULL;
  size_t n = 0, nv = 0, k = 0;
  struct im_read_report rep;
  if (access(path, R_OK) != 0 || im_records_read_path(path, &recs, &n, &rep) != IM_OK) {
    im_records_free(recs, n);
    return IM_OK;
  }
  struct im_record **ok = malloc((n ? n : 1) * sizeof *ok);
  for (size_t i = 0; ok && i < n; i++) {
    const struct im_record *x = &recs[i];
    if ((x->kind == IM_KIND_MEASURED || x->kind == IM_KIND_RETRY) && im_attempt_succeeded(x) &&
        x->t_start >= 0 && x->t_first >= 0 && x->t_last >= x->t_first) {
      ok[k++] = &recs[i];
      nv += x->chunk_us && x->n_chunks > 1 ? x->n_chunks - 1 : 1;
    }
  }
  int64_t *v = malloc((nv ? nv : 1) * sizeof *v);
  uint32_t *per = malloc((k ? k : 1) * sizeof *per);
  enum im_err rc = ok && v && per ? IM_OK : IM_NOMEM;
  if (rc == IM_OK)
    qsort(ok, k, sizeof *ok, by_start);
  for (int m = 0; m < 4 && rc == IM_OK; m++) {
    size_t units, got = order_values(ok, k, m, v, per, &units);
    rc = im_repeat_order_run(set, r, m, v, got, per, units, &pool[m]);
  }
  free(per);
  free(v);
  free(ok);
  im_records_free(recs, n);
  return rc;
}

/* Run r's headline figures, its audit, and its histograms into the pooled. */
static void take_run(struct im_repeat_set *set, size_t r, const json_t *res, struct im_hist *pool,
                     struct im_repeat_run *ru) {
  double v[IM_RF_COUNT_];
  im_repeat_values_json(res, v);
  for (int f = 0; f < IM_RF_COUNT_; f++)
    set->values[f][r] = v[f];
  /* Its audit: every check but `repeats` must pass. */
  ru->publishable_but_repeats = true;
  ru->fails[0] = '\0';
  json_t *checks = json_object_get(json_object_get(json_object_get(res, "audit"), "publishable"),
                                   "checks");
  size_t i;
  json_t *c;
  json_array_foreach(checks, i, c) {
    const char *id = json_string_value(json_object_get(c, "id"));
    const char *st = json_string_value(json_object_get(c, "status"));
    if (id && st && strcmp(id, "repeats") && !strcmp(st, "FAIL")) {
      ru->publishable_but_repeats = false;
      add_id(ru->fails, sizeof ru->fails, id);
    }
  }
  if (!json_is_array(checks)) {
    ru->publishable_but_repeats = false;
    snprintf(ru->fails, sizeof ru->fails, "no audit in its results.json");
  }
  take_schedule(res, ru);
  const json_t *hists = json_object_get(json_object_get(res, "metrics"), "histograms");
  for (int m = 0; m < 4; m++) {
    struct im_hist h;
    if (im_hist_from_json(&h, json_object_get(hists, hist_keys[m])) == IM_OK) {
      if (im_hist_merge(&pool[m], &h) != IM_OK) /* another layout: not pooled */
        im_warn("run-%zu: its %s histogram has another layout; left out of the pool", r + 1,
                hist_keys[m]);
      im_hist_cleanup(&h);
    }
  }
}

/* Reads every run's results.json, computes the statistics, writes
 * DIR/results.json (atomically), DIR/report.html and the table. */
enum im_err im_results_set(const struct im_results_set_in *in, bool *publishable, char *err,
                           size_t err_len) {
  struct im_repeat_set *set = calloc(1, sizeof *set);
  struct im_hist pool[4];
  enum im_err rc = IM_NOMEM;
  memset(pool, 0, sizeof pool);
  if (!set)
    return im_errf(err, err_len, IM_NOMEM, "out of memory");
  if (in->n > IM_REPEAT_MAX_RUNS) {
    free(set);
    return im_errf(err, err_len, IM_INVAL, "%zu runs: at most %d", in->n, IM_REPEAT_MAX_RUNS);
  }
  struct im_repeat_run *runs = in->runs;
  size_t n = in->n;
  set->planned = in->planned;
  set->runs = n;
  set->run = runs;
  set->max_width = in->max_width;
  if (in->ref_value) {
    set->ref_source = in->ref_source;
    for (int f = 0; f < IM_RF_COUNT_; f++) {
      set->ref[f].given = !isnan(in->ref_value[f]);
      set->ref[f].value = in->ref_value[f];
    }
  }
  for (int m = 0; m < 4; m++)
    if (im_hist_init_default(&pool[m]) != IM_OK)
      goto out;
  for (size_t r = 0; r < n; r++) {
    char path[4300];
    snprintf(path, sizeof path, "%s/results.json", runs[r].dir);
    json_t *res = json_load_file(path, 0, NULL);
    for (int f = 0; f < IM_RF_COUNT_; f++)
      set->values[f][r] = NAN;
    if (!res) {
      runs[r].publishable_but_repeats = false;
      snprintf(runs[r].fails, sizeof runs[r].fails, "no results.json");
      continue;
    }
    take_run(set, r, res, pool, &runs[r]);
    json_decref(res);
  }
  im_repeat_pool(set, pool);
  /* Again over the runs, now that the pooled p90 and p99 are known. */
  for (size_t r = 0; r < n; r++)
    if (count_run(set, r, runs[r].dir, pool) != IM_OK || order_run(set, r, runs[r].dir, pool) != IM_OK)
      goto out;
  im_repeat_analyze(set, in->publish);
  *publishable = set->publishable;
  json_t *root = im_repeat_json(set);
  char ts[64], path[4400], tmp[4500];
  time_t now = time(NULL);
  struct tm tm;
  strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
  if (root)
    json_object_set_new(root, "generated_at", json_string(ts));
  snprintf(path, sizeof path, "%s/results.json", in->dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if (!root || json_dump_file(root, tmp, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) != 0 ||
      rename(tmp, path) != 0) {
    rc = im_errf(err, err_len, IM_IO, "cannot write %s: %s", path, strerror(errno));
    json_decref(root);
    goto out;
  }
  char html[4300], why[1024];
  snprintf(html, sizeof html, "%.4200s/report.html", in->dir);
  /* A report that cannot be written is a note: the figures are written. */
  if (!in->no_html && im_results_html(html, root, in->dir, im_html_report, why, sizeof why) &&
      in->note)
    in->note(in->data, why);
  json_decref(root);
  if (in->text) {
    im_repeat_text(in->text, set);
    fprintf(in->text, "Results: %s/results.json (and each run's in %s/run-1 ...)\nReport:  %s\n",
            in->dir, in->dir, html);
  }
  rc = IM_OK;
out:
  for (int m = 0; m < 4; m++)
    im_hist_cleanup(&pool[m]);
  free(set);
  if (rc == IM_NOMEM)
    im_errf(err, err_len, IM_NOMEM, "out of memory");
  return rc;
}


static bool exists(const char *dir, const char *name) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return access(path, F_OK) == 0;
}

bool im_results_is_set(const char *dir) {
  return !exists(dir, "manifest.json") && exists(dir, "run-1/manifest.json");
}

/* The protocol facts of the set's earlier results.json (NULL: none). */
struct set_facts {
  json_t *old;                  /* DIR/results.json of the set, or NULL */
  double ref[IM_RF_COUNT_];
  bool has_ref;
};

/* Run k's facts: from the set's results.json when it names the run, else
 * from the run's manifest (seed) and its report (exit status). */
static void run_facts(const struct set_facts *sf, size_t k, const json_t *manifest,
                      const struct im_verdict *v, struct im_repeat_run *ru) {
  const json_t *old = json_array_get(json_object_get(sf->old, "runs"), k);
  const char *seed = json_string_value(json_object_get(old, "seed"));
  const json_t *off = json_object_get(old, "start_offset_s"), *ex = json_object_get(old, "exit");
  const json_t *mseed = json_object_get(manifest, "seed");
  ru->seed = seed ? strtoull(seed, NULL, 10)
                  : json_is_integer(mseed) ? (uint64_t)json_integer_value(mseed) : 0;
  ru->start_offset_s = json_is_number(off) ? json_number_value(off) : 0.0;
  ru->exit = json_is_integer(ex) ? (int)json_integer_value(ex) : im_verdict_exit(v);
}

static void set_facts_read(const char *dir, struct set_facts *sf) {
  char path[4400];
  snprintf(path, sizeof path, "%s/results.json", dir);
  json_t *old = json_load_file(path, 0, NULL);
  const char *schema = json_string_value(json_object_get(old, "schema"));
  if (!schema || strcmp(schema, "infermeter/repeat/v1")) {
    json_decref(old);
    old = NULL;
  }
  sf->old = old;
  const json_t *figs = json_object_get(old, "figures");
  for (int f = 0; f < IM_RF_COUNT_; f++) {
    const json_t *r = json_object_get(json_object_get(figs, im_repeat_fig_name((enum im_repeat_fig)f)),
                                      "reference");
    const json_t *v = json_object_get(r, "value");
    sf->ref[f] = json_is_number(v) ? json_number_value(v) : NAN;
    sf->has_ref |= json_is_number(v);
  }
}

enum im_err im_results_set_dir(const char *dir, const struct im_results_opts *o, int *exit_code,
                               size_t *n_runs, char *err, size_t err_len) {
  struct set_facts sf = {0};
  set_facts_read(dir, &sf);
  struct im_repeat_run *runs = calloc(IM_REPEAT_MAX_RUNS, sizeof *runs);
  enum im_err rc = IM_OK;
  size_t n = 0;
  int worst = IM_EXIT_OK;
  if (!runs) {
    json_decref(sf.old);
    return im_errf(err, err_len, IM_NOMEM, "out of memory");
  }
  const json_t *planned_j = json_object_get(sf.old, "planned");
  size_t planned = json_is_integer(planned_j) ? (size_t)json_integer_value(planned_j) : 0;
  for (size_t k = 0; k < IM_REPEAT_MAX_RUNS; k++) {
    struct im_repeat_run *ru = &runs[n];
    snprintf(ru->dir, sizeof ru->dir, "%.4000s/run-%zu", dir, k + 1);
    if (!exists(ru->dir, "manifest.json"))
      break;
    /* Each run reported again, quietly: its own results.json and report. */
    struct im_results_opts ro = {.publish = o->publish, .no_html = o->no_html,
                                 .note = o->note, .data = o->data};
    struct im_verdict v;
    char why[1024];
    if (im_results_dir(ru->dir, &ro, &v, why, sizeof why)) {
      rc = im_errf(err, err_len, IM_IO, "%s: %s", ru->dir, why);
      goto out;
    }
    char mpath[4400];
    snprintf(mpath, sizeof mpath, "%s/manifest.json", ru->dir);
    json_t *manifest = json_load_file(mpath, 0, NULL);
    run_facts(&sf, k, manifest, &v, ru);
    const json_t *of = json_object_get(json_object_get(manifest, "repeat"), "of");
    if (!planned && json_is_integer(of))
      planned = (size_t)json_integer_value(of);
    json_decref(manifest);
    worst = im_verdict_worst(worst, ru->exit);
    n++;
  }
  if (!n) {
    rc = im_errf(err, err_len, IM_NOTFOUND, "%s has no run-1/manifest.json: not a --repeat set",
                 dir);
    goto out;
  }
  const json_t *mw = json_object_get(sf.old, "max_ci_width");
  struct im_results_set_in in = {
      .dir = dir, .runs = runs, .n = n, .planned = planned ? planned : n,
      .publish = o->publish, .max_width = json_is_number(mw) ? json_number_value(mw) : 0,
      .ref_value = sf.has_ref ? sf.ref : NULL,
      .ref_source = json_string_value(json_object_get(sf.old, "reference_source")),
      .no_html = o->no_html, .text = o->audit_only ? NULL : o->text, .note = o->note,
      .data = o->data};
  bool publishable = false;
  rc = im_results_set(&in, &publishable, err, err_len);
  if (o->publish && !publishable)
    worst = im_verdict_worst(worst, IM_EXIT_NOT_PUBLISHABLE);
out:
  *exit_code = worst;
  *n_runs = n;
  json_decref(sf.old);
  free(runs);
  return rc;
}
