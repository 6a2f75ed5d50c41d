/* The command line of `infermeter run` (cli/run.c): its option table and
 * help (run_opts.c, run_agents.c, run_net.c, shard.c), the scenario file
 * (run_scenario.c), what goes to the terminal (run_output.c), --repeat's
 * sets (repeat.c) and the history. The run itself is run/run.h. */
#ifndef IM_CLI_RUN_CLI_H
#define IM_CLI_RUN_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "report/verdict.h"
#include "run/run.h"

/* Exit statuses by their short names (report/verdict.h). */
enum { EXIT_OK = IM_EXIT_OK, EXIT_USAGE = IM_EXIT_USAGE, EXIT_UNREACHABLE = IM_EXIT_UNREACHABLE,
       EXIT_INVALID = IM_EXIT_INVALID, EXIT_NOT_PUBLISHABLE = IM_EXIT_NOT_PUBLISHABLE,
       EXIT_ENGINE = IM_EXIT_ENGINE, EXIT_SLO = IM_EXIT_SLO, EXIT_INTERRUPTED = IM_EXIT_INTERRUPTED };

/* run_opts.c */
void im__run_usage(FILE *o);
/* Every option of run, in groups (--help-all; the man page is made of it). */
void im__run_usage_all(FILE *o);
/* -q, -v, --json after parsing (cli/run_output.c): what goes to the
 * terminal. -1: go on; else the exit status of a usage error. */
int im__run_output_mode(struct im_run_config *o);
extern const struct option im__run_options[];
/* Applies one option; 0, or -1 after saying what is wrong. */
int im__run_apply(struct im_run_config *o, int opt, const char *arg);

/* run_scenario.c */
/* The value of --scenario in argv (either "--scenario F" or "--scenario=F"),
 * or NULL. */
const char *im__run_scenario_arg(int argc, char **argv);
/* Applies a scenario file's settings to o (keys are run's long option
 * names). *keep receives what must outlive o (free with json_decref).
 * 0, or -1 after saying what is wrong (file, key, why). */
int im__run_scenario_load(struct im_run_config *o, const char *path, struct json_t **keep);


/* Adds a run (or a --repeat set) directory to the history; a failure is a
 * warning, never the exit status. */
void im__run_add_history(const struct im_run_config *o, const char *dir);

/* The run's hooks->say on stderr: "infermeter run: LINE" for errors and
 * notes, "infermeter: LINE" for what is being done. */
void im__run_say_stderr(void *data, enum im_run_say kind, const char *line);

/* One run of a parsed configuration, start to verdict: im_run, then the
 * results (results/), the sinks, the verdict line; the exit status. Used
 * by `run` itself, each replicate of --repeat and each rank under MPI. */
int im__run_one(const struct im_run_config *o);

/* repeat.c: --repeat K: K runs of o (each with its own DIR/run-k and seed),
 * then DIR/results.json with the statistics over them. The exit status:
 * the worst of the runs' (README's precedence). */
int im__run_repeat(const struct im_run_config *o);

#endif
