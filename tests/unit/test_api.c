/* Tests of the OpenAI request decoder. */
#include "proto/oai_api.h"

#include "check.h"

static char msg[256];

static enum im_err decode(enum im_api_kind kind, const char *body, struct im_api_req *r) {
  return im_api_decode(kind, body, strlen(body), r, msg, sizeof msg);
}

static void test_chat_all_fields(void) {
  struct im_api_req r;
  const char *body =
      "{\"model\": \"llama\", \"messages\": ["
      "{\"role\": \"system\", \"content\": \"be brief\"},"
      "{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"one\"},"
      " {\"type\": \"image_url\", \"image_url\": {\"url\": \"x\"}},"
      " {\"type\": \"text\", \"text\": \"two\"}]},"
      "{\"role\": \"assistant\", \"content\": null},"
      "{\"role\": \"tool\"}],"
      "\"stream\": true, \"stream_options\": {\"include_usage\": true,"
      " \"continuous_usage_stats\": true},"
      "\"max_completion_tokens\": 64, \"max_tokens\": 32, \"min_tokens\": 4,"
      "\"temperature\": 0.5, \"top_p\": 0.9, \"seed\": -7, \"n\": 1, \"ignore_eos\": true,"
      "\"logprobs\": true, \"top_logprobs\": 7,"
      "\"cache_salt\": \"salt\", \"user\": \"u1\", \"tools\": [], \"unknown\": {\"a\": [1]}}";
  CHECK_EQ(decode(IM_API_CHAT, body, &r), IM_OK);
  CHECK_STR(msg, "");
  CHECK_EQ(r.kind, IM_API_CHAT);
  CHECK_STR(r.model, "llama");
  CHECK_EQ(r.n_messages, 4);
  if (r.n_messages == 4) {
    CHECK_STR(r.messages[0].role, "system");
    CHECK_STR(r.messages[0].content, "be brief");
    CHECK_STR(r.messages[1].content, "one\ntwo");
    CHECK_STR(r.messages[2].content, "");
    CHECK_STR(r.messages[3].role, "tool");
    CHECK_STR(r.messages[3].content, "");
  }
  CHECK(r.stream);
  CHECK(r.include_usage);
  CHECK(r.continuous_usage);
  CHECK_EQ(r.max_tokens, 64); /* max_completion_tokens wins */
  CHECK_EQ(r.min_tokens, 4);
  CHECK_NEAR(r.temperature, 0.5, 0);
  CHECK_NEAR(r.top_p, 0.9, 0);
  CHECK(r.has_seed);
  CHECK_EQ(r.seed, -7);
  CHECK(r.ignore_eos);
  CHECK(r.want_logprobs);
  CHECK_EQ(r.logprobs, 7);
  CHECK_STR(r.cache_salt, "salt");
  CHECK_STR(r.user, "u1");
  CHECK(r.prompt == NULL && r.prompt_ids == NULL);
  im_api_req_cleanup(&r);
  CHECK(r.messages == NULL && r.model == NULL);
  im_api_req_cleanup(&r);
  im_api_req_cleanup(NULL);
}

static void test_defaults(void) {
  struct im_api_req r;
  CHECK_EQ(decode(IM_API_COMPLETIONS, "{\"prompt\": \"hi\"}", &r), IM_OK);
  CHECK_STR(r.prompt, "hi");
  CHECK(r.model == NULL);
  CHECK(!r.stream && !r.include_usage && !r.continuous_usage);
  CHECK_EQ(r.max_tokens, -1);
  CHECK_EQ(r.min_tokens, 0);
  CHECK_NEAR(r.temperature, 1.0, 0);
  CHECK_NEAR(r.top_p, 1.0, 0);
  CHECK(!r.has_seed);
  CHECK(!r.ignore_eos);
  CHECK(r.cache_salt == NULL && r.user == NULL && r.prompt_ids == NULL);
  CHECK_EQ(r.n_messages, 0);
  im_api_req_cleanup(&r);

  /* null means absent everywhere. */
  CHECK_EQ(decode(IM_API_CHAT,
                  "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"model\": null,"
                  "\"stream\": null, \"stream_options\": null, \"max_tokens\": null,"
                  "\"max_completion_tokens\": null, \"min_tokens\": null, \"temperature\": null,"
                  "\"top_p\": null, \"seed\": null, \"n\": null, \"ignore_eos\": null,"
                  "\"cache_salt\": null, \"user\": null}",
                  &r),
           IM_OK);
  CHECK(r.model == NULL && !r.stream && r.max_tokens == -1 && !r.has_seed);
  CHECK_NEAR(r.temperature, 1.0, 0);
  im_api_req_cleanup(&r);

  /* Completions: all fields; max_completion_tokens is not a completions field. */
  CHECK_EQ(decode(IM_API_COMPLETIONS,
                  "{\"model\": \"m\", \"prompt\": [\"only\"], \"max_tokens\": 16.0,"
                  "\"max_completion_tokens\": 99, \"stream\": false, \"stream_options\": {},"
                  "\"temperature\": 0, \"top_p\": 1, \"seed\": 9223372036854775807,"
                  "\"ignore_eos\": false, \"n\": 1}",
                  &r),
           IM_OK);
  CHECK_STR(r.prompt, "only");
  CHECK_EQ(r.max_tokens, 16);
  CHECK_NEAR(r.temperature, 0.0, 0);
  CHECK_EQ(r.seed, INT64_MAX);
  im_api_req_cleanup(&r);

  /* Duplicate keys: the last wins, as in Python's json. */
  CHECK_EQ(decode(IM_API_COMPLETIONS, "{\"prompt\": \"a\", \"prompt\": \"b\"}", &r), IM_OK);
  CHECK_STR(r.prompt, "b");
  im_api_req_cleanup(&r);
}

static void test_token_prompts(void) {
  struct im_api_req r;
  CHECK_EQ(decode(IM_API_COMPLETIONS, "{\"prompt\": [1, 2, 2147483647, 0]}", &r), IM_OK);
  CHECK(r.prompt == NULL);
  CHECK_EQ(r.n_prompt_ids, 4);
  if (r.n_prompt_ids == 4) {
    CHECK_EQ(r.prompt_ids[0], 1);
    CHECK_EQ(r.prompt_ids[2], 2147483647);
    CHECK_EQ(r.prompt_ids[3], 0);
  }
  im_api_req_cleanup(&r);
  CHECK_EQ(decode(IM_API_COMPLETIONS, "{\"prompt\": [[5, 6, 7]]}", &r), IM_OK);
  CHECK_EQ(r.n_prompt_ids, 3);
  if (r.n_prompt_ids == 3)
    CHECK_EQ(r.prompt_ids[1], 6);
  im_api_req_cleanup(&r);
}

struct bad_case {
  enum im_api_kind kind;
  const char *body;
  enum im_err want;
  const char *in_msg; /* expected substring of the message */
};

#define MSGS "\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]"
#define CHAT IM_API_CHAT
#define COMP IM_API_COMPLETIONS

static const struct bad_case bad[] = {
    /* Not JSON or not an object. */
    {COMP, "", IM_PARSE, "not valid JSON"},
    {COMP, "{\"prompt\": \"x\"", IM_PARSE, "not valid JSON"},
    {COMP, "{\"prompt\": \"x\"} trailing", IM_PARSE, "not valid JSON"},
    {COMP, "[1, 2]", IM_PARSE, "must be a JSON object"},
    {COMP, "\"str\"", IM_PARSE, "must be a JSON object"},
    {COMP, "null", IM_PARSE, "must be a JSON object"},
    {COMP, "{\"prompt\": \"\\u0000\"}", IM_PARSE, "not valid JSON"},
    {COMP, "{\"prompt\": \"\xff\"}", IM_PARSE, "not valid JSON"},
    {COMP, "{\"prompt\": \"x\", \"max_tokens\": 100000000000000000000000000000}", IM_PARSE,
     "not valid JSON"},
    /* prompt */
    {COMP, "{}", IM_INVAL, "'prompt' is required"},
    {COMP, "{\"prompt\": null}", IM_INVAL, "'prompt' is required"},
    {COMP, "{\"prompt\": \"\"}", IM_INVAL, "'prompt' must not be empty"},
    {COMP, "{\"prompt\": []}", IM_INVAL, "'prompt' must not be empty"},
    {COMP, "{\"prompt\": [[]]}", IM_INVAL, "'prompt' must not be empty"},
    {COMP, "{\"prompt\": 5}", IM_INVAL, "'prompt' must be"},
    {COMP, "{\"prompt\": {}}", IM_INVAL, "'prompt' must be"},
    {COMP, "{\"prompt\": [true]}", IM_INVAL, "'prompt' must be"},
    {COMP, "{\"prompt\": [\"a\", \"b\"]}", IM_INVAL, "only one prompt per request"},
    {COMP, "{\"prompt\": [[1], [2]]}", IM_INVAL, "only one prompt per request"},
    {COMP, "{\"prompt\": [\"a\", [2]]}", IM_INVAL, "'prompt' must be"},
    {COMP, "{\"prompt\": [1, \"a\"]}", IM_INVAL, "'prompt' token ids"},
    {COMP, "{\"prompt\": [1, -1]}", IM_INVAL, "'prompt' token ids"},
    {COMP, "{\"prompt\": [2147483648]}", IM_INVAL, "'prompt' token ids"},
    {COMP, "{\"prompt\": [1.5]}", IM_INVAL, "'prompt' must be"},
    {COMP, "{\"prompt\": [[1, true]]}", IM_INVAL, "'prompt' token ids"},
    /* messages */
    {CHAT, "{}", IM_INVAL, "'messages' is required"},
    {CHAT, "{\"messages\": []}", IM_INVAL, "'messages' must be a non-empty array"},
    {CHAT, "{\"messages\": {}}", IM_INVAL, "'messages' must be a non-empty array"},
    {CHAT, "{\"messages\": [1]}", IM_INVAL, "'messages[0]' must be an object"},
    {CHAT, "{\"messages\": [{\"content\": \"x\"}]}", IM_INVAL, "'messages[0].role'"},
    {CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, {\"role\": 1}]}", IM_INVAL,
     "'messages[1].role' must be a string"},
    {CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": 5}]}", IM_INVAL,
     "'messages[0].content' must be"},
    {CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": [\"text\"]}]}", IM_INVAL,
     "'messages[0].content[0]' must be an object"},
    {CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": [{\"text\": \"a\"}]}]}", IM_INVAL,
     "'messages[0].content[0]' must be an object with a string 'type'"},
    {CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\"}]}]}", IM_INVAL,
     "'messages[0].content[0].text' must be a string"},
    /* The other fields. */
    {CHAT, "{" MSGS ", \"model\": 3}", IM_INVAL, "'model' must be a string"},
    {CHAT, "{" MSGS ", \"logprobs\": 1}", IM_INVAL, "'logprobs' must be a boolean"},
    {CHAT, "{" MSGS ", \"top_logprobs\": 3}", IM_INVAL, "'top_logprobs' needs 'logprobs': true"},
    {CHAT, "{" MSGS ", \"logprobs\": true, \"top_logprobs\": 21}", IM_INVAL,
     "'top_logprobs' must be an integer between 0 and 20"},
    {CHAT, "{" MSGS ", \"logprobs\": true, \"top_logprobs\": -1}", IM_INVAL,
     "'top_logprobs' must be an integer between 0 and 20"},
    {COMP, "{\"prompt\": \"a\", \"logprobs\": true}", IM_INVAL,
     "'logprobs' must be an integer between 0 and 20"},
    {COMP, "{\"prompt\": \"a\", \"logprobs\": 30}", IM_INVAL,
     "'logprobs' must be an integer between 0 and 20"},
    {CHAT, "{" MSGS ", \"stream\": 1}", IM_INVAL, "'stream' must be a boolean"},
    {CHAT, "{" MSGS ", \"stream\": \"true\"}", IM_INVAL, "'stream' must be a boolean"},
    {CHAT, "{" MSGS ", \"stream_options\": true, \"stream\": true}", IM_INVAL,
     "'stream_options' must be an object"},
    {CHAT, "{" MSGS ", \"stream_options\": {\"include_usage\": true}}", IM_INVAL,
     "'stream_options' can only be given when 'stream' is true"},
    {CHAT, "{" MSGS ", \"stream\": true, \"stream_options\": {\"include_usage\": 1}}", IM_INVAL,
     "'stream_options.include_usage' must be a boolean"},
    {CHAT, "{" MSGS ", \"stream\": true, \"stream_options\": {\"continuous_usage_stats\": \"y\"}}",
     IM_INVAL, "'stream_options.continuous_usage_stats' must be a boolean"},
    {CHAT, "{" MSGS ", \"max_tokens\": 0}", IM_INVAL, "'max_tokens' must be a positive integer"},
    {CHAT, "{" MSGS ", \"max_tokens\": -5}", IM_INVAL, "'max_tokens' must be a positive integer"},
    {CHAT, "{" MSGS ", \"max_tokens\": 1.5}", IM_INVAL, "'max_tokens' must be a positive integer"},
    {CHAT, "{" MSGS ", \"max_tokens\": true}", IM_INVAL, "'max_tokens' must be a positive integer"},
    {CHAT, "{" MSGS ", \"max_tokens\": \"5\"}", IM_INVAL,
     "'max_tokens' must be a positive integer"},
    {CHAT, "{" MSGS ", \"max_tokens\": 1e300}", IM_INVAL,
     "'max_tokens' must be a positive integer"},
    {CHAT, "{" MSGS ", \"max_completion_tokens\": 0}", IM_INVAL,
     "'max_completion_tokens' must be a positive integer"},
    {CHAT, "{" MSGS ", \"min_tokens\": -1}", IM_INVAL,
     "'min_tokens' must be a non-negative integer"},
    {CHAT, "{" MSGS ", \"temperature\": 2.5}", IM_INVAL,
     "'temperature' must be a number between 0 and 2"},
    {CHAT, "{" MSGS ", \"temperature\": -0.1}", IM_INVAL, "'temperature' must be a number"},
    {CHAT, "{" MSGS ", \"temperature\": false}", IM_INVAL, "'temperature' must be a number"},
    {CHAT, "{" MSGS ", \"temperature\": 1e400}", IM_PARSE, "not valid JSON"},
    {CHAT, "{" MSGS ", \"top_p\": 0}", IM_INVAL, "'top_p' must be a number greater than 0"},
    {CHAT, "{" MSGS ", \"top_p\": 1.01}", IM_INVAL, "'top_p' must be a number"},
    {CHAT, "{" MSGS ", \"seed\": 1.5}", IM_INVAL, "'seed' must be an integer"},
    {CHAT, "{" MSGS ", \"seed\": \"1\"}", IM_INVAL, "'seed' must be an integer"},
    {CHAT, "{" MSGS ", \"n\": 2}", IM_INVAL, "'n' must be 1"},
    {CHAT, "{" MSGS ", \"n\": 0}", IM_INVAL, "'n' must be"},
    {CHAT, "{" MSGS ", \"ignore_eos\": \"yes\"}", IM_INVAL, "'ignore_eos' must be a boolean"},
    {CHAT, "{" MSGS ", \"cache_salt\": \"\"}", IM_INVAL, "'cache_salt' must be a non-empty string"},
    {CHAT, "{" MSGS ", \"cache_salt\": 5}", IM_INVAL, "'cache_salt' must be a non-empty string"},
    {CHAT, "{" MSGS ", \"user\": []}", IM_INVAL, "'user' must be a string"},
    {COMP, "{\"prompt\": \"x\", \"temperature\": \"hot\"}", IM_INVAL, "'temperature'"},
};

static void test_errors(void) {
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct im_api_req r;
    memset(msg, 0, sizeof msg);
    enum im_err err = decode(bad[i].kind, bad[i].body, &r);
    im_test_checks++;
    if (err != bad[i].want || !strstr(msg, bad[i].in_msg))
      IM__FAIL("case %zu %s: got %d \"%s\", want %d \"%s\"", i, bad[i].body, err, msg, bad[i].want,
               bad[i].in_msg);
    /* Left cleaned up on failure. */
    CHECK(r.model == NULL && r.prompt == NULL && r.prompt_ids == NULL && r.messages == NULL);
    CHECK_EQ(r.n_messages, 0);
    im_api_req_cleanup(&r);
  }
  /* A parse error names the position. */
  struct im_api_req r;
  CHECK_EQ(decode(IM_API_COMPLETIONS, "{\n\"prompt\": tru}", &r), IM_PARSE);
  CHECK(strstr(msg, "line 2") != NULL);
  /* No message buffer is fine, and a short one is truncated. */
  CHECK_EQ(im_api_decode(IM_API_CHAT, "{}", 2, &r, NULL, 0), IM_INVAL);
  char tiny[8];
  CHECK_EQ(im_api_decode(IM_API_CHAT, "{}", 2, &r, tiny, sizeof tiny), IM_INVAL);
  CHECK_EQ(strlen(tiny), 7);
  /* The body need not be NUL-terminated. */
  const char *two = "{\"prompt\": \"ab\"}XYZ";
  CHECK_EQ(im_api_decode(IM_API_COMPLETIONS, two, strlen(two) - 3, &r, msg, sizeof msg), IM_OK);
  CHECK_STR(r.prompt, "ab");
  im_api_req_cleanup(&r);
}

/* Deep nesting in an ignored field must not crash (jansson limits depth). */
static void test_deep_nesting(void) {
  size_t depth = 100000;
  char *b = malloc(2 * depth + 64);
  CHECK(b != NULL);
  if (!b)
    return;
  size_t n = (size_t)sprintf(b, "{\"prompt\": \"x\", \"junk\": ");
  for (size_t i = 0; i < depth; i++)
    b[n++] = '[';
  for (size_t i = 0; i < depth; i++)
    b[n++] = ']';
  b[n++] = '}';
  struct im_api_req r;
  enum im_err err = im_api_decode(IM_API_COMPLETIONS, b, n, &r, msg, sizeof msg);
  CHECK(err == IM_PARSE || err == IM_OK);
  im_api_req_cleanup(&r);
  free(b);
}

int main(void) {
  test_chat_all_fields();
  test_defaults();
  test_token_prompts();
  test_errors();
  test_deep_nesting();
  return CHECK_DONE();
}
