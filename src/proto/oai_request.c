/* See proto/oai_request.h. */
#include "proto/oai_request.h"

#include <math.h>
#include <string.h>

/* The fields of a JSON object's text, appended after a comma (none for
 * NULL or an empty object). */
static enum im_err append_fields(struct im_buf *b, const char *obj) {
  if (!obj)
    return IM_OK;
  const char *open = strchr(obj, '{'), *close = strrchr(obj, '}');
  if (!open || !close || close <= open + 1)
    return IM_OK;
  enum im_err err = im_buf_puts(b, ",");
  return err ? err : im_buf_append(b, open + 1, (size_t)(close - open - 1));
}

enum im_err im_oai_body_encode(const struct im_oai_body *q, struct im_buf *b) {
  const char *model = q->model ? q->model : "";
  /* One allocation for the body: the prompt (with room for some escapes),
   * the model and the fixed fields (under 256 bytes without the JSON
   * objects passed through). */
  size_t text = q->prompt ? q->prompt_len : 0;
  if (q->chat && q->messages_json)
    text = strlen(q->messages_json);
  im_buf_reserve_hint(b, 256 + text + text / 8 + strlen(model) +
                             (q->run_json ? strlen(q->run_json) : 0) +
                             (q->extra_json ? strlen(q->extra_json) : 0));
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
  /* Appends, not printf: its format parsing was half of this encoder's
   * cost per request (about 1,500 of 2,700 instructions). */
  if (!err)
    err = im_buf_puts(b, ",\"max_tokens\":");
  if (!err)
    err = im_buf_put_u64(b, q->max_tokens);
  if (!err)
    err = im_buf_puts(b, ",\"stream\":true,\"stream_options\":{\"include_usage\":true");
  if (!err && q->continuous_usage)
    err = im_buf_puts(b, ",\"continuous_usage_stats\":true");
  if (!err)
    err = im_buf_puts(b, "}");
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
  if (!err && q->reasoning_effort) {
    err = im_buf_puts(b, ",\"reasoning_effort\":\"");
    if (!err)
      err = im_buf_json_escape(b, q->reasoning_effort, strlen(q->reasoning_effort));
    if (!err)
      err = im_buf_puts(b, "\"");
  }
  if (!err && q->thinking)
    err = im_buf_printf(b, ",\"thinking\":{\"type\":\"%s\"},\"chat_template_kwargs\":{\"thinking\":%s}",
                        q->thinking > 0 ? "enabled" : "disabled", q->thinking > 0 ? "true" : "false");
  /* The run's fields, then a dataset's `extra` object: its fields go last
   * (servers that keep the last of duplicate keys let them override ours). */
  if (!err)
    err = append_fields(b, q->run_json);
  if (!err)
    err = append_fields(b, q->extra_json);
  if (!err)
    err = im_buf_puts(b, "}");
  return err;
}
