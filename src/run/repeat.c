/* infermeter run --repeat K: K independent runs of one configuration, then
 * the statistics over them (analyze/repeat.h, docs/statistics.md).
 *
 * Each run is this same command with its own --out DIR/run-k and --seed
 * (so its own schedule, prompts and cache salt), after a random start
 * offset of 0-2 s, so no run starts in step with a periodic disturbance.
 * Against --url the next run waits until the server has drained (its
 * running and waiting requests back to 0 on /metrics). Each run directory
 * is complete: `report` and `audit` work on each. Each replicate runs
 * through the caller's run_one (im_run, then its results); each stage's
 * set is handed to set_done (results/set.h) (run/run.h im_run_repeat). */
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
#include "core/buf.h"
#include "core/clock.h"
#include "core/rng.h"
#include "observe/namemap.h"
#include "run/run_int.h"

#define MAX_START_OFFSET_S 2.0
#define DRAIN_POLL_NS INT64_C(250000000)
/* Without --cooldown: the longest wait for a drain the server reports, and
 * the fixed wait when it reports none (issue 29: a fixed 60 s made 3 runs of
 * 10 s take 153 s against a server without the gauges). */
#define DRAIN_MAX_NS (INT64_C(60) * 1000000000)
#define DRAIN_FALLBACK_NS (INT64_C(5) * 1000000000)

/* Requests in flight on the server, and which of its answers said so. */
struct in_flight {
  double n;          /* -1: nothing says */
  char source[160];
};

/* Running + waiting on the server's /metrics, through the one name table
 * (observe/namemap.h: vLLM's and SGLang's gauges, llama.cpp's
 * requests_processing + requests_deferred, TGI's batch and queue sizes,
 * TensorRT-LLM's); else llama.cpp's /slots (the slots is_processing);
 * else n = -1. */
static struct in_flight in_flight_on_server(const char *url, const struct im_net *net) {
  struct in_flight f = {-1, ""};
  struct im_buf b;
  im_buf_init(&b, (size_t)32 << 20);
  struct im_nm_snapshot *snap = NULL;
  if (im__run_get_text(url, "/metrics", net, &b) == 200 && im_nm_snapshot_new(&snap, NULL) == IM_OK &&
      im_nm_extract(snap, b.data, b.len) == IM_OK && snap->primary >= 0 &&
      (snap->v[IM_NM_REQUESTS_RUNNING].present || snap->v[IM_NM_REQUESTS_WAITING].present)) {
    f.n = (snap->v[IM_NM_REQUESTS_RUNNING].present ? snap->v[IM_NM_REQUESTS_RUNNING].value : 0) +
          (snap->v[IM_NM_REQUESTS_WAITING].present ? snap->v[IM_NM_REQUESTS_WAITING].value : 0);
    snprintf(f.source, sizeof f.source, "its running and waiting requests on /metrics (%s)",
             im_nm_engine_name((enum im_nm_engine)snap->primary));
  }
  im_nm_snapshot_free(snap);
  im_buf_cleanup(&b);
  if (f.n >= 0)
    return f;
  char err[256];
  json_t *slots = NULL;
  if (im_http_get_json(url, "/slots", NULL, net, &slots, err, sizeof err) == 200 &&
      json_is_array(slots) && json_array_size(slots)) {
    size_t i;
    json_t *sl;
    f.n = 0;
    json_array_foreach(slots, i, sl) f.n += json_is_true(json_object_get(sl, "is_processing"));
    snprintf(f.source, sizeof f.source, "its busy slots on /slots (llama.cpp)");
  }
  json_decref(slots);
  return f;
}

/* Between runs against a remote server (docs/statistics.md): until it has
 * drained, at most --cooldown (60 s when not given); when nothing on the
 * server says what is in flight, a fixed wait of --cooldown, or
 * DRAIN_FALLBACK_NS when not given, said once. */
static void wait_drained(const struct im_run_config *o, bool *said) {
  bool given = o->cooldown_ns >= 0;
  int64_t t0 = im_now_ns();
  struct in_flight f = in_flight_on_server(o->url, &o->net);
  if (f.n < 0) {
    int64_t wait = given ? o->cooldown_ns : DRAIN_FALLBACK_NS;
    if (!*said && !o->quiet)
      im__run_say(IM_RUN_SAY_INFO, "--repeat: the server tells no requests in flight (no "
                  "running/waiting gauge on /metrics, no /slots): a fixed wait of %.1f s between "
                  "runs%s", (double)wait / 1e9, given ? " (--cooldown)" : " (--cooldown DUR to change)");
    *said = true;
    struct timespec ts = {(time_t)(wait / 1000000000), (long)(wait % 1000000000)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !im_run_interrupted())
      ;
    return;
  }
  if (!*said && !o->quiet)
    im__run_say(IM_RUN_SAY_INFO, "--repeat: between runs, waiting until the server has drained: "
                "%s back to 0 (at most %.0f s)", f.source,
                (double)(given ? o->cooldown_ns : DRAIN_MAX_NS) / 1e9);
  *said = true;
  int64_t until = t0 + (given ? o->cooldown_ns : DRAIN_MAX_NS);
  while (f.n > 0 && im_now_ns() < until && !im_run_interrupted()) {
    struct timespec ts = {0, DRAIN_POLL_NS};
    nanosleep(&ts, NULL);
    f = in_flight_on_server(o->url, &o->net);
  }
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !im_run_interrupted())
    ;
}

static int worst(int a, int b) { return im_verdict_worst(a, b); }

static int make_dir(const struct im_run_config *o, char *buf, size_t cap) {
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
    im__run_say(IM_RUN_SAY_ERROR, "--out: cannot create %s: %s", buf, strerror(errno));
    return -1;
  }
  return 0;
}

/* One cell of stage x repeat: stage 0 when the run has no stages. */
struct cell {
  uint32_t stage, k;
};

/* The stages of a --grid/--sweep run (their count and labels); 1 stage,
 * no label, without. 0 or -1 (said). */
static int plan_stages(const struct im_run_config *o, size_t *n, char (**labels)[IM_STAGE_LABEL_MAX]) {
  *n = 1;
  *labels = NULL;
  if (!o->n_grid && !o->sweep)
    return 0;
  struct run_plan *plan = calloc(1, sizeof *plan);
  int rc = -1;
  if (!plan || im__run_plan_parse(o, plan))
    goto out;
  if (plan->has_sweep && plan->sweep.is_auto) {
    im__run_say(IM_RUN_SAY_ERROR, "--repeat with --sweep rate=auto: give the rates "
                    "(--sweep rate=V1,V2,...)");
    goto out;
  }
  *n = plan->n_grid * (plan->has_sweep ? plan->sweep.nvalues : 1);
  if (*n * o->repeat > IM_REPEAT_MAX_CELLS) {
    im__run_say(IM_RUN_SAY_ERROR, "--repeat %" PRIu32 " x %zu stages: at most %d runs in all",
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

/* Runs one cell: the set's configuration with the run's own settings. */
static int run_cell(const struct im_run_set_hooks *sh, const struct im_run_config *o,
                    struct im_repeat_run *ru, uint32_t k, uint32_t stage) {
  struct im_run_config c = *o;
  c.repeat = 1;
  c.out_dir = ru->dir;
  c.seed = ru->seed;
  c.seed_given = true;
  c.repeat_index = k;
  c.repeat_of = o->repeat;
  /* Each run's summary is in its directory; the set's is printed after. */
  c.quiet = true;
  c.repeat_stage = stage;
  char err[512];
  if (im_run_prepare(&c, NULL, err, sizeof err)) {
    im__run_say(IM_RUN_SAY_ERROR, "%s", err);
    return EXIT_USAGE;
  }
  return sh->run_one(sh->data, &c);
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
    im__run_say(IM_RUN_SAY_ERROR, "cannot write %s: %s", path, strerror(errno));
    rc = -1;
  }
  json_decref(root);
  return rc;
}

static int repeat(const struct im_run_config *o, const struct im_run_set_hooks *sh, size_t *n_done) {
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
  bool drain_said = false;
  for (; done < n_cells && !im_run_interrupted(); done++) {
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
        im__run_say(IM_RUN_SAY_ERROR, "cannot create %s: %s", sdir, strerror(errno));
        rc = worst(rc, EXIT_USAGE);
        break;
      }
      snprintf(ru->dir, sizeof ru->dir, "%.4000s/run-%" PRIu32, sdir, c.k);
    } else {
      snprintf(ru->dir, sizeof ru->dir, "%.4000s/run-%" PRIu32, dir, c.k);
    }
    if (done && o->url)
      wait_drained(o, &drain_said);
    sleep_s(ru->start_offset_s);
    if (!o->quiet)
      im__run_say(IM_RUN_SAY_INFO, "%s%s%srepeat %" PRIu32 "/%" PRIu32 " (run %zu of %zu, start "
                  "offset %.2f s) -> %s", staged ? "stage " : "", staged ? labels[s] : "",
                  staged ? ", " : "", c.k, k_runs, done + 1, n_cells, ru->start_offset_s, ru->dir);
    ru->exit = run_cell(sh, o, ru, c.k, c.stage);
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
    if (staged && im__run_text())
      fprintf(im__run_text(), "\nStage %zu of %zu: %s (%s)\n", s + 1, n_stages, labels[s], sdir);
    if (staged && !ran) {
      all_publishable = false;
      continue;
    }
    bool publishable = false;
    rc = worst(rc, sh->set_done(sh->data, sdir, sr, ran, ref.n ? ref.value : NULL, ref.source,
                                &publishable));
    all_publishable &= publishable;
  }
  if (staged && write_stages(dir, n_stages, labels, order, done, k_runs))
    rc = worst(rc, EXIT_USAGE);
  if (o->publish && !all_publishable)
    rc = worst(rc, EXIT_NOT_PUBLISHABLE);
  *n_done = done;
out:
  free(labels);
  free(runs);
  free(order);
  return rc;
}

int im_run_repeat(const struct im_run_config *o, const struct im_run_hooks *h,
                  const struct im_run_set_hooks *sh, size_t *runs) {
  const struct im_run_hooks *outer = im__run_say_push(h);
  *runs = 0;
  int rc = repeat(o, sh, runs);
  im__run_say_push(outer);
  return rc;
}
