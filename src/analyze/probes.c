/* Probe requests: see analyze/probes.h. */
#include "analyze/probes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

enum im_err im_probes_compute(const struct im_population *pop, double stall_k,
                              struct im_probes *out) {
  memset(out, 0, sizeof *out);
  out->p50_ms = out->p99_ms = out->max_ms = out->stall_share = NAN;
  out->stall_k = stall_k;
  double *v = malloc((pop->n_other ? pop->n_other : 1) * sizeof *v);
  if (!v)
    return IM_NOMEM;
  size_t n = 0;
  for (size_t i = 0; i < pop->n_other; i++) {
    const struct im_record *r = pop->other[i];
    if (r->kind != IM_KIND_PROBE || !im_population_in_window(pop, r->t_dispatch))
      continue;
    out->sent++;
    if (r->error != IM_EC_NONE || r->t_end < r->t_start || r->t_start < 0)
      out->failed++;
    else
      v[n++] = (double)(r->t_end - r->t_start) / 1e6;
  }
  if (n) {
    double *s = malloc(n * sizeof *s);
    if (!s) {
      free(v);
      return IM_NOMEM;
    }
    memcpy(s, v, n * sizeof *s);
    im_stats_sort(s, n);
    out->p50_ms = im_stats_pct_linear(s, n, 0.50);
    out->p99_ms = im_stats_pct_linear(s, n, 0.99);
    out->max_ms = s[n - 1];
    free(s);
    /* v is in the population's order (by dispatch within the stage). */
    double lim = stall_k * out->p50_ms;
    size_t j = 0;
    for (size_t i = 0; i < pop->n_other; i++) {
      const struct im_record *r = pop->other[i];
      if (r->kind != IM_KIND_PROBE || !im_population_in_window(pop, r->t_dispatch) ||
          r->error != IM_EC_NONE || r->t_end < r->t_start || r->t_start < 0)
        continue;
      double ms = v[j++];
      if (!(ms > lim))
        continue;
      if (out->n_listed < IM_PROBES_MAX_STALLS) {
        out->stall_at_s[out->n_listed] = (double)r->t_start / 1e9;
        out->stall_ms[out->n_listed++] = ms;
      }
      out->stalls++;
    }
    out->stall_share = (double)out->stalls / (double)n;
  }
  free(v);
  return IM_OK;
}
