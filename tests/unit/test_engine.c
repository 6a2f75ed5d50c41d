/* The simulated engine, driven on a virtual clock: every time the engine
 * sees is passed in, so the tests are exact and take no wall time. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "serve/engine.h"

struct rec {
  uint32_t tokens, chunks, finished, reasoning_switches;
  bool last_reasoning;
  enum im_finish why;
  int64_t first_t, last_t;
  uint32_t max_chunk;
  struct im_engine *abort_engine; /* abort self after abort_after tokens */
  uint32_t abort_after;
};

static void on_tokens(struct im_seq *seq, const char *text, size_t len, uint32_t n, bool reasoning,
                      int64_t t) {
  struct rec *r = seq->ctx;
  CHECK(len > 0 && text != NULL);
  if (r->chunks && reasoning != r->last_reasoning)
    r->reasoning_switches++;
  r->last_reasoning = reasoning;
  if (!r->chunks)
    r->first_t = t;
  r->last_t = t;
  r->tokens += n;
  r->chunks++;
  if (n > r->max_chunk)
    r->max_chunk = n;
  if (r->abort_engine && r->tokens >= r->abort_after) {
    im_engine_abort(r->abort_engine, seq);
    r->abort_engine = NULL;
  }
}

static void on_finish(struct im_seq *seq, enum im_finish why) {
  struct rec *r = seq->ctx;
  r->finished++;
  r->why = why;
}

static const struct im_seq_sink sink = {on_tokens, on_finish};

struct step_log {
  uint32_t n;
  uint32_t tokens[64];
  uint32_t seqs[64];
  double total_s[64];
};

static void on_step(void *ctx, const struct im_step_cost *cost, double wall_s,
                    const struct im_moe_step_stats *moe, uint32_t n_seqs, uint32_t n_tokens) {
  (void)wall_s;
  (void)moe;
  struct step_log *l = ctx;
  if (l->n < 64) {
    l->tokens[l->n] = n_tokens;
    l->seqs[l->n] = n_seqs;
    l->total_s[l->n] = cost->total_s;
    l->n++;
  }
}

static struct im_profile quiet_profile(const char *name) {
  struct im_profile p = *im_profile_find(name);
  p.noise_sigma = 0; /* exact step times */
  return p;
}

static void params(struct im_seq_params *p, const uint32_t *prompt, uint32_t n, uint32_t max_tokens,
                   struct rec *r) {
  memset(p, 0, sizeof *p);
  p->request_id = "t";
  p->prompt = prompt;
  p->n_prompt = n;
  p->max_tokens = max_tokens;
  p->ignore_eos = true;
  p->temperature = 1.0;
  p->top_p = 1.0;
  p->stall_token = -1;
  p->sink = &sink;
  p->ctx = r;
}

/* Runs the engine until idle; returns the virtual end time. */
static int64_t run(struct im_engine *e, int64_t t, int max_ticks) {
  for (int i = 0; i < max_ticks; i++) {
    int64_t d = im_engine_next_deadline(e);
    if (d < 0)
      return t;
    t = d > t ? d : t;
    im_engine_tick(e, t);
  }
  CHECK_FAIL("engine did not become idle");
  return t;
}

static uint32_t *make_prompt(uint32_t n, uint32_t base) {
  uint32_t *p = malloc(n * sizeof *p);
  for (uint32_t i = 0; i < n; i++)
    p[i] = base + i;
  return p;
}

static void test_chunked_prefill_and_step_time(void) {
  struct im_profile prof = quiet_profile("llama-3.1-8b-1xh100");
  struct im_engine_config cfg;
  im_engine_config_default(&cfg);
  cfg.profile = &prof;
  cfg.max_num_batched_tokens = 100;
  cfg.time_scale = 10;
  struct im_engine *e;
  CHECK_OK(im_engine_new(&e, &cfg));
  struct step_log log = {0};
  struct im_engine_observer obs = {.on_step = on_step, .ctx = &log};
  im_engine_set_observer(e, &obs);

  uint32_t *prompt = make_prompt(250, 1000);
  struct rec r = {0};
  struct im_seq_params p;
  params(&p, prompt, 250, 5, &r);
  struct im_seq *s;
  CHECK_OK(im_engine_submit(e, &p, 1000, &s));
  CHECK_EQ(im_engine_next_deadline(e), 1000);
  im_engine_tick(e, 1000);
  /* The first step's deadline is its modelled time divided by the scale. */
  int64_t d = im_engine_next_deadline(e);
  CHECK_EQ(log.n, 0);
  run(e, 1000, 100);
  CHECK_EQ(log.n, 3 + 4); /* prefill 100 + 100 + 50, then 4 more decode steps */
  CHECK_EQ(log.tokens[0], 100);
  CHECK_EQ(log.tokens[1], 100);
  CHECK_EQ(log.tokens[2], 50);
  CHECK_EQ(log.tokens[3], 1);
  CHECK_NEAR((double)(d - 1000), log.total_s[0] * 1e9 / 10, 2);
  CHECK_EQ(r.tokens, 5);
  CHECK_EQ(r.chunks, 5);
  CHECK_EQ(r.finished, 1);
  CHECK_EQ(r.why, IM_FINISH_LENGTH);
  struct im_engine_stats st;
  im_engine_get_stats(e, &st);
  CHECK_EQ(st.prompt_tokens, 250);
  CHECK_EQ(st.generation_tokens, 5);
  CHECK_EQ(st.running + st.waiting, 0);
  CHECK_NEAR(st.kv_usage, 0.0, 1e-12);
  im_engine_free(e);
  free(prompt);
}

static void test_admission_limit(void) {
  struct im_profile prof = quiet_profile("llama-3.1-8b-1xh100");
  struct im_engine_config cfg;
  im_engine_config_default(&cfg);
  cfg.profile = &prof;
  cfg.max_num_seqs = 2;
  struct im_engine *e;
  CHECK_OK(im_engine_new(&e, &cfg));
  uint32_t *prompt = make_prompt(20, 7);
  struct rec r[3] = {{0}};
  struct im_seq *s[3];
  for (int i = 0; i < 3; i++) {
    struct im_seq_params p;
    params(&p, prompt, 20, 10, &r[i]);
    CHECK_OK(im_engine_submit(e, &p, 0, &s[i]));
  }
  im_engine_tick(e, 0);
  struct im_engine_stats st;
  im_engine_get_stats(e, &st);
  CHECK_EQ(st.running, 2);
  CHECK_EQ(st.waiting, 1);
  CHECK_EQ(s[2]->state, IM_SEQ_WAITING);
  run(e, 0, 1000);
  for (int i = 0; i < 3; i++)
    CHECK_EQ(r[i].tokens, 10);
  /* FCFS: the third starts only after a seat frees up. */
  CHECK(r[2].first_t > r[0].last_t - 1);
  im_engine_free(e);
  free(prompt);
}

static void test_preemption(void) {
  struct im_profile prof = quiet_profile("llama-3.1-8b-1xh100");
  struct im_engine_config cfg;
  im_engine_config_default(&cfg);
  cfg.profile = &prof;
  cfg.block_size = 16;
  cfg.kv_blocks = 12; /* 192 tokens: two sequences of 64 + 100 cannot both fit */
  struct im_engine *e;
  CHECK_OK(im_engine_new(&e, &cfg));
  uint32_t *pa = make_prompt(64, 100), *pb = make_prompt(64, 5000);
  struct rec ra = {0}, rb = {0};
  struct im_seq_params p;
  struct im_seq *sa, *sb;
  params(&p, pa, 64, 100, &ra);
  CHECK_OK(im_engine_submit(e, &p, 0, &sa));
  params(&p, pb, 64, 100, &rb);
  CHECK_OK(im_engine_submit(e, &p, 0, &sb));
  run(e, 0, 10000);
  struct im_engine_stats st;
  im_engine_get_stats(e, &st);
  CHECK_INT(st.preemptions, >=, 1);
  CHECK_EQ(ra.tokens, 100);
  CHECK_EQ(rb.tokens, 100);
  CHECK_EQ(ra.finished + rb.finished, 2);
  /* The newest (b) is the one preempted: a finishes first. */
  CHECK(ra.last_t <= rb.last_t);
  CHECK_NEAR(st.kv_usage, 0.0, 1e-12);
  im_engine_free(e);
  free(pa);
  free(pb);
}

static void test_prefix_cache(void) {
  struct im_profile prof = quiet_profile("llama-3.1-8b-1xh100");
  struct im_engine_config cfg;
  im_engine_config_default(&cfg);
  cfg.profile = &prof;
  cfg.block_size = 16;
  struct im_engine *e;
  CHECK_OK(im_engine_new(&e, &cfg));
  struct step_log log = {0};
  struct im_engine_observer obs = {.on_step = on_step, .ctx = &log};
  im_engine_set_observer(e, &obs);
  uint32_t *prompt = make_prompt(128, 9);
  struct rec r1 = {0}, r2 = {0};
  struct im_seq_params p;
  struct im_seq *s;
  params(&p, prompt, 128, 1, &r1);
  CHECK_OK(im_engine_submit(e, &p, 0, &s));
  CHECK_EQ(s->n_cached, 0);
  int64_t t = run(e, 0, 100);
  params(&p, prompt, 128, 1, &r2);
  CHECK_OK(im_engine_submit(e, &p, t, &s));
  im_engine_tick(e, t);
  CHECK_EQ(s->n_cached, 112); /* 127 tokens at most, whole blocks: 7 x 16 */
  run(e, t, 100);
  CHECK_EQ(log.tokens[0], 128);
  CHECK_EQ(log.tokens[1], 16); /* only the uncached tail is computed */
  struct im_engine_stats st;
  im_engine_get_stats(e, &st);
  CHECK_EQ(st.kv.queries_tokens, 256);
  CHECK_EQ(st.kv.hits_tokens, 112);
  im_engine_free(e);
  free(prompt);
}

static void test_mtp_and_abort(void) {
  struct im_profile prof = quiet_profile("deepseek-v3-8xh200");
  struct im_engine_config cfg;
  im_engine_config_default(&cfg);
  cfg.profile = &prof;
  cfg.mtp_k = 3;
  cfg.mtp_accept = 1.0;
  struct im_engine *e;
  CHECK_OK(im_engine_new(&e, &cfg));
  uint32_t *prompt = make_prompt(30, 77);
  struct rec r = {0}, ra = {0};
  struct im_seq_params p;
  struct im_seq *s;
  params(&p, prompt, 30, 41, &r);
  CHECK_OK(im_engine_submit(e, &p, 0, &s));
  /* A second request aborts itself from inside its token callback. */
  ra.abort_after = 9;
  ra.abort_engine = e;
  params(&p, prompt, 30, 1000, &ra);
  CHECK_OK(im_engine_submit(e, &p, 0, &s));
  run(e, 0, 1000);
  CHECK_EQ(r.tokens, 41);
  CHECK_EQ(r.chunks, 11); /* first token from prefill, then 10 steps of 4 */
  CHECK_EQ(r.max_chunk, 4);
  CHECK_EQ(ra.finished, 0);
  CHECK(ra.tokens >= 9 && ra.tokens <= 12);
  struct im_engine_stats st;
  im_engine_get_stats(e, &st);
  CHECK_EQ(st.aborted, 1);
  CHECK_EQ(st.running + st.waiting, 0);
  CHECK_NEAR(st.kv_usage, 0.0, 1e-12);
  im_engine_free(e);
  free(prompt);
}

/* A request submitted with a delay (a new connection's setup) is neither
 * waiting nor running until the delay has passed, then starts as any other;
 * one aborted during its delay leaves nothing behind. */
static void test_arrival_delay(void) {
  struct im_profile prof = quiet_profile("llama-3.1-8b-1xh100");
  struct im_engine_config cfg;
  im_engine_config_default(&cfg);
  cfg.profile = &prof;
  struct im_engine *e;
  CHECK_OK(im_engine_new(&e, &cfg));
  uint32_t *prompt = make_prompt(20, 5);
  struct rec r = {0}, ra = {0};
  struct im_seq_params p;
  struct im_seq *s, *sa;
  params(&p, prompt, 20, 3, &r);
  p.delay_ns = 5000000;
  CHECK_OK(im_engine_submit(e, &p, 1000, &s));
  params(&p, prompt, 20, 3, &ra);
  p.delay_ns = 5000000;
  CHECK_OK(im_engine_submit(e, &p, 1000, &sa));
  CHECK_EQ(im_engine_next_deadline(e), 5001000);
  struct im_engine_stats st;
  im_engine_get_stats(e, &st);
  CHECK_EQ(st.waiting + st.running, 0);
  im_engine_tick(e, 3000000); /* before its time: nothing happens */
  CHECK_EQ(im_engine_next_deadline(e), 5001000);
  im_engine_abort(e, sa);
  run(e, 3000000, 1000);
  CHECK_EQ(r.tokens, 3);
  CHECK(r.first_t > 5001000);
  CHECK_EQ(ra.tokens, 0);
  im_engine_get_stats(e, &st);
  CHECK_EQ(st.aborted, 1);
  CHECK_EQ(st.running + st.waiting, 0);
  im_engine_free(e);
  free(prompt);
}

static void test_reasoning_and_stall(void) {
  struct im_profile prof = quiet_profile("deepseek-r1-8xh200");
  struct im_engine_config cfg;
  im_engine_config_default(&cfg);
  cfg.profile = &prof;
  struct im_engine *e;
  CHECK_OK(im_engine_new(&e, &cfg));
  uint32_t *prompt = make_prompt(30, 77);
  struct rec r = {0};
  struct im_seq_params p;
  struct im_seq *s;
  params(&p, prompt, 30, 50, &r);
  p.stall_token = 10;
  p.stall_ns = 5000000000LL; /* 5 s, far longer than 50 steps */
  CHECK_OK(im_engine_submit(e, &p, 0, &s));
  uint32_t n_reasoning = s->n_reasoning;
  CHECK(n_reasoning > 0 && n_reasoning < 50);
  int64_t end = run(e, 0, 1000);
  CHECK_EQ(r.tokens, 50);
  CHECK_EQ(r.reasoning_switches, 1);
  CHECK_EQ(r.last_reasoning, false);
  CHECK_INT(end, >=, 5000000000LL);
  im_engine_free(e);
  free(prompt);
}

int main(void) {
  test_arrival_delay();
  test_chunked_prefill_and_step_time();
  test_admission_limit();
  test_preemption();
  test_prefix_cache();
  test_mtp_and_abort();
  test_reasoning_and_stall();
  return CHECK_DONE();
}
