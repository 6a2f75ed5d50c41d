/* Fuzz target for the series.jsonl reader (src/record/series_read.c) and
 * everything downstream of it: the server figures (src/analyze/scraped.c)
 * and their JSON (src/report/scraped_json.c).
 *
 * Input: a series.jsonl file. Checks:
 *   - reading never fails but for memory, and the counts are consistent:
 *     bad lines <= lines, points within IM_SERIES_MAX_POINTS, every bad
 *     line number within the lines read and increasing;
 *   - a copy of the set computes the same figures as the set (the copy is
 *     deep and complete);
 *   - the figures of any set render to JSON that jansson can dump. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "analyze/scraped.h"
#include "fuzz.h"
#include "record/series.h"
#include "report/scraped_json.h"

static void check_counts(const struct im_series_set *s) {
  size_t pts = s->n_tcp + s->n_gpu + s->n_client;
  REQUIRE(s->n_src <= IM_SERIES_MAX_SOURCES);
  for (size_t i = 0; i < s->n_src; i++) {
    pts += s->src[i].n_pts;
    REQUIRE(s->src[i].n_engines <= IM_SERIES_MAX_ENGINES);
    REQUIRE(s->src[i].n_raw <= IM_SERIES_MAX_RAW);
    REQUIRE(s->src[i].n_per_series <= IM_SERIES_MAX_PER_SERIES);
  }
  REQUIRE(pts <= IM_SERIES_MAX_POINTS);
  REQUIRE(s->n_bad <= s->lines);
  REQUIRE(s->n_names <= IM_SERIES_MAX_NAMES);
  for (size_t i = 0; i < s->n_bad && i < IM_SERIES_MAX_BAD; i++) {
    REQUIRE(s->bad[i].line >= 1 && s->bad[i].line <= s->lines);
    REQUIRE(i == 0 || s->bad[i].line > s->bad[i - 1].line);
  }
}

static bool same(double a, double b) {
  return (isnan(a) && isnan(b)) || a == b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct im_series_set *s = NULL, *c = NULL;
  if (im_series_read_mem((const char *)data, size, &s) != IM_OK)
    return 0;
  check_counts(s);
  struct im_server_ctx ctx = {.t0_mono = 0, .window_start_ns = 0, .window_end_ns = 1000000000,
                              .client_ttft_p50_ms = 10, .client_ttft_p99_ms = NAN,
                              .output_tokens = 100, .connections_opened = 1, .attempts = 2,
                              .kv_bytes_per_token = 1000, .series_from_ns = -1000000000,
                              .series_to_ns = 1000000000};
  struct im_server_figures f, g;
  enum im_err err = im_server_figures_compute(s, &ctx, &f);
  if (!err && im_series_copy(s, &c) == IM_OK) {
    REQUIRE(im_server_figures_compute(c, &ctx, &g) == IM_OK);
    REQUIRE(g.n_src == f.n_src);
    for (size_t i = 0; i < f.n_src; i++) {
      REQUIRE(same(f.src[i].prefix_cache_hit_rate, g.src[i].prefix_cache_hit_rate));
      REQUIRE(same(f.src[i].kv_usage_hit_rate_r, g.src[i].kv_usage_hit_rate_r));
      REQUIRE(f.src[i].n_series == g.src[i].n_series);
    }
    REQUIRE(same(f.gpu.energy_j, g.gpu.energy_j));
    im_server_figures_cleanup(&g);
  }
  if (!err) {
    json_t *metrics = json_object(), *series = json_object(), *client = NULL;
    if (im_server_json(&f, metrics, series) == IM_OK) {
      char *text = json_dumps(metrics, 0);
      free(text);
    }
    if (im_client_series_json(s, 0, 2, &client) == IM_OK)
      REQUIRE(json_array_size(client) == 2);
    json_decref(client);
    json_decref(metrics);
    json_decref(series);
  }
  im_server_figures_cleanup(&f);
  im_series_free(c);
  im_series_free(s);
  return 0;
}
