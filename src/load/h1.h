/* An incremental HTTP/1.1 response parser for the load engine's own
 * client transport (loader_h1.c, docs/architecture.md "Transports").
 *
 * Pure: no I/O, no clock, no allocation but one line buffer that grows to
 * at most IM_H1_LINE_MAX when a head line (or a chunk-size line, or a
 * trailer) is split between reads. Body bytes are handed to the caller's
 * callback straight out of the buffer it fed (no copy), after the framing
 * is taken away: Content-Length, chunked transfer coding (extensions
 * skipped, trailers read and dropped), or everything up to the end of the
 * connection.
 *
 * Strict where lenience would misframe (RFC 9112): an obs-fold line, a
 * space before a header's colon, a name that is not a token, a
 * Content-Length that is not digits or disagrees with another, a chunk size
 * that is not hex or overflows 2^62, a head over IM_H1_HEAD_MAX bytes or
 * with over IM_H1_MAX_HEADERS lines: each is an error, never a guess. Bare
 * LF line ends are accepted (RFC 9112 §2.2 allows it). Interim 1xx
 * responses (100 Continue, 103 Early Hints) are read and skipped; 101 is
 * an error (nothing was asked to be upgraded).
 *
 * Ownership: the caller embeds the struct; im_h1_cleanup frees the line
 * buffer. Thread-safety: one parser per connection, one thread. */
#ifndef IM_LOAD_H1_H
#define IM_LOAD_H1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IM_H1_LINE_MAX (64u << 10)  /* one head line, chunk-size line or trailer */
#define IM_H1_HEAD_MAX (100u << 10) /* a whole head (curl's CURL_MAX_HTTP_HEADER) */
#define IM_H1_MAX_HEADERS 1000u

enum im_h1_rc {
  IM_H1_MORE = 0,   /* everything fed was consumed; more is needed */
  IM_H1_DONE = 1,   /* the response is complete (*used says how far) */
  IM_H1_STOP = 2,   /* the body callback asked to stop */
  /* Errors (negative): the connection is unusable afterwards. */
  IM_H1_E_STATUS = -1,   /* not an HTTP/1.x status line, or 101 */
  IM_H1_E_HEADER = -2,   /* a malformed header line (obs-fold, bad name, no colon) */
  IM_H1_E_TOOBIG = -3,   /* a line over IM_H1_LINE_MAX, a head over IM_H1_HEAD_MAX */
  IM_H1_E_LENGTH = -4,   /* a bad or conflicting Content-Length */
  IM_H1_E_CHUNK = -5,    /* malformed chunked framing */
  IM_H1_E_NOTHING = -6,  /* im_h1_eof: the connection closed before any byte */
  IM_H1_E_PARTIAL = -7,  /* im_h1_eof: closed in the middle of a head or body */
  IM_H1_E_NOMEM = -8,
};

struct im_h1_cb {
  /* Every status line (1xx included), before its headers. */
  void (*status)(void *ud, int code);
  /* Every header of a final response: name as sent (compare without
   * case), value without surrounding whitespace. NULL: none. */
  void (*header)(void *ud, const char *name, size_t name_len, const char *value,
                 size_t value_len);
  /* A piece of the body (framing removed); nonzero stops the parse
   * (IM_H1_STOP). */
  int (*body)(void *ud, const char *data, size_t len);
};

struct im_h1 {
  uint8_t state;
  bool any;            /* a byte of this response was seen */
  bool http10, close, chunked, has_length, until_eof, te_seen;
  int status;
  uint32_t n_headers;
  size_t head_bytes;   /* bytes of this head so far */
  uint64_t length;     /* Content-Length */
  uint64_t left;       /* bytes left in the body (Content-Length) or chunk */
  char *line;          /* a line split between feeds */
  size_t line_len, line_cap;
};

void im_h1_init(struct im_h1 *p);
/* For the next response on the same connection (keeps the line buffer). */
void im_h1_reset(struct im_h1 *p);
void im_h1_cleanup(struct im_h1 *p);

/* Feeds len bytes. *used: bytes consumed (all of them unless DONE or an
 * error; after DONE the rest belongs to no response). */
enum im_h1_rc im_h1_feed(struct im_h1 *p, const char *data, size_t len, const struct im_h1_cb *cb,
                         void *ud, size_t *used);
/* The connection ended (EOF): DONE when the body ran to the close (or the
 * response was complete), else IM_H1_E_NOTHING / IM_H1_E_PARTIAL. */
enum im_h1_rc im_h1_eof(struct im_h1 *p);
/* After DONE: whether the connection may carry another request. */
bool im_h1_reusable(const struct im_h1 *p);
/* A short English name of a result ("malformed chunked framing"). */
const char *im_h1_rc_name(enum im_h1_rc rc);

#endif
