/* Fuzz target for the dataset and trace readers (src/workload/dataset.c).
 *
 * Byte 0 picks the format (sharegpt, jsonl, mooncake, azure) and, in bit 2,
 * small limits (reaching max_line / max_items); the rest is the file.
 * Checks:
 *   - success or IM_PARSE / IM_LIMIT / IM_NOMEM, never anything else; a
 *     failure says why (a message naming the file) and leaves no items;
 *   - every item read is usable: a prompt or messages (each with role and
 *     content), lengths -1 or >= 0, timestamps -1 or >= 0 with the earliest
 *     at 0 when any is given, ts_sorted true only when they are sorted;
 *   - reading the same bytes twice gives the same items. */
#include <string.h>

#include "fuzz.h"
#include "workload/dataset.h"

static void check(const struct im_dataset *ds) {
  int64_t min_ts = INT64_MAX, prev = -1;
  bool sorted = true, any_ts = false;
  for (size_t i = 0; i < ds->n; i++) {
    const struct im_ds_item *it = &ds->items[i];
    REQUIRE(it->input_len >= -1 && it->output_len >= -1);
    for (size_t m = 0; m < it->n_messages; m++)
      REQUIRE(it->messages[m].role && it->messages[m].content);
    REQUIRE(!it->n_hash_ids || it->hash_ids);
    if (it->timestamp_ns >= 0) {
      any_ts = true;
      if (it->timestamp_ns < min_ts)
        min_ts = it->timestamp_ns;
      if (it->timestamp_ns < prev)
        sorted = false;
      prev = it->timestamp_ns;
    } else {
      REQUIRE(it->timestamp_ns == -1);
    }
  }
  if (any_ts)
    REQUIRE(min_ts == 0);
  if (ds->ts_sorted)
    REQUIRE(sorted);
}

static bool same(const struct im_dataset *a, const struct im_dataset *b) {
  if (a->n != b->n)
    return false;
  for (size_t i = 0; i < a->n; i++) {
    const struct im_ds_item *x = &a->items[i], *y = &b->items[i];
    if (x->input_len != y->input_len || x->output_len != y->output_len ||
        x->timestamp_ns != y->timestamp_ns || x->n_messages != y->n_messages ||
        x->n_hash_ids != y->n_hash_ids || !x->prompt != !y->prompt ||
        (x->prompt && strcmp(x->prompt, y->prompt)))
      return false;
  }
  return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  static const enum im_ds_format fmts[] = {IM_DS_SHAREGPT, IM_DS_JSONL, IM_DS_MOONCAKE,
                                           IM_DS_AZURE};
  enum im_ds_format fmt = fmts[data[0] & 3];
  struct im_ds_opts o;
  im_ds_opts_init(&o);
  if (data[0] & 4) {
    o.max_line = 64;
    o.max_items = 3;
    o.max_file = 256;
  }
  struct im_dataset a, b;
  char msg[256];
  enum im_err err = im_dataset_load_mem(&a, "fuzz", data + 1, size - 1, fmt, &o, msg, sizeof msg);
  if (err != IM_OK) {
    REQUIRE(err == IM_PARSE || err == IM_LIMIT || err == IM_NOMEM);
    REQUIRE(err == IM_NOMEM || !strncmp(msg, "fuzz", 4));
    REQUIRE(a.n == 0);
    im_dataset_cleanup(&a);
    return 0;
  }
  check(&a);
  REQUIRE(im_dataset_load_mem(&b, "fuzz", data + 1, size - 1, fmt, &o, msg, sizeof msg) == IM_OK);
  REQUIRE(same(&a, &b));
  im_dataset_cleanup(&a);
  im_dataset_cleanup(&b);
  return 0;
}
