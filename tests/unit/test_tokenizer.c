/* Tests for the tokenizer.json BPE tokenizer. Expected ids for the fixture
 * tests/fixtures/tokenizer/tiny_bytelevel.json were computed by hand: ids
 * 0..255 are the byte-level characters of bytes 0..255, then the merges
 *   256 he  257 ll  258 hell  259 hello  260 Ġw  261 or  262 Ġwor  263 ld
 *   264 Ġworld  265 12  266 ĠĠ (two spaces)  267 čĊ (CRLF)
 * and the added tokens 268 <|bos|>, 269 <|eot|>. The pre-tokenizer splits
 * runs of up to 3 digits, then applies GPT-2's regex. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "text/tokenizer.h"
#include "text/tokenizer_int.h"

#define FIXTURE "tests/fixtures/tokenizer/tiny_bytelevel.json"

static void check_ids(struct im_tok *tok, const char *text, size_t len, const uint32_t *want,
                      size_t n_want) {
  uint32_t ids[64];
  size_t n = 0, cnt = 0;
  CHECK_OK(im_tok_encode(tok, text, len, ids, 64, &n));
  CHECK_EQ(n, n_want);
  for (size_t i = 0; i < n && i < n_want; i++)
    if (ids[i] != want[i]) {
      CHECK_EQ(ids[i], want[i]);
      fprintf(stderr, "  at index %zu of \"%.*s\"\n", i, (int)len, text);
    }
  CHECK_OK(im_tok_count(tok, text, len, &cnt));
  CHECK_EQ(cnt, n_want);
  struct im_buf b;
  im_buf_init(&b, IM_TEST_BUF_MAX);
  CHECK_OK(im_tok_decode(tok, ids, n < 64 ? n : 64, &b));
  CHECK_EQ(b.len, len);
  CHECK(b.len == len && (len == 0 || memcmp(b.data, text, len) == 0));
  im_buf_cleanup(&b);
}

#define IDS(...) (const uint32_t[]){__VA_ARGS__}, sizeof((const uint32_t[]){__VA_ARGS__}) / 4
#define T(s) s, sizeof(s) - 1

static void test_fixture(void) {
  struct im_tok *tok = NULL;
  char msg[256];
  CHECK_OK(im_tok_load(FIXTURE, &tok, msg, sizeof msg));
  if (!tok) {
    fprintf(stderr, "  %s\n", msg);
    return;
  }
  CHECK_EQ(im_tok_vocab_size(tok), 270);
  check_ids(tok, T("hello world"), IDS(259, 264));
  check_ids(tok, T("Hello"), IDS(72, 101, 257, 111));
  check_ids(tok, T("abc 12345"), IDS(97, 98, 99, 32, 265, 51, 52, 53));
  check_ids(tok, T("1234567"), IDS(265, 51, 52, 53, 54, 55));
  check_ids(tok, T("hi<|eot|>hello"), IDS(104, 105, 269, 259));
  check_ids(tok, T("<|bos|>hello world<|eot|>"), IDS(268, 259, 264, 269));
  check_ids(tok, T("hello<|bos|> world"), IDS(259, 268, 264));
  check_ids(tok, T("<|eo"), IDS(60, 124, 101, 111));
  check_ids(tok, T("<|bos|<|eot|>"), IDS(60, 124, 98, 111, 115, 124, 269));
  check_ids(tok, T("hi \xF0\x9F\x98\x80!"), IDS(104, 105, 32, 240, 159, 152, 128, 33));
  check_ids(tok, T("\xE4\xB8\xAD\xE6\x96\x87"), IDS(0xE4, 0xB8, 0xAD, 0xE6, 0x96, 0x87));
  check_ids(tok, T("a   b"), IDS(97, 266, 32, 98));
  check_ids(tok, T("a\n\nb"), IDS(97, 10, 10, 98));
  check_ids(tok, T("a\r\nb"), IDS(97, 13, 10, 98));
  check_ids(tok, T("line1\r\n"), IDS(108, 105, 110, 101, 49, 267));
  check_ids(tok, T("it's"), IDS(105, 116, 39, 115));
  check_ids(tok, T("\t"), IDS(9));
  check_ids(tok, T(""), NULL, 0);

  /* Truncation reports the full count; a second call (cache hit) agrees. */
  uint32_t few[1] = {0};
  size_t n = 0;
  CHECK_OK(im_tok_encode(tok, T("hello world hello"), few, 1, &n));
  CHECK_EQ(n, 4); /* hello, Ġworld, Ġ, hello */
  CHECK_EQ(few[0], 259);
  check_ids(tok, T("hello world"), IDS(259, 264));

  uint32_t id = 0;
  CHECK_OK(im_tok_token_id(tok, T("<|eot|>"), &id));
  CHECK_EQ(id, 269);
  CHECK_OK(im_tok_token_id(tok, T("\xC4\xA0w"), &id)); /* "Ġw" */
  CHECK_EQ(id, 260);
  CHECK_EQ(im_tok_token_id(tok, T("zz"), &id), IM_NOTFOUND);

  struct im_buf b;
  im_buf_init(&b, IM_TEST_BUF_MAX);
  uint32_t bad[2] = {259, 9999};
  CHECK_EQ(im_tok_decode(tok, bad, 2, &b), IM_INVAL);
  im_buf_cleanup(&b);

  /* Round trips over many mixed strings. */
  static const char *const frag[] = {"hello",   " world",  "12",           "345",
                                     " ",       "  ",      "\r\n",         "\n",
                                     "<|bos|>", "<|eot|>", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80",
                                     "'s",      "!?",      "\t",           "Ünïcode",
                                     "x9",      "<|",      "\xC3",         "\xFF"};
  uint64_t r = 42;
  for (int iter = 0; iter < 500; iter++) {
    char text[256];
    size_t len = 0;
    int k = 1 + (int)(r % 12);
    for (int j = 0; j < k; j++) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      const char *f = frag[(r >> 33) % (sizeof frag / sizeof *frag)];
      memcpy(text + len, f, strlen(f));
      len += strlen(f);
    }
    uint32_t ids[256];
    size_t cnt = 0;
    CHECK_OK(im_tok_encode(tok, text, len, ids, 256, &n));
    CHECK_OK(im_tok_count(tok, text, len, &cnt));
    CHECK_EQ(cnt, n);
    im_buf_init(&b, IM_TEST_BUF_MAX);
    CHECK_OK(im_tok_decode(tok, ids, n, &b));
    if (b.len != len || memcmp(b.data, text, len) != 0)
      IM__FAIL("round trip of \"%.*s\" gave \"%.*s\"", (int)len, text, (int)b.len, b.data);
    im_buf_cleanup(&b);
  }

  /* A 10,000-character word: BPE uses a heap, so this is O(n log n). */
  size_t big = 10000 * 5;
  char *s = malloc(big);
  uint32_t *ids = malloc(big * sizeof *ids);
  for (size_t i = 0; i < big; i += 5)
    memcpy(s + i, "hello", 5);
  CHECK_OK(im_tok_encode(tok, s, big, ids, big, &n));
  CHECK_EQ(n, 10000);
  size_t wrong = 0;
  for (size_t i = 0; i < n; i++)
    wrong += ids[i] != 259;
  CHECK_EQ(wrong, 0);
  for (size_t i = 0; i < 10000; i++)
    s[i] = (char)('a' + (i * 7919 + i / 13) % 26);
  CHECK_OK(im_tok_encode(tok, s, 10000, ids, big, &n));
  im_buf_init(&b, IM_TEST_BUF_MAX);
  CHECK_OK(im_tok_decode(tok, ids, n, &b));
  CHECK(b.len == 10000 && memcmp(b.data, s, 10000) == 0);
  im_buf_cleanup(&b);
  free(s);
  free(ids);
  im_tok_free(tok);
}

/* Writes json to a temporary file and loads it. */
static enum im_err load_str(const char *json, struct im_tok **tok, char *msg, size_t ml) {
  char path[] = "/tmp/im_tok_testXXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return IM_SYS;
  size_t n = strlen(json);
  if (write(fd, json, n) != (ssize_t)n) {
    close(fd);
    unlink(path);
    return IM_SYS;
  }
  close(fd);
  enum im_err err = im_tok_load(path, tok, msg, ml);
  unlink(path);
  return err;
}

static void check_load_fails(const char *json, enum im_err want, const char *needle) {
  struct im_tok *tok = (struct im_tok *)1;
  char msg[512] = "";
  CHECK_EQ(load_str(json, &tok, msg, sizeof msg), want);
  CHECK(tok == NULL);
  if (!strstr(msg, needle))
    IM__FAIL("message \"%s\" does not name \"%s\"", msg, needle);
}

#define CHARS_VOCAB "{\"a\":0,\"b\":1,\"-\":2,\"a-\":3,\"-b\":4,\"--\":5,\" \":6,\"<m>\":7}"
#define CHARS_MERGES "[\"a -\",\"- b\",[\"-\",\"-\"]]"

/* A character-level BPE (no ByteLevel) with a Split on "-" of the given
 * behaviour: the merges across "-" show where the pieces were cut. */
static void check_split(const char *behavior, bool invert, const char *text, const uint32_t *want,
                        size_t n_want) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"model\":{\"type\":\"BPE\",\"vocab\":" CHARS_VOCAB ",\"merges\":" CHARS_MERGES "},"
           "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},"
           "\"behavior\":\"%s\",\"invert\":%s}}",
           behavior, invert ? "true" : "false");
  struct im_tok *tok = NULL;
  char msg[256];
  CHECK_OK(load_str(json, &tok, msg, sizeof msg));
  if (!tok)
    return;
  uint32_t ids[16];
  size_t n = 0;
  CHECK_OK(im_tok_encode(tok, text, strlen(text), ids, 16, &n));
  CHECK_EQ(n, n_want);
  for (size_t i = 0; i < n && i < n_want; i++)
    if (ids[i] != want[i]) {
      CHECK_EQ(ids[i], want[i]);
      fprintf(stderr, "  %s on \"%s\" index %zu\n", behavior, text, i);
    }
  im_tok_free(tok);
}

static void test_split_behaviors(void) {
  check_split("Isolated", false, "a-b", IDS(0, 2, 1));
  check_split("Isolated", false, "a--b", IDS(0, 2, 2, 1));
  check_split("Removed", false, "a-b", IDS(0, 1));
  check_split("MergedWithPrevious", false, "a-b", IDS(3, 1));
  check_split("MergedWithNext", false, "a-b", IDS(0, 4));
  check_split("Contiguous", false, "a--b", IDS(0, 5, 1));
  check_split("Removed", true, "a-b", IDS(2));
  check_split("Isolated", true, "a-b", IDS(0, 2, 1));
}

/* A byte-level vocab (no merges) with a DeepSeek-V3-like pre-tokenizer: a
 * Sequence of Splits (digits, CJK ranges, a word/punctuation regex with a
 * lookahead) then ByteLevel without its regex. With no merges every byte is
 * one token, so the checks are that PCRE2 takes these patterns, counts, and
 * round trips, including invalid UTF-8 and add_prefix_space. */
static void test_deepseek_style(bool prefix_space) {
  static char json[16384];
  size_t o = 0;
  int n_map = 0;
  o += (size_t)snprintf(json + o, sizeof json - o, "{\"model\":{\"type\":\"BPE\",\"vocab\":{");
  for (int b = 0; b < 256; b++) {
    bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    int cp = printable ? b : 256 + n_map++;
    char ch[4];
    if (cp < 0x80 && (cp == '"' || cp == '\\'))
      snprintf(ch, sizeof ch, "\\%c", cp);
    else if (cp < 0x80)
      snprintf(ch, sizeof ch, "%c", cp);
    else
      snprintf(ch, sizeof ch, "%c%c", 0xc0 | (cp >> 6), 0x80 | (cp & 0x3f));
    o += (size_t)snprintf(json + o, sizeof json - o, "%s\"%s\":%d", b ? "," : "", ch, b);
  }
  o += (size_t)snprintf(
      json + o, sizeof json - o,
      "},\"merges\":[]},\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":"
      "\"Sequence\","
      "\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\p{N}{1,3}\"},"
      "\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"Split\",\"pattern\":{\"Regex\":"
      "\"[\xE4\xB8\x80-\xE9\xBE\xA5\xE3\x81\x80-\xE3\x82\x9F]+\"},\"behavior\":\"Isolated\"},"
      "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"[^\\\\r\\\\n\\\\p{L}\\\\p{P}\\\\p{S}]?[\\\\p{L}"
      "\\\\p{M}]+| ?[\\\\p{P}\\\\p{S}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"},"
      "\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_space\":%s,"
      "\"trim_offsets\":true,\"use_regex\":false}]}}",
      prefix_space ? "true" : "false");
  struct im_tok *tok = NULL;
  char msg[256];
  CHECK_OK(load_str(json, &tok, msg, sizeof msg));
  if (!tok) {
    fprintf(stderr, "  %s\n", msg);
    return;
  }
  static const char *const texts[] = {
      "Hello, world! 12345 \xE4\xB8\xAD\xE6\x96\x87\xE3\x81\x82 caf\xC3\xA9\r\n\r\n  x",
      "\xF0\x9F\x98\x80\xF0\x9F\x98\x80 ok", "bad \xFF\xFE utf8 \xC3", "  lead", "\t\n"};
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
    size_t len = strlen(texts[i]), n = 0;
    uint32_t ids[128];
    CHECK_OK(im_tok_encode(tok, texts[i], len, ids, 128, &n));
    struct im_buf b;
    im_buf_init(&b, IM_TEST_BUF_MAX);
    CHECK_OK(im_tok_decode(tok, ids, n, &b));
    if (!prefix_space) {
      CHECK_EQ(n, len);
      CHECK(b.len == len && memcmp(b.data, texts[i], len) == 0);
    } else {
      CHECK(n >= len); /* a space before every piece that lacks one */
      CHECK_EQ(ids[0], ' ');
    }
    im_buf_cleanup(&b);
  }
  im_tok_free(tok);
}

/* One Split regex over a character-level vocab; returns the ids of text. */
static size_t split_ids(const char *vocab, const char *merges, const char *regex, const char *text,
                        uint32_t *ids, size_t max) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"model\":{\"type\":\"BPE\",\"vocab\":%s,\"merges\":%s},"
           "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"%s\"},"
           "\"behavior\":\"Isolated\",\"invert\":false}}",
           vocab, merges, regex);
  struct im_tok *tok = NULL;
  char msg[256];
  size_t n = 0;
  CHECK_OK(load_str(json, &tok, msg, sizeof msg));
  if (!tok) {
    fprintf(stderr, "  %s\n", msg);
    return 0;
  }
  CHECK_OK(im_tok_encode(tok, text, strlen(text), ids, max, &n));
  im_tok_free(tok);
  return n;
}

/* Character classes as the tokenizers crate's Oniguruma (Unicode 16.0) sees
 * them: U+31350 (CJK Extension H, Unicode 15.0) is a letter, U+180E is not
 * white space. PCRE2 10.42 alone (Unicode 14.0) gets both wrong, which the
 * merges make visible: one piece merges to id 2, two pieces stay 0 1. */
static void test_unicode_classes(void) {
  uint32_t ids[8] = {0};
  size_t n = split_ids("{\"a\":0,\"\xF0\xB1\x8D\x90\":1,\"a\xF0\xB1\x8D\x90\":2}",
                       "[\"a \xF0\xB1\x8D\x90\"]", "\\\\p{L}+", "a\xF0\xB1\x8D\x90", ids, 8);
  CHECK_EQ(n, 1);
  CHECK_EQ(ids[0], 2);
  n = split_ids("{\"a\":0,\"\xE1\xA0\x8E\":1,\"a\xE1\xA0\x8E\":2,\" \":3}", "[\"a \xE1\xA0\x8E\"]",
                "\\\\S+", "a\xE1\xA0\x8E a", ids, 8);
  CHECK_EQ(n, 3);
  CHECK_EQ(ids[0], 2);
  CHECK_EQ(ids[1], 3);
  CHECK_EQ(ids[2], 0);
  /* \P{L} outside a class excludes the new letters too. */
  n = split_ids("{\"a\":0,\"\xF0\xB1\x8D\x90\":1,\"-\":2,\"-\xF0\xB1\x8D\x90\":3}",
                "[\"- \xF0\xB1\x8D\x90\"]", "\\\\P{L}+", "-\xF0\xB1\x8D\x90", ids, 8);
  CHECK_EQ(n, 2);
  CHECK_EQ(ids[0], 2);

  /* The rewrite itself: what it must leave alone. */
  static const char *const same[] = {"\\Q\\s\\p{L}\\E", "[^\\P{L}]",   "\\\\p{L}",
                                     "\\p{Han}",        "[[:alpha:]]", "\\p{Lu}"};
  for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
    size_t wn = 0;
    char *w = im__tok_re_widen(same[i], strlen(same[i]), &wn);
    CHECK(w != NULL);
    if (w && strcmp(w, same[i]) != 0)
      IM__FAIL("widen(\"%s\") = \"%s\", want it unchanged", same[i], w);
    free(w);
  }
  size_t wn = 0;
  char *w = im__tok_re_widen("\\pL", 3, &wn);
  CHECK(w && strncmp(w, "[\\p{L}\\x{", 9) == 0 && w[wn - 1] == ']');
  free(w);
  w = im__tok_re_widen("[]\\s]", 5, &wn);
  CHECK(w && strncmp(w, "[]\\t\\n", 6) == 0 && w[wn - 1] == ']' && !strstr(w, "\\s"));
  free(w);
}

/* The added-token trie: longest prefix wins, a shorter one is kept when the
 * longer breaks off, a repeated string keeps its first value. */
static void test_trie(void) {
  struct im__tok_trie tr = {0};
  CHECK_OK(im__tok_trie_add(&tr, "<a>", 3, 0));
  CHECK_OK(im__tok_trie_add(&tr, "<a>bc", 5, 1));
  CHECK_OK(im__tok_trie_add(&tr, "<b>", 3, 2));
  CHECK_OK(im__tok_trie_add(&tr, "<a>", 3, 3));
  CHECK_OK(im__tok_trie_add(&tr, "x", 1, 4));
  CHECK_EQ(im__tok_trie_add(&tr, "", 0, 5), IM_INVAL);
  CHECK_EQ(im__tok_trie_longest(&tr, "<a>bc!", 6), 1);
  CHECK_EQ(im__tok_trie_longest(&tr, "<a>b!", 5), 0);
  CHECK_EQ(im__tok_trie_longest(&tr, "<a>bc", 4), 0); /* bounded by n */
  CHECK_EQ(im__tok_trie_longest(&tr, "<b>", 3), 2);
  CHECK_EQ(im__tok_trie_longest(&tr, "<c>", 3), -1);
  CHECK_EQ(im__tok_trie_longest(&tr, "<", 1), -1);
  CHECK_EQ(im__tok_trie_longest(&tr, "xy", 2), 4);
  CHECK_EQ(im__tok_trie_longest(&tr, "y", 1), -1);
  CHECK_EQ(im__tok_trie_longest(&tr, "", 0), -1);
  im__tok_trie_cleanup(&tr);
  im__tok_trie_cleanup(NULL);
}

static void test_model_options(void) {
  struct im_tok *tok = NULL;
  char msg[256];
  uint32_t ids[16];
  size_t n = 0;
  /* byte_fallback, unk with fuse_unk, ignore_merges, no pre-tokenizer. */
  CHECK_OK(load_str("{\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,\"fuse_unk\":true,"
                    "\"unk_token\":\"<unk>\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2,\"<0xC3>\":3,"
                    "\"<0xA9>\":4,\"<unk>\":5,\"ba\":6},\"merges\":[[\"a\",\"b\"]]},"
                    "\"normalizer\":null,\"pre_tokenizer\":null,\"decoder\":null}",
                    &tok, msg, sizeof msg));
  if (tok) {
    CHECK_OK(im_tok_encode(tok, T("ab\xC3\xA9"), ids, 16, &n));
    CHECK_EQ(n, 3);
    CHECK_EQ(ids[0], 2);
    CHECK_EQ(ids[1], 3);
    CHECK_EQ(ids[2], 4);
    struct im_buf b;
    im_buf_init(&b, IM_TEST_BUF_MAX);
    CHECK_OK(im_tok_decode(tok, ids, n, &b));
    CHECK_STR(b.data, "ab\xC3\xA9");
    im_buf_cleanup(&b);
    CHECK_OK(im_tok_encode(tok,
                           T("ab\xE2\x82\xAC\xE2\x82\xAC"
                             "a"),
                           ids, 16, &n));
    CHECK_EQ(n, 3);
    CHECK_EQ(ids[1], 5);
    CHECK_EQ(ids[2], 0);
    CHECK_OK(im_tok_encode(tok, T("ba"), ids, 16, &n)); /* no merge b a */
    CHECK_EQ(n, 2);
    im_tok_free(tok);
  }
  tok = NULL;
  CHECK_OK(load_str("{\"model\":{\"type\":\"BPE\",\"ignore_merges\":true,"
                    "\"vocab\":{\"a\":0,\"b\":1,\"ab\":2,\"ba\":3},\"merges\":[\"a b\"]}}",
                    &tok, msg, sizeof msg));
  if (tok) {
    CHECK_OK(im_tok_encode(tok, T("ba"), ids, 16, &n));
    CHECK_EQ(n, 1);
    CHECK_EQ(ids[0], 3);
    im_tok_free(tok);
  }
  /* lstrip / rstrip on an added token absorb the spaces around it. */
  tok = NULL;
  CHECK_OK(load_str("{\"model\":{\"type\":\"BPE\",\"vocab\":" CHARS_VOCAB ",\"merges\":[]},"
                    "\"added_tokens\":[{\"id\":7,\"content\":\"<m>\",\"lstrip\":true,"
                    "\"rstrip\":true,\"special\":true}]}",
                    &tok, msg, sizeof msg));
  if (tok) {
    CHECK_OK(im_tok_encode(tok, T("a  <m> b"), ids, 16, &n));
    CHECK_EQ(n, 3);
    CHECK_EQ(ids[0], 0);
    CHECK_EQ(ids[1], 7);
    CHECK_EQ(ids[2], 1);
    im_tok_free(tok);
  }
  tok = NULL;
  CHECK_OK(load_str("{\"model\":{\"type\":\"BPE\",\"vocab\":" CHARS_VOCAB ",\"merges\":[]},"
                    "\"added_tokens\":[{\"id\":7,\"content\":\"<m>\",\"special\":false}]}",
                    &tok, msg, sizeof msg));
  if (tok) {
    CHECK_OK(im_tok_encode(tok, T("a <m> b"), ids, 16, &n));
    CHECK_EQ(n, 5);
    CHECK_EQ(ids[2], 7);
    im_tok_free(tok);
  }
}

static void test_malformed(void) {
  const char *m =
      "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\"]}";
  char json[1024];
  check_load_fails("{\"normalizer\":null}", IM_PARSE, "model");
  check_load_fails("{\"model\":{\"type\":\"BPE\",\"vocab\":{}}}", IM_PARSE, "merges");
  check_load_fails("{\"model\":{\"type\":\"WordPiece\",\"vocab\":{}}}", IM_UNSUPPORTED,
                   "WordPiece");
  check_load_fails("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a c\"]}}",
                   IM_PARSE, "merges[0]");
  check_load_fails("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"aa\"]}}",
                   IM_PARSE, "merges[0]");
  check_load_fails("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[[\"a\"]]}}",
                   IM_PARSE, "merges[0]");
  check_load_fails("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":-1},\"merges\":[]}}", IM_PARSE,
                   "vocab");
  snprintf(json, sizeof json, "{%s,\"pre_tokenizer\":{\"type\":\"Whitespace\"}}", m);
  check_load_fails(json, IM_UNSUPPORTED, "pre_tokenizer type 'Whitespace'");
  snprintf(
      json, sizeof json,
      "{%s,\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Digits\"}]}}",
      m);
  check_load_fails(json, IM_UNSUPPORTED, "Digits");
  snprintf(json, sizeof json, "{%s,\"normalizer\":{\"type\":\"BertNormalizer\"}}", m);
  check_load_fails(json, IM_UNSUPPORTED, "normalizer type 'BertNormalizer' is not supported");
  snprintf(json, sizeof json,
           "{%s,\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"}]}}", m);
  check_load_fails(json, IM_UNSUPPORTED, "'NFC'");
  snprintf(json, sizeof json, "{%s,\"decoder\":{\"type\":\"Metaspace\"}}", m);
  check_load_fails(json, IM_UNSUPPORTED, "decoder type 'Metaspace'");
  snprintf(json, sizeof json,
           "{%s,\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(\"},"
           "\"behavior\":\"Isolated\"}}",
           m);
  check_load_fails(json, IM_PARSE, "regex");
  snprintf(json, sizeof json,
           "{%s,\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\"x\"},"
           "\"behavior\":\"Sideways\"}}",
           m);
  check_load_fails(json, IM_UNSUPPORTED, "Sideways");
  check_load_fails("{\"model\": [1, 2", IM_PARSE, ":1");
  struct im_tok *tok = NULL;
  char msg[256];
  CHECK_EQ(im_tok_load("tests/fixtures/tokenizer/does_not_exist.json", &tok, msg, sizeof msg),
           IM_IO);
  CHECK(strstr(msg, "does_not_exist.json") != NULL);
  im_tok_free(NULL);
}

int main(void) {
  test_fixture();
  test_split_behaviors();
  test_deepseek_style(false);
  test_deepseek_style(true);
  test_unicode_classes();
  test_trie();
  test_model_options();
  test_malformed();
  return CHECK_DONE();
}
