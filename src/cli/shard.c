/* Shares of one plan over several processes (cli/shard.h). */
#include "cli/shard.h"
#include "cli/args.h"
#include "cli/run_cli.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/rng.h"

void im__shard_usage(FILE *f) {
  fprintf(f,
"Several generators (docs/distributed.md):\n"
"  --shard i/N               this process is shard i (from 0) of N: it sends the\n"
"                            arrivals whose seeded hash falls in its share (the N\n"
"                            shares together are the whole schedule exactly), and\n"
"                            C/N of a closed loop's --concurrency/--sessions,\n"
"                            --max-concurrency and --requests (remainder to the\n"
"                            lowest shards); needs --seed. Merge the N directories\n"
"                            with infermeter merge. Shard 0 runs the observers;\n"
"                            a --sweep needs --sweep-all (every shard, every stage)\n"
"  --start-at TIME           start stage 0 at this wall-clock instant (RFC 3339,\n"
"                            e.g. 2026-12-02T04:00:00Z, or unix seconds), agreed by\n"
"                            all shards; converted to this machine's monotonic clock\n"
"  Under mpirun (built with MPI) the rank and size give the shard, rank 0 picks\n"
"  the start instant of every stage and decides a sweep's next stage (rate=auto\n"
"  included, refused with --shard) from the ranks' merged figures; see\n"
"  docs/distributed.md.\n");
}

int im__shard_parse(const char *arg, uint32_t *index, uint32_t *count) {
  char *end;
  if (!arg || !isdigit((unsigned char)arg[0]))
    return -1;
  unsigned long long i = strtoull(arg, &end, 10);
  if (*end != '/' || !isdigit((unsigned char)end[1]))
    return -1;
  unsigned long long n = strtoull(end + 1, &end, 10);
  if (*end || n == 0 || n > 65536 || i >= n)
    return -1;
  *index = (uint32_t)i;
  *count = (uint32_t)n;
  return 0;
}

/* Digits of s into *v (at least `min`, at most `max` of them); the rest
 * after them, or NULL. */
static const char *digits(const char *s, int min, int max, long long *v) {
  int n = 0;
  *v = 0;
  while (n < max && isdigit((unsigned char)s[n]))
    *v = *v * 10 + (s[n++] - '0');
  return n >= min ? s + n : NULL;
}

/* A fraction ".ddd" (up to 9 digits kept) as ns; s past it. */
static const char *fraction(const char *s, int64_t *ns) {
  *ns = 0;
  if (*s != '.')
    return s;
  s++;
  if (!isdigit((unsigned char)*s))
    return NULL;
  int64_t scale = 100000000;
  for (; isdigit((unsigned char)*s); s++) {
    *ns += (*s - '0') * scale;
    scale /= 10;
  }
  return s;
}

/* The last second whose nanoseconds fit in int64 with room for a fraction
 * (2255-03-14): later instants are refused, never wrapped. */
#define IM_SHARD_MAX_UNIX_S INT64_C(9000000000)

static int parse_rfc3339(const char *s, int64_t *wall_ns) {
  long long y, mo, d, h, mi, sec, oh = 0, om = 0;
  int64_t frac;
  if (!(s = digits(s, 4, 4, &y)) || *s++ != '-' || !(s = digits(s, 2, 2, &mo)) || *s++ != '-' ||
      !(s = digits(s, 2, 2, &d)) || (*s != 'T' && *s != 't' && *s != ' '))
    return -1;
  s++;
  if (!(s = digits(s, 2, 2, &h)) || *s++ != ':' || !(s = digits(s, 2, 2, &mi)) || *s++ != ':' ||
      !(s = digits(s, 2, 2, &sec)) || !(s = fraction(s, &frac)))
    return -1;
  int sign = 0;
  if (*s == 'Z' || *s == 'z') {
    s++;
  } else if (*s == '+' || *s == '-') {
    sign = *s++ == '-' ? -1 : 1;
    if (!(s = digits(s, 2, 2, &oh)) || *s++ != ':' || !(s = digits(s, 2, 2, &om)))
      return -1;
  } else {
    return -1; /* an instant needs its offset: local time would differ per machine */
  }
  if (*s || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || oh > 23 ||
      om > 59)
    return -1;
  int64_t days = im_days_from_civil(y, (int)mo, (int)d);
  int64_t t = ((days * 24 + h) * 60 + mi) * 60 + sec - sign * (oh * 3600 + om * 60);
  if (t < 0 || t > IM_SHARD_MAX_UNIX_S) /* nanoseconds in int64 end in 2262 */
    return -1;
  *wall_ns = t * 1000000000 + frac;
  return 0;
}

int im__shard_parse_time(const char *arg, int64_t *wall_ns) {
  if (!arg || !*arg)
    return -1;
  if (strchr(arg, '-') || strchr(arg, 'T'))
    return parse_rfc3339(arg, wall_ns);
  long long secs;
  int64_t frac;
  const char *s = digits(arg, 1, 12, &secs);
  if (!s || !(s = fraction(s, &frac)) || *s || secs > IM_SHARD_MAX_UNIX_S)
    return -1;
  *wall_ns = (int64_t)secs * 1000000000 + frac;
  return 0;
}

int im__shard_opt(struct im_run_shard_opts *s, int code, const char *arg) {
  switch (code) {
  case O_SHARD:
    if (im__shard_parse(arg, &s->index, &s->count)) {
      fprintf(stderr, "infermeter: --shard: expected i/N with 0 <= i < N <= 65536, got '%s'\n", arg);
      return -1;
    }
    return 0;
  case O_START_AT:
    if (im__shard_parse_time(arg, &s->start_at_wall_ns)) {
      fprintf(stderr, "infermeter: --start-at: expected an RFC 3339 instant with its offset "
                      "(2026-12-02T04:00:00Z) or unix seconds, got '%s'\n", arg);
      return -1;
    }
    s->start_at_given = true;
    return 0;
  case O_CLOCK_INJECT: {
    bool neg = arg[0] == '-';
    if (im_parse_duration(arg + neg, &s->inject_offset_ns)) {
      fprintf(stderr, "infermeter: --clock-offset-inject: expected a duration such as -3ms\n");
      return -1;
    }
    if (neg)
      s->inject_offset_ns = -s->inject_offset_ns;
    return 0;
  }
  default:
    return -1;
  }
}


void im__shard_digest(const json_t *plan, char out[17]) {
  char *s = json_dumps(plan, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
  uint64_t h = s ? im_fnv1a64(s, strlen(s)) : 0;
  free(s);
  snprintf(out, 17, "%016" PRIx64, h);
}

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
static json_t *plan_json(const struct im_run_config *o, int argc, char *const *argv) {
  json_t *args = json_array();
  int opt, idx = -1, saved_opterr = opterr;
  opterr = 0;
  optind = 1;
  while (args && (opt = im_getopt(argc, argv, "h", im__run_options, &idx)) != -1) {
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

void im__shard_plan_digest(struct im_run_config *o) {
  if (!o->shard.count)
    return;
  json_t *plan = plan_json(o, o->n_command_words, (char *const *)o->command_words);
  im__shard_digest(plan, o->shard.plan_digest);
  json_decref(plan);
}
