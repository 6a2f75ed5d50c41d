/* Decoder of one OpenAI-compatible streaming chunk (the data of one SSE
 * event), as sent by OpenAI, vLLM, SGLang, llama.cpp server and DeepSeek.
 *
 * Recognises:
 *   - the "[DONE]" sentinel (surrounding JSON whitespace allowed);
 *   - an error: {"error": {...}} or {"error": "text"} (vLLM's mid-stream
 *     error shape, both the older {"error": {"object": "error", "message":
 *     ...}} and the newer {"error": {"message": ..., "type": ..., "code":
 *     ...}}), and a top-level {"object": "error", "message": ...};
 *   - otherwise a chat.completion.chunk or text_completion chunk, of which
 *     the choice with "index" 0 (array position when "index" is missing; the
 *     first such element when several claim 0) is read: delta.content,
 *     delta.reasoning_content (DeepSeek, vLLM < 0.10), delta.reasoning (newer
 *     vLLM), delta.tool_calls, delta.role, text (completions),
 *     finish_reason; plus "usage" and llama.cpp's "timings".
 *
 * The scanner is hand-written (bench/sse_speed.c compares it with jansson):
 * it validates the whole document as strict RFC 8259 JSON (UTF-8 checked,
 * nesting limited to IM_OAI_MAX_DEPTH), reads only the fields above and
 * allocates nothing in steady state. A field of an unexpected type (e.g. a
 * numeric "content") is treated as absent, not as an error. When a key is
 * repeated, the last occurrence wins.
 *
 * Thread safety: none; one struct per thread. */
#ifndef INFERMETER_OAI_CHUNK_H
#define INFERMETER_OAI_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

/* Deeper nesting is rejected with IM_LIMIT (real chunks nest 4 deep). */
#define IM_OAI_MAX_DEPTH 64

enum im_oai_kind {
  IM_OAI_CHUNK, /* a completion chunk (possibly with nothing in it) */
  IM_OAI_DONE,  /* the "[DONE]" sentinel */
  IM_OAI_ERROR, /* an error object; see err_* */
};

/* What a CHUNK carries, for timestamping (docs docs/metrics.md §1, t_first). */
enum im_oai_class {
  IM_OAI_TOKENS, /* content, reasoning, text or tool_calls non-empty */
  IM_OAI_ROLE,   /* no tokens, a delta.role (e.g. the first chunk) */
  IM_OAI_USAGE,  /* no tokens nor role, a non-null "usage" */
  IM_OAI_EMPTY,  /* none of these (e.g. a finish_reason-only chunk) */
};

enum im_oai_object {
  IM_OAI_OBJ_OTHER, /* absent or another value */
  IM_OAI_OBJ_CHAT,  /* "chat.completion.chunk" */
  IM_OAI_OBJ_TEXT,  /* "text_completion" */
};

/* A decoded JSON string: ptr NULL when the key was absent, null or not a
 * string. Not NUL-terminated; may contain NUL bytes (from \u0000). Points
 * into the decoded data when the JSON string had no escapes, else into the
 * chunk's scratch buffer: valid until the next decode or cleanup of the same
 * struct, and while the decoded data is unchanged. */
struct im_oai_str {
  const char *ptr;
  size_t len;
};

/* Integer fields are -1 when absent, null, not an integer or out of range. */
struct im_oai_usage {
  int64_t prompt_tokens;
  int64_t completion_tokens;
  int64_t total_tokens;
  int64_t cached_tokens;     /* prompt_tokens_details.cached_tokens */
  int64_t reasoning_tokens;  /* completion_tokens_details.reasoning_tokens */
  int64_t cache_hit_tokens;  /* DeepSeek prompt_cache_hit_tokens */
  int64_t cache_miss_tokens; /* DeepSeek prompt_cache_miss_tokens */
};

/* llama.cpp server "timings". */
struct im_oai_timings {
  int64_t cache_n;
  int64_t prompt_n;
  int64_t predicted_n;
};

struct im_oai_chunk {
  enum im_oai_kind kind;
  enum im_oai_class cls; /* meaningful for IM_OAI_CHUNK */
  enum im_oai_object object;

  size_t n_choices;                  /* elements of "choices" */
  int has_choice;                    /* a choice with index 0 was read */
  struct im_oai_str content;         /* delta.content (chat) */
  struct im_oai_str text;            /* text (completions) */
  struct im_oai_str reasoning;       /* delta.reasoning_content, else .reasoning */
  struct im_oai_str role;            /* delta.role */
  struct im_oai_str finish_reason;   /* any string; ptr NULL while running */
  size_t n_tool_calls;               /* elements of delta.tool_calls */
  struct im_oai_str tool_calls_json; /* raw JSON text of delta.tool_calls */
  struct im_oai_str logprobs_json;   /* raw JSON text of the choice's "logprobs"
                                        object (empty when absent or not an object) */

  int has_usage; /* a non-null "usage" object */
  struct im_oai_usage usage;
  int has_timings; /* a "timings" object */
  struct im_oai_timings timings;

  /* IM_OAI_ERROR: message and type (strings), code as a number (-1 when
   * absent or not an integer) and as raw text (a string's content, or the
   * number's JSON text). */
  struct im_oai_str err_message;
  struct im_oai_str err_type;
  struct im_oai_str err_code;
  int64_t err_code_num;

  /* private */
  struct im_buf scratch;
  size_t max_len;
};

/* Cached prompt tokens from a usage object and llama.cpp timings (either may
 * be NULL; take them from the same chunk): prompt_tokens_details.
 * cached_tokens, else DeepSeek's prompt_cache_hit_tokens, else
 * timings.cache_n, else usage.prompt_tokens - timings.prompt_n (llama.cpp
 * builds without cache_n); -1 when none of these is known. */
int64_t im_oai_cached_tokens(const struct im_oai_usage *u, const struct im_oai_timings *t);

/* Initialises c for data up to max_len bytes (0: IM_SSE_DEFAULT_MAX_DATA,
 * 4 MiB). Allocates nothing until a string with escapes is decoded. */
void im_oai_chunk_init(struct im_oai_chunk *c, size_t max_len);
/* Frees the scratch storage. NULL ok. */
void im_oai_chunk_cleanup(struct im_oai_chunk *c);

/* Decodes one event's data into c (all fields reset first). Returns IM_OK;
 * IM_PARSE when data is neither "[DONE]" nor a valid JSON object; IM_LIMIT
 * when len exceeds max_len or nesting exceeds IM_OAI_MAX_DEPTH; IM_NOMEM.
 * On error c's fields are unspecified. data need not be NUL-terminated. */
enum im_err im_oai_chunk_decode(struct im_oai_chunk *c, const char *data, size_t len) IM_WUR;

/* True when the chunk carries answer text (content or text non-empty): the
 * t_answer event of docs/metrics.md §1. */
int im_oai_chunk_has_answer(const struct im_oai_chunk *c);

/* Internal (im__): the same decoding done with jansson, kept as the
 * reference for the differential fuzz target and for bench/sse_speed.c. It
 * gives the same fields as im_oai_chunk_decode on every input both accept,
 * except tool_calls_json and logprobs_json (left empty) and strings, which point into c's
 * scratch. Returns IM_PARSE for whatever jansson rejects. */
/* Internal, shared by the decoder and its jansson reference: the data is the
 * "[DONE]" sentinel (JSON whitespace around it allowed); and the class of a
 * decoded chunk (docs/metrics.md §1: token-bearing, role-only, usage-only, empty).
 * They define what is measured, so both decoders use the same ones. */
int im__oai_is_done(const char *s, size_t len);
void im__oai_classify(struct im_oai_chunk *c);
enum im_err im__oai_chunk_decode_jansson(struct im_oai_chunk *c, const char *data,
                                         size_t len) IM_WUR;

#endif
