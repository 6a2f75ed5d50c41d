/* Room for one more element in a malloc'ed array that doubles as it fills:
 *
 *   if (im_grow((void **)&v, &cap, n, sizeof *v, 64)) return IM_NOMEM;
 *   v[n++] = x;
 *
 * On failure the array and cap are unchanged. */
#ifndef IM_CORE_GROW_H
#define IM_CORE_GROW_H

#include <stdlib.h>

#include "core/err.h"

static inline enum im_err im_grow(void **arr, size_t *cap, size_t n, size_t elem, size_t first) {
  if (n < *cap)
    return IM_OK;
  size_t c = *cap ? *cap * 2 : first;
  void *p = realloc(*arr, c * elem);
  if (!p)
    return IM_NOMEM;
  *arr = p;
  *cap = c;
  return IM_OK;
}

#endif
