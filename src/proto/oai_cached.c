/* Cached prompt tokens from what a chunk reported (oai_chunk.h). */
#include "proto/oai_chunk.h"

int64_t im_oai_cached_tokens(const struct im_oai_usage *u, const struct im_oai_timings *t) {
  if (u && u->cached_tokens >= 0)
    return u->cached_tokens;
  if (u && u->cache_hit_tokens >= 0)
    return u->cache_hit_tokens;
  if (t && t->cache_n >= 0)
    return t->cache_n;
  /* llama.cpp builds whose timings carry no cache_n still say how many
   * prompt tokens they evaluated (prompt_n); the rest of the prompt came
   * from the slot's cache. Seen: a repeated 30-token prompt answered with
   * usage.prompt_tokens 30 and timings.prompt_n 1 (issue 16). */
  if (u && t && u->prompt_tokens >= 0 && t->prompt_n >= 0 && t->prompt_n <= u->prompt_tokens)
    return u->prompt_tokens - t->prompt_n;
  return -1;
}
