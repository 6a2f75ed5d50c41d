/* Encoding of OpenAI-compatible responses as vLLM's OpenAI server shapes
 * them (vllm/entrypoints/openai/serving_chat.py, serving_completion.py):
 * `chat.completion.chunk` / `text_completion` SSE events, the usage chunk
 * with empty choices, whole (non-streaming) responses, and error bodies. */
#ifndef IM_SERVE_OAI_ENCODE_H
#define IM_SERVE_OAI_ENCODE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "proto/oai_api.h"

struct im_oai_ctx {
  enum im_api_kind kind;
  const char *id;          /* "chatcmpl-..." or "cmpl-..." */
  int64_t created;         /* Unix seconds */
  const char *model;
  bool reasoning_new;      /* field "reasoning" instead of "reasoning_content" */
};

struct im_sim_usage {
  uint32_t prompt, completion, cached, reasoning;
  /* The DeepSeek API's usage: also prompt_cache_hit_tokens (= cached) and
   * prompt_cache_miss_tokens (= prompt - cached), api-docs.deepseek.com
   * "Create Chat Completion" and "Context Caching". */
  bool cache_hit_fields;
};

/* `data: {chunk}\n\n` carrying text (reasoning or answer channel), with
 * finish_reason (NULL: null) and, for continuous_usage_stats, usage. */
enum im_err im_oai_chunk(struct im_buf *b, const struct im_oai_ctx *c, const char *text, size_t len,
                         bool reasoning, const char *finish_reason,
                         const struct im_sim_usage *usage) IM_WUR;
/* Log-probabilities for a chunk: n_tokens tokens (the first carries the
 * chunk's text, the others ""), each with the same n_alt alternatives
 * alt[0..n_alt) (alt[0] is the emitted token's own logprob; the others are
 * named "<alt1>", "<alt2>", ...). */
struct im_oai_lp {
  uint32_t n_tokens, n_alt;
  const double *alt;
};
/* im_oai_chunk with a "logprobs" object (lp NULL: null, as im_oai_chunk):
 * chat {"content": [{"token", "logprob", "top_logprobs": [{"token",
 * "logprob"}]}]}, completions {"tokens", "token_logprobs", "top_logprobs":
 * [{token: logprob}], "text_offset"}, OpenAI's shapes. */
enum im_err im_oai_chunk_lp(struct im_buf *b, const struct im_oai_ctx *c, const char *text,
                            size_t len, bool reasoning, const char *finish_reason,
                            const struct im_sim_usage *usage, const struct im_oai_lp *lp) IM_WUR;
/* A chat chunk carrying a piece of a tool call's arguments (delta.tool_calls,
 * as vLLM streams them): with name (the first piece) also the call's id,
 * type and function name. */
enum im_err im_oai_tool_chunk(struct im_buf *b, const struct im_oai_ctx *c, const char *call_id,
                              const char *name, const char *args, size_t len,
                              const char *finish_reason, const struct im_sim_usage *usage) IM_WUR;
/* The chat role chunk vLLM sends first: delta {role: assistant, content: ""}. */
enum im_err im_oai_role_chunk(struct im_buf *b, const struct im_oai_ctx *c) IM_WUR;
/* The final usage chunk with empty choices. */
enum im_err im_oai_usage_chunk(struct im_buf *b, const struct im_oai_ctx *c,
                               const struct im_sim_usage *u) IM_WUR;
/* A whole non-streaming response body. reasoning may be NULL. */
enum im_err im_oai_response(struct im_buf *b, const struct im_oai_ctx *c, const char *text,
                            size_t len, const char *reasoning, size_t rlen,
                            const char *finish_reason, const struct im_sim_usage *u) IM_WUR;
/* {"error": {"message", "type", "param": null, "code"}} for an HTTP status. */
enum im_err im_oai_error(struct im_buf *b, int status, const char *message) IM_WUR;
/* The OpenAI error type name for a status (BadRequestError, ...). */
const char *im_oai_error_type(int status);

#endif
