/* See proto/oai_request.h. */
#include "proto/oai_request.h"

#include <math.h>
#include <string.h>

enum im_err im_oai_body_encode(const struct im_oai_body *q, struct im_buf *b) {
  const char *model = q->model ? q->model : "";
  enum im_err err = im_buf_puts(b, "{\"model\":\"");
  if (!err)
    err = im_buf_json_escape(b, model, strlen(model));
  if (!err && q->chat && q->messages_json) {
    err = im_buf_puts(b, "\",\"messages\":");
    if (!err)
      err = im_buf_puts(b, q->messages_json);
  } else {
    if (!err)
      err = im_buf_puts(b, q->chat ? "\",\"messages\":[{\"role\":\"user\",\"content\":\""
                                   : "\",\"prompt\":\"");
    if (!err)
      err = im_buf_json_escape(b, q->prompt ? q->prompt : "", q->prompt ? q->prompt_len : 0);
    if (!err)
      err = im_buf_puts(b, q->chat ? "\"}]" : "\"");
  }
  if (!err)
    err = im_buf_printf(b,
                        ",\"max_tokens\":%u,\"stream\":true,\"stream_options\":"
                        "{\"include_usage\":true%s}",
                        q->max_tokens, q->continuous_usage ? ",\"continuous_usage_stats\":true" : "");
  if (!err && q->ignore_eos)
    err = im_buf_puts(b, ",\"ignore_eos\":true");
  if (!err && !isnan(q->temperature))
    err = im_buf_printf(b, ",\"temperature\":%.17g", q->temperature);
  if (!err && !isnan(q->top_p))
    err = im_buf_printf(b, ",\"top_p\":%.17g", q->top_p);
  if (!err && q->logprobs)
    err = q->chat ? im_buf_printf(b, ",\"logprobs\":true,\"top_logprobs\":%u", q->logprobs)
                  : im_buf_printf(b, ",\"logprobs\":%u", q->logprobs);
  if (!err && q->cache_salt) {
    err = im_buf_puts(b, ",\"cache_salt\":\"");
    if (!err)
      err = im_buf_json_escape(b, q->cache_salt, strlen(q->cache_salt));
    if (!err)
      err = im_buf_puts(b, "\"");
  }
  /* A dataset's `extra` object: its fields go last (servers that keep the
   * last of duplicate keys let them override ours). */
  if (!err && q->extra_json) {
    const char *open = strchr(q->extra_json, '{'), *close = strrchr(q->extra_json, '}');
    if (open && close && close > open + 1) {
      err = im_buf_puts(b, ",");
      if (!err)
        err = im_buf_append(b, open + 1, (size_t)(close - open - 1));
    }
  }
  if (!err)
    err = im_buf_puts(b, "}");
  return err;
}
