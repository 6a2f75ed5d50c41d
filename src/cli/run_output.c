/* What `infermeter run` prints, by -q, -v and --json (run_int.h). */
#include <stdio.h>
#include <stdlib.h>

#include "cli/run_int.h"
#include "core/log.h"

int im__run_output_mode(struct run_opts *o) {
  if (o->quiet && o->verbose) {
    fprintf(stderr, "infermeter run: --quiet and --verbose: exclude each other (give one)\n");
    return EXIT_USAGE;
  }
  if (o->json && o->repeat > 1) {
    fprintf(stderr, "infermeter run: --json: not with --repeat %u: the set's figures are in "
                    "DIR/results.json and each run's in DIR/run-K/results.json (use "
                    "`infermeter report DIR/run-K --json`)\n", (unsigned)o->repeat);
    return EXIT_USAGE;
  }
  /* The repeats of a set (repeat_of > 1) run quietly inside their parent,
   * which says how they went; they keep their progress line. */
  bool user_quiet = o->quiet && o->repeat_of <= 1;
  if (o->json)
    o->quiet = true; /* stdout holds the JSON alone; the rest goes to stderr */
  if (user_quiet) {
    o->no_progress = true;
    im_log_set_level(IM_LOG_ERROR);
  }
  if (o->verbose)
    im_log_set_level(IM_LOG_INFO);
  return -1;
}

void im__run_verbose_manifest(const json_t *m) {
  if (im_log_get_level() < IM_LOG_INFO || !m)
    return;
  static const char *const keys[] = {"target", "seed", "schedule", "workload", "slo", "tags"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const json_t *v = json_object_get(m, keys[i]);
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(10)) : NULL;
    if (s)
      im_info("%s: %s", keys[i], s);
    free(s);
  }
}
