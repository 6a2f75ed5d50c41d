/* Token counts from the target's /tokenize (srvtok.h). */
#include "load/srvtok.h"
#include "net/net.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"

#define CACHE_SLOTS 65536u
#define TEXT_MAX ((size_t)64 << 20)
/* A /tokenize answer lists every id: 2^22 ids of up to 8 digits. */
#define ANSWER_MAX ((size_t)48 << 20)

struct slot {
  uint64_t hash;
  uint64_t len;
  uint32_t count;
  bool used;
};

enum shape { SHAPE_UNKNOWN, SHAPE_VLLM, SHAPE_LLAMACPP };

struct im_srvtok {
  pthread_mutex_t mu;
  CURL *easy;
  struct curl_slist *hdrs;
  char *base, *model;
  const struct im_net *net;
  enum shape shape;
  struct slot *cache;
  uint64_t requests, hits;
  char first_error[256];
};

enum im_err im_srvtok_new(const struct im_srvtok_cfg *cfg, struct im_srvtok **out) {
  *out = NULL;
  struct im_srvtok *t = calloc(1, sizeof *t);
  if (!t)
    return IM_NOMEM;
  pthread_mutex_init(&t->mu, NULL);
  t->base = strdup(cfg->base_url);
  t->model = strdup(cfg->model ? cfg->model : "");
  t->cache = calloc(CACHE_SLOTS, sizeof *t->cache);
  t->easy = curl_easy_init();
  t->net = cfg->net;
  t->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
  if (t->hdrs && cfg->api_key) {
    size_t n = strlen(cfg->api_key) + 32;
    char *auth = malloc(n);
    if (auth) {
      snprintf(auth, n, "Authorization: Bearer %s", cfg->api_key);
      struct curl_slist *h = curl_slist_append(t->hdrs, auth);
      memset(auth, 0, n); /* the key lives on only in curl's list */
      free(auth);
      t->hdrs = h;
    } else {
      curl_slist_free_all(t->hdrs);
      t->hdrs = NULL;
    }
  }
  if (!t->base || !t->model || !t->cache || !t->easy || !t->hdrs) {
    im_srvtok_free(t);
    return IM_NOMEM;
  }
  *out = t;
  return IM_OK;
}

void im_srvtok_free(struct im_srvtok *t) {
  if (!t)
    return;
  if (t->easy)
    curl_easy_cleanup(t->easy);
  curl_slist_free_all(t->hdrs);
  pthread_mutex_destroy(&t->mu);
  free(t->cache);
  free(t->base);
  free(t->model);
  free(t);
}

void im_srvtok_stats(struct im_srvtok *t, uint64_t *requests, uint64_t *cache_hits) {
  pthread_mutex_lock(&t->mu);
  *requests = t->requests;
  *cache_hits = t->hits;
  pthread_mutex_unlock(&t->mu);
}

void im_srvtok_last_error(struct im_srvtok *t, char *msg, size_t msg_len) {
  pthread_mutex_lock(&t->mu);
  snprintf(msg, msg_len, "%s", t->first_error);
  pthread_mutex_unlock(&t->mu);
}

/* FNV-1a, 64 bits, continued from h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ s[i]) * 0x100000001b3ULL;
  return h;
}

static size_t on_body(char *d, size_t s, size_t n, void *ud) {
  return im_buf_append(ud, d, s * n) == IM_OK ? s * n : 0;
}

/* POSTs body to base+path; the HTTP status (0: no answer) and the answer as
 * JSON in *out (NULL when not JSON). Under t->mu. */
static long post(struct im_srvtok *t, const char *path, const char *body, json_t **out, char *msg,
                 size_t msg_len) {
  *out = NULL;
  struct im_buf ans;
  im_buf_init(&ans, ANSWER_MAX);
  size_t n = strlen(t->base) + strlen(path) + 1;
  char *url = malloc(n);
  if (!url)
    return 0;
  snprintf(url, n, "%s%s", t->base, path);
  CURL *e = t->easy;
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->hdrs);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &ans);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 60000L);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  im_net_apply(e, t->net, true);
  long status = 0;
  CURLcode rc = curl_easy_perform(e);
  t->requests++;
  if (rc == CURLE_OK) {
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    *out = json_loadb(ans.data ? ans.data : "", ans.len, 0, NULL);
    if (status != 200)
      snprintf(msg, msg_len, "POST %s answered HTTP %ld: %.120s", url, status,
               ans.data ? ans.data : "");
    else if (!*out)
      snprintf(msg, msg_len, "POST %s answered 200 with a body that is not JSON", url);
  } else {
    snprintf(msg, msg_len, "POST %s: %s", url, curl_easy_strerror(rc));
  }
  free(url);
  im_buf_cleanup(&ans);
  return status;
}

/* vLLM's request shapes: vllm/entrypoints/openai/protocol.py,
 * TokenizeCompletionRequest {model, prompt, add_special_tokens (default
 * true)} and TokenizeChatRequest {model, messages, add_generation_prompt
 * (default true), add_special_tokens (default false)}; the answer,
 * TokenizeResponse, is {count, max_model_len, tokens}. */
static json_t *vllm_body(const struct im_srvtok *t, const char *text, size_t len, json_t *messages,
                         bool special) {
  json_t *o = json_object();
  json_object_set_new(o, "model", json_string(t->model));
  if (messages) {
    json_object_set(o, "messages", messages);
  } else {
    json_t *p = json_stringn(text, len); /* NULL when not UTF-8 */
    if (!p) {
      json_decref(o);
      return NULL;
    }
    json_object_set_new(o, "prompt", p);
    json_object_set_new(o, "add_special_tokens", json_boolean(special));
  }
  return o;
}

/* The count in a /tokenize answer: "count" (vLLM, SGLang, serve), else the
 * length of "tokens" (llama.cpp); -1 when neither. */
static int64_t answer_count(json_t *a) {
  json_t *c = json_object_get(a, "count");
  if (json_is_integer(c) && json_integer_value(c) >= 0)
    return json_integer_value(c);
  json_t *ids = json_object_get(a, "tokens");
  return json_is_array(ids) ? (int64_t)json_array_size(ids) : -1;
}

/* POSTs o (consumed) to /tokenize; the count in the answer, or -1 and msg.
 * *vllm_like (when not NULL): the answer has vLLM's "count" or
 * "max_model_len". */
static int64_t post_count(struct im_srvtok *t, json_t *o, bool *vllm_like, char *msg,
                          size_t msg_len) {
  char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  if (!body) {
    snprintf(msg, msg_len, "the text to count is not valid UTF-8, or out of memory");
    return -1;
  }
  json_t *a = NULL;
  long st = post(t, "/tokenize", body, &a, msg, msg_len);
  free(body);
  int64_t n = st == 200 ? answer_count(a) : -1;
  if (st == 200 && n < 0)
    snprintf(msg, msg_len, "POST %s/tokenize: no \"count\" or \"tokens\" in the answer", t->base);
  if (vllm_like)
    *vllm_like = json_object_get(a, "count") || json_object_get(a, "max_model_len");
  json_decref(a);
  return n;
}

/* llama.cpp's shapes: tools/server/server.cpp, handle_tokenize reads
 * "content" and "add_special" (default false; a completion adds BOS when the
 * model says so, hence true for prompts) and answers {"tokens": [...]};
 * handle_apply_template renders "messages" with the model's template and
 * answers {"prompt": "..."} (what a chat completion then tokenizes with its
 * special tokens parsed). tools/server/tests/unit/test_tokenize.py uses
 * these fields. */
static int64_t llamacpp_count(struct im_srvtok *t, const char *text, size_t len, json_t *messages,
                              bool special, char *msg, size_t msg_len) {
  json_t *rendered = NULL;
  if (messages) {
    json_t *o = json_object();
    json_object_set(o, "messages", messages);
    char *body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!body)
      return -1;
    long st = post(t, "/apply-template", body, &rendered, msg, msg_len);
    free(body);
    json_t *p = json_object_get(rendered, "prompt");
    if (st != 200 || !json_is_string(p)) {
      if (st == 200)
        snprintf(msg, msg_len, "POST %s/apply-template: no \"prompt\" in the answer", t->base);
      json_decref(rendered);
      return -1;
    }
    text = json_string_value(p);
    len = json_string_length(p);
    special = true;
  }
  json_t *content = json_stringn(text, len), *o = content ? json_object() : NULL;
  json_object_set_new(o, "content", content);
  json_object_set_new(o, "add_special", json_boolean(special));
  json_decref(rendered);
  return post_count(t, o, NULL, msg, msg_len);
}

/* One count by the server; -1 and msg on failure. Under t->mu. */
static int64_t ask(struct im_srvtok *t, const char *text, size_t len, json_t *messages,
                   bool special, char *msg, size_t msg_len) {
  if (t->shape == SHAPE_LLAMACPP)
    return llamacpp_count(t, text, len, messages, special, msg, msg_len);
  bool vllm_like = false;
  int64_t n = post_count(t, vllm_body(t, text, len, messages, special), &vllm_like, msg, msg_len);
  if (n >= 0 && t->shape == SHAPE_UNKNOWN) {
    bool empty_text = messages ? json_array_size(messages) == 0 : len == 0;
    if (!vllm_like && n == 0 && !empty_text) { /* llama.cpp ignored "prompt" */
      t->shape = SHAPE_LLAMACPP;
      return llamacpp_count(t, text, len, messages, special, msg, msg_len);
    }
    t->shape = SHAPE_VLLM;
  }
  return n;
}

enum im_err im_srvtok_count(struct im_srvtok *t, const char *text, size_t len,
                            const char *messages_json, bool chat, bool special, uint32_t *n,
                            char *msg, size_t msg_len) {
  *n = 0;
  if (msg_len)
    msg[0] = '\0';
  if (len > TEXT_MAX || (messages_json && strlen(messages_json) > TEXT_MAX)) {
    snprintf(msg, msg_len, "a text over 64 MiB to count");
    return IM_LIMIT;
  }
  const char *key = chat && messages_json ? messages_json : text ? text : "";
  size_t key_len = chat && messages_json ? strlen(messages_json) : len;
  unsigned char tag = (unsigned char)((chat ? 1 : 0) | (special ? 2 : 0));
  uint64_t h = fnv(fnv(0xcbf29ce484222325ULL, &tag, 1), key, key_len);
  json_t *messages = NULL;
  if (chat) {
    messages = messages_json ? json_loads(messages_json, 0, NULL) : json_array();
    json_t *content = messages_json ? NULL : json_stringn(text ? text : "", len);
    if (content) {
      json_t *m = json_object();
      json_object_set_new(m, "role", json_string("user"));
      json_object_set_new(m, "content", content);
      json_array_append_new(messages, m);
    }
    if (!json_is_array(messages) || (!messages_json && !content)) {
      json_decref(messages);
      snprintf(msg, msg_len, "the messages to count are not a JSON array of UTF-8 text");
      return IM_INVAL;
    }
  }
  pthread_mutex_lock(&t->mu);
  struct slot *s = &t->cache[h % CACHE_SLOTS];
  enum im_err err = IM_OK;
  if (s->used && s->hash == h && s->len == key_len) {
    *n = s->count;
    t->hits++;
  } else {
    int64_t c = ask(t, text ? text : "", len, messages, special, msg, msg_len);
    if (c < 0 || c > UINT32_MAX) {
      err = IM_IO;
      if (!t->first_error[0])
        snprintf(t->first_error, sizeof t->first_error, "%s", msg);
    } else {
      *n = (uint32_t)c;
      *s = (struct slot){.hash = h, .len = key_len, .count = (uint32_t)c, .used = true};
    }
  }
  pthread_mutex_unlock(&t->mu);
  json_decref(messages);
  return err;
}
