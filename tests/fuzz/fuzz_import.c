/* Fuzz target for `infermeter import`'s parsers (record/import.h): any
 * bytes, read as each format and as "recognise it", either give records or
 * an error with a message, never a crash; every record given writes as a
 * requests.jsonl line that reads back (the run directory import writes is
 * one `report` can read), with times that are unknown (-1) or not negative,
 * in stages that cover every record once. */
#include <string.h>

#include "core/buf.h"
#include "fuzz.h"
#include "record/import.h"

static void one(const char *data, size_t size, enum im_import_tool tool) {
  struct im_import im;
  char err[512];
  enum im_err e = im_import_parse(data, size, tool, &im, err, sizeof err);
  if (e != IM_OK) {
    REQUIRE(e == IM_NOMEM || err[0] != '\0');
    im_import_free(&im);
    return;
  }
  REQUIRE(im.n > 0 && im.n_st > 0);
  size_t covered = 0;
  for (size_t s = 0; s < im.n_st; s++) {
    REQUIRE(im.st[s].first == covered);
    covered += im.st[s].n;
  }
  REQUIRE(covered == im.n);
  struct im_buf line;
  im_buf_init(&line, IM_RECORD_LINE_MAX);
  for (size_t i = 0; i < im.n; i++) {
    const struct im_record *r = &im.recs[i];
    REQUIRE(r->t_start >= -1 && r->t_first >= -1 && r->t_last >= -1 && r->t_end >= -1 &&
            r->t_sched >= -1);
    line.len = 0;
    REQUIRE(im_record_to_jsonl(r, &line) == IM_OK);
    struct im_record back;
    memset(&back, 0, sizeof back);
    im_record_reset(&back);
    REQUIRE(im_record_from_json(line.data, line.len, &back, NULL, 0) == IM_OK);
    REQUIRE(back.n_chunks == r->n_chunks && back.t_start == r->t_start);
    im_record_cleanup(&back);
  }
  im_buf_cleanup(&line);
  im_import_free(&im);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (int t = 0; t < IM_IMPORT_TOOL_COUNT_; t++)
    one((const char *)data, size, (enum im_import_tool)t);
  return 0;
}
