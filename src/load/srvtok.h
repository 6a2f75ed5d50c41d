/* Token counts from the target's own tokenizer (`--tokenizer server`).
 *
 * The exact-length prompts, the session builder and the output count of
 * streams without usage ask the server being measured how many tokens a text
 * is, so "1024 input tokens" means 1024 to that server whatever tokenizer
 * and chat template it applies. Shapes (facts, cited where used in
 * srvtok.c):
 *   - vLLM (and `infermeter serve`): POST /tokenize {"model", "prompt",
 *     "add_special_tokens"} or {"model", "messages"} (the chat template
 *     applied, add_generation_prompt on by default) -> {"count",
 *     "max_model_len", "tokens": [...]};
 *   - SGLang: its native POST /tokenize takes the same "model", "prompt"
 *     and "add_special_tokens" (read the same way: "count", else the length
 *     of "tokens"; not tested against SGLang);
 *   - llama.cpp llama-server: POST /tokenize {"content", "add_special"} ->
 *     {"tokens": [...]}; a chat prompt is first rendered by POST
 *     /apply-template {"messages"} -> {"prompt"}.
 * Which one answers is found on the first count: vLLM's shape is sent; an
 * answer without "count" or "max_model_len" whose "tokens" is empty for a
 * non-empty text is llama.cpp ignoring the unknown "prompt", and its shape is
 * used from then on.
 *
 * Counts are cached per distinct text (a 64-bit hash of the shape and the
 * bytes, with the length; 65,536 entries, a newer count replacing an older
 * one in its slot), so a text counted twice costs one request.
 *
 * Thread safety: every function may be called from any thread; requests are
 * serialised (one connection, reused). */
#ifndef IM_LOAD_SRVTOK_H
#define IM_LOAD_SRVTOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

struct im_srvtok;
struct im_net;

struct im_srvtok_cfg {
  const char *base_url; /* e.g. http://127.0.0.1:8000 (no trailing slash) */
  const char *model;    /* sent as "model" (vLLM requires it) */
  const char *api_key;  /* NULL: none; sent as a bearer token, never logged */
  const struct im_net *net; /* TLS, proxy, unix socket (borrowed; NULL: none) */
};

/* A client for cfg (the strings are copied). IM_OK and *out, or IM_NOMEM. */
enum im_err im_srvtok_new(const struct im_srvtok_cfg *cfg, struct im_srvtok **out) IM_WUR;
/* Frees t; NULL is a no-op. */
void im_srvtok_free(struct im_srvtok *t);

/* Tokens of a text as the server counts it. chat: as a chat prompt
 * (messages_json, a JSON array of messages, or when NULL text as one user
 * message), with the server's chat template; else text as a completion
 * prompt, with the special tokens the server adds to one (BOS) when
 * `special`, without them when not (an answer's tokens). Returns IM_OK and
 * *n; IM_IO (unreachable, not 200, or no count in the answer; msg says
 * which, with the URL and status), IM_LIMIT (text over 64 MiB) or IM_NOMEM.
 * A failed count is not cached. */
enum im_err im_srvtok_count(struct im_srvtok *t, const char *text, size_t len,
                            const char *messages_json, bool chat, bool special, uint32_t *n,
                            char *msg, size_t msg_len) IM_WUR;

/* Requests sent and counts answered from the cache so far. */
void im_srvtok_stats(struct im_srvtok *t, uint64_t *requests, uint64_t *cache_hits);

/* The first failure's message ("" when none): for the run's error line. */
void im_srvtok_last_error(struct im_srvtok *t, char *msg, size_t msg_len);

#endif
