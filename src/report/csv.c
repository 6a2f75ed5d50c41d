/* CSV renderings of a run directory (csv.h). */
#include "report/csv.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- fields and rows ------------------------------------------------------ */

enum im_err im_csv_field(FILE *out, const char *s, size_t n) {
  bool quote = false;
  for (size_t i = 0; i < n && !quote; i++)
    quote = s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n';
  if (!quote)
    return fwrite(s, 1, n, out) == n ? IM_OK : IM_IO;
  if (fputc('"', out) == EOF)
    return IM_IO;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '"' && fputc('"', out) == EOF)
      return IM_IO;
    if (fputc(s[i], out) == EOF)
      return IM_IO;
  }
  return fputc('"', out) == EOF ? IM_IO : IM_OK;
}

static enum im_err sep(FILE *out, size_t col) {
  return col && fputc(',', out) == EOF ? IM_IO : IM_OK;
}

static enum im_err row_end(FILE *out) { return fputs("\r\n", out) == EOF ? IM_IO : IM_OK; }

/* A real. prec 10: as jansson writes it with JSON_REAL_PRECISION(10), the
 * way results.json is written ("%.10g", ".0" added to a whole number), so
 * summary.csv holds the same text as results.json. prec 0: the shortest
 * form that reads back as v (whole numbers below 1e15 without exponent). */
static void fmt_real(double v, char *buf, size_t len, int prec) {
  if (prec) {
    snprintf(buf, len, "%.*g", prec, v);
  } else if (v == floor(v) && fabs(v) < 1e15) {
    snprintf(buf, len, "%.0f", v);
  } else {
    for (int p = 1; p <= 17; p++) {
      snprintf(buf, len, "%.*g", p, v);
      if (strtod(buf, NULL) == v)
        break;
    }
  }
  if (isfinite(v) && !strpbrk(buf, ".eE") && strlen(buf) + 3 <= len)
    strcat(buf, ".0");
}

/* A scalar's text: "" for null (and for anything not a scalar). */
static const char *scalar_text(const json_t *v, char *buf, size_t len, int prec) {
  switch (json_typeof(v)) {
  case JSON_STRING: return json_string_value(v);
  case JSON_INTEGER: snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); return buf;
  case JSON_REAL: fmt_real(json_real_value(v), buf, len, prec); return buf;
  case JSON_TRUE: return "true";
  case JSON_FALSE: return "false";
  default: return "";
  }
}

static enum im_err put_value(FILE *out, const json_t *v, int prec) {
  char num[64];
  const char *s = v ? scalar_text(v, num, sizeof num, prec) : "";
  size_t n = v && json_is_string(v) ? json_string_length(v) : strlen(s);
  return im_csv_field(out, s, n);
}

static enum im_err put_real(FILE *out, double v, bool defined) {
  char num[64] = "";
  if (defined)
    fmt_real(v, num, sizeof num, 0);
  return im_csv_field(out, num, strlen(num));
}

/* ---- columns: flattened scalar keys ----------------------------------------- */

struct cols {
  char **name;
  size_t n, cap;
};

static bool cols_has(const struct cols *c, const char *name) {
  for (size_t i = 0; i < c->n; i++)
    if (!strcmp(c->name[i], name))
      return true;
  return false;
}

static enum im_err cols_add(struct cols *c, const char *name) {
  if (cols_has(c, name))
    return IM_OK;
  if (c->n == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 64;
    char **v = realloc(c->name, cap * sizeof *v);
    if (!v)
      return IM_NOMEM;
    c->name = v;
    c->cap = cap;
  }
  if (!(c->name[c->n] = strdup(name)))
    return IM_NOMEM;
  c->n++;
  return IM_OK;
}

static void cols_free(struct cols *c) {
  for (size_t i = 0; i < c->n; i++)
    free(c->name[i]);
  free(c->name);
}

/* flat[name] = each scalar of obj under its flattened name (the names
 * the columns have; keys may hold dots themselves: p99.9_ttft_ms). */
static enum im_err flatten(const json_t *obj, const char *prefix, json_t *flat) {
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)obj, k, v) {
    char name[512];
    snprintf(name, sizeof name, "%s%s%s", prefix, prefix[0] ? "." : "", k);
    enum im_err e = IM_OK;
    if (json_is_object(v))
      e = flatten(v, name, flat);
    else if (!json_is_array(v) && json_object_set(flat, name, v))
      e = IM_NOMEM;
    if (e)
      return e;
  }
  return IM_OK;
}

/* The row of obj: its flattened scalars (a new object; NULL: out of memory). */
static json_t *flat_row(const json_t *obj) {
  json_t *flat = json_object();
  if (flat && json_is_object(obj) && flatten(obj, "", flat)) {
    json_decref(flat);
    return NULL;
  }
  return flat;
}

/* Adds the scalar keys of obj (objects flattened, arrays left out) that
 * are not columns yet. */
static enum im_err cols_collect(struct cols *c, const json_t *obj) {
  json_t *flat = flat_row(obj);
  enum im_err e = flat ? IM_OK : IM_NOMEM;
  const char *k;
  json_t *v;
  if (flat)
    json_object_foreach(flat, k, v) {
      if ((e = cols_add(c, k)))
        break;
    }
  json_decref(flat);
  return e;
}

static enum im_err put_header(FILE *out, const char *const *first, size_t n_first,
                              const struct cols *c, const char *const *last, size_t n_last) {
  size_t col = 0;
  enum im_err e = IM_OK;
  for (size_t i = 0; !e && i < n_first; i++)
    if (!(e = sep(out, col++)))
      e = im_csv_field(out, first[i], strlen(first[i]));
  for (size_t i = 0; !e && i < c->n; i++)
    if (!(e = sep(out, col++)))
      e = im_csv_field(out, c->name[i], strlen(c->name[i]));
  for (size_t i = 0; !e && i < n_last; i++)
    if (!(e = sep(out, col++)))
      e = im_csv_field(out, last[i], strlen(last[i]));
  return e ? e : row_end(out);
}

/* ---- requests.csv ------------------------------------------------------------ */

/* Reads the next line of f that parses as a JSON object into *obj (NULL at
 * the end). */
static enum im_err next_object(FILE *f, char **line, size_t *cap, json_t **obj) {
  *obj = NULL;
  ssize_t len;
  errno = 0;
  while ((len = getline(line, cap, f)) >= 0) {
    json_t *o = json_loadb(*line, (size_t)len, 0, NULL);
    if (json_is_object(o)) {
      *obj = o;
      return IM_OK;
    }
    json_decref(o);
  }
  return ferror(f) ? IM_IO : IM_OK;
}

static bool time_of(const json_t *o, const char *key, int64_t *t) {
  const json_t *v = json_object_get(o, key);
  if (!json_is_integer(v) || json_integer_value(v) < 0)
    return false;
  *t = (int64_t)json_integer_value(v);
  return true;
}

/* The attempt's ttft, tpot and e2el (ms) as docs/metrics.md §1 defines
 * them: ttft = t_first - t_start, e2el = t_last - t_start, tpot = (e2el -
 * ttft) / (output_tokens - 1) for at least 2 output tokens. */
static enum im_err put_latencies(FILE *out, const json_t *o) {
  int64_t start, first, last;
  bool has_start = time_of(o, "t_start", &start);
  bool has_ttft = has_start && time_of(o, "t_first", &first);
  bool has_e2el = has_start && time_of(o, "t_last", &last);
  const json_t *nv = json_object_get(o, "output_tokens");
  json_int_t n_out = json_is_integer(nv) ? json_integer_value(nv) : 0;
  double ttft = has_ttft ? (double)(first - start) / 1e6 : 0;
  double e2el = has_e2el ? (double)(last - start) / 1e6 : 0;
  enum im_err e;
  if ((e = sep(out, 1)) || (e = put_real(out, ttft, has_ttft)) || (e = sep(out, 1)) ||
      (e = put_real(out, has_ttft && has_e2el && n_out >= 2 ? (e2el - ttft) / (double)(n_out - 1)
                                                              : 0,
                    has_ttft && has_e2el && n_out >= 2)) ||
      (e = sep(out, 1)))
    return e;
  return put_real(out, e2el, has_e2el);
}

enum im_err im_csv_requests(const char *jsonl_path, FILE *out, size_t *rows, char *why,
                            size_t why_len) {
  static const char *const derived[] = {"ttft_ms", "tpot_ms", "e2el_ms"};
  *rows = 0;
  FILE *f = fopen(jsonl_path, "r");
  if (!f)
    return im_errf(why, why_len, IM_IO, "%s: %s", jsonl_path, strerror(errno));
  struct cols c = {0};
  char *line = NULL;
  size_t cap = 0;
  json_t *o = NULL;
  enum im_err e;
  /* Pass 1: the columns. */
  while (!(e = next_object(f, &line, &cap, &o)) && o) {
    e = cols_collect(&c, o);
    json_decref(o);
    if (e)
      break;
  }
  if (!e)
    e = put_header(out, NULL, 0, &c, derived, 3);
  /* Pass 2: the rows. */
  if (!e && fseek(f, 0, SEEK_SET))
    e = IM_IO;
  while (!e && !(e = next_object(f, &line, &cap, &o)) && o) {
    json_t *flat = flat_row(o);
    e = flat ? IM_OK : IM_NOMEM;
    for (size_t i = 0; !e && i < c.n; i++)
      if (!(e = sep(out, i)))
        e = put_value(out, json_object_get(flat, c.name[i]), 0);
    if (!e && !(e = put_latencies(out, o)) && !(e = row_end(out)))
      (*rows)++;
    json_decref(flat);
    json_decref(o);
  }
  if (e == IM_IO)
    im_errf(why, why_len, IM_IO, "%s: %s", jsonl_path, strerror(errno ? errno : EIO));
  else if (e == IM_NOMEM)
    im_errf(why, why_len, IM_NOMEM, "out of memory");
  free(line);
  cols_free(&c);
  fclose(f);
  return e;
}

/* ---- summary.csv ------------------------------------------------------------- */

enum im_err im_csv_summary(const json_t *results, FILE *out) {
  static const char *const first[] = {"stage", "label"};
  const json_t *stages = json_object_get(results, "stages");
  size_t n = json_is_array(stages) ? json_array_size(stages) : 1;
  struct cols c = {0};
  enum im_err e = IM_OK;
  for (size_t i = 0; !e && i < n; i++) {
    const json_t *st = json_is_array(stages) ? json_array_get(stages, i) : results;
    const json_t *sum = json_object_get(st, "summary");
    if (json_is_object(sum))
      e = cols_collect(&c, sum);
  }
  if (!e)
    e = put_header(out, first, 2, &c, NULL, 0);
  for (size_t i = 0; !e && i < n; i++) {
    const json_t *st = json_is_array(stages) ? json_array_get(stages, i) : results;
    json_t *sum = flat_row(json_object_get(st, "summary"));
    const json_t *idx = json_object_get(st, "index");
    if (!sum) {
      e = IM_NOMEM;
      break;
    }
    char num[32];
    snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT,
             json_is_integer(idx) ? json_integer_value(idx) : (json_int_t)i);
    if (!(e = im_csv_field(out, num, strlen(num))) && !(e = sep(out, 1)))
      e = put_value(out, json_object_get(st, "label"), 10);
    for (size_t k = 0; !e && k < c.n; k++)
      if (!(e = sep(out, 1)))
        e = put_value(out, json_object_get(sum, c.name[k]), 10);
    if (!e)
      e = row_end(out);
    json_decref(sum);
  }
  cols_free(&c);
  return e;
}
