/* infermeter tokenize: count or encode text read from standard input with a
 * tokenizer.json (or the built-in tokenizer). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "infermeter/buf.h"
#include "infermeter/tokenizer.h"
#include "workload/simpletok.h"

#define INPUT_MAX ((size_t)1 << 30)

static void usage(FILE *o) {
  fprintf(o,
          "usage: infermeter tokenize [--tokenizer PATH] [--ids | --count | --decode] < text\n"
          "\n"
          "Reads standard input (at most 1 GiB) and prints, without special tokens added:\n"
          "  --count            the number of tokens (default)\n"
          "  --ids              the token ids, separated by single spaces, on one line\n"
          "  --decode           reads ids (whitespace-separated) and prints their text\n"
          "  --tokenizer PATH   a Hugging Face tokenizer.json (BPE: ByteLevel/Split\n"
          "                     pre-tokenizers, added tokens); default: the built-in\n"
          "                     tokenizer infermeter serve counts with\n");
}

static int read_all(FILE *in, struct im_buf *b) {
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, in)) > 0) {
    if (im_buf_append(b, chunk, n) != IM_OK) {
      fprintf(stderr, "infermeter tokenize: input larger than 1 GiB\n");
      return -1;
    }
  }
  if (ferror(in)) {
    fprintf(stderr, "infermeter tokenize: reading standard input: %s\n", strerror(errno));
    return -1;
  }
  return 0;
}

static int decode(struct im_tok *tok, const struct im_buf *in) {
  if (!tok) {
    fprintf(stderr, "infermeter tokenize: --decode needs --tokenizer (the built-in tokenizer "
                    "cannot decode)\n");
    return 1;
  }
  size_t n = 0, cap = 1024;
  uint32_t *ids = malloc(cap * sizeof *ids);
  const char *p = in->data ? in->data : "";
  int rc = 1;
  while (ids && *p) {
    char *end;
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
      p++;
    if (!*p)
      break;
    errno = 0;
    unsigned long v = strtoul(p, &end, 10);
    if (end == p || errno || v > UINT32_MAX || v >= im_tok_vocab_size(tok)) {
      fprintf(stderr, "infermeter tokenize: --decode: bad token id near '%.20s'\n", p);
      goto out;
    }
    if (n == cap) {
      uint32_t *q = realloc(ids, 2 * cap * sizeof *q);
      if (!q)
        goto out;
      ids = q;
      cap *= 2;
    }
    ids[n++] = (uint32_t)v;
    p = end;
  }
  struct im_buf text;
  im_buf_init(&text, INPUT_MAX);
  if (ids && im_tok_decode(tok, ids, n, &text) == IM_OK) {
    fwrite(text.data ? text.data : "", 1, text.len, stdout);
    rc = 0;
  }
  im_buf_cleanup(&text);
out:
  free(ids);
  return rc;
}

int im_cli_tokenize(int argc, char **argv) {
  enum { O_TOK = 256, O_IDS, O_COUNT, O_DECODE };
  static const struct option options[] = {{"tokenizer", required_argument, 0, O_TOK},
                                          {"ids", no_argument, 0, O_IDS},
                                          {"count", no_argument, 0, O_COUNT},
                                          {"decode", no_argument, 0, O_DECODE},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
  const char *path = NULL;
  int mode = O_COUNT, opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
    if (opt == 'h') {
      usage(stdout);
      return 0;
    }
    if (opt == O_TOK)
      path = optarg;
    else if (opt == O_IDS || opt == O_COUNT || opt == O_DECODE)
      mode = opt;
    else {
      fprintf(stderr, "see: infermeter tokenize --help\n");
      return 1;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "infermeter tokenize: unexpected argument '%s' (input is read from stdin)\n",
            argv[optind]);
    return 1;
  }
  struct im_tok *tok = NULL;
  char msg[512];
  if (path && im_tok_load(path, &tok, msg, sizeof msg) != IM_OK) {
    fprintf(stderr, "infermeter tokenize: %s\n", msg);
    return 1;
  }
  struct im_buf in;
  im_buf_init(&in, INPUT_MAX);
  int rc = 1;
  if (read_all(stdin, &in))
    goto out;
  if (mode == O_DECODE) {
    rc = decode(tok, &in);
    goto out;
  }
  const char *text = in.data ? in.data : "";
  size_t n = 0;
  uint32_t *ids = NULL;
  if (tok) {
    if (im_tok_count(tok, text, in.len, &n) != IM_OK)
      goto fail;
    if (mode == O_IDS && n) {
      size_t got = 0;
      ids = malloc(n * sizeof *ids);
      if (!ids || im_tok_encode(tok, text, in.len, ids, n, &got) != IM_OK)
        goto fail;
    }
  } else {
    n = im_simpletok_encode(text, in.len, NULL, 0);
    if (mode == O_IDS && n) {
      ids = malloc(n * sizeof *ids);
      if (!ids)
        goto fail;
      im_simpletok_encode(text, in.len, ids, n);
    }
  }
  if (mode == O_COUNT) {
    printf("%zu\n", n);
  } else {
    for (size_t i = 0; i < n; i++)
      printf(i ? " %u" : "%u", ids[i]);
    putchar('\n');
  }
  free(ids);
  rc = 0;
  goto out;
fail:
  free(ids);
  fprintf(stderr, "infermeter tokenize: the input could not be tokenized (out of memory or a "
                  "regular-expression limit)\n");
out:
  im_buf_cleanup(&in);
  im_tok_free(tok);
  return rc;
}
