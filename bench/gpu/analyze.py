#!/usr/bin/env python3
"""infermeter's GPU figures against independent measurements of the same
seconds, from what run_on_gpu.sh brought back (bench/gpu/README.md).

  analyze.py DIR            DIR: gpu-run.tar.gz unpacked (run/, smi.csv,
                            steps.jsonl, probe.json, clock.json)

Prints markdown: for each stage of the sweep, over its measured window,
  - NVML as infermeter sampled it (run/series.jsonl, results.json
    metrics.gpu) against nvidia-smi's 100 ms samples (smi.csv): power,
    memory used, utilisation, energy; agreement within 5 % or the reason;
  - tokens per joule: infermeter's, then the same tokens over nvidia-smi's
    integrated power, then the tokens the server generated in the window
    (its step log) over that energy;
  - the roofline's achieved bandwidth (metrics.roofline) against the
    server's step log (bytes each decode step must move, over time), with
    the measured copy bandwidth as the ceiling;
and the NVML fields this machine does not provide. Python 3 stdlib only.
"""
import csv
import datetime
import json
import math
import os
import sys

TOL = 0.05


def load_jsonl(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass  # a line cut short when the server was stopped
    return out


def mean(v):
    v = [x for x in v if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return sum(v) / len(v) if v else None


def rel(a, b):
    """(a - b) / b, None when either is missing or b is 0."""
    if a is None or b is None or b == 0:
        return None
    return (a - b) / b


def fmt(x, nd=3):
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    if x != 0 and (abs(x) >= 1e5 or abs(x) < 1e-3):
        return "%.*e" % (nd - 1, x)
    return "%.*g" % (nd + 1, x)


def pct(x):
    return "n/a" if x is None else "%+.1f %%" % (100 * x)


def verdict(r, reason=""):
    if r is None:
        return "n/a"
    return "agrees" if abs(r) <= TOL else ("differs: " + reason if reason else "differs")


# ---------------------------------------------------------------- inputs


def smi_number(cell):
    """'370.27 W' -> 370.27; '[N/A]', '[Not Supported]' -> None."""
    cell = cell.strip()
    if not cell or cell.startswith("["):
        return None
    try:
        return float(cell.split()[0])
    except ValueError:
        return None


def load_smi(path):
    """nvidia-smi --format=csv rows: header names without units, samples as
    dicts with 't' (unix seconds; the stamps are UTC, run_on_gpu.sh sets
    TZ=UTC) and the numbers; the fields never given a number."""
    if not os.path.exists(path):
        return [], [], []
    rows, names = [], None
    with open(path, newline="") as f:
        for rec in csv.reader(f, skipinitialspace=True):
            if not rec:
                continue
            if names is None:
                names = [c.split(" [")[0].strip() for c in rec]
                continue
            if len(rec) != len(names):
                continue  # a line cut short
            try:
                ts = datetime.datetime.strptime(rec[0].strip(), "%Y/%m/%d %H:%M:%S.%f")
            except ValueError:
                continue
            d = {"t": ts.replace(tzinfo=datetime.timezone.utc).timestamp()}
            for n, c in zip(names[1:], rec[1:]):
                d[n] = smi_number(c)
            rows.append(d)
    names = names or []
    missing = [n for n in names[1:] if rows and all(r.get(n) is None for r in rows)]
    return rows, names, missing


def load_gpu_series(path):
    """infermeter's NVML samples: (t_mono seconds, GPU 0's fields)."""
    out, why = [], None
    for o in load_jsonl(path):
        if o.get("src") == "gpu" and o.get("gpus"):
            out.append((o["t_mono"] / 1e9, o["gpus"][0]))
        elif o.get("src") == "not_collected" and o.get("what") == "gpu":
            why = o.get("reason")
    return out, why


def integrate(samples, key, a, b):
    """Trapezoidal integral of samples' key over [a, b] (seconds), with the
    end points interpolated; and the seconds it covers."""
    pts = [(s["t"], s[key]) for s in samples if s.get(key) is not None]
    total, covered = 0.0, 0.0
    for (t0, v0), (t1, v1) in zip(pts, pts[1:]):
        lo, hi = max(t0, a), min(t1, b)
        if hi <= lo or t1 <= t0:
            continue

        def at(t):
            return v0 + (v1 - v0) * (t - t0) / (t1 - t0)

        total += (at(lo) + at(hi)) / 2 * (hi - lo)
        covered += hi - lo
    return total, covered


# ---------------------------------------------------------------- analysis


def stage_windows(res):
    out = []
    for st in res.get("stages") or [dict(res, label="run")]:
        m = st.get("metrics") or {}
        w = m.get("window") or {}
        t0 = st.get("t0_monotonic_ns")
        if t0 is None or "start_ns" not in w:
            continue
        out.append(dict(label=st.get("label", "?"), a=(t0 + w["start_ns"]) / 1e9,
                        b=(t0 + w["end_ns"]) / 1e9, seconds=w.get("seconds"), metrics=m,
                        index=st.get("index", 0), t0_ns=t0, ws_ns=w["start_ns"],
                        we_ns=w["end_ns"]))
    return out


def nearest(rows, t, max_dt):
    """The row of rows (sorted by 't') nearest to t, within max_dt."""
    lo, hi = 0, len(rows)
    while lo < hi:
        mid = (lo + hi) // 2
        if rows[mid]["t"] < t:
            lo = mid + 1
        else:
            hi = mid
    best = None
    for i in (lo - 1, lo):
        if 0 <= i < len(rows) and abs(rows[i]["t"] - t) <= max_dt:
            if best is None or abs(rows[i]["t"] - t) < abs(best["t"] - t):
                best = rows[i]
    return best


def nvml_vs_smi(st, gpu, smi, off):
    """Rows (figure, infermeter, nvidia-smi, difference, verdict) for one
    stage; off converts monotonic to unix seconds."""
    a, b = st["a"], st["b"]
    ours = [(t + off, s) for t, s in gpu if a <= t <= b]
    theirs = [r for r in smi if a + off <= r["t"] <= b + off]
    rows = []
    if not ours or not theirs:
        return rows, None
    g = st["metrics"].get("gpu") or {}

    # Power: infermeter's samples against the nvidia-smi sample nearest each.
    pairs = [(s["power_w"], nearest(smi, t, 0.15)) for t, s in ours if s.get("power_w") is not None]
    pairs = [(p, r) for p, r in pairs if r is not None]
    for key, label in (("power.draw", "power.draw (1 s average)"),
                       ("power.draw.instant", "power.draw.instant")):
        if pairs and pairs[0][1].get(key) is not None:
            x = mean([p for p, _ in pairs])
            y = mean([r[key] for _, r in pairs])
            d = rel(x, y)
            why = "NVML's nvmlDeviceGetPowerUsage is the 1 s average on this GPU, not the instant" \
                if key.endswith("instant") else ""
            rows.append(("power, W (mean over %d paired samples) vs %s" % (len(pairs), label),
                         x, y, d, verdict(d, why)))
    rows.append(("power, W: metrics.gpu.power_w_mean vs nvidia-smi mean over the window",
                 g.get("power_w_mean"), mean([r.get("power.draw") for r in theirs]),
                 rel(g.get("power_w_mean"), mean([r.get("power.draw") for r in theirs])), None))
    r = rows[-1]
    rows[-1] = r[:4] + (verdict(r[3], "different sampling instants: infermeter every 250 ms, "
                                   "nvidia-smi every 100 ms, power changing within them"),)

    # Memory used: both at their maxima over the window.
    mem_i = g.get("memory_used_max_bytes")
    mem_s = max((r["memory.used"] for r in theirs if r.get("memory.used") is not None), default=None)
    res_s = max((r["memory.reserved"] for r in theirs if r.get("memory.reserved") is not None),
                default=None)
    if mem_i is not None and mem_s is not None:
        mib = mem_i / 2**20
        d = rel(mib, mem_s)
        why = ""
        if res_s is not None and abs(mib - (mem_s + res_s)) <= max(0.01 * mem_s, 4):
            why = "infermeter's = nvidia-smi's used + reserved (%g MiB): NVML v1 memory info " \
                  "counts the driver's reserved memory as used" % res_s
        v = verdict(d, why)
        if why and v == "agrees":
            v = "agrees, but " + why
        rows.append(("memory used max, MiB", mib, mem_s, d, v))
        if res_s is not None:
            d2 = rel(mib, mem_s + res_s)
            rows.append(("memory used max, MiB, against nvidia-smi used + reserved", mib,
                         mem_s + res_s, d2, verdict(d2)))

    # Utilisation: means over the window (each tool's own instants).
    for ik, sk in (("util_gpu_pct", "utilization.gpu"), ("util_mem_pct", "utilization.memory")):
        x = mean([s.get(ik) for _, s in ours])
        y = mean([r.get(sk) for r in theirs])
        d = None if x is None or y is None else (x - y) / 100.0
        v = "n/a" if d is None else ("agrees" if abs(d) <= TOL else
                                     "differs: NVML's utilisation is the share of the last "
                                     "sample period (1/6 s to 1 s) the GPU was busy; "
                                     "the two tools read it at different instants")
        rows.append(("%s, %% (mean; difference in points)" % sk, x, y,
                     None if d is None else d, v))

    # Energy over the window: NVML's counter (as infermeter reports it)
    # against nvidia-smi's power integrated.
    e_i = g.get("energy_j")
    e_s, cov = integrate(smi, "power.draw", a + off, b + off)
    d = rel(e_i, e_s)
    rows.append(("energy in the window, J (%s vs ∫power.draw dt over %.1f s)"
                 % (g.get("energy_source", "?"), cov), e_i, e_s, d, verdict(d)))
    return rows, e_s


def server_window(steps, a, b):
    """The server's steps that started in [a, b]."""
    dec = [s for s in steps if s.get("kind") == "decode" and a <= s["t0"] <= b]
    pre = [s for s in steps if s.get("kind") == "prefill" and a <= s["t0"] <= b]
    return dec, pre


def tokens_in_window(steps, a, b):
    """Tokens the server generated in [a, b]: one per sequence per decode
    step, one per sequence per prefill step (its first token), counted at
    the step's end."""
    return sum(s["batch"] for s in steps
               if s.get("kind") in ("decode", "prefill") and a <= s["t1"] <= b)


def tpot_population(reqs, stage_index, ws_ns, we_ns):
    """The requests metrics.roofline takes its TPOT from (analyze/roofline.c,
    tpot_of): measured, no error, 2+ output tokens, dispatched inside the
    window; times relative to the stage's start, ns."""
    return [r for r in reqs if r.get("stage") == stage_index and r.get("kind") == "measured"
            and not r.get("error") and (r.get("output_tokens") or 0) >= 2
            and ws_ns <= (r.get("t_dispatch") or -1) <= we_ns
            and (r.get("t_first") or -1) >= 0 and (r.get("t_last") or -1) > r["t_first"]]


def same_requests(st, reqs, steps):
    """The server's decode steps during the life of each request of the
    TPOT population (first token to last): how many there were per token,
    their mean bytes, and the interval between them."""
    t0 = st["t0_ns"] / 1e9
    pop = tpot_population(reqs, st["index"], st["ws_ns"], st["we_ns"])
    dec = [s for s in steps if s.get("kind") == "decode"]
    ends = [s["t1"] for s in dec]
    import bisect
    per_tok, intervals, byts, n_steps, tail = [], [], 0.0, 0, 0
    for r in pop:
        a, b = t0 + r["t_first"] / 1e9, t0 + r["t_last"] / 1e9
        i, j = bisect.bisect_right(ends, a), bisect.bisect_right(ends, b)
        k = j - i
        if k <= 0:
            continue
        per_tok.append(k / (r["output_tokens"] - 1))
        intervals.append((b - a) / k)
        byts += sum(s["bytes"] for s in dec[i:j])
        n_steps += k
        tail += b > st["b"]
    if not intervals:
        return None
    return dict(n=len(intervals), steps_per_token=mean(per_tok), interval=mean(intervals),
                step_bytes=byts / n_steps, tail_share=tail / len(intervals))


def roofline_rows(st, steps, hbm, ceiling, moe_layers, reqs=None):
    rl = st["metrics"].get("roofline") or {}
    p = rl.get("predicted") or {}
    dec, pre = server_window(steps, st["a"], st["b"])
    rows = []
    if not dec or not p:
        return rows, {}
    secs = st["b"] - st["a"]
    busy = sum(s["t1"] - s["t0"] for s in dec)
    bytes_dec = sum(s["bytes"] for s in dec)
    srv = dict(
        batch=mean([s["batch"] for s in dec]),
        ctx=sum(s["ctx_tokens"] for s in dec) / sum(s["batch"] for s in dec),
        distinct=mean([s["experts_hit"] / moe_layers for s in dec]) if moe_layers else None,
        step_bytes=bytes_dec / len(dec),
        interval=secs / len(dec),
        bw_wall=bytes_dec / secs,
        bw_busy=bytes_dec / busy,
        step_ms=1e3 * busy / len(dec),
        prefill_share=sum(s["t1"] - s["t0"] for s in pre) / secs,
    )
    im_bw = (rl.get("achieved_bandwidth_utilisation") or 0) * hbm
    tpot = (rl.get("tpot_mean_ms") or 0) / 1e3
    rows.append(("batch (decoding sequences)", rl.get("batch_mean"), srv["batch"],
                 rel(rl.get("batch_mean"), srv["batch"])))
    rows.append(("context per sequence, tokens", rl.get("context_mean"), srv["ctx"],
                 rel(rl.get("context_mean"), srv["ctx"])))
    rows.append(("distinct experts per MoE layer", p.get("distinct_experts_per_layer"),
                 srv["distinct"], rel(p.get("distinct_experts_per_layer"), srv["distinct"])))
    rows.append(("bytes per decode step", p.get("step_bytes_per_gpu"), srv["step_bytes"],
                 rel(p.get("step_bytes_per_gpu"), srv["step_bytes"])))
    rows.append(("TPOT (infermeter) vs window / decode steps (server), ms", 1e3 * tpot,
                 1e3 * srv["interval"], rel(tpot, srv["interval"])))
    rows.append(("achieved bandwidth, bytes/s: bytes/step / TPOT vs Σ step bytes / window",
                 im_bw, srv["bw_wall"], rel(im_bw, srv["bw_wall"])))
    same = same_requests(st, reqs, steps) if reqs else None
    if same:
        srv["same"] = same
        rows.append(("same requests as TPOT's (%d; %.0f %% end after the window): decode steps "
                     "per token" % (same["n"], 100 * same["tail_share"]), 1.0,
                     same["steps_per_token"], rel(1.0, same["steps_per_token"])))
        rows.append(("same requests: TPOT vs their life / decode steps in it, ms", 1e3 * tpot,
                     1e3 * same["interval"], rel(tpot, same["interval"])))
        bw = same["step_bytes"] / same["interval"]
        srv["bw_same"] = bw
        rows.append(("same requests: achieved bandwidth vs their steps' bytes / interval, bytes/s",
                     im_bw, bw, rel(im_bw, bw)))
    rows.append(("server only: Σ step bytes / Σ decode step time, bytes/s", None,
                 srv["bw_busy"], None))
    rows.append(("ceiling: measured copy bandwidth, bytes/s", None, ceiling, None))
    srv["im_bw"] = im_bw
    return rows, srv


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    d = sys.argv[1]
    res = json.load(open(os.path.join(d, "run", "results.json")))
    probe = json.load(open(os.path.join(d, "probe.json"))) if os.path.exists(
        os.path.join(d, "probe.json")) else {}
    steps = load_jsonl(os.path.join(d, "steps.jsonl"))
    rq = os.path.join(d, "run", "requests.jsonl")
    reqs = load_jsonl(rq) if os.path.exists(rq) else None
    clock = json.load(open(os.path.join(d, "clock.json")))
    off = clock["wall"] - clock["mono"]
    sclock = next((s for s in steps if s.get("kind") == "clock"), None)
    smi, smi_names, smi_missing = load_smi(os.path.join(d, "smi.csv"))
    gpu, gpu_why = load_gpu_series(os.path.join(d, "run", "series.jsonl"))
    sysd = (res.get("manifest") or {}).get("system") or {}
    hbm = ((sysd.get("hardware") or {}).get("hbm_bandwidth_bytes_per_s")) or 4.8e12
    model = sysd.get("model") or {}
    moe_layers = (model.get("layers") or 0) - (model.get("dense_layers") or 0)
    copy = probe.get("copy") or {}
    ceiling = copy.get("bandwidth_Bps")

    print("# bench/gpu: infermeter's GPU figures against independent measurements\n")
    nv = probe.get("nvml") or {}
    print("Device: %s, driver %s, NVML %s; PyTorch %s. Clocks: monotonic→unix offset %.6f s "
          "(clock.json)%s." % (
              (nv.get("name") or {}).get("value", "?"), nv.get("driver_version", "?"),
              nv.get("nvml_version", "?"), copy.get("torch", "?"), off,
              "" if not sclock else ", %.1f ms from the server's" %
              (1e3 * abs((sclock["wall"] - sclock["mono"]) - off))))
    if ceiling:
        print("Copy bandwidth (device-to-device, read + write, median of 10): **%.3f TB/s**."
              % (ceiling / 1e12))
    gc = probe.get("gpm_during_copy") or {}
    if gc.get("dram_bw_util"):
        u = gc["dram_bw_util"]["value"] / 100
        print("GPM DRAM bandwidth utilisation over %.2f s of copies at %.3f TB/s: %.1f %%, "
              "so NVML's 100 %% is %.2f TB/s (the datasheet's H200: 4.8 TB/s); energy %.0f J "
              "(%.0f W)." % (gc["seconds"], gc["achieved_Bps"] / 1e12, 100 * u,
                             gc["achieved_Bps"] / u / 1e12, gc["energy_j"],
                             gc["energy_j"] / gc["seconds"]))
    if gpu_why:
        print("\ninfermeter took no NVML sample: %s" % gpu_why)

    # Fields NVML / nvidia-smi do not provide here.
    print("\n## Fields not provided on this machine\n")
    absent = []
    for k in ("name", "memory_v1", "memory_v2", "utilization", "clock_sm_mhz", "power_mw",
              "energy_mj", "gpm_support", "power_limit_mw"):
        v = nv.get(k)
        if isinstance(v, dict) and v.get("return") != 0:
            absent.append("NVML %s: %s (%s)" % (k, v.get("error"), v.get("return")))
    if gpu:
        keys = [k for k in gpu[0][1] if k != "name"]
        for k in keys:
            vals = [s.get(k) for _, s in gpu[1:]]  # GPM needs two samples: skip the first
            if vals and all(x is None for x in vals):
                absent.append("infermeter's %s: null in every sample" % k)
    for n in smi_missing:
        absent.append("nvidia-smi %s: no number in any sample" % n)
    print("\n".join("- " + a for a in absent) if absent else
          "- none: every NVML call infermeter makes succeeded, and every nvidia-smi field "
          "queried had numbers")
    m1, m2 = nv.get("memory_v1") or {}, nv.get("memory_v2") or {}
    if m1.get("return") == 0 and m2.get("return") == 0:
        print("- memory (idle, before the server): v1 used %d B = v2 reserved %d B; v2 used %d B "
              "(nvidia-smi's memory.used is v2's)" % (m1["used"], m2["reserved"], m2["used"]))

    print("\n## NVML through infermeter vs nvidia-smi, per stage window\n")
    print("| stage | figure | infermeter | nvidia-smi | difference | within 5 %? |")
    print("|---|---|---|---|---|---|")
    energy_smi = {}
    for st in stage_windows(res):
        rows, e_s = nvml_vs_smi(st, gpu, smi, off)
        energy_smi[st["label"]] = e_s
        for name, x, y, dd, v in rows:
            is_pts = name.startswith("utilization")
            print("| %s | %s | %s | %s | %s | %s |" % (
                st["label"], name, fmt(x), fmt(y),
                ("n/a" if dd is None else "%+.1f pt" % (100 * dd)) if is_pts else pct(dd), v))

    print("\n## Tokens per joule, per stage window\n")
    print("| stage | window s | infermeter tok/J | its tokens | same tokens / ∫nvidia-smi power "
          "| tokens the server generated in the window | those / ∫nvidia-smi power "
          "| infermeter vs server-based | infermeter's tokens arrived in the window "
          "(roofline output_tok_per_s × s) / its energy | that vs server-based |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for st in stage_windows(res):
        g = st["metrics"].get("gpu") or {}
        tpj, ej = g.get("tokens_per_joule"), g.get("energy_j")
        tok_i = tpj * ej if tpj is not None and ej else None
        e_s = energy_smi.get(st["label"])
        tok_s = tokens_in_window(steps, st["a"], st["b"])
        a = tok_i / e_s if tok_i is not None and e_s else None
        b = tok_s / e_s if e_s else None
        rl = st["metrics"].get("roofline") or {}
        arrived = (rl.get("output_tok_per_s") or 0) * (st["b"] - st["a"])
        c = arrived / ej if ej else None
        print("| %s | %.2f | %s | %s | %s | %d | %s | %s | %s | %s |" % (
            st["label"], st["b"] - st["a"], fmt(tpj), fmt(tok_i, 5), fmt(a), tok_s, fmt(b),
            pct(rel(tpj, b)), fmt(c), pct(rel(c, b))))

    print("\n## Roofline: infermeter (client side) vs the server's step log, per stage window\n")
    print("| stage | figure | infermeter | server | difference |")
    print("|---|---|---|---|---|")
    summary = []
    for st in stage_windows(res):
        rows, srv = roofline_rows(st, steps, hbm, ceiling, moe_layers, reqs)
        for name, x, y, dd in rows:
            print("| %s | %s | %s | %s | %s |" % (st["label"], name, fmt(x), fmt(y), pct(dd)))
        if srv:
            summary.append((st["label"], srv))
    if summary:
        print("\n| stage | infermeter achieved BW | server, same requests | server Σbytes/window "
              "| server Σbytes/busy | decode step ms | prefill share of window "
              "| GPM DRAM util (infermeter) | server bytes/window ÷ copy ceiling |")
        print("|---|---|---|---|---|---|---|---|---|")
        for label, srv in summary:
            st = next(s for s in stage_windows(res) if s["label"] == label)
            g = st["metrics"].get("gpu") or {}
            same = srv.get("bw_same")
            print("| %s | %.3f TB/s | %s | %.3f TB/s | %.3f TB/s | %.1f | %.0f %% | %s | %s |" % (
                label, srv["im_bw"] / 1e12,
                "n/a" if same is None else "%.3f TB/s" % (same / 1e12),
                srv["bw_wall"] / 1e12, srv["bw_busy"] / 1e12,
                srv["step_ms"], 100 * srv["prefill_share"], fmt(g.get("dram_bw_util_mean")),
                fmt(srv["bw_wall"] / ceiling) if ceiling else "n/a"))


if __name__ == "__main__":
    main()
