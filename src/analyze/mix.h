/* Code/text token mix (--mix code=..,text=..; docs/deepseek.md): do the two
 * content classes see different latency? Per class the TTFT per prompt
 * token and the TPOT of the measured requests dispatched in the window
 * (kind measured, no error; TPOT needs >= 2 output tokens), and Welch's
 * t-test of code against text for each. A figure warns when the class
 * means differ by more than IM_MIX_REL (10 %) of the smaller and the test
 * says the difference is beyond noise (p < IM_MIX_P). Pure. */
#ifndef IM_ANALYZE_MIX_H
#define IM_ANALYZE_MIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "record/record.h"

#define IM_MIX_REL 0.10
#define IM_MIX_P 0.05

struct im_mix_figure {
  size_t n_code, n_text;
  double code_mean, text_mean; /* ms (per prompt token for TTFT); NaN: none */
  double rel_diff;             /* |code - text| / min(code, text); NaN */
  double p;                    /* Welch two-sided p; NaN when not testable */
  bool warn;
};

struct im_class_mix {
  bool computed;               /* both classes present */
  struct im_mix_figure ttft_per_token, tpot;
};

/* IM_NOMEM; *out filled (computed false without both classes). */
enum im_err im_mix_compute(const struct im_record *r, size_t n, int64_t ws, int64_t we,
                           struct im_class_mix *out) IM_WUR;

#endif
