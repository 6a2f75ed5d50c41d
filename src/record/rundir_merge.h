/* The stage events of several run directories of one plan (the shards of
 * `run --shard i/N` or the ranks of an MPI run) as one run's
 * (docs/distributed.md): counters add, histograms merge exactly (counts
 * add), the client's samples join with their threads renumbered and their
 * times on the common clock. */
#ifndef IM_RECORD_RUNDIR_MERGE_H
#define IM_RECORD_RUNDIR_MERGE_H

#include <stdint.h>

#include "core/err.h"
#include "record/rundir.h"

/* Adds src (a stage of one shard) into dst. dst starts zero-filled: the
 * first call copies src's plan (label, params, rule, t0); every call adds
 * its counters, threads and connections, keeps the busiest thread's CPU
 * share and the latest end, merges its receive lag, and appends its
 * samples with `thread_base` added to their thread and `offset_ns` (src's
 * origin minus dst's) to their times. dst->ended only when every src ended.
 * dst owns what it holds (free with im_rundir_stage_cleanup). IM_OK,
 * IM_NOMEM. */
enum im_err im_rundir_stage_merge(struct im_rundir_stage *dst, const struct im_rundir_stage *src,
                                  int64_t offset_ns, uint32_t thread_base) IM_WUR;
void im_rundir_stage_cleanup(struct im_rundir_stage *s);

/* Appends stage s's lines to stages.jsonl (fd O_APPEND): its start, its t0
 * when known, its end when it ended. 0, or -1 (errno). */
int im_rundir_stage_write(int fd, const struct im_rundir_stage *s, size_t index);

#endif
