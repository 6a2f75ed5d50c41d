/* `infermeter merge DIR... --out DIR`: the run directories of the shards of
 * one plan (run --shard i/N, or the ranks of an MPI run) as one run
 * directory, then its results like `report` (docs/distributed.md). */
#ifndef IM_CLI_MERGE_H
#define IM_CLI_MERGE_H

#include <stdbool.h>
#include <stddef.h>

/* Options of a merge (for the MPI run's rank 0, which merges its ranks). */
struct im__merge_opts {
  const char *const *dirs;
  size_t n_dirs;
  const char *out;
  bool partial;     /* merge what is there when shards are missing */
  bool quiet;       /* no summary */
  bool verdict;     /* print the verdict line after the summary (`merge`
                       without --quiet; an MPI run unless a rank failed) */
  bool no_html;
};

/* Merges and reports; the exit status (README "Exit status"): 0, 1 (usage,
 * different plans, missing shards without --partial), else the report's
 * (3 when any shard's client self-check was INVALID, 130 incomplete). */
int im__merge_dirs(const struct im__merge_opts *mo);

#endif
