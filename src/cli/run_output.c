/* What `infermeter run` prints, by -q, -v and --json (cli/run_cli.h). */
#include <stdio.h>
#include <stdlib.h>

#include "cli/run_cli.h"
#include "core/log.h"

int im__run_output_mode(struct im_run_config *o) {
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
