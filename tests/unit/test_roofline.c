/* Roofline figures (analyze/roofline.h) against the worked examples of
 * docs/deepseek.md, the in-flight context reconstruction on hand-made
 * records, and the knee on synthetic throughput curves. */
#include "check.h"
#include "analyze/roofline.h"

static struct im_roofline_sys dsv3_8xh200(void) {
  struct im_roofline_sys s = {.model = im_model_preset("deepseek-ai/DeepSeek-V3"),
                              .hw = im_hw_preset("H200"), .gpus = 8, .tp = 8, .dp = 1,
                              .bw_util_ref = 0.78, .mfu_ref = 0.32, .kv_residency_ref = 0.68};
  return s;
}

/* docs/deepseek.md, worked example 2: batch 32 at 4,096 tokens. */
static void test_predict_dsv3(void) {
  struct im_roofline_sys s = dsv3_8xh200();
  struct im_roofline_pred p;
  im_roofline_predict(&s, 32, 4096, &p);
  CHECK_NEAR(p.distinct_experts, 163.3138, 1e-3);
  CHECK_REL(p.weight_bytes_per_gpu, 54.2811e9, 1e-4);
  CHECK_NEAR(p.kv_bytes_per_gpu, 9210691584.0, 1);
  CHECK_REL(p.step_bytes_per_gpu, 63.4918e9, 1e-4);
  CHECK_NEAR(p.bw_step_s * 1e3, 13.2275, 1e-3);
  CHECK_NEAR(p.compute_step_s * 1e3, 0.29023, 1e-4);
  CHECK(p.bandwidth_bound);
  /* Measured TPOT 20 ms: 63.49e9 / (0.020 x 4.8e12) = 0.661. */
  CHECK_NEAR(im_roofline_bw_util(&s, &p, 0.020), 0.66137, 1e-4);
  CHECK(isnan(im_roofline_bw_util(&s, &p, 0)));
  /* 1,600 output tok/s on 8 GPUs: 2 x 37e9 x 1600 / (1979e12 x 8). */
  CHECK_NEAR(im_roofline_mfu(&s, 1600), 0.0074785, 1e-6);
  /* More context, more bytes, same weights. */
  struct im_roofline_pred q;
  im_roofline_predict(&s, 32, 8192, &q);
  CHECK(q.kv_bytes_per_gpu > 1.99 * p.kv_bytes_per_gpu);
  CHECK_NEAR(q.weight_bytes_per_gpu, p.weight_bytes_per_gpu, 1);
}

/* docs/deepseek.md, worked example 3: the seed's 32 % MFU line on an A100. */
static void test_mfu_a100(void) {
  struct im_roofline_sys s = {.model = im_model_preset("Llama-3.1-8B-Instruct"),
                              .hw = im_hw_preset("A100-SXM"), .gpus = 1, .tp = 1};
  CHECK_NEAR(im_roofline_mfu(&s, 6000), 0.30885, 1e-4);
  /* Dense, batch 1, no context: weights only, 8.03e9 x 2 B / 2.039e12. */
  struct im_roofline_pred p;
  im_roofline_predict(&s, 1, 0, &p);
  CHECK_NEAR(p.distinct_experts, 0, 0);
  CHECK_NEAR(p.bw_step_s * 1e3, 7.8764, 1e-3);
}

static struct im_record rec(int64_t start, int64_t first, int64_t end, uint32_t prompt,
                            uint32_t out) {
  struct im_record r;
  memset(&r, 0, sizeof r);
  im_record_reset(&r);
  r.t_sched = r.t_dispatch = r.t_start = r.t_send = start;
  r.t_first = first;
  r.t_end = end;
  r.prompt_tokens = prompt;
  r.output_tokens = out;
  /* out tokens evenly from first to end - 1 ms */
  for (uint32_t i = 0; i < out; i++) {
    int64_t t = first + (out > 1 ? (end - 1000000 - first) * (int64_t)i / (out - 1) : 0);
    if (im_record_add_chunk(&r, t, 1) != IM_OK)
      exit(1);
    r.t_last = t;
  }
  return r;
}

static void test_inflight(void) {
  /* A: sent at 0, first token at 1 s, 11 tokens until 2 s, prompt 100.
   * B: sent at 0.5 s, first token at 0.6 s, 2 tokens until 3 s, prompt 1000. */
  struct im_record r[2] = {rec(0, 1000000000, 2000000000, 100, 11),
                           rec(500000000, 600000000, 3000000000, 1000, 2)};
  struct im_inflight_pt *p = NULL;
  /* Instants at 0.25, 0.75, 1.25, 1.75, 2.25, 2.75 s. */
  CHECK_EQ(im_inflight_series(r, 2, 0, 3000000000, 6, &p), IM_OK);
  if (p) {
    CHECK_EQ(p[0].n, 1);
    CHECK_EQ(p[0].decoding, 0);
    CHECK_NEAR(p[0].mean, 100, 0);
    /* 0.75 s: A 100 (no token yet), B 1000 + 1 (its first chunk at 0.6 s). */
    CHECK_EQ(p[1].n, 2);
    CHECK_EQ(p[1].decoding, 1);
    CHECK_NEAR(p[1].min, 100, 0);
    CHECK_NEAR(p[1].max, 1001, 0);
    CHECK_NEAR(p[1].mean, 550.5, 1e-9);
    CHECK_NEAR(p[1].std, 450.5, 1e-9);
    /* 1.75 s: A's chunks at 1.0 + 0.0999 i s: 8 of them (i = 0..7). */
    CHECK_NEAR(p[3].max, 1001, 0);
    CHECK_NEAR(p[3].min, 108, 0);
    /* 2.25 s: A over. */
    CHECK_EQ(p[4].n, 1);
  }
  free(p);
  CHECK_EQ(im_inflight_series(r, 2, 10, 10, 6, &p), IM_INVAL);
  for (int i = 0; i < 2; i++)
    im_record_cleanup(&r[i]);
}

static void test_compute(void) {
  struct im_roofline_sys s = dsv3_8xh200();
  struct im_record r[2] = {rec(0, 1000000000, 2000000000, 100, 11),
                           rec(500000000, 600000000, 3000000000, 1000, 2)};
  struct im_roofline rl;
  CHECK_EQ(im_roofline_compute(&s, r, 2, 0, 3000000000, &rl), IM_OK);
  CHECK(rl.not_collected == NULL);
  CHECK_EQ(rl.n_users, 2);
  CHECK_NEAR(rl.kv_bytes_per_1k_tokens, 70272000.0, 0);
  CHECK(strstr(rl.kv_formula, "512") != NULL);
  /* TPOTs: A (1.999 - 1) / 10 = 0.0999 s, B (2.999 - 0.6) / 1 = 2.399 s. */
  CHECK_NEAR(rl.tpot_mean_s, (0.0999 + 2.399) / 2, 1e-9);
  CHECK_NEAR(rl.user_tok_s_p90, 1 / 0.0999, 1e-6);
  CHECK_EQ(rl.n_buckets, 1);
  /* All 13 tokens arrived inside the 3 s window. */
  CHECK_NEAR(rl.output_tok_s, 13.0 / 3.0, 1e-9);
  CHECK_NEAR(rl.output_tok_s_per_gpu, 13.0 / 24.0, 1e-9);
  CHECK(rl.batch_mean > 0 && rl.batch_mean <= 2);
  CHECK(rl.kv_residency_max > 0 && rl.kv_residency_max < 1e-3);
  im_roofline_cleanup(&rl);
  struct im_roofline_sys none = {0};
  CHECK_EQ(im_roofline_compute(&none, r, 2, 0, 3000000000, &rl), IM_OK);
  CHECK(rl.not_collected != NULL);
  im_roofline_cleanup(&rl);
  for (int i = 0; i < 2; i++)
    im_record_cleanup(&r[i]);
}

static void test_knee(void) {
  double ctx[6] = {4096, 8192, 16384, 32768, 65536, 131072};
  /* Flat then falling: the knee is where 850 < 0.85 x mean(1000, 990, 980). */
  double flat[6] = {1000, 990, 980, 820, 600, 400};
  CHECK_EQ(im_roofline_knee(ctx, flat, 6, 0.15), 3);
  /* A 15 % fall exactly is not below the line. */
  double edge[3] = {1000, 1000, 850};
  CHECK_EQ(im_roofline_knee(ctx, edge, 3, 0.15), -1);
  double none[4] = {1000, 1000, 990, 995};
  CHECK_EQ(im_roofline_knee(ctx, none, 4, 0.15), -1);
  /* Geometric 10 % per step: mean of the earlier points is what falls behind. */
  double geo[5] = {1000, 900, 810, 729, 656.1};
  CHECK_EQ(im_roofline_knee(ctx, geo, 5, 0.15), 3);
  double unsorted[3] = {8192, 4096, 2048};
  CHECK_EQ(im_roofline_knee(unsorted, flat, 3, 0.15), -1);
  CHECK_EQ(im_roofline_knee(ctx, flat, 1, 0.15), -1);
}

int main(void) {
  test_predict_dsv3();
  test_mfu_a100();
  test_inflight();
  test_compute();
  test_knee();
  return CHECK_DONE();
}
