/* Unit tests of src/workload/stages.c: perturbation, grid, sweeps,
 * saturation detector and saturation point. */
#include "workload/stages.h"

#include "check.h"
#include "core/rng.h"

#define PI 3.14159265358979323846

static void expect_perturb(const char *id, unsigned mod100, double t0, double p0, double cur,
                           double max, double load) {
  double phase = (mod100 / 50.0) * PI;
  double te = fmax(0.1, t0 + 0.3 * sin(phase) * load);
  double pe = fmax(0.1, p0 - 0.2 * fabs(cos(phase)) * (1.0 - load));
  double t = 0, p = 0;
  im_perturb(id, t0, p0, cur, max, &t, &p);
  CHECK_NEAR(t, te, 1e-12);
  CHECK_NEAR(p, pe, 1e-12);
}

static void test_perturb(void) {
  /* FNV-1a 64 test vectors (Fowler/Noll/Vo reference): "" = 0xcbf29ce484222325,
   * "a" = 0xaf63dc4c8601ec8c, "foobar" = 0x85944171f73967e8. */
  CHECK(im_fnv1a64("", 0) == 0xcbf29ce484222325ull);
  CHECK(im_fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull);
  CHECK(im_fnv1a64("foobar", 6) == 0x85944171f73967e8ull);
  CHECK_EQ(0xcbf29ce484222325ull % 100, 37);
  CHECK_EQ(0xaf63dc4c8601ec8cull % 100, 96);
  CHECK_EQ(0x85944171f73967e8ull % 100, 68);

  /* Hand-computed: "a", phase 1.92 pi, load 0.5, T0 0.7, P0 0.9. */
  double t = 0, p = 0;
  im_perturb("a", 0.7, 0.9, 5, 10, &t, &p);
  CHECK_NEAR(t, 0.7 + 0.3 * sin(1.92 * PI) * 0.5, 1e-12);
  CHECK_NEAR(t, 0.7 - 0.15 * 0.248689887164855, 1e-9); /* sin(0.08 pi) */
  CHECK_NEAR(p, 0.9 - 0.1 * 0.968583161128631, 1e-9);  /* cos(0.08 pi) */
  /* "" : phase 0.74 pi; full load -> top_p = P0 exactly. */
  im_perturb("", 0.5, 0.95, 10, 10, &t, &p);
  CHECK_NEAR(t, 0.5 + 0.3 * 0.728968627421411, 1e-9); /* sin(0.74 pi) */
  CHECK_NEAR(p, 0.95, 1e-15);
  /* NULL id acts as "". */
  double t2 = 0, p2 = 0;
  im_perturb(NULL, 0.5, 0.95, 10, 10, &t2, &p2);
  CHECK(t2 == t && p2 == p);
  expect_perturb("foobar", 68, 0.8, 0.9, 3, 12, 0.25);
  /* Zero load: temperature = T0 exactly. */
  expect_perturb("foobar", 68, 0.8, 0.9, 0, 12, 0.0);
  im_perturb("foobar", 0.8, 0.9, 0, 12, &t, &p);
  CHECK(t == 0.8);

  /* Load clamping. */
  expect_perturb("a", 96, 0.7, 0.9, 50, 10, 1.0);
  expect_perturb("a", 96, 0.7, 0.9, -3, 10, 0.0);
  expect_perturb("a", 96, 0.7, 0.9, 0, 0, 0.0); /* 0/0 */
  expect_perturb("a", 96, 0.7, 0.9, 4, 0, 1.0); /* over max 0 */
  expect_perturb("a", 96, 0.7, 0.9, NAN, 10, 0.0);

  /* Floors. */
  im_perturb("a", 0.0, 0.05, 10, 10, &t, &p);
  CHECK(t == 0.1);
  CHECK(p == 0.1);

  /* Determinism and bounds over many ids and loads. */
  char id[32];
  int phases_seen_neg = 0, phases_seen_pos = 0;
  for (int i = 0; i < 500; i++) {
    snprintf(id, sizeof id, "req-%d", i);
    for (int k = 0; k <= 10; k++) {
      double load = k / 10.0, ta, pa, tb, pb;
      im_perturb(id, 0.7, 0.9, load * 8, 8, &ta, &pa);
      im_perturb(id, 0.7, 0.9, load * 8, 8, &tb, &pb);
      CHECK(ta == tb && pa == pb);
      CHECK(ta >= 0.1 && pa >= 0.1);
      CHECK(ta >= 0.7 - 0.3 * load - 1e-12 && ta <= 0.7 + 0.3 * load + 1e-12);
      CHECK(pa <= 0.9 + 1e-12 && pa >= 0.9 - 0.2 * (1 - load) - 1e-12);
      if (ta < 0.7)
        phases_seen_neg = 1;
      if (ta > 0.7)
        phases_seen_pos = 1;
    }
    uint64_t h = im_fnv1a64(id, strlen(id));
    expect_perturb(id, (unsigned)(h % 100), 0.6, 0.8, 2, 8, 0.25);
  }
  CHECK(phases_seen_neg && phases_seen_pos);
  /* Output pointers may be NULL. */
  im_perturb("a", 0.7, 0.9, 1, 2, NULL, NULL);
}

static void test_grid(void) {
  struct im_grid g;
  char err[256];
  struct im_stage st;
  im_grid_init(&g);
  CHECK_EQ(im_grid_count(&g), 0);
  CHECK_EQ(im_grid_stage(&g, 0, &st), IM_INVAL);
  CHECK_OK(im_grid_add(&g, "temperature=0.2,0.8,1.2", err, sizeof err));
  CHECK_EQ(im_grid_count(&g), 3);
  CHECK_OK(im_grid_add(&g, "top_p=0.5, 0.95", err, sizeof err));
  CHECK_EQ(im_grid_count(&g), 6);
  CHECK_OK(im_grid_add(&g, "output_len=256,1024", err, sizeof err));
  CHECK_EQ(im_grid_count(&g), 12);
  /* Order: last axis fastest. */
  static const char *const labels[12] = {
      "temperature=0.2,top_p=0.5,output_len=256",  "temperature=0.2,top_p=0.5,output_len=1024",
      "temperature=0.2,top_p=0.95,output_len=256", "temperature=0.2,top_p=0.95,output_len=1024",
      "temperature=0.8,top_p=0.5,output_len=256",  "temperature=0.8,top_p=0.5,output_len=1024",
      "temperature=0.8,top_p=0.95,output_len=256", "temperature=0.8,top_p=0.95,output_len=1024",
      "temperature=1.2,top_p=0.5,output_len=256",  "temperature=1.2,top_p=0.5,output_len=1024",
      "temperature=1.2,top_p=0.95,output_len=256", "temperature=1.2,top_p=0.95,output_len=1024",
  };
  for (size_t i = 0; i < 12; i++) {
    CHECK_OK(im_grid_stage(&g, i, &st));
    CHECK_STR(st.label, labels[i]);
    CHECK_EQ(st.set,
             (1u << IM_PARAM_TEMPERATURE) | (1u << IM_PARAM_TOP_P) | (1u << IM_PARAM_OUTPUT_LEN));
  }
  CHECK_OK(im_grid_stage(&g, 7, &st));
  CHECK(st.values[IM_PARAM_TEMPERATURE] == 0.8);
  CHECK(st.values[IM_PARAM_TOP_P] == 0.95);
  CHECK(st.values[IM_PARAM_OUTPUT_LEN] == 1024);
  CHECK_EQ(im_grid_stage(&g, 12, &st), IM_INVAL);
  CHECK_OK(im_grid_add(&g, "input_len=128", err, sizeof err));
  CHECK_EQ(im_grid_count(&g), 12);
  CHECK_OK(im_grid_stage(&g, 0, &st));
  CHECK_STR(st.label, "temperature=0.2,top_p=0.5,output_len=256,input_len=128");

  /* Bad specs: error code, grid unchanged, message names the part. */
  struct {
    const char *spec;
    enum im_err rc;
    const char *needle;
  } bad[] = {
      {"temperature", IM_PARSE, "no '='"},
      {"temp=0.5", IM_PARSE, "unknown parameter \"temp\""},
      {"rate=1,2", IM_PARSE, "unknown parameter \"rate\""},
      {"top_p=", IM_PARSE, "value 1 is empty"},
      {"top_p=0.5,,0.9", IM_PARSE, "value 2 is empty"},
      {"top_p=0.5,x", IM_PARSE, "value 2 \"x\""},
      {"top_p=0.5,1.5", IM_INVAL, "(0, 1]"},
      {"temperature=-1", IM_INVAL, ">= 0"},
      {"temperature=nan", IM_PARSE, "not a finite number"},
      {"output_len=12.5", IM_INVAL, "whole numbers"},
      {"output_len=0", IM_INVAL, "whole numbers"},
      {"top_p=0.5,0.5", IM_INVAL, "repeats value 1"},
      {"top_p=auto", IM_PARSE, "\"auto\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct im_grid h;
    im_grid_init(&h);
    err[0] = '\0';
    CHECK_EQ(im_grid_add(&h, bad[i].spec, err, sizeof err), bad[i].rc);
    CHECK_EQ(h.naxes, 0);
    if (!strstr(err, bad[i].needle))
      CHECK_STR(err, bad[i].needle);
    if (!strstr(err, "--grid"))
      CHECK_STR(err, "--grid ...");
  }
  /* Duplicate parameter. */
  CHECK_EQ(im_grid_add(&g, "top_p=0.7", err, sizeof err), IM_INVAL);
  CHECK(strstr(err, "already in the grid") != NULL);
  CHECK_EQ(g.naxes, 4);
  CHECK_EQ(im_grid_add(&g, NULL, NULL, 0), IM_INVAL);
  /* Limits: values per axis, stages in all, spec length. */
  char big[IM_STAGE_SPEC_MAX + 16];
  strcpy(big, "output_len=1");
  for (int v = 2; v <= IM_STAGE_MAX_VALUES + 1; v++)
    snprintf(big + strlen(big), sizeof big - strlen(big), ",%d", v);
  struct im_grid h;
  im_grid_init(&h);
  CHECK_EQ(im_grid_add(&h, big, err, sizeof err), IM_LIMIT);
  CHECK(strstr(err, "more than 64 values") != NULL);
  strcpy(big, "output_len=1");
  for (int v = 2; v <= IM_STAGE_MAX_VALUES; v++)
    snprintf(big + strlen(big), sizeof big - strlen(big), ",%d", v);
  CHECK_OK(im_grid_add(&h, big, err, sizeof err));
  strcpy(big, "input_len=1");
  for (int v = 2; v <= IM_STAGE_MAX_VALUES; v++)
    snprintf(big + strlen(big), sizeof big - strlen(big), ",%d", v);
  CHECK_OK(im_grid_add(&h, big, err, sizeof err));
  CHECK_EQ(im_grid_count(&h), 4096);
  CHECK_EQ(im_grid_add(&h, "top_p=0.5,0.9", err, sizeof err), IM_LIMIT);
  CHECK_EQ(im_grid_count(&h), 4096);
  CHECK_OK(im_grid_stage(&h, 4095, &st));
  CHECK_STR(st.label, "output_len=64,input_len=64");
  CHECK_OK(im_grid_stage(&h, 64, &st));
  CHECK_STR(st.label, "output_len=2,input_len=1");
  memset(big, '1', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  memcpy(big, "top_p=", 6);
  CHECK_EQ(im_grid_add(&h, big, err, sizeof err), IM_LIMIT);
}

static void test_sweep(void) {
  struct im_sweep s;
  struct im_stage st;
  char err[256];
  CHECK_OK(im_sweep_parse("rate=1,2,4,8", &s, err, sizeof err));
  CHECK_EQ(s.param, IM_PARAM_RATE);
  CHECK_EQ(s.is_auto, 0);
  CHECK_EQ(s.nvalues, 4);
  CHECK_OK(im_sweep_stage(&s, 2, &st));
  CHECK_STR(st.label, "rate=4");
  CHECK_EQ(st.set, 1u << IM_PARAM_RATE);
  CHECK(st.values[IM_PARAM_RATE] == 4);
  CHECK_EQ(im_sweep_stage(&s, 4, &st), IM_INVAL);
  CHECK_EQ(im_sweep_plan_auto(&s, 10, 4), IM_STATE);
  CHECK_OK(im_sweep_parse("rate=0.5", &s, err, sizeof err));
  CHECK_OK(im_sweep_stage(&s, 0, &st));
  CHECK_STR(st.label, "rate=0.5");
  CHECK_OK(im_sweep_parse("concurrency=1,8,32,128", &s, err, sizeof err));
  CHECK_EQ(s.param, IM_PARAM_CONCURRENCY);
  CHECK_EQ(s.nvalues, 4);
  CHECK_OK(im_sweep_stage(&s, 3, &st));
  CHECK_STR(st.label, "concurrency=128");
  CHECK_EQ(im_sweep_parse("concurrency=auto", &s, err, sizeof err), IM_INVAL);
  CHECK(strstr(err, "rate only") != NULL);
  CHECK_EQ(s.nvalues, 0);
  CHECK_EQ(im_sweep_parse("concurrency=1.5", &s, err, sizeof err), IM_INVAL);
  CHECK_EQ(im_sweep_parse("rate=0", &s, err, sizeof err), IM_INVAL);
  CHECK(strstr(err, "--sweep \"rate=0\"") != NULL);
  CHECK_EQ(im_sweep_parse("temperature=1", &s, err, sizeof err), IM_PARSE);
  CHECK(strstr(err, "known: rate, concurrency") != NULL);
  CHECK_EQ(im_sweep_parse("rate=auto,2", &s, err, sizeof err), IM_PARSE);
  CHECK_EQ(im_sweep_parse("rate=1e999", &s, err, sizeof err), IM_PARSE);
  /* A context sweep: input lengths, k = 1024. */
  CHECK_OK(im_sweep_parse("context=4k, 8K,16384,0.5k", &s, err, sizeof err));
  CHECK_EQ(s.param, IM_PARAM_INPUT_LEN);
  CHECK_EQ(s.nvalues, 4);
  CHECK(s.values[0] == 4096 && s.values[1] == 8192 && s.values[2] == 16384 && s.values[3] == 512);
  CHECK_OK(im_sweep_stage(&s, 1, &st));
  CHECK_STR(st.label, "input_len=8192");
  CHECK_EQ(im_sweep_parse("context=4k,4096", &s, err, sizeof err), IM_INVAL);
  CHECK_EQ(im_sweep_parse("context=4x", &s, err, sizeof err), IM_PARSE);
  CHECK_EQ(im_sweep_parse("context=", &s, err, sizeof err), IM_PARSE);
  CHECK_EQ(im_sweep_parse("context=0.1k", &s, err, sizeof err), IM_INVAL);

  /* Auto planner. */
  CHECK_OK(im_sweep_parse("rate=auto", &s, err, sizeof err));
  CHECK_EQ(s.is_auto, 1);
  CHECK_EQ(s.nvalues, 0);
  CHECK_EQ(im_sweep_stage(&s, 0, &st), IM_STATE);
  CHECK_EQ(im_sweep_plan_auto(&s, 0, 9), IM_INVAL);
  CHECK_EQ(im_sweep_plan_auto(&s, 20, 0), IM_INVAL);
  CHECK_EQ(im_sweep_plan_auto(&s, 20, IM_STAGE_MAX_VALUES + 1), IM_INVAL);
  CHECK_EQ(im_sweep_plan_auto(&s, INFINITY, 9), IM_INVAL);
  CHECK_EQ(s.nvalues, 0);
  CHECK_OK(im_sweep_plan_auto(&s, 20, 9));
  CHECK_EQ(s.nvalues, 9);
  for (size_t i = 0; i < 9; i++)
    CHECK_NEAR(s.values[i], 2.0 * (double)(i + 1), 1e-12);
  CHECK_OK(im_sweep_stage(&s, 4, &st));
  CHECK_STR(st.label, "rate=10");
  CHECK_OK(im_sweep_plan_auto(&s, 7.3, 5));
  CHECK_EQ(s.nvalues, 5);
  double gap = 7.3 / 6.0;
  CHECK_NEAR(s.values[0], gap, 1e-12);
  for (size_t i = 1; i < 5; i++)
    CHECK_NEAR(s.values[i] - s.values[i - 1], gap, 1e-12);
  CHECK(s.values[4] < 7.3);
}

static void test_saturation(void) {
  struct im_tpoint inf[60], tt[60];
  struct im_saturation v;
  /* Growing: in-flight 5 + 2/s with deterministic jitter; TTFT rising. */
  for (int i = 0; i < 60; i++) {
    double t = 100.0 + i * 0.5;
    double jitter = ((i * 7) % 5) - 2.0;
    inf[i] = (struct im_tpoint){t, 5.0 + 2.0 * (i * 0.5) + jitter};
    tt[i] = (struct im_tpoint){t, 0.2 + 0.05 * i};
  }
  CHECK_OK(im_stage_check_saturation(inf, 60, tt, 60, &v));
  CHECK_EQ(v.growing, 1);
  CHECK_NEAR(v.slope, 2.0, 0.2);
  CHECK(v.t_stat > IM_SAT_MIN_TSTAT);
  CHECK(v.last_mean > v.first_mean);
  CHECK(v.ttft_last_mean > v.ttft_first_mean);
  /* Order does not matter. */
  struct im_tpoint rev[60];
  for (int i = 0; i < 60; i++)
    rev[i] = inf[59 - i];
  struct im_saturation w;
  CHECK_OK(im_stage_check_saturation(rev, 60, NULL, 0, &w));
  CHECK_EQ(w.growing, 1);
  CHECK_NEAR(w.slope, v.slope, 1e-9);
  CHECK(isnan(w.ttft_first_mean));
  /* Exact ramp: infinite t statistic. */
  for (int i = 0; i < 10; i++)
    rev[i] = (struct im_tpoint){i, 3.0 * i};
  CHECK_OK(im_stage_check_saturation(rev, 10, NULL, 0, &w));
  CHECK_EQ(w.growing, 1);
  CHECK(isinf(w.t_stat));
  /* Falling TTFT vetoes. */
  for (int i = 0; i < 60; i++)
    tt[i].v = 5.0 - 0.05 * i;
  CHECK_OK(im_stage_check_saturation(inf, 60, tt, 60, &v));
  CHECK_EQ(v.growing, 0);
  CHECK(strstr(v.reason, "TTFT") != NULL);
  /* Flat: in-flight 20 +- 2. */
  for (int i = 0; i < 60; i++) {
    inf[i].v = 20.0 + (((i * 7) % 5) - 2.0);
    tt[i].v = 0.3;
  }
  CHECK_OK(im_stage_check_saturation(inf, 60, tt, 60, &v));
  CHECK_EQ(v.growing, 0);
  CHECK(fabs(v.t_stat) < IM_SAT_MIN_TSTAT);
  /* Constant: slope 0, not growing. */
  for (int i = 0; i < 60; i++)
    inf[i].v = 7;
  CHECK_OK(im_stage_check_saturation(inf, 60, NULL, 0, &v));
  CHECK_EQ(v.growing, 0);
  CHECK_NEAR(v.slope, 0, 1e-12);
  /* Tiny drift: significant but under one request over the stage. */
  for (int i = 0; i < 60; i++)
    inf[i].v = 7 + 0.001 * i;
  CHECK_OK(im_stage_check_saturation(inf, 60, NULL, 0, &v));
  CHECK_EQ(v.growing, 0);
  CHECK(strstr(v.reason, "one request") != NULL);
  /* Too few points. */
  CHECK_OK(im_stage_check_saturation(rev, 5, NULL, 0, &v));
  CHECK_EQ(v.growing, 0);
  CHECK(strstr(v.reason, "too few") != NULL);
  /* Bad input. */
  rev[3].v = NAN;
  CHECK_EQ(im_stage_check_saturation(rev, 10, NULL, 0, &v), IM_INVAL);
  CHECK_EQ(im_stage_check_saturation(NULL, 10, NULL, 0, &v), IM_INVAL);
  CHECK_EQ(im_stage_check_saturation(inf, 60, NULL, 0, NULL), IM_INVAL);
}

static void test_saturation_point(void) {
  size_t idx = 99;
  double rates[] = {8, 1, 4, 2, 16};
  double att[] = {0.92, 1.0, 0.97, 0.99, 0.5};
  CHECK_OK(im_sweep_saturation_point(rates, att, NULL, 5, 0.9, &idx));
  CHECK_EQ(idx, 0); /* rate 8 */
  CHECK_OK(im_sweep_saturation_point(rates, att, NULL, 5, 0.95, &idx));
  CHECK_EQ(idx, 2); /* rate 4 */
  /* A pass above a failure is not capacity. */
  double att2[] = {0.99, 1.0, 0.8, 0.99, 0.99};
  CHECK_OK(im_sweep_saturation_point(rates, att2, NULL, 5, 0.9, &idx));
  CHECK_EQ(idx, 3); /* rate 2 */
  /* Over-saturated stages fail. */
  int over[] = {1, 0, 0, 0, 1};
  CHECK_OK(im_sweep_saturation_point(rates, att, over, 5, 0.9, &idx));
  CHECK_EQ(idx, 2);
  /* All pass: highest rate. */
  double all[] = {1, 1, 1, 1, 1};
  CHECK_OK(im_sweep_saturation_point(rates, all, NULL, 5, 0.9, &idx));
  CHECK_EQ(idx, 4);
  /* Lowest fails. */
  idx = 77;
  double low[] = {1, 0.5, 1, 1, 1};
  CHECK_EQ(im_sweep_saturation_point(rates, low, NULL, 5, 0.9, &idx), IM_NOTFOUND);
  CHECK_EQ(idx, 77);
  CHECK_EQ(im_sweep_saturation_point(rates, att, NULL, 0, 0.9, &idx), IM_INVAL);
  CHECK_EQ(im_sweep_saturation_point(rates, att, NULL, 5, 1.5, &idx), IM_INVAL);
  CHECK_EQ(im_sweep_saturation_point(rates, att, NULL, 5, NAN, &idx), IM_INVAL);
  double badr[] = {1, NAN};
  CHECK_EQ(im_sweep_saturation_point(badr, att, NULL, 2, 0.9, &idx), IM_INVAL);
}

int main(void) {
  test_perturb();
  test_grid();
  test_sweep();
  test_saturation();
  test_saturation_point();
  CHECK_STR(im_stage_param_name(IM_PARAM_TOP_P), "top_p");
  CHECK_STR(im_stage_param_name(IM_PARAM_COUNT_), "?");
  return CHECK_DONE();
}
