/* infermeter run --repeat K: K independent runs of one configuration, then
 * the statistics over them (analyze/repeat.h, docs/statistics.md).
 *
 * Each run is this same command with its own --out DIR/run-k and --seed
 * (so its own schedule, prompts and cache salt), after a random start
 * offset of 0-2 s, so no run starts in step with a periodic disturbance.
 * Against --url the next run waits until the server has drained (its
 * running and waiting requests back to 0 on /metrics). Each run directory
 * is complete: `report` and `audit` work on each. */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analyze/repeat.h"
#include "cli/cli.h"
#include "report/verdict.h"
#include "cli/args.h"
#include "cli/report.h"
#include "cli/run_int.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/rng.h"
#include "proto/promparse.h"
#include "record/history.h"
#include "report/repeat_json.h"
#include "results/set.h"

#define MAX_START_OFFSET_S 2.0
#define DRAIN_POLL_NS INT64_C(250000000)

/* One run's argv: the user's, then the run's own settings (the last of a
 * repeated option wins). */
static char **run_argv(int argc, char **argv, char (*extra)[4200], int n_extra) {
  char **v = calloc((size_t)argc + (size_t)n_extra + 1, sizeof *v);
  if (!v)
    return NULL;
  for (int i = 0; i < argc; i++)
    v[i] = argv[i];
  for (int i = 0; i < n_extra; i++)
    v[argc + i] = extra[i];
  return v;
}

static size_t on_body(char *d, size_t s, size_t n, void *ud) {
  struct im_buf *b = ud;
  return im_buf_append(b, d, s * n) == IM_OK ? s * n : 0;
}

/* The gauges of requests in a server (vLLM's, SGLang's names). */
static const char *const in_flight_names[] = {"vllm:num_requests_running",
                                              "vllm:num_requests_waiting",
                                              "sglang:num_running_reqs", "sglang:num_queue_reqs"};

struct gauge_sum {
  double total; /* -1 until a gauge is seen */
};

static enum im_err on_sample(void *ud, const struct im_prom_sample *s) {
  struct gauge_sum *g = ud;
  for (size_t i = 0; i < sizeof in_flight_names / sizeof in_flight_names[0]; i++)
    if (!strcmp(s->name, in_flight_names[i]) && isfinite(s->value))
      g->total = (g->total < 0 ? 0 : g->total) + s->value;
  return IM_OK;
}

/* Requests running + waiting on the server's /metrics; -1 when the page or
 * the gauges are missing. */
static double in_flight_on_server(const char *url, const struct im_net *net) {
  char page_url[2200];
  snprintf(page_url, sizeof page_url, "%s/metrics", url);
  struct im_buf b;
  im_buf_init(&b, (size_t)32 << 20);
  CURL *c = curl_easy_init();
  double total = -1;
  if (c) {
    curl_easy_setopt(c, CURLOPT_URL, page_url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 2000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    im_net_apply(c, net, true);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK &&
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status == 200) {
      struct gauge_sum g = {-1};
      struct im_promparse pp;
      struct im_promparse_cbs cbs = {.sample = on_sample, .ud = &g};
      im_promparse_init(&pp, NULL);
      if (im_promparse_page(&pp, b.data, b.len, &cbs, NULL) == IM_OK)
        total = g.total;
      im_promparse_cleanup(&pp);
    }
    curl_easy_cleanup(c);
  }
  im_buf_cleanup(&b);
  return total;
}

/* Between runs against a remote server: until it has drained, at most
 * the cooldown (the whole cooldown when it has no such gauges). */
static void wait_drained(const struct run_opts *o) {
  int64_t until = im_now_ns() + o->cooldown_ns;
  while (im_now_ns() < until) {
    double n = in_flight_on_server(o->url, &o->net);
    if (n == 0)
      return;
    struct timespec ts = {0, DRAIN_POLL_NS};
    nanosleep(&ts, NULL);
  }
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !im__run_interrupted)
    ;
}

static int worst(int a, int b) { return im_results_worst_exit(a, b); }

static void print_note(void *data, const char *line) {
  (void)data;
  fprintf(stderr, "infermeter: %s\n", line);
}

static int make_dir(const struct run_opts *o, char *buf, size_t cap) {
  if (o->out_dir) {
    snprintf(buf, cap, "%s", o->out_dir);
  } else {
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    mkdir("results", 0755);
    strftime(buf, cap, "results/repeat-%Y%m%d-%H%M%S", &tm);
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "infermeter run: --out: cannot create %s: %s\n", buf, strerror(errno));
    return -1;
  }
  return 0;
}

void im__run_add_history(const struct run_opts *o, const char *dir) {
  char msg[1024];
  int64_t id = 0;
  if (im_history_add_run(o->history, dir, &id, msg, sizeof msg) != IM_OK)
    im_warn("the run is not in the history: %s (--no-history to skip)", msg);
  else if (!o->quiet)
    fprintf(stdout, "History: id %lld (infermeter history; infermeter compare ID ID)\n",
            (long long)id);
}

int im__run_select_stage(struct run_opts *o, bool *rate_given) {
  struct run_plan *plan = calloc(1, sizeof *plan);
  struct im_stage st;
  int rc = -1;
  if (!plan || im__run_plan_parse(o, plan))
    goto out;
  /* An auto sweep has no rates yet: 0 stages. */
  size_t n = plan->n_grid * (plan->has_sweep ? plan->sweep.nvalues : 1);
  if (o->repeat_stage > n || im__run_plan_stage(plan, o->repeat_stage - 1, &st)) {
    fprintf(stderr, "infermeter run: --repeat-stage %" PRIu32 ": the plan has %zu stages\n",
            o->repeat_stage, n);
    goto out;
  }
  im__run_apply_stage(o, &st);
  if (st.set & (1u << IM_PARAM_RATE))
    *rate_given = true;
  snprintf(o->repeat_stage_label, sizeof o->repeat_stage_label, "%s", st.label);
  o->n_grid = 0; /* from here on a one-stage run with the stage's settings */
  o->sweep = NULL;
  rc = 0;
out:
  free(plan);
  return rc;
}

/* One cell of stage x repeat: stage 0 when the run has no stages. */
struct cell {
  uint32_t stage, k;
};

/* The stages of a --grid/--sweep run (their count and labels); 1 stage,
 * no label, without. 0 or -1 (said). */
static int plan_stages(const struct run_opts *o, size_t *n, char (**labels)[IM_STAGE_LABEL_MAX]) {
  *n = 1;
  *labels = NULL;
  if (!o->n_grid && !o->sweep)
    return 0;
  struct run_plan *plan = calloc(1, sizeof *plan);
  int rc = -1;
  if (!plan || im__run_plan_parse(o, plan))
    goto out;
  if (plan->has_sweep && plan->sweep.is_auto) {
    fprintf(stderr, "infermeter run: --repeat with --sweep rate=auto: give the rates "
                    "(--sweep rate=V1,V2,...)\n");
    goto out;
  }
  *n = plan->n_grid * (plan->has_sweep ? plan->sweep.nvalues : 1);
  if (*n * o->repeat > IM_REPEAT_MAX_CELLS) {
    fprintf(stderr, "infermeter run: --repeat %" PRIu32 " x %zu stages: at most %d runs in all\n",
            o->repeat, *n, IM_REPEAT_MAX_CELLS);
    goto out;
  }
  if (!(*labels = calloc(*n, sizeof **labels)))
    goto out;
  for (size_t i = 0; i < *n; i++) {
    struct im_stage st;
    if (im__run_plan_stage(plan, i, &st))
      goto out;
    snprintf((*labels)[i], sizeof (*labels)[i], "%s", st.label);
  }
  rc = 0;
out:
  free(plan);
  return rc;
}

/* Runs one cell: the user's command with the run's own settings. */
static int run_cell(int argc, char **argv, const struct run_opts *o, struct im_repeat_run *ru,
                    uint32_t k, uint32_t stage) {
  char extra[14][4200];
  int n = 0;
  snprintf(extra[n++], sizeof extra[0], "--repeat");
  snprintf(extra[n++], sizeof extra[0], "1");
  snprintf(extra[n++], sizeof extra[0], "--out");
  snprintf(extra[n++], sizeof extra[0], "%.4199s", ru->dir);
  snprintf(extra[n++], sizeof extra[0], "--seed");
  snprintf(extra[n++], sizeof extra[0], "%" PRIu64, ru->seed);
  snprintf(extra[n++], sizeof extra[0], "--repeat-index");
  snprintf(extra[n++], sizeof extra[0], "%" PRIu32, k);
  snprintf(extra[n++], sizeof extra[0], "--repeat-of");
  snprintf(extra[n++], sizeof extra[0], "%" PRIu32, o->repeat);
  /* Each run's summary is in its directory; the set's is printed below. */
  snprintf(extra[n++], sizeof extra[0], "--quiet");
  if (o->no_progress) /* -q on the set: not on its runs either */
    snprintf(extra[n++], sizeof extra[0], "--no-progress");
  if (stage) {
    snprintf(extra[n++], sizeof extra[0], "--repeat-stage");
    snprintf(extra[n++], sizeof extra[0], "%" PRIu32, stage);
  }
  char **v = run_argv(argc, argv, extra, n);
  if (!v) {
    fprintf(stderr, "infermeter run: out of memory\n");
    return EXIT_USAGE;
  }
  int rc = im_cli_run(argc + n, v);
  free(v);
  return rc;
}

/* The runs of one set that have a directory, moved to the front; their count. */
static size_t ran_runs(struct im_repeat_run *runs, size_t k) {
  size_t n = 0;
  for (size_t i = 0; i < k; i++)
    if (runs[i].dir[0] && access(runs[i].dir, F_OK) == 0)
      runs[n++] = runs[i];
  return n;
}

/* DIR/results.json of a run of stages: each stage's aggregate, in stage
 * order, and the order the runs ran in. 0 or -1 (said). */
static int write_stages(const char *dir, size_t n_stages, char (*labels)[IM_STAGE_LABEL_MAX],
                        const struct cell *order, size_t n_cells, uint32_t k_runs) {
  json_t *root = json_pack("{s:s, s:I, s:I}", "schema", "infermeter/repeat-stages/v1", "repeat",
                           (json_int_t)k_runs, "n_stages", (json_int_t)n_stages);
  json_t *ord = json_array(), *stages = json_array();
  if (!root || !ord || !stages) {
    json_decref(root);
    json_decref(ord);
    json_decref(stages);
    return -1;
  }
  json_object_set_new(root, "order", ord);
  json_object_set_new(root, "stages", stages);
  for (size_t i = 0; i < n_cells; i++)
    json_array_append_new(ord, json_pack("{s:I, s:I}", "stage", (json_int_t)order[i].stage, "run",
                                         (json_int_t)order[i].k));
  for (size_t s = 0; s < n_stages; s++) {
    char path[4300], sdir[4200];
    snprintf(sdir, sizeof sdir, "%s/stage-%zu", dir, s + 1);
    snprintf(path, sizeof path, "%s/results.json", sdir);
    json_t *agg = json_load_file(path, 0, NULL);
    json_array_append_new(stages, json_pack("{s:I, s:s, s:s, s:o}", "index", (json_int_t)(s + 1),
                                            "label", labels[s], "dir", sdir, "results",
                                            agg ? agg : json_null()));
  }
  char ts[64], path[4200], tmp[4300];
  time_t now = time(NULL);
  strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  json_object_set_new(root, "generated_at", json_string(ts));
  snprintf(path, sizeof path, "%s/results.json", dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int rc = 0;
  if (json_dump_file(root, tmp, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) != 0 ||
      rename(tmp, path) != 0) {
    fprintf(stderr, "infermeter run: cannot write %s: %s\n", path, strerror(errno));
    rc = -1;
  }
  json_decref(root);
  return rc;
}

int im__run_repeat(int argc, char **argv, const struct run_opts *o) {
  struct im__run_ref ref;
  size_t n_stages;
  char (*labels)[IM_STAGE_LABEL_MAX] = NULL;
  if (im__run_reference(o, &ref) || plan_stages(o, &n_stages, &labels))
    return EXIT_USAGE;
  bool staged = labels != NULL;
  char dir[4096];
  uint32_t k_runs = o->repeat;
  size_t n_cells = n_stages * k_runs;
  struct im_repeat_run *runs = calloc(n_cells, sizeof *runs);
  struct cell *order = calloc(n_cells, sizeof *order);
  int rc = EXIT_OK;
  if (!runs || !order || make_dir(o, dir, sizeof dir)) {
    rc = EXIT_USAGE;
    goto out;
  }
  uint64_t seed = o->seed_given ? o->seed : im_mix64((uint64_t)im_wall_ns() ^ (uint64_t)getpid());
  struct im_rng rng;
  im_rng_seed(&rng, seed ^ 0x5eed0ffULL);
  /* The order of stage x repeat: seeded random with stages (Fisher-Yates),
   * so a slow drift of the server is spread over the stages instead of
   * showing up as a stage effect; in turn without. */
  for (size_t i = 0; i < n_cells; i++)
    order[i] = (struct cell){staged ? (uint32_t)(i / k_runs) + 1 : 0, (uint32_t)(i % k_runs) + 1};
  for (size_t i = n_cells; staged && i > 1; i--) {
    size_t j = (size_t)im_rng_below(&rng, i);
    struct cell t = order[i - 1];
    order[i - 1] = order[j];
    order[j] = t;
  }
  size_t done = 0;
  for (; done < n_cells && !im__run_interrupted; done++) {
    struct cell c = order[done];
    size_t s = staged ? c.stage - 1 : 0;
    struct im_repeat_run *ru = &runs[s * k_runs + c.k - 1];
    /* The one-stage seeds are those of earlier versions: mix(seed + k). */
    ru->seed = im_mix64((staged ? im_mix64(seed + c.stage) : seed) + c.k);
    ru->start_offset_s = im_rng_uniform(&rng) * MAX_START_OFFSET_S;
    if (staged) {
      char sdir[4200];
      snprintf(sdir, sizeof sdir, "%.4000s/stage-%" PRIu32, dir, c.stage);
      if (mkdir(sdir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "infermeter run: cannot create %s: %s\n", sdir, strerror(errno));
        rc = worst(rc, EXIT_USAGE);
        break;
      }
      snprintf(ru->dir, sizeof ru->dir, "%.4000s/run-%" PRIu32, sdir, c.k);
    } else {
      snprintf(ru->dir, sizeof ru->dir, "%.4000s/run-%" PRIu32, dir, c.k);
    }
    if (done && o->url)
      wait_drained(o);
    sleep_s(ru->start_offset_s);
    if (!o->quiet)
      fprintf(stderr, "infermeter: %s%s%srepeat %" PRIu32 "/%" PRIu32 " (run %zu of %zu, start "
                      "offset %.2f s) -> %s\n", staged ? "stage " : "", staged ? labels[s] : "",
              staged ? ", " : "", c.k, k_runs, done + 1, n_cells, ru->start_offset_s, ru->dir);
    ru->exit = run_cell(argc, argv, o, ru, c.k, c.stage);
    rc = worst(rc, ru->exit);
    if (ru->exit == EXIT_USAGE || ru->exit == EXIT_INTERRUPTED) {
      done++;
      break;
    }
  }
  bool all_publishable = true;
  for (size_t s = 0; s < n_stages; s++) {
    char sdir[4200];
    if (staged)
      snprintf(sdir, sizeof sdir, "%.4000s/stage-%zu", dir, s + 1);
    else
      snprintf(sdir, sizeof sdir, "%s", dir);
    struct im_repeat_run *sr = &runs[s * k_runs];
    size_t ran = ran_runs(sr, k_runs);
    if (staged && !o->quiet)
      fprintf(stdout, "\nStage %zu of %zu: %s (%s)\n", s + 1, n_stages, labels[s], sdir);
    if (staged && !ran) {
      all_publishable = false;
      continue;
    }
    bool publishable = false;
    struct im_results_set_in in = {
        .dir = sdir, .runs = sr, .n = ran, .planned = k_runs, .publish = o->publish,
        .max_width = o->max_ci_width, .ref_value = ref.n ? ref.value : NULL,
        .ref_source = ref.source, .text = o->quiet ? NULL : stdout, .note = print_note};
    char err[1024];
    if (im_results_set(&in, &publishable, err, sizeof err)) {
      fprintf(stderr, "infermeter run: %s\n", err);
      rc = worst(rc, EXIT_USAGE);
    }
    all_publishable &= publishable;
    if (!o->no_history)
      im__run_add_history(o, sdir);
  }
  if (staged && write_stages(dir, n_stages, labels, order, done, k_runs))
    rc = worst(rc, EXIT_USAGE);
  if (o->publish && !all_publishable)
    rc = worst(rc, EXIT_NOT_PUBLISHABLE);
  im_verdict_set_line(stdout, rc, done);
out:
  free(labels);
  free(runs);
  free(order);
  return rc;
}
