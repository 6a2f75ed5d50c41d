/* The stages of `infermeter run` (docs/scenarios.md): the grid x sweep
 * product, each stage's settings, and its line on the terminal. */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_int.h"

/* The stage's settings applied to a copy of the run's options. */
void im__run_apply_stage(struct im_run_config *so, const struct im_stage *st) {
  if (st->set & (1u << IM_PARAM_TEMPERATURE))
    so->temperature = st->values[IM_PARAM_TEMPERATURE];
  if (st->set & (1u << IM_PARAM_TOP_P))
    so->top_p = st->values[IM_PARAM_TOP_P];
  if (st->set & (1u << IM_PARAM_OUTPUT_LEN))
    so->output_len = (uint32_t)st->values[IM_PARAM_OUTPUT_LEN];
  if (st->set & (1u << IM_PARAM_INPUT_LEN))
    so->input_len = (uint32_t)st->values[IM_PARAM_INPUT_LEN];
  if (st->set & (1u << IM_PARAM_RATE)) {
    if (so->sessions || so->session_rate > 0) {
      so->sessions = 0;
      so->session_rate = st->values[IM_PARAM_RATE];
    } else {
      so->rate = st->values[IM_PARAM_RATE];
      so->concurrency = 0;
    }
  }
  if (st->set & (1u << IM_PARAM_CONCURRENCY)) {
    if (so->sessions || so->session_rate > 0) {
      so->session_rate = 0;
      so->sessions = (uint32_t)st->values[IM_PARAM_CONCURRENCY];
    } else {
      so->concurrency = (uint32_t)st->values[IM_PARAM_CONCURRENCY];
    }
  }
}

int im__run_plan_parse(const struct im_run_config *o, struct run_plan *p) {
  char err[256];
  im_grid_init(&p->grid);
  for (size_t i = 0; i < o->n_grid; i++)
    if (im_grid_add(&p->grid, o->grid[i], err, sizeof err) != IM_OK) {
      im__run_say(IM_RUN_SAY_ERROR, "%s", err);
      return -1;
    }
  p->n_grid = o->n_grid ? im_grid_count(&p->grid) : 1;
  p->has_sweep = o->sweep != NULL;
  if (p->has_sweep && im_sweep_parse(o->sweep, &p->sweep, err, sizeof err) != IM_OK) {
    im__run_say(IM_RUN_SAY_ERROR, "%s", err);
    return -1;
  }
  return 0;
}

/* Stage `i` of the product grid x sweep (grid outer). */
int im__run_plan_stage(const struct run_plan *p, size_t i, struct im_stage *st) {
  size_t ns = p->has_sweep ? p->sweep.nvalues : 1;
  struct im_stage g, w;
  memset(st, 0, sizeof *st);
  memset(&g, 0, sizeof g);
  memset(&w, 0, sizeof w);
  if (p->grid.naxes && im_grid_stage(&p->grid, i / ns, &g) != IM_OK)
    return -1;
  if (p->has_sweep && im_sweep_stage(&p->sweep, i % ns, &w) != IM_OK)
    return -1;
  *st = g;
  st->set |= w.set;
  for (int k = 0; k < IM_PARAM_COUNT_; k++)
    if (w.set & (1u << k))
      st->values[k] = w.values[k];
  size_t gl = strnlen(g.label, sizeof g.label);
  memcpy(st->label, g.label, gl);
  if (gl && w.label[0] && gl + 1 < sizeof st->label)
    st->label[gl++] = ',';
  size_t wl = strnlen(w.label, sizeof w.label);
  if (wl > sizeof st->label - 1 - gl)
    wl = sizeof st->label - 1 - gl;
  memcpy(st->label + gl, w.label, wl);
  st->label[gl + wl] = '\0';
  return 0;
}

json_t *im__run_stage_params_json(const struct im_stage *st) {
  json_t *p = json_object();
  for (int k = 0; k < IM_PARAM_COUNT_; k++)
    if (st->set & (1u << k))
      json_object_set_new(p, im_stage_param_name((enum im_stage_param)k), json_real(st->values[k]));
  return p;
}
