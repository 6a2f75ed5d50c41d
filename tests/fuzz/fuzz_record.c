/* Fuzz target for reading requests.jsonl back (record/reader.h, and
 * record.c's im_record_from_json under it): any bytes as a records file
 * are read without a crash, every line is either a record or a reported
 * skip, and every record read writes back to a line that reads back the
 * same (the writer and the reader agree); and every line reads the same by
 * the in-place scan and by jansson alone (record/fobj.h). */
#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "fuzz.h"
#include "record/fobj.h"
#include "record/reader.h"

/* The two reading paths agree on one line: result, message, record. */
static void same_both_ways(const char *line, size_t len) {
  struct im_record a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  im_record_reset(&a);
  im_record_reset(&b);
  char ma[128] = "", mb[128] = "";
  enum im_err ea = im_record_from_json(line, len, &a, ma, sizeof ma);
  enum im_err eb = im__record_from_tree(line, len, &b, mb, sizeof mb);
  REQUIRE(ea == eb && strcmp(ma, mb) == 0);
  if (ea == IM_OK) {
    struct im_buf la, lb;
    im_buf_init(&la, IM_RECORD_LINE_MAX);
    im_buf_init(&lb, IM_RECORD_LINE_MAX);
    REQUIRE(im_record_to_jsonl(&a, &la) == IM_OK && im_record_to_jsonl(&b, &lb) == IM_OK);
    REQUIRE(la.len == lb.len && !memcmp(la.data, lb.data, la.len));
    im_buf_cleanup(&la);
    im_buf_cleanup(&lb);
  }
  im_record_cleanup(&a);
  im_record_cleanup(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (size_t at = 0; at < size;) {
    const uint8_t *nl = memchr(data + at, '\n', size - at);
    size_t end = nl ? (size_t)(nl - data) : size;
    same_both_ways((const char *)data + at, end - at);
    at = end + 1;
  }
  FILE *f = fmemopen((void *)(size ? data : (const uint8_t *)""), size ? size : 1, "rb");
  if (!f)
    return 0;
  struct im_record *recs = NULL;
  size_t n = 0;
  struct im_read_report rep;
  enum im_err err = im_records_read(f, &recs, &n, &rep);
  fclose(f);
  REQUIRE(err == IM_OK || err == IM_NOMEM);
  REQUIRE(rep.lines == n + rep.bad);
  REQUIRE(rep.n_notes <= IM_READ_MAX_NOTES);
  for (size_t i = 0; i < n; i++) {
    struct im_buf line, again;
    im_buf_init(&line, IM_RECORD_LINE_MAX);
    im_buf_init(&again, IM_RECORD_LINE_MAX);
    REQUIRE(im_record_to_jsonl(&recs[i], &line) == IM_OK);
    struct im_record back;
    memset(&back, 0, sizeof back);
    im_record_reset(&back);
    REQUIRE(im_record_from_json(line.data, line.len - 1, &back, NULL, 0) == IM_OK);
    REQUIRE(im_record_to_jsonl(&back, &again) == IM_OK);
    REQUIRE(again.len == line.len && !memcmp(again.data, line.data, line.len));
    im_record_cleanup(&back);
    im_buf_cleanup(&line);
    im_buf_cleanup(&again);
  }
  im_records_free(recs, n);
  return 0;
}
