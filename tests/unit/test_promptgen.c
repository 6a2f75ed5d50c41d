#include <string.h>
#include <time.h>

#include "check.h"
#include "infermeter/buf.h"
#include "infermeter/promptgen.h"
#include "infermeter/tokenizer.h"
#include "workload/simpletok.h"

#define FIXTURE "tests/fixtures/tokenizer/tiny_bytelevel.json"

static size_t count(struct im_tok *tok, const char *s, size_t len) {
  if (!tok)
    return im_simpletok_encode(s, len, NULL, 0);
  size_t c = 0;
  CHECK_OK(im_tok_count(tok, s, len, &c));
  return c;
}

/* count(result) == n for every n, seed and class; deterministic; starts
 * with a letter; no added-token string and no added-token id. */
static void test_exact(struct im_tok *tok, const char *label) {
  static const uint32_t ns[] = {0, 1, 2, 3, 7, 100, 1000, 4096};
  static const uint64_t seeds[] = {1, 2, 3, 0xdeadbeefULL};
  int bad = 0;
  for (int c = 0; c < IM_CONTENT_COUNT_; c++)
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
      for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        struct im_buf a, b;
        im_buf_init(&a, 0);
        im_buf_init(&b, 0);
        CHECK_OK(im_promptgen_exact(tok, (enum im_content)c, seeds[s], ns[i], &a));
        CHECK_OK(im_promptgen_exact(tok, (enum im_content)c, seeds[s], ns[i], &b));
        size_t got = count(tok, a.data ? a.data : "", a.len);
        CHECK_EQ(got, ns[i]);
        if (got != ns[i] && bad++ < 5)
          fprintf(stderr, "  %s class %d n %u seed %llu: %zu tokens\n", label, c, ns[i],
                  (unsigned long long)seeds[s], got);
        CHECK_EQ(a.len, b.len);
        CHECK(a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0));
        if (ns[i] == 0) {
          CHECK_EQ(a.len, 0);
        } else {
          CHECK(a.len > 0 && ((a.data[0] >= 'a' && a.data[0] <= 'z') ||
                              (a.data[0] >= 'A' && a.data[0] <= 'Z')));
          CHECK(strstr(a.data, "<|") == NULL);
          CHECK(strstr(a.data, "\xef\xbd\x9c") == NULL); /* U+FF5C */
          CHECK(strstr(a.data, "<think>") == NULL && strstr(a.data, "</think>") == NULL);
          CHECK(strstr(a.data, "<s>") == NULL && strstr(a.data, "</s>") == NULL);
        }
        if (tok && ns[i] > 0 && ns[i] <= 4096) {
          static uint32_t ids[4096];
          size_t k = 0;
          CHECK_OK(im_tok_encode(tok, a.data, a.len, ids, 4096, &k));
          uint32_t bos = 0, eot = 0;
          CHECK_OK(im_tok_token_id(tok, "<|bos|>", 7, &bos));
          CHECK_OK(im_tok_token_id(tok, "<|eot|>", 7, &eot));
          size_t special = 0;
          for (size_t j = 0; j < k && j < 4096; j++)
            special += ids[j] == bos || ids[j] == eot;
          CHECK_EQ(special, 0);
        }
        im_buf_cleanup(&a);
        im_buf_cleanup(&b);
      }
  /* Different seeds give different text. */
  struct im_buf x, y;
  im_buf_init(&x, 0);
  im_buf_init(&y, 0);
  CHECK_OK(im_promptgen_exact(tok, IM_CONTENT_CODE, 1, 300, &x));
  CHECK_OK(im_promptgen_exact(tok, IM_CONTENT_CODE, 2, 300, &y));
  CHECK(x.len != y.len || memcmp(x.data, y.data, x.len) != 0);
  im_buf_cleanup(&x);
  im_buf_cleanup(&y);
}

/* Every n up to 200: boundaries that jump over n (byte search) and the
 * filler completion are reached on the way (seen in a manual trace for both
 * tokenizers; the test checks the outcome, not the path). */
static void test_sweep(struct im_tok *tok, const char *label) {
  int bad = 0;
  for (int c = 0; c < IM_CONTENT_COUNT_; c++)
    for (uint32_t n = 1; n <= 200; n++)
      for (uint64_t s = 0; s < 3; s++) {
        struct im_buf b;
        im_buf_init(&b, 0);
        CHECK_OK(im_promptgen_exact(tok, (enum im_content)c, s, n, &b));
        size_t got = count(tok, b.data ? b.data : "", b.len);
        CHECK_EQ(got, n);
        if (got != n && bad++ < 5)
          fprintf(stderr, "  %s class %d n %u seed %llu: %zu tokens\n", label, c, n,
                  (unsigned long long)s, got);
        im_buf_cleanup(&b);
      }
}

/* Joining: the header's promise for the built-in tokenizer, and the total
 * promised by _after for any prefix. */
static void test_prefix(struct im_tok *tok) {
  static const char *const good[] = {"", "[run-7] [42]\n", "Question:", "x.", "12", "a\n\n",
                                     "(", "caf\xc3\xa9"};
  static const char *const any[] = {"word", "ends with space ", "tab\t", "x.", "\n", "a b c 1"};
  for (int c = 0; c < IM_CONTENT_COUNT_; c++)
    for (uint32_t n = 1; n < 200; n += 37) {
      if (!tok)
        for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
          struct im_buf b;
          im_buf_init(&b, 0);
          CHECK_OK(im_buf_puts(&b, good[i]));
          size_t before = count(tok, b.data ? b.data : "", b.len);
          CHECK_OK(im_promptgen_exact(tok, (enum im_content)c, n, n, &b));
          CHECK_EQ(count(tok, b.data, b.len), before + n);
          CHECK(b.len >= strlen(good[i]) && memcmp(b.data, good[i], strlen(good[i])) == 0);
          im_buf_cleanup(&b);
        }
      for (size_t i = 0; i < sizeof any / sizeof any[0]; i++) {
        struct im_buf b;
        im_buf_init(&b, 0);
        CHECK_OK(im_buf_puts(&b, any[i]));
        size_t before = count(tok, b.data, b.len);
        CHECK_OK(im_promptgen_exact_after(tok, (enum im_content)c, n + 5, n, &b));
        CHECK_EQ(count(tok, b.data, b.len), before + n);
        CHECK(memcmp(b.data, any[i], strlen(any[i])) == 0);
        im_buf_cleanup(&b);
      }
    }
}

static void test_errors(void) {
  struct im_buf b;
  im_buf_init(&b, 0);
  CHECK_EQ(im_promptgen_exact(NULL, IM_CONTENT_TEXT, 1, IM_PROMPTGEN_MAX_TOKENS + 1, &b),
           IM_LIMIT);
  CHECK_EQ(im_promptgen_exact(NULL, IM_CONTENT_TEXT, 1, 5, NULL), IM_INVAL);
  im_buf_cleanup(&b);
  /* out's cap: IM_LIMIT and out unchanged. */
  im_buf_init(&b, 64);
  CHECK_OK(im_buf_puts(&b, "keep\n"));
  CHECK_EQ(im_promptgen_exact(NULL, IM_CONTENT_TEXT, 1, 500, &b), IM_LIMIT);
  CHECK_EQ(b.len, 5);
  CHECK_STR(b.data, "keep\n");
  CHECK_EQ(im_promptgen_exact_after(NULL, IM_CONTENT_CODE, 1, 500, &b), IM_LIMIT);
  CHECK_STR(b.data, "keep\n");
  im_buf_cleanup(&b);
}

/* Not an assertion: prints the time of a 32K-token prompt for the record. */
static void report_speed(void) {
  for (int c = 0; c < IM_CONTENT_COUNT_; c++) {
    struct timespec t0, t1;
    struct im_buf b;
    im_buf_init(&b, 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    enum im_err e = im_promptgen_exact(NULL, (enum im_content)c, 9, 32768, &b);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK_OK(e);
    CHECK_EQ(im_simpletok_encode(b.data, b.len, NULL, 0), 32768);
    fprintf(stderr, "32768-token %s prompt (%zu bytes), built-in tokenizer: %.3f ms\n",
            c ? "code" : "text", b.len,
            (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    im_buf_cleanup(&b);
  }
}

int main(void) {
  test_exact(NULL, "built-in");
  test_prefix(NULL);
  test_sweep(NULL, "built-in");
  test_errors();
  char msg[256];
  struct im_tok *tok = NULL;
  CHECK_OK(im_tok_load(FIXTURE, &tok, msg, sizeof msg));
  if (tok) {
    test_exact(tok, "tiny_bytelevel");
    test_prefix(tok);
    test_sweep(tok, "tiny_bytelevel");
  }
  im_tok_free(tok);
  report_speed();
  return CHECK_DONE();
}
