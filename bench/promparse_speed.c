/* Speed of the Prometheus text parser, and that it is linear in the page
 * size: vLLM-like pages of 10, 20 and 40 MB (gauges, counters and
 * histograms over many engine/dp_rank series), plus hostile shapes (every
 * line at the label limit, long escaped values, one huge line over the line
 * limit, a page of newlines).
 *
 * Build and run from the repository root (not built by CMake):
 *   cmake --build build --target promparse_speed && build/bench/promparse_speed
 *
 * Prints MB/s and ns per line for each page; the per-byte time of the 10,
 * 20 and 40 MB pages should be flat (linear time).
 *
 * Measured (gcc -O2, best of 3, on a shared 2-vCPU VM with a fuzzer and
 * other builds running, so absolute figures are pessimistic):
 *   vllm-like 10 MB   74 ms   142 MB/s   574 ns/line
 *   vllm-like 20 MB  152 ms   138 MB/s   591 ns/line
 *   vllm-like 40 MB  214 ms   196 MB/s   420 ns/line
 *   64 labels/line   177 ms    59 MB/s   (10 MB; duplicate-name filter)
 *   escaped values    85 ms   123 MB/s
 *   one 10 MB line     1 ms   (over the line limit: found by memchr, skipped)
 *   newlines only    159 ms    15 ns/line
 * Time per byte does not grow with the page: linear. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/promparse.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static enum im_err count_sample(void *ud, const struct im_prom_sample *s) {
  *(double *)ud += s->value;
  return IM_OK;
}

/* fmt takes two ints and a double, in that order (extra arguments are
 * ignored by printf). */
/* A helper that takes its format from its caller (a test's table of
 * inputs): -Wformat-nonliteral has nothing to check here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void append(struct im_buf *b, const char *fmt, int a, int c, double v) {
  if (im_buf_printf(b, fmt, a, c, v) != IM_OK) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
}
#pragma GCC diagnostic pop

static void vllm_page(struct im_buf *b, size_t target) {
  static const double le[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06,
                              0.08,  0.1,   0.25, 0.5,  0.75, 1.0};
  int fam = 0;
  while (b->len < target) {
    append(b, "# HELP vllm:m%d_seconds A histogram.\n# TYPE vllm:m%d_seconds histogram\n", fam, fam,
           0);
    for (int r = 0; r < 16 && b->len < target; r++) {
      for (size_t i = 0; i < sizeof le / sizeof le[0]; i++) {
        char f[160];
        snprintf(f, sizeof f,
                 "vllm:m%%d_seconds_bucket{engine=\"%%d\",le=\"%g\",model_name=\"deepseek-ai/"
                 "DeepSeek-V3\"} %%g\n",
                 le[i]);
        append(b, f, fam, r, (double)(i * 7 + (size_t)r));
      }
      append(b, "vllm:m%d_seconds_sum{engine=\"%d\",model_name=\"deepseek-ai/DeepSeek-V3\"} %g\n",
             fam, r, 1.5e3);
      append(b, "vllm:num_requests_running{engine=\"%d\",dp_rank=\"%d\"} %g\n", fam, r, 12);
      append(b, "vllm:prompt_tokens_total{engine=\"%d\",dp_rank=\"%d\"} %g\n", fam, r, 1e+06);
    }
    fam++;
  }
}

static void bench(const char *what, const char *page, size_t len) {
  struct im_promparse p;
  im_promparse_init(&p, NULL);
  double sum = 0, best = 1e9;
  struct im_promparse_cbs cbs = {count_sample, NULL, NULL, &sum};
  struct im_promparse_stats st = {0};
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now_s();
    if (im_promparse_page(&p, page, len, &cbs, &st) != IM_OK)
      exit(1);
    double dt = now_s() - t0;
    if (dt < best)
      best = dt;
  }
  printf("%-20s %7.1f MB %9zu lines %7zu errors %8.1f ms %8.0f MB/s %6.0f ns/line\n", what,
         (double)len / 1e6, st.lines, st.errors, best * 1e3, (double)len / 1e6 / best,
         best * 1e9 / (double)(st.lines ? st.lines : 1));
  im_promparse_cleanup(&p);
}

int main(void) {
  for (size_t mb = 10; mb <= 40; mb *= 2) {
    struct im_buf b;
    im_buf_init(&b, (size_t)1 << 28);
    vllm_page(&b, mb << 20);
    char name[32];
    snprintf(name, sizeof name, "vllm-like %zu MB", mb);
    bench(name, b.data, b.len);
    im_buf_cleanup(&b);
  }
  struct im_buf b;
  im_buf_init(&b, (size_t)1 << 28);
  while (b.len < (10u << 20)) {
    if (im_buf_puts(&b, "x{") != IM_OK)
      return 1;
    for (int i = 0; i < 64; i++)
      append(&b, "l%d=\"v%d\",", i, i, 0);
    if (im_buf_puts(&b, "} 1\n") != IM_OK)
      return 1;
  }
  bench("64 labels/line", b.data, b.len);
  im_buf_reset(&b);
  while (b.len < (10u << 20))
    if (im_buf_puts(&b, "e{a=\"\\\\\\\"\\n\\\\\\\"\\n\\\\\\\"\\n\\\\\\\"\\n\\\\\\\"\\n\"} 1\n") !=
        IM_OK)
      return 1;
  bench("escaped values", b.data, b.len);
  im_buf_reset(&b);
  if (im_buf_puts(&b, "huge{a=\"") != IM_OK)
    return 1;
  while (b.len < (10u << 20))
    if (im_buf_puts(&b, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") !=
        IM_OK)
      return 1;
  if (im_buf_puts(&b, "\"} 1\n") != IM_OK)
    return 1;
  bench("10 MB line", b.data, b.len);
  im_buf_reset(&b);
  while (b.len < (10u << 20))
    if (im_buf_puts(&b, "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n") != IM_OK)
      return 1;
  bench("newlines only", b.data, b.len);
  im_buf_cleanup(&b);
  return 0;
}
