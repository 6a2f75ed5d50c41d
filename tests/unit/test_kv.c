#include <stdint.h>

#include "check.h"
#include "core/rng.h"
#include "serve/kv.h"

/* Fills toks[0..n) with base, base+1, ... so two prompts share a prefix
 * exactly where their bases and offsets agree. */
static void fill(uint32_t *toks, uint32_t n, uint32_t base) {
  for (uint32_t i = 0; i < n; i++)
    toks[i] = base + i;
}

static struct im_kv *make(uint32_t num_blocks, uint32_t block_size, bool caching) {
  struct im_kv *kv = NULL;
  CHECK_OK(im_kv_new(&kv, num_blocks, block_size, caching));
  return kv;
}

/* Admits a sequence like the engine does: prefix lookup, allocate, commit
 * the whole prompt as computed. Returns the hit tokens. */
static uint32_t admit(struct im_kv *kv, struct im_kv_seq *seq, const uint32_t *toks, uint32_t n) {
  uint32_t hit = 0;
  CHECK_OK(im_kv_acquire_prefix(kv, seq, toks, n, &hit));
  CHECK_OK(im_kv_allocate(kv, seq, n));
  im_kv_commit(kv, seq, toks, n);
  CHECK_EQ(im_kv_check(kv), 0);
  return hit;
}

static void test_new_and_args(void) {
  struct im_kv *kv = NULL;
  CHECK_EQ(im_kv_new(&kv, 0, 16, true), IM_INVAL);
  CHECK(kv == NULL);
  CHECK_EQ(im_kv_new(&kv, 4, 0, true), IM_INVAL);
  kv = make(10, 16, true);
  CHECK_EQ(im_kv_blocks_for(kv, 0), 0);
  CHECK_EQ(im_kv_blocks_for(kv, 1), 1);
  CHECK_EQ(im_kv_blocks_for(kv, 16), 1);
  CHECK_EQ(im_kv_blocks_for(kv, 17), 2);
  CHECK_EQ(im_kv_blocks_for(kv, UINT32_MAX), 268435456);
  CHECK_EQ(im_kv_num_free(kv), 10);
  CHECK_NEAR(im_kv_usage(kv), 0.0, 1e-12);
  CHECK_EQ(im_kv_check(kv), 0);
  im_kv_free(kv);
  im_kv_free(NULL);
}

static void test_allocate_capacity(void) {
  struct im_kv *kv = make(4, 4, true);
  struct im_kv_seq a, b;
  im_kv_seq_init(&a, 0);
  im_kv_seq_init(&b, 0);

  CHECK_OK(im_kv_allocate(kv, &a, 5)); /* 2 blocks */
  CHECK_EQ(a.n_blocks, 2);
  CHECK_EQ(a.blocks[0], 0); /* pops from the head, in id order at start */
  CHECK_EQ(a.blocks[1], 1);
  CHECK_EQ(im_kv_num_free(kv), 2);
  CHECK_NEAR(im_kv_usage(kv), 0.5, 1e-12);
  CHECK_OK(im_kv_allocate(kv, &a, 8)); /* still 2 blocks: no-op */
  CHECK_EQ(a.n_blocks, 2);
  CHECK_OK(im_kv_allocate(kv, &a, 3)); /* shrinking request: no-op */
  CHECK_EQ(a.n_blocks, 2);

  CHECK_OK(im_kv_allocate(kv, &b, 4));
  CHECK_EQ(im_kv_num_free(kv), 1);
  /* b needs 3 more, 1 free: IM_FULL and nothing changes. */
  CHECK_EQ(im_kv_allocate(kv, &b, 16), IM_FULL);
  CHECK_EQ(b.n_blocks, 1);
  CHECK_EQ(im_kv_num_free(kv), 1);
  CHECK_EQ(im_kv_check(kv), 0);
  CHECK_OK(im_kv_allocate(kv, &b, 8));
  CHECK_EQ(im_kv_num_free(kv), 0);
  CHECK_NEAR(im_kv_usage(kv), 1.0, 1e-12);
  CHECK_EQ(im_kv_allocate(kv, &b, 9), IM_FULL);
  CHECK_EQ(im_kv_block_refs(kv, 3), 1);
  CHECK_EQ(im_kv_block_refs(kv, 99), 0);

  im_kv_release(kv, &a);
  CHECK_EQ(a.n_blocks, 0);
  CHECK_EQ(a.n_hashed, 0);
  CHECK_EQ(im_kv_num_free(kv), 2);
  CHECK_EQ(im_kv_block_refs(kv, 0), 0);
  im_kv_seq_cleanup(kv, &b);
  CHECK(b.blocks == NULL);
  CHECK_EQ(im_kv_num_free(kv), 4);
  im_kv_seq_cleanup(kv, &a);
  im_kv_seq_cleanup(kv, NULL);
  CHECK_EQ(im_kv_check(kv), 0);
  im_kv_free(kv);
}

static void test_repeat_prompt_hits(void) {
  struct im_kv *kv = make(16, 4, true);
  uint32_t p[12];
  fill(p, 12, 100);
  struct im_kv_seq a, b, c;
  im_kv_seq_init(&a, 0);
  im_kv_seq_init(&b, 0);
  im_kv_seq_init(&c, 0);

  CHECK_EQ(im_kv_peek_prefix(kv, 0, p, 12), 0);
  CHECK_EQ(admit(kv, &a, p, 12), 0);
  CHECK_EQ(a.n_hashed, 3);
  struct im_kv_stats st;
  im_kv_get_stats(kv, &st);
  CHECK_EQ(st.cached_blocks, 3);
  CHECK_EQ(st.queries_tokens, 12);
  CHECK_EQ(st.hits_tokens, 0);

  /* Same 12 tokens: at most 11 may hit, whole blocks: 2 blocks = 8. */
  CHECK_EQ(im_kv_peek_prefix(kv, 0, p, 12), 8);
  /* Exactly 2 blocks: hits 1 block. */
  CHECK_EQ(im_kv_peek_prefix(kv, 0, p, 8), 4);
  /* One block plus one token: hits the block. */
  CHECK_EQ(im_kv_peek_prefix(kv, 0, p, 5), 4);
  CHECK_EQ(im_kv_peek_prefix(kv, 0, p, 4), 0);
  CHECK_EQ(im_kv_peek_prefix(kv, 0, p, 1), 0);
  CHECK_EQ(im_kv_peek_prefix(kv, 0, p, 0), 0);

  /* Shares a's blocks while a still runs. */
  CHECK_EQ(admit(kv, &b, p, 12), 8);
  CHECK_EQ(b.n_blocks, 3);
  CHECK_EQ(b.n_hashed, 3); /* third block: same hash as a's, stays unregistered */
  CHECK_EQ(b.blocks[0], a.blocks[0]);
  CHECK_EQ(b.blocks[1], a.blocks[1]);
  CHECK(b.blocks[2] != a.blocks[2]);
  CHECK_EQ(im_kv_block_refs(kv, a.blocks[0]), 2);
  CHECK_EQ(im_kv_block_refs(kv, a.blocks[2]), 1);
  im_kv_get_stats(kv, &st);
  CHECK_EQ(st.cached_blocks, 3);
  CHECK_EQ(st.queries_tokens, 24);
  CHECK_EQ(st.hits_tokens, 8);
  CHECK_EQ(im_kv_num_free(kv), 16 - 4);

  /* A prompt diverging in block 2 hits only block 1. */
  uint32_t q[12];
  fill(q, 12, 100);
  q[6] = 7;
  CHECK_EQ(im_kv_peek_prefix(kv, 0, q, 12), 4);
  CHECK_EQ(admit(kv, &c, q, 12), 4);
  im_kv_get_stats(kv, &st);
  CHECK_EQ(st.queries_tokens, 36);
  CHECK_EQ(st.hits_tokens, 12);
  CHECK_EQ(st.cached_blocks, 5);

  /* Acquire on a sequence holding blocks is a state error. */
  uint32_t hit = 99;
  CHECK_EQ(im_kv_acquire_prefix(kv, &c, q, 12, &hit), IM_STATE);
  CHECK_EQ(hit, 0);

  im_kv_seq_cleanup(kv, &a);
  im_kv_seq_cleanup(kv, &b);
  im_kv_seq_cleanup(kv, &c);
  CHECK_EQ(im_kv_num_free(kv), 16);
  CHECK_EQ(im_kv_check(kv), 0);
  im_kv_free(kv);
}

static void test_salts(void) {
  struct im_kv *kv = make(16, 4, true);
  uint32_t p[9];
  fill(p, 9, 5);
  struct im_kv_seq a, b;
  im_kv_seq_init(&a, 1);
  im_kv_seq_init(&b, 2);
  CHECK_EQ(admit(kv, &a, p, 9), 0);
  CHECK_EQ(im_kv_peek_prefix(kv, 1, p, 9), 8);
  CHECK_EQ(im_kv_peek_prefix(kv, 2, p, 9), 0);
  CHECK_EQ(im_kv_peek_prefix(kv, 0, p, 9), 0);
  CHECK_EQ(admit(kv, &b, p, 9), 0);
  struct im_kv_stats st;
  im_kv_get_stats(kv, &st);
  CHECK_EQ(st.cached_blocks, 4); /* two chains of two blocks */
  CHECK_EQ(im_kv_peek_prefix(kv, 2, p, 9), 8);
  im_kv_seq_cleanup(kv, &a);
  im_kv_seq_cleanup(kv, &b);
  im_kv_free(kv);
}

/* Eviction takes the least recently freed block, and a sequence's blocks
 * are freed tail first, so a cached prefix loses its tail before its head. */
static void test_eviction_order(void) {
  struct im_kv *kv = make(4, 4, true);
  uint32_t p[13], z[8];
  fill(p, 13, 1000);
  fill(z, 8, 9000);
  struct im_kv_seq a, c;
  im_kv_seq_init(&a, 0);
  im_kv_seq_init(&c, 0);
  CHECK_EQ(admit(kv, &a, p, 12), 0); /* blocks 0,1,2; queue [3] */
  im_kv_release(kv, &a);             /* queue [3, 2, 1, 0] */
  CHECK_EQ(im_kv_num_free(kv), 4);   /* cached blocks count as free */
  CHECK_NEAR(im_kv_usage(kv), 0.0, 1e-12);
  CHECK_EQ(im_kv_peek_prefix(kv, 0, p, 13), 12);

  struct im_kv_stats st;
  CHECK_OK(im_kv_allocate(kv, &c, 4)); /* never-used block 3 first */
  CHECK_EQ(c.blocks[0], 3);
  im_kv_get_stats(kv, &st);
  CHECK_EQ(st.evictions, 0);
  CHECK_EQ(im_kv_peek_prefix(kv, 0, p, 13), 12);

  CHECK_OK(im_kv_allocate(kv, &c, 8)); /* evicts the prefix's tail */
  CHECK_EQ(c.blocks[1], 2);
  im_kv_get_stats(kv, &st);
  CHECK_EQ(st.evictions, 1);
  CHECK_EQ(st.cached_blocks, 2);
  CHECK_EQ(im_kv_peek_prefix(kv, 0, p, 13), 8);

  CHECK_OK(im_kv_allocate(kv, &c, 12));
  CHECK_EQ(im_kv_peek_prefix(kv, 0, p, 13), 4);
  im_kv_seq_cleanup(kv, &a);
  im_kv_seq_cleanup(kv, &c);
  CHECK_EQ(im_kv_check(kv), 0);
  im_kv_free(kv);

  /* LRU across sequences: x freed first, y second, then x is reused and
   * freed again; the next allocation evicts y, not x. */
  kv = make(3, 4, true);
  uint32_t x[5], y[5];
  fill(x, 5, 10);
  fill(y, 5, 20);
  struct im_kv_seq sx, sy, sz;
  im_kv_seq_init(&sx, 0);
  im_kv_seq_init(&sy, 0);
  im_kv_seq_init(&sz, 0);
  CHECK_EQ(admit(kv, &sx, x, 4), 0); /* block 0 */
  CHECK_EQ(admit(kv, &sy, y, 4), 0); /* block 1 */
  im_kv_release(kv, &sx);            /* queue [2, 0] */
  im_kv_release(kv, &sy);            /* queue [2, 0, 1] */
  uint32_t hit = 0;
  CHECK_OK(im_kv_acquire_prefix(kv, &sx, x, 5, &hit)); /* queue [2, 1] */
  CHECK_EQ(hit, 4);
  CHECK_EQ(sx.blocks[0], 0);
  CHECK_EQ(im_kv_num_free(kv), 2);
  CHECK_EQ(im_kv_check(kv), 0);
  im_kv_release(kv, &sx); /* queue [2, 1, 0] */
  CHECK_OK(im_kv_allocate(kv, &sz, 8));
  CHECK_EQ(sz.blocks[0], 2);
  CHECK_EQ(sz.blocks[1], 1);
  CHECK_EQ(im_kv_peek_prefix(kv, 0, y, 5), 0);
  CHECK_EQ(im_kv_peek_prefix(kv, 0, x, 5), 4);
  im_kv_seq_cleanup(kv, &sx);
  im_kv_seq_cleanup(kv, &sy);
  im_kv_seq_cleanup(kv, &sz);
  im_kv_free(kv);
}

/* Generated tokens, once committed, are hit by a prompt equal to
 * prompt + output (multi-turn chat). */
static void test_commit_generated(void) {
  struct im_kv *kv = make(8, 4, true);
  uint32_t t[13];
  fill(t, 13, 50); /* prompt t[0..6), output t[6..12), next turn t[0..13) */
  struct im_kv_seq a, b;
  im_kv_seq_init(&a, 0);
  im_kv_seq_init(&b, 0);
  CHECK_EQ(admit(kv, &a, t, 6), 0);
  CHECK_EQ(a.n_hashed, 1); /* the partial block waits */
  uint64_t after_prompt = a.last_hash;
  for (uint32_t n = 7; n <= 12; n++) { /* one decode step per token */
    CHECK_OK(im_kv_allocate(kv, &a, n));
    im_kv_commit(kv, &a, t, n);
  }
  CHECK_EQ(a.n_blocks, 3);
  CHECK_EQ(a.n_hashed, 3);
  CHECK(a.last_hash != after_prompt);
  /* Committing fewer tokens than already committed changes nothing. */
  im_kv_commit(kv, &a, t, 4);
  CHECK_EQ(a.n_hashed, 3);
  im_kv_release(kv, &a);
  CHECK_EQ(im_kv_peek_prefix(kv, 0, t, 13), 12);
  CHECK_EQ(im_kv_peek_prefix(kv, 0, t, 12), 8);
  /* Release then reacquire: the cached blocks leave the free queue. */
  CHECK_EQ(im_kv_num_free(kv), 8);
  CHECK_EQ(admit(kv, &b, t, 13), 12);
  CHECK_EQ(b.n_blocks, 4);
  CHECK_EQ(im_kv_num_free(kv), 4);
  CHECK_EQ(im_kv_block_refs(kv, b.blocks[0]), 1);
  struct im_kv_stats st;
  im_kv_get_stats(kv, &st);
  CHECK_EQ(st.evictions, 0);
  CHECK_EQ(st.cached_blocks, 3);
  im_kv_seq_cleanup(kv, &a);
  im_kv_seq_cleanup(kv, &b);
  im_kv_free(kv);
}

static void test_caching_disabled(void) {
  struct im_kv *kv = make(8, 4, false);
  uint32_t p[9];
  fill(p, 9, 3);
  struct im_kv_seq a, b;
  im_kv_seq_init(&a, 0);
  im_kv_seq_init(&b, 0);
  CHECK_EQ(admit(kv, &a, p, 9), 0);
  CHECK_EQ(a.n_hashed, 0);
  CHECK_EQ(admit(kv, &b, p, 9), 0);
  im_kv_release(kv, &a);
  CHECK_EQ(im_kv_peek_prefix(kv, 0, p, 9), 0);
  struct im_kv_stats st;
  im_kv_get_stats(kv, &st);
  CHECK_EQ(st.cached_blocks, 0);
  CHECK_EQ(st.hits_tokens, 0);
  CHECK_EQ(st.queries_tokens, 0); /* vLLM keeps no prefix stats when off */
  im_kv_seq_cleanup(kv, &a);
  im_kv_seq_cleanup(kv, &b);
  im_kv_free(kv);
}

static void test_resize(void) {
  struct im_kv *kv = make(8, 4, true);
  uint32_t p[16], q[9];
  fill(p, 16, 1);
  fill(q, 9, 500);
  struct im_kv_seq a, b;
  im_kv_seq_init(&a, 0);
  im_kv_seq_init(&b, 0);
  CHECK_EQ(admit(kv, &a, p, 16), 0); /* blocks 0..3, all hashed */
  CHECK_EQ(admit(kv, &b, q, 9), 0);  /* blocks 4..6, 2 hashed */
  im_kv_release(kv, &b);             /* queue [7, 6, 5, 4] */
  CHECK_EQ(im_kv_peek_prefix(kv, 0, q, 9), 8);

  CHECK_EQ(im_kv_resize(kv, 0), IM_INVAL);
  /* Shrink to 3: a holds 4 blocks, one above the new size. */
  CHECK_OK(im_kv_resize(kv, 3));
  CHECK_EQ(im_kv_check(kv), 0);
  struct im_kv_stats st;
  im_kv_get_stats(kv, &st);
  CHECK_EQ(st.num_blocks, 3);
  CHECK_EQ(st.free_blocks, 0);
  CHECK_EQ(st.cached_blocks, 3); /* a's blocks 0..2; block 3 and b's gone */
  CHECK_NEAR(im_kv_usage(kv), 1.0, 1e-12);
  CHECK_EQ(im_kv_peek_prefix(kv, 0, q, 9), 0);
  CHECK_EQ(im_kv_peek_prefix(kv, 0, p, 16), 12);
  struct im_kv_seq c;
  im_kv_seq_init(&c, 0);
  CHECK_EQ(im_kv_allocate(kv, &c, 1), IM_FULL);

  /* Released: blocks 0..2 come back, block 3 is retired. */
  im_kv_release(kv, &a);
  CHECK_EQ(im_kv_check(kv), 0);
  CHECK_EQ(im_kv_num_free(kv), 3);
  CHECK_NEAR(im_kv_usage(kv), 0.0, 1e-12);
  CHECK_EQ(im_kv_peek_prefix(kv, 0, p, 16), 12);
  CHECK_EQ(im_kv_allocate(kv, &c, 16), IM_FULL);
  CHECK_OK(im_kv_allocate(kv, &c, 12));
  for (uint32_t i = 0; i < c.n_blocks; i++)
    CHECK(c.blocks[i] < 3);
  im_kv_release(kv, &c);

  /* Shrink with a sequence in use above the new size, then grow back past
   * it before it is released: the block stays in use, then joins the queue. */
  CHECK_OK(im_kv_allocate(kv, &c, 12)); /* all 3 blocks */
  CHECK_OK(im_kv_resize(kv, 2));
  CHECK_EQ(im_kv_check(kv), 0);
  CHECK_EQ(im_kv_num_free(kv), 0);
  CHECK_OK(im_kv_resize(kv, 12));
  CHECK_EQ(im_kv_check(kv), 0);
  CHECK_EQ(im_kv_num_free(kv), 9); /* 12 - c's 3 */
  im_kv_get_stats(kv, &st);
  CHECK_EQ(st.num_blocks, 12);
  CHECK_NEAR(im_kv_usage(kv), 0.25, 1e-12);
  /* New blocks are spent before cached ones: the lowest new id first. */
  CHECK_OK(im_kv_allocate(kv, &a, 4));
  CHECK_EQ(a.blocks[0], 3);
  im_kv_release(kv, &c);
  CHECK_EQ(im_kv_num_free(kv), 11);
  CHECK_EQ(im_kv_check(kv), 0);
  /* Growing beyond the first size reallocates; everything still works. */
  CHECK_OK(im_kv_resize(kv, 100));
  CHECK_EQ(im_kv_check(kv), 0);
  CHECK_OK(im_kv_allocate(kv, &c, 99 * 4));
  CHECK_EQ(im_kv_num_free(kv), 0);
  CHECK_EQ(im_kv_allocate(kv, &c, 99 * 4 + 1), IM_FULL);
  im_kv_seq_cleanup(kv, &a);
  im_kv_seq_cleanup(kv, &b);
  im_kv_seq_cleanup(kv, &c);
  CHECK_EQ(im_kv_num_free(kv), 100);
  CHECK_EQ(im_kv_check(kv), 0);
  im_kv_free(kv);
}

/* Random admissions, decode steps, commits, releases and resizes; after
 * every operation the manager's invariants hold and the reference counts
 * equal what the sequences hold. Prompts come from a few shared prefixes so
 * hits, sharing and eviction all happen. */
#define ST_SEQS 24
#define ST_MAXTOK 96
#define ST_BLOCKS 48

static void check_refs(const struct im_kv *kv, const struct im_kv_seq *seqs, uint32_t max_id) {
  static uint32_t want[4096];
  memset(want, 0, sizeof(want));
  for (int s = 0; s < ST_SEQS; s++)
    for (uint32_t i = 0; i < seqs[s].n_blocks; i++)
      want[seqs[s].blocks[i]]++;
  int bad = 0;
  for (uint32_t id = 0; id < max_id; id++)
    bad += im_kv_block_refs(kv, id) != want[id];
  CHECK_EQ(bad, 0);
}

static void test_stress(void) {
  struct im_rng rng;
  im_rng_seed(&rng, 12345);
  struct im_kv *kv = make(ST_BLOCKS, 4, true);
  struct im_kv_seq seqs[ST_SEQS];
  uint32_t toks[ST_SEQS][ST_MAXTOK];
  uint32_t len[ST_SEQS] = {0};
  for (int s = 0; s < ST_SEQS; s++)
    im_kv_seq_init(&seqs[s], im_rng_below(&rng, 2));
  uint32_t max_cap = ST_BLOCKS;
  int failures_before = im_test_failures;
  uint64_t total_hits = 0;

  for (int step = 0; step < 20000 && im_test_failures == failures_before; step++) {
    int s = (int)im_rng_below(&rng, ST_SEQS);
    struct im_kv_seq *q = &seqs[s];
    uint64_t op = im_rng_below(&rng, 100);
    if (q->n_blocks == 0 && op < 60) {
      /* Admit: one of 4 shared prefixes, then random tail. */
      uint32_t n = 1 + (uint32_t)im_rng_below(&rng, ST_MAXTOK / 2);
      uint32_t shared = (uint32_t)im_rng_below(&rng, n + 1);
      uint32_t base = 1000 * (uint32_t)im_rng_below(&rng, 4);
      for (uint32_t i = 0; i < n; i++)
        toks[s][i] = i < shared ? base + i : (uint32_t)im_rng_u64(&rng);
      uint32_t peek = im_kv_peek_prefix(kv, q->salt, toks[s], n);
      uint32_t hit = 0;
      CHECK_OK(im_kv_acquire_prefix(kv, q, toks[s], n, &hit));
      CHECK_EQ(hit, peek);
      CHECK(hit < n);
      CHECK_EQ(hit % 4, 0);
      total_hits += hit;
      if (im_kv_allocate(kv, q, n) == IM_OK) {
        im_kv_commit(kv, q, toks[s], n);
        len[s] = n;
      } else {
        im_kv_release(kv, q); /* not admitted */
      }
    } else if (q->n_blocks > 0 && op < 85) {
      /* Decode step. */
      if (len[s] < ST_MAXTOK && im_kv_allocate(kv, q, len[s] + 1) == IM_OK) {
        toks[s][len[s]] = (uint32_t)im_rng_u64(&rng);
        len[s]++;
        im_kv_commit(kv, q, toks[s], len[s]);
      } else {
        im_kv_release(kv, q); /* preempted */
      }
    } else if (q->n_blocks > 0) {
      im_kv_release(kv, q);
    } else if (op > 97) {
      uint32_t n = 1 + (uint32_t)im_rng_below(&rng, 2 * ST_BLOCKS);
      CHECK_OK(im_kv_resize(kv, n));
      if (n > max_cap)
        max_cap = n;
    }
    CHECK_EQ(im_kv_check(kv), 0);
    check_refs(kv, seqs, max_cap);
    double u = im_kv_usage(kv);
    CHECK(u >= 0.0 && u <= 1.0);
  }
  struct im_kv_stats st;
  im_kv_get_stats(kv, &st);
  CHECK_EQ(st.hits_tokens, total_hits);
  CHECK(st.hits_tokens > 0);
  CHECK(st.evictions > 0);
  for (int s = 0; s < ST_SEQS; s++)
    im_kv_seq_cleanup(kv, &seqs[s]);
  CHECK_EQ(im_kv_check(kv), 0);
  CHECK_EQ(im_kv_num_free(kv), st.num_blocks);
  im_kv_free(kv);
}

int main(void) {
  test_new_and_args();
  test_allocate_capacity();
  test_repeat_prompt_hits();
  test_salts();
  test_eviction_order();
  test_commit_generated();
  test_caching_disabled();
  test_resize();
  test_stress();
  return CHECK_DONE();
}
