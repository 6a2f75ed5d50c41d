#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "text/simpletok.h"

/* Checks that text cuts exactly into the NULL-terminated list of pieces:
 * same count, pieces concatenate to the text, and every id equals the id of
 * that piece tokenized alone. */
static void check_pieces(const char *text, const char *const *pieces) {
  uint32_t ids[256];
  size_t n = im_simpletok_encode(text, strlen(text), ids, 256);
  size_t want = 0, off = 0;
  while (pieces[want])
    want++;
  CHECK_EQ(n, want);
  if (n != want) {
    fprintf(stderr, "  text: \"%s\"\n", text);
    return;
  }
  for (size_t k = 0; k < want; k++) {
    size_t pl = strlen(pieces[k]);
    uint32_t one = 0;
    CHECK(strncmp(text + off, pieces[k], pl) == 0);
    CHECK_EQ(im_simpletok_encode(pieces[k], pl, &one, 1), 1);
    CHECK_EQ(ids[k], one);
    off += pl;
  }
  CHECK_EQ(off, strlen(text));
}

static void test_boundaries(void) {
  check_pieces("Hello, world!", (const char *const[]){"Hello", ",", " world", "!", NULL});
  check_pieces("The cat sat.", (const char *const[]){"The", " cat", " sat", ".", NULL});
  /* " internationalization" is 21 bytes: 6 + 6 + 6 + 3. */
  check_pieces("an internationalization",
               (const char *const[]){"an", " inter", "nation", "alizat", "ion", NULL});
  /* 8 bytes with the space stays whole, 9 is cut 6 + 3. */
  check_pieces(" buildin builders", (const char *const[]){" buildin", " build", "ers", NULL});
  check_pieces("year 20245", (const char *const[]){"year", " ", "202", "45", NULL});
  check_pieces("a\n\nb", (const char *const[]){"a", "\n\n", "b", NULL});
  /* Indentation: the run minus the space that joins the keyword. */
  check_pieces("{\n    return x;\n}",
               (const char *const[]){"{", "\n", "   ", " return", " x", ";", "\n", "}", NULL});
  check_pieces("f(a, b) == 3",
               (const char *const[]){"f", "(", "a", ",", " b", ")", " =", "=", " ", "3", NULL});
  /* One piece per non-ASCII character: e-acute (2 bytes), two CJK (3 each). */
  check_pieces("caf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd",
               (const char *const[]){"caf", "\xc3\xa9", " ", "\xe4\xbd\xa0", "\xe5\xa5\xbd", NULL});
  /* Emoji (4 bytes) then an invalid lead byte and a stray continuation. */
  check_pieces("\xf0\x9f\x98\x80\xff\x80x",
               (const char *const[]){"\xf0\x9f\x98\x80", "\xff", "\x80", "x", NULL});
  /* A truncated 3-byte character: each byte alone. */
  check_pieces("\xe4\xbd", (const char *const[]){"\xe4", "\xbd", NULL});
  check_pieces("  two", (const char *const[]){" ", " two", NULL});
  check_pieces("tab\tend ", (const char *const[]){"tab", "\t", "end", " ", NULL});
  CHECK_EQ(im_simpletok_encode("", 0, NULL, 0), 0);
}

static void test_properties(void) {
  const char *a = "You are a helpful assistant. Answer briefly.\n\nQuestion: what is 2+2?";
  const char *b = "You are a helpful assistant. Answer briefly.\n\nQuestion: name a colour.";
  uint32_t ia[64], ib[64], ia2[64];
  size_t na = im_simpletok_encode(a, strlen(a), ia, 64);
  size_t nb = im_simpletok_encode(b, strlen(b), ib, 64);
  CHECK_EQ(im_simpletok_encode(a, strlen(a), ia2, 64), na);
  CHECK(memcmp(ia, ia2, na * sizeof ia[0]) == 0); /* deterministic */

  /* The shared prefix ends at a piece boundary (after ":"). */
  const char *prefix = "You are a helpful assistant. Answer briefly.\n\nQuestion:";
  uint32_t ip[64];
  size_t np = im_simpletok_encode(prefix, strlen(prefix), ip, 64);
  CHECK(np < na && np < nb);
  CHECK(memcmp(ia, ip, np * sizeof ia[0]) == 0);
  CHECK(memcmp(ib, ip, np * sizeof ia[0]) == 0);
  CHECK(ia[np] != ib[np]);

  for (size_t k = 0; k < na; k++) {
    CHECK_INT(ia[k], >=, 256);
    CHECK_INT(ia[k], <, IM_SIMPLETOK_VOCAB);
  }

  /* Truncation: at most max_ids written, the count stays right. */
  uint32_t small[5] = {0, 0, 0, 0, 0xdeadbeef};
  CHECK_EQ(im_simpletok_encode(a, strlen(a), small, 4), na);
  CHECK(memcmp(small, ia, 4 * sizeof small[0]) == 0);
  CHECK_EQ(small[4], 0xdeadbeef);
  CHECK_EQ(im_simpletok_encode(a, strlen(a), NULL, 0), na);
  CHECK_EQ(im_simpletok_encode(a, strlen(a), NULL, 10), na);

  /* Different pieces get different ids (no collision among these). */
  const char *w[] = {" the", " The", "the", " a", ".", ",", "\n", "\n\n", " of", " and"};
  uint32_t wid[10];
  for (int k = 0; k < 10; k++)
    CHECK_EQ(im_simpletok_encode(w[k], strlen(w[k]), &wid[k], 1), 1);
  for (int k = 0; k < 10; k++)
    for (int m = k + 1; m < 10; m++)
      CHECK(wid[k] != wid[m]);
}

static void test_bytes_per_token(void) {
  const char *para =
      "The old lighthouse stood at the edge of the harbour for more than a century. "
      "Every evening the keeper climbed the narrow stairs, trimmed the wick and wound "
      "the clockwork that turned the lens. Ships coming home in bad weather looked for "
      "its beam long before they could see the coast, and many sailors said they owed "
      "their lives to it. When the light was finally automated, the town held a small "
      "ceremony. Children painted pictures of the tower, and the last keeper told "
      "stories about storms, shipwrecks and the winter when the bay froze solid.";
  size_t len = strlen(para);
  size_t n = im_simpletok_encode(para, len, NULL, 0);
  double bpt = (double)len / (double)n;
  fprintf(stderr, "english paragraph: %zu bytes, %zu tokens, %.2f bytes/token\n", len, n, bpt);
  CHECK_INT(bpt * 100, >=, 350);
  CHECK_INT(bpt * 100, <=, 550);
}

/* Random bytes, including every byte value, must never crash or overrun. */
static void test_garbage(void) {
  static unsigned char buf[1 << 16];
  static uint32_t ids[1 << 16];
  uint64_t x = 0x1234567;
  for (size_t k = 0; k < sizeof buf; k++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    buf[k] = (unsigned char)(x >> 56);
  }
  for (size_t len = 0; len < 300; len++) {
    size_t n = im_simpletok_encode((const char *)buf + len, len, ids, len);
    CHECK_INT(n, <=, len);
    CHECK_INT(n, >=, (len + 7) / 8);
    for (size_t k = 0; k < n; k++)
      if (ids[k] < 256 || ids[k] >= IM_SIMPLETOK_VOCAB)
        CHECK_INT(ids[k], >=, 256);
  }
  /* Long runs of one class are cut at their caps, not taken whole. */
  memset(buf, 'a', sizeof buf);
  CHECK_EQ(im_simpletok_encode((const char *)buf, 600, NULL, 0), 100);
  memset(buf, ' ', sizeof buf);
  CHECK_EQ(im_simpletok_encode((const char *)buf, 800, NULL, 0), 100);
  memset(buf, '\n', sizeof buf);
  CHECK_EQ(im_simpletok_encode((const char *)buf, 800, NULL, 0), 100);
}

/* Prints the throughput in CPU time (steadier on a loaded machine); not
 * asserted: unit tests never assume timing. */
static void report_speed(void) {
  static char text[1 << 20];
  static uint32_t ids[1 << 19];
  const char *src = "The quick brown fox jumps over the lazy dog, twice; then it "
                    "rests.\n    if (x == 42) { return compute_value(y); }\n";
  size_t sl = strlen(src), off = 0;
  while (off + sl < sizeof text) {
    memcpy(text + off, src, sl);
    off += sl;
  }
  struct timespec t0, t1;
  size_t total = 0, n = 0;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
  for (int r = 0; r < 20; r++) {
    n = im_simpletok_encode(text, off, ids, sizeof ids / sizeof ids[0]);
    total += off;
  }
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  fprintf(stderr, "speed: %.0f MB/s (%zu tokens per %zu bytes)\n", (double)total / s / 1e6, n, off);
}

int main(void) {
  test_boundaries();
  test_properties();
  test_bytes_per_token();
  test_garbage();
  report_speed();
  return CHECK_DONE();
}
