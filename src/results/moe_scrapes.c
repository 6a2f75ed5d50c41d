/* metrics.moe of a stage from DIR/scrapes.prom (docs/deepseek.md): the raw
 * /metrics pages the run kept, each headed by
 * "# infermeter scrape url=URL t_mono_ns=T status=S" (observe/observer.c).
 * The file is streamed; one page at a time is held (at most PAGE_MAX). */
#include "results/results_int.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_MAX ((size_t)64 << 20)
#define HEAD "# infermeter scrape "

struct page {
  char *data;
  size_t len, cap;
  bool in;       /* inside [from, to] and status 200 */
  bool oversize;
};

static int page_flush(struct page *p, struct im_moe_scrape *s) {
  int rc = 0;
  if (p->in && !p->oversize && p->len)
    rc = im_moe_scrape_page(s, p->data, p->len) == IM_OK ? 0 : -1;
  p->len = 0;
  p->in = p->oversize = false;
  return rc;
}

static int page_add(struct page *p, const char *line, size_t n) {
  if (!p->in || p->oversize)
    return 0;
  if (p->len + n > PAGE_MAX) {
    p->oversize = true;
    return 0;
  }
  if (p->len + n > p->cap) {
    size_t cap = p->cap ? p->cap : 1 << 16;
    while (cap < p->len + n)
      cap *= 2;
    char *d = realloc(p->data, cap);
    if (!d)
      return -1;
    p->data = d;
    p->cap = cap;
  }
  memcpy(p->data + p->len, line, n);
  p->len += n;
  return 0;
}

int im__results_moe_scrapes(const char *dir, int64_t from_mono, int64_t to_mono,
                           struct im_moe_scrape *s) {
  char path[4200];
  snprintf(path, sizeof path, "%s/scrapes.prom", dir);
  im_moe_scrape_init(s);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0; /* no scrapes: not collected */
  struct page p = {0};
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int rc = 0;
  while (!rc && (n = getline(&line, &cap, f)) >= 0) {
    if (!strncmp(line, HEAD, strlen(HEAD))) {
      rc = page_flush(&p, s);
      const char *t = strstr(line, " t_mono_ns="), *st = strstr(line, " status=");
      long long tm = t ? strtoll(t + 11, NULL, 10) : -1;
      p.in = tm >= from_mono && tm <= to_mono && st && atoi(st + 8) == 200;
    } else {
      rc = page_add(&p, line, (size_t)n);
    }
  }
  if (!rc)
    rc = page_flush(&p, s);
  free(line);
  free(p.data);
  fclose(f);
  return rc;
}
