/* Chat templates: the prompt text a server builds from a chat request.
 *
 * A chat request's prompt token count includes the template the server wraps
 * around the messages (turn markers, BOS, the generation prompt), so the
 * load generator renders the same text to count it. Only fixed built-in
 * formats are provided, not a general Jinja engine; each is written from the
 * model's published chat_template (tokenizer_config.json) and the source is
 * cited in chattmpl.c. Tool definitions, tool calls and tool results are not
 * rendered (those parts of the templates are omitted). Roles: ChatML and
 * Llama 3 write any role name as given; the DeepSeek formats know only
 * "system", "user" and "assistant" and, like their templates, render nothing
 * for other roles ("tool" outputs are among the omitted parts).
 * The functions are pure: no global state, thread-safe. */
#ifndef INFERMETER_CHATTMPL_H
#define INFERMETER_CHATTMPL_H

#include <stddef.h>

#include "core/buf.h"
#include "core/err.h"

enum im_chat_tmpl {
  IM_CHAT_NONE,        /* messages' contents concatenated, no markers */
  IM_CHAT_DEEPSEEK_V3, /* DeepSeek-V3 */
  IM_CHAT_DEEPSEEK_R1, /* DeepSeek-R1: V3's markers, reasoning stripped, "<think>\n" prompt */
  IM_CHAT_CHATML,      /* <|im_start|>role ... <|im_end|> (Qwen, many fine-tunes) */
  IM_CHAT_LLAMA3,      /* Llama 3 / 3.1 header format, without 3.1's default system text */
};

/* Longest message array im_chat_render_json accepts (bytes of JSON). */
#define IM_CHAT_JSON_MAX ((size_t)64 << 20)

/* Parses a template name: "none", "deepseek-v3", "deepseek-r1", "chatml",
 * "llama-3" (also "llama3"). Returns IM_PARSE for any other name (out
 * unchanged) and IM_INVAL for NULL arguments. */
enum im_err im_chat_tmpl_parse(const char *name, enum im_chat_tmpl *out) IM_WUR;

/* Canonical name of t ("none", "deepseek-v3", ...); "?" outside the enum. */
const char *im_chat_tmpl_name(enum im_chat_tmpl t);

/* One chat message; strings need not be NUL-terminated. */
struct im_chat_msg {
  const char *role;
  size_t role_len;
  const char *content;
  size_t content_len;
};

/* Appends to out the prompt text the server's template produces for
 * msgs[0..n), ending with the generation prompt (the assistant header): what
 * the model sees. out's existing content is kept. Returns IM_OK, IM_INVAL
 * (NULL out, or NULL msgs with n > 0, or an unknown t) or the buffer's error
 * (IM_LIMIT, IM_NOMEM), in which case out may hold part of the rendering. */
enum im_err im_chat_render(enum im_chat_tmpl t, const struct im_chat_msg *msgs, size_t n,
                           struct im_buf *out) IM_WUR;

/* Same from a JSON array of {"role": string, "content": string} objects, as
 * sent in a request body ("content": null counts as empty; other members are
 * ignored). Content given as an array of parts keeps the "text" parts,
 * joined with "\n" as vLLM does for string-content templates; other parts
 * (images, audio) are skipped. Returns IM_PARSE with a message in err
 * (errlen > 0) naming the fault and, for a bad element, its index, e.g.
 * "messages[2]: \"role\" is not a string"; IM_LIMIT when len exceeds
 * IM_CHAT_JSON_MAX; otherwise as im_chat_render. */
enum im_err im_chat_render_json(enum im_chat_tmpl t, const char *messages_json, size_t len,
                                struct im_buf *out, char *err, size_t errlen) IM_WUR;

#endif
