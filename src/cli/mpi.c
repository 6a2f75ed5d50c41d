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
#include "cli/run_int.h"
#include "core/clock.h"
#include "core/rng.h"

#ifdef IM_HAVE_MPI
#include <mpi.h>
#endif

struct im__mpi_state im__mpi;
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
int im__mpi_run(int argc, char **argv, int (*run)(int, char **)) { return run(argc, argv); }
#else

/* The value of --NAME in argv ("--NAME V" or "--NAME=V"), or NULL. */
static const char *arg_value(int argc, char **argv, const char *name) {
  size_t n = strlen(name);
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--", 2) || strncmp(argv[i] + 2, name, n))
      continue;
    if (argv[i][2 + n] == '=')
      return argv[i] + 3 + n;
    if (!argv[i][2 + n] && i + 1 < argc)
      return argv[i + 1];
  }
  return NULL;
}

static bool has_flag(int argc, char **argv, const char *flag) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], flag))
      return true;
  return false;
}

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

/* argv without --out, --seed and --start-at (and their values), with this
 * rank's: its directory, the plan's seed, its shard, the agreed start. */
static char **rank_argv(int argc, char **argv, char bufs[4][4200], int *out_argc) {
  char **v = calloc((size_t)argc + 12, sizeof *v);
  if (!v)
    return NULL;
  int n = 0;
  v[n++] = argv[0];
  const char *drop[] = {"--out", "--seed", "--start-at"};
  for (int i = 1; i < argc; i++) {
    bool skip = false;
    for (size_t k = 0; k < 3 && !skip; k++) {
      size_t l = strlen(drop[k]);
      if (!strcmp(argv[i], drop[k])) {
        skip = true;
        i++; /* its value */
      } else if (!strncmp(argv[i], drop[k], l) && argv[i][l] == '=') {
        skip = true;
      }
    }
    if (!skip)
      v[n++] = argv[i];
  }
  const char *add[] = {"--out", bufs[0], "--seed", bufs[1], "--shard", bufs[2], "--start-at",
                       bufs[3], "--quiet", "--no-history"};
  for (size_t k = 0; k < sizeof add / sizeof add[0]; k++)
    v[n++] = (char *)add[k];
  *out_argc = n;
  return v;
}

int im__mpi_run(int argc, char **argv, int (*run)(int, char **)) {
  inside = true;
  if (has_flag(argc, argv, "-h") || has_flag(argc, argv, "--help"))
    return run(argc, argv);
  int provided = 0, rank = 0, size = 1;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "infermeter run: MPI_Init failed\n");
    return EXIT_USAGE;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  /* Rank 0 decides the output directory, the seed and the start. */
  char out[4096] = "";
  uint64_t seed = 0;
  int64_t start = 0, inject = 0;
  const char *a = arg_value(argc, argv, "clock-offset-inject");
  bool neg = a && a[0] == '-';
  if (a && !im_parse_duration(a + neg, &inject) && neg)
    inject = -inject;
  if (rank == 0) /* the reference clock stays true */
    inject = 0;
  if (rank == 0) {
    const char *o = arg_value(argc, argv, "out"), *s = arg_value(argc, argv, "seed");
    if (o) {
      snprintf(out, sizeof out, "%s", o);
    } else {
      time_t t = time(NULL);
      struct tm tm;
      localtime_r(&t, &tm);
      mkdir("results", 0755);
      strftime(out, sizeof out, "results/mpi-%Y%m%d-%H%M%S", &tm);
    }
    seed = s ? strtoull(s, NULL, 0) : im_mix64((uint64_t)im_wall_ns() ^ ((uint64_t)getpid() << 32));
  }
  MPI_Bcast(out, sizeof out, MPI_CHAR, 0, MPI_COMM_WORLD);
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  measure_offsets(rank, size, inject);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    const char *s = arg_value(argc, argv, "start-at");
    /* A common future instant: 2 s leaves every rank time to plan. */
    if (!s || im__shard_parse_time(s, &start))
      start = ((im_wall_ns() + 2000000000) / 1000000 + 1) * 1000000;
  }
  MPI_Bcast(&start, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  im__mpi = (struct im__mpi_state){.on = true, .rank = rank, .size = size,
                                   .offset_ns = im__mpi.offset_ns, .rtt_ns = im__mpi.rtt_ns,
                                   .correction_ns = -im__mpi.offset_ns - inject,
                                   .verbose = rank == 0 && !has_flag(argc, argv, "--quiet") &&
                                              !has_flag(argc, argv, "-q")};
  char bufs[4][4200];
  if (mkdir(out, 0755) && errno != EEXIST)
    fprintf(stderr, "infermeter run: rank %d: cannot create %s: %s\n", rank, out, strerror(errno));
  snprintf(bufs[0], sizeof bufs[0], "%s/rank-%d", out, rank);
  snprintf(bufs[1], sizeof bufs[1], "%" PRIu64, seed);
  snprintf(bufs[2], sizeof bufs[2], "%d/%d", rank, size);
  snprintf(bufs[3], sizeof bufs[3], "%" PRId64 ".%09" PRId64, start / 1000000000,
           start % 1000000000);
  int rargc = 0;
  char **rargv = rank_argv(argc, argv, bufs, &rargc);
  int rc = rargv ? run(rargc, rargv) : EXIT_USAGE;
  free(rargv);
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
                                .out = out, .quiet = has_flag(argc, argv, "--quiet"),
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
