/* Tool calls and structured output of the simulated server: see
 * serve/toolcalls.h. */
#include "serve/toolcalls.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

void im_agent_policy_default(struct im_agent_policy *p) {
  p->call_prob = 1.0;
  p->max_hops = 8;
  p->args_tokens = 32;
  p->invalid_json = 0.0;
}

void im_agent_answer_cleanup(struct im_agent_answer *a) {
  if (!a)
    return;
  free(a->prefix);
  free(a->suffix);
  im_buf_cleanup(&a->piece);
  memset(a, 0, sizeof *a);
}

static const char *default_of(const char *type) {
  if (!strcmp(type, "number") || !strcmp(type, "integer"))
    return "1";
  if (!strcmp(type, "boolean"))
    return "true";
  if (!strcmp(type, "array"))
    return "[]";
  if (!strcmp(type, "object"))
    return "{}";
  if (!strcmp(type, "null"))
    return "null";
  return "\"\"";
}

/* prefix = {"<text key>":"   suffix = ","k2":v2,...}  (text key: the first
 * string property, else "answer"). */
static enum im_err json_shape(const char *schema_json, struct im_buf *pre, struct im_buf *suf) {
  json_t *schema = schema_json ? json_loads(schema_json, 0, NULL) : NULL;
  json_t *props = json_object_get(schema, "properties");
  const char *text_key = NULL, *key;
  json_t *v;
  json_object_foreach(props, key, v) {
    json_t *t = json_object_get(v, "type");
    if (!text_key && (!json_is_string(t) || !strcmp(json_string_value(t), "string")))
      text_key = key;
  }
  enum im_err err = im_buf_puts(pre, "{\"");
  if (!err)
    err = im_buf_json_escape(pre, text_key ? text_key : "answer",
                             strlen(text_key ? text_key : "answer"));
  if (!err)
    err = im_buf_puts(pre, "\":\"");
  if (!err)
    err = im_buf_puts(suf, "\"");
  json_object_foreach(props, key, v) {
    if (err || (text_key && !strcmp(key, text_key)))
      continue;
    json_t *t = json_object_get(v, "type");
    err = im_buf_puts(suf, ",\"");
    if (!err)
      err = im_buf_json_escape(suf, key, strlen(key));
    if (!err)
      err = im_buf_printf(suf, "\":%s", default_of(json_is_string(t) ? json_string_value(t) : ""));
  }
  if (!err)
    err = im_buf_puts(suf, "}");
  json_decref(schema);
  return err;
}

static char *take(struct im_buf *b) {
  char *s = b->data ? b->data : strdup("");
  b->data = NULL;
  b->len = 0;
  return s;
}

enum im_err im_agent_plan(const struct im_agent_policy *pol, const struct im_api_req *r,
                          struct im_rng *rng, struct im_agent_answer *a, uint32_t *target_tokens) {
  memset(a, 0, sizeof *a);
  im_buf_init(&a->piece, (size_t)64 << 20);
  *target_tokens = 0;
  struct im_buf pre, suf;
  im_buf_init(&pre, 1u << 20);
  im_buf_init(&suf, 1u << 20);
  enum im_err err = IM_OK;
  if (r->kind == IM_API_CHAT && r->n_tools && r->tool_name && !r->tool_choice_none &&
      r->n_tool_results < pol->max_hops && im_rng_uniform(rng) < pol->call_prob) {
    a->tool = true;
    snprintf(a->call_id, sizeof a->call_id, "chatcmpl-tool-%016" PRIx64, im_rng_u64(rng));
    snprintf(a->name, sizeof a->name, "%s", r->tool_name);
    double n = (double)pol->args_tokens * (0.5 + im_rng_uniform(rng));
    *target_tokens = n < 4 ? 4 : (uint32_t)n;
    err = im_buf_puts(&pre, "{\"query\":\"");
    if (!err)
      err = im_buf_puts(&suf, "\"}");
  } else if (r->response_format != IM_RESP_TEXT) {
    a->json = true;
    a->leave_open = pol->invalid_json > 0 && im_rng_uniform(rng) < pol->invalid_json;
    err = json_shape(r->response_format == IM_RESP_JSON_SCHEMA ? r->schema_json : NULL, &pre, &suf);
  }
  if (!err && im_agent_active(a)) {
    a->prefix = take(&pre);
    a->suffix = take(&suf);
    if (!a->prefix || !a->suffix)
      err = IM_NOMEM;
  }
  im_buf_cleanup(&pre);
  im_buf_cleanup(&suf);
  if (err)
    im_agent_answer_cleanup(a);
  return err;
}

enum im_err im_agent_chunk(struct im_buf *b, const struct im_oai_ctx *c, struct im_agent_answer *a,
                           const char *text, size_t len, const char *finish,
                           const struct im_sim_usage *usage) {
  struct im_buf *scratch = &a->piece;
  im_buf_reset(scratch);
  bool first = !a->started;
  bool close = finish && !strcmp(finish, "stop") && !a->leave_open;
  enum im_err err = first ? im_buf_puts(scratch, a->prefix) : IM_OK;
  if (!err)
    err = im_buf_json_escape(scratch, text, len);
  if (!err && close)
    err = im_buf_puts(scratch, a->suffix);
  if (err)
    return err;
  a->started = true;
  const char *fin = a->tool && finish && !strcmp(finish, "stop") ? "tool_calls" : finish;
  if (a->tool)
    return im_oai_tool_chunk(b, c, a->call_id, first ? a->name : NULL, scratch->data, scratch->len,
                             fin, usage);
  return im_oai_chunk(b, c, scratch->data, scratch->len, false, fin, usage);
}
