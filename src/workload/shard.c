/* A plan's share for one of several generators (workload/shard.h). */
#include "workload/shard.h"

#include <stdlib.h>

#include "core/rng.h"

bool im_shard_mine(uint64_t seed, uint64_t j, uint32_t i, uint32_t n) {
  if (n <= 1)
    return true;
  uint64_t h = im_mix64(im_mix64(seed ^ 0x7368617264ULL /* "shard" */) ^ j);
  return h % n == i;
}

enum im_err im_shard_thin(const int64_t *all, size_t n_all, uint64_t seed, uint32_t i,
                          uint32_t n, int64_t **times, uint64_t **index, size_t *n_mine) {
  *times = malloc((n_all ? n_all : 1) * sizeof **times);
  *index = malloc((n_all ? n_all : 1) * sizeof **index);
  *n_mine = 0;
  if (!*times || !*index) {
    free(*times);
    free(*index);
    *times = NULL;
    *index = NULL;
    return IM_NOMEM;
  }
  for (size_t j = 0; j < n_all; j++)
    if (im_shard_mine(seed, j, i, n)) {
      (*times)[*n_mine] = all[j];
      (*index)[(*n_mine)++] = j;
    }
  return IM_OK;
}

uint64_t im_shard_split(uint64_t total, uint32_t i, uint32_t n) {
  if (n <= 1)
    return total;
  return total / n + (i < total % n);
}
