/* `infermeter run --repeat K` (docs/statistics.md): the replicate loop is
 * run/'s (im_run_repeat); each replicate is one run of the command line
 * (im__run_one) and each stage's set of runs gets its statistics here,
 * through results/set.h, then the history and the set's verdict line. */
#include <stdio.h>

#include "cli/term.h"
#include "cli/args.h"
#include "cli/run_cli.h"
#include "core/log.h"
#include "record/history.h"
#include "report/verdict.h"
#include "results/set.h"

void im__run_add_history(const struct im_run_config *o, const char *dir) {
  char msg[1024];
  int64_t id = 0;
  if (im_history_add_run(o->history, dir, &id, msg, sizeof msg) != IM_OK)
    im_warn("the run is not in the history: %s (--no-history to skip)", msg);
  else if (!o->quiet)
    fprintf(stdout, "History: id %lld (infermeter history; infermeter compare ID ID)\n",
            (long long)id);
}


static int run_one(void *data, const struct im_run_config *replicate) {
  (void)data;
  return im__run_one(replicate);
}

static int set_done(void *data, const char *dir, struct im_repeat_run *runs, size_t n,
                    const double *ref_value, const char *ref_source, bool *publishable) {
  const struct im_run_config *o = data;
  struct im_results_set_in in = {
      .dir = dir, .runs = runs, .n = n, .planned = o->repeat, .publish = o->publish,
      .max_width = o->max_ci_width, .ref_value = ref_value, .ref_source = ref_source,
      .text = o->quiet ? NULL : im__wrap_open(stdout, im__term_width(stdout)), /* cli/term.h */
      .note = im__print_note};
  char err[1024];
  int rc = EXIT_OK;
  enum im_err e = im_results_set(&in, publishable, err, sizeof err);
  im__wrap_close(in.text, stdout);
  if (e) {
    fprintf(stderr, "infermeter run: %s\n", err);
    rc = EXIT_USAGE;
  }
  if (!o->no_history)
    im__run_add_history(o, dir);
  return rc;
}

int im__run_repeat(const struct im_run_config *o) {
  struct im_run_hooks h = {.say = im__run_say_stderr, .text = o->quiet ? NULL : stdout};
  struct im_run_set_hooks sh = {.run_one = run_one, .set_done = set_done, .data = (void *)o};
  size_t runs = 0;
  int rc = im_run_repeat(o, &h, &sh, &runs);
  FILE *w = im__wrap_open(stdout, im__term_width(stdout));
  im_verdict_set_line_color(w, im_color_on(stdout), rc, runs);
  im__wrap_close(w, stdout);
  return rc;
}
