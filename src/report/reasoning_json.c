/* See report/reasoning_json.h. */
#include "report/reasoning_json.h"

#include <math.h>

#include "report/breakdown_json.h"
#include "report/jsonw.h"

static int put(json_t *o, const char *k, json_t *v) {
  return !v || json_object_set_new(o, k, v);
}

static int group_into(json_t *o, const struct im_reasoning_group *g,
                      const struct im_summary_config *sc) {
  return im_jw_uint(o, "n", g->n) || put(o, "ttft_ms", im_bd_dist_json(&g->ttft, sc)) ||
         put(o, "ttfa_ms", im_bd_dist_json(&g->ttfa, sc)) ||
         put(o, "reasoning_tokens", im_bd_dist_json(&g->reasoning_tokens, sc)) ||
         put(o, "answer_tokens", im_bd_dist_json(&g->answer_tokens, sc)) ||
         put(o, "tpot_reasoning_ms", im_bd_dist_json(&g->tpot_reasoning, sc)) ||
         put(o, "tpot_answer_ms", im_bd_dist_json(&g->tpot_answer, sc)) ||
         put(o, "reasoning_share", im_bd_dist_json(&g->reasoning_share, sc));
}

json_t *im_reasoning_json(const struct im_reasoning *r, const struct im_summary_config *sc) {
  json_t *o = json_object(), *all = json_object(), *ctx = json_array();
  if (!o || !all || !ctx || put(o, "all", all) || put(o, "by_context", ctx)) {
    json_decref(o);
    return NULL;
  }
  if (im_jw_uint(o, "requests", r->n) || im_jw_uint(o, "completed", r->completed) ||
      im_jw_uint(o, "tokens_from_usage", r->tokens_from_usage) ||
      im_jw_uint(o, "no_answer", r->no_answer) || group_into(all, &r->all, sc)) {
    json_decref(o);
    return NULL;
  }
  for (int k = 0; k < IM_CTX_BUCKETS; k++) {
    json_t *b = json_object();
    unsigned hi = im_breakdown_bucket_lo(k + 1);
    if (!b || json_array_append_new(ctx, b) ||
        put(b, "bucket", json_string(im_breakdown_bucket_name(k))) ||
        im_jw_uint(b, "lo", im_breakdown_bucket_lo(k)) ||
        put(b, "hi", k + 1 < IM_CTX_BUCKETS ? json_integer(hi) : json_null()) ||
        group_into(b, &r->ctx[k], sc)) {
      json_decref(o);
      return NULL;
    }
  }
  return o;
}

static void row(FILE *f, const char *name, const struct im_reasoning_group *g) {
  fprintf(f, "  %-8s %5llu  %9.1f %9.1f  %8.0f %8.0f  %9.2f %9.2f  %5.0f %%\n", name,
          (unsigned long long)g->n, g->ttft.p50, g->ttfa.p50, g->reasoning_tokens.p50,
          g->answer_tokens.p50, g->tpot_reasoning.p50, g->tpot_answer.p50,
          100 * g->reasoning_share.p50);
}

void im_reasoning_text(FILE *f, const struct im_reasoning *r) {
  if (!r->n)
    return;
  fprintf(f,
          "Reasoning (medians; %llu of %llu completed requests reasoned, %llu without an "
          "answer):\n"
          "  context      n  TTFT(ms)  TTFA(ms)  reason.t  answer.t  TPOT.r(ms) TPOT.a(ms)  "
          "share\n",
          (unsigned long long)r->n, (unsigned long long)r->completed,
          (unsigned long long)r->no_answer);
  row(f, "all", &r->all);
  for (int k = 0; k < IM_CTX_BUCKETS; k++)
    if (r->ctx[k].n)
      row(f, im_breakdown_bucket_name(k), &r->ctx[k]);
}
