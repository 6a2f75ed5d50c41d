/* `infermeter merge`: see cli/merge.h and docs/distributed.md; the merge
 * itself is results/merge.h's. */
#include "cli/merge.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/report.h"
#include "cli/run_cli.h"
#include "report/verdict.h"
#include "results/merge.h"

int im__merge_dirs(const struct im__merge_opts *mo) {
  struct im_merge_config c = {.dirs = mo->dirs, .n_dirs = mo->n_dirs, .out = mo->out,
                              .partial = mo->partial};
  struct im_merge_outcome m;
  char err[4600];
  if (im_results_merge(&c, &m, err, sizeof err) != IM_OK) {
    fprintf(stderr, "infermeter merge: %s\n", err);
    return EXIT_USAGE;
  }
  struct report_opts ro = {.text = mo->quiet ? NULL : stdout, .stage_lines = true,
                           .no_html = mo->no_html};
  struct im_verdict outcome;
  if (!mo->quiet)
    fprintf(stdout, "Merged %zu of %" PRIu32 " shards (plan %s) into %s\n", m.merged, m.count,
            m.digest, mo->out);
  if (im__report_dir(mo->out, &ro, &outcome))
    return EXIT_USAGE;
  int rc = im_verdict_exit(&outcome);
  if (mo->verdict)
    im_verdict_line(stdout, &outcome, rc);
  return rc;
}

static void usage(FILE *f) {
  fprintf(f,
"usage: infermeter merge DIR... --out DIR [--partial] [--quiet] [--no-html]\n"
"\n"
"Merges the run directories of the shards of one plan (infermeter run --shard i/N,\n"
"or the ranks of an MPI run: DIR/rank-K) into one run directory, then writes its\n"
"results.json and report as `infermeter report` does (and `report OUT` recomputes\n"
"them): records of every shard (requests.jsonl, each with its shard), counters\n"
"added, histograms merged exactly, the client's samples of every shard, the\n"
"observers of shard 0; the audit and the SLOs judge the merged data.\n"
"\n"
"  --out DIR    the merged run directory (created)\n"
"  --partial    merge the shards that are there when some are missing; the\n"
"               results say which (manifest.merged.incomplete: \"shard K lost\")\n"
"  --quiet      no summary;  --no-html: no report.html\n"
"\n"
"Directories of different plans (manifest.shard.plan_digest) are refused.\n"
"Exit status: 1 usage, different plans, or missing shards without --partial;\n"
"3 a shard's or the merged client self-check INVALID; 130 incomplete (a shard\n"
"missing or cut short); else as `infermeter report`.\n");
}

int im_cli_merge(int argc, char **argv) {
  static const struct option opts[] = {{"out", required_argument, NULL, 'o'},
                                       {"partial", no_argument, NULL, 'p'},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {"no-html", no_argument, NULL, 'N'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  struct im__merge_opts mo = {0};
  int c;
  optind = 1;
  while ((c = im_getopt(argc, argv, "ho:", opts, NULL)) != -1) {
    switch (c) {
    case 'o': mo.out = optarg; break;
    case 'p': mo.partial = true; break;
    case 'q': mo.quiet = true; break;
    case 'N': mo.no_html = true; break;
    case 'h': usage(stdout); return EXIT_OK;
    default: usage(stderr); return EXIT_USAGE;
    }
  }
  if (!mo.out || optind >= argc) {
    fprintf(stderr, "infermeter merge: %s\n", !mo.out ? "--out DIR is required"
                                                      : "give the shards' directories");
    usage(stderr);
    return EXIT_USAGE;
  }
  mo.dirs = (const char *const *)argv + optind;
  mo.n_dirs = (size_t)(argc - optind);
  mo.verdict = !mo.quiet;
  return im__merge_dirs(&mo);
}
