/* Rendering of a comparison (analyze/compare.h): results-schema.md
 * "compare --json" and the terminal table. Not thread-safe per object. */
#ifndef IM_REPORT_COMPARE_JSON_H
#define IM_REPORT_COMPARE_JSON_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "analyze/compare.h"

/* What the renderers show besides the figures. */
struct im_cmp_meta {
  const char *label_a, *label_b; /* the arguments as given */
  const char *const *dirs_a;     /* the run directories of each side */
  const char *const *dirs_b;
  const char *differences; /* "" when the configurations match */
  bool forced;             /* compared despite differences (--force) */
  const char *server_differences; /* the server's declared settings, A vs B ("" when
                                     equal or not declared by both) */
  /* The runs compared (report->runs_a / runs_b of each): their values go
   * into each figure as values_a / values_b; NULL: left out. */
  const struct im_headline *runs_a, *runs_b;
};

/* A new object (caller owns: json_decref), NULL when out of memory. */
json_t *im_cmp_to_json(const struct im_cmp_report *r, const struct im_cmp_meta *m);

/* The terminal table: per stage, one line per figure with A, B (means over
 * the runs), ratio B/A, its interval, p and the verdict; then notes. */
void im_cmp_print(FILE *out, const struct im_cmp_report *r, const struct im_cmp_meta *m);

#endif
