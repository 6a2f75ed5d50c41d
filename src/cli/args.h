/* Parsing of option values with messages that name the flag. Each returns
 * 0 on success, or prints "infermeter: --flag: ..." to stderr and returns -1. */
#ifndef IM_CLI_ARGS_H
#define IM_CLI_ARGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int im_arg_u32(const char *flag, const char *text, uint32_t min, uint32_t max, uint32_t *out);
int im_arg_u64(const char *flag, const char *text, uint64_t *out);
int im_arg_double(const char *flag, const char *text, double min, double max, double *out);
int im_arg_duration(const char *flag, const char *text, int64_t *out_ns);
/* Sizes like "4MiB", "16KiB", "1048576". */
int im_arg_size(const char *flag, const char *text, uint64_t *out);
/* "--output-format json|csv" of command cmd: *csv = arg is csv. 0, or -1
 * after saying what is accepted. */
int im__output_format_parse(const char *cmd, const char *arg, bool *csv);
/* --otlp-protocol P: "http/json" (false) or "http/protobuf" (true) into
 * *protobuf. 0, or -1 after saying why. */
int im__otlp_protocol(const char *flag, const char *p, bool *protobuf);
/* A library's note callback (results/, export/): "infermeter: LINE" on
 * stderr. */
void im__print_note(void *data, const char *line);
/* getopt_long, but a long option must be spelled out: an abbreviation
 * (getopt_long accepts "--dur" for --duration) or an unknown option is
 * refused with "infermeter CMD: unrecognized option '--dur': did you mean
 * --duration?" (argv[0] is "infermeter CMD") and returns '?'. Checks the
 * whole argv when a parse starts (optind <= 1), skipping the values of
 * options that take one and stopping at "--". */
int im_getopt(int argc, char *const *argv, const char *shortopts, const struct option *longopts,
              int *longindex);
/* The long option of opts nearest to name (a prefix of it, else the fewest
 * edits, at most 3), or NULL. */
const char *im_option_suggest(const char *name, size_t len, const struct option *opts);
/* v as people write it: the fewest significant digits that read back as v
 * (0.9, not 0.90000000000000002). */
void im_arg_fmt_double(char *buf, size_t n, double v);
#include "core/proc.h"

#endif
