/* Prompts of an exact token length: search for a cut of generated text.
 *
 * Every candidate is judged by encoding it whole (count(prefix + candidate)
 * - count(prefix)), never by adding up the counts of parts, because tokens
 * merge across joins; what makes it fast is that few candidates are needed.
 *
 *  1. Generate pieces (about one token each) until the text counts more
 *     than n; the pieces' end offsets are the first cut candidates.
 *  2. Search the piece boundaries for a count of exactly n, keeping a
 *     bracket lo < n < hi: interpolation (counts grow about linearly with
 *     the piece index, so it lands within a piece or two of the answer in
 *     two or three counts), with a bisection step whenever interpolation
 *     stalls, so the bracket at least halves every two steps.
 *  3. When neighbouring boundaries count n - 1 and n + 1 (a piece of two
 *     tokens), try every byte offset inside that piece.
 *  4. Otherwise complete the longest cut counting under n with m copies of
 *     a filler (" a", " I", ".", ...) and keep it if the total is exact;
 *     then fillers alone; then single-token strings taken from the
 *     tokenizer's own vocabulary. Bounded tries; IM_NOTFOUND after them.
 * The prompt text is the generator's, so it reads like the class (prose or
 * code) except for the rare filler tail. */
#include "text/promptgen.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "text/simpletok.h"

#define MAX_ROUNDS 64       /* generation rounds before giving up */
#define MAX_SEARCH 96       /* boundary search steps */
#define MAX_PIECE_BYTES 256 /* byte offsets tried inside one piece */
#define MAX_VOCAB_SCAN 4096 /* vocabulary ids tried as fillers */
#define MAX_FULL_TRIES 64   /* filler candidates counted in full */
#define BYTES_PER_TOKEN_MAX 64

struct pg {
  struct im_tok *tok;
  struct im_buf work; /* prefix (only for _after) + generated text */
  struct im_buf cand; /* a filler candidate */
  size_t plen;        /* prefix bytes at the start of work */
  size_t base;        /* tokens of the prefix */
  size_t *ends;       /* ends[i]: end of piece i relative to plen; ends[0] = 0 */
  size_t n_ends, cap_ends;
  struct im_content_gen gen;
  /* Local counting (see search): cuts past a checkpoint are counted as the
   * checkpoint's count plus the count of the text after it. */
  bool local;
  size_t ck_off;
  long long ck_count;
};

static enum im_err count_text(struct pg *p, const char *s, size_t len, size_t *c) {
  if (!p->tok) {
    *c = im_simpletok_encode(s, len, NULL, 0);
    return IM_OK;
  }
  return im_tok_count(p->tok, s, len, c);
}

/* Tokens of the generated text cut at L, net of the prefix (may be
 * negative in principle when the cut merges into the prefix). */
static enum im_err count_cut(struct pg *p, size_t cut, long long *c) {
  size_t total;
  enum im_err err;
  if (p->local && cut >= p->ck_off) {
    err = count_text(p, p->work.data + p->plen + p->ck_off, cut - p->ck_off, &total);
    *c = p->ck_count + (long long)total;
    return err;
  }
  err = count_text(p, p->work.data, p->plen + cut, &total);
  *c = (long long)total - (long long)p->base;
  return err;
}

static enum im_err generate(struct pg *p, size_t pieces) {
  if (p->n_ends + pieces > p->cap_ends) {
    size_t cap = (p->n_ends + pieces) * 2;
    size_t *e = realloc(p->ends, cap * sizeof *e);
    if (!e)
      return IM_NOMEM;
    p->ends = e;
    p->cap_ends = cap;
  }
  for (size_t k = 0; k < pieces; k++) {
    const char *s;
    size_t len;
    im_content_gen_next(&p->gen, &s, &len);
    enum im_err err = im_buf_append(&p->work, s, len);
    if (err)
      return err;
    p->ends[p->n_ends++] = p->work.len - p->plen;
  }
  return IM_OK;
}

/* Fillers: each is one token in the tokenizers we know of, and they are
 * tried in order; the check is the count, not this belief. Same alphabet
 * rules as the generators. */
static const char *const fillers[] = {" a",  " I",  " the", ".", ",", " x", " 1", "\n", " and",
                                      " of", " is", "a",    "x", "-", ";",  "!",  "?"};

static bool safe_filler(const char *s, size_t n) {
  if (n == 0 || n > 16)
    return false;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c >= 0x7f || c == '<' || c == '>' || c == '|' || c == '[' || c == ']')
      return false;
  }
  return true;
}

/* Builds prefix + gen[0..cut) + lead (may be NULL) + m copies of f in cand
 * and checks that the text after the prefix counts n. */
static enum im_err try_filler(struct pg *p, size_t cut, const char *lead, const char *f, size_t fl,
                              size_t m, size_t n, bool *ok) {
  *ok = false;
  im_buf_reset(&p->cand);
  enum im_err err = im_buf_append(&p->cand, p->work.data, p->plen + cut);
  if (!err && lead)
    err = im_buf_puts(&p->cand, lead);
  if (!err)
    err = im_buf_reserve(&p->cand, fl * m);
  for (size_t k = 0; !err && k < m; k++)
    err = im_buf_append(&p->cand, f, fl);
  size_t total = 0;
  if (!err)
    err = count_text(p, p->cand.data ? p->cand.data : "", p->cand.len, &total);
  if (!err)
    *ok = total == p->base + n;
  return err;
}

/* Step 4. On success cand holds prefix + the text. */
static enum im_err fill(struct pg *p, size_t lo, long long clo, size_t n, bool *ok) {
  enum im_err err = IM_OK;
  unsigned full = 0;
  *ok = false;
  size_t m = (size_t)(clo >= 0 ? (long long)n - clo : (long long)n);
  /* After the longest short cut, when few tokens are missing. */
  if (clo >= 0 && m <= 64)
    for (size_t f = 0; !err && !*ok && f < sizeof fillers / sizeof fillers[0]; f++, full++)
      err = try_filler(p, p->ends[lo], NULL, fillers[f], strlen(fillers[f]), m, n, ok);
  /* Fillers alone: after a leading "I" first, to keep the promise that the
   * text starts with a letter, then without it. */
  for (size_t f = 0; !err && !*ok && f < sizeof fillers / sizeof fillers[0]; f++, full++)
    err = try_filler(p, 0, "I", fillers[f], strlen(fillers[f]), n - 1, n, ok);
  for (size_t f = 0; !err && !*ok && f < sizeof fillers / sizeof fillers[0]; f++, full++)
    err = try_filler(p, 0, NULL, fillers[f], strlen(fillers[f]), n, n, ok);
  if (!p->tok || err || *ok)
    return err;
  /* Single-token strings from the vocabulary: decode id, keep it if it is
   * safe and one token alone, then try it as the whole text. */
  struct im_buf s;
  im_buf_init(&s, 1024);
  size_t vs = im_tok_vocab_size(p->tok);
  for (uint32_t id = 0; !err && !*ok && id < vs && id < MAX_VOCAB_SCAN && full < MAX_FULL_TRIES;
       id++) {
    im_buf_reset(&s);
    size_t one = 0;
    if (im_tok_decode(p->tok, &id, 1, &s) != IM_OK || !safe_filler(s.data, s.len))
      continue;
    err = im_tok_count(p->tok, s.data, s.len, &one);
    if (err || one != 1)
      continue;
    err = try_filler(p, 0, NULL, s.data, s.len, n, n, ok);
    full++;
  }
  im_buf_cleanup(&s);
  return err;
}

/* Steps 2-3 on the boundaries lo..hi, whose counts clo < n < chi: sets
 * *found and *cut, or leaves *found false with the final lo in *lo_out. */
static enum im_err bracket(struct pg *p, size_t n, size_t lo, long long clo, size_t hi,
                           long long chi, bool *found, size_t *cut, size_t *lo_out,
                           long long *clo_out) {
  enum im_err err;
  *found = false;
  for (int step = 0; step < MAX_SEARCH && hi - lo > 1; step++) {
    size_t k;
    size_t width = hi - lo;
    if (step % 2 == 1 && width > 8) {
      k = lo + width / 2;
    } else {
      double f = chi > clo ? (double)((long long)n - clo) / (double)(chi - clo) : 0.5;
      k = lo + (size_t)(f * (double)width + 0.5);
    }
    if (k <= lo)
      k = lo + 1;
    if (k >= hi)
      k = hi - 1;
    long long ck;
    if ((err = count_cut(p, p->ends[k], &ck)))
      return err;
    if (ck == (long long)n) {
      *found = true;
      *cut = p->ends[k];
      return IM_OK;
    }
    if (ck < (long long)n) {
      lo = k;
      clo = ck;
    } else {
      hi = k;
      chi = ck;
    }
  }
  *lo_out = lo;
  *clo_out = clo;
  if (hi - lo != 1)
    return IM_OK;
  /* Inside one piece. */
  for (size_t b = p->ends[lo] + 1; b < p->ends[hi] && b - p->ends[lo] <= MAX_PIECE_BYTES; b++) {
    long long cb;
    if ((err = count_cut(p, b, &cb)))
      return err;
    if (cb == (long long)n) {
      *found = true;
      *cut = b;
      return IM_OK;
    }
  }
  return IM_OK;
}

/* Steps 1-3: sets *cut to a cut counting exactly n, or *found false with
 * the longest cut found under n in *lo_out, *clo_out.
 *
 * Counting every candidate from the start would scan the whole text a
 * handful of times; instead a checkpoint is put a few hundred pieces before
 * the expected cut, its count taken as the total minus the count of the
 * text after it, and candidates past it are counted from there. That is
 * exact when no token straddles the checkpoint, which is the usual case
 * but not a guarantee, so the cut found is then counted in full, and on a
 * mismatch the search is redone with full counts. */
static enum im_err search(struct pg *p, size_t n, bool *found, size_t *cut, size_t *lo_out,
                          long long *clo_out) {
  enum im_err err;
  long long c = 0;
  size_t want = n + 16;
  *found = false;
  const size_t budget = (size_t)BYTES_PER_TOKEN_MAX * (n + 16);
  for (int round = 0;; round++) {
    size_t used = p->work.len - p->plen;
    if (round == MAX_ROUNDS || used >= budget)
      return IM_NOTFOUND;
    /* Every piece is at least a byte: never ask for more than the budget. */
    if (want > budget - used)
      want = budget - used;
    if ((err = generate(p, want)) || (err = count_cut(p, p->ends[p->n_ends - 1], &c)))
      return err;
    if (c == (long long)n) {
      *found = true;
      *cut = p->ends[p->n_ends - 1];
      return IM_OK;
    }
    if (c > (long long)n)
      break;
    /* More pieces in proportion to the tokens missing, with margin. */
    size_t have = p->n_ends - 1;
    long long per = c > 0 ? c : 1;
    double more = (double)((long long)n + 1 - c) * (double)have / (double)per;
    want = more < (double)budget ? (size_t)more + have / 8 + 16 : budget;
  }
  size_t last = p->n_ends - 1, end = p->ends[last];
  size_t guess = (size_t)((double)n / (double)c * (double)last);
  for (size_t back = 256; guess > back && back < last; back *= 4) {
    size_t ck = guess - back, tail;
    if ((err = count_text(p, p->work.data + p->plen + p->ends[ck], end - p->ends[ck], &tail)))
      return err;
    long long cc = c - (long long)tail;
    if (cc < 0 || cc >= (long long)n)
      continue;
    p->local = true;
    p->ck_off = p->ends[ck];
    p->ck_count = cc;
    err = bracket(p, n, ck, cc, last, c, found, cut, lo_out, clo_out);
    p->local = false;
    if (err || !*found)
      break;
    long long full;
    if ((err = count_cut(p, *cut, &full)))
      return err;
    if (full == (long long)n)
      return IM_OK;
    break;
  }
  return bracket(p, n, 0, 0, last, c, found, cut, lo_out, clo_out);
}

static enum im_err exact(struct im_tok *tok, enum im_content cls, uint64_t seed, uint32_t n,
                         struct im_buf *out, bool after) {
  if (!out)
    return IM_INVAL;
  if (n > IM_PROMPTGEN_MAX_TOKENS)
    return IM_LIMIT;
  if (n == 0)
    return IM_OK;
  struct pg p;
  memset(&p, 0, sizeof p);
  p.tok = tok;
  im_buf_init(&p.work, IM_PROMPT_TEXT_MAX);
  im_buf_init(&p.cand, IM_PROMPT_TEXT_MAX);
  enum im_err err = IM_OK;
  if (after && out->len) {
    p.plen = out->len;
    err = im_buf_append(&p.work, out->data, out->len);
    if (!err)
      err = count_text(&p, p.work.data, p.plen, &p.base);
  }
  im_content_gen_init(&p.gen, cls, seed);
  p.cap_ends = (size_t)n + 64;
  p.ends = malloc(p.cap_ends * sizeof *p.ends);
  if (!p.ends && !err)
    err = IM_NOMEM;
  if (!err) {
    p.ends[0] = 0;
    p.n_ends = 1;
  }
  bool found = false;
  size_t cut = 0, lo = 0;
  long long clo = 0;
  if (!err)
    err = search(&p, n, &found, &cut, &lo, &clo);
  if (err == IM_NOTFOUND) {
    /* Generation gave up (a tokenizer that counts far fewer tokens than
     * bytes allow); fillers may still work. */
    err = IM_OK;
    lo = 0;
    clo = 0;
  }
  if (!err && found) {
    err = im_buf_append(out, p.work.data + p.plen, cut);
  } else if (!err) {
    bool ok = false;
    err = fill(&p, lo, clo, n, &ok);
    if (!err && !ok)
      err = IM_NOTFOUND;
    if (!err)
      err = im_buf_append(out, p.cand.data + p.plen, p.cand.len - p.plen);
  }
  im_buf_cleanup(&p.work);
  im_buf_cleanup(&p.cand);
  free(p.ends);
  return err;
}

enum im_err im_promptgen_exact(struct im_tok *tok, enum im_content cls, uint64_t seed, uint32_t n,
                               struct im_buf *out) {
  return exact(tok, cls, seed, n, out, false);
}

enum im_err im_promptgen_exact_after(struct im_tok *tok, enum im_content cls, uint64_t seed,
                                     uint32_t n, struct im_buf *out) {
  return exact(tok, cls, seed, n, out, true);
}
