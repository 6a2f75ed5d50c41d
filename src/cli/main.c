/* infermeter: the command-line entry point. Each subcommand lives in its own
 * file under src/cli/ and is a library call a test can make. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/term.h"
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
          "  import     vLLM, GuideLLM, AIPerf results or OTLP traces into a run directory\n"
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

static int dispatch(const char *cmd, int argc, char **argv, char *name, size_t len);

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
  /* A help text fits the terminal (at most 80 columns, term.h). */
  FILE *out = stdout;
  bool help = false;
  for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
    help |= !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help") || !strcmp(argv[i], "--help-all");
  if (help) {
    int w = im__term_width(stdout);
    stdout = im__help_open(out, w < 80 ? w : 80);
  }
  int rc = dispatch(cmd, argc, argv, name, sizeof name);
  if (help) {
    im__wrap_close(stdout, out);
    stdout = out;
  }
  return rc;
}

static int dispatch(const char *cmd, int argc, char **argv, char *name, size_t len) {
  if (!strcmp(cmd, "run"))
    return im_cli_run(argc - 1, sub_argv(argv, name, len));
  if (!strcmp(cmd, "audit"))
    return im_cli_audit(argc - 1, sub_argv(argv, name, len));
  if (!strcmp(cmd, "report"))
    return im_cli_report(argc - 1, sub_argv(argv, name, len));
  if (!strcmp(cmd, "merge"))
    return im_cli_merge(argc - 1, sub_argv(argv, name, len));
  if (!strcmp(cmd, "compare"))
    return im_cli_compare(argc - 1, sub_argv(argv, name, len));
  if (!strcmp(cmd, "history"))
    return im_cli_history(argc - 1, sub_argv(argv, name, len));
  if (!strcmp(cmd, "tokenize"))
    return im_cli_tokenize(argc - 1, sub_argv(argv, name, len));
  if (!strcmp(cmd, "analyze-routing"))
    return im_cli_analyze_routing(argc - 1, sub_argv(argv, name, len));
  if (!strcmp(cmd, "import"))
    return im_cli_import(argc - 1, sub_argv(argv, name, len));
  if (!strcmp(cmd, "serve"))
    return im_cli_serve(argc - 1, sub_argv(argv, name, len));
  static const struct option cmds[] = {
      {"run", 0, 0, 0},     {"serve", 0, 0, 0},    {"report", 0, 0, 0},   {"audit", 0, 0, 0},
      {"compare", 0, 0, 0}, {"history", 0, 0, 0}, {"tokenize", 0, 0, 0}, {"import", 0, 0, 0},
      {"merge", 0, 0, 0},   {"analyze-routing", 0, 0, 0}, {0, 0, 0, 0}};
  const char *near = im_option_suggest(cmd, strlen(cmd), cmds);
  char hint[64] = "";
  if (near)
    snprintf(hint, sizeof hint, "; did you mean %s?", near);
  fprintf(stderr, "infermeter: %s: unknown command: use run, serve, report, audit, compare, "
                  "history, tokenize, analyze-routing, import or merge%s (infermeter --help)\n",
          cmd, hint);
  return 1;
}
