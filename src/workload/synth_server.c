/* Exact prompt lengths counted by the server (synth_int.h). */
#include "workload/synth_int.h"

#include "core/rng.h"
#include "text/promptgen.h"

struct search {
  const struct im_synth *s;
  struct im_buf *b;
  size_t start, head;
  uint32_t want;
  int tries;
};

/* The server's count of b->data[start..end). */
static enum im_err count_to(struct search *q, size_t end, uint32_t *n) {
  q->tries++;
  return q->s->server_count(q->s->server_ctx, q->b->data + q->start, end - q->start, NULL,
                            q->s->chat, n);
}

/* b = header + a body of `body` local tokens from seed, and its server count. */
static enum im_err try_body(struct search *q, enum im_content cls, uint64_t seed, int64_t body,
                            uint32_t *n) {
  q->b->len = q->head;
  enum im_err err = body > 0 ? im_promptgen_exact(q->s->tok, cls, seed, (uint32_t)body, q->b) : IM_OK;
  return err ? err : count_to(q, q->b->len, n);
}

/* The next body length to try: a secant step from (body, got) through
 * (0, fixed), kept strictly inside the bracket (lo, hi) of lengths known to
 * count under and over want (-1: none yet), at least one token away. */
static int64_t next_body(int64_t body, int64_t got, int64_t want, int64_t fixed, int64_t lo,
                         int64_t hi) {
  int64_t per = got - fixed > 0 ? got - fixed : 1;
  int64_t step = (want - got) * (body > 0 ? body : 1) / per;
  if (step == 0)
    step = want > got ? 1 : -1;
  int64_t next = body + step;
  if (lo >= 0 && next <= lo)
    next = hi >= 0 ? lo + (hi - lo) / 2 : lo + 1;
  if (hi >= 0 && next >= hi)
    next = lo >= 0 ? lo + (hi - lo) / 2 : hi - 1;
  return next < 0 ? 0 : next;
}

/* b holds a text counting got > want: cut it at the byte where the server
 * counts want (bisection over the cut, whose count grows by about one
 * token per byte or less). Leaves b cut at the closest cut found (under
 * want on a tie) and its count in *got. */
static enum im_err trim(struct search *q, size_t from, uint32_t from_n, uint32_t *got) {
  /* count(a) < want (a: the header, or `from`, the end of the longest body
   * known to count from_n < want: the same seed's text one local token
   * shorter, a prefix of this one), count(z) > want. */
  bool use_from = from > q->head && from < q->b->len;
  size_t a = use_from ? from : q->head, z = q->b->len;
  uint32_t best = *got;
  size_t best_at = z;
  if (use_from && q->want - from_n <= best - q->want) { /* under wins a tie */
    best = from_n;
    best_at = from;
  }
  enum im_err err = IM_OK;
  while (!err && z - a > 1 && q->tries < IM__SYNTH_SERVER_TRIES) {
    size_t mid = a + (z - a) / 2;
    uint32_t n = 0;
    if ((err = count_to(q, mid, &n)))
      break;
    int64_t d = (int64_t)n - q->want, bd = (int64_t)best - q->want;
    if ((d < 0 ? -d : d) < (bd < 0 ? -bd : bd) || ((d < 0 ? -d : d) == (bd < 0 ? -bd : bd) && d < 0)) {
      best = n;
      best_at = mid;
    }
    if (n == q->want)
      break;
    if (n < q->want)
      a = mid;
    else
      z = mid;
  }
  q->b->len = best_at;
  *got = best;
  return err;
}

enum im_err im__synth_exact_server(const struct im_synth *s, struct im_buf *b, size_t start,
                                   enum im_content cls, uint64_t tag, uint32_t want,
                                   uint32_t fixed, uint32_t *n_out) {
  struct search q = {.s = s, .b = b, .start = start, .head = b->len, .want = want};
  uint64_t seed = im_mix64(s->seed ^ tag ^ 0x5e4eULL);
  int64_t lo = -1, hi = -1, body = (int64_t)want - (int64_t)fixed;
  size_t lo_end = 0; /* b->len of the try at lo, and its count */
  uint32_t lo_n = 0;
  int64_t best_body = 0;
  uint32_t best_n = fixed, got = fixed;
  enum im_err err = IM_OK;
  if (body <= 0) { /* the header alone reaches want: nothing to add */
    *n_out = fixed;
    return IM_OK;
  }
  /* Coarse: body lengths in local tokens until one counts want or two
   * adjacent lengths bracket it (a local token may be several of the
   * server's). */
  while (q.tries < IM__SYNTH_SERVER_TRIES / 2) {
    if ((err = try_body(&q, cls, seed, body, &got)))
      break;
    int64_t d = (int64_t)got - want, bd = (int64_t)best_n - want;
    if ((d < 0 ? -d : d) < (bd < 0 ? -bd : bd) || ((d < 0 ? -d : d) == (bd < 0 ? -bd : bd) && d < 0)) {
      best_n = got;
      best_body = body;
    }
    if (got == want)
      break;
    if (got < want) {
      lo = body;
      lo_end = b->len;
      lo_n = got;
    } else {
      hi = body;
    }
    if (lo >= 0 && hi >= 0 && hi - lo <= 1)
      break;
    body = next_body(body, got, want, fixed, lo, hi);
  }
  /* Fine: the shortest text known to count over want, cut to the byte. */
  if (!err && got != want && hi >= 0) {
    if (body != hi)
      err = try_body(&q, cls, seed, hi, &got);
    if (!err)
      err = trim(&q, hi - lo == 1 ? lo_end : 0, lo_n, &got);
    if (!err) {
      *n_out = got;
      return IM_OK;
    }
  }
  if (!err && got != best_n) { /* b holds the last try: rebuild the closest */
    b->len = q.head;
    if (best_body > 0)
      err = im_promptgen_exact(s->tok, cls, seed, (uint32_t)best_body, b);
    got = best_n;
  }
  *n_out = got;
  return err;
}
