/* Summaries of the machine's series (contract in machine.h). */
#include "analyze/machine.h"

#include <math.h>
#include <string.h>

/* ---- TCP states ---- */

void im_tcp_summarize(const struct im_series_tcp *pts, size_t n, struct im_tcp_summary *out) {
  memset(out, 0, sizeof *out);
  out->n = n;
  out->time_wait_growth_per_s = NAN;
  if (n == 0 || !pts)
    return;
  /* Times relative to the first point, in seconds, and two passes around
   * the means: no cancellation with ns-sized absolute times. */
  int64_t t0 = pts[0].t_mono;
  double sx = 0, sy = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t tw = pts[i].state[IM_TCP_TIME_WAIT];
    uint32_t est = pts[i].state[IM_TCP_ESTABLISHED];
    if (tw > out->time_wait_max)
      out->time_wait_max = tw;
    if (est > out->established_max)
      out->established_max = est;
    sx += (double)(pts[i].t_mono - t0) / 1e9;
    sy += tw;
  }
  out->span_s = (double)(pts[n - 1].t_mono - t0) / 1e9;
  double mx = sx / (double)n, my = sy / (double)n, sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < n; i++) {
    double dx = (double)(pts[i].t_mono - t0) / 1e9 - mx;
    double dy = (double)pts[i].state[IM_TCP_TIME_WAIT] - my;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  if (n < 2 || !(sxx > 0))
    return;
  double slope = sxy / sxx;
  out->time_wait_growth_per_s = slope;
  if (n < 6 || !(slope > 1.0))
    return;
  size_t k = n / 3;
  double first = 0, last = 0;
  for (size_t i = 0; i < k; i++) {
    first += pts[i].state[IM_TCP_TIME_WAIT];
    last += pts[n - k + i].state[IM_TCP_TIME_WAIT];
  }
  if (!(last > first))
    return;
  double sse = syy - slope * sxy;
  if (sse < 0)
    sse = 0;
  double se = sqrt(sse / (double)(n - 2) / sxx);
  out->growing = se == 0 || slope / se >= 2.0;
}

/* ---- GPU counters ---- */

const char *im_gpu_energy_source_name(enum im_gpu_energy_source s) {
  switch (s) {
  case IM_GPU_ENERGY_COUNTER:
    return "counter";
  case IM_GPU_ENERGY_POWER:
    return "power";
  case IM_GPU_ENERGY_MIXED:
    return "mixed";
  case IM_GPU_ENERGY_NONE:
    break;
  }
  return "none";
}

double im_gpu_tokens_per_joule(double tokens, double energy_j) {
  if (!(energy_j > 0) || isnan(tokens))
    return NAN;
  return tokens / energy_j;
}

struct mean_max {
  double sum, max;
  size_t n;
};

static void mm_add(struct mean_max *m, double v) {
  if (isnan(v))
    return;
  m->sum += v;
  if (m->n == 0 || v > m->max)
    m->max = v;
  m->n++;
}

static double mm_mean(const struct mean_max *m) {
  return m->n ? m->sum / (double)m->n : NAN;
}

/* Energy of one GPU between snapshots a and b (a->t_ns < b->t_ns), limited
 * to [lo, hi] ⊆ [a->t_ns, b->t_ns]. Returns false when neither method
 * applies; *used_counter says which one did. */
static bool pair_energy(const struct im_gpu_sample *sa, const struct im_gpu_sample *sb, int64_t ta,
                        int64_t tb, int64_t lo, int64_t hi, double *joules, bool *used_counter) {
  double span = (double)(tb - ta);
  if (sa->has_energy && sb->has_energy && sb->energy_mj >= sa->energy_mj) {
    double whole_j = (double)(sb->energy_mj - sa->energy_mj) / 1000.0;
    *joules = whole_j * (double)(hi - lo) / span;
    *used_counter = true;
    return true;
  }
  if (!isnan(sa->power_w) && !isnan(sb->power_w)) {
    /* Power linear between the readings: integrate over [lo, hi]. */
    double slope = (sb->power_w - sa->power_w) / span;
    double p_lo = sa->power_w + slope * (double)(lo - ta);
    double p_hi = sa->power_w + slope * (double)(hi - ta);
    *joules = 0.5 * (p_lo + p_hi) * (double)(hi - lo) / 1e9;
    *used_counter = false;
    return true;
  }
  return false;
}

static void summarize_energy(const struct im_gpu_snapshot *snaps, size_t n, int64_t t0, int64_t t1,
                             struct im_gpu_summary *out) {
  double total_j = 0, covered_ns = 0;
  bool any_counter = false, any_power = false;
  for (size_t k = 0; k + 1 < n; k++) {
    const struct im_gpu_snapshot *a = &snaps[k], *b = &snaps[k + 1];
    int64_t lo = a->t_ns > t0 ? a->t_ns : t0;
    int64_t hi = b->t_ns < t1 ? b->t_ns : t1;
    if (a->t_ns >= b->t_ns || lo >= hi)
      continue;
    unsigned ng = a->n_gpus < b->n_gpus ? a->n_gpus : b->n_gpus;
    bool pair_counted = false;
    for (unsigned i = 0; i < ng && i < IM_GPU_MAX; i++) {
      double j;
      bool counter;
      if (!pair_energy(&a->gpu[i], &b->gpu[i], a->t_ns, b->t_ns, lo, hi, &j, &counter))
        continue;
      total_j += j;
      pair_counted = true;
      if (counter)
        any_counter = true;
      else
        any_power = true;
    }
    if (pair_counted)
      covered_ns += (double)(hi - lo);
  }
  if (any_counter && any_power)
    out->energy_source = IM_GPU_ENERGY_MIXED;
  else if (any_counter)
    out->energy_source = IM_GPU_ENERGY_COUNTER;
  else if (any_power)
    out->energy_source = IM_GPU_ENERGY_POWER;
  else
    out->energy_source = IM_GPU_ENERGY_NONE;
  out->energy_j = out->energy_source == IM_GPU_ENERGY_NONE ? NAN : total_j;
  out->energy_covered_s = covered_ns / 1e9;
}

enum im_err im_gpu_summarize(const struct im_gpu_snapshot *snaps, size_t n, int64_t t0_ns,
                             int64_t t1_ns, struct im_gpu_summary *out) {
  if (!out || (n > 0 && !snaps) || t1_ns < t0_ns)
    return IM_INVAL;
  for (size_t k = 1; k < n; k++)
    if (snaps[k].t_ns < snaps[k - 1].t_ns)
      return IM_INVAL;

  memset(out, 0, sizeof *out);
  struct mean_max bw = {0}, tensor = {0}, sm = {0}, power = {0};
  for (size_t k = 0; k < n; k++) {
    const struct im_gpu_snapshot *s = &snaps[k];
    if (s->t_ns < t0_ns || s->t_ns > t1_ns)
      continue;
    out->n_snapshots++;
    unsigned ng = s->n_gpus < IM_GPU_MAX ? s->n_gpus : IM_GPU_MAX;
    if (ng > out->n_gpus)
      out->n_gpus = ng;
    double p_sum = 0;
    bool p_any = false;
    for (unsigned i = 0; i < ng; i++) {
      const struct im_gpu_sample *g = &s->gpu[i];
      if (g->has_mem && (!out->has_mem || g->mem_used_bytes > out->mem_used_max_bytes)) {
        out->has_mem = true;
        out->mem_used_max_bytes = g->mem_used_bytes;
        out->mem_total_bytes = g->mem_total_bytes;
      }
      mm_add(&bw, g->dram_bw_util);
      mm_add(&tensor, g->tensor_active);
      mm_add(&sm, g->sm_active);
      if (!isnan(g->power_w)) {
        p_sum += g->power_w;
        p_any = true;
      }
    }
    if (p_any)
      mm_add(&power, p_sum);
  }
  out->dram_bw_util_mean = mm_mean(&bw);
  out->dram_bw_util_max = bw.n ? bw.max : NAN;
  out->tensor_active_mean = mm_mean(&tensor);
  out->sm_active_mean = mm_mean(&sm);
  out->power_w_mean = mm_mean(&power);
  summarize_energy(snaps, n, t0_ns, t1_ns, out);
  return IM_OK;
}
