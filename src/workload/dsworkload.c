#include "workload/dsworkload.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/rng.h"
#include "text/textgen.h"
#include "text/promptgen.h"
#include "text/simpletok.h"

/* Appends about `tokens` tokens of vocabulary text seeded by `seed`;
 * returns the tokens added (by the built-in tokenizer's count). */
static uint32_t append_text(struct im_buf *b, uint64_t seed, uint32_t tokens, enum im_err *err) {
  struct im_textgen g;
  im_textgen_init(&g, seed, 1.0, 1.0, false);
  uint32_t n = 0;
  while (!*err && n < tokens) {
    const char *piece;
    size_t len;
    im_textgen_next(&g, &piece, &len);
    size_t k = im_simpletok_encode(piece, len, NULL, 0);
    *err = im_buf_append(b, piece, len);
    n += (uint32_t)(k ? k : 1);
  }
  return n;
}

static enum im_err messages_json(const struct im_ds_item *it, const char *salt, struct im_buf *b) {
  enum im_err err = im_buf_puts(b, "[");
  for (size_t i = 0; i < it->n_messages && !err; i++) {
    const struct im_ds_message *m = &it->messages[i];
    err = im_buf_puts(b, i ? ",{\"role\":\"" : "{\"role\":\"");
    if (!err)
      err = im_buf_json_escape(b, m->role, strlen(m->role));
    if (!err)
      err = im_buf_puts(b, "\",\"content\":\"");
    if (!err && i == 0 && salt) /* the run's salt leads the first message */
      err = im_buf_printf(b, "[%s] ", salt);
    if (!err)
      err = im_buf_json_escape(b, m->content, strlen(m->content));
    if (!err)
      err = im_buf_puts(b, "\"}");
  }
  if (!err)
    err = im_buf_puts(b, "]");
  return err;
}

enum im_err im_dsw_request(void *ctx, uint64_t index, struct im_req_spec *spec) {
  const struct im_dsw *w = ctx;
  const struct im_synth *sy = w->synth;
  size_t k = (size_t)(index % w->ds->n);
  const struct im_ds_item *it = &w->ds->items[w->order ? w->order[k] : k];
  memset(spec, 0, sizeof *spec);
  struct im_buf b;
  im_buf_init(&b, IM_PROMPT_TEXT_MAX);
  enum im_err err = IM_OK;
  uint32_t n = 0;
  const char *salt = sy->salt[0] ? sy->salt : NULL;
  if (it->n_messages) {
    err = messages_json(it, salt, &b);
    if (err) {
      im_buf_cleanup(&b);
      return err;
    }
    for (size_t i = 0; i < it->n_messages; i++)
      n += (uint32_t)im_simpletok_encode(it->messages[i].content, strlen(it->messages[i].content),
                                         NULL, 0);
    if (!err) {
      spec->messages_json = b.data;
      /* For the completions backend: the contents, one per line. */
      struct im_buf p;
      im_buf_init(&p, IM_PROMPT_TEXT_MAX);
      for (size_t i = 0; i < it->n_messages && !err; i++)
        err = im_buf_printf(&p, "%s%s", i ? "\n" : "", it->messages[i].content);
      spec->prompt = p.data;
      spec->prompt_len = p.len;
    }
  } else {
    if (salt)
      err = im_buf_printf(&b, "[%s] ", salt);
    if (!err && it->prompt) {
      err = im_buf_puts(&b, it->prompt);
      n = (uint32_t)im_simpletok_encode(it->prompt, strlen(it->prompt), NULL, 0);
    } else if (!err) {
      /* Lengths only (a trace): shared blocks first, then this request's own. */
      uint32_t want = it->input_len > 0 ? (uint32_t)it->input_len : sy->input_len;
      for (size_t h = 0; h < it->n_hash_ids && !err && n < want; h++)
        n += append_text(&b, im_mix64(sy->seed ^ 0xb10cULL ^ it->hash_ids[h]),
                         IM_DSW_BLOCK_TOKENS, &err);
      if (!err && n < want) {
        err = im_buf_printf(&b, " [%" PRIu64 "]", index);
        if (!err)
          n += append_text(&b, im_mix64(sy->seed ^ (index * 0x9e3779b97f4a7c15ULL)), want - n, &err);
      }
    }
    spec->prompt = b.data;
    spec->prompt_len = b.len;
  }
  if (!err && it->extra) {
    spec->extra_json = strdup(it->extra);
    if (!spec->extra_json)
      err = IM_NOMEM;
  }
  if (err) {
    im_req_spec_cleanup(spec);
    return err;
  }
  /* With a tokenizer or a chat template declared: the count the server makes. */
  if (sy->exact &&
      im_synth_count(sy, spec->prompt, spec->prompt_len, sy->chat ? spec->messages_json : NULL, &n) != IM_OK)
    n = 0;
  spec->prompt_tokens = n;
  spec->max_tokens = it->output_len > 0 ? (uint32_t)it->output_len : sy->output_len;
  spec->ignore_eos = sy->ignore_eos;
  spec->temperature = sy->temperature;
  spec->top_p = sy->top_p;
  im_synth_perturb(sy, index, spec);
  return IM_OK;
}
