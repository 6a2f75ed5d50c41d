/* Typed reads of JSON values (record/json_get.h). */
#include "record/json_get.h"

double im_json_num(const json_t *v, double dflt) {
  return json_is_number(v) ? json_number_value(v) : dflt;
}

double im_json_num_of(const json_t *o, const char *key, double dflt) {
  return im_json_num(json_object_get(o, key), dflt);
}

int64_t im_json_int_of(const json_t *o, const char *key, int64_t dflt) {
  const json_t *v = json_object_get(o, key);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

bool im_json_true_of(const json_t *o, const char *key) {
  return json_is_true(json_object_get(o, key));
}

const char *im_json_str(const json_t *v, const char *dflt) {
  return json_is_string(v) ? json_string_value(v) : dflt;
}
