/* A growable byte buffer with a hard cap.
 *
 * Every buffer has a maximum, stated where it is initialised: appending past
 * `max` fails with IM_LIMIT and leaves the buffer unchanged, so a hostile peer
 * cannot make us allocate without bound. There is no unbounded buffer: a cap
 * of 0 holds nothing (every non-empty append fails). The data is always
 * NUL-terminated (the terminator is not counted in len). */
#ifndef INFERMETER_BUF_H
#define INFERMETER_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/err.h"

struct im_buf {
  char *data; /* NULL until the first append */
  size_t len;
  size_t cap;
  size_t max; /* maximum len */
};

/* Initialises an empty buffer that may grow to max bytes (at most
 * SIZE_MAX/2; larger is taken as SIZE_MAX/2). Allocates nothing. */
void im_buf_init(struct im_buf *b, size_t max);
/* Frees the storage; the buffer may be reused after im_buf_init. NULL ok. */
void im_buf_cleanup(struct im_buf *b);
/* Makes room for `extra` more bytes (plus the terminator). */
enum im_err im_buf_reserve(struct im_buf *b, size_t extra) IM_WUR;
/* Appends len bytes of data / the string s. Inline: the builder and the
 * record writer append a few hundred short pieces per request, and the call
 * and its checks were most of their cost; a piece that needs the buffer to
 * grow (or fails) takes im__buf_append_grow. */
enum im_err im__buf_append_grow(struct im_buf *b, const void *data, size_t len) IM_WUR;
static inline IM_WUR enum im_err im_buf_append(struct im_buf *b, const void *data, size_t len) {
  if (!b->data || len > b->max - b->len || b->len + len >= b->cap) /* max <= SIZE_MAX / 2 */
    return im__buf_append_grow(b, data, len);
  if (len)
    memcpy(b->data + b->len, data, len);
  b->len += len;
  b->data[b->len] = '\0';
  return IM_OK;
}
static inline IM_WUR enum im_err im_buf_puts(struct im_buf *b, const char *s) {
  return im_buf_append(b, s, strlen(s));
}
enum im_err im_buf_printf(struct im_buf *b, const char *fmt, ...) IM_WUR
    __attribute__((format(printf, 2, 3)));
enum im_err im_buf_vprintf(struct im_buf *b, const char *fmt, va_list ap) IM_WUR
    __attribute__((format(printf, 2, 0)));
/* Appends v in decimal / in lowercase hexadecimal without a prefix (what
 * "%" PRId64 and "%" PRIx64 print, without printf's cost on hot paths). */
enum im_err im_buf_put_i64(struct im_buf *b, int64_t v) IM_WUR;
enum im_err im_buf_put_hex(struct im_buf *b, uint64_t v) IM_WUR;
/* Appends v in decimal ("%" PRIu64, "%u"). */
enum im_err im_buf_put_u64(struct im_buf *b, uint64_t v) IM_WUR;
/* Allocates room for about `extra` more bytes now, in one allocation, so
 * that the appends of a text of known rough size do not grow the buffer
 * step by step (each step a realloc). A hint: never fails, and a hint past
 * the cap or a failed allocation leaves the buffer as it was (the appends
 * then grow it, or report the error, as they would have). */
void im_buf_reserve_hint(struct im_buf *b, size_t extra);
/* Appends s as the inside of a JSON string (no quotes), escaping as RFC 8259
 * requires; invalid UTF-8 bytes become U+FFFD. */
enum im_err im_buf_json_escape(struct im_buf *b, const char *s, size_t len) IM_WUR;
/* Drops the first n bytes (n > len drops all). */
void im_buf_consume(struct im_buf *b, size_t n);
/* Sets len to 0, keeping the storage. */
void im_buf_reset(struct im_buf *b);

#endif
