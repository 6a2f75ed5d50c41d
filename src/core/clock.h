/* The one clock of infermeter: CLOCK_MONOTONIC in nanoseconds.
 * Wall-clock time is used only for human-readable labels. */
#ifndef INFERMETER_CLOCK_H
#define INFERMETER_CLOCK_H

#include <stdint.h>

/* Monotonic time in ns; thread-safe, never fails on Linux. */
int64_t im_now_ns(void);

/* Wall-clock (CLOCK_REALTIME) in ns since the Unix epoch, for labels only. */
int64_t im_wall_ns(void);

/* Parses a duration such as "250ms", "30s", "2m", "1.5h", "100us", "500ns"
 * or a bare number of seconds ("2.5") into ns. Returns 0 on success, -1 on
 * malformed or negative input. */
int im_parse_duration(const char *text, int64_t *out_ns);

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (m in
 * 1..12, d in 1..31, not checked), for dates read from files and headers. */
int64_t im_days_from_civil(int64_t y, int m, int d);

#endif
