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
 * What each figure is, as checked against nvidia-smi on an H200
 * (bench/gpu/README.md):
 *   memory used/total  nvmlDeviceGetMemoryInfo_v2 when the driver has it:
 *                      used without the driver's reserved memory, the
 *                      nvidia-smi memory.used figure; else v1, whose used
 *                      counts the reserved memory too (616 MiB on that H200);
 *   power              nvmlDeviceGetPowerUsage, which on that GPU is the
 *                      average over the last second (nvidia-smi's
 *                      power.draw = power.draw.average), not power.draw.instant;
 *   energy             the driver's counter since it loaded, mJ;
 *   utilisation        the share of NVML's last sample period the GPU (the
 *                      memory) was busy, percent;
 *   GPM DRAM bandwidth the share of the GPU's own DRAM peak, which is not the
 *                      datasheet bandwidth: on that H200 copies moving
 *                      4.26-4.28 TB/s read 77-80 %, so its 100 % is about
 *                      5.3-5.5 TB/s against the datasheet's 4.8.
 *
 * GPM (GPU Performance Monitoring, Hopper and newer) figures — DRAM
 * bandwidth utilisation, tensor activity, SM activity — are computed by NVML
 * from two counter samples, so each im_gpu_sample() reports the average over
 * the interval since the previous call on the same handle; the first call
 * has them NaN. NVIDIA's documentation asks for more than 100 ms between
 * the two samples.
 *
 * Thread safety: a handle is used by one thread at a time. */
#ifndef IM_OBSERVE_GPU_H
#define IM_OBSERVE_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "record/series.h"

/* Library opened when neither the caller nor the environment names one. */
#define IM_GPU_NVML_DEFAULT "libnvidia-ml.so.1"
/* Environment variable that overrides the default library path (tests). */
#define IM_GPU_NVML_ENV "INFERMETER_NVML_PATH"

/* struct im_gpu_sample and struct im_gpu_snapshot (one GPU, every GPU at
 * one instant), IM_GPU_MAX and IM_GPU_NAME_MAX are in record/series.h: a
 * sample is written to series.jsonl as it is. */

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

/* Summaries of a series of snapshots (energy, tokens per joule) are in
 * analyze/machine.h. */

#endif
