/* series.jsonl (src/record/series.c, series_read.c): every line kind
 * written and read back bit-exactly; bad lines (corrupt, over the cap, a
 * truncated last line) skipped and reported with their numbers; the file
 * reader agrees with the in-memory one; copies are deep. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "record/series.h"

static struct im_buf buf;

static void fmt_ok(enum im_err err) {
  CHECK_EQ(err, IM_OK);
}

static struct im_series_hist hist_fixture(double scale) {
  struct im_series_hist h = {.n = 4, .sum = 1.0 / 3.0 * scale, .count = 10 * scale};
  const double le[4] = {0.005, 0.1, 0.7, INFINITY}, c[4] = {1, 4, 9, 10};
  for (int i = 0; i < 4; i++)
    h.b[i] = (struct im_series_bucket){le[i], c[i] * scale};
  return h;
}

/* One line of every kind, into buf. */
static void write_all_kinds(void) {
  fmt_ok(im_series_fmt_source(&buf, 0, "http://user:secret@host:8000/metrics", false));
  fmt_ok(im_series_fmt_source(&buf, 1, "http://dcgm:9400/metrics", true));
  const char *engines[] = {"vllm-v1", "infermeter"};
  struct im_series_value v[] = {{"kv_cache_usage", 0.1 + 0.2}, {"prefix_cache_hits", 1e300},
                                {"requests_waiting", NAN}, {"prefix_cache_queries", 5e-324}};
  struct im_series_hist ttft = hist_fixture(1), itl = hist_fixture(3);
  struct im_series_labelled lab[2] = {{"kv_cache_usage", "vllm-v1", "engine=0", 0.25},
                                      {"kv_cache_usage", "vllm-v1", "engine=\"1\"", NAN}};
  struct im_series_raw raw[1] = {{"vllm:cache_config_info", "num_gpu_blocks", 8677}};
  struct im_series_scrape sc = {.source = 0, .url = "http://user:secret@host:8000/metrics",
                                .t_mono = 123456789012345, .engines = engines, .n_engines = 2,
                                .values = v, .n_values = 4, .ttft = &ttft, .itl = &itl,
                                .per_series = lab, .n_per_series = 2, .raw = raw, .n_raw = 1,
                                .malformed_lines = 3};
  fmt_ok(im_series_fmt_server(&buf, &sc));
  fmt_ok(im_series_fmt_scrape_error(&buf, 1, "http://dcgm:9400/metrics", 99, "HTTP 503 \"busy\"\n"));
  struct im_series_tcp t = {.t_mono = -5, .total = 7, .skipped = 1, .procfs = true};
  t.state[IM_TCP_TIME_WAIT] = 4;
  t.state[IM_TCP_ESTABLISHED] = 3;
  fmt_ok(im_series_fmt_tcp(&buf, &t));
  struct im_gpu_snapshot g;
  memset(&g, 0, sizeof g);
  g.t_ns = 42;
  g.n_gpus = 2;
  g.gpu[0] = (struct im_gpu_sample){.name = "NVIDIA H200", .has_mem = true, .mem_used_bytes = 1ull << 40,
                                    .mem_total_bytes = 141000000000ull, .util_gpu_pct = 99.5,
                                    .util_mem_pct = NAN, .sm_clock_mhz = 1980, .power_w = 612.25,
                                    .has_energy = true, .energy_mj = 123456789, .dram_bw_util = 0.78,
                                    .tensor_active = NAN, .sm_active = 1.0 / 7.0};
  g.gpu[1] = (struct im_gpu_sample){.util_gpu_pct = NAN, .util_mem_pct = NAN, .sm_clock_mhz = NAN,
                                    .power_w = NAN, .dram_bw_util = NAN, .tensor_active = NAN,
                                    .sm_active = NAN};
  fmt_ok(im_series_fmt_gpu(&buf, &g));
  fmt_ok(im_series_fmt_not_collected(&buf, "tcp", "socket states unavailable (EPERM)"));
  fmt_ok(im_series_fmt_not_collected(&buf, "gpu", "libnvidia-ml.so.1 not found"));
  struct im_series_client c = {.stage = 2, .thread = 1, .t = 1000000001, .cpu_share = 0.123456789012345678,
                               .dispatch_lag_max_ms = NAN, .in_flight = 17};
  fmt_ok(im_series_fmt_client(&buf, &c));
}

static bool same_bits(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

static void check_all_kinds(const struct im_series_set *s) {
  CHECK_EQ(s->lines, 9);
  CHECK_EQ(s->n_bad, 0);
  CHECK_EQ(s->n_src, 2);
  const struct im_series_source *a = &s->src[0], *d = &s->src[1];
  CHECK_STR(a->url, "http://***@host:8000/metrics");
  CHECK(!a->dcgm && d->dcgm);
  CHECK_EQ(a->n_pts, 1);
  CHECK_EQ(a->n_engines, 2);
  CHECK_STR(a->engines[1], "infermeter");
  const struct im_series_server *p = &a->pts[0];
  CHECK_EQ(p->t_mono, 123456789012345);
  CHECK_EQ(p->malformed_lines, 3);
  CHECK(same_bits(p->v[im_series_name_index(s, "kv_cache_usage")], 0.1 + 0.2));
  CHECK(same_bits(p->v[im_series_name_index(s, "prefix_cache_hits")], 1e300));
  CHECK(same_bits(p->v[im_series_name_index(s, "prefix_cache_queries")], 5e-324));
  CHECK(isnan(p->v[im_series_name_index(s, "requests_waiting")]));
  CHECK_EQ(im_series_name_index(s, "no_such_concept"), -1);
  struct im_series_hist want = hist_fixture(3);
  CHECK_EQ(p->ttft.n, 4);
  CHECK(isinf(p->ttft.b[3].le));
  CHECK(same_bits(p->itl.sum, want.sum));
  CHECK(same_bits(p->itl.b[2].count, want.b[2].count));
  CHECK(same_bits(p->ttft.b[0].le, 0.005));
  CHECK_EQ(a->n_per_series, 2);
  CHECK_STR(a->per_series[1].key, "engine=\"1\"");
  CHECK(isnan(a->per_series[1].value));
  CHECK_EQ(a->n_raw, 1);
  CHECK_STR(a->raw[0].metric, "vllm:cache_config_info");
  CHECK_NEAR(a->raw[0].value, 8677, 0);
  CHECK_EQ(d->failures, 1);
  CHECK_STR(d->last_error, "HTTP 503 \"busy\"\n");
  CHECK_EQ(s->n_tcp, 1);
  CHECK_EQ(s->tcp[0].t_mono, -5);
  CHECK_EQ(s->tcp[0].state[IM_TCP_TIME_WAIT], 4);
  CHECK_EQ(s->tcp[0].total, 7);
  CHECK(s->tcp[0].procfs);
  CHECK_EQ(s->n_gpu, 1);
  const struct im_gpu_snapshot *g = &s->gpu[0];
  CHECK_EQ(g->t_ns, 42);
  CHECK_EQ(g->n_gpus, 2);
  CHECK_STR(g->gpu[0].name, "NVIDIA H200");
  CHECK(g->gpu[0].has_mem && g->gpu[0].has_energy);
  CHECK_EQ(g->gpu[0].mem_used_bytes, 1ull << 40);
  CHECK_EQ(g->gpu[0].energy_mj, 123456789);
  CHECK(same_bits(g->gpu[0].sm_active, 1.0 / 7.0));
  CHECK(isnan(g->gpu[0].util_mem_pct));
  CHECK(!g->gpu[1].has_mem && !g->gpu[1].has_energy && isnan(g->gpu[1].power_w));
  CHECK_STR(s->tcp_why, "socket states unavailable (EPERM)");
  CHECK_STR(s->gpu_why, "libnvidia-ml.so.1 not found");
  CHECK_EQ(s->n_client, 1);
  CHECK_EQ(s->client[0].stage, 2);
  CHECK_EQ(s->client[0].thread, 1);
  CHECK_EQ(s->client[0].t, 1000000001);
  CHECK(same_bits(s->client[0].cpu_share, 0.123456789012345678));
  CHECK(isnan(s->client[0].dispatch_lag_max_ms));
  CHECK_EQ(s->client[0].in_flight, 17);
}

static void test_round_trip(void) {
  im_buf_reset(&buf);
  write_all_kinds();
  struct im_series_set *s = NULL;
  CHECK_EQ(im_series_read_mem(buf.data, buf.len, &s), IM_OK);
  check_all_kinds(s);
  /* The file reader, in 64 KiB chunks, agrees. */
  char path[] = "/tmp/im_test_series_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  CHECK_EQ(write(fd, buf.data, buf.len), (long long)buf.len);
  close(fd);
  struct im_series_set *f = NULL;
  char err[256];
  CHECK_EQ(im_series_read(path, &f, err, sizeof err), IM_OK);
  check_all_kinds(f);
  im_series_free(f);
  unlink(path);
  CHECK_EQ(im_series_read(path, &f, err, sizeof err), IM_IO);
  CHECK(f == NULL);
  CHECK(strstr(err, path) != NULL);
  /* A copy is deep: freeing the original leaves it whole. */
  struct im_series_set *c = NULL;
  CHECK_EQ(im_series_copy(s, &c), IM_OK);
  im_series_free(s);
  check_all_kinds(c);
  im_series_free(c);
}

static void test_bad_lines(void) {
  im_buf_reset(&buf);
  fmt_ok(im_series_fmt_source(&buf, 0, "http://h/metrics", false));             /* 1 */
  fmt_ok(im_buf_puts(&buf, "{\"src\":\"tcp\",\"t_mono\":1}\n"));                 /* 2: shape */
  fmt_ok(im_buf_puts(&buf, "not json at all\n"));                                /* 3 */
  fmt_ok(im_buf_puts(&buf, "\n"));                                               /* 4: empty */
  fmt_ok(im_buf_puts(&buf, "{\"src\":\"from_the_future\",\"x\":1}\n"));         /* 5: unknown */
  fmt_ok(im_buf_puts(&buf, "{\"src\":\"server\",\"source\":99,\"t_mono\":1}\n")); /* 6: source */
  size_t before = buf.len;                                                        /* 7: too long */
  fmt_ok(im_buf_puts(&buf, "{\"src\":\"client\",\"pad\":\""));
  while (buf.len - before < IM_SERIES_LINE_MAX + 10)
    if (im_buf_puts(&buf, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"))
      break;
  fmt_ok(im_buf_puts(&buf, "\"}\n"));
  struct im_series_client c = {.stage = 0, .thread = 0, .t = 5, .cpu_share = 0.5, .in_flight = 1};
  fmt_ok(im_series_fmt_client(&buf, &c));                                         /* 8 */
  size_t whole = buf.len;
  fmt_ok(im_series_fmt_client(&buf, &c));                                         /* 9: cut */
  struct im_series_set *s = NULL;
  CHECK_EQ(im_series_read_mem(buf.data, buf.len - 3, &s), IM_OK);
  CHECK_EQ(s->lines, 9);
  CHECK_EQ(s->n_bad, 5);
  CHECK_EQ(s->bad[0].line, 2);
  CHECK_EQ(s->bad[0].kind, IM_SERIES_BAD_CORRUPT);
  CHECK_EQ(s->bad[1].line, 3);
  CHECK_EQ(s->bad[2].line, 6);
  CHECK_EQ(s->bad[3].line, 7);
  CHECK_EQ(s->bad[3].kind, IM_SERIES_BAD_TOO_LONG);
  CHECK_EQ(s->bad[4].line, 9);
  CHECK_EQ(s->bad[4].kind, IM_SERIES_BAD_TRUNCATED);
  CHECK_STR(im_series_bad_kind_name(s->bad[4].kind), "truncated");
  CHECK_EQ(s->unknown, 1);
  CHECK_EQ(s->n_client, 1);
  CHECK_EQ(s->n_src, 1);
  CHECK_EQ(s->n_tcp, 0);
  im_series_free(s);
  /* A complete last line without its '\n' is a cut write, too. */
  CHECK_EQ(im_series_read_mem(buf.data, whole - 1, &s), IM_OK);
  CHECK_EQ(s->n_bad, 5);
  CHECK_EQ(s->bad[4].line, 8);
  CHECK_EQ(s->n_client, 0);
  im_series_free(s);
  /* Empty input: an empty set. */
  CHECK_EQ(im_series_read_mem("", 0, &s), IM_OK);
  CHECK_EQ(s->lines, 0);
  CHECK_EQ(s->n_bad, 0);
  im_series_free(s);
}

static void test_writer_bounds(void) {
  struct im_buf small;
  im_buf_init(&small, 60);
  CHECK_EQ(im_buf_puts(&small, "kept\n"), IM_OK);
  CHECK_EQ(im_series_fmt_scrape_error(&small, 0, "http://h/metrics", 1, "a reason that does not fit"),
           IM_LIMIT);
  CHECK_STR(small.data, "kept\n"); /* unchanged */
  CHECK_EQ(im_series_fmt_not_collected(&small, "disk", "x"), IM_INVAL);
  im_buf_cleanup(&small);
  char out[64];
  im_series_redact_url("https://u:p@h/m?q=a@b", out, sizeof out);
  CHECK_STR(out, "https://***@h/m?q=a@b");
  im_series_redact_url("http://h/m?q=a@b", out, sizeof out);
  CHECK_STR(out, "http://h/m?q=a@b");
  im_series_redact_url("u:p@h:1/m", out, sizeof out);
  CHECK_STR(out, "***@h:1/m");
}

int main(void) {
  im_buf_init(&buf, (size_t)8 << 20);
  test_round_trip();
  test_bad_lines();
  test_writer_bounds();
  im_buf_cleanup(&buf);
  return CHECK_DONE();
}
