/* --output-format csv (DIR/requests.csv, DIR/summary.csv) and --json (the
 * summary on a stream): results/results.h. */
#include "results/results.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "report/csv.h"

/* Writes path through path.tmp and a rename. */
static enum im_err write_atomic(const char *path,
                                int (*fill)(FILE *, const void *, char *, size_t),
                                const void *arg, char *err, size_t err_len) {
  char tmp[4300], why[512] = "";
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f)
    return im_errf(err, err_len, IM_IO,
                   "cannot write %s: %s (check the directory's permissions and free space)", tmp,
                   strerror(errno));
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
    unlink(tmp);
    return im_errf(err, err_len, IM_IO, "cannot write %s: %s", path, why[0] ? why : strerror(e));
  }
  return IM_OK;
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

enum im_err im_results_csv(const char *dir, const json_t *root, char *err, size_t err_len) {
  char jsonl[4200], path[4200];
  snprintf(jsonl, sizeof jsonl, "%s/requests.jsonl", dir);
  struct req_arg ra = {.jsonl = jsonl};
  snprintf(path, sizeof path, "%s/requests.csv", dir);
  enum im_err e = write_atomic(path, fill_requests, &ra, err, err_len);
  if (e)
    return e;
  im_info("%s: %zu rows", path, ra.rows);
  snprintf(path, sizeof path, "%s/summary.csv", dir);
  e = write_atomic(path, fill_summary, root, err, err_len);
  if (!e)
    im_info("%s written", path);
  return e;
}

/* A copy of obj's summary with the verdicts beside the figures (--json
 * users see what the terminal's verdict line says): "verdict", with the
 * client self-check's and the validity audit's verdicts and the self-check's
 * one-line summary; NULL when out of memory. */
static json_t *summary_with_verdict(const json_t *obj) {
  json_t *sum = json_object_get(obj, "summary");
  json_t *doc = json_is_object(sum) ? json_copy(sum) : json_object();
  const json_t *audit = json_object_get(obj, "audit");
  const json_t *cc = json_object_get(audit, "client_check");
  const json_t *pub = json_object_get(audit, "publishable");
  json_t *v = json_pack("{s:O?, s:O?, s:O?, s:O?}", "client_check", json_object_get(cc, "verdict"),
                        "client_check_summary", json_object_get(cc, "summary"), "publishable",
                        json_object_get(pub, "verdict"), "interrupted",
                        json_object_get(obj, "interrupted"));
  if (!doc || !v || json_object_set_new(doc, "verdict", v)) {
    json_decref(doc);
    return NULL;
  }
  return doc;
}

enum im_err im_results_summary_json(FILE *f, const json_t *root, char *err, size_t err_len) {
  const json_t *stages = json_object_get(root, "stages");
  json_t *doc;
  if (json_is_array(stages)) {
    doc = json_array();
    size_t i;
    json_t *st;
    json_array_foreach(stages, i, st) {
      json_t *one = json_pack("{s:O?, s:O?, s:o?}", "index", json_object_get(st, "index"),
                              "label", json_object_get(st, "label"), "summary",
                              summary_with_verdict(st));
      if (!doc || !one || json_array_append_new(doc, one)) {
        json_decref(doc);
        doc = NULL;
        break;
      }
    }
  } else {
    doc = json_object_get(root, "summary") ? summary_with_verdict(root) : NULL;
  }
  if (!doc)
    return im_errf(err, err_len, IM_NOMEM,
                   "--json: the results have no summary (out of memory?)");
  int rc = json_dumpf(doc, f, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
  json_decref(doc);
  if (rc || fputc('\n', f) == EOF || fflush(f))
    return im_errf(err, err_len, IM_IO, "--json: cannot write the summary: %s", strerror(errno));
  return IM_OK;
}
