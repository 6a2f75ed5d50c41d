/* `infermeter analyze-routing FILE`: MoE routing statistics of a
 * serve --routing-log trace (docs/deepseek.md). The file is streamed in
 * bounded memory: one line at a time (at most LINE_MAX bytes; longer lines
 * are skipped and counted), the accumulator of analyze/moe.h. Lines:
 *   {"step":N,"t_ns":T,"seqs":S,"tokens":K,"counts":[[c,...],...]}   per step
 *   {"step":N,"t_ns":T,"seq":"ID","token":I,"topk":[[e,...],...]}     per token
 * (serve/engine.c log_routing, log_detail). */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "analyze/moe.h"
#include "cli/report.h"
#include "core/rng.h"
#include "report/html.h"
#include "report/moe_json.h"

#define LINE_MAX_BYTES ((size_t)16 << 20)
#define MAX_VALUES ((size_t)IM_MOE_MAX_LAYERS * IM_MOE_MAX_EXPERTS)

/* A reader of lines of at most cap bytes from f. */
struct lines {
  FILE *f;
  char *buf;
  size_t cap, len, pos, fill;
  bool eof;
  uint64_t too_long;
};

/* The next line into *out (NUL-terminated, newline removed); false at the
 * end. A line longer than cap is skipped (counted). */
static bool next_line(struct lines *l, char **out, size_t *n) {
  for (;;) {
    char *nl = l->pos < l->fill ? memchr(l->buf + l->pos, '\n', l->fill - l->pos) : NULL;
    if (nl) {
      *out = l->buf + l->pos;
      *n = (size_t)(nl - *out);
      *nl = '\0';
      l->pos = (size_t)(nl - l->buf) + 1;
      return true;
    }
    if (l->eof) {
      if (l->pos < l->fill) { /* a last line without '\n' */
        l->buf[l->fill] = '\0';
        *out = l->buf + l->pos;
        *n = l->fill - l->pos;
        l->pos = l->fill;
        return true;
      }
      return false;
    }
    memmove(l->buf, l->buf + l->pos, l->fill - l->pos);
    l->fill -= l->pos;
    l->pos = 0;
    if (l->fill == l->cap) { /* too long: drop it up to its newline */
      l->too_long++;
      l->fill = 0;
      int c;
      while ((c = getc(l->f)) != EOF && c != '\n')
        ;
      if (c == EOF)
        l->eof = true;
      continue;
    }
    size_t got = fread(l->buf + l->fill, 1, l->cap - l->fill, l->f);
    l->fill += got;
    if (got == 0)
      l->eof = true;
  }
}

/* Parses "[[n,...],[n,...],...]" at s into v (row-major); *rows and *cols
 * (every row as long as the first). false when malformed. */
static bool parse_matrix(const char *s, uint32_t *v, size_t max, uint32_t *rows, uint32_t *cols) {
  size_t k = 0;
  uint32_t r = 0, c0 = 0;
  if (*s++ != '[')
    return false;
  while (*s == ' ')
    s++;
  while (*s == '[') {
    s++;
    uint32_t c = 0;
    while (*s != ']') {
      char *end;
      errno = 0;
      unsigned long x = strtoul(s, &end, 10);
      if (end == s || errno || x > UINT32_MAX || k == max)
        return false;
      v[k++] = (uint32_t)x;
      c++;
      s = end;
      while (*s == ' ')
        s++;
      if (*s == ',')
        s++;
      else if (*s != ']')
        return false;
    }
    s++;
    if (r == 0)
      c0 = c;
    else if (c != c0)
      return false;
    r++;
    while (*s == ' ')
      s++;
    if (*s == ',')
      s++;
    while (*s == ' ')
      s++;
  }
  *rows = r;
  *cols = c0;
  return *s == ']' && r > 0 && c0 > 0;
}

static const char *after(const char *line, const char *key) {
  const char *p = strstr(line, key);
  return p ? p + strlen(key) : NULL;
}

struct rstate {
  struct im_moe_acc *acc;
  uint32_t *vals;
  uint16_t *ids;
  uint64_t lines, bad;
  uint64_t first_bad_line;
};

static void one_line(struct rstate *st, const char *line) {
  const char *c = after(line, "\"counts\":"), *t = after(line, "\"topk\":");
  uint32_t rows = 0, cols = 0;
  bool ok = false;
  if (c && parse_matrix(c, st->vals, MAX_VALUES, &rows, &cols)) {
    const char *sp = after(line, "\"step\":");
    uint64_t step = sp ? strtoull(sp, NULL, 10) : st->lines;
    ok = im_moe_acc_step(st->acc, step, rows, cols, st->vals) == IM_OK;
  } else if (t && parse_matrix(t, st->vals, MAX_VALUES, &rows, &cols) &&
             (size_t)rows * cols <= (size_t)IM_MOE_MAX_LAYERS * IM_MOE_MAX_TOPK) {
    const char *sq = after(line, "\"seq\":\"");
    const char *end = sq ? strchr(sq, '"') : NULL;
    uint64_t key = sq && end ? im_fnv1a64(sq, (size_t)(end - sq)) : 0;
    bool small = true;
    for (size_t i = 0; i < (size_t)rows * cols; i++) {
      small &= st->vals[i] < 65536;
      st->ids[i] = (uint16_t)st->vals[i];
    }
    ok = small && im_moe_acc_token(st->acc, key, rows, cols, st->ids) == IM_OK;
  }
  if (!ok && !st->bad++)
    st->first_bad_line = st->lines;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: infermeter analyze-routing FILE [--window N] [--out FILE] [--html FILE] [--quiet]\n"
          "\n"
          "MoE routing statistics of a `serve --routing-log FILE` trace (with\n"
          "--routing-detail N for per-token ids), per layer and over time\n"
          "(docs/deepseek.md): jitter of the top-1 expert and mean Jaccard distance of\n"
          "consecutive top-k sets per sequence, G1 skewness (as pandas skew), max/mean\n"
          "and balancedness (mean/max) of tokens per expert per step and in total, the\n"
          "hottest experts, and a series of at most %d points for the heat map.\n"
          "Streams the file in bounded memory (FILE - reads stdin).\n"
          "\n"
          "  --window N   steps per series point to start with (default 100; doubled\n"
          "               whenever the series is full)\n"
          "  --out FILE   write the JSON there (default: stdout)\n"
          "  --html FILE  also write a self-contained HTML page: the expert x time heat\n"
          "               map, load balance over time, skew and jitter per layer\n"
          "  --quiet      no summary on stderr\n"
          "\n"
          "Exit status: 0; 1 when FILE cannot be read or holds no routing line.\n",
          IM_MOE_MAX_WINDOWS);
}

static int write_doc(json_t *doc, const char *out) {
  int rc = out ? json_dump_file(doc, out, JSON_INDENT(1) | JSON_REAL_PRECISION(10))
               : json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
  if (!out)
    fputc('\n', stdout);
  if (rc)
    fprintf(stderr, "infermeter analyze-routing: cannot write %s\n", out ? out : "stdout");
  return rc ? 1 : 0;
}

static int analyze(FILE *f, const char *name, uint32_t window, const char *out,
                   const char *html, bool quiet) {
  struct lines l = {.f = f, .cap = LINE_MAX_BYTES};
  struct rstate st = {0};
  struct im_moe_result r = {0};
  int rc = 1;
  l.buf = malloc(l.cap + 1);
  st.vals = malloc(MAX_VALUES * sizeof *st.vals);
  st.ids = malloc((size_t)IM_MOE_MAX_LAYERS * IM_MOE_MAX_TOPK * sizeof *st.ids);
  if (!l.buf || !st.vals || !st.ids || im_moe_acc_new(&st.acc, window) != IM_OK) {
    fprintf(stderr, "infermeter analyze-routing: out of memory\n");
    goto out;
  }
  char *line;
  size_t n;
  while (next_line(&l, &line, &n)) {
    st.lines++;
    if (n)
      one_line(&st, line);
  }
  if (ferror(f)) {
    fprintf(stderr, "infermeter analyze-routing: %s: %s\n", name, strerror(errno));
    goto out;
  }
  if (im_moe_acc_result(st.acc, &r) != IM_OK) {
    fprintf(stderr, "infermeter analyze-routing: out of memory\n");
    goto out;
  }
  if (!r.steps && !r.tokens) {
    fprintf(stderr,
            "infermeter analyze-routing: %s: no routing line in %llu line(s) (%llu malformed%s); "
            "is it a `serve --routing-log` file?\n",
            name, (unsigned long long)st.lines, (unsigned long long)st.bad,
            l.too_long ? ", some too long" : "");
    goto out;
  }
  const double ref = 0.5; /* docs/deepseek.md: the balancedness reference */
  json_t *doc = im_moe_result_json(&r, ref);
  if (doc) {
    json_object_set_new(doc, "file", json_string(name));
    json_object_set_new(doc, "lines", json_integer((json_int_t)st.lines));
    json_object_set_new(doc, "lines_skipped", json_integer((json_int_t)(st.bad + l.too_long)));
  }
  rc = doc ? write_doc(doc, out) : 1;
  if (rc == 0 && html && im__write_html(html, doc, name, im_html_routing))
    rc = 1;
  json_decref(doc);
  if (!quiet && rc == 0) {
    fprintf(stderr,
            "%s: %llu steps, %llu tokens of %llu sequences; %u layers x %u experts, top-%u\n"
            "jitter %.3f, Jaccard distance %.3f; load over the trace: G1 skewness %.2f, balancedness "
            "%.3f (per step: %.2f, %.3f; means over layers)\n",
            name, (unsigned long long)r.steps, (unsigned long long)r.tokens,
            (unsigned long long)r.sequences, r.n_layers, r.n_experts, r.top_k, r.jitter,
            r.jaccard_distance, r.g1_total_mean, r.balancedness_total_mean, r.g1_step_mean,
            r.balancedness_step_mean);
    if (st.bad || l.too_long)
      fprintf(stderr, "infermeter analyze-routing: %s: skipped %llu line(s) that are not routing "
                      "lines (first bad line %llu)\n", name,
              (unsigned long long)(st.bad + l.too_long), (unsigned long long)st.first_bad_line);
  }
out:
  im_moe_result_cleanup(&r);
  im_moe_acc_free(st.acc);
  free(st.vals);
  free(st.ids);
  free(l.buf);
  return rc;
}

int im_cli_analyze_routing(int argc, char **argv) {
  static const struct option opts[] = {{"window", required_argument, NULL, 'w'},
                                       {"out", required_argument, NULL, 'o'},
                                       {"html", required_argument, NULL, 'H'},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  uint32_t window = 100;
  const char *out = NULL, *html = NULL;
  bool quiet = false;
  int c;
  optind = 1;
  while ((c = im_getopt(argc, argv, "o:qh", opts, NULL)) != -1) {
    if (c == 'w') {
      if (im_arg_u32("--window", optarg, 1, 1u << 30, &window))
        return 2;
    } else if (c == 'o') {
      out = optarg;
    } else if (c == 'H') {
      html = optarg;
    } else if (c == 'q') {
      quiet = true;
    } else if (c == 'h') {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (optind + 1 != argc) {
    fprintf(stderr, "infermeter analyze-routing: give one routing log file\n");
    usage(stderr);
    return 2;
  }
  const char *name = argv[optind];
  FILE *f = strcmp(name, "-") ? fopen(name, "r") : stdin;
  if (!f) {
    fprintf(stderr, "infermeter analyze-routing: cannot open %s: %s\n", name, strerror(errno));
    return 1;
  }
  int rc = analyze(f, name, window, out, html, quiet);
  if (f != stdin)
    fclose(f);
  return rc;
}
