/* Exact prompt lengths of the default workload (load/synth.c, --dataset
 * random): for many requests and lengths, with and without the DeepSeek-V3
 * chat template, with the built-in tokenizer and a tokenizer.json, the
 * prompt counts exactly --input-len as the server will count it (checked
 * here by an independent render and count), with range-ratio lengths,
 * prefix groups and content classes. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "text/chattmpl.h"
#include "workload/sched.h"
#include "workload/synth.h"
#include "text/simpletok.h"

static size_t server_count(struct im_tok *tok, bool chat, const char *p, size_t len) {
  struct im_buf r;
  im_buf_init(&r, IM_TEST_BUF_MAX);
  if (chat) {
    struct im_chat_msg m = {"user", 4, p, len};
    CHECK_OK(im_chat_render(IM_CHAT_DEEPSEEK_V3, &m, 1, &r));
  } else {
    CHECK_OK(im_buf_append(&r, p, len));
  }
  size_t n = 0;
  if (tok)
    CHECK_OK(im_tok_count(tok, r.data, r.len, &n));
  else
    n = im_simpletok_encode(r.data, r.len, NULL, 0);
  im_buf_cleanup(&r);
  return n;
}

static void run(struct im_tok *tok, bool chat, uint32_t len, int n, bool extras) {
  struct im_synth s;
  memset(&s, 0, sizeof s);
  s.input_len = len;
  s.output_len = 64;
  s.temperature = s.top_p = NAN;
  s.seed = 99;
  strcpy(s.salt, "unitsalt");
  s.exact = true;
  s.tok = tok;
  s.chat = chat;
  s.tmpl = chat ? IM_CHAT_DEEPSEEK_V3 : IM_CHAT_NONE;
  if (extras) {
    s.range_ratio = 0.5;
    s.prefix_groups = 2;
    s.prefix_len = len / 2;
    s.prefix_share = 0.5;
    char err[128];
    CHECK_OK(im_mix_parse("code=0.5,text=0.5", &s.mix, err, sizeof err));
    s.has_mix = true;
  }
  int bad = 0, code = 0, exact = 0, rooms = 0;
  for (int i = 0; i < n; i++) {
    struct im_req_spec sp;
    CHECK_OK(im_synth_request(&s, (uint64_t)i, &sp));
    uint32_t want = im_sched_length(len, s.range_ratio, s.seed ^ 0x1aULL, (uint64_t)i);
    size_t got = server_count(tok, chat, sp.prompt, sp.prompt_len);
    /* The count reported is always the true one; it is the requested one
     * unless the salt, the tag, the template and a shared prefix alone
     * exceed it (a prompt cannot be shorter than those). */
    CHECK_EQ(sp.prompt_tokens, got);
    CHECK_INT(got, >=, want);
    bool room = want >= s.prefix_len + (tok ? 150 : 60); /* the tiny vocabulary spells markers out */
    if (room && got != want) {
      if (bad++ < 3)
        fprintf(stderr, "  len %u request %d: want %u, counted %zu, reported %u\n", len, i, want,
                got, sp.prompt_tokens);
    }
    exact += room && got == want;
    rooms += room;
    code += sp.content_class == IM_CLASS_CODE;
    CHECK(extras ? sp.content_class != IM_CLASS_NONE : sp.content_class == IM_CLASS_NONE);
    im_req_spec_cleanup(&sp);
  }
  CHECK_EQ(bad, 0);
  CHECK_EQ(exact, rooms);
  if (len >= 100 && !extras && !tok)
    CHECK_EQ(rooms, n); /* the plain case: every prompt has room, and is exact */
  if (extras)
    CHECK(code > n / 4 && code < 3 * n / 4);
}

int main(void) {
  static const uint32_t lens[] = {100, 1000, 4096, 20};
  for (size_t i = 0; i < 4; i++) {
    run(NULL, false, lens[i], 200, false);
    run(NULL, true, lens[i], 200, false);
    run(NULL, true, lens[i], 100, true);
  }
  struct im_tok *tok = NULL;
  char msg[256];
  CHECK_OK(im_tok_load("tests/fixtures/tokenizer/tiny_bytelevel.json", &tok, msg, sizeof msg));
  if (tok) {
    for (size_t i = 0; i < 3; i++) {
      run(tok, false, lens[i], 60, false);
      run(tok, true, lens[i], 60, true);
    }
    im_tok_free(tok);
  }
  return CHECK_DONE();
}
