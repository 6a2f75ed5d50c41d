#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "text/textgen.h"
#include "text/simpletok.h"

#define GEN_N 256

/* Generates n pieces into ids and, if text is not NULL, their concatenation. */
static void generate(uint64_t seed, double t, double p, bool code, uint32_t *ids, size_t n,
                     char *text, size_t cap) {
  struct im_textgen g;
  size_t off = 0;
  im_textgen_init(&g, seed, t, p, code);
  for (size_t k = 0; k < n; k++) {
    const char *s = NULL;
    size_t l = 0;
    ids[k] = im_textgen_next(&g, &s, &l);
    if (text && off + l < cap) {
      memcpy(text + off, s, l);
      off += l;
    }
  }
  if (text)
    text[off] = '\0';
}

static bool valid_utf8(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned char b = s[i];
    size_t m = b < 0x80                 ? 1
               : b >= 0xC2 && b <= 0xDF ? 2
               : b >= 0xE0 && b <= 0xEF ? 3
               : b >= 0xF0 && b <= 0xF4 ? 4
                                        : 0;
    if (m == 0 || i + m > n)
      return false;
    for (size_t k = 1; k < m; k++)
      if ((s[i + k] & 0xC0) != 0x80)
        return false;
    i += m;
  }
  return true;
}

static void test_repetition_rate_by_hand(void) {
  /* 9 4-grams, 4 distinct (1234 2341 3412 4123): 1 - 4/9. */
  const uint32_t loop[] = {1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4};
  CHECK_NEAR(im_repetition_rate(loop, 12), 5.0 / 9.0, 1e-12);
  const uint32_t same[] = {7, 7, 7, 7, 7, 7, 7, 7, 7, 7}; /* 7 grams, 1 distinct */
  CHECK_NEAR(im_repetition_rate(same, 10), 6.0 / 7.0, 1e-12);
  const uint32_t fresh[] = {1, 2, 3, 4, 5, 6, 7, 8};
  CHECK_NEAR(im_repetition_rate(fresh, 8), 0.0, 1e-12);
  /* 1 2 3 4 5 1 2 3 4: grams 1234 2345 3451 4512 5123 1234 -> 5 of 6. */
  const uint32_t once[] = {1, 2, 3, 4, 5, 1, 2, 3, 4};
  CHECK_NEAR(im_repetition_rate(once, 9), 1.0 / 6.0, 1e-12);
  CHECK_NEAR(im_repetition_rate(loop, 3), 0.0, 0);
  CHECK_NEAR(im_repetition_rate(NULL, 0), 0.0, 0);
  /* Ids that differ only in high bits are different grams. */
  const uint32_t high[] = {1, 2, 3, 4, 1, 2, 3, 0x80000004u};
  CHECK_NEAR(im_repetition_rate(high, 8), 0.0, 1e-12);
  /* Long input (heap path): period 100 over 5000 ids -> 100 distinct grams. */
  static uint32_t big[5000];
  for (size_t k = 0; k < 5000; k++)
    big[k] = (uint32_t)(k % 100);
  CHECK_NEAR(im_repetition_rate(big, 5000), 1.0 - 100.0 / 4997.0, 1e-12);
}

static void test_vocab(void) {
  size_t n = im_textgen_vocab_size();
  CHECK_INT(n, >=, 300);
  CHECK_INT(n, <=, 2000);
  for (uint32_t k = 0; k < n; k++) {
    size_t l = 0;
    const char *s = im_textgen_piece(k, &l);
    CHECK_INT(l, >, 0);
    CHECK(valid_utf8((const unsigned char *)s, l));
    for (uint32_t m = 0; m < k; m++) /* pieces are distinct */
      if (strcmp(s, im_textgen_piece(m, NULL)) == 0)
        CHECK_INT(m, ==, k);
  }
  size_t l = 1;
  CHECK_STR(im_textgen_piece((uint32_t)n, &l), "");
  CHECK_EQ(l, 0);
}

static void test_determinism_and_ids(void) {
  static uint32_t a[2000], b[2000], c[2000];
  static char ta[20000], tb[20000];
  for (int code = 0; code < 2; code++) {
    generate(42, 0.8, 0.9, code, a, 2000, ta, sizeof ta);
    generate(42, 0.8, 0.9, code, b, 2000, tb, sizeof tb);
    generate(43, 0.8, 0.9, code, c, 2000, NULL, 0);
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK_STR(ta, tb);
    CHECK(memcmp(a, c, sizeof a) != 0);
    CHECK(valid_utf8((const unsigned char *)ta, strlen(ta)));
    for (size_t k = 0; k < 2000; k++) {
      if (a[k] < 256 || a[k] >= IM_SIMPLETOK_VOCAB) {
        CHECK_INT(a[k], >=, 256);
        CHECK_INT(a[k], <, IM_SIMPLETOK_VOCAB);
      }
    }
  }
  /* Equal ids always carry equal text. */
  struct im_textgen g;
  im_textgen_init(&g, 7, 1.0, 1.0, false);
  static const char *by_id[IM_SIMPLETOK_VOCAB];
  for (int k = 0; k < 5000; k++) {
    const char *s;
    size_t l;
    uint32_t id = im_textgen_next(&g, &s, &l);
    CHECK_EQ(l, strlen(s));
    if (by_id[id] && by_id[id] != s)
      CHECK_STR(by_id[id], s);
    by_id[id] = s;
  }
  /* NULL out-parameters are allowed. */
  CHECK_INT(im_textgen_next(&g, NULL, NULL), >=, 256);
}

/* The text reads as words: single spaces, capital after a sentence end,
 * punctuation without a space before it, code looks like code. */
static void test_text_shape(void) {
  static uint32_t ids[600];
  static char text[8000];
  for (uint64_t seed = 1; seed <= 5; seed++) {
    generate(seed, 1.0, 1.0, false, ids, 600, text, sizeof text);
    CHECK(strstr(text, "  ") == NULL);
    CHECK(strstr(text, " .") == NULL);
    CHECK(strstr(text, " ,") == NULL);
    CHECK(strstr(text, ".The") == NULL);
    for (const char *p = strstr(text, ". "); p; p = strstr(p + 1, ". "))
      CHECK(p[2] >= 'A' && p[2] <= 'Z');
    size_t letters = 0, spaces = 0;
    for (const char *p = text; *p; p++) {
      letters += (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
      spaces += *p == ' ';
    }
    CHECK_INT(letters, >, 3 * spaces);  /* words, not single letters */
    CHECK_INT(spaces * 12, >, letters); /* and not run together */
    CHECK(!im_text_looks_like_code(text, strlen(text)));

    generate(seed, 1.0, 1.0, true, ids, 600, text, sizeof text);
    CHECK(strchr(text, '{') && strchr(text, '}') && strchr(text, ';'));
    CHECK(im_text_looks_like_code(text, strlen(text)));
  }
  generate(3, 0.9, 0.95, false, ids, 120, text, sizeof text);
  fprintf(stderr, "prose sample: %.300s...\n", text);
}

/* Zipf-like frequencies: a heavy head, flattened by temperature. */
static void test_frequencies(void) {
  static uint32_t ids[20000];
  static uint32_t count[IM_SIMPLETOK_VOCAB];
  size_t distinct[2] = {0, 0};
  uint32_t top[2] = {0, 0};
  double entropy[2] = {0, 0};
  const double temps[2] = {0.7, 1.5};
  for (int t = 0; t < 2; t++) {
    memset(count, 0, sizeof count);
    generate(11, temps[t], 1.0, false, ids, 20000, NULL, 0);
    for (size_t k = 0; k < 20000; k++)
      count[ids[k]]++;
    for (size_t k = 0; k < IM_SIMPLETOK_VOCAB; k++) {
      distinct[t] += count[k] > 0;
      if (count[k] > 0)
        entropy[t] -= count[k] / 20000.0 * log2(count[k] / 20000.0);
      top[t] = count[k] > top[t] ? count[k] : top[t];
    }
  }
  fprintf(stderr, "ids: T=0.7 entropy %.2f bits, top id %u/20000; T=1.5 %.2f bits, %u\n",
          entropy[0], top[0], entropy[1], top[1]);
  CHECK_INT(entropy[1] * 100, >, entropy[0] * 100 + 50);
  CHECK_INT(top[0], >, top[1]);
  CHECK_INT(distinct[0], >, 150);
}

static void test_lengths(void) {
  const double temps[] = {0.2, 0.7, 1.0, 1.5};
  for (size_t t = 0; t < sizeof temps / sizeof temps[0]; t++) {
    struct im_rng rng;
    im_rng_seed(&rng, 99 + t);
    const int n = 40000;
    double sum = 0, sum_log = 0, sum_log2 = 0;
    uint32_t min = UINT32_MAX;
    for (int k = 0; k < n; k++) {
      bool capped = true;
      uint32_t v = im_textgen_sample_len(&rng, 300.0, temps[t], 0, &capped);
      CHECK(!capped);
      sum += v;
      sum_log += log(v);
      sum_log2 += log(v) * log(v);
      min = v < min ? v : min;
    }
    double want = 300.0 * (0.5 + 0.5 * temps[t]);
    double sd_log = sqrt(sum_log2 / n - (sum_log / n) * (sum_log / n));
    fprintf(stderr, "length T=%.1f: mean %.1f (want %.1f), sigma %.3f (want %.3f)\n", temps[t],
            sum / n, want, sd_log, 0.4 + 0.3 * temps[t]);
    CHECK_REL(sum / n, want, 0.03);
    CHECK_NEAR(sd_log, 0.4 + 0.3 * temps[t], 0.02);
    CHECK_INT(min, >=, 1);
  }
  /* Cap: never above max_tokens; capped exactly when it was cut. */
  struct im_rng rng;
  im_rng_seed(&rng, 5);
  int n_capped = 0;
  for (int k = 0; k < 10000; k++) {
    bool capped = false;
    uint32_t v = im_textgen_sample_len(&rng, 200.0, 1.0, 150, &capped);
    CHECK_INT(v, <=, 150);
    CHECK_INT(v, >=, 1);
    if (capped)
      CHECK_EQ(v, 150);
    n_capped += capped;
  }
  /* P(lognormal(mean 200, sigma 0.7) > 150) is about 0.55. */
  CHECK_INT(n_capped, >, 4500);
  CHECK_INT(n_capped, <, 6500);
  CHECK_INT(im_textgen_sample_len(&rng, 200.0, 1.0, 1, NULL), ==, 1);
  CHECK_INT(im_textgen_sample_len(&rng, 0.0, 1.0, 100, NULL), ==, 1);
  CHECK_INT(im_textgen_sample_len(&rng, -5.0, 1.0, 100, NULL), ==, 1);
}

/* Low top_p loops, high top_p does not: every seed in the band. */
static void test_repetition_bands(void) {
  const double temps[] = {0.7, 1.0};
  const double low_p[] = {0.1, 0.2, 0.3};
  const double high_p[] = {0.9, 0.95, 1.0};
  uint32_t ids[GEN_N];
  for (int code = 0; code < 2; code++) {
    for (size_t t = 0; t < 2; t++) {
      for (size_t p = 0; p < 3; p++) {
        double lo_sum = 0, hi_sum = 0, lo_min = 1, hi_max = 0;
        for (uint64_t seed = 1; seed <= 16; seed++) {
          generate(seed * 7919, temps[t], low_p[p], code, ids, GEN_N, NULL, 0);
          double lo = im_repetition_rate(ids, GEN_N);
          generate(seed * 7919, temps[t], high_p[p], code, ids, GEN_N, NULL, 0);
          double hi = im_repetition_rate(ids, GEN_N);
          CHECK_NEAR(lo, 0.725, 0.275); /* in (0.45, 1] */
          CHECK_NEAR(hi, 0.075, 0.075); /* in [0, 0.15) */
          lo_sum += lo;
          hi_sum += hi;
          lo_min = lo < lo_min ? lo : lo_min;
          hi_max = hi > hi_max ? hi : hi_max;
        }
        fprintf(stderr,
                "%s T=%.1f: top_p %.2f rate mean %.3f min %.3f | top_p %.2f rate mean %.3f max "
                "%.3f\n",
                code ? "code " : "prose", temps[t], low_p[p], lo_sum / 16, lo_min, high_p[p],
                hi_sum / 16, hi_max);
      }
    }
  }
  /* Monotone on average between the bands. */
  double prev = 1.0;
  const double ps[] = {0.3, 0.5, 0.7, 0.9};
  for (size_t p = 0; p < 4; p++) {
    double sum = 0;
    for (uint64_t seed = 1; seed <= 16; seed++) {
      generate(seed, 0.8, ps[p], false, ids, GEN_N, NULL, 0);
      sum += im_repetition_rate(ids, GEN_N);
    }
    CHECK_INT(sum / 16 * 1000, <=, prev * 1000);
    prev = sum / 16;
  }
}

static void test_code_heuristic(void) {
  const char *c_src = "#include <stdio.h>\n\nint main(void) {\n  int x = 1;\n  "
                      "printf(\"%d\\n\", x);\n  return 0;\n}\n";
  const char *py = "def add(a, b):\n    total = a + b\n    return total\n\n"
                   "for i in range(3):\n    print(add(i, i))\n";
  const char *js = "const f = (x) => x * 2;\nlet y = f(3);\nconsole.log(y);\n";
  const char *fenced = "Why does this fail?\n```\nprint(1/0)\n```\n";
  const char *one_line = "int main(void) { return 0; }";
  const char *prose = "Write a short story about a lighthouse keeper.\n"
                      "It should be about 300 words long; keep the tone warm.\n"
                      "For each paragraph, use simple language.\n";
  const char *question = "for each item in the list, explain why it matters";
  const char *mixed = "Please review my function and tell me what is wrong with it.\n"
                      "int sum(int *a, int n) {\n  int s = 0;\n  for (int i = 0; i <= n; i++) "
                      "s += a[i];\n  return s;\n}\n";
  CHECK(im_text_looks_like_code(c_src, strlen(c_src)));
  CHECK(im_text_looks_like_code(py, strlen(py)));
  CHECK(im_text_looks_like_code(js, strlen(js)));
  CHECK(im_text_looks_like_code(fenced, strlen(fenced)));
  CHECK(im_text_looks_like_code(one_line, strlen(one_line)));
  CHECK(im_text_looks_like_code(mixed, strlen(mixed)));
  CHECK(!im_text_looks_like_code(prose, strlen(prose)));
  CHECK(!im_text_looks_like_code(question, strlen(question)));
  CHECK(!im_text_looks_like_code("", 0));
  CHECK(!im_text_looks_like_code(NULL, 0));
  /* Length is honoured: the code after len is not seen. */
  CHECK(!im_text_looks_like_code(fenced, 10));
}

int main(void) {
  test_repetition_rate_by_hand();
  test_vocab();
  test_determinism_and_ids();
  test_text_shape();
  test_frequencies();
  test_lengths();
  test_repetition_bands();
  test_code_heuristic();
  return CHECK_DONE();
}
