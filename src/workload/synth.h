/* The built-in synthetic workload of `infermeter run` (until datasets land):
 * prompts of about input_len tokens of vocabulary text, each starting with a
 * unique salt so that no two requests (and no two runs) share a cached
 * prefix; max_tokens = output_len; both lengths drawn with vLLM's
 * --range-ratio convention. Deterministic in (seed, index). */
#ifndef IM_LOAD_SYNTH_H
#define IM_LOAD_SYNTH_H

#include <stdbool.h>
#include <stdint.h>

#include <pthread.h>

#include "core/buf.h"
#include "text/chattmpl.h"
#include "text/content.h"
#include "core/err.h"
#include "text/tokenizer.h"
#include "workload/sched.h"
#include "workload/spec.h"

/* A token count made elsewhere (`--tokenizer server`: the target's
 * /tokenize, load/srvtok.h): text as a chat prompt when chat
 * (messages_json, or text as one user message, with the server's template),
 * else as a completion prompt. IM_OK and *n, or an error. */
typedef enum im_err (*im_synth_count_fn)(void *ctx, const char *text, size_t len,
                                         const char *messages_json, bool chat, uint32_t *n);

struct im_synth {
  uint32_t input_len, output_len;
  double range_ratio;
  bool ignore_eos;
  double temperature, top_p;  /* NaN: not sent */
  uint64_t seed;
  char salt[40];              /* run salt, printed into every prompt */
  /* Prefix groups: a share of the requests starts with one of n_groups
   * shared "system prompts" of prefix_len tokens (after the run salt, so
   * runs stay isolated), the rest with nothing shared. */
  uint32_t prefix_groups, prefix_len;
  double prefix_share;
  /* Entropy injection (docs/metrics.md §6, --perturb): temperature and top_p per
   * request from its id "<seed>-<index>" and the schedule's load at its
   * arrival (times[index] under spec; closed loop: load 1), around the base
   * values temperature / top_p above. */
  bool perturb;
  const int64_t *times;
  size_t n_times;
  const struct im_sched_spec *sched;
  /* Exact lengths (--dataset random, --tokenizer, --mix, --chat-template):
   * prompts cut to the token (text/promptgen.h) and counted as the
   * server will see them: with tok (NULL: the built-in tokenizer the
   * built-in server counts with) and, on the chat backend, the chat
   * template tmpl rendered around the messages. */
  bool exact;
  struct im_tok *tok;
  pthread_mutex_t *tok_mu;     /* optional: serialises tok when threads share it (run
                                  gives each loader thread its own copy instead) */
  bool chat;                   /* chat backend: tmpl applies */
  enum im_chat_tmpl tmpl;
  /* --tokenizer server: every count above is the server's (tok and tmpl
   * are then only what generates text), and an exact length is reached by
   * counting, adjusting the text and counting again (synth_server.c). */
  im_synth_count_fn server_count;
  void *server_ctx;
  bool has_mix;                /* --mix: a class per request */
  struct im_mix mix;
};

/* Appends to b a prompt of about `want` tokens for tag (a request index or
 * a session's turn): the run salt, when `prefix` one of the shared prefix
 * groups (as the group draw for tag says), then text of its own. *n_out:
 * its token count (built-in tokenizer). */
enum im_err im_synth_text(const struct im_synth *s, uint64_t tag, uint32_t want, bool prefix,
                          struct im_buf *b, uint32_t *n_out) IM_WUR;

/* Tokens of a prompt as the server counts them: the chat template around
 * messages_json (chat backend) or the text itself. IM_OK or an error. */
enum im_err im_synth_count(const struct im_synth *s, const char *text, size_t len,
                           const char *messages_json, uint32_t *n) IM_WUR;

/* The content class of request `tag` under --mix (text without a mix). */
enum im_content im_synth_class(const struct im_synth *s, uint64_t tag);

/* Applies --perturb to spec for request index (no-op when off). */
void im_synth_perturb(const struct im_synth *s, uint64_t index, struct im_req_spec *spec);

/* An im_workload_fn: ctx is a struct im_synth. */
enum im_err im_synth_request(void *ctx, uint64_t index, struct im_req_spec *spec) IM_WUR;

#endif
