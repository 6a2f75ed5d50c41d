/* cli/term.h (folding to the terminal's width) and cli/args.h's refusal of
 * abbreviated options with a suggestion. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli/args.h"
#include "cli/term.h"

/* s folded to width by im__wrap_line, into buf. */
static void fold(const char *s, int width, char *buf, size_t n) {
  FILE *f = fmemopen(buf, n, "w");
  im__wrap_line(f, s, strlen(s), width);
  fclose(f);
}

static size_t widest(const char *buf) {
  size_t m = 0;
  for (const char *p = buf; *p;) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    size_t w = im__text_width(p, len);
    if (w > m)
      m = w;
    p += len + (e ? 1 : 0);
  }
  return m;
}

/* The words of s, in order, without spaces: folding must keep them all. */
static void words(const char *s, char *out, size_t n) {
  size_t k = 0;
  for (; *s && k + 1 < n; s++)
    if (*s != ' ' && *s != '\n')
      out[k++] = *s;
  out[k] = '\0';
}

static void test_fold(void) {
  char buf[4096], a[4096], b[4096];
  const char *line = "Client self-check:                       VALID: 1 dispatch 3.7-3.7 ms late, "
                     "host (probe saw 4.5% late wake-ups, max 26.7 ms); adds <= 2.92% to TTFT p90";
  for (int w = 20; w <= 120; w += 7) {
    fold(line, w, buf, sizeof buf);
    CHECK_INT(widest(buf), <=, w);
    words(line, a, sizeof a);
    words(buf, b, sizeof b);
    CHECK(!strcmp(a, b));
  }
  /* continuation lines under the value column (col 41) */
  fold(line, 80, buf, sizeof buf);
  const char *second = strchr(buf, '\n') + 1;
  CHECK_INT(strspn(second, " "), ==, 41);
  /* a line that fits is untouched */
  fold("short line", 80, buf, sizeof buf);
  CHECK(!strcmp(buf, "short line\n"));
  /* a word longer than the line is cut, nothing lost */
  char longw[200];
  memset(longw, 'x', 150);
  longw[150] = '\0';
  fold(longw, 40, buf, sizeof buf);
  CHECK_INT(widest(buf), <=, 40);
  words(buf, b, sizeof b);
  CHECK_INT(strlen(b), ==, 150);
  /* colour sequences and UTF-8 take no extra columns */
  CHECK_INT(im__text_width("\033[1;31mred\033[0m", strlen("\033[1;31mred\033[0m")), ==, 3);
  CHECK_INT(im__text_width("±5 µs", strlen("±5 µs")), ==, 5);
}

static void test_help_format(void) {
  const char *help = "usage: x\n"
                     "\n"
                     "  --rate R                  open loop, R requests/s (default 2); inf: a burst, every\n"
                     "                            request due at once (needs --requests N; vLLM's default)\n"
                     "  --short X                 fits\n";
  char buf[4096];
  FILE *f = fmemopen(buf, sizeof buf, "w");
  im__help_format(f, help, strlen(help), 80);
  fclose(f);
  CHECK_INT(widest(buf), <=, 80);
  char a[4096], b[4096];
  words(help, a, sizeof a);
  words(buf, b, sizeof b);
  CHECK(!strcmp(a, b));
  CHECK(strstr(buf, "\n                            ") != NULL); /* under the text column */
  CHECK(strstr(buf, "  --short X                 fits\n") != NULL);
}

static void test_suggest(void) {
  static const struct option o[] = {{"duration", 1, 0, 0},    {"concurrency", 1, 0, 0},
                                    {"max-concurrency", 1, 0, 0}, {"json", 0, 0, 0},
                                    {0, 0, 0, 0}};
  const char *s = im_option_suggest("dur", 3, o);
  CHECK(s && !strcmp(s, "duration"));
  s = im_option_suggest("concurency", 10, o);
  CHECK(s && !strcmp(s, "concurrency"));
  s = im_option_suggest("jsn", 3, o);
  CHECK(s && !strcmp(s, "json"));
  CHECK(im_option_suggest("zzzzzzzz", 8, o) == NULL);
  /* im_getopt refuses the abbreviation getopt_long would take */
  char a0[] = "infermeter run", a1[] = "--dur", a2[] = "5s";
  char *argv[] = {a0, a1, a2, NULL};
  optind = 1;
  opterr = 0;
  FILE *saved = stderr;
  stderr = fopen("/dev/null", "w");
  CHECK_INT(im_getopt(3, argv, "h", o, NULL), ==, '?');
  fclose(stderr);
  stderr = saved;
  char b1[] = "--duration", b2[] = "5s", b3[] = "--json";
  char *ok[] = {a0, b1, b2, b3, NULL};
  optind = 1;
  int idx = -1, n = 0, c;
  while ((c = im_getopt(4, ok, "h", o, &idx)) != -1)
    n += c == 0;
  CHECK_INT(n, ==, 2);
  /* a value that looks like an option is not an option */
  char c1[] = "--duration", c2[] = "--jsonx";
  char *val[] = {a0, c1, c2, NULL};
  optind = 1;
  CHECK_INT(im_getopt(3, val, "h", o, NULL), ==, 0);
}

static void test_fmt_double(void) {
  char b[32];
  im_arg_fmt_double(b, sizeof b, 0.9);
  CHECK(!strcmp(b, "0.9"));
  im_arg_fmt_double(b, sizeof b, 1.0 / 3.0);
  CHECK(strtod(b, NULL) == 1.0 / 3.0);
  im_arg_fmt_double(b, sizeof b, 1e-7);
  CHECK(!strcmp(b, "1e-07"));
}

int main(void) {
  test_fold();
  test_help_format();
  test_suggest();
  test_fmt_double();
  return CHECK_DONE();
}
