#include "workload/session.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/rng.h"
#include "workload/sched.h"
#include "text/promptgen.h"
#include "text/simpletok.h"

/* A session's conversation so far. */
struct sstate {
  struct im_buf msgs;  /* chat: the messages' JSON objects, comma-separated */
  struct im_buf text;  /* completions: the turns joined by blank lines */
  uint32_t tokens;     /* tokens of the conversation so far */
};

uint32_t im_sessions_target(const struct im_sessions *s, uint32_t k) {
  if (s->turns <= 1 || s->ctx_end <= s->ctx_start)
    return s->ctx_start;
  if (k >= s->turns - 1)
    return s->ctx_end;
  return s->ctx_start +
         (uint32_t)((uint64_t)(s->ctx_end - s->ctx_start) * k / (s->turns - 1));
}

static enum im_err add_message(struct sstate *st, enum im_backend be, const char *role,
                               const char *txt, size_t len) {
  if (be == IM_BACKEND_CHAT) {
    enum im_err err = im_buf_printf(&st->msgs, "%s{\"role\":\"%s\",\"content\":\"",
                                    st->msgs.len ? "," : "", role);
    if (!err)
      err = im_buf_json_escape(&st->msgs, txt, len);
    return err ? err : im_buf_puts(&st->msgs, "\"}");
  }
  enum im_err err = st->text.len ? im_buf_puts(&st->text, "\n\n") : IM_OK;
  return err ? err : im_buf_append(&st->text, txt, len);
}

/* Bytes of a session's history: 16 per token (as IM_PROMPT_TEXT_MAX) of
 * the largest context plus each turn's answer (max_tokens, its range
 * included) and user message. */
static size_t history_max(const struct im_sessions *s) {
  const struct im_synth *sy = s->synth;
  uint64_t ctx = s->ctx_end > s->ctx_start ? s->ctx_end : s->ctx_start;
  uint64_t out = (uint64_t)((double)sy->output_len * (1.0 + sy->range_ratio)) + 1;
  uint64_t tokens = ctx + (uint64_t)s->turns * (out + s->min_user);
  uint64_t bytes = tokens * 16 + 65536;
  return bytes < IM_PROMPT_TEXT_MAX ? (size_t)bytes : IM_PROMPT_TEXT_MAX;
}

/* The chat conversation so far as a JSON array (malloc'd), or NULL. */
static char *messages_array(const struct sstate *st) {
  size_t len = st->msgs.len + 2;
  char *j = malloc(len + 1);
  if (!j)
    return NULL;
  j[0] = '[';
  memcpy(j + 1, st->msgs.data, st->msgs.len);
  j[len - 1] = ']';
  j[len] = '\0';
  return j;
}

/* --tokenizer server: the conversation so far (the answer included) as the
 * server counts it, so that the next user message is planned from the
 * server's count rather than from an estimate of the answer's tokens. */
static enum im_err count_history(const struct im_synth *sy, enum im_backend be, struct sstate *st) {
  uint32_t n = 0;
  enum im_err err;
  if (be == IM_BACKEND_CHAT) {
    char *j = messages_array(st);
    if (!j)
      return IM_NOMEM;
    err = im_synth_count(sy, NULL, 0, j, &n);
    free(j);
  } else {
    err = im_synth_count(sy, st->text.data, st->text.len, NULL, &n);
  }
  if (!err)
    st->tokens = n;
  return err;
}

static void sess_end(void *ctx, void *state) {
  (void)ctx;
  struct sstate *st = state;
  if (!st)
    return;
  im_buf_cleanup(&st->msgs);
  im_buf_cleanup(&st->text);
  free(st);
}

static enum im_err sess_turn(void *ctx, uint64_t sid, uint32_t turn, void **state,
                             const char *answer, size_t answer_len, struct im_req_spec *spec) {
  const struct im_sessions *s = ctx;
  const struct im_synth *sy = s->synth;
  struct sstate *st = *state;
  if (!st) {
    if (!(st = calloc(1, sizeof *st)))
      return IM_NOMEM;
    /* The conversation is bounded by the target context: its last turn's
     * tokens, every turn's answer and user message, IM_PROMPT_TEXT_MAX in
     * all. A server answering more ends the session (IM_LIMIT). */
    im_buf_init(&st->msgs, history_max(s));
    im_buf_init(&st->text, history_max(s));
    *state = st;
  }
  enum im_err err = IM_OK;
  uint32_t target = im_sessions_target(s, turn);
  if (turn > 0) {
    /* The answer goes back as the server sent it: its cached blocks match. */
    uint32_t before = st->tokens; /* the previous prompt's count */
    err = add_message(st, s->backend, "assistant", answer ? answer : "", answer_len);
    st->tokens += (uint32_t)im_simpletok_encode(answer, answer_len, NULL, 0);
    /* The plan needs the server's count of the history only while the
     * turn's target is ahead of it: a conversation already holding
     * target - min_user tokens before the answer (which only adds) gets a
     * user message of min_user tokens whatever the answer counts. The
     * prompt as a whole is counted below either way. */
    if (!err && sy->server_count && (uint64_t)before + s->min_user < target)
      err = count_history(sy, s->backend, st);
  }
  uint32_t want = target > st->tokens + s->min_user ? target - st->tokens : s->min_user;
  struct im_buf user;
  im_buf_init(&user, IM_PROMPT_TEXT_MAX);
  uint32_t n = 0;
  /* Tag: unique per (session, turn); only the first turn may draw a prefix. */
  uint64_t tag = sid * 1024 + turn;
  /* The first turn is exactly its target, template included; a later
   * message counts its own tokens (the whole is counted below). */
  struct im_synth plain = *sy;
  plain.chat = false;
  if (!err)
    err = im_synth_text(turn == 0 ? sy : &plain, tag, want, turn == 0, &user, &n);
  if (!err)
    err = add_message(st, s->backend, "user", user.data, user.len);
  im_buf_cleanup(&user);
  if (err)
    return err;
  st->tokens += n;

  memset(spec, 0, sizeof *spec);
  if (s->backend == IM_BACKEND_CHAT) {
    if (!(spec->messages_json = messages_array(st)))
      return IM_NOMEM;
  } else {
    if (!(spec->prompt = malloc(st->text.len + 1)))
      return IM_NOMEM;
    memcpy(spec->prompt, st->text.data, st->text.len);
    spec->prompt[st->text.len] = '\0';
    spec->prompt_len = st->text.len;
  }
  if (sy->exact && turn > 0) {
    /* As the server counts it: the whole conversation, template included.
     * A first turn is its one user message, which im_synth_text counted
     * as such already (template included): counting it again would only
     * cost a /tokenize call under --tokenizer server. */
    uint32_t exact = 0;
    err = im_synth_count(sy, spec->prompt, spec->prompt_len, spec->messages_json, &exact);
    if (err)
      return err;
    st->tokens = exact;
  }
  spec->prompt_tokens = st->tokens;
  if (sy->has_mix)
    spec->content_class = im_synth_class(sy, tag) == IM_CONTENT_CODE ? IM_CLASS_CODE : IM_CLASS_TEXT;
  spec->max_tokens = im_sched_length(sy->output_len, sy->range_ratio, sy->seed ^ 0x2bULL, tag);
  spec->ignore_eos = sy->ignore_eos;
  spec->temperature = sy->temperature;
  spec->top_p = sy->top_p;
  im_synth_perturb(sy, tag, spec);
  spec->session = sid + 1;
  spec->turn = turn + 1;
  return IM_OK;
}

void im_sessions_ops(const struct im_sessions *s, struct im_session_ops *ops) {
  memset(ops, 0, sizeof *ops);
  ops->turn = sess_turn;
  ops->end = sess_end;
  ops->turns = s->turns;
  ops->think_ns = s->think_ns;
}

static int parse_len(const char *p, const char *end, uint32_t *out) {
  char buf[32];
  size_t n = (size_t)(end - p);
  if (n == 0 || n >= sizeof buf)
    return -1;
  memcpy(buf, p, n);
  buf[n] = '\0';
  uint64_t mult = 1;
  if (buf[n - 1] == 'k' || buf[n - 1] == 'K') {
    mult = 1024;
    buf[--n] = '\0';
  }
  if (n == 0)
    return -1;
  char *e = NULL;
  errno = 0;
  double v = strtod(buf, &e);
  if (errno || *e || !(v >= 0) || v * (double)mult > 10000000.0)
    return -1;
  *out = (uint32_t)(v * (double)mult + 0.5);
  return 0;
}

int im_sessions_parse_growth(const char *spec, uint32_t *a, uint32_t *b, char *err, size_t errlen) {
  const char *colon = spec ? strchr(spec, ':') : NULL;
  if (!colon || parse_len(spec, colon, a) || parse_len(colon + 1, colon + strlen(colon), b)) {
    snprintf(err, errlen, "--context-growth '%s': expected START:END in tokens, e.g. 5k:32k "
                          "(k = 1024), each at most 10,000,000", spec ? spec : "");
    return -1;
  }
  if (*a == 0 || *b < *a) {
    snprintf(err, errlen, "--context-growth '%s': START must be > 0 and END >= START", spec);
    return -1;
  }
  return 0;
}
