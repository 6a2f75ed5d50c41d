/* Reading the headline figures of results.json: see record/headline.h. */
#include "record/headline.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

static const struct {
  const char *name, *unit;
  const char *path[4]; /* keys below the stage object */
} figs[IM_FIG_COUNT] = {
    [IM_FIG_REQUEST_THROUGHPUT] = {"request_throughput",
                                   "req/s",
                                   {"summary", "request_throughput"}},
    [IM_FIG_OUTPUT_THROUGHPUT] = {"output_throughput", "tok/s", {"summary", "output_throughput"}},
    [IM_FIG_GOODPUT] = {"request_goodput", "req/s", {"summary", "request_goodput"}},
    [IM_FIG_TTFT_P50] = {"ttft_p50_ms", "ms", {"metrics", "latency_ms", "ttft", "p50"}},
    [IM_FIG_TTFT_P90] = {"ttft_p90_ms", "ms", {"metrics", "latency_ms", "ttft", "p90"}},
    [IM_FIG_TTFT_P99] = {"ttft_p99_ms", "ms", {"metrics", "latency_ms", "ttft", "p99"}},
    [IM_FIG_TPOT_P50] = {"tpot_p50_ms", "ms", {"metrics", "latency_ms", "tpot", "p50"}},
    [IM_FIG_TPOT_P90] = {"tpot_p90_ms", "ms", {"metrics", "latency_ms", "tpot", "p90"}},
    [IM_FIG_TPOT_P99] = {"tpot_p99_ms", "ms", {"metrics", "latency_ms", "tpot", "p99"}},
    [IM_FIG_ITL_P50] = {"itl_p50_ms", "ms", {"metrics", "latency_ms", "itl", "p50"}},
    [IM_FIG_ITL_P90] = {"itl_p90_ms", "ms", {"metrics", "latency_ms", "itl", "p90"}},
    [IM_FIG_ITL_P99] = {"itl_p99_ms", "ms", {"metrics", "latency_ms", "itl", "p99"}},
    [IM_FIG_E2EL_P50] = {"e2el_p50_ms", "ms", {"metrics", "latency_ms", "e2el", "p50"}},
    [IM_FIG_E2EL_P90] = {"e2el_p90_ms", "ms", {"metrics", "latency_ms", "e2el", "p90"}},
    [IM_FIG_E2EL_P99] = {"e2el_p99_ms", "ms", {"metrics", "latency_ms", "e2el", "p99"}},
    [IM_FIG_SLO_ATTAINMENT] = {"slo_attainment", "", {"metrics", "slo", "attainment", "all"}},
    [IM_FIG_EFFECTIVE_QPS] = {"effective_qps",
                              "req/s",
                              {"metrics", "effective_rate", "effective_qps"}},
};

const char *im_headline_fig_name(enum im_headline_fig f) {
  return (unsigned)f < IM_FIG_COUNT ? figs[f].name : NULL;
}

const char *im_headline_fig_unit(enum im_headline_fig f) {
  return (unsigned)f < IM_FIG_COUNT ? figs[f].unit : NULL;
}

static double fig_value(const json_t *stage, enum im_headline_fig f) {
  const json_t *v = stage;
  for (size_t i = 0; i < 4 && figs[f].path[i] && v; i++)
    v = json_object_get(v, figs[f].path[i]);
  return v && json_is_number(v) ? json_number_value(v) : NAN;
}

static void copy_str(char *dst, size_t cap, const json_t *v) {
  const char *s = json_is_string(v) ? json_string_value(v) : "";
  snprintf(dst, cap, "%s", s);
}

/* Compact, key-sorted JSON of v ("null" when v is NULL) into dst; IM_LIMIT
 * when it does not fit. */
static enum im_err canon(char *dst, size_t cap, const json_t *v) {
  if (!v) {
    snprintf(dst, cap, "null");
    return IM_OK;
  }
  size_t need = json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
  if (need == 0 || need >= cap)
    return IM_LIMIT;
  if (json_dumpb(v, dst, cap - 1, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) != need)
    return IM_LIMIT;
  dst[need] = '\0';
  return IM_OK;
}

static enum im_err read_stage(const json_t *s, struct im_headline_stage *out) {
  for (int f = 0; f < IM_FIG_COUNT; f++)
    out->v[f] = fig_value(s, (enum im_headline_fig)f);
  copy_str(out->label, sizeof out->label, json_object_get(s, "label"));
  return IM_OK;
}

enum im_err im_headline_read(const char *dir, struct im_headline *out, char *msg, size_t msg_len) {
  char path[IM_HEADLINE_PATH + 32];
  memset(out, 0, sizeof *out);
  if (strlen(dir) >= sizeof out->dir)
    return im_errf(msg, msg_len, IM_LIMIT, "%s: path too long", dir);
  snprintf(out->dir, sizeof out->dir, "%s", dir);
  snprintf(path, sizeof path, "%s/results.json", dir);
  struct stat st;
  if (stat(path, &st) != 0)
    return im_errf(msg, msg_len, IM_NOTFOUND,
                   "%s: %s (is it a run directory? `infermeter report DIR` writes it)", path,
                   strerror(errno));
  if (!S_ISREG(st.st_mode))
    return im_errf(msg, msg_len, IM_PARSE, "%s: not a regular file", path);
  if ((uint64_t)st.st_size > IM_HEADLINE_MAX_FILE)
    return im_errf(msg, msg_len, IM_LIMIT, "%s: larger than %u MiB", path,
                   IM_HEADLINE_MAX_FILE >> 20);
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  if (!root)
    return im_errf(msg, msg_len, IM_PARSE, "%s:%d: %s", path, jerr.line, jerr.text);
  enum im_err e = IM_PARSE;
  const json_t *man = json_object_get(root, "manifest");
  if (!json_is_object(man)) {
    e = im_errf(msg, msg_len, IM_PARSE, "%s: no manifest object (not a results.json?)", path);
    goto out;
  }
  copy_str(out->started_at, sizeof out->started_at, json_object_get(man, "started_at"));
  const json_t *tgt = json_object_get(man, "target");
  copy_str(out->target, sizeof out->target, json_object_get(tgt, "url"));
  copy_str(out->model, sizeof out->model, json_object_get(tgt, "model"));
  const json_t *audit = json_object_get(root, "audit");
  if (!audit) { /* a multi-stage run: the first stage's audit */
    const json_t *s0 = json_array_get(json_object_get(root, "stages"), 0);
    audit = json_object_get(s0, "audit");
  }
  copy_str(out->verdict, sizeof out->verdict,
           json_object_get(json_object_get(audit, "client_check"), "verdict"));
  copy_str(out->publishable, sizeof out->publishable,
           json_object_get(json_object_get(audit, "publishable"), "verdict"));
  /* The schedule identity includes the stage plan when the manifest has
   * one (a sweep's stages are part of what was run). */
  json_t *sched = json_deep_copy(json_object_get(man, "schedule"));
  if (sched && json_is_object(sched) && json_object_get(man, "stages"))
    json_object_set(sched, "stages", json_object_get(man, "stages"));
  enum im_err ce = canon(out->tags, sizeof out->tags, json_object_get(man, "tags"));
  if (ce == IM_OK)
    ce = canon(out->schedule, sizeof out->schedule, sched);
  if (ce == IM_OK)
    ce = canon(out->workload, sizeof out->workload, json_object_get(man, "workload"));
  json_decref(sched);
  /* What the server declared: compared, never a reason to refuse (a server
   * setting is what an A/B comparison usually changes). */
  const json_t *srv = json_object_get(man, "server");
  const json_t *decl = json_object_get(json_object_get(srv, "engine"), "settings");
  if (!json_is_object(decl))
    decl = json_object_get(json_object_get(srv, "version"), "config");
  if (canon(out->server, sizeof out->server, json_is_object(decl) ? decl : NULL) != IM_OK)
    snprintf(out->server, sizeof out->server, "null");
  if (ce != IM_OK) {
    e = im_errf(msg, msg_len, ce, "%s: manifest tags, schedule or workload longer than %d bytes",
                path, IM_HEADLINE_IDENT);
    goto out;
  }
  const json_t *stages = json_object_get(root, "stages");
  if (json_is_array(stages)) {
    size_t n = json_array_size(stages);
    if (n == 0) {
      e = im_errf(msg, msg_len, IM_PARSE, "%s: empty stages array", path);
      goto out;
    }
    if (n > IM_HEADLINE_MAX_STAGES) {
      e = im_errf(msg, msg_len, IM_LIMIT, "%s: %zu stages, more than %d", path, n,
                  IM_HEADLINE_MAX_STAGES);
      goto out;
    }
    for (size_t i = 0; i < n; i++)
      (void)read_stage(json_array_get(stages, i), &out->stage[i]);
    out->n_stages = n;
  } else {
    if (!json_is_object(json_object_get(root, "summary"))) {
      e = im_errf(msg, msg_len, IM_PARSE, "%s: neither stages[] nor a summary object", path);
      goto out;
    }
    (void)read_stage(root, &out->stage[0]);
    out->n_stages = 1;
  }
  e = IM_OK;
out:
  json_decref(root);
  return e;
}

static int cmp_index(const void *a, const void *b) {
  unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
  return x < y ? -1 : x > y;
}

enum im_err im_headline_list_runs(const char *dir, char (*paths)[IM_HEADLINE_PATH], size_t cap,
                                  size_t *n, bool *is_repeat, char *msg, size_t msg_len) {
  *n = 0;
  *is_repeat = false;
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return im_errf(msg, msg_len, IM_NOTFOUND, "%s: not a directory", dir);
  DIR *d = opendir(dir);
  if (!d)
    return im_errf(msg, msg_len, IM_IO, "%s: %s", dir, strerror(errno));
  unsigned long idx[IM_HEADLINE_MAX_RUNS];
  size_t k = 0;
  enum im_err e = IM_OK;
  struct dirent *de;
  while ((de = readdir(d))) {
    char *end;
    if (strncmp(de->d_name, "run-", 4) || de->d_name[4] < '0' || de->d_name[4] > '9')
      continue;
    errno = 0;
    unsigned long v = strtoul(de->d_name + 4, &end, 10);
    if (*end || errno)
      continue;
    char p[IM_HEADLINE_PATH + 64];
    snprintf(p, sizeof p, "%s/%s/results.json", dir, de->d_name);
    if (stat(p, &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (k >= cap || k >= IM_HEADLINE_MAX_RUNS) {
      e = im_errf(msg, msg_len, IM_LIMIT, "%s: more than %zu runs", dir,
                  cap < IM_HEADLINE_MAX_RUNS ? cap : (size_t)IM_HEADLINE_MAX_RUNS);
      break;
    }
    idx[k++] = v;
  }
  closedir(d);
  if (e != IM_OK)
    return e;
  if (k == 0) {
    if (cap < 1)
      return im_errf(msg, msg_len, IM_LIMIT, "%s: no room for a run", dir);
    if ((size_t)snprintf(paths[0], IM_HEADLINE_PATH, "%s", dir) >= IM_HEADLINE_PATH)
      return im_errf(msg, msg_len, IM_LIMIT, "%s: path too long", dir);
    *n = 1;
    return IM_OK;
  }
  qsort(idx, k, sizeof idx[0], cmp_index);
  for (size_t i = 0; i < k; i++)
    if ((size_t)snprintf(paths[i], IM_HEADLINE_PATH, "%s/run-%lu", dir, idx[i]) >= IM_HEADLINE_PATH)
      return im_errf(msg, msg_len, IM_LIMIT, "%s: path too long", dir);
  *n = k;
  *is_repeat = true;
  return IM_OK;
}

/* "key: a vs b" at out + *used. */
static void append(char *out, size_t out_len, size_t *used, const char *a, const char *b,
                   const char *c) {
  if (*used >= out_len)
    return;
  int w = snprintf(out + *used, out_len - *used, "%s: %s vs %s", a, b, c);
  if (w > 0)
    *used += (size_t)w < out_len - *used ? (size_t)w : out_len - *used - 1;
}

bool im_headline_diff(const char *prefix, const char *a, const char *b, char *out, size_t out_len) {
  if (out_len)
    out[0] = '\0';
  if (!strcmp(a, b))
    return false;
  size_t used = 0;
  json_t *ja = json_loads(a, JSON_DECODE_ANY, NULL), *jb = json_loads(b, JSON_DECODE_ANY, NULL);
  if (json_is_object(ja) && json_is_object(jb)) {
    const char *key;
    json_t *va;
    const char *sep = "";
    /* Keys of a (changed or removed), then keys only in b. */
    json_object_foreach(ja, key, va) {
      json_t *vb = json_object_get(jb, key);
      if (vb && json_equal(va, vb))
        continue;
      char *sa = json_dumps(va, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
      char *sb = vb ? json_dumps(vb, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
      char kb[256];
      snprintf(kb, sizeof kb, "%s%s%s", sep, prefix, key);
      append(out, out_len, &used, kb, sa ? sa : "?", sb ? sb : "(absent)");
      free(sa);
      free(sb);
      sep = "; ";
    }
    json_t *vb;
    json_object_foreach(jb, key, vb) {
      if (json_object_get(ja, key))
        continue;
      char *sb = json_dumps(vb, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
      char kb[256];
      snprintf(kb, sizeof kb, "%s%s%s", sep, prefix, key);
      append(out, out_len, &used, kb, "(absent)", sb ? sb : "?");
      free(sb);
      sep = "; ";
    }
  } else {
    char kb[256];
    snprintf(kb, sizeof kb, "%.*s",
             (int)(strlen(prefix) && prefix[strlen(prefix) - 1] == '.' ? strlen(prefix) - 1
                                                                       : strlen(prefix)),
             prefix);
    append(out, out_len, &used, kb, a, b);
  }
  json_decref(ja);
  json_decref(jb);
  return true;
}

void im_headline_digest(const struct im_headline *h, char out[17]) {
  uint64_t x = 0xcbf29ce484222325ull;
  const char *parts[4] = {h->model, h->schedule, h->workload, h->tags};
  for (int i = 0; i < 4; i++) {
    for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++) {
      x ^= *p;
      x *= 0x100000001b3ull;
    }
    x ^= 0xff; /* separator: ("ab","c") and ("a","bc") differ */
    x *= 0x100000001b3ull;
  }
  snprintf(out, 17, "%016llx", (unsigned long long)x);
}
