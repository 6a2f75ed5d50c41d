/* Routing speed of the MoE simulation: ns per decode token through every
 * MoE layer with the default (DeepSeek-V3) configuration. Prints figures;
 * asserts nothing. Not built by CMake. Build and run from the repo root:
 *
 *   cmake --build build --target moe_speed && build/bench/moe_speed
 *
 * Optional arguments: batch (256) and steps (2000). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "serve/moe.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: robust to a busy machine */
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int run(double stickiness, uint32_t batch, uint32_t steps) {
  struct im_moe_config cfg;
  im_moe_config_default(&cfg);
  cfg.stickiness = stickiness;
  struct im_moe *moe = NULL;
  if (im_moe_new(&moe, &cfg) != IM_OK)
    return 1;
  struct im_moe_seq *seqs = calloc(batch, sizeof *seqs);
  if (!seqs)
    return 1;
  for (uint32_t i = 0; i < batch; i++)
    if (im_moe_seq_init(moe, &seqs[i], i * 7919u + 1) != IM_OK)
      return 1;
  /* Warm-up: first tokens draw every slot; steady state is what counts. */
  im_moe_step_begin(moe);
  for (uint32_t i = 0; i < batch; i++)
    im_moe_route(moe, &seqs[i], 1, NULL);

  double begin_s = 0.0, route_s = 0.0, stats_s = 0.0, distinct = 0.0;
  for (uint32_t s = 0; s < steps; s++) {
    double t0 = now_s();
    im_moe_step_begin(moe);
    double t1 = now_s();
    for (uint32_t i = 0; i < batch; i++)
      im_moe_route(moe, &seqs[i], 1, NULL);
    double t2 = now_s();
    struct im_moe_step_stats st;
    im_moe_step_stats(moe, &st);
    distinct += st.distinct_mean;
    begin_s += t1 - t0;
    route_s += t2 - t1;
    stats_s += now_s() - t2;
  }
  double tokens = (double)batch * steps;
  printf("stickiness %.2f batch %4u: route %.1f ns/token (%.2f ns/layer); per step: "
         "step_begin %.1f us, step_stats %.1f us; all three %.1f ns/token; distinct/layer %.1f\n",
         stickiness, batch, 1e9 * route_s / tokens, 1e9 * route_s / tokens / cfg.n_layers,
         1e6 * begin_s / steps, 1e6 * stats_s / steps,
         1e9 * (begin_s + route_s + stats_s) / tokens, distinct / steps);
  for (uint32_t i = 0; i < batch; i++)
    im_moe_seq_cleanup(&seqs[i]);
  free(seqs);
  im_moe_free(moe);
  return 0;
}

int main(int argc, char **argv) {
  uint32_t batch = argc > 1 ? (uint32_t)atoi(argv[1]) : 256;
  uint32_t steps = argc > 2 ? (uint32_t)atoi(argv[2]) : 2000;
  if (!batch || !steps)
    return 2;
  int rc = 0;
  rc |= run(0.0, batch, steps);
  rc |= run(0.5, batch, steps);
  rc |= run(0.9, batch, steps);
  return rc;
}
