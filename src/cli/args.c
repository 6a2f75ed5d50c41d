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

uint64_t im_raise_fd_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
    return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur;
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
