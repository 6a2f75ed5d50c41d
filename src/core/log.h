/* Diagnostics on stderr. The level is per process (set once by main before
 * threads start). Messages never contain secrets: callers pass URLs through
 * their redaction helpers first. */
#ifndef INFERMETER_LOG_H
#define INFERMETER_LOG_H

enum im_log_level { IM_LOG_ERROR, IM_LOG_WARN, IM_LOG_INFO, IM_LOG_DEBUG };

void im_log_set_level(enum im_log_level level);
enum im_log_level im_log_get_level(void);
void im_log(enum im_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define im_error(...) im_log(IM_LOG_ERROR, __VA_ARGS__)
#define im_warn(...) im_log(IM_LOG_WARN, __VA_ARGS__)
#define im_info(...) im_log(IM_LOG_INFO, __VA_ARGS__)
#define im_debug(...) im_log(IM_LOG_DEBUG, __VA_ARGS__)

#endif
