#include "infermeter/err.h"

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
