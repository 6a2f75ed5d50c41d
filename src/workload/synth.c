#include "workload/synth.h"
#include "workload/synth_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/rng.h"
#include "workload/stages.h"
#include "workload/sched.h"
#include "text/textgen.h"
#include "text/promptgen.h"
#include "text/simpletok.h"

/* open, text, close: what printf("[%s]") would append, without its format
 * parsing (about 850 instructions a call, twice per request). */
static enum im_err put_tagged(struct im_buf *b, const char *open, const char *text,
                              const char *close) {
  enum im_err err = im_buf_puts(b, open);
  if (!err)
    err = im_buf_puts(b, text);
  return err ? err : im_buf_puts(b, close);
}

/* open, tag in decimal, close: printf("[%" PRIu64 "]"). */
static enum im_err put_tag(struct im_buf *b, const char *open, uint64_t tag, const char *close) {
  enum im_err err = im_buf_puts(b, open);
  if (!err)
    err = im_buf_put_u64(b, tag);
  return err ? err : im_buf_puts(b, close);
}

/* Appends vocabulary text from g to b until *n reaches want tokens. */
static enum im_err fill_text(struct im_textgen *g, struct im_buf *b, uint32_t *n, uint32_t want) {
  enum im_err err = IM_OK;
  while (!err && *n < want) {
    const char *piece;
    size_t len;
    im_textgen_next(g, &piece, &len);
    size_t k = im_simpletok_encode(piece, len, NULL, 0);
    err = im_buf_append(b, piece, len);
    *n += (uint32_t)(k ? k : 1);
  }
  return err;
}

enum im_content im_synth_class(const struct im_synth *s, uint64_t tag) {
  if (!s->has_mix)
    return IM_CONTENT_TEXT;
  struct im_rng r;
  im_rng_seed(&r, im_mix64(s->seed ^ 0xc1a55ULL ^ (tag * 0x9e3779b97f4a7c15ULL)));
  return im_mix_pick(&s->mix, im_rng_uniform(&r));
}

static enum im_err count_text(const struct im_synth *s, const char *text, size_t len, uint32_t *n) {
  if (!s->tok) {
    *n = (uint32_t)im_simpletok_encode(text, len, NULL, 0);
    return IM_OK;
  }
  size_t k = 0;
  enum im_err err = im_tok_count(s->tok, text, len, &k);
  *n = (uint32_t)k;
  return err;
}

/* Under tok_mu when there is a tokenizer. */
static enum im_err count_locked(const struct im_synth *s, const char *text, size_t len,
                                const char *messages_json, uint32_t *n) {
  if (s->server_count)
    return s->server_count(s->server_ctx, text, len, messages_json, s->chat, n);
  if (!s->chat || s->tmpl == IM_CHAT_NONE)
    return count_text(s, text, len, n);
  struct im_buf r;
  im_buf_init(&r, IM_PROMPT_TEXT_MAX);
  enum im_err err;
  if (messages_json) {
    char msg[128];
    err = im_chat_render_json(s->tmpl, messages_json, strlen(messages_json), &r, msg, sizeof msg);
  } else {
    struct im_chat_msg m = {"user", 4, text, len};
    err = im_chat_render(s->tmpl, &m, 1, &r);
  }
  if (!err)
    err = count_text(s, r.data, r.len, n);
  im_buf_cleanup(&r);
  return err;
}

enum im_err im_synth_count(const struct im_synth *s, const char *text, size_t len,
                           const char *messages_json, uint32_t *n) {
  if (s->tok && s->tok_mu)
    pthread_mutex_lock(s->tok_mu);
  enum im_err err = count_locked(s, text, len, messages_json, n);
  if (s->tok && s->tok_mu)
    pthread_mutex_unlock(s->tok_mu);
  return err;
}

/* Exact lengths: "[salt]\n", the prefix group's text (exactly prefix_len
 * tokens, the same for the group), "\n[tag]\n", then the request's own text
 * of the content class, sized so that the whole prompt as the server counts
 * it (template included) has `want` tokens. The joins are where tokenizers
 * split (after "\n"), and the total is verified by a full count; a miss is
 * corrected and tried again (bounded), so *n_out is the true count. */
static enum im_err exact_text(const struct im_synth *s, uint64_t tag, uint32_t want, bool prefix,
                              struct im_buf *b, uint32_t *n_out) {
  size_t start = b->len;
  struct im_rng pick;
  im_rng_seed(&pick, im_mix64(s->seed ^ 0x9f1ULL ^ (tag * 0x9e3779b97f4a7c15ULL)));
  enum im_content cls = im_synth_class(s, tag);
  if (s->tok && s->tok_mu)
    pthread_mutex_lock(s->tok_mu);
  enum im_err err = put_tagged(b, "[", s->salt, "]\n");
  if (!err && prefix && s->prefix_groups && s->prefix_len && im_rng_uniform(&pick) < s->prefix_share) {
    uint64_t group = im_rng_below(&pick, s->prefix_groups);
    err = im_promptgen_exact(s->tok, IM_CONTENT_TEXT, im_mix64(s->seed ^ 0x5e7ULL ^ group),
                             s->prefix_len, b);
    if (!err)
      err = im_buf_puts(b, "\n");
  }
  if (!err)
    err = put_tag(b, "[", tag, "]\n");
  size_t head = b->len;
  uint32_t fixed = 0, total = 0;
  if (!err)
    err = count_locked(s, b->data + start, head - start, NULL, &fixed);
  if (!err && s->server_count) {
    err = im__synth_exact_server(s, b, start, cls, tag, want, fixed, n_out);
    if (s->tok && s->tok_mu)
      pthread_mutex_unlock(s->tok_mu);
    return err;
  }
  /* A miss comes from a join: the end of the text with what follows (a
   * template marker), or the start with the header. Other texts end
   * differently: retry with new seeds, at the planned length and at the
   * length corrected by the first miss, in turn. */
  int64_t body0 = (int64_t)want - (int64_t)fixed, body = body0, diff = 0;
  for (uint64_t attempt = 0; !err && attempt < 12; attempt++) {
    b->len = head;
    uint64_t seed = im_mix64(s->seed ^ tag ^ 0xb0d1ULL ^ (attempt << 40));
    if (body > 0)
      err = im_promptgen_exact(s->tok, cls, seed, (uint32_t)body, b);
    if (!err)
      err = count_locked(s, b->data + start, b->len - start, NULL, &total);
    if (err || total == want || body <= 0)
      break;
    if (attempt == 0)
      diff = (int64_t)want - (int64_t)total;
    body = attempt % 2 ? body0 : body0 + diff;
  }
  if (s->tok && s->tok_mu)
    pthread_mutex_unlock(s->tok_mu);
  *n_out = total;
  return err;
}

enum im_err im_synth_text(const struct im_synth *s, uint64_t tag, uint32_t want, bool prefix,
                          struct im_buf *b, uint32_t *n_out) {
  if (s->exact)
    return exact_text(s, tag, want, prefix, b, n_out);
  /* The run salt leads, so no two runs share a cached block. */
  size_t start = b->len;
  /* One allocation for the whole prompt (vocabulary pieces average under
   * 8 bytes) rather than a realloc per doubling. */
  im_buf_reserve_hint(b, 48 + (size_t)want * 8);
  enum im_err err = put_tagged(b, "[", s->salt, "]");
  uint32_t n = (uint32_t)im_simpletok_encode(b->data + start, b->len - start, NULL, 0);
  struct im_rng pick;
  im_rng_seed(&pick, im_mix64(s->seed ^ 0x9f1ULL ^ (tag * 0x9e3779b97f4a7c15ULL)));
  if (!err && prefix && s->prefix_groups && s->prefix_len && im_rng_uniform(&pick) < s->prefix_share) {
    /* A shared system prompt: the same text for every request of the group. */
    uint64_t group = im_rng_below(&pick, s->prefix_groups);
    struct im_textgen pg;
    im_textgen_init(&pg, im_mix64(s->seed ^ 0x5e7ULL ^ group), 1.0, 1.0, false);
    err = fill_text(&pg, b, &n, n + s->prefix_len);
  }
  /* Then what is this request's own: from here on nothing is shared. */
  if (!err)
    err = put_tag(b, " [", tag, "]");
  n += 3;
  struct im_textgen g;
  im_textgen_init(&g, im_mix64(s->seed ^ (tag * 0x9e3779b97f4a7c15ULL)), 1.0, 1.0, false);
  if (!err)
    err = fill_text(&g, b, &n, want);
  *n_out = n;
  return err;
}

enum im_err im_synth_request(void *ctx, uint64_t index, struct im_req_spec *spec) {
  const struct im_synth *s = ctx;
  uint32_t in = im_sched_length(s->input_len, s->range_ratio, s->seed ^ 0x1aULL, index);
  uint32_t out = im_sched_length(s->output_len, s->range_ratio, s->seed ^ 0x2bULL, index);
  struct im_buf b;
  im_buf_init(&b, IM_PROMPT_TEXT_MAX);
  uint32_t n = 0;
  enum im_err err = im_synth_text(s, index, in, true, &b, &n);
  if (err) {
    im_buf_cleanup(&b);
    return err;
  }
  memset(spec, 0, sizeof *spec);
  spec->prompt = b.data;
  spec->prompt_len = b.len;
  spec->prompt_tokens = n;
  spec->max_tokens = out;
  spec->ignore_eos = s->ignore_eos;
  spec->temperature = s->temperature;
  spec->top_p = s->top_p;
  if (s->has_mix)
    spec->content_class = im_synth_class(s, index) == IM_CONTENT_CODE ? IM_CLASS_CODE : IM_CLASS_TEXT;
  im_synth_perturb(s, index, spec);
  return IM_OK;
}

void im_synth_perturb(const struct im_synth *s, uint64_t index, struct im_req_spec *spec) {
  if (!s->perturb)
    return;
  char id[64];
  snprintf(id, sizeof id, "%" PRIu64 "-%" PRIu64, s->seed, index);
  double rate = 1.0, max_rate = 1.0;
  if (s->sched && s->times && index < s->n_times) {
    rate = im_sched_rate_at(s->sched, s->times[index]);
    max_rate = s->sched->kind >= IM_SCHED_RAMP && s->sched->rate_end > s->sched->rate
                   ? s->sched->rate_end
                   : s->sched->rate;
  }
  if (!isfinite(rate) || !isfinite(max_rate)) /* a burst: one rate throughout */
    rate = max_rate = 1.0;
  im_perturb(id, isnan(s->temperature) ? 1.0 : s->temperature, isnan(s->top_p) ? 1.0 : s->top_p,
             rate, max_rate, &spec->temperature, &spec->top_p);
}
