/* A fake libnvidia-ml for tests: exports the NVML functions src/observe/gpu.c
 * resolves, with scripted values, so CI covers the GPU path without a GPU.
 *
 * Signatures, enum values and struct layouts follow NVIDIA's NVML API
 * Reference Guide (https://docs.nvidia.com/deploy/nvml-api/); the types are
 * declared here independently of gpu.c so a layout slip on either side shows
 * up as a wrong value in test_gpu.
 *
 * Scripted machine (default): 2 GPUs named "Fake H200", 141 GB each.
 *   GPU i, on its n-th call (n = 0, 1, ...) of each query:
 *     memory used   = 20 GB + 10 GB * i + 1 MB * n       (total 141 GB)
 *                     as nvmlDeviceGetMemoryInfo_v2 says it; the driver
 *                     also reserves 644,939,776 B (what an H200 with driver
 *                     580.159.04 reserved, bench/gpu/README.md), which v2
 *                     reports apart and v1 counts as used, as that driver
 *                     does; a failed v2 call does not count as a call
 *     utilisation   = gpu 70 + i %, memory 40 + i %
 *     SM clock      = 1980 MHz
 *     power         = 300 W + 50 W * i + 10 W * n        (reported in mW)
 *     total energy  = 1,000,000 mJ * (i + 1) + 5,000 mJ * n
 *     GPM           = DRAM bandwidth 55 + 10 * i %, any tensor 30 + i %,
 *                     SM util 80 % — for any two samples of the same GPU
 *                     taken in order.
 * FAKE_NVML_MODE (read by nvmlInit_v2) selects a variant:
 *   init_fail        nvmlInit_v2 returns NVML_ERROR_DRIVER_NOT_LOADED
 *   no_gpu           0 devices
 *   gpm_unsupported  nvmlGpmQueryDeviceSupport says "not supported"
 *   no_energy        nvmlDeviceGetTotalEnergyConsumption: NOT_SUPPORTED
 *   many             20 devices (more than IM_GPU_MAX)
 * FAKE_NVML_UNSUPPORTED (read by nvmlInit_v2), a comma-separated list of
 * queries that answer NVML_ERROR_NOT_SUPPORTED, as a board without the
 * sensor does: name, memory (v1 and v2), memory_v2 (v2 only: a driver that
 * has the symbol but not the struct version), utilization, clock, power,
 * energy.
 * Built with -DFAKE_NVML_NO_GPM, the GPM functions are not exported at all
 * (a driver older than R520); with -DFAKE_NVML_NO_MEMORY_V2,
 * nvmlDeviceGetMemoryInfo_v2 is not exported (an older driver still).
 *
 * State is global: this is a test fixture standing in for a process-wide
 * library. */
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

/* nvmlReturn_t values ("nvmlReturn_t" in the reference). */
enum {
  NV_SUCCESS = 0,
  NV_ERROR_UNINITIALIZED = 1,
  NV_ERROR_INVALID_ARGUMENT = 2,
  NV_ERROR_NOT_SUPPORTED = 3,
  NV_ERROR_INSUFFICIENT_SIZE = 7,
  NV_ERROR_DRIVER_NOT_LOADED = 9,
  NV_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
};

#define FAKE_MAX_DEV 20
#define GB 1000000000ULL
#define RESERVED 644939776ULL

struct fake_dev {
  unsigned index;
  unsigned mem_calls, power_calls, energy_calls;
};

struct fake_memory { /* nvmlMemory_t */
  unsigned long long total, free, used;
};
struct fake_memory_v2 { /* nvmlMemory_v2_t */
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
/* nvmlMemory_v2: NVML_STRUCT_VERSION(Memory, 2) in nvml.h, the struct's size
 * with the version in the top byte. */
#define MEMORY_V2_VERSION ((unsigned int)(sizeof(struct fake_memory_v2) | 2u << 24))
struct fake_utilization { /* nvmlUtilization_t */
  unsigned int gpu, memory;
};
struct fake_gpm_support { /* nvmlGpmSupport_t */
  unsigned int version, isSupportedDevice;
};
struct fake_gpm_sample { /* what nvmlGpmSample_t points to, ours to define */
  unsigned magic;
  int dev; /* -1 until nvmlGpmSampleGet fills it */
  unsigned long seq;
};
struct fake_gpm_metric { /* nvmlGpmMetric_t */
  unsigned int metricId;
  int nvmlReturn;
  double value;
  struct {
    char *shortName, *longName, *unit;
  } metricInfo;
};
struct fake_gpm_metrics_get { /* nvmlGpmMetricsGet_t, array of any length */
  unsigned int version, numMetrics;
  struct fake_gpm_sample *sample1, *sample2;
  struct fake_gpm_metric metrics[];
};

#define SAMPLE_MAGIC 0x6670u

static struct fake_dev devs[FAKE_MAX_DEV];
static unsigned n_devs;
static int init_depth;
static int live_samples;
static char mode[32];
static char unsupported[128];

static int mode_is(const char *m) {
  return strcmp(mode, m) == 0;
}

/* Whether FAKE_NVML_UNSUPPORTED names query q. */
static int unsupported_has(const char *q) {
  size_t n = strlen(q);
  for (const char *p = unsupported; *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, q, n) == 0)
      return 1;
    if (!end)
      break;
    p = end + 1;
  }
  return 0;
}

/* Prototypes: the exported API, then the test hooks. */
FAKE_EXPORT int nvmlInit_v2(void);
FAKE_EXPORT int nvmlShutdown(void);
FAKE_EXPORT const char *nvmlErrorString(int r);
FAKE_EXPORT int nvmlDeviceGetCount_v2(unsigned int *count);
FAKE_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int i, struct fake_dev **d);
FAKE_EXPORT int nvmlDeviceGetName(struct fake_dev *d, char *name, unsigned int len);
FAKE_EXPORT int nvmlDeviceGetMemoryInfo(struct fake_dev *d, struct fake_memory *m);
#ifndef FAKE_NVML_NO_MEMORY_V2
FAKE_EXPORT int nvmlDeviceGetMemoryInfo_v2(struct fake_dev *d, struct fake_memory_v2 *m);
#endif
FAKE_EXPORT int nvmlDeviceGetUtilizationRates(struct fake_dev *d, struct fake_utilization *u);
FAKE_EXPORT int nvmlDeviceGetClockInfo(struct fake_dev *d, int type, unsigned int *mhz);
FAKE_EXPORT int nvmlDeviceGetPowerUsage(struct fake_dev *d, unsigned int *mw);
FAKE_EXPORT int nvmlDeviceGetTotalEnergyConsumption(struct fake_dev *d, unsigned long long *mj);
#ifndef FAKE_NVML_NO_GPM
FAKE_EXPORT int nvmlGpmQueryDeviceSupport(struct fake_dev *d, struct fake_gpm_support *s);
FAKE_EXPORT int nvmlGpmSampleAlloc(struct fake_gpm_sample **s);
FAKE_EXPORT int nvmlGpmSampleFree(struct fake_gpm_sample *s);
FAKE_EXPORT int nvmlGpmSampleGet(struct fake_dev *d, struct fake_gpm_sample *s);
FAKE_EXPORT int nvmlGpmMetricsGet(struct fake_gpm_metrics_get *mg);
#endif
FAKE_EXPORT int fake_nvml_init_depth(void);
FAKE_EXPORT int fake_nvml_live_samples(void);

int fake_nvml_init_depth(void) {
  return init_depth;
}
int fake_nvml_live_samples(void) {
  return live_samples;
}

int nvmlInit_v2(void) {
  const char *m = getenv("FAKE_NVML_MODE");
  strncpy(mode, m ? m : "", sizeof mode - 1);
  mode[sizeof mode - 1] = '\0';
  const char *u = getenv("FAKE_NVML_UNSUPPORTED");
  strncpy(unsupported, u ? u : "", sizeof unsupported - 1);
  unsupported[sizeof unsupported - 1] = '\0';
  if (mode_is("init_fail"))
    return NV_ERROR_DRIVER_NOT_LOADED;
  if (init_depth == 0) {
    n_devs = mode_is("no_gpu") ? 0 : mode_is("many") ? FAKE_MAX_DEV : 2;
    memset(devs, 0, sizeof devs);
    for (unsigned i = 0; i < FAKE_MAX_DEV; i++)
      devs[i].index = i;
  }
  init_depth++;
  return NV_SUCCESS;
}

int nvmlShutdown(void) {
  if (init_depth == 0)
    return NV_ERROR_UNINITIALIZED;
  init_depth--;
  return NV_SUCCESS;
}

const char *nvmlErrorString(int r) {
  switch (r) {
  case NV_SUCCESS:
    return "Success";
  case NV_ERROR_DRIVER_NOT_LOADED:
    return "Driver Not Loaded";
  case NV_ERROR_NOT_SUPPORTED:
    return "Not Supported";
  default:
    return "Unknown Error";
  }
}

static int check_dev(const struct fake_dev *d) {
  if (init_depth == 0)
    return NV_ERROR_UNINITIALIZED;
  if (!d || d < devs || d >= devs + n_devs)
    return NV_ERROR_INVALID_ARGUMENT;
  return NV_SUCCESS;
}

int nvmlDeviceGetCount_v2(unsigned int *count) {
  if (init_depth == 0)
    return NV_ERROR_UNINITIALIZED;
  if (!count)
    return NV_ERROR_INVALID_ARGUMENT;
  *count = n_devs;
  return NV_SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, struct fake_dev **d) {
  if (init_depth == 0)
    return NV_ERROR_UNINITIALIZED;
  if (i >= n_devs || !d)
    return NV_ERROR_INVALID_ARGUMENT;
  *d = &devs[i];
  return NV_SUCCESS;
}

int nvmlDeviceGetName(struct fake_dev *d, char *name, unsigned int len) {
  static const char fake_name[] = "Fake H200";
  int r = check_dev(d);
  if (r != NV_SUCCESS)
    return r;
  if (!name)
    return NV_ERROR_INVALID_ARGUMENT;
  if (unsupported_has("name"))
    return NV_ERROR_NOT_SUPPORTED;
  if (len < sizeof fake_name)
    return NV_ERROR_INSUFFICIENT_SIZE;
  memcpy(name, fake_name, sizeof fake_name);
  return NV_SUCCESS;
}

/* Used as v2 reports it (without the reserved memory), on this call. */
static unsigned long long mem_used(struct fake_dev *d) {
  return 20 * GB + 10 * GB * d->index + 1000000ULL * d->mem_calls++;
}

int nvmlDeviceGetMemoryInfo(struct fake_dev *d, struct fake_memory *m) {
  int r = check_dev(d);
  if (r != NV_SUCCESS)
    return r;
  if (!m)
    return NV_ERROR_INVALID_ARGUMENT;
  if (unsupported_has("memory"))
    return NV_ERROR_NOT_SUPPORTED;
  m->total = 141 * GB;
  m->used = mem_used(d) + RESERVED; /* v1 counts the reserved memory as used */
  m->free = m->total - m->used;
  return NV_SUCCESS;
}

#ifndef FAKE_NVML_NO_MEMORY_V2
int nvmlDeviceGetMemoryInfo_v2(struct fake_dev *d, struct fake_memory_v2 *m) {
  int r = check_dev(d);
  if (r != NV_SUCCESS)
    return r;
  if (!m)
    return NV_ERROR_INVALID_ARGUMENT;
  if (m->version != MEMORY_V2_VERSION)
    return NV_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (unsupported_has("memory") || unsupported_has("memory_v2"))
    return NV_ERROR_NOT_SUPPORTED;
  m->total = 141 * GB;
  m->reserved = RESERVED;
  m->used = mem_used(d);
  m->free = m->total - m->reserved - m->used;
  return NV_SUCCESS;
}
#endif

int nvmlDeviceGetUtilizationRates(struct fake_dev *d, struct fake_utilization *u) {
  int r = check_dev(d);
  if (r != NV_SUCCESS)
    return r;
  if (unsupported_has("utilization"))
    return NV_ERROR_NOT_SUPPORTED;
  u->gpu = 70 + d->index;
  u->memory = 40 + d->index;
  return NV_SUCCESS;
}

int nvmlDeviceGetClockInfo(struct fake_dev *d, int type, unsigned int *mhz) {
  int r = check_dev(d);
  if (r != NV_SUCCESS)
    return r;
  if (type != 1 || unsupported_has("clock")) /* NVML_CLOCK_SM: the one domain scripted */
    return NV_ERROR_NOT_SUPPORTED;
  *mhz = 1980;
  return NV_SUCCESS;
}

int nvmlDeviceGetPowerUsage(struct fake_dev *d, unsigned int *mw) {
  int r = check_dev(d);
  if (r != NV_SUCCESS)
    return r;
  if (unsupported_has("power"))
    return NV_ERROR_NOT_SUPPORTED;
  *mw = 300000 + 50000 * d->index + 10000 * d->power_calls++;
  return NV_SUCCESS;
}

int nvmlDeviceGetTotalEnergyConsumption(struct fake_dev *d, unsigned long long *mj) {
  int r = check_dev(d);
  if (r != NV_SUCCESS)
    return r;
  if (mode_is("no_energy") || unsupported_has("energy"))
    return NV_ERROR_NOT_SUPPORTED;
  *mj = 1000000ULL * (d->index + 1) + 5000ULL * d->energy_calls++;
  return NV_SUCCESS;
}

#ifndef FAKE_NVML_NO_GPM
static unsigned long sample_seq;

int nvmlGpmQueryDeviceSupport(struct fake_dev *d, struct fake_gpm_support *s) {
  int r = check_dev(d);
  if (r != NV_SUCCESS)
    return r;
  if (!s || s->version != 1) /* NVML_GPM_SUPPORT_VERSION */
    return NV_ERROR_INVALID_ARGUMENT;
  s->isSupportedDevice = mode_is("gpm_unsupported") ? 0 : 1;
  return NV_SUCCESS;
}

int nvmlGpmSampleAlloc(struct fake_gpm_sample **s) {
  if (!s)
    return NV_ERROR_INVALID_ARGUMENT;
  *s = calloc(1, sizeof **s);
  if (!*s)
    return NV_ERROR_INVALID_ARGUMENT;
  (*s)->magic = SAMPLE_MAGIC;
  (*s)->dev = -1;
  live_samples++;
  return NV_SUCCESS;
}

int nvmlGpmSampleFree(struct fake_gpm_sample *s) {
  if (!s || s->magic != SAMPLE_MAGIC)
    return NV_ERROR_INVALID_ARGUMENT;
  s->magic = 0;
  free(s);
  live_samples--;
  return NV_SUCCESS;
}

int nvmlGpmSampleGet(struct fake_dev *d, struct fake_gpm_sample *s) {
  int r = check_dev(d);
  if (r != NV_SUCCESS)
    return r;
  if (!s || s->magic != SAMPLE_MAGIC)
    return NV_ERROR_INVALID_ARGUMENT;
  s->dev = (int)d->index;
  s->seq = ++sample_seq;
  return NV_SUCCESS;
}

int nvmlGpmMetricsGet(struct fake_gpm_metrics_get *mg) {
  if (!mg || mg->version != 1) /* NVML_GPM_METRICS_GET_VERSION */
    return NV_ERROR_INVALID_ARGUMENT;
  const struct fake_gpm_sample *a = mg->sample1, *b = mg->sample2;
  if (!a || !b || a->magic != SAMPLE_MAGIC || b->magic != SAMPLE_MAGIC || a->dev < 0 ||
      a->dev != b->dev || a->seq >= b->seq)
    return NV_ERROR_INVALID_ARGUMENT;
  if (mg->numMetrics == 0 || mg->numMetrics > 98) /* R525's NVML_GPM_METRIC_MAX */
    return NV_ERROR_INVALID_ARGUMENT;
  unsigned i = (unsigned)a->dev;
  for (unsigned k = 0; k < mg->numMetrics; k++) {
    struct fake_gpm_metric *m = &mg->metrics[k];
    m->nvmlReturn = NV_SUCCESS;
    m->metricInfo.shortName = m->metricInfo.longName = m->metricInfo.unit = NULL;
    switch (m->metricId) {
    case 2: /* NVML_GPM_METRIC_SM_UTIL */
      m->value = 80.0;
      break;
    case 5: /* NVML_GPM_METRIC_ANY_TENSOR_UTIL */
      m->value = 30.0 + i;
      break;
    case 10: /* NVML_GPM_METRIC_DRAM_BW_UTIL */
      m->value = 55.0 + 10.0 * i;
      break;
    default:
      m->nvmlReturn = NV_ERROR_NOT_SUPPORTED;
      m->value = 0;
    }
  }
  return NV_SUCCESS;
}
#endif
