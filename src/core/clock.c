#include "core/clock.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t im_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t im_wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int im_parse_duration(const char *text, int64_t *out_ns) {
  static const struct {
    const char *suffix;
    double ns;
  } units[] = {{"ns", 1},         {"us", 1e3},    {"ms", 1e6}, {"s", 1e9},
               {"m", 60e9},       {"h", 3600e9},  {"", 1e9}};
  if (!text || !*text)
    return -1;
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || !isfinite(v) || v < 0)
    return -1;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcmp(end, units[i].suffix) == 0) {
      double ns = v * units[i].ns;
      if (ns > 9.2e18)
        return -1;
      *out_ns = (int64_t)llround(ns);
      return 0;
    }
  }
  return -1;
}

/* Shift the year to start in March so the leap day is last, then count
 * 400-year eras of 146097 days (H. Hinnant, "chrono-Compatible Low-Level
 * Date Algorithms", days_from_civil). */
int64_t im_days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}
