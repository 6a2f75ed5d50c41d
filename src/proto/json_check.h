/* Checks a structured-output answer (response_format, docs/agents.md
 * "Structured output"): the text must be one JSON value (an object for
 * json_object), and with a schema it must conform to the subset of JSON
 * Schema that structured outputs use: "type" (object, array, string,
 * number, integer, boolean, null, or an array of them), "properties"
 * (checked recursively for the keys present), "required", "items",
 * "enum" and "additionalProperties": false. Other keywords are not
 * checked. Thread-safe; allocates while parsing. */
#ifndef IM_PROTO_JSON_CHECK_H
#define IM_PROTO_JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* True when text conforms; else false with the reason in why (e.g. "not
 * JSON: ... at byte 12", "/count: expected integer"). schema_json NULL: any
 * JSON object. A schema that is not JSON fails every answer (why says so). */
bool im_json_conforms(const char *text, size_t len, const char *schema_json, char *why,
                      size_t why_len);

#endif
