/* series.jsonl writers (contract in series.h). Lines are printed by hand,
 * not through jansson: %.17g for doubles is what makes them read back
 * bit-exactly, and a sample costs no allocation beyond the caller's
 * buffer. */
#include "record/series.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void im_series_redact_url(const char *url, char *out, size_t outlen) {
  if (!outlen)
    return;
  if (!url) {
    out[0] = '\0';
    return;
  }
  /* userinfo is what lies between "//" and the first '@' before the path. */
  const char *auth = strstr(url, "//");
  auth = auth ? auth + 2 : url;
  size_t host_end = strcspn(auth, "/?#");
  const char *at = memchr(auth, '@', host_end);
  if (!at) {
    snprintf(out, outlen, "%s", url);
    return;
  }
  snprintf(out, outlen, "%.*s***%s", (int)(auth - url), url, at);
}

/* Undoes a partial line: the buffer as it was before the writer ran. */
static enum im_err rollback(struct im_buf *b, size_t len0, enum im_err err) {
  if (err && b->data) {
    b->len = len0;
    b->data[len0] = '\0';
  }
  return err;
}

/* The shortest of %.15g, %.16g, %.17g that reads back as v: 17 significant
 * digits always do (IEEE 754 binary64), fewer are kinder to the eye and
 * the disk ("0.005", not "0.0050000000000000001"). */
static enum im_err num(struct im_buf *b, double v) {
  if (!isfinite(v))
    return im_buf_puts(b, "null");
  char s[40];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(s, sizeof s, "%.*g", prec, v);
    if (strtod(s, NULL) == v)
      break;
  }
  return im_buf_puts(b, s);
}

static enum im_err str(struct im_buf *b, const char *s) {
  enum im_err err = im_buf_puts(b, "\"");
  if (!err)
    err = im_buf_json_escape(b, s ? s : "", s ? strlen(s) : 0);
  if (!err)
    err = im_buf_puts(b, "\"");
  return err;
}

/* The last value of a line, a string, and the line's end. */
static enum im_err str_end(struct im_buf *b, const char *s) {
  enum im_err err = str(b, s);
  return err ? err : im_buf_puts(b, "}\n");
}

/* ,"key": */
static enum im_err key(struct im_buf *b, const char *k) {
  return im_buf_printf(b, ",\"%s\":", k);
}

static enum im_err url_field(struct im_buf *b, const char *url) {
  char red[IM_SERIES_URL_LEN];
  im_series_redact_url(url, red, sizeof red);
  enum im_err err = key(b, "url");
  return err ? err : str(b, red);
}

enum im_err im_series_fmt_source(struct im_buf *out, size_t source, const char *url, bool dcgm) {
  size_t len0 = out->len;
  enum im_err err = im_buf_printf(out, "{\"src\":\"source\",\"source\":%zu", source);
  if (!err)
    err = url_field(out, url);
  if (!err)
    err = im_buf_printf(out, ",\"dcgm\":%s}\n", dcgm ? "true" : "false");
  return rollback(out, len0, err);
}

static enum im_err hist(struct im_buf *b, const char *name, const struct im_series_hist *h) {
  enum im_err err = im_buf_printf(b, "\"%s\":{\"le\":[", name);
  for (size_t i = 0; !err && i < h->n && i < IM_SERIES_MAX_BUCKETS; i++) {
    if (i)
      err = im_buf_puts(b, ",");
    if (!err)
      err = isinf(h->b[i].le) && h->b[i].le > 0 ? im_buf_puts(b, "\"+Inf\"") : num(b, h->b[i].le);
  }
  if (!err)
    err = im_buf_puts(b, "],\"count\":[");
  for (size_t i = 0; !err && i < h->n && i < IM_SERIES_MAX_BUCKETS; i++) {
    if (i)
      err = im_buf_puts(b, ",");
    if (!err)
      err = num(b, h->b[i].count);
  }
  if (!err)
    err = im_buf_puts(b, "],\"sum\":");
  if (!err)
    err = num(b, h->sum);
  if (!err)
    err = im_buf_puts(b, ",\"count_total\":");
  if (!err)
    err = num(b, h->count);
  return err ? err : im_buf_puts(b, "}");
}

static enum im_err server_values(struct im_buf *b, const struct im_series_scrape *s) {
  enum im_err err = key(b, "engines");
  if (!err)
    err = im_buf_puts(b, "[");
  for (size_t i = 0; !err && i < s->n_engines; i++) {
    if (i)
      err = im_buf_puts(b, ",");
    if (!err)
      err = str(b, s->engines[i]);
  }
  if (!err)
    err = im_buf_printf(b, "],\"malformed_lines\":%" PRIu64 ",\"v\":{", s->malformed_lines);
  for (size_t i = 0; !err && i < s->n_values; i++) {
    if (i)
      err = im_buf_puts(b, ",");
    if (!err)
      err = str(b, s->values[i].name);
    if (!err)
      err = im_buf_puts(b, ":");
    if (!err)
      err = num(b, s->values[i].value);
  }
  if (!err)
    err = im_buf_puts(b, "},\"hist\":{");
  bool comma = false;
  if (!err && s->ttft && s->ttft->n) {
    err = hist(b, "ttft", s->ttft);
    comma = true;
  }
  if (!err && s->itl && s->itl->n) {
    if (comma)
      err = im_buf_puts(b, ",");
    if (!err)
      err = hist(b, "itl", s->itl);
  }
  return err ? err : im_buf_puts(b, "}");
}

/* [s0, ..., value]: an element of per_series or raw. */
static enum im_err tuple(struct im_buf *b, bool first, const char *const *strs, size_t n, double v) {
  enum im_err err = im_buf_puts(b, first ? "[" : ",[");
  for (size_t i = 0; !err && i < n; i++) {
    err = str(b, strs[i]);
    if (!err)
      err = im_buf_puts(b, ",");
  }
  if (!err)
    err = num(b, v);
  return err ? err : im_buf_puts(b, "]");
}

static enum im_err server_labelled(struct im_buf *b, const struct im_series_scrape *s) {
  enum im_err err = im_buf_puts(b, ",\"per_series\":[");
  for (size_t i = 0; !err && i < s->n_per_series; i++) {
    const struct im_series_labelled *l = &s->per_series[i];
    const char *strs[3] = {l->concept, l->engine, l->key};
    err = tuple(b, i == 0, strs, 3, l->value);
  }
  if (!err)
    err = im_buf_puts(b, "],\"raw\":[");
  for (size_t i = 0; !err && i < s->n_raw; i++) {
    const char *strs[2] = {s->raw[i].metric, s->raw[i].label};
    err = tuple(b, i == 0, strs, 2, s->raw[i].value);
  }
  return err ? err : im_buf_puts(b, "]");
}

enum im_err im_series_fmt_server(struct im_buf *out, const struct im_series_scrape *s) {
  size_t len0 = out->len;
  enum im_err err = im_buf_printf(out, "{\"src\":\"server\",\"source\":%zu", s->source);
  if (!err)
    err = url_field(out, s->url);
  if (!err)
    err = im_buf_printf(out, ",\"dcgm\":%s,\"t_mono\":%" PRId64, s->dcgm ? "true" : "false",
                        s->t_mono);
  if (!err)
    err = server_values(out, s);
  if (!err)
    err = server_labelled(out, s);
  if (!err)
    err = im_buf_puts(out, "}\n");
  return rollback(out, len0, err);
}

enum im_err im_series_fmt_scrape_error(struct im_buf *out, size_t source, const char *url,
                                       int64_t t_mono, const char *reason) {
  size_t len0 = out->len;
  enum im_err err = im_buf_printf(out, "{\"src\":\"scrape_error\",\"source\":%zu", source);
  if (!err)
    err = url_field(out, url);
  if (!err)
    err = im_buf_printf(out, ",\"t_mono\":%" PRId64 ",\"reason\":", t_mono);
  return rollback(out, len0, err ? err : str_end(out, reason));
}

enum im_err im_series_fmt_tcp(struct im_buf *out, const struct im_series_tcp *p) {
  size_t len0 = out->len;
  enum im_err err = im_buf_printf(out, "{\"src\":\"tcp\",\"t_mono\":%" PRId64 ",\"path\":\"%s\",\"state\":[",
                                  p->t_mono, p->procfs ? "procfs" : "netlink");
  for (int i = 0; !err && i < IM_TCP_NSTATES; i++)
    err = im_buf_printf(out, i ? ",%" PRIu32 : "%" PRIu32, p->state[i]);
  if (!err)
    err = im_buf_printf(out, "],\"total\":%" PRIu32 ",\"skipped\":%" PRIu32 "}\n", p->total,
                        p->skipped);
  return rollback(out, len0, err);
}

static enum im_err gpu_one(struct im_buf *b, const struct im_gpu_sample *g) {
  enum im_err err = im_buf_puts(b, "{\"name\":");
  if (!err)
    err = str(b, g->name);
  if (!err && g->has_mem)
    err = im_buf_printf(b, ",\"mem_used_bytes\":%" PRIu64 ",\"mem_total_bytes\":%" PRIu64,
                        g->mem_used_bytes, g->mem_total_bytes);
  if (!err && !g->has_mem)
    err = im_buf_puts(b, ",\"mem_used_bytes\":null,\"mem_total_bytes\":null");
  if (!err && g->has_energy)
    err = im_buf_printf(b, ",\"energy_mj\":%" PRIu64, g->energy_mj);
  if (!err && !g->has_energy)
    err = im_buf_puts(b, ",\"energy_mj\":null");
  static const char *const names[] = {"util_gpu_pct", "util_mem_pct", "sm_clock_mhz", "power_w",
                                      "dram_bw_util", "tensor_active", "sm_active"};
  const double vals[] = {g->util_gpu_pct, g->util_mem_pct, g->sm_clock_mhz, g->power_w,
                         g->dram_bw_util, g->tensor_active, g->sm_active};
  for (size_t i = 0; !err && i < sizeof vals / sizeof vals[0]; i++) {
    err = key(b, names[i]);
    if (!err)
      err = num(b, vals[i]);
  }
  return err ? err : im_buf_puts(b, "}");
}

enum im_err im_series_fmt_gpu(struct im_buf *out, const struct im_gpu_snapshot *g) {
  size_t len0 = out->len;
  enum im_err err = im_buf_printf(out, "{\"src\":\"gpu\",\"t_mono\":%" PRId64 ",\"gpus\":[", g->t_ns);
  for (unsigned i = 0; !err && i < g->n_gpus && i < IM_GPU_MAX; i++) {
    if (i)
      err = im_buf_puts(out, ",");
    if (!err)
      err = gpu_one(out, &g->gpu[i]);
  }
  if (!err)
    err = im_buf_puts(out, "]}\n");
  return rollback(out, len0, err);
}

enum im_err im_series_fmt_not_collected(struct im_buf *out, const char *what, const char *reason) {
  if (!what || (strcmp(what, "tcp") && strcmp(what, "gpu")))
    return IM_INVAL;
  size_t len0 = out->len;
  enum im_err err = im_buf_printf(out, "{\"src\":\"not_collected\",\"what\":\"%s\",\"reason\":", what);
  return rollback(out, len0, err ? err : str_end(out, reason));
}

enum im_err im_series_fmt_client(struct im_buf *out, const struct im_series_client *c) {
  size_t len0 = out->len;
  enum im_err err = im_buf_printf(out,
                                  "{\"src\":\"client\",\"stage\":%" PRIu32 ",\"thread\":%" PRIu32
                                  ",\"t\":%" PRId64 ",\"cpu_share\":",
                                  c->stage, c->thread, c->t);
  if (!err)
    err = num(out, c->cpu_share);
  if (!err)
    err = im_buf_puts(out, ",\"dispatch_lag_max_ms\":");
  if (!err)
    err = num(out, c->dispatch_lag_max_ms);
  if (!err)
    err = im_buf_printf(out, ",\"in_flight\":%" PRId64 "}\n", c->in_flight);
  return rollback(out, len0, err);
}

const char *im_series_bad_kind_name(enum im_series_bad_kind k) {
  static const char *const names[] = {"corrupt", "too_long", "truncated"};
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "corrupt";
}
