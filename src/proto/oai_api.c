#include "proto/oai_api.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"

/* Token ids are non-negative 32-bit signed values in every tokenizer we
 * know of (vLLM keeps them in int32 tensors). */
#define MAX_TOKEN_ID 2147483647LL

struct ctx {
  char *msg;
  size_t msg_len;
};

__attribute__((format(printf, 3, 4))) static enum im_err err_msg(struct ctx *c, enum im_err err,
                                                                 const char *fmt, ...) {
  if (c->msg && c->msg_len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, c->msg_len, fmt, ap);
    va_end(ap);
  }
  return err;
}

/* A field that is absent or null takes its default, as pydantic's Optional
 * fields do in vLLM. */
static json_t *get(json_t *obj, const char *key) {
  json_t *v = json_object_get(obj, key);
  return json_is_null(v) ? NULL : v;
}

/* An integer, or a real without a fractional part (pydantic's lax mode
 * accepts 16.0 for an int field). Booleans are not numbers in jansson. */
static bool as_int(json_t *v, int64_t *out) {
  if (json_is_integer(v)) {
    *out = (int64_t)json_integer_value(v);
    return true;
  }
  if (json_is_real(v)) {
    double d = json_real_value(v);
    /* 2^63 is exactly representable; anything at or past it overflows. */
    if (d != floor(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0)
      return false;
    *out = (int64_t)d;
    return true;
  }
  return false;
}

static char *dup_str(json_t *s) {
  size_t n = json_string_length(s);
  char *out = malloc(n + 1);
  if (out) {
    memcpy(out, json_string_value(s), n);
    out[n] = '\0';
  }
  return out;
}

static enum im_err opt_string(struct ctx *c, json_t *root, const char *key, bool nonempty,
                              char **out) {
  json_t *v = get(root, key);
  if (!v)
    return IM_OK;
  if (!json_is_string(v) || (nonempty && json_string_length(v) == 0))
    return err_msg(c, IM_INVAL, "'%s' must be a %sstring", key, nonempty ? "non-empty " : "");
  *out = dup_str(v);
  return *out ? IM_OK : err_msg(c, IM_NOMEM, "out of memory");
}

static enum im_err opt_bool(struct ctx *c, json_t *obj, const char *key, const char *label,
                            bool *out) {
  json_t *v = get(obj, key);
  if (!v)
    return IM_OK;
  if (!json_is_boolean(v))
    return err_msg(c, IM_INVAL, "'%s' must be a boolean", label);
  *out = json_is_true(v);
  return IM_OK;
}

/* An integer >= min; `what` completes "'key' must be ...". */
static enum im_err opt_int(struct ctx *c, json_t *root, const char *key, int64_t min,
                           const char *what, bool *present, int64_t *out) {
  json_t *v = get(root, key);
  int64_t x;
  if (!v)
    return IM_OK;
  if (!as_int(v, &x) || x < min)
    return err_msg(c, IM_INVAL, "'%s' must be %s", key, what);
  *out = x;
  if (present)
    *present = true;
  return IM_OK;
}

/* A number in [lo, hi], or (lo, hi] when lo_open; `what` completes
 * "'key' must be a number ...". */
static enum im_err opt_number(struct ctx *c, json_t *root, const char *key, double lo, bool lo_open,
                              double hi, const char *what, double *out) {
  json_t *v = get(root, key);
  if (!v)
    return IM_OK;
  double x = json_is_number(v) ? json_number_value(v) : NAN;
  if (!json_is_number(v) || !(lo_open ? x > lo : x >= lo) || !(x <= hi))
    return err_msg(c, IM_INVAL, "'%s' must be a number %s", key, what);
  *out = x;
  return IM_OK;
}

/* Token ids of a prompt: every element an integer in [0, 2^31). */
static enum im_err token_ids(struct ctx *c, json_t *arr, struct im_api_req *r) {
  size_t n = json_array_size(arr);
  if (n == 0)
    return err_msg(c, IM_INVAL, "'prompt' must not be empty");
  r->prompt_ids = malloc(n * sizeof *r->prompt_ids);
  if (!r->prompt_ids)
    return err_msg(c, IM_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(arr, i);
    if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) > MAX_TOKEN_ID)
      return err_msg(c, IM_INVAL,
                     "'prompt' token ids must be integers between 0 and %lld (element %zu)",
                     MAX_TOKEN_ID, i);
    r->prompt_ids[i] = (uint32_t)json_integer_value(e);
  }
  r->n_prompt_ids = n;
  return IM_OK;
}

/* prompt: "text" | ["text"] | [1, 2, 3] | [[1, 2, 3]] (OpenAI's four forms,
 * limited to one prompt). */
static enum im_err decode_prompt(struct ctx *c, json_t *root, struct im_api_req *r) {
  static const char bad[] = "'prompt' must be a string, an array of one string, an array of "
                            "token ids or an array of one array of token ids";
  json_t *v = get(root, "prompt");
  if (!v)
    return err_msg(c, IM_INVAL, "'prompt' is required");
  if (json_is_array(v)) {
    size_t n = json_array_size(v);
    if (n == 0)
      return err_msg(c, IM_INVAL, "'prompt' must not be empty");
    json_t *first = json_array_get(v, 0);
    if (json_is_integer(first))
      return token_ids(c, v, r);
    if (!json_is_string(first) && !json_is_array(first))
      return err_msg(c, IM_INVAL, "%s", bad);
    for (size_t i = 1; i < n; i++)
      if (json_typeof(json_array_get(v, i)) != json_typeof(first))
        return err_msg(c, IM_INVAL, "%s", bad);
    if (n > 1)
      return err_msg(c, IM_INVAL, "only one prompt per request is supported");
    if (json_is_array(first))
      return token_ids(c, first, r);
    v = first;
  }
  if (!json_is_string(v))
    return err_msg(c, IM_INVAL, "%s", bad);
  /* vLLM rejects an empty prompt ("Either prompt or prompt_embeds must be
   * provided and non-empty"). */
  if (json_string_length(v) == 0)
    return err_msg(c, IM_INVAL, "'prompt' must not be empty");
  r->prompt = dup_str(v);
  return r->prompt ? IM_OK : err_msg(c, IM_NOMEM, "out of memory");
}

/* content: "text" | null | [{"type": "text", "text": "..."}, ...]. Text
 * parts are joined with "\n" as vLLM's chat_utils does; other part types
 * (images, audio) are skipped. */
static enum im_err decode_content(struct ctx *c, json_t *v, size_t idx, char **out) {
  if (!v) {
    *out = strdup("");
  } else if (json_is_string(v)) {
    *out = dup_str(v);
  } else if (json_is_array(v)) {
    struct im_buf b;
    im_buf_init(&b, IM_OAI_CONTENT_MAX);
    bool first = true;
    for (size_t i = 0; i < json_array_size(v); i++) {
      json_t *part = json_array_get(v, i);
      json_t *type = json_object_get(part, "type");
      if (!json_is_object(part) || !json_is_string(type)) {
        im_buf_cleanup(&b);
        return err_msg(c, IM_INVAL,
                       "'messages[%zu].content[%zu]' must be an object with a string 'type'", idx,
                       i);
      }
      if (strcmp(json_string_value(type), "text") != 0)
        continue;
      json_t *text = json_object_get(part, "text");
      if (!json_is_string(text)) {
        im_buf_cleanup(&b);
        return err_msg(c, IM_INVAL, "'messages[%zu].content[%zu].text' must be a string", idx, i);
      }
      if ((!first && im_buf_append(&b, "\n", 1)) ||
          im_buf_append(&b, json_string_value(text), json_string_length(text))) {
        im_buf_cleanup(&b);
        return err_msg(c, IM_NOMEM, "out of memory");
      }
      first = false;
    }
    *out = b.data ? b.data : strdup("");
  } else {
    return err_msg(c, IM_INVAL,
                   "'messages[%zu].content' must be a string, null or an array of content parts",
                   idx);
  }
  return *out ? IM_OK : err_msg(c, IM_NOMEM, "out of memory");
}

static enum im_err decode_messages(struct ctx *c, json_t *root, struct im_api_req *r) {
  json_t *v = get(root, "messages");
  if (!v)
    return err_msg(c, IM_INVAL, "'messages' is required");
  if (!json_is_array(v) || json_array_size(v) == 0)
    return err_msg(c, IM_INVAL, "'messages' must be a non-empty array of objects");
  size_t n = json_array_size(v);
  r->messages = calloc(n, sizeof *r->messages);
  if (!r->messages)
    return err_msg(c, IM_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *m = json_array_get(v, i);
    if (!json_is_object(m))
      return err_msg(c, IM_INVAL, "'messages[%zu]' must be an object", i);
    json_t *role = json_object_get(m, "role");
    if (!json_is_string(role))
      return err_msg(c, IM_INVAL, "'messages[%zu].role' must be a string", i);
    struct im_api_msg *cm = &r->messages[i];
    r->n_messages = i + 1; /* so cleanup frees what this one gets */
    if (!(cm->role = dup_str(role)))
      return err_msg(c, IM_NOMEM, "out of memory");
    enum im_err err = decode_content(c, get(m, "content"), i, &cm->content);
    if (err)
      return err;
  }
  return IM_OK;
}

/* stream_options is only valid with stream = true: vLLM's
 * validate_stream_options rejects a non-empty stream_options otherwise. */
static enum im_err decode_stream(struct ctx *c, json_t *root, struct im_api_req *r) {
  enum im_err err = opt_bool(c, root, "stream", "stream", &r->stream);
  if (err)
    return err;
  json_t *so = get(root, "stream_options");
  if (!so)
    return IM_OK;
  if (!json_is_object(so))
    return err_msg(c, IM_INVAL, "'stream_options' must be an object");
  if (json_object_size(so) && !r->stream)
    return err_msg(c, IM_INVAL, "'stream_options' can only be given when 'stream' is true");
  if ((err = opt_bool(c, so, "include_usage", "stream_options.include_usage", &r->include_usage)))
    return err;
  return opt_bool(c, so, "continuous_usage_stats", "stream_options.continuous_usage_stats",
                  &r->continuous_usage);
}

/* OpenAI's logprobs fields: chat "logprobs" (boolean) and "top_logprobs"
 * (0..20, only with logprobs true); completions "logprobs" (0..5 in
 * OpenAI's API; vLLM accepts more, so 0..20 here). */
static enum im_err decode_logprobs(struct ctx *c, json_t *root, struct im_api_req *r) {
  enum im_err err;
  int64_t n = 0;
  bool has = false;
  if (r->kind == IM_API_CHAT) {
    if ((err = opt_bool(c, root, "logprobs", "logprobs", &r->want_logprobs)))
      return err;
    if ((err = opt_int(c, root, "top_logprobs", 0, "an integer between 0 and 20", &has, &n)))
      return err;
    if (has && !r->want_logprobs)
      return err_msg(c, IM_INVAL, "'top_logprobs' needs 'logprobs': true");
  } else {
    if ((err = opt_int(c, root, "logprobs", 0, "an integer between 0 and 20", &has, &n)))
      return err;
    r->want_logprobs = has;
  }
  if (n > 20)
    return err_msg(c, IM_INVAL, "'%s' must be an integer between 0 and 20",
                   r->kind == IM_API_CHAT ? "top_logprobs" : "logprobs");
  r->logprobs = (uint32_t)n;
  return IM_OK;
}

static enum im_err decode_sampling(struct ctx *c, json_t *root, struct im_api_req *r) {
  enum im_err err;
  int64_t n = 1;
  if ((err = opt_int(c, root, "max_tokens", 1, "a positive integer", NULL, &r->max_tokens)))
    return err;
  /* vLLM's chat request prefers max_completion_tokens over max_tokens; its
   * completions request has no such field (it is ignored there). */
  if (r->kind == IM_API_CHAT && (err = opt_int(c, root, "max_completion_tokens", 1,
                                               "a positive integer", NULL, &r->max_tokens)))
    return err;
  if ((err = opt_int(c, root, "min_tokens", 0, "a non-negative integer", NULL, &r->min_tokens)))
    return err;
  if ((err = opt_int(c, root, "seed", INT64_MIN, "an integer", &r->has_seed, &r->seed)))
    return err;
  if ((err = opt_int(c, root, "n", 1, "a positive integer", NULL, &n)))
    return err;
  if (n != 1)
    return err_msg(c, IM_INVAL, "'n' must be 1: only one choice per request is supported");
  if ((err =
           opt_number(c, root, "temperature", 0.0, false, 2.0, "between 0 and 2", &r->temperature)))
    return err;
  if ((err =
           opt_number(c, root, "top_p", 0.0, true, 1.0, "greater than 0 and at most 1", &r->top_p)))
    return err;
  if ((err = decode_logprobs(c, root, r)))
    return err;
  return opt_bool(c, root, "ignore_eos", "ignore_eos", &r->ignore_eos);
}

static enum im_err decode_root(struct ctx *c, json_t *root, struct im_api_req *r) {
  enum im_err err;
  if ((err = opt_string(c, root, "model", false, &r->model)))
    return err;
  if ((err = r->kind == IM_API_CHAT ? decode_messages(c, root, r) : decode_prompt(c, root, r)))
    return err;
  if ((err = decode_stream(c, root, r)))
    return err;
  if ((err = decode_sampling(c, root, r)))
    return err;
  /* vLLM: "Parameter 'cache_salt' must be a non-empty string if provided." */
  if ((err = opt_string(c, root, "cache_salt", true, &r->cache_salt)))
    return err;
  return opt_string(c, root, "user", false, &r->user);
}

enum im_err im_api_decode(enum im_api_kind kind, const char *body, size_t len,
                          struct im_api_req *out, char *msg, size_t msg_len) {
  struct ctx c = {msg, msg_len};
  enum im_err err;
  if (msg && msg_len)
    msg[0] = '\0';
  memset(out, 0, sizeof *out);
  out->kind = kind;
  out->max_tokens = -1;
  out->temperature = 1.0;
  out->top_p = 1.0;

  json_error_t jerr;
  /* Duplicate keys are accepted, the last one winning, as Python's json
   * module (and so vLLM) does. \u0000 is rejected: our strings are C strings. */
  json_t *root = json_loadb(body ? body : "", body ? len : 0, JSON_DECODE_ANY, &jerr);
  if (!root)
    return err_msg(&c, IM_PARSE, "request body is not valid JSON: %s (line %d, column %d, byte %d)",
                   jerr.text, jerr.line, jerr.column, jerr.position);
  if (!json_is_object(root))
    err = err_msg(&c, IM_PARSE, "request body must be a JSON object");
  else
    err = decode_root(&c, root, out);
  json_decref(root);
  if (err)
    im_api_req_cleanup(out);
  return err;
}

void im_api_req_cleanup(struct im_api_req *r) {
  if (!r)
    return;
  free(r->model);
  free(r->prompt);
  free(r->prompt_ids);
  for (size_t i = 0; i < r->n_messages; i++) {
    free(r->messages[i].role);
    free(r->messages[i].content);
  }
  free(r->messages);
  free(r->cache_salt);
  free(r->user);
  enum im_api_kind kind = r->kind;
  memset(r, 0, sizeof *r);
  r->kind = kind;
  r->max_tokens = -1;
  r->temperature = 1.0;
  r->top_p = 1.0;
}
