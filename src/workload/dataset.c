/* Dataset and trace readers (contract in src/workload/dataset.h). */
#include "workload/dataset.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "core/buf.h"

#define DS_DEFAULT_MAX_LINE ((size_t)1 << 20)
#define DS_DEFAULT_MAX_ITEMS ((size_t)16000000)
#define DS_DEFAULT_MAX_FILE ((size_t)1 << 30)
/* Largest millisecond value whose nanoseconds fit an int64 (~292 years). */
#define DS_MAX_MS 9.2e12

struct ctx {
  struct im_dataset *ds;
  struct im_ds_opts o;
  const char *name;
  char *msg;
  size_t msg_len;
  /* azure */
  bool seen_header;
  int ts_style; /* 0 unknown, 1 date-time, 2 numeric seconds */
};

static enum im_err fail(struct ctx *c, enum im_err e, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static enum im_err fail(struct ctx *c, enum im_err e, size_t line, const char *fmt, ...) {
  if (c->msg_len > 0) {
    int n = snprintf(c->msg, c->msg_len, "%s:%zu: ", c->name, line);
    if (n >= 0 && (size_t)n < c->msg_len) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(c->msg + n, c->msg_len - (size_t)n, fmt, ap);
      va_end(ap);
    }
  }
  return e;
}

void im_ds_opts_init(struct im_ds_opts *o) {
  memset(o, 0, sizeof *o);
  o->max_line = DS_DEFAULT_MAX_LINE;
  o->max_items = DS_DEFAULT_MAX_ITEMS;
  o->max_file = DS_DEFAULT_MAX_FILE;
}

static const char *const format_names[] = {"sharegpt", "jsonl", "mooncake", "azure"};

enum im_err im_ds_format_parse(const char *name, enum im_ds_format *out) {
  for (size_t i = 0; i < sizeof format_names / sizeof format_names[0]; i++) {
    if (name && strcmp(name, format_names[i]) == 0) {
      *out = (enum im_ds_format)i;
      return IM_OK;
    }
  }
  return IM_INVAL;
}

const char *im_ds_format_name(enum im_ds_format fmt) {
  if ((unsigned)fmt >= sizeof format_names / sizeof format_names[0])
    return "unknown";
  return format_names[fmt];
}

static void item_cleanup(struct im_ds_item *it) {
  free(it->prompt);
  for (size_t i = 0; i < it->n_messages; i++) {
    free(it->messages[i].role);
    free(it->messages[i].content);
  }
  free(it->messages);
  free(it->hash_ids);
  free(it->extra);
}

void im_dataset_cleanup(struct im_dataset *ds) {
  if (!ds)
    return;
  for (size_t i = 0; i < ds->n; i++)
    item_cleanup(&ds->items[i]);
  free(ds->items);
  memset(ds, 0, sizeof *ds);
}

static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

/* Appends a blank item (lengths and timestamp -1). The item belongs to ds
 * at once, so whatever the caller attaches is freed by cleanup on error. */
static enum im_err push(struct ctx *c, size_t line, struct im_ds_item **out) {
  struct im_dataset *ds = c->ds;
  if (ds->n >= c->o.max_items)
    return fail(c, IM_LIMIT, line, "more than %zu items (the item limit)", c->o.max_items);
  if (ds->n == ds->cap) {
    size_t ncap = ds->cap ? ds->cap * 2 : 64;
    if (ncap > c->o.max_items)
      ncap = c->o.max_items;
    struct im_ds_item *p = realloc(ds->items, ncap * sizeof *p);
    if (!p)
      return fail(c, IM_NOMEM, line, "out of memory after %zu items", ds->n);
    ds->items = p;
    ds->cap = ncap;
  }
  struct im_ds_item *it = &ds->items[ds->n++];
  memset(it, 0, sizeof *it);
  it->input_len = -1;
  it->output_len = -1;
  it->timestamp_ns = -1;
  it->line = line;
  *out = it;
  return IM_OK;
}

/* ---- JSON field helpers ------------------------------------------------ */

/* Non-negative integer field; *out untouched when absent and optional. */
static enum im_err get_count(struct ctx *c, size_t line, json_t *obj, const char *key,
                             bool required, int64_t *out) {
  json_t *v = json_object_get(obj, key);
  if (!v) {
    if (required)
      return fail(c, IM_PARSE, line, "missing \"%s\"", key);
    return IM_OK;
  }
  if (!json_is_integer(v) || json_integer_value(v) < 0)
    return fail(c, IM_PARSE, line, "\"%s\" must be a non-negative integer", key);
  *out = (int64_t)json_integer_value(v);
  return IM_OK;
}

/* Millisecond timestamp field (integer or real) -> absolute ns. */
static enum im_err get_ms(struct ctx *c, size_t line, json_t *obj, const char *key, bool required,
                          int64_t *ns) {
  json_t *v = json_object_get(obj, key);
  if (!v) {
    if (required)
      return fail(c, IM_PARSE, line, "missing \"%s\"", key);
    return IM_OK;
  }
  double ms = json_is_number(v) ? json_number_value(v) : -1;
  if (!(ms >= 0 && ms <= DS_MAX_MS))
    return fail(c, IM_PARSE, line, "\"%s\" must be a non-negative number of milliseconds", key);
  if (json_is_integer(v))
    *ns = (int64_t)json_integer_value(v) * 1000000;
  else
    *ns = llround(ms * 1e6);
  return IM_OK;
}

static enum im_err parse_line_obj(struct ctx *c, size_t line, const char *s, size_t len,
                                  json_t **out) {
  json_error_t err;
  json_t *root = json_loadb(s, len, 0, &err);
  if (!root)
    return fail(c, IM_PARSE, line, "invalid JSON at column %d: %s", err.column, err.text);
  if (!json_is_object(root)) {
    json_decref(root);
    return fail(c, IM_PARSE, line, "expected a JSON object");
  }
  *out = root;
  return IM_OK;
}

static enum im_err get_messages(struct ctx *c, size_t line, json_t *arr, struct im_ds_item *it) {
  if (!json_is_array(arr) || json_array_size(arr) == 0)
    return fail(c, IM_PARSE, line, "\"messages\" must be a non-empty array");
  size_t n = json_array_size(arr);
  it->messages = calloc(n, sizeof *it->messages);
  if (!it->messages)
    return fail(c, IM_NOMEM, line, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *m = json_array_get(arr, i);
    json_t *role = json_object_get(m, "role"), *content = json_object_get(m, "content");
    if (!json_is_object(m) || !json_is_string(role) || !json_is_string(content))
      return fail(c, IM_PARSE, line,
                  "messages[%zu] must be an object with string \"role\" and \"content\"", i);
    struct im_ds_message *dm = &it->messages[i];
    dm->role = dup_n(json_string_value(role), json_string_length(role));
    dm->content = dup_n(json_string_value(content), json_string_length(content));
    it->n_messages = i + 1;
    if (!dm->role || !dm->content)
      return fail(c, IM_NOMEM, line, "out of memory");
  }
  return IM_OK;
}

/* ---- line formats ------------------------------------------------------ */

typedef enum im_err (*line_fn)(struct ctx *c, size_t line, char *s, size_t len);

static enum im_err jsonl_line(struct ctx *c, size_t line, char *s, size_t len) {
  json_t *root = NULL;
  enum im_err r = parse_line_obj(c, line, s, len, &root);
  if (r)
    return r;
  json_t *prompt = json_object_get(root, "prompt"), *msgs = json_object_get(root, "messages");
  json_t *extra = json_object_get(root, "extra");
  struct im_ds_item *it;
  r = IM_PARSE;
  if (!prompt && !msgs) {
    fail(c, r, line, "missing \"prompt\" or \"messages\"");
    goto out;
  }
  if (prompt && !json_is_string(prompt)) {
    fail(c, r, line, "\"prompt\" must be a string");
    goto out;
  }
  if (extra && !json_is_object(extra)) {
    fail(c, r, line, "\"extra\" must be an object");
    goto out;
  }
  if ((r = push(c, line, &it)) != IM_OK)
    goto out;
  if (prompt && !(it->prompt = dup_n(json_string_value(prompt), json_string_length(prompt)))) {
    r = fail(c, IM_NOMEM, line, "out of memory");
    goto out;
  }
  if (msgs && (r = get_messages(c, line, msgs, it)) != IM_OK)
    goto out;
  if ((r = get_count(c, line, root, "output_len", false, &it->output_len)) != IM_OK)
    goto out;
  if ((r = get_ms(c, line, root, "timestamp_ms", false, &it->timestamp_ns)) != IM_OK)
    goto out;
  if (extra && !(it->extra = json_dumps(extra, JSON_COMPACT))) {
    r = fail(c, IM_NOMEM, line, "out of memory");
    goto out;
  }
  r = IM_OK;
out:
  json_decref(root);
  return r;
}

static enum im_err mooncake_line(struct ctx *c, size_t line, char *s, size_t len) {
  json_t *root = NULL;
  enum im_err r = parse_line_obj(c, line, s, len, &root);
  if (r)
    return r;
  int64_t ts = -1, in = -1, outl = -1;
  json_t *ids = json_object_get(root, "hash_ids");
  struct im_ds_item *it;
  if ((r = get_ms(c, line, root, "timestamp", true, &ts)) != IM_OK ||
      (r = get_count(c, line, root, "input_length", true, &in)) != IM_OK ||
      (r = get_count(c, line, root, "output_length", true, &outl)) != IM_OK)
    goto out;
  if (ids && !json_is_array(ids)) {
    r = fail(c, IM_PARSE, line, "\"hash_ids\" must be an array of integers");
    goto out;
  }
  if ((r = push(c, line, &it)) != IM_OK)
    goto out;
  it->timestamp_ns = ts;
  it->input_len = in;
  it->output_len = outl;
  size_t n = ids ? json_array_size(ids) : 0;
  if (n > 0) {
    if (!(it->hash_ids = malloc(n * sizeof *it->hash_ids))) {
      r = fail(c, IM_NOMEM, line, "out of memory");
      goto out;
    }
    for (size_t i = 0; i < n; i++) {
      json_t *v = json_array_get(ids, i);
      if (!json_is_integer(v) || json_integer_value(v) < 0 ||
          json_integer_value(v) > (json_int_t)UINT32_MAX) {
        r = fail(c, IM_PARSE, line, "hash_ids[%zu] must be an integer in [0, 2^32)", i);
        goto out;
      }
      it->hash_ids[i] = (uint32_t)json_integer_value(v);
    }
    it->n_hash_ids = n;
  }
  r = IM_OK;
out:
  json_decref(root);
  return r;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = '\0';
  return s;
}

static bool digits(const char **p, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    char ch = (*p)[i];
    if (ch < '0' || ch > '9')
      return false;
    v = v * 10 + (ch - '0');
  }
  *p += n;
  *out = v;
  return true;
}

/* "YYYY-MM-DD[ T]HH:MM:SS[.frac][Z|+HH:MM|-HH:MM]" -> ns since the epoch.
 * Years 1970..2200 only, so the nanoseconds fit an int64. */
static bool parse_datetime(const char *s, int64_t *ns) {
  static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int y, mo, d, h, mi, sec;
  const char *p = s;
  if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
      !digits(&p, 2, &d) || (*p != ' ' && *p != 'T'))
    return false;
  p++;
  if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' ||
      !digits(&p, 2, &sec))
    return false;
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (y < 1970 || y > 2200 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
      (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 || sec > 60)
    return false;
  int64_t frac = 0;
  if (*p == '.') {
    p++;
    int nd = 0;
    for (; *p >= '0' && *p <= '9'; p++, nd++) {
      if (nd < 9) /* digits past the nanosecond are dropped */
        frac = frac * 10 + (*p - '0');
    }
    if (nd == 0)
      return false;
    for (; nd < 9; nd++)
      frac *= 10;
  }
  int64_t offset_s = 0;
  if (*p == 'Z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int sign = *p++ == '-' ? -1 : 1, oh, om;
    if (!digits(&p, 2, &oh))
      return false;
    if (*p == ':')
      p++;
    if (!digits(&p, 2, &om) || oh > 23 || om > 59)
      return false;
    offset_s = sign * (oh * 3600 + om * 60);
  }
  if (*p != '\0')
    return false;
  int64_t secs = im_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset_s;
  if (secs < 0)
    return false;
  *ns = secs * 1000000000 + frac;
  return true;
}

static bool parse_uint_field(const char *s, int64_t *out) {
  if (*s < '0' || *s > '9')
    return false;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end != '\0' || v > (unsigned long long)INT64_MAX)
    return false;
  *out = (int64_t)v;
  return true;
}

static enum im_err azure_line(struct ctx *c, size_t line, char *s, size_t len) {
  (void)len;
  char *f[3];
  int nf = 0;
  for (char *p = s;; nf++) {
    char *comma = strchr(p, ',');
    if (nf < 3)
      f[nf] = p;
    if (!comma) {
      nf++;
      break;
    }
    *comma = '\0';
    p = comma + 1;
  }
  if (nf != 3)
    return fail(c, IM_PARSE, line, "expected 3 comma-separated fields, found %d", nf);
  for (int i = 0; i < 3; i++)
    f[i] = trim(f[i]);
  if (!c->seen_header) {
    if (strcasecmp(f[0], "TIMESTAMP") != 0 || strcasecmp(f[1], "ContextTokens") != 0 ||
        strcasecmp(f[2], "GeneratedTokens") != 0)
      return fail(c, IM_PARSE, line,
                  "expected the header TIMESTAMP,ContextTokens,GeneratedTokens, found "
                  "\"%s,%s,%s\"",
                  f[0], f[1], f[2]);
    c->seen_header = true;
    return IM_OK;
  }
  int64_t ts, in, outl;
  int style;
  if (parse_datetime(f[0], &ts)) {
    style = 1;
  } else {
    char *end;
    errno = 0;
    double secs = strtod(f[0], &end);
    if (f[0][0] == '\0' || *end != '\0' || errno || !(secs >= 0 && secs <= DS_MAX_MS / 1e3))
      return fail(c, IM_PARSE, line,
                  "bad TIMESTAMP \"%s\" (want \"YYYY-MM-DD HH:MM:SS.fffffff\" or seconds)", f[0]);
    ts = llround(secs * 1e9);
    style = 2;
  }
  if (c->ts_style && style != c->ts_style)
    return fail(c, IM_PARSE, line, "TIMESTAMP \"%s\" is not in the first row's style", f[0]);
  c->ts_style = style;
  if (!parse_uint_field(f[1], &in))
    return fail(c, IM_PARSE, line, "bad ContextTokens \"%s\" (want a non-negative integer)", f[1]);
  if (!parse_uint_field(f[2], &outl))
    return fail(c, IM_PARSE, line, "bad GeneratedTokens \"%s\" (want a non-negative integer)",
                f[2]);
  struct im_ds_item *it;
  enum im_err r = push(c, line, &it);
  if (r)
    return r;
  it->timestamp_ns = ts;
  it->input_len = in;
  it->output_len = outl;
  return IM_OK;
}

/* Reads one line (without "\n" or a trailing "\r") into buf[0..max]. Returns
 * 1 with a line, 0 at the end of input, -1 when the line exceeds max. */
static int read_line(FILE *f, char *buf, size_t max, size_t *len) {
  size_t n = 0;
  int ch;
  bool any = false;
  while ((ch = getc(f)) != EOF) {
    any = true;
    if (ch == '\n')
      break;
    if (n == max + 1) /* one spare byte for a '\r' before the '\n' */
      return -1;
    buf[n++] = (char)ch;
  }
  if (!any)
    return 0;
  if (n > 0 && buf[n - 1] == '\r')
    n--;
  if (n > max)
    return -1;
  buf[n] = '\0';
  *len = n;
  return 1;
}

static enum im_err each_line(struct ctx *c, FILE *f, line_fn fn) {
  char *buf = malloc(c->o.max_line + 2);
  if (!buf)
    return fail(c, IM_NOMEM, 0, "out of memory for a %zu-byte line buffer", c->o.max_line);
  enum im_err r = IM_OK;
  size_t line = 0, len = 0;
  for (;;) {
    line++;
    int got = read_line(f, buf, c->o.max_line, &len);
    if (got == 0)
      break;
    if (got < 0) {
      r = fail(c, IM_LIMIT, line, "line longer than %zu bytes (the line limit)", c->o.max_line);
      break;
    }
    if (memchr(buf, '\0', len)) {
      r = fail(c, IM_PARSE, line, "NUL byte in the line");
      break;
    }
    if (strspn(buf, " \t") == len)
      continue;
    if ((r = fn(c, line, buf, len)) != IM_OK)
      break;
  }
  if (r == IM_OK && ferror(f))
    r = fail(c, IM_IO, line, "read error: %s", strerror(errno));
  if (r == IM_OK && fn == azure_line && !c->seen_header)
    r = fail(c, IM_PARSE, 1,
             "empty file: expected the header TIMESTAMP,ContextTokens,GeneratedTokens");
  free(buf);
  return r;
}

/* ---- sharegpt ----------------------------------------------------------- */

static void skip_ws(const char *s, size_t len, size_t *off, size_t *line) {
  for (; *off < len; (*off)++) {
    char ch = s[*off];
    if (ch == '\n')
      (*line)++;
    else if (ch != ' ' && ch != '\t' && ch != '\r')
      break;
  }
}

static size_t count_tokens(struct ctx *c, const char *s, size_t n) {
  if (c->o.count)
    return c->o.count(s, n, c->o.count_ud);
  size_t chars = 0;
  for (size_t i = 0; i < n; i++)
    chars += ((unsigned char)s[i] & 0xC0) != 0x80; /* UTF-8 lead bytes */
  return (chars + 3) / 4;
}

static bool role_is(const char *from, const char *const *names) {
  for (; *names; names++)
    if (strcmp(from, *names) == 0)
      return true;
  return false;
}

static enum im_err sharegpt_item(struct ctx *c, size_t line, size_t idx, json_t *obj) {
  static const char *const human[] = {"human", "user", NULL};
  static const char *const gpt[] = {"gpt", "assistant", "chatgpt", NULL};
  json_t *conv = json_object_get(obj, "conversations");
  if (!conv)
    conv = json_object_get(obj, "items");
  if (!conv)
    return fail(c, IM_PARSE, line, "item %zu: missing \"conversations\"", idx);
  if (!json_is_array(conv))
    return fail(c, IM_PARSE, line, "item %zu: \"conversations\" must be an array", idx);
  size_t n = json_array_size(conv);
  for (size_t i = 0; i < n; i++) {
    json_t *t = json_array_get(conv, i);
    if (!json_is_object(t) || !json_is_string(json_object_get(t, "from")) ||
        !json_is_string(json_object_get(t, "value")))
      return fail(c, IM_PARSE, line,
                  "item %zu: conversations[%zu] must be an object with string \"from\" and "
                  "\"value\"",
                  idx, i);
  }
  json_t *q = NULL, *a = NULL;
  for (size_t i = 0; i + 1 < n && !q; i++) {
    json_t *t = json_array_get(conv, i), *next = json_array_get(conv, i + 1);
    if (role_is(json_string_value(json_object_get(t, "from")), human) &&
        role_is(json_string_value(json_object_get(next, "from")), gpt)) {
      q = json_object_get(t, "value");
      a = json_object_get(next, "value");
    }
  }
  if (!q) {
    c->ds->n_skipped++;
    return IM_OK;
  }
  size_t plen = count_tokens(c, json_string_value(q), json_string_length(q));
  size_t olen = count_tokens(c, json_string_value(a), json_string_length(a));
  const struct im_ds_opts *o = &c->o;
  if (plen < o->min_prompt_len || (o->max_prompt_len && plen > o->max_prompt_len) ||
      olen < o->min_output_len || (o->max_output_len && olen > o->max_output_len)) {
    c->ds->n_filtered++;
    return IM_OK;
  }
  struct im_ds_item *it;
  enum im_err r = push(c, line, &it);
  if (r)
    return r;
  it->input_len = (int64_t)plen;
  it->output_len = (int64_t)olen;
  if (!(it->prompt = dup_n(json_string_value(q), json_string_length(q))))
    return fail(c, IM_NOMEM, line, "out of memory");
  return IM_OK;
}

/* Walks the top-level array one element at a time (json_loadb with
 * JSON_DISABLE_EOF_CHECK reports how many bytes each took) so an error can
 * name the line where the offending object starts, and only one object's
 * tree is alive at a time. */
static enum im_err load_sharegpt(struct ctx *c, const char *s, size_t len) {
  size_t off = 0, line = 1;
  skip_ws(s, len, &off, &line);
  if (off >= len || s[off] != '[')
    return fail(c, IM_PARSE, line, "expected a JSON array of conversations");
  off++;
  skip_ws(s, len, &off, &line);
  if (off < len && s[off] == ']') {
    off++;
    goto tail;
  }
  for (size_t idx = 0;; idx++) {
    skip_ws(s, len, &off, &line);
    if (off >= len)
      return fail(c, IM_PARSE, line, "truncated JSON: the array is not closed");
    if (s[off] != '{')
      return fail(c, IM_PARSE, line, "item %zu: expected an object", idx);
    json_error_t err;
    json_t *obj = json_loadb(s + off, len - off, JSON_DISABLE_EOF_CHECK, &err);
    if (!obj) {
      size_t eline = line + (err.line > 1 ? (size_t)err.line - 1 : 0);
      return fail(c, IM_PARSE, eline, "item %zu: invalid JSON: %s", idx, err.text);
    }
    size_t start_line = line, used = (size_t)err.position;
    for (size_t i = 0; i < used && off + i < len; i++)
      line += s[off + i] == '\n';
    off += used;
    enum im_err r = sharegpt_item(c, start_line, idx, obj);
    json_decref(obj);
    if (r)
      return r;
    skip_ws(s, len, &off, &line);
    if (off >= len)
      return fail(c, IM_PARSE, line, "truncated JSON: the array is not closed");
    if (s[off] == ',') {
      off++;
      continue;
    }
    if (s[off] == ']') {
      off++;
      break;
    }
    return fail(c, IM_PARSE, line, "expected ',' or ']' after item %zu", idx);
  }
tail:
  skip_ws(s, len, &off, &line);
  if (off < len)
    return fail(c, IM_PARSE, line, "unexpected data after the array");
  return IM_OK;
}

/* ---- entry points ------------------------------------------------------- */

/* Timestamps become relative to the earliest; records whether file order
 * was already non-decreasing (a replayer may then skip sorting). */
static void make_relative(struct im_dataset *ds) {
  int64_t min = -1, prev = -1;
  ds->ts_sorted = true;
  for (size_t i = 0; i < ds->n; i++) {
    int64_t t = ds->items[i].timestamp_ns;
    if (t < 0)
      continue;
    if (min < 0 || t < min)
      min = t;
    if (t < prev)
      ds->ts_sorted = false;
    prev = t;
  }
  for (size_t i = 0; i < ds->n; i++)
    if (ds->items[i].timestamp_ns >= 0)
      ds->items[i].timestamp_ns -= min;
}

static void ctx_init(struct ctx *c, struct im_dataset *ds, const char *name,
                     const struct im_ds_opts *o, char *msg, size_t msg_len) {
  memset(c, 0, sizeof *c);
  memset(ds, 0, sizeof *ds);
  c->ds = ds;
  if (o)
    c->o = *o;
  else
    im_ds_opts_init(&c->o);
  if (!c->o.max_line)
    c->o.max_line = DS_DEFAULT_MAX_LINE;
  if (!c->o.max_items)
    c->o.max_items = DS_DEFAULT_MAX_ITEMS;
  if (!c->o.max_file)
    c->o.max_file = DS_DEFAULT_MAX_FILE;
  c->name = name ? name : "(input)";
  c->msg = msg;
  c->msg_len = msg_len;
  if (msg_len > 0)
    msg[0] = '\0';
}

static enum im_err finish(struct ctx *c, enum im_err r) {
  if (r != IM_OK)
    im_dataset_cleanup(c->ds);
  else
    make_relative(c->ds);
  return r;
}

static enum im_err load_lines(struct ctx *c, FILE *f, enum im_ds_format fmt) {
  line_fn fn = fmt == IM_DS_JSONL ? jsonl_line : fmt == IM_DS_MOONCAKE ? mooncake_line : azure_line;
  return each_line(c, f, fn);
}

enum im_err im_dataset_load_mem(struct im_dataset *ds, const char *name, const void *data,
                                size_t len, enum im_ds_format fmt, const struct im_ds_opts *o,
                                char *msg, size_t msg_len) {
  struct ctx c;
  ctx_init(&c, ds, name, o, msg, msg_len);
  if ((unsigned)fmt > IM_DS_AZURE)
    return fail(&c, IM_INVAL, 0, "unknown dataset format %d", (int)fmt);
  if (fmt == IM_DS_SHAREGPT) {
    if (len > c.o.max_file)
      return finish(&c,
                    fail(&c, IM_LIMIT, 1, "larger than %zu bytes (the file limit)", c.o.max_file));
    return finish(&c, load_sharegpt(&c, data, len));
  }
  /* fmemopen refuses a zero size on some C libraries; one byte of "\n" reads
   * the same as nothing. */
  FILE *f = len ? fmemopen((void *)(uintptr_t)data, len, "r") : fmemopen((char[]){"\n"}, 1, "r");
  if (!f)
    return fail(&c, IM_SYS, 0, "fmemopen: %s", strerror(errno));
  enum im_err r = load_lines(&c, f, fmt);
  fclose(f);
  return finish(&c, r);
}

enum im_err im_dataset_load(struct im_dataset *ds, const char *path, enum im_ds_format fmt,
                            const struct im_ds_opts *o, char *msg, size_t msg_len) {
  struct ctx c;
  ctx_init(&c, ds, path, o, msg, msg_len);
  if ((unsigned)fmt > IM_DS_AZURE)
    return fail(&c, IM_INVAL, 0, "unknown dataset format %d", (int)fmt);
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (msg_len > 0)
      snprintf(msg, msg_len, "%s: cannot open: %s", path, strerror(errno));
    return errno == ENOENT ? IM_NOTFOUND : IM_SYS;
  }
  enum im_err r = IM_OK;
  if (fmt != IM_DS_SHAREGPT) {
    r = load_lines(&c, f, fmt);
    fclose(f);
    return finish(&c, r);
  }
  struct im_buf b;
  im_buf_init(&b, c.o.max_file);
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if ((r = im_buf_append(&b, chunk, n)) != IM_OK) {
      if (r == IM_LIMIT)
        fail(&c, r, 1, "larger than %zu bytes (the file limit)", c.o.max_file);
      else
        fail(&c, r, 1, "out of memory reading the file");
      break;
    }
  }
  if (r == IM_OK && ferror(f))
    r = fail(&c, IM_IO, 1, "read error: %s", strerror(errno));
  fclose(f);
  if (r == IM_OK)
    r = load_sharegpt(&c, b.data ? b.data : "", b.len);
  im_buf_cleanup(&b);
  return finish(&c, r);
}
