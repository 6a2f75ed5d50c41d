/* Parsing of option values with messages that name the flag. Each returns
 * 0 on success, or prints "infermeter: --flag: ..." to stderr and returns -1. */
#ifndef IM_CLI_ARGS_H
#define IM_CLI_ARGS_H

#include <stdbool.h>
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
/* Raises the soft RLIMIT_NOFILE to the hard limit; returns the new soft limit. */
uint64_t im_raise_fd_limit(void);

#endif
