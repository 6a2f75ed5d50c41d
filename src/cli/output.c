/* Colours, the verdict line, CSV and JSON output (output.h). */
#include "cli/output.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "report/csv.h"

bool im__color_on(FILE *f) {
  const char *no = getenv("NO_COLOR"), *term = getenv("TERM");
  if (no && *no)
    return false;
  if (term && !strcmp(term, "dumb"))
    return false;
  return isatty(fileno(f)) == 1;
}

int im__output_format_parse(const char *cmd, const char *arg, bool *csv) {
  if (!strcmp(arg, "json") || !strcmp(arg, "csv")) {
    *csv = !strcmp(arg, "csv");
    return 0;
  }
  fprintf(stderr,
          "infermeter %s: --output-format: unknown format '%s': use json (results.json and "
          "requests.jsonl, always written) or csv (requests.csv and summary.csv besides)\n",
          cmd, arg);
  return -1;
}

/* SGR sequences: bold red, bold green, reset. */
#define RED "\033[1;31m"
#define GREEN "\033[1;32m"
#define RESET "\033[0m"

static void part(FILE *f, bool color, bool bad, const char *text) {
  if (color)
    fprintf(f, "%s%s%s", bad ? RED : GREEN, text, RESET);
  else
    fputs(text, f);
}

void im__verdict_line(FILE *f, const struct report_outcome *out, int exit_code) {
  bool c = im__color_on(f);
  fputs("Verdict: ", f);
  part(f, c, exit_code != 0, exit_code == 0 ? "PASS" : "FAIL");
  fprintf(f, " (exit %d): ", exit_code);
  if (out->interrupted) {
    part(f, c, true, "interrupted");
    fputs(", ", f);
  }
  if (out->unreachable) {
    part(f, c, true, "target unreachable");
    fputs(", ", f);
  }
  fputs("client self-check ", f);
  part(f, c, out->invalid, out->invalid ? "INVALID" : "VALID");
  fputs(", ", f);
  part(f, c, out->not_publishable, out->not_publishable ? "NOT_PUBLISHABLE" : "PUBLISHABLE");
  fputs(out->publish || !out->not_publishable ? ", " : " (exit 4 only with --publish), ", f);
  part(f, c, out->slo_failed, out->slo_failed ? "an SLO failed" : "no SLO failed");
  fputc('\n', f);
  fflush(f);
}

void im__verdict_set_line(FILE *f, int exit_code, size_t runs) {
  static const struct {
    int code;
    const char *what;
  } meaning[] = {{0, "every run passed"}, {1, "a usage or configuration error"},
                 {2, "target unreachable"}, {3, "client self-check INVALID"},
                 {4, "NOT_PUBLISHABLE"}, {5, "the load engine failed"},
                 {99, "an SLO failed"}, {130, "interrupted"}};
  const char *what = "see the runs' summaries";
  for (size_t i = 0; i < sizeof meaning / sizeof meaning[0]; i++)
    if (meaning[i].code == exit_code)
      what = meaning[i].what;
  fputs("Verdict: ", f);
  part(f, im__color_on(f), exit_code != 0, exit_code == 0 ? "PASS" : "FAIL");
  fprintf(f, " (exit %d): %s (the worst of %zu run%s)\n", exit_code, what, runs,
          runs == 1 ? "" : "s");
  fflush(f);
}

/* Writes path through path.tmp and a rename. */
static int write_atomic(const char *path, int (*fill)(FILE *, const void *, char *, size_t),
                        const void *arg) {
  char tmp[4300], why[512] = "";
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    fprintf(stderr, "infermeter: cannot write %s: %s (check the directory's permissions and free "
                    "space)\n", tmp, strerror(errno));
    return -1;
  }
  int rc = fill(f, arg, why, sizeof why);
  int e = errno;
  if (fclose(f) && !rc) {
    rc = -1;
    e = errno;
  }
  if (!rc && rename(tmp, path)) {
    rc = -1;
    e = errno;
  }
  if (rc) {
    fprintf(stderr, "infermeter: cannot write %s: %s\n", path, why[0] ? why : strerror(e));
    unlink(tmp);
  }
  return rc;
}

struct req_arg {
  const char *jsonl;
  size_t rows;
};

static int fill_requests(FILE *f, const void *arg, char *why, size_t why_len) {
  struct req_arg *a = (struct req_arg *)arg;
  return im_csv_requests(a->jsonl, f, &a->rows, why, why_len) == IM_OK ? 0 : -1;
}

static int fill_summary(FILE *f, const void *arg, char *why, size_t why_len) {
  if (im_csv_summary(arg, f) == IM_OK)
    return 0;
  snprintf(why, why_len, "%s", strerror(errno ? errno : EIO));
  return -1;
}

int im__report_csv(const char *dir, const json_t *root) {
  char jsonl[4200], path[4200];
  snprintf(jsonl, sizeof jsonl, "%s/requests.jsonl", dir);
  struct req_arg ra = {.jsonl = jsonl};
  snprintf(path, sizeof path, "%s/requests.csv", dir);
  if (write_atomic(path, fill_requests, &ra))
    return -1;
  im_info("%s: %zu rows", path, ra.rows);
  snprintf(path, sizeof path, "%s/summary.csv", dir);
  if (write_atomic(path, fill_summary, root))
    return -1;
  im_info("%s written", path);
  return 0;
}

int im__report_json(FILE *f, const json_t *root) {
  const json_t *stages = json_object_get(root, "stages");
  json_t *doc;
  if (json_is_array(stages)) {
    doc = json_array();
    size_t i;
    json_t *st;
    json_array_foreach(stages, i, st) {
      json_t *one = json_pack("{s:O?, s:O?, s:O?}", "index", json_object_get(st, "index"),
                              "label", json_object_get(st, "label"), "summary",
                              json_object_get(st, "summary"));
      if (!doc || !one || json_array_append_new(doc, one)) {
        json_decref(doc);
        doc = NULL;
        break;
      }
    }
  } else {
    doc = json_incref(json_object_get(root, "summary"));
  }
  if (!doc) {
    fprintf(stderr, "infermeter: --json: the results have no summary (out of memory?)\n");
    return -1;
  }
  int rc = json_dumpf(doc, f, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
  json_decref(doc);
  if (rc || fputc('\n', f) == EOF || fflush(f)) {
    fprintf(stderr, "infermeter: --json: cannot write to standard output: %s\n", strerror(errno));
    return -1;
  }
  return 0;
}
