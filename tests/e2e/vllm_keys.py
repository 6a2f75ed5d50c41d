#!/usr/bin/env python3
"""Checks a vLLM result file written by `infermeter run --save-result`
key by key against vLLM's definitions, recomputed here from the file's own
per-request arrays (the definitions are those of calculate_metrics() and
benchmark() in vLLM's vllm/benchmarks/serve.py; the code is ours).

usage: vllm_keys.py FILE [--percentiles 99] [--metrics ttft,tpot,itl]
                         [--goodput ttft:MS,tpot:MS,e2el:MS] [--summary-only]
                         [--num-prompts N] [--rate R|inf] [--max-concurrency C]
Exit 0 when every key agrees; else one line per disagreement, exit 1.
"""
import argparse
import json
import math
import sys

# A figure in ms is compared with a tolerance: infermeter keeps chunk times
# in microseconds and TTFT in nanoseconds, so a value recomputed from the
# arrays may differ by a few microseconds from the one computed in C.
ABS_MS = 0.01
REL = 1e-3

SETUP = ["date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id",
         "num_prompts", "request_rate", "burstiness", "max_concurrency"]
COUNTS = ["duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
          "request_throughput", "request_goodput", "output_throughput",
          "total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests"]
ARRAYS = ["input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times",
          "queue_times", "generated_texts", "errors"]


def mean(x):
    return sum(x) / len(x) if x else 0.0


def pstd(x):
    """Population standard deviation (numpy's np.std default, ddof=0)."""
    if not x:
        return 0.0
    m = mean(x)
    return math.sqrt(sum((v - m) ** 2 for v in x) / len(x))


def percentile(x, p):
    """Linear interpolation between closest ranks (numpy's default method)."""
    if not x:
        return 0.0
    s = sorted(x)
    pos = (len(s) - 1) * p / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def pct_word(p):
    return str(int(p)) if int(p) == p else str(p)


def close(a, b):
    if a is None or b is None:
        return a is b
    return abs(a - b) <= ABS_MS + REL * abs(b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--percentiles", default="99")
    ap.add_argument("--metrics", default="ttft,tpot,itl")
    ap.add_argument("--goodput", default="")
    ap.add_argument("--summary-only", action="store_true")
    ap.add_argument("--num-prompts", type=int)
    ap.add_argument("--rate", default="inf")
    ap.add_argument("--max-concurrency", type=int)
    a = ap.parse_args()
    with open(a.file) as f:
        r = json.load(f)
    bad = []

    def want(cond, what):
        if not cond:
            bad.append(what)

    pcts = [float(p) for p in a.percentiles.split(",")]
    metrics = a.metrics.split(",")
    stat_keys = set()
    for m in metrics:
        stat_keys |= {f"mean_{m}_ms", f"median_{m}_ms", f"std_{m}_ms"}
        stat_keys |= {f"p{pct_word(p)}_{m}_ms" for p in pcts}
    expected = set(SETUP) | set(COUNTS) | stat_keys
    if not a.summary_only:
        expected |= set(ARRAYS)
    extra = set(r) - expected
    missing = expected - set(r)
    want(not missing, f"keys vLLM writes that are missing: {sorted(missing)}")
    want(not extra, f"keys vLLM would not write: {sorted(extra)}")

    # Setup keys: as serve.py's main_async() writes them.
    want(a.num_prompts is None or r.get("num_prompts") == a.num_prompts,
         f"num_prompts {r.get('num_prompts')} != {a.num_prompts}")
    rate = r.get("request_rate")
    want(rate == "inf" if a.rate == "inf" else rate == float(a.rate),
         f"request_rate {rate!r} for --request-rate {a.rate}")
    want(r.get("max_concurrency") == a.max_concurrency,
         f"max_concurrency {r.get('max_concurrency')} != {a.max_concurrency}")
    want(r.get("burstiness") == 1.0, "burstiness is not vLLM's default 1.0")
    want(a.num_prompts is None or r["completed"] + r["failed"] == a.num_prompts,
         f"completed + failed = {r['completed'] + r['failed']}, not --num-prompts {a.num_prompts}")
    if a.summary_only:
        if bad:
            print("\n".join(bad))
        return 1 if bad else 0

    n = len(r["ttfts"])
    for k in ARRAYS:
        want(len(r[k]) == n, f"{k} has {len(r[k])} entries, ttfts {n}")
    ok = [i for i in range(n) if r["errors"][i] == ""]
    dur = r["duration"]
    ttfts = [r["ttfts"][i] for i in ok]
    itls = [g for i in ok for g in r["itls"][i]]
    # A request's latency: its TTFT and every gap after it (vLLM's own
    # timeline plot rebuilds it so); the file's latencies must agree.
    lat = {i: r["ttfts"][i] + sum(r["itls"][i]) for i in ok}
    for i in ok:
        want(abs(r["latencies"][i] - lat[i]) < 2e-6 * max(1, len(r["itls"][i])),
             f"latencies[{i}] {r['latencies'][i]} != ttft + sum(itls) {lat[i]}")
    e2els = [lat[i] for i in ok]
    outl = r["output_lens"]
    tpots = [(lat[i] - r["ttfts"][i]) / (outl[i] - 1) for i in ok if outl[i] > 1]
    all_tpots = [(lat[i] - r["ttfts"][i]) / (outl[i] - 1) if outl[i] > 1 else 0.0 for i in ok]
    total_in = sum(r["input_lens"][i] for i in ok)
    total_out = sum(outl)
    want(r["completed"] == len(ok), f"completed {r['completed']} != successes {len(ok)}")
    want(r["failed"] == n - len(ok), f"failed {r['failed']} != {n - len(ok)}")
    want(r["total_input_tokens"] == total_in, f"total_input_tokens {r['total_input_tokens']} != {total_in}")
    want(r["total_output_tokens"] == total_out,
         f"total_output_tokens {r['total_output_tokens']} != {total_out}")
    for i in range(n):
        if i not in lat:
            want(r["ttfts"][i] == 0 and r["itls"][i] == [] and outl[i] == 0,
                 f"failed request {i}: ttft 0, no itls, output 0 as vLLM writes a failure")
    # duration: vLLM's spans the whole benchmark; ours from the first send
    # to the last completion: it holds every request.
    span = max(r["start_times"][i] + lat[i] for i in ok) - min(r["start_times"][i] for i in ok)
    want(dur >= span - 1e-6 and dur <= span + 0.05 + 0.05 * span,
         f"duration {dur} does not span the requests ({span})")
    for key, v in (("request_throughput", len(ok) / dur), ("output_throughput", total_out / dur),
                   ("total_token_throughput", (total_in + total_out) / dur)):
        want(abs(r[key] - v) <= 1e-6 * v, f"{key} {r[key]} != {v}")
    slo = dict((k, float(v) / 1000) for k, v in (x.split(":") for x in a.goodput.split(",") if x))
    if slo:
        good = 0
        for j, i in enumerate(ok):
            vals = {"ttft": r["ttfts"][i], "tpot": all_tpots[j], "e2el": lat[i]}
            good += all(vals[k] <= s for k, s in slo.items())
        want(abs(r["request_goodput"] - good / dur) <= 1e-6 * max(1, good / dur),
             f"request_goodput {r['request_goodput']} != {good / dur}")
    else:
        want(r["request_goodput"] is None, "request_goodput is not null without --goodput")
    # Peak concurrency: a sweep over half-open [start, start + latency),
    # departures before arrivals at one instant.
    ev = sorted([(r["start_times"][i], 1) for i in ok] + [(r["start_times"][i] + lat[i], -1) for i in ok])
    cur = peak = 0
    for _, d in ev:
        cur += d
        peak = max(peak, cur)
    want(r["max_concurrent_requests"] == peak,
         f"max_concurrent_requests {r['max_concurrent_requests']} != {peak}")
    # Peak output tokens per second: every token chunk's arrival in 1 s
    # buckets from the earliest start.
    t0 = min(r["start_times"][i] for i in ok)
    buckets = {}
    for i in ok:
        t = r["start_times"][i] + r["ttfts"][i]
        ts = [t]
        for g in r["itls"][i]:
            t += g
            ts.append(t)
        for t in ts:
            buckets[int(t - t0)] = buckets.get(int(t - t0), 0) + 1
    want(r["max_output_tokens_per_s"] == max(buckets.values()),
         f"max_output_tokens_per_s {r['max_output_tokens_per_s']} != {max(buckets.values())}")
    series = {"ttft": ttfts, "tpot": tpots, "itl": itls, "e2el": e2els}
    for m in metrics:
        x = [v * 1000 for v in series[m]]
        checks = [("mean", mean(x)), ("median", percentile(x, 50)), ("std", pstd(x))]
        checks += [(f"p{pct_word(p)}", percentile(x, p)) for p in pcts]
        for stat, v in checks:
            key = f"{stat}_{m}_ms"
            want(close(r.get(key), v), f"{key} {r.get(key)} != vLLM's {v}")
    if bad:
        print("\n".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
