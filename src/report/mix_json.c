/* metrics.class_mix (contract in mix_json.h). */
#include "report/mix_json.h"

#include <jansson.h>

#include "report/jsonw.h"

static int fig_json(json_t *o, const char *key, const struct im_mix_figure *f) {
  json_t *c = im_jw_child(o, key);
  const char *few = "fewer than two requests in a class";
  return !c || im_jw_uint(c, "code_requests", f->n_code) ||
         im_jw_uint(c, "text_requests", f->n_text) ||
         im_jw_num(c, "code_mean_ms", f->code_mean, "no code request") ||
         im_jw_num(c, "text_mean_ms", f->text_mean, "no text request") ||
         im_jw_num(c, "relative_difference", f->rel_diff, "a class is missing") ||
         im_jw_num(c, "welch_p", f->p, few) || json_object_set_new(c, "warn", json_boolean(f->warn));
}

enum im_err im_mix_json(const struct im_class_mix *m, json_t *metrics) {
  if (!m->computed)
    return IM_OK;
  json_t *o = im_jw_child(metrics, "class_mix");
  if (!o || fig_json(o, "ttft_per_prompt_token", &m->ttft_per_token) || fig_json(o, "tpot", &m->tpot) ||
      json_object_set_new(o, "relative_ref", json_real(IM_MIX_REL)) ||
      json_object_set_new(o, "p_ref", json_real(IM_MIX_P)))
    return IM_NOMEM;
  return IM_OK;
}

static void line(FILE *f, const char *what, const struct im_mix_figure *x) {
  if (x->warn)
    fprintf(f,
            "WARN code/text mix: %s differs by %.0f %% between the classes (code %.4g ms, text "
            "%.4g ms; Welch p = %.2g): figures of a code-heavy deployment differ\n",
            what, x->rel_diff * 100, x->code_mean, x->text_mean, x->p);
}

void im_mix_text(FILE *f, const struct im_class_mix *m) {
  if (!f || !m->computed)
    return;
  line(f, "TTFT per prompt token", &m->ttft_per_token);
  line(f, "TPOT", &m->tpot);
}
