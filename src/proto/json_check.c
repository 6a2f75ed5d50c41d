/* Structured-output checks: see proto/json_check.h. */
#include "proto/json_check.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static bool type_is(json_t *v, const char *t) {
  if (!strcmp(t, "object"))
    return json_is_object(v);
  if (!strcmp(t, "array"))
    return json_is_array(v);
  if (!strcmp(t, "string"))
    return json_is_string(v);
  if (!strcmp(t, "integer"))
    return json_is_integer(v);
  if (!strcmp(t, "number"))
    return json_is_number(v);
  if (!strcmp(t, "boolean"))
    return json_is_boolean(v);
  if (!strcmp(t, "null"))
    return json_is_null(v);
  return true; /* an unknown type name constrains nothing */
}

static bool type_ok(json_t *v, json_t *type) {
  if (json_is_string(type))
    return type_is(v, json_string_value(type));
  if (!json_is_array(type))
    return true;
  for (size_t i = 0; i < json_array_size(type); i++)
    if (json_is_string(json_array_get(type, i)) &&
        type_is(v, json_string_value(json_array_get(type, i))))
      return true;
  return false;
}

static bool check(json_t *v, json_t *schema, const char *path, char *why, size_t n, int depth) {
  if (!json_is_object(schema) || depth > 32)
    return true;
  json_t *type = json_object_get(schema, "type");
  if (type && !type_ok(v, type)) {
    snprintf(why, n, "%s: expected %s", *path ? path : "/",
             json_is_string(type) ? json_string_value(type) : "one of the listed types");
    return false;
  }
  json_t *en = json_object_get(schema, "enum");
  if (json_is_array(en)) {
    bool found = false;
    for (size_t i = 0; i < json_array_size(en) && !found; i++)
      found = json_equal(v, json_array_get(en, i));
    if (!found) {
      snprintf(why, n, "%s: not one of the enum's values", *path ? path : "/");
      return false;
    }
  }
  char sub[256];
  if (json_is_object(v)) {
    json_t *props = json_object_get(schema, "properties"),
           *req = json_object_get(schema, "required");
    for (size_t i = 0; json_is_array(req) && i < json_array_size(req); i++) {
      const char *k = json_string_value(json_array_get(req, i));
      if (k && !json_object_get(v, k)) {
        snprintf(why, n, "%s: required key \"%s\" missing", *path ? path : "/", k);
        return false;
      }
    }
    bool closed = json_is_false(json_object_get(schema, "additionalProperties"));
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
      json_t *ps = json_object_get(props, k);
      snprintf(sub, sizeof sub, "%s/%s", path, k);
      if (!ps && closed) {
        snprintf(why, n, "%s: not allowed (additionalProperties false)", sub);
        return false;
      }
      if (ps && !check(x, ps, sub, why, n, depth + 1))
        return false;
    }
  }
  json_t *items = json_object_get(schema, "items");
  if (json_is_array(v) && json_is_object(items))
    for (size_t i = 0; i < json_array_size(v); i++) {
      snprintf(sub, sizeof sub, "%s/%zu", path, i);
      if (!check(json_array_get(v, i), items, sub, why, n, depth + 1))
        return false;
    }
  return true;
}

bool im_json_conforms(const char *text, size_t len, const char *schema_json, char *why,
                      size_t why_len) {
  char dummy[8];
  if (!why || !why_len) {
    why = dummy;
    why_len = sizeof dummy;
  }
  why[0] = '\0';
  json_error_t e;
  json_t *v = json_loadb(text ? text : "", text ? len : 0, JSON_DECODE_ANY, &e);
  if (!v) {
    snprintf(why, why_len, "not JSON: %s at byte %d", e.text, e.position);
    return false;
  }
  bool ok;
  if (!schema_json) {
    ok = json_is_object(v);
    if (!ok)
      snprintf(why, why_len, "/: expected an object (json_object)");
  } else {
    json_t *schema = json_loads(schema_json, 0, &e);
    ok = schema != NULL;
    if (!ok)
      snprintf(why, why_len, "the schema is not JSON: %s", e.text);
    else
      ok = check(v, schema, "", why, why_len, 0);
    json_decref(schema);
  }
  json_decref(v);
  return ok;
}
