/* The HTTP Retry-After header (RFC 9110 §10.2.3), parsed strictly.
 *
 * Retry-After = HTTP-date / delay-seconds, where delay-seconds = 1*DIGIT and
 * HTTP-date (§5.6.7) is an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") or
 * one of the two obsolete forms a recipient must accept: RFC 850
 * ("Sunday, 06-Nov-94 08:49:37 GMT") and asctime ("Sun Nov  6 08:49:37
 * 1994"). Whitespace around the value is allowed; anything else (a sign, a
 * fraction, trailing text, an impossible date) is rejected.
 *
 * Thread safety: pure functions. */
#ifndef INFERMETER_RETRY_AFTER_H
#define INFERMETER_RETRY_AFTER_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* Delays saturate here (a year): a larger value is valid but meaningless. */
#define IM_RETRY_AFTER_MAX_S ((int64_t)366 * 24 * 3600)

/* Parses the field value v (n bytes, not NUL-terminated). now_s is the
 * current wall clock in Unix seconds, for a date. On IM_OK *delay_s is the
 * wait in seconds, in [0, IM_RETRY_AFTER_MAX_S] (a date in the past: 0).
 * IM_PARSE when v is neither form; *delay_s is then unchanged. */
enum im_err im_retry_after_parse(const char *v, size_t n, int64_t now_s, int64_t *delay_s) IM_WUR;

#endif
