/* A tokenizer loaded from a Hugging Face tokenizer.json (BPE models).
 *
 * Supported (what DeepSeek-V3's tokenizer.json uses, and the common cases):
 *   - model "BPE": vocab, merges ("a b" strings or [a, b] pairs),
 *     byte_fallback (<0xNN> tokens), ignore_merges, unk_token, fuse_unk;
 *   - normalizer null or an empty "Sequence";
 *   - pre_tokenizer null, "Split" (pattern Regex/String, every behavior,
 *     invert), "ByteLevel" (add_prefix_space, use_regex; trim_offsets only
 *     affects offsets and is ignored) and "Sequence" of these, with
 *     ByteLevel last;
 *   - added_tokens matched before pre-tokenization (leftmost-longest, lstrip
 *     and rstrip absorbing ASCII whitespace);
 *   - decoder "ByteLevel" or null; post_processor ignored (encode never adds
 *     special tokens).
 * Anything else fails to load with IM_UNSUPPORTED and a message naming the
 * component. Regexes are compiled with PCRE2 (UTF, UCP, JIT when available)
 * where Hugging Face uses Oniguruma. To classify characters as the
 * tokenizers crate does (Oniguruma's Unicode 16.0 tables), \p{L} \p{M}
 * \p{N} \p{P} \p{S} are widened with the code points added since Unicode
 * 14.0 and \s means the White_Space property; ids then equal the crate's on
 * DeepSeek-V3's tokenizer.json for every code point (docs/tokenizer.md).
 *
 * Thread safety: an im_tok holds scratch space and a word cache that encode
 * mutates, so one im_tok must not be used by two threads at once (load one
 * per thread, or serialise calls). */
#ifndef INFERMETER_TOKENIZER_H
#define INFERMETER_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

struct im_tok;

/* Loads path. On success *out owns a tokenizer (free with im_tok_free). On
 * failure *out is NULL and msg (when msg_len > 0) holds a message naming the
 * file and the component at fault, e.g. "x.json: normalizer type
 * 'BertNormalizer' is not supported". Returns IM_IO (cannot read), IM_LIMIT
 * (file over 256 MiB), IM_PARSE (malformed JSON or tokenizer), IM_UNSUPPORTED
 * (a valid component this module does not implement) or IM_NOMEM. */
enum im_err im_tok_load(const char *path, struct im_tok **out, char *msg, size_t msg_len) IM_WUR;

/* Frees a tokenizer; NULL is a no-op. */
void im_tok_free(struct im_tok *tok);

/* Encodes text[0..len) without adding special tokens. Writes at most max_ids
 * ids into ids (ids may be NULL: count only) and sets *n_out to the total
 * number of tokens, so *n_out > max_ids means the ids were cut. Returns
 * IM_OK, IM_LIMIT (len over 1 GiB, or a pre-tokenizer regex hit a PCRE2
 * match limit), IM_NOMEM or IM_INVAL (NULL tok). */
enum im_err im_tok_encode(struct im_tok *tok, const char *text, size_t len, uint32_t *ids,
                          size_t max_ids, size_t *n_out) IM_WUR;

/* Number of tokens of text[0..len) (im_tok_encode with ids NULL). */
enum im_err im_tok_count(struct im_tok *tok, const char *text, size_t len, size_t *n_out) IM_WUR;

/* Appends the bytes of ids[0..n) to out. Added tokens are written as their
 * content; byte-fallback tokens <0xNN> as their byte. The output is raw bytes
 * (an id sequence cut inside a character gives a partial UTF-8 sequence; no
 * U+FFFD replacement). decode(encode(s)) == s for valid UTF-8 s. Returns
 * IM_INVAL for an id with no token (out then holds the ids before it) or the
 * buffer's error (IM_LIMIT, IM_NOMEM). */
enum im_err im_tok_decode(const struct im_tok *tok, const uint32_t *ids, size_t n,
                          struct im_buf *out) IM_WUR;

/* One past the largest id (vocab and added tokens). */
size_t im_tok_vocab_size(const struct im_tok *tok);

/* Id of the token whose vocab or added-token string is s[0..len); IM_NOTFOUND
 * if none. */
enum im_err im_tok_token_id(const struct im_tok *tok, const char *s, size_t len,
                            uint32_t *id) IM_WUR;

#endif
