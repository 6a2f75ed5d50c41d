/* Paged KV-cache block manager; see kv.h for the contracts.
 *
 * State of a block b (ids are dense, 0 .. n_init-1):
 *   refs > 0                   in use by one or more sequences;
 *   refs == 0, b < capacity    in the free queue (never used, or cached and
 *                              evictable when it still holds a hash);
 *   refs == 0, b >= capacity   retired by a shrink: neither free nor hashed.
 * Only blocks below the capacity are ever registered in the hash table, so a
 * prefix hit never brings a retired block back into use.
 *
 * Costs: allocate is O(1) when no new block is needed and O(new blocks)
 * otherwise; release is O(blocks of the sequence); commit is
 * O(newly full blocks x block_size); peek/acquire are O(hit blocks x
 * block_size) plus one lookup for the first miss; resize is O(|delta|), plus
 * a rehash when the pool grows past its high-water mark. */
#include "serve/kv.h"

#include <stdlib.h>
#include <string.h>

#include "core/rng.h"

#define NIL UINT32_MAX

struct kv_block {
  uint64_t hash; /* valid when hashed */
  uint32_t refs;
  uint32_t prev; /* free-queue links, NIL at the ends */
  uint32_t next;
  uint8_t in_free; /* linked in the free queue */
  uint8_t hashed;  /* registered in the hash table under `hash` */
};

struct kv_slot {
  uint64_t key;
  uint32_t id; /* NIL: empty slot */
};

struct im_kv {
  struct kv_block *blocks;
  uint32_t blocks_len; /* allocated and initialised structs (high-water mark) */
  uint32_t capacity;   /* usable ids are [0, capacity) */
  uint32_t block_size;
  bool prefix_caching;

  uint32_t free_head, free_tail, n_free;

  /* Open addressing, linear probing, backward-shift deletion; the size is
   * a power of two at least twice blocks_len, so the load stays <= 1/2. */
  struct kv_slot *table;
  uint32_t table_mask;
  uint32_t n_cached;

  uint64_t queries_tokens, hits_tokens, evictions;
};

/* ---- hashing -------------------------------------------------------------
 * 64-bit chain hash. Collisions are ignored, as vLLM ignored them with
 * Python's builtin hash() before it moved to SHA-256
 * (--prefix-caching-hash-algo, for multi-tenant safety): a load test will
 * not meet a 64-bit collision. The lane mixing uses the xxHash64 primes
 * (Collet, xxHash specification, "XXH64"), two token ids per 64-bit lane,
 * then the splitmix64 finaliser. */
#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL

static inline uint64_t rotl64(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

static uint64_t hash_block(uint64_t parent, const uint32_t *tok, uint32_t n) {
  uint64_t h = parent ^ ((uint64_t)n * P3);
  uint32_t i = 0;
  for (; i + 1 < n; i += 2) {
    uint64_t w = (uint64_t)tok[i] | ((uint64_t)tok[i + 1] << 32);
    h ^= rotl64(w * P2, 31) * P1;
    h = rotl64(h, 27) * P1 + P4;
  }
  if (i < n) {
    h ^= (uint64_t)tok[i] * P1;
    h = rotl64(h, 23) * P2 + P3;
  }
  return im_mix64(h);
}

/* The chain's root: a bijection of the salt, so different salts never share
 * a block (vLLM folds cache_salt into the first block's extra keys). */
static uint64_t salt_seed(uint64_t salt) {
  return im_mix64(salt ^ 0x6b765f7365656421ULL);
}

/* ---- hash table ----------------------------------------------------------*/
static inline uint32_t slot_home(const struct im_kv *kv, uint64_t key) {
  /* Keys come out of a finaliser already; fold the high half in anyway so
   * the table does not depend on the low bits alone. */
  return (uint32_t)(key ^ (key >> 32)) & kv->table_mask;
}

static uint32_t table_find(const struct im_kv *kv, uint64_t key) {
  uint32_t i = slot_home(kv, key);
  for (;;) {
    const struct kv_slot *s = &kv->table[i];
    if (s->id == NIL)
      return NIL;
    if (s->key == key)
      return s->id;
    i = (i + 1) & kv->table_mask;
  }
}

/* Caller guarantees the key is absent and the table has room. */
static void table_insert(struct im_kv *kv, uint64_t key, uint32_t id) {
  uint32_t i = slot_home(kv, key);
  while (kv->table[i].id != NIL)
    i = (i + 1) & kv->table_mask;
  kv->table[i].key = key;
  kv->table[i].id = id;
}

static void table_remove(struct im_kv *kv, uint64_t key) {
  uint32_t mask = kv->table_mask;
  uint32_t i = slot_home(kv, key);
  while (kv->table[i].key != key || kv->table[i].id == NIL) {
    if (kv->table[i].id == NIL)
      return;
    i = (i + 1) & mask;
  }
  /* Backward shift: pull later entries of the cluster into the hole unless
   * their home lies cyclically in (hole, j], where they already are
   * reachable. */
  uint32_t j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (kv->table[j].id == NIL)
      break;
    uint32_t k = slot_home(kv, kv->table[j].key);
    bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (stays)
      continue;
    kv->table[i] = kv->table[j];
    i = j;
  }
  kv->table[i].id = NIL;
}

static void unhash_block(struct im_kv *kv, uint32_t id) {
  struct kv_block *b = &kv->blocks[id];
  if (!b->hashed)
    return;
  table_remove(kv, b->hash);
  b->hashed = 0;
  kv->n_cached--;
}

/* ---- free queue ----------------------------------------------------------*/
static void fq_unlink(struct im_kv *kv, uint32_t id) {
  struct kv_block *b = &kv->blocks[id];
  if (b->prev != NIL)
    kv->blocks[b->prev].next = b->next;
  else
    kv->free_head = b->next;
  if (b->next != NIL)
    kv->blocks[b->next].prev = b->prev;
  else
    kv->free_tail = b->prev;
  b->prev = b->next = NIL;
  b->in_free = 0;
  kv->n_free--;
}

static void fq_push_tail(struct im_kv *kv, uint32_t id) {
  struct kv_block *b = &kv->blocks[id];
  b->prev = kv->free_tail;
  b->next = NIL;
  if (kv->free_tail != NIL)
    kv->blocks[kv->free_tail].next = id;
  else
    kv->free_head = id;
  kv->free_tail = id;
  b->in_free = 1;
  kv->n_free++;
}

static void fq_push_head(struct im_kv *kv, uint32_t id) {
  struct kv_block *b = &kv->blocks[id];
  b->prev = NIL;
  b->next = kv->free_head;
  if (kv->free_head != NIL)
    kv->blocks[kv->free_head].prev = id;
  else
    kv->free_tail = id;
  kv->free_head = id;
  b->in_free = 1;
  kv->n_free++;
}

/* ---- storage growth ------------------------------------------------------*/
static uint32_t table_size_for(uint32_t n_blocks) {
  uint64_t want = (uint64_t)n_blocks * 2;
  uint64_t size = 16;
  while (size < want)
    size <<= 1;
  return (uint32_t)size; /* n_blocks < 2^31 is checked by the callers */
}

/* Makes room for ids [0, n). On failure everything is as before (a larger
 * block array may have been kept, its new entries initialised as retired,
 * which no observer can tell apart). */
static enum im_err grow_storage(struct im_kv *kv, uint32_t n) {
  if (n > (UINT32_MAX >> 2))
    return IM_NOMEM;
  if (n > kv->blocks_len) {
    struct kv_block *nb = realloc(kv->blocks, (size_t)n * sizeof(*nb));
    if (!nb)
      return IM_NOMEM;
    kv->blocks = nb;
    for (uint32_t i = kv->blocks_len; i < n; i++)
      nb[i] = (struct kv_block){.refs = 0, .prev = NIL, .next = NIL};
    kv->blocks_len = n;
  }
  /* Checked apart from the block array: a failed table allocation leaves
   * a grown array behind, and the next attempt must still grow the table. */
  uint32_t size = table_size_for(n);
  if (kv->table && size <= kv->table_mask + 1)
    return IM_OK;
  struct kv_slot *nt = malloc((size_t)size * sizeof(*nt));
  if (!nt)
    return IM_NOMEM;
  for (uint32_t i = 0; i < size; i++)
    nt[i].id = NIL;
  struct kv_slot *old = kv->table;
  uint32_t old_size = old ? kv->table_mask + 1 : 0;
  kv->table = nt;
  kv->table_mask = size - 1;
  for (uint32_t i = 0; i < old_size; i++)
    if (old[i].id != NIL)
      table_insert(kv, old[i].key, old[i].id);
  free(old);
  return IM_OK;
}

/* Ensures seq->blocks holds at least `need` ids, growing geometrically. */
static enum im_err seq_reserve(struct im_kv_seq *seq, uint32_t need) {
  if (need <= seq->cap_blocks)
    return IM_OK;
  uint64_t cap = seq->cap_blocks ? (uint64_t)seq->cap_blocks * 2 : 8;
  if (cap < need)
    cap = need;
  if (cap > UINT32_MAX)
    cap = UINT32_MAX;
  uint32_t *nb = realloc(seq->blocks, (size_t)cap * sizeof(*nb));
  if (!nb)
    return IM_NOMEM;
  seq->blocks = nb;
  seq->cap_blocks = (uint32_t)cap;
  return IM_OK;
}

/* ---- lifecycle -----------------------------------------------------------*/
enum im_err im_kv_new(struct im_kv **out, uint32_t num_blocks, uint32_t block_size,
                      bool prefix_caching) {
  *out = NULL;
  if (num_blocks == 0 || block_size == 0)
    return IM_INVAL;
  struct im_kv *kv = calloc(1, sizeof(*kv));
  if (!kv)
    return IM_NOMEM;
  kv->block_size = block_size;
  kv->prefix_caching = prefix_caching;
  kv->free_head = kv->free_tail = NIL;
  enum im_err err = grow_storage(kv, num_blocks);
  if (err != IM_OK) {
    im_kv_free(kv);
    return err;
  }
  kv->capacity = num_blocks;
  for (uint32_t i = 0; i < num_blocks; i++)
    fq_push_tail(kv, i);
  *out = kv;
  return IM_OK;
}

void im_kv_free(struct im_kv *kv) {
  if (!kv)
    return;
  free(kv->blocks);
  free(kv->table);
  free(kv);
}

void im_kv_seq_init(struct im_kv_seq *seq, uint64_t salt) {
  *seq = (struct im_kv_seq){.salt = salt, .last_hash = salt_seed(salt)};
}

void im_kv_seq_cleanup(struct im_kv *kv, struct im_kv_seq *seq) {
  if (!seq)
    return;
  if (kv && seq->n_blocks)
    im_kv_release(kv, seq);
  free(seq->blocks);
  seq->blocks = NULL;
  seq->n_blocks = seq->cap_blocks = seq->n_hashed = 0;
}

/* ---- prefix lookup -------------------------------------------------------*/
static uint32_t max_hit_blocks(const struct im_kv *kv, uint32_t n) {
  if (!kv->prefix_caching || n < 2)
    return 0;
  return (n - 1) / kv->block_size;
}

uint32_t im_kv_peek_prefix(const struct im_kv *kv, uint64_t salt, const uint32_t *tokens,
                           uint32_t n) {
  uint32_t max = max_hit_blocks(kv, n);
  uint64_t h = salt_seed(salt);
  uint32_t i = 0;
  for (; i < max; i++) {
    h = hash_block(h, tokens + (size_t)i * kv->block_size, kv->block_size);
    if (table_find(kv, h) == NIL)
      break;
  }
  return i * kv->block_size;
}

enum im_err im_kv_acquire_prefix(struct im_kv *kv, struct im_kv_seq *seq, const uint32_t *tokens,
                                 uint32_t n, uint32_t *n_hit) {
  *n_hit = 0;
  if (seq->n_blocks != 0)
    return IM_STATE;
  if (!kv->prefix_caching)
    return IM_OK; /* vLLM records no prefix-cache stats when caching is off */
  uint32_t max = max_hit_blocks(kv, n);
  if (max > 0) {
    /* Room for the whole prompt, bounded by the pool: the allocate that
     * follows admission needs it anyway, and nothing can fail after this. */
    uint32_t want = im_kv_blocks_for(kv, n);
    if (want > kv->blocks_len)
      want = kv->blocks_len;
    if (seq_reserve(seq, want) != IM_OK)
      return IM_NOMEM;
  }
  uint64_t h = salt_seed(seq->salt);
  uint32_t i = 0;
  for (; i < max; i++) {
    uint64_t hh = hash_block(h, tokens + (size_t)i * kv->block_size, kv->block_size);
    uint32_t id = table_find(kv, hh);
    if (id == NIL)
      break;
    struct kv_block *b = &kv->blocks[id];
    if (b->refs++ == 0)
      fq_unlink(kv, id);
    seq->blocks[i] = id;
    h = hh;
  }
  seq->n_blocks = seq->n_hashed = i;
  seq->last_hash = h;
  kv->queries_tokens += n;
  kv->hits_tokens += (uint64_t)i * kv->block_size;
  *n_hit = i * kv->block_size;
  return IM_OK;
}

/* ---- allocation, commit, release -----------------------------------------*/
uint32_t im_kv_blocks_for(const struct im_kv *kv, uint32_t n_tokens) {
  return (uint32_t)(((uint64_t)n_tokens + kv->block_size - 1) / kv->block_size);
}

enum im_err im_kv_allocate(struct im_kv *kv, struct im_kv_seq *seq, uint32_t n_tokens) {
  uint32_t need = im_kv_blocks_for(kv, n_tokens);
  if (need <= seq->n_blocks)
    return IM_OK;
  uint32_t extra = need - seq->n_blocks;
  if (extra > kv->n_free)
    return IM_FULL;
  if (seq_reserve(seq, need) != IM_OK)
    return IM_NOMEM;
  for (uint32_t k = 0; k < extra; k++) {
    uint32_t id = kv->free_head;
    fq_unlink(kv, id);
    if (kv->blocks[id].hashed) {
      unhash_block(kv, id);
      kv->evictions++;
    }
    kv->blocks[id].refs = 1;
    seq->blocks[seq->n_blocks++] = id;
  }
  return IM_OK;
}

void im_kv_commit(struct im_kv *kv, struct im_kv_seq *seq, const uint32_t *tokens,
                  uint32_t n_computed) {
  if (!kv->prefix_caching)
    return;
  uint32_t full = n_computed / kv->block_size;
  if (full > seq->n_blocks)
    full = seq->n_blocks;
  uint64_t h = seq->last_hash;
  for (uint32_t i = seq->n_hashed; i < full; i++) {
    h = hash_block(h, tokens + (size_t)i * kv->block_size, kv->block_size);
    uint32_t id = seq->blocks[i];
    struct kv_block *b = &kv->blocks[id];
    /* A block above the capacity is due for retirement; registering it
     * would let another sequence pin a block the shrink took away. */
    if (b->hashed || id >= kv->capacity || table_find(kv, h) != NIL)
      continue;
    b->hash = h;
    b->hashed = 1;
    table_insert(kv, h, id);
    kv->n_cached++;
  }
  if (full > seq->n_hashed) {
    seq->n_hashed = full;
    seq->last_hash = h;
  }
}

void im_kv_release(struct im_kv *kv, struct im_kv_seq *seq) {
  for (uint32_t i = seq->n_blocks; i-- > 0;) {
    uint32_t id = seq->blocks[i];
    struct kv_block *b = &kv->blocks[id];
    if (--b->refs > 0)
      continue;
    if (id < kv->capacity) {
      fq_push_tail(kv, id);
    } else {
      unhash_block(kv, id); /* retired: already unhashed by the shrink */
    }
  }
  seq->n_blocks = seq->n_hashed = 0;
  seq->last_hash = salt_seed(seq->salt);
}

/* ---- resize --------------------------------------------------------------*/
enum im_err im_kv_resize(struct im_kv *kv, uint32_t num_blocks) {
  if (num_blocks == 0)
    return IM_INVAL;
  uint32_t old = kv->capacity;
  if (num_blocks < old) {
    for (uint32_t id = num_blocks; id < old; id++) {
      struct kv_block *b = &kv->blocks[id];
      if (b->in_free)
        fq_unlink(kv, id);
      unhash_block(kv, id);
    }
    kv->capacity = num_blocks;
  } else if (num_blocks > old) {
    enum im_err err = grow_storage(kv, num_blocks);
    if (err != IM_OK)
      return err;
    kv->capacity = num_blocks;
    /* New blocks hold no prefix, so they go to the head: they are spent
     * before any cached block is evicted. Pushed in descending order so the
     * lowest id comes out first. Blocks still in use keep their refs and
     * join the queue normally when released. */
    for (uint32_t id = num_blocks; id-- > old;)
      if (kv->blocks[id].refs == 0)
        fq_push_head(kv, id);
  }
  return IM_OK;
}

/* ---- observers -----------------------------------------------------------*/
void im_kv_get_stats(const struct im_kv *kv, struct im_kv_stats *out) {
  *out = (struct im_kv_stats){
      .num_blocks = kv->capacity,
      .block_size = kv->block_size,
      .free_blocks = kv->n_free,
      .cached_blocks = kv->n_cached,
      .queries_tokens = kv->queries_tokens,
      .hits_tokens = kv->hits_tokens,
      .evictions = kv->evictions,
  };
}

uint32_t im_kv_num_free(const struct im_kv *kv) {
  return kv->n_free;
}

double im_kv_usage(const struct im_kv *kv) {
  double u = 1.0 - (double)kv->n_free / (double)kv->capacity;
  return u < 0.0 ? 0.0 : u > 1.0 ? 1.0 : u;
}

uint32_t im_kv_block_refs(const struct im_kv *kv, uint32_t block_id) {
  return block_id < kv->blocks_len ? kv->blocks[block_id].refs : 0;
}

int im_kv_check(const struct im_kv *kv) {
  if (kv->capacity == 0 || kv->capacity > kv->blocks_len)
    return 1;
  /* Free queue: links agree both ways, members are free and usable. */
  uint32_t count = 0, prev = NIL;
  for (uint32_t id = kv->free_head; id != NIL; id = kv->blocks[id].next) {
    if (id >= kv->capacity || count > kv->capacity)
      return 2;
    const struct kv_block *b = &kv->blocks[id];
    if (b->prev != prev || !b->in_free || b->refs != 0)
      return 3;
    prev = id;
    count++;
  }
  if (prev != kv->free_tail || count != kv->n_free)
    return 4;
  /* Every block is in exactly one state; free + referenced = capacity. */
  uint32_t referenced = 0, hashed = 0;
  for (uint32_t id = 0; id < kv->blocks_len; id++) {
    const struct kv_block *b = &kv->blocks[id];
    if (b->in_free != (b->refs == 0 && id < kv->capacity))
      return 5;
    if (b->refs > 0 && id < kv->capacity)
      referenced++;
    if (b->hashed) {
      if (id >= kv->capacity)
        return 6;
      if (table_find(kv, b->hash) != id)
        return 7;
      hashed++;
    }
  }
  if (kv->n_free + referenced != kv->capacity)
    return 8;
  /* Table: every entry names a hashed block with that key, and is reachable
   * from its home slot. */
  uint32_t entries = 0;
  for (uint32_t i = 0; i <= kv->table_mask; i++) {
    const struct kv_slot *s = &kv->table[i];
    if (s->id == NIL)
      continue;
    entries++;
    if (s->id >= kv->blocks_len || !kv->blocks[s->id].hashed || kv->blocks[s->id].hash != s->key)
      return 9;
    if (table_find(kv, s->key) != s->id)
      return 10;
  }
  if (entries != hashed || hashed != kv->n_cached)
    return 11;
  if (kv->hits_tokens > kv->queries_tokens)
    return 12;
  return 0;
}
