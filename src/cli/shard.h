/* One run split over several generator processes (docs/distributed.md):
 * `run --shard i/N --start-at TIME`, and rank i of N under mpirun. Every
 * process plans the whole run from the same seed and takes its share:
 *
 *   - open loop (a schedule, session starts, trace rows): arrival j belongs
 *     to shard hash(seed, j) mod N (Poisson thinning: the shares are
 *     disjoint and their union is the unsharded schedule exactly);
 *   - closed loop: --concurrency C, --sessions C, --max-concurrency M and a
 *     closed loop's --requests R split C/N per shard, the remainder to the
 *     lowest shards;
 *   - ids: an id v of a process (attempt, connection, a closed loop's
 *     request index) becomes i + N*v, unique over the shards whatever
 *     their --threads.
 *
 * Stage 0 starts at one agreed CLOCK_REALTIME instant, converted to each
 * process's CLOCK_MONOTONIC; with --shard every later stage starts when the
 * process is ready (its t0 line says when), under MPI at an instant rank 0
 * broadcasts (cli/mpi.h). Kept apart from run_opts.c like
 * run_agents.h: run_opts.c splices the options in. */
#ifndef IM_CLI_SHARD_H
#define IM_CLI_SHARD_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "workload/shard.h"

struct run_shard_opts {
  uint32_t index, count;      /* --shard i/N (count 0: not sharded) */
  bool start_at_given;        /* --start-at TIME */
  int64_t start_at_wall_ns;   /* CLOCK_REALTIME ns since the epoch */
  int64_t inject_offset_ns;   /* --clock-offset-inject (tests only): added to
                                 this process's wall clock as MPI measures it */
  bool mpi;                   /* set when launched under mpirun (cli/mpi.h) */
  int64_t clock_offset_ns;    /* MPI: rank 0's wall clock minus this rank's */
  int64_t clock_rtt_ns;       /* MPI: the round trip of that measurement */
  int64_t clock_correction_ns; /* added to start_at_wall_ns for this machine's
                                  CLOCK_REALTIME of the start (MPI) */
};

enum {
  O_SHARD_FIRST = 0x1100,
  O_SHARD = O_SHARD_FIRST,
  O_START_AT,
  O_CLOCK_INJECT,
  O_SHARD_LAST
};

/* clang-format off */
#define IM_RUN_SHARD_OPTIONS                                        \
  {"shard", required_argument, 0, O_SHARD},                          \
  {"start-at", required_argument, 0, O_START_AT},                    \
  {"clock-offset-inject", required_argument, 0, O_CLOCK_INJECT}
/* clang-format on */

/* Applies one option (code in [O_SHARD_FIRST, O_SHARD_LAST)); 0, or -1
 * with a message naming the flag. */
int im__shard_opt(struct run_shard_opts *s, int code, const char *arg);
/* The options' help text. */
void im__shard_usage(FILE *f);

/* "i/N" with 0 <= i < N <= 65536; 0 or -1. */
int im__shard_parse(const char *arg, uint32_t *index, uint32_t *count);
/* RFC 3339 ("2026-12-02T04:00:00Z", "...T04:00:00.5+01:00") or unix
 * seconds ("1796184000", "1796184000.25") to ns since the epoch; 0 or -1. */
int im__shard_parse_time(const char *arg, int64_t *wall_ns);

/* The shares themselves: workload/shard.h. */
/* CLOCK_REALTIME ns -> CLOCK_MONOTONIC ns of this process, from the pair
 * of reads (of several) that were closest together; *err_ns their spacing
 * (the conversion's uncertainty). */
int64_t im__shard_wall_to_mono(int64_t wall_ns, int64_t *err_ns);

/* The plan digest: a hash of what defines the plan (schedule, seed,
 * workload, stages; not the shard, the output or the process's settings),
 * as 16 hex digits, from a JSON object of those settings. */
void im__shard_digest(const json_t *plan, char out[17]);

#endif
