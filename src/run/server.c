/* `infermeter run` and what the target says about tokens: its own counts
 * (--tokenizer server, load/srvtok.h) and its context limit, read before
 * the run so that a workload that cannot fit is refused with the numbers
 * instead of being sent to fail (docs/tokenizer.md). */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "run/run_int.h"
#include "load/srvtok.h"
#include "workload/sched.h"
#include "workload/session.h"
#include "workload/stages.h"
#include "workload/synth.h"

int im__run_srvtok_start(struct run_env *env, const struct im_net *net) {
  struct im_srvtok_cfg cfg = {.base_url = env->url, .model = env->model, .api_key = env->api_key,
                              .net = net};
  if (im_srvtok_new(&cfg, &env->srvtok) != IM_OK) {
    im__run_say(IM_RUN_SAY_ERROR, "--tokenizer server: out of memory");
    return -1;
  }
  /* One count now: a target without /tokenize is said before any load. */
  uint32_t n = 0;
  char msg[512];
  if (im_srvtok_count(env->srvtok, "Hello", 5, NULL, false, true, &n, msg, sizeof msg) != IM_OK) {
    im__run_say(IM_RUN_SAY_ERROR, "--tokenizer server: the target cannot count tokens: %s (use "
            "--tokenizer FILE with the model's tokenizer.json instead)",
            msg);
    return -1;
  }
  return 0;
}

void im__run_srvtok_stop(struct run_env *env) {
  if (!env->srvtok)
    return;
  uint64_t req = 0, hits = 0;
  im_srvtok_stats(env->srvtok, &req, &hits);
  char why[256];
  im_srvtok_last_error(env->srvtok, why, sizeof why);
  if (!env->o->quiet || why[0])
    im__run_say(IM_RUN_SAY_INFO,
                "--tokenizer server: %" PRIu64 " requests to the target's tokenizer, %" PRIu64
                " counts from the cache%s%s",
            req, hits, why[0] ? "; a count failed: " : "", why);
  im_srvtok_free(env->srvtok);
  env->srvtok = NULL;
}

enum im_err im__run_srvtok_count(void *ctx, const char *text, size_t len, const char *messages_json,
                                 bool chat, uint32_t *n) {
  char msg[512];
  enum im_err err = im_srvtok_count(ctx, text, len, messages_json, chat, true, n, msg, sizeof msg);
  return err;
}

uint32_t im__run_srvtok_output(void *ctx, const char *text, size_t len) {
  uint32_t n = 0;
  char msg[512];
  if (!len || im_srvtok_count(ctx, text, len, NULL, false, false, &n, msg, sizeof msg) != IM_OK)
    return 0;
  return n;
}

/* ---- the context limit ---------------------------------------------------- */

/* The limit and where it was read; 0 when the target tells none. */
static uint64_t read_limit(const struct run_env *env, json_t *models, const struct im_net *net,
                           char *src, size_t src_len) {
  /* vLLM: ModelCard.max_model_len in /v1/models data[]
   * (vllm/entrypoints/openai/protocol.py); infermeter serve the same. */
  json_t *data = json_object_get(models, "data"), *m;
  size_t i;
  json_array_foreach(data, i, m) {
    json_t *id = json_object_get(m, "id"), *len = json_object_get(m, "max_model_len");
    if (json_is_integer(len) && json_integer_value(len) > 0 &&
        (!env->model || (json_is_string(id) && !strcmp(json_string_value(id), env->model)))) {
      snprintf(src, src_len, "max_model_len of %s in /v1/models", env->model ? env->model : "");
      return (uint64_t)json_integer_value(len);
    }
  }
  /* llama.cpp: GET /props default_generation_settings.n_ctx (a slot's
   * context: the total divided by --parallel), else GET /slots, one object
   * per slot with its n_ctx (tools/server/README.md); the smallest slot. */
  char err[256];
  json_t *props = NULL;
  uint64_t limit = 0;
  if (im_http_get_json(env->url, "/props", env->api_key, net, &props, err, sizeof err) ==
      200) {
    json_t *n = json_object_get(json_object_get(props, "default_generation_settings"), "n_ctx");
    if (json_is_integer(n) && json_integer_value(n) > 0) {
      limit = (uint64_t)json_integer_value(n);
      snprintf(src, src_len, "n_ctx of a slot in /props");
    }
  }
  json_decref(props);
  json_t *slots = NULL;
  if (!limit &&
      im_http_get_json(env->url, "/slots", env->api_key, net, &slots, err, sizeof err) ==
          200) {
    json_array_foreach(slots, i, m) {
      json_t *n = json_object_get(m, "n_ctx");
      if (json_is_integer(n) && json_integer_value(n) > 0 &&
          (!limit || (uint64_t)json_integer_value(n) < limit))
        limit = (uint64_t)json_integer_value(n);
    }
    if (limit)
      snprintf(src, src_len, "the smallest slot's n_ctx in /slots");
  }
  json_decref(slots);
  return limit;
}

/* The largest of im_sched_length(mean, r, ...). */
static uint64_t length_max(uint32_t mean, double r) {
  if (!(r > 0.0))
    r = 0.0;
  if (r > 1.0)
    r = 1.0;
  double hi = ceil((double)mean * (1.0 + r));
  return hi < 1 ? 1 : (uint64_t)hi;
}

/* A stage's largest prompt and its max_tokens, in the client's counts; the
 * prompt 0 when it is not known before the run (a dataset, agents). */
static void stage_need(const struct run_env *env, const struct im_run_config *so, uint64_t *prompt,
                       uint64_t *out) {
  *out = length_max(so->output_len, so->range_ratio);
  *prompt = 0;
  if (env->use_ds || so->agent.agent_hops)
    return;
  if (!so->sessions && so->session_rate <= 0) {
    *prompt = length_max(so->input_len, so->range_ratio);
    return;
  }
  /* Sessions (workload/session.c): each turn adds the answer (at most
   * *out) and a user message that brings the context to the turn's target,
   * at least min_user (32) tokens. */
  struct im_synth sy = {.input_len = so->input_len, .output_len = so->output_len,
                        .range_ratio = so->range_ratio};
  struct im_sessions s = {.synth = &sy, .backend = so->backend, .turns = so->turns,
                          .ctx_start = so->ctx_start ? so->ctx_start : so->input_len,
                          .ctx_end = so->ctx_start ? so->ctx_end : so->input_len,
                          .min_user = 32};
  uint64_t tokens = 0;
  for (uint32_t t = 0; t < (so->turns ? so->turns : 1); t++) {
    if (t)
      tokens += *out;
    uint64_t target = im_sessions_target(&s, t);
    tokens += target > tokens + s.min_user ? target - tokens : s.min_user;
    if (tokens > *prompt)
      *prompt = tokens;
  }
}

int im__run_context_check(const struct run_env *env, const struct im_run_config *o,
                          const struct im_stage *stages, json_t *models, const struct im_net *net) {
  if (o->no_context_check)
    return 0;
  char src[128] = "";
  uint64_t limit = read_limit(env, models, net, src, sizeof src);
  if (!limit) {
    if (!o->quiet)
      im__run_say(IM_RUN_SAY_INFO, "the target tells no context limit (max_model_len, n_ctx): "
                      "prompt lengths not checked against it");
    return 0;
  }
  for (size_t i = 0; i < env->n_stages; i++) {
    struct im_run_config so = *o;
    im__run_apply_stage(&so, &stages[i]);
    uint64_t prompt = 0, out = 0;
    stage_need(env, &so, &prompt, &out);
    if (!prompt || prompt + out <= limit)
      continue;
    bool sess = so.sessions || so.session_rate > 0;
    char where[256] = "";
    if (env->n_stages > 1)
      snprintf(where, sizeof where, "stage %zu (%s): ", i, stages[i].label);
    im__run_say(IM_RUN_SAY_ERROR, "%s%s %" PRIu64 " tokens + max_tokens %" PRIu64 " = %" PRIu64
            " tokens, over the server's context of %" PRIu64 " tokens (%s)%s; lower %s "
            "--output-len, or pass --no-context-check to send them anyway",
            where, sess ? "a session's last turn reaches a context of" : "prompts of up to",
            prompt, out, prompt + out, limit, src,
            env->srvtok ? "" : " (prompt lengths as the client's tokenizer counts them)",
            sess ? "--context-growth / --turns /" : "--input-len / --range-ratio /");
    return -1;
  }
  return 0;
}
