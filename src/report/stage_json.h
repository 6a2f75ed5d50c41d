/* results.json's object for one stage (the root of a one-stage run, else an
 * element of "stages"): summary, metrics, audit, saturation, the client's
 * series, t0_monotonic_ns. Renders analyze/stage.h's figures only. The
 * server's, TCP and GPU parts are added by their own renderer. */
#ifndef IM_REPORT_STAGE_JSON_H
#define IM_REPORT_STAGE_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "analyze/stage.h"
#include "core/err.h"

/* What the renderer needs beyond the figures. */
struct im_stage_meta {
  int64_t t0_mono;     /* CLOCK_MONOTONIC of the stage's start; -1 unknown */
  int64_t elapsed_ns;  /* how long the stage ran */
  bool by_class;       /* --mix: metrics.by_class */
  bool sessions;       /* sessions: metrics.sessions */
};

/* Adds the stage's keys to dst (an object). IM_NOMEM when jansson could not
 * allocate (dst may then hold some keys). */
enum im_err im_stage_json(const struct im_stage_figures *f, const struct im_stage_input *in,
                          const struct im_stage_meta *m, json_t *dst) IM_WUR;
/* The saturation verdict's JSON (null when not judged). NULL: no memory. */
json_t *im_saturation_json(const struct im_stage_figures *f);

#endif
