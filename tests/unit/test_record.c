/* Request records (src/record/record.c): chunk bookkeeping and the
 * requests.jsonl line, written and read back. */
#include <dirent.h>
#include "check.h"

#include <jansson.h>

#include "record/fobj.h"
#include "record/record.h"

/* A record with every field set to a non-default value. */
static void fill(struct im_record *r) {
  im_record_reset(r);
  r->id = INT64_MAX;
  r->logical_id = 12345678901234ULL;
  r->attempt = 3;
  r->stage = UINT32_MAX;
  r->kind = IM_KIND_RETRY;
  snprintf(r->request_id, sizeof r->request_id, "im-\"q\\\x01-\xc3\xa9-%d", 42);
  r->t_sched = 0;
  r->t_sched_first = 1;
  r->t_dispatch = 1000;
  r->t_start = 2000000;
  r->t_send = 2100000;
  r->t_hdr = 3000000;
  r->t_first = 5000000;
  r->t_answer = 6000000;
  r->t_last = INT64_MAX - 1;
  r->t_end = 9000000000000LL;
  r->keepalives = 7;
  r->prompt_tokens = UINT32_MAX;
  r->output_tokens = 100;
  r->output_source = IM_COUNT_TOKENIZER;
  r->cached_tokens = 64;
  r->reasoning_tokens = 20;
  r->requested_tokens = 128;
  r->ignore_eos = true;
  r->http_status = 503;
  r->error = IM_EC_HTTP_5XX;
  snprintf(r->finish_reason, sizeof r->finish_reason, "length");
  r->cancelled = true;
  r->conn_id = 99;
  r->conn_new = true;
  r->temperature = 0.1 + 0.2; /* needs 17 digits */
  r->top_p = 0.95;
  r->session = 123456789012ULL;
  r->turn = 7;
  r->context_tokens = 32768;
  r->content_class = IM_CLASS_CODE;
  r->lag_client_us = 1234;
  r->read_first_us = 2500;
  r->read_first_client_us = 17;
  r->read_last_us = -1;
  r->read_last_client_us = -1;
  r->late_reads = 3;
  r->late_reads_client = 1;
}

static void check_same(const struct im_record *a, const struct im_record *b) {
  CHECK_EQ(a->id, b->id);
  CHECK(a->id == b->id); /* uint64 beyond long long's compare above */
  CHECK(a->logical_id == b->logical_id);
  CHECK_EQ(a->attempt, b->attempt);
  CHECK_EQ(a->stage, b->stage);
  CHECK(a->session == b->session);
  CHECK_EQ(a->turn, b->turn);
  CHECK_EQ(a->context_tokens, b->context_tokens);
  CHECK_EQ(a->content_class, b->content_class);
  CHECK_EQ(a->kind, b->kind);
  CHECK_STR(a->request_id, b->request_id);
  CHECK_EQ(a->t_sched, b->t_sched);
  CHECK_EQ(a->t_sched_first, b->t_sched_first);
  CHECK_EQ(a->t_dispatch, b->t_dispatch);
  CHECK_EQ(a->t_start, b->t_start);
  CHECK_EQ(a->t_send, b->t_send);
  CHECK_EQ(a->t_hdr, b->t_hdr);
  CHECK_EQ(a->t_first, b->t_first);
  CHECK_EQ(a->t_answer, b->t_answer);
  CHECK_EQ(a->t_last, b->t_last);
  CHECK_EQ(a->t_end, b->t_end);
  CHECK_EQ(a->n_chunks, b->n_chunks);
  CHECK_EQ(a->keepalives, b->keepalives);
  CHECK_EQ(a->prompt_tokens, b->prompt_tokens);
  CHECK_EQ(a->output_tokens, b->output_tokens);
  CHECK_EQ(a->output_source, b->output_source);
  CHECK_EQ(a->cached_tokens, b->cached_tokens);
  CHECK_EQ(a->reasoning_tokens, b->reasoning_tokens);
  CHECK_EQ(a->requested_tokens, b->requested_tokens);
  CHECK_EQ(a->ignore_eos, b->ignore_eos);
  CHECK_EQ(a->http_status, b->http_status);
  CHECK_EQ(a->error, b->error);
  CHECK_STR(a->finish_reason, b->finish_reason);
  CHECK_EQ(a->cancelled, b->cancelled);
  CHECK(a->conn_id == b->conn_id);
  CHECK_EQ(a->conn_new, b->conn_new);
  if (isnan(a->temperature))
    CHECK(isnan(b->temperature));
  else
    CHECK(a->temperature == b->temperature);
  if (isnan(a->top_p))
    CHECK(isnan(b->top_p));
  else
    CHECK(a->top_p == b->top_p);
  CHECK_EQ(a->lag_client_us, b->lag_client_us);
  CHECK_EQ(a->read_first_us, b->read_first_us);
  CHECK_EQ(a->read_first_client_us, b->read_first_client_us);
  CHECK_EQ(a->read_last_us, b->read_last_us);
  CHECK_EQ(a->read_last_client_us, b->read_last_client_us);
  CHECK_EQ(a->late_reads, b->late_reads);
  CHECK_EQ(a->late_reads_client, b->late_reads_client);
  CHECK_EQ(a->chunk_tokens != NULL, b->chunk_tokens != NULL);
  if (a->n_chunks == b->n_chunks) {
    CHECK(a->n_chunks == 0 || memcmp(a->chunk_us, b->chunk_us, a->n_chunks * 4) == 0);
    if (a->chunk_tokens && b->chunk_tokens)
      CHECK(memcmp(a->chunk_tokens, b->chunk_tokens, a->n_chunks * 2) == 0);
  }
}

/* The line read by im_record_from_json (the in-place scan where the line
 * is plain, jansson otherwise) and by the jansson path alone gives the
 * same result, message and record. Returns the result. */
static enum im_err both_paths(const char *line, size_t len) {
  struct im_record a = {0}, b = {0};
  im_record_reset(&a);
  im_record_reset(&b);
  char ma[256] = "", mb[256] = "";
  enum im_err ea = im_record_from_json(line, len, &a, ma, sizeof ma);
  enum im_err eb = im__record_from_tree(line, len, &b, mb, sizeof mb);
  CHECK_EQ(ea, eb);
  CHECK_STR(ma, mb);
  if (ea == IM_OK && eb == IM_OK) {
    struct im_buf la, lb;
    im_buf_init(&la, IM_TEST_BUF_MAX);
    im_buf_init(&lb, IM_TEST_BUF_MAX);
    CHECK_OK(im_record_to_jsonl(&a, &la));
    CHECK_OK(im_record_to_jsonl(&b, &lb));
    CHECK_STR(la.data, lb.data);
    check_same(&a, &b);
    im_buf_cleanup(&la);
    im_buf_cleanup(&lb);
  }
  im_record_cleanup(&a);
  im_record_cleanup(&b);
  return ea;
}

/* Writes r, checks the line is one valid JSON object, reads it back into
 * *back (reset first) and compares. Returns the line (caller frees). */
static char *round_trip(const struct im_record *r, struct im_record *back) {
  struct im_buf b;
  im_buf_init(&b, IM_TEST_BUF_MAX);
  CHECK_OK(im_record_to_jsonl(r, &b));
  CHECK(b.len > 0 && b.data[b.len - 1] == '\n');
  CHECK(memchr(b.data, '\n', b.len) == b.data + b.len - 1); /* a single line */
  json_error_t jerr;
  json_t *j = json_loadb(b.data, b.len, 0, &jerr);
  CHECK(j != NULL && json_is_object(j));
  if (!j)
    fprintf(stderr, "  jansson: %s in %s\n", jerr.text, b.data);
  json_decref(j);
  char msg[256];
  im_record_reset(back);
  enum im_err err = im_record_from_json(b.data, b.len, back, msg, sizeof msg);
  CHECK_OK(err);
  CHECK_OK(both_paths(b.data, b.len));
  if (err)
    fprintf(stderr, "  from_json: %s\n", msg);
  else
    check_same(r, back);
  char *line = strdup(b.data);
  im_buf_cleanup(&b);
  return line;
}

static void test_names(void) {
  CHECK_STR(im_kind_name(IM_KIND_MEASURED), "measured");
  CHECK_STR(im_kind_name(IM_KIND_ABORTED), "aborted");
  CHECK_STR(im_kind_name(IM_KIND_COUNT_), "unknown");
  CHECK_STR(im_errclass_name(IM_EC_NONE), "");
  CHECK_STR(im_errclass_name(IM_EC_HTTP_429), "http_429");
  CHECK_STR(im_errclass_name(IM_EC_TIMEOUT_TTFT), "timeout_ttft");
  CHECK_STR(im_errclass_name(IM_EC_COUNT_), "unknown");
  CHECK_STR(im_count_source_name(IM_COUNT_USAGE), "usage");
  CHECK_STR(im_count_source_name(IM_COUNT_CHUNKS), "chunks");
  /* Every name is distinct (they are parsed back). */
  for (int i = 0; i < IM_EC_COUNT_; i++)
    for (int j = i + 1; j < IM_EC_COUNT_; j++)
      CHECK(strcmp(im_errclass_name((enum im_errclass)i), im_errclass_name((enum im_errclass)j)));
}

static void test_reset_and_chunks(void) {
  struct im_record r = {0};
  im_record_reset(&r);
  CHECK_EQ(r.t_sched, -1);
  CHECK_EQ(r.t_end, -1);
  CHECK(isnan(r.temperature) && isnan(r.top_p));
  CHECK_EQ(r.n_chunks, 0);
  CHECK(r.chunk_tokens == NULL);

  r.t_start = 1000000;
  CHECK_OK(im_record_add_chunk(&r, 1500000, 1)); /* 500 µs */
  CHECK_OK(im_record_add_chunk(&r, 1500999, 1)); /* 500.999 µs -> 500 */
  CHECK_OK(im_record_add_chunk(&r, 900000, 1));  /* before t_start -> 0 */
  CHECK(r.chunk_tokens == NULL);
  CHECK_OK(im_record_add_chunk(&r, 2000000, 4)); /* first != 1: allocates */
  CHECK(r.chunk_tokens != NULL);
  CHECK_OK(im_record_add_chunk(&r, 1000000 + 5000000000000LL, 70000)); /* saturate both */
  CHECK_OK(im_record_add_chunk(&r, 3000000, 0));
  CHECK_EQ(r.n_chunks, 6);
  CHECK_EQ(r.chunk_us[0], 500);
  CHECK_EQ(r.chunk_us[1], 500);
  CHECK_EQ(r.chunk_us[2], 0);
  CHECK_EQ(r.chunk_us[3], 1000);
  CHECK_EQ(r.chunk_us[4], UINT32_MAX);
  CHECK_EQ(r.chunk_us[5], 2000);
  CHECK_EQ(im_record_chunk_tokens(&r, 0), 1);
  CHECK_EQ(im_record_chunk_tokens(&r, 1), 1);
  CHECK_EQ(im_record_chunk_tokens(&r, 2), 1);
  CHECK_EQ(im_record_chunk_tokens(&r, 3), 4);
  CHECK_EQ(im_record_chunk_tokens(&r, 4), 65535);
  CHECK_EQ(im_record_chunk_tokens(&r, 5), 0);

  /* Growth past many doublings keeps both arrays in step. */
  for (uint32_t i = 0; i < 100000; i++)
    CHECK_OK(im_record_add_chunk(&r, r.t_start + (int64_t)i * 1000, i % 3 ? 1 : 2));
  CHECK_EQ(r.n_chunks, 100006);
  CHECK(r.cap_chunks >= r.n_chunks);
  CHECK_EQ(r.chunk_us[100005], 99999);
  CHECK_EQ(im_record_chunk_tokens(&r, 100005), 2); /* i = 99999 */
  CHECK_EQ(im_record_chunk_tokens(&r, 100004), 1);
  CHECK_EQ(im_record_chunk_tokens(&r, 4), 65535);

  /* Reset keeps chunk_us's storage, drops chunk_tokens. */
  uint32_t *kept = r.chunk_us;
  uint32_t cap = r.cap_chunks;
  im_record_reset(&r);
  CHECK(r.chunk_us == kept);
  CHECK_EQ(r.cap_chunks, cap);
  CHECK_EQ(r.n_chunks, 0);
  CHECK(r.chunk_tokens == NULL);
  /* t_start unknown (-1): offsets from 0. */
  CHECK_OK(im_record_add_chunk(&r, 7000, 1));
  CHECK_EQ(r.chunk_us[0], 7);
  im_record_cleanup(&r);
  CHECK(r.chunk_us == NULL && r.cap_chunks == 0);
  im_record_cleanup(&r); /* twice is fine */
  im_record_cleanup(NULL);
}

static void test_round_trip(void) {
  struct im_record r = {0}, back = {0};
  fill(&r);
  for (int i = 0; i < 50; i++)
    CHECK_OK(im_record_add_chunk(&r, r.t_start + 20000 + (int64_t)i * 12345678, 1));
  char *line = round_trip(&r, &back);
  CHECK(back.chunk_tokens == NULL);
  CHECK(strstr(line, "\"chunk_tokens\"") == NULL);
  CHECK(strstr(line, "\"output_shortfall\":28") != NULL);
  CHECK(strstr(line, "\"error\":\"http_5xx\"") != NULL);
  CHECK(strstr(line, "\"kind\":\"retry\"") != NULL);
  CHECK(strstr(line, "\"output_tokens_source\":\"tokenizer\"") != NULL);
  CHECK(strstr(line, "\"temperature\":0.30000000000000004") != NULL);
  CHECK(strstr(line, "\"top_p\":0.95,") != NULL);
  CHECK(strstr(line, "\"session\":123456789012,\"turn\":7,\"context_tokens\":32768,\"class\":\"code\"") != NULL);
  CHECK(strncmp(line, "{\"id\":9223372036854775807,", 26) == 0);
  CHECK(strstr(line, "\"dispatch_lag_client_us\":1234,\"read_lag_us\":[2500,17,-1,-1],"
                     "\"late_reads\":3,\"late_reads_client\":1") != NULL);
  CHECK(strstr(line, "\"finish_reason\":\"length\",\"cancelled\":true,\"conn\":99") != NULL);
  free(line);

  /* With chunk_tokens. */
  CHECK_OK(im_record_add_chunk(&r, r.t_start + 999999999, 3));
  CHECK_OK(im_record_add_chunk(&r, r.t_start + 1999999999, 1));
  line = round_trip(&r, &back);
  CHECK(back.chunk_tokens != NULL);
  CHECK(strstr(line, "\"chunk_tokens\":[1,1,") != NULL);
  CHECK(strstr(line, ",3,1]}") != NULL);
  free(line);

  /* The defaults: nulls for absent times, error, finish_reason, sampling. */
  struct im_record e = {0};
  im_record_reset(&e);
  line = round_trip(&e, &back);
  CHECK(strstr(line, "\"t_sched\":null") != NULL);
  CHECK(strstr(line, "\"t_end\":null") != NULL);
  CHECK(strstr(line, "\"error\":null") != NULL);
  CHECK(strstr(line, "\"finish_reason\":null") != NULL);
  CHECK(strstr(line, "\"temperature\":null") != NULL);
  CHECK(strstr(line, "\"class\":null") != NULL);
  CHECK(strstr(line, "\"output_shortfall\":null") != NULL);
  CHECK(strstr(line, "\"chunks_us\":[]") != NULL);
  CHECK(strstr(line, "\"status\":0") != NULL);
  CHECK(strstr(line, "dispatch_lag_client_us") == NULL); /* not measured: absent */
  CHECK(strstr(line, "\"cancelled\"") == NULL);             /* not cancelled: absent */
  CHECK(!back.cancelled);
  CHECK_EQ(back.lag_client_us, -1);
  free(line);

  /* Whole-number doubles and a negative shortfall. */
  e.temperature = 1.0;
  e.top_p = 1e-300;
  e.ignore_eos = true;
  e.requested_tokens = 5;
  e.output_tokens = 9;
  line = round_trip(&e, &back);
  CHECK(strstr(line, "\"output_shortfall\":-4") != NULL);
  free(line);

  im_record_cleanup(&r);
  im_record_cleanup(&e);
  im_record_cleanup(&back);
}

static void test_buffer_cap(void) {
  struct im_record r = {0};
  fill(&r);
  for (int i = 0; i < 1000; i++)
    CHECK_OK(im_record_add_chunk(&r, r.t_start + i * 1000000LL, 2));
  struct im_buf b;
  im_buf_init(&b, 600);
  CHECK_OK(im_buf_puts(&b, "keep"));
  CHECK_EQ(im_record_to_jsonl(&r, &b), IM_LIMIT);
  CHECK_EQ(b.len, 4);
  CHECK_STR(b.data, "keep");
  im_buf_cleanup(&b);
  im_record_cleanup(&r);
}

/* s with the first `from` replaced by `to` (caller frees). */
static char *replace(const char *s, const char *from, const char *to) {
  const char *p = strstr(s, from);
  if (!p) {
    fprintf(stderr, "test bug: \"%s\" not in line\n", from);
    abort();
  }
  size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
  char *out = malloc(n);
  snprintf(out, n, "%.*s%s%s", (int)(p - s), s, to, p + strlen(from));
  return out;
}

/* Parsing `line` fails with IM_PARSE and a message containing `field`. */
static void expect_bad(const char *line, const char *field) {
  struct im_record r = {0};
  im_record_reset(&r);
  char msg[256] = "";
  enum im_err err = im_record_from_json(line, strlen(line), &r, msg, sizeof msg);
  CHECK_EQ(err, IM_PARSE);
  CHECK_EQ(both_paths(line, strlen(line)), IM_PARSE);
  if (!strstr(msg, field))
    IM__FAIL("message \"%s\" does not name \"%s\"", msg, field);
  im_record_cleanup(&r);
}

static void expect_bad_edit(const char *good, const char *from, const char *to, const char *field) {
  char *bad = replace(good, from, to);
  expect_bad(bad, field);
  free(bad);
}

static void test_malformed(void) {
  struct im_record r = {0}, back = {0};
  fill(&r);
  CHECK_OK(im_record_add_chunk(&r, r.t_start + 1000, 1));
  CHECK_OK(im_record_add_chunk(&r, r.t_start + 2000, 2));
  char *good = round_trip(&r, &back);

  expect_bad_edit(good, "\"attempt\":3", "\"attempt\":\"3\"", "attempt");
  expect_bad_edit(good, "\"attempt\":3", "\"attempt\":3.5", "attempt");
  expect_bad_edit(good, "\"attempt\":3", "\"attempt\":-3", "attempt");
  expect_bad_edit(good, "\"attempt\":3", "\"attempt\":4294967296", "attempt");
  expect_bad_edit(good, "\"attempt\":3,", "", "attempt"); /* missing */
  expect_bad_edit(good, "\"kind\":\"retry\"", "\"kind\":\"bogus\"", "kind");
  expect_bad_edit(good, "\"kind\":\"retry\"", "\"kind\":null", "kind");
  expect_bad_edit(good, "\"error\":\"http_5xx\"", "\"error\":\"\"", "error");
  expect_bad_edit(good, "\"error\":\"http_5xx\"", "\"error\":5", "error");
  expect_bad_edit(good, "\"t_first\":5000000", "\"t_first\":\"5000000\"", "t_first");
  expect_bad_edit(good, "\"t_first\":5000000", "\"t_first\":5e6", "t_first");
  expect_bad_edit(good, "\"conn_new\":true", "\"conn_new\":1", "conn_new");
  expect_bad_edit(good, "\"cancelled\":true", "\"cancelled\":1", "cancelled");
  expect_bad_edit(good, "\"cancelled\":true", "\"cancelled\":null", "cancelled");
  expect_bad_edit(good, "\"temperature\":0.30000000000000004", "\"temperature\":\"hot\"",
                  "temperature");
  expect_bad_edit(good, "\"status\":503", "\"status\":1000", "status");
  expect_bad_edit(good, "\"output_tokens_source\":\"tokenizer\"",
                  "\"output_tokens_source\":\"guess\"", "output_tokens_source");
  expect_bad_edit(good, "\"finish_reason\":\"length\"",
                  "\"finish_reason\":\"0123456789012345678901234567890123\"", "finish_reason");
  expect_bad_edit(good, "\"request_id\":\"",
                  "\"request_id\":\"01234567890123456789012345678901234567890123456789",
                  "request_id");
  expect_bad_edit(good, "\"output_shortfall\":28", "\"output_shortfall\":\"28\"",
                  "output_shortfall");
  expect_bad_edit(good, "\"n_chunks\":2", "\"n_chunks\":3", "chunks_us");
  expect_bad_edit(good, "\"chunks_us\":[1,2]", "\"chunks_us\":[1,-2]", "chunks_us");
  expect_bad_edit(good, "\"chunks_us\":[1,2]", "\"chunks_us\":{}", "chunks_us");
  expect_bad_edit(good, "\"chunk_tokens\":[1,2]", "\"chunk_tokens\":[1,65536]", "chunk_tokens");
  expect_bad_edit(good, "\"chunk_tokens\":[1,2]", "\"chunk_tokens\":[1]", "chunk_tokens");
  expect_bad_edit(good, "\"chunk_tokens\":[1,2]", "\"chunk_tokens\":[1,\"2\"]", "chunk_tokens");
  expect_bad_edit(good, "{\"id\":", "{\"id\":1,\"id\":", "duplicate");
  expect_bad("[1,2,3]", "object");
  expect_bad("{\"id\":", "not JSON");
  expect_bad("", "not JSON");
  char *trailing = replace(good, "}\n", "} x\n");
  expect_bad(trailing, "not JSON");
  free(trailing);

  /* Unknown keys are ignored (forward compatibility); chunk_tokens null is
   * the same as absent. */
  char *extra = replace(good, "{\"id\":", "{\"future_field\":[1,{}],\"id\":");
  char msg[256];
  im_record_reset(&back);
  CHECK_OK(im_record_from_json(extra, strlen(extra), &back, msg, sizeof msg));
  free(extra);
  char *nulltok = replace(good, "\"chunk_tokens\":[1,2]", "\"chunk_tokens\":null");
  im_record_reset(&back);
  CHECK_OK(im_record_from_json(nulltok, strlen(nulltok), &back, msg, sizeof msg));
  CHECK(back.chunk_tokens == NULL);
  free(nulltok);

  free(good);
  im_record_cleanup(&r);
  im_record_cleanup(&back);
}

/* A warm-up the client cancelled (issue 29, point 8) keeps its kind, no
 * error and no finish_reason, and says so: "cancelled":true, read back by
 * both paths; false is the same as absent (and written absent). */
static void test_cancelled(void) {
  struct im_record r = {0}, back = {0};
  im_record_reset(&r);
  r.id = r.logical_id = 4;
  r.attempt = 1;
  r.kind = IM_KIND_WARMUP;
  r.http_status = 200;
  r.cancelled = true;
  r.t_start = 1000;
  r.t_first = 2000;
  r.t_last = 3000;
  r.t_end = 4000;
  r.output_tokens = 2;
  CHECK_OK(im_record_add_chunk(&r, 2000, 1));
  CHECK_OK(im_record_add_chunk(&r, 3000, 1));
  char *line = round_trip(&r, &back);
  CHECK(strstr(line, "\"kind\":\"warmup\"") != NULL);
  CHECK(strstr(line, "\"error\":null,\"finish_reason\":null,\"cancelled\":true,") != NULL);
  CHECK(back.cancelled);
  CHECK_EQ(back.kind, IM_KIND_WARMUP);
  char *off = replace(line, "\"cancelled\":true", "\"cancelled\":false");
  im_record_reset(&back);
  char msg[256];
  CHECK_OK(im_record_from_json(off, strlen(off), &back, msg, sizeof msg));
  CHECK(!back.cancelled);
  CHECK_OK(both_paths(off, strlen(off)));
  struct im_buf b;
  im_buf_init(&b, IM_TEST_BUF_MAX);
  CHECK_OK(im_record_to_jsonl(&back, &b));
  CHECK(strstr(b.data, "cancelled") == NULL);
  im_buf_cleanup(&b);
  free(off);
  free(line);
  im_record_cleanup(&r);
  im_record_cleanup(&back);
}

/* Lines of the plain shape (the in-place scan reads them) and small
 * departures from it (jansson reads those): both paths agree on each. */
static void test_scan_agrees(void) {
  struct im_record r = {0}, back = {0};
  fill(&r);
  snprintf(r.request_id, sizeof r.request_id, "im-abc-7"); /* plain: the scan's shape */
  r.id = 123; /* 19 digits (INT64_MAX) go to jansson */
  r.t_last = 8000000;
  CHECK_OK(im_record_add_chunk(&r, r.t_start + 1000, 1));
  CHECK_OK(im_record_add_chunk(&r, r.t_start + 2000, 2));
  char *good = round_trip(&r, &back);
  struct im__fobj o;
  CHECK_OK(im__fobj_scan(&o, good, strlen(good)));
  const char *const edits[][2] = {
      {"{\"id\":", " { \"id\" : "},                      /* whitespace */
      {"\"chunks_us\":[1,2]", "\"chunks_us\":[ 1 ,\t2 ]"},
      {"\"temperature\":0.30000000000000004", "\"temperature\":3E-1"},
      {"\"temperature\":0.30000000000000004", "\"temperature\":-0"},
      {"\"temperature\":0.30000000000000004", "\"temperature\":1e999"}, /* jansson: overflow */
      {"\"attempt\":3", "\"attempt\":03"},                 /* not JSON */
      {"\"attempt\":3", "\"attempt\":-"},
      {"\"attempt\":3", "\"attempt\":3."},
      {"\"attempt\":3", "\"attempt\":999999999999999999"}, /* 18 digits: out of range */
      {"\"attempt\":3", "\"attempt\":9223372036854775808"},
      {"\"attempt\":3", "\"attempt\":nul"},
      {"\"cancelled\":true", "\"cancelled\":false"},
      {"\"cancelled\":true", "\"cancelled\":tru"},
      {"\"cancelled\":true,", ""},                          /* absent: not cancelled */
      {"\"attempt\":3", "\"attempt\":3,\"x\":{\"y\":[]}"}, /* nested: jansson */
      {"\"attempt\":3", "\"attempt\":3,\"attempt\":3"},    /* duplicate */
      {"\"attempt\":3", "\"attempt\":3,\"\":1"},
      {"\"kind\":\"retry\"", "\"kind\":\"re\\u0074ry\""}, /* an escape: jansson */
      {"\"model\"", "\"mo\\u0000del\""},
      {"\"content_hash\":\"", "\"content_hash\":\"0"},
      {"\"chunks_us\":[1,2]", "\"chunks_us\":[1,2,]"},
      {"\"chunks_us\":[1,2]", "\"chunks_us\":[1,2.0]"},
      {"\"chunks_us\":[1,2]", "\"chunks_us\":[1,null]"},
      {"\"read_lag_us\":[", "\"read_lag_us\":[-2,"},
      {"}\n", "}  \r\n"},
      {"}\n", "},\n"},
  };
  for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
    if (!strstr(good, edits[i][0]))
      continue; /* e.g. no model in this record */
    char *line = replace(good, edits[i][0], edits[i][1]);
    both_paths(line, strlen(line));
    free(line);
  }
  /* Every prefix of the line (cut anywhere): both paths agree. */
  for (size_t n = 0; n < strlen(good); n += 7)
    both_paths(good, n);
  free(good);
  im_record_cleanup(&r);
  im_record_cleanup(&back);
}

/* Context overflows in each engine's wording become context_overflow with
 * the counts; other 4xx texts and other classes stay as they were. */
static void test_refine(void) {
  static const struct {
    const char *text;
    enum im_errclass in;
    uint32_t prompt, limit;
  } cases[] = {
      {"{\"error\":{\"code\":400,\"message\":\"request (720 tokens) exceeds the available "
       "context size (512 tokens), try increasing it\",\"type\":\"exceed_context_size_error\","
       "\"n_prompt_tokens\":720,\"n_ctx\":512}}",
       IM_EC_HTTP_4XX, 720, 512},
      {"request (720 tokens) exceeds the available context size (512 tokens), try increasing it",
       IM_EC_ERROR_EVENT, 720, 512},
      {"the request exceeds the available context size, try increasing it", IM_EC_ERROR_EVENT, 0,
       0},
      {"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
       "(4000 in the messages, 1000 in the completion). Please reduce the length of the messages "
       "or completion.",
       IM_EC_HTTP_4XX, 4000, 4096},
      {"'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's maximum context "
       "length is 4096 tokens and your request has 3500 input tokens (1000 > 4096 - 3500).",
       IM_EC_HTTP_4XX, 3500, 4096},
      {"The input (5000 tokens) is longer than the model's context length (4096 tokens).",
       IM_EC_HTTP_4XX, 5000, 4096},
      {"Requested token count exceeds the model's maximum context length of 4096 tokens. You "
       "requested a total of 5000 tokens: 4000 tokens from the input messages and 1000 tokens for "
       "the completion.",
       IM_EC_HTTP_4XX, 4000, 4096},
      {"{\"error\":\"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. "
       "Given: 4000 `inputs` tokens and 1000 `max_new_tokens`\",\"error_type\":\"validation\"}",
       IM_EC_HTTP_4XX, 4000, 4096},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint32_t p = 99, l = 99;
    enum im_errclass e =
        im_errclass_refine(cases[i].in, cases[i].text, strlen(cases[i].text), &p, &l);
    CHECK_EQ(e, IM_EC_CONTEXT_OVERFLOW);
    CHECK_EQ(p, cases[i].prompt);
    CHECK_EQ(l, cases[i].limit);
  }
  const char *other = "{\"error\":{\"message\":\"The model `x` does not exist.\"}}";
  CHECK_EQ(im_errclass_refine(IM_EC_HTTP_4XX, other, strlen(other), NULL, NULL), IM_EC_HTTP_4XX);
  /* A 5xx or a 429 is not refined, whatever it says. */
  const char *t = cases[0].text;
  CHECK_EQ(im_errclass_refine(IM_EC_HTTP_5XX, t, strlen(t), NULL, NULL), IM_EC_HTTP_5XX);
  CHECK_EQ(im_errclass_refine(IM_EC_HTTP_4XX, NULL, 0, NULL, NULL), IM_EC_HTTP_4XX);
  CHECK_STR(im_errclass_name(IM_EC_CONTEXT_OVERFLOW), "context_overflow");
}

/* The engines' recorded error bodies (tests/fixtures/engines, counts in
 * the names: NAME_P_L.ext). */
static void test_refine_fixtures(void) {
  const char *dir = "tests/fixtures/engines";
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  if (!d)
    return;
  int seen = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strstr(de->d_name, "_overflow"))
      continue;
    char path[512], text[4096];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f)
      continue;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    unsigned want_p = 0, want_l = 0;
    const char *u = strrchr(de->d_name, '.');
    const char *q = u;
    for (int k = 0; k < 2 && q > de->d_name; k++)
      for (q--; q > de->d_name && *q != '_'; q--)
        ;
    CHECK(sscanf(q, "_%u_%u.", &want_p, &want_l) == 2);
    bool sse = !strcmp(u, ".sse");
    uint32_t p = 0, l = 0;
    enum im_errclass e =
        im_errclass_refine(sse ? IM_EC_ERROR_EVENT : IM_EC_HTTP_4XX, text, n, &p, &l);
    if (e != IM_EC_CONTEXT_OVERFLOW || p != want_p || l != want_l)
      fprintf(stderr, "%s: class %s, prompt %u, context %u\n", de->d_name, im_errclass_name(e),
              p, l);
    CHECK_EQ(e, IM_EC_CONTEXT_OVERFLOW);
    CHECK_EQ(p, want_p);
    CHECK_EQ(l, want_l);
    seen++;
  }
  closedir(d);
  CHECK(seen >= 5);
}

int main(void) {
  test_refine();
  test_refine_fixtures();
  test_names();
  test_reset_and_chunks();
  test_round_trip();
  test_buffer_cap();
  test_malformed();
  test_scan_agrees();
  test_cancelled();
  return CHECK_DONE();
}
