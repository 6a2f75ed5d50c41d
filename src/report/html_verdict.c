/* The top of a run's page (report/html_int.h): what was run, from the
 * manifest, each field marked with the results.json path it shows; the
 * verdict, failures first. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/html_int.h"

/* A header field: text, then the value in bold, marked with the results.json
 * path it shows (data-k) so a check can compare the two (tests/html). */
static void hfield_str(struct page *p, const char *text, const char *key, const char *v) {
  im__html_put(p, text);
  im__html_put(p, "<b data-k=\"");
  im__html_esc(p, key);
  im__html_put(p, "\">");
  im__html_esc(p, v);
  im__html_put(p, "</b>");
}

static void hfield_num(struct page *p, const char *text, const json_t *o, const char *key,
                       const char *path, const char *unit) {
  double v = im_json_num(im__html_at(o, key), NAN);
  if (isnan(v))
    return;
  im__html_put(p, text);
  im__html_put(p, "<b data-k=\"");
  im__html_esc(p, path);
  im__html_put(p, "\">");
  im__html_num(p, v);
  im__html_put(p, "</b>");
  im__html_put(p, unit);
}

/* The values of a sweep: the manifest's (schedule.sweep.values), or, in a
 * run written before it recorded them, each stage's params. */
static void sweep_values(struct page *p, const json_t *root, const json_t *sch, const char *param) {
  const json_t *vals = im__html_at(im__html_at(sch, "sweep"), "values");
  size_t i;
  const json_t *v;
  if (json_array_size(vals)) {
    im__html_put(p, "<b data-k=\"manifest.schedule.sweep.values\">");
    json_array_foreach(vals, i, v) {
      im__html_put(p, i ? ", " : "");
      im__html_num(p, im_json_num(v, NAN));
    }
  } else { /* the stages that set it (rate=auto's first stage probes the throughput) */
    if (json_is_true(im__html_at(im__html_at(sch, "sweep"), "auto")))
      im__html_put(p, "auto, ");
    im__html_put(p, "<b data-k=\"stages[].params.");
    im__html_esc(p, param);
    im__html_put(p, "\">");
    bool first = true;
    json_array_foreach(im__html_at(root, "stages"), i, v) {
      double x = im_json_num(im__html_path(v, "params", param), NAN);
      if (isnan(x))
        continue;
      im__html_put(p, first ? "" : ", ");
      im__html_num(p, x);
      first = false;
    }
  }
  im__html_put(p, "</b>");
}

/* What was run: the schedule as it ran (a sweep's values, a closed loop's
 * concurrency, a sessions run's sessions; never the options' unused
 * defaults), then the workload. */
static void header_schedule(struct page *p, const json_t *root, const json_t *m) {
  const json_t *sch = im__html_at(m, "schedule"), *wl = im__html_at(m, "workload");
  const json_t *sess = im__html_at(wl, "sessions");
  const char *param = im_json_str(im__html_path(sch, "sweep", "param"), NULL),
             *pkey = "manifest.schedule.sweep.param";
  if (!param) /* a run written before the manifest recorded its sweep */
    param = im_json_str(im__html_path(root, "sweep", "param"), NULL), pkey = "sweep.param";
  const char *kind = im_json_str(im__html_at(sch, "kind"), "?");
  bool sessions = json_is_object(sess) || !strcmp(kind, "sessions");
  if (param) {
    bool conc = !strcmp(param, "concurrency");
    hfield_str(p, "sweep over ", pkey, param);
    im__html_put(p, ": ");
    sweep_values(p, root, sch, param);
    im__html_put(p, conc ? " in flight (closed loop)" : " req/s");
    if (!conc && !sessions) {
      im__html_put(p, ", arrivals ");
      hfield_str(p, "", "manifest.schedule.kind", kind);
    }
  } else if (sessions) {
    im__html_put(p, "<b>sessions</b>");
  } else if (!strcmp(kind, "closed")) {
    hfield_num(p, "closed loop, concurrency ", sch, "concurrency", "manifest.schedule.concurrency",
               "");
  } else {
    hfield_str(p, "schedule ", "manifest.schedule.kind", kind);
    hfield_num(p, " ", sch, "rate", "manifest.schedule.rate", " req/s");
  }
  if (sessions) {
    hfield_num(p, ": ", sess, "concurrent", "manifest.workload.sessions.concurrent", " concurrent");
    if (im_json_num(im__html_at(sess, "rate"), 0) > 0)
      hfield_num(p, ", ", sess, "rate", "manifest.workload.sessions.rate", " started/s");
    hfield_num(p, ", ", sess, "turns", "manifest.workload.sessions.turns", " turns");
  }
  hfield_num(p, ", ", sch, "duration_s", "manifest.schedule.duration_s", " s");
  hfield_num(p, ", ", sch, "requests", "manifest.schedule.requests", " requests");
  if (im_json_num(im__html_at(sch, "warmup_s"), 0) > 0)
    hfield_num(p, " after a warm-up of ", sch, "warmup_s", "manifest.schedule.warmup_s", " s");
  hfield_str(p, " · workload ", "manifest.workload.dataset",
             im_json_str(im__html_at(wl, "dataset"), "?"));
  if (sessions) {
    hfield_num(p, ", context ", sess, "context_start", "manifest.workload.sessions.context_start",
               "");
    hfield_num(p, " → ", sess, "context_end", "manifest.workload.sessions.context_end", " tokens");
  } else {
    hfield_num(p, ", input ", wl, "input_len", "manifest.workload.input_len", " tokens");
  }
  hfield_num(p, ", output ", wl, "output_len", "manifest.workload.output_len", " tokens");
}

void im__html_header(struct page *p, const json_t *root, const char *title) {
  const json_t *m = im__html_at(root, "manifest");
  im__html_put(p, "<h1>infermeter report: ");
  im__html_esc(p, title);
  im__html_put(p, "</h1><p class=\"meta\" id=\"what-ran\">");
  hfield_str(p, "target ", "manifest.target.url",
             im_json_str(im__html_path(m, "target", "url"), "?"));
  hfield_str(p, " · model ", "manifest.target.model",
             im_json_str(im__html_path(m, "target", "model"), "?"));
  hfield_str(p, " · started ", "manifest.started_at",
             im_json_str(im__html_at(m, "started_at"), "?"));
  hfield_str(p, " · infermeter ", "manifest.version", im_json_str(im__html_at(m, "version"), "?"));
  im__html_put(p, "<br>");
  header_schedule(p, root, m);
  const json_t *st = im__html_at(root, "stages");
  if (json_array_size(st) > 1 && !im__html_at(root, "sweep") &&
      !im__html_path(im__html_at(m, "schedule"), "sweep", "param")) {
    /* A grid: its stages' settings replace the schedule's where they set them. */
    im__html_put(p, " · stages <b data-k=\"stages[].label\">");
    size_t i;
    const json_t *e;
    json_array_foreach(st, i, e) {
      im__html_put(p, i ? ", " : "");
      im__html_esc(p, im_json_str(im__html_at(e, "label"), "?"));
    }
    im__html_put(p, "</b>");
  }
  const json_t *slo = im__html_at(m, "slo");
  static const char *const slos[][2] = {
      {"ttft_ms", "TTFT"}, {"tpot_ms", "TPOT"}, {"e2el_ms", "E2EL"}};
  bool any = false;
  for (size_t i = 0; i < 3; i++) {
    if (!im__html_at(slo, slos[i][0]))
      continue;
    char path[48], text[32];
    snprintf(path, sizeof path, "manifest.slo.%s", slos[i][0]);
    snprintf(text, sizeof text, "%s%s ≤ ", any ? ", " : " · SLO ", slos[i][1]);
    hfield_num(p, text, slo, slos[i][0], path, " ms");
    any = true;
  }
  const json_t *tags = im__html_at(m, "tags");
  if (json_is_object(tags) && json_object_size(tags)) {
    im__html_put(p, " · tags <b>");
    const char *k;
    const json_t *v;
    bool first = true;
    json_object_foreach((json_t *)tags, k, v) {
      if (!first)
        im__html_put(p, ", ");
      first = false;
      im__html_esc(p, k);
      im__html_put(p, "=");
      im__html_esc(p, im_json_str(v, "?"));
    }
    im__html_put(p, "</b>");
  }
  im__html_put(p, "</p>");
}

/* The audit.error_rate of a stage whose server failed (docs/audit.md
 * "Failing server"), or NULL. */
const json_t *im__html_failing_of(const json_t *audit) {
  const json_t *er = im__html_at(audit, "error_rate");
  return json_is_true(im__html_at(er, "failing")) ? er : NULL;
}

/* The worst failing stage of a run (the run's own audit, or its stages'),
 * or NULL when no stage's server failed. */
const json_t *im__html_run_failing(const json_t *root) {
  const json_t *worst = im__html_failing_of(im__html_at(root, "audit"));
  size_t i;
  const json_t *s;
  json_array_foreach(im__html_at(root, "stages"), i, s) {
    const json_t *er = im__html_failing_of(im__html_at(s, "audit"));
    if (er && (!worst || im_json_num(im__html_at(er, "share"), NAN) >
                             im_json_num(im__html_at(worst, "share"), NAN)))
      worst = er;
  }
  return worst;
}

/* Failed requests, first: a failing server in red (how many of how many,
 * against which limit, the exit status, their classes and the first
 * error); failures under the limit in amber, with the same facts. */
static void failure_box(struct page *p, const json_t *er, bool failing) {
  im__html_put(p, failing ? "<div class=\"failbox\" id=\"failing\"><span class=\"verdict FAIL\">"
                            "FAILING SERVER</span> <span class=\"big\">"
                          : "<div class=\"failbox warnbox\" id=\"failures\"><span class=\"big\">");
  im__html_num(p, im_json_num(im__html_at(er, "failed"), NAN) +
                      im_json_num(im__html_at(er, "aborted"), NAN));
  im__html_put(p, " of ");
  im__html_num(p, im_json_num(im__html_at(er, "requests"), NAN));
  im__html_put(p, " requests failed, were refused or aborted</span> (");
  im__html_num(p, 100.0 * im_json_num(im__html_at(er, "share"), NAN));
  im__html_put(p, failing ? " %, above the limit of " : " %, under the failing-server limit of ");
  im__html_num(p, 100.0 * im_json_num(im__html_at(er, "limit"), NAN));
  im__html_put(p, failing ? " %: exit 6)" : " %; latencies are over the successes)");
  const char *cl = im_json_str(im__html_at(er, "classes"), "");
  if (cl[0]) {
    im__html_put(p, "<br>classes: <b>");
    im__html_esc(p, cl);
    im__html_put(p, "</b>");
  }
  const char *fe = im_json_str(im__html_at(er, "first_error"), NULL);
  im__html_put(p, "<br>first error: <b>");
  im__html_esc(p, fe && fe[0] ? fe : "(none recorded)");
  im__html_put(p, failing
                      ? "</b><br><span class=\"fix\">the figures below describe a server that did "
                        "not answer; the client's own checks are shown grey</span></div>"
                      : "</b></div>");
}

/* A verdict badge, grey instead of green when the run failed. */
static void run_badge(struct page *p, const char *v, bool failed) {
  bool green = !strcmp(v, "VALID") || !strcmp(v, "PASS") || !strcmp(v, "PUBLISHABLE");
  if (!failed || !green) {
    im__html_verdict_badge(p, v);
    return;
  }
  im__html_put(p, "<span class=\"verdict muted ");
  im__html_esc(p, v);
  im__html_put(p, "\" title=\"the server failed: this verdict is the client's alone\">");
  im__html_esc(p, v);
  im__html_put(p, "</span>");
}

/* failing: the error_rate of a failing stage of this audit's scope (NULL:
 * none failed). */
void im__html_audit_section(struct page *p, const json_t *audit, const json_t *failing) {
  /* A run's audit holds "publishable"; a repeat set's is the verdict itself. */
  const json_t *pub = im__html_at(audit, "publishable") ? im__html_at(audit, "publishable") : audit;
  const char *cv = im_json_str(im__html_path(audit, "client_check", "verdict"), NULL);
  const char *pv = im_json_str(im__html_at(pub, "verdict"), NULL);
  if (!cv && !pv && !failing)
    return;
  im__html_put(p, "<h2>Verdict</h2>");
  const json_t *er = im__html_at(audit, "error_rate");
  if (failing)
    failure_box(p, failing, true);
  else if (im_json_num(im__html_at(er, "failed"), 0) + im_json_num(im__html_at(er, "aborted"), 0) >
           0)
    failure_box(p, er, false);
  im__html_put(p, "<p>");
  if (cv) {
    im__html_put(p, "client self-check ");
    run_badge(p, cv, failing != NULL);
    im__html_put(p, " ");
  }
  if (pv) {
    im__html_put(p, "publishable audit ");
    run_badge(p, pv, failing != NULL);
  }
  im__html_put(p, "</p><ul class=\"checks\">");
  size_t i;
  const json_t *c;
  size_t shown = 0;
  json_array_foreach(im__html_at(pub, "checks"), i, c) {
    const char *st = im_json_str(im__html_at(c, "status"), "?");
    const char *ev = im_json_str(im__html_at(c, "evidence"), "");
    /* A check that passes because it could not be judged is not a PASS. */
    bool not_judged = strstr(ev, "not judged") != NULL;
    if (!strcmp(st, "PASS") && !not_judged)
      continue;
    shown++;
    im__html_put(p, "<li>");
    if (not_judged && !strcmp(st, "PASS"))
      im__html_put(p, "<span class=\"verdict NOT_JUDGED\">NOT JUDGED</span>");
    else
      im__html_verdict_badge(p, st);
    im__html_put(p, " <b>");
    im__html_esc(p, im_json_str(im__html_at(c, "id"), "?"));
    im__html_put(p, "</b> ");
    im__html_esc(p, im_json_str(im__html_at(c, "evidence"), ""));
    const char *fix = im_json_str(im__html_at(c, "fix"), NULL);
    if (fix) {
      im__html_put(p, "<br><span class=\"fix\">fix: ");
      im__html_esc(p, fix);
      im__html_put(p, "</span>");
    }
    im__html_put(p, "</li>");
  }
  if (!shown)
    im__html_put(p, "<li>every check passed</li>");
  else
    im__html_put(p, "<li class=\"fix\">every other check passed</li>");
  im__html_put(p, "</ul>");
}
