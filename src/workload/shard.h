/* One plan split over N generator processes (docs/distributed.md): every
 * process plans the whole run from the same seed and takes its share.
 *
 *   - open loop (a schedule, session starts, trace rows): arrival j belongs
 *     to shard hash(seed, j) mod N (Poisson thinning: the shares are
 *     disjoint and their union is the unsharded schedule exactly);
 *   - closed loop: concurrency, sessions, a cap and a request count split
 *     total/N per shard, the remainder to the lowest shards.
 *
 * Pure: no I/O, no global state; safe from any thread. */
#ifndef IM_WORKLOAD_SHARD_H
#define IM_WORKLOAD_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* Whether arrival `j` of a plan seeded `seed` belongs to shard i of n
 * (always, when n <= 1). */
bool im_shard_mine(uint64_t seed, uint64_t j, uint32_t i, uint32_t n);

/* Thinning of a sorted schedule: the arrivals of shard i of n, in order,
 * into *times and their indices in the whole schedule into *index (both
 * malloc'ed, at least one element; the caller frees both). IM_OK, or
 * IM_NOMEM (both NULL). */
enum im_err im_shard_thin(const int64_t *all, size_t n_all, uint64_t seed, uint32_t i,
                          uint32_t n, int64_t **times, uint64_t **index, size_t *n_mine) IM_WUR;

/* Shard i's part of a total split over n: total/n, the remainder to the
 * lowest shards. */
uint64_t im_shard_split(uint64_t total, uint32_t i, uint32_t n);

#endif
