#include <ctype.h>
#include <string.h>

#include "check.h"
#include "core/buf.h"
#include "text/content.h"
#include "text/simpletok.h"

static void test_names(void) {
  CHECK_STR(im_content_name(IM_CONTENT_TEXT), "text");
  CHECK_STR(im_content_name(IM_CONTENT_CODE), "code");
  CHECK_STR(im_content_name(IM_CONTENT_COUNT_), "?");
  enum im_content c = IM_CONTENT_TEXT;
  CHECK_OK(im_content_parse("code", 4, &c));
  CHECK_EQ(c, IM_CONTENT_CODE);
  CHECK_OK(im_content_parse("prose", 5, &c));
  CHECK_EQ(c, IM_CONTENT_TEXT);
  CHECK_EQ(im_content_parse("cod", 3, &c), IM_PARSE);
}

static void test_mix_parse(void) {
  struct im_mix m;
  char err[160];
  CHECK_OK(im_mix_parse("code=0.3,text=0.7", &m, err, sizeof err));
  CHECK_NEAR(m.weight[IM_CONTENT_CODE], 0.3, 1e-12);
  CHECK_NEAR(m.weight[IM_CONTENT_TEXT], 0.7, 1e-12);
  CHECK_OK(im_mix_parse(" text = 3 , code=1 ", &m, err, sizeof err));
  CHECK_NEAR(m.weight[IM_CONTENT_CODE], 0.25, 1e-12);
  CHECK_NEAR(m.weight[IM_CONTENT_TEXT], 0.75, 1e-12);
  CHECK_OK(im_mix_parse("code=2", &m, err, sizeof err));
  CHECK_NEAR(m.weight[IM_CONTENT_CODE], 1.0, 1e-12);
  CHECK_NEAR(m.weight[IM_CONTENT_TEXT], 0.0, 0);
  CHECK_OK(im_mix_parse("code=0,text=1e-3", &m, err, sizeof err));
  CHECK_NEAR(m.weight[IM_CONTENT_TEXT], 1.0, 1e-12);

  struct im_mix keep = {{0.5, 0.5}};
  static const struct {
    const char *spec;
    enum im_err e;
    const char *msg;
  } bad[] = {
      {"", IM_PARSE, "empty part"},
      {"code=0.3,", IM_PARSE, "empty part"},
      {"code", IM_PARSE, "'code': expected class=weight"},
      {"cod=0.3,text=0.7", IM_PARSE, "'cod=0.3': unknown class 'cod'"},
      {"code=abc", IM_PARSE, "'code=abc': weight is not a number"},
      {"code=0.3x", IM_PARSE, "'code=0.3x': weight is not a number"},
      {"code=", IM_PARSE, "'code=': weight is not a number"},
      {"code=1,code=2", IM_PARSE, "'code=2': class 'code' given twice"},
      {"code=-0.1,text=1", IM_INVAL, "'code=-0.1': weight is negative"},
      {"code=inf", IM_INVAL, "'code=inf': weight is not finite"},
      {"code=nan", IM_INVAL, "'code=nan': weight is not finite"},
      {"code=1e999", IM_INVAL, "weight is not finite"},
      {"code=0,text=0", IM_INVAL, "at least one weight must be > 0"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct im_mix got = keep;
    err[0] = '\0';
    CHECK_EQ(im_mix_parse(bad[i].spec, &got, err, sizeof err), bad[i].e);
    if (!strstr(err, bad[i].msg))
      fprintf(stderr, "  spec '%s': message \"%s\" lacks \"%s\"\n", bad[i].spec, err, bad[i].msg);
    CHECK(strstr(err, bad[i].msg) != NULL);
    CHECK(memcmp(&got, &keep, sizeof got) == 0);
  }
}

static void test_mix_pick(void) {
  struct im_mix m = {{0.7, 0.3}};
  CHECK_EQ(im_mix_pick(&m, 0.0), IM_CONTENT_TEXT);
  CHECK_EQ(im_mix_pick(&m, 0.6999), IM_CONTENT_TEXT);
  CHECK_EQ(im_mix_pick(&m, 0.7001), IM_CONTENT_CODE);
  CHECK_EQ(im_mix_pick(&m, 0.999999), IM_CONTENT_CODE);
  CHECK_EQ(im_mix_pick(&m, 1.5), IM_CONTENT_CODE);
  CHECK_EQ(im_mix_pick(&m, -1.0), IM_CONTENT_TEXT);
  struct im_mix only_text = {{1.0, 0.0}};
  CHECK_EQ(im_mix_pick(&only_text, 0.9999999), IM_CONTENT_TEXT);
  CHECK_EQ(im_mix_pick(&only_text, 1.0), IM_CONTENT_TEXT);
  struct im_mix only_code = {{0.0, 1.0}};
  CHECK_EQ(im_mix_pick(&only_code, 0.0), IM_CONTENT_CODE);
  /* Frequencies over a fine grid of u follow the weights. */
  int n_code = 0;
  for (int k = 0; k < 10000; k++)
    n_code += im_mix_pick(&m, (k + 0.5) / 10000.0) == IM_CONTENT_CODE;
  CHECK_EQ(n_code, 3000);
}

static void gen_text(enum im_content c, uint64_t seed, size_t pieces, struct im_buf *b) {
  struct im_content_gen g;
  im_content_gen_init(&g, c, seed);
  for (size_t k = 0; k < pieces; k++) {
    const char *p;
    size_t n;
    im_content_gen_next(&g, &p, &n);
    CHECK(n >= 1);
    if (im_buf_append(b, p, n) != IM_OK)
      break;
  }
}

static size_t count_str(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

static void test_generators(void) {
  for (int c = 0; c < IM_CONTENT_COUNT_; c++) {
    struct im_buf a, b, d;
    im_buf_init(&a, IM_TEST_BUF_MAX);
    im_buf_init(&b, IM_TEST_BUF_MAX);
    im_buf_init(&d, IM_TEST_BUF_MAX);
    gen_text((enum im_content)c, 42, 5000, &a);
    gen_text((enum im_content)c, 42, 5000, &b);
    gen_text((enum im_content)c, 43, 5000, &d);
    CHECK_EQ(a.len, b.len);
    CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    CHECK(a.len != d.len || memcmp(a.data, d.data, a.len) != 0);
    CHECK(isalpha((unsigned char)a.data[0]));
    /* The alphabet promised in content.h. */
    size_t bad = 0, lt_bad = 0;
    for (size_t i = 0; i < a.len; i++) {
      unsigned char ch = (unsigned char)a.data[i];
      if (!(ch == '\n' || (ch >= 0x20 && ch < 0x7f)))
        bad++;
      if (ch == '<' && !(i + 1 < a.len &&
                         (a.data[i + 1] == ' ' || a.data[i + 1] == '=' || a.data[i + 1] == '<')))
        lt_bad++;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(lt_bad, 0);
    /* About one token per piece under the built-in tokenizer. */
    size_t toks = im_simpletok_encode(a.data, a.len, NULL, 0);
    CHECK(toks >= 4000 && toks <= 7500);
    if (c == IM_CONTENT_CODE) {
      /* Both styles, loops, blocks, comments, indentation, numbers. */
      CHECK(count_str(a.data, "\ndef ") > 3);
      CHECK(count_str(a.data, ") {\n") > 10);
      CHECK(count_str(a.data, "for (") > 3);
      CHECK(count_str(a.data, " in range(") > 3);
      CHECK(count_str(a.data, "return") > 10);
      CHECK(count_str(a.data, "\n        ") > 10);
      CHECK(count_str(a.data, "# ") + count_str(a.data, "// ") + count_str(a.data, "/* ") > 5);
      CHECK(strpbrk(a.data, "0123456789") != NULL);
      /* Braces balance within every complete C function. */
      long depth = 0, min_depth = 0;
      for (size_t i = 0; i < a.len; i++) {
        depth += a.data[i] == '{';
        depth -= a.data[i] == '}';
        if (depth < min_depth)
          min_depth = depth;
      }
      CHECK_EQ(min_depth, 0);
      CHECK(depth >= 0 && depth <= 4);
    } else {
      CHECK(count_str(a.data, ". ") > 100);
      CHECK(count_str(a.data, " the ") > 50);
      CHECK_EQ(count_str(a.data, "{"), 0);
    }
    im_buf_cleanup(&a);
    im_buf_cleanup(&b);
    im_buf_cleanup(&d);
  }
}

int main(void) {
  test_names();
  test_mix_parse();
  test_mix_pick();
  test_generators();
  return CHECK_DONE();
}
