/* Incremental HTTP/1.1 request parser for the built-in server (RFC 9112).
 *
 * Why our own: llhttp is not packaged by Debian 12 and the packaged
 * http-parser is archived upstream; the server only needs requests, bounded
 * and strict. The parser copies input into its own bounded buffer, so a
 * connection may feed it reads of any size split at any byte.
 *
 * Flow for one request:
 *   im_http_feed() -> IM_AGAIN until the head is complete; then head_done is
 *   set once (callers may check Content-Length / Expect and answer early,
 *   e.g. 413 before the body is read) and feeding continues until IM_OK:
 *   the request (head + body) is complete. After handling it, call
 *   im_http_next() to drop it and parse any pipelined bytes already fed.
 *
 * Errors: IM_PARSE (answer 400), IM_LIMIT (head too large: 431, or body
 * larger than max_body when not discarding: 413), IM_UNSUPPORTED (a
 * Transfer-Encoding other than chunked: 501). After an error the parser only
 * accepts im_http_parser_cleanup(), with one exception: IM_LIMIT for a body
 * larger than max_body (head_done is true) may be followed by
 * im_http_discard_body() and im_http_feed(p, NULL, 0) to read past the body
 * and keep the connection (every other error repeats on the next call).
 *
 * Pointers in p->req (method, path, query, headers, body) point into the
 * parser's buffers. They are re-derived at the end of every im_http_feed(),
 * im_http_next() and im_http_discard_body() call, so they stay valid until
 * the next call into the parser (the buffer may move when bytes are fed);
 * do not keep them across calls.
 *
 * Memory: at most max_head + max_body bytes per request are held, and at
 * most 2 * (max_head + max_body) + 64 KiB bytes are buffered in all (a peer
 * pipelining more than that without reading responses gets IM_LIMIT).
 *
 * Leniencies, all allowed by RFC 9112: bare LF line ends; empty lines before
 * a request line are skipped; HTTP/1.x with x > 1 is treated as HTTP/1.1.
 * Not checked: the presence of Host. */
#ifndef IM_SERVE_HTTP_H
#define IM_SERVE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

struct im_http_limits {
  size_t max_head;     /* request line + headers, bytes (default 16 KiB) */
  size_t max_headers;  /* number of header fields (default 64, at most 128) */
  size_t max_body;     /* body bytes (default 4 MiB) */
};

enum im_http_method { IM_HTTP_GET, IM_HTTP_HEAD, IM_HTTP_POST, IM_HTTP_OTHER };

struct im_http_header {
  const char *name; /* points into the parser's buffer; not NUL-terminated */
  size_t name_len;
  const char *value; /* leading/trailing whitespace trimmed */
  size_t value_len;
};

struct im_http_request {
  enum im_http_method method;
  const char *method_str; size_t method_len;
  const char *path;  size_t path_len;  /* target up to '?' */
  const char *query; size_t query_len; /* after '?', may be empty */
  int version_minor;                   /* 0 or 1 (HTTP/1.x only) */
  struct im_http_header headers[128];
  size_t n_headers;
  int64_t content_length;              /* -1 when absent */
  bool chunked;                        /* Transfer-Encoding: chunked */
  bool keep_alive;                     /* by version and Connection header */
  bool expect_continue;                /* Expect: 100-continue */
  const char *body; size_t body_len;   /* valid once IM_OK is returned */
};

struct im_http_parser {
  struct im_http_limits limits;
  struct im_buf in;          /* bytes fed and not yet dropped */
  struct im_http_request req;
  bool head_done;            /* head parsed for the current request */
  bool discard_body;         /* body bytes are dropped, not kept or limited */
  int state;                 /* internal */
  size_t pos;                /* internal: parse position in `in` */
  size_t body_start;         /* internal */
  uint64_t body_seen;        /* internal: body bytes consumed so far */
  uint64_t chunk_left;       /* internal: chunked decoding */
  struct im_buf body;        /* internal: decoded chunked body */
  /* Internal. Every offset above and below except `start` is relative to
   * `start`, so dropping finished requests never invalidates them. */
  size_t start;              /* offset of the current request in `in` */
  size_t scan;               /* end of the search for LF in the current line */
  size_t req_end;            /* end of the completed request */
  size_t cap;                /* most bytes `in` may hold past `start` */
  size_t path_off, query_off;
  size_t hdr_off[128][2];    /* name and value offsets of each header */
  enum im_err err;           /* sticky error */
  bool body_over;            /* body exceeds max_body: waiting for discard */
};

/* Fills limits with the defaults above. */
void im_http_limits_default(struct im_http_limits *l);
void im_http_parser_init(struct im_http_parser *p, const struct im_http_limits *limits);
void im_http_parser_cleanup(struct im_http_parser *p);

/* Feeds len bytes (all are taken). Returns IM_OK when a complete request is
 * available in p->req, IM_AGAIN when more bytes are needed (check
 * p->head_done), or an error as described above. Feeding more bytes while a
 * request is complete only buffers them. */
enum im_err im_http_feed(struct im_http_parser *p, const char *data, size_t len) IM_WUR;
/* Switches the current request to discard mode (after head_done): its body
 * is read and dropped whatever its size; body/body_len stay empty. Body
 * bytes already buffered are dropped by the next im_http_feed(); call
 * im_http_feed(p, NULL, 0) when no more bytes are coming yet (e.g. after the
 * IM_LIMIT of a too-large body). No effect before head_done, once the
 * request is complete, or after an error other than a too-large body (in
 * those cases p->discard_body stays false). */
void im_http_discard_body(struct im_http_parser *p);
/* Drops the completed request and parses whatever was fed after it; returns
 * as im_http_feed would with no new bytes. */
enum im_err im_http_next(struct im_http_parser *p) IM_WUR;

/* Case-insensitive header lookup; NULL when absent. */
const struct im_http_header *im_http_find_header(const struct im_http_request *r,
                                                 const char *name);

#endif
