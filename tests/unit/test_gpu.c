/* Tests for src/observe/gpu.c against the fake NVML (tests/fake_nvml).
 *
 * The fake libraries' paths come from the build (IM_FAKE_NVML and
 * IM_FAKE_NVML_NOGPM, set by tests/fake_nvml/CMakeLists.txt) or, for a build
 * by hand, from the environment variables of the same names. Without them
 * only the tests that need no fake run, and the run says so. The scripted
 * values checked below are listed at the top of fake_nvml.c. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "analyze/machine.h"
#include "observe/gpu.h"

#define NS INT64_C(1000000000)
/* The driver's reserved memory as the fake scripts it (fake_nvml.c): what an
 * H200 with driver 580.159.04 reserved (bench/gpu/README.md). */
#define RESERVED UINT64_C(644939776)

static const char *fake_path(const char *env, const char *built) {
  const char *p = getenv(env);
  if (p && *p)
    return p;
  return built;
}

#ifdef IM_FAKE_NVML
#define FAKE_BUILT IM_FAKE_NVML
#else
#define FAKE_BUILT NULL
#endif
#ifdef IM_FAKE_NVML_NOGPM
#define FAKE_NOGPM_BUILT IM_FAKE_NVML_NOGPM
#else
#define FAKE_NOGPM_BUILT NULL
#endif

/* The test keeps its own reference to the fake so its state (and the hooks
 * that report it) outlive each im_gpu_close. */
struct fake {
  void *lib;
  int (*init_depth)(void);
  int (*live_samples)(void);
};

static int fake_load(struct fake *f, const char *path) {
  memset(f, 0, sizeof *f);
  f->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!f->lib) {
    fprintf(stderr, "cannot load fake NVML %s: %s\n", path, dlerror());
    return -1;
  }
  void *a = dlsym(f->lib, "fake_nvml_init_depth");
  void *b = dlsym(f->lib, "fake_nvml_live_samples");
  if (!a || !b)
    return -1;
  memcpy(&f->init_depth, &a, sizeof a);
  memcpy(&f->live_samples, &b, sizeof b);
  return 0;
}

static int contains(const char *hay, const char *needle) {
  return strstr(hay, needle) != NULL;
}

/* ---- Opening: failures that are "not available" ---- */

static void test_missing_library(void) {
  char why[256];
  struct im_gpu *g = (struct im_gpu *)&why; /* must be reset to NULL */
  CHECK_EQ(im_gpu_open("/nonexistent/libnvidia-ml.so.1", &g, why, sizeof why), IM_UNSUPPORTED);
  CHECK(g == NULL);
  CHECK(contains(why, "/nonexistent/libnvidia-ml.so.1 not found"));

  /* The environment names the library when the caller does not. */
  setenv(IM_GPU_NVML_ENV, "/nonexistent/from-env.so", 1);
  CHECK_EQ(im_gpu_open(NULL, &g, why, sizeof why), IM_UNSUPPORTED);
  CHECK(contains(why, "/nonexistent/from-env.so not found"));
  /* The caller's path wins over the environment. */
  CHECK_EQ(im_gpu_open("/nonexistent/caller.so", &g, why, sizeof why), IM_UNSUPPORTED);
  CHECK(contains(why, "/nonexistent/caller.so not found"));
  unsetenv(IM_GPU_NVML_ENV);

  /* A tiny reason buffer is truncated, still terminated; NULL is fine. */
  char tiny[8];
  CHECK_EQ(im_gpu_open("/nonexistent/x.so", &g, tiny, sizeof tiny), IM_UNSUPPORTED);
  CHECK_EQ(strlen(tiny), 7);
  CHECK_EQ(im_gpu_open("/nonexistent/x.so", &g, NULL, 0), IM_UNSUPPORTED);
  CHECK_EQ(im_gpu_open(NULL, NULL, why, sizeof why), IM_INVAL);
  im_gpu_close(NULL);
}

static void test_not_nvml(void) {
  /* A library that loads but is not NVML. */
  char why[256];
  struct im_gpu *g = NULL;
  CHECK_EQ(im_gpu_open("libm.so.6", &g, why, sizeof why), IM_UNSUPPORTED);
  CHECK(g == NULL);
  CHECK(contains(why, "lacks nvmlInit_v2"));
}

static void test_init_fail(const char *path, struct fake *f) {
  char why[256];
  struct im_gpu *g = NULL;
  setenv("FAKE_NVML_MODE", "init_fail", 1);
  CHECK_EQ(im_gpu_open(path, &g, why, sizeof why), IM_UNSUPPORTED);
  CHECK(g == NULL);
  CHECK(contains(why, "nvmlInit_v2 failed: Driver Not Loaded (error 9)"));
  CHECK_EQ(f->init_depth(), 0);

  setenv("FAKE_NVML_MODE", "no_gpu", 1);
  CHECK_EQ(im_gpu_open(path, &g, why, sizeof why), IM_UNSUPPORTED);
  CHECK(g == NULL);
  CHECK(contains(why, "no GPU"));
  CHECK_EQ(f->init_depth(), 0); /* nvmlShutdown was called */
  unsetenv("FAKE_NVML_MODE");
}

/* ---- Sampling ---- */

static void test_sample_default(const char *path, struct fake *f) {
  char why[256] = "x";
  struct im_gpu *g = NULL;
  CHECK_OK(im_gpu_open(path, &g, why, sizeof why));
  if (!g) {
    fprintf(stderr, "open failed: %s\n", why);
    return;
  }
  CHECK_STR(why, "");
  CHECK_STR(im_gpu_library(g), path);
  CHECK_EQ(im_gpu_count(g), 2);
  CHECK_EQ(im_gpu_count_total(g), 2);
  CHECK(im_gpu_has_gpm(g, 0));
  CHECK(im_gpu_has_gpm(g, 1));
  CHECK(!im_gpu_has_gpm(g, 2));
  CHECK_EQ(f->init_depth(), 1);
  CHECK_EQ(f->live_samples(), 4); /* two GPM buffers per GPU */

  static struct im_gpu_snapshot s[3];
  for (int k = 0; k < 3; k++)
    CHECK_OK(im_gpu_sample(g, k * NS, &s[k]));
  CHECK_EQ(im_gpu_sample(g, 0, NULL), IM_INVAL);

  CHECK_EQ(s[0].t_ns, 0);
  CHECK_EQ(s[2].t_ns, 2 * NS);
  CHECK_EQ(s[0].n_gpus, 2);
  for (unsigned i = 0; i < 2; i++) {
    for (int k = 0; k < 3; k++) {
      const struct im_gpu_sample *x = &s[k].gpu[i];
      CHECK_STR(x->name, "Fake H200");
      CHECK(x->has_mem);
      CHECK_EQ(x->mem_total_bytes, UINT64_C(141000000000));
      CHECK_EQ(x->mem_used_bytes,
               UINT64_C(20000000000) + UINT64_C(10000000000) * i + UINT64_C(1000000) * (unsigned)k);
      CHECK_NEAR(x->util_gpu_pct, 70 + i, 0);
      CHECK_NEAR(x->util_mem_pct, 40 + i, 0);
      CHECK_NEAR(x->sm_clock_mhz, 1980, 0);
      CHECK_NEAR(x->power_w, 300.0 + 50.0 * i + 10.0 * k, 1e-9);
      CHECK(x->has_energy);
      CHECK_EQ(x->energy_mj, 1000000ULL * (i + 1) + 5000ULL * (unsigned)k);
    }
    /* GPM needs two samples: NaN first, then the scripted percentages. */
    CHECK(isnan(s[0].gpu[i].dram_bw_util));
    CHECK(isnan(s[0].gpu[i].tensor_active));
    CHECK(isnan(s[0].gpu[i].sm_active));
    for (int k = 1; k < 3; k++) {
      CHECK_NEAR(s[k].gpu[i].dram_bw_util, 0.55 + 0.10 * i, 1e-12);
      CHECK_NEAR(s[k].gpu[i].tensor_active, 0.30 + 0.01 * i, 1e-12);
      CHECK_NEAR(s[k].gpu[i].sm_active, 0.80, 1e-12);
    }
  }

  /* Summary of what was sampled: each GPU's counter rose 10,000 mJ over
   * 2 s, so 20 J for the two; bandwidth over GPUs and the two GPM samples:
   * mean (0.55 + 0.65) / 2, max 0.65. */
  struct im_gpu_summary sum;
  CHECK_OK(im_gpu_summarize(s, 3, INT64_MIN, INT64_MAX, &sum));
  CHECK_EQ(sum.n_snapshots, 3);
  CHECK_EQ(sum.n_gpus, 2);
  CHECK_EQ(sum.energy_source, IM_GPU_ENERGY_COUNTER);
  CHECK_NEAR(sum.energy_j, 20.0, 1e-9);
  CHECK_NEAR(sum.energy_covered_s, 2.0, 1e-12);
  CHECK_NEAR(im_gpu_tokens_per_joule(1000, sum.energy_j), 50.0, 1e-9);
  CHECK_NEAR(sum.dram_bw_util_mean, 0.60, 1e-12);
  CHECK_NEAR(sum.dram_bw_util_max, 0.65, 1e-12);
  CHECK_NEAR(sum.tensor_active_mean, 0.305, 1e-12);
  CHECK_NEAR(sum.sm_active_mean, 0.80, 1e-12);
  CHECK(sum.has_mem);
  CHECK_EQ(sum.mem_used_max_bytes, UINT64_C(30002000000));
  CHECK_EQ(sum.mem_total_bytes, UINT64_C(141000000000));
  /* Per snapshot: 650, 670, 690 W. */
  CHECK_NEAR(sum.power_w_mean, 670.0, 1e-9);

  im_gpu_close(g);
  CHECK_EQ(f->init_depth(), 0);
  CHECK_EQ(f->live_samples(), 0);
}

static void test_env_path(const char *path, struct fake *f) {
  char why[256];
  struct im_gpu *g = NULL;
  setenv(IM_GPU_NVML_ENV, path, 1);
  CHECK_OK(im_gpu_open(NULL, &g, why, sizeof why));
  CHECK_STR(im_gpu_library(g), path);
  CHECK_EQ(im_gpu_count(g), 2);
  im_gpu_close(g);
  unsetenv(IM_GPU_NVML_ENV);
  CHECK_EQ(f->init_depth(), 0);
}

static void check_no_gpm(struct im_gpu *g) {
  static struct im_gpu_snapshot s[2];
  CHECK_OK(im_gpu_sample(g, 0, &s[0]));
  CHECK_OK(im_gpu_sample(g, NS, &s[1]));
  for (unsigned i = 0; i < im_gpu_count(g); i++) {
    CHECK(!im_gpu_has_gpm(g, i));
    CHECK(isnan(s[1].gpu[i].dram_bw_util));
    CHECK(isnan(s[1].gpu[i].tensor_active));
    CHECK(isnan(s[1].gpu[i].sm_active));
    /* Everything else is still there. */
    CHECK_NEAR(s[1].gpu[i].power_w, 310.0 + 50.0 * i, 1e-9);
    CHECK(s[1].gpu[i].has_energy);
  }
  struct im_gpu_summary sum;
  CHECK_OK(im_gpu_summarize(s, 2, INT64_MIN, INT64_MAX, &sum));
  CHECK(isnan(sum.dram_bw_util_mean));
  CHECK(isnan(sum.dram_bw_util_max));
  CHECK_NEAR(sum.energy_j, 10.0, 1e-9);
}

static void test_gpm_absent(const char *path, const char *nogpm_path, struct fake *f) {
  char why[256];
  struct im_gpu *g = NULL;

  /* Exported but the device says no. */
  setenv("FAKE_NVML_MODE", "gpm_unsupported", 1);
  CHECK_OK(im_gpu_open(path, &g, why, sizeof why));
  if (g) {
    CHECK_EQ(f->live_samples(), 0);
    check_no_gpm(g);
    im_gpu_close(g);
  }
  unsetenv("FAKE_NVML_MODE");

  /* Not exported at all (an old driver: no nvmlDeviceGetMemoryInfo_v2
   * either, so used counts the reserved memory). */
  if (!nogpm_path)
    return;
  g = NULL;
  CHECK_OK(im_gpu_open(nogpm_path, &g, why, sizeof why));
  if (g) {
    CHECK_EQ(im_gpu_count(g), 2);
    check_no_gpm(g);
    static struct im_gpu_snapshot s;
    CHECK_OK(im_gpu_sample(g, 2 * NS, &s)); /* the third memory query */
    CHECK_EQ(s.gpu[1].mem_used_bytes, UINT64_C(30002000000) + RESERVED);
    im_gpu_close(g);
  }
}

static void test_no_energy_counter(const char *path) {
  char why[256];
  struct im_gpu *g = NULL;
  setenv("FAKE_NVML_MODE", "no_energy", 1);
  CHECK_OK(im_gpu_open(path, &g, why, sizeof why));
  unsetenv("FAKE_NVML_MODE");
  if (!g)
    return;
  static struct im_gpu_snapshot s[2];
  CHECK_OK(im_gpu_sample(g, 0, &s[0]));
  CHECK_OK(im_gpu_sample(g, 2 * NS, &s[1]));
  CHECK(!s[0].gpu[0].has_energy);
  /* Power 300 -> 310 W and 350 -> 360 W over 2 s: 610 + 710 J. */
  struct im_gpu_summary sum;
  CHECK_OK(im_gpu_summarize(s, 2, INT64_MIN, INT64_MAX, &sum));
  CHECK_EQ(sum.energy_source, IM_GPU_ENERGY_POWER);
  CHECK_NEAR(sum.energy_j, 1320.0, 1e-9);
  im_gpu_close(g);
}

/* Memory through v1 only: used then counts the reserved memory, as a real
 * driver's v1 does. Here a driver that has the v2 symbol but refuses it. */
static void test_memory_v1_fallback(const char *path) {
  char why[256];
  struct im_gpu *g = NULL;
  setenv("FAKE_NVML_UNSUPPORTED", "memory_v2", 1);
  CHECK_OK(im_gpu_open(path, &g, why, sizeof why));
  unsetenv("FAKE_NVML_UNSUPPORTED");
  if (!g)
    return;
  static struct im_gpu_snapshot s[2];
  CHECK_OK(im_gpu_sample(g, 0, &s[0]));
  CHECK_OK(im_gpu_sample(g, NS, &s[1]));
  for (unsigned i = 0; i < 2; i++)
    for (unsigned k = 0; k < 2; k++) {
      CHECK(s[k].gpu[i].has_mem);
      CHECK_EQ(s[k].gpu[i].mem_used_bytes, UINT64_C(20000000000) + UINT64_C(10000000000) * i +
                                               UINT64_C(1000000) * k + RESERVED);
      CHECK_EQ(s[k].gpu[i].mem_total_bytes, UINT64_C(141000000000));
    }
  im_gpu_close(g);
}

/* A board that answers NOT_SUPPORTED for every plain query: each figure is
 * not available, the GPM ones still come, nothing fails. */
static void test_unsupported_fields(const char *path) {
  char why[256];
  struct im_gpu *g = NULL;
  setenv("FAKE_NVML_UNSUPPORTED", "name,memory,utilization,clock,power,energy", 1);
  CHECK_OK(im_gpu_open(path, &g, why, sizeof why));
  unsetenv("FAKE_NVML_UNSUPPORTED");
  if (!g)
    return;
  static struct im_gpu_snapshot s[2];
  CHECK_OK(im_gpu_sample(g, 0, &s[0]));
  CHECK_OK(im_gpu_sample(g, NS, &s[1]));
  for (unsigned i = 0; i < 2; i++) {
    const struct im_gpu_sample *x = &s[1].gpu[i];
    CHECK_STR(x->name, "");
    CHECK(!x->has_mem);
    CHECK_EQ(x->mem_used_bytes, 0);
    CHECK(isnan(x->util_gpu_pct));
    CHECK(isnan(x->util_mem_pct));
    CHECK(isnan(x->sm_clock_mhz));
    CHECK(isnan(x->power_w));
    CHECK(!x->has_energy);
    CHECK_NEAR(x->dram_bw_util, 0.55 + 0.10 * i, 1e-12);
  }
  struct im_gpu_summary sum;
  CHECK_OK(im_gpu_summarize(s, 2, INT64_MIN, INT64_MAX, &sum));
  CHECK_EQ(sum.energy_source, IM_GPU_ENERGY_NONE);
  CHECK(isnan(sum.energy_j));
  CHECK(isnan(sum.power_w_mean));
  CHECK(!sum.has_mem);
  CHECK_NEAR(sum.dram_bw_util_mean, 0.60, 1e-12);
  im_gpu_close(g);

  /* Power alone missing: energy still comes from the counter. */
  g = NULL;
  setenv("FAKE_NVML_UNSUPPORTED", "power", 1);
  CHECK_OK(im_gpu_open(path, &g, why, sizeof why));
  unsetenv("FAKE_NVML_UNSUPPORTED");
  if (!g)
    return;
  CHECK_OK(im_gpu_sample(g, 0, &s[0]));
  CHECK_OK(im_gpu_sample(g, 2 * NS, &s[1]));
  CHECK(isnan(s[1].gpu[0].power_w));
  CHECK(s[1].gpu[0].has_mem);
  CHECK_OK(im_gpu_summarize(s, 2, INT64_MIN, INT64_MAX, &sum));
  CHECK_EQ(sum.energy_source, IM_GPU_ENERGY_COUNTER);
  CHECK_NEAR(sum.energy_j, 10.0, 1e-9); /* 5 J per GPU per call */
  im_gpu_close(g);
}

static void test_many(const char *path) {
  char why[256];
  struct im_gpu *g = NULL;
  setenv("FAKE_NVML_MODE", "many", 1);
  CHECK_OK(im_gpu_open(path, &g, why, sizeof why));
  unsetenv("FAKE_NVML_MODE");
  if (!g)
    return;
  CHECK_EQ(im_gpu_count(g), IM_GPU_MAX);
  CHECK_EQ(im_gpu_count_total(g), 20);
  static struct im_gpu_snapshot s;
  CHECK_OK(im_gpu_sample(g, 0, &s));
  CHECK_EQ(s.n_gpus, IM_GPU_MAX);
  CHECK_NEAR(s.gpu[IM_GPU_MAX - 1].util_gpu_pct, 70 + IM_GPU_MAX - 1, 0);
  im_gpu_close(g);
}

/* ---- Summary math on synthetic series ---- */

static void blank(struct im_gpu_snapshot *s, int64_t t_ns, unsigned n_gpus) {
  memset(s, 0, sizeof *s);
  s->t_ns = t_ns;
  s->n_gpus = n_gpus;
  for (unsigned i = 0; i < IM_GPU_MAX; i++) {
    struct im_gpu_sample *x = &s->gpu[i];
    x->util_gpu_pct = x->util_mem_pct = x->sm_clock_mhz = x->power_w = NAN;
    x->dram_bw_util = x->tensor_active = x->sm_active = NAN;
  }
}

static void set_energy(struct im_gpu_snapshot *s, unsigned i, uint64_t mj) {
  s->gpu[i].has_energy = true;
  s->gpu[i].energy_mj = mj;
}

static void test_summary_energy(void) {
  static struct im_gpu_snapshot s[3];
  struct im_gpu_summary sum;

  /* Counters, two GPUs, t = 0, 1, 3 s.
   * GPU 0: 0 -> 100,000 -> 400,000 mJ: 100 J then 300 J.
   * GPU 1: 5,000,000 -> 5,050,000 -> 5,250,000 mJ: 50 J then 200 J. */
  blank(&s[0], 0, 2);
  blank(&s[1], 1 * NS, 2);
  blank(&s[2], 3 * NS, 2);
  set_energy(&s[0], 0, 0);
  set_energy(&s[1], 0, 100000);
  set_energy(&s[2], 0, 400000);
  set_energy(&s[0], 1, 5000000);
  set_energy(&s[1], 1, 5050000);
  set_energy(&s[2], 1, 5250000);
  CHECK_OK(im_gpu_summarize(s, 3, INT64_MIN, INT64_MAX, &sum));
  CHECK_EQ(sum.energy_source, IM_GPU_ENERGY_COUNTER);
  CHECK_NEAR(sum.energy_j, 650.0, 1e-9);
  CHECK_NEAR(sum.energy_covered_s, 3.0, 1e-12);
  CHECK_NEAR(im_gpu_tokens_per_joule(13000, sum.energy_j), 20.0, 1e-12);

  /* Window [0.5 s, 2 s]: half of the first pair, half of the second.
   * GPU 0: 50 + 150 J; GPU 1: 25 + 100 J. */
  CHECK_OK(im_gpu_summarize(s, 3, NS / 2, 2 * NS, &sum));
  CHECK_NEAR(sum.energy_j, 325.0, 1e-9);
  CHECK_NEAR(sum.energy_covered_s, 1.5, 1e-12);
  CHECK_EQ(sum.n_snapshots, 1); /* only t = 1 s lies inside */

  /* A window beyond the series covers nothing. */
  CHECK_OK(im_gpu_summarize(s, 3, 4 * NS, 5 * NS, &sum));
  CHECK_EQ(sum.energy_source, IM_GPU_ENERGY_NONE);
  CHECK(isnan(sum.energy_j));
  CHECK(isnan(im_gpu_tokens_per_joule(100, sum.energy_j)));

  /* Power only: 100 W at 0 s, 200 W at 2 s (one GPU): trapezoid 300 J.
   * Window [1 s, 2 s]: power 150 -> 200 W, 175 J. */
  blank(&s[0], 0, 1);
  blank(&s[1], 2 * NS, 1);
  s[0].gpu[0].power_w = 100;
  s[1].gpu[0].power_w = 200;
  CHECK_OK(im_gpu_summarize(s, 2, INT64_MIN, INT64_MAX, &sum));
  CHECK_EQ(sum.energy_source, IM_GPU_ENERGY_POWER);
  CHECK_NEAR(sum.energy_j, 300.0, 1e-9);
  CHECK_NEAR(sum.power_w_mean, 150.0, 1e-12);
  CHECK_OK(im_gpu_summarize(s, 2, NS, 2 * NS, &sum));
  CHECK_NEAR(sum.energy_j, 175.0, 1e-9);

  /* Mixed: GPU 0 has counters (+40 J), GPU 1 only power (10 W for 2 s). */
  blank(&s[0], 0, 2);
  blank(&s[1], 2 * NS, 2);
  set_energy(&s[0], 0, 1000);
  set_energy(&s[1], 0, 41000);
  s[0].gpu[1].power_w = 10;
  s[1].gpu[1].power_w = 10;
  CHECK_OK(im_gpu_summarize(s, 2, INT64_MIN, INT64_MAX, &sum));
  CHECK_EQ(sum.energy_source, IM_GPU_ENERGY_MIXED);
  CHECK_NEAR(sum.energy_j, 60.0, 1e-9);
  CHECK_STR(im_gpu_energy_source_name(sum.energy_source), "mixed");

  /* A counter that goes backwards (driver reload) falls back to power for
   * that pair: 0 -> 10,000 mJ (10 J), then reset, with 50 W readings over
   * the second second (50 J). */
  blank(&s[0], 0, 1);
  blank(&s[1], 1 * NS, 1);
  blank(&s[2], 2 * NS, 1);
  set_energy(&s[0], 0, 0);
  set_energy(&s[1], 0, 10000);
  set_energy(&s[2], 0, 200);
  s[1].gpu[0].power_w = 50;
  s[2].gpu[0].power_w = 50;
  CHECK_OK(im_gpu_summarize(s, 3, INT64_MIN, INT64_MAX, &sum));
  CHECK_EQ(sum.energy_source, IM_GPU_ENERGY_MIXED);
  CHECK_NEAR(sum.energy_j, 60.0, 1e-9);

  /* Reset with no power: the pair is a gap. */
  s[1].gpu[0].power_w = NAN;
  CHECK_OK(im_gpu_summarize(s, 3, INT64_MIN, INT64_MAX, &sum));
  CHECK_EQ(sum.energy_source, IM_GPU_ENERGY_COUNTER);
  CHECK_NEAR(sum.energy_j, 10.0, 1e-9);
  CHECK_NEAR(sum.energy_covered_s, 1.0, 1e-12);

  /* Equal timestamps contribute nothing and are not an error. */
  blank(&s[0], NS, 1);
  blank(&s[1], NS, 1);
  set_energy(&s[0], 0, 0);
  set_energy(&s[1], 0, 5000);
  CHECK_OK(im_gpu_summarize(s, 2, INT64_MIN, INT64_MAX, &sum));
  CHECK_EQ(sum.energy_source, IM_GPU_ENERGY_NONE);
}

static void test_summary_bandwidth_memory(void) {
  static struct im_gpu_snapshot s[3];
  struct im_gpu_summary sum;
  /* dram_bw_util: {0.5, NaN}, {0.7, 0.9}, {0.6, 0.8}: mean of the five
   * values 3.5 / 5 = 0.7, max 0.9. */
  blank(&s[0], 0, 2);
  blank(&s[1], NS, 2);
  blank(&s[2], 2 * NS, 2);
  s[0].gpu[0].dram_bw_util = 0.5;
  s[1].gpu[0].dram_bw_util = 0.7;
  s[1].gpu[1].dram_bw_util = 0.9;
  s[2].gpu[0].dram_bw_util = 0.6;
  s[2].gpu[1].dram_bw_util = 0.8;
  s[1].gpu[1].tensor_active = 0.25;
  s[2].gpu[1].tensor_active = 0.75;
  s[0].gpu[0].has_mem = true;
  s[0].gpu[0].mem_used_bytes = 90;
  s[0].gpu[0].mem_total_bytes = 100;
  s[2].gpu[1].has_mem = true;
  s[2].gpu[1].mem_used_bytes = 95;
  s[2].gpu[1].mem_total_bytes = 200;
  CHECK_OK(im_gpu_summarize(s, 3, INT64_MIN, INT64_MAX, &sum));
  CHECK_EQ(sum.n_snapshots, 3);
  CHECK_EQ(sum.n_gpus, 2);
  CHECK_NEAR(sum.dram_bw_util_mean, 0.7, 1e-12);
  CHECK_NEAR(sum.dram_bw_util_max, 0.9, 1e-12);
  CHECK_NEAR(sum.tensor_active_mean, 0.5, 1e-12);
  CHECK(isnan(sum.sm_active_mean));
  CHECK(isnan(sum.power_w_mean));
  CHECK(sum.has_mem);
  CHECK_EQ(sum.mem_used_max_bytes, 95);
  CHECK_EQ(sum.mem_total_bytes, 200);

  /* Window [0, 1 s]: the last snapshot drops out. */
  CHECK_OK(im_gpu_summarize(s, 3, 0, NS, &sum));
  CHECK_EQ(sum.n_snapshots, 2);
  CHECK_NEAR(sum.dram_bw_util_mean, 0.7, 1e-12); /* (0.5+0.7+0.9)/3 */
  CHECK_NEAR(sum.dram_bw_util_max, 0.9, 1e-12);
  CHECK_EQ(sum.mem_used_max_bytes, 90);

  /* Empty series. */
  CHECK_OK(im_gpu_summarize(NULL, 0, INT64_MIN, INT64_MAX, &sum));
  CHECK_EQ(sum.n_snapshots, 0);
  CHECK(!sum.has_mem);
  CHECK(isnan(sum.dram_bw_util_mean));
  CHECK(isnan(sum.energy_j));
  CHECK_EQ(sum.energy_source, IM_GPU_ENERGY_NONE);

  /* Invalid input. */
  CHECK_EQ(im_gpu_summarize(s, 3, NS, 0, &sum), IM_INVAL);
  CHECK_EQ(im_gpu_summarize(s, 3, INT64_MIN, INT64_MAX, NULL), IM_INVAL);
  CHECK_EQ(im_gpu_summarize(NULL, 1, INT64_MIN, INT64_MAX, &sum), IM_INVAL);
  s[2].t_ns = NS / 2;
  CHECK_EQ(im_gpu_summarize(s, 3, INT64_MIN, INT64_MAX, &sum), IM_INVAL);
}

static void test_tokens_per_joule(void) {
  CHECK_NEAR(im_gpu_tokens_per_joule(1000, 250), 4.0, 0);
  CHECK(isnan(im_gpu_tokens_per_joule(1000, 0)));
  CHECK(isnan(im_gpu_tokens_per_joule(1000, -1)));
  CHECK(isnan(im_gpu_tokens_per_joule(1000, NAN)));
  CHECK(isnan(im_gpu_tokens_per_joule(NAN, 10)));
  CHECK_STR(im_gpu_energy_source_name(IM_GPU_ENERGY_NONE), "none");
  CHECK_STR(im_gpu_energy_source_name(IM_GPU_ENERGY_COUNTER), "counter");
  CHECK_STR(im_gpu_energy_source_name(IM_GPU_ENERGY_POWER), "power");
}

int main(void) {
  unsetenv(IM_GPU_NVML_ENV);
  unsetenv("FAKE_NVML_MODE");
  unsetenv("FAKE_NVML_UNSUPPORTED");
  test_missing_library();
  test_not_nvml();
  test_summary_energy();
  test_summary_bandwidth_memory();
  test_tokens_per_joule();

  const char *path = fake_path("IM_FAKE_NVML", FAKE_BUILT);
  const char *nogpm = fake_path("IM_FAKE_NVML_NOGPM", FAKE_NOGPM_BUILT);
  struct fake f;
  if (!path) {
    fprintf(stderr, "test_gpu: SKIP fake NVML tests: IM_FAKE_NVML not set "
                    "(add_subdirectory(tests/fake_nvml) wires it)\n");
  } else if (fake_load(&f, path) != 0) {
    CHECK_FAIL("fake NVML loads");
  } else {
    test_init_fail(path, &f);
    test_sample_default(path, &f);
    test_env_path(path, &f);
    test_gpm_absent(path, nogpm, &f);
    test_no_energy_counter(path);
    test_memory_v1_fallback(path);
    test_unsupported_fields(path);
    test_many(path);
    CHECK_EQ(f.init_depth(), 0);
    CHECK_EQ(f.live_samples(), 0);
    dlclose(f.lib);
  }
  return CHECK_DONE();
}
