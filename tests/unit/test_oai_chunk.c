/* OpenAI-compatible chunk decoder: unit cases, then every fixture of
 * tests/fixtures/streams/ through im_sse + im_oai_chunk, each chunk also
 * decoded by the jansson reference and compared field by field. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/buf.h"
#include "proto/oai_chunk.h"
#include "proto/oai_encode.h"
#include "proto/oai_logprobs.h"
#include "proto/oai_request.h"
#include "proto/sse.h"

static int str_eq(struct im_oai_str s, const char *want) {
  if (!want)
    return s.ptr == NULL;
  return s.ptr && s.len == strlen(want) && memcmp(s.ptr, want, s.len) == 0;
}

#define CHECK_S(s, want)                                                                           \
  do {                                                                                             \
    struct im_oai_str im__s = (s);                                                                 \
    const char *im__w = (want);                                                                    \
    im_test_checks++;                                                                              \
    if (!str_eq(im__s, im__w))                                                                     \
      IM__FAIL("%s == %s (\"%.*s\"%s vs \"%s\")", #s, #want, (int)im__s.len,                       \
               im__s.ptr ? im__s.ptr : "", im__s.ptr ? "" : " (absent)",                           \
               im__w ? im__w : "(absent)");                                                        \
  } while (0)

static int same_str(struct im_oai_str a, struct im_oai_str b) {
  if (!a.ptr || !b.ptr)
    return !a.ptr && !b.ptr;
  return a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0;
}

/* Decodes with both decoders and checks that they agree. */
static enum im_err decode2(struct im_oai_chunk *c, const char *s, size_t n) {
  struct im_oai_chunk r;
  im_oai_chunk_init(&r, 0);
  enum im_err ej = im__oai_chunk_decode_jansson(&r, s, n);
  enum im_err e = im_oai_chunk_decode(c, s, n);
  if (ej == IM_OK) {
    CHECK_EQ(e, IM_OK);
    CHECK_EQ(c->kind, r.kind);
    CHECK_EQ(c->cls, r.cls);
    CHECK_EQ(c->object, r.object);
    CHECK_EQ(c->n_choices, r.n_choices);
    CHECK_EQ(c->has_choice, r.has_choice);
    CHECK(same_str(c->content, r.content));
    CHECK(same_str(c->text, r.text));
    CHECK(same_str(c->reasoning, r.reasoning));
    CHECK(same_str(c->role, r.role));
    CHECK(same_str(c->finish_reason, r.finish_reason));
    CHECK_EQ(c->n_tool_calls, r.n_tool_calls);
    CHECK_EQ(c->has_usage, r.has_usage);
    CHECK(memcmp(&c->usage, &r.usage, sizeof c->usage) == 0);
    CHECK_EQ(c->has_timings, r.has_timings);
    CHECK(memcmp(&c->timings, &r.timings, sizeof c->timings) == 0);
    CHECK(same_str(c->err_message, r.err_message));
    CHECK(same_str(c->err_type, r.err_type));
    CHECK_EQ(c->err_code_num, r.err_code_num);
  }
  im_oai_chunk_cleanup(&r);
  return e;
}

#define DEC(c, lit) decode2((c), lit, sizeof(lit) - 1)

/* {"a":[[...[1]...]]} with `arrays` brackets: 1 + arrays levels. */
static enum im_err nested(struct im_oai_chunk *c, int arrays) {
  char buf[300];
  size_t n = 0;
  memcpy(buf, "{\"a\":", 5);
  n = 5;
  for (int i = 0; i < arrays; i++)
    buf[n++] = '[';
  buf[n++] = '1';
  for (int i = 0; i < arrays; i++)
    buf[n++] = ']';
  buf[n++] = '}';
  return im_oai_chunk_decode(c, buf, n);
}

static void test_done_and_invalid(void) {
  struct im_oai_chunk c;
  im_oai_chunk_init(&c, 0);
  CHECK_OK(DEC(&c, "[DONE]"));
  CHECK_EQ(c.kind, IM_OAI_DONE);
  CHECK_OK(DEC(&c, " [DONE]\r\n"));
  CHECK_EQ(c.kind, IM_OAI_DONE);
  CHECK_EQ(DEC(&c, "[DONE]x"), IM_PARSE);
  CHECK_EQ(DEC(&c, "[DONE"), IM_PARSE);
  CHECK_EQ(DEC(&c, ""), IM_PARSE);
  CHECK_EQ(DEC(&c, "[]"), IM_PARSE);
  CHECK_EQ(DEC(&c, "\"x\""), IM_PARSE);
  CHECK_EQ(DEC(&c, "{"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{}x"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"a\":}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"a\":1,}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"a\":01}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"a\":1.}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"a\":-}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"a\":tru}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"a\":\"\\x\"}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"a\":\"\\ud800\"}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"a\":\"\\udc00\"}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"a\":\"\x01\"}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"a\":\"\xC0\xAF\"}"), IM_PARSE);     /* overlong */
  CHECK_EQ(DEC(&c, "{\"a\":\"\xED\xA0\x80\"}"), IM_PARSE); /* surrogate */
  CHECK_EQ(DEC(&c, "{\"a\":\"\xF4\x90\x80\x80\"}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"a\":\"\xE2\x82\"}"), IM_PARSE); /* truncated */
  CHECK_OK(DEC(&c, " {} "));
  CHECK_EQ(c.kind, IM_OAI_CHUNK);
  CHECK_EQ(c.cls, IM_OAI_EMPTY);
  /* Nesting: 64 levels are fine, 65 are a limit. */
  CHECK_OK(nested(&c, 63));
  CHECK_EQ(nested(&c, 64), IM_LIMIT);
  im_oai_chunk_cleanup(&c);
  /* Length limit. */
  im_oai_chunk_init(&c, 4);
  CHECK_EQ(im_oai_chunk_decode(&c, "{ } ", 5), IM_LIMIT);
  CHECK_OK(im_oai_chunk_decode(&c, "{ } ", 4));
  im_oai_chunk_cleanup(&c);
  im_oai_chunk_cleanup(NULL);
}

static void test_strings(void) {
  struct im_oai_chunk c;
  im_oai_chunk_init(&c, 0);
  CHECK_OK(DEC(&c, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":"
                   "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\u20ac"
                   "\\ud83d\\ude00\\u0000z\"}}]}"));
  CHECK_EQ(c.content.len, 23);
  CHECK(c.content.ptr && memcmp(c.content.ptr,
                                "a\"b\\c/d\b\f\n\r\t\xC3\xA9\xE2\x82\xAC"
                                "\xF0\x9F\x98\x80\0z",
                                23) == 0);
  CHECK_EQ(c.cls, IM_OAI_TOKENS);
  /* Raw UTF-8 passes through in place; keys with escapes still match. */
  const char raw[] = "{\"choices\":[{\"delta\":{\"con\\u0074ent\":"
                     "\"\xE4\xBD\xA0\xE5\xA5\xBD\","
                     "\"reasoning\":\"\\\"hm\\\"\"}}]}";
  CHECK_OK(decode2(&c, raw, sizeof raw - 1));
  CHECK_S(c.content, "\xE4\xBD\xA0\xE5\xA5\xBD");
  CHECK(c.content.ptr >= raw && c.content.ptr < raw + sizeof raw);
  CHECK_S(c.reasoning, "\"hm\"");
  im_oai_chunk_cleanup(&c);
}

static void test_chunks(void) {
  struct im_oai_chunk c;
  im_oai_chunk_init(&c, 0);
  /* Role only (content ""), then null content: not token-bearing. */
  CHECK_OK(DEC(&c, "{\"object\":\"chat.completion.chunk\",\"choices\":[{"
                   "\"index\":0,\"delta\":{\"role\":\"assistant\","
                   "\"content\":\"\"},\"finish_reason\":null}]}"));
  CHECK_EQ(c.object, IM_OAI_OBJ_CHAT);
  CHECK_EQ(c.cls, IM_OAI_ROLE);
  CHECK_S(c.role, "assistant");
  CHECK_S(c.content, "");
  CHECK_S(c.finish_reason, NULL);
  CHECK(!im_oai_chunk_has_answer(&c));
  /* Key order does not matter: index after delta; index 0 is chosen. */
  CHECK_OK(DEC(&c, "{\"choices\":[{\"delta\":{\"content\":\"B\"},\"index\":1},"
                   "{\"delta\":{\"content\":\"A\"},\"index\":0}]}"));
  CHECK_S(c.content, "A");
  CHECK_EQ(c.n_choices, 2);
  /* Missing index: array position. */
  CHECK_OK(DEC(&c, "{\"choices\":[{\"text\":\"t0\"},{\"text\":\"t1\"}],"
                   "\"object\":\"text_completion\"}"));
  CHECK_S(c.text, "t0");
  CHECK_EQ(c.object, IM_OAI_OBJ_TEXT);
  CHECK(im_oai_chunk_has_answer(&c));
  /* Only a choice with another index: nothing read. */
  CHECK_OK(DEC(&c, "{\"choices\":[{\"index\":1,\"delta\":{\"content\":\"x\"}}]}"));
  CHECK_EQ(c.has_choice, 0);
  CHECK_EQ(c.cls, IM_OAI_EMPTY);
  /* Tool calls. */
  CHECK_OK(DEC(&c, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":"
                   "[{\"index\":0,\"function\":{\"arguments\":\"{\\\"a\\\"\"}}]"
                   "}}]}"));
  CHECK_EQ(c.cls, IM_OAI_TOKENS);
  CHECK_EQ(c.n_tool_calls, 1);
  CHECK_S(c.tool_calls_json, "[{\"index\":0,\"function\":{\"arguments\":\"{\\\"a\\\"\"}}]");
  CHECK_OK(DEC(&c, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[]}}]}"));
  CHECK_EQ(c.cls, IM_OAI_EMPTY);
  /* reasoning_content (DeepSeek, vLLM < 0.10) and reasoning (newer vLLM). */
  CHECK_OK(DEC(&c, "{\"choices\":[{\"index\":0,\"delta\":{"
                   "\"reasoning_content\":\"r1\"}}]}"));
  CHECK_S(c.reasoning, "r1");
  CHECK_EQ(c.cls, IM_OAI_TOKENS);
  CHECK(!im_oai_chunk_has_answer(&c));
  CHECK_OK(DEC(&c, "{\"choices\":[{\"index\":0,\"delta\":{"
                   "\"reasoning_content\":null,\"reasoning\":\"r2\"}}]}"));
  CHECK_S(c.reasoning, "r2");
  CHECK_OK(DEC(&c, "{\"choices\":[{\"index\":0,\"delta\":{"
                   "\"reasoning\":\"r3\",\"reasoning_content\":\"\"}}]}"));
  CHECK_S(c.reasoning, "r3");
  /* Finish reasons are any string. */
  CHECK_OK(DEC(&c, "{\"choices\":[{\"index\":0,\"delta\":{},"
                   "\"finish_reason\":\"abort\"}]}"));
  CHECK_S(c.finish_reason, "abort");
  CHECK_EQ(c.cls, IM_OAI_EMPTY);
  /* Wrong types are absent, not errors. */
  CHECK_OK(DEC(&c, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":5,"
                   "\"role\":[\"x\"]},\"finish_reason\":{}}],\"usage\":[]}"));
  CHECK_S(c.content, NULL);
  CHECK_S(c.role, NULL);
  CHECK_S(c.finish_reason, NULL);
  CHECK_EQ(c.has_usage, 0);
  /* Repeated keys: the last wins. */
  CHECK_OK(DEC(&c, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\","
                   "\"content\":\"b\"}}],\"usage\":{\"prompt_tokens\":1},"
                   "\"usage\":null}"));
  CHECK_S(c.content, "b");
  CHECK_EQ(c.has_usage, 0);
  CHECK_OK(DEC(&c, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}],"
                   "\"choices\":[]}"));
  CHECK_EQ(c.has_choice, 0);
  CHECK_S(c.content, NULL);
  /* Usage: every field, floats and negatives. */
  CHECK_OK(DEC(&c, "{\"choices\":[],\"usage\":{\"prompt_tokens\":100,"
                   "\"completion_tokens\":20,\"total_tokens\":120,"
                   "\"prompt_tokens_details\":{\"cached_tokens\":64},"
                   "\"completion_tokens_details\":{\"reasoning_tokens\":7},"
                   "\"prompt_cache_hit_tokens\":64,"
                   "\"prompt_cache_miss_tokens\":36.0}}"));
  CHECK_EQ(c.cls, IM_OAI_USAGE);
  CHECK_EQ(c.usage.prompt_tokens, 100);
  CHECK_EQ(c.usage.completion_tokens, 20);
  CHECK_EQ(c.usage.total_tokens, 120);
  CHECK_EQ(c.usage.cached_tokens, 64);
  CHECK_EQ(c.usage.reasoning_tokens, 7);
  CHECK_EQ(c.usage.cache_hit_tokens, 64);
  CHECK_EQ(c.usage.cache_miss_tokens, -1);
  CHECK_OK(DEC(&c, "{\"usage\":{\"prompt_tokens\":9223372036854775807,"
                   "\"total_tokens\":-9223372036854775808,"
                   "\"completion_tokens\":1e2}}"));
  CHECK_EQ(c.usage.prompt_tokens, INT64_MAX);
  CHECK_EQ(c.usage.total_tokens, INT64_MIN);
  CHECK_EQ(c.usage.completion_tokens, -1);
  const char *big = "{\"usage\":{\"prompt_tokens\":9223372036854775808}}";
  CHECK_OK(im_oai_chunk_decode(&c, big, strlen(big)));
  CHECK_EQ(c.usage.prompt_tokens, -1);
  /* llama.cpp timings. */
  CHECK_OK(DEC(&c, "{\"timings\":{\"prompt_n\":5,\"prompt_ms\":1.5,"
                   "\"cache_n\":4,\"predicted_n\":3}}"));
  CHECK_EQ(c.has_timings, 1);
  CHECK_EQ(c.timings.cache_n, 4);
  CHECK_EQ(c.timings.prompt_n, 5);
  CHECK_EQ(c.timings.predicted_n, 3);
  im_oai_chunk_cleanup(&c);
}

static void test_errors(void) {
  struct im_oai_chunk c;
  im_oai_chunk_init(&c, 0);
  /* vLLM < 0.10: {"error": ErrorResponse} with object "error". */
  CHECK_OK(DEC(&c, "{\"error\": {\"object\": \"error\", \"message\": \"bad\", "
                   "\"type\": \"BadRequestError\", \"param\": null, "
                   "\"code\": 400}}"));
  CHECK_EQ(c.kind, IM_OAI_ERROR);
  CHECK_S(c.err_message, "bad");
  CHECK_S(c.err_type, "BadRequestError");
  CHECK_EQ(c.err_code_num, 400);
  CHECK_S(c.err_code, "400");
  /* OpenAI: string code. */
  CHECK_OK(DEC(&c, "{\"error\":{\"message\":\"m\",\"type\":\"server_error\","
                   "\"param\":null,\"code\":\"rate_limit_exceeded\"}}"));
  CHECK_EQ(c.kind, IM_OAI_ERROR);
  CHECK_S(c.err_code, "rate_limit_exceeded");
  CHECK_EQ(c.err_code_num, -1);
  /* A bare string. */
  CHECK_OK(DEC(&c, "{\"error\":\"overloaded\"}"));
  CHECK_EQ(c.kind, IM_OAI_ERROR);
  CHECK_S(c.err_message, "overloaded");
  /* Top-level ErrorResponse (vLLM non-stream shape). */
  CHECK_OK(DEC(&c, "{\"message\":\"too long\",\"object\":\"error\","
                   "\"type\":\"BadRequestError\",\"code\":400}"));
  CHECK_EQ(c.kind, IM_OAI_ERROR);
  CHECK_S(c.err_message, "too long");
  CHECK_EQ(c.err_code_num, 400);
  /* "error": null is not an error. */
  CHECK_OK(DEC(&c, "{\"error\":null,\"choices\":[]}"));
  CHECK_EQ(c.kind, IM_OAI_CHUNK);
  im_oai_chunk_cleanup(&c);
}

/* The scanner's fast paths (16-byte vector compares for strings, keys read
 * together with their ':', integers without a fraction) against the byte
 * by byte path: every position of the first special byte relative to the
 * 8- and 16-byte steps and to the end of the input. */
/* A helper that takes its format from its caller (a test's table of
 * inputs): -Wformat-nonliteral has nothing to check here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static enum im_err dec_buf(struct im_oai_chunk *c, const char *fmt, const char *mid, int check) {
  /* Static: the decoded views (c->content) point into the input, and the
   * caller reads them after this returns (until the next call). */
  static char buf[512];
  int n = snprintf(buf, sizeof buf, fmt, mid);
  if (n < 0 || (size_t)n >= sizeof buf)
    abort();
  return check ? decode2(c, buf, (size_t)n) : im_oai_chunk_decode(c, buf, (size_t)n);
}
#pragma GCC diagnostic pop

static void test_fast_paths(void) {
  struct im_oai_chunk c;
  im_oai_chunk_init(&c, 0);
  /* Wrappers: the string as content, as a key, and as a skipped value, each
   * with little or much input after it. */
  static const char *const fmts[] = {
      "{\"choices\":[{\"delta\":{\"content\":\"%s\"}}]}",
      "{\"choices\":[{\"delta\":{\"content\":\"%s\"}}],\"usage\":null,\"model\":\"m\"}",
      "{\"%s\":1,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}",
      "{\"%s\":1}",
      "{\"id\":\"%s\",\"choices\":[{\"delta\":{\"content\":\"x\"}}]}",
      "{\"id\":\"%s\"}",
  };
  char s[64];
  for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
    int is_content = f < 2;
    for (size_t len = 0; len <= 40; len++) {
      for (size_t i = 0; i < len; i++)
        s[i] = (char)('a' + i % 26);
      s[len] = '\0';
      /* Plain: the quote at every distance (0..40, past 8 and 16). */
      CHECK_OK(dec_buf(&c, fmts[f], s, 1));
      if (is_content) {
        CHECK_S(c.content, s);
        CHECK(c.content.ptr != NULL && c.content.len == len);
      }
      if (len == 0)
        continue;
      /* An escape, a UTF-8 character, a control byte and a bad UTF-8 byte
       * as the last byte (at len - 1: 7, 8, 15, 16, 17, ... from the
       * start). */
      char t[80];
      memcpy(t, s, len - 1);
      memcpy(t + len - 1, "\\n", 3);
      CHECK_OK(dec_buf(&c, fmts[f], t, 1));
      if (is_content) {
        CHECK_EQ(c.content.len, len);
        CHECK(c.content.len == len && c.content.ptr[len - 1] == '\n');
      }
      memcpy(t + len - 1, "\\u00e9z", 8); /* escape then plain bytes */
      CHECK_OK(dec_buf(&c, fmts[f], t, 1));
      memcpy(t + len - 1, "\xC3\xA9", 3);
      CHECK_OK(dec_buf(&c, fmts[f], t, 1));
      if (is_content)
        CHECK_EQ(c.content.len, len + 1);
      memcpy(t + len - 1, "\x1F", 2);
      CHECK_EQ(dec_buf(&c, fmts[f], t, 1), IM_PARSE);
      memcpy(t + len - 1, "\x7F", 2); /* DEL is allowed */
      CHECK_OK(dec_buf(&c, fmts[f], t, 1));
      memcpy(t + len - 1, "\xC3(", 3); /* truncated sequence */
      CHECK_EQ(dec_buf(&c, fmts[f], t, 1), IM_PARSE);
      memcpy(t + len - 1, "\xFF", 2);
      CHECK_EQ(dec_buf(&c, fmts[f], t, 1), IM_PARSE);
      memcpy(t + len - 1, "\\x", 3);
      CHECK_EQ(dec_buf(&c, fmts[f], t, 1), IM_PARSE);
      /* Unterminated: the input ends inside the string. */
      snprintf(t, sizeof t, "{\"id\":\"%s", s);
      CHECK_EQ(im_oai_chunk_decode(&c, t, strlen(t)), IM_PARSE);
    }
  }
  /* Whitespace around ':' and ',' (the key fast path falls back). */
  CHECK_OK(DEC(&c, "{ \"choices\" : [ { \"delta\" :\t{ \"content\" :\n\"a\" } , "
                   "\"index\" : 0 } ] , \"id\" : \"x\" }"));
  CHECK_S(c.content, "a");
  CHECK_OK(DEC(&c, "{\"choices\":[{\"delta\":{\"content\": \"b\"}}]}"));
  CHECK_S(c.content, "b");
  CHECK_EQ(DEC(&c, "{\"choices\"\x01:[]}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"choices\":\x01[]}"), IM_PARSE);
  /* Keys of a known length but other content are skipped. */
  CHECK_OK(DEC(&c, "{\"choices\":[{\"delta\":{\"contenu\":\"x\",\"cont\\u0065nt\":\"y\","
                   "\"Content\":\"z\",\"rolf\":\"r\"},\"indey\":1}],\"usagf\":{},"
                   "\"chojces\":5}"));
  CHECK_S(c.content, "y");
  CHECK_S(c.role, NULL);
  CHECK_EQ(c.has_choice, 1);
  CHECK_EQ(c.has_usage, 0);
  /* Invalid UTF-8 and bad escapes inside skipped values are errors. */
  CHECK_EQ(DEC(&c, "{\"id\":\"chatcmpl-\xC0\xAF\",\"choices\":[]}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"model\":\"0123456789abcdef\xED\xA0\x80\",\"choices\":[]}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"system_fingerprint\":\"fp_\\ud800x\"}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"logprobs\":{\"content\":[{\"token\":\"\xF4\x90\x80\x80\"}]}}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"choices\":[{\"logprobs\":\"\xE2\x82\"}]}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"created\":01}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"created\":-}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"created\":1.e5}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"created\":1e}"), IM_PARSE);
  CHECK_EQ(DEC(&c, "{\"created\":+1}"), IM_PARSE);
  CHECK_OK(DEC(&c, "{\"created\":-0.5E+3,\"usage\":{\"prompt_tokens\":-0,"
                   "\"total_tokens\":0e1,\"completion_tokens\":12345678901234567890}}"));
  CHECK_EQ(c.usage.prompt_tokens, 0);
  CHECK_EQ(c.usage.total_tokens, -1);
  CHECK_EQ(c.usage.completion_tokens, -1);
  CHECK_OK(DEC(&c, "{\"usage\":{\"prompt_tokens\":1234567890123456789,"
                   "\"total_tokens\":-9223372036854775809}}"));
  CHECK_EQ(c.usage.prompt_tokens, 1234567890123456789LL);
  CHECK_EQ(c.usage.total_tokens, -1);
  /* Skipped keys twice, and a read key twice around skipped ones. */
  CHECK_OK(DEC(&c, "{\"id\":\"a\",\"model\":\"m\",\"id\":\"b\",\"model\":[1,{\"x\":null}],"
                   "\"object\":\"text_completion\",\"logprobs\":null,\"logprobs\":{},"
                   "\"choices\":[{\"text\":\"t\"}],\"object\":\"chat.completion.chunk\"}"));
  CHECK_EQ(c.object, IM_OAI_OBJ_CHAT);
  CHECK_S(c.text, "t");
  CHECK_EQ(DEC(&c, "{\"id\":\"a\",\"id\":\"\xC0\"}"), IM_PARSE);
  im_oai_chunk_cleanup(&c);
}

/* Nesting inside skipped values: {"<key>":[[...[1]...]]}, arrays brackets,
 * and {"choices":[{"logprobs":{"a":{"a":...}}}]} with objects levels. */
static enum im_err nested_in(struct im_oai_chunk *c, const char *key, int arrays, int objects) {
  char buf[600];
  size_t n = (size_t)snprintf(buf, sizeof buf, "{\"choices\":[{\"%s\":", key);
  for (int i = 0; i < arrays; i++)
    buf[n++] = '[';
  for (int i = 0; i < objects; i++)
    n += (size_t)snprintf(buf + n, sizeof buf - n, "{\"a\":");
  buf[n++] = '1';
  for (int i = 0; i < objects; i++)
    buf[n++] = '}';
  for (int i = 0; i < arrays; i++)
    buf[n++] = ']';
  n += (size_t)snprintf(buf + n, sizeof buf - n, ",\"delta\":{\"content\":\"x\"}}]}");
  /* Over the limit jansson (limit 2048) accepts what the scanner refuses. */
  return arrays + objects <= 61 ? decode2(c, buf, n) : im_oai_chunk_decode(c, buf, n);
}

static void test_skipped_depth(void) {
  struct im_oai_chunk c;
  im_oai_chunk_init(&c, 0);
  /* The top object, "choices" and the choice are 3 levels: 61 more fit. */
  CHECK_OK(nested_in(&c, "logprobs", 61, 0));
  CHECK_S(c.content, "x");
  CHECK_EQ(nested_in(&c, "logprobs", 62, 0), IM_LIMIT);
  CHECK_OK(nested_in(&c, "logprobs", 0, 61));
  CHECK_EQ(nested_in(&c, "logprobs", 0, 62), IM_LIMIT);
  CHECK_OK(nested_in(&c, "matched_stop", 30, 31));
  CHECK_EQ(nested_in(&c, "matched_stop", 31, 31), IM_LIMIT);
  /* Under a known key whose value has the wrong type. */
  CHECK_OK(nested_in(&c, "text", 61, 0));
  CHECK_S(c.text, NULL);
  CHECK_EQ(nested_in(&c, "text", 62, 0), IM_LIMIT);
  CHECK_EQ(nested_in(&c, "delta", 62, 0), IM_LIMIT);
  /* Unclosed deep values are parse errors, not limits, below the limit. */
  CHECK_EQ(DEC(&c, "{\"logprobs\":[[[[{\"a\":[1,2]}]]]"), IM_PARSE);
  im_oai_chunk_cleanup(&c);
}

/* ---- fixtures ---------------------------------------------------------- */

struct agg {
  struct im_oai_chunk c;
  int events, comments, tokens, roles, usage_only, empty, errors, done;
  int answers, parse_errors, after_done;
  struct im_buf content, reasoning, finish, err_message;
  struct im_oai_usage usage; /* the last usage seen */
  struct im_oai_timings timings;
};

static enum im_err agg_cb(void *ud, const struct im_sse_event *ev) {
  struct agg *a = ud;
  enum im_err err = IM_OK;
  if (ev->kind == IM_SSE_COMMENT) {
    a->comments++;
    return IM_OK;
  }
  a->events++;
  if (a->done)
    a->after_done++;
  if (decode2(&a->c, ev->data, ev->data_len) != IM_OK) {
    a->parse_errors++;
    return IM_OK;
  }
  struct im_oai_chunk *c = &a->c;
  if (c->kind == IM_OAI_DONE) {
    a->done++;
    return IM_OK;
  }
  if (c->kind == IM_OAI_ERROR) {
    a->errors++;
    im_buf_reset(&a->err_message);
    return im_buf_append(&a->err_message, c->err_message.ptr, c->err_message.len);
  }
  switch (c->cls) {
  case IM_OAI_TOKENS:
    a->tokens++;
    break;
  case IM_OAI_ROLE:
    a->roles++;
    break;
  case IM_OAI_USAGE:
    a->usage_only++;
    break;
  case IM_OAI_EMPTY:
    a->empty++;
    break;
  }
  a->answers += im_oai_chunk_has_answer(c);
  if (c->content.len)
    err = im_buf_append(&a->content, c->content.ptr, c->content.len);
  if (!err && c->text.len)
    err = im_buf_append(&a->content, c->text.ptr, c->text.len);
  if (!err && c->reasoning.len)
    err = im_buf_append(&a->reasoning, c->reasoning.ptr, c->reasoning.len);
  if (!err && c->finish_reason.ptr) {
    im_buf_reset(&a->finish);
    err = im_buf_append(&a->finish, c->finish_reason.ptr, c->finish_reason.len);
  }
  if (c->has_usage)
    a->usage = c->usage;
  if (c->has_timings)
    a->timings = c->timings;
  return err;
}

struct fixture {
  const char *file;
  int comments, tokens, roles, usage_only, empty, errors, tool_chunks;
  const char *content, *reasoning, *finish, *err_message;
  struct im_oai_usage usage;
  struct im_oai_timings timings;
};

#define NO_USAGE                                                                                   \
  { -1, -1, -1, -1, -1, -1, -1 }
#define NO_TIMINGS                                                                                 \
  { -1, -1, -1 }

static const struct fixture fixtures[] = {
    {"vllm_chat_usage.sse",
     0,
     3,
     1,
     1,
     0,
     0,
     0,
     "Hello world!",
     "",
     "stop",
     NULL,
     {12, 3, 15, -1, -1, -1, -1},
     NO_TIMINGS},
    {"vllm_completions.sse",
     0,
     4,
     0,
     1,
     0,
     0,
     0,
     " Paris is the capital",
     "",
     "length",
     NULL,
     {5, 4, 9, -1, -1, -1, -1},
     NO_TIMINGS},
    {"deepseek_reasoner.sse",
     3,
     4,
     1,
     1,
     0,
     0,
     0,
     "The answer is 4.",
     "Let me think",
     "stop",
     NULL,
     {20, 7, 27, 16, 3, 16, 4},
     NO_TIMINGS},
    {"deepseek_chat_cache.sse", 1, 2, 1, 1, 0, 0, 0, "Cached prefix.", "", "stop", NULL,
     {76, 2, 78, -1, -1, 64, 12}, NO_TIMINGS},
    {"deepseek_insufficient_resource.sse",
     1,
     1,
     1,
     1,
     0,
     0,
     0,
     "Par",
     "",
     "insufficient_system_resource",
     NULL,
     {8, 1, 9, 0, -1, 0, 8},
     NO_TIMINGS},
    {"llamacpp_chat.sse",
     0,
     3,
     1,
     1,
     0,
     0,
     0,
     "Bonjour le monde",
     "",
     "stop",
     NULL,
     {9, 3, 12, -1, -1, -1, -1},
     {4, 5, 3}},
    {"sglang_chat.sse",
     0,
     2,
     1,
     1,
     1,
     0,
     0,
     "One, two",
     "",
     "stop",
     NULL,
     {30, 3, 33, -1, -1, -1, -1},
     NO_TIMINGS},
    {"openai_chat.sse",
     0,
     3,
     1,
     1,
     1,
     0,
     0,
     "Caf\xC3\xA9 \"au lait\"\n\xE2\x98\x95 \xF0\x9F\x98\x80",
     "",
     "stop",
     NULL,
     {11, 5, 16, 0, 0, -1, -1},
     NO_TIMINGS},
    {"openai_tool_calls.sse", 0, 3, 0, 0, 1, 0, 3, "", "", "tool_calls", NULL, NO_USAGE,
     NO_TIMINGS},
    {"vllm_tool_calls.sse", 0, 4, 1, 1, 1, 0, 4, "", "", "tool_calls", NULL,
     {182, 12, 194, -1, -1, -1, -1}, NO_TIMINGS},
    {"no_usage_crlf.sse", 0, 3, 1, 0, 0, 0, 0, "ABC", "", "length", NULL, NO_USAGE, NO_TIMINGS},
    {"llamacpp_no_cache_n.sse", 0, 1, 1, 1, 0, 0, 0, "Yes", "", "length", NULL,
     {30, 1, 31, -1, -1, -1, -1}, {-1, 1, 1}},
    {"vllm_midstream_error.sse", 0, 1, 1, 0, 0, 1, 0, "Partial", "", "",
     "The decoder prompt (length 9000) is longer than the maximum model "
     "length of 8192.",
     NO_USAGE, NO_TIMINGS},
};

/* Cached prompt tokens each fixture reports (im_oai_cached_tokens): usage's
 * cached_tokens (DeepSeek, OpenAI), llama.cpp's cache_n, or llama.cpp's
 * prompt_tokens - prompt_n where cache_n is missing (30 - 1). */
static int64_t fixture_cached(const char *file) {
  static const struct {
    const char *file;
    int64_t cached;
  } t[] = {{"deepseek_reasoner.sse", 16}, {"deepseek_insufficient_resource.sse", 0},
           {"deepseek_chat_cache.sse", 64},
           {"llamacpp_chat.sse", 4},      {"llamacpp_no_cache_n.sse", 29},
           {"openai_chat.sse", 0}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(t[i].file, file))
      return t[i].cached;
  return -1;
}

/* The order of preference of im_oai_cached_tokens, one source at a time. */
static void test_cached_tokens(void) {
  struct im_oai_usage u = NO_USAGE;
  struct im_oai_timings t = NO_TIMINGS;
  CHECK_EQ(im_oai_cached_tokens(NULL, NULL), -1);
  CHECK_EQ(im_oai_cached_tokens(&u, &t), -1);
  u.prompt_tokens = 30;
  CHECK_EQ(im_oai_cached_tokens(&u, NULL), -1); /* no timings: nothing derived */
  t.prompt_n = 31;
  CHECK_EQ(im_oai_cached_tokens(&u, &t), -1); /* more evaluated than the prompt: not a count */
  t.prompt_n = 1;
  CHECK_EQ(im_oai_cached_tokens(&u, &t), 29);
  t.cache_n = 20;
  CHECK_EQ(im_oai_cached_tokens(&u, &t), 20);
  u.cache_hit_tokens = 12;
  CHECK_EQ(im_oai_cached_tokens(&u, &t), 12);
  u.cached_tokens = 8;
  CHECK_EQ(im_oai_cached_tokens(&u, &t), 8);
}

/* serve --dialect deepseek-api: the usage chunk carries DeepSeek's hit and
 * miss counts, which decode back, and the cached count is the hit count. */
static void test_deepseek_usage_encode(void) {
  struct im_oai_ctx ctx = {.kind = IM_API_CHAT, .id = "x", .created = 1, .model = "m"};
  struct im_sim_usage u = {.prompt = 100, .completion = 7, .cached = 64, .reasoning = 3,
                           .cache_hit_fields = true};
  struct im_buf b;
  im_buf_init(&b, 1u << 20);
  CHECK_OK(im_oai_usage_chunk(&b, &ctx, &u));
  struct im_oai_chunk c;
  im_oai_chunk_init(&c, 0);
  CHECK_OK(decode2(&c, b.data + 6, b.len - 8));
  CHECK_EQ(c.usage.cache_hit_tokens, 64);
  CHECK_EQ(c.usage.cache_miss_tokens, 36);
  CHECK_EQ(c.usage.reasoning_tokens, 3);
  CHECK_EQ(im_oai_cached_tokens(&c.usage, NULL), 64);
  u.cache_hit_fields = false; /* vLLM's shape: no DeepSeek fields */
  im_buf_reset(&b);
  CHECK_OK(im_oai_usage_chunk(&b, &ctx, &u));
  CHECK_OK(decode2(&c, b.data + 6, b.len - 8));
  CHECK_EQ(c.usage.cache_hit_tokens, -1);
  im_oai_chunk_cleanup(&c);
  im_buf_cleanup(&b);
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *buf = malloc(1 << 20);
  *len = buf ? fread(buf, 1, 1 << 20, f) : 0;
  fclose(f);
  return buf;
}

static void agg_init(struct agg *a) {
  memset(a, 0, sizeof *a);
  im_oai_chunk_init(&a->c, 0);
  im_buf_init(&a->content, IM_TEST_BUF_MAX);
  im_buf_init(&a->reasoning, IM_TEST_BUF_MAX);
  im_buf_init(&a->finish, IM_TEST_BUF_MAX);
  im_buf_init(&a->err_message, IM_TEST_BUF_MAX);
  struct im_oai_usage nu = NO_USAGE;
  struct im_oai_timings nt = NO_TIMINGS;
  a->usage = nu;
  a->timings = nt;
  if (im_buf_puts(&a->content, "") || im_buf_puts(&a->reasoning, "") ||
      im_buf_puts(&a->finish, "") || im_buf_puts(&a->err_message, ""))
    abort();
}

static void agg_cleanup(struct agg *a) {
  im_oai_chunk_cleanup(&a->c);
  im_buf_cleanup(&a->content);
  im_buf_cleanup(&a->reasoning);
  im_buf_cleanup(&a->finish);
  im_buf_cleanup(&a->err_message);
}

/* Parses buf fed in pieces of `step` bytes (0: whole). */
static void parse_stream(struct agg *a, const char *buf, size_t len, size_t step) {
  struct im_sse p;
  im_sse_init(&p, NULL, agg_cb, a);
  size_t at = 0;
  do {
    size_t n = step && len - at > step ? step : len - at;
    CHECK_OK(im_sse_feed(&p, buf + at, n));
    at += n;
  } while (at < len);
  CHECK_OK(im_sse_finish(&p));
  im_sse_cleanup(&p);
}

static void test_fixture(const struct fixture *fx) {
  char path[512];
  snprintf(path, sizeof path, "tests/fixtures/streams/%s", fx->file);
  size_t len = 0;
  char *buf = read_file(path, &len);
  if (!buf) {
    IM__FAIL("cannot read %s (run from the repository root)", path);
    return;
  }
  static const size_t steps[] = {0, 1, 7, 64};
  for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
    struct agg a;
    agg_init(&a);
    parse_stream(&a, buf, len, steps[s]);
    int before = im_test_failures;
    CHECK_EQ(a.parse_errors, 0);
    CHECK_EQ(a.done, 1);
    CHECK_EQ(a.after_done, 0);
    CHECK_EQ(a.comments, fx->comments);
    CHECK_EQ(a.tokens, fx->tokens);
    CHECK_EQ(a.roles, fx->roles);
    CHECK_EQ(a.usage_only, fx->usage_only);
    CHECK_EQ(a.empty, fx->empty);
    CHECK_EQ(a.errors, fx->errors);
    CHECK_EQ(a.events, a.tokens + a.roles + a.usage_only + a.empty + a.errors + a.done);
    CHECK_STR(a.content.data, fx->content);
    CHECK_STR(a.reasoning.data, fx->reasoning);
    CHECK_STR(a.finish.data, fx->finish);
    CHECK_STR(a.err_message.data, fx->err_message ? fx->err_message : "");
    CHECK(memcmp(&a.usage, &fx->usage, sizeof a.usage) == 0);
    CHECK(memcmp(&a.timings, &fx->timings, sizeof a.timings) == 0);
    CHECK_EQ(im_oai_cached_tokens(&a.usage, &a.timings), fixture_cached(fx->file));
    if (fx->tool_chunks)
      CHECK_EQ(a.tokens - a.answers, fx->tool_chunks);
    if (im_test_failures != before)
      fprintf(stderr, "  ^ fixture %s, step %zu\n", fx->file, steps[s]);
    agg_cleanup(&a);
  }
  free(buf);
}

/* --logprobs: what the built-in server encodes (OpenAI's chat and
 * completions shapes), the decoder keeps as the raw "logprobs" object and
 * the entropy reads. Alternatives 0.2, 0.1, 0.1 renormalise to 1/2, 1/4,
 * 1/4: H = 1.5 ln 2 nats per token, for both shapes and for 2 tokens. */
static void test_logprobs(void) {
  const double alt[3] = {log(0.2), log(0.1), log(0.1)};
  const double want = 1.5 * log(2.0);
  for (int chat = 0; chat < 2; chat++) {
    struct im_oai_ctx ctx = {.kind = chat ? IM_API_CHAT : IM_API_COMPLETIONS, .id = "x",
                             .created = 1, .model = "m"};
    struct im_oai_lp lp = {.n_tokens = 2, .n_alt = 3, .alt = alt};
    struct im_buf b;
    im_buf_init(&b, 1u << 20);
    CHECK_OK(im_oai_chunk_lp(&b, &ctx, "a\"b", 3, false, NULL, NULL, &lp));
    /* "data: " ... "\n\n" around the JSON. */
    CHECK(b.len > 8 && memcmp(b.data, "data: ", 6) == 0);
    struct im_oai_chunk c;
    im_oai_chunk_init(&c, 0);
    CHECK_OK(decode2(&c, b.data + 6, b.len - 8));
    CHECK_EQ(c.cls, IM_OAI_TOKENS);
    CHECK(c.logprobs_json.ptr && c.logprobs_json.ptr[0] == '{');
    double h = 0;
    uint32_t n = 0;
    CHECK_OK(im_oai_logprobs_entropy(c.logprobs_json.ptr, c.logprobs_json.len, &h, &n));
    CHECK_EQ(n, 2);
    CHECK_NEAR(h, 2 * want, 1e-5); /* %.6g on the wire */
    /* Without logprobs: null, nothing kept. */
    im_buf_reset(&b);
    CHECK_OK(im_oai_chunk(&b, &ctx, "a", 1, false, NULL, NULL));
    CHECK_OK(decode2(&c, b.data + 6, b.len - 8));
    CHECK_S(c.logprobs_json, NULL);
    im_oai_chunk_cleanup(&c);
    im_buf_cleanup(&b);
  }
  struct im_oai_chunk c;
  im_oai_chunk_init(&c, 0);
  CHECK_OK(DEC(&c, "{\"choices\":[{\"index\":0,\"text\":\"x\",\"logprobs\":[1]}]}"));
  CHECK_S(c.logprobs_json, NULL); /* not an object */
  CHECK_OK(DEC(&c, "{\"choices\":[{\"index\":1,\"logprobs\":{}},{\"index\":0,\"logprobs\":"
                   "{\"content\":[]}}]}"));
  CHECK_S(c.logprobs_json, "{\"content\":[]}"); /* the choice with index 0 */
  im_oai_chunk_cleanup(&c);
  double h = 0;
  uint32_t n = 0;
  CHECK_EQ(im_oai_logprobs_entropy("[1]", 3, &h, &n), IM_PARSE);
  /* One alternative: H = 0; no alternatives or no numbers: not counted. */
  CHECK_OK(im_oai_logprobs_entropy(
      "{\"content\":[{\"top_logprobs\":[{\"logprob\":-0.5}]},{\"top_logprobs\":[]},"
      "{\"top_logprobs\":[{\"logprob\":\"x\"}]}]}",
      strlen("{\"content\":[{\"top_logprobs\":[{\"logprob\":-0.5}]},{\"top_logprobs\":[]},"
             "{\"top_logprobs\":[{\"logprob\":\"x\"}]}]}"),
      &h, &n));
  CHECK_EQ(n, 1);
  CHECK_NEAR(h, 0.0, 1e-12);
}

/* The request body byte for byte (what the printf-based encoder sent; the
 * wire bytes of a seeded run must not change), also when the buffer's cap
 * is below the encoder's reserve hint. */
static void test_body_bytes(void) {
  struct im_oai_body q = {.model = "m", .prompt = "hi \"x\"", .prompt_len = 6,
                          .max_tokens = 4294967295u, .ignore_eos = true,
                          .temperature = NAN, .top_p = NAN};
  struct im_buf b;
  im_buf_init(&b, 4096);
  CHECK_OK(im_oai_body_encode(&q, &b));
  CHECK_STR(b.data, "{\"model\":\"m\",\"prompt\":\"hi \\\"x\\\"\",\"max_tokens\":4294967295,"
                    "\"stream\":true,\"stream_options\":{\"include_usage\":true},\"ignore_eos\":true}");
  im_buf_cleanup(&b);
  q.max_tokens = 0;
  q.ignore_eos = false;
  q.continuous_usage = true;
  q.temperature = 0.7;
  const char *want = "{\"model\":\"m\",\"prompt\":\"hi \\\"x\\\"\",\"max_tokens\":0,"
                     "\"stream\":true,\"stream_options\":{\"include_usage\":true,"
                     "\"continuous_usage_stats\":true},\"temperature\":0.69999999999999996}";
  im_buf_init(&b, strlen(want)); /* exactly the body: below the hint */
  CHECK_OK(im_oai_body_encode(&q, &b));
  CHECK_STR(b.data, want);
  im_buf_cleanup(&b);
  im_buf_init(&b, strlen(want) - 1);
  CHECK_EQ(im_oai_body_encode(&q, &b), IM_LIMIT);
  im_buf_cleanup(&b);
}

int main(void) {
  test_cached_tokens();
  test_deepseek_usage_encode();
  test_logprobs();
  test_done_and_invalid();
  test_strings();
  test_chunks();
  test_errors();
  test_fast_paths();
  test_body_bytes();
  test_skipped_depth();
  for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++)
    test_fixture(&fixtures[i]);
  return CHECK_DONE();
}
