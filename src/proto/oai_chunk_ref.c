/* The jansson version of the OpenAI chunk decoder: the reference that
 * tests/fuzz/fuzz_sse.c and tests/unit/test_oai_chunk.c compare
 * im_oai_chunk_decode against, and the baseline of bench/sse_speed.c.
 * Contract in src/proto/oai_chunk.h (im__oai_chunk_decode_jansson).
 *
 * It shares no code with src/proto/oai_chunk.c on purpose: the helpers below
 * (reset, "[DONE]" test, classification, choice of the reasoning field) are
 * written again from the header's contract, so that a slip in the fast
 * decoder is not mirrored here and hidden from the differential fuzzer. */
#include <jansson.h>
#include <string.h>

#include "proto/oai_chunk.h"

static const struct im_oai_str none = {NULL, 0};

static void ref_reset(struct im_oai_chunk *c) {
  c->kind = IM_OAI_CHUNK;
  c->cls = IM_OAI_EMPTY;
  c->object = IM_OAI_OBJ_OTHER;
  c->n_choices = 0;
  c->has_choice = 0;
  c->content = c->text = c->reasoning = c->role = c->finish_reason = none;
  c->n_tool_calls = 0;
  c->tool_calls_json = none;
  c->logprobs_json = none;
  c->has_usage = c->has_timings = 0;
  c->usage.prompt_tokens = c->usage.completion_tokens = c->usage.total_tokens = -1;
  c->usage.cached_tokens = c->usage.reasoning_tokens = -1;
  c->usage.cache_hit_tokens = c->usage.cache_miss_tokens = -1;
  c->timings.cache_n = c->timings.prompt_n = c->timings.predicted_n = -1;
  c->err_message = c->err_type = c->err_code = none;
  c->err_code_num = -1;
}

struct jref {
  char *scr;
  size_t scr_len;
};

static struct im_oai_str j_str(struct jref *r, json_t *v) {
  struct im_oai_str s = none;
  if (!json_is_string(v))
    return s;
  size_t n = json_string_length(v);
  memcpy(r->scr + r->scr_len, json_string_value(v), n);
  s.ptr = r->scr + r->scr_len;
  s.len = n;
  r->scr_len += n;
  return s;
}

static int64_t j_int(json_t *v) {
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

static void j_code(struct jref *r, json_t *v, struct im_oai_str *raw, int64_t *num) {
  *num = -1;
  *raw = none;
  if (json_is_string(v))
    *raw = j_str(r, v);
  else if (json_is_integer(v))
    *num = (int64_t)json_integer_value(v);
  /* The raw number text is not kept by jansson; left absent. */
}

/* The choice with index 0 (array position when "index" is not an integer). */
static void j_choice(struct im_oai_chunk *c, struct jref *r, json_t *choices) {
  c->n_choices = json_array_size(choices);
  for (size_t i = 0; i < c->n_choices; i++) {
    json_t *ch = json_array_get(choices, i);
    if (!json_is_object(ch))
      continue;
    json_t *idx = json_object_get(ch, "index");
    int64_t index = json_is_integer(idx) ? (int64_t)json_integer_value(idx) : (int64_t)i;
    if (index != 0)
      continue;
    struct im_oai_str rc = none, rs = none;
    json_t *delta = json_object_get(ch, "delta");
    if (json_is_object(delta)) {
      c->content = j_str(r, json_object_get(delta, "content"));
      rc = j_str(r, json_object_get(delta, "reasoning_content"));
      rs = j_str(r, json_object_get(delta, "reasoning"));
      c->role = j_str(r, json_object_get(delta, "role"));
      json_t *tc = json_object_get(delta, "tool_calls");
      if (json_is_array(tc))
        c->n_tool_calls = json_array_size(tc);
    }
    /* Prefer the non-empty one; a server sending both sends the same text. */
    c->reasoning = rc.len || (!rs.len && rc.ptr) ? rc : rs;
    c->text = j_str(r, json_object_get(ch, "text"));
    c->finish_reason = j_str(r, json_object_get(ch, "finish_reason"));
    c->has_choice = 1;
    return;
  }
}

static void j_error(struct im_oai_chunk *c, struct jref *r, json_t *e) {
  c->kind = IM_OAI_ERROR;
  c->err_message = j_str(r, json_object_get(e, "message"));
  c->err_type = j_str(r, json_object_get(e, "type"));
  j_code(r, json_object_get(e, "code"), &c->err_code, &c->err_code_num);
}

enum im_err im__oai_chunk_decode_jansson(struct im_oai_chunk *c, const char *data, size_t len) {
  ref_reset(c);
  if (len > c->max_len)
    return IM_LIMIT;
  if (im__oai_is_done(data, len)) {
    c->kind = IM_OAI_DONE;
    return IM_OK;
  }
  im_buf_reset(&c->scratch);
  enum im_err err = im_buf_reserve(&c->scratch, len);
  if (err)
    return err;
  struct jref r = {c->scratch.data, 0};
  json_error_t jerr;
  json_t *root = json_loadb(data, len, JSON_ALLOW_NUL, &jerr);
  if (!root)
    return IM_PARSE;
  if (!json_is_object(root)) {
    json_decref(root);
    return IM_PARSE;
  }
  json_t *v;
  if ((v = json_object_get(root, "object")) && json_is_string(v)) {
    const char *o = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 21 && memcmp(o, "chat.completion.chunk", 21) == 0)
      c->object = IM_OAI_OBJ_CHAT;
    else if (n == 15 && memcmp(o, "text_completion", 15) == 0)
      c->object = IM_OAI_OBJ_TEXT;
  }
  json_t *choices = json_object_get(root, "choices");
  if (json_is_array(choices))
    j_choice(c, &r, choices);
  json_t *u = json_object_get(root, "usage");
  if (json_is_object(u)) {
    c->has_usage = 1;
    c->usage.prompt_tokens = j_int(json_object_get(u, "prompt_tokens"));
    c->usage.completion_tokens = j_int(json_object_get(u, "completion_tokens"));
    c->usage.total_tokens = j_int(json_object_get(u, "total_tokens"));
    c->usage.cache_hit_tokens = j_int(json_object_get(u, "prompt_cache_hit_tokens"));
    c->usage.cache_miss_tokens = j_int(json_object_get(u, "prompt_cache_miss_tokens"));
    c->usage.cached_tokens =
        j_int(json_object_get(json_object_get(u, "prompt_tokens_details"), "cached_tokens"));
    c->usage.reasoning_tokens =
        j_int(json_object_get(json_object_get(u, "completion_tokens_details"), "reasoning_tokens"));
  }
  json_t *t = json_object_get(root, "timings");
  if (json_is_object(t)) {
    c->has_timings = 1;
    c->timings.cache_n = j_int(json_object_get(t, "cache_n"));
    c->timings.prompt_n = j_int(json_object_get(t, "prompt_n"));
    c->timings.predicted_n = j_int(json_object_get(t, "predicted_n"));
  }
  json_t *e = json_object_get(root, "error");
  json_t *ob = json_object_get(root, "object");
  if (json_is_string(e)) {
    c->kind = IM_OAI_ERROR;
    c->err_message = j_str(&r, e);
  } else if (json_is_object(e)) {
    j_error(c, &r, e);
  } else if (json_is_string(ob) && json_string_length(ob) == 5 &&
             memcmp(json_string_value(ob), "error", 5) == 0) {
    j_error(c, &r, root);
  }
  im__oai_classify(c);
  json_decref(root);
  return IM_OK;
}
