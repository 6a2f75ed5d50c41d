#include "proto/promparse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Internal label record while a line is parsed: offsets into scratch, which
 * may move when it grows; pointers are fixed up once the line is complete. */
enum { LOFF_NAME, LOFF_VAL, LOFF_VLEN, LOFF_N };

static const char *const type_names[IM_PROM_TYPE_COUNT_] = {
    [IM_PROM_NONE] = "none",           [IM_PROM_UNTYPED] = "untyped",
    [IM_PROM_COUNTER] = "counter",     [IM_PROM_GAUGE] = "gauge",
    [IM_PROM_HISTOGRAM] = "histogram", [IM_PROM_SUMMARY] = "summary",
    [IM_PROM_UNKNOWN] = "unknown",     [IM_PROM_GAUGEHISTOGRAM] = "gaugehistogram",
    [IM_PROM_INFO] = "info",           [IM_PROM_STATESET] = "stateset",
};

const char *im_prom_type_name(enum im_prom_type t) {
  return (unsigned)t < IM_PROM_TYPE_COUNT_ ? type_names[t] : "none";
}

void im_promparse_init(struct im_promparse *p, const struct im_promparse_limits *limits) {
  memset(p, 0, sizeof *p);
  p->max_line = limits && limits->max_line ? limits->max_line : IM_PROMPARSE_DEFAULT_MAX_LINE;
  p->max_labels =
      limits && limits->max_labels ? limits->max_labels : IM_PROMPARSE_DEFAULT_MAX_LABELS;
  p->max_name = limits && limits->max_name ? limits->max_name : IM_PROMPARSE_DEFAULT_MAX_NAME;
  /* Every unescaped item is no longer than its escaped form, plus one NUL
   * per item, and a line holds at most max_line items. */
  im_buf_init(&p->scratch, 2 * p->max_line + 16);
  im_buf_init(&p->family, p->max_name + 1);
}

void im_promparse_cleanup(struct im_promparse *p) {
  if (!p)
    return;
  im_buf_cleanup(&p->scratch);
  im_buf_cleanup(&p->family);
  free(p->labels);
  free(p->label_off);
  p->labels = NULL;
  p->label_off = NULL;
}

static int is_ws(char c) {
  return c == ' ' || c == '\t';
}
static int is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
static int is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}

/* Length of the metric name at s (colons allowed), 0 if none. */
static size_t name_len(const char *s, size_t n) {
  if (n == 0 || !is_name_start(s[0]))
    return 0;
  size_t i = 1;
  while (i < n && is_name_char(s[i]))
    i++;
  return i;
}

static size_t skip_ws(const char *s, size_t n, size_t i) {
  while (i < n && is_ws(s[i]))
    i++;
  return i;
}

/* Parses a float as Go's strconv.ParseFloat accepts what Prometheus writes:
 * decimal with exponent, [+-]Inf, NaN (case-insensitive). The token is
 * copied because the page is not NUL-terminated. strtod depends on
 * LC_NUMERIC; infermeter never calls setlocale, so it is "C". */
static int parse_float(const char *s, size_t n, double *out) {
  char tmp[72];
  if (n == 0 || n >= sizeof tmp)
    return -1;
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  const char *t = tmp + (tmp[0] == '+' || tmp[0] == '-');
  /* strtod would also take "nan(...)" and "infinity"; Go takes "infinity"
   * too, so only the parenthesised NaN needs refusing. */
  if (strchr(t, '('))
    return -1;
  char *end;
  double v = strtod(tmp, &end);
  if (end != tmp + n)
    return -1;
  *out = v;
  return 0;
}

static enum im_prom_type parse_type(const char *s, size_t n) {
  for (int t = IM_PROM_UNTYPED; t < IM_PROM_TYPE_COUNT_; t++)
    if (strlen(type_names[t]) == n && memcmp(type_names[t], s, n) == 0)
      return (enum im_prom_type)t;
  return IM_PROM_NONE;
}

static enum im_err report(struct im_promparse *p, const struct im_promparse_cbs *cbs, size_t line,
                          const char *reason) {
  p->stats.errors++;
  if (!cbs->error)
    return IM_OK;
  struct im_prom_error e = {line, reason};
  return cbs->error(cbs->ud, &e);
}

static void set_family(struct im_promparse *p, const char *name, size_t n, enum im_prom_type t) {
  im_buf_reset(&p->family);
  /* n <= max_name, which is the buffer's cap, so this cannot fail. */
  if (im_buf_append(&p->family, name, n) != IM_OK)
    im_buf_reset(&p->family);
  p->family_type = t;
}

/* `# HELP|TYPE|UNIT name rest` and `# EOF`. *eof is set on `# EOF`.
 * Returns a reason for a malformed line through *why (NULL when fine). */
static enum im_err parse_comment(struct im_promparse *p, const struct im_promparse_cbs *cbs,
                                 const char *s, size_t n, size_t line, int *eof, const char **why) {
  size_t i = skip_ws(s, n, 1);
  size_t w = i;
  while (w < n && !is_ws(s[w]))
    w++;
  size_t kwlen = w - i;
  enum im_prom_meta_kind kind;
  if (kwlen == 4 && memcmp(s + i, "HELP", 4) == 0)
    kind = IM_PROM_META_HELP;
  else if (kwlen == 4 && memcmp(s + i, "TYPE", 4) == 0)
    kind = IM_PROM_META_TYPE;
  else if (kwlen == 4 && memcmp(s + i, "UNIT", 4) == 0)
    kind = IM_PROM_META_UNIT;
  else if (kwlen == 3 && memcmp(s + i, "EOF", 3) == 0 && skip_ws(s, n, w) == n) {
    *eof = 1;
    p->stats.meta++;
    if (!cbs->meta)
      return IM_OK;
    struct im_prom_meta m = {IM_PROM_META_EOF, "", "", IM_PROM_NONE, line};
    return cbs->meta(cbs->ud, &m);
  } else
    return IM_OK; /* a plain comment */
  if (w == n || !is_ws(s[w])) {
    *why = "metadata line without a metric name";
    return IM_OK;
  }
  i = skip_ws(s, n, w);
  size_t nl = name_len(s + i, n - i);
  if (nl == 0 || (i + nl < n && !is_ws(s[i + nl]))) {
    *why = "bad metric name in metadata line";
    return IM_OK;
  }
  if (nl > p->max_name) {
    *why = "metric name too long";
    return IM_OK;
  }
  const char *name = s + i;
  i = skip_ws(s, n, i + nl);
  /* The rest, right-trimmed except for HELP, whose text is free-form. */
  size_t end = n;
  if (kind != IM_PROM_META_HELP)
    while (end > i && is_ws(s[end - 1]))
      end--;
  /* scratch: name NUL text NUL; text unescaped (HELP: \\ and \n; an
   * unknown escape is kept as written, HELP being only prose). */
  if (im_buf_reserve(&p->scratch, n + 2) != IM_OK)
    return IM_NOMEM;
  char *d = p->scratch.data;
  memcpy(d, name, nl);
  d[nl] = '\0';
  size_t o = nl + 1, t0 = o;
  for (size_t k = i; k < end; k++) {
    if (kind == IM_PROM_META_HELP && s[k] == '\\' && k + 1 < end &&
        (s[k + 1] == '\\' || s[k + 1] == 'n')) {
      d[o++] = s[k + 1] == 'n' ? '\n' : '\\';
      k++;
    } else
      d[o++] = s[k];
  }
  d[o] = '\0';
  struct im_prom_meta m = {kind, d, d + t0, IM_PROM_NONE, line};
  if (kind == IM_PROM_META_TYPE) {
    m.type = parse_type(s + i, end - i);
    if (m.type == IM_PROM_NONE) {
      *why = "unknown metric type";
      return IM_OK;
    }
    set_family(p, name, nl, m.type);
  } else if (p->family.len != nl || memcmp(p->family.data, name, nl) != 0) {
    /* HELP or UNIT of another family opens it, untyped until its TYPE. */
    set_family(p, name, nl, IM_PROM_NONE);
  }
  p->stats.meta++;
  return cbs->meta ? cbs->meta(cbs->ud, &m) : IM_OK;
}

static int name_eq(const char *a, size_t an, const char *b) {
  return strlen(b) == an && memcmp(a, b, an) == 0;
}

/* Ties the sample name to the current family. */
static void classify(const struct im_promparse *p, const char *name, size_t nl,
                     struct im_prom_sample *smp) {
  const char *fam = p->family.data;
  size_t fl = p->family.len;
  smp->family = name;
  smp->type = IM_PROM_NONE;
  smp->suffix = IM_PROM_SFX_NONE;
  if (fl == 0 || nl < fl || memcmp(name, fam, fl) != 0)
    return;
  const char *sfx = name + fl;
  size_t sl = nl - fl;
  enum im_prom_suffix k = IM_PROM_SFX_NONE;
  if (sl == 0) {
    smp->type = p->family_type;
    smp->family = fam;
    return;
  }
  switch (p->family_type) {
  case IM_PROM_HISTOGRAM:
    k = name_eq(sfx, sl, "_bucket")    ? IM_PROM_SFX_BUCKET
        : name_eq(sfx, sl, "_sum")     ? IM_PROM_SFX_SUM
        : name_eq(sfx, sl, "_count")   ? IM_PROM_SFX_COUNT
        : name_eq(sfx, sl, "_created") ? IM_PROM_SFX_CREATED
                                       : IM_PROM_SFX_NONE;
    break;
  case IM_PROM_SUMMARY:
    k = name_eq(sfx, sl, "_sum")       ? IM_PROM_SFX_SUM
        : name_eq(sfx, sl, "_count")   ? IM_PROM_SFX_COUNT
        : name_eq(sfx, sl, "_created") ? IM_PROM_SFX_CREATED
                                       : IM_PROM_SFX_NONE;
    break;
  case IM_PROM_COUNTER:
    k = name_eq(sfx, sl, "_total")     ? IM_PROM_SFX_TOTAL
        : name_eq(sfx, sl, "_created") ? IM_PROM_SFX_CREATED
                                       : IM_PROM_SFX_NONE;
    break;
  case IM_PROM_GAUGEHISTOGRAM:
    k = name_eq(sfx, sl, "_bucket")   ? IM_PROM_SFX_BUCKET
        : name_eq(sfx, sl, "_gsum")   ? IM_PROM_SFX_GSUM
        : name_eq(sfx, sl, "_gcount") ? IM_PROM_SFX_GCOUNT
                                      : IM_PROM_SFX_NONE;
    break;
  case IM_PROM_INFO:
    k = name_eq(sfx, sl, "_info") ? IM_PROM_SFX_INFO : IM_PROM_SFX_NONE;
    break;
  default:
    break;
  }
  if (k != IM_PROM_SFX_NONE) {
    smp->suffix = k;
    smp->type = p->family_type;
    smp->family = fam;
  }
}

static enum im_err ensure_labels(struct im_promparse *p) {
  if (p->labels)
    return IM_OK;
  p->labels = calloc(p->max_labels, sizeof *p->labels);
  p->label_off = calloc(p->max_labels * LOFF_N, sizeof *p->label_off);
  if (!p->labels || !p->label_off) {
    free(p->labels);
    free(p->label_off);
    p->labels = NULL;
    p->label_off = NULL;
    return IM_NOMEM;
  }
  return IM_OK;
}

/* Parses `{a="x",b="y"}` starting at s[*pos] == '{' into scratch at *w.
 * Returns NULL on success, else the reason. */
static const char *parse_labels(struct im_promparse *p, const char *s, size_t n, size_t *pos,
                                size_t *w, size_t *nlab) {
  char *d = p->scratch.data;
  size_t i = *pos + 1, o = *w, k = 0;
  uint64_t seen[4] = {0};
  for (;;) {
    i = skip_ws(s, n, i);
    if (i >= n)
      return "unterminated label set";
    if (s[i] == '}')
      break;
    size_t ln = 0;
    if (is_name_start(s[i]) && s[i] != ':')
      while (i + ln < n && is_name_char(s[i + ln]) && s[i + ln] != ':')
        ln++;
    if (ln == 0)
      return "bad label name";
    if (ln > p->max_name)
      return "label name too long";
    if (k == p->max_labels)
      return "too many labels";
    /* Duplicate names: a 256-bit filter on a hash of the name, so the
     * pairwise comparison (quadratic in the label count) runs only on a
     * filter hit. */
    uint32_t h = 2166136261u;
    for (size_t j = 0; j < ln; j++)
      h = (h ^ (unsigned char)s[i + j]) * 16777619u;
    h ^= h >> 16;
    uint64_t bit = (uint64_t)1 << (h & 63);
    if (seen[(h >> 6) & 3] & bit) {
      for (size_t j = 0; j < k; j++) {
        const char *prev = d + p->label_off[j * LOFF_N + LOFF_NAME];
        if (strlen(prev) == ln && memcmp(prev, s + i, ln) == 0)
          return "duplicate label name";
      }
    }
    seen[(h >> 6) & 3] |= bit;
    p->label_off[k * LOFF_N + LOFF_NAME] = o;
    memcpy(d + o, s + i, ln);
    o += ln;
    d[o++] = '\0';
    i = skip_ws(s, n, i + ln);
    if (i >= n || s[i] != '=')
      return "expected '=' after label name";
    i = skip_ws(s, n, i + 1);
    if (i >= n || s[i] != '"')
      return "expected '\"' to open label value";
    i++;
    size_t v0 = o;
    for (;;) {
      if (i >= n)
        return "unterminated label value";
      char c = s[i++];
      if (c == '"')
        break;
      if (c == '\\') {
        if (i >= n)
          return "unterminated label value";
        char e = s[i++];
        if (e == '\\' || e == '"')
          d[o++] = e;
        else if (e == 'n')
          d[o++] = '\n';
        else
          return "bad escape in label value";
      } else
        d[o++] = c;
    }
    p->label_off[k * LOFF_N + LOFF_VAL] = v0;
    p->label_off[k * LOFF_N + LOFF_VLEN] = o - v0;
    d[o++] = '\0';
    k++;
    i = skip_ws(s, n, i);
    if (i < n && s[i] == ',') {
      i++;
      continue;
    }
    if (i < n && s[i] == '}')
      break;
    return "expected ',' or '}' after label value";
  }
  *pos = i + 1;
  *w = o;
  *nlab = k;
  return NULL;
}

static enum im_err parse_sample(struct im_promparse *p, const struct im_promparse_cbs *cbs,
                                const char *s, size_t n, size_t line, const char **why) {
  size_t i = skip_ws(s, n, 0);
  size_t nl = name_len(s + i, n - i);
  if (nl == 0) {
    *why = "bad metric name";
    return IM_OK;
  }
  if (nl > p->max_name) {
    *why = "metric name too long";
    return IM_OK;
  }
  enum im_err err = im_buf_reserve(&p->scratch, 2 * n + 2);
  if (err)
    return err;
  if ((err = ensure_labels(p)))
    return err;
  char *d = p->scratch.data;
  const char *name = s + i;
  memcpy(d, name, nl);
  d[nl] = '\0';
  size_t w = nl + 1, nlab = 0;
  i += nl;
  if (i < n && !is_ws(s[i]) && s[i] != '{') {
    *why = "bad character after metric name";
    return IM_OK;
  }
  i = skip_ws(s, n, i);
  if (i < n && s[i] == '{') {
    if ((*why = parse_labels(p, s, n, &i, &w, &nlab)))
      return IM_OK;
  }
  i = skip_ws(s, n, i);
  size_t v = i;
  while (i < n && !is_ws(s[i]))
    i++;
  struct im_prom_sample smp;
  memset(&smp, 0, sizeof smp);
  if (v == i) {
    *why = "missing value";
    return IM_OK;
  }
  if (parse_float(s + v, i - v, &smp.value)) {
    *why = "bad value";
    return IM_OK;
  }
  i = skip_ws(s, n, i);
  if (i < n && s[i] != '#') {
    size_t t = i;
    while (i < n && !is_ws(s[i]))
      i++;
    if (parse_float(s + t, i - t, &smp.timestamp) || !isfinite(smp.timestamp)) {
      *why = "bad timestamp";
      return IM_OK;
    }
    smp.has_timestamp = 1;
    i = skip_ws(s, n, i);
  }
  /* What is left must be an OpenMetrics exemplar, which is skipped. */
  if (i < n && s[i] != '#') {
    *why = "unexpected text after value";
    return IM_OK;
  }
  for (size_t k = 0; k < nlab; k++) {
    p->labels[k].name = d + p->label_off[k * LOFF_N + LOFF_NAME];
    p->labels[k].value = d + p->label_off[k * LOFF_N + LOFF_VAL];
    p->labels[k].value_len = p->label_off[k * LOFF_N + LOFF_VLEN];
  }
  smp.name = d;
  smp.labels = p->labels;
  smp.n_labels = nlab;
  smp.line = line;
  classify(p, d, nl, &smp);
  p->stats.samples++;
  return cbs->sample ? cbs->sample(cbs->ud, &smp) : IM_OK;
}

enum im_err im_promparse_page(struct im_promparse *p, const char *data, size_t len,
                              const struct im_promparse_cbs *cbs,
                              struct im_promparse_stats *stats) {
  static const struct im_promparse_cbs none = {0};
  enum im_err err = IM_OK;
  if (!cbs)
    cbs = &none;
  memset(&p->stats, 0, sizeof p->stats);
  im_buf_reset(&p->family);
  p->family_type = IM_PROM_NONE;
  size_t pos = 0, line = 0;
  while (pos < len) {
    const char *s = data + pos;
    const char *nlp = memchr(s, '\n', len - pos);
    size_t n = nlp ? (size_t)(nlp - s) : len - pos;
    pos += n + (nlp != NULL);
    line++;
    if (n > 0 && s[n - 1] == '\r')
      n--;
    if (p->stats.saw_eof) {
      /* Only blank lines may follow `# EOF`; report the first other one and
       * stop reading. */
      if (skip_ws(s, n, 0) == n)
        continue;
      p->stats.lines = line;
      err = report(p, cbs, line, "text after # EOF");
      break;
    }
    p->stats.lines = line;
    if (n > p->max_line) {
      if ((err = report(p, cbs, line, "line too long")))
        break;
      continue;
    }
    size_t i = skip_ws(s, n, 0);
    if (i == n)
      continue;
    const char *why = NULL;
    if (s[i] == '#') {
      int eof = 0;
      err = parse_comment(p, cbs, s + i, n - i, line, &eof, &why);
      if (eof)
        p->stats.saw_eof = 1;
    } else
      err = parse_sample(p, cbs, s, n, line, &why);
    if (err)
      break;
    if (why && (err = report(p, cbs, line, why)))
      break;
  }
  if (stats)
    *stats = p->stats;
  return err;
}

const char *im_prom_sample_label(const struct im_prom_sample *s, const char *name) {
  for (size_t i = 0; i < s->n_labels; i++)
    if (strcmp(s->labels[i].name, name) == 0)
      return s->labels[i].value;
  return NULL;
}

enum im_err im_prom_histogram_quantile(double q, const struct im_prom_bucket *b, size_t n,
                                       double *out) {
  *out = NAN;
  if (!b || n < 2 || !(b[n - 1].le == INFINITY))
    return IM_INVAL;
  for (size_t i = 1; i < n; i++)
    if (!(b[i].le > b[i - 1].le))
      return IM_INVAL;
  if (isnan(q))
    return IM_OK;
  if (q < 0) {
    *out = -INFINITY;
    return IM_OK;
  }
  if (q > 1) {
    *out = INFINITY;
    return IM_OK;
  }
  /* Running maximum instead of the raw counts (Prometheus'
   * ensureMonotonic); computed on the fly so that b stays const. The total
   * is the monotonic count of the +Inf bucket. NaN counts read as 0. */
  double total = 0;
  for (size_t i = 0; i < n; i++)
    if (b[i].count > total)
      total = b[i].count;
  if (!(total > 0))
    return IM_OK;
  double rank = q * total, prev = 0, run = 0;
  for (size_t i = 0; i < n; i++) {
    if (b[i].count > run)
      run = b[i].count;
    if (run >= rank) {
      if (i == n - 1) {
        *out = b[n - 2].le;
        return IM_OK;
      }
      if (i == 0 && b[0].le <= 0) {
        *out = b[0].le;
        return IM_OK;
      }
      double lo = i == 0 ? 0 : b[i - 1].le, hi = b[i].le;
      double in = run - prev;
      /* in > 0 here: run >= rank > prev unless rank == prev == 0 (q == 0),
       * where the lower bound is the answer. */
      *out = in > 0 ? lo + (hi - lo) * ((rank - prev) / in) : lo;
      return IM_OK;
    }
    prev = run;
  }
  *out = b[n - 2].le; /* not reached: run reaches total at the last bucket */
  return IM_OK;
}
