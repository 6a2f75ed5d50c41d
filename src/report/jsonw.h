/* Small helpers of the JSON renderers (jansson), shared by report/.
 *
 * Honest values: a figure that is undefined (NaN or infinite in the analysis
 * structs) is written as null, never dropped (jansson refuses NaN, and a
 * failed set would silently lose the key), and when the caller says why,
 * the reason goes into the same object's "null_reasons" object under the
 * figure's key: {"mean": null, "null_reasons": {"mean": "no samples"}}.
 *
 * Every function returns 0, or -1 when jansson could not allocate (the
 * object may then hold some of the keys). Not thread-safe per object. */
#ifndef IM_REPORT_JSONW_H
#define IM_REPORT_JSONW_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* obj[key] = v, or null (with `why` in obj.null_reasons when why != NULL). */
int im_jw_num(json_t *obj, const char *key, double v, const char *why);
/* obj[key] = v (clamped to INT64_MAX). */
int im_jw_uint(json_t *obj, const char *key, uint64_t v);
/* obj[key] = v. */
int im_jw_int(json_t *obj, const char *key, int64_t v);
/* A new empty object set as obj[key]; NULL on failure. */
json_t *im_jw_child(json_t *obj, const char *key);
/* A new empty array set as obj[key]; NULL on failure. */
json_t *im_jw_array(json_t *obj, const char *key);
/* The percentile word as vLLM's serve.py writes it (str(int(p)) when p is
 * whole, else Python's shortest repr): 99 -> "99", 99.9 -> "99.9". */
void im_jw_pct_word(double p, char *buf, size_t len);

#endif
