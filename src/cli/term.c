/* The terminal's width and the folding stream (term.h). */
#include "cli/term.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int im__term_width(FILE *f) {
  int fd = f ? fileno(f) : -1;
  struct winsize ws;
  if (fd >= 0 && isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col < 20 ? 20 : ws.ws_col;
  const char *c = getenv("COLUMNS");
  if (c && *c) {
    char *end;
    long v = strtol(c, &end, 10);
    if (!*end && v >= 20 && v <= 1000)
      return (int)v;
  }
  return 80;
}

/* Bytes of an ANSI CSI sequence at s[i] (ESC '[' ... final byte), else 0. */
static size_t ansi_len(const char *s, size_t n, size_t i) {
  if (s[i] != '\033' || i + 1 >= n || s[i + 1] != '[')
    return 0;
  size_t j = i + 2;
  while (j < n && !((unsigned char)s[j] >= 0x40 && (unsigned char)s[j] <= 0x7e))
    j++;
  return j < n ? j - i + 1 : n - i;
}

/* Columns taken by the byte at s[i] (0 for a UTF-8 continuation byte). */
static size_t byte_cols(const char *s, size_t i) {
  return ((unsigned char)s[i] & 0xc0) == 0x80 ? 0 : 1;
}

size_t im__text_width(const char *s, size_t n) {
  size_t w = 0;
  for (size_t i = 0; i < n;) {
    size_t a = ansi_len(s, n, i);
    if (a) {
      i += a;
      continue;
    }
    w += byte_cols(s, i++);
  }
  return w;
}

/* Where continuation lines start: under the value column (the end of the
 * first run of two or more spaces after some text) when that leaves room,
 * else two spaces past the line's indentation. */
static size_t hang_indent(const char *s, size_t n, int width) {
  size_t lead = 0;
  while (lead < n && s[lead] == ' ')
    lead++;
  size_t col = lead;
  for (size_t i = lead; i + 2 < n; i++) {
    col += byte_cols(s, i);
    if (s[i] != ' ' && s[i + 1] == ' ' && s[i + 2] == ' ') {
      size_t j = i + 1;
      while (j < n && s[j] == ' ')
        j++;
      size_t c = col + (j - i - 1);
      if (j < n && c <= (size_t)width * 3 / 5)
        return c;
      break;
    }
  }
  /* "fix: text", "advice: text": under the text after the word */
  size_t w = lead;
  while (w < n && s[w] != ' ')
    w++;
  size_t hang = lead + 2;
  if (w > lead && w - lead <= 8 && s[w - 1] == ':' && w < n)
    hang = w + 1;
  else if (lead >= 8)
    hang = lead;
  return hang <= (size_t)width * 3 / 5 ? hang : (size_t)width * 3 / 5;
}

void im__wrap_line(FILE *out, const char *s, size_t n, int width) {
  if (width < 20)
    width = 20;
  if (im__text_width(s, n) <= (size_t)width) {
    fwrite(s, 1, n, out);
    fputc('\n', out);
    return;
  }
  size_t indent = hang_indent(s, n, width), pos = 0;
  bool first = true;
  while (pos < n) {
    size_t avail = first ? (size_t)width : (size_t)width - indent, col = 0, i = pos;
    size_t cut = 0; /* after the last word that fits */
    while (i < n) {
      size_t a = ansi_len(s, n, i);
      if (a) {
        i += a;
        continue;
      }
      size_t c = byte_cols(s, i);
      if (c && col + c > avail)
        break;
      if (s[i] == ' ' && i > pos && s[i - 1] != ' ')
        cut = i;
      col += c;
      i++;
    }
    if (i < n && cut == 0) /* one word longer than the line: cut it */
      cut = i;
    if (i >= n)
      cut = n;
    if (!first)
      fprintf(out, "%*s", (int)indent, "");
    size_t end = cut;
    while (end > pos && s[end - 1] == ' ')
      end--;
    fwrite(s + pos, 1, end - pos, out);
    fputc('\n', out);
    pos = cut;
    while (pos < n && s[pos] == ' ')
      pos++;
    first = false;
  }
}

/* The stream: bytes kept until a newline, each line folded. */
struct wrap {
  FILE *under;
  int width;
  char *buf;
  size_t len, cap;
};

enum { WRAP_MAX_LINE = 1 << 20 };

static ssize_t wrap_write(void *cookie, const char *data, size_t n) {
  struct wrap *w = cookie;
  for (size_t i = 0; i < n; i++) {
    if (data[i] == '\n') {
      im__wrap_line(w->under, w->buf, w->len, w->width);
      w->len = 0;
      continue;
    }
    if (w->len == w->cap) {
      size_t cap = w->cap ? 2 * w->cap : 256;
      char *b = cap <= WRAP_MAX_LINE ? realloc(w->buf, cap) : NULL;
      if (!b) { /* a line beyond the cap (or no memory): written as it is */
        fwrite(w->buf, 1, w->len, w->under);
        w->len = 0;
      } else {
        w->buf = b;
        w->cap = cap;
      }
    }
    if (w->len < w->cap)
      w->buf[w->len++] = data[i];
    else
      fputc(data[i], w->under);
  }
  return (ssize_t)n;
}

static int wrap_close(void *cookie) {
  struct wrap *w = cookie;
  if (w->len)
    fwrite(w->buf, 1, w->len, w->under);
  fflush(w->under);
  free(w->buf);
  free(w);
  return 0;
}

/* A write-only stream over `state` (calloc'd by the caller, freed by
 * `close`, or here when the stream cannot be made): `under` itself when it
 * cannot, so output is never lost, only left unformatted. */
static FILE *cookie_open(void *state, FILE *under, cookie_write_function_t *write,
                         cookie_close_function_t *close) {
  cookie_io_functions_t io = {.write = write, .close = close};
  FILE *f = fopencookie(state, "w", io);
  if (!f) {
    free(state);
    return under;
  }
  fflush(under);
  return f;
}

FILE *im__wrap_open(FILE *under, int width) {
  if (!under)
    return NULL;
  struct wrap *w = calloc(1, sizeof *w);
  if (!w)
    return under;
  w->under = under;
  w->width = width < 20 ? 20 : width;
  return cookie_open(w, under, wrap_write, wrap_close);
}

void im__wrap_close(FILE *wrapped, FILE *under) {
  if (wrapped && wrapped != under)
    fclose(wrapped);
}

/* ---- help texts ---------------------------------------------------------- */

struct span {
  const char *s;
  size_t n;
};

static size_t lead_spaces(struct span l) {
  size_t k = 0;
  while (k < l.n && l.s[k] == ' ')
    k++;
  return k;
}

/* "  --flag ARG   text" or "  -q, --quiet  text": 1-4 spaces, then '-'. */
static bool is_option_line(struct span l) {
  size_t k = lead_spaces(l);
  return k >= 1 && k <= 4 && k + 1 < l.n && l.s[k] == '-' && l.s[k + 1] != ' ';
}

/* Where an option line's text starts (after the first run of two or more
 * spaces past the option), or 0 when it has none. */
static size_t desc_column(struct span l) {
  for (size_t i = lead_spaces(l); i + 2 < l.n; i++)
    if (l.s[i] != ' ' && l.s[i + 1] == ' ' && l.s[i + 2] == ' ') {
      size_t j = i + 1;
      while (j < l.n && l.s[j] == ' ')
        j++;
      return j < l.n ? j : 0;
    }
  return 0;
}

/* Writes the words of text[0..n) filled at column `at`, lines of at most
 * width; the first line's first `col` columns are already written. */
static void fill(FILE *out, const char *text, size_t n, size_t at, size_t col, int width) {
  size_t i = 0;
  bool line_empty = true;
  while (i < n) {
    while (i < n && text[i] == ' ')
      i++;
    size_t j = i;
    while (j < n && text[j] != ' ')
      j++;
    if (j == i)
      break;
    size_t w = im__text_width(text + i, j - i);
    if (!line_empty && col + 1 + w > (size_t)width) {
      fprintf(out, "\n%*s", (int)at, "");
      col = at;
      line_empty = true;
    }
    if (!line_empty) {
      fputc(' ', out);
      col++;
    }
    fwrite(text + i, 1, j - i, out);
    col += w;
    line_empty = false;
    i = j;
  }
  fputc('\n', out);
}

void im__help_format(FILE *out, const char *text, size_t n, int width) {
  struct span lines[2048];
  size_t nl = 0;
  for (size_t i = 0; i < n && nl < sizeof lines / sizeof lines[0];) {
    const char *e = memchr(text + i, '\n', n - i);
    size_t len = e ? (size_t)(e - (text + i)) : n - i;
    lines[nl++] = (struct span){text + i, len};
    i += len + 1;
  }
  for (size_t i = 0; i < nl;) {
    struct span l = lines[i];
    size_t d1 = is_option_line(l) ? desc_column(l) : 0, j = i + 1;
    if (!is_option_line(l)) {
      im__wrap_line(out, l.s, l.n, width);
      i++;
      continue;
    }
    /* The continuation lines: indented deeper than the option, no option. */
    size_t at = 0;
    bool wide = im__text_width(l.s, l.n) > (size_t)width;
    while (j < nl && !is_option_line(lines[j]) && lead_spaces(lines[j]) >= 6 &&
           lead_spaces(lines[j]) < lines[j].n) {
      if (!at)
        at = lead_spaces(lines[j]);
      wide |= im__text_width(lines[j].s, lines[j].n) > (size_t)width;
      j++;
    }
    if (!wide) {
      for (size_t k = i; k < j; k++) {
        fwrite(lines[k].s, 1, lines[k].n, out);
        fputc('\n', out);
      }
      i = j;
      continue;
    }
    if (!at)
      at = d1 ? d1 : 8;
    if (at > (size_t)width / 2)
      at = (size_t)width / 2;
    char buf[8192];
    size_t bn = 0;
    for (size_t k = i; k < j; k++) {
      struct span p = k == i ? (struct span){l.s + d1, d1 ? l.n - d1 : 0} : lines[k];
      if (bn + p.n + 1 < sizeof buf) {
        buf[bn++] = ' ';
        memcpy(buf + bn, p.s, p.n);
        bn += p.n;
      }
    }
    size_t head = d1 ? d1 : l.n;
    while (head > 0 && l.s[head - 1] == ' ')
      head--;
    if (im__text_width(l.s, head) + 2 > (size_t)width) { /* the option part alone is too long */
      im__wrap_line(out, l.s, head, width);
      fprintf(out, "%*s", (int)at, "");
      fill(out, buf, bn, at, at, width);
    } else if (!d1) { /* the option alone on its line, the text below */
      fwrite(l.s, 1, head, out);
      fprintf(out, "\n%*s", (int)at, "");
      fill(out, buf, bn, at, at, width);
    } else {
      fwrite(l.s, 1, d1, out);
      fill(out, buf, bn, at, im__text_width(l.s, d1), width);
    }
    i = j;
  }
}

struct help {
  FILE *under;
  int width;
  char *buf;
  size_t len, cap;
};

enum { HELP_MAX = 1 << 20 };

static ssize_t help_write(void *cookie, const char *data, size_t n) {
  struct help *h = cookie;
  if (h->len + n > h->cap) {
    size_t cap = h->cap ? h->cap : 4096;
    while (cap < h->len + n)
      cap *= 2;
    char *b = cap <= HELP_MAX ? realloc(h->buf, cap) : NULL;
    if (!b) { /* too long to keep: what is kept, then this, as they are */
      fwrite(h->buf, 1, h->len, h->under);
      fwrite(data, 1, n, h->under);
      h->len = 0;
      return (ssize_t)n;
    }
    h->buf = b;
    h->cap = cap;
  }
  memcpy(h->buf + h->len, data, n);
  h->len += n;
  return (ssize_t)n;
}

static int help_close(void *cookie) {
  struct help *h = cookie;
  if (h->len)
    im__help_format(h->under, h->buf, h->len, h->width);
  fflush(h->under);
  free(h->buf);
  free(h);
  return 0;
}

FILE *im__help_open(FILE *under, int width) {
  struct help *h = calloc(1, sizeof *h);
  if (!h)
    return under;
  h->under = under;
  h->width = width < 20 ? 20 : width;
  return cookie_open(h, under, help_write, help_close);
}
