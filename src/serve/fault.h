/* Fault and phenomenon injection for the built-in server.
 *
 * Spec syntax (flag --fault, repeatable; header X-Infermeter-Fault):
 *   KIND[:PROBABILITY][@key=value,...]
 * PROBABILITY defaults to 1. Common keys: from=DUR,to=DUR (a time window
 * since server start; DUR like 10s, 500ms). Kinds and their keys:
 *   429        retry_after=SECONDS (default 1)     -> HTTP 429 + Retry-After
 *   503        retry_after=SECONDS (default 0: none)
 *   500, 400                                       -> that status, JSON error
 *   reset      after_tokens=N (default 0)          -> TCP RST after N tokens
 *   fin        after_tokens=N                      -> close without [DONE]
 *   error-event after_tokens=N                     -> data: {"error":...} then close
 *   stall      token=N,ms=M                        -> one pause of M ms before token N
 *   slow       ms=M                                -> every token of the request M ms late
 *   hiccup     every=DUR,ms=M                      -> engine pauses M ms every DUR (all streams)
 *   connection-close ms=M (default 0)               -> Connection: close on every response;
 *                                                     each new connection's first request
 *                                                     waits M ms before its first token
 *                                                     (handshake and connection setup)
 *   kv-shrink  at=DUR,fraction=F                   -> KV capacity x F at time DUR
 * Keys shown without a default are required.
 * Probabilities apply per request (per response for connection-close);
 * hiccup and kv-shrink are engine-wide and ignore the probability.
 * All durations are simulated time: divided by --time-scale. */
#ifndef IM_SERVE_FAULT_H
#define IM_SERVE_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/rng.h"

enum im_fault_kind {
  IM_FAULT_429,
  IM_FAULT_503,
  IM_FAULT_500,
  IM_FAULT_400,
  IM_FAULT_RESET,
  IM_FAULT_FIN,
  IM_FAULT_ERROR_EVENT,
  IM_FAULT_STALL,
  IM_FAULT_SLOW,
  IM_FAULT_HICCUP,
  IM_FAULT_CONNECTION_CLOSE,
  IM_FAULT_KV_SHRINK,
  IM_FAULT_KIND_COUNT
};

struct im_fault {
  enum im_fault_kind kind;
  double prob;            /* [0, 1] */
  int64_t from_ns, to_ns; /* window since server start; to_ns < 0: open */
  int64_t after_tokens;   /* reset, fin, error-event */
  int64_t token;          /* stall */
  int64_t ms_ns;          /* stall, slow, hiccup: duration in ns */
  int64_t every_ns;       /* hiccup */
  int64_t at_ns;          /* kv-shrink */
  double fraction;        /* kv-shrink */
  int retry_after_s;      /* 429, 503 (0: no header) */
};

/* Canonical name of a kind ("429", "reset", "connection-close", ...). */
const char *im_fault_kind_name(enum im_fault_kind kind);

/* Parses one spec. On failure returns IM_INVAL and writes a message naming
 * the bad part into msg, e.g. "unknown fault kind 'rest' (expected one of
 * 429, 503, ...)" or "'after_tokens' needs a non-negative integer". */
enum im_err im_fault_parse(const char *spec, struct im_fault *out, char *msg,
                           size_t msg_len) IM_WUR;

/* Whether now_ns (since server start, simulated) is inside f's from/to
 * window; for the engine-wide kinds, which im_fault_plan_request skips. */
bool im_fault_in_window(const struct im_fault *f, int64_t now_ns);

/* What happens to one request. Fields are -1 / 0 when not planned. */
struct im_fault_plan {
  int status;              /* 0, or 429/503/500/400: answer this instead */
  int retry_after_s;
  int64_t reset_after;     /* tokens, -1 none */
  int64_t fin_after;
  int64_t error_after;
  int64_t stall_token;     /* -1 none */
  int64_t stall_ns;
  int64_t slow_ns;         /* per token, 0 none */
  uint32_t applied;        /* bit per im_fault_kind that was applied */
};

/* Draws the plan for a request arriving at now_ns (since server start, in
 * simulated time) from the n faults, using rng. Faults outside their window
 * or not drawn do not apply; the first drawn status fault wins, and so does
 * the first drawn fault of each other effect. Engine-wide kinds (hiccup,
 * kv-shrink, connection-close) are ignored here. Draws one uniform from rng
 * per in-window fault whose probability is strictly between 0 and 1. */
void im_fault_plan_request(const struct im_fault *faults, size_t n, struct im_rng *rng,
                           int64_t now_ns, struct im_fault_plan *plan);

/* Parses a header value (one spec, probability forced to 1) into a plan
 * merged over *plan: it replaces what *plan had for the same effect (a
 * header status replaces a drawn status). connection-close sets its bit in
 * applied (close after this response). IM_INVAL with a message on a bad
 * spec, on hiccup or kv-shrink (engine-wide, --fault only) and on from/to;
 * *plan is unchanged then. */
enum im_err im_fault_plan_header(const char *value, size_t len, struct im_fault_plan *plan,
                                 char *msg, size_t msg_len) IM_WUR;

void im_fault_plan_none(struct im_fault_plan *plan);

#endif
