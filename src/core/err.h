/* Error codes shared by every module of libinfermeter.
 *
 * Fallible functions return enum im_err (IM_OK == 0) and are marked IM_WUR.
 * im_strerror() gives a static English description; callers that talk to a
 * user add the file, flag or URL at fault. */
#ifndef INFERMETER_ERR_H
#define INFERMETER_ERR_H

#include <stddef.h>

#define IM_WUR __attribute__((warn_unused_result))

/* X-macro: name, description. */
#define IM_ERR_MAP(X)                                                     \
  X(OK, "success")                                                        \
  X(NOMEM, "out of memory")                                               \
  X(INVAL, "invalid argument")                                            \
  X(LIMIT, "input exceeds a configured limit")                            \
  X(PARSE, "malformed input")                                             \
  X(AGAIN, "more input needed")                                           \
  X(NOTFOUND, "not found")                                                \
  X(FULL, "no capacity left")                                             \
  X(IO, "input/output error")                                             \
  X(SYS, "system call failed (see errno)")                                \
  X(STATE, "operation not valid in the current state")                    \
  X(UNSUPPORTED, "not supported")

enum im_err {
#define IM__ERR_ENUM(name, desc) IM_##name,
  IM_ERR_MAP(IM__ERR_ENUM)
#undef IM__ERR_ENUM
  IM_ERR_COUNT_
};

/* Static description of an error code; never NULL ("unknown error" for
 * values outside the enum). */
const char *im_strerror(enum im_err err);

/* Writes a printf-style message into msg (when msg is not NULL and msg_len
 * > 0, truncated to fit) and returns e: the one way modules fill a
 * caller's error buffer, `return im_errf(err, errlen, IM_PARSE, "...", ...)`. */
enum im_err im_errf(char *msg, size_t msg_len, enum im_err e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
