/* Compares src/core/stats.c with reference values (tests/stats/reference.js)
 * read from stdin, one case a line: FUNCTION ARG... EXPECTED. Prints every
 * case whose relative difference exceeds the tolerance (argv[1], default
 * 1e-9; an absolute 1e-15 floor for values near zero) and a summary line.
 * Exit 0 when all agree, 1 otherwise, 2 on malformed input. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

#define MAX_VALUES 256

static size_t parse_list(char *s, double *out) {
  size_t n = 0;
  for (char *tok = strtok(s, ","); tok && n < MAX_VALUES; tok = strtok(NULL, ","))
    out[n++] = strtod(tok, NULL);
  return n;
}

/* "a1,a2,...;b1,b2,...": Welch of a against b. */
static int welch_of(const char *spec, struct im_stats_welch *w) {
  char buf[4096];
  double a[MAX_VALUES], b[MAX_VALUES];
  if (snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf)
    return -1;
  char *semi = strchr(buf, ';');
  if (!semi)
    return -1;
  *semi = '\0';
  size_t na = parse_list(buf, a), nb = parse_list(semi + 1, b);
  return im_stats_welch(a, na, b, nb, 0.95, w) == IM_OK ? 0 : -1;
}

int main(int argc, char **argv) {
  double tol = argc > 1 ? strtod(argv[1], NULL) : 1e-9;
  char line[8192];
  int cases = 0, bad = 0, lineno = 0;
  double worst = 0;
  while (fgets(line, sizeof line, stdin)) {
    lineno++;
    char fn[32], a1[4096];
    double x, y, z, want, got = NAN;
    if (sscanf(line, "%31s", fn) != 1)
      continue;
    if (!strcmp(fn, "t_cdf") && sscanf(line, "%*s %lf %lf %lf", &x, &y, &want) == 3) {
      got = im_stats_t_cdf(x, y);
    } else if (!strcmp(fn, "t_quantile") && sscanf(line, "%*s %lf %lf %lf", &x, &y, &want) == 3) {
      got = im_stats_t_quantile(x, y);
    } else if (!strcmp(fn, "beta_inc") &&
               sscanf(line, "%*s %lf %lf %lf %lf", &x, &y, &z, &want) == 4) {
      got = im_stats_beta_inc(x, y, z);
    } else if (!strcmp(fn, "binom_cdf") &&
               sscanf(line, "%*s %lf %lf %lf %lf", &x, &y, &z, &want) == 4) {
      got = im_stats_binom_cdf((int64_t)x, (int64_t)y, z);
    } else if (!strcmp(fn, "binom_sf") &&
               sscanf(line, "%*s %lf %lf %lf %lf", &x, &y, &z, &want) == 4) {
      got = im_stats_binom_sf((int64_t)x, (int64_t)y, z);
    } else if (!strncmp(fn, "welch_", 6) && sscanf(line, "%*s %4095s %lf", a1, &want) == 2) {
      struct im_stats_welch w;
      if (welch_of(a1, &w) == 0)
        got = !strcmp(fn, "welch_t")    ? w.t
              : !strcmp(fn, "welch_df") ? w.df
              : !strcmp(fn, "welch_p")  ? w.p
              : !strcmp(fn, "welch_lo") ? w.lo
              : !strcmp(fn, "welch_hi") ? w.hi
                                        : NAN;
    } else {
      fprintf(stderr, "stats_probe: line %d: cannot parse: %s", lineno, line);
      return 2;
    }
    cases++;
    double err = fabs(got - want) / fmax(fabs(want), 1e-15 / tol);
    if (!(err <= tol)) {
      bad++;
      printf("MISMATCH %s: ours %.17g, reference %.17g, relative difference %.3g\n",
             strtok(line, "\n"), got, want, err);
    }
    if (err > worst || isnan(err))
      worst = err;
  }
  printf("stats_probe: %d cases, %d beyond %.0e relative; largest difference %.3g\n", cases, bad,
         tol, worst);
  return cases == 0 || bad ? 1 : 0;
}
