/* Code/text mix check (contract in mix.h). */
#include "analyze/mix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

static void judge(const double *a, size_t na, const double *b, size_t nb,
                  struct im_mix_figure *f) {
  double sa = 0, sb = 0;
  for (size_t i = 0; i < na; i++)
    sa += a[i];
  for (size_t i = 0; i < nb; i++)
    sb += b[i];
  f->n_code = na;
  f->n_text = nb;
  f->code_mean = na ? sa / (double)na : NAN;
  f->text_mean = nb ? sb / (double)nb : NAN;
  double lo = fmin(f->code_mean, f->text_mean);
  f->rel_diff = na && nb && lo > 0 ? fabs(f->code_mean - f->text_mean) / lo : NAN;
  struct im_stats_welch w;
  f->p = na >= 2 && nb >= 2 && im_stats_welch(a, na, b, nb, 0.95, &w) == IM_OK ? w.p : NAN;
  f->warn = f->rel_diff > IM_MIX_REL && f->p < IM_MIX_P;
}

enum im_err im_mix_compute(const struct im_record *r, size_t n, int64_t ws, int64_t we,
                           struct im_class_mix *out) {
  memset(out, 0, sizeof *out);
  double *v = malloc((4 * n + 4) * sizeof *v);
  if (!v)
    return IM_NOMEM;
  /* Four arrays of n: TTFT/token code, text; TPOT code, text. */
  double *tc = v, *tt = v + n + 1, *pc = v + 2 * n + 2, *pt = v + 3 * n + 3;
  size_t ntc = 0, ntt = 0, npc = 0, npt = 0;
  for (size_t i = 0; i < n; i++) {
    const struct im_record *q = &r[i];
    if (q->kind != IM_KIND_MEASURED || q->error != IM_EC_NONE || q->t_first < 0 ||
        q->t_dispatch < ws || q->t_dispatch > we || q->content_class == IM_CLASS_NONE)
      continue;
    bool code = q->content_class == IM_CLASS_CODE;
    /* TTFT from the hand-over to HTTP, as vLLM's ttft (docs/metrics.md §1). */
    if (q->prompt_tokens && q->t_start >= 0) {
      double x = (double)(q->t_first - q->t_start) / 1e6 / (double)q->prompt_tokens;
      if (code)
        tc[ntc++] = x;
      else
        tt[ntt++] = x;
    }
    if (q->output_tokens >= 2 && q->t_last > q->t_first) {
      double x = (double)(q->t_last - q->t_first) / 1e6 / (double)(q->output_tokens - 1);
      if (code)
        pc[npc++] = x;
      else
        pt[npt++] = x;
    }
  }
  out->computed = (ntc || npc) && (ntt || npt);
  judge(tc, ntc, tt, ntt, &out->ttft_per_token);
  judge(pc, npc, pt, npt, &out->tpot);
  free(v);
  return IM_OK;
}
