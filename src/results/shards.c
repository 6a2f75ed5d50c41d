/* A merged run's checks (docs/distributed.md): its shards' clock alignment
 * and their own client self-checks, read from the manifest `merge` wrote. */
#include "results/results_int.h"

#include <stdlib.h>
#include <string.h>

#include "analyze/clocksync.h"

bool im__results_clock_check(const json_t *manifest, double itl_mean_ms, struct im_valid_check *c) {
  json_t *shards = json_object_get(json_object_get(manifest, "merged"), "shards");
  size_t n = json_array_size(shards);
  if (!n)
    return false;
  struct im_clock_shard *v = calloc(n, sizeof *v);
  if (!v)
    return false;
  for (size_t i = 0; i < n; i++) {
    json_t *s = json_array_get(shards, i);
    json_t *off = json_object_get(s, "clock_offset_ns"), *rtt = json_object_get(s, "clock_rtt_ns");
    v[i] = (struct im_clock_shard){.index = (uint32_t)json_integer_value(json_object_get(s, "index")),
                                   .measured = json_is_integer(off) && json_is_integer(rtt),
                                   .offset_ns = json_integer_value(off),
                                   .rtt_ns = json_integer_value(rtt)};
  }
  /* Rank 0 is the reference: nothing to measure there. */
  if (v[0].index == 0 && n > 1 && v[1].measured && !v[0].measured)
    v[0].measured = true;
  im_clock_check(v, n, itl_mean_ms, c);
  free(v);
  return true;
}

bool im__results_shards_invalid(const json_t *manifest, FILE *text) {
  json_t *shards = json_object_get(json_object_get(manifest, "merged"), "shards");
  bool bad = false;
  for (size_t i = 0; i < json_array_size(shards); i++) {
    json_t *s = json_array_get(shards, i);
    const char *v = json_string_value(json_object_get(s, "client_check"));
    if (v && !strcmp(v, "INVALID")) {
      bad = true;
      if (text)
        fprintf(text, "Client self-check INVALID on shard %" JSON_INTEGER_FORMAT
                      " (its own results.json): the merged run is INVALID\n",
                json_integer_value(json_object_get(s, "index")));
    }
  }
  return bad;
}
