/* Subcommands: each takes argc/argv starting at the subcommand name and
 * returns the process exit status. */
#ifndef IM_CLI_H
#define IM_CLI_H

int im_cli_serve(int argc, char **argv);
int im_cli_run(int argc, char **argv);
int im_cli_tokenize(int argc, char **argv);
int im_cli_report(int argc, char **argv);
int im_cli_audit(int argc, char **argv);
int im_cli_compare(int argc, char **argv);
int im_cli_merge(int argc, char **argv);   /* cli/merge.c */
int im_cli_history(int argc, char **argv);
int im_cli_analyze_routing(int argc, char **argv); /* cli/routing.c */
int im_cli_import(int argc, char **argv);          /* cli/import.c */

#endif
