/* infermeter run: argv -> a run configuration -> im_run (run/run.h) ->
 * the results (results/results.h) -> the verdict and the exit status. The
 * terminal (progress line, messages, the plan's confirmation) and the
 * sinks beside a run (export/: OTLP, the live page, the pushgateway) are
 * attached here through the run's hooks. */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/mpi.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/run_agents.h"
#include "cli/run_cli.h"
#include "cli/term.h"
#include "cli/shard.h"
#include "cli/vllm_compat.h"
#include "export/live.h"
#include "export/otlp.h"
#include "report/verdict.h"
#include "run/run.h"

/* The vLLM flags of this process's command line (cli/vllm_compat.h): every
 * run of it (a replicate, a rank) saves vLLM's result file too. */
static const struct im__vllm *run_vllm;

/* ---- signals ------------------------------------------------------------ */

/* What the signal handler says: the run's grace and its progress counters
 * (set by im__run_one for its duration; the handler only reads them). */
static int64_t sig_grace_s = 10;
static const struct im__progress *volatile sig_progress;
static volatile sig_atomic_t sig_count;

/* Decimal digits of v at the end of buf[0..n); returns where they start. */
static char *sig_digits(char *buf, size_t n, uint64_t v) {
  char *p = buf + n;
  do {
    *--p = (char)('0' + v % 10);
    v /= 10;
  } while (v && p > buf);
  return p;
}

static void sig_write(const char *s) {
  ssize_t r = write(STDERR_FILENO, s, strlen(s));
  (void)r;
}

/* Async-signal-safe: write(2), lock-free atomics, no stdio. */
static void on_signal(int sig) {
  (void)sig;
  im_run_interrupt();
  if (sig_count++ == 0) {
    char g[24] = "", f[24] = "";
    g[23] = f[23] = '\0';
    uint64_t in_flight = 0;
    const struct im__progress *pr = sig_progress;
    for (uint32_t k = 0; pr && pr->on && k < pr->n; k++)
      in_flight += atomic_load_explicit(&pr->p[k].in_flight, memory_order_relaxed);
    sig_write("\ninfermeter: interrupted: no new requests; waiting up to ");
    sig_write(sig_digits(g, 23, (uint64_t)sig_grace_s));
    sig_write(" s for ");
    if (pr && pr->on) {
      sig_write(sig_digits(f, 23, in_flight));
      sig_write(in_flight == 1 ? " request" : " requests");
    } else {
      sig_write("the requests");
    }
    sig_write(" in flight; Ctrl-C again to stop now\n");
  } else if (sig_count == 2) {
    sig_write("\ninfermeter: stopping now: requests in flight are recorded as aborted\n");
  }
}

/* Stop dispatching on the first signal, abort in-flight requests on the
 * second; installed whatever the inherited disposition (a background job
 * starts with SIGINT ignored). */
static void install_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
}

/* ---- the hooks: the terminal and the sinks ------------------------------ */

struct term {
  const struct im_run_config *o;
  struct im__progress progress;
  struct im_live_export *live;      /* --metrics-listen, --pushgateway */
  struct im_otlp_live otlp;         /* --otlp */
  struct im_otlp_opts otlp_opts;
  bool sinks_failed;
};

void im__run_say_stderr(void *data, enum im_run_say kind, const char *line) {
  (void)data;
  if (kind == IM_RUN_SAY_ERROR)
    fprintf(stderr, "infermeter run: %s\n", line);
  else if (kind == IM_RUN_SAY_INFO)
    fprintf(stderr, "infermeter: %s\n", line);
  else if (kind == IM_RUN_SAY_STATUS)
    fprintf(stderr, "\rinfermeter: %s", line);
  else { /* a continuation of the line before (it begins with spaces) */
    fputs(line, stderr);
    fputc('\n', stderr);
  }
}

/* A remote target: the plan was said; start only when the user says so. */
static bool confirm(void *data) {
  const struct term *t = data;
  if (t->o->yes)
    return true;
  if (!isatty(STDIN_FILENO)) {
    fprintf(stderr, "infermeter run: not a terminal: add --yes to start against a remote target\n");
    return false;
  }
  fprintf(stderr, "start? [y/N] ");
  char ans[16] = "";
  return fgets(ans, sizeof ans, stdin) && (ans[0] == 'y' || ans[0] == 'Y');
}

/* The directory exists: the sinks start (a failure stops nothing measured;
 * it is said, and the run goes on without that sink). */
static void on_start(void *data, const char *dir, struct im_observer *obs) {
  struct term *t = data;
  const struct im_run_config *o = t->o;
  char err[512];
  if (o->metrics_listen || o->pushgateway) {
    struct im_live_export_opts lo = {.listen = o->metrics_listen, .obs = obs,
                                     .slo_ttft_ms = o->scfg.has_slo_ttft ? o->scfg.slo_ttft_ms : 0};
    if (im_live_export_start(&lo, &t->live, err, sizeof err)) {
      fprintf(stderr, "infermeter run: %s\n", err);
      t->sinks_failed = true;
    }
    const char *host;
    uint16_t port;
    /* Even under --quiet: with port 0 it is the only way to know the port. */
    if (im_live_export_address(t->live, &host, &port))
      fprintf(stderr, "infermeter: live metrics at http://%s%s%s:%u/metrics\n",
              strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", (unsigned)port);
  }
  if (o->otlp && im_otlp_live_start(&t->otlp, dir, &t->otlp_opts, err, sizeof err)) {
    fprintf(stderr, "infermeter run: %s\n", err);
    t->sinks_failed = true;
  }
}

static void on_stage_start(void *data, const struct im_load_progress *p, uint32_t n,
                           uint64_t total) {
  struct term *t = data;
  if (!t->o->no_progress)
    im__progress_start(&t->progress, p, n, total, isatty(STDERR_FILENO));
  im_live_export_attach(t->live, p, n);
}

static void on_stage_end(void *data) {
  struct term *t = data;
  im__progress_stop(&t->progress);
  memset(&t->progress, 0, sizeof t->progress);
  im_live_export_attach(t->live, NULL, 0);
}

static void on_record(void *data, const struct im_record *r) {
  struct term *t = data;
  if (t->live)
    im_live_export_on_record(t->live, r);
}

static void on_load_end(void *data) {
  struct term *t = data;
  im_otlp_live_stop(&t->otlp); /* every record is on disk: it sends the last ones */
  im_live_export_freeze(t->live); /* the observer is freed when im_run returns */
}

/* ---- one run ------------------------------------------------------------ */

/* After the figures: the pushgateway, the live page's last scrape, vLLM's
 * result file, the OTLP export. */
static void finish_sinks(struct term *t, const char *dir, const char *salt, bool reported) {
  const struct im_run_config *o = t->o;
  char err[512];
  if (o->pushgateway && t->live &&
      im_live_export_push(t->live, o->pushgateway, salt, o->insecure, err, sizeof err))
    fprintf(stderr, "infermeter run: %s\n", err);
  im_live_export_stop(&t->live, o->metrics_linger_ns);
  if (reported && run_vllm && run_vllm->save_result)
    (void)im__vllm_save(dir, run_vllm);
  if (o->otlp) {
    struct im_otlp_stats os = t->otlp.st; /* the attempts the live exporter sent */
    if (im_otlp_export(dir, &t->otlp_opts, true, &os, err, sizeof err))
      fprintf(stderr, "infermeter: %s\n", err);
    else if (!o->quiet)
      fprintf(stdout, "OTLP:    %" PRIu64 " spans and %" PRIu64 " metric points sent to %s\n",
              os.spans_sent, os.metric_points, o->otlp);
  }
}

int im__run_one(const struct im_run_config *cfg) {
  struct im_run_config oc = *cfg;
  const struct im_run_config *o = &oc;
  im__shard_plan_digest(&oc);
  struct term t = {.o = o};
  t.otlp_opts = (struct im_otlp_opts){.url = o->otlp, .sample = o->otlp_sample,
                                      .provider = o->provider, .protobuf = o->otlp_protobuf,
                                      .note = im__print_note};
  struct im_run_hooks h = {.say = im__run_say_stderr, .text = o->quiet ? NULL : stdout, .confirm = confirm,
                           .on_start = on_start, .on_stage_start = on_stage_start,
                           .on_stage_end = on_stage_end,
                           .on_record = o->metrics_listen || o->pushgateway ? on_record : NULL,
                           .on_load_end = on_load_end, .tty = isatty(STDERR_FILENO) == 1,
                           .data = &t};
  sig_grace_s = (o->grace_ns + 999999999) / 1000000000;
  sig_progress = &t.progress;
  install_signals();
  struct im_run_outcome out;
  enum im_err e = im_run(o, &h, &out);
  sig_progress = NULL; /* t ends with this call */
  int rc = out.exit >= 0 ? out.exit : EXIT_USAGE;
  if (e || !out.started) { /* not one stage began: nothing to report */
    im_live_export_stop(&t.live, 0);
    return e ? rc : EXIT_USAGE;
  }
  /* The results: read back from the directory, by the same path as
   * `infermeter report DIR`. */
  struct report_opts ro = {.text = o->quiet ? NULL : stdout, .stage_lines = false,
                           .publish = o->publish, .max_error_rate = o->max_error_rate,
                           .csv = o->csv, .json = o->json};
  struct im_verdict verdict;
  int reported = im__report_dir(out.dir, &ro, &verdict);
  /* One row per run (a --repeat set is added once, as a set, by repeat.c). */
  if (!reported && !o->no_history && o->repeat_of <= 1)
    im__run_add_history(o, out.dir);
  if (!reported && !o->quiet)
    fprintf(stdout, "Results: %s/results.json\nRecords: %s/requests.jsonl\nReport:  %s/report.html\n",
            out.dir, out.dir, out.dir);
  if (!reported && !o->quiet && o->csv)
    fprintf(stdout, "CSV:     %s/requests.csv\n         %s/summary.csv\n", out.dir, out.dir);
  finish_sinks(&t, out.dir, out.salt, !reported);
  if (out.failed)
    rc = out.engine_failed ? EXIT_ENGINE : EXIT_USAGE;
  else if (!reported)
    rc = im_verdict_exit(&verdict);
  else
    rc = EXIT_USAGE;
  /* Under MPI a rank's verdict is its shard's: rank 0's merge prints the
   * run's (cli/mpi.c). */
  if (!reported && o->repeat_of <= 1 && !im__mpi.on) {
    FILE *f = o->json ? stderr : stdout, *w = im__wrap_open(f, im__term_width(f));
    im_verdict_line_color(w, im_color_on(f), &verdict, rc);
    im__wrap_close(w, f);
  }
  return rc;
}

/* ---- the command line --------------------------------------------------- */

/* The scenario file, then the command line over it. -1: go on; else the
 * exit status (help printed, or a usage error said). */
static int parse_args(int argc, char **argv, struct im_run_config *o, json_t **keep) {
  im_run_config_default(o);
  o->scenario = im__run_scenario_arg(argc, argv);
  if (o->scenario && im__run_scenario_load(o, o->scenario, keep))
    return EXIT_USAGE;
  int opt;
  optind = 1;
  while ((opt = im_getopt(argc, argv, "hqv", im__run_options, NULL)) != -1) {
    if (opt == 'h' || opt == 'H') {
      (opt == 'h' ? im__run_usage : im__run_usage_all)(stdout);
      return EXIT_OK;
    }
    if (opt == '?' || im__run_apply(o, opt, optarg)) {
      fprintf(stderr, "see: infermeter run --help\n");
      return EXIT_USAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "infermeter run: unexpected argument '%s' (see --help)\n", argv[optind]);
    return EXIT_USAGE;
  }
  o->command_words = (const char *const *)argv;
  o->n_command_words = argc;
  return im__run_output_mode(o);
}

int im_cli_run(int argc, char **argv) {
  struct im__vllm vllm;
  int targc;
  char **targv;
  memset(&vllm, 0, sizeof vllm);
  if (im__vllm_translate(argc, argv, &targc, &targv, &vllm))
    return EXIT_USAGE;
  struct im_run_config o;
  json_t *keep = NULL;
  int rc = parse_args(targc, targv, &o, &keep);
  if (rc >= 0)
    goto out;
  struct im_run_hooks h = {.say = im__run_say_stderr};
  char err[512];
  rc = EXIT_USAGE;
  if (im_run_prepare(&o, &h, err, sizeof err)) {
    if (err[0])
      fprintf(stderr, "infermeter run: %s\n", err);
    goto out;
  }
  run_vllm = &vllm;
  if (im__mpi_launched()) /* mpirun -np N infermeter run (cli/mpi.h) */
    rc = im__mpi_run(&o, im__run_one);
  else if (o.repeat > 1) /* K runs, each this configuration with its own directory and seed */
    rc = im__run_repeat(&o);
  else
    rc = im__run_one(&o);
  run_vllm = NULL;
out:
  im__run_agent_cleanup(&o.agent);
  json_decref(keep);
  free(targv);
  im__vllm_free(&vllm);
  return rc;
}
