/* Content classes: the mix of classes and each class's text source.
 *
 * The code generator writes functions line by line, each line cut into
 * pieces of about one token (identifier, punctuation with its leading space,
 * indentation run, newline), alternating between a C-like and a Python-like
 * style per function. The word lists are our own, chosen to look like
 * ordinary systems code; nothing is meant to compile. */
#include "text/content.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/textgen.h"


#define N_ROWS(a) (sizeof(a) / sizeof((a)[0]))

static const char *const class_names[IM_CONTENT_COUNT_] = {"text", "code"};

const char *im_content_name(enum im_content c) {
  return (unsigned)c < IM_CONTENT_COUNT_ ? class_names[c] : "?";
}

enum im_err im_content_parse(const char *name, size_t len, enum im_content *out) {
  if (!name || !out)
    return IM_INVAL;
  if (len == 5 && memcmp(name, "prose", 5) == 0) {
    *out = IM_CONTENT_TEXT;
    return IM_OK;
  }
  for (int c = 0; c < IM_CONTENT_COUNT_; c++)
    if (strlen(class_names[c]) == len && memcmp(name, class_names[c], len) == 0) {
      *out = (enum im_content)c;
      return IM_OK;
    }
  return IM_PARSE;
}

/* ---- Mix ---------------------------------------------------------------- */

static void trim(const char **s, size_t *n) {
  while (*n && isspace((unsigned char)**s))
    (*s)++, (*n)--;
  while (*n && isspace((unsigned char)(*s)[*n - 1]))
    (*n)--;
}

enum im_err im_mix_parse(const char *spec, struct im_mix *out, char *err, size_t errlen) {
  if (err && errlen)
    err[0] = '\0';
  if (!spec || !out)
    return im_errf(err, errlen, IM_INVAL, "--mix: NULL argument");
  struct im_mix m = {{0}};
  bool seen[IM_CONTENT_COUNT_] = {false};
  double sum = 0.0;
  const char *p = spec;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t plen = comma ? (size_t)(comma - p) : strlen(p);
    const char *part = p;
    size_t n = plen;
    trim(&part, &n);
    if (n == 0)
      return im_errf(err, errlen, IM_PARSE,
                  "--mix: '%s': empty part (expected class=weight, e.g. "
                  "code=0.3,text=0.7)",
                  spec);
    const char *eq = memchr(part, '=', n);
    if (!eq)
      return im_errf(err, errlen, IM_PARSE, "--mix: '%.*s': expected class=weight", (int)n, part);
    const char *name = part, *num = eq + 1;
    size_t name_n = (size_t)(eq - part), num_n = n - name_n - 1;
    trim(&name, &name_n);
    trim(&num, &num_n);
    enum im_content c;
    if (im_content_parse(name, name_n, &c) != IM_OK)
      return im_errf(err, errlen, IM_PARSE, "--mix: '%.*s': unknown class '%.*s' (known: text, code)",
                  (int)n, part, (int)name_n, name);
    if (seen[c])
      return im_errf(err, errlen, IM_PARSE, "--mix: '%.*s': class '%s' given twice", (int)n, part,
                  class_names[c]);
    char tmp[64];
    if (num_n == 0 || num_n >= sizeof tmp)
      return im_errf(err, errlen, IM_PARSE, "--mix: '%.*s': weight is not a number", (int)n, part);
    memcpy(tmp, num, num_n);
    tmp[num_n] = '\0';
    char *end;
    errno = 0;
    double w = strtod(tmp, &end);
    if (*end != '\0')
      return im_errf(err, errlen, IM_PARSE, "--mix: '%.*s': weight is not a number", (int)n, part);
    if (!isfinite(w) || errno == ERANGE)
      return im_errf(err, errlen, IM_INVAL, "--mix: '%.*s': weight is not finite", (int)n, part);
    if (w < 0.0)
      return im_errf(err, errlen, IM_INVAL, "--mix: '%.*s': weight is negative", (int)n, part);
    seen[c] = true;
    m.weight[c] = w;
    sum += w;
    if (!comma)
      break;
    p = comma + 1;
  }
  if (!(sum > 0.0) || !isfinite(sum))
    return im_errf(err, errlen, IM_INVAL,
                "--mix: '%s': at least one weight must be > 0 (and their "
                "sum finite)",
                spec);
  for (int c = 0; c < IM_CONTENT_COUNT_; c++)
    m.weight[c] /= sum;
  *out = m;
  return IM_OK;
}

enum im_content im_mix_pick(const struct im_mix *m, double u) {
  int last = 0;
  double acc = 0.0;
  if (!(u >= 0.0))
    u = 0.0;
  for (int c = 0; c < IM_CONTENT_COUNT_; c++) {
    if (!(m->weight[c] > 0.0))
      continue;
    last = c;
    acc += m->weight[c];
    if (u < acc)
      return (enum im_content)c;
  }
  /* Rounding left the sum just under 1 (or u >= 1): the last class with
   * weight. */
  return (enum im_content)last;
}

/* ---- Code generator ----------------------------------------------------- */

static const char *const verbs[] = {
    "read",   "write", "parse",  "load",  "find",  "count",  "merge",  "split", "scan",
    "build",  "check", "update", "reset", "flush", "fetch",  "send",   "store", "clear",
    "format", "apply", "resize", "sort",  "hash",  "encode", "decode", "open",  "close",
    "copy",   "fill",  "push",   "pop",   "emit",  "track",  "match",  "grow",  "trim",
};
static const char *const nouns[] = {
    "buffer", "header", "index",  "entry", "table",  "node",  "list",  "item",   "token",
    "record", "block",  "frame",  "state", "config", "cache", "value", "key",    "count",
    "offset", "length", "size",   "queue", "stream", "path",  "name",  "limit",  "total",
    "result", "line",   "field",  "chunk", "slot",   "page",  "range", "score",  "weight",
    "batch",  "bucket", "cursor", "depth", "delta",  "flags", "mask",  "prefix", "window",
};
static const char *const shorts[] = {
    "i",   "j",   "k",   "n",   "x",   "y",   "p",   "pos", "len", "idx", "cur", "prev",
    "tmp", "acc", "res", "err", "val", "buf", "out", "src", "dst", "lo",  "hi",  "mid",
};
static const char *const c_types[] = {"int",  "size_t",   "uint32_t", "uint64_t", "double",
                                      "long", "unsigned", "float",    "char",     "bool"};
static const char *const py_calls[] = {"len",  "range", "sum", "min", "max", "sorted", "abs",
                                       "list", "dict",  "str", "int", "any", "all"};
static const char *const glue[] = {"the",   "a",     "of",   "to",   "and",  "if",    "before",
                                   "after", "each",  "not",  "is",   "when", "first", "last",
                                   "empty", "every", "only", "here", "so",   "we",    "keep",
                                   "then",  "once",  "all",  "from", "into", "until", "no"};
static const char *const arith[] = {" +", " -", " *", " /", " %", " &", " |", " ^", " >>", " <<"};
static const char *const cmp[] = {" <", " >", " ==", " !=", " <=", " >="};
static const char *const c_assign[] = {" =", " +=", " -=", " |=", " ^=", " *="};

#define PICK(g, a) (a)[im_rng_below(&(g)->rng, N_ROWS(a))]

static bool chance(struct im_content_gen *g, unsigned pct) {
  return im_rng_below(&g->rng, 100) < pct;
}

/* Appends a piece to the line; a piece that would not fit is dropped (the
 * line grammar stays far below the bounds, so this never happens in
 * practice, but input to it is never trusted to). */
static void put2(struct im_content_gen *g, const char *a, const char *b) {
  size_t used = g->n_pieces_ ? g->ends_[g->n_pieces_ - 1] : 0;
  size_t na = strlen(a), nb = b ? strlen(b) : 0;
  if (na + nb == 0 || used + na + nb >= sizeof g->line_ || g->n_pieces_ >= N_ROWS(g->ends_))
    return;
  memcpy(g->line_ + used, a, na);
  if (nb)
    memcpy(g->line_ + used + na, b, nb);
  g->ends_[g->n_pieces_++] = (uint16_t)(used + na + nb);
}

static void put(struct im_content_gen *g, const char *a) {
  put2(g, a, NULL);
}

/* Extends the last piece (no new piece boundary). */
static void glue_on(struct im_content_gen *g, const char *a) {
  if (!g->n_pieces_) {
    put(g, a);
    return;
  }
  size_t used = g->ends_[g->n_pieces_ - 1], na = strlen(a);
  if (used + na >= sizeof g->line_)
    return;
  memcpy(g->line_ + used, a, na);
  g->ends_[g->n_pieces_ - 1] = (uint16_t)(used + na);
}

static void indent(struct im_content_gen *g) {
  static const char spaces[] = "                ";
  unsigned d = g->depth_ > 4 ? 4 : g->depth_;
  if (d)
    put(g, spaces + sizeof spaces - 1 - 4 * d);
}

/* An identifier: a short name, a noun, or verb_noun (camelCase now and
 * then in C); sp adds the leading space. */
static void ident(struct im_content_gen *g, bool sp) {
  const char *lead = sp ? " " : "";
  unsigned r = (unsigned)im_rng_below(&g->rng, 10);
  if (r < 4) {
    put2(g, lead, PICK(g, shorts));
  } else if (r < 7) {
    put2(g, lead, PICK(g, nouns));
  } else {
    put2(g, lead, PICK(g, verbs));
    const char *nn = PICK(g, nouns);
    if (g->lang_ == 0 && chance(g, 30)) {
      char cap[16];
      size_t k = strlen(nn);
      memcpy(cap, nn, k + 1);
      cap[0] = (char)toupper((unsigned char)cap[0]);
      put(g, cap);
    } else {
      put2(g, "_", nn);
    }
  }
}

static void number(struct im_content_gen *g, bool sp) {
  static const char *const common[] = {"0",  "1",   "2",   "4",    "8", "16",   "32",  "64",
                                       "10", "100", "255", "1024", "3", "0x7f", "0xff"};
  char tmp[16];
  const char *s;
  if (chance(g, 70)) {
    s = PICK(g, common);
  } else {
    snprintf(tmp, sizeof tmp, "%u", (unsigned)im_rng_below(&g->rng, 5000));
    s = tmp;
  }
  put2(g, sp ? " " : "", s);
}

/* A term: identifier, number, element, call or attribute. */
static void term(struct im_content_gen *g) {
  unsigned r = (unsigned)im_rng_below(&g->rng, 10);
  if (r < 4) {
    ident(g, true);
  } else if (r < 6) {
    number(g, true);
  } else if (r < 8) {
    ident(g, true);
    put(g, "[");
    ident(g, false);
    put(g, "]");
  } else if (r < 9) {
    if (g->lang_ == 1)
      put2(g, " ", PICK(g, py_calls));
    else
      ident(g, true);
    put(g, "(");
    ident(g, false);
    put(g, ")");
  } else {
    ident(g, true);
    put(g, g->lang_ == 1 ? "." : "->");
    glue_on(g, PICK(g, nouns));
  }
}

static void expr(struct im_content_gen *g) {
  term(g);
  for (int k = 0; k < 2 && chance(g, 35); k++) {
    put(g, PICK(g, arith));
    term(g);
  }
}

static void end_line(struct im_content_gen *g, const char *tail) {
  if (tail)
    put(g, tail);
  put(g, "\n");
}

static void comment(struct im_content_gen *g) {
  indent(g);
  put(g, g->lang_ == 1 ? "#" : chance(g, 50) ? "//" : "/*");
  bool block = g->lang_ == 0 && g->line_[g->ends_[g->n_pieces_ - 1] - 1] == '*';
  int words = 3 + (int)im_rng_below(&g->rng, 8);
  for (int w = 0; w < words; w++) {
    unsigned r = (unsigned)im_rng_below(&g->rng, 10);
    put2(g, " ", r < 4 ? PICK(g, glue) : r < 7 ? PICK(g, nouns) : PICK(g, verbs));
  }
  put(g, ".");
  end_line(g, block ? " */" : NULL);
}

static void signature(struct im_content_gen *g) {
  int params = 1 + (int)im_rng_below(&g->rng, 3);
  if (g->lang_ == 1) {
    put(g, "def");
    put2(g, " ", PICK(g, verbs));
    put2(g, "_", PICK(g, nouns));
    put(g, "(");
    for (int k = 0; k < params; k++) {
      if (k)
        put(g, ",");
      ident(g, k > 0);
    }
    end_line(g, "):");
  } else {
    if (chance(g, 60))
      put(g, "static");
    put2(g, g->n_pieces_ ? " " : "", PICK(g, c_types));
    put2(g, " ", PICK(g, verbs));
    put2(g, "_", PICK(g, nouns));
    put(g, "(");
    for (int k = 0; k < params; k++) {
      if (k)
        put(g, ",");
      if (chance(g, 30))
        put2(g, k ? " " : "", "const");
      put2(g, k || g->line_[g->ends_[g->n_pieces_ - 1] - 1] == 't' ? " " : "", PICK(g, c_types));
      put(g, chance(g, 40) ? " *" : " ");
      glue_on(g, PICK(g, nouns));
    }
    end_line(g, ") {");
  }
  g->depth_ = 1;
}

static void open_block(struct im_content_gen *g) {
  indent(g);
  if (g->lang_ == 1) {
    if (chance(g, 55)) {
      put(g, "for");
      put2(g, " ", PICK(g, shorts));
      put(g, " in");
      put(g, " range");
      put(g, "(");
      ident(g, false);
      end_line(g, "):");
    } else {
      put(g, chance(g, 80) ? "if" : "while");
      ident(g, true);
      put(g, PICK(g, cmp));
      term(g);
      end_line(g, ":");
    }
  } else if (chance(g, 55)) {
    const char *v = PICK(g, shorts);
    put(g, "for");
    put(g, " (");
    put2(g, PICK(g, c_types), "");
    put2(g, " ", v);
    put(g, " =");
    put(g, " 0");
    put(g, ";");
    put2(g, " ", v);
    put(g, " <");
    ident(g, true);
    put(g, ";");
    put2(g, " ", v);
    put(g, "++");
    end_line(g, ") {");
  } else {
    put(g, chance(g, 80) ? "if" : "while");
    put(g, " (");
    ident(g, false);
    put(g, PICK(g, cmp));
    term(g);
    end_line(g, ") {");
  }
  g->depth_++;
}

static void statement(struct im_content_gen *g) {
  unsigned r = (unsigned)im_rng_below(&g->rng, 10);
  indent(g);
  if (g->lang_ == 1) {
    if (r < 3) {
      ident(g, false);
      put(g, chance(g, 50) ? " =" : " +=");
      expr(g);
      end_line(g, NULL);
    } else if (r < 5) {
      ident(g, false);
      put(g, ".");
      glue_on(g, chance(g, 50) ? "append" : PICK(g, verbs));
      put(g, "(");
      ident(g, false);
      end_line(g, ")");
    } else {
      ident(g, false);
      put(g, "[");
      ident(g, false);
      put(g, "]");
      put(g, " =");
      expr(g);
      end_line(g, NULL);
    }
  } else {
    if (r < 3) {
      put(g, PICK(g, c_types));
      ident(g, true);
      put(g, " =");
      expr(g);
    } else if (r < 6) {
      ident(g, false);
      put(g, PICK(g, c_assign));
      expr(g);
    } else {
      put(g, PICK(g, verbs));
      put2(g, "_", PICK(g, nouns));
      put(g, "(");
      ident(g, false);
      if (chance(g, 60)) {
        put(g, ",");
        term(g);
      }
      put(g, ")");
    }
    end_line(g, ";");
  }
}

enum { ST_START, ST_BODY, ST_FRESH, ST_END };

/* Generates the next line of code into line_. */
static void code_line(struct im_content_gen *g) {
  g->n_pieces_ = g->pos_ = 0;
  switch (g->state_) {
  case ST_START:
    if (!g->first_ && chance(g, 40)) {
      comment(g);
      return;
    }
    signature(g);
    g->left_ = (uint16_t)(4 + im_rng_below(&g->rng, 12));
    g->state_ = ST_FRESH;
    return;
  case ST_FRESH: /* a block was just opened: it needs a statement */
  case ST_BODY:
    if (g->left_ == 0) {
      g->state_ = ST_END;
      code_line(g);
      return;
    }
    g->left_--;
    if (g->state_ == ST_BODY && g->depth_ > 1 && chance(g, 25)) {
      g->depth_--;
      if (g->lang_ == 0) {
        indent(g);
        end_line(g, "}");
        return;
      }
    }
    g->state_ = ST_BODY;
    if (chance(g, 8))
      comment(g);
    else if (g->depth_ < 4 && chance(g, 22)) {
      open_block(g);
      g->state_ = ST_FRESH;
    } else
      statement(g);
    return;
  case ST_END:
  default:
    if (g->depth_ > 1 && g->lang_ == 0) {
      g->depth_--;
      indent(g);
      end_line(g, "}");
      return;
    }
    g->depth_ = 1; /* Python: blocks end by dedenting */
    indent(g);
    put(g, "return");
    expr(g);
    end_line(g, g->lang_ == 0 ? ";" : NULL);
    if (g->lang_ == 0)
      end_line(g, "}");
    put(g, "\n"); /* blank line between functions */
    g->depth_ = 0;
    g->state_ = ST_START;
    g->lang_ = (uint8_t)im_rng_below(&g->rng, 2);
    return;
  }
}

void im_content_gen_init(struct im_content_gen *g, enum im_content c, uint64_t seed) {
  memset(g, 0, sizeof *g);
  g->cls = (unsigned)c < IM_CONTENT_COUNT_ ? c : IM_CONTENT_TEXT;
  im_rng_seed(&g->rng, seed);
  g->first_ = 1;
  g->lang_ = (uint8_t)im_rng_below(&g->rng, 2);
  if (g->cls == IM_CONTENT_TEXT)
    im_textgen_init(&g->prose_, im_mix64(seed ^ 0x7e47ULL), 1.0,
                    1.0, false);
}

static void next_raw(struct im_content_gen *g, const char **piece, size_t *len) {
  if (g->cls == IM_CONTENT_TEXT) {
    im_textgen_next(&g->prose_, piece, len);
    return;
  }
  while (g->pos_ >= g->n_pieces_)
    code_line(g);
  size_t start = g->pos_ ? g->ends_[g->pos_ - 1] : 0;
  *piece = g->line_ + start;
  *len = g->ends_[g->pos_] - start;
  g->pos_++;
}

void im_content_gen_next(struct im_content_gen *g, const char **piece, size_t *len) {
  next_raw(g, piece, len);
  if (!g->first_)
    return;
  /* The first piece starts with a letter, so the text can follow a prefix
   * that ends with a newline or punctuation without merging into it. A
   * bounded skip: the generators start with a word within a few pieces. */
  for (int k = 0; k < 64; k++) {
    const char *p = *piece;
    size_t n = *len;
    while (n && p[0] == ' ')
      p++, n--;
    if (n && isalpha((unsigned char)p[0])) {
      *piece = p;
      *len = n;
      break;
    }
    next_raw(g, piece, len);
  }
  g->first_ = 0;
}
