#include <string.h>

#include "check.h"
#include "core/buf.h"
#include "text/chattmpl.h"

#define M(r, c)                                                                                    \
  { r, sizeof r - 1, c, sizeof c - 1 }

/* DeepSeek's markers spelled with their code points' UTF-8 bytes, so the
 * test does not share the implementation's macros. */
#define BAR "\xef\xbd\x9c"
#define BLK "\xe2\x96\x81"

static const struct im_chat_msg conv3[] = {
    M("system", "You are terse."),
    M("user", "Hi there"),
    M("assistant", "Hello."),
};

static void check_render(enum im_chat_tmpl t, const struct im_chat_msg *m, size_t n,
                         const char *want) {
  struct im_buf b;
  im_buf_init(&b, IM_TEST_BUF_MAX);
  CHECK_OK(im_chat_render(t, m, n, &b));
  CHECK_STR(b.data ? b.data : "", want);
  im_buf_cleanup(&b);
}

static void test_names(void) {
  enum im_chat_tmpl t = IM_CHAT_NONE;
  CHECK_OK(im_chat_tmpl_parse("deepseek-v3", &t));
  CHECK_EQ(t, IM_CHAT_DEEPSEEK_V3);
  CHECK_OK(im_chat_tmpl_parse("deepseek-r1", &t));
  CHECK_EQ(t, IM_CHAT_DEEPSEEK_R1);
  CHECK_OK(im_chat_tmpl_parse("chatml", &t));
  CHECK_EQ(t, IM_CHAT_CHATML);
  CHECK_OK(im_chat_tmpl_parse("llama3", &t));
  CHECK_EQ(t, IM_CHAT_LLAMA3);
  CHECK_OK(im_chat_tmpl_parse("llama-3", &t));
  CHECK_EQ(t, IM_CHAT_LLAMA3);
  CHECK_OK(im_chat_tmpl_parse("none", &t));
  CHECK_EQ(t, IM_CHAT_NONE);
  t = IM_CHAT_CHATML;
  CHECK_EQ(im_chat_tmpl_parse("DeepSeek-V3", &t), IM_PARSE);
  CHECK_EQ(im_chat_tmpl_parse("", &t), IM_PARSE);
  CHECK_EQ(t, IM_CHAT_CHATML);
  CHECK_EQ(im_chat_tmpl_parse(NULL, &t), IM_INVAL);
  CHECK_STR(im_chat_tmpl_name(IM_CHAT_LLAMA3), "llama-3");
  CHECK_STR(im_chat_tmpl_name(IM_CHAT_DEEPSEEK_R1), "deepseek-r1");
  CHECK_STR(im_chat_tmpl_name((enum im_chat_tmpl)99), "?");
}

static void test_formats(void) {
  check_render(IM_CHAT_DEEPSEEK_V3, conv3, 3,
               "<" BAR "begin" BLK "of" BLK "sentence" BAR ">You are terse.<" BAR "User" BAR
               ">Hi there<" BAR "Assistant" BAR ">Hello.<" BAR "end" BLK "of" BLK "sentence" BAR
               "><" BAR "Assistant" BAR ">");
  check_render(IM_CHAT_DEEPSEEK_R1, conv3, 3,
               "<" BAR "begin" BLK "of" BLK "sentence" BAR ">You are terse.<" BAR "User" BAR
               ">Hi there<" BAR "Assistant" BAR ">Hello.<" BAR "end" BLK "of" BLK "sentence" BAR
               "><" BAR "Assistant" BAR "><think>\n");
  check_render(IM_CHAT_CHATML, conv3, 3,
               "<|im_start|>system\nYou are terse.<|im_end|>\n"
               "<|im_start|>user\nHi there<|im_end|>\n"
               "<|im_start|>assistant\nHello.<|im_end|>\n"
               "<|im_start|>assistant\n");
  check_render(IM_CHAT_LLAMA3, conv3, 3,
               "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are "
               "terse.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi "
               "there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\n");
  check_render(IM_CHAT_NONE, conv3, 3, "You are terse.Hi thereHello.");
}

static void test_details(void) {
  /* DeepSeek: system prompts anywhere go first, joined by a blank line; an
   * unknown role renders nothing. */
  static const struct im_chat_msg m[] = {
      M("user", "q1"),
      M("system", "A"),
      M("developer", "out"),
      M("system", "B"),
  };
  check_render(IM_CHAT_DEEPSEEK_V3, m, 4,
               "<" BAR "begin" BLK "of" BLK "sentence" BAR ">A\n\nB<" BAR "User" BAR ">q1<" BAR
               "Assistant" BAR ">");
  /* Tool results: a run of them inside outputs begin/end. */
  static const struct im_chat_msg t[] = {M("tool", "a"), M("tool", "b"), M("user", "c")};
  check_render(IM_CHAT_DEEPSEEK_V3, t, 3,
               "<" BAR "begin" BLK "of" BLK "sentence" BAR "><" BAR "tool" BLK "outputs" BLK
               "begin" BAR "><" BAR "tool" BLK "output" BLK "begin" BAR ">a<" BAR "tool" BLK
               "output" BLK "end" BAR ">\n<" BAR "tool" BLK "output" BLK "begin" BAR ">b<" BAR
               "tool" BLK "output" BLK "end" BAR "><" BAR "tool" BLK "outputs" BLK "end" BAR "><" BAR
               "User" BAR ">c<" BAR "Assistant" BAR ">");
  /* R1 drops the reasoning of earlier answers: text up to the last
   * </think>; V3 keeps it. */
  static const struct im_chat_msg r[] = {
      M("user", "x"),
      M("assistant", "<think>\nhmm</think>mid</think>\n\nAnswer"),
      M("assistant", "no think"),
  };
  check_render(IM_CHAT_DEEPSEEK_R1, r, 3,
               "<" BAR "begin" BLK "of" BLK "sentence" BAR "><" BAR "User" BAR ">x<" BAR
               "Assistant" BAR ">\n\nAnswer<" BAR "end" BLK "of" BLK "sentence" BAR "><" BAR
               "Assistant" BAR ">no think<" BAR "end" BLK "of" BLK "sentence" BAR "><" BAR
               "Assistant" BAR "><think>\n");
  check_render(IM_CHAT_DEEPSEEK_V3, r + 1, 1,
               "<" BAR "begin" BLK "of" BLK "sentence" BAR "><" BAR "Assistant" BAR
               "><think>\nhmm</think>mid</think>\n\nAnswer<" BAR "end" BLK "of" BLK "sentence" BAR
               "><" BAR "Assistant" BAR ">");
  /* Llama 3 trims contents; no BOS without messages. */
  static const struct im_chat_msg l[] = {M("user", "  \n hi \t\n")};
  check_render(IM_CHAT_LLAMA3, l, 1,
               "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\n");
  check_render(IM_CHAT_LLAMA3, NULL, 0, "<|start_header_id|>assistant<|end_header_id|>\n\n");
  /* Appends after existing content. */
  struct im_buf b;
  im_buf_init(&b, IM_TEST_BUF_MAX);
  CHECK_OK(im_buf_puts(&b, "PRE"));
  CHECK_OK(im_chat_render(IM_CHAT_CHATML, conv3 + 1, 1, &b));
  CHECK_STR(b.data, "PRE<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n");
  CHECK_EQ(im_chat_render((enum im_chat_tmpl)42, conv3, 1, &b), IM_INVAL);
  CHECK_EQ(im_chat_render(IM_CHAT_CHATML, NULL, 1, &b), IM_INVAL);
  im_buf_cleanup(&b);
  /* A bounded buffer reports IM_LIMIT. */
  im_buf_init(&b, 10);
  CHECK_EQ(im_chat_render(IM_CHAT_CHATML, conv3, 3, &b), IM_LIMIT);
  im_buf_cleanup(&b);
}

static void test_json(void) {
  const char *js = "[{\"role\":\"system\",\"content\":\"You are terse.\"},"
                   "{\"role\":\"user\",\"content\":\"Hi there\",\"name\":\"x\"},"
                   "{\"role\":\"assistant\",\"content\":\"Hello.\"}]";
  struct im_buf a, b;
  char err[200];
  im_buf_init(&a, IM_TEST_BUF_MAX);
  im_buf_init(&b, IM_TEST_BUF_MAX);
  for (int t = IM_CHAT_NONE; t <= IM_CHAT_LLAMA3; t++) {
    im_buf_reset(&a);
    im_buf_reset(&b);
    CHECK_OK(im_chat_render_json((enum im_chat_tmpl)t, js, strlen(js), &a, err, sizeof err));
    CHECK_OK(im_chat_render((enum im_chat_tmpl)t, conv3, 3, &b));
    CHECK_STR(a.data, b.data);
  }
  /* Parts: text parts joined with "\n", images skipped; null content. */
  const char *parts = "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                      "{\"type\":\"image_url\",\"image_url\":{\"url\":\"u\"}},"
                      "{\"type\":\"text\",\"text\":\"b\"}]},"
                      "{\"role\":\"assistant\",\"content\":null},"
                      "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"c\"}]}]";
  im_buf_reset(&a);
  CHECK_OK(im_chat_render_json(IM_CHAT_CHATML, parts, strlen(parts), &a, err, sizeof err));
  CHECK_STR(a.data, "<|im_start|>user\na\nb<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n"
                    "<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n");
  /* Malformed input: each names what is wrong. */
  static const struct {
    const char *js, *msg;
  } bad[] = {
      {"[{\"role\":\"user\",\"content\":\"x\"", "invalid JSON"},
      {"{\"role\":\"user\"}", "not a JSON array"},
      {"[{\"role\":\"user\",\"content\":\"x\"}, 3]", "messages[1]: not an object"},
      {"[{\"content\":\"x\"}]", "messages[0]: \"role\" is missing"},
      {"[{\"role\":7,\"content\":\"x\"}]", "messages[0]: \"role\" is not a string"},
      {"[{\"role\":\"user\",\"content\":5}]", "messages[0]: \"content\" is neither"},
      {"[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":1}]}]",
       "messages[0].content[0]: \"text\" is not a string"},
      {"[{\"role\":\"user\",\"content\":[\"x\"]}]", "messages[0].content[0]: not a"},
      {"", "invalid JSON"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    im_buf_reset(&a);
    err[0] = '\0';
    CHECK_EQ(im_chat_render_json(IM_CHAT_CHATML, bad[i].js, strlen(bad[i].js), &a, err, sizeof err),
             IM_PARSE);
    if (!strstr(err, bad[i].msg))
      fprintf(stderr, "  case %zu: \"%s\" lacks \"%s\"\n", i, err, bad[i].msg);
    CHECK(strstr(err, bad[i].msg) != NULL);
    CHECK_EQ(a.len, 0);
  }
  CHECK_EQ(im_chat_render_json(IM_CHAT_CHATML, js, IM_CHAT_JSON_MAX + 1, &a, err, sizeof err),
           IM_LIMIT);
  CHECK_OK(im_chat_render_json(IM_CHAT_DEEPSEEK_V3, "[]", 2, &a, NULL, 0));
  CHECK_STR(a.data, "<" BAR "begin" BLK "of" BLK "sentence" BAR "><" BAR "Assistant" BAR ">");
  im_buf_cleanup(&a);
  im_buf_cleanup(&b);
}

int main(void) {
  test_names();
  test_formats();
  test_details();
  test_json();
  return CHECK_DONE();
}
