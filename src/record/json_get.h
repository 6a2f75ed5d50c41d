/* Typed reads of JSON values that may be absent or of another type, the
 * one copy every reader above uses (run directories, series, imports,
 * model descriptions, the HTML report). Each returns the value when it has
 * the type asked for, else the default given. Pure; any thread. */
#ifndef IM_RECORD_JSON_GET_H
#define IM_RECORD_JSON_GET_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

/* v as a number (integer or real), else dflt. */
double im_json_num(const json_t *v, double dflt);
/* o[key] as a number, else dflt. */
double im_json_num_of(const json_t *o, const char *key, double dflt);
/* o[key] as an integer (not a real), else dflt. */
int64_t im_json_int_of(const json_t *o, const char *key, int64_t dflt);
/* Whether o[key] is true (absent or anything else: false). */
bool im_json_true_of(const json_t *o, const char *key);
/* v as a string, else dflt. */
const char *im_json_str(const json_t *v, const char *dflt);

#endif
