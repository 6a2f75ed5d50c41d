/* Code/text mix check (analyze/mix.h): a planted 2x difference warns, the
 * same latency in both classes does not, a difference within noise does
 * not, one class alone is not computed. */
#include "check.h"
#include "analyze/mix.h"

/* A request: TTFT ttft_ms over `prompt` tokens, then 11 tokens at tpot_ms. */
static void mk(struct im_record *r, enum im_req_class cls, double ttft_ms, double tpot_ms,
               uint32_t prompt) {
  memset(r, 0, sizeof *r);
  im_record_reset(r);
  r->t_sched = r->t_dispatch = r->t_start = 1000000;
  r->t_first = r->t_start + (int64_t)(ttft_ms * 1e6);
  r->t_last = r->t_first + (int64_t)(10 * tpot_ms * 1e6);
  r->prompt_tokens = prompt;
  r->output_tokens = 11;
  r->content_class = cls;
}

static void run(double code_tpot, double jitter, bool want_warn) {
  struct im_record r[40];
  for (int i = 0; i < 40; i++) {
    bool code = i % 2;
    double j = (i % 4 < 2 ? -1 : 1) * jitter;
    mk(&r[i], code ? IM_CLASS_CODE : IM_CLASS_TEXT, 100 + j, (code ? code_tpot : 20) + j, 1000);
  }
  struct im_class_mix m;
  CHECK_EQ(im_mix_compute(r, 40, 0, INT64_MAX, &m), IM_OK);
  CHECK(m.computed);
  CHECK_EQ(m.tpot.n_code, 20);
  CHECK_NEAR(m.ttft_per_token.code_mean, 0.1, 1e-9); /* 100 ms over 1000 tokens */
  CHECK(m.tpot.warn == want_warn);
  CHECK(!m.ttft_per_token.warn);
  for (int i = 0; i < 40; i++)
    im_record_cleanup(&r[i]);
}

int main(void) {
  run(40, 1, true);    /* 2x, tight: warns */
  run(20, 1, false);   /* same */
  run(21, 8, false);   /* 5 %: below the 10 % line */
  run(23, 15, false);  /* 15 % but within noise (Welch p > 0.05) */
  struct im_record one;
  mk(&one, IM_CLASS_CODE, 100, 20, 10);
  struct im_class_mix m;
  CHECK_EQ(im_mix_compute(&one, 1, 0, INT64_MAX, &m), IM_OK);
  CHECK(!m.computed);
  im_record_cleanup(&one);
  return CHECK_DONE();
}
