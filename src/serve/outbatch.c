/* A step's output, gathered per connection (serve/outbatch.h). */
#include "serve/outbatch.h"

#include "core/grow.h"

#include <stdlib.h>
#include <string.h>

void im_outbatch_init(struct im_outbatch *b, size_t max_bytes) {
  memset(b, 0, sizeof *b);
  im_buf_init(&b->arena, max_bytes);
  b->gen = 1;
}

void im_outbatch_cleanup(struct im_outbatch *b) {
  im_buf_cleanup(&b->arena);
  free(b->slot);
  memset(b, 0, sizeof *b);
}

void im_outbatch_reset(struct im_outbatch *b) {
  im_buf_reset(&b->arena);
  b->n = 0;
  b->gen++;
}

struct im_outslot *im_outbatch_slot_of(struct im_outbatch *b, const struct im_outref *ref) {
  if (ref->gen != b->gen || ref->slot >= b->n || b->slot[ref->slot].flushed)
    return NULL;
  return &b->slot[ref->slot];
}

enum im_err im_outbatch_add(struct im_outbatch *b, void *owner, struct im_outref *ref,
                            const void *data, size_t len) {
  struct im_outslot *s = im_outbatch_slot_of(b, ref);
  bool extend = s && ref->slot == b->n - 1;
  if (!extend && im_grow((void **)&b->slot, &b->cap, b->n, sizeof *b->slot, 256))
    return IM_NOMEM;
  size_t off = b->arena.len;
  enum im_err err = im_buf_append(&b->arena, data, len);
  if (err)
    return err;
  if (extend) {
    s->len += len;
    return IM_OK;
  }
  b->slot[b->n] = (struct im_outslot){.owner = owner, .off = off, .len = len};
  ref->gen = b->gen;
  ref->slot = b->n++;
  return IM_OK;
}
