/* Fuzz target for the workload parsers and generators that take user input
 * (src/text/chattmpl.c, content.c, promptgen.c; src/workload/session.c).
 *
 * Byte 0 picks the part, the rest is its input:
 *   0: messages JSON rendered by every chat template: deterministic, and a
 *      successful DeepSeek-V3 rendering starts with its BOS and ends with
 *      the generation prompt;
 *   1: --mix specs: weights finite, >= 0, summing to 1; a pick never lands
 *      on a class of weight 0;
 *   2: --context-growth specs: success means 0 < start <= end, failure
 *      leaves a message naming the flag;
 *   3: exact prompts after an arbitrary prefix (the input, at most 256
 *      bytes) with the built-in tokenizer: the total grows by exactly n. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "text/chattmpl.h"
#include "text/content.h"
#include "text/promptgen.h"
#include "workload/session.h"
#include "text/simpletok.h"
#include "fuzz.h"

static void chat(const char *s, size_t n) {
  static const enum im_chat_tmpl all[] = {IM_CHAT_NONE, IM_CHAT_DEEPSEEK_V3, IM_CHAT_DEEPSEEK_R1,
                                          IM_CHAT_CHATML, IM_CHAT_LLAMA3};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
    struct im_buf a, b;
    im_buf_init(&a, 1u << 20);
    im_buf_init(&b, 1u << 20);
    char e1[128], e2[128];
    enum im_err r1 = im_chat_render_json(all[i], s, n, &a, e1, sizeof e1);
    enum im_err r2 = im_chat_render_json(all[i], s, n, &b, e2, sizeof e2);
    REQUIRE(r1 == r2);
    if (r1 == IM_OK) {
      REQUIRE(a.len == b.len && (!a.len || memcmp(a.data, b.data, a.len) == 0));
      if (all[i] == IM_CHAT_DEEPSEEK_V3) {
        static const char bos[] = "<\xef\xbd\x9c" "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>";
        static const char gen[] = "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>";
        REQUIRE(a.len >= sizeof bos - 1 && memcmp(a.data, bos, sizeof bos - 1) == 0);
        REQUIRE(a.len >= sizeof gen - 1 && memcmp(a.data + a.len - (sizeof gen - 1), gen, sizeof gen - 1) == 0);
      }
    } else if (r1 == IM_PARSE) {
      REQUIRE(e1[0] != '\0');
    }
    im_buf_cleanup(&a);
    im_buf_cleanup(&b);
  }
}

static void mix(const char *s) {
  struct im_mix m;
  char err[256] = "";
  if (im_mix_parse(s, &m, err, sizeof err) != IM_OK) {
    REQUIRE(err[0] != '\0');
    return;
  }
  double sum = 0;
  for (int c = 0; c < IM_CONTENT_COUNT_; c++) {
    REQUIRE(isfinite(m.weight[c]) && m.weight[c] >= 0);
    sum += m.weight[c];
  }
  REQUIRE(fabs(sum - 1.0) < 1e-9);
  for (double u = 0; u < 1; u += 0.125)
    REQUIRE(m.weight[im_mix_pick(&m, u)] > 0);
}

static void growth(const char *s) {
  uint32_t a = 0, b = 0;
  char err[256] = "";
  if (im_sessions_parse_growth(s, &a, &b, err, sizeof err) == 0)
    REQUIRE(a > 0 && a <= b);
  else
    REQUIRE(strstr(err, "--context-growth") != NULL);
}

static void exact(const uint8_t *d, size_t n) {
  if (n < 3)
    return;
  uint32_t want = ((uint32_t)d[0] << 8 | d[1]) % 1024;
  enum im_content cls = d[2] & 1 ? IM_CONTENT_CODE : IM_CONTENT_TEXT;
  d += 3;
  n -= 3;
  if (n > 256)
    n = 256;
  struct im_buf b;
  im_buf_init(&b, 1u << 20);
  REQUIRE(im_buf_append(&b, d, n) == IM_OK);
  size_t before = im_simpletok_encode(b.data, b.len, NULL, 0);
  enum im_err r = im_promptgen_exact_after(NULL, cls, (uint64_t)n * 0x9e3779b97f4a7c15ULL, want, &b);
  if (r == IM_OK)
    REQUIRE(im_simpletok_encode(b.data, b.len, NULL, 0) == before + want);
  else
    REQUIRE(b.len == n); /* unchanged on error */
  im_buf_cleanup(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 65536)
    return 0;
  char *s = malloc(size);
  if (!s)
    return 0;
  memcpy(s, data + 1, size - 1);
  s[size - 1] = '\0';
  switch (data[0] % 4) {
  case 0: chat(s, size - 1); break;
  case 1: mix(s); break;
  case 2: growth(s); break;
  default: exact(data + 1, size - 1); break;
  }
  free(s);
  return 0;
}
