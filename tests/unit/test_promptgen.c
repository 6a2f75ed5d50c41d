#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/buf.h"
#include "text/chattmpl.h"
#include "text/promptgen.h"
#include "text/tokenizer.h"
#include "text/simpletok.h"

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
        im_buf_init(&a, IM_TEST_BUF_MAX);
        im_buf_init(&b, IM_TEST_BUF_MAX);
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
          CHECK(a.len > 0 &&
                ((a.data[0] >= 'a' && a.data[0] <= 'z') || (a.data[0] >= 'A' && a.data[0] <= 'Z')));
          CHECK(strstr(a.data, "<|") == NULL);
          CHECK(strstr(a.data, "\xef\xbd\x9c") == NULL); /* U+FF5C */
          CHECK(strstr(a.data, "<think>") == NULL && strstr(a.data, "</think>") == NULL);
          CHECK(strstr(a.data, "<s>") == NULL && strstr(a.data, "</s>") == NULL);
        }
        if (tok && ns[i] > 0 && ns[i] <= 4096) {
          static uint32_t ids[4096];
          size_t k = 0;
          CHECK_OK(im_tok_encode(tok, a.data, a.len, ids, 4096, &k));
          /* The tiny fixture's added tokens (the DeepSeek-style one has
           * its own check in test_deepseek_style). */
          uint32_t bos = 0, eot = 0;
          if (im_tok_token_id(tok, "<|bos|>", 7, &bos) != IM_OK)
            bos = UINT32_MAX;
          if (im_tok_token_id(tok, "<|eot|>", 7, &eot) != IM_OK)
            eot = UINT32_MAX;
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
  im_buf_init(&x, IM_TEST_BUF_MAX);
  im_buf_init(&y, IM_TEST_BUF_MAX);
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
        im_buf_init(&b, IM_TEST_BUF_MAX);
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
  static const char *const good[] = {"",   "[run-7] [42]\n", "Question:", "x.",
                                     "12", "a\n\n",          "(",         "caf\xc3\xa9"};
  static const char *const any[] = {"word", "ends with space ", "tab\t", "x.", "\n", "a b c 1"};
  for (int c = 0; c < IM_CONTENT_COUNT_; c++)
    for (uint32_t n = 1; n < 200; n += 37) {
      if (!tok)
        for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
          struct im_buf b;
          im_buf_init(&b, IM_TEST_BUF_MAX);
          CHECK_OK(im_buf_puts(&b, good[i]));
          size_t before = count(tok, b.data ? b.data : "", b.len);
          CHECK_OK(im_promptgen_exact(tok, (enum im_content)c, n, n, &b));
          CHECK_EQ(count(tok, b.data, b.len), before + n);
          CHECK(b.len >= strlen(good[i]) && memcmp(b.data, good[i], strlen(good[i])) == 0);
          im_buf_cleanup(&b);
        }
      for (size_t i = 0; i < sizeof any / sizeof any[0]; i++) {
        struct im_buf b;
        im_buf_init(&b, IM_TEST_BUF_MAX);
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
  im_buf_init(&b, IM_TEST_BUF_MAX);
  CHECK_EQ(im_promptgen_exact(NULL, IM_CONTENT_TEXT, 1, IM_PROMPTGEN_MAX_TOKENS + 1, &b), IM_LIMIT);
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

/* ---- A DeepSeek-V3-style tokenizer, built here ---------------------------
 * The pre-tokenizer of deepseek-ai/DeepSeek-V3's tokenizer.json (three
 * Splits, then ByteLevel without its regex), a byte-level vocabulary with
 * merges for a few words of our own choosing (so tokens span several bytes
 * and counts jump across piece boundaries), and DeepSeek's added tokens. */

#define BAR "\xef\xbd\x9c"
#define BLK "\xe2\x96\x81"
static const char *const ds_added[] = {"<" BAR "begin" BLK "of" BLK "sentence" BAR ">",
                                       "<" BAR "end" BLK "of" BLK "sentence" BAR ">",
                                       "<" BAR "User" BAR ">",
                                       "<" BAR "Assistant" BAR ">",
                                       "<think>",
                                       "</think>"};

/* GPT-2's byte-to-character map: printable bytes stand for themselves, the
 * others take code points from 256 up in byte order. */
static void byte_char(int b, char out[3]) {
  bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
  int cp = b;
  if (!printable) {
    cp = 256;
    for (int k = 0; k < b; k++)
      cp += !((k >= 0x21 && k <= 0x7e) || (k >= 0xa1 && k <= 0xac) || k >= 0xae);
  }
  if (cp < 0x80) {
    out[0] = (char)cp;
    out[1] = '\0';
  } else {
    out[0] = (char)(0xc0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3f));
    out[2] = '\0';
  }
}

static struct im_tok *load_deepseek_style(void) {
  static const char *const words[] = {
      " the",   " a",     " of",   " and",   " to",     " in",     " is",  " that",    " for",
      " it",    " with",  " data", " model", " system", " return", " int", " if",      " value",
      " count", " i",     " n",    " x",     "er",      "in",      "ing",  "re",       "on",
      "th",     "an",     "at",    " =",     " (",      ");",      "    ", "        ", "\n",
      ",",      ".",      " {",    "()",     "_",       " +=",     "self", "def",      "static",
      "size",   "buffer", "  ",    "\n\n",   " the"};
  json_t *root = json_object(), *model = json_object(), *vocab = json_object();
  json_t *merges = json_array(), *added = json_array();
  int next = 0;
  for (int b = 0; b < 256; b++) {
    char ch[3];
    byte_char(b, ch);
    json_object_set_new(vocab, ch, json_integer(next++));
  }
  for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
    char acc[128] = "";
    const unsigned char *p = (const unsigned char *)words[w];
    for (size_t i = 0; p[i]; i++) {
      char ch[3], joined[128];
      byte_char(p[i], ch);
      size_t la = strlen(acc), lc = strlen(ch);
      if (la + lc >= sizeof joined)
        break; /* the test's words are short */
      memcpy(joined, acc, la);
      memcpy(joined + la, ch, lc + 1);
      if (i > 0 && !json_object_get(vocab, joined)) {
        char m[160];
        snprintf(m, sizeof m, "%s %s", acc, ch);
        json_array_append_new(merges, json_string(m));
        json_object_set_new(vocab, joined, json_integer(next++));
      }
      memcpy(acc, joined, la + lc + 1);
    }
  }
  for (size_t a = 0; a < sizeof ds_added / sizeof ds_added[0]; a++)
    json_array_append_new(added, json_pack("{s:i,s:s,s:b,s:b,s:b,s:b,s:b}", "id", next++, "content",
                                           ds_added[a], "single_word", 0, "lstrip", 0, "rstrip", 0,
                                           "normalized", 0, "special", 1));
  json_object_set_new(model, "type", json_string("BPE"));
  json_object_set_new(model, "vocab", vocab);
  json_object_set_new(model, "merges", merges);
  json_object_set_new(root, "model", model);
  json_object_set_new(root, "added_tokens", added);
  json_object_set_new(root, "decoder", json_pack("{s:s}", "type", "ByteLevel"));
  /* The three patterns as in DeepSeek-V3's tokenizer.json. */
  json_t *pre = json_pack(
      "{s:s,s:[{s:s,s:{s:s},s:s,s:b},{s:s,s:{s:s},s:s,s:b},{s:s,s:{s:s},s:s,s:b},"
      "{s:s,s:b,s:b,s:b}]}",
      "type", "Sequence", "pretokenizers", "type", "Split", "pattern", "Regex", "\\p{N}{1,3}",
      "behavior", "Isolated", "invert", 0, "type", "Split", "pattern", "Regex",
      "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+", "behavior",
      "Isolated", "invert", 0, "type", "Split", "pattern", "Regex",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?"
      "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
      "behavior", "Isolated", "invert", 0, "type", "ByteLevel", "add_prefix_space", 0,
      "trim_offsets", 1, "use_regex", 0);
  CHECK(pre != NULL);
  json_object_set_new(root, "pre_tokenizer", pre);
  char path[] = "/tmp/im_test_promptgen_XXXXXX";
  int fd = mkstemp(path);
  struct im_tok *tok = NULL;
  CHECK(fd >= 0);
  if (fd >= 0) {
    close(fd);
    CHECK_OK(json_dump_file(root, path, 0));
    char msg[256] = "";
    CHECK_OK(im_tok_load(path, &tok, msg, sizeof msg));
    if (!tok)
      fprintf(stderr, "  deepseek-style fixture: %s\n", msg);
    unlink(path);
  }
  json_decref(root);
  return tok;
}

/* Under the DeepSeek-style tokenizer: merges really happen (fewer tokens
 * than bytes), no added-token id in any prompt, and a prompt placed in a
 * DeepSeek-V3 chat turn adds exactly n tokens to the rendered template. */
static void test_deepseek_style(struct im_tok *tok) {
  size_t n_bytes = 0;
  CHECK_OK(im_tok_count(tok, " the data", 9, &n_bytes));
  CHECK_EQ(n_bytes, 2);
  uint32_t added_ids[sizeof ds_added / sizeof ds_added[0]];
  for (size_t a = 0; a < sizeof ds_added / sizeof ds_added[0]; a++)
    CHECK_OK(im_tok_token_id(tok, ds_added[a], strlen(ds_added[a]), &added_ids[a]));
  static uint32_t ids[5000];
  for (int c = 0; c < IM_CONTENT_COUNT_; c++)
    for (uint32_t n = 1; n <= 4096; n = n < 64 ? n + 1 : n * 2) {
      struct im_buf p, empty, full;
      im_buf_init(&p, IM_TEST_BUF_MAX);
      im_buf_init(&empty, IM_TEST_BUF_MAX);
      im_buf_init(&full, IM_TEST_BUF_MAX);
      CHECK_OK(im_promptgen_exact(tok, (enum im_content)c, n * 7 + 1, n, &p));
      size_t k = 0;
      CHECK_OK(im_tok_encode(tok, p.data, p.len, ids, 5000, &k));
      CHECK_EQ(k, n);
      if (n >= 32)
        CHECK(p.len > k); /* some tokens are merged bytes */
      size_t special = 0;
      for (size_t j = 0; j < k && j < 5000; j++)
        for (size_t a = 0; a < sizeof added_ids / sizeof added_ids[0]; a++)
          special += ids[j] == added_ids[a];
      CHECK_EQ(special, 0);
      struct im_chat_msg m[2] = {{"system", 6, "Be brief.", 9}, {"user", 4, "", 0}};
      CHECK_OK(im_chat_render(IM_CHAT_DEEPSEEK_V3, m, 2, &empty));
      m[1].content = p.data;
      m[1].content_len = p.len;
      CHECK_OK(im_chat_render(IM_CHAT_DEEPSEEK_V3, m, 2, &full));
      size_t ce = 0, cf = 0;
      CHECK_OK(im_tok_count(tok, empty.data, empty.len, &ce));
      CHECK_OK(im_tok_count(tok, full.data, full.len, &cf));
      CHECK_EQ(cf, ce + n);
      im_buf_cleanup(&p);
      im_buf_cleanup(&empty);
      im_buf_cleanup(&full);
    }
}

/* Not an assertion: prints the time of a 32K-token prompt for the record. */
static void report_speed(void) {
  for (int c = 0; c < IM_CONTENT_COUNT_; c++) {
    struct timespec t0, t1;
    struct im_buf b;
    im_buf_init(&b, IM_TEST_BUF_MAX);
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
  tok = load_deepseek_style();
  if (tok) {
    test_exact(tok, "deepseek-style");
    test_prefix(tok);
    test_sweep(tok, "deepseek-style");
    test_deepseek_style(tok);
  }
  im_tok_free(tok);
  report_speed();
  return CHECK_DONE();
}
