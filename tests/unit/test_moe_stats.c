/* MoE routing statistics (analyze/moe.h): G1 against a hand computation,
 * jitter and Jaccard of known sequences, per-step skew and balancedness,
 * the bounded series, the scraped gauges. */
#include "check.h"
#include "analyze/moe.h"
#include "analyze/validity.h"

static void test_g1(void) {
  /* [1, 2, 3, 10]: mean 4, m2 = 50/4 = 12.5, m3 = 180/4 = 45,
   * g1 = 45 / 12.5^1.5 = 1.018234, G1 = sqrt(4 x 3) / 2 x g1 = 1.763632
   * (pandas.Series([1, 2, 3, 10]).skew()). */
  double v[] = {1, 2, 3, 10};
  CHECK_NEAR(im_moe_g1(v, 4), 1.7636326, 1e-6);
  double flat[] = {5, 5, 5, 5};
  CHECK_NEAR(im_moe_g1(flat, 4), 0, 0);
  CHECK_NEAR(im_moe_g1(v, 2), 0, 0);
  /* Mirrored: the sign flips. */
  double m[] = {-1, -2, -3, -10};
  CHECK_NEAR(im_moe_g1(m, 4), -1.7636326, 1e-6);
  CHECK_NEAR(im_moe_max_over_mean(v, 4), 2.5, 1e-12);
  double zero[] = {0, 0};
  CHECK_NEAR(im_moe_max_over_mean(zero, 2), 0, 0);
}

static void test_tokens(void) {
  struct im_moe_acc *a = NULL;
  CHECK_EQ(im_moe_acc_new(&a, 0), IM_INVAL);
  CHECK_EQ(im_moe_acc_new(&a, 4), IM_OK);
  if (!a)
    return;
  /* One layer, top-2, sequence 7: {0,1} {0,2} {3,2} {3,2}: top-1 changes
   * once in three transitions; Jaccard distances 2/3, 2/3, 0. */
  uint16_t t[4][2] = {{0, 1}, {0, 2}, {3, 2}, {3, 2}};
  for (int i = 0; i < 4; i++)
    CHECK_EQ(im_moe_acc_token(a, 7, 1, 2, t[i]), IM_OK);
  /* Another sequence interleaved later: its first token is no transition. */
  uint16_t u[2] = {5, 6};
  CHECK_EQ(im_moe_acc_token(a, 8, 1, 2, u), IM_OK);
  CHECK_EQ(im_moe_acc_token(a, 8, 2, 2, u), IM_INVAL); /* shape changed */
  /* Steps: 1 layer x 4 experts. */
  uint32_t c1[4] = {4, 0, 0, 0}, c2[4] = {1, 1, 1, 1}, idle[4] = {0, 0, 0, 0};
  CHECK_EQ(im_moe_acc_step(a, 1, 1, 4, c1), IM_OK);
  CHECK_EQ(im_moe_acc_step(a, 2, 1, 4, c2), IM_OK);
  CHECK_EQ(im_moe_acc_step(a, 3, 1, 4, idle), IM_OK);
  CHECK_EQ(im_moe_acc_step(a, 4, 1, 5, c2), IM_INVAL);
  /* An expert id beyond the experts now known. */
  uint16_t bad[2] = {0, 4};
  CHECK_EQ(im_moe_acc_token(a, 9, 1, 2, bad), IM_INVAL);
  struct im_moe_result r;
  CHECK_EQ(im_moe_acc_result(a, &r), IM_OK);
  CHECK_EQ(r.steps, 2);
  CHECK_EQ(r.tokens, 5);
  CHECK_EQ(r.sequences, 2);
  CHECK_EQ(r.layers[0].transitions, 3);
  CHECK_NEAR(r.jitter, 1.0 / 3.0, 1e-12);
  CHECK_NEAR(r.jaccard_distance, (2.0 / 3.0 + 2.0 / 3.0) / 3.0, 1e-12);
  /* Step 1: G1 of [4,0,0,0] = 2 (pandas), max/mean 4, balancedness 0.25;
   * step 2: flat, G1 0, balancedness 1. */
  CHECK_NEAR(r.layers[0].g1_step_mean, 1.0, 1e-9);
  CHECK_NEAR(r.layers[0].max_over_mean_step_mean, 2.5, 1e-12);
  CHECK_NEAR(r.layers[0].balancedness_step_mean, 0.625, 1e-12);
  /* Totals [5,1,1,1]: max/mean 2.5, balancedness 0.4; expert 0 hottest. */
  CHECK_NEAR(r.layers[0].balancedness_total, 0.4, 1e-12);
  CHECK_EQ(r.layers[0].hottest[0], 0);
  CHECK_NEAR(r.layers[0].hottest_share[0], 5.0 / 8.0, 1e-12);
  CHECK_EQ(r.n_series, 1);
  CHECK_NEAR(r.heat[0], 5.0 / 8.0, 1e-12);
  im_moe_result_cleanup(&r);
  im_moe_acc_free(a);
}

/* A long trace keeps at most IM_MOE_MAX_WINDOWS points, each step counted
 * once. */
static void test_series_bounded(void) {
  struct im_moe_acc *a = NULL;
  CHECK_EQ(im_moe_acc_new(&a, 1), IM_OK);
  if (!a)
    return;
  uint32_t c[3] = {1, 2, 3};
  for (uint64_t s = 0; s < 5000; s++)
    if (im_moe_acc_step(a, s, 1, 3, c) != IM_OK)
      CHECK(0);
  struct im_moe_result r;
  CHECK_EQ(im_moe_acc_result(a, &r), IM_OK);
  CHECK(r.n_series <= IM_MOE_MAX_WINDOWS);
  CHECK(r.n_series >= IM_MOE_MAX_WINDOWS / 2);
  uint64_t sum = 0;
  for (size_t i = 0; i < r.n_series; i++) {
    sum += r.series[i].steps;
    CHECK_NEAR(r.heat[i * 3 + 2], 0.5, 1e-12);
    CHECK_NEAR(r.series[i].balancedness_mean, 2.0 / 3.0, 1e-12);
  }
  CHECK_EQ(sum, 5000);
  CHECK_EQ(r.series[1].first_step, r.window_steps);
  im_moe_result_cleanup(&r);
  im_moe_acc_free(a);
}

static void test_scrape(void) {
  const char *p1 =
      "# TYPE infermeter_sim_expert_window_imbalance gauge\n"
      "infermeter_sim_expert_window_imbalance{model_name=\"m\",layer=\"0\"} 1.25\n"
      "infermeter_sim_expert_window_imbalance{model_name=\"m\",layer=\"1\"} 4\n"
      "# TYPE infermeter_sim_expert_window_g1 gauge\n"
      "infermeter_sim_expert_window_g1{model_name=\"m\",layer=\"0\"} 0.5\n"
      "infermeter_sim_expert_window_g1{model_name=\"m\",layer=\"1\"} 3\n"
      "infermeter_sim_kv_fragmentation{model_name=\"m\"} 0.25\n";
  const char *idle = "infermeter_sim_expert_window_imbalance{layer=\"0\"} 0\n";
  const char *p2 =
      "infermeter_sim_expert_window_imbalance{layer=\"0\"} 1.25\n"
      "infermeter_sim_expert_window_imbalance{layer=\"1\"} 2\n"
      "infermeter_sim_expert_window_g1{layer=\"0\"} 0.5\n"
      "infermeter_sim_expert_window_g1{layer=\"1\"} 1\n"
      "infermeter_sim_kv_fragmentation 0.75\n";
  struct im_moe_scrape s;
  im_moe_scrape_init(&s);
  CHECK_EQ(im_moe_scrape_page(&s, p1, strlen(p1)), IM_OK);
  CHECK_EQ(im_moe_scrape_page(&s, idle, strlen(idle)), IM_OK);
  CHECK_EQ(im_moe_scrape_page(&s, p2, strlen(p2)), IM_OK);
  uint32_t low[4];
  size_t n = im_moe_scrape_finish(&s, 0.5, low, 4);
  CHECK_STR(s.source, "infermeter_sim");
  CHECK_EQ(s.pages, 2);
  CHECK_EQ(s.n_layers, 2);
  CHECK_NEAR(s.balancedness[0], 0.8, 1e-12);
  CHECK_NEAR(s.balancedness[1], (0.25 + 0.5) / 2, 1e-12);
  CHECK_NEAR(s.g1[1], 2.0, 1e-12);
  CHECK_EQ(n, 1);
  CHECK_EQ(low[0], 1);
  struct im_valid_check c;
  CHECK(im_moe_audit_check(&s, 0.5, low, n, &c));
  CHECK_STR(c.id, "moe_balance");
  CHECK_EQ(c.status, IM_CHECK_WARN);
  CHECK_STR(c.evidence, "1 of 2 layers skewed (balancedness below 0.50), worst: layer 1 at 0.38 "
                        "(not judged against chance: the server exports no count of routed "
                        "picks)");
  CHECK(c.fix[0] != '\0');
  CHECK(im_moe_audit_check(&s, 0.2, low, 0, &c));
  CHECK_EQ(c.status, IM_CHECK_PASS);
  CHECK_EQ(s.kv_frag_pages, 2);
  CHECK_NEAR(s.kv_frag_mean, 0.5, 1e-12);
  CHECK_NEAR(s.kv_frag_max, 0.75, 1e-12);
  /* SGLang's summary: its growth over the stage. */
  const char *g1 = "# TYPE sglang:eplb_balancedness summary\n"
                   "sglang:eplb_balancedness_sum 10\nsglang:eplb_balancedness_count 20\n";
  const char *g2 = "# TYPE sglang:eplb_balancedness summary\n"
                   "sglang:eplb_balancedness_sum 17\nsglang:eplb_balancedness_count 30\n";
  im_moe_scrape_init(&s);
  CHECK_EQ(im_moe_scrape_page(&s, g1, strlen(g1)), IM_OK);
  CHECK_EQ(im_moe_scrape_page(&s, g2, strlen(g2)), IM_OK);
  CHECK_EQ(im_moe_scrape_finish(&s, 0.5, low, 4), 0);
  CHECK_STR(s.source, "sglang");
  CHECK_NEAR(s.balancedness_mean, 0.7, 1e-12);
  im_moe_scrape_init(&s);
  CHECK_EQ(im_moe_scrape_finish(&s, 0.5, low, 4), 0);
  CHECK(s.source == NULL);
  CHECK(!im_moe_audit_check(&s, 0.5, low, 0, &c));
}

/* Chance (analyze/moe.h): one expert's max is its own count, max/mean 1;
 * many picks spread evenly (max/mean near 1), few do not; a window of
 * 3,875 picks over 256 experts (lambda 15.1: the built-in server's default
 * load) peaks near 1.75x its mean by chance alone. */
static void test_chance(void) {
  CHECK_NEAR(im_moe_chance_max_over_mean(50, 1), 1.0, 1e-9);
  CHECK(isnan(im_moe_chance_max_over_mean(0, 256)));
  CHECK(isnan(im_moe_chance_max_over_mean(100, 0)));
  double big = im_moe_chance_max_over_mean(256e6, 256);
  CHECK(big > 1.0 && big < 1.005); /* lambda 1e6: about 1 + 2.8 / 1000 */
  double mid = im_moe_chance_max_over_mean(3875, 256), few = im_moe_chance_max_over_mean(40, 256);
  CHECK(mid > 1.6 && mid < 1.9); /* 15.1 + 2.8 x 3.9 over 15.1 */
  CHECK(few > mid);
  /* 40 picks over 256 (lambda 0.156): P(max >= 2) = 1 - (1 - 0.0111)^256 =
   * 0.94, P(max >= 3) = 0.14, P(max >= 4) = 0.006: E[max] = 2.08, over
   * lambda 13.3 (a balancedness of 0.075 is chance at that size). */
  CHECK(few > 12.8 && few < 14.0);
}

/* Scraped pages with the window's picks: a layer below the reference but
 * within 3x chance's excess is not skewed; one far beyond is. */
static void test_scrape_chance(void) {
  char page[1024];
  double chance = im_moe_chance_max_over_mean(3875, 256); /* about 1.78 */
  snprintf(page, sizeof page,
           "infermeter_sim_expert_window_imbalance{layer=\"0\"} 1.8\n"
           "infermeter_sim_expert_window_imbalance{layer=\"1\"} 2.5\n"
           "infermeter_sim_expert_window_imbalance{layer=\"2\"} 8\n"
           "infermeter_sim_expert_window_picks{model_name=\"m\",experts=\"256\"} 3875\n");
  struct im_moe_scrape s;
  im_moe_scrape_init(&s);
  CHECK_EQ(im_moe_scrape_page(&s, page, strlen(page)), IM_OK);
  CHECK_EQ(im_moe_scrape_page(&s, page, strlen(page)), IM_OK);
  uint32_t low[4];
  size_t n = im_moe_scrape_finish(&s, 0.5, low, 4);
  CHECK(s.judged_against_chance);
  CHECK_EQ(s.chance_pages, 2);
  CHECK_NEAR(s.picks_mean, 3875, 1e-9);
  CHECK_NEAR(s.chance_max_over_mean, chance, 1e-12);
  CHECK_EQ(s.below_ref, 2); /* layers 1 (0.4) and 2 (0.125) */
  CHECK_EQ(n, 1);           /* 2.5 - 1 < 3 x (1.78 - 1); 8 - 1 is not */
  CHECK_EQ(low[0], 2);
  CHECK_EQ(s.worst_layer, 2);
  struct im_valid_check c;
  CHECK(im_moe_audit_check(&s, 0.5, low, n, &c));
  CHECK_EQ(c.status, IM_CHECK_WARN);
  CHECK_STR(c.evidence, "1 of 3 layers skewed (balancedness below 0.50, excess over chance at "
                        "least 3x), worst: layer 2 at 0.12 (uniform routing of the 3875 picks "
                        "per window: 0.56)");
  /* A page without the picks: not judged against chance, the reference
   * alone decides (older servers, the fixtures). */
  const char *old = "infermeter_sim_expert_window_imbalance{layer=\"0\"} 2.5\n";
  im_moe_scrape_init(&s);
  CHECK_EQ(im_moe_scrape_page(&s, old, strlen(old)), IM_OK);
  CHECK_EQ(im_moe_scrape_finish(&s, 0.5, low, 4), 1);
  CHECK(!s.judged_against_chance);
  char sum[400];
  im_moe_scrape_summary(&s, 0.5, 1, sum, sizeof sum);
  CHECK(strstr(sum, "not judged against chance") != NULL);
}

int main(void) {
  test_chance();
  test_scrape_chance();
  test_g1();
  test_tokens();
  test_series_bounded();
  test_scrape();
  return CHECK_DONE();
}
