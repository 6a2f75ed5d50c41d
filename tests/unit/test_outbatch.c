/* serve's per-step output batch (serve/outbatch.h): bytes gathered per
 * connection, coalesced while an owner's slot is the last one, a new slot
 * once another owner wrote in between, and references that stop matching
 * after a reset or a flush. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "serve/outbatch.h"

static const char *data_of(const struct im_outbatch *b, uint32_t i) {
  return im_outbatch_data(b, &b->slot[i]);
}

static void test_coalesce(void) {
  struct im_outbatch b;
  im_outbatch_init(&b, 1 << 20);
  int a_owner, b_owner;
  struct im_outref ra = {0}, rb = {0};
  CHECK(!im_outbatch_slot_of(&b, &ra)); /* a zeroed reference matches nothing */
  CHECK_EQ(im_outbatch_add(&b, &a_owner, &ra, "tok", 3), IM_OK);
  CHECK_EQ(im_outbatch_add(&b, &a_owner, &ra, "DONE", 4), IM_OK); /* extends its slot */
  CHECK_EQ(b.n, 1);
  CHECK_EQ(b.slot[0].len, 7);
  CHECK(!memcmp(data_of(&b, 0), "tokDONE", 7));
  CHECK(b.slot[0].owner == &a_owner);
  CHECK(im_outbatch_slot_of(&b, &ra) == &b.slot[0]);

  CHECK_EQ(im_outbatch_add(&b, &b_owner, &rb, "xy", 2), IM_OK);
  CHECK_EQ(b.n, 2);
  CHECK_EQ(rb.slot, 1);
  /* a's slot is no longer the last: its next bytes open a new slot, after b's. */
  CHECK_EQ(im_outbatch_add(&b, &a_owner, &ra, "z", 1), IM_OK);
  CHECK_EQ(b.n, 3);
  CHECK_EQ(ra.slot, 2);
  CHECK_EQ(b.slot[0].len, 7); /* the old slot keeps its bytes */
  CHECK(!memcmp(data_of(&b, 2), "z", 1));
  CHECK(b.slot[2].owner == &a_owner);

  /* A flushed slot is not extended. */
  b.slot[2].flushed = true;
  CHECK(!im_outbatch_slot_of(&b, &ra));
  CHECK_EQ(im_outbatch_add(&b, &a_owner, &ra, "w", 1), IM_OK);
  CHECK_EQ(b.n, 4);
  CHECK_EQ(ra.slot, 3);

  /* Reset: every reference taken before stops matching. */
  im_outbatch_reset(&b);
  CHECK_EQ(b.n, 0);
  CHECK(!im_outbatch_slot_of(&b, &ra));
  CHECK(!im_outbatch_slot_of(&b, &rb));
  CHECK_EQ(im_outbatch_add(&b, &b_owner, &rb, "q", 1), IM_OK);
  CHECK_EQ(rb.slot, 0);
  CHECK(im_outbatch_slot_of(&b, &rb) == &b.slot[0]);
  CHECK(!im_outbatch_slot_of(&b, &ra)); /* slot 0 again, but a stale generation */
  im_outbatch_cleanup(&b);
}

/* Many owners (more than the first allocation of slots), each written
 * twice in a row: one slot each, bytes in order. */
static void test_many(void) {
  struct im_outbatch b;
  im_outbatch_init(&b, 1 << 20);
  static int owners[1000];
  static struct im_outref refs[1000];
  char msg[32];
  for (int i = 0; i < 1000; i++) {
    int n = snprintf(msg, sizeof msg, "[%d", i);
    CHECK_EQ(im_outbatch_add(&b, &owners[i], &refs[i], msg, (size_t)n), IM_OK);
    CHECK_EQ(im_outbatch_add(&b, &owners[i], &refs[i], "]", 1), IM_OK);
  }
  CHECK_EQ(b.n, 1000);
  size_t off = 0;
  for (int i = 0; i < 1000; i++) {
    int n = snprintf(msg, sizeof msg, "[%d]", i);
    CHECK_EQ(b.slot[i].len, (size_t)n);
    CHECK_EQ(b.slot[i].off, off);
    CHECK(!memcmp(data_of(&b, (uint32_t)i), msg, (size_t)n));
    off += (size_t)n;
  }
  im_outbatch_cleanup(&b);
}

/* Past the byte limit: an error, the batch unchanged. */
static void test_limit(void) {
  struct im_outbatch b;
  im_outbatch_init(&b, 8);
  int o;
  struct im_outref r = {0};
  CHECK_EQ(im_outbatch_add(&b, &o, &r, "12345", 5), IM_OK);
  CHECK(im_outbatch_add(&b, &o, &r, "67890", 5) != IM_OK);
  CHECK_EQ(b.n, 1);
  CHECK_EQ(b.slot[0].len, 5);
  im_outbatch_cleanup(&b);
}

int main(void) {
  test_coalesce();
  test_many();
  test_limit();
  return CHECK_DONE();
}
