/* Speed of the tokenizer.json tokenizer: MB/s and tokens/s on prose-like
 * text (first pass fills the word cache, later passes hit it), and the time
 * of one long word at 10,000 and 100,000 characters (BPE with a heap should
 * grow about 10x, not 100x).
 *
 * Build and run from the repository root (optionally pass a tokenizer.json):
 *   cc -O2 -std=c17 -D_GNU_SOURCE -Iinclude bench/tokenizer_speed.c \
 *      src/workload/tokenizer.c src/core/buf.c src/core/clock.c src/core/err.c \
 *      $(pkg-config --cflags --libs jansson libpcre2-8) -lm -o /tmp/tokenizer_speed \
 *   && /tmp/tokenizer_speed [tests/fixtures/tokenizer/tiny_bytelevel.json]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infermeter/clock.h"
#include "infermeter/tokenizer.h"

#define TEXT_BYTES (4u << 20)
#define PASSES 5

static const char *const words[] = {"the",
                                    "hello",
                                    "world",
                                    "load",
                                    "tester",
                                    "measures",
                                    "latency",
                                    "of",
                                    "an",
                                    "inference",
                                    "server",
                                    "under",
                                    "1234",
                                    "requests,",
                                    "while",
                                    "tokens",
                                    "stream",
                                    "back.",
                                    "\xE4\xB8\xAD\xE6\x96\x87",
                                    "\xF0\x9F\x98\x80",
                                    "\n\n",
                                    "x86_64",
                                    "GPU",
                                    "throughput",
                                    "p99"};

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "tests/fixtures/tokenizer/tiny_bytelevel.json";
  struct im_tok *tok = NULL;
  char msg[512];
  if (im_tok_load(path, &tok, msg, sizeof msg) != IM_OK) {
    fprintf(stderr, "%s\n", msg);
    return 1;
  }
  char *text = malloc(TEXT_BYTES + 64);
  uint64_t r = 1;
  size_t len = 0;
  while (len < TEXT_BYTES) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    const char *w = words[(r >> 33) % (sizeof words / sizeof *words)];
    size_t n = strlen(w);
    memcpy(text + len, w, n);
    len += n;
    text[len++] = ' ';
  }
  for (int pass = 0; pass < PASSES; pass++) {
    size_t n = 0;
    int64_t t0 = im_now_ns();
    if (im_tok_count(tok, text, len, &n) != IM_OK)
      return 1;
    double s = (double)(im_now_ns() - t0) / 1e9;
    printf("pass %d: %zu bytes, %zu tokens, %.1f MB/s, %.2f Mtok/s\n", pass, len, n,
           (double)len / s / 1e6, (double)n / s / 1e6);
  }
  for (size_t wl = 10000; wl <= 100000; wl *= 10) {
    for (size_t i = 0; i < wl; i++)
      text[i] = (char)('a' + (i * 7919 + i / 13) % 26);
    size_t n = 0;
    int64_t t0 = im_now_ns();
    if (im_tok_count(tok, text, wl, &n) != IM_OK)
      return 1;
    printf("one word of %zu chars: %zu tokens in %.2f ms\n", wl, n,
           (double)(im_now_ns() - t0) / 1e6);
  }
  free(text);
  im_tok_free(tok);
  return 0;
}
