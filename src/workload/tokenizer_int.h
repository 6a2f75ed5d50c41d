/* Internals of the tokenizer.json tokenizer shared between its files. */
#ifndef INFERMETER_WORKLOAD_TOKENIZER_INT_H
#define INFERMETER_WORKLOAD_TOKENIZER_INT_H

#include <stddef.h>

/* Code points of a general-category group (group: 'L', 'M', 'N', 'P' or
 * 'S') that are newer than Unicode 14.0, as PCRE2 class items
 * ("\x{a}-\x{b}\x{c}..."); generated into tokenizer_unicode.c. */
#define IM__TOK_UNI_GROUPS 5
struct im__tok_uni_extra {
  char group;
  const char *items;
};
extern const struct im__tok_uni_extra im__tok_uni_extra[IM__TOK_UNI_GROUPS];

/* Rewrites a pre-tokenizer regex so that PCRE2 classifies characters as
 * Oniguruma with Unicode 16.0 tables does (what the tokenizers crate uses):
 * \p{L} \p{M} \p{N} \p{P} \p{S} (and \pL ..., \P{..} outside a class) are
 * widened with the code points above, and \s / \S become the Unicode
 * White_Space set (PCRE2 10.42's \s also matches U+180E, Oniguruma's does
 * not). A negated property or \S inside a class is left as it is. Returns a
 * malloc'd NUL-terminated pattern (length in *out_n) or NULL when out of
 * memory. */
char *im__tok_re_widen(const char *pat, size_t n, size_t *out_n);

#endif
