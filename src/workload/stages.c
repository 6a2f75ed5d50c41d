/* Sampling perturbation, grid and sweep stages: see src/workload/stages.h. */
#include "workload/stages.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"

#define IM__PI 3.14159265358979323846

void im_perturb(const char *id, double t0, double p0, double current_rate, double max_rate,
                double *temperature, double *top_p) {
  if (!id)
    id = "";
  uint64_t h = im_fnv1a64(id, strlen(id));
  double phase = ((double)(h % 100) / 50.0) * IM__PI;
  double load = current_rate / max_rate;
  if (isnan(load) || load < 0.0)
    load = 0.0;
  else if (load > 1.0)
    load = 1.0;
  if (temperature)
    *temperature = fmax(0.1, t0 + 0.3 * sin(phase) * load);
  if (top_p)
    *top_p = fmax(0.1, p0 - 0.2 * fabs(cos(phase)) * (1.0 - load));
}

static const char *const param_names[IM_PARAM_COUNT_] = {
    "temperature", "top_p", "output_len", "input_len", "rate", "concurrency",
};

const char *im_stage_param_name(enum im_stage_param param) {
  if ((unsigned)param >= IM_PARAM_COUNT_)
    return "?";
  return param_names[param];
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* Range check of one value; NULL when fine, else what is allowed. */
static const char *check_value(enum im_stage_param p, double v) {
  switch (p) {
  case IM_PARAM_TEMPERATURE:
    return v >= 0.0 ? NULL : "temperature must be >= 0";
  case IM_PARAM_TOP_P:
    return v > 0.0 && v <= 1.0 ? NULL : "top_p must be in (0, 1]";
  case IM_PARAM_OUTPUT_LEN:
  case IM_PARAM_INPUT_LEN:
    return v >= 1.0 && v <= IM_STAGE_MAX_LEN && v == floor(v)
               ? NULL
               : "lengths must be whole numbers of tokens in [1, 10000000]";
  case IM_PARAM_RATE:
    return v > 0.0 ? NULL : "rate must be > 0 (requests/s)";
  case IM_PARAM_CONCURRENCY:
    return v >= 1.0 && v <= IM_STAGE_MAX_CONCURRENCY && v == floor(v)
               ? NULL
               : "concurrency must be a whole number in [1, 1000000]";
  default:
    return "unknown parameter";
  }
}

/* Parses "NAME=V1,V2,..." for `flag` ("--grid" / "--sweep"), NAME among the
 * params in [first, last]. *is_auto (when non-NULL) is set for "NAME=auto"
 * and then no values are returned. */
static enum im_err parse_spec(const char *flag, const char *spec, enum im_stage_param first,
                              enum im_stage_param last, int *is_auto, struct im_grid_axis *axis,
                              char *err, size_t errlen) {
  memset(axis, 0, sizeof *axis);
  if (is_auto)
    *is_auto = 0;
  if (!spec) {
    set_err(err, errlen, "%s: missing value (expected NAME=V1,V2,...)", flag);
    return IM_INVAL;
  }
  size_t len = strnlen(spec, IM_STAGE_SPEC_MAX + 1);
  if (len > IM_STAGE_SPEC_MAX) {
    set_err(err, errlen, "%s: value longer than %d characters", flag, IM_STAGE_SPEC_MAX);
    return IM_LIMIT;
  }
  const char *eq = strchr(spec, '=');
  if (!eq) {
    set_err(err, errlen, "%s \"%s\": no '=' (expected NAME=V1,V2,...)", flag, spec);
    return IM_PARSE;
  }
  size_t nlen = (size_t)(eq - spec);
  int found = 0;
  for (int p = (int)first; p <= (int)last; p++) {
    if (strlen(param_names[p]) == nlen && memcmp(spec, param_names[p], nlen) == 0) {
      axis->param = (enum im_stage_param)p;
      found = 1;
    }
  }
  if (!found) {
    char names[96] = "";
    for (int p = (int)first; p <= (int)last; p++) {
      size_t used = strlen(names);
      snprintf(names + used, sizeof names - used, "%s%s", p == (int)first ? "" : ", ",
               param_names[p]);
    }
    set_err(err, errlen, "%s \"%s\": unknown parameter \"%.*s\" (known: %s)", flag, spec, (int)nlen,
            spec, names);
    return IM_PARSE;
  }
  const char *pname = param_names[axis->param];
  const char *s = eq + 1;
  size_t idx = 0;
  for (;;) {
    const char *comma = strchr(s, ',');
    const char *end = comma ? comma : s + strlen(s);
    const char *a = s, *b = end;
    while (a < b && isspace((unsigned char)*a))
      a++;
    while (b > a && isspace((unsigned char)b[-1]))
      b--;
    idx++;
    if (a == b) {
      set_err(err, errlen, "%s \"%s\": %s value %zu is empty", flag, spec, pname, idx);
      return IM_PARSE;
    }
    char tok[64];
    size_t tlen = (size_t)(b - a);
    if (is_auto && idx == 1 && !comma && tlen == 4 && memcmp(a, "auto", 4) == 0) {
      *is_auto = 1;
      return IM_OK;
    }
    if (tlen >= sizeof tok) {
      set_err(err, errlen, "%s \"%s\": %s value %zu is not a number", flag, spec, pname, idx);
      return IM_PARSE;
    }
    memcpy(tok, a, tlen);
    tok[tlen] = '\0';
    char *stop = NULL;
    errno = 0;
    double v = strtod(tok, &stop);
    if (stop != tok + tlen || errno == ERANGE || !isfinite(v)) {
      set_err(err, errlen, "%s \"%s\": %s value %zu \"%s\" is not a finite number%s", flag, spec,
              pname, idx, tok,
              is_auto && axis->param == IM_PARAM_RATE ? " (or \"auto\" alone)" : "");
      return IM_PARSE;
    }
    const char *why = check_value(axis->param, v);
    if (why) {
      set_err(err, errlen, "%s \"%s\": value %zu \"%s\": %s", flag, spec, idx, tok, why);
      return IM_INVAL;
    }
    for (size_t i = 0; i < axis->nvalues; i++) {
      if (axis->values[i] == v) {
        set_err(err, errlen, "%s \"%s\": %s value %zu \"%s\" repeats value %zu", flag, spec, pname,
                idx, tok, i + 1);
        return IM_INVAL;
      }
    }
    if (axis->nvalues == IM_STAGE_MAX_VALUES) {
      set_err(err, errlen, "%s \"%s\": more than %d values for %s", flag, spec, IM_STAGE_MAX_VALUES,
              pname);
      return IM_LIMIT;
    }
    axis->values[axis->nvalues++] = v;
    if (!comma)
      break;
    s = comma + 1;
  }
  return IM_OK;
}

static void label_add(struct im_stage *st, enum im_stage_param p, double v) {
  size_t used = strlen(st->label);
  snprintf(st->label + used, sizeof st->label - used, "%s%s=%.15g", used ? "," : "", param_names[p],
           v);
  st->set |= 1u << p;
  st->values[p] = v;
}

void im_grid_init(struct im_grid *grid) {
  memset(grid, 0, sizeof *grid);
}

size_t im_grid_count(const struct im_grid *grid) {
  if (!grid || grid->naxes == 0)
    return 0;
  size_t n = 1;
  for (size_t i = 0; i < grid->naxes; i++)
    n *= grid->axes[i].nvalues;
  return n;
}

enum im_err im_grid_add(struct im_grid *grid, const char *spec, char *err, size_t errlen) {
  if (!grid) {
    set_err(err, errlen, "--grid: no grid");
    return IM_INVAL;
  }
  struct im_grid_axis axis;
  enum im_err rc = parse_spec("--grid", spec, IM_PARAM_TEMPERATURE, IM_PARAM_INPUT_LEN, NULL, &axis,
                              err, errlen);
  if (rc != IM_OK)
    return rc;
  for (size_t i = 0; i < grid->naxes; i++) {
    if (grid->axes[i].param == axis.param) {
      set_err(err, errlen,
              "--grid \"%s\": %s is already in the grid (give each parameter once, "
              "all its values in one list)",
              spec, param_names[axis.param]);
      return IM_INVAL;
    }
  }
  /* At most one axis per grid parameter, so the array cannot overflow here. */
  size_t total = grid->naxes ? im_grid_count(grid) : 1;
  if (total * axis.nvalues > IM_GRID_MAX_STAGES) {
    set_err(err, errlen, "--grid \"%s\": the grid would have %zu stages, more than %d", spec,
            total * axis.nvalues, IM_GRID_MAX_STAGES);
    return IM_LIMIT;
  }
  grid->axes[grid->naxes++] = axis;
  return IM_OK;
}

enum im_err im_grid_stage(const struct im_grid *grid, size_t index, struct im_stage *out) {
  if (!grid || !out || index >= im_grid_count(grid))
    return IM_INVAL;
  memset(out, 0, sizeof *out);
  size_t digit[4];
  size_t rest = index;
  for (size_t i = grid->naxes; i-- > 0;) {
    digit[i] = rest % grid->axes[i].nvalues;
    rest /= grid->axes[i].nvalues;
  }
  for (size_t i = 0; i < grid->naxes; i++)
    label_add(out, grid->axes[i].param, grid->axes[i].values[digit[i]]);
  return IM_OK;
}

/* "context=4k, 8k" -> "input_len=4096,8192" (k and K: x 1024, as the
 * context-growth flag counts); other values are copied for parse_spec to
 * judge. IM_LIMIT when it does not fit. */
static enum im_err context_spec(const char *spec, char *out, size_t cap) {
  size_t o = (size_t)snprintf(out, cap, "input_len=");
  const char *v = spec + strlen("context=");
  for (;;) {
    const char *comma = strchr(v, ',');
    size_t len = comma ? (size_t)(comma - v) : strlen(v);
    while (len && isspace((unsigned char)v[len - 1]))
      len--;
    char tok[64], *stop = NULL;
    if (len >= sizeof tok)
      return IM_LIMIT;
    memcpy(tok, v, len);
    tok[len] = '\0';
    double x = len > 1 && (tok[len - 1] == 'k' || tok[len - 1] == 'K') ? strtod(tok, &stop) : NAN;
    int w = stop == tok + len - 1 && isfinite(x)
                ? snprintf(out + o, cap - o, "%.15g", x * 1024.0)
                : snprintf(out + o, cap - o, "%s", tok);
    if (w < 0 || (size_t)w + 1 >= cap - o)
      return IM_LIMIT;
    o += (size_t)w;
    if (!comma)
      return IM_OK;
    out[o++] = ',';
    out[o] = '\0';
    v = comma + 1;
  }
}

enum im_err im_sweep_parse(const char *spec, struct im_sweep *sweep, char *err, size_t errlen) {
  if (!sweep) {
    set_err(err, errlen, "--sweep: no sweep");
    return IM_INVAL;
  }
  memset(sweep, 0, sizeof *sweep);
  struct im_grid_axis axis;
  int is_auto = 0;
  enum im_err rc;
  if (spec && !strncmp(spec, "context=", 8)) {
    /* A context sweep: one stage per prompt length (docs/deepseek.md). */
    char ctx[IM_STAGE_SPEC_MAX + 1];
    if (strnlen(spec, IM_STAGE_SPEC_MAX + 1) > IM_STAGE_SPEC_MAX ||
        context_spec(spec, ctx, sizeof ctx) != IM_OK) {
      set_err(err, errlen, "--sweep: value longer than %d characters", IM_STAGE_SPEC_MAX);
      return IM_LIMIT;
    }
    rc = parse_spec("--sweep", ctx, IM_PARAM_INPUT_LEN, IM_PARAM_INPUT_LEN, NULL, &axis, err,
                    errlen);
    if (rc == IM_OK)
      sweep->param = IM_PARAM_INPUT_LEN;
    sweep->nvalues = rc == IM_OK ? axis.nvalues : 0;
    if (rc == IM_OK)
      memcpy(sweep->values, axis.values, sizeof sweep->values);
    return rc;
  }
  rc = parse_spec("--sweep", spec, IM_PARAM_RATE, IM_PARAM_CONCURRENCY, &is_auto, &axis,
                              err, errlen);
  if (rc != IM_OK)
    return rc;
  if (is_auto && axis.param != IM_PARAM_RATE) {
    set_err(err, errlen, "--sweep \"%s\": \"auto\" is for rate only; list the concurrencies", spec);
    return IM_INVAL;
  }
  sweep->param = axis.param;
  sweep->is_auto = is_auto;
  sweep->nvalues = axis.nvalues;
  memcpy(sweep->values, axis.values, sizeof sweep->values);
  return IM_OK;
}

enum im_err im_sweep_stage(const struct im_sweep *sweep, size_t index, struct im_stage *out) {
  if (!sweep || !out)
    return IM_INVAL;
  if (sweep->is_auto && sweep->nvalues == 0)
    return IM_STATE;
  if (index >= sweep->nvalues)
    return IM_INVAL;
  memset(out, 0, sizeof *out);
  label_add(out, sweep->param, sweep->values[index]);
  return IM_OK;
}

enum im_err im_sweep_plan_auto(struct im_sweep *sweep, double max_throughput, size_t n) {
  if (!sweep)
    return IM_INVAL;
  if (!sweep->is_auto || sweep->param != IM_PARAM_RATE)
    return IM_STATE;
  if (!isfinite(max_throughput) || max_throughput <= 0.0 || n == 0 || n > IM_STAGE_MAX_VALUES)
    return IM_INVAL;
  for (size_t k = 1; k <= n; k++)
    sweep->values[k - 1] = max_throughput * (double)k / (double)(n + 1);
  sweep->nvalues = n;
  return IM_OK;
}

/* Means of v over the first and last thirds of [tmin, tmax]. */
static void third_means(const struct im_tpoint *p, size_t n, double tmin, double tmax,
                        double *first, double *last) {
  double span = tmax - tmin, s1 = 0, s3 = 0;
  size_t n1 = 0, n3 = 0;
  for (size_t i = 0; i < n; i++) {
    double x = p[i].t - tmin;
    if (x <= span / 3.0) {
      s1 += p[i].v;
      n1++;
    }
    if (x >= 2.0 * span / 3.0) {
      s3 += p[i].v;
      n3++;
    }
  }
  *first = n1 ? s1 / (double)n1 : NAN;
  *last = n3 ? s3 / (double)n3 : NAN;
}

static int points_ok(const struct im_tpoint *p, size_t n) {
  if (n && !p)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!isfinite(p[i].t) || !isfinite(p[i].v))
      return 0;
  return 1;
}

static void time_range(const struct im_tpoint *p, size_t n, double *tmin, double *tmax) {
  *tmin = INFINITY;
  *tmax = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    *tmin = fmin(*tmin, p[i].t);
    *tmax = fmax(*tmax, p[i].t);
  }
}

enum im_err im_stage_check_saturation(const struct im_tpoint *inflight, size_t n,
                                      const struct im_tpoint *ttft, size_t nttft,
                                      struct im_saturation *out) {
  if (!out || !points_ok(inflight, n) || !points_ok(ttft, nttft))
    return IM_INVAL;
  memset(out, 0, sizeof *out);
  out->first_mean = out->last_mean = NAN;
  out->ttft_first_mean = out->ttft_last_mean = NAN;
  out->slope = NAN;
  out->t_stat = NAN;
  double tmin = 0, tmax = 0;
  time_range(inflight, n, &tmin, &tmax);
  if (n < IM_SAT_MIN_POINTS || !(tmax > tmin)) {
    out->reason = "too few in-flight samples to judge";
    return IM_OK;
  }
  /* Centred sums: the fit stays accurate for large time origins. */
  double mt = 0, mv = 0;
  for (size_t i = 0; i < n; i++) {
    mt += inflight[i].t;
    mv += inflight[i].v;
  }
  mt /= (double)n;
  mv /= (double)n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; i++) {
    double dx = inflight[i].t - mt;
    sxx += dx * dx;
    sxy += dx * (inflight[i].v - mv);
  }
  double b = sxy / sxx, a = mv - b * mt, ssr = 0;
  for (size_t i = 0; i < n; i++) {
    double r = inflight[i].v - (a + b * inflight[i].t);
    ssr += r * r;
  }
  double se = sqrt(ssr / (double)(n - 2) / sxx);
  out->slope = b;
  /* An exact fit (se 0, e.g. a synthetic ramp) is as significant as it gets. */
  out->t_stat = se > 0 ? b / se : (b > 0 ? INFINITY : (b < 0 ? -INFINITY : 0.0));
  third_means(inflight, n, tmin, tmax, &out->first_mean, &out->last_mean);
  if (nttft) {
    double umin = 0, umax = 0;
    time_range(ttft, nttft, &umin, &umax);
    third_means(ttft, nttft, umin, umax, &out->ttft_first_mean, &out->ttft_last_mean);
  }
  if (!(b > 0) || out->t_stat < IM_SAT_MIN_TSTAT) {
    out->reason = "in-flight slope not significantly positive";
    return IM_OK;
  }
  if (b * (tmax - tmin) < 1.0) {
    out->reason = "in-flight growth under one request over the stage";
    return IM_OK;
  }
  if (!(out->last_mean > out->first_mean)) {
    out->reason = "in-flight last-third mean not above first-third mean";
    return IM_OK;
  }
  if (nttft && out->ttft_last_mean < out->ttft_first_mean) {
    out->reason = "TTFT falling: in-flight growth is not a queue";
    return IM_OK;
  }
  out->growing = 1;
  out->reason = "in-flight grows significantly and TTFT does not fall";
  return IM_OK;
}

enum im_err im_sweep_saturation_point(const double *rates, const double *attainment,
                                      const int *oversaturated, size_t n, double target,
                                      size_t *index) {
  if (!rates || !attainment || !index || n == 0 || !(target >= 0.0 && target <= 1.0))
    return IM_INVAL;
  for (size_t i = 0; i < n; i++)
    if (!isfinite(rates[i]) || !isfinite(attainment[i]))
      return IM_INVAL;
  /* Walk the stages in ascending rate (O(n^2) selection: n is a few dozen at
   * most) and stop at the first failure. */
  double prev = -INFINITY;
  size_t best = n;
  for (size_t step = 0; step < n; step++) {
    size_t next = n;
    for (size_t i = 0; i < n; i++)
      if (rates[i] > prev && (next == n || rates[i] < rates[next]))
        next = i;
    if (next == n)
      break;
    int ok = attainment[next] >= target && !(oversaturated && oversaturated[next]);
    if (!ok)
      break;
    best = next;
    prev = rates[next];
  }
  if (best == n)
    return IM_NOTFOUND;
  *index = best;
  return IM_OK;
}
