/* The built-in tokenizer used until a tokenizer.json one is loaded.
 *
 * It cuts text at about the granularity of a byte-level BPE on English and
 * code (roughly 4 bytes per token on prose): a word with its leading space,
 * a run of up to 3 digits, a single punctuation character, a newline run,
 * one CJK or other non-ASCII character; words longer than 8 bytes are cut
 * every 6 bytes. Each piece maps to an id by hashing its bytes into
 * [256, vocab_size), so equal text always gives equal ids (what prefix
 * caching needs). Deterministic, allocation-free, thread-safe. */
#ifndef IM_WORKLOAD_SIMPLETOK_H
#define IM_WORKLOAD_SIMPLETOK_H

#include <stddef.h>
#include <stdint.h>

#define IM_SIMPLETOK_VOCAB 129280 /* DeepSeek-V3's vocabulary size */

/* Encodes text[0..len) and returns the number of tokens. Writes at most
 * max_ids ids into ids (ids may be NULL when max_ids is 0), so a first call
 * with max_ids 0 counts. */
size_t im_simpletok_encode(const char *text, size_t len, uint32_t *ids, size_t max_ids);

#endif
