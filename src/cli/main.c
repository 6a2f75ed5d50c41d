/* infermeter: the command-line entry point. Each subcommand lives in its own
 * file under src/cli/ and is a library call a test can make. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "im_version.h"

static void usage(FILE *out) {
  fprintf(out,
          "infermeter %s - load tester for LLM inference servers\n"
          "\n"
          "usage: infermeter COMMAND [OPTIONS]\n"
          "\n"
          "commands:\n"
          "  run        drive load at a server (default: the built-in one) and record it\n"
          "  serve      run the built-in simulated LLM server (OpenAI-compatible)\n"
          "  report     recompute results.json and the summary of a run directory\n"
          "  audit      the validity audit of a run directory: valid? publishable? why?\n"
          "  compare    compare runs or sets of repeated runs: ratios, CIs, verdicts\n"
          "  import     read vLLM, GuideLLM, AIPerf results or OTLP traces into a run directory\n"
          "  merge      merge the run directories of the shards of one plan (MPI, --shard)\n"
          "  history    list the runs recorded in the history database\n"
          "  tokenize   count or encode text with a tokenizer.json\n"
          "  analyze-routing  MoE routing statistics of a serve --routing-log file\n"
          "\n"
          "options:\n"
          "  -h, --help       this help; `infermeter COMMAND --help` for a command\n"
          "  -V, --version    print the version and git hash\n",
          IM_VERSION);
}

/* The subcommand's argv[0] as "infermeter COMMAND", so that getopt's own
 * messages read "infermeter run: unrecognized option '--x'" like the
 * others (errors are "infermeter[ COMMAND]: what: why"). */
static char **sub_argv(char **argv, char *name, size_t len) {
  snprintf(name, len, "infermeter %s", argv[1]);
  argv[1] = name;
  return argv + 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 1;
  }
  const char *cmd = argv[1];
  char name[64];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    printf("infermeter %s (git %s)\n", IM_VERSION, IM_GIT_HASH);
    return 0;
  }
  if (!strcmp(cmd, "run"))
    return im_cli_run(argc - 1, sub_argv(argv, name, sizeof name));
  if (!strcmp(cmd, "audit"))
    return im_cli_audit(argc - 1, sub_argv(argv, name, sizeof name));
  if (!strcmp(cmd, "report"))
    return im_cli_report(argc - 1, sub_argv(argv, name, sizeof name));
  if (!strcmp(cmd, "merge"))
    return im_cli_merge(argc - 1, sub_argv(argv, name, sizeof name));
  if (!strcmp(cmd, "compare"))
    return im_cli_compare(argc - 1, sub_argv(argv, name, sizeof name));
  if (!strcmp(cmd, "history"))
    return im_cli_history(argc - 1, sub_argv(argv, name, sizeof name));
  if (!strcmp(cmd, "tokenize"))
    return im_cli_tokenize(argc - 1, sub_argv(argv, name, sizeof name));
  if (!strcmp(cmd, "analyze-routing"))
    return im_cli_analyze_routing(argc - 1, sub_argv(argv, name, sizeof name));
  if (!strcmp(cmd, "import"))
    return im_cli_import(argc - 1, sub_argv(argv, name, sizeof name));
  if (!strcmp(cmd, "serve"))
    return im_cli_serve(argc - 1, sub_argv(argv, name, sizeof name));
  fprintf(stderr, "infermeter: %s: unknown command: use run, serve, report, audit, compare, "
                  "history, tokenize, analyze-routing, import or merge (infermeter --help)\n", cmd);
  return 1;
}
