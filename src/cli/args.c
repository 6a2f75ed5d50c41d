#include "cli/args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "core/clock.h"

int im_arg_u64(const char *flag, const char *text, uint64_t *out) {
  char *end;
  errno = 0;
  if (!text || !*text || *text == '-')
    goto bad;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno || *end)
    goto bad;
  *out = v;
  return 0;
bad:
  fprintf(stderr, "infermeter: %s: expected a non-negative integer, got '%s'\n", flag,
          text ? text : "");
  return -1;
}

int im_arg_u32(const char *flag, const char *text, uint32_t min, uint32_t max, uint32_t *out) {
  uint64_t v;
  if (im_arg_u64(flag, text, &v))
    return -1;
  if (v < min || v > max) {
    fprintf(stderr, "infermeter: %s: %s is out of range [%u, %u]\n", flag, text, min, max);
    return -1;
  }
  *out = (uint32_t)v;
  return 0;
}

int im_arg_double(const char *flag, const char *text, double min, double max, double *out) {
  char *end;
  errno = 0;
  double v = text && *text ? strtod(text, &end) : NAN;
  if (!text || !*text || errno || *end || !isfinite(v)) {
    fprintf(stderr, "infermeter: %s: expected a number, got '%s'\n", flag, text ? text : "");
    return -1;
  }
  if (v < min || v > max) {
    fprintf(stderr, "infermeter: %s: %s is out of range [%g, %g]\n", flag, text, min, max);
    return -1;
  }
  *out = v;
  return 0;
}

int im_arg_duration(const char *flag, const char *text, int64_t *out_ns) {
  if (im_parse_duration(text, out_ns) == 0)
    return 0;
  fprintf(stderr, "infermeter: %s: expected a duration like 500ms, 30s or 2m, got '%s'\n", flag,
          text ? text : "");
  return -1;
}

int im_arg_size(const char *flag, const char *text, uint64_t *out) {
  static const struct {
    const char *suffix;
    uint64_t mult;
  } units[] = {{"", 1}, {"B", 1}, {"KiB", 1024}, {"MiB", 1024 * 1024}, {"GiB", 1024ULL << 20},
               {"K", 1000}, {"M", 1000000}, {"G", 1000000000}};
  char *end;
  errno = 0;
  if (text && *text && *text != '-') {
    unsigned long long v = strtoull(text, &end, 10);
    for (size_t i = 0; !errno && i < sizeof units / sizeof units[0]; i++) {
      if (strcmp(end, units[i].suffix) == 0 && v <= UINT64_MAX / units[i].mult) {
        *out = v * units[i].mult;
        return 0;
      }
    }
  }
  fprintf(stderr, "infermeter: %s: expected a size like 4MiB or 65536, got '%s'\n", flag,
          text ? text : "");
  return -1;
}


int im__output_format_parse(const char *cmd, const char *arg, bool *csv) {
  if (!strcmp(arg, "json") || !strcmp(arg, "csv")) {
    *csv = !strcmp(arg, "csv");
    return 0;
  }
  fprintf(stderr,
          "infermeter %s: --output-format: unknown format '%s': use json (results.json and "
          "requests.jsonl, always written) or csv (requests.csv and summary.csv besides)\n",
          cmd, arg);
  return -1;
}

int im__otlp_protocol(const char *flag, const char *p, bool *protobuf) {
  if (strcmp(p, "http/json") && strcmp(p, "http/protobuf")) {
    fprintf(stderr, "infermeter: %s: 'http/json' or 'http/protobuf' (OTLP/HTTP), got '%s'\n",
            flag, p);
    return -1;
  }
  *protobuf = !strcmp(p, "http/protobuf");
  return 0;
}

void im__print_note(void *data, const char *line) {
  (void)data;
  fprintf(stderr, "infermeter: %s\n", line);
}

/* Edits (insert, delete, substitute) between a[0..n) and b, at most 64
 * characters each (longer: a large number). */
static size_t edit_distance(const char *a, size_t n, const char *b) {
  size_t m = strlen(b), row[65];
  if (n > 64 || m > 64)
    return 1000;
  for (size_t j = 0; j <= m; j++)
    row[j] = j;
  for (size_t i = 1; i <= n; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= m; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (row[j] + 1 < best)
        best = row[j] + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[m];
}

const char *im_option_suggest(const char *name, size_t len, const struct option *opts) {
  const char *best = NULL;
  size_t best_d = 4;
  for (const struct option *o = opts; o->name; o++) {
    if (len && !strncmp(o->name, name, len)) /* a prefix: the first such option */
      return o->name;
    size_t d = edit_distance(name, len, o->name);
    if (d < best_d) {
      best_d = d;
      best = o->name;
    }
  }
  return best;
}

/* Whether short option c of shortopts takes a value. */
static bool short_takes_value(const char *shortopts, char c) {
  const char *p = strchr(shortopts, c);
  return c != ':' && p && p[1] == ':';
}

/* The whole command line: every "--name" one of longopts, spelled out. */
static int check_long_options(int argc, char *const *argv, const char *shortopts,
                              const struct option *longopts) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--"))
      return 0;
    if (a[0] == '-' && a[1] && a[1] != '-') { /* -x, -xVALUE, -qv */
      for (size_t k = 1; a[k]; k++)
        if (short_takes_value(shortopts, a[k])) {
          i += !a[k + 1];
          break;
        }
      continue;
    }
    if (strncmp(a, "--", 2))
      continue;
    const char *name = a + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const struct option *o = longopts;
    while (o->name && (strlen(o->name) != len || strncmp(o->name, name, len)))
      o++;
    if (o->name) {
      i += o->has_arg == required_argument && !eq;
      continue;
    }
    const char *s = im_option_suggest(name, len, longopts);
    char hint[128] = "";
    if (s)
      snprintf(hint, sizeof hint, ": did you mean --%s?", s);
    /* argv[0] is "infermeter COMMAND" (main.c) */
    const char *cmd = strncmp(argv[0], "infermeter", 10) ? "" : argv[0] + 10;
    fprintf(stderr, "infermeter%s: unrecognized option '--%.*s'%s\n", cmd, (int)len, name, hint);
    return -1;
  }
  return 0;
}

int im_getopt(int argc, char *const *argv, const char *shortopts, const struct option *longopts,
              int *longindex) {
  if (optind <= 1 && check_long_options(argc, argv, shortopts, longopts)) {
    optind = argc;
    return '?';
  }
  return getopt_long(argc, argv, shortopts, longopts, longindex);
}

void im_arg_fmt_double(char *buf, size_t n, double v) {
  for (int digits = 1; digits <= 17; digits++) {
    snprintf(buf, n, "%.*g", digits, v);
    if (strtod(buf, NULL) == v)
      return;
  }
}
