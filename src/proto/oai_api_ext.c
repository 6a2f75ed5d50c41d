/* Reasoning, tool and structured-output request fields: see
 * proto/oai_api_ext.h. */
#include "proto/oai_api_ext.h"

#include <stdlib.h>
#include <string.h>

static const char *const effort_names[] = {"", "none", "low", "medium", "high", "max"};

const char *im_effort_name(enum im_effort e) {
  return (unsigned)e < sizeof effort_names / sizeof *effort_names ? effort_names[e] : "";
}

int im_effort_parse(const char *s) {
  if (!strcmp(s, "minimal"))
    return IM_EFFORT_LOW;
  for (int i = 1; i < (int)(sizeof effort_names / sizeof *effort_names); i++)
    if (!strcmp(s, effort_names[i]))
      return i;
  return -1;
}

static json_t *get(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_null(v) ? NULL : v;
}

static enum im_err decode_thinking(json_t *root, struct im_api_req *r, char *msg, size_t len) {
  json_t *t = get(root, "thinking");
  if (t) {
    json_t *type = json_object_get(t, "type");
    const char *v = json_is_string(type) ? json_string_value(type) : "";
    if (!json_is_object(t) || (strcmp(v, "enabled") && strcmp(v, "disabled")))
      return im_errf(msg, len, IM_INVAL,
                     "'thinking' must be {\"type\": \"enabled\"} or {\"type\": \"disabled\"}");
    r->thinking = !strcmp(v, "enabled") ? 1 : -1;
    return IM_OK;
  }
  json_t *kw = get(root, "chat_template_kwargs");
  if (!kw)
    return IM_OK;
  if (!json_is_object(kw))
    return im_errf(msg, len, IM_INVAL, "'chat_template_kwargs' must be an object");
  static const char *const keys[] = {"thinking", "enable_thinking"};
  for (size_t i = 0; i < 2; i++) {
    json_t *b = get(kw, keys[i]);
    if (!b)
      continue;
    if (!json_is_boolean(b))
      return im_errf(msg, len, IM_INVAL, "'chat_template_kwargs.%s' must be a boolean", keys[i]);
    r->thinking = json_is_true(b) ? 1 : -1;
    return IM_OK;
  }
  return IM_OK;
}

static enum im_err decode_tools(json_t *root, struct im_api_req *r, char *msg, size_t len) {
  json_t *tools = get(root, "tools");
  if (!tools)
    return IM_OK;
  if (!json_is_array(tools))
    return im_errf(msg, len, IM_INVAL, "'tools' must be an array");
  for (size_t i = 0; i < json_array_size(tools); i++) {
    json_t *t = json_array_get(tools, i), *type = json_object_get(t, "type");
    json_t *fn = json_object_get(t, "function"), *name = json_object_get(fn, "name");
    if (!json_is_object(t) || !json_is_string(type) ||
        strcmp(json_string_value(type), "function") || !json_is_object(fn) ||
        !json_is_string(name) || !json_string_length(name))
      return im_errf(msg, len, IM_INVAL,
                     "'tools[%zu]' must be {\"type\": \"function\", \"function\": {\"name\": ...}}",
                     i);
    if (!r->tool_name && !(r->tool_name = strdup(json_string_value(name))))
      return IM_NOMEM;
    r->n_tools++;
  }
  json_t *choice = get(root, "tool_choice");
  if (choice && !json_is_string(choice) && !json_is_object(choice))
    return im_errf(msg, len, IM_INVAL, "'tool_choice' must be a string or an object");
  r->tool_choice_none = json_is_string(choice) && !strcmp(json_string_value(choice), "none");
  for (size_t i = 0; i < r->n_messages; i++)
    r->n_tool_results += r->messages[i].role && !strcmp(r->messages[i].role, "tool");
  return IM_OK;
}

static enum im_err decode_format(json_t *root, struct im_api_req *r, char *msg, size_t len) {
  json_t *f = get(root, "response_format");
  if (!f)
    return IM_OK;
  json_t *type = json_object_get(f, "type");
  const char *t = json_is_string(type) ? json_string_value(type) : NULL;
  if (!json_is_object(f) || !t)
    return im_errf(msg, len, IM_INVAL, "'response_format' must be an object with a string 'type'");
  if (!strcmp(t, "text"))
    return IM_OK;
  if (!strcmp(t, "json_object")) {
    r->response_format = IM_RESP_JSON_OBJECT;
    return IM_OK;
  }
  if (strcmp(t, "json_schema"))
    return im_errf(msg, len, IM_INVAL,
                   "'response_format.type' must be text, json_object or json_schema");
  json_t *js = get(f, "json_schema"), *schema = js ? get(js, "schema") : NULL;
  if (!json_is_object(js) || (schema && !json_is_object(schema)))
    return im_errf(msg, len, IM_INVAL,
                   "'response_format.json_schema' must be an object whose 'schema' is an object");
  r->response_format = IM_RESP_JSON_SCHEMA;
  if (schema && !(r->schema_json = json_dumps(schema, JSON_COMPACT | JSON_SORT_KEYS)))
    return IM_NOMEM;
  return IM_OK;
}

enum im_err im__api_decode_ext(json_t *root, struct im_api_req *r, char *msg, size_t len) {
  json_t *e = get(root, "reasoning_effort");
  if (e) {
    int v = json_is_string(e) ? im_effort_parse(json_string_value(e)) : -1;
    if (v < 0)
      return im_errf(msg, len, IM_INVAL,
                     "'reasoning_effort' must be one of none, minimal, low, medium, high, max");
    r->effort = (enum im_effort)v;
  }
  enum im_err err = decode_thinking(root, r, msg, len);
  if (!err)
    err = decode_tools(root, r, msg, len);
  if (!err)
    err = decode_format(root, r, msg, len);
  return err;
}
