/* The bytes one engine step writes, gathered per connection and sent together
 * when the step's callbacks are done (serve --io, docs/serve.md "Output").
 *
 * A step hands one chunk to each running sequence; written one write() at a
 * time, the last connection's bytes left a whole step's worth of kernel time
 * after the first. Gathered here, they go out in one io_uring submission
 * (or, without io_uring, one write() per connection instead of one per
 * payload: a finishing stream's token, [DONE] and chunked terminator share
 * one segment).
 *
 * Pure bookkeeping, no sockets: an arena of bytes cut into slots, each owned
 * by one connection. Bytes for an owner extend its slot while that slot is the
 * arena's last one (the common case: a sequence's callbacks run back to back);
 * otherwise they open a new slot, so an owner's slots are in arena order and
 * flushing slots in order keeps each connection's bytes in order. */
#ifndef IM_SERVE_OUTBATCH_H
#define IM_SERVE_OUTBATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

struct im_outslot {
  void *owner;
  size_t off, len;  /* in the arena */
  int64_t ns;       /* CLOCK_MONOTONIC just before the syscall that sent it */
  int64_t done_ns;  /* ... and just after it returned */
  bool flushed;     /* sent (or dropped) already */
};

/* Where an owner's current slot is: valid while gen is the batch's. */
struct im_outref {
  uint64_t gen;
  uint32_t slot;
};

struct im_outbatch {
  struct im_buf arena;
  struct im_outslot *slot;
  uint32_t n;
  size_t cap;
  uint64_t gen;     /* bumped by each reset; 0 is never a live generation */
};

void im_outbatch_init(struct im_outbatch *b, size_t max_bytes);
void im_outbatch_cleanup(struct im_outbatch *b);
/* Empties the batch; every im_outref taken before stops matching. */
void im_outbatch_reset(struct im_outbatch *b);
/* Appends len bytes for owner, whose slot reference is *ref (zeroed at
 * first). Returns IM_NOMEM / IM_LIMIT past max_bytes. */
enum im_err im_outbatch_add(struct im_outbatch *b, void *owner, struct im_outref *ref,
                            const void *data, size_t len) IM_WUR;
/* The owner's unflushed slot in this batch, or NULL. */
struct im_outslot *im_outbatch_slot_of(struct im_outbatch *b, const struct im_outref *ref);
/* Start of a slot's bytes (valid until the next add or reset). */
static inline const char *im_outbatch_data(const struct im_outbatch *b,
                                           const struct im_outslot *s) {
  return b->arena.data + s->off;
}

#endif
