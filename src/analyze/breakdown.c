#include "analyze/breakdown.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

static const unsigned bucket_lo[IM_CTX_BUCKETS + 1] = {0, 4096, 8192, 16384, 32768, UINT32_MAX};
static const char *const bucket_names[IM_CTX_BUCKETS] = {"0-4K", "4-8K", "8-16K", "16-32K", "32K+"};

unsigned im_breakdown_bucket_lo(int i) {
  return i >= 0 && i <= IM_CTX_BUCKETS ? bucket_lo[i] : UINT32_MAX;
}

const char *im_breakdown_bucket_name(int i) {
  return i >= 0 && i < IM_CTX_BUCKETS ? bucket_names[i] : "?";
}

int im_breakdown_bucket(unsigned tokens) {
  int b = 0;
  while (b + 1 < IM_CTX_BUCKETS && tokens >= bucket_lo[b + 1])
    b++;
  return b;
}

static bool counted(const struct im_record *r) {
  return r->kind == IM_KIND_MEASURED && r->error == IM_EC_NONE && r->t_first >= 0;
}

static unsigned context_of(const struct im_record *r) {
  return r->prompt_tokens ? r->prompt_tokens : r->context_tokens;
}

/* TTFT and TPOT (ms) of the counted records that `pick` selects. */
struct group {
  double *ttft, *tpot, *ttft_tok; /* ms; ttft_tok: TTFT per uncached prompt token */
  size_t n, n_tpot, n_tok;
};

static void group_fill(struct group *g, const struct im_record *r, size_t n, int key,
                       int (*pick)(const struct im_record *)) {
  memset(g, 0, sizeof *g);
  g->ttft = malloc((n ? n : 1) * sizeof *g->ttft);
  g->tpot = malloc((n ? n : 1) * sizeof *g->tpot);
  g->ttft_tok = malloc((n ? n : 1) * sizeof *g->ttft_tok);
  if (!g->ttft || !g->tpot || !g->ttft_tok)
    return;
  for (size_t i = 0; i < n; i++) {
    if (!counted(&r[i]) || pick(&r[i]) != key)
      continue;
    double ttft = (double)(r[i].t_first - r[i].t_start) / 1e6;
    g->ttft[g->n++] = ttft;
    if (r[i].prompt_tokens > r[i].cached_tokens)
      g->ttft_tok[g->n_tok++] = ttft / (double)(r[i].prompt_tokens - r[i].cached_tokens);
    if (r[i].output_tokens >= 2)
      g->tpot[g->n_tpot++] =
          (double)(r[i].t_last - r[i].t_first) / 1e6 / (double)(r[i].output_tokens - 1);
  }
  im_stats_sort(g->ttft, g->n);
  im_stats_sort(g->tpot, g->n_tpot);
  im_stats_sort(g->ttft_tok, g->n_tok);
}

static void group_free(struct group *g) {
  free(g->ttft);
  free(g->tpot);
  free(g->ttft_tok);
}

static json_t *dist_json(const double *x, size_t n, const struct im_summary_config *sc) {
  if (!n)
    return json_null();
  json_t *o = json_pack("{s:f}", "mean", im_stats_mean(x, n));
  for (size_t i = 0; i < sc->n_percentiles; i++) {
    char key[32];
    snprintf(key, sizeof key, "p%g", sc->percentiles[i]);
    json_object_set_new(o, key, json_real(im_stats_pct_nearest(x, n, sc->percentiles[i] / 100.0)));
  }
  return o;
}

static int pick_bucket(const struct im_record *r) { return im_breakdown_bucket(context_of(r)); }
static int pick_class(const struct im_record *r) { return (int)r->content_class; }

json_t *im_breakdown_context_json(const struct im_record *r, size_t n,
                                  const struct im_summary_config *sc) {
  json_t *arr = json_array();
  for (int b = 0; b < IM_CTX_BUCKETS; b++) {
    struct group g;
    group_fill(&g, r, n, b, pick_bucket);
    json_t *o = json_pack("{s:s, s:I, s:o, s:I}", "bucket", bucket_names[b], "lo",
                          (json_int_t)bucket_lo[b], "hi",
                          b + 1 < IM_CTX_BUCKETS ? json_integer(bucket_lo[b + 1]) : json_null(),
                          "n", (json_int_t)g.n);
    json_object_set_new(o, "ttft_ms", dist_json(g.ttft, g.n, sc));
    json_object_set_new(o, "tpot_ms", dist_json(g.tpot, g.n_tpot, sc));
    /* docs/metrics.md §9 long-context robustness: uncached prefill per token. */
    json_object_set_new(o, "ttft_per_uncached_token_ms", dist_json(g.ttft_tok, g.n_tok, sc));
    json_array_append_new(arr, o);
    group_free(&g);
  }
  return arr;
}

json_t *im_breakdown_class_json(const struct im_record *r, size_t n,
                                const struct im_summary_config *sc) {
  json_t *obj = json_object();
  for (int c = IM_CLASS_TEXT; c < IM_CLASS_COUNT_; c++) {
    struct group g;
    group_fill(&g, r, n, c, pick_class);
    json_t *o = json_pack("{s:I}", "n", (json_int_t)g.n);
    json_object_set_new(o, "ttft_ms", dist_json(g.ttft, g.n, sc));
    json_object_set_new(o, "tpot_ms", dist_json(g.tpot, g.n_tpot, sc));
    json_object_set_new(obj, im_req_class_name((enum im_req_class)c), o);
    group_free(&g);
  }
  return obj;
}

json_t *im_breakdown_sessions_json(const struct im_record *r, size_t n) {
  uint64_t sessions = 0, turns = 0, failed = 0, max_ctx = 0, max_turn = 0;
  /* Sessions are numbered densely from 1 per run: a bitmap counts them. */
  uint64_t max_sid = 0;
  for (size_t i = 0; i < n; i++)
    if (r[i].session > max_sid)
      max_sid = r[i].session;
  unsigned char *seen = calloc(max_sid + 1, 1);
  for (size_t i = 0; seen && i < n; i++) {
    if (!r[i].session || r[i].kind == IM_KIND_RETRY)
      continue;
    if (!seen[r[i].session]) {
      seen[r[i].session] = 1;
      sessions++;
    }
    if (r[i].error == IM_EC_NONE && r[i].t_first >= 0)
      turns++;
    else if (r[i].kind != IM_KIND_ABORTED)
      failed++;
    if (r[i].turn > max_turn)
      max_turn = r[i].turn;
    if (context_of(&r[i]) > max_ctx)
      max_ctx = context_of(&r[i]);
  }
  free(seen);
  return json_pack("{s:I, s:I, s:o, s:I, s:I, s:I}", "sessions", (json_int_t)sessions,
                   "turns_completed", (json_int_t)turns, "turns_per_session_mean",
                   sessions ? json_real((double)turns / (double)sessions) : json_null(),
                   "max_turn", (json_int_t)max_turn, "context_tokens_max", (json_int_t)max_ctx,
                   "turns_failed", (json_int_t)failed);
}

static void row(FILE *f, const char *name, const struct group *g) {
  if (!g->n) {
    fprintf(f, "  %-8s %6s\n", name, "0");
    return;
  }
  fprintf(f, "  %-8s %6zu  %9.1f %9.1f %9.1f   %8.2f %8.2f %8.2f\n", name, g->n,
          im_stats_pct_nearest(g->ttft, g->n, 0.5), im_stats_pct_nearest(g->ttft, g->n, 0.9),
          im_stats_pct_nearest(g->ttft, g->n, 0.99),
          g->n_tpot ? im_stats_pct_nearest(g->tpot, g->n_tpot, 0.5) : NAN,
          g->n_tpot ? im_stats_pct_nearest(g->tpot, g->n_tpot, 0.9) : NAN,
          g->n_tpot ? im_stats_pct_nearest(g->tpot, g->n_tpot, 0.99) : NAN);
}

void im_breakdown_text(FILE *f, const struct im_record *r, size_t n,
                       const struct im_summary_config *sc, bool by_class) {
  (void)sc;
  bool any_session = false;
  int first = -1, buckets = 0;
  for (size_t i = 0; i < n; i++) {
    if (!counted(&r[i]))
      continue;
    any_session |= r[i].session != 0;
    int b = pick_bucket(&r[i]);
    if (first < 0)
      first = b;
    else if (b != first)
      buckets = 2;
  }
  const char *hdr = "  %-8s %6s  %9s %9s %9s   %8s %8s %8s\n";
  if (any_session || buckets > 1) {
    fprintf(f, "By context length (tokens; K = 1024)\n");
    fprintf(f, hdr, "context", "n", "TTFT p50", "p90", "p99 ms", "TPOT p50", "p90", "p99 ms");
    for (int b = 0; b < IM_CTX_BUCKETS; b++) {
      struct group g;
      group_fill(&g, r, n, b, pick_bucket);
      row(f, bucket_names[b], &g);
      group_free(&g);
    }
  }
  if (by_class) {
    fprintf(f, "By content class\n");
    fprintf(f, hdr, "class", "n", "TTFT p50", "p90", "p99 ms", "TPOT p50", "p90", "p99 ms");
    for (int c = IM_CLASS_TEXT; c < IM_CLASS_COUNT_; c++) {
      struct group g;
      group_fill(&g, r, n, c, pick_class);
      row(f, im_req_class_name((enum im_req_class)c), &g);
      group_free(&g);
    }
  }
}
