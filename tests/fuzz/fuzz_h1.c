/* Fuzz target for the h1 transport's response parser (load/h1.h).
 *
 * Input layout: byte 0 picks the read size (0: one feed of everything),
 * byte 1 holds flags (bit 0: the connection closes after the input, so
 * im_h1_eof runs; bit 1: after a complete reusable response, parse the
 * bytes left as the next response, as a kept connection does), the rest is
 * what the server sent. Each input runs twice, fed whole and in reads of
 * the chosen size: both runs must give the same transcript (status lines,
 * headers, body bytes), the same result and the same bytes consumed.
 * Invariants are checked after every call; a violation aborts. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load/h1.h"
#include "fuzz.h"

struct transcript {
  uint64_t hash;  /* FNV-1a over everything seen, with separators */
  size_t body;    /* body bytes */
  int responses;
};

static void mix(struct transcript *t, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    t->hash = (t->hash ^ b[i]) * 0x100000001b3ULL;
}

static void on_status(void *ud, int code) {
  REQUIRE(code >= 100 && code <= 999 && code != 101);
  mix(ud, "S", 1);
  mix(ud, &code, sizeof code);
}

static void on_header(void *ud, const char *n, size_t nl, const char *v, size_t vl) {
  REQUIRE(nl > 0 && nl <= IM_H1_LINE_MAX && vl <= IM_H1_LINE_MAX);
  REQUIRE(vl == 0 || (v[0] != ' ' && v[0] != '\t' && v[vl - 1] != ' ' && v[vl - 1] != '\t'));
  mix(ud, "H", 1);
  mix(ud, n, nl);
  mix(ud, "=", 1);
  mix(ud, v, vl);
}

static int on_body(void *ud, const char *d, size_t n) {
  struct transcript *t = ud;
  REQUIRE(n > 0);
  t->body += n;
  mix(t, d, n); /* pieces differ with the reads: no separator */
  return 0;
}

static const struct im_h1_cb cbs = {on_status, on_header, on_body};

/* Returns the final result; *consumed: bytes used. */
static int run(const uint8_t *data, size_t size, size_t step, bool eof, bool again,
               struct transcript *t, size_t *consumed) {
  struct im_h1 p;
  im_h1_init(&p);
  memset(t, 0, sizeof *t);
  t->hash = 0xcbf29ce484222325ULL;
  size_t off = 0;
  enum im_h1_rc rc = IM_H1_MORE;
  for (;;) {
    while (rc == IM_H1_MORE && off < size) {
      size_t n = step && step < size - off ? step : size - off;
      size_t used = 0;
      rc = im_h1_feed(&p, (const char *)data + off, n, &cbs, t, &used);
      REQUIRE(used <= n);
      REQUIRE(rc != IM_H1_MORE || used == n);
      REQUIRE(rc != IM_H1_STOP); /* the callback never stops */
      off += used;
    }
    if (rc == IM_H1_MORE && eof)
      rc = im_h1_eof(&p);
    if (rc == IM_H1_DONE) {
      t->responses++;
      mix(t, "D", 1);
      if (again && im_h1_reusable(&p) && off < size && t->responses < 64) {
        im_h1_reset(&p);
        rc = IM_H1_MORE;
        continue;
      }
    }
    break;
  }
  mix(t, &rc, sizeof rc);
  REQUIRE(im_h1_rc_name(rc)[0]);
  im_h1_cleanup(&p);
  *consumed = off;
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  size_t step = data[0];
  bool eof = data[1] & 1, again = data[1] & 2;
  data += 2;
  size -= 2;
  struct transcript whole, split;
  size_t cw, cs;
  int rw = run(data, size, 0, eof, again, &whole, &cw);
  int rs = run(data, size, step, eof, again, &split, &cs);
  REQUIRE(rw == rs);
  REQUIRE(cw == cs);
  REQUIRE(whole.hash == split.hash);
  REQUIRE(whole.body == split.body);
  return 0;
}
