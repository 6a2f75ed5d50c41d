/* Rewriting of pre-tokenizer regexes so that PCRE2 classifies characters as
 * the tokenizers crate's Oniguruma does; see tokenizer_int.h. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer_int.h"

/* The White_Space property (Unicode 16.0 PropList.txt; unchanged since 6.3),
 * which is what Oniguruma's \s matches in Unicode mode. */
static const char ws_items[] = "\\t\\n\\x{b}\\f\\r\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}"
                               "\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}";

struct sb {
  char *p;
  size_t n, cap;
  bool oom;
};

static void put(struct sb *b, const char *s, size_t n) {
  if (b->oom)
    return;
  if (b->n + n + 1 > b->cap) {
    size_t c = b->cap ? b->cap : 256;
    while (c < b->n + n + 1)
      c *= 2;
    char *q = realloc(b->p, c);
    if (!q) {
      b->oom = true;
      return;
    }
    b->p = q;
    b->cap = c;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void puts_(struct sb *b, const char *s) {
  put(b, s, strlen(s));
}

static const char *group_items(const char *name, size_t len) {
  if (len != 1)
    return NULL;
  for (size_t g = 0; g < IM__TOK_UNI_GROUPS; g++)
    if (im__tok_uni_extra[g].group == name[0])
      return im__tok_uni_extra[g].items;
  return NULL;
}

/* Handles \p / \P at pat[i] (the backslash); returns the length consumed, 0
 * if it is not a property escape this rewrite knows. */
static size_t property(struct sb *b, const char *pat, size_t n, size_t i, bool in_class) {
  bool neg = pat[i + 1] == 'P';
  const char *name;
  size_t len, used;
  if (i + 2 >= n)
    return 0;
  if (pat[i + 2] == '{') {
    const char *close = memchr(pat + i + 3, '}', n - i - 3);
    if (!close)
      return 0;
    name = pat + i + 3;
    len = (size_t)(close - name);
    used = (size_t)(close - (pat + i)) + 1;
    if (len && name[0] == '^') {
      neg = !neg;
      name++;
      len--;
    }
  } else {
    name = pat + i + 2;
    len = 1;
    used = 3;
  }
  const char *items = group_items(name, len);
  if (!items || (in_class && neg))
    return 0;
  if (!in_class)
    puts_(b, neg ? "[^" : "[");
  puts_(b, "\\p{");
  put(b, name, 1);
  puts_(b, "}");
  puts_(b, items);
  if (!in_class)
    puts_(b, "]");
  return used;
}

char *im__tok_re_widen(const char *pat, size_t n, size_t *out_n) {
  struct sb b = {0};
  bool in_class = false;
  put(&b, "", 0);
  for (size_t i = 0; i < n;) {
    char c = pat[i];
    if (c == '\\' && i + 1 < n) {
      char d = pat[i + 1];
      size_t used = 0;
      if (d == 'p' || d == 'P') {
        used = property(&b, pat, n, i, in_class);
      } else if (d == 's' && in_class) {
        puts_(&b, ws_items);
        used = 2;
      } else if ((d == 's' || d == 'S') && !in_class) {
        puts_(&b, d == 'S' ? "[^" : "[");
        puts_(&b, ws_items);
        puts_(&b, "]");
        used = 2;
      } else if (d == 'Q') { /* quoted up to \E: copied as it is */
        const char *e = NULL;
        for (size_t k = i + 2; k + 1 < n && !e; k++)
          if (pat[k] == '\\' && pat[k + 1] == 'E')
            e = pat + k + 2;
        used = e ? (size_t)(e - (pat + i)) : n - i;
        put(&b, pat + i, used);
      }
      if (!used) {
        put(&b, pat + i, 2);
        used = 2;
      }
      i += used;
    } else if (c == '[' && !in_class) {
      in_class = true;
      size_t k = i + 1;
      if (k < n && pat[k] == '^')
        k++;
      if (k < n && pat[k] == ']') /* a ']' first in a class is literal */
        k++;
      put(&b, pat + i, k - i);
      i = k;
    } else if (c == '[' && in_class && i + 1 < n && pat[i + 1] == ':') {
      const char *e = memmem(pat + i, n - i, ":]", 2); /* POSIX class [:name:] */
      size_t k = e ? (size_t)(e - pat) + 2 : i + 1;
      put(&b, pat + i, k - i);
      i = k;
    } else {
      if (c == ']' && in_class)
        in_class = false;
      put(&b, pat + i, 1);
      i++;
    }
  }
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  *out_n = b.n;
  return b.p;
}
