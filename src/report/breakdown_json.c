/* See report/breakdown_json.h. */
#include "report/breakdown_json.h"

#include <math.h>

#include "report/jsonw.h"

json_t *im_bd_dist_json(const struct im_bd_dist *d, const struct im_summary_config *sc) {
  if (!d->n)
    return json_null();
  json_t *o = json_object();
  if (!o || im_jw_num(o, "mean", d->mean, NULL)) {
    json_decref(o);
    return NULL;
  }
  for (size_t i = 0; i < sc->n_percentiles && i < IM_MAX_PERCENTILES; i++) {
    char key[40], word[32];
    im_jw_pct_word(sc->percentiles[i], word, sizeof word);
    snprintf(key, sizeof key, "p%s", word);
    if (im_jw_num(o, key, d->pct[i], NULL)) {
      json_decref(o);
      return NULL;
    }
  }
  return o;
}

json_t *im_breakdown_context_json(const struct im_breakdown *b, const struct im_summary_config *sc) {
  json_t *arr = json_array();
  for (int k = 0; arr && k < IM_CTX_BUCKETS; k++) {
    const struct im_bd_group *g = &b->ctx[k];
    json_t *o = json_object();
    unsigned hi = im_breakdown_bucket_lo(k + 1);
    if (!o || json_array_append_new(arr, o) ||
        json_object_set_new(o, "bucket", json_string(im_breakdown_bucket_name(k))) ||
        im_jw_uint(o, "lo", im_breakdown_bucket_lo(k)) ||
        json_object_set_new(o, "hi", k + 1 < IM_CTX_BUCKETS ? json_integer(hi) : json_null()) ||
        im_jw_uint(o, "n", g->n) || json_object_set_new(o, "ttft_ms", im_bd_dist_json(&g->ttft, sc)) ||
        json_object_set_new(o, "tpot_ms", im_bd_dist_json(&g->tpot, sc)) ||
        json_object_set_new(o, "itl_ms", im_bd_dist_json(&g->itl, sc)) ||
        json_object_set_new(o, "ttft_per_uncached_token_ms",
                            im_bd_dist_json(&g->ttft_per_uncached_token, sc))) {
      json_decref(arr);
      return NULL;
    }
  }
  return arr;
}

json_t *im_breakdown_class_json(const struct im_breakdown *b, const struct im_summary_config *sc) {
  json_t *obj = json_object();
  for (int c = IM_CLASS_TEXT; obj && c < IM_CLASS_COUNT_; c++) {
    const struct im_bd_group *g = &b->cls[c];
    json_t *o = im_jw_child(obj, im_req_class_name((enum im_req_class)c));
    if (!o || im_jw_uint(o, "n", g->n) ||
        json_object_set_new(o, "ttft_ms", im_bd_dist_json(&g->ttft, sc)) ||
        json_object_set_new(o, "tpot_ms", im_bd_dist_json(&g->tpot, sc)) ||
        json_object_set_new(o, "itl_ms", im_bd_dist_json(&g->itl, sc))) {
      json_decref(obj);
      return NULL;
    }
  }
  return obj;
}

json_t *im_breakdown_sessions_json(const struct im_breakdown *b) {
  json_t *o = json_object();
  if (!o || im_jw_uint(o, "sessions", b->sess.sessions) ||
      im_jw_uint(o, "turns_completed", b->sess.turns_completed) ||
      im_jw_num(o, "turns_per_session_mean", b->sess.turns_per_session_mean, "no session") ||
      im_jw_uint(o, "max_turn", b->sess.max_turn) ||
      im_jw_uint(o, "context_tokens_max", b->sess.context_tokens_max) ||
      im_jw_uint(o, "turns_failed", b->sess.turns_failed)) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static void row(FILE *f, const char *name, const struct im_bd_group *g) {
  if (!g->n) {
    fprintf(f, "  %-8s %6s\n", name, "0");
    return;
  }
  fprintf(f, "  %-8s %6llu  %9.1f %9.1f %9.1f   %8.2f %8.2f %8.2f\n", name,
          (unsigned long long)g->n, g->ttft.p50, g->ttft.p90, g->ttft.p99, g->tpot.p50, g->tpot.p90,
          g->tpot.p99);
}

#define BREAKDOWN_HDR "  %-8s %6s  %9s %9s %9s   %8s %8s %8s\n"

void im_breakdown_text(FILE *f, const struct im_breakdown *b, bool by_class) {
  if (b->any_session || b->several_buckets) {
    fprintf(f, "By context length (tokens; K = 1024)\n");
    fprintf(f, BREAKDOWN_HDR, "context", "n", "TTFT p50", "p90", "p99 ms", "TPOT p50", "p90", "p99 ms");
    for (int k = 0; k < IM_CTX_BUCKETS; k++)
      row(f, im_breakdown_bucket_name(k), &b->ctx[k]);
  }
  if (by_class) {
    fprintf(f, "By content class\n");
    fprintf(f, BREAKDOWN_HDR, "class", "n", "TTFT p50", "p90", "p99 ms", "TPOT p50", "p90", "p99 ms");
    for (int c = IM_CLASS_TEXT; c < IM_CLASS_COUNT_; c++)
      row(f, im_req_class_name((enum im_req_class)c), &b->cls[c]);
  }
}

json_t *im_breakdown_long_context_json(const struct im_breakdown *b) {
  json_t *o = json_object();
  if (!o ||
      json_object_set_new(o, "shortest_bucket", b->lc_short_bucket >= 0
                                                     ? json_string(im_breakdown_bucket_name(b->lc_short_bucket))
                                                     : json_null()) ||
      json_object_set_new(o, "longest_bucket", b->lc_long_bucket >= 0
                                                    ? json_string(im_breakdown_bucket_name(b->lc_long_bucket))
                                                    : json_null()) ||
      im_jw_num(o, "ttft_per_uncached_token_growth", b->lc_growth,
                "fewer than two context buckets with uncached prompts") ||
      im_jw_num(o, "reference", IM_LONG_CONTEXT_GROWTH_REF, NULL) ||
      json_object_set_new(o, "flagged", json_boolean(b->lc_flag))) {
    json_decref(o);
    return NULL;
  }
  return o;
}
