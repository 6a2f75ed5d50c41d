/* `infermeter report DIR` and `infermeter audit DIR` (cli/report.h): the
 * options, then one call of results/. */
#include "cli/report.h"

#include <getopt.h>
#include <stdio.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/run_cli.h"
#include "cli/term.h"
#include "export/otlp.h"
#include "results/set.h"

/* data: the subcommand's name ("report" or "audit"). */
static void print_note(void *data, const char *line) {
  fprintf(stderr, "infermeter %s: %s\n", (const char *)data, line);
}

static const char *who(const struct report_opts *o) {
  return o->audit_only ? "audit" : "report";
}

int im__report_dir(const char *dir, const struct report_opts *o, struct im_verdict *out) {
  FILE *text = o->text ? im__wrap_open(o->text, im__term_width(o->text)) : NULL; /* cli/term.h */
  struct im_results_opts ro = {.text = text,
                               .stage_lines = o->stage_lines,
                               .audit_only = o->audit_only,
                               .publish = o->publish,
                               .max_error_rate = o->max_error_rate,
                               .html = o->html,
                               .no_html = o->no_html,
                               .csv = o->csv,
                               .json = o->json ? stdout : NULL,
                               .note = print_note,
                               .data = (void *)who(o)};
  char err[1024];
  enum im_err e = im_results_dir(dir, &ro, out, err, sizeof err);
  im__wrap_close(text, o->text);
  if (e == IM_OK)
    return 0;
  fprintf(stderr, "infermeter %s: %s\n", who(o), err);
  return -1;
}

int im__write_html(const char *path, const json_t *root, const char *title,
                   enum im_err (*render)(const json_t *, const char *, struct im_buf *)) {
  char err[1024];
  if (im_results_html(path, root, title, render, err, sizeof err) == IM_OK)
    return 0;
  fprintf(stderr, "infermeter: %s\n", err);
  return -1;
}

static void audit_usage(FILE *f) {
  fprintf(f, "usage: infermeter audit DIR [--publish] [--quiet]\n"
             "\n"
             "The validity audit of a run directory, from the directory alone: the\n"
             "client self-check (VALID/INVALID) and whether the figures can be\n"
             "published (PUBLISHABLE/NOT_PUBLISHABLE), each check PASS, WARN or FAIL\n"
             "with its evidence and the fix (docs/audit.md). Writes nothing.\n"
             "\n"
             "  --publish   NOT_PUBLISHABLE exits 4\n"
             "  -q, --quiet  no output, the exit status only\n"
             "  -h, --help  this help\n"
             "\n"
             "Exit status: as `run` (0, 2 unreachable, 3 client self-check INVALID,\n"
             "4 not publishable under --publish, 99 SLO failed, 130 interrupted run),\n"
             "1 when DIR cannot be read.\n");
}

static void usage(FILE *f) {
  fprintf(f, "usage: infermeter report DIR [--quiet] [--html FILE | --no-html]\n"
             "                         [--output-format json|csv] [--json]\n"
             "\n"
             "Recomputes DIR/results.json and the summary from what a run left in DIR\n"
             "(manifest.json, stages.jsonl, requests.jsonl): the figures `run` wrote,\n"
             "or, for a run that was killed, the figures of every record that reached\n"
             "the disk (marked interrupted). Bad lines are skipped and reported with\n"
             "their line numbers.\n"
             "\n"
             "  -q, --quiet  no summary on stdout\n"
             "  --json      the summary as JSON on stdout instead of the table (results.json's\n"
             "              summary; an array of {index, label, summary} for stages)\n"
             "  --output-format json|csv\n"
             "              csv: also DIR/requests.csv (one row per attempt) and\n"
             "              DIR/summary.csv (one row per stage), RFC 4180 (docs/cli.md)\n"
             "  --html FILE  the HTML report there (default DIR/report.html: one\n"
             "              self-contained page, charts and tables, light and dark)\n"
             "  --no-html   no HTML report\n"
             "  --otlp URL  send the run's spans and GenAI metrics to an OTLP/HTTP\n"
             "              collector (docs/otlp.md)\n"
             "  --otlp-protocol P  http/json (default) or http/protobuf\n"
             "  --publish   NOT_PUBLISHABLE (the validity audit, docs/audit.md) exits 4\n"
             "  -h, --help  this help\n"
             "\n"
             "Exit status: as `run` (0 valid, 2 unreachable, 3 client self-check failed,\n"
             "4 not publishable under --publish, 99 SLO failed, 130 interrupted run),\n"
             "1 when DIR cannot be read.\n");
}

/* `audit SET`: the set's audit (DIR/results.json's "audit"), laid out as
 * a run's (report/audit_json.h), every check. */
static void print_set_audit(FILE *o, const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/results.json", dir);
  json_t *root = json_load_file(path, 0, NULL);
  const json_t *a = json_object_get(root, "audit"), *c;
  const char *verdict = json_string_value(json_object_get(a, "verdict"));
  size_t i;
  if (verdict) {
    fprintf(o, "Publishable (the set):                   %s\n", verdict);
    json_array_foreach(json_object_get(a, "checks"), i, c) {
      const char *id = json_string_value(json_object_get(c, "id"));
      const char *st = json_string_value(json_object_get(c, "status"));
      const char *ev = json_string_value(json_object_get(c, "evidence"));
      const char *fix = json_string_value(json_object_get(c, "fix"));
      fprintf(o, "  %-4s %-14s %s\n", st ? st : "?", id ? id : "?", ev ? ev : "");
      if (fix && fix[0])
        fprintf(o, "       %-14s fix: %s\n", "", fix);
    }
  }
  json_decref(root);
}

/* A --repeat set (results/set.h): each run reported again, then the set. */
static int report_set(const char *dir, const struct report_opts *o, bool quiet) {
  FILE *text = o->text ? im__wrap_open(o->text, im__term_width(o->text)) : NULL;
  struct im_results_opts ro = {.text = text,
                               .audit_only = o->audit_only,
                               .publish = o->publish,
                               .no_html = o->no_html,
                               .note = print_note,
                               .data = (void *)who(o)};
  char err[1024];
  int rc = EXIT_OK;
  size_t runs = 0;
  enum im_err e = im_results_set_dir(dir, &ro, &rc, &runs, err, sizeof err);
  im__wrap_close(text, o->text);
  if (e) {
    fprintf(stderr, "infermeter %s: %s\n", who(o), err);
    return EXIT_USAGE;
  }
  if (!quiet) {
    FILE *w = im__wrap_open(stdout, im__term_width(stdout));
    if (o->audit_only)
      print_set_audit(w, dir);
    im_verdict_set_line_color(w, im_color_on(stdout), rc, runs);
    im__wrap_close(w, stdout);
  }
  return rc;
}

/* report and audit: the same options, the same path. */
static int report_main(int argc, char **argv, bool audit) {
  static const struct option opts[] = {
      {"quiet", no_argument, NULL, 'q'},      {"publish", no_argument, NULL, 'p'},
      {"html", required_argument, NULL, 'H'}, {"no-html", no_argument, NULL, 'N'},
      {"otlp", required_argument, NULL, 'O'}, {"output-format", required_argument, NULL, 'F'},
      {"json", no_argument, NULL, 'J'},       {"otlp-protocol", required_argument, NULL, 'P'},
      {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0}};
  void (*help)(FILE *) = audit ? audit_usage : usage;
  const char *name = audit ? "audit" : "report";
  bool quiet = false, publish = false, no_html = false, csv = false, json = false, otlp_pb = false;
  const char *html = NULL, *otlp = NULL;
  int c;
  optind = 1;
  while ((c = im_getopt(argc, argv, "qh", opts, NULL)) != -1) {
    if (c == 'q') {
      quiet = true;
    } else if (c == 'p') {
      publish = true;
    } else if (c == 'H' && !audit) {
      html = optarg;
    } else if (c == 'N' && !audit) {
      no_html = true;
    } else if (c == 'O' && !audit) {
      otlp = optarg;
    } else if (c == 'F' && !audit) {
      if (im__output_format_parse(name, optarg, &csv))
        return EXIT_USAGE;
    } else if (c == 'J' && !audit) {
      json = true;
    } else if (c == 'P' && !audit) {
      if (im__otlp_protocol("--otlp-protocol", optarg, &otlp_pb))
        return EXIT_USAGE;
    } else if (c == 'h') {
      help(stdout);
      return EXIT_OK;
    } else {
      help(stderr);
      return EXIT_USAGE;
    }
  }
  if (optind + 1 != argc) {
    fprintf(stderr, "infermeter %s: give one run directory\n", name);
    help(stderr);
    return EXIT_USAGE;
  }
  const char *dir = argv[optind];
  struct report_opts ro = {.text = quiet || json ? NULL : stdout,
                           .stage_lines = true,
                           .audit_only = audit,
                           .publish = publish,
                           .html = html,
                           .no_html = no_html,
                           .csv = csv,
                           .json = json && !quiet};
  if (im_results_is_set(dir))
    return report_set(dir, &ro, quiet);
  struct im_verdict out;
  if (im__report_dir(dir, &ro, &out))
    return EXIT_USAGE;
  if (otlp) {
    struct im_otlp_opts oo = {
        .url = otlp, .sample = 1.0, .protobuf = otlp_pb, .note = im__print_note};
    struct im_otlp_stats os = {0};
    char err[512];
    if (im_otlp_export(dir, &oo, false, &os, err, sizeof err)) {
      fprintf(stderr, "infermeter: %s\n", err);
      return EXIT_USAGE;
    }
  }
  if (!quiet && !audit && !json)
    fprintf(stdout, "Results: %s/results.json\n%sReport:  %s%s\n", dir,
            out.interrupted ? "         (the run was interrupted: figures of the records on disk)\n"
                            : "",
            no_html ? "(none: --no-html)"
            : html  ? html
                    : dir,
            no_html || html ? "" : "/report.html");
  if (!quiet && !audit && csv && !json)
    fprintf(stdout, "CSV:     %s/requests.csv\n         %s/summary.csv\n", dir, dir);
  int rc = im_verdict_exit(&out);
  if (!quiet && !audit) {
    FILE *f = json ? stderr : stdout, *w = im__wrap_open(f, im__term_width(f));
    im_verdict_line_color(w, im_color_on(f), &out, rc);
    im__wrap_close(w, f);
  }
  return rc;
}

int im_cli_report(int argc, char **argv) {
  return report_main(argc, argv, false);
}
int im_cli_audit(int argc, char **argv) {
  return report_main(argc, argv, true);
}
