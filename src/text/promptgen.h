/* Prompts of an exact token length.
 *
 * vLLM's "random" dataset draws token ids, decodes them to text and sends
 * the text; re-encoded, that text rarely has the requested length (tokens
 * merge across the joins), so the server sees a different input length than
 * the one reported. Here the text comes from a content class generator
 * (content.h) and is cut where the tokenizer the caller names counts exactly
 * n tokens, verified by encoding: the length is exact, not approximate.
 *
 * Method (details in promptgen.c and docs/workloads.md): generate text of
 * more than n tokens; search the generator's piece boundaries, then the
 * bytes of one piece, for a cut whose prefix encodes to exactly n tokens;
 * if no cut does (a count that jumps over n), complete the longest shorter
 * cut with filler that is checked to add one token per copy (" a", ".", and
 * others); as a last resort the whole text is filler. Every candidate is
 * checked by a full count, and the number of tries is bounded, so a call
 * always ends: with exact text, or IM_NOTFOUND when no candidate matched
 * (not seen with the built-in tokenizer or byte-level BPE tokenizers).
 *
 * The text holds no added/special token strings: it is printable ASCII plus
 * newlines without '<' followed by anything but ' ', '=' or '<' (content.h),
 * and fillers follow the same rule, so none of the "<|...|>", "<｜...｜>",
 * "<think>", "<s>" markers of common tokenizers can occur. A tokenizer with
 * an added token made of ordinary characters is not protected against.
 *
 * Thread safety: as the tokenizer's (tok is mutated by encoding). */
#ifndef INFERMETER_PROMPTGEN_H
#define INFERMETER_PROMPTGEN_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "text/content.h"
#include "core/err.h"
#include "text/tokenizer.h"

/* Largest n accepted (IM_LIMIT above). */
#define IM_PROMPTGEN_MAX_TOKENS (1u << 22)
/* The longest prompt text built, in bytes: 2^22 tokens of 16 bytes (a
 * long token, or one escaped for JSON, stays well below). The load engine's
 * request body has the same cap. */
#define IM_PROMPT_TEXT_MAX ((size_t)64 << 20)

/* Appends to out text that, encoded alone by tok (or by the built-in
 * tokenizer, text/simpletok.h, when tok is NULL), has exactly n tokens.
 * The text comes from im_content_gen seeded with seed (the same arguments
 * and tokenizer give the same text) and starts with an ASCII letter, except
 * in the last-resort cases where it is all filler taken from the tokenizer's
 * vocabulary or a filler without the leading "I" (never seen in tests).
 *
 * Joining: with the built-in tokenizer, count(prefix + text) ==
 * count(prefix) + n for every prefix (out's existing content) that is empty
 * or ends with a byte other than an ASCII letter, a space or a tab, or an
 * incomplete UTF-8 sequence: e.g. after "\n", "]", ".", ":". With a BPE
 * tokenizer the same holds where its pre-tokenizer splits between the
 * prefix's last character and a letter (after '\n' for GPT-2, Llama 3 and
 * DeepSeek-V3 style pre-tokenizers) and next to added tokens (chat template
 * markers), which are matched before anything else. Use
 * im_promptgen_exact_after when the total is what must be exact.
 *
 * Returns IM_OK; IM_LIMIT (n over IM_PROMPTGEN_MAX_TOKENS, or out's max
 * reached); IM_NOTFOUND (no exact text found, see above); IM_NOMEM; or the
 * tokenizer's error. On error out is unchanged. */
enum im_err im_promptgen_exact(struct im_tok *tok, enum im_content cls, uint64_t seed, uint32_t n,
                               struct im_buf *out) IM_WUR;

/* Like im_promptgen_exact, but what is exact is the total:
 * count(out after) == count(out before) + n, whatever out ends with (the
 * prefix is encoded with every candidate, so a long prefix costs time). The
 * appended text alone may then count n - 1 or n + 1 where it merges with
 * the prefix. Same errors. */
enum im_err im_promptgen_exact_after(struct im_tok *tok, enum im_content cls, uint64_t seed,
                                     uint32_t n, struct im_buf *out) IM_WUR;

#endif
