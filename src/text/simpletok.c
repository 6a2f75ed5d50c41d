/* Built-in tokenizer: a pre-tokenizer-only cut of text into BPE-sized pieces.
 *
 * Piece rules, tried at each position (every piece is found from its first
 * byte with a bounded look-ahead, so tokenizing a prefix that ends at a
 * piece boundary gives the same leading pieces as the whole text):
 *   - word: an optional single space, then ASCII letters. A piece longer
 *     than 8 bytes (space included) is cut after 6 bytes and the rest of the
 *     word is cut again by the same rule (" internationalization" ->
 *     " inter" "nation" "alizat" "ion").
 *   - punctuation: one ASCII punctuation character, with a single leading
 *     space if there is one (" (", " =").
 *   - digits: a run of up to 3.
 *   - spaces and tabs not taken by a following word or punctuation: runs of
 *     up to 8 bytes (code indentation is one piece, as in BPE vocabularies).
 *   - newlines (\n, \r): runs of up to 8 bytes.
 *   - non-ASCII: one well-formed UTF-8 character; a byte that does not start
 *     one is a piece by itself, so invalid input never stops the scan.
 *   - any other byte (controls): a piece by itself.
 * The id of a piece is a hash of its bytes scaled into
 * [256, IM_SIMPLETOK_VOCAB) (ids below 256 are left for byte tokens, as in
 * byte-level BPE vocabularies). */
#include "text/simpletok.h"

enum { C_OTHER, C_LETTER, C_DIGIT, C_SPACE, C_NL, C_PUNCT, C_HIGH };

/* Byte classes; generated from the rules above (ASCII letters, digits,
 * ' ' and '\t', '\n' and '\r', printable ASCII punctuation, bytes >= 0x80). */
static const unsigned char cls[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 4, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    3, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 5, 5, 5, 5, 5, 5,
    5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5, 5, 5, 5, 5,
    5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5, 5, 5, 5, 0,
    6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6,
    6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6,
    6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6,
    6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6,
};

#define WORD_MAX 8 /* longest word piece kept whole, in bytes */
#define WORD_CUT 6 /* length of the head cut from a longer one */
#define RUN_MAX 8  /* longest whitespace or newline run piece */
#define DIGIT_MAX 3

/* A space that a following word or punctuation character takes as its own. */
static inline int space_joins(const unsigned char *p, size_t i, size_t len) {
  return p[i] == ' ' && i + 1 < len && (cls[p[i + 1]] == C_LETTER || cls[p[i + 1]] == C_PUNCT);
}

/* End of a word piece that starts at s (its letters start at w). The
 * look-ahead stops at WORD_MAX + 1 bytes: enough to know whether to cut. */
static inline size_t word_end(const unsigned char *p, size_t s, size_t w, size_t len) {
  size_t e = w;
  while (e < len && cls[p[e]] == C_LETTER && e - s <= WORD_MAX)
    e++;
  return e - s > WORD_MAX ? s + WORD_CUT : e;
}

/* Length of the well-formed UTF-8 character at p[i], or 1 for a byte that
 * does not start one (stray continuation, overlong lead, truncated tail). */
static inline size_t utf8_len(const unsigned char *p, size_t i, size_t len) {
  unsigned char b = p[i];
  size_t n;
  if (b >= 0xC2 && b <= 0xDF)
    n = 2;
  else if (b >= 0xE0 && b <= 0xEF)
    n = 3;
  else if (b >= 0xF0 && b <= 0xF4)
    n = 4;
  else
    return 1;
  if (len - i < n)
    return 1;
  for (size_t k = 1; k < n; k++)
    if ((p[i + k] & 0xC0) != 0x80)
      return 1;
  return n;
}

/* End of the piece that starts at p[i] (i < len). */
static inline size_t piece_end(const unsigned char *p, size_t i, size_t len) {
  size_t j;
  switch (cls[p[i]]) {
  case C_LETTER:
    return word_end(p, i, i, len);
  case C_SPACE:
    if (space_joins(p, i, len))
      return cls[p[i + 1]] == C_LETTER ? word_end(p, i, i + 1, len) : i + 2;
    /* The run stops before a space that belongs to the next piece. */
    j = i + 1;
    while (j < len && j - i < RUN_MAX && cls[p[j]] == C_SPACE && !space_joins(p, j, len))
      j++;
    return j;
  case C_DIGIT:
    j = i + 1;
    while (j < len && j - i < DIGIT_MAX && cls[p[j]] == C_DIGIT)
      j++;
    return j;
  case C_NL:
    j = i + 1;
    while (j < len && j - i < RUN_MAX && cls[p[j]] == C_NL)
      j++;
    return j;
  case C_HIGH:
    return i + utf8_len(p, i, len);
  default: /* punctuation without a space, other bytes */
    return i + 1;
  }
}

/* Every piece is at most 8 bytes (the caps above), so it fits one 64-bit
 * word: no per-byte multiply chain as in FNV, which made hashing the
 * bottleneck. The length is added with the golden-ratio increment of
 * splitmix64 so that pieces differing only in trailing NULs differ, then
 * the splitmix64 finaliser (Steele, Lea, Flood 2014) spreads the key. Built
 * byte by byte, so ids do not depend on the machine's byte order. */
static inline uint32_t piece_id(const unsigned char *p, size_t n) {
  uint64_t h = 0;
  for (size_t k = 0; k < n; k++)
    h |= (uint64_t)p[k] << (8 * k);
  h += (uint64_t)n * 0x9e3779b97f4a7c15ULL;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  h ^= h >> 31;
  /* Multiply-shift maps the top 32 bits onto the range without a division. */
  return 256u + (uint32_t)(((h >> 32) * (uint64_t)(IM_SIMPLETOK_VOCAB - 256)) >> 32);
}

size_t im_simpletok_encode(const char *text, size_t len, uint32_t *ids, size_t max_ids) {
  const unsigned char *p = (const unsigned char *)text;
  size_t n = 0, i = 0;
  if (!text)
    return 0;
  if (!ids)
    max_ids = 0;
  while (i < len) {
    size_t e = piece_end(p, i, len);
    if (n < max_ids)
      ids[n] = piece_id(p + i, e - i);
    n++;
    i = e;
  }
  return n;
}
