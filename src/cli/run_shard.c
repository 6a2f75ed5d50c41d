/* `run --shard i/N --start-at TIME` inside a run (cli/shard.h): the checks,
 * the wait for the agreed instant, the manifest's "shard" object and the
 * plan digest. */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/mpi.h"
#include "cli/run_int.h"
#include "core/clock.h"
#include "core/rng.h"

/* Options that do not change the plan: where and how this process writes,
 * its own threads, its share. */
static bool per_process(const char *name) {
  static const char *const names[] = {"shard", "start-at", "clock-offset-inject", "out", "quiet",
                                      "no-progress", "history", "no-history", "metrics-listen",
                                      "metrics-linger", "pushgateway", "threads", "yes",
                                      "api-key-file", "otlp", "otlp-sample", "no-scrape",
                                      "scrape", "scrape-interval", "scrape-dcgm", "no-sockstat",
                                      "no-gpu"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(name, names[i]))
      return true;
  return false;
}

/* The plan: the command line less the per-process options, and the seed. */
static json_t *plan_json(const struct run_opts *o, int argc, char **argv) {
  json_t *args = json_array();
  int opt, idx = -1, saved_opterr = opterr;
  opterr = 0;
  optind = 1;
  while (args && (opt = getopt_long(argc, argv, "h", im__run_options, &idx)) != -1) {
    if (opt == '?' || idx < 0) {
      idx = -1;
      continue;
    }
    const char *name = im__run_options[idx].name;
    idx = -1;
    if (per_process(name))
      continue;
    json_array_append_new(args, json_pack("[s, s?]", name, optarg));
  }
  opterr = saved_opterr;
  optind = 1;
  return json_pack("{s:o, s:I}", "args", args ? args : json_array(), "seed", (json_int_t)o->seed);
}

int im__run_shard_check(const struct run_opts *o) {
  const struct run_shard_opts *sh = &o->shard;
  const char *why = NULL;
  if (sh->count && !o->seed_given)
    why = "--shard needs --seed: every shard plans the whole run from the same seed";
  else if (sh->count > 1 && !o->url)
    why = "shards must share one server: give --url (the built-in server would be one per shard)";
  else if (sh->count > 1 && !im__mpi.on && o->sweep && strstr(o->sweep, "auto"))
    why = "--sweep rate=auto decides each rate from the merged figures of the stage before, and "
          "--shard processes do not talk to each other: give the rates explicitly (--sweep "
          "rate=1,2,4), or run the shards as one MPI job (mpirun -np N infermeter run ...)";
  else if (sh->count > 1 && !im__mpi.on && o->sweep && o->stop_on_saturation)
    why = "--sweep stops at over-saturation or a failed SLO, and each --shard process would judge "
          "that from its own share, stopping at a different stage than the others: give "
          "--sweep-all so that every shard runs every stage, or run the shards as one MPI job "
          "(mpirun -np N infermeter run ...)";
  else if (sh->count && o->repeat > 1)
    why = "--shard and --repeat exclude each other";
  else if (sh->count && (o->concurrency || o->sessions) &&
           (o->concurrency ? o->concurrency : o->sessions) < sh->count)
    why = "a closed loop split over N shards needs at least N slots (--concurrency/--sessions)";
  else if (sh->count > 1 && (o->concurrency || o->sessions) &&
           im_shard_split(o->concurrency ? o->concurrency : o->sessions, sh->index, sh->count) <
               o->threads)
    why = "this shard's share of --concurrency/--sessions (C/N) is below --threads: every loader "
          "thread needs a slot";
  if (why)
    fprintf(stderr, "infermeter run: %s\n", why);
  return why ? -1 : 0;
}

void im__run_shard_defaults(struct run_opts *o) {
  if (im__mpi.on) { /* a rank of mpirun (cli/mpi.h) */
    o->shard.mpi = true;
    o->shard.clock_offset_ns = im__mpi.offset_ns;
    o->shard.clock_rtt_ns = im__mpi.rtt_ns;
    o->shard.clock_correction_ns = im__mpi.correction_ns;
  }
  /* The observers run on shard 0: one scrape of the server, not N. */
  if (o->shard.count && o->shard.index > 0) {
    o->no_scrape = true;
    o->no_gpu = true;
    o->no_sockstat = true;
  }
}

int im__run_shard_wait(const struct run_opts *o) {
  if (!o->shard.start_at_given)
    return 0;
  int64_t left = o->shard.start_at_wall_ns + o->shard.clock_correction_ns - im_wall_ns();
  if (left < -100000000)
    fprintf(stderr, "infermeter run: --start-at was %.3f s ago: the early arrivals go late (the "
                    "dispatch lag and the audit show it)\n", (double)-left / 1e9);
  else if (!o->quiet && left > 0)
    fprintf(stderr, "infermeter: waiting %.1f s for --start-at\n", (double)left / 1e9);
  /* Interruptible until a second before; the loaders wait the rest. */
  while (!im__run_interrupted &&
         (left = o->shard.start_at_wall_ns + o->shard.clock_correction_ns - im_wall_ns()) >
             1000000000) {
    int64_t step = left - 1000000000 < 100000000 ? left - 1000000000 : 100000000;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = step};
    nanosleep(&ts, NULL);
  }
  return im__run_interrupted ? -1 : 0;
}

json_t *im__run_shard_json(const struct run_opts *o, int argc, char **argv) {
  const struct run_shard_opts *sh = &o->shard;
  if (!sh->count)
    return NULL;
  char digest[17];
  json_t *plan = plan_json(o, argc, argv);
  im__shard_digest(plan, digest);
  json_decref(plan);
  json_t *j = json_pack("{s:I, s:I, s:s, s:s}", "index", (json_int_t)sh->index, "count",
                        (json_int_t)sh->count, "plan_digest", digest, "clock",
                        sh->mpi ? "mpi" : "system");
  if (j && sh->start_at_given) {
    int64_t err = 0;
    (void)im__shard_wall_to_mono(sh->start_at_wall_ns, &err);
    json_object_set_new(j, "start_at_unix_ns", json_integer(sh->start_at_wall_ns));
    json_object_set_new(j, "wall_to_monotonic_error_ns", json_integer(err));
  }
  if (j && sh->mpi) {
    json_object_set_new(j, "clock_offset_ns", json_integer(sh->clock_offset_ns));
    json_object_set_new(j, "clock_rtt_ns", json_integer(sh->clock_rtt_ns));
  }
  return j;
}
