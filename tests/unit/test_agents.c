/* Tests of reasoning and agent workloads (docs/agents.md): the request
 * fields (decode and encode), the simulated server's reasoning profile and
 * the reasoning figures. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/agents.h"
#include "analyze/cancel.h"
#include "analyze/reasoning.h"
#include "check.h"
#include "core/buf.h"
#include "core/rng.h"
#include "model/perf.h"
#include "proto/json_check.h"
#include "proto/oai_api.h"
#include "proto/oai_api_ext.h"
#include "proto/oai_chunk.h"
#include "proto/oai_request.h"
#include "proto/sse.h"
#include "serve/toolcalls.h"
#include "serve/lora.h"
#include "serve/reasoning.h"
#include "workload/agent.h"

static char msg[256];

static enum im_err decode(const char *body, struct im_api_req *r) {
  return im_api_decode(IM_API_CHAT, body, strlen(body), r, msg, sizeof msg);
}

#define MSGS "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"

static void test_decode_reasoning_fields(void) {
  struct im_api_req r;
  CHECK_OK(decode("{" MSGS "}", &r));
  CHECK_EQ(r.effort, IM_EFFORT_UNSET);
  CHECK_EQ(r.thinking, 0);
  im_api_req_cleanup(&r);
  /* DeepSeek API: thinking {type}; its reasoning_effort names. */
  CHECK_OK(
      decode("{" MSGS ",\"reasoning_effort\":\"max\",\"thinking\":{\"type\":\"disabled\"}}", &r));
  CHECK_EQ(r.effort, IM_EFFORT_MAX);
  CHECK_EQ(r.thinking, -1);
  im_api_req_cleanup(&r);
  /* vLLM: chat_template_kwargs.thinking (DeepSeek-V3.1), enable_thinking (Qwen3). */
  CHECK_OK(decode("{" MSGS
                  ",\"reasoning_effort\":\"minimal\",\"chat_template_kwargs\":{\"thinking\":true}}",
                  &r));
  CHECK_EQ(r.effort, IM_EFFORT_LOW);
  CHECK_EQ(r.thinking, 1);
  im_api_req_cleanup(&r);
  CHECK_OK(decode("{" MSGS ",\"chat_template_kwargs\":{\"enable_thinking\":false}}", &r));
  CHECK_EQ(r.thinking, -1);
  im_api_req_cleanup(&r);
  /* Errors name the field. */
  CHECK_EQ(decode("{" MSGS ",\"reasoning_effort\":\"extreme\"}", &r), IM_INVAL);
  CHECK(strstr(msg, "reasoning_effort") != NULL);
  CHECK_EQ(decode("{" MSGS ",\"thinking\":{\"type\":\"maybe\"}}", &r), IM_INVAL);
  CHECK(strstr(msg, "thinking") != NULL);
  CHECK_EQ(decode("{" MSGS ",\"chat_template_kwargs\":{\"thinking\":1}}", &r), IM_INVAL);
  CHECK(strstr(msg, "chat_template_kwargs.thinking") != NULL);
}

static void test_decode_tools_and_format(void) {
  struct im_api_req r;
  CHECK_OK(
      decode("{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},"
             "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\","
             "\"type\":\"function\",\"function\":{\"name\":\"search\",\"arguments\":\"{}\"}}]},"
             "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"r\"}],"
             "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"search\","
             "\"parameters\":{\"type\":\"object\"}}},{\"type\":\"function\",\"function\":"
             "{\"name\":\"fetch\"}}],"
             "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\","
             "\"schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}}}}",
             &r));
  CHECK_EQ(r.n_tools, 2);
  CHECK_STR(r.tool_name, "search");
  CHECK_EQ(r.n_tool_results, 1);
  CHECK_EQ(r.response_format, IM_RESP_JSON_SCHEMA);
  CHECK_STR(r.schema_json, "{\"properties\":{\"a\":{\"type\":\"string\"}},\"type\":\"object\"}");
  im_api_req_cleanup(&r);
  CHECK_OK(decode("{" MSGS ",\"response_format\":{\"type\":\"json_object\"}}", &r));
  CHECK_EQ(r.response_format, IM_RESP_JSON_OBJECT);
  im_api_req_cleanup(&r);
  CHECK_EQ(decode("{" MSGS ",\"tools\":[{\"type\":\"function\"}]}", &r), IM_INVAL);
  CHECK(strstr(msg, "tools[0]") != NULL);
  CHECK_EQ(decode("{" MSGS ",\"response_format\":{\"type\":\"yaml\"}}", &r), IM_INVAL);
  CHECK(strstr(msg, "response_format.type") != NULL);
}

/* What the load engine sends is what the server decodes. */
static void test_encode_round_trip(void) {
  struct im_buf b;
  im_buf_init(&b, IM_TEST_BUF_MAX);
  struct im_oai_body q = {.model = "m",
                          .chat = true,
                          .prompt = "hello",
                          .prompt_len = 5,
                          .max_tokens = 8,
                          .temperature = NAN,
                          .top_p = NAN,
                          .reasoning_effort = "high",
                          .thinking = -1,
                          .run_json = "{\"response_format\":{\"type\":\"json_object\"}}",
                          .extra_json = "{\"user\":\"u\"}"};
  CHECK_OK(im_oai_body_encode(&q, &b));
  CHECK(strstr(b.data, "\"chat_template_kwargs\":{\"thinking\":false}") != NULL);
  struct im_api_req r;
  CHECK_OK(im_api_decode(IM_API_CHAT, b.data, b.len, &r, msg, sizeof msg));
  CHECK_EQ(r.effort, IM_EFFORT_HIGH);
  CHECK_EQ(r.thinking, -1);
  CHECK_EQ(r.response_format, IM_RESP_JSON_OBJECT);
  CHECK_STR(r.user, "u");
  im_api_req_cleanup(&r);
  im_buf_cleanup(&b);
}

/* Mean reasoning tokens of n draws (a fixed seed: deterministic). */
static double mean_reasoning(const struct im_reasoning_ask *a, uint32_t drawn, uint32_t max) {
  const struct im_profile *p = im_profile_find("deepseek-r1-8xh200");
  struct im_rng rng;
  im_rng_seed(&rng, 42);
  double sum = 0;
  for (int i = 0; i < 2000; i++) {
    uint32_t r, total;
    bool capped = false;
    im_reasoning_split(&rng, p, a, drawn, max, false, &r, &total, &capped);
    if (r > total || total > max || (r == total && r < max))
      return -1; /* max_tokens holds; no answer only when the chain reached it */
    sum += r;
  }
  return sum / 2000;
}

static void test_reasoning_profile(void) {
  CHECK_EQ(im_reasoning_difficulty(100, false), 0);
  CHECK_EQ(im_reasoning_difficulty(100, true), 1);
  CHECK_EQ(im_reasoning_difficulty(4000, false), 1);
  CHECK_EQ(im_reasoning_difficulty(20000, false), 2);
  struct im_reasoning_ask easy = {IM_EFFORT_UNSET, 0, 200, false, 1.0};
  struct im_reasoning_ask hard = easy, hot = easy, cold = easy, off = easy, high = easy;
  hard.n_prompt = 20000;
  hot.temperature = 2.0;
  cold.temperature = 0.0;
  off.thinking = -1;
  high.effort = IM_EFFORT_HIGH;
  double e = mean_reasoning(&easy, 1000, 1u << 20), h = mean_reasoning(&hard, 1000, 1u << 20);
  /* The reference point: share 0.7 of 1000 at difficulty factor 0.6 -> ~420. */
  CHECK_NEAR(e, 420, 30);
  CHECK_NEAR(h / e, 3.0, 0.3); /* 1.8 / 0.6 */
  CHECK_NEAR(mean_reasoning(&hot, 1000, 1u << 20) / mean_reasoning(&cold, 1000, 1u << 20),
             1.4 / 0.6, 0.25);
  CHECK_NEAR(mean_reasoning(&high, 1000, 1u << 20) / e, 1.6, 0.15);
  CHECK_EQ(mean_reasoning(&off, 1000, 1u << 20), 0);
  /* max_tokens bounds reasoning + answer; a chain that reaches it leaves
   * no answer (all reasoning), one that does not leaves one. */
  CHECK(mean_reasoning(&hard, 1000, 300) > 0);
  {
    const struct im_profile *r1 = im_profile_find("deepseek-r1-8xh200");
    struct im_rng rng1;
    im_rng_seed(&rng1, 7);
    int all = 0, eos_all = 0;
    for (int i = 0; i < 200; i++) {
      uint32_t rr, tot;
      bool cap = false;
      im_reasoning_split(&rng1, r1, &hard, 1000, 8, false, &rr, &tot, &cap);
      all += rr == tot && tot == 8;
      im_reasoning_split(&rng1, r1, &hard, 1000, 8, true, &rr, &tot, &cap);
      eos_all += rr == tot;
    }
    CHECK(all > 100);
    CHECK_EQ(eos_all, 0);
  }
  /* A profile without reasoning never reasons. */
  const struct im_profile *v3 = im_profile_find("deepseek-v3-8xh200");
  struct im_rng rng;
  im_rng_seed(&rng, 1);
  uint32_t r = 9, total = 0;
  bool capped = false;
  im_reasoning_split(&rng, v3, &hard, 500, 1000, false, &r, &total, &capped);
  CHECK_EQ(r, 0);
  CHECK_EQ(total, 500);
  CHECK(!capped);
}

/* A record of n one-token chunks, 10 ms apart from t_first; the answer
 * starts at chunk a (a >= n: none). */
static void make(struct im_record *r, uint64_t id, uint32_t prompt, uint32_t n, uint32_t a,
                 uint32_t usage_reasoning) {
  im_record_reset(r);
  r->id = r->logical_id = id;
  r->attempt = 1;
  r->t_sched = r->t_dispatch = r->t_start = 1000000;
  r->t_first = r->t_start + 50000000; /* 50 ms */
  for (uint32_t i = 0; i < n; i++)
    CHECK_OK(im_record_add_chunk(r, r->t_first + (int64_t)i * 10000000, 1));
  r->t_last = r->t_first + (int64_t)(n - 1) * 10000000;
  r->t_answer = a < n ? r->t_first + (int64_t)a * 10000000 : -1;
  r->output_tokens = n;
  r->prompt_tokens = prompt;
  r->reasoning_tokens = usage_reasoning;
  snprintf(r->finish_reason, sizeof r->finish_reason, "stop");
}

static void test_reasoning_figures(void) {
  struct im_record recs[4];
  memset(recs, 0, sizeof recs);
  make(&recs[0], 1, 100, 11, 6, 0);     /* 6 reasoning tokens from the stream, 5 answer */
  make(&recs[1], 2, 40000, 21, 11, 12); /* usage says 12 */
  make(&recs[2], 3, 100, 5, 0, 0);      /* no reasoning: not counted */
  make(&recs[3], 4, 100, 4, 9, 0);      /* answer never came: all reasoning */
  recs[3].reasoning_tokens = 4;
  struct im_population pop;
  CHECK_OK(im_population_build(recs, 4, 0, INT64_MAX, &pop));
  struct im_summary_config sc;
  im_summary_config_default(&sc);
  struct im_reasoning r;
  CHECK_OK(im_reasoning_compute(&pop, &sc, &r));
  CHECK_EQ(r.completed, 4);
  CHECK_EQ(r.n, 3);
  CHECK_EQ(r.tokens_from_usage, 2);
  CHECK_EQ(r.no_answer, 1);
  CHECK_EQ(r.ctx[0].n, 2);
  CHECK_EQ(r.ctx[4].n, 1);
  /* Request 2: ttfa = 50 + 110 ms; the reasoning phase 10 gaps of 10 ms over 10. */
  CHECK_NEAR(r.ctx[0].ttft.p50, 50.0, 1e-9);
  CHECK_NEAR(r.ctx[4].ttfa.p50, 50.0 + 110.0, 1e-9);
  CHECK_NEAR(r.ctx[4].reasoning_tokens.p50, 12, 1e-9);
  CHECK_NEAR(r.ctx[4].answer_tokens.p50, 9, 1e-9);
  CHECK_NEAR(r.ctx[4].tpot_reasoning.p50, 10.0, 1e-6);
  CHECK_NEAR(r.ctx[4].tpot_answer.p50, 10.0, 1e-6);
  /* Share: 110 ms of reasoning over an E2E of 50 + 200 ms. */
  CHECK_NEAR(r.ctx[4].reasoning_share.p50, 110.0 / 250.0, 1e-9);
  CHECK_EQ(r.all.ttfa.n, 2); /* the unanswered request has no TTFA */
  CHECK_EQ(r.all.tpot_answer.n, 2);
  im_population_cleanup(&pop);
  for (int i = 0; i < 4; i++)
    im_record_cleanup(&recs[i]);
}

/* An agent chain's turns, as the loader would send them, decode on the
 * server side with tools offered, the tool calls echoed with their ids and
 * tool_choice "none" at the last hop. */
static void test_agent_turns(void) {
  struct im_synth sy;
  memset(&sy, 0, sizeof sy);
  sy.input_len = 50;
  sy.output_len = 16;
  sy.temperature = NAN;
  sy.top_p = NAN;
  sy.seed = 7;
  snprintf(sy.salt, sizeof sy.salt, "salt");
  struct im_agents ag = {.synth = &sy, .hops = 2, .tool_result_len = 40, .tool_latency_ns = 1};
  struct im_session_ops ops;
  im_agents_ops(&ag, &ops);
  CHECK_EQ(ops.turns, 3);
  CHECK(ops.agent);
  void *state = NULL;
  struct im_req_spec spec;
  struct im_buf b;
  im_buf_init(&b, IM_TEST_BUF_MAX);
  struct im_api_req r;
  /* The answer as the loader captures it: content, NUL, tool_calls deltas. */
  static const char answer[] =
      "ok\0[{\"index\":0,\"id\":\"chatcmpl-tool-1\",\"type\":\"function\",\"function\":"
      "{\"name\":\"search\",\"arguments\":\"{\\\"query\\\":\"}}]\n"
      "[{\"index\":0,\"function\":{\"arguments\":\"\\\"x\\\"}\"}}]\n";
  struct im_agent_call calls[IM_AGENT_MAX_CALLS];
  CHECK_EQ(im_agent_parse_calls(answer, sizeof answer - 1, calls), 1);
  CHECK_STR(calls[0].id, "chatcmpl-tool-1");
  CHECK_STR(calls[0].name, "search");
  CHECK_STR(calls[0].arguments, "{\"query\":\"x\"}");
  im_agent_calls_free(calls, IM_AGENT_MAX_CALLS);
  uint32_t prev_tokens = 0;
  for (uint32_t turn = 0; turn < 3; turn++) {
    CHECK_OK(
        ops.turn(&ag, 0, turn, &state, turn ? answer : NULL, turn ? sizeof answer - 1 : 0, &spec));
    CHECK_EQ(spec.turn, turn + 1);
    if (turn) /* a tool result of 40 tokens (and the echoed call) per hop */
      CHECK_INT(spec.prompt_tokens, >=, prev_tokens + 40);
    prev_tokens = spec.prompt_tokens;
    CHECK(!spec.ignore_eos);
    struct im_oai_body q = {.model = "m",
                            .chat = true,
                            .messages_json = spec.messages_json,
                            .extra_json = spec.extra_json,
                            .max_tokens = spec.max_tokens,
                            .temperature = NAN,
                            .top_p = NAN};
    im_buf_reset(&b);
    CHECK_OK(im_oai_body_encode(&q, &b));
    CHECK_OK(im_api_decode(IM_API_CHAT, b.data, b.len, &r, msg, sizeof msg));
    CHECK_EQ(r.n_tools, 2);
    CHECK_STR(r.tool_name, "search");
    CHECK_EQ(r.n_tool_results, turn);
    CHECK_EQ(r.tool_choice_none, turn == 2);
    CHECK_EQ(r.n_messages, 1 + 2 * turn);
    if (turn)
      CHECK(strstr(b.data, "\"tool_call_id\":\"chatcmpl-tool-1\"") != NULL);
    im_api_req_cleanup(&r);
    im_req_spec_cleanup(&spec);
  }
  ops.end(&ag, state);
  im_buf_cleanup(&b);
}

/* A vLLM-shaped tool-call stream: every tool_calls delta is token-bearing,
 * and the deltas captured as the loader captures them (workload/spec.h)
 * give back the whole call. */
struct capture {
  struct im_oai_chunk chunk;
  struct im_buf answer;
  int tool_chunks;
  char finish[32];
};

static enum im_err on_event(void *ud, const struct im_sse_event *ev) {
  struct capture *c = ud;
  if (ev->kind != IM_SSE_EVENT)
    return IM_OK;
  CHECK_OK(im_oai_chunk_decode(&c->chunk, ev->data, ev->data_len));
  const struct im_oai_chunk *k = &c->chunk;
  if (k->finish_reason.ptr)
    snprintf(c->finish, sizeof c->finish, "%.*s", (int)k->finish_reason.len, k->finish_reason.ptr);
  if (k->kind != IM_OAI_CHUNK || !k->n_tool_calls)
    return IM_OK;
  CHECK_EQ(k->cls, IM_OAI_TOKENS);
  if (!c->tool_chunks++)
    CHECK_OK(im_buf_append(&c->answer, "", 1));
  CHECK_OK(im_buf_append(&c->answer, k->tool_calls_json.ptr, k->tool_calls_json.len));
  CHECK_OK(im_buf_append(&c->answer, "\n", 1));
  return IM_OK;
}

static void test_vllm_tool_stream(void) {
  FILE *f = fopen("tests/fixtures/streams/vllm_tool_calls.sse", "rb");
  CHECK(f != NULL);
  if (!f)
    return;
  char data[8192];
  size_t n = fread(data, 1, sizeof data, f);
  fclose(f);
  struct capture c = {0};
  im_oai_chunk_init(&c.chunk, 0);
  im_buf_init(&c.answer, IM_TEST_BUF_MAX);
  struct im_sse sse;
  im_sse_init(&sse, NULL, on_event, &c);
  /* Byte by byte: the capture does not depend on how reads split. */
  for (size_t i = 0; i < n; i++)
    CHECK_OK(im_sse_feed(&sse, data + i, 1));
  CHECK_OK(im_sse_finish(&sse));
  CHECK_EQ(c.tool_chunks, 4);
  CHECK_STR(c.finish, "tool_calls");
  struct im_agent_call calls[IM_AGENT_MAX_CALLS];
  CHECK_EQ(im_agent_parse_calls(c.answer.data, c.answer.len, calls), 1);
  CHECK_STR(calls[0].id, "chatcmpl-tool-9f2c4d1e6a7b4c3d");
  CHECK_STR(calls[0].name, "search");
  CHECK_STR(calls[0].arguments, "{\"query\": \"weather in Oslo\"}");
  im_agent_calls_free(calls, IM_AGENT_MAX_CALLS);
  im_sse_cleanup(&sse);
  im_oai_chunk_cleanup(&c.chunk);
  im_buf_cleanup(&c.answer);
}

/* Cancelled requests: their own outcome, in no latency figure, counted. */
static void test_cancel_figures(void) {
  struct im_record recs[3];
  memset(recs, 0, sizeof recs);
  make(&recs[0], 1, 100, 10, 3, 0);
  make(&recs[1], 2, 100, 4, 9, 0);
  recs[1].kind = IM_KIND_CANCELLED;
  recs[1].t_end = recs[1].t_start + 80000000; /* left after 80 ms */
  make(&recs[2], 3, 100, 6, 9, 0);
  recs[2].kind = IM_KIND_WARMUP;
  struct im_population pop;
  CHECK_OK(im_population_build(recs, 3, 0, INT64_MAX, &pop));
  CHECK_EQ(pop.req[1].outcome, IM_OUTCOME_CANCELLED);
  struct im_summary_config sc;
  im_summary_config_default(&sc);
  struct im_cancel_figs c;
  CHECK_OK(im_cancel_compute(&pop, &sc, &c));
  CHECK_EQ(c.requests, 2);
  CHECK_EQ(c.cancelled, 1);
  CHECK_NEAR(c.share, 0.5, 1e-12);
  CHECK_NEAR(c.after_ms.p50, 80.0, 1e-9);
  CHECK_NEAR(c.tokens.p50, 4, 1e-9);
  struct im_reasoning r;
  CHECK_OK(im_reasoning_compute(&pop, &sc, &r));
  CHECK_EQ(r.completed, 1); /* the cancelled one is not completed */
  im_population_cleanup(&pop);
  for (int i = 0; i < 3; i++)
    im_record_cleanup(&recs[i]);
}

/* Chains from records: hops, final answers, model vs tool time. */
static void test_agent_figures(void) {
  struct im_record recs[5];
  memset(recs, 0, sizeof recs);
  for (int i = 0; i < 5; i++) {
    make(&recs[i], (uint64_t)i + 1, 100, 5, 0, 0);
    recs[i].tools = 2;
    recs[i].session = i < 3 ? 1 : 2;
    recs[i].turn = i < 3 ? (uint32_t)i + 1 : (uint32_t)i - 2;
    snprintf(recs[i].finish_reason, sizeof recs[i].finish_reason, "%s",
             (i < 2 || i == 3) ? "tool_calls" : "stop");
  }
  /* Chain 1: turns 100 ms apart in time (each 90 ms long); chain 2's
   * second turn failed. */
  for (int i = 0; i < 3; i++) {
    int64_t shift = (int64_t)i * 200000000;
    recs[i].t_start += shift;
    recs[i].t_first += shift;
    recs[i].t_last += shift;
    if (recs[i].t_answer >= 0)
      recs[i].t_answer += shift;
  }
  recs[4].error = IM_EC_HTTP_5XX;
  struct im_population pop;
  CHECK_OK(im_population_build(recs, 5, 0, INT64_MAX, &pop));
  struct im_summary_config sc;
  im_summary_config_default(&sc);
  struct im_agent_figs f;
  CHECK_OK(im_agents_compute(&pop, &sc, &f));
  CHECK_EQ(f.turns, 5);
  CHECK_EQ(f.tool_calls, 3);
  CHECK_EQ(f.chains, 2);
  CHECK_EQ(f.chains_complete, 1);
  CHECK_EQ(f.chains_failed, 1);
  CHECK_EQ(f.max_hop, 2);
  CHECK_EQ(f.hop[0].n, 2);
  CHECK_EQ(f.hop[1].n, 1);
  CHECK_NEAR(f.hop[0].tool_call.p50, 90.0, 1e-9); /* 50 ms + 4 gaps of 10 ms */
  CHECK_EQ(f.final.n, 1);
  /* Chain 1: 2 x 200 ms + 90 ms end to end, 3 x 90 ms in the model. */
  CHECK_NEAR(f.e2e.p50, 490.0, 1e-9);
  CHECK_NEAR(f.model.p50, 270.0, 1e-9);
  CHECK_NEAR(f.tool.p50, 220.0, 1e-9);
  CHECK_NEAR(f.hops.p50, 2, 1e-9);
  im_population_cleanup(&pop);
  for (int i = 0; i < 5; i++)
    im_record_cleanup(&recs[i]);
}

static void test_json_check(void) {
  char why[128];
  static const char schema[] =
      "{\"type\":\"object\",\"properties\":{\"t\":{\"type\":\"string\"},\"n\":{\"type\":"
      "\"integer\"},\"c\":{\"enum\":[\"a\",\"b\"]},\"l\":{\"type\":\"array\",\"items\":"
      "{\"type\":\"number\"}}},\"required\":[\"t\"],\"additionalProperties\":false}";
#define OK(text, sch) CHECK(im_json_conforms(text, strlen(text), sch, why, sizeof why))
#define BAD(text, sch, frag)                                                                       \
  do {                                                                                             \
    CHECK(!im_json_conforms(text, strlen(text), sch, why, sizeof why));                            \
    CHECK(strstr(why, frag) != NULL);                                                              \
  } while (0)
  OK("{\"a\": 1}", NULL);
  BAD("[1]", NULL, "expected an object");
  BAD("{\"answer\": \"cut", NULL, "not JSON");
  OK("{\"t\":\"x\",\"n\":3,\"c\":\"b\",\"l\":[1,2.5]}", schema);
  BAD("{\"n\":3}", schema, "required key \"t\"");
  BAD("{\"t\":\"x\",\"n\":3.5}", schema, "/n: expected integer");
  BAD("{\"t\":\"x\",\"c\":\"z\"}", schema, "/c: not one of");
  BAD("{\"t\":\"x\",\"l\":[1,\"2\"]}", schema, "/l/1: expected number");
  BAD("{\"t\":\"x\",\"zz\":1}", schema, "/zz: not allowed");
  BAD("{}", "{not json", "the schema is not JSON");
#undef OK
#undef BAD
}

/* serve's JSON answers conform to the schema they were shaped from. */
static void test_serve_json_shape(void) {
  struct im_api_req r;
  CHECK_OK(decode("{" MSGS ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{"
                  "\"schema\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"},"
                  "\"t\":{\"type\":\"string\"},\"b\":{\"type\":\"boolean\"}},\"required\":"
                  "[\"n\",\"t\",\"b\"],\"additionalProperties\":false}}}}",
                  &r));
  struct im_agent_policy pol;
  im_agent_policy_default(&pol);
  struct im_rng rng;
  im_rng_seed(&rng, 3);
  struct im_agent_answer a;
  uint32_t target = 9;
  CHECK_OK(im_agent_plan(&pol, &r, &rng, &a, &target));
  CHECK(a.json && !a.tool);
  CHECK_EQ(target, 0);
  char text[512];
  snprintf(text, sizeof text, "%s%s%s", a.prefix, "a \\\"quoted\\\" word", a.suffix);
  char why[128] = "";
  CHECK(im_json_conforms(text, strlen(text), r.schema_json, why, sizeof why));
  CHECK_STR(why, "");
  im_agent_answer_cleanup(&a);
  im_api_req_cleanup(&r);
}

/* LoRA: max_loras distinct adapters a batch, swaps when the set changes. */
static void test_lora(void) {
  struct im_lora_config c;
  im_lora_config_default(&c);
  char spec[] = "a=/p/a,b=/p/b, c=/p/c";
  char err[128];
  CHECK_EQ(im_lora_config_parse(&c, spec, err, sizeof err), 0);
  CHECK_EQ(c.n, 3);
  CHECK_STR(c.paths[2], "/p/c");
  char dup[] = "a=/x,a=/y";
  struct im_lora_config d;
  im_lora_config_default(&d);
  CHECK_EQ(im_lora_config_parse(&d, dup, err, sizeof err), -1);
  CHECK(strstr(err, "twice") != NULL);
  c.max_loras = 1;
  c.step_cost_s = 0.001;
  c.swap_s = 0.1;
  struct im_lora *l;
  CHECK_OK(im_lora_new(&l, &c));
  CHECK_EQ(im_lora_find(l, "b"), 2);
  CHECK_EQ(im_lora_find(l, "deepseek-v3"), 0);
  /* Step 1: a is admitted, b is skipped, the base model always fits. */
  im_lora_begin(l);
  CHECK(im_lora_admit(l, 1));
  CHECK(!im_lora_admit(l, 2));
  CHECK(im_lora_admit(l, 0));
  CHECK(im_lora_admit(l, 1));
  CHECK_NEAR(im_lora_cost(l), 0.001 + 0.1, 1e-12); /* a swapped in */
  /* Step 2: a still running: no swap. */
  im_lora_begin(l);
  im_lora_note(l, 1);
  CHECK_NEAR(im_lora_cost(l), 0.001, 1e-12);
  /* Step 3: a finished; b takes the slot. */
  im_lora_begin(l);
  CHECK(im_lora_admit(l, 2));
  CHECK_NEAR(im_lora_cost(l), 0.001 + 0.1, 1e-12);
  struct im_lora_stats st;
  im_lora_stats(l, &st);
  CHECK_EQ(st.swaps, 2);
  struct im_buf b;
  im_buf_init(&b, 1024);
  uint32_t ids[] = {2, 0, 1, 2};
  CHECK_OK(im_lora_names(l, ids, 4, &b));
  CHECK_STR(b.data, "b,a");
  im_buf_reset(&b);
  CHECK_OK(im_lora_prom(&b, l, "b", "", 12.5));
  CHECK(strstr(b.data, "vllm:lora_requests_info{max_lora=\"1\",running_lora_adapters=\"b\","
                       "waiting_lora_adapters=\"\"} 12.5") != NULL);
  im_buf_cleanup(&b);
  im_lora_free(l);
}

int main(void) {
  test_lora();
  test_json_check();
  test_serve_json_shape();
  test_cancel_figures();
  test_agent_figures();
  test_vllm_tool_stream();
  test_agent_turns();
  test_decode_reasoning_fields();
  test_decode_tools_and_format();
  test_encode_round_trip();
  test_reasoning_profile();
  test_reasoning_figures();
  return CHECK_DONE();
}
