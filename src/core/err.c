#include "core/err.h"

#include <stdarg.h>
#include <stdio.h>

const char *im_strerror(enum im_err err) {
  static const char *const text[] = {
#define IM__ERR_TEXT(name, desc) desc,
      IM_ERR_MAP(IM__ERR_TEXT)
#undef IM__ERR_TEXT
  };
  if ((unsigned)err >= sizeof text / sizeof text[0])
    return "unknown error";
  return text[err];
}

enum im_err im_errf(char *msg, size_t msg_len, enum im_err e, const char *fmt, ...) {
  if (msg && msg_len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msg_len, fmt, ap);
    va_end(ap);
  }
  return e;
}
