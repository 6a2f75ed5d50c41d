#include "proto/oai_encode.h"

#include <inttypes.h>
#include <string.h>

static enum im_err usage_json(struct im_buf *b, const struct im_sim_usage *u) {
  enum im_err err = im_buf_printf(
      b,
      "{\"prompt_tokens\":%u,\"total_tokens\":%u,\"completion_tokens\":%u,"
      "\"prompt_tokens_details\":{\"cached_tokens\":%u}",
      u->prompt, u->prompt + u->completion, u->completion, u->cached);
  if (!err && u->reasoning)
    err = im_buf_printf(b, ",\"completion_tokens_details\":{\"reasoning_tokens\":%u}",
                        u->reasoning);
  if (!err && u->cache_hit_fields)
    err = im_buf_printf(b, ",\"prompt_cache_hit_tokens\":%u,\"prompt_cache_miss_tokens\":%u",
                        u->cached, u->prompt > u->cached ? u->prompt - u->cached : 0);
  if (!err)
    err = im_buf_puts(b, "}");
  return err;
}

/* Once per streamed chunk: pieces rather than printf, which cost serve a
 * tenth of its user time at 150k chunks/s (bench/README.md, serve --io). */
static enum im_err head(struct im_buf *b, const struct im_oai_ctx *c) {
  bool chat = c->kind == IM_API_CHAT;
  enum im_err err = im_buf_puts(b, "data: {\"id\":\"");
  if (!err)
    err = im_buf_puts(b, c->id);
  if (!err)
    err = im_buf_puts(b, chat ? "\",\"object\":\"chat.completion.chunk\",\"created\":"
                              : "\",\"object\":\"text_completion\",\"created\":");
  if (!err)
    err = im_buf_put_i64(b, c->created);
  if (!err)
    err = im_buf_puts(b, ",\"model\":\"");
  if (!err)
    err = im_buf_puts(b, c->model);
  return err ? err : im_buf_puts(b, "\",\"choices\":[");
}

static enum im_err finish_str(struct im_buf *b, const char *finish_reason) {
  if (!finish_reason)
    return im_buf_puts(b, "null");
  enum im_err err = im_buf_puts(b, "\"");
  if (!err)
    err = im_buf_puts(b, finish_reason);
  return err ? err : im_buf_puts(b, "\"");
}

/* One token of a logprobs object: chat {"token", "logprob", "top_logprobs"}
 * or a completions top_logprobs map. */
static enum im_err lp_token(struct im_buf *b, bool chat, const char *text, size_t len,
                            const struct im_oai_lp *lp) {
  enum im_err err = IM_OK;
  if (chat) {
    err = im_buf_puts(b, "{\"token\":\"");
    if (!err)
      err = im_buf_json_escape(b, text, len);
    if (!err)
      err = im_buf_printf(b, "\",\"logprob\":%.6g,\"top_logprobs\":[", lp->n_alt ? lp->alt[0] : 0.0);
  } else {
    err = im_buf_puts(b, "{");
  }
  for (uint32_t k = 0; !err && k < lp->n_alt; k++) {
    if (k && (err = im_buf_puts(b, ",")))
      break;
    if (chat)
      err = im_buf_puts(b, "{\"token\":\"");
    else
      err = im_buf_puts(b, "\"");
    if (!err)
      err = k ? im_buf_printf(b, "<alt%u>", k) : im_buf_json_escape(b, text, len);
    if (!err)
      err = im_buf_printf(b, chat ? "\",\"logprob\":%.6g}" : "\":%.6g", lp->alt[k]);
  }
  if (!err)
    err = im_buf_puts(b, chat ? "]}" : "}");
  return err;
}

static enum im_err lp_json(struct im_buf *b, bool chat, const char *text, size_t len,
                           const struct im_oai_lp *lp) {
  enum im_err err;
  uint32_t n = lp->n_tokens ? lp->n_tokens : 1;
  if (chat) {
    err = im_buf_puts(b, "{\"content\":[");
    for (uint32_t i = 0; !err && i < n; i++) {
      if (i)
        err = im_buf_puts(b, ",");
      if (!err)
        err = lp_token(b, true, i ? "" : text, i ? 0 : len, lp);
    }
    return err ? err : im_buf_puts(b, "]}");
  }
  err = im_buf_puts(b, "{\"tokens\":[");
  for (uint32_t i = 0; !err && i < n; i++) {
    err = im_buf_puts(b, i ? ",\"" : "\"");
    if (!err && !i)
      err = im_buf_json_escape(b, text, len);
    if (!err)
      err = im_buf_puts(b, "\"");
  }
  if (!err)
    err = im_buf_puts(b, "],\"token_logprobs\":[");
  for (uint32_t i = 0; !err && i < n; i++)
    err = im_buf_printf(b, "%s%.6g", i ? "," : "", lp->n_alt ? lp->alt[0] : 0.0);
  if (!err)
    err = im_buf_puts(b, "],\"top_logprobs\":[");
  for (uint32_t i = 0; !err && i < n; i++) {
    if (i)
      err = im_buf_puts(b, ",");
    if (!err)
      err = lp_token(b, false, i ? "" : text, i ? 0 : len, lp);
  }
  if (!err)
    err = im_buf_puts(b, "],\"text_offset\":[");
  for (uint32_t i = 0; !err && i < n; i++)
    err = im_buf_printf(b, "%s%zu", i ? "," : "", i ? len : (size_t)0);
  return err ? err : im_buf_puts(b, "]}");
}

/* The end of a chunk after its delta (or text), comma and logprobs:
 * finish_reason, the optional usage, the event's end. */
static enum im_err finish_tail(struct im_buf *b, const char *finish_reason,
                               const struct im_sim_usage *usage) {
  enum im_err err = im_buf_puts(b, "\"finish_reason\":");
  if (!err)
    err = finish_str(b, finish_reason);
  if (!err)
    err = im_buf_puts(b, "}]");
  if (!err && usage) {
    err = im_buf_puts(b, ",\"usage\":");
    if (!err)
      err = usage_json(b, usage);
  }
  return err ? err : im_buf_puts(b, "}\n\n");
}

/* The same with "logprobs": null before. */
static enum im_err chunk_tail(struct im_buf *b, const char *finish_reason,
                              const struct im_sim_usage *usage) {
  enum im_err err = im_buf_puts(b, "\"logprobs\":null,");
  return err ? err : finish_tail(b, finish_reason, usage);
}

enum im_err im_oai_chunk_lp(struct im_buf *b, const struct im_oai_ctx *c, const char *text,
                            size_t len, bool reasoning, const char *finish_reason,
                            const struct im_sim_usage *usage, const struct im_oai_lp *lp) {
  enum im_err err = head(b, c);
  if (err)
    return err;
  bool chat = c->kind == IM_API_CHAT;
  if (chat) {
    const char *field = !reasoning ? "content" : c->reasoning_new ? "reasoning" : "reasoning_content";
    err = im_buf_printf(b, "{\"index\":0,\"delta\":{\"%s\":\"", field);
  } else {
    err = im_buf_puts(b, "{\"index\":0,\"text\":\"");
  }
  if (!err)
    err = im_buf_json_escape(b, text, len);
  if (!err)
    err = im_buf_puts(b, chat ? "\"},\"logprobs\":" : "\",\"logprobs\":");
  if (!err)
    err = lp ? lp_json(b, chat, text, len, lp) : im_buf_puts(b, "null");
  if (!err)
    err = im_buf_puts(b, ",");
  return err ? err : finish_tail(b, finish_reason, usage);
}

enum im_err im_oai_chunk(struct im_buf *b, const struct im_oai_ctx *c, const char *text, size_t len,
                         bool reasoning, const char *finish_reason,
                         const struct im_sim_usage *usage) {
  return im_oai_chunk_lp(b, c, text, len, reasoning, finish_reason, usage, NULL);
}

enum im_err im_oai_role_chunk(struct im_buf *b, const struct im_oai_ctx *c) {
  enum im_err err = head(b, c);
  if (!err)
    err = im_buf_puts(b, "{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
                         "\"logprobs\":null,\"finish_reason\":null}]}\n\n");
  return err;
}

enum im_err im_oai_usage_chunk(struct im_buf *b, const struct im_oai_ctx *c,
                               const struct im_sim_usage *u) {
  enum im_err err = head(b, c);
  if (!err)
    err = im_buf_puts(b, "],\"usage\":");
  if (!err)
    err = usage_json(b, u);
  if (!err)
    err = im_buf_puts(b, "}\n\n");
  return err;
}

enum im_err im_oai_response(struct im_buf *b, const struct im_oai_ctx *c, const char *text,
                            size_t len, const char *reasoning, size_t rlen,
                            const char *finish_reason, const struct im_sim_usage *u) {
  bool chat = c->kind == IM_API_CHAT;
  enum im_err err = im_buf_printf(
      b, "{\"id\":\"%s\",\"object\":\"%s\",\"created\":%" PRId64 ",\"model\":\"%s\",\"choices\":[",
      c->id, chat ? "chat.completion" : "text_completion", c->created, c->model);
  if (!err && chat) {
    err = im_buf_puts(b, "{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"");
    if (!err)
      err = im_buf_json_escape(b, text, len);
    if (!err && reasoning) {
      err = im_buf_printf(b, "\",\"%s\":\"", c->reasoning_new ? "reasoning" : "reasoning_content");
      if (!err)
        err = im_buf_json_escape(b, reasoning, rlen);
    }
    if (!err)
      err = im_buf_puts(b, "\"},\"logprobs\":null,\"finish_reason\":");
  } else if (!err) {
    err = im_buf_puts(b, "{\"index\":0,\"text\":\"");
    if (!err)
      err = im_buf_json_escape(b, text, len);
    if (!err)
      err = im_buf_puts(b, "\",\"logprobs\":null,\"finish_reason\":");
  }
  if (!err)
    err = finish_str(b, finish_reason);
  if (!err)
    err = im_buf_puts(b, "}],\"usage\":");
  if (!err)
    err = usage_json(b, u);
  if (!err)
    err = im_buf_puts(b, "}");
  return err;
}

const char *im_oai_error_type(int status) {
  switch (status) {
  case 400: return "BadRequestError";
  case 401: return "AuthenticationError";
  case 404: return "NotFoundError";
  case 405: return "MethodNotAllowed";
  case 413: return "RequestEntityTooLarge";
  case 429: return "RateLimitError";
  case 431: return "RequestHeaderFieldsTooLarge";
  case 501: return "NotImplemented";
  case 503: return "ServiceUnavailableError";
  default: return status >= 500 ? "InternalServerError" : "BadRequestError";
  }
}

enum im_err im_oai_error(struct im_buf *b, int status, const char *message) {
  enum im_err err = im_buf_puts(b, "{\"error\":{\"message\":\"");
  if (!err)
    err = im_buf_json_escape(b, message, strlen(message));
  if (!err)
    err = im_buf_printf(b, "\",\"type\":\"%s\",\"param\":null,\"code\":%d}}",
                        im_oai_error_type(status), status);
  return err;
}

/* vLLM streams a tool call as delta.tool_calls[0]: the first delta with the
 * call's id ("chatcmpl-tool-..."), type "function" and function.name, the
 * following ones with pieces of function.arguments only (vLLM's
 * DeltaToolCall / InitialDeltaToolCall, entrypoints/openai/protocol.py;
 * vllm-project/vllm#8272 made the stream follow OpenAI's shape). Here the
 * first delta also carries the first piece, so every tool-call chunk
 * carries a token. */
enum im_err im_oai_tool_chunk(struct im_buf *b, const struct im_oai_ctx *c, const char *call_id,
                              const char *name, const char *args, size_t len,
                              const char *finish_reason, const struct im_sim_usage *usage) {
  enum im_err err = head(b, c);
  if (!err)
    err = im_buf_puts(b, "{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,");
  if (!err && name) {
    err = im_buf_printf(b, "\"id\":\"%s\",\"type\":\"function\",\"function\":{\"name\":\"", call_id);
    if (!err)
      err = im_buf_json_escape(b, name, strlen(name));
    if (!err)
      err = im_buf_puts(b, "\",");
  } else if (!err) {
    err = im_buf_puts(b, "\"function\":{");
  }
  if (!err)
    err = im_buf_puts(b, "\"arguments\":\"");
  if (!err)
    err = im_buf_json_escape(b, args, len);
  if (!err)
    err = im_buf_puts(b, "\"}}]},");
  return err ? err : chunk_tail(b, finish_reason, usage);
}
