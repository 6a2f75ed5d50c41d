/* Reading requests.jsonl back (record/reader.h): bounded, streaming, and
 * every bad line skipped with its number, never a crash. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/buf.h"
#include "record/reader.h"

/* A valid line for attempt id. */
static void line_for(uint64_t id, struct im_buf *out) {
  struct im_record r;
  memset(&r, 0, sizeof r);
  im_record_reset(&r);
  r.id = r.logical_id = id;
  r.attempt = 1;
  r.t_sched = r.t_dispatch = r.t_start = (int64_t)id * 1000;
  CHECK_OK(im_record_to_jsonl(&r, out));
  im_record_cleanup(&r);
}

static FILE *mem(const char *s, size_t n) { return fmemopen((void *)s, n, "rb"); }

static void test_good_and_bad_lines(void) {
  struct im_buf b;
  im_buf_init(&b, 1 << 20);
  line_for(1, &b);
  CHECK_OK(im_buf_puts(&b, "\n"));              /* an empty line: skipped, not bad */
  CHECK_OK(im_buf_puts(&b, "{\"id\": oops}\n")); /* line 3: corrupt */
  line_for(2, &b);                               /* line 4 */
  CHECK_OK(im_buf_puts(&b, "[1,2,3]\n"));        /* line 5: JSON, not a record */
  line_for(3, &b);                               /* line 6 */
  size_t cut = b.len;
  line_for(4, &b);                               /* line 7: cut short below */
  FILE *f = mem(b.data, cut + 40);
  struct im_record *recs;
  size_t n;
  struct im_read_report rep;
  CHECK_OK(im_records_read(f, &recs, &n, &rep));
  fclose(f);
  CHECK_EQ(n, 3);
  CHECK_EQ(recs[0].id, 1);
  CHECK_EQ(recs[1].id, 2);
  CHECK_EQ(recs[2].id, 3);
  CHECK_EQ(rep.lines, 6);
  CHECK_EQ(rep.bad, 3);
  CHECK(rep.truncated_tail);
  CHECK_EQ(rep.n_notes, 3);
  CHECK(strstr(rep.notes[0], "line 3:") == rep.notes[0]);
  CHECK(strstr(rep.notes[1], "line 5:") == rep.notes[1]);
  CHECK(strstr(rep.notes[2], "line 7:") == rep.notes[2]);
  CHECK(strstr(rep.notes[2], "cut short") != NULL);
  im_records_free(recs, n);
  im_buf_cleanup(&b);
}

/* Lines over the cap are skipped whole, wherever the block boundaries fall,
 * and the line after them is read. */
static void test_long_lines(void) {
  for (size_t cap = 8; cap <= 64; cap += 7) {
    char text[1024];
    size_t n = 0;
    n += (size_t)snprintf(text + n, sizeof text - n, "short\n");
    for (size_t i = 0; i < 3 * cap; i++)
      text[n++] = 'x';
    text[n++] = '\n';
    n += (size_t)snprintf(text + n, sizeof text - n, "tail\n");
    FILE *f = mem(text, n);
    struct im_jsonl_reader *r;
    CHECK_OK(im_jsonl_open(f, cap, &r));
    const char *line;
    size_t len;
    uint64_t no;
    CHECK_EQ(im_jsonl_next(r, &line, &len, &no), IM_OK);
    CHECK(len == 5 && !memcmp(line, "short", 5));
    CHECK_EQ(im_jsonl_next(r, &line, &len, &no), IM_LIMIT);
    CHECK_EQ(no, 2);
    CHECK_EQ(im_jsonl_next(r, &line, &len, &no), IM_OK);
    CHECK(len == 4 && !memcmp(line, "tail", 4));
    CHECK_EQ(no, 3);
    CHECK_EQ(im_jsonl_next(r, &line, &len, &no), IM_NOTFOUND);
    im_jsonl_close(r);
    fclose(f);
  }
  FILE *f = mem("x\n", 2);
  struct im_jsonl_reader *r;
  CHECK_EQ(im_jsonl_open(f, 0, &r), IM_INVAL);
  CHECK_EQ(im_jsonl_open(f, IM_RECORD_LINE_MAX + 1, &r), IM_INVAL);
  fclose(f);
}

/* Many records across many blocks: all read, in order. */
static void test_many(void) {
  struct im_buf b;
  im_buf_init(&b, 64 << 20);
  for (uint64_t i = 1; i <= 5000; i++)
    line_for(i, &b);
  FILE *f = mem(b.data, b.len);
  struct im_record *recs;
  size_t n;
  struct im_read_report rep;
  CHECK_OK(im_records_read(f, &recs, &n, &rep));
  fclose(f);
  CHECK_EQ(n, 5000);
  CHECK_EQ(rep.bad, 0);
  CHECK(!rep.truncated_tail);
  bool ordered = true;
  for (size_t i = 0; i < n; i++)
    ordered &= recs[i].id == i + 1;
  CHECK(ordered);
  im_records_free(recs, n);
  im_buf_cleanup(&b);
  CHECK_EQ(im_records_read_path("/nonexistent/requests.jsonl", &recs, &n, &rep), IM_IO);
  CHECK_EQ(n, 0);
  /* A device never ends (/dev/zero, or /dev/full behind a symlink after a
   * disk-full test): refused, not read forever. */
  CHECK_EQ(im_records_read_path("/dev/zero", &recs, &n, &rep), IM_INVAL);
  CHECK_EQ(n, 0);
}

int main(void) {
  test_good_and_bad_lines();
  test_long_lines();
  test_many();
  return CHECK_DONE();
}
