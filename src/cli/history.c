/* `infermeter history`: the runs indexed in the history database
 * (record/history.h). */
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/term.h"
#include "record/history.h"

enum { HIST_OK = 0, HIST_ERROR = 2 };

static void usage(FILE *f) {
  fprintf(f, "usage: infermeter history [--model M] [--tag K=V] [--since DATE] [--json]\n"
             "                          [--history PATH]\n"
             "       infermeter history add DIR... [--history PATH]\n"
             "\n"
             "Lists the runs in the history database, newest first: id (for `compare`),\n"
             "start time, model, headline figures and verdict, then the target and tags\n"
             "(a terminal of 130 columns or more also shows the workload digest and the\n"
             "directory; --json has everything); a directory that was moved or deleted\n"
             "is marked MISSING.\n"
             "`add` indexes run or repeat directories (as `run` does at its end).\n"
             "\n"
             "options:\n"
             "  --model M        only runs of model M\n"
             "  --tag K=V        only runs tagged K=V\n"
             "  --since DATE     only runs started at or after DATE (ISO 8601: 2026-12-01,\n"
             "                   2026-12-01T21:00)\n"
             "  --json           print a JSON array\n"
             "  --history PATH   the database (default $XDG_DATA_HOME/infermeter/history.db,\n"
             "                   else ~/.local/share/infermeter/history.db)\n");
}

/* YYYY-MM-DD, optionally followed by THH, THH:MM or THH:MM:SS (the
 * prefixes of started_at that --since compares with). */
static bool iso_date_ok(const char *s) {
  static const char *const forms[] = {"%Y-%m-%d", "%Y-%m-%dT%H", "%Y-%m-%dT%H:%M",
                                      "%Y-%m-%dT%H:%M:%S"};
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(s, forms[i], &tm);
    if (end && !*end && strlen(s) >= 10 && s[4] == '-' && s[7] == '-')
      return true;
  }
  return false;
}

static json_t *row_json(const struct im_history_row *r) {
  json_t *o = json_object(), *figs = json_object();
  if (!o || !figs) {
    json_decref(o);
    json_decref(figs);
    return NULL;
  }
  json_object_set_new(o, "id", json_integer(r->id));
  json_object_set_new(o, "added_at", json_string(r->added_at));
  json_object_set_new(o, "started_at", json_string(r->started_at));
  json_object_set_new(o, "target", json_string(r->target));
  json_object_set_new(o, "model", json_string(r->model));
  json_t *tags = json_loads(r->tags, JSON_DECODE_ANY, NULL);
  json_object_set_new(o, "tags", tags ? tags : json_null());
  json_object_set_new(o, "workload_digest", json_string(r->digest));
  for (int f = 0; f < IM_FIG_COUNT; f++)
    json_object_set_new(figs, im_headline_fig_name((enum im_headline_fig)f),
                        isfinite(r->v[f]) ? json_real(r->v[f]) : json_null());
  json_object_set_new(o, "figures", figs);
  json_object_set_new(o, "verdict", json_string(r->verdict));
  json_object_set_new(o, "publishable", json_string(r->publishable));
  json_object_set_new(o, "dir", json_string(r->dir));
  json_object_set_new(o, "dir_missing", json_boolean(r->dir_missing));
  return o;
}

static int print_json(const struct im_history_row *rows, size_t n) {
  json_t *a = json_array();
  int rc = a ? HIST_OK : HIST_ERROR;
  for (size_t i = 0; a && i < n; i++)
    if (json_array_append_new(a, row_json(&rows[i])))
      rc = HIST_ERROR;
  if (rc || json_dumpf(a, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10)))
    rc = HIST_ERROR;
  printf("\n");
  json_decref(a);
  return rc;
}

/* A figure in a `width`-wide column with `digits` decimals; "-" when the
 * run has none (no measured request: NaN in the database). */
static const char *fig(char *buf, size_t cap, double v, int width, int digits) {
  if (isfinite(v))
    snprintf(buf, cap, "%*.*f", width, digits, v);
  else
    snprintf(buf, cap, "%*s", width, "-");
  return buf;
}

/* One line of figures per run at 80 columns, a second with the target and
 * the tags; a wider terminal also shows the workload digest and the
 * directory. p99 TTFT is the headline figure (results.json's
 * metrics.latency_ms.ttft.p99: nearest rank over the measured window),
 * which the footer says, since the summary's vLLM table interpolates. */
static void print_table(FILE *o, const struct im_history_row *rows, size_t n, bool filtered,
                        int width) {
  bool wide = width >= 130;
  fprintf(o, "%5s  %-16s  %-14s %7s %8s %9s  %-8s%s\n", "id", "started", "model", "req/s", "tok/s",
          "TTFT p99", "verdict", wide ? "  digest            directory" : "");
  for (size_t i = 0; i < n; i++) {
    const struct im_history_row *r = &rows[i];
    char started[17];
    snprintf(started, sizeof started, "%.10s %.5s", r->started_at,
             strlen(r->started_at) > 11 ? r->started_at + 11 : "");
    char a[32], b[32], c[32];
    fprintf(o, "%5lld  %-16s  %-14.14s %s %s %s  %-8.8s", (long long)r->id, started, r->model,
            fig(a, sizeof a, r->v[IM_FIG_REQUEST_THROUGHPUT], 7, 3),
            fig(b, sizeof b, r->v[IM_FIG_OUTPUT_THROUGHPUT], 8, 1),
            fig(c, sizeof c, r->v[IM_FIG_TTFT_P99], 9, 2), r->verdict);
    if (wide)
      fprintf(o, "  %-16s  %s", r->digest, r->dir);
    fputc('\n', o);
    fprintf(o, "%5s  target %s", "", r->target[0] ? r->target : "-");
    if (strcmp(r->tags, "{}") && strcmp(r->tags, "null") && r->tags[0])
      fprintf(o, ", tags %s", r->tags);
    if (r->dir_missing)
      fprintf(o, ", directory MISSING (moved or deleted)");
    fputc('\n', o);
  }
  if (n == 0)
    fprintf(o, "(no runs%s)\n", filtered ? " match" : " yet");
  else
    fprintf(o, "TTFT p99 in ms: nearest rank over the measured window (results.json); the\n"
               "summary's vLLM table interpolates over all requests. `--json` has every field.\n");
}

static int add_dirs(int argc, char **argv, const char *history) {
  int rc = HIST_OK;
  for (int i = 0; i < argc; i++) {
    char msg[1024];
    int64_t id = 0;
    if (im_history_add_run(history, argv[i], &id, msg, sizeof msg) != IM_OK) {
      fprintf(stderr, "infermeter history add: %s\n", msg);
      rc = HIST_ERROR;
      continue;
    }
    printf("%lld %s\n", (long long)id, argv[i]);
  }
  return rc;
}

int im_cli_history(int argc, char **argv) {
  static const struct option opts[] = {{"model", required_argument, NULL, 'm'},
                                       {"tag", required_argument, NULL, 't'},
                                       {"since", required_argument, NULL, 's'},
                                       {"json", no_argument, NULL, 'j'},
                                       {"history", required_argument, NULL, 'H'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  struct im_history_filter f = {0};
  char tag[512];
  bool json = false;
  const char *history = NULL;
  int c;
  optind = 1;
  while ((c = im_getopt(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case 'm':
      f.model = optarg;
      break;
    case 't': {
      const char *eq = strchr(optarg, '=');
      if (!eq || eq == optarg || strlen(optarg) >= sizeof tag) {
        fprintf(stderr, "infermeter history: --tag: want KEY=VALUE, got '%s'\n", optarg);
        return HIST_ERROR;
      }
      snprintf(tag, sizeof tag, "%s", optarg);
      tag[eq - optarg] = '\0';
      f.tag_key = tag;
      f.tag_value = tag + (eq - optarg) + 1;
      break;
    }
    case 's':
      if (!iso_date_ok(optarg)) {
        fprintf(stderr,
                "infermeter history: --since: '%s' is not an ISO 8601 date: give "
                "YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS], e.g. 2026-12-01T21:00\n",
                optarg);
        return HIST_ERROR;
      }
      f.since = optarg;
      break;
    case 'j':
      json = true;
      break;
    case 'H':
      history = optarg;
      break;
    case 'h':
      usage(stdout);
      return HIST_OK;
    default:
      usage(stderr);
      return HIST_ERROR;
    }
  }
  if (optind < argc && !strcmp(argv[optind], "add")) {
    if (optind + 1 >= argc) {
      fprintf(stderr, "infermeter history add: give one or more run directories\n");
      return HIST_ERROR;
    }
    return add_dirs(argc - optind - 1, argv + optind + 1, history);
  }
  if (optind != argc) {
    fprintf(stderr, "infermeter history: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return HIST_ERROR;
  }
  struct im_history_row *rows = NULL;
  size_t n = 0;
  char msg[1024];
  if (im_history_query(history, &f, &rows, &n, msg, sizeof msg) != IM_OK) {
    fprintf(stderr, "infermeter history: %s\n", msg);
    return HIST_ERROR;
  }
  int rc = HIST_OK;
  if (json)
    rc = print_json(rows, n);
  else {
    int w = im__term_width(stdout);
    FILE *o = im__wrap_open(stdout, w);
    print_table(o, rows, n, f.model || f.tag_key || f.since, w);
    im__wrap_close(o, stdout);
  }
  free(rows);
  return rc;
}
