/* Built-in chat templates.
 *
 * Each format below is a transcription, into C, of what the model's Jinja
 * chat_template in its Hugging Face tokenizer_config.json produces with
 * add_generation_prompt=true. Sources:
 *   - DeepSeek-V3: deepseek-ai/DeepSeek-V3, tokenizer_config.json. BOS, then
 *     the system prompts (several are joined with "\n\n"), then
 *     "<｜User｜>" + content for user turns and "<｜Assistant｜>" + content +
 *     "<｜end▁of▁sentence｜>" for assistant turns; a run of tool results
 *     inside tool-outputs markers (an assistant's tool_calls are not
 *     rendered: messages carry role and content only); no newlines
 *     between turns; the
 *     generation prompt is "<｜Assistant｜>". The bars are U+FF5C (fullwidth
 *     vertical line) and the word separators U+2581 (lower one eighth block).
 *   - DeepSeek-R1: deepseek-ai/DeepSeek-R1, tokenizer_config.json. The same
 *     markers; an assistant turn keeps only the text after its last
 *     "</think>" (content.split('</think>')[-1]), and the generation prompt
 *     is "<｜Assistant｜><think>\n" (the template revision that forces the
 *     reasoning block open).
 *   - ChatML: "<|im_start|>" + role + "\n" + content + "<|im_end|>\n" per
 *     message, generation prompt "<|im_start|>assistant\n" (the plain ChatML
 *     form; Qwen's templates add a default system message when none is given,
 *     which this format does not).
 *   - Llama 3: meta-llama/Meta-Llama-3-8B-Instruct, tokenizer_config.json.
 *     "<|begin_of_text|>" before the first message, each message
 *     "<|start_header_id|>" + role + "<|end_header_id|>\n\n" +
 *     trim(content) + "<|eot_id|>", generation prompt
 *     "<|start_header_id|>assistant<|end_header_id|>\n\n". Jinja's trim
 *     strips leading and trailing whitespace. */
#include "text/chattmpl.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* U+FF5C is EF BD 9C in UTF-8, U+2581 is E2 96 81. */
#define FW_BAR "\xef\xbd\x9c"
#define LOW_BLK "\xe2\x96\x81"
#define DS_BOS "<" FW_BAR "begin" LOW_BLK "of" LOW_BLK "sentence" FW_BAR ">"
#define DS_EOS "<" FW_BAR "end" LOW_BLK "of" LOW_BLK "sentence" FW_BAR ">"
#define DS_USER "<" FW_BAR "User" FW_BAR ">"
#define DS_ASSISTANT "<" FW_BAR "Assistant" FW_BAR ">"
/* Tool results (role "tool"), as DeepSeek-V3's template wraps them: a run
 * of consecutive tool messages inside outputs begin/end, each output inside
 * output begin/end, later ones after a newline. */
#define DS_TOOL_OUTPUTS_BEGIN "<" FW_BAR "tool" LOW_BLK "outputs" LOW_BLK "begin" FW_BAR ">"
#define DS_TOOL_OUTPUTS_END "<" FW_BAR "tool" LOW_BLK "outputs" LOW_BLK "end" FW_BAR ">"
#define DS_TOOL_OUTPUT_BEGIN "<" FW_BAR "tool" LOW_BLK "output" LOW_BLK "begin" FW_BAR ">"
#define DS_TOOL_OUTPUT_END "<" FW_BAR "tool" LOW_BLK "output" LOW_BLK "end" FW_BAR ">"
#define THINK_END "</think>"

static const struct {
  const char *name;
  enum im_chat_tmpl t;
} names[] = {
    {"none", IM_CHAT_NONE},
    {"deepseek-v3", IM_CHAT_DEEPSEEK_V3},
    {"deepseek-r1", IM_CHAT_DEEPSEEK_R1},
    {"chatml", IM_CHAT_CHATML},
    {"llama-3", IM_CHAT_LLAMA3},
    {"llama3", IM_CHAT_LLAMA3},
};

enum im_err im_chat_tmpl_parse(const char *name, enum im_chat_tmpl *out) {
  if (!name || !out)
    return IM_INVAL;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(name, names[i].name) == 0) {
      *out = names[i].t;
      return IM_OK;
    }
  return IM_PARSE;
}

const char *im_chat_tmpl_name(enum im_chat_tmpl t) {
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].t == t)
      return names[i].name;
  return "?";
}

static bool role_is(const struct im_chat_msg *m, const char *r) {
  size_t n = strlen(r);
  return m->role_len == n && (n == 0 || memcmp(m->role, r, n) == 0);
}

/* Text after the last "</think>", or all of it when there is none. */
static void strip_reasoning(const char **s, size_t *n) {
  const size_t k = sizeof THINK_END - 1;
  if (*n < k)
    return;
  for (size_t i = *n - k + 1; i-- > 0;)
    if (memcmp(*s + i, THINK_END, k) == 0) {
      *s += i + k;
      *n -= i + k;
      return;
    }
}

static enum im_err render_deepseek(bool r1, const struct im_chat_msg *msgs, size_t n,
                                   struct im_buf *out) {
  enum im_err err = im_buf_puts(out, DS_BOS);
  bool first_sys = true;
  for (size_t i = 0; !err && i < n; i++) {
    if (!role_is(&msgs[i], "system"))
      continue;
    if (!first_sys)
      err = im_buf_puts(out, "\n\n");
    if (!err)
      err = im_buf_append(out, msgs[i].content, msgs[i].content_len);
    first_sys = false;
  }
  for (size_t i = 0; !err && i < n; i++) {
    const struct im_chat_msg *m = &msgs[i];
    if (role_is(m, "user")) {
      err = im_buf_puts(out, DS_USER);
      if (!err)
        err = im_buf_append(out, m->content, m->content_len);
    } else if (role_is(m, "assistant")) {
      const char *c = m->content;
      size_t cn = m->content_len;
      if (r1)
        strip_reasoning(&c, &cn);
      err = im_buf_puts(out, DS_ASSISTANT);
      if (!err)
        err = im_buf_append(out, c, cn);
      if (!err)
        err = im_buf_puts(out, DS_EOS);
    } else if (role_is(m, "tool")) {
      bool first = i == 0 || !role_is(&msgs[i - 1], "tool");
      bool last = i + 1 == n || !role_is(&msgs[i + 1], "tool");
      err = im_buf_puts(out, first ? DS_TOOL_OUTPUTS_BEGIN DS_TOOL_OUTPUT_BEGIN
                                   : "\n" DS_TOOL_OUTPUT_BEGIN);
      if (!err)
        err = im_buf_append(out, m->content, m->content_len);
      if (!err)
        err = im_buf_puts(out, last ? DS_TOOL_OUTPUT_END DS_TOOL_OUTPUTS_END : DS_TOOL_OUTPUT_END);
    }
  }
  if (!err)
    err = im_buf_puts(out, r1 ? DS_ASSISTANT "<think>\n" : DS_ASSISTANT);
  return err;
}

static enum im_err render_chatml(const struct im_chat_msg *msgs, size_t n, struct im_buf *out) {
  enum im_err err = IM_OK;
  for (size_t i = 0; !err && i < n; i++) {
    err = im_buf_puts(out, "<|im_start|>");
    if (!err)
      err = im_buf_append(out, msgs[i].role, msgs[i].role_len);
    if (!err)
      err = im_buf_puts(out, "\n");
    if (!err)
      err = im_buf_append(out, msgs[i].content, msgs[i].content_len);
    if (!err)
      err = im_buf_puts(out, "<|im_end|>\n");
  }
  if (!err)
    err = im_buf_puts(out, "<|im_start|>assistant\n");
  return err;
}

/* Jinja's trim: Python's str.strip() with no argument (Unicode whitespace;
 * only ASCII whitespace is stripped here, the rest is rare in prompts). */
static bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static enum im_err render_llama3(const struct im_chat_msg *msgs, size_t n, struct im_buf *out) {
  enum im_err err = n ? im_buf_puts(out, "<|begin_of_text|>") : IM_OK;
  for (size_t i = 0; !err && i < n; i++) {
    const char *c = msgs[i].content;
    size_t cn = msgs[i].content_len;
    while (cn && is_space(*c))
      c++, cn--;
    while (cn && is_space(c[cn - 1]))
      cn--;
    err = im_buf_puts(out, "<|start_header_id|>");
    if (!err)
      err = im_buf_append(out, msgs[i].role, msgs[i].role_len);
    if (!err)
      err = im_buf_puts(out, "<|end_header_id|>\n\n");
    if (!err)
      err = im_buf_append(out, c, cn);
    if (!err)
      err = im_buf_puts(out, "<|eot_id|>");
  }
  if (!err)
    err = im_buf_puts(out, "<|start_header_id|>assistant<|end_header_id|>\n\n");
  return err;
}

enum im_err im_chat_render(enum im_chat_tmpl t, const struct im_chat_msg *msgs, size_t n,
                           struct im_buf *out) {
  if (!out || (n && !msgs))
    return IM_INVAL;
  for (size_t i = 0; i < n; i++)
    if ((msgs[i].role_len && !msgs[i].role) || (msgs[i].content_len && !msgs[i].content))
      return IM_INVAL;
  switch (t) {
  case IM_CHAT_NONE: {
    enum im_err err = IM_OK;
    for (size_t i = 0; !err && i < n; i++)
      err = im_buf_append(out, msgs[i].content, msgs[i].content_len);
    return err;
  }
  case IM_CHAT_DEEPSEEK_V3:
    return render_deepseek(false, msgs, n, out);
  case IM_CHAT_DEEPSEEK_R1:
    return render_deepseek(true, msgs, n, out);
  case IM_CHAT_CHATML:
    return render_chatml(msgs, n, out);
  case IM_CHAT_LLAMA3:
    return render_llama3(msgs, n, out);
  }
  return IM_INVAL;
}

/* The text of a content value: a string, null (empty), or an array of parts
 * whose "text" parts are joined with "\n" into scratch. For parts, *s is
 * left NULL and *off is where the text starts in scratch (scratch may move
 * while later messages grow it, so pointers are taken at the end). */
static enum im_err content_of(json_t *c, size_t idx, struct im_buf *scratch, const char **s,
                              size_t *n, size_t *off, char *err, size_t errlen) {
  if (!c || json_is_null(c)) {
    *s = "";
    *n = 0;
    return IM_OK;
  }
  if (json_is_string(c)) {
    *s = json_string_value(c);
    *n = json_string_length(c);
    return IM_OK;
  }
  if (!json_is_array(c))
    return im_errf(err, errlen, IM_PARSE,
                "messages[%zu]: \"content\" is neither a string, null nor an array of parts", idx);
  size_t start = scratch->len, k;
  bool any = false;
  json_t *part;
  json_array_foreach(c, k, part) {
    json_t *type = json_object_get(part, "type");
    json_t *text = json_object_get(part, "text");
    if (!json_is_object(part) || !json_is_string(type))
      return im_errf(err, errlen, IM_PARSE, "messages[%zu].content[%zu]: not a {\"type\": ...} part",
                  idx, k);
    if (strcmp(json_string_value(type), "text") != 0)
      continue;
    if (!json_is_string(text))
      return im_errf(err, errlen, IM_PARSE, "messages[%zu].content[%zu]: \"text\" is not a string",
                  idx, k);
    enum im_err e = any ? im_buf_puts(scratch, "\n") : IM_OK;
    if (!e)
      e = im_buf_append(scratch, json_string_value(text), json_string_length(text));
    if (e)
      return e;
    any = true;
  }
  *s = NULL;
  *off = start;
  *n = scratch->len - start;
  return IM_OK;
}

enum im_err im_chat_render_json(enum im_chat_tmpl t, const char *messages_json, size_t len,
                                struct im_buf *out, char *err, size_t errlen) {
  if (err && errlen)
    err[0] = '\0';
  if (!messages_json || !out)
    return im_errf(err, errlen, IM_INVAL, "messages: NULL argument");
  if (len > IM_CHAT_JSON_MAX)
    return im_errf(err, errlen, IM_LIMIT, "messages: %zu bytes, over the %zu-byte limit", len,
                IM_CHAT_JSON_MAX);
  json_error_t je;
  json_t *root = json_loadb(messages_json, len, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return im_errf(err, errlen, IM_PARSE, "messages: invalid JSON at line %d column %d: %s", je.line,
                je.column, je.text);
  enum im_err e = IM_OK;
  struct im_chat_msg *msgs = NULL;
  size_t *offs = NULL;
  struct im_buf scratch;
  im_buf_init(&scratch, IM_CHAT_JSON_MAX);
  if (!json_is_array(root)) {
    e = im_errf(err, errlen, IM_PARSE,
             "messages: not a JSON array of {\"role\", \"content\"} objects");
    goto out;
  }
  size_t n = json_array_size(root);
  msgs = calloc(n ? n : 1, sizeof *msgs);
  offs = calloc(n ? n : 1, sizeof *offs);
  if (!msgs || !offs) {
    e = IM_NOMEM;
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *m = json_array_get(root, i);
    if (!json_is_object(m)) {
      e = im_errf(err, errlen, IM_PARSE, "messages[%zu]: not an object", i);
      goto out;
    }
    json_t *role = json_object_get(m, "role");
    if (!json_is_string(role)) {
      e = im_errf(err, errlen, IM_PARSE, "messages[%zu]: \"role\" is %s", i,
               role ? "not a string" : "missing");
      goto out;
    }
    msgs[i].role = json_string_value(role);
    msgs[i].role_len = json_string_length(role);
    json_t *c = json_object_get(m, "content");
    e = content_of(c, i, &scratch, &msgs[i].content, &msgs[i].content_len, &offs[i], err, errlen);
    if (e)
      goto out;
  }
  for (size_t i = 0; i < n; i++)
    if (!msgs[i].content)
      msgs[i].content = msgs[i].content_len ? scratch.data + offs[i] : "";
  e = im_chat_render(t, msgs, n, out);
  if (e == IM_INVAL)
    (void)im_errf(err, errlen, e, "messages: unknown chat template %d", (int)t);
out:
  im_buf_cleanup(&scratch);
  free(offs);
  free(msgs);
  json_decref(root);
  return e;
}
