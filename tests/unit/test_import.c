/* record/import.h: other tools' results as records. Small documents
 * written here from the formats' documented fields (docs/import.md); the
 * fuller fixtures are in tests/fixtures/import/ (tests/e2e/test_import.sh). */
#include <string.h>

#include "check.h"
#include "record/import.h"

static enum im_err parse(const char *doc, enum im_import_tool tool, struct im_import *im, char *err,
                         size_t errlen) {
  return im_import_parse(doc, strlen(doc), tool, im, err, errlen);
}

static void test_vllm(void) {
  /* Two requests: one streamed 3 chunks, one failed. */
  const char *doc =
      "{\"date\": \"20261201-120000\", \"backend\": \"openai-chat\", \"model_id\": \"m\","
      " \"request_rate\": \"inf\", \"burstiness\": 1.0, \"max_concurrency\": 8,"
      " \"input_lens\": [100, 50], \"output_lens\": [3, 0], \"ttfts\": [0.25, 0.0],"
      " \"itls\": [[0.01, 0.02], []], \"start_times\": [1000.5, 1000.0],"
      " \"errors\": [\"\", \"Bad Request 400\"], \"generated_texts\": [\"\", \"\"]}";
  struct im_import im;
  char err[256];
  CHECK_OK(parse(doc, IM_IMPORT_AUTO, &im, err, sizeof err));
  CHECK_EQ(im.tool, IM_IMPORT_VLLM);
  CHECK_EQ(im.n, 2);
  CHECK_EQ(im.n_st, 1);
  CHECK_STR(im.model, "m");
  CHECK(isinf(im.rate));
  CHECK_EQ(im.max_concurrency, 8);
  CHECK(im.missing & IM_MISS_SCHEDULE);
  CHECK(!(im.missing & IM_MISS_START_TIMES));
  const struct im_record *a = &im.recs[0], *b = &im.recs[1];
  /* Times relative to the earliest start (request 2's). */
  CHECK_EQ(b->t_start, 0);
  CHECK_EQ(a->t_start, 500000000);
  CHECK_EQ(a->t_first - a->t_start, 250000000);
  CHECK_EQ(a->n_chunks, 3);
  CHECK_EQ(a->chunk_us[2] - a->chunk_us[1], 20000);
  CHECK_EQ(a->t_last - a->t_start, 280000000);
  CHECK_EQ(a->output_tokens, 3);
  CHECK_EQ(a->t_sched, -1);
  CHECK_EQ(b->error, IM_EC_HTTP_4XX); /* the status in the text */
  CHECK_EQ(im__import_errclass("HTTP 503 Service Unavailable", 0), IM_EC_HTTP_5XX);
  CHECK_EQ(im__import_errclass("took 4000 ms, timed out", 0), IM_EC_TIMEOUT_TOTAL);
  CHECK_EQ(im__import_errclass("Traceback ...", 0), IM_EC_ERROR_EVENT);
  CHECK_EQ(b->n_chunks, 0);
  im_import_free(&im);

  /* Summary figures only (no --save-detailed): no records, the figures
   * kept as written (setup keys and text apart), the absence marked. */
  CHECK_EQ(parse("{\"backend\": \"vllm\", \"completed\": 10, \"failed\": 1, \"label\": null, "
                 "\"p99_ttft_ms\": 12.5, \"request_goodput\": null, \"num_prompts\": 11, "
                 "\"request_rate\": \"inf\", \"model_id\": \"m\"}",
                 IM_IMPORT_AUTO, &im, err, sizeof err),
           IM_OK);
  CHECK_EQ(im.n, 0);
  CHECK(im.summary != NULL);
  CHECK_EQ(json_integer_value(json_object_get(im.summary, "completed")), 10);
  CHECK(json_number_value(json_object_get(im.summary, "p99_ttft_ms")) == 12.5);
  CHECK(json_is_null(json_object_get(im.summary, "request_goodput")));
  CHECK(json_object_get(im.summary, "label") == NULL);
  CHECK(json_object_get(im.summary, "num_prompts") == NULL);
  CHECK((im.missing & IM_MISS_RECORDS) != 0);
  CHECK(isinf(im.rate));
  CHECK_EQ(strcmp(im.model, "m"), 0);
  im_import_free(&im);
  /* Neither arrays nor a summary. */
  CHECK_EQ(parse("{\"backend\": \"vllm\", \"input_lens\": [1]}", IM_IMPORT_VLLM, &im, err, sizeof err),
           IM_PARSE);
  CHECK(strstr(err, "completed") != NULL);
  im_import_free(&im);
  /* Arrays of different lengths. */
  CHECK_EQ(parse("{\"ttfts\": [0.1], \"input_lens\": [], \"output_lens\": [1], \"itls\": [[]]}",
                 IM_IMPORT_VLLM, &im, err, sizeof err),
           IM_PARSE);
  CHECK(strstr(err, "input_lens") != NULL);
  im_import_free(&im);
  /* Counts that are not token counts (negative, beyond 32 bits, not
   * numbers) read as absent, 0 (the fuzzer's find: a negative count cast
   * to unsigned). */
  CHECK_OK(parse("{\"ttfts\": [0.1, 0.2, 0.3], \"input_lens\": [-20, 1e12, \"7\"],"
                 " \"output_lens\": [-1, 5e9, 4.7], \"itls\": [[], [], []]}",
                 IM_IMPORT_VLLM, &im, err, sizeof err));
  CHECK_EQ(im.n, 3);
  for (size_t i = 0; i < 3 && im.n == 3; i++)
    CHECK_EQ(im.recs[i].prompt_tokens, 0);
  if (im.n == 3) {
    CHECK_EQ(im.recs[0].output_tokens, 0);
    CHECK_EQ(im.recs[1].output_tokens, 0);
    CHECK_EQ(im.recs[2].output_tokens, 4);
  }
  im_import_free(&im);
}

static void test_guidellm(void) {
  const char *doc =
      "{\"metadata\": {\"version\": 1, \"guidellm_version\": \"0.4.0\"},"
      " \"args\": {\"model\": \"q\"}, \"benchmarks\": [{\"config\": {\"strategy\": "
      "{\"type_\": \"constant\", \"rate\": 2.0}}, \"requests\": {\"successful\": [{"
      "\"request_id\": \"r1\", \"info\": {\"timings\": {\"targeted_start\": 100.0,"
      " \"resolve_start\": 100.002, \"request_start\": 100.003, \"first_token_iteration\": 100.103,"
      " \"last_token_iteration\": 100.503, \"request_end\": 100.504}},"
      " \"prompt_tokens\": 10, \"output_tokens\": 5}], \"errored\": [{\"request_id\": \"r2\","
      " \"info\": {\"error\": \"Connection refused\", \"timings\": {\"targeted_start\": 100.5,"
      " \"request_start\": 100.5}}}], \"incomplete\": []}}]}";
  struct im_import im;
  char err[256];
  CHECK_OK(parse(doc, IM_IMPORT_AUTO, &im, err, sizeof err));
  CHECK_EQ(im.tool, IM_IMPORT_GUIDELLM);
  CHECK_STR(im.version, "0.4.0");
  CHECK_STR(im.model, "q");
  CHECK_STR(im.st[0].label, "constant 2");
  CHECK(!(im.missing & IM_MISS_SCHEDULE));
  CHECK(im.missing & IM_MISS_TOKEN_TIMES);
  CHECK(im.epoch_times);
  const struct im_record *a = &im.recs[0], *b = &im.recs[1];
  CHECK_EQ(a->t_sched, 0);
  CHECK_NEAR((double)a->t_dispatch, 2e6, 1e3); /* 2 ms late (double seconds: < 1 µs off) */
  CHECK_NEAR((double)(a->t_first - a->t_start), 100e6, 1e3);
  CHECK_NEAR((double)(a->t_last - a->t_first), 400e6, 1e3);
  CHECK_EQ(a->output_tokens, 5);
  CHECK_EQ(b->error, IM_EC_CONNECT);
  im_import_free(&im);
  CHECK_EQ(parse("{\"benchmarks\": [{\"requests\": {\"successful\": [{\"info\": {}}]}}]}",
                 IM_IMPORT_AUTO, &im, err, sizeof err),
           IM_PARSE);
  CHECK(strstr(err, "successful[0]") != NULL);
  im_import_free(&im);
}

static void test_aiperf(void) {
  const char *doc =
      "{\"metadata\": {\"x_request_id\": \"a\", \"request_start_ns\": 5000000000,"
      " \"request_end_ns\": 5300000000, \"benchmark_phase\": \"profiling\"}, \"metrics\": {"
      "\"input_sequence_length\": {\"value\": 7, \"unit\": \"tokens\"},"
      " \"time_to_first_token\": {\"value\": 100.0, \"unit\": \"ms\"},"
      " \"inter_chunk_latency\": {\"value\": [10.0, 20.0], \"unit\": \"ms\"},"
      " \"output_sequence_length\": {\"value\": 3, \"unit\": \"tokens\"}}, \"error\": null}\n"
      "{\"metadata\": {\"request_start_ns\": 5100000000, \"was_cancelled\": true}, \"metrics\": {},"
      " \"error\": {\"code\": 499, \"type\": \"RequestCancellationError\"}}\n";
  struct im_import im;
  char err[256];
  CHECK_OK(parse(doc, IM_IMPORT_AUTO, &im, err, sizeof err));
  CHECK_EQ(im.tool, IM_IMPORT_AIPERF);
  CHECK_EQ(im.n, 2);
  CHECK_EQ(im.recs[0].n_chunks, 3);
  CHECK_EQ(im.recs[0].t_last - im.recs[0].t_start, 130000000);
  CHECK_EQ(im.recs[0].prompt_tokens, 7);
  CHECK_STR(im.recs[0].request_id, "a");
  CHECK_EQ(im.recs[1].kind, IM_KIND_CANCELLED);
  CHECK_EQ(im.recs[1].t_start, 100000000);
  im_import_free(&im);
  /* A bad second line is named by its number. */
  CHECK_EQ(parse("{\"metadata\": {\"request_start_ns\": 1}, \"metrics\": {}}\n{\"metadata\": 3, "
                 "\"metrics\": {}}\n",
                 IM_IMPORT_AUTO, &im, err, sizeof err),
           IM_PARSE);
  CHECK(strstr(err, "line 2") != NULL);
  im_import_free(&im);
}

static void test_otlp(void) {
  /* A user request, its retry (same trace), a health check, an internal
   * span; the CLIENT span is dropped because SERVER spans exist. */
  const char *doc =
      "{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": ["
      "{\"traceId\": \"t1\", \"spanId\": \"s1\", \"kind\": 2, \"startTimeUnixNano\": \"1000\","
      " \"endTimeUnixNano\": \"2000\", \"attributes\": [{\"key\": \"http.status_code\","
      " \"value\": {\"intValue\": \"503\"}}]},"
      "{\"traceId\": \"t1\", \"spanId\": \"s2\", \"kind\": \"SPAN_KIND_SERVER\","
      " \"startTimeUnixNano\": \"3000\", \"endTimeUnixNano\": \"9000\", \"attributes\": ["
      "{\"key\": \"retry.attempt\", \"value\": {\"intValue\": \"1\"}},"
      "{\"key\": \"http.response.status_code\", \"value\": {\"intValue\": 200}}]},"
      "{\"traceId\": \"t2\", \"spanId\": \"s3\", \"kind\": 2, \"startTimeUnixNano\": \"500\","
      " \"endTimeUnixNano\": \"600\", \"attributes\": [{\"key\": \"url.path\","
      " \"value\": {\"stringValue\": \"/health\"}}]},"
      "{\"traceId\": \"t1\", \"spanId\": \"s4\", \"kind\": 1, \"startTimeUnixNano\": \"1100\","
      " \"endTimeUnixNano\": \"1200\", \"attributes\": [{\"key\": \"url.path\","
      " \"value\": {\"stringValue\": \"/v1/completions\"}}]},"
      "{\"traceId\": \"t1\", \"spanId\": \"s5\", \"kind\": 3, \"startTimeUnixNano\": \"1100\","
      " \"endTimeUnixNano\": \"1900\", \"attributes\": [{\"key\": \"http.response.status_code\","
      " \"value\": {\"intValue\": \"503\"}}]}]}]}]}";
  struct im_import im;
  char err[256];
  CHECK_OK(parse(doc, IM_IMPORT_AUTO, &im, err, sizeof err));
  CHECK_EQ(im.tool, IM_IMPORT_OTLP);
  CHECK_EQ(im.n, 3);
  CHECK_EQ(im.spans, 5);
  CHECK_EQ(im.spans_skipped, 2);
  /* In time order: health (500), user (1000), retry (3000). */
  CHECK_EQ(im.recs[0].kind, IM_KIND_HEALTH);
  CHECK_EQ(im.recs[1].kind, IM_KIND_MEASURED);
  CHECK_EQ(im.recs[1].error, IM_EC_HTTP_5XX);
  CHECK_EQ(im.recs[2].kind, IM_KIND_RETRY);
  CHECK_EQ(im.recs[2].attempt, 2);
  CHECK_EQ(im.recs[2].logical_id, im.recs[1].id);
  CHECK_EQ(im.recs[2].t_start, 2500);
  CHECK_EQ(im.recs[2].t_first, 8500);
  CHECK(im.missing & IM_MISS_FIRST_TOKEN);
  im_import_free(&im);
  CHECK_EQ(parse("{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [{\"kind\": 1}]}]}]}",
                 IM_IMPORT_AUTO, &im, err, sizeof err),
           IM_PARSE);
  CHECK(strstr(err, "none of 1 spans") != NULL);
  im_import_free(&im);
}

static void test_bad(void) {
  struct im_import im;
  char err[256];
  static const char *const bad[] = {
      "",        "   ", "not json", "[1,2]", "{\"x\": 1}", "{\"ttfts\": ", "{\"benchmarks\": []}",
      "\xff\xfe"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    enum im_err e = parse(bad[i], IM_IMPORT_AUTO, &im, err, sizeof err);
    CHECK(e != IM_OK);
    CHECK(err[0] != '\0');
    im_import_free(&im);
  }
  /* A format asked for that the file is not. */
  CHECK_EQ(parse("{\"benchmarks\": []}", IM_IMPORT_VLLM, &im, err, sizeof err), IM_UNSUPPORTED);
  CHECK(strstr(err, "guidellm") != NULL);
  im_import_free(&im);
  CHECK_EQ(im_import_tool_from_name("aiperf"), IM_IMPORT_AIPERF);
  CHECK_EQ(im_import_tool_from_name("x"), IM_IMPORT_TOOL_COUNT_);
}

int main(void) {
  test_vllm();
  test_guidellm();
  test_aiperf();
  test_otlp();
  test_bad();
  return CHECK_DONE();
}
