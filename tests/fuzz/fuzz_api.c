/* Fuzz target for the OpenAI request decoder: the input is decoded as a
 * completions body and as a chat body; the results must respect the
 * documented ranges and failures must leave the struct cleaned up. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/oai_api.h"
#include "fuzz.h"

static void require(bool ok) {
  if (!ok)
    abort();
}

static void check(enum im_api_kind kind, enum im_err err, const struct im_api_req *r,
                  const char *msg) {
  if (err != IM_OK) {
    require(err == IM_PARSE || err == IM_INVAL || err == IM_NOMEM);
    require(msg[0] != '\0');
    require(!r->model && !r->prompt && !r->prompt_ids && !r->messages && !r->cache_salt &&
            !r->user && r->n_messages == 0 && r->n_prompt_ids == 0);
    return;
  }
  require(r->kind == kind);
  if (kind == IM_API_CHAT) {
    require(r->n_messages > 0 && r->messages);
    for (size_t i = 0; i < r->n_messages; i++)
      require(r->messages[i].role && r->messages[i].content);
    require(!r->prompt && !r->prompt_ids);
  } else {
    require((r->prompt != NULL) != (r->n_prompt_ids > 0));
    require(!r->prompt || r->prompt[0] != '\0');
    for (size_t i = 0; i < r->n_prompt_ids; i++)
      require(r->prompt_ids[i] <= INT32_MAX);
    require(!r->messages);
  }
  require(r->max_tokens == -1 || r->max_tokens >= 1);
  require(r->min_tokens >= 0);
  require(r->temperature >= 0 && r->temperature <= 2);
  require(r->top_p > 0 && r->top_p <= 1);
  require(r->stream || (!r->include_usage && !r->continuous_usage));
  require(!r->cache_salt || r->cache_salt[0] != '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const enum im_api_kind kinds[] = {IM_API_COMPLETIONS, IM_API_CHAT};
  for (size_t k = 0; k < 2; k++) {
    struct im_api_req r;
    char msg[128];
    /* A copy of exactly size bytes, so reads past the end are caught. */
    char *copy = malloc(size ? size : 1);
    if (!copy)
      return 0;
    if (size)
      memcpy(copy, data, size);
    enum im_err err = im_api_decode(kinds[k], copy, size, &r, msg, sizeof msg);
    check(kinds[k], err, &r, msg);
    im_api_req_cleanup(&r);
    im_api_req_cleanup(&r);
    free(copy);
  }
  return 0;
}
