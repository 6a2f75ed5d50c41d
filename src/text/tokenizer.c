/* Hugging Face tokenizer.json BPE tokenizer: loading, pre-tokenization, BPE
 * merges and decoding. The semantics follow the tokenizers crate (Split
 * behaviours, ByteLevel, added-token matching); see tokenizer.h for the
 * supported subset. */
#define PCRE2_CODE_UNIT_WIDTH 8

#include "text/tokenizer.h"

#include <errno.h>
#include <jansson.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "text/tokenizer_int.h"

#define TOK_MAX_FILE ((off_t)256 << 20)
#define TOK_MAX_ID (1u << 24)
#define TOK_MAX_TEXT ((size_t)1 << 30)
/* Word cache: direct-mapped, so its memory is bounded by slots x (key +
 * ids); words longer than CACHE_MAX_KEY are not cached (they are rare and a
 * long key would dominate the cache's memory). */
#define CACHE_SLOTS 8192
#define CACHE_MAX_KEY 128
#define NO_ID UINT32_MAX

enum split_behavior { B_REMOVED, B_ISOLATED, B_PREV, B_NEXT, B_CONTIGUOUS };
enum step_kind { STEP_SPLIT, STEP_BYTELEVEL };

struct step {
  enum step_kind kind;
  pcre2_code *re; /* NULL for a String pattern */
  pcre2_match_data *md;
  char *lit;
  size_t lit_len;
  enum split_behavior behavior;
  bool invert;
  bool prefix_space; /* ByteLevel */
};

struct str {
  uint32_t off, len;
}; /* into tok->arena; len NO_ID: none */

struct added {
  uint32_t off, len, id;
  bool lstrip, rstrip;
};

struct merge_slot {
  uint64_t key;
  uint32_t rank, id;
}; /* rank NO_ID: empty */

struct cache_slot {
  uint64_t hash;
  char *key; /* key bytes then ids, one allocation */
  uint32_t klen, n;
  uint32_t *ids;
};

struct piece {
  size_t off, len;
};
struct seg {
  size_t off, len;
  bool match;
};
struct sym {
  uint32_t id;
  int32_t prev, next;
  bool alive;
};
struct cand {
  uint32_t rank, lid, rid, mid; /* the pair's ids and the merged id */
  int32_t pos, right;
};

struct im_tok {
  char *arena;
  size_t arena_len, arena_cap;
  struct str *vocab; /* by id: model vocab string */
  struct str *dec;   /* by id: string for decoding */
  uint8_t *dec_kind; /* by id: 0 none, 1 vocab, 2 added (raw), 3 byte */
  uint32_t n_ids;
  uint32_t *vmap; /* open addressing, slot = id + 1, 0 empty */
  size_t vmap_mask;
  struct merge_slot *mmap;
  size_t mmap_mask;
  struct added *added; /* in file order */
  size_t n_added;
  struct im__tok_trie trie; /* added-token contents -> index in added */
  struct step *steps;
  size_t n_steps;
  bool byte_level, byte_fallback, ignore_merges, fuse_unk, dec_bytelevel;
  uint32_t unk_id;
  uint32_t bytefb[256];
  uint16_t byte_cp[256];
  /* byte-level: vocab id of each byte's character, when all 256 exist (and
   * ignore_merges is off): words then start from these ids directly */
  uint32_t byte_id[256];
  bool byte_ids;
  int16_t cp_byte[512];
  struct cache_slot *cache;
  /* scratch, reused across calls */
  char *work;
  size_t work_len, work_cap;
  struct piece *pa, *pb;
  size_t pa_n, pb_n, pa_cap, pb_cap;
  struct seg *segs;
  size_t segs_cap;
  struct sym *syms;
  struct cand *heap;
  size_t syms_cap, heap_cap;
  char *mstr;
  size_t mstr_cap;
  uint32_t *wids;
  size_t wids_cap;
};

/* MurmurHash3's 64-bit finalizer (constants from Austin Appleby's
 * MurmurHash3, public domain): every input bit affects every output bit. */
static uint64_t mix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

/* Hash of a byte string, 8 bytes per step (the word cache and the vocab map
 * hash every word, so this is on the hot path). */
static uint64_t hash_bytes(const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;
  for (; n >= 8; s += 8, n -= 8) {
    memcpy(&w, s, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  w = 0;
  memcpy(&w, s, n);
  return mix64(h ^ w);
}

/* Grows *p (elements of size sz) to hold at least need; keeps the old block
 * on failure. */
static bool grow(void **p, size_t *cap, size_t need, size_t sz) {
  if (need <= *cap)
    return true;
  size_t c = *cap ? *cap : 16;
  while (c < need)
    c *= 2;
  void *q = realloc(*p, c * sz);
  if (!q)
    return false;
  *p = q;
  *cap = c;
  return true;
}

static bool arena_add(struct im_tok *t, const char *s, size_t n, uint32_t *off) {
  if (t->arena_len + n > UINT32_MAX / 2)
    return false;
  if (!grow((void **)&t->arena, &t->arena_cap, t->arena_len + n + 1, 1))
    return false;
  memcpy(t->arena + t->arena_len, s, n);
  *off = (uint32_t)t->arena_len;
  t->arena_len += n;
  return true;
}

static uint32_t vocab_get(const struct im_tok *t, const char *s, size_t n) {
  if (!t->vmap)
    return NO_ID;
  for (size_t i = hash_bytes(s, n) & t->vmap_mask;; i = (i + 1) & t->vmap_mask) {
    uint32_t v = t->vmap[i];
    if (!v)
      return NO_ID;
    struct str e = t->vocab[v - 1];
    if (e.len == n && memcmp(t->arena + e.off, s, n) == 0)
      return v - 1;
  }
}

static const struct merge_slot *merge_get(const struct im_tok *t, uint32_t a, uint32_t b) {
  uint64_t key = ((uint64_t)a << 32) | b;
  for (size_t i = mix64(key) & t->mmap_mask;; i = (i + 1) & t->mmap_mask) {
    const struct merge_slot *m = &t->mmap[i];
    if (m->rank == NO_ID)
      return NULL;
    if (m->key == key)
      return m;
  }
}

static size_t pow2_at_least(size_t n) {
  size_t c = 16;
  while (c < n)
    c *= 2;
  return c;
}

/* GPT-2's bytes_to_unicode: printable bytes ('!'..'~', U+00A1..U+00AC,
 * U+00AE..U+00FF) map to themselves, the others in increasing order to
 * U+0100 + n (source: openai/gpt-2 encoder.py, the definition). */
static void init_byte_map(struct im_tok *t) {
  int n = 0;
  for (int i = 0; i < 512; i++)
    t->cp_byte[i] = -1;
  for (int b = 0; b < 256; b++) {
    bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    t->byte_cp[b] = (uint16_t)(printable ? b : 256 + n++);
    t->cp_byte[t->byte_cp[b]] = (int16_t)b;
  }
}

/* ---- loading ---------------------------------------------------------- */

static enum im_err load_vocab(struct im_tok *t, json_t *vocab, json_t *added, const char *path,
                              char *msg, size_t ml) {
  uint32_t max_id = 0;
  const char *k;
  json_t *v;
  size_t i;
  json_object_foreach(vocab, k, v) {
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) >= (json_int_t)TOK_MAX_ID)
      return im_errf(msg, ml, IM_PARSE, "%s: model.vocab: id of '%s' is not an integer in [0, %u)",
                  path, k, TOK_MAX_ID);
    if ((uint32_t)json_integer_value(v) + 1 > max_id)
      max_id = (uint32_t)json_integer_value(v) + 1;
  }
  json_array_foreach(added, i, v) {
    json_t *id = json_object_get(v, "id");
    if (!json_is_integer(id) || json_integer_value(id) < 0 ||
        json_integer_value(id) >= (json_int_t)TOK_MAX_ID ||
        !json_is_string(json_object_get(v, "content")))
      return im_errf(msg, ml, IM_PARSE,
                  "%s: added_tokens[%zu]: needs an integer id and a content string", path, i);
    if ((uint32_t)json_integer_value(id) + 1 > max_id)
      max_id = (uint32_t)json_integer_value(id) + 1;
  }
  t->n_ids = max_id;
  t->vocab = malloc((max_id ? max_id : 1) * sizeof *t->vocab);
  t->dec = malloc((max_id ? max_id : 1) * sizeof *t->dec);
  t->dec_kind = calloc(max_id ? max_id : 1, 1);
  size_t nv = json_object_size(vocab);
  t->vmap_mask = pow2_at_least(nv * 2) - 1;
  t->vmap = calloc(t->vmap_mask + 1, sizeof *t->vmap);
  if (!t->vocab || !t->dec || !t->dec_kind || !t->vmap)
    return IM_NOMEM;
  for (uint32_t id = 0; id < max_id; id++)
    t->vocab[id].len = NO_ID;
  json_object_foreach(vocab, k, v) {
    uint32_t id = (uint32_t)json_integer_value(v), off;
    size_t n = strlen(k);
    if (!arena_add(t, k, n, &off))
      return IM_NOMEM;
    if (t->vocab[id].len != NO_ID)
      return im_errf(msg, ml, IM_PARSE, "%s: model.vocab: id %u is used twice", path, id);
    t->vocab[id] = (struct str){off, (uint32_t)n};
    t->dec[id] = t->vocab[id];
    t->dec_kind[id] = 1;
    size_t s = hash_bytes(k, n) & t->vmap_mask;
    while (t->vmap[s])
      s = (s + 1) & t->vmap_mask;
    t->vmap[s] = id + 1;
  }
  return IM_OK;
}

static enum im_err load_merges(struct im_tok *t, json_t *merges, const char *path, char *msg,
                               size_t ml) {
  size_t nm = json_array_size(merges), i;
  json_t *m;
  char *cat = NULL;
  size_t cat_cap = 0;
  enum im_err err = IM_NOMEM;
  t->mmap_mask = pow2_at_least(nm * 2) - 1;
  t->mmap = malloc((t->mmap_mask + 1) * sizeof *t->mmap);
  if (!t->mmap)
    return IM_NOMEM;
  for (size_t s = 0; s <= t->mmap_mask; s++)
    t->mmap[s].rank = NO_ID;
  json_array_foreach(merges, i, m) {
    const char *a, *b;
    size_t al, bl;
    if (json_is_string(m)) {
      a = json_string_value(m);
      const char *sp = strchr(a, ' ');
      if (!sp || strchr(sp + 1, ' ')) {
        err = im_errf(msg, ml, IM_PARSE,
                   "%s: model.merges[%zu]: '%s' is not two tokens separated by one space", path, i,
                   a);
        goto out;
      }
      al = (size_t)(sp - a);
      b = sp + 1;
      bl = strlen(b);
    } else if (json_is_array(m) && json_array_size(m) == 2 &&
               json_is_string(json_array_get(m, 0)) && json_is_string(json_array_get(m, 1))) {
      a = json_string_value(json_array_get(m, 0));
      b = json_string_value(json_array_get(m, 1));
      al = strlen(a);
      bl = strlen(b);
    } else {
      err = im_errf(msg, ml, IM_PARSE, "%s: model.merges[%zu]: expected \"a b\" or [\"a\", \"b\"]",
                 path, i);
      goto out;
    }
    uint32_t ia = vocab_get(t, a, al), ib = vocab_get(t, b, bl);
    if (!grow((void **)&cat, &cat_cap, al + bl + 1, 1))
      goto out;
    memcpy(cat, a, al);
    memcpy(cat + al, b, bl);
    uint32_t ic = vocab_get(t, cat, al + bl);
    if (ia == NO_ID || ib == NO_ID || ic == NO_ID) {
      err =
          im_errf(msg, ml, IM_PARSE, "%s: model.merges[%zu]: '%.*s' + '%.*s': %s is not in the vocab",
               path, i, (int)al, a, (int)bl, b,
               ia == NO_ID   ? "the first token"
               : ib == NO_ID ? "the second token"
                             : "the merged token");
      goto out;
    }
    uint64_t key = ((uint64_t)ia << 32) | ib;
    size_t s = mix64(key) & t->mmap_mask;
    while (t->mmap[s].rank != NO_ID && t->mmap[s].key != key)
      s = (s + 1) & t->mmap_mask;
    if (t->mmap[s].rank == NO_ID) /* a repeated pair keeps its first rank */
      t->mmap[s] = (struct merge_slot){key, (uint32_t)i, ic};
  }
  err = IM_OK;
out:
  free(cat);
  return err;
}

static enum im_err load_added(struct im_tok *t, json_t *added, const char *path, char *msg,
                              size_t ml) {
  size_t i;
  json_t *v;
  t->added = calloc(json_array_size(added) + 1, sizeof *t->added);
  if (!t->added)
    return IM_NOMEM;
  json_array_foreach(added, i, v) {
    const char *c = json_string_value(json_object_get(v, "content"));
    size_t n = json_string_length(json_object_get(v, "content"));
    uint32_t id = (uint32_t)json_integer_value(json_object_get(v, "id")), off;
    if (json_is_true(json_object_get(v, "single_word")))
      return im_errf(msg, ml, IM_UNSUPPORTED,
                  "%s: added_tokens[%zu] ('%s'): single_word is not supported", path, i, c);
    if (n == 0)
      return im_errf(msg, ml, IM_PARSE, "%s: added_tokens[%zu]: empty content", path, i);
    if (!arena_add(t, c, n, &off))
      return IM_NOMEM;
    t->added[t->n_added++] =
        (struct added){off, (uint32_t)n, id, json_is_true(json_object_get(v, "lstrip")),
                       json_is_true(json_object_get(v, "rstrip"))};
    t->dec[id] = (struct str){off, (uint32_t)n};
    t->dec_kind[id] = 2;
    if (im__tok_trie_add(&t->trie, c, n, (int32_t)(t->n_added - 1)) != IM_OK)
      return IM_NOMEM;
  }
  return IM_OK;
}

static enum im_err compile_re(struct step *st, const char *pat, size_t n, const char *path,
                              const char *where, char *msg, size_t ml) {
  int ec;
  PCRE2_SIZE eo;
  uint32_t opts = PCRE2_UTF | PCRE2_UCP;
#ifdef PCRE2_MATCH_INVALID_UTF
  opts |= PCRE2_MATCH_INVALID_UTF; /* invalid bytes never match, no error */
#endif
  size_t wn = 0;
  char *wide = im__tok_re_widen(pat, n, &wn);
  if (!wide)
    return IM_NOMEM;
  st->re = pcre2_compile((PCRE2_SPTR)wide, wn, opts, &ec, &eo, NULL);
  free(wide);
  if (!st->re) /* the pattern as written: its error offset is the user's */
    st->re = pcre2_compile((PCRE2_SPTR)pat, n, opts, &ec, &eo, NULL);
  if (!st->re) {
    PCRE2_UCHAR eb[160];
    pcre2_get_error_message(ec, eb, sizeof eb);
    return im_errf(msg, ml, IM_PARSE, "%s: %s: regex error at offset %zu: %s", path, where, (size_t)eo,
                (char *)eb);
  }
  (void)pcre2_jit_compile(st->re, PCRE2_JIT_COMPLETE); /* falls back to the interpreter */
  st->md = pcre2_match_data_create_from_pattern(st->re, NULL);
  return st->md ? IM_OK : IM_NOMEM;
}

/* GPT-2's pre-tokenization regex, used by ByteLevel with use_regex (source:
 * openai/gpt-2 encoder.py; the same string is in the tokenizers crate). */
static const char gpt2_re[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static enum im_err add_pretok(struct im_tok *t, json_t *p, const char *path, char *msg, size_t ml,
                              size_t *cap) {
  const char *type = json_string_value(json_object_get(p, "type"));
  if (!type)
    return im_errf(msg, ml, IM_PARSE, "%s: pre_tokenizer without a type", path);
  if (strcmp(type, "Sequence") == 0) {
    json_t *arr = json_object_get(p, "pretokenizers"), *e;
    size_t i;
    if (!json_is_array(arr))
      return im_errf(msg, ml, IM_PARSE, "%s: pre_tokenizer Sequence without a pretokenizers array",
                  path);
    json_array_foreach(arr, i, e) {
      enum im_err err = add_pretok(t, e, path, msg, ml, cap);
      if (err)
        return err;
    }
    return IM_OK;
  }
  if (t->n_steps && t->steps[t->n_steps - 1].kind == STEP_BYTELEVEL)
    return im_errf(msg, ml, IM_UNSUPPORTED,
                "%s: pre_tokenizer '%s' after ByteLevel is not supported (ByteLevel must be last)",
                path, type);
  if (!grow((void **)&t->steps, cap, t->n_steps + 1, sizeof *t->steps))
    return IM_NOMEM;
  struct step *st = &t->steps[t->n_steps++];
  memset(st, 0, sizeof *st);
  if (strcmp(type, "ByteLevel") == 0) {
    st->kind = STEP_BYTELEVEL;
    st->prefix_space = json_is_true(json_object_get(p, "add_prefix_space"));
    st->behavior = B_ISOLATED;
    t->byte_level = true;
    json_t *ur = json_object_get(p, "use_regex");
    if (!ur || json_is_true(ur)) /* the crate's default is true */
      return compile_re(st, gpt2_re, sizeof gpt2_re - 1, path, "pre_tokenizer ByteLevel", msg, ml);
    return IM_OK;
  }
  if (strcmp(type, "Split") != 0)
    return im_errf(msg, ml, IM_UNSUPPORTED, "%s: pre_tokenizer type '%s' is not supported", path,
                type);
  st->kind = STEP_SPLIT;
  json_t *pat = json_object_get(p, "pattern");
  const char *beh = json_string_value(json_object_get(p, "behavior"));
  static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                                      "Contiguous"};
  size_t b = 0;
  while (beh && b < 5 && strcmp(beh, names[b]) != 0)
    b++;
  if (!beh || b == 5)
    return im_errf(msg, ml, IM_UNSUPPORTED, "%s: pre_tokenizer Split: behavior '%s' is not supported",
                path, beh ? beh : "(missing)");
  st->behavior = (enum split_behavior)b;
  st->invert = json_is_true(json_object_get(p, "invert"));
  json_t *re = json_object_get(pat, "Regex"), *lit = json_object_get(pat, "String");
  if (json_is_string(re))
    return compile_re(st, json_string_value(re), json_string_length(re), path,
                      "pre_tokenizer Split pattern", msg, ml);
  if (!json_is_string(lit))
    return im_errf(msg, ml, IM_PARSE,
                "%s: pre_tokenizer Split: pattern must be {\"Regex\": ...} or {\"String\": ...}",
                path);
  st->lit_len = json_string_length(lit);
  st->lit = malloc(st->lit_len + 1);
  if (!st->lit)
    return IM_NOMEM;
  memcpy(st->lit, json_string_value(lit), st->lit_len + 1);
  return IM_OK;
}

static enum im_err load_model(struct im_tok *t, json_t *root, const char *path, char *msg,
                              size_t ml) {
  json_t *model = json_object_get(root, "model");
  if (!json_is_object(model))
    return im_errf(msg, ml, IM_PARSE, "%s: no \"model\" object", path);
  const char *type = json_string_value(json_object_get(model, "type"));
  if (type && strcmp(type, "BPE") != 0)
    return im_errf(msg, ml, IM_UNSUPPORTED, "%s: model type '%s' is not supported (only BPE)", path,
                type);
  json_t *vocab = json_object_get(model, "vocab"), *merges = json_object_get(model, "merges");
  json_t *added = json_object_get(root, "added_tokens");
  if (!json_is_object(vocab) || !json_is_array(merges))
    return im_errf(msg, ml, IM_PARSE, "%s: model BPE needs a \"vocab\" object and a \"merges\" array",
                path);
  if (added && !json_is_null(added) && !json_is_array(added))
    return im_errf(msg, ml, IM_PARSE, "%s: \"added_tokens\" is not an array", path);
  static const char *const unsup[] = {"continuing_subword_prefix", "end_of_word_suffix"};
  for (size_t i = 0; i < 2; i++) {
    json_t *v = json_object_get(model, unsup[i]);
    if (v && !json_is_null(v) && !(json_is_string(v) && json_string_length(v) == 0))
      return im_errf(msg, ml, IM_UNSUPPORTED, "%s: model BPE %s is not supported", path, unsup[i]);
  }
  json_t *drop = json_object_get(model, "dropout");
  if (drop && !json_is_null(drop) && json_number_value(drop) != 0.0)
    return im_errf(msg, ml, IM_UNSUPPORTED, "%s: model BPE dropout is not supported", path);
  enum im_err err = load_vocab(t, vocab, added, path, msg, ml);
  if (!err)
    err = load_merges(t, merges, path, msg, ml);
  if (!err)
    err = load_added(t, added, path, msg, ml);
  if (err)
    return err;
  t->byte_fallback = json_is_true(json_object_get(model, "byte_fallback"));
  t->ignore_merges = json_is_true(json_object_get(model, "ignore_merges"));
  t->fuse_unk = json_is_true(json_object_get(model, "fuse_unk"));
  t->unk_id = NO_ID;
  json_t *unk = json_object_get(model, "unk_token");
  if (json_is_string(unk)) {
    t->unk_id = vocab_get(t, json_string_value(unk), json_string_length(unk));
    if (t->unk_id == NO_ID)
      return im_errf(msg, ml, IM_PARSE, "%s: model.unk_token '%s' is not in the vocab", path,
                  json_string_value(unk));
  }
  for (int b = 0; b < 256; b++) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", b);
    t->bytefb[b] = vocab_get(t, name, 6);
    if (t->byte_fallback && t->bytefb[b] != NO_ID && t->dec_kind[t->bytefb[b]] == 1)
      t->dec_kind[t->bytefb[b]] = 3;
  }
  return IM_OK;
}

static enum im_err load_parts(struct im_tok *t, json_t *root, const char *path, char *msg,
                              size_t ml) {
  json_t *norm = json_object_get(root, "normalizer");
  if (norm && !json_is_null(norm)) {
    const char *nt = json_string_value(json_object_get(norm, "type"));
    json_t *list = json_object_get(norm, "normalizers");
    if (!nt || strcmp(nt, "Sequence") != 0 || json_array_size(list) != 0) {
      if (nt && strcmp(nt, "Sequence") == 0)
        nt = json_string_value(json_object_get(json_array_get(list, 0), "type"));
      return im_errf(msg, ml, IM_UNSUPPORTED, "%s: normalizer type '%s' is not supported", path,
                  nt ? nt : "(missing)");
    }
  }
  enum im_err err = load_model(t, root, path, msg, ml);
  if (err)
    return err;
  json_t *pre = json_object_get(root, "pre_tokenizer");
  size_t cap = 0;
  if (pre && !json_is_null(pre) && (err = add_pretok(t, pre, path, msg, ml, &cap)))
    return err;
  t->byte_ids = t->byte_level && !t->ignore_merges;
  for (int b = 0; b < 256 && t->byte_ids; b++) {
    uint16_t cp = t->byte_cp[b];
    char ch[2] = {(char)cp, 0};
    if (cp >= 0x80) {
      ch[0] = (char)(0xc0 | (cp >> 6));
      ch[1] = (char)(0x80 | (cp & 0x3f));
    }
    t->byte_id[b] = vocab_get(t, ch, cp < 0x80 ? 1 : 2);
    t->byte_ids = t->byte_id[b] != NO_ID;
  }
  json_t *dec = json_object_get(root, "decoder");
  if (dec && !json_is_null(dec)) {
    const char *dt = json_string_value(json_object_get(dec, "type"));
    if (!dt || strcmp(dt, "ByteLevel") != 0)
      return im_errf(msg, ml, IM_UNSUPPORTED, "%s: decoder type '%s' is not supported", path,
                  dt ? dt : "(missing)");
    t->dec_bytelevel = true;
  }
  return IM_OK;
}

enum im_err im_tok_load(const char *path, struct im_tok **out, char *msg, size_t msg_len) {
  struct stat sb;
  json_error_t je;
  json_t *root = NULL;
  struct im_tok *t = NULL;
  enum im_err err = IM_NOMEM;
  if (msg && msg_len)
    msg[0] = '\0';
  if (!out || !path)
    return IM_INVAL;
  *out = NULL;
  if (stat(path, &sb) != 0) {
    err = im_errf(msg, msg_len, IM_IO, "%s: cannot read the tokenizer file: %s", path,
                  strerror(errno));
    goto out;
  }
  if (sb.st_size > TOK_MAX_FILE) {
    err = im_errf(msg, msg_len, IM_LIMIT, "%s: larger than 256 MiB", path);
    goto out;
  }
  root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (!root) {
    err = im_errf(msg, msg_len, IM_PARSE, "%s:%d: %s", path, je.line, je.text);
    goto out;
  }
  if (!json_is_object(root)) {
    err = im_errf(msg, msg_len, IM_PARSE, "%s: top level is not an object", path);
    goto out;
  }
  t = calloc(1, sizeof *t);
  if (!t || !(t->cache = calloc(CACHE_SLOTS, sizeof *t->cache)))
    goto out;
  init_byte_map(t);
  err = load_parts(t, root, path, msg, msg_len);
  if (err == IM_NOMEM)
    im_errf(msg, msg_len, IM_NOMEM, "%s: out of memory", path);
  if (!err) {
    *out = t;
    t = NULL;
  }
out:
  im_tok_free(t);
  json_decref(root);
  return err;
}

void im_tok_free(struct im_tok *t) {
  if (!t)
    return;
  for (size_t i = 0; i < t->n_steps; i++) {
    pcre2_match_data_free(t->steps[i].md);
    pcre2_code_free(t->steps[i].re);
    free(t->steps[i].lit);
  }
  if (t->cache)
    for (size_t i = 0; i < CACHE_SLOTS; i++)
      free(t->cache[i].key);
  free(t->cache);
  free(t->steps);
  free(t->arena);
  free(t->vocab);
  free(t->dec);
  free(t->dec_kind);
  free(t->vmap);
  free(t->mmap);
  free(t->added);
  im__tok_trie_cleanup(&t->trie);
  free(t->work);
  free(t->pa);
  free(t->pb);
  free(t->segs);
  free(t->syms);
  free(t->heap);
  free(t->mstr);
  free(t->wids);
  free(t);
}

size_t im_tok_vocab_size(const struct im_tok *t) {
  return t ? t->n_ids : 0;
}

enum im_err im_tok_token_id(const struct im_tok *t, const char *s, size_t len, uint32_t *id) {
  if (!t || !s || !id)
    return IM_INVAL;
  for (size_t i = 0; i < t->n_added; i++)
    if (t->added[i].len == len && memcmp(t->arena + t->added[i].off, s, len) == 0) {
      *id = t->added[i].id;
      return IM_OK;
    }
  *id = vocab_get(t, s, len);
  return *id == NO_ID ? IM_NOTFOUND : IM_OK;
}

/* ---- encoding --------------------------------------------------------- */

struct emit {
  uint32_t *ids;
  size_t max, n;
};

static void emit_id(struct emit *e, uint32_t id) {
  if (e->ids && e->n < e->max)
    e->ids[e->n] = id;
  e->n++;
}

static size_t utf8_len(unsigned char c, size_t left) {
  size_t n = c < 0x80 ? 1 : c >= 0xf0 && c < 0xf8 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
  return n > left ? left : n;
}

static bool cand_less(const struct cand *a, const struct cand *b) {
  return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static bool heap_push(struct im_tok *t, size_t *n, struct cand c) {
  if (!grow((void **)&t->heap, &t->heap_cap, *n + 1, sizeof c))
    return false;
  size_t i = (*n)++;
  while (i && cand_less(&c, &t->heap[(i - 1) / 2])) {
    t->heap[i] = t->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  t->heap[i] = c;
  return true;
}

static struct cand heap_pop(struct im_tok *t, size_t *n) {
  struct cand top = t->heap[0], last = t->heap[--(*n)];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n)
      break;
    if (c + 1 < *n && cand_less(&t->heap[c + 1], &t->heap[c]))
      c++;
    if (!cand_less(&t->heap[c], &last))
      break;
    t->heap[i] = t->heap[c];
    i = c;
  }
  if (*n)
    t->heap[i] = last;
  return top;
}

static bool push_pair(struct im_tok *t, size_t *hn, int32_t l, int32_t r) {
  const struct merge_slot *m = merge_get(t, t->syms[l].id, t->syms[r].id);
  return !m || heap_push(t, hn, (struct cand){m->rank, t->syms[l].id, t->syms[r].id, m->id, l, r});
}

/* Initial symbols of the model string: one per character, byte-fallback
 * tokens or unk for a character not in the vocab. Returns the count. */
static size_t init_syms(struct im_tok *t, const char *m, size_t mn) {
  size_t ns = 0;
  bool last_unk = false;
  for (size_t i = 0; i < mn;) {
    size_t cl = utf8_len((unsigned char)m[i], mn - i);
    uint32_t id = vocab_get(t, m + i, cl);
    if (id != NO_ID) {
      t->syms[ns++].id = id;
      last_unk = false;
    } else {
      bool fb = t->byte_fallback;
      for (size_t k = 0; fb && k < cl; k++)
        fb = t->bytefb[(unsigned char)m[i + k]] != NO_ID;
      if (fb) {
        for (size_t k = 0; k < cl; k++)
          t->syms[ns++].id = t->bytefb[(unsigned char)m[i + k]];
        last_unk = false;
      } else if (t->unk_id != NO_ID && !(t->fuse_unk && last_unk)) {
        t->syms[ns++].id = t->unk_id;
        last_unk = true;
      } /* no unk token: the character is dropped, as the tokenizers crate does */
    }
    i += cl;
  }
  return ns;
}

/* BPE merges of t->syms[0..ns) (ids set) into t->wids; returns the count
 * or SIZE_MAX on allocation failure. Merges the lowest-ranked adjacent pair
 * first (leftmost on ties) with a heap of candidates, so a word of n symbols
 * costs O(n log n). */
static size_t bpe_merge(struct im_tok *t, size_t ns) {
  size_t hn = 0;
  for (size_t i = 0; i < ns; i++) {
    t->syms[i].prev = (int32_t)i - 1;
    t->syms[i].next = i + 1 < ns ? (int32_t)i + 1 : -1;
    t->syms[i].alive = true;
  }
  for (size_t i = 0; i + 1 < ns; i++)
    if (!push_pair(t, &hn, (int32_t)i, (int32_t)i + 1))
      return SIZE_MAX;
  while (hn) {
    struct cand c = heap_pop(t, &hn);
    struct sym *l = &t->syms[c.pos], *r = &t->syms[c.right];
    /* stale: a symbol merged or changed since the push (the same two ids
     * side by side would be the same merge, so that is no staleness) */
    if (!l->alive || !r->alive || l->next != c.right || l->id != c.lid || r->id != c.rid)
      continue;
    l->id = c.mid;
    r->alive = false;
    l->next = r->next;
    if (r->next >= 0)
      t->syms[r->next].prev = c.pos;
    if ((l->prev >= 0 && !push_pair(t, &hn, l->prev, c.pos)) ||
        (l->next >= 0 && !push_pair(t, &hn, c.pos, l->next)))
      return SIZE_MAX;
  }
  size_t n = 0;
  for (int32_t i = ns ? 0 : -1; i >= 0; i = t->syms[i].next)
    t->wids[n++] = t->syms[i].id;
  return n;
}

/* BPE of one model string into t->wids; returns the count or SIZE_MAX on
 * allocation failure. */
static size_t bpe(struct im_tok *t, const char *m, size_t mn) {
  if (!grow((void **)&t->syms, &t->syms_cap, mn + 1, sizeof *t->syms) ||
      !grow((void **)&t->wids, &t->wids_cap, mn + 1, sizeof *t->wids))
    return SIZE_MAX;
  if (t->ignore_merges) {
    uint32_t id = vocab_get(t, m, mn);
    if (id != NO_ID) {
      t->wids[0] = id;
      return 1;
    }
  }
  return bpe_merge(t, init_syms(t, m, mn));
}

static enum im_err encode_word(struct im_tok *t, const char *p, size_t n, struct emit *e) {
  struct cache_slot *slot = NULL;
  uint64_t h = 0;
  if (n <= CACHE_MAX_KEY) {
    h = hash_bytes(p, n);
    slot = &t->cache[h % CACHE_SLOTS];
    if (slot->key && slot->hash == h && slot->klen == n && memcmp(slot->key, p, n) == 0) {
      for (uint32_t i = 0; i < slot->n; i++)
        emit_id(e, slot->ids[i]);
      return IM_OK;
    }
  }
  const char *m = p;
  size_t mn = n, k;
  if (t->byte_ids) { /* the same symbols init_syms would find, without lookups */
    if (!grow((void **)&t->syms, &t->syms_cap, n + 1, sizeof *t->syms) ||
        !grow((void **)&t->wids, &t->wids_cap, n + 1, sizeof *t->wids))
      return IM_NOMEM;
    for (size_t i = 0; i < n; i++)
      t->syms[i].id = t->byte_id[(unsigned char)p[i]];
    k = bpe_merge(t, n);
  } else if (t->byte_level) {
    if (!grow((void **)&t->mstr, &t->mstr_cap, 2 * n + 1, 1))
      return IM_NOMEM;
    mn = 0;
    for (size_t i = 0; i < n; i++) {
      uint16_t cp = t->byte_cp[(unsigned char)p[i]];
      if (cp < 0x80) {
        t->mstr[mn++] = (char)cp;
      } else {
        t->mstr[mn++] = (char)(0xc0 | (cp >> 6));
        t->mstr[mn++] = (char)(0x80 | (cp & 0x3f));
      }
    }
    m = t->mstr;
    k = bpe(t, m, mn);
  } else {
    k = bpe(t, m, mn);
  }
  if (k == SIZE_MAX)
    return IM_NOMEM;
  for (size_t i = 0; i < k; i++)
    emit_id(e, t->wids[i]);
  if (slot) { /* replace whatever the slot held; on failure just skip caching */
    size_t ioff = (n + sizeof(uint32_t) - 1) / sizeof(uint32_t) * sizeof(uint32_t);
    char *mem = malloc(ioff + (k + 1) * sizeof(uint32_t));
    if (mem) {
      free(slot->key);
      memcpy(mem, p, n);
      slot->key = mem;
      slot->ids = (uint32_t *)(void *)(mem + ioff);
      memcpy(slot->ids, t->wids, k * sizeof(uint32_t));
      slot->hash = h;
      slot->klen = (uint32_t)n;
      slot->n = (uint32_t)k;
    }
  }
  return IM_OK;
}

static bool push_piece(struct piece **v, size_t *n, size_t *cap, size_t off, size_t len) {
  if (!len)
    return true;
  if (!grow((void **)v, cap, *n + 1, sizeof **v))
    return false;
  (*v)[(*n)++] = (struct piece){off, len};
  return true;
}

/* Cuts piece p into match / non-match segments covering it. Sets *err
 * (IM_NOMEM, or IM_LIMIT when PCRE2 hits a match or JIT stack limit: a
 * silently different cut would give wrong counts) and returns 0 on failure. */
static size_t find_segs(struct im_tok *t, const struct step *st, struct piece p, enum im_err *err) {
  const char *s = t->work + p.off;
  size_t ns = 0, prev = 0, pos = 0;
  *err = IM_NOMEM;
  while (pos < p.len) {
    size_t ms, me;
    if (st->re) {
      int rc = pcre2_match(st->re, (PCRE2_SPTR)s, p.len, pos, 0, st->md, NULL);
      /* Without PCRE2_MATCH_INVALID_UTF (PCRE2 < 10.34) invalid UTF-8
       * reports an error: the rest of the piece is then left unmatched. */
      if (rc == PCRE2_ERROR_NOMATCH || rc == PCRE2_ERROR_BADUTFOFFSET ||
          (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21))
        break;
      if (rc < 0) {
        *err = IM_LIMIT;
        return 0;
      }
      PCRE2_SIZE *ov = pcre2_get_ovector_pointer(st->md);
      ms = ov[0];
      me = ov[1];
    } else {
      const char *f = st->lit_len ? memmem(s + pos, p.len - pos, st->lit, st->lit_len) : NULL;
      if (!f)
        break;
      ms = (size_t)(f - s);
      me = ms + st->lit_len;
    }
    if (me <= ms) { /* empty match: contributes nothing, step one character */
      pos = ms + utf8_len((unsigned char)s[ms < p.len ? ms : p.len - 1], p.len - ms);
      if (ms >= p.len)
        break;
      continue;
    }
    if (!grow((void **)&t->segs, &t->segs_cap, ns + 2, sizeof *t->segs))
      return 0;
    if (ms > prev)
      t->segs[ns++] = (struct seg){p.off + prev, ms - prev, st->invert};
    t->segs[ns++] = (struct seg){p.off + ms, me - ms, !st->invert};
    prev = pos = me;
  }
  if (!grow((void **)&t->segs, &t->segs_cap, ns + 1, sizeof *t->segs))
    return 0;
  if (prev < p.len)
    t->segs[ns++] = (struct seg){p.off + prev, p.len - prev, st->invert};
  *err = IM_OK;
  return ns;
}

/* Applies a Split behaviour (the tokenizers crate's SplitDelimiterBehavior)
 * to segs[0..ns) in place; returns the new count, every segment kept. */
static size_t apply_behavior(struct seg *g, size_t ns, enum split_behavior b) {
  size_t o = 0;
  bool prev_match = false;
  switch (b) {
  case B_ISOLATED:
    return ns;
  case B_REMOVED:
    for (size_t i = 0; i < ns; i++)
      if (!g[i].match)
        g[o++] = g[i];
    return o;
  case B_PREV:
    for (size_t i = 0; i < ns; i++) {
      if (g[i].match && !prev_match && o)
        g[o - 1].len = g[i].off + g[i].len - g[o - 1].off;
      else
        g[o++] = g[i];
      prev_match = g[i].match;
    }
    return o;
  case B_CONTIGUOUS:
    for (size_t i = 0; i < ns; i++) {
      if (g[i].match == prev_match && o)
        g[o - 1].len = g[i].off + g[i].len - g[o - 1].off;
      else
        g[o++] = g[i];
      prev_match = g[i].match;
    }
    return o;
  case B_NEXT: /* walk backwards: a match joins the segment after it */
    o = ns;
    for (size_t i = ns; i-- > 0;) {
      bool m = g[i].match;
      if (m && !prev_match && o < ns) {
        g[o].len += g[o].off - g[i].off;
        g[o].off = g[i].off;
      } else {
        g[--o] = g[i];
      }
      prev_match = m;
    }
    memmove(g, g + o, (ns - o) * sizeof *g);
    return ns - o;
  }
  return ns;
}

static enum im_err run_step(struct im_tok *t, const struct step *st) {
  t->pb_n = 0;
  for (size_t i = 0; i < t->pa_n; i++) {
    struct piece p = t->pa[i];
    if (st->kind == STEP_BYTELEVEL && st->prefix_space && t->work[p.off] != ' ') {
      if (!grow((void **)&t->work, &t->work_cap, t->work_len + p.len + 1, 1))
        return IM_NOMEM;
      t->work[t->work_len] = ' ';
      memcpy(t->work + t->work_len + 1, t->work + p.off, p.len);
      p = (struct piece){t->work_len, p.len + 1};
      t->work_len += p.len;
    }
    if (st->kind == STEP_BYTELEVEL && !st->re) {
      if (!push_piece(&t->pb, &t->pb_n, &t->pb_cap, p.off, p.len))
        return IM_NOMEM;
      continue;
    }
    enum im_err err;
    size_t ns = find_segs(t, st, p, &err);
    if (err)
      return err;
    ns = apply_behavior(t->segs, ns, st->behavior);
    for (size_t k = 0; k < ns; k++)
      if (!push_piece(&t->pb, &t->pb_n, &t->pb_cap, t->segs[k].off, t->segs[k].len))
        return IM_NOMEM;
  }
  struct piece *sw = t->pa;
  size_t swc = t->pa_cap;
  t->pa = t->pb;
  t->pa_cap = t->pb_cap;
  t->pa_n = t->pb_n;
  t->pb = sw;
  t->pb_cap = swc;
  return IM_OK;
}

/* Pre-tokenizes and encodes text that holds no added token. */
static enum im_err encode_plain(struct im_tok *t, const char *s, size_t n, struct emit *e) {
  if (!n)
    return IM_OK;
  if (!grow((void **)&t->work, &t->work_cap, n + 1, 1))
    return IM_NOMEM;
  memcpy(t->work, s, n);
  t->work_len = n;
  t->pa_n = 0;
  if (!push_piece(&t->pa, &t->pa_n, &t->pa_cap, 0, n))
    return IM_NOMEM;
  for (size_t i = 0; i < t->n_steps; i++) {
    enum im_err err = run_step(t, &t->steps[i]);
    if (err)
      return err;
  }
  for (size_t i = 0; i < t->pa_n; i++) {
    enum im_err err = encode_word(t, t->work + t->pa[i].off, t->pa[i].len, e);
    if (err)
      return err;
  }
  return IM_OK;
}

static bool is_ws(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

enum im_err im_tok_encode(struct im_tok *t, const char *text, size_t len, uint32_t *ids,
                          size_t max_ids, size_t *n_out) {
  struct emit e = {ids, ids ? max_ids : 0, 0};
  size_t seg = 0, pos = 0;
  enum im_err err = IM_OK;
  if (n_out)
    *n_out = 0;
  if (!t || (!text && len) || !n_out)
    return IM_INVAL;
  if (len > TOK_MAX_TEXT)
    return IM_LIMIT;
  while (pos < len && !err) {
    if (!t->trie.root[(unsigned char)text[pos]]) {
      pos++;
      continue;
    }
    int32_t k = im__tok_trie_longest(&t->trie, text + pos, len - pos);
    if (k < 0) {
      pos++;
      continue;
    }
    const struct added *hit = &t->added[k]; /* the leftmost-longest match */
    size_t s = pos, end = pos + hit->len;
    while (hit->lstrip && s > seg && is_ws(text[s - 1]))
      s--;
    while (hit->rstrip && end < len && is_ws(text[end]))
      end++;
    err = encode_plain(t, text + seg, s - seg, &e);
    emit_id(&e, hit->id);
    seg = pos = end;
  }
  if (!err)
    err = encode_plain(t, text + seg, len - seg, &e);
  *n_out = e.n;
  return err;
}

enum im_err im_tok_count(struct im_tok *t, const char *text, size_t len, size_t *n_out) {
  return im_tok_encode(t, text, len, NULL, 0, n_out);
}

/* ---- decoding --------------------------------------------------------- */

static int hexval(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                : -1;
}

/* Byte-level token string back to bytes; false if a character is outside
 * the GPT-2 map (the token is then written as it is, as the crate does). */
static bool unmap_bytes(const struct im_tok *t, const char *s, size_t n, struct im_buf *out,
                        bool write, enum im_err *err) {
  char chunk[64];
  size_t k = 0;
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    int cp = -1;
    if (c < 0x80) {
      cp = c;
      i++;
    } else if ((c & 0xe0) == 0xc0 && i + 1 < n) {
      cp = ((c & 0x1f) << 6) | ((unsigned char)s[i + 1] & 0x3f);
      i += 2;
    }
    if (cp < 0 || cp >= 512 || t->cp_byte[cp] < 0)
      return false;
    if (write) {
      chunk[k++] = (char)t->cp_byte[cp];
      if (k == sizeof chunk) {
        if ((*err = im_buf_append(out, chunk, k)))
          return true;
        k = 0;
      }
    }
  }
  if (write && k)
    *err = im_buf_append(out, chunk, k);
  return true;
}

enum im_err im_tok_decode(const struct im_tok *t, const uint32_t *ids, size_t n,
                          struct im_buf *out) {
  if (!t || !out || (!ids && n))
    return IM_INVAL;
  for (size_t i = 0; i < n; i++) {
    uint32_t id = ids[i];
    if (id >= t->n_ids || !t->dec_kind[id])
      return IM_INVAL;
    const char *s = t->arena + t->dec[id].off;
    size_t len = t->dec[id].len;
    enum im_err err = IM_OK;
    if (t->dec_kind[id] == 3) {
      char byte = (char)(hexval(s[3]) * 16 + hexval(s[4]));
      err = im_buf_append(out, &byte, 1);
    } else if (t->dec_kind[id] == 1 && t->dec_bytelevel &&
               unmap_bytes(t, s, len, out, false, &err)) {
      unmap_bytes(t, s, len, out, true, &err);
    } else {
      err = im_buf_append(out, s, len);
    }
    if (err)
      return err;
  }
  return IM_OK;
}
