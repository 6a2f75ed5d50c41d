/* infermeter run --repeat K --reference FILE|metric=value: the values each
 * headline figure of the set is tested against (one-sample t-test,
 * analyze/repeat.h im_repeat_ref_test; docs/statistics.md).
 *
 * FILE may be a run's results.json (one stage), a --repeat set's
 * results.json (each figure's mean), the directory holding either, or a
 * JSON object {"ttft_p99_ms": 120, ...} with the figure names of the
 * repeat set. metric=value names one figure; given later, it overrides
 * what a FILE gave. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "run/run_int.h"
#include "report/repeat_json.h"

/* The figure called `name`; -1 when none is. */
static int fig_of(const char *name, size_t len) {
  for (int f = 0; f < IM_RF_COUNT_; f++) {
    const char *n = im_repeat_fig_name((enum im_repeat_fig)f);
    if (strlen(n) == len && !strncmp(n, name, len))
      return f;
  }
  return -1;
}

static void list_figures(void) {
  char line[1024] = "  figures:";
  for (int f = 0; f < IM_RF_COUNT_; f++) {
    size_t n = strlen(line);
    snprintf(line + n, sizeof line - n, " %s", im_repeat_fig_name((enum im_repeat_fig)f));
  }
  im__run_say(IM_RUN_SAY_PLAIN, "%s", line);
}

/* A results.json (or its directory): the values it gives, NaN elsewhere. */
static int from_file(const char *arg, double v[IM_RF_COUNT_]) {
  char path[4200];
  struct stat st;
  if (stat(arg, &st) != 0) {
    im__run_say(IM_RUN_SAY_ERROR, "--reference %s: %s (expected FILE or metric=value)", arg,
            strerror(errno));
    return -1;
  }
  snprintf(path, sizeof path, S_ISDIR(st.st_mode) ? "%s/results.json" : "%s", arg);
  json_error_t jerr;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
  if (!json_is_object(root)) {
    im__run_say(IM_RUN_SAY_ERROR, "--reference %s: not a JSON object (%s)", path,
            root ? "another JSON value" : jerr.text);
    json_decref(root);
    return -1;
  }
  const char *schema = json_string_value(json_object_get(root, "schema"));
  int rc = 0;
  for (int f = 0; f < IM_RF_COUNT_; f++)
    v[f] = NAN;
  if (schema && !strcmp(schema, "infermeter/results/v1")) {
    if (json_object_get(root, "stages")) {
      im__run_say(IM_RUN_SAY_ERROR, "--reference %s: a run of several stages; give a one-stage "
                      "run or metric=value", path);
      rc = -1;
    } else {
      im_repeat_values_json(root, v);
    }
  } else if (schema && !strcmp(schema, "infermeter/repeat/v1")) {
    json_t *figs = json_object_get(root, "figures");
    for (int f = 0; f < IM_RF_COUNT_; f++) {
      json_t *m = json_object_get(json_object_get(figs, im_repeat_fig_name((enum im_repeat_fig)f)),
                                  "mean");
      v[f] = json_is_number(m) ? json_number_value(m) : NAN;
    }
  } else if (schema) {
    im__run_say(IM_RUN_SAY_ERROR, "--reference %s: unknown schema '%s'", path, schema);
    rc = -1;
  } else { /* {"figure": number, ...} */
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
      int f = fig_of(key, strlen(key));
      if (f < 0 || !json_is_number(val) || !isfinite(json_number_value(val))) {
        im__run_say(IM_RUN_SAY_ERROR, "--reference %s: '%s' is %s", path, key,
                f < 0 ? "not a headline figure" : "not a finite number");
        if (f < 0)
          list_figures();
        rc = -1;
        break;
      }
      v[f] = json_number_value(val);
    }
  }
  json_decref(root);
  return rc;
}

int im__run_reference(const struct im_run_config *o, struct im__run_ref *ref) {
  memset(ref, 0, sizeof *ref);
  for (int f = 0; f < IM_RF_COUNT_; f++)
    ref->value[f] = NAN;
  for (size_t i = 0; i < o->n_reference; i++) {
    const char *arg = o->reference[i], *eq = strchr(arg, '=');
    int f = eq ? fig_of(arg, (size_t)(eq - arg)) : -1;
    size_t len = strlen(ref->source);
    snprintf(ref->source + len, sizeof ref->source - len, "%s%s", len ? ", " : "", arg);
    if (f >= 0) {
      char *end;
      errno = 0;
      double x = strtod(eq + 1, &end);
      if (eq[1] == '\0' || *end || errno || !isfinite(x)) {
        im__run_say(IM_RUN_SAY_ERROR, "--reference %s: expected a finite number after '='",
                arg);
        return -1;
      }
      ref->value[f] = x;
      continue;
    }
    if (eq && !strchr(arg, '/')) {
      struct stat st;
      if (stat(arg, &st) != 0) {
        im__run_say(IM_RUN_SAY_ERROR, "--reference %s: '%.*s' is not a headline figure", arg,
                (int)(eq - arg), arg);
        list_figures();
        return -1;
      }
    }
    double v[IM_RF_COUNT_];
    if (from_file(arg, v))
      return -1;
    for (int g = 0; g < IM_RF_COUNT_; g++)
      if (!isnan(v[g]))
        ref->value[g] = v[g];
  }
  for (int f = 0; f < IM_RF_COUNT_; f++)
    ref->n += isnan(ref->value[f]) ? 0u : 1u;
  if (o->n_reference && !ref->n) {
    im__run_say(IM_RUN_SAY_ERROR, "--reference %s: no headline figure has a value there",
            ref->source);
    return -1;
  }
  return 0;
}
