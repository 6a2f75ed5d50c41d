#!/usr/bin/env python3
"""What the machine's NVML answers to every call src/observe/gpu.c makes, and
the device-to-device copy bandwidth, in one JSON file (bench/gpu/README.md).

  probe.py OUT.json [--nvml PATH] [--no-copy] [--copy-gb G]

NVML part (ctypes, no nvml.h): for GPU 0, each query gpu.c makes, with its
return code and NVML's error string, plus the variants gpu.c does not make
(nvmlDeviceGetMemoryInfo_v2, which reports the driver's reserved memory
apart) so a difference between the library and the fake can be named.
Function names, struct layouts and enum values: NVIDIA's NVML API Reference
Guide (https://docs.nvidia.com/deploy/nvml-api/), as in gpu.c.

Copy part (PyTorch, CUDA events): a device-to-device copy of G GB
(default 4), ten timed copies after three warm-ups, bandwidth counted as
bytes read plus bytes written (METHOD.md's ceiling; the median is kept).
Then about a second of the same copies back to back between two GPM
samples: NVML's DRAM bandwidth utilisation and energy counter over them,
beside the bytes the copies moved.
"""
import ctypes
import json
import sys
import time

NV_SUCCESS = 0


class Memory(ctypes.Structure):  # nvmlMemory_t
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


class MemoryV2(ctypes.Structure):  # nvmlMemory_v2_t
    _fields_ = [("version", ctypes.c_uint), ("total", ctypes.c_ulonglong),
                ("reserved", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


class Utilization(ctypes.Structure):  # nvmlUtilization_t
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class GpmSupport(ctypes.Structure):  # nvmlGpmSupport_t
    _fields_ = [("version", ctypes.c_uint), ("isSupportedDevice", ctypes.c_uint)]


class GpmMetricInfo(ctypes.Structure):
    _fields_ = [("shortName", ctypes.c_char_p), ("longName", ctypes.c_char_p),
                ("unit", ctypes.c_char_p)]


class GpmMetric(ctypes.Structure):  # nvmlGpmMetric_t
    _fields_ = [("metricId", ctypes.c_uint), ("nvmlReturn", ctypes.c_int),
                ("value", ctypes.c_double), ("metricInfo", GpmMetricInfo)]


class GpmMetricsGet(ctypes.Structure):  # nvmlGpmMetricsGet_t, array sized as gpu.c's
    _fields_ = [("version", ctypes.c_uint), ("numMetrics", ctypes.c_uint),
                ("sample1", ctypes.c_void_p), ("sample2", ctypes.c_void_p),
                ("metrics", GpmMetric * 512)]


GPM_IDS = {"sm_util": 2, "any_tensor_util": 5, "dram_bw_util": 10}


class Nvml:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.nvmlErrorString.restype = ctypes.c_char_p

    def err(self, r):
        return self.lib.nvmlErrorString(r).decode(errors="replace")

    def call(self, name, *args):
        """(return code, error string) of one call; a missing symbol is -1."""
        fn = getattr(self.lib, name, None)
        if fn is None:
            return -1, "symbol not exported"
        r = fn(*args)
        return r, self.err(r)


def rec(code_err, **values):
    r, e = code_err
    out = {"return": r, "error": e}
    if r == NV_SUCCESS:
        out.update(values)
    return out


def gpm_pair(nv, dev, work):
    """Two GPM samples around work(); the three metrics between them."""
    s1, s2 = ctypes.c_void_p(), ctypes.c_void_p()
    a = nv.call("nvmlGpmSampleAlloc", ctypes.byref(s1))
    b = nv.call("nvmlGpmSampleAlloc", ctypes.byref(s2))
    if a[0] or b[0]:
        return {"alloc": list(a), "alloc2": list(b)}
    g1 = nv.call("nvmlGpmSampleGet", dev, s1)
    t0 = time.monotonic()
    work()
    dt = time.monotonic() - t0
    if dt < 0.2:  # NVIDIA asks for more than 100 ms between the samples
        time.sleep(0.2 - dt)
    g2 = nv.call("nvmlGpmSampleGet", dev, s2)
    out = {"sample_get": [g1[0], g2[0]], "interval_s": time.monotonic() - t0}
    if g1[0] == 0 and g2[0] == 0:
        mg = GpmMetricsGet()
        mg.version = 1  # NVML_GPM_METRICS_GET_VERSION
        mg.numMetrics = len(GPM_IDS)
        mg.sample1, mg.sample2 = s1, s2
        for k, mid in enumerate(GPM_IDS.values()):
            mg.metrics[k].metricId = mid
        r = nv.call("nvmlGpmMetricsGet", ctypes.byref(mg))
        out["metrics_get"] = list(r)
        if r[0] == 0:
            for k, name in enumerate(GPM_IDS):
                m = mg.metrics[k]
                out[name] = {"return": m.nvmlReturn, "value": m.value,
                             "unit": (m.metricInfo.unit or b"").decode(errors="replace")}
    nv.call("nvmlGpmSampleFree", s1)
    nv.call("nvmlGpmSampleFree", s2)
    return out


def probe_nvml(path, work=None):
    nv = Nvml(path)
    res = {"library": path}
    res["init"] = list(nv.call("nvmlInit_v2"))
    if res["init"][0]:
        return res, None, None
    buf = ctypes.create_string_buffer(96)
    r = nv.call("nvmlSystemGetDriverVersion", buf, 96)
    res["driver_version"] = buf.value.decode() if r[0] == 0 else list(r)
    r = nv.call("nvmlSystemGetNVMLVersion", buf, 96)
    res["nvml_version"] = buf.value.decode() if r[0] == 0 else list(r)
    cnt = ctypes.c_uint()
    res["count"] = rec(nv.call("nvmlDeviceGetCount_v2", ctypes.byref(cnt)), value=cnt.value)
    dev = ctypes.c_void_p()
    res["handle"] = rec(nv.call("nvmlDeviceGetHandleByIndex_v2", 0, ctypes.byref(dev)))
    if res["handle"]["return"]:
        return res, nv, None
    res["name"] = rec(nv.call("nvmlDeviceGetName", dev, buf, 96), value=buf.value.decode())
    m1 = Memory()
    res["memory_v1"] = rec(nv.call("nvmlDeviceGetMemoryInfo", dev, ctypes.byref(m1)),
                           total=m1.total, free=m1.free, used=m1.used)
    m2 = MemoryV2()
    # nvmlMemory_v2 = NVML_STRUCT_VERSION(Memory, 2) = sizeof(nvmlMemory_v2_t) | 2 << 24
    m2.version = ctypes.sizeof(MemoryV2) | (2 << 24)
    res["memory_v2"] = rec(nv.call("nvmlDeviceGetMemoryInfo_v2", dev, ctypes.byref(m2)),
                           total=m2.total, reserved=m2.reserved, free=m2.free, used=m2.used)
    u = Utilization()
    res["utilization"] = rec(nv.call("nvmlDeviceGetUtilizationRates", dev, ctypes.byref(u)),
                             gpu=u.gpu, memory=u.memory)
    v = ctypes.c_uint()
    res["clock_sm_mhz"] = rec(nv.call("nvmlDeviceGetClockInfo", dev, 1, ctypes.byref(v)),
                              value=v.value)
    res["power_mw"] = rec(nv.call("nvmlDeviceGetPowerUsage", dev, ctypes.byref(v)), value=v.value)
    res["power_limit_mw"] = rec(nv.call("nvmlDeviceGetEnforcedPowerLimit", dev, ctypes.byref(v)),
                                value=v.value)
    e = ctypes.c_ulonglong()
    res["energy_mj"] = rec(nv.call("nvmlDeviceGetTotalEnergyConsumption", dev, ctypes.byref(e)),
                           value=e.value)
    sup = GpmSupport(version=1)  # NVML_GPM_SUPPORT_VERSION
    res["gpm_support"] = rec(nv.call("nvmlGpmQueryDeviceSupport", dev, ctypes.byref(sup)),
                             supported=sup.isSupportedDevice)
    res["gpm_idle"] = gpm_pair(nv, dev, lambda: time.sleep(0.3))
    return res, nv, dev


class Copier:
    """Two buffers of gb GB on the GPU and a timed device-to-device copy."""

    def __init__(self, gb):
        import torch
        self.torch = torch
        n = int(gb * 1e9) // 2
        self.a = torch.empty(n, dtype=torch.bfloat16, device="cuda").normal_()
        self.b = torch.empty_like(self.a)
        self.bytes = 2 * self.a.numel() * self.a.element_size()  # read + written

    def timed(self, reps=10, warm=3):
        torch = self.torch
        for _ in range(warm):
            self.b.copy_(self.a)
        torch.cuda.synchronize()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
        ev[0].record()
        for i in range(reps):
            self.b.copy_(self.a)
            ev[i + 1].record()
        torch.cuda.synchronize()
        times = sorted(ev[i].elapsed_time(ev[i + 1]) / 1e3 for i in range(reps))
        ok = bool(torch.equal(self.a[-1000:], self.b[-1000:]))
        return {"bytes_per_copy": self.bytes, "copies": reps, "median_s": times[reps // 2],
                "min_s": times[0], "bandwidth_Bps": self.bytes / times[reps // 2],
                "bandwidth_max_Bps": self.bytes / times[0], "copy_checked": ok,
                "torch": torch.__version__, "device": torch.cuda.get_device_name(0)}

    def for_seconds(self, s):
        """Copies back to back for about s seconds; bytes moved, seconds."""
        torch = self.torch
        torch.cuda.synchronize()
        t0, n = time.monotonic(), 0
        while time.monotonic() - t0 < s:
            for _ in range(20):
                self.b.copy_(self.a)
            n += 20
            torch.cuda.synchronize()
        return n * self.bytes, time.monotonic() - t0


def main():
    args = sys.argv[1:]
    out_path = args[0]
    lib = "libnvidia-ml.so.1"
    if "--nvml" in args:
        lib = args[args.index("--nvml") + 1]
    gb = float(args[args.index("--copy-gb") + 1]) if "--copy-gb" in args else 4.0
    res = {}
    try:
        res["nvml"], nv, dev = probe_nvml(lib)
    except OSError as e:
        res["nvml"], nv, dev = {"library": lib, "load_error": str(e)}, None, None
    if "--no-copy" not in args:
        try:
            cp = Copier(gb)
            res["copy"] = cp.timed()
            if nv is not None and dev is not None:
                # NVML's view of about a second of the same copies: GPM DRAM
                # utilisation and the energy counter over them.
                e0, e1 = ctypes.c_ulonglong(), ctypes.c_ulonglong()
                nv.call("nvmlDeviceGetTotalEnergyConsumption", dev, ctypes.byref(e0))
                box = {}

                def work():
                    box["bytes"], box["seconds"] = cp.for_seconds(1.0)

                g = res["gpm_during_copy"] = gpm_pair(nv, dev, work)
                nv.call("nvmlDeviceGetTotalEnergyConsumption", dev, ctypes.byref(e1))
                g.update(box)
                g["achieved_Bps"] = box["bytes"] / box["seconds"]
                g["energy_j"] = (e1.value - e0.value) / 1e3
        except Exception as e:  # report, never stop the run for it
            res["copy_error"] = repr(e)
    if nv is not None:
        nv.call("nvmlShutdown")
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    c = res.get("copy")
    print("probe: NVML %s; copy %s" % (
        "init " + str(res["nvml"].get("init", res["nvml"].get("load_error"))),
        "%.3f TB/s" % (c["bandwidth_Bps"] / 1e12) if c else res.get("copy_error", "skipped")))


if __name__ == "__main__":
    main()
