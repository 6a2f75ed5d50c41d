/* Root causes of SLO violations (docs/metrics.md §7; docs/audit.md "Root
 * causes" has every rule with its thresholds).
 *
 * For each SLO whose attainment fell below the stage's target, every rule
 * below is checked against the stage's completed requests (the final
 * attempts, analyze/population.h) and, where a rule needs it, the server's
 * time series (analyze/scraped.h). A request violates the SLO when its value
 * (TTFT, TPOT or E2E latency, as summary.c's SLO check computes it) is
 * above the limit L. Every rule compares groups of requests with each other
 * relative to L, never a number of seconds, so a server that is uniformly
 * faster or slower (a time-scaled one) gets the same verdicts.
 *
 * Rules (IM_CAUSE_* thresholds below):
 *   temperature_overload  requests split into thirds by the temperature they
 *       sent: P(v > L | hottest) >= 3 x P(v > L | coldest), with at least
 *       one violation in the hottest third, and the hottest third's mean
 *       output tokens above the coldest's. Score: that ratio (a coldest
 *       third without violations counts as half a violation, so the score
 *       stays finite). Not applicable under 2 distinct temperatures or 3
 *       requests.
 *   top_p_collapse  repetition rate > 0.45 and a bimodality coefficient
 *       > 5/9. Records carry no output text: never fires, status NOT_CHECKED;
 *       the coefficient over the SLO's values is computed as evidence.
 *   queueing  Pearson r >= 0.5 between each completed request's TTFT and the
 *       server's requests_waiting at its arrival (t_sched; the sample
 *       nearest in time), while the median TPOT of violating requests is at
 *       most 1.2 x that of the others. Score: r.
 *   kv_pressure  a request is under pressure when, over the samples from
 *       the last at or before its start to the first at or after its end,
 *       preemptions increased or KV usage reached 0.95. Fires when at least
 *       half of the violating requests are, and at least twice the share
 *       of the others (none: share 0). Score: the violating share.
 *   client_saturation  the client self-check is INVALID. Score: 1.
 *   connection_churn  the TCP observer saw TIME_WAIT grow, and
 *       P(v > L | opened its connection) >= 3 x P(v > L | reused one), at
 *       least one violation among the former and a reused request to
 *       compare with. Score: that ratio (no violation among reused: half a
 *       violation).
 *   server_stall  TPOT and E2E SLOs: the stage's time-aligned share of
 *       stalls (analyze/tokens.h) >= 0.5 and at least half of the violating
 *       requests hold a stall. Score: that share.
 *   prefill_interference  TPOT and E2E SLOs: of the stalls inside violating
 *       requests, at least half began while another request was in its
 *       prefill (its [t_start, t_first) holds the gap's start), and that
 *       count is unlikely by chance: P(B >= count) < 0.05 for B ~
 *       Binomial(stalls, c), c the share of the requests' span covered by
 *       some prefill. Score: the share over c.
 *   unexplained  (rendered when none fired): what was checked and why each
 *       did not fire.
 *
 * Pure: no I/O, no global state; the result holds no pointer into the
 * input but static strings. */
#ifndef IM_ANALYZE_CAUSES_H
#define IM_ANALYZE_CAUSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/scraped.h"
#include "analyze/slo.h"
#include "analyze/stage.h"

/* Thresholds (docs/audit.md "Root causes", docs/metrics.md §7). */
#define IM_CAUSE_TEMP_RATIO 2.0      /* hottest third's violation share over the coldest's */
#define IM_CAUSE_REPETITION 0.45     /* 4-gram repetition rate of the outputs */
#define IM_CAUSE_BIMODAL (5.0 / 9.0) /* bimodality coefficient of a uniform sample */
#define IM_CAUSE_QUEUE_R 0.5         /* Pearson r of TTFT and the waiting queue */
#define IM_CAUSE_ITL_FLAT 1.2        /* violators' median TPOT over the others' */
#define IM_CAUSE_KV_USAGE 0.95       /* KV usage that counts as pressure */
#define IM_CAUSE_KV_SHARE 0.5        /* violating requests under pressure */
#define IM_CAUSE_KV_CONTRAST 2.0     /* ... over the share among the others */
#define IM_CAUSE_CONN_RATIO 3.0      /* new connections' violation share over reused ones' */
#define IM_CAUSE_STALL_ALIGNED 0.5   /* the stalls' time-aligned share */
#define IM_CAUSE_STALL_SHARE 0.5     /* violating requests holding a stall */
#define IM_CAUSE_PREFILL_SHARE 0.5   /* stalls that began during another's prefill */
#define IM_CAUSE_PREFILL_P 0.05      /* binomial tail against chance */
#define IM_CAUSE_EMPTY_GROUP 0.5     /* violations credited to a group without any */
#define IM_CAUSE_TEMP_P 0.05         /* hottest vs coldest third's violations against chance */
#define IM_CAUSE_LOOP_SHARE 0.5      /* over-limit answers that ran to max_tokens (top-p) */
#define IM_CAUSE_CARRY_SHARE 0.5     /* violating requests whose delay carries the violation: */
#define IM_CAUSE_CARRY_EXCESS 0.5    /* ... at least this share of their value's excess over L */

enum im_cause {
  IM_CAUSE_TEMPERATURE_OVERLOAD,
  IM_CAUSE_TOP_P_COLLAPSE,
  IM_CAUSE_QUEUEING,
  IM_CAUSE_KV_PRESSURE,
  IM_CAUSE_CLIENT_SATURATION,
  IM_CAUSE_CONNECTION_CHURN,
  IM_CAUSE_SERVER_STALL,
  IM_CAUSE_PREFILL_INTERFERENCE,
  IM_CAUSE_HOST_NOISE,
  IM_CAUSE_RULES_, /* the rules above; unexplained is their absence */
  IM_CAUSE_UNEXPLAINED = IM_CAUSE_RULES_
};

enum im_cause_status {
  IM_CAUSE_FIRED,
  IM_CAUSE_NOT_FIRED,      /* checked: the rule does not hold */
  IM_CAUSE_NOT_APPLICABLE, /* the data it needs is absent (no samples, one temperature) */
  IM_CAUSE_NOT_CHECKED     /* it needs what records do not carry */
};

#define IM_CAUSE_MAX_FIGS 10

/* One figure of a rule's evidence; key is static, value NaN when undefined. */
struct im_cause_fig {
  const char *key;
  double value;
};

struct im_cause_check {
  enum im_cause cause;
  enum im_cause_status status;
  double score; /* the rule's statistic (see above); NaN when not computed */
  struct im_cause_fig figs[IM_CAUSE_MAX_FIGS];
  size_t n_figs;
  char why[320]; /* one sentence: why it fired, or why not */
};

/* One violated SLO. */
struct im_cause_slo {
  enum im_slo_kind slo; /* TTFT, TPOT or E2EL */
  double limit_ms, attainment, target;
  uint64_t requests;  /* completed requests (with a value) */
  uint64_t violating; /* of them, above the limit */
  double bimodality;  /* BC of the values; NaN for n < 4 or equal values */
  struct im_cause_check checks[IM_CAUSE_RULES_]; /* indexed by enum im_cause */
  size_t n_fired;                                /* 0: unexplained */
};

struct im_causes {
  struct im_cause_slo slo[IM_SLO_ALL]; /* the violated SLOs, in TTFT, TPOT, E2EL order */
  size_t n;                            /* 0: no SLO violated (or none given) */
};

struct im_causes_input {
  const struct im_stage_figures *f;    /* population, summary, self-check, tokens */
  const struct im_summary_config *cfg; /* the SLOs */
  double slo_target;
  const struct im_server_figures *server; /* NULL: the run sampled nothing */
};

/* "temperature_overload", ..., "unexplained". */
const char *im_cause_name(enum im_cause c);
/* "fired", "not_fired", "not_applicable", "not_checked". */
const char *im_cause_status_name(enum im_cause_status s);
/* Checks every rule for every violated SLO into *out (overwritten; nothing
 * to release). IM_INVAL for NULL arguments, IM_NOMEM (out is then empty). */
enum im_err im_causes_compute(const struct im_causes_input *in, struct im_causes *out) IM_WUR;

#endif
