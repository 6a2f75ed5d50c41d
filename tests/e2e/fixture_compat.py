#!/usr/bin/env python3
"""Is NEW a compatible successor of OLD (test_report_fixtures.sh)?
results.json: every key of OLD is in NEW with the same value (recursively;
arrays of the same length, but lists of checks, matched by id, may
gain checks; a check's evidence and fix, words for people, may be
reworded), new keys allowed. One change by design: a stall peak_position
(the start of its 64-token bucket before issue 27) may become any index
inside that bucket; metrics.timeslices of a run sliced by the old 10 s
default may be re-sliced (issue 31). report.html: the same charts
(captions, in order; a repeat set's per-figure charts may have become
one forest plot, issue 31). Prints the first difference and exits 1 otherwise."""
import json, re, sys

# Changed by design (issue 28, docs/statistics.md "Which CI each figure
# gets"): a --repeat set's intervals. p90 and p99 now get the pooled
# order-statistic CI (null on a side too few requests bound), t bounds are
# clipped at 0, runs_needed is exact past 100, and the ci_width check FAILs
# (so the set's verdict may turn NOT_PUBLISHABLE). Same key, same type
# (a number may become null where the schema says number_or_null).
REPEAT_CI_KEYS = {"ci95_lo", "ci95_hi", "half_width", "ci_width_rel", "wide", "runs_needed"}
REPEAT = {"on": False}

def repeat_by_design(path, old, new):
    if not REPEAT["on"]:
        return False
    parts = path.split(".")
    if len(parts) == 4 and parts[1] == "figures" and parts[3] in REPEAT_CI_KEYS:
        if isinstance(old, bool) or isinstance(new, bool):
            return isinstance(old, bool) and isinstance(new, bool)
        return (isinstance(old, (int, float)) or old is None) and (isinstance(new, (int, float)) or new is None)
    if path == ".audit.verdict":
        return new in ("PUBLISHABLE", "NOT_PUBLISHABLE")
    if path == ".audit.checks[ci_width].status":
        return old == "WARN" and new == "FAIL"
    return False

# Changed by design (issue 28, docs/metrics.md §2): scheduled_rps of a
# window that ends on its last arrival no longer counts that arrival:
# (n - 1) / T where it was n / T, n the window's counts.scheduled.
def scheduled_rps_by_design(parent, old_rates, new_rates):
    n = parent.get("counts", {}).get("scheduled") if isinstance(parent.get("counts"), dict) else None
    a, b = old_rates.get("scheduled_rps"), new_rates.get("scheduled_rps") if isinstance(new_rates, dict) else None
    if not isinstance(n, int) or n < 1 or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return False
    return abs(b - a * (n - 1) / n) <= 1e-6 * max(abs(a), 1e-12)

def subset(old, new, path):
    if repeat_by_design(path, old, new):
        return None
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return "%s: was an object" % path
        for k, v in old.items():
            if k not in new:
                return "%s.%s: gone" % (path, k)
            # Changed by design (issue 27): analysis.stalls.peak_position was
            # the start of the stalls' fullest bucket of position_width
            # tokens; it is now their exact index, inside that bucket.
            # Changed by design (issue 31): without --timeslice the slices were
            # 10 s wide (one slice for a short run); their width now follows
            # the window's length (at most 10 s), so the slices differ.
            if (k == "timeslices" and isinstance(v, dict) and isinstance(new[k], dict)
                    and v.get("slice_s") == 10 and isinstance(new[k].get("slice_s"), (int, float))
                    and new[k]["slice_s"] <= 10 and isinstance(new[k].get("slices"), list)):
                continue
            if (k == "peak_position" and isinstance(v, int) and isinstance(new[k], int)
                    and isinstance(old.get("position_width"), int)
                    and v <= new[k] < v + old["position_width"]):
                continue
            if k == "rates" and scheduled_rps_by_design(old, v, new[k]):
                v = {a: b for a, b in v.items() if a != "scheduled_rps"}
            why = subset(v, new[k], path + "." + k)
            if why:
                return why
        return None
    if isinstance(old, list) and old and all(isinstance(e, dict) and ("id" in e or "name" in e) for e in old):
        # A list of checks: each old one still there (by id); new ones may join.
        if not isinstance(new, list):
            return "%s: was an array" % path
        key = lambda e: e.get("id", e.get("name"))
        by_id = {key(e): e for e in new if isinstance(e, dict)}
        for e in old:
            if key(e) not in by_id:
                return "%s: check %s gone" % (path, key(e))
            why = subset(e, by_id[key(e)], "%s[%s]" % (path, key(e)))
            if why:
                return why
        return None
    if isinstance(old, list):
        if not isinstance(new, list) or len(new) != len(old):
            return "%s: was an array of %d" % (path, len(old))
        for i, (a, b) in enumerate(zip(old, new)):
            why = subset(a, b, "%s[%d]" % (path, i))
            if why:
                return why
        return None
    # Words for people (a check's evidence and fix) may be reworded; they
    # stay words.
    if path.rsplit(".", 1)[-1] in ("evidence", "fix") and isinstance(new, str):
        return None
    return None if old == new else "%s: %r became %r" % (path, old, new)

old_path, new_path = sys.argv[1], sys.argv[2]
old, new = open(old_path).read(), open(new_path).read()
if old_path.endswith("results.json") or old.lstrip().startswith("{"):
    old_j = json.loads(old)
    REPEAT["on"] = isinstance(old_j, dict) and old_j.get("schema") == "infermeter/repeat/v1"
    why = subset(old_j, json.loads(new), "")
else:
    caps = lambda t: re.findall(r"<figcaption>(.*?)</figcaption>", t)
    a, b = caps(old), caps(new)
    # Changed by design (issue 31): a repeat set's page drew a chart per
    # figure (captioned by its key); it draws one forest plot of them all.
    if a and all(re.fullmatch(r"[a-z0-9_]+", c) for c in a) and b == [
            "Every figure: mean and 95% CI of the mean, each run a dot"]:
        a = b
    why = None if a == b else "charts %s became %s" % (a, b)
if why:
    print(why)
    sys.exit(1)
