/* Decoding of OpenAI-compatible request bodies (/v1/completions and
 * /v1/chat/completions), with vLLM's extensions the simulator honours.
 * Field rules follow the OpenAI API reference and vLLM's
 * vllm/entrypoints/openai/protocol.py (e.g. max_completion_tokens as an alias
 * of max_tokens, ignore_eos, cache_salt, stream_options.continuous_usage_stats). */
#ifndef IM_SERVE_API_H
#define IM_SERVE_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* The longest message content built from content parts (bytes): the request
 * body holding the parts is itself capped well below. */
#define IM_OAI_CONTENT_MAX ((size_t)64 << 20)

enum im_api_kind { IM_API_COMPLETIONS, IM_API_CHAT };

struct im_api_msg {
  char *role;     /* "system", "user", "assistant", "tool", ... */
  char *content;  /* text; content-part arrays are joined; "" for null */
};

struct im_api_req {
  enum im_api_kind kind;
  char *model;                /* NULL when absent */
  char *prompt;               /* completions: the prompt text (NULL when token ids) */
  uint32_t *prompt_ids;       /* completions: a prompt given as token ids */
  size_t n_prompt_ids;
  struct im_api_msg *messages; /* chat */
  size_t n_messages;
  bool stream;
  bool include_usage;         /* stream_options.include_usage */
  bool continuous_usage;      /* stream_options.continuous_usage_stats */
  int64_t max_tokens;         /* max_tokens or max_completion_tokens; -1 absent */
  int64_t min_tokens;         /* vLLM extension; 0 absent */
  double temperature;         /* default 1.0; [0, 2] */
  double top_p;               /* default 1.0; (0, 1] */
  bool has_seed;
  int64_t seed;
  bool ignore_eos;            /* vLLM extension */
  uint32_t logprobs;          /* alternatives per token asked for: chat "top_logprobs"
                                 (with "logprobs": true), completions "logprobs" N; 0..20 */
  bool want_logprobs;         /* chat "logprobs": true, or completions "logprobs" given */
  char *cache_salt;           /* vLLM extension; NULL when absent */
  char *user;                 /* OpenAI `user`; NULL when absent */
};

/* Decodes body (len bytes, need not be NUL-terminated) into out. Unknown
 * fields are ignored, as vLLM does by default. On failure returns IM_PARSE
 * (not JSON, or not an object) or IM_INVAL (a field of the wrong type or out
 * of range, a missing required field, n != 1), writes a user-facing message
 * naming the field into msg (e.g. "'temperature' must be a number between 0
 * and 2") and leaves out cleaned up. */
enum im_err im_api_decode(enum im_api_kind kind, const char *body, size_t len,
                          struct im_api_req *out, char *msg, size_t msg_len) IM_WUR;
/* Frees what im_api_decode allocated; NULL and zeroed structs are fine. */
void im_api_req_cleanup(struct im_api_req *r);

#endif
