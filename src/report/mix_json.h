/* metrics.class_mix of a stage (docs/deepseek.md "Code/text mix"): renders
 * analyze/mix.h; NaN as null. */
#ifndef IM_REPORT_MIX_JSON_H
#define IM_REPORT_MIX_JSON_H

#include <stdio.h>

#include "analyze/mix.h"
#include "core/err.h"

struct json_t;

/* Sets metrics["class_mix"] when m->computed (nothing otherwise). IM_NOMEM. */
enum im_err im_mix_json(const struct im_class_mix *m, struct json_t *metrics) IM_WUR;
/* A WARN line per figure that warns. */
void im_mix_text(FILE *f, const struct im_class_mix *m);

#endif
