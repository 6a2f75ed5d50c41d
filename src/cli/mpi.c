/* The MPI job around `infermeter run`: see cli/mpi.h. */
#include "cli/mpi.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/merge.h"
#include "cli/run_cli.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/rng.h"

#ifdef IM_HAVE_MPI
#include <mpi.h>
#endif

#ifdef IM_HAVE_MPI
static bool inside;
#endif

bool im__mpi_launched(void) {
#ifdef IM_HAVE_MPI
  if (inside)
    return false;
  const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (getenv(vars[i]))
      return true;
#endif
  return false;
}

#ifndef IM_HAVE_MPI
int im__mpi_run(const struct im_run_config *o, int (*run)(const struct im_run_config *)) {
  return run(o);
}
#else

/* This rank's wall clock as the offset measurement sees it (a test may
 * shift it: --clock-offset-inject). */
static int64_t wall(int64_t inject) { return im_wall_ns() + inject; }

/* Clock offsets to rank 0: per rank, K ping-pongs; the one of least round
 * trip gives offset = t0 - (ta + tc) / 2 (NTP's estimate), |error| <= rtt/2. */
enum { PINGS = 16, TAG_PING = 71, TAG_PONG = 72 };
static void measure_offsets(int rank, int size, int64_t inject) {
  if (rank == 0) {
    for (int r = 1; r < size; r++)
      for (int k = 0; k < PINGS; k++) {
        int64_t dummy, t;
        MPI_Recv(&dummy, 1, MPI_INT64_T, r, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        t = wall(inject);
        MPI_Send(&t, 1, MPI_INT64_T, r, TAG_PONG, MPI_COMM_WORLD);
      }
    return;
  }
  int64_t best = INT64_MAX, off = 0;
  for (int k = 0; k < PINGS; k++) {
    int64_t ta = wall(inject), tb, tc;
    MPI_Send(&ta, 1, MPI_INT64_T, 0, TAG_PING, MPI_COMM_WORLD);
    MPI_Recv(&tb, 1, MPI_INT64_T, 0, TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    tc = wall(inject);
    if (tc - ta < best) {
      best = tc - ta;
      off = tb - (ta + (tc - ta) / 2);
    }
  }
  im__mpi.offset_ns = off;
  im__mpi.rtt_ns = best;
}

/* The rank's run: o with its directory, the plan's seed, its shard and
 * the agreed start, quiet (rank 0's merge speaks for the run). */
static int rank_run(const struct im_run_config *o, const char *dir, uint64_t seed, int rank,
                    int size, int64_t start, int (*run)(const struct im_run_config *)) {
  struct im_run_config rc = *o;
  rc.out_dir = dir;
  rc.seed = seed;
  rc.seed_given = true;
  rc.shard.index = (uint32_t)rank;
  rc.shard.count = (uint32_t)size;
  rc.shard.start_at_given = true;
  rc.shard.start_at_wall_ns = start;
  rc.quiet = rc.no_progress = rc.no_history = true;
  im_log_set_level(IM_LOG_ERROR);
  struct im_run_hooks h = {.say = im__run_say_stderr};
  char err[512];
  if (im_run_prepare(&rc, &h, err, sizeof err)) {
    if (err[0])
      fprintf(stderr, "infermeter run: %s\n", err);
    return EXIT_USAGE;
  }
  return run(&rc);
}

int im__mpi_run(const struct im_run_config *o, int (*run)(const struct im_run_config *)) {
  inside = true;
  int provided = 0, rank = 0, size = 1;
  if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "infermeter run: MPI_Init failed\n");
    return EXIT_USAGE;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  /* Rank 0 decides the output directory, the seed and the start. */
  char out[4096] = "";
  uint64_t seed = 0;
  int64_t start = 0, inject = o->shard.inject_offset_ns;
  if (rank == 0) /* the reference clock stays true */
    inject = 0;
  if (rank == 0) {
    if (o->out_dir) {
      snprintf(out, sizeof out, "%s", o->out_dir);
    } else {
      time_t t = time(NULL);
      struct tm tm;
      localtime_r(&t, &tm);
      mkdir("results", 0755);
      strftime(out, sizeof out, "results/mpi-%Y%m%d-%H%M%S", &tm);
    }
    seed = o->seed_given ? o->seed : im_mix64((uint64_t)im_wall_ns() ^ ((uint64_t)getpid() << 32));
  }
  MPI_Bcast(out, sizeof out, MPI_CHAR, 0, MPI_COMM_WORLD);
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  measure_offsets(rank, size, inject);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    /* A common future instant: 2 s leaves every rank time to plan. */
    start = o->shard.start_at_given ? o->shard.start_at_wall_ns
                                    : ((im_wall_ns() + 2000000000) / 1000000 + 1) * 1000000;
  }
  MPI_Bcast(&start, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  im__mpi = (struct im__mpi_state){.on = true, .rank = rank, .size = size,
                                   .offset_ns = im__mpi.offset_ns, .rtt_ns = im__mpi.rtt_ns,
                                   .correction_ns = -im__mpi.offset_ns - inject,
                                   .verbose = rank == 0 && !o->quiet};
  char dir[4200];
  if (mkdir(out, 0755) && errno != EEXIST)
    fprintf(stderr, "infermeter run: rank %d: cannot create %s: %s\n", rank, out, strerror(errno));
  snprintf(dir, sizeof dir, "%s/rank-%d", out, rank);
  int rc = rank_run(o, dir, seed, rank, size, start, run);
  im__mpi_stage_drain(); /* the stage exchanges the other ranks are still in */
  /* The final gather: each rank's exit status. */
  size_t ns = size > 0 && size <= 65536 ? (size_t)size : 1;
  int *all = rank == 0 ? calloc(ns, sizeof *all) : NULL;
  MPI_Gather(&rc, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0 && all) {
    int worst = 0;
    for (int r = 0; r < size; r++)
      if (all[r] == EXIT_USAGE || all[r] == EXIT_UNREACHABLE || all[r] == EXIT_ENGINE)
        worst = all[r] > worst ? all[r] : worst;
    char **dirs = calloc(ns, sizeof *dirs);
    char *names = calloc(ns, 4200);
    for (size_t r = 0; dirs && names && r < ns; r++) {
      dirs[r] = names + r * 4200;
      snprintf(dirs[r], 4200, "%s/rank-%zu", out, r);
    }
    struct im__merge_opts mo = {.dirs = (const char *const *)dirs, .n_dirs = ns,
                                .out = out, .quiet = o->quiet,
                                .verdict = worst == 0};
    int mrc = dirs && names ? im__merge_dirs(&mo) : EXIT_USAGE;
    rc = worst ? worst : mrc;
    free(dirs);
    free(names);
  }
  free(all);
  MPI_Finalize();
  return rc;
}
#endif
