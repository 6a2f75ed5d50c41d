/* Fuzz target for the Prometheus text parser (src/proto/promparse.c).
 *
 * Input: byte 0 picks the limits (small ones reach every bound); the rest
 * is the page. Checks:
 *   - every string handed to a callback is NUL-terminated where it says, and
 *     label value_len matches (a read of each byte under ASan);
 *   - counts are consistent: samples + metadata + errors <= lines;
 *   - parsing the same page again with the same parser gives the same
 *     transcript hash (no state leaks between pages);
 *   - the histogram quantile of buckets built from the page's sample values
 *     stays within the buckets' bounds;
 *   - the engine name maps (src/observe/namemap.c) digest the page within
 *     their bounds, and the quantile of every histogram concept is within
 *     its buckets. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/promparse.h"
#include "observe/namemap.h"
#include "fuzz.h"

struct ctx {
  uint64_t hash;
  size_t samples, meta, errors, last_line;
  struct im_prom_bucket b[16];
  size_t nb;
};

static uint64_t mix(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ s[i]) * 0x100000001b3ULL; /* FNV-1a 64 */
  return h;
}

static enum im_err on_sample(void *ud, const struct im_prom_sample *s) {
  struct ctx *c = ud;
  REQUIRE(s->line >= c->last_line);
  c->last_line = s->line;
  c->samples++;
  c->hash = mix(c->hash, s->name, strlen(s->name) + 1);
  c->hash = mix(c->hash, s->family, strlen(s->family) + 1);
  REQUIRE(strlen(s->name) > 0);
  for (size_t i = 0; i < s->n_labels; i++) {
    c->hash = mix(c->hash, s->labels[i].name, strlen(s->labels[i].name) + 1);
    c->hash = mix(c->hash, s->labels[i].value, s->labels[i].value_len);
    REQUIRE(s->labels[i].value[s->labels[i].value_len] == '\0');
  }
  uint64_t bits;
  memcpy(&bits, &s->value, sizeof bits);
  if (!isnan(s->value))
    c->hash = mix(c->hash, &bits, sizeof bits);
  c->hash = mix(c->hash, &s->type, sizeof s->type);
  if (c->nb < 16 && isfinite(s->value))
    c->b[c->nb++] = (struct im_prom_bucket){(double)c->nb, s->value};
  return IM_OK;
}

static enum im_err on_meta(void *ud, const struct im_prom_meta *m) {
  struct ctx *c = ud;
  c->meta++;
  c->hash = mix(c->hash, m->name, strlen(m->name) + 1);
  c->hash = mix(c->hash, m->text, strlen(m->text) + 1);
  return IM_OK;
}

static enum im_err on_error(void *ud, const struct im_prom_error *e) {
  struct ctx *c = ud;
  c->errors++;
  c->hash = mix(c->hash, e->reason, strlen(e->reason));
  c->hash = mix(c->hash, &e->line, sizeof e->line);
  return IM_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  struct im_promparse_limits lim = {0};
  if (data[0] & 1)
    lim = (struct im_promparse_limits){.max_line = 1 + (data[0] >> 1) % 64,
                                       .max_labels = 1 + (data[0] >> 3) % 4,
                                       .max_name = 1 + (data[0] >> 5) % 8};
  const char *page = (const char *)data + 1;
  size_t len = size - 1;
  struct im_promparse p;
  im_promparse_init(&p, &lim);
  struct ctx c1 = {.hash = 1469598103934665603ULL}, c2 = c1;
  struct im_promparse_cbs cbs = {on_sample, on_meta, on_error, &c1};
  struct im_promparse_stats st;
  REQUIRE(im_promparse_page(&p, page, len, &cbs, &st) == IM_OK);
  REQUIRE(st.samples == c1.samples && st.meta == c1.meta && st.errors == c1.errors);
  REQUIRE(st.samples + st.meta + st.errors <= st.lines);
  cbs.ud = &c2;
  REQUIRE(im_promparse_page(&p, page, len, &cbs, NULL) == IM_OK);
  REQUIRE(c1.hash == c2.hash);
  im_promparse_cleanup(&p);

  /* Quantile over buckets le = 0, 1, ..., nb-2, +Inf with fuzzed counts. */
  if (c1.nb >= 2) {
    c1.b[c1.nb - 1].le = INFINITY;
    double q = (double)(data[0] % 101) / 100, v;
    REQUIRE(im_prom_histogram_quantile(q, c1.b, c1.nb, &v) == IM_OK);
    REQUIRE(isnan(v) || (v >= 0 && v <= c1.b[c1.nb - 2].le));
  }

  struct im_nm_limits nl = {.max_series = 4, .max_raw = 4, .max_raw_bytes = 256, .parse = lim};
  struct im_nm_snapshot *s;
  if (im_nm_snapshot_new(&s, &nl) != IM_OK)
    return 0;
  REQUIRE(im_nm_extract(s, page, len) == IM_OK);
  REQUIRE(s->n_series <= 4 && s->n_raw <= 4);
  for (size_t i = 0; i < s->n_raw; i++)
    REQUIRE(strlen(s->raw[i].name) > 0 && s->raw[i].labels);
  for (int c = 0; c < IM_NM_CONCEPT_COUNT_; c++) {
    const struct im_nm_value *v = &s->v[c];
    REQUIRE(!v->present || v->n > 0);
    if (!im_nm_concept_is_hist((enum im_nm_concept)c))
      continue;
    double v2, q = (double)(data[0] % 101) / 100;
    enum im_err e = im_nm_hist_quantile(NULL, s, (enum im_nm_concept)c, q, &v2);
    REQUIRE(e == IM_OK || e == IM_NOTFOUND || e == IM_INVAL);
    const struct im_nm_hist *h = &s->h[c];
    for (size_t i = 1; i < h->n; i++)
      REQUIRE(h->b[i].le > h->b[i - 1].le);
    if (e == IM_OK && !isnan(v2))
      REQUIRE(v2 <= h->b[h->n - 2].le && (v2 >= 0 || v2 >= h->b[0].le));
  }
  im_nm_snapshot_free(s);
  return 0;
}
