/* Internals of the tokenizer.json tokenizer shared between its files. */
#ifndef INFERMETER_WORKLOAD_TOKENIZER_INT_H
#define INFERMETER_WORKLOAD_TOKENIZER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

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

/* A byte trie of the added tokens, for leftmost-longest matching in time
 * proportional to the match length (DeepSeek-V3 has 818 added tokens, nearly
 * all starting with "<｜"). Node 0 is the root; root[b] is the child of the
 * root for byte b (0: none), so text that starts no token costs one load.
 * Embed and zero-initialise; im__tok_trie_cleanup frees. */
struct im__tok_trie_node {
  uint32_t child, sibling; /* 0: none (node 0 is never a child) */
  int32_t value;           /* token index, -1 for an inner node */
  unsigned char byte;
};
struct im__tok_trie {
  struct im__tok_trie_node *nodes;
  size_t n, cap;
  uint32_t root[256];
};

/* Adds s[0..n) (n > 0) with value; a string added twice keeps its first
 * value. Returns IM_OK or IM_NOMEM (the trie is then unchanged but for inner
 * nodes). */
enum im_err im__tok_trie_add(struct im__tok_trie *tr, const char *s, size_t n, int32_t value);

/* Value of the longest added string that is a prefix of s[0..n), -1 if
 * none. */
int32_t im__tok_trie_longest(const struct im__tok_trie *tr, const char *s, size_t n);

void im__tok_trie_cleanup(struct im__tok_trie *tr);

#endif
