#include "load/synth.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infermeter/buf.h"
#include "infermeter/rng.h"
#include "infermeter/stages.h"
#include "infermeter/sched.h"
#include "serve/textgen.h"
#include "workload/simpletok.h"

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

enum im_err im_synth_text(const struct im_synth *s, uint64_t tag, uint32_t want, bool prefix,
                          struct im_buf *b, uint32_t *n_out) {
  /* The run salt leads, so no two runs share a cached block. */
  size_t start = b->len;
  enum im_err err = im_buf_printf(b, "[%s]", s->salt);
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
    err = im_buf_printf(b, " [%" PRIu64 "]", tag);
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
  im_buf_init(&b, 0);
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
    max_rate = s->sched->kind == IM_SCHED_RAMP && s->sched->rate_end > s->sched->rate
                   ? s->sched->rate_end
                   : s->sched->rate;
  }
  im_perturb(id, isnan(s->temperature) ? 1.0 : s->temperature, isnan(s->top_p) ? 1.0 : s->top_p,
             rate, max_rate, &spec->temperature, &spec->top_p);
}
