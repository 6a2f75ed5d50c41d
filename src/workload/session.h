/* Multi-turn sessions with growing contexts (--sessions / --session-rate,
 * --context-growth A:B, --turns, --think-time; docs/metrics.md §6).
 *
 * Turn k of a session sends the whole conversation so far (every earlier
 * user message and every answer the server gave, as received) plus a new
 * user message sized so that the context reaches
 *     A + (B - A) * k / (turns - 1)
 * tokens at turn k (A at the first turn, B at the last), never less than
 * min_user tokens of new text. Chat backends get a messages array;
 * completions backends the same turns joined by blank lines. The first user
 * message may start with one of the run's shared prefix groups; everything
 * after it is the session's own, so a server's prefix cache can reuse a
 * session's previous turns and nothing else. */
#ifndef IM_LOAD_SESSION_H
#define IM_LOAD_SESSION_H

#include <stdint.h>

#include "core/err.h"
#include "workload/spec.h"
#include "workload/synth.h"

struct im_sessions {
  const struct im_synth *synth; /* salt, seed, output lengths, sampling, prefixes */
  enum im_backend backend;
  uint32_t turns;               /* >= 1 */
  uint32_t ctx_start, ctx_end;  /* context tokens at the first and the last turn */
  uint32_t min_user;            /* fewest tokens of a new user message */
  int64_t think_ns;
};

/* The loader's session hooks for s (ctx = s). */
void im_sessions_ops(const struct im_sessions *s, struct im_session_ops *ops);

/* Context target of turn k (from 0). */
uint32_t im_sessions_target(const struct im_sessions *s, uint32_t k);

/* Parses "5k:32k" (k = 1,000; K = 1,024 is not used: token counts are
 * decimal) or "5000:32000" into a <= b. -1 with a message in err. */
int im_sessions_parse_growth(const char *spec, uint32_t *a, uint32_t *b, char *err, size_t errlen);

#endif
