/* run/ (src/run) without a server: the configuration's defaults and the
 * checks of im_run_prepare (options that exclude each other, the default
 * warm-up of a run bounded by --requests, --repeat-stage), the plan of
 * stages (grid x sweep), and --repeat's replicate loop driven through its
 * hooks (every stage x replicate once, in a seeded order, each with its
 * own directory, seed and index; each stage's set handed over once). */
#include "check.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/run.h"
#include "run/run_int.h"

static int said;
static void count_say(void *data, enum im_run_say kind, const char *line) {
  (void)data;
  (void)kind;
  (void)line;
  said++;
}

static void test_defaults_and_checks(void) {
  struct im_run_config c;
  im_run_config_default(&c);
  CHECK_NEAR(c.rate, 2.0, 0);
  CHECK_EQ(c.duration_ns, 30 * INT64_C(1000000000));
  CHECK_EQ(c.warmup_ns, 5 * INT64_C(1000000000));
  CHECK_EQ(c.input_len, 1024);
  CHECK_EQ(c.output_len, 128);
  CHECK_EQ(c.repeat, 1);
  CHECK_EQ(c.threads, 1);
  CHECK(c.keepalive);
  char err[512];
  struct im_run_hooks h = {.say = count_say};
  CHECK_EQ(im_run_prepare(&c, &h, err, sizeof err), IM_OK);

  /* --rate with --concurrency: refused, with the reason. */
  im_run_config_default(&c);
  c.rate_given = true;
  c.concurrency = 8;
  CHECK_EQ(im_run_prepare(&c, &h, err, sizeof err), IM_INVAL);
  CHECK(strstr(err, "--rate and --concurrency") != NULL);

  /* --context-growth without sessions. */
  im_run_config_default(&c);
  c.ctx_start = 1024;
  c.ctx_end = 4096;
  CHECK_EQ(im_run_prepare(&c, &h, err, sizeof err), IM_INVAL);
  CHECK(strstr(err, "--context-growth") != NULL);

  /* --requests N without --warmup: the first tenth are the warm-up. */
  im_run_config_default(&c);
  c.requests = 200;
  CHECK_EQ(im_run_prepare(&c, &h, err, sizeof err), IM_OK);
  CHECK_EQ(c.warmup_ns, 0);
  CHECK_EQ(c.warmup_requests, 20);

  /* --shard without --seed: refused (said through the hooks). */
  im_run_config_default(&c);
  c.url = "http://127.0.0.1:9";
  c.shard.count = 2;
  said = 0;
  CHECK_EQ(im_run_prepare(&c, &h, err, sizeof err), IM_INVAL);
  CHECK(said >= 1);
}

static void test_plan(void) {
  struct im_run_config c;
  im_run_config_default(&c);
  c.grid[0] = "temperature=0.2,1.0";
  c.n_grid = 1;
  c.sweep = "rate=1,2,4";
  struct run_plan p;
  CHECK_EQ(im__run_plan_parse(&c, &p), 0);
  CHECK_EQ(p.n_grid, 2);
  CHECK(p.has_sweep);
  CHECK_EQ(p.sweep.nvalues, 3);
  struct im_stage st;
  CHECK_EQ(im__run_plan_stage(&p, 4, &st), 0); /* grid outer, sweep fastest */
  CHECK(st.set & (1u << IM_PARAM_RATE));
  CHECK_NEAR(st.values[IM_PARAM_RATE], 2.0, 0);
  CHECK_NEAR(st.values[IM_PARAM_TEMPERATURE], 1.0, 0);
  /* --repeat-stage 5 makes a one-stage run of that stage. */
  c.repeat_stage = 5;
  CHECK_EQ(im__run_select_stage(&c), 0);
  CHECK(c.rate_given);
  CHECK_NEAR(c.rate, 2.0, 0);
  CHECK(c.sweep == NULL && c.n_grid == 0);
}

/* --repeat's loop, its replicates recorded instead of run. */
struct seen {
  int n, sets;
  uint32_t stage[16], index[16];
  uint64_t seed[16];
  char dir[16][256];
  size_t set_runs[4];
};

static int fake_run(void *data, const struct im_run_config *r) {
  struct seen *s = data;
  if (s->n < 16) {
    s->stage[s->n] = r->repeat_stage;
    s->index[s->n] = r->repeat_index;
    s->seed[s->n] = r->seed;
    snprintf(s->dir[s->n], sizeof s->dir[0], "%s", r->out_dir);
    if (mkdir(r->out_dir, 0755) != 0) /* the run directory, as im_run makes it */
      return IM_EXIT_USAGE;
  }
  s->n++;
  return r->repeat_of == 2 && r->seed_given && r->repeat == 1 ? IM_EXIT_OK : IM_EXIT_USAGE;
}

static int fake_set(void *data, const char *dir, struct im_repeat_run *runs, size_t n,
                    const double *ref, const char *ref_source, bool *publishable) {
  (void)dir;
  (void)runs;
  (void)ref;
  (void)ref_source;
  struct seen *s = data;
  if (s->sets < 4)
    s->set_runs[s->sets] = n;
  s->sets++;
  *publishable = true;
  return IM_EXIT_OK;
}

static void test_repeat_order(const char *tmp) {
  struct im_run_config c;
  im_run_config_default(&c);
  char out[300];
  snprintf(out, sizeof out, "%s/set", tmp);
  c.out_dir = out;
  c.repeat = 2;
  c.seed = 7;
  c.seed_given = true;
  c.sweep = "rate=1,3";
  struct im_run_hooks h = {.say = count_say};
  struct seen s = {0};
  struct im_run_set_hooks sh = {.run_one = fake_run, .set_done = fake_set, .data = &s};
  size_t runs = 0;
  CHECK_EQ(im_run_repeat(&c, &h, &sh, &runs), IM_EXIT_OK);
  CHECK_EQ(runs, 4);
  CHECK_EQ(s.n, 4);
  CHECK_EQ(s.sets, 2);
  CHECK_EQ(s.set_runs[0], 2);
  CHECK_EQ(s.set_runs[1], 2);
  int cells[3][3] = {{0}};
  for (int i = 0; i < s.n && i < 16; i++) {
    CHECK(s.stage[i] >= 1 && s.stage[i] <= 2 && s.index[i] >= 1 && s.index[i] <= 2);
    cells[s.stage[i] % 3][s.index[i] % 3]++;
    char want[400];
    snprintf(want, sizeof want, "%s/stage-%u/run-%u", out, s.stage[i], s.index[i]);
    CHECK_STR(s.dir[i], want);
    for (int j = 0; j < i; j++)
      CHECK(s.seed[i] != s.seed[j]);
  }
  CHECK(cells[1][1] == 1 && cells[1][2] == 1 && cells[2][1] == 1 && cells[2][2] == 1);
  /* The same seed, the same order and seeds. */
  struct seen again = {0};
  sh.data = &again;
  snprintf(out, sizeof out, "%s/again", tmp);
  CHECK_EQ(im_run_repeat(&c, &h, &sh, &runs), IM_EXIT_OK);
  for (int i = 0; i < 4; i++) {
    CHECK_EQ(again.stage[i], s.stage[i]);
    CHECK_EQ(again.index[i], s.index[i]);
    CHECK_EQ(again.seed[i], s.seed[i]);
  }
}

int main(void) {
  char tmp[] = "/tmp/im-test-run.XXXXXX";
  if (!mkdtemp(tmp))
    return 1;
  test_defaults_and_checks();
  test_plan();
  test_repeat_order(tmp);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  if (system(cmd) != 0)
    return 1;
  return CHECK_DONE();
}
