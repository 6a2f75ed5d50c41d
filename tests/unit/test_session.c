/* Multi-turn sessions (load/session.c): growth parsing and targets, the
 * conversation each turn sends (history + previous answer + new message),
 * exact counts with a chat template, and the per-context breakdown
 * (analyze/breakdown.c). */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "analyze/breakdown.h"
#include "report/breakdown_json.h"
#include "check.h"
#include "text/chattmpl.h"
#include "workload/session.h"
#include "workload/synth.h"
#include "text/simpletok.h"

static void test_growth_parse(void) {
  uint32_t a = 0, b = 0;
  char err[256];
  CHECK_OK(im_sessions_parse_growth("5k:32k", &a, &b, err, sizeof err));
  CHECK_EQ(a, 5120);
  CHECK_EQ(b, 32768);
  CHECK_OK(im_sessions_parse_growth("5000:32000", &a, &b, err, sizeof err));
  CHECK_EQ(a, 5000);
  CHECK_EQ(b, 32000);
  CHECK_OK(im_sessions_parse_growth("1.5k:1.5k", &a, &b, err, sizeof err));
  CHECK_EQ(a, 1536);
  CHECK_EQ(b, 1536);
  const char *bad[] = {"32k:5k", "abc", "5k", ":", "0:5", "5k:", "-1:5", "5x:6", "1:99999999", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    err[0] = '\0';
    CHECK_EQ(im_sessions_parse_growth(bad[i], &a, &b, err, sizeof err), -1);
    CHECK(strstr(err, "--context-growth") != NULL);
  }
}

static void test_targets(void) {
  struct im_sessions s = {.turns = 8, .ctx_start = 5120, .ctx_end = 32768};
  CHECK_EQ(im_sessions_target(&s, 0), 5120);
  CHECK_EQ(im_sessions_target(&s, 7), 32768);
  CHECK_EQ(im_sessions_target(&s, 100), 32768);
  for (uint32_t k = 1; k < 8; k++) {
    CHECK_INT(im_sessions_target(&s, k), >, im_sessions_target(&s, k - 1));
    /* Even growth: each step is (32768 - 5120) / 7, within rounding. */
    CHECK_INT(im_sessions_target(&s, k) - im_sessions_target(&s, k - 1), >=, 3949);
    CHECK_INT(im_sessions_target(&s, k) - im_sessions_target(&s, k - 1), <=, 3950);
  }
  s.turns = 1;
  CHECK_EQ(im_sessions_target(&s, 0), 5120);
}

static struct im_synth make_synth(void) {
  struct im_synth sy;
  memset(&sy, 0, sizeof sy);
  sy.input_len = 100;
  sy.output_len = 16;
  sy.temperature = NAN;
  sy.top_p = NAN;
  sy.seed = 42;
  strcpy(sy.salt, "testsalt");
  return sy;
}

/* Messages of a chat turn, as (role, content) pairs. */
static json_t *messages(const struct im_req_spec *sp) {
  return sp->messages_json ? json_loads(sp->messages_json, 0, NULL) : NULL;
}

static void test_chat_turns(bool exact) {
  struct im_synth sy = make_synth();
  sy.exact = exact;
  sy.chat = true;
  sy.tmpl = exact ? IM_CHAT_DEEPSEEK_V3 : IM_CHAT_NONE;
  struct im_sessions s = {.synth = &sy, .backend = IM_BACKEND_CHAT, .turns = 3, .ctx_start = 200,
                          .ctx_end = 1200, .min_user = 32};
  struct im_session_ops ops;
  im_sessions_ops(&s, &ops);
  CHECK_EQ(ops.turns, 3);
  void *state = NULL;
  struct im_req_spec t0, t1, t2;
  memset(&t0, 0, sizeof t0);
  CHECK_OK(ops.turn(&s, 7, 0, &state, NULL, 0, &t0));
  CHECK(state != NULL);
  CHECK_EQ(t0.session, 8);
  CHECK_EQ(t0.turn, 1);
  CHECK_EQ(t0.max_tokens, 16);
  json_t *m0 = messages(&t0);
  CHECK(json_array_size(m0) == 1);
  CHECK_STR(json_string_value(json_object_get(json_array_get(m0, 0), "role")), "user");
  if (exact)
    CHECK_EQ(t0.prompt_tokens, 200); /* exact: the template included */
  else
    CHECK_INT(t0.prompt_tokens, >=, 200);

  const char *answer = "The answer, with \"quotes\" and a newline\nin it.";
  CHECK_OK(ops.turn(&s, 7, 1, &state, answer, strlen(answer), &t1));
  json_t *m1 = messages(&t1);
  CHECK(json_array_size(m1) == 3);
  CHECK_STR(json_string_value(json_object_get(json_array_get(m1, 1), "role")), "assistant");
  CHECK_STR(json_string_value(json_object_get(json_array_get(m1, 1), "content")), answer);
  /* The first turn is sent again as it was: the server's cache can hit. */
  CHECK(json_equal(json_array_get(m0, 0), json_array_get(m1, 0)));
  CHECK_EQ(t1.turn, 2);
  CHECK_INT(t1.prompt_tokens, >, t0.prompt_tokens);
  CHECK_INT(t1.prompt_tokens, >=, 700); /* target of turn 1: 200 + 1000 / 2 */
  if (exact) {
    /* The count is what the template and the built-in tokenizer make of it. */
    struct im_buf r;
    im_buf_init(&r, IM_TEST_BUF_MAX);
    char e[64];
    CHECK_OK(im_chat_render_json(IM_CHAT_DEEPSEEK_V3, t1.messages_json, strlen(t1.messages_json), &r,
                                 e, sizeof e));
    CHECK_EQ(t1.prompt_tokens, im_simpletok_encode(r.data, r.len, NULL, 0));
    im_buf_cleanup(&r);
  }
  /* A long answer: the next message still has at least min_user tokens. */
  char big[20000];
  memset(big, 'a', sizeof big - 1);
  for (size_t i = 5; i < sizeof big - 1; i += 6)
    big[i] = ' ';
  big[sizeof big - 1] = '\0';
  CHECK_OK(ops.turn(&s, 7, 2, &state, big, strlen(big), &t2));
  json_t *m2 = messages(&t2);
  CHECK(json_array_size(m2) == 5);
  const char *last = json_string_value(json_object_get(json_array_get(m2, 4), "content"));
  CHECK(last && im_simpletok_encode(last, strlen(last), NULL, 0) >= 32);
  json_decref(m0);
  json_decref(m1);
  json_decref(m2);
  im_req_spec_cleanup(&t0);
  im_req_spec_cleanup(&t1);
  im_req_spec_cleanup(&t2);
  ops.end(&s, state);
}

static void test_completions_turns(void) {
  struct im_synth sy = make_synth();
  struct im_sessions s = {.synth = &sy, .backend = IM_BACKEND_COMPLETIONS, .turns = 2,
                          .ctx_start = 100, .ctx_end = 300, .min_user = 8};
  struct im_session_ops ops;
  im_sessions_ops(&s, &ops);
  void *state = NULL;
  struct im_req_spec t0, t1;
  CHECK_OK(ops.turn(&s, 0, 0, &state, NULL, 0, &t0));
  CHECK(t0.messages_json == NULL && t0.prompt != NULL);
  CHECK_OK(ops.turn(&s, 0, 1, &state, "reply", 5, &t1));
  CHECK(t1.prompt_len > t0.prompt_len);
  CHECK(memcmp(t1.prompt, t0.prompt, t0.prompt_len) == 0);
  CHECK(strstr(t1.prompt, "\n\nreply\n\n") != NULL);
  /* Another session shares nothing after the run salt. */
  void *other = NULL;
  struct im_req_spec u0;
  CHECK_OK(ops.turn(&s, 1, 0, &other, NULL, 0, &u0));
  CHECK(strcmp(u0.prompt, t0.prompt) != 0);
  im_req_spec_cleanup(&t0);
  im_req_spec_cleanup(&t1);
  im_req_spec_cleanup(&u0);
  ops.end(&s, state);
  ops.end(&s, other);
  ops.end(&s, NULL);
}

static struct im_record rec(uint32_t prompt, int64_t ttft_ms, uint32_t out, enum im_req_kind kind,
                            enum im_errclass e, uint64_t session, uint32_t turn) {
  struct im_record r;
  memset(&r, 0, sizeof r);
  im_record_reset(&r);
  r.kind = kind;
  r.error = e;
  r.prompt_tokens = prompt;
  r.t_start = 0;
  r.t_first = e == IM_EC_NONE ? ttft_ms * 1000000 : -1;
  r.t_last = r.t_first + (int64_t)(out - 1) * 10000000; /* TPOT 10 ms */
  r.output_tokens = out;
  r.session = session;
  r.turn = turn;
  static uint64_t next_id = 1; /* each record its own logical request */
  r.id = r.logical_id = next_id++;
  r.attempt = 1;
  r.n_chunks = e == IM_EC_NONE ? 1 : 0;
  return r;
}

static void test_breakdown(void) {
  CHECK_EQ(im_breakdown_bucket(0), 0);
  CHECK_EQ(im_breakdown_bucket(4095), 0);
  CHECK_EQ(im_breakdown_bucket(4096), 1);
  CHECK_EQ(im_breakdown_bucket(16383), 2);
  CHECK_EQ(im_breakdown_bucket(16384), 3);
  CHECK_EQ(im_breakdown_bucket(32767), 3);
  CHECK_EQ(im_breakdown_bucket(32768), 4);
  CHECK_EQ(im_breakdown_bucket(4000000), 4);
  CHECK_STR(im_breakdown_bucket_name(4), "32K+");
  struct im_record r[6] = {
      rec(1000, 100, 11, IM_KIND_MEASURED, IM_EC_NONE, 1, 1),
      rec(5000, 200, 11, IM_KIND_MEASURED, IM_EC_NONE, 1, 2),
      rec(5001, 300, 11, IM_KIND_MEASURED, IM_EC_NONE, 2, 1),
      rec(40000, 900, 11, IM_KIND_MEASURED, IM_EC_NONE, 2, 2),
      rec(6000, 5000, 11, IM_KIND_WARMUP, IM_EC_NONE, 3, 1),  /* not counted */
      rec(7000, 0, 0, IM_KIND_MEASURED, IM_EC_HTTP_5XX, 3, 2), /* a failed turn */
  };
  r[2].content_class = IM_CLASS_CODE;
  struct im_summary_config sc;
  memset(&sc, 0, sizeof sc);
  sc.percentiles[0] = 50;
  sc.percentiles[1] = 99;
  sc.n_percentiles = 2;
  struct im_population pop;
  struct im_breakdown bd;
  CHECK_OK(im_population_build(r, 6, 0, 0, &pop));
  CHECK_OK(im_breakdown_compute(&pop, &sc, &bd));
  json_t *b = im_breakdown_context_json(&bd, &sc);
  CHECK(json_array_size(b) == IM_CTX_BUCKETS);
  CHECK_EQ(json_integer_value(json_object_get(json_array_get(b, 0), "n")), 1);
  CHECK_EQ(json_integer_value(json_object_get(json_array_get(b, 1), "n")), 2);
  CHECK_EQ(json_integer_value(json_object_get(json_array_get(b, 2), "n")), 0);
  CHECK_EQ(json_integer_value(json_object_get(json_array_get(b, 4), "n")), 1);
  json_t *t1 = json_object_get(json_object_get(json_array_get(b, 1), "ttft_ms"), "p99");
  CHECK_NEAR(json_real_value(t1), 300.0, 1e-9);
  json_t *tp = json_object_get(json_object_get(json_array_get(b, 4), "tpot_ms"), "p50");
  CHECK_NEAR(json_real_value(tp), 10.0, 1e-9);
  CHECK(json_is_null(json_object_get(json_array_get(b, 2), "ttft_ms")));
  /* 900 ms over 40,000 uncached tokens. */
  json_t *pt = json_object_get(json_object_get(json_array_get(b, 4), "ttft_per_uncached_token_ms"), "p50");
  CHECK_NEAR(json_real_value(pt), 900.0 / 40000.0, 1e-12);
  json_decref(b);
  /* Long context (docs/metrics.md §9): TTFT per uncached token 100/1000 in
   * 0-4K, 900/40000 in 32K+: growth 0.0225 / 0.1 - 1 = -0.775, not flagged. */
  CHECK_EQ(bd.lc_short_bucket, 0);
  CHECK_EQ(bd.lc_long_bucket, 4);
  CHECK_NEAR(bd.lc_growth, 0.0225 / 0.1 - 1.0, 1e-12);
  CHECK(!bd.lc_flag);
  json_t *c = im_breakdown_class_json(&bd, &sc);
  CHECK_EQ(json_integer_value(json_object_get(json_object_get(c, "code"), "n")), 1);
  CHECK_EQ(json_integer_value(json_object_get(json_object_get(c, "text"), "n")), 0);
  json_decref(c);
  /* The warm-up turn of session 3 counts in no figure (population rule);
   * its failed second turn still makes it a session. */
  json_t *s = im_breakdown_sessions_json(&bd);
  CHECK_EQ(json_integer_value(json_object_get(s, "sessions")), 3);
  CHECK_EQ(json_integer_value(json_object_get(s, "turns_completed")), 4);
  CHECK_EQ(json_integer_value(json_object_get(s, "turns_failed")), 1);
  CHECK_EQ(json_integer_value(json_object_get(s, "max_turn")), 2);
  CHECK_EQ(json_integer_value(json_object_get(s, "context_tokens_max")), 40000);
  json_decref(s);
  im_population_cleanup(&pop);
}

int main(void) {
  test_growth_parse();
  test_targets();
  test_chat_turns(false);
  test_chat_turns(true);
  test_completions_turns();
  test_breakdown();
  return CHECK_DONE();
}
