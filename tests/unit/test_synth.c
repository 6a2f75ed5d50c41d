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
#include "workload/synth_int.h"
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

/* An exact-length workload of `len` tokens, without extras. */
static struct im_synth exact_synth(uint32_t len, bool chat, uint64_t seed) {
  struct im_synth s;
  memset(&s, 0, sizeof s);
  s.input_len = len;
  s.output_len = 64;
  s.temperature = s.top_p = NAN;
  s.seed = seed;
  strcpy(s.salt, "unitsalt");
  s.exact = true;
  s.chat = chat;
  return s;
}

static void run(struct im_tok *tok, bool chat, uint32_t len, int n, bool extras) {
  struct im_synth s = exact_synth(len, chat, 99);
  s.tok = tok;
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

/* --tokenizer server (workload/synth_server.c): a "server" whose counts
 * differ from the built-in tokenizer's (the tiny byte-level tokenizer.json,
 * about 4x; plus a fixed template overhead when chat), reached through the
 * count callback alone. Every prompt counts exactly want to that server
 * within the bound on counts; with a server counting 2 per byte, odd wants
 * cannot be exact: the closest under is sent and its true count reported. */
struct fake_server {
  struct im_tok *tok; /* NULL: 2 tokens per byte */
  int calls;
};

static enum im_err fake_count(void *ctx, const char *text, size_t len, const char *messages_json,
                              bool chat, uint32_t *n) {
  struct fake_server *f = ctx;
  f->calls++;
  if (messages_json)
    return IM_INVAL; /* synth counts whole prompts as text */
  size_t k = 2 * len;
  if (f->tok)
    CHECK_OK(im_tok_count(f->tok, text, len, &k));
  *n = (uint32_t)k + (chat ? 7 : 0);
  return IM_OK;
}

static void run_server(struct im_tok *tok, bool chat, uint32_t len) {
  struct fake_server f = {.tok = tok};
  struct im_synth s = exact_synth(len, chat, 5);
  s.server_count = fake_count;
  s.server_ctx = &f;
  for (int i = 0; i < 20; i++) {
    f.calls = 0;
    struct im_req_spec sp;
    CHECK_OK(im_synth_request(&s, (uint64_t)i, &sp));
    int calls = f.calls; /* the header's count and the tries */
    uint32_t truth = 0;
    CHECK_OK(fake_count(&f, sp.prompt, sp.prompt_len, NULL, chat, &truth));
    CHECK_EQ(sp.prompt_tokens, truth); /* the count reported is the server's */
    if (tok || len % 2 == (chat ? 1u : 0u))
      CHECK_EQ(truth, len);
    else
      CHECK_EQ(truth, len - 1); /* 2 per byte: the closest under */
    CHECK(calls <= IM__SYNTH_SERVER_TRIES + 1);
    im_req_spec_cleanup(&sp);
  }
}

int main(void) {
  run_server(NULL, false, 301);
  run_server(NULL, true, 300);
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
    for (size_t i = 0; i < 3; i++) {
      run_server(tok, false, lens[i]);
      run_server(tok, true, lens[i]);
    }
    im_tok_free(tok);
  }
  return CHECK_DONE();
}
