#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>

/* Set by main before any thread starts; read-only afterwards. */
static enum im_log_level log_level = IM_LOG_WARN;

void im_log_set_level(enum im_log_level level) { log_level = level; }
enum im_log_level im_log_get_level(void) { return log_level; }

void im_log(enum im_log_level level, const char *fmt, ...) {
  static const char *const prefix[] = {"error", "warning", "info", "debug"};
  if (level > log_level)
    return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "infermeter: %s: %s\n", prefix[level], line);
}
