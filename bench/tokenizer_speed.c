/* Speed of the tokenizer.json tokenizer: MB/s and tokens/s on prose-like
 * text (first pass fills the word cache, later passes hit it), and the time
 * of one long word at 10,000 and 100,000 characters (BPE with a heap should
 * grow about 10x, not 100x).
 *
 * With --file TEXT (tokenizer path first): encodes the file in chunks cut as
 * bench/tokenizer_rust.js cuts it, for PASSES passes (default 3), and prints
 * MB/s, tokens/s, the token count and an FNV-1a checksum of the ids, the
 * figures bench/tokenizer_vs_rust.sh compares with the Rust library:
 *   /tmp/tokenizer_speed TOKENIZER.json --file TEXT [PASSES]
 *
 * Build and run from the repository root (optionally pass a tokenizer.json):
 *   cmake --build build --target tokenizer_speed && \
 *     build/bench/tokenizer_speed [tests/fixtures/tokenizer/tiny_bytelevel.json]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "text/tokenizer.h"

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

#define CHUNK 65536

/* End of the chunk that starts at start: at most CHUNK bytes, after the last
 * \n in that window, else at a UTF-8 character boundary. */
static size_t chunk_end(const char *s, size_t len, size_t start) {
  size_t end = start + CHUNK < len ? start + CHUNK : len;
  if (end == len)
    return end;
  for (size_t i = end; i > start; i--)
    if (s[i - 1] == '\n')
      return i;
  while (end > start && ((unsigned char)s[end] & 0xc0) == 0x80)
    end--;
  return end;
}

static int file_mode(struct im_tok *tok, const char *file, int passes) {
  FILE *f = fopen(file, "rb");
  if (!f) {
    perror(file);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)sz + 1);
  uint32_t *ids = malloc((CHUNK + 1) * sizeof *ids); /* at most one id per byte */
  if (!text || !ids || fread(text, 1, (size_t)sz, f) != (size_t)sz) {
    fprintf(stderr, "%s: cannot read\n", file);
    return 1;
  }
  fclose(f);
  size_t len = (size_t)sz;
  for (int pass = 0; pass < passes; pass++) {
    size_t total = 0;
    uint32_t h = 2166136261u;
    int64_t t0 = im_now_ns();
    for (size_t start = 0, end; start < len; start = end) {
      end = chunk_end(text, len, start);
      size_t n = 0;
      if (im_tok_encode(tok, text + start, end - start, ids, CHUNK + 1, &n) != IM_OK ||
          n > CHUNK + 1) {
        fprintf(stderr, "encode failed at byte %zu\n", start);
        return 1;
      }
      total += n;
      for (size_t i = 0; i < n; i++)
        h = (h ^ ids[i]) * 16777619u;
    }
    double s = (double)(im_now_ns() - t0) / 1e9;
    printf("ours pass %d: %zu bytes, %zu tokens, %.2f MB/s, %.3f Mtok/s, checksum %08x\n", pass,
           len, total, (double)len / s / 1e6, (double)total / s / 1e6, h);
  }
  free(ids);
  free(text);
  return 0;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "tests/fixtures/tokenizer/tiny_bytelevel.json";
  struct im_tok *tok = NULL;
  char msg[512];
  if (im_tok_load(path, &tok, msg, sizeof msg) != IM_OK) {
    fprintf(stderr, "%s\n", msg);
    return 1;
  }
  if (argc > 3 && strcmp(argv[2], "--file") == 0) {
    int rc = file_mode(tok, argv[3], argc > 4 ? atoi(argv[4]) : 3);
    im_tok_free(tok);
    return rc;
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
