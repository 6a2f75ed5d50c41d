/* The body of an OpenAI-compatible streaming request, as the load engine
 * sends it: /v1/chat/completions (messages) or /v1/completions (prompt),
 * always with "stream": true and stream_options.include_usage (so the
 * server reports usage; docs/metrics.md §1 prefers it for n_out).
 *
 * The decoder of the same requests, for the built-in server, is
 * proto/oai_api.h; the two are tested against each other. */
#ifndef IM_PROTO_OAI_REQUEST_H
#define IM_PROTO_OAI_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

struct im_oai_body {
  const char *model;         /* NULL: "" */
  bool chat;                 /* chat completions (messages) or completions (prompt) */
  const char *prompt;        /* NULL: "" */
  size_t prompt_len;
  const char *messages_json; /* chat: a JSON array sent as "messages" instead of one user
                                message holding prompt (NULL: none); inserted as is */
  const char *extra_json;    /* a JSON object whose fields are appended last (NULL: none) */
  uint32_t max_tokens;
  bool ignore_eos;           /* vLLM's and SGLang's ignore_eos: true */
  double temperature, top_p; /* NaN: not sent */
  bool continuous_usage;     /* vLLM's stream_options.continuous_usage_stats */
  const char *cache_salt;    /* vLLM's cache_salt (NULL: not sent) */
  uint32_t logprobs;         /* top log-probabilities per token asked for (0: none):
                                chat "logprobs": true, "top_logprobs": N; completions
                                "logprobs": N (OpenAI's API, as vLLM and SGLang take it) */
};

/* Appends the JSON body to b. Strings are escaped; messages_json and the
 * inside of extra_json are trusted to be JSON (the workload built or parsed
 * them). On error (IM_LIMIT at b's cap, IM_NOMEM) b may hold part of the
 * body: the caller discards it. */
enum im_err im_oai_body_encode(const struct im_oai_body *q, struct im_buf *b) IM_WUR;

#endif
