/* Fuzz target for the tokenizer.json tokenizer (src/text/tokenizer*.c).
 *
 * Byte 0 picks the part, the rest is its input:
 *   even: the input encoded by the fixture tokenizer (byte-level BPE with
 *         Split regexes and added tokens): the count equals the number of
 *         ids, every id decodes, and decode(encode(x)) == x for every input,
 *         valid UTF-8 or not;
 *   odd:  the input as a tokenizer.json file: loading either fails with a
 *         message or gives a tokenizer that encodes and decodes a fixed
 *         text without crashing.
 * The fixture's path comes from the build (IM_SOURCE_DIR). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "text/tokenizer.h"
#include "fuzz.h"

#ifndef IM_SOURCE_DIR
#define IM_SOURCE_DIR "."
#endif

static struct im_tok *fixture(void) {
  static struct im_tok *tok;
  static int tried;
  if (!tried) {
    tried = 1;
    char msg[256];
    if (im_tok_load(IM_SOURCE_DIR "/tests/fixtures/tokenizer/tiny_bytelevel.json", &tok, msg,
                    sizeof msg) != IM_OK) {
      fprintf(stderr, "fuzz_tokenizer: %s\n", msg);
      abort(); /* the fixture must load: without it nothing is tested */
    }
  }
  return tok;
}

static void roundtrip(struct im_tok *tok, const char *s, size_t n) {
  size_t count = 0, got = 0;
  REQUIRE(im_tok_count(tok, s, n, &count) == IM_OK);
  uint32_t *ids = malloc((count ? count : 1) * sizeof *ids);
  REQUIRE(ids);
  REQUIRE(im_tok_encode(tok, s, n, ids, count, &got) == IM_OK);
  REQUIRE(got == count);
  for (size_t i = 0; i < count; i++)
    REQUIRE(ids[i] < im_tok_vocab_size(tok));
  struct im_buf out;
  im_buf_init(&out, (size_t)1 << 28);
  REQUIRE(im_tok_decode(tok, ids, count, &out) == IM_OK);
  REQUIRE(out.len == n && (n == 0 || memcmp(out.data, s, n) == 0));
  im_buf_cleanup(&out);
  free(ids);
}

static void load(const uint8_t *d, size_t n) {
  char path[] = "/tmp/fuzz_tokenizer_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return;
  size_t off = 0;
  while (off < n) {
    ssize_t w = write(fd, d + off, n - off);
    if (w <= 0)
      break;
    off += (size_t)w;
  }
  close(fd);
  struct im_tok *tok = NULL;
  char msg[512] = "";
  enum im_err e = im_tok_load(path, &tok, msg, sizeof msg);
  unlink(path);
  if (e != IM_OK) {
    REQUIRE(tok == NULL && msg[0] != '\0');
    return;
  }
  static const char text[] = "Hello, world! 12345 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80\n\t x";
  size_t count = 0;
  if (im_tok_count(tok, text, sizeof text - 1, &count) == IM_OK && count < 4096) {
    uint32_t ids[4096];
    size_t got = 0;
    if (im_tok_encode(tok, text, sizeof text - 1, ids, count, &got) == IM_OK) {
      struct im_buf out;
      im_buf_init(&out, 1u << 20);
      enum im_err de = im_tok_decode(tok, ids, got < count ? got : count, &out);
      REQUIRE(de == IM_OK || de == IM_INVAL || de == IM_LIMIT || de == IM_NOMEM);
      im_buf_cleanup(&out);
    }
  }
  im_tok_free(tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 1 << 16)
    return 0;
  if (data[0] & 1) {
    load(data + 1, size - 1);
    return 0;
  }
  struct im_tok *tok = fixture();
  if (tok)
    roundtrip(tok, (const char *)data + 1, size - 1);
  return 0;
}
