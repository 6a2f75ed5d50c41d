/* Agent chains: see workload/agent.h. */
#include "workload/agent.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "text/promptgen.h"
#include "text/simpletok.h"

/* The tools every turn offers (OpenAI's function-tool schema). */
static const char tools_json[] =
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"search\",\"description\":"
    "\"Search the web and return the best passages\",\"parameters\":{\"type\":\"object\","
    "\"properties\":{\"query\":{\"type\":\"string\"}},\"required\":[\"query\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"fetch\",\"description\":\"Fetch a page\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\"}},"
    "\"required\":[\"url\"]}}}]";

struct astate {
  struct im_buf msgs; /* the messages' JSON objects, comma-separated */
  uint32_t tokens;    /* the client's count of the conversation */
};

/* Appends s to *dst (realloc). */
static int cat(char **dst, const char *s, size_t n) {
  size_t have = *dst ? strlen(*dst) : 0;
  char *d = realloc(*dst, have + n + 1);
  if (!d)
    return -1;
  memcpy(d + have, s, n);
  d[have + n] = '\0';
  *dst = d;
  return 0;
}

static int merge_delta(json_t *el, struct im_agent_call *calls, size_t *n) {
  json_t *idx = json_object_get(el, "index");
  size_t i = json_is_integer(idx) ? (size_t)json_integer_value(idx) : 0;
  if (i >= IM_AGENT_MAX_CALLS)
    return 0;
  if (i >= *n)
    *n = i + 1;
  json_t *id = json_object_get(el, "id"), *fn = json_object_get(el, "function");
  json_t *name = json_object_get(fn, "name"), *args = json_object_get(fn, "arguments");
  if (json_is_string(id) && !calls[i].id && !(calls[i].id = strdup(json_string_value(id))))
    return -1;
  if (json_is_string(name) && !calls[i].name && !(calls[i].name = strdup(json_string_value(name))))
    return -1;
  if (json_is_string(args) &&
      cat(&calls[i].arguments, json_string_value(args), json_string_length(args)))
    return -1;
  return 0;
}

size_t im_agent_parse_calls(const char *answer, size_t len, struct im_agent_call *calls) {
  memset(calls, 0, IM_AGENT_MAX_CALLS * sizeof *calls);
  const char *nul = answer ? memchr(answer, '\0', len) : NULL;
  size_t n = 0;
  if (!nul)
    return 0;
  const char *p = nul + 1, *end = answer + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *stop = nl ? nl : end;
    json_t *arr = json_loadb(p, (size_t)(stop - p), 0, NULL);
    for (size_t k = 0; json_is_array(arr) && k < json_array_size(arr); k++)
      if (merge_delta(json_array_get(arr, k), calls, &n)) {
        json_decref(arr);
        im_agent_calls_free(calls, IM_AGENT_MAX_CALLS);
        return 0;
      }
    json_decref(arr);
    p = stop + 1;
  }
  return n;
}

void im_agent_calls_free(struct im_agent_call *calls, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(calls[i].id);
    free(calls[i].name);
    free(calls[i].arguments);
    calls[i] = (struct im_agent_call){0};
  }
}

static enum im_err put_str(struct im_buf *b, const char *s) {
  enum im_err err = im_buf_puts(b, "\"");
  if (!err)
    err = im_buf_json_escape(b, s, strlen(s));
  return err ? err : im_buf_puts(b, "\"");
}

/* The assistant's tool-call message and a tool result per call. */
static enum im_err add_hop(const struct im_agents *ag, struct astate *st, uint64_t tag,
                           const char *answer, size_t len) {
  struct im_agent_call calls[IM_AGENT_MAX_CALLS];
  size_t n = im_agent_parse_calls(answer, len, calls);
  const char *nul = answer ? memchr(answer, '\0', len) : NULL;
  size_t content_len = nul ? (size_t)(nul - answer) : len;
  enum im_err err = im_buf_puts(&st->msgs, ",{\"role\":\"assistant\",\"content\":");
  if (!err && content_len) {
    err = im_buf_puts(&st->msgs, "\"");
    if (!err)
      err = im_buf_json_escape(&st->msgs, answer, content_len);
    if (!err)
      err = im_buf_puts(&st->msgs, "\"");
  } else if (!err) {
    err = im_buf_puts(&st->msgs, "null");
  }
  st->tokens += (uint32_t)im_simpletok_encode(answer, content_len, NULL, 0);
  for (size_t i = 0; !err && i < n; i++) {
    char fallback[32];
    snprintf(fallback, sizeof fallback, "call-%zu", i);
    const char *id = calls[i].id ? calls[i].id : fallback;
    const char *args = calls[i].arguments ? calls[i].arguments : "";
    err = im_buf_puts(&st->msgs, i ? "," : ",\"tool_calls\":[");
    if (!err)
      err = im_buf_puts(&st->msgs, "{\"id\":");
    if (!err)
      err = put_str(&st->msgs, id);
    if (!err)
      err = im_buf_puts(&st->msgs, ",\"type\":\"function\",\"function\":{\"name\":");
    if (!err)
      err = put_str(&st->msgs, calls[i].name ? calls[i].name : "search");
    if (!err)
      err = im_buf_puts(&st->msgs, ",\"arguments\":");
    if (!err)
      err = put_str(&st->msgs, args);
    if (!err)
      err = im_buf_puts(&st->msgs, "}}");
    st->tokens += (uint32_t)im_simpletok_encode(args, strlen(args), NULL, 0);
  }
  if (!err)
    err = im_buf_puts(&st->msgs, n ? "]}" : "}");
  /* One tool result per call (a text answer without calls: a user nudge). */
  struct im_synth plain = *ag->synth;
  plain.chat = false;
  for (size_t i = 0; !err && i < (n ? n : 1); i++) {
    struct im_buf res;
    im_buf_init(&res, IM_PROMPT_TEXT_MAX);
    uint32_t got = 0;
    err = im_synth_text(&plain, tag * 16 + i, n ? ag->tool_result_len : 32, false, &res, &got);
    if (!err)
      err = im_buf_puts(&st->msgs,
                        n ? ",{\"role\":\"tool\",\"tool_call_id\":" : ",{\"role\":\"user\"");
    if (!err && n)
      err = put_str(&st->msgs, calls[i].id ? calls[i].id : "call-0");
    if (!err)
      err = im_buf_puts(&st->msgs, ",\"content\":\"");
    if (!err)
      err = im_buf_json_escape(&st->msgs, res.data ? res.data : "", res.len);
    if (!err)
      err = im_buf_puts(&st->msgs, "\"}");
    st->tokens += got;
    im_buf_cleanup(&res);
  }
  im_agent_calls_free(calls, IM_AGENT_MAX_CALLS);
  return err;
}

static void agent_end(void *ctx, void *state) {
  (void)ctx;
  struct astate *st = state;
  if (!st)
    return;
  im_buf_cleanup(&st->msgs);
  free(st);
}

static enum im_err agent_turn(void *ctx, uint64_t sid, uint32_t turn, void **state,
                              const char *answer, size_t answer_len, struct im_req_spec *spec) {
  const struct im_agents *ag = ctx;
  const struct im_synth *sy = ag->synth;
  struct astate *st = *state;
  if (!st) {
    if (!(st = calloc(1, sizeof *st)))
      return IM_NOMEM;
    im_buf_init(&st->msgs, IM_PROMPT_TEXT_MAX);
    *state = st;
  }
  uint64_t tag = sid * 1024 + turn;
  enum im_err err = IM_OK;
  if (turn == 0) {
    struct im_buf user;
    im_buf_init(&user, IM_PROMPT_TEXT_MAX);
    uint32_t n = 0;
    err = im_synth_text(sy, tag, sy->input_len, true, &user, &n);
    if (!err)
      err = im_buf_puts(&st->msgs, "{\"role\":\"user\",\"content\":\"");
    if (!err)
      err = im_buf_json_escape(&st->msgs, user.data ? user.data : "", user.len);
    if (!err)
      err = im_buf_puts(&st->msgs, "\"}");
    st->tokens = n;
    im_buf_cleanup(&user);
  } else {
    err = add_hop(ag, st, tag, answer, answer_len);
  }
  if (err)
    return err;
  memset(spec, 0, sizeof *spec);
  spec->messages_json = malloc(st->msgs.len + 3);
  size_t extra = sizeof tools_json + 32;
  spec->extra_json = malloc(extra);
  if (!spec->messages_json || !spec->extra_json)
    return IM_NOMEM;
  spec->messages_json[0] = '[';
  memcpy(spec->messages_json + 1, st->msgs.data, st->msgs.len);
  spec->messages_json[st->msgs.len + 1] = ']';
  spec->messages_json[st->msgs.len + 2] = '\0';
  snprintf(spec->extra_json, extra, "{%s%s}", tools_json,
           turn >= ag->hops ? ",\"tool_choice\":\"none\"" : "");
  if (sy->exact) {
    uint32_t exact = 0;
    if ((err = im_synth_count(sy, NULL, 0, spec->messages_json, &exact)))
      return err;
    st->tokens = exact;
  }
  spec->prompt_tokens = st->tokens;
  spec->max_tokens = im_sched_length(sy->output_len, sy->range_ratio, sy->seed ^ 0x2bULL, tag);
  spec->ignore_eos = false;
  spec->temperature = sy->temperature;
  spec->top_p = sy->top_p;
  im_synth_perturb(sy, tag, spec);
  spec->tools = 2; /* search, fetch */
  spec->session = sid + 1;
  spec->turn = turn + 1;
  return IM_OK;
}

void im_agents_ops(const struct im_agents *a, struct im_session_ops *ops) {
  memset(ops, 0, sizeof *ops);
  ops->turn = agent_turn;
  ops->end = agent_end;
  ops->turns = a->hops + 1;
  ops->think_ns = a->tool_latency_ns;
  ops->agent = true;
}
