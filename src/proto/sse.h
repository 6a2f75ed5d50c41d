/* Server-Sent Events parser (byte-oriented, push + callback).
 *
 * Implements the event-stream interpretation of the WHATWG HTML standard
 * (section "Server-sent events", "Interpreting an event stream"):
 *   - line ends are CRLF, LF or a lone CR, at any split point between feeds
 *     (a CR ending one feed and an LF starting the next are one line end);
 *   - one UTF-8 byte order mark at stream start is skipped (it may be split);
 *   - "field:value" with one optional space after the colon removed, a line
 *     without a colon is a field with an empty value;
 *   - "data" lines are joined with "\n"; "event" sets the type; "id" sets the
 *     last event ID (ignored when the value holds a NUL byte) and persists
 *     across events; "retry" with only ASCII digits sets the reconnection time;
 *     other fields are ignored;
 *   - a blank line dispatches the event, unless no data line was seen;
 *   - a line starting with ':' is a comment: reported as IM_SSE_COMMENT so the
 *     caller can count keep-alives, never mixed into data;
 *   - at end of stream an event without its terminating blank line is
 *     discarded (im_sse_finish says whether that happened).
 * Bytes are not decoded or validated: values are passed through as bytes.
 *
 * Bounds: a line (without its line end) longer than limits.max_line, or an
 * event whose data (lines joined with "\n") exceeds limits.max_data, makes
 * im_sse_feed return IM_LIMIT. The same input gives the same events and the
 * same error whatever the feed boundaries.
 *
 * Memory: the parser owns two growable buffers (a partial line, the event
 * data) that grow up to their limits and are then reused: no allocation per
 * event in steady state. Complete lines inside one feed are parsed in place.
 *
 * Thread safety: none; one parser per stream, used by one thread. */
#ifndef INFERMETER_SSE_H
#define INFERMETER_SSE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

/* Defaults: far above any chunk an inference server sends (a few hundred
 * bytes; a tool-call argument or a large logprobs chunk a few tens of KiB). */
#define IM_SSE_DEFAULT_MAX_LINE ((size_t)1 << 20)
#define IM_SSE_DEFAULT_MAX_DATA ((size_t)4 << 20)

enum im_sse_kind {
  IM_SSE_EVENT,   /* a dispatched event */
  IM_SSE_COMMENT, /* a ':' comment line, e.g. ": keep-alive" */
  IM_SSE_FIELD,   /* a field the standard ignores, e.g. llama.cpp's
                     non-standard "error: {...}" line; only reported after
                     im_sse_report_fields (the event itself is unaffected) */
};

/* What the callback receives. Every pointer is valid only during the
 * callback: it points into the parser's buffers or into the bytes being fed.
 * Copy what you keep. */
struct im_sse_event {
  enum im_sse_kind kind;
  /* EVENT: the event data (lines joined with "\n", no trailing "\n"),
   * NUL-terminated (data[data_len] == '\0'; data may also contain NUL bytes).
   * COMMENT: the text after the ':', one leading space removed, NOT
   * NUL-terminated. FIELD: the field's value (as for data), NOT
   * NUL-terminated. */
  const char *data;
  size_t data_len;
  /* EVENT: the event type, "message" unless an "event" field set it;
   * NUL-terminated. COMMENT: "" (type_len 0). FIELD: the field's name, NOT
   * NUL-terminated. */
  const char *type;
  size_t type_len;
  /* The last event ID so far (persists across events, "" if none);
   * NUL-terminated. */
  const char *id;
  size_t id_len;
  /* The reconnection time in ms from the last valid "retry" field, or -1 if
   * none was seen (values above INT64_MAX/10 saturate). */
  int64_t retry_ms;
};

/* Called for every event and comment, synchronously from inside
 * im_sse_feed. Return IM_OK to continue; any other value stops parsing: the
 * rest of the fed bytes are dropped, im_sse_feed returns that value and the
 * parser is failed (see im_sse_feed). The callback must not call
 * im_sse_feed, im_sse_reset or im_sse_cleanup on the same parser. */
typedef enum im_err (*im_sse_cb)(void *ud, const struct im_sse_event *ev);

struct im_sse_limits {
  size_t max_line; /* bytes of one line, line end excluded; 0: default */
  size_t max_data; /* bytes of one event's data; 0: default */
};

/* Caller-embedded parser. Fields are private; read them only through the
 * functions below. */
struct im_sse {
  im_sse_cb cb;
  void *ud;
  size_t max_line, max_data;
  struct im_buf line; /* a line split across feeds */
  struct im_buf data; /* the event's data, each line followed by "\n" */
  struct im_buf type; /* the "event" field */
  struct im_buf id;   /* the last event ID */
  int64_t retry_ms;
  enum im_err failed;     /* sticky: IM_OK while healthy */
  unsigned char bom;      /* bytes of the BOM matched so far; 3: done */
  unsigned char after_cr; /* the last byte fed was a CR line end */
  unsigned char pending;  /* a field line was seen since the last blank line */
  unsigned char fields;   /* report unknown fields (IM_SSE_FIELD) */
};

/* Initialises p. limits may be NULL (defaults). cb must not be NULL; ud is
 * passed to it unchanged. Allocates nothing until bytes are fed. */
void im_sse_init(struct im_sse *p, const struct im_sse_limits *limits, im_sse_cb cb, void *ud);

/* Reports every field line the standard ignores to the callback as
 * IM_SSE_FIELD (off after init: the standard's behaviour). Servers put
 * failures there (llama.cpp's "error:" line), which a load tester must not
 * take for a clean stream. */
void im_sse_report_fields(struct im_sse *p, int on);

/* Frees the buffers. NULL ok. p may be im_sse_init-ed again afterwards. */
void im_sse_cleanup(struct im_sse *p);

/* Forgets all stream state (partial line, pending event, last event ID,
 * retry, BOM, failure) but keeps the buffers' storage, for a new stream. */
void im_sse_reset(struct im_sse *p);

/* Parses len bytes (data may be NULL when len is 0), calling the callback
 * for each event or comment completed by them. Returns IM_OK; IM_LIMIT when a
 * line or an event's data exceeds its limit; IM_NOMEM; or the callback's
 * non-OK value. After any error the parser is failed: every later call
 * returns IM_STATE until im_sse_reset. Events completed before the error were
 * delivered. */
enum im_err im_sse_feed(struct im_sse *p, const void *data, size_t len) IM_WUR;

/* Declares the end of the stream. Nothing is dispatched (per the standard, a
 * pending event without its blank line is discarded). Returns IM_OK when the
 * stream ended cleanly between events, IM_AGAIN when a partial line or an
 * undispatched event was pending (a truncated stream), IM_STATE when the
 * parser had failed. The parser must be reset before reuse. */
enum im_err im_sse_finish(struct im_sse *p) IM_WUR;

#endif
