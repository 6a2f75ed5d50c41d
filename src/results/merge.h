/* The shards of one plan as one run directory (`infermeter merge`, and an
 * MPI run's rank 0 over its ranks; docs/distributed.md).
 *
 * The merged directory is an ordinary run directory, so its results.json
 * is then computed like any other (results/results.h): manifest.json is
 * the lowest shard's with "shard" replaced by "merged" (the shards, their
 * clocks and own client self-checks, the missing and cut-short ones);
 * stages.jsonl holds each stage's events merged (record/rundir_merge.h) on
 * the lowest shard's clock; requests.jsonl is every shard's records,
 * streamed one line at a time, each with "shard" and its times moved by its
 * stage's offset (its t0's wall clock minus the reference's: 0 for a stage
 * that started at the agreed --start-at); series.jsonl and scrapes.prom are
 * shard 0's (the others run no observers).
 *
 * Errors: returns enum im_err and fills err with one line (directories of
 * different plans, a shard twice, missing shards without partial, a file
 * that cannot be read or written); nothing is printed. Ownership: the
 * caller keeps every string it passes. Threads: no global state. */
#ifndef IM_RESULTS_MERGE_H
#define IM_RESULTS_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

struct im_merge_config {
  const char *const *dirs; /* the shards' run directories */
  size_t n_dirs;
  const char *out;         /* the merged run directory (created) */
  bool partial;            /* merge what is there when shards are missing */
};

struct im_merge_outcome {
  size_t merged;           /* shards merged */
  uint32_t count;          /* shards in the plan */
  char digest[40];         /* the plan's digest */
};

enum im_err im_results_merge(const struct im_merge_config *c, struct im_merge_outcome *out,
                             char *err, size_t err_len) IM_WUR;

#endif
