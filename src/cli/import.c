/* `infermeter import`: another tool's results as an infermeter run
 * directory (docs/import.md), so that `report`, `audit` and `compare` work
 * on them. The parsing is record/import.h's; this file reads the file,
 * writes manifest.json, stages.jsonl and requests.jsonl, and runs the
 * report over them. With --otlp-traces it also prints the effective
 * request rate of the traffic and writes a replayable trace of its user
 * requests. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/import_int.h"
#include "cli/report.h"
#include "cli/run_cli.h"
#include "core/buf.h"
#include "core/clock.h"
#include "im_version.h"
#include "record/import.h"
#include "record/rundir.h"

static void usage(FILE *f) {
  fprintf(f, "usage: infermeter import FILE|DIR --out DIR [--format NAME] [--quiet] [--no-html]\n"
             "       infermeter import --otlp-traces FILE --out DIR [--trace-out FILE]\n"
             "                         [--input-len N] [--output-len N]\n"
             "\n"
             "Reads the results of another tool into an infermeter run directory, so that\n"
             "`infermeter report`, `audit` and `compare` work on them (docs/import.md):\n"
             "  vllm      `vllm bench serve --save-result [--save-detailed]`: per-request\n"
             "            arrays, or without --save-detailed its summary figures alone\n"
             "  guidellm  GuideLLM's benchmarks.json (one stage per benchmark)\n"
             "  aiperf    AIPerf's profile_export.jsonl\n"
             "What the source does not record is marked not collected in the manifest\n"
             "(imported_from.not_collected) and said by the audit.\n"
             "\n"
             "  --out DIR          the run directory to write (new, or empty)\n"
             "  --format NAME      vllm, guidellm, aiperf or otlp (default: recognised)\n"
             "  --otlp-traces FILE an OpenTelemetry trace export (OTLP JSON, or JSON lines of\n"
             "                     a collector's file exporter): the effective request rate of\n"
             "                     the traffic and its classes (user requests, retries, health\n"
             "                     checks, errors), and a replayable trace of the user requests\n"
             "  --trace-out FILE   where that trace goes (default DIR/user-requests.csv): the\n"
             "                     Azure trace format, for `infermeter run --dataset azure\n"
             "                     --dataset-path FILE`\n"
             "  --input-len N      the trace's ContextTokens for spans without\n"
             "                     gen_ai.usage.input_tokens (default 1024)\n"
             "  --output-len N     its GeneratedTokens without gen_ai.usage.output_tokens\n"
             "                     (default 128)\n"
             "  --quiet            no summary on stdout\n"
             "  --no-html          no DIR/report.html\n"
             "  -h, --help         this help\n"
             "\n"
             "A DIR as input: the one file of a known name in it (profile_export.jsonl,\n"
             "benchmarks.json) or its only *.json file.\n"
             "Exit status: as `report` (0; 3 when an imported schedule shows the client\n"
             "fell behind), 1 when the input cannot be read or is not a known format.\n");
}

/* DIR given as input: the file to read. 0, or -1 (said). */
static int find_input(const char *dir, char *path, size_t cap) {
  static const char *const known[] = {"profile_export.jsonl", "benchmarks.json"};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    snprintf(path, cap, "%s/%s", dir, known[i]);
    if (access(path, R_OK) == 0)
      return 0;
  }
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "infermeter import: %s: %s\n", dir, strerror(errno));
    return -1;
  }
  int found = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n > 5 && !strcmp(e->d_name + n - 5, ".json") && found++ == 0)
      snprintf(path, cap, "%s/%s", dir, e->d_name);
  }
  closedir(d);
  if (found == 1)
    return 0;
  fprintf(stderr, "infermeter import: %s: %s; give the file\n", dir,
          found ? "more than one *.json file"
                : "no profile_export.jsonl, benchmarks.json or *.json");
  return -1;
}

/* The whole file, bounded. NULL (said) on failure. */
static char *read_all(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    fprintf(stderr, "infermeter import: %s: %s\n", path,
            fd < 0 ? strerror(errno) : "not a regular file");
    if (fd >= 0)
      close(fd);
    return NULL;
  }
  if ((uint64_t)st.st_size > IM_IMPORT_MAX_BYTES) {
    fprintf(stderr, "infermeter import: %s: larger than %zu bytes\n", path, IM_IMPORT_MAX_BYTES);
    close(fd);
    return NULL;
  }
  size_t n = (size_t)st.st_size;
  char *buf = malloc(n + 1);
  size_t got = 0;
  while (buf && got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  close(fd);
  if (!buf || got != n) {
    fprintf(stderr, "infermeter import: %s: %s\n", path, buf ? "read error" : "out of memory");
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* The output directory: created, or an existing empty one. 0 or -1 (said). */
static int make_out(const char *dir) {
  if (mkdir(dir, 0755) == 0)
    return 0;
  DIR *d = errno == EEXIST ? opendir(dir) : NULL;
  if (!d) {
    fprintf(stderr, "infermeter import: --out %s: %s\n", dir, strerror(errno));
    return -1;
  }
  struct dirent *e;
  bool empty = true;
  while ((e = readdir(d)) && empty)
    empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
  closedir(d);
  if (!empty)
    fprintf(stderr, "infermeter import: --out %s is not empty: give a new directory\n", dir);
  return empty ? 0 : -1;
}

static int write_records(const char *dir, const struct im_import *im) {
  char path[4200];
  snprintf(path, sizeof path, "%s/requests.jsonl", dir);
  FILE *f = fopen(path, "w");
  struct im_buf b;
  im_buf_init(&b, IM_RECORD_LINE_MAX);
  bool ok = f != NULL;
  for (size_t i = 0; ok && i < im->n; i++) {
    b.len = 0;
    ok = im_record_to_jsonl(&im->recs[i], &b) == IM_OK && fwrite(b.data, 1, b.len, f) == b.len;
  }
  im_buf_cleanup(&b);
  if (f)
    ok = fclose(f) == 0 && ok;
  if (!ok)
    fprintf(stderr, "infermeter import: cannot write %s: %s\n", path, strerror(errno));
  return ok ? 0 : -1;
}

static int write_stages(const char *dir, const struct im_import *im) {
  char path[4200];
  snprintf(path, sizeof path, "%s/stages.jsonl", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  int rc = fd < 0 ? -1 : 0;
  for (size_t i = 0; rc == 0 && i < im->n_st; i++) {
    const struct im_import_stage *s = &im->st[i];
    /* The window: every request's start (closed: up to the last start);
     * no warm-up (the source excluded its own). */
    struct im_window_rule rule = {.closed = true, .duration_ns = s->duration_ns};
    /* A stage's parameters: the rate its benchmark declared (the label
     * names the benchmark). */
    json_t *params = im->n_st > 1 ? json_object() : NULL;
    if (params && isfinite(s->rate))
      json_object_set_new(params, "rate", json_real(s->rate));
    struct im_client_counters k = {.cpu_share = NAN};
    for (size_t j = s->first; j < s->first + s->n; j++) {
      const struct im_record *r = &im->recs[j];
      if (r->attempt <= 1 && r->kind != IM_KIND_HEALTH && r->kind != IM_KIND_PROBE)
        k.scheduled++, k.dispatched++;
    }
    rc = im_rundir_append(fd, im_rundir_start_json(i, s->label, params, &rule, 1, false, false));
    json_decref(params);
    if (rc == 0)
      rc = im_rundir_append(fd, im_rundir_end_json(i, s->duration_ns, false, &k, 0, "", NULL, 0));
  }
  if (rc == 0)
    rc = im_rundir_append(fd, im_rundir_run_end_json(false, false));
  if (rc)
    fprintf(stderr, "infermeter import: cannot write %s: %s\n", path, strerror(errno));
  if (fd >= 0)
    close(fd);
  return rc;
}

static const char *const miss_keys[IM_MISS_COUNT_] = {
    "schedule",       "start_times",       "token_times", "first_token",
    "server_metrics", "client_self_check", "token_counts", "per_request_records"};

static json_t *imported_from(const struct im_import *im, const char *file) {
  json_t *nc = json_array();
  for (int b = 0; nc && b < IM_MISS_COUNT_; b++)
    if (im->missing & (1u << b))
      json_array_append_new(nc, json_pack("{s:s, s:s}", "what", miss_keys[b], "why",
                                          im_import_missing_text(1u << b)));
  json_t *o = json_pack("{s:s, s:s?, s:s, s:o}", "tool", im_import_tool_name(im->tool), "version",
                        im->version[0] ? im->version : NULL, "file", file, "not_collected", nc);
  if (o && !im->version[0])
    json_object_set_new(o, "version", json_null());
  if (o && im->date[0])
    json_object_set_new(o, "date", json_string(im->date));
  if (o && im->summary) /* the source's own figures, as it wrote them */
    json_object_set(o, "figures", im->summary);
  if (o && im->tool == IM_IMPORT_OTLP) {
    json_object_set_new(o, "spans", json_integer((json_int_t)im->spans));
    json_object_set_new(o, "spans_skipped", json_integer((json_int_t)im->spans_skipped));
  }
  return o;
}

static json_t *manifest(const struct im_import *im, const char *file, int argc, char **argv) {
  json_t *cl = json_array();
  for (int i = 0; cl && i < argc; i++)
    json_array_append_new(cl, json_string(argv[i]));
  char ts[32];
  time_t secs = im->wall_start_ns ? (time_t)(im->wall_start_ns / 1000000000u) : time(NULL);
  struct tm tm;
  gmtime_r(&secs, &tm);
  strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
  const char *be = im->backend;
  bool compl = !strcmp(be, "openai") || !strcmp(be, "vllm") || !strcmp(be, "openai-completions");
  /* A summary alone: the requests its figures count. */
  json_int_t nreq = im->n ? (json_int_t)im->n
                          : json_integer_value(json_object_get(im->summary, "completed")) +
                                json_integer_value(json_object_get(im->summary, "failed"));
  json_t *sched = json_pack("{s:s, s:n, s:I, s:f, s:i, s:f, s:n, s:i}", "kind", "imported",
                            "duration_s", "requests", nreq > 0 ? nreq : 1, "warmup_s", 0.0,
                            "warmup_requests", 0, "grace_s", 0.0, "max_concurrency", "threads", 1);
  if (sched && isfinite(im->rate))
    json_object_set_new(sched, "rate", json_real(im->rate));
  if (sched && isfinite(im->burstiness))
    json_object_set_new(sched, "burstiness", json_real(im->burstiness));
  if (sched && im->max_concurrency > 0)
    json_object_set_new(sched, "max_concurrency", json_integer(im->max_concurrency));
  json_t *wl =
      json_pack("{s:s, s:i, s:i, s:f, s:b, s:n, s:n, s:b, s:b, s:i, s:i, s:f, s:b, "
                "s:s, s:s}",
                "dataset", "imported", "input_len", 0, "output_len", 0, "range_ratio", 0.0,
                "ignore_eos", false, "temperature", "top_p", "shared_cache", false, "perturb",
                false, "prefix_groups", 0, "prefix_len", 0, "prefix_share", 0.0, "exact_lengths",
                false, "tokenizer", "not collected", "chat_template", "not collected");
  return json_pack(
      "{s:s, s:s, s:s, s:o, s:s, s:i, s:s, s:{s:s, s:s, s:s, s:b}, s:{s:n, s:n}, s:{}, s:o, "
      "s:o, s:{s:f}, s:{s:i}, s:{s:s, s:i}, s:f, s:o}",
      "tool", "infermeter", "version", IM_VERSION, "git", IM_GIT_HASH, "command_line", cl,
      "started_at", ts, "seed", 0, "run_salt", "imported", "target", "url", "not collected",
      "backend", compl ? "openai-completions" : "openai-chat", "model",
      im->model[0] ? im->model : "not collected", "builtin_server", false, "server", "models",
      "version", "tags", "schedule", sched, "workload", wl, "slo", "target", 0.99, "host", "cpus",
      0, "client", "libcurl", "not collected", "threads", 1, "discovery_ms", 0.0, "imported_from",
      imported_from(im, file));
}

static int write_dir(const char *dir, const struct im_import *im, const char *file, int argc,
                     char **argv) {
  struct im_rundir_analysis an = {.percentiles = {50, 90, 95, 99, 99.9},
                                  .n_percentiles = 5,
                                  .slo_target = 0.99,
                                  .stages_planned = im->n_st,
                                  .kv_residency_ref = 0.68,
                                  .bw_util_ref = 0.78,
                                  .scrape_interval_ns = 1000000000};
  json_t *m = manifest(im, file, argc, argv);
  int rc = m ? im_rundir_write_manifest(dir, m, &an) : -1;
  json_decref(m);
  if (rc) {
    fprintf(stderr, "infermeter import: cannot write %s/manifest.json: %s\n", dir,
            m ? strerror(errno) : "out of memory");
    return -1;
  }
  return write_stages(dir, im) || write_records(dir, im) ? -1 : 0;
}

/* A summary-only vLLM file: its own figures, as it wrote them. */
static void print_figures(const struct im_import *im, const char *path, const char *out) {
  printf("Imported vLLM's summary figures from %s into %s: no per-request records (the file was "
         "saved without --save-detailed), so they are shown as vLLM computed them, not "
         "recomputed, and the audit judges what it can\n",
         path, out);
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)im->summary, key, v) {
    char label[64];
    snprintf(label, sizeof label, "%s:", key);
    if (json_is_integer(v))
      printf("  %-38s %lld\n", label, (long long)json_integer_value(v));
    else if (json_is_number(v))
      printf("  %-38s %.2f\n", label, json_number_value(v));
    else
      printf("  %-38s -\n", label);
  }
}

int im_cli_import(int argc, char **argv) {
  static const struct option opts[] = {{"out", required_argument, NULL, 'o'},
                                       {"format", required_argument, NULL, 'f'},
                                       {"otlp-traces", required_argument, NULL, 'T'},
                                       {"trace-out", required_argument, NULL, 't'},
                                       {"input-len", required_argument, NULL, 'I'},
                                       {"output-len", required_argument, NULL, 'O'},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {"no-html", no_argument, NULL, 'N'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *out = NULL, *otlp = NULL, *trace_out = NULL;
  enum im_import_tool tool = IM_IMPORT_AUTO;
  uint32_t in_len = 1024, out_len = 128;
  bool quiet = false, no_html = false;
  int c;
  optind = 1;
  while ((c = im_getopt(argc, argv, "qh", opts, NULL)) != -1) {
    switch (c) {
    case 'o':
      out = optarg;
      break;
    case 'T':
      otlp = optarg;
      tool = IM_IMPORT_OTLP;
      break;
    case 't':
      trace_out = optarg;
      break;
    case 'q':
      quiet = true;
      break;
    case 'N':
      no_html = true;
      break;
    case 'I':
    case 'O':
      if (im_arg_u32(c == 'I' ? "--input-len" : "--output-len", optarg, 1, 10000000,
                     c == 'I' ? &in_len : &out_len))
        return EXIT_USAGE;
      break;
    case 'f':
      tool = im_import_tool_from_name(optarg);
      if (tool == IM_IMPORT_TOOL_COUNT_) {
        fprintf(stderr, "infermeter import: --format %s: one of vllm, guidellm, aiperf, otlp\n",
                optarg);
        return EXIT_USAGE;
      }
      break;
    case 'h':
      usage(stdout);
      return EXIT_OK;
    default:
      usage(stderr);
      return EXIT_USAGE;
    }
  }
  const char *in = otlp;
  if (!in && optind < argc)
    in = argv[optind++];
  if (!in || optind != argc || !out) {
    fprintf(stderr,
            "infermeter import: give one FILE or DIR (or --otlp-traces FILE) and --out DIR\n");
    usage(stderr);
    return EXIT_USAGE;
  }
  char path[4200];
  struct stat st;
  if (stat(in, &st) == 0 && S_ISDIR(st.st_mode)) {
    if (find_input(in, path, sizeof path))
      return EXIT_USAGE;
  } else {
    snprintf(path, sizeof path, "%s", in);
  }
  size_t len = 0;
  char *data = read_all(path, &len);
  if (!data)
    return EXIT_USAGE;
  struct im_import im;
  char err[512];
  enum im_err e = im_import_parse(data, len, tool, &im, err, sizeof err);
  free(data);
  int rc = EXIT_USAGE;
  if (e != IM_OK) {
    fprintf(stderr, "infermeter import: %s: %s\n", path, err[0] ? err : im_strerror(e));
    goto out;
  }
  if (make_out(out) || write_dir(out, &im, path, argc, argv))
    goto out;
  if (!quiet && im.summary)
    print_figures(&im, path, out);
  else if (!quiet)
    printf("Imported %zu requests (%zu stage%s) from %s (%s%s%s) into %s\n", im.n, im.n_st,
           im.n_st == 1 ? "" : "s", path, im_import_tool_name(im.tool), im.version[0] ? " " : "",
           im.version, out);
  /* A summary alone has no records to recompute a table from: the report
   * is written, and only its audit printed. */
  struct report_opts ro = {.text = quiet || im.summary ? NULL : stdout, .stage_lines = true,
                           .no_html = no_html};
  struct im_verdict ro_out;
  if (im__report_dir(out, &ro, &ro_out))
    goto out;
  struct report_opts ao = {.text = stdout, .audit_only = true};
  struct im_verdict ao_out;
  if (!quiet && im.summary && im__report_dir(out, &ao, &ao_out))
    goto out;
  rc = im_verdict_exit(&ro_out);
  /* An imported run is not "interrupted", nor an SLO failure (none given). */
  if (rc == EXIT_INTERRUPTED || rc == EXIT_SLO)
    rc = EXIT_OK;
  if (im.tool == IM_IMPORT_OTLP) {
    char tpath[4200];
    if (!trace_out)
      snprintf(tpath, sizeof tpath, "%s/user-requests.csv", out);
    if (im__otlp_summary(out, quiet ? NULL : stdout) ||
        im__write_user_trace(&im, trace_out ? trace_out : tpath, in_len, out_len,
                             quiet ? NULL : stdout))
      rc = EXIT_USAGE;
  }
out:
  im_import_free(&im);
  return rc;
}
