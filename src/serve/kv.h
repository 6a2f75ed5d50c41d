/* Paged KV-cache block manager with hash-chained prefix caching.
 *
 * Models vLLM V1's BlockPool / KVCacheManager (vllm/v1/core/block_pool.py,
 * kv_cache_manager.py): fixed-size blocks; a block that is full is hashed
 * from its parent block's hash and its token ids, and registered so a later
 * request with the same prefix reuses it; blocks whose reference count drops
 * to zero go to the tail of a free queue but keep their hash until they are
 * reallocated (LRU eviction from the head). A sequence's blocks are freed
 * tail first, so the tail of a prefix is evicted before its head.
 *
 * Single-threaded: one engine loop owns a struct im_kv. */
#ifndef IM_SERVE_KV_H
#define IM_SERVE_KV_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"

struct im_kv; /* opaque */

/* Per-sequence block table; embedded in the caller's request. */
struct im_kv_seq {
  uint32_t *blocks;         /* block ids in order; array owned by this struct */
  uint32_t n_blocks;
  uint32_t cap_blocks;
  uint32_t n_hashed;        /* leading blocks already registered in the cache */
  uint64_t last_hash;       /* chain hash of block n_hashed-1, or the salt seed */
  uint64_t salt;            /* cache salt (vLLM `cache_salt`); 0 = none */
};

struct im_kv_stats {
  uint32_t num_blocks;      /* current capacity (after any resize) */
  uint32_t block_size;      /* tokens per block */
  uint32_t free_blocks;     /* allocatable now: never-used + evictable cached */
  uint32_t cached_blocks;   /* blocks holding a registered hash (in use or not) */
  uint64_t queries_tokens;  /* prompt tokens looked up (vllm:prefix_cache_queries) */
  uint64_t hits_tokens;     /* of those, found cached (vllm:prefix_cache_hits) */
  uint64_t evictions;       /* cached blocks whose hash was dropped for reuse */
};

/* Creates a manager of num_blocks blocks of block_size tokens (both > 0).
 * prefix_caching false: nothing is ever registered or hit. */
enum im_err im_kv_new(struct im_kv **out, uint32_t num_blocks, uint32_t block_size,
                      bool prefix_caching) IM_WUR;
/* Frees the manager (NULL is a no-op). Sequences must be released first. */
void im_kv_free(struct im_kv *kv);

/* Initialises an empty block table with the given cache salt. */
void im_kv_seq_init(struct im_kv_seq *seq, uint64_t salt);
/* Releases the sequence's blocks (if any) and frees its table. */
void im_kv_seq_cleanup(struct im_kv *kv, struct im_kv_seq *seq);

/* Number of leading tokens of tokens[0..n) served from cached full blocks,
 * without changing any state. At most n-1 (the last prompt token is always
 * recomputed, as in vLLM, so the request produces logits). */
uint32_t im_kv_peek_prefix(const struct im_kv *kv, uint64_t salt, const uint32_t *tokens,
                           uint32_t n);

/* On admission of a sequence that holds no blocks: takes a reference on the
 * longest chain of cached full blocks matching tokens[0..n) (capped as in
 * im_kv_peek_prefix), appends them to seq, counts n query tokens and the hit
 * tokens in the stats, and returns the hit tokens in *n_hit. Cached blocks
 * that were in the free queue leave it. IM_NOMEM leaves everything unchanged.
 * IM_STATE when seq holds blocks. With prefix caching off it hits nothing
 * and counts nothing (vLLM keeps no prefix-cache stats then). It reserves
 * seq's table for the whole prompt, so the allocate that follows does not
 * reallocate it. */
enum im_err im_kv_acquire_prefix(struct im_kv *kv, struct im_kv_seq *seq, const uint32_t *tokens,
                                 uint32_t n, uint32_t *n_hit) IM_WUR;

/* Ensures seq holds enough blocks for n_tokens tokens, taking free blocks
 * from the head of the free queue (evicting their hashes). IM_FULL when not
 * enough blocks are free: then nothing changes. O(1) when seq already holds
 * enough blocks; IM_NOMEM (nothing changes) only when seq's table must grow. */
enum im_err im_kv_allocate(struct im_kv *kv, struct im_kv_seq *seq, uint32_t n_tokens) IM_WUR;

/* Registers in the prefix cache every block of seq that is full within the
 * first n_computed tokens and not registered yet. tokens holds at least
 * n_computed ids (prompt then generated). A block whose hash is already
 * cached under another block id stays unregistered (vLLM keeps the first). */
void im_kv_commit(struct im_kv *kv, struct im_kv_seq *seq, const uint32_t *tokens,
                  uint32_t n_computed);

/* Drops seq's references, tail block first; blocks reaching zero references
 * go to the free queue's tail (registered ones stay hit-able until evicted).
 * seq keeps its salt and is empty afterwards (n_blocks = n_hashed = 0). */
void im_kv_release(struct im_kv *kv, struct im_kv_seq *seq);

/* Changes the capacity at run time (fault injection: KV shrink). Shrinking
 * takes blocks out of use: free blocks with the highest ids go first; blocks
 * still referenced above the new size are retired when released. Growing
 * adds new free blocks. num_blocks > 0. Details: blocks with ids >= the new
 * size lose their cache entries at once (in use or not; not counted as
 * evictions); growing puts the new blocks at the head of the free queue, so
 * they are spent before cached blocks are evicted. IM_INVAL for 0, IM_NOMEM
 * (capacity unchanged) when growing fails. O(|old - new|), plus a rehash
 * when the pool grows past its largest size so far. */
enum im_err im_kv_resize(struct im_kv *kv, uint32_t num_blocks) IM_WUR;

void im_kv_get_stats(const struct im_kv *kv, struct im_kv_stats *out);
/* Blocks allocatable now (free + evictable). */
uint32_t im_kv_num_free(const struct im_kv *kv);
/* vLLM's kv_cache_usage_perc: 1 - free / capacity, clamped to [0, 1]. */
double im_kv_usage(const struct im_kv *kv);
/* Blocks needed to hold n tokens. */
uint32_t im_kv_blocks_for(const struct im_kv *kv, uint32_t n_tokens);

/* Debugging and tests. */
/* Reference count of one block (0 for an id outside the pool). */
uint32_t im_kv_block_refs(const struct im_kv *kv, uint32_t block_id);
/* Walks every internal structure (free queue links, hash table, counters)
 * and returns 0 when they agree, else a positive code naming the first
 * broken invariant. O(pool size + table size): not for the hot path. */
int im_kv_check(const struct im_kv *kv);

#endif
