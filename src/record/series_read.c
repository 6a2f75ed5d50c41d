/* series.jsonl reader (contract in series.h): one line at a time through
 * jansson into plain arrays; whatever a line lacks or gets wrong makes it
 * a counted bad line, never a half-added point. */
#include "record/series.h"
#include "record/json_get.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum im_err im_series_new(struct im_series_set **out) {
  *out = calloc(1, sizeof **out);
  return *out ? IM_OK : IM_NOMEM;
}

void im_series_free(struct im_series_set *s) {
  if (!s)
    return;
  for (size_t i = 0; i < IM_SERIES_MAX_SOURCES; i++) {
    free(s->src[i].pts);
    free(s->src[i].per_series);
  }
  free(s->tcp);
  free(s->gpu);
  free(s->client);
  free(s);
}

int im_series_name_index(const struct im_series_set *s, const char *name) {
  for (size_t i = 0; i < s->n_names; i++)
    if (!strcmp(s->names[i], name))
      return (int)i;
  return -1;
}

static int name_intern(struct im_series_set *s, const char *name) {
  int i = im_series_name_index(s, name);
  if (i >= 0)
    return i;
  if (s->n_names == IM_SERIES_MAX_NAMES || strlen(name) >= IM_SERIES_NAME_LEN) {
    s->names_dropped++;
    return -1;
  }
  snprintf(s->names[s->n_names], IM_SERIES_NAME_LEN, "%s", name);
  return (int)s->n_names++;
}

void im_series_add_bad(struct im_series_set *s, enum im_series_bad_kind kind) {
  s->lines++;
  if (s->n_bad < IM_SERIES_MAX_BAD)
    s->bad[s->n_bad] = (struct im_series_bad){.line = s->lines, .kind = kind};
  s->n_bad++;
}

static size_t total_points(const struct im_series_set *s) {
  size_t n = s->n_tcp + s->n_gpu + s->n_client;
  for (size_t i = 0; i < s->n_src; i++)
    n += s->src[i].n_pts;
  return n;
}

/* Room for one more point at the end of *arr (n elements of size, *cap
 * allocated): NULL when the set is full (counted in points_dropped) or out
 * of memory (*nomem set; the array is unchanged). */
static void *room(struct im_series_set *s, void **arr, size_t *cap, size_t n, size_t size,
                  bool *nomem) {
  if (total_points(s) >= IM_SERIES_MAX_POINTS) {
    s->points_dropped++;
    return NULL;
  }
  if (n == *cap) {
    size_t c = *cap ? *cap * 2 : 64;
    void *p = realloc(*arr, c * size);
    if (!p) {
      *nomem = true;
      return NULL;
    }
    *arr = p;
    *cap = c;
  }
  return (char *)*arr + n * size;
}

/* ---- field readers: false when the field is missing or of a wrong type */

static bool get_num(const json_t *o, const char *k, double *out) {
  const json_t *v = json_object_get(o, k);
  if (!json_is_number(v) && !json_is_null(v))
    return false;
  *out = im_json_num(v, NAN);
  return true;
}

static bool get_int(const json_t *o, const char *k, int64_t *out) {
  const json_t *v = json_object_get(o, k);
  if (!json_is_integer(v))
    return false;
  *out = (int64_t)json_integer_value(v);
  return true;
}

/* A time in ns: within IM_SERIES_T_MAX of 0, so that differences of two
 * never overflow. */
static bool get_time(const json_t *o, const char *k, int64_t *out) {
  return get_int(o, k, out) && *out <= IM_SERIES_T_MAX && *out >= -IM_SERIES_T_MAX;
}

static bool get_u32(const json_t *o, const char *k, uint32_t *out) {
  int64_t v;
  if (!get_int(o, k, &v) || v < 0 || v > UINT32_MAX)
    return false;
  *out = (uint32_t)v;
  return true;
}

static bool get_str(const json_t *o, const char *k, char *out, size_t outlen) {
  const char *v = json_string_value(json_object_get(o, k));
  if (!v)
    return false;
  snprintf(out, outlen, "%s", v);
  return true;
}

/* The source a line names; NULL when the index is missing or too big. */
static struct im_series_source *source_of(struct im_series_set *s, const json_t *o) {
  int64_t i;
  if (!get_int(o, "source", &i) || i < 0 || i >= IM_SERIES_MAX_SOURCES)
    return NULL;
  struct im_series_source *src = &s->src[i];
  if ((size_t)i >= s->n_src)
    s->n_src = (size_t)i + 1;
  const json_t *url = json_object_get(o, "url");
  if (json_is_string(url) && !src->url[0])
    snprintf(src->url, sizeof src->url, "%s", json_string_value(url));
  if (json_is_boolean(json_object_get(o, "dcgm")))
    src->dcgm = json_is_true(json_object_get(o, "dcgm"));
  src->seen = true;
  return src;
}

static bool read_hist(const json_t *o, struct im_series_hist *h) {
  memset(h, 0, sizeof *h);
  if (!o)
    return true;
  const json_t *le = json_object_get(o, "le"), *cnt = json_object_get(o, "count");
  size_t n = json_array_size(le);
  if (!json_is_object(o) || !json_is_array(le) || !json_is_array(cnt) ||
      json_array_size(cnt) != n || n > IM_SERIES_MAX_BUCKETS)
    return false;
  for (size_t i = 0; i < n; i++) {
    const json_t *l = json_array_get(le, i);
    if (json_is_string(l) && !strcmp(json_string_value(l), "+Inf"))
      h->b[i].le = INFINITY;
    else if (json_is_number(l))
      h->b[i].le = json_number_value(l);
    else
      return false;
    h->b[i].count = im_json_num(json_array_get(cnt, i), NAN);
  }
  h->n = n;
  return get_num(o, "sum", &h->sum) && get_num(o, "count_total", &h->count);
}

static bool engines_valid(const json_t *eng) {
  if (!json_is_array(eng))
    return false;
  for (size_t i = 0; i < json_array_size(eng); i++)
    if (!json_is_string(json_array_get(eng, i)))
      return false;
  return true;
}

static void add_engines(struct im_series_source *src, const json_t *eng) {
  for (size_t i = 0; i < json_array_size(eng); i++) {
    const char *e = json_string_value(json_array_get(eng, i));
    bool have = false;
    for (size_t k = 0; k < src->n_engines && !have; k++)
      have = !strcmp(src->engines[k], e);
    if (!have && src->n_engines < IM_SERIES_MAX_ENGINES)
      snprintf(src->engines[src->n_engines++], IM_SERIES_NAME_LEN, "%s", e);
  }
}

/* The per_series array into a new array *out (n_out entries). */
static bool read_labelled(const json_t *arr, struct im_series_labelled **out, size_t *n_out,
                          bool *nomem) {
  size_t n = json_array_size(arr);
  if (!json_is_array(arr) || n > IM_SERIES_MAX_PER_SERIES)
    return false;
  struct im_series_labelled *l = calloc(n ? n : 1, sizeof *l);
  if (!l) {
    *nomem = true;
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    const json_t *e = json_array_get(arr, i);
    const char *c = json_string_value(json_array_get(e, 0)), *g = json_string_value(json_array_get(e, 1)),
               *k = json_string_value(json_array_get(e, 2));
    const json_t *v = json_array_get(e, 3);
    if (!c || !g || !k || (!json_is_number(v) && !json_is_null(v))) {
      free(l);
      return false;
    }
    snprintf(l[i].concept, sizeof l[i].concept, "%s", c);
    snprintf(l[i].engine, sizeof l[i].engine, "%s", g);
    snprintf(l[i].key, sizeof l[i].key, "%s", k);
    l[i].value = im_json_num(v, NAN);
  }
  *out = l;
  *n_out = n;
  return true;
}

static bool read_raw(const json_t *arr, struct im_series_raw *raw, size_t *n_out) {
  if (!json_is_array(arr) || json_array_size(arr) > IM_SERIES_MAX_RAW)
    return false;
  size_t n = json_array_size(arr);
  for (size_t i = 0; i < n; i++) {
    const json_t *e = json_array_get(arr, i);
    const char *m = json_string_value(json_array_get(e, 0)), *l = json_string_value(json_array_get(e, 1));
    const json_t *v = json_array_get(e, 2);
    if (!m || !l || (!json_is_number(v) && !json_is_null(v)))
      return false;
    snprintf(raw[i].metric, sizeof raw[i].metric, "%s", m);
    snprintf(raw[i].label, sizeof raw[i].label, "%s", l);
    raw[i].value = im_json_num(v, NAN);
  }
  *n_out = n;
  return true;
}

static bool read_values(struct im_series_set *s, const json_t *v, struct im_series_server *p) {
  if (!json_is_object(v))
    return false;
  for (size_t i = 0; i < IM_SERIES_MAX_NAMES; i++)
    p->v[i] = NAN;
  const char *k;
  const json_t *x;
  json_object_foreach((json_t *)v, k, x) {
    if (!json_is_number(x) && !json_is_null(x))
      return false;
    int i = name_intern(s, k);
    if (i >= 0)
      p->v[i] = im_json_num(x, NAN);
  }
  return true;
}

/* A server line; *nomem on allocation failure. Nothing of the line is
 * kept unless all of it reads. */
static bool add_server(struct im_series_set *s, const json_t *o, bool *nomem) {
  struct im_series_source *src = source_of(s, o);
  struct im_series_server pt;
  struct im_series_raw raw[IM_SERIES_MAX_RAW];
  struct im_series_labelled *lab = NULL;
  size_t n_raw = 0, n_lab = 0;
  const json_t *h = json_object_get(o, "hist"), *eng = json_object_get(o, "engines");
  int64_t malformed = 0;
  if (!src || !get_time(o, "t_mono", &pt.t_mono) || !get_int(o, "malformed_lines", &malformed) ||
      malformed < 0 || !json_is_object(h) || !read_hist(json_object_get(h, "ttft"), &pt.ttft) ||
      !read_hist(json_object_get(h, "itl"), &pt.itl) || !engines_valid(eng) ||
      !read_raw(json_object_get(o, "raw"), raw, &n_raw) ||
      !read_values(s, json_object_get(o, "v"), &pt) ||
      !read_labelled(json_object_get(o, "per_series"), &lab, &n_lab, nomem))
    return false;
  pt.malformed_lines = (uint64_t)malformed;
  struct im_series_server *p = room(s, (void **)&src->pts, &src->cap_pts, src->n_pts, sizeof *p, nomem);
  if (*nomem) {
    free(lab);
    return false;
  }
  if (p) {
    *p = pt;
    src->n_pts++;
  }
  add_engines(src, eng);
  memcpy(src->raw, raw, n_raw * sizeof raw[0]);
  src->n_raw = n_raw;
  free(src->per_series);
  src->per_series = lab;
  src->n_per_series = n_lab;
  return true;
}

static bool add_tcp(struct im_series_set *s, const json_t *o, bool *nomem) {
  struct im_series_tcp t = {0};
  const json_t *st = json_object_get(o, "state");
  const char *path = json_string_value(json_object_get(o, "path"));
  if (!get_time(o, "t_mono", &t.t_mono) || !path || json_array_size(st) != IM_TCP_NSTATES ||
      !get_u32(o, "total", &t.total) || !get_u32(o, "skipped", &t.skipped))
    return false;
  t.procfs = !strcmp(path, "procfs");
  for (size_t i = 0; i < IM_TCP_NSTATES; i++) {
    json_int_t v = json_integer_value(json_array_get(st, i));
    if (!json_is_integer(json_array_get(st, i)) || v < 0 || v > UINT32_MAX)
      return false;
    t.state[i] = (uint32_t)v;
  }
  struct im_series_tcp *p = room(s, (void **)&s->tcp, &s->cap_tcp, s->n_tcp, sizeof *p, nomem);
  if (p) {
    *p = t;
    s->n_tcp++;
  }
  return !*nomem;
}

static bool get_u64_or_null(const json_t *o, const char *k, bool *has, uint64_t *out) {
  const json_t *v = json_object_get(o, k);
  *has = json_is_integer(v) && json_integer_value(v) >= 0;
  *out = *has ? (uint64_t)json_integer_value(v) : 0;
  return *has || json_is_null(v);
}

static bool read_gpu(const json_t *o, struct im_gpu_sample *g) {
  bool has_total;
  if (!json_is_object(o) || !get_str(o, "name", g->name, sizeof g->name) ||
      !get_u64_or_null(o, "mem_used_bytes", &g->has_mem, &g->mem_used_bytes) ||
      !get_u64_or_null(o, "mem_total_bytes", &has_total, &g->mem_total_bytes) ||
      !get_u64_or_null(o, "energy_mj", &g->has_energy, &g->energy_mj))
    return false;
  g->has_mem = g->has_mem && has_total;
  return get_num(o, "util_gpu_pct", &g->util_gpu_pct) && get_num(o, "util_mem_pct", &g->util_mem_pct) &&
         get_num(o, "sm_clock_mhz", &g->sm_clock_mhz) && get_num(o, "power_w", &g->power_w) &&
         get_num(o, "dram_bw_util", &g->dram_bw_util) && get_num(o, "tensor_active", &g->tensor_active) &&
         get_num(o, "sm_active", &g->sm_active);
}

static bool add_gpu(struct im_series_set *s, const json_t *o, bool *nomem) {
  const json_t *gpus = json_object_get(o, "gpus");
  int64_t t;
  if (!get_time(o, "t_mono", &t) || !json_is_array(gpus) || json_array_size(gpus) > IM_GPU_MAX)
    return false;
  struct im_gpu_snapshot *g = room(s, (void **)&s->gpu, &s->cap_gpu, s->n_gpu, sizeof *g, nomem);
  if (!g)
    return !*nomem;
  memset(g, 0, sizeof *g);
  g->t_ns = t;
  g->n_gpus = (unsigned)json_array_size(gpus);
  for (unsigned i = 0; i < g->n_gpus; i++)
    if (!read_gpu(json_array_get(gpus, i), &g->gpu[i]))
      return false; /* not counted: n_gpu unchanged */
  s->n_gpu++;
  return true;
}

static bool add_client(struct im_series_set *s, const json_t *o, bool *nomem) {
  struct im_series_client c;
  if (!get_u32(o, "stage", &c.stage) || !get_u32(o, "thread", &c.thread) || !get_time(o, "t", &c.t) ||
      !get_num(o, "cpu_share", &c.cpu_share) ||
      !get_num(o, "dispatch_lag_max_ms", &c.dispatch_lag_max_ms) || !get_int(o, "in_flight", &c.in_flight))
    return false;
  struct im_series_client *p = room(s, (void **)&s->client, &s->cap_client, s->n_client, sizeof *p, nomem);
  if (p) {
    *p = c;
    s->n_client++;
  }
  return !*nomem;
}

static bool add_other(struct im_series_set *s, const char *kind, const json_t *o) {
  if (!strcmp(kind, "source"))
    return source_of(s, o) != NULL;
  if (!strcmp(kind, "scrape_error")) {
    struct im_series_source *src = source_of(s, o);
    int64_t t;
    char why[IM_SERIES_REASON_LEN];
    if (!src || !get_time(o, "t_mono", &t) || !get_str(o, "reason", why, sizeof why))
      return false;
    src->failures++;
    memcpy(src->last_error, why, sizeof why);
    return true;
  }
  if (!strcmp(kind, "not_collected")) {
    const char *what = json_string_value(json_object_get(o, "what"));
    char *dst = !what ? NULL : !strcmp(what, "tcp") ? s->tcp_why : !strcmp(what, "gpu") ? s->gpu_why : NULL;
    return dst && get_str(o, "reason", dst, IM_SERIES_REASON_LEN);
  }
  s->unknown++;
  return true;
}

enum im_err im_series_add_line(struct im_series_set *s, const char *line, size_t len) {
  json_error_t jerr;
  json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
  const char *kind = json_string_value(json_object_get(o, "src"));
  bool ok = false, nomem = false;
  size_t lines = s->lines;
  if (kind) {
    if (!strcmp(kind, "server"))
      ok = add_server(s, o, &nomem);
    else if (!strcmp(kind, "tcp"))
      ok = add_tcp(s, o, &nomem);
    else if (!strcmp(kind, "gpu"))
      ok = add_gpu(s, o, &nomem);
    else if (!strcmp(kind, "client"))
      ok = add_client(s, o, &nomem);
    else
      ok = add_other(s, kind, o);
  }
  json_decref(o);
  if (nomem)
    return IM_NOMEM;
  s->lines = lines;
  if (!ok)
    im_series_add_bad(s, IM_SERIES_BAD_CORRUPT);
  else
    s->lines++;
  return IM_OK;
}

/* ---- copy ---- */

static void *dup_array(const void *p, size_t n, size_t size, bool *nomem) {
  if (!n)
    return NULL;
  void *q = malloc(n * size);
  if (!q)
    *nomem = true;
  else
    memcpy(q, p, n * size);
  return q;
}

enum im_err im_series_copy(const struct im_series_set *src, struct im_series_set **out) {
  struct im_series_set *s = malloc(sizeof *s);
  if (!s) {
    *out = NULL;
    return IM_NOMEM;
  }
  *s = *src;
  bool nomem = false;
  for (size_t i = 0; i < IM_SERIES_MAX_SOURCES; i++) {
    struct im_series_source *d = &s->src[i];
    d->pts = dup_array(src->src[i].pts, d->n_pts, sizeof *d->pts, &nomem);
    d->cap_pts = d->pts ? d->n_pts : 0;
    d->per_series = dup_array(src->src[i].per_series, d->n_per_series, sizeof *d->per_series, &nomem);
  }
  s->tcp = dup_array(src->tcp, s->n_tcp, sizeof *s->tcp, &nomem);
  s->cap_tcp = s->tcp ? s->n_tcp : 0;
  s->gpu = dup_array(src->gpu, s->n_gpu, sizeof *s->gpu, &nomem);
  s->cap_gpu = s->gpu ? s->n_gpu : 0;
  s->client = dup_array(src->client, s->n_client, sizeof *s->client, &nomem);
  s->cap_client = s->client ? s->n_client : 0;
  if (nomem) {
    im_series_free(s);
    s = NULL;
  }
  *out = s;
  return s ? IM_OK : IM_NOMEM;
}

/* ---- readers ---- */

/* Splits bytes into lines, each at most IM_SERIES_LINE_MAX long. */
struct splitter {
  struct im_series_set *set;
  struct im_buf line;
  bool overlong; /* discarding up to the next '\n' */
};

static enum im_err split_feed(struct splitter *sp, const char *p, size_t n) {
  while (n) {
    const char *nl = memchr(p, '\n', n);
    size_t take = nl ? (size_t)(nl - p) : n;
    if (!sp->overlong && im_buf_append(&sp->line, p, take) != IM_OK) {
      if (sp->line.len + take <= IM_SERIES_LINE_MAX)
        return IM_NOMEM;
      sp->overlong = true;
    }
    if (nl) {
      enum im_err err = IM_OK;
      if (sp->overlong)
        im_series_add_bad(sp->set, IM_SERIES_BAD_TOO_LONG);
      else if (sp->line.len) /* an empty line is no sample, and no error */
        err = im_series_add_line(sp->set, sp->line.data, sp->line.len);
      else
        sp->set->lines++;
      if (err)
        return err;
      im_buf_reset(&sp->line);
      sp->overlong = false;
      take++;
    }
    p += take;
    n -= take;
  }
  return IM_OK;
}

static void split_finish(struct splitter *sp) {
  if (sp->overlong)
    im_series_add_bad(sp->set, IM_SERIES_BAD_TOO_LONG);
  else if (sp->line.len)
    im_series_add_bad(sp->set, IM_SERIES_BAD_TRUNCATED);
  im_buf_cleanup(&sp->line);
}

enum im_err im_series_read_mem(const char *data, size_t len, struct im_series_set **out) {
  struct splitter sp = {0};
  enum im_err err = im_series_new(&sp.set);
  if (err)
    return err;
  im_buf_init(&sp.line, IM_SERIES_LINE_MAX);
  err = split_feed(&sp, data, len);
  split_finish(&sp);
  if (err) {
    im_series_free(sp.set);
    sp.set = NULL;
  }
  *out = sp.set;
  return err;
}

enum im_err im_series_read(const char *path, struct im_series_set **out, char *err, size_t errlen) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f)
    return im_errf(err, errlen, IM_IO, "cannot open %s: %s", path, strerror(errno));
  struct stat st; /* only a regular file ends: a device may read forever */
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return im_errf(err, errlen, IM_INVAL, "%s is not a regular file", path);
  }
  struct splitter sp = {0};
  enum im_err rc = im_series_new(&sp.set);
  im_buf_init(&sp.line, IM_SERIES_LINE_MAX);
  char chunk[65536];
  size_t n;
  while (!rc && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
    rc = split_feed(&sp, chunk, n);
  if (!rc && ferror(f))
    rc = im_errf(err, errlen, IM_IO, "cannot read %s: %s", path, strerror(errno));
  else if (rc == IM_NOMEM)
    im_errf(err, errlen, IM_NOMEM, "out of memory reading %s", path);
  split_finish(&sp);
  fclose(f);
  if (rc) {
    im_series_free(sp.set);
    sp.set = NULL;
  }
  *out = sp.set;
  return rc;
}
