/* Request fields of reasoning models, tool calling and structured output,
 * decoded for the built-in server (proto/oai_api.h calls this last):
 *
 *   reasoning_effort  "none" | "minimal" | "low" | "medium" | "high" | "max"
 *                     (DeepSeek API guides/thinking_mode: low/high/max, with
 *                     minimal mapped to low and medium to high; vLLM's
 *                     ChatCompletionRequest: low/medium/high); minimal is
 *                     taken as low;
 *   thinking          {"type": "enabled" | "disabled"} (DeepSeek API, same
 *                     guide), or chat_template_kwargs.thinking /
 *                     .enable_thinking (vLLM docs features/reasoning_outputs:
 *                     DeepSeek-V3.1 and Qwen3 templates); the first found
 *                     in that order wins;
 *   tools             [{"type": "function", "function": {"name": ...}}]
 *                     (OpenAI schema); role "tool" messages are counted;
 *   tool_choice       "none" is noted (the other values: a tool may be called);
 *   response_format   {"type": "text" | "json_object" | "json_schema",
 *                     "json_schema": {"schema": {...}}} (OpenAI; vLLM's
 *                     structured outputs).
 * Internal to proto (im__): a wrong type or value is IM_INVAL with a
 * message naming the field. */
#ifndef IM_PROTO_OAI_API_EXT_H
#define IM_PROTO_OAI_API_EXT_H

#include <stddef.h>

#include <jansson.h>

#include "core/err.h"
#include "proto/oai_api.h"

enum im_err im__api_decode_ext(json_t *root, struct im_api_req *r, char *msg,
                               size_t msg_len) IM_WUR;

/* The JSON name of an effort ("" for unset). */
const char *im_effort_name(enum im_effort e);
/* Parses a reasoning_effort name (minimal -> low); -1 when unknown. */
int im_effort_parse(const char *s);

#endif
