/* GPU counters through NVML, loaded at run time (docs/metrics.md §5, §9).
 *
 * NVML (libnvidia-ml.so.1, shipped with the NVIDIA driver) is opened with
 * dlopen when a run starts; infermeter has no build-time dependency on it.
 * A machine without the driver, or without a GPU, is an ordinary case: open
 * returns IM_UNSUPPORTED with a reason for the report ("GPU counters: not
 * available (libnvidia-ml.so.1 not found)"), never a run failure.
 *
 * Within a sample, any single figure NVML cannot give (no permission, not
 * supported on this board, a symbol the installed driver lacks) is "not
 * available": NaN for the doubles, a false has_* flag for the integers.
 *
 * GPM (GPU Performance Monitoring, Hopper and newer) figures — DRAM
 * bandwidth utilisation, tensor activity, SM activity — are computed by NVML
 * from two counter samples, so each im_gpu_sample() reports the average over
 * the interval since the previous call on the same handle; the first call
 * has them NaN. NVIDIA's documentation asks for more than 100 ms between
 * the two samples.
 *
 * Thread safety: a handle is used by one thread at a time. The summary
 * functions are pure. */
#ifndef IM_OBSERVE_GPU_H
#define IM_OBSERVE_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* GPUs sampled per machine; NVML devices beyond this are ignored (counted
 * in im_gpu_count_total). 16 covers the largest single-node boards. */
#define IM_GPU_MAX 16
/* NVML_DEVICE_NAME_V2_BUFFER_SIZE (NVML API reference, "Constants"). */
#define IM_GPU_NAME_MAX 96
/* Library opened when neither the caller nor the environment names one. */
#define IM_GPU_NVML_DEFAULT "libnvidia-ml.so.1"
/* Environment variable that overrides the default library path (tests). */
#define IM_GPU_NVML_ENV "INFERMETER_NVML_PATH"

/* One GPU at one instant. */
struct im_gpu_sample {
  char name[IM_GPU_NAME_MAX]; /* "NVIDIA H200"; "" when not available */
  bool has_mem;
  uint64_t mem_used_bytes;
  uint64_t mem_total_bytes;
  double util_gpu_pct; /* % of the last period a kernel ran, 0..100, or NaN */
  double util_mem_pct; /* % of the last period memory was read/written, or NaN */
  double sm_clock_mhz; /* current SM clock, or NaN */
  double power_w;      /* board power draw, or NaN */
  bool has_energy;
  uint64_t energy_mj; /* total energy since the driver loaded, mJ */
  /* GPM, 0..1 averaged since the previous sample, or NaN: */
  double dram_bw_util;  /* DRAM bandwidth used / theoretical maximum */
  double tensor_active; /* fraction of time SMs ran any tensor operation */
  double sm_active;     /* fraction of SMs busy */
};

/* Every GPU at one instant. gpu[i] is NVML device index i. */
struct im_gpu_snapshot {
  int64_t t_ns; /* im_now_ns() when taken */
  unsigned n_gpus;
  struct im_gpu_sample gpu[IM_GPU_MAX];
};

struct im_gpu; /* opaque: the loaded library and per-GPU state */

/* Loads NVML and prepares to sample every GPU.
 *
 * lib_path: the library to dlopen; NULL means $INFERMETER_NVML_PATH when set
 * and non-empty, else "libnvidia-ml.so.1" (found through the usual dynamic
 * linker search).
 * why/why_len: on any failure, a one-line reason is written there (always
 * NUL-terminated, truncated to fit); may be NULL/0.
 *
 * Returns IM_OK and *out (free with im_gpu_close); IM_UNSUPPORTED when the
 * library is missing, lacks a required function, nvmlInit fails or there is
 * no GPU — the caller reports "not available" with the reason; IM_NOMEM;
 * IM_INVAL for a NULL out. On failure *out is NULL and nothing stays
 * loaded. */
enum im_err im_gpu_open(const char *lib_path, struct im_gpu **out, char *why,
                        size_t why_len) IM_WUR;

/* Number of GPUs sampled (1..IM_GPU_MAX). */
unsigned im_gpu_count(const struct im_gpu *g);
/* Number of GPUs NVML reported (may exceed IM_GPU_MAX). */
unsigned im_gpu_count_total(const struct im_gpu *g);
/* Whether GPM figures can be had for GPU i (symbols present and the device
 * supports GPM). */
bool im_gpu_has_gpm(const struct im_gpu *g, unsigned i);
/* The path that was opened (owned by g). */
const char *im_gpu_library(const struct im_gpu *g);

/* Samples every GPU into *out, stamping it with t_ns. Figures NVML cannot
 * give are left not available; that is not an error. Returns IM_OK, or
 * IM_INVAL for NULL arguments. */
enum im_err im_gpu_sample(struct im_gpu *g, int64_t t_ns, struct im_gpu_snapshot *out) IM_WUR;

/* Frees the GPM buffers, shuts NVML down and unloads it. NULL is a no-op. */
void im_gpu_close(struct im_gpu *g);

/* ---- Summary over a series of snapshots (pure, no NVML) ---- */

enum im_gpu_energy_source {
  IM_GPU_ENERGY_NONE = 0, /* neither counter nor power in the window */
  IM_GPU_ENERGY_COUNTER,  /* total-energy counter deltas only */
  IM_GPU_ENERGY_POWER,    /* integrated power only (trapezoidal rule) */
  IM_GPU_ENERGY_MIXED,    /* counters where they were valid, power elsewhere */
};

struct im_gpu_summary {
  size_t n_snapshots; /* snapshots with t_ns inside the window */
  unsigned n_gpus;    /* most GPUs seen in one snapshot */
  bool has_mem;
  uint64_t mem_used_max_bytes; /* over GPUs and time */
  uint64_t mem_total_bytes;    /* total memory of the GPU that had that max */
  /* Over GPUs and snapshots with a value; NaN when none: */
  double dram_bw_util_mean, dram_bw_util_max;
  double tensor_active_mean, sm_active_mean;
  double power_w_mean; /* mean per-snapshot sum over GPUs */
  /* Energy of all GPUs over the window ∩ the series' time span: */
  double energy_j; /* NaN when energy_source is NONE */
  enum im_gpu_energy_source energy_source;
  double energy_covered_s; /* seconds of the window some GPU's energy covers */
};

/* Summarises snaps[0..n) (t_ns non-decreasing) over the window
 * [t0_ns, t1_ns]; pass INT64_MIN, INT64_MAX for the whole series.
 *
 * Energy, per GPU and per pair of consecutive snapshots: the counter delta
 * when both ends have a counter and it did not go backwards (a driver
 * reload resets it), else the trapezoid of the two power readings, else
 * nothing (a gap). A pair that straddles a window edge contributes the part
 * inside, assuming constant power within the pair for counters and linear
 * power for readings.
 *
 * Returns IM_OK; IM_INVAL for NULL arguments (snaps may be NULL when n is
 * 0), t1_ns < t0_ns or timestamps that go backwards. */
enum im_err im_gpu_summarize(const struct im_gpu_snapshot *snaps, size_t n, int64_t t0_ns,
                             int64_t t1_ns, struct im_gpu_summary *out) IM_WUR;

/* tokens / energy_j, or NaN when energy_j is NaN or not positive. */
double im_gpu_tokens_per_joule(double tokens, double energy_j);

/* Name of an energy source: "none", "counter", "power", "mixed". */
const char *im_gpu_energy_source_name(enum im_gpu_energy_source s);

#endif
