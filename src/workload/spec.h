/* What a workload hands the load engine: one request to send (its prompt or
 * messages, max_tokens, sampling parameters, session and class labels), the
 * callback that produces it, and the hooks of multi-turn sessions.
 *
 * The contract between workload/ (which builds requests) and load/ (which
 * sends them): defined here, below both, so that neither knows the other's
 * internals. A spec owns its strings; im_req_spec_cleanup frees them. */
#ifndef IM_WORKLOAD_SPEC_H
#define IM_WORKLOAD_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "record/record.h"

enum im_backend { IM_BACKEND_CHAT, IM_BACKEND_COMPLETIONS };

/* What one logical request asks for; the workload fills it. */
struct im_req_spec {
  char *prompt;            /* text (owned by the spec) */
  size_t prompt_len;
  char *messages_json;     /* chat: a JSON array of messages sent instead of one user
                              message with `prompt` (owned; NULL: none) */
  char *extra_json;        /* fields of a JSON object appended to the body (owned; NULL) */
  uint32_t prompt_tokens;  /* the client's estimate, for records without usage */
  uint32_t max_tokens;
  bool ignore_eos;
  double temperature, top_p; /* NaN: not sent */
  uint64_t session;        /* recorded as is (0: not in a session) */
  uint32_t turn;
  enum im_req_class content_class;
  uint32_t tools;          /* tools offered (agent chains); recorded */
};

/* The workload: called on the loop thread shortly before a request is due,
 * never while a timestamp is being taken. Returns IM_OK and fills spec. */
typedef enum im_err (*im_workload_fn)(void *ctx, uint64_t index, struct im_req_spec *spec);

/* Multi-turn sessions: a session sends `turns` turns, each `think_ns` after
 * the previous one ended (closed loop within the session, what chat users
 * do), each turn's prompt built by the workload from the session's history
 * and the previous answer. A turn that fails ends its session. Sessions
 * start as the schedule says: with times != NULL each arrival starts one
 * (--session-rate, open loop); else `concurrency` sessions run at once, an
 * ended one replaced at once by a new one (--sessions). max_requests then
 * caps turns: each new session reserves `turns` of them (whole sessions
 * first, the last one gets what is left; a session that ends early gives
 * its unused turns back), and no session starts once they are spent.
 * duration_ns ends both (no turn is sent after it). */
struct im_session_ops {
  /* Fills spec for turn `turn` (from 0) of session `sid` (global, from 0;
   * a session runs on one loader thread). *state is NULL at turn 0: the
   * workload keeps its per-session history there. answer: the previous
   * turn's answer text as received (content or text; reasoning excluded).
   * Called on the loop thread when the previous turn ends, so its cost
   * falls in the think time, not between due time and send. */
  enum im_err (*turn)(void *ctx, uint64_t sid, uint32_t turn, void **state, const char *answer,
                      size_t answer_len, struct im_req_spec *spec);
  /* Frees a session's state (NULL ok); called once per session. */
  void (*end)(void *ctx, void *state);
  uint32_t turns;
  int64_t think_ns;
  /* Agent chains (workload/agent.h): a turn whose finish_reason is not
   * "tool_calls" ends the session, and `answer` is the content received,
   * then, once a chunk carried delta.tool_calls, a NUL byte and each such
   * chunk's raw tool_calls JSON array, one per line (content after the
   * first tool call is dropped). think_ns is then the tool's latency. */
  bool agent;
};

/* Frees the spec's strings and sets them to NULL (s itself is the caller's). */
void im_req_spec_cleanup(struct im_req_spec *s);

#endif
