/* `infermeter compare A B [C ...]`: each later side against the first
 * (docs/statistics.md). The figures are computed in analyze/compare.c,
 * read by record/headline.c and rendered by report/compare_json.c; this
 * file resolves the arguments and checks that the sides are comparable. */
#include <ctype.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyze/compare.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/term.h"
#include "record/headline.h"
#include "record/history.h"
#include "cli/report.h"
#include "report/compare_json.h"
#include "report/html.h"

enum { CMP_OK = 0, CMP_REGRESSED = 1, CMP_ERROR = 2 };
#define CMP_MAX_SIDES 16

static void usage(FILE *f) {
  fprintf(f, "usage: infermeter compare A B [C ...] [OPTIONS]\n"
             "\n"
             "Compares the headline figures of B (and C, ...) with A, the baseline. Each\n"
             "argument is a run directory, a repeat directory (DIR/run-1 ... DIR/run-K), a\n"
             "repeated run of stages (DIR/stage-S/run-K, from run --repeat K --sweep/--grid) or\n"
             "a history id (`infermeter history` lists them). Per figure: the ratio B/A with its\n"
             "95%% CI (Welch's t on log(metric) over the runs of each side), the p-value and\n"
             "a verdict; a change is called only with at least 3 runs per side, p < 0.05 and\n"
             "the whole CI outside the noise band. Multi-stage runs are compared stage by stage.\n"
             "\n"
             "options:\n"
             "  --noise PCT            noise band in percent around a ratio of 1 (default 2)\n"
             "  --force                compare although model, schedule, workload or tags differ\n"
             "  --json                 print JSON (one object; an array with more than two sides)\n"
             "  --html FILE            also write the comparison as a self-contained HTML page\n"
             "                         (per figure: each run's value, the means and the CI)\n"
             "  --fail-on-regression   exit 1 when any figure regressed\n"
             "  --history PATH         the history database for ids (default\n"
             "                         $XDG_DATA_HOME/infermeter/history.db)\n"
             "  --no-history           do not resolve history ids\n"
             "\n"
             "Exit status: 0 compared; 1 a figure regressed under --fail-on-regression;\n"
             "2 usage, unreadable input, or configurations that differ (without --force).\n");
}

struct side {
  const char *arg;
  char dir[IM_HEADLINE_PATH];
  size_t n;
  bool repeat;
  struct im_headline *runs; /* n, heap */
  const char *dirs[IM_HEADLINE_MAX_RUNS];
};

static bool all_digits(const char *s) {
  if (!*s)
    return false;
  for (; *s; s++)
    if (!isdigit((unsigned char)*s))
      return false;
  return true;
}

/* A run of stages repeated (`run --repeat K --grid/--sweep`: DIR/stage-S/run-K)
 * read as K runs of S stages each, run k's stage s being DIR/stage-s/run-k,
 * so stage s is compared with stage s of the other side. The schedule
 * identity of such a run is every stage's, in order. 1 when DIR is not such
 * a directory, 0 when read, -1 (said) on failure. */
static int load_stage_sets(struct side *s, char (*paths)[IM_HEADLINE_PATH]) {
  char p[IM_HEADLINE_PATH + 32], msg[1024];
  struct stat st;
  snprintf(p, sizeof p, "%s/stage-1", s->dir);
  if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
    return 1;
  size_t n_stages = 0, k = 0;
  while (n_stages < IM_HEADLINE_MAX_STAGES + 1) {
    snprintf(p, sizeof p, "%s/stage-%zu", s->dir, n_stages + 1);
    if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
      break;
    n_stages++;
  }
  if (n_stages > IM_HEADLINE_MAX_STAGES) {
    fprintf(stderr, "infermeter compare: %s: more than %d stages\n", s->dir,
            IM_HEADLINE_MAX_STAGES);
    return -1;
  }
  struct im_headline *one = malloc(sizeof *one);
  int rc = -1;
  if (!one) {
    fprintf(stderr, "infermeter compare: out of memory\n");
    return -1;
  }
  /* The stages' labels, from the set's DIR/results.json (when it is there). */
  snprintf(p, sizeof p, "%s/results.json", s->dir);
  json_t *top = json_load_file(p, 0, NULL);
  json_t *labels = json_object_get(top, "stages");
  for (size_t st_i = 0; st_i < n_stages; st_i++) {
    bool rep;
    size_t n;
    snprintf(p, sizeof p, "%s/stage-%zu", s->dir, st_i + 1);
    if (im_headline_list_runs(p, paths, IM_HEADLINE_MAX_RUNS, &n, &rep, msg, sizeof msg) !=
        IM_OK) {
      fprintf(stderr, "infermeter compare: %s\n", msg);
      goto out;
    }
    if (!rep || (st_i && n != k)) {
      fprintf(stderr, "infermeter compare: %s: %s\n", p,
              rep ? "not as many runs as stage 1 (an interrupted set?)" : "no run-K directories");
      goto out;
    }
    if (!st_i) {
      k = n;
      if (!(s->runs = calloc(k, sizeof *s->runs))) {
        fprintf(stderr, "infermeter compare: out of memory\n");
        goto out;
      }
    }
    for (size_t r = 0; r < k; r++) {
      if (im_headline_read(paths[r], one, msg, sizeof msg) != IM_OK) {
        fprintf(stderr, "infermeter compare: %s\n", msg);
        goto out;
      }
      struct im_headline *h = &s->runs[r];
      if (!st_i) {
        *h = *one;
        snprintf(h->dir, sizeof h->dir, "%.900s/stage-*/run-%zu", s->dir, r + 1);
        snprintf(h->schedule, sizeof h->schedule, "[%.8100s", one->schedule);
      } else {
        h->stage[st_i] = one->stage[0];
        size_t used = strlen(h->schedule);
        snprintf(h->schedule + used, sizeof h->schedule - used, ",%s", one->schedule);
      }
      snprintf(h->stage[st_i].label, sizeof h->stage[st_i].label, "%s",
               json_string_value(json_object_get(json_array_get(labels, st_i), "label"))
                   ? json_string_value(json_object_get(json_array_get(labels, st_i), "label"))
                   : "");
      if (!h->stage[st_i].label[0])
        snprintf(h->stage[st_i].label, sizeof h->stage[st_i].label, "stage-%zu", st_i + 1);
      h->n_stages = st_i + 1;
    }
  }
  for (size_t r = 0; r < k; r++) {
    size_t used = strlen(s->runs[r].schedule);
    snprintf(s->runs[r].schedule + used, sizeof s->runs[r].schedule - used, "]");
    s->dirs[r] = s->runs[r].dir;
  }
  s->n = k;
  s->repeat = true;
  rc = 0;
out:
  json_decref(top);
  free(one);
  return rc;
}

/* Resolves and reads one argument; prints the reason and returns -1 on failure. */
static int load_side(struct side *s, const char *history, bool no_history) {
  char msg[1024];
  struct stat st;
  const char *id_text = s->arg[0] == '#' ? s->arg + 1 : s->arg;
  if (stat(s->arg, &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(s->dir, sizeof s->dir, "%s", s->arg);
  } else if (all_digits(id_text) && !no_history) {
    struct im_history_filter f = {.id = strtoll(id_text, NULL, 10)};
    struct im_history_row *rows = NULL;
    size_t n = 0;
    if (im_history_query(history, &f, &rows, &n, msg, sizeof msg) != IM_OK) {
      fprintf(stderr, "infermeter compare: history id %s: %s\n", id_text, msg);
      return -1;
    }
    if (n == 0) {
      fprintf(stderr, "infermeter compare: '%s' is neither a directory nor a history id%s\n",
              s->arg, " (see `infermeter history`)");
      free(rows);
      return -1;
    }
    if (rows[0].dir_missing) {
      fprintf(stderr, "infermeter compare: history id %s: its directory %s was moved or deleted\n",
              id_text, rows[0].dir);
      free(rows);
      return -1;
    }
    snprintf(s->dir, sizeof s->dir, "%s", rows[0].dir);
    free(rows);
  } else {
    fprintf(stderr, "infermeter compare: %s: not a directory%s\n", s->arg,
            all_digits(id_text) ? " (history ids are off: --no-history)" : "");
    return -1;
  }
  char(*paths)[IM_HEADLINE_PATH] = malloc(IM_HEADLINE_MAX_RUNS * sizeof *paths);
  int rc = -1;
  if (!paths) {
    fprintf(stderr, "infermeter compare: out of memory\n");
    return -1;
  }
  int staged = load_stage_sets(s, paths);
  if (staged <= 0) {
    rc = staged;
    goto out;
  }
  if (im_headline_list_runs(s->dir, paths, IM_HEADLINE_MAX_RUNS, &s->n, &s->repeat, msg,
                            sizeof msg) != IM_OK) {
    fprintf(stderr, "infermeter compare: %s\n", msg);
    goto out;
  }
  s->runs = calloc(s->n, sizeof *s->runs);
  if (!s->runs) {
    fprintf(stderr, "infermeter compare: out of memory\n");
    goto out;
  }
  for (size_t i = 0; i < s->n; i++) {
    if (im_headline_read(paths[i], &s->runs[i], msg, sizeof msg) != IM_OK) {
      fprintf(stderr, "infermeter compare: %s\n", msg);
      goto out;
    }
    s->dirs[i] = s->runs[i].dir;
  }
  rc = 0;
out:
  free(paths);
  return rc;
}

/* The differences in model, schedule, workload and tags between any run of
 * a and the first run of b, "" when none. */
static void differences(const struct side *a, const struct side *b, char *out, size_t len) {
  out[0] = '\0';
  size_t used = 0;
  const struct im_headline *ref = &a->runs[0];
  for (size_t i = 0; i < a->n + b->n; i++) {
    const struct im_headline *h = i < a->n ? &a->runs[i] : &b->runs[i - a->n];
    char d[2048];
    const char *names[4] = {"model", "schedule.", "workload.", "tags."};
    const char *x[4] = {ref->model, ref->schedule, ref->workload, ref->tags};
    const char *y[4] = {h->model, h->schedule, h->workload, h->tags};
    for (int k = 0; k < 4; k++) {
      bool diff;
      if (k == 0) {
        diff = strcmp(x[0], y[0]) != 0;
        if (diff)
          snprintf(d, sizeof d, "model: \"%s\" vs \"%s\"", x[0], y[0]);
      } else {
        diff = im_headline_diff(names[k], x[k], y[k], d, sizeof d);
      }
      if (!diff || strstr(out, d))
        continue;
      if (used + strlen(d) + 64 >= len)
        return;
      used += (size_t)snprintf(out + used, len - used, "%s%s (%s)", used ? "; " : "", d, h->dir);
    }
  }
}

/* The server settings the first runs of a and b declared, "" when equal or
 * when either declared none. */
static void server_differences(const struct side *a, const struct side *b, char *out,
                               size_t len) {
  const char *x = a->runs[0].server, *y = b->runs[0].server;
  out[0] = '\0';
  if (strcmp(x, "null") && strcmp(y, "null"))
    im_headline_diff("", x, y, out, len);
}

struct cmp_opts {
  double noise_pct;
  bool force;
  bool table; /* print the terminal table (not under --json) */
};

/* Compares b with a: checks that they are comparable, computes into *rep,
 * then prints the table (o->table), and appends the JSON object to `all`
 * when it is not NULL. Prints the reason and returns -1 on failure. */
static int compare_pair(const struct side *a, const struct side *b, const struct cmp_opts *o,
                        struct im_cmp_report *rep, json_t *all) {
  char diff[4096], sdiff[4096], msg[1024];
  /* Within a side too: a repeat directory's runs must agree. */
  differences(a, b, diff, sizeof diff);
  if (*diff && !o->force) {
    fprintf(stderr,
            "infermeter compare: %s and %s were not run with the same configuration: %s\n"
            "Compare like with like, or pass --force to compare anyway.\n",
            a->arg, b->arg, diff);
    return -1;
  }
  server_differences(a, b, sdiff, sizeof sdiff);
  if (im_cmp_runs(a->runs, a->n, b->runs, b->n, o->noise_pct / 100, 0.05, rep, msg, sizeof msg) !=
      IM_OK) {
    fprintf(stderr, "infermeter compare: %s vs %s: %s\n", a->arg, b->arg, msg);
    return -1;
  }
  struct im_cmp_meta meta = {.label_a = a->arg,
                             .label_b = b->arg,
                             .dirs_a = a->dirs,
                             .dirs_b = b->dirs,
                             .differences = diff,
                             .forced = o->force && *diff,
                             .server_differences = sdiff,
                             .runs_a = a->runs,
                             .runs_b = b->runs};
  if (o->table) { /* every line fits the terminal (cli/term.h) */
    FILE *w = im__wrap_open(stdout, im__term_width(stdout));
    im_cmp_print(w, rep, &meta);
    im__wrap_close(w, stdout);
  }
  if (!all)
    return 0;
  json_t *j = im_cmp_to_json(rep, &meta);
  if (!j || json_array_append_new(all, j)) {
    fprintf(stderr, "infermeter compare: out of memory\n");
    return -1;
  }
  return 0;
}

int im_cli_compare(int argc, char **argv) {
  static const struct option opts[] = {
      {"noise", required_argument, NULL, 'n'},   {"force", no_argument, NULL, 'f'},
      {"json", no_argument, NULL, 'j'},          {"fail-on-regression", no_argument, NULL, 'r'},
      {"history", required_argument, NULL, 'H'}, {"no-history", no_argument, NULL, 'N'},
      {"html", required_argument, NULL, 'W'},    {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  struct cmp_opts o = {.noise_pct = 2};
  const char *html = NULL;
  bool json = false, fail_on_reg = false, no_history = false;
  const char *history = NULL;
  int c;
  optind = 1;
  while ((c = im_getopt(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case 'n':
      if (im_arg_double("--noise", optarg, 0, 99, &o.noise_pct))
        return CMP_ERROR;
      break;
    case 'f':
      o.force = true;
      break;
    case 'j':
      json = true;
      break;
    case 'r':
      fail_on_reg = true;
      break;
    case 'H':
      history = optarg;
      break;
    case 'N':
      no_history = true;
      break;
    case 'W':
      html = optarg;
      break;
    case 'h':
      usage(stdout);
      return CMP_OK;
    default:
      usage(stderr);
      return CMP_ERROR;
    }
  }
  int nsides = argc - optind;
  if (nsides < 2 || nsides > CMP_MAX_SIDES) {
    fprintf(stderr, "infermeter compare: give 2 to %d runs (A B [C ...])\n", CMP_MAX_SIDES);
    usage(stderr);
    return CMP_ERROR;
  }
  struct side *sides = calloc((size_t)nsides, sizeof *sides);
  struct im_cmp_report *rep = malloc(sizeof *rep);
  json_t *all = json || html ? json_array() : NULL;
  o.table = !json;
  int rc = CMP_ERROR;
  if (!sides || !rep || (json && !all)) {
    fprintf(stderr, "infermeter compare: out of memory\n");
    goto out;
  }
  for (int i = 0; i < nsides; i++) {
    sides[i].arg = argv[optind + i];
    if (load_side(&sides[i], history, no_history))
      goto out;
  }
  bool regressed = false;
  for (int i = 1; i < nsides; i++) {
    if (i > 1 && o.table)
      printf("\n");
    if (compare_pair(&sides[0], &sides[i], &o, rep, all))
      goto out;
    regressed |= rep->any_regressed;
  }
  json_t *doc = nsides == 2 ? json_array_get(all, 0) : all;
  char title[512];
  snprintf(title, sizeof title, "%s vs %s%s", sides[0].arg, sides[1].arg,
           nsides > 2 ? " and more" : "");
  if (html && im__write_html(html, doc, title, im_html_compare))
    goto out;
  if (json) {
    if (json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) || printf("\n") < 0) {
      fprintf(stderr, "infermeter compare: cannot write the JSON\n");
      goto out;
    }
  }
  rc = fail_on_reg && regressed ? CMP_REGRESSED : CMP_OK;
out:
  if (sides)
    for (int i = 0; i < nsides; i++)
      free(sides[i].runs);
  free(sides);
  free(rep);
  json_decref(all);
  return rc;
}
