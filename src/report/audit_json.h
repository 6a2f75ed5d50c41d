/* The publishable audit (analyze/validity.h): its JSON under
 * audit.publishable and its terminal lines. */
#ifndef IM_REPORT_AUDIT_JSON_H
#define IM_REPORT_AUDIT_JSON_H

#include <stdio.h>

#include <jansson.h>

#include "analyze/validity.h"

/* audit["publishable"] = {verdict, checks: [{id, status, evidence, fix}],
 * workload: {prompt_tokens: {min, p50, max, distinct}, output_tokens: {...}}}. */
enum im_err im_validity_json(const struct im_validity *v, json_t *audit) IM_WUR;
/* "Publishable: NOT_PUBLISHABLE" and one line per check that is not PASS
 * (all checks when verbose). */
void im_validity_text(FILE *o, const struct im_validity *v, bool verbose);

#endif
