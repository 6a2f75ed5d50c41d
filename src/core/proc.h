/* The process's resources. */
#ifndef IM_CORE_PROC_H
#define IM_CORE_PROC_H

#include <stddef.h>
#include <stdint.h>

/* Raises the soft RLIMIT_NOFILE to the hard limit; returns the new soft
 * limit (0 when it cannot be read). */
uint64_t im_raise_fd_limit(void);

/* The first line of path (an API key), without its line end; NULL with err
 * saying why (cannot read, empty). The caller frees (and should clear it
 * first: it is a secret). */
char *im_read_key_file(const char *path, char *err, size_t err_len);

#endif
