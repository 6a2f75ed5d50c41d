/* The process's resources (core/proc.h). */
#include "core/proc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

uint64_t im_raise_fd_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
    return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur;
}

char *im_read_key_file(const char *path, char *err, size_t err_len) {
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, err_len, "cannot read %s: %s", path, strerror(errno));
    return NULL;
  }
  char buf[4096];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  buf[strcspn(buf, "\r\n")] = '\0';
  if (!buf[0]) {
    snprintf(err, err_len, "%s is empty", path);
    return NULL;
  }
  char *key = strdup(buf);
  memset(buf, 0, sizeof buf);
  if (!key)
    snprintf(err, err_len, "out of memory");
  return key;
}
