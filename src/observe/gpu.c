/* GPU counters through NVML, loaded with dlopen (contract in gpu.h).
 *
 * We declare the few NVML types and functions we call ourselves instead of
 * including nvml.h, so the build needs no CUDA toolkit. Names, enum values
 * and struct layouts are facts from NVIDIA's NVML API Reference Guide
 * (https://docs.nvidia.com/deploy/nvml-api/): "Device Queries",
 * "nvmlMemory_t", "nvmlUtilization_t", "nvmlClockType_t", "nvmlReturn_t",
 * "GPM Enums", "GPM Structs" (nvmlGpmMetric_t, nvmlGpmMetricsGet_t,
 * nvmlGpmSupport_t) and "GPM Functions". Struct members are declared in the
 * order the reference (and nvml.h) gives them; the two GPM struct version
 * numbers (both 1) are those of the public nvml.h, and nvmlMemory_v2's is
 * nvml.h's NVML_STRUCT_VERSION(Memory, 2): the struct's size with the
 * version in the top byte.
 *
 * What a real driver answers was checked once on an H200 (driver
 * 580.159.04, bench/gpu/README.md): every query below succeeds there, and
 * nvmlDeviceGetMemoryInfo (v1) counts the driver's reserved memory (616 MiB
 * there) as used, while nvidia-smi and DCGM report used without it, as
 * nvmlDeviceGetMemoryInfo_v2 does; so v2 is asked first. */
#include "observe/gpu.h"

#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- NVML declarations ---- */

typedef int nv_return;                          /* nvmlReturn_t (a C enum) */
typedef struct nv_device_st *nv_device;         /* nvmlDevice_t */
typedef struct nv_gpm_sample_st *nv_gpm_sample; /* nvmlGpmSample_t */

#define NV_SUCCESS 0                 /* NVML_SUCCESS */
#define NV_CLOCK_SM 1                /* nvmlClockType_t NVML_CLOCK_SM */
#define NV_GPM_SM_UTIL 2             /* NVML_GPM_METRIC_SM_UTIL: % of SMs busy */
#define NV_GPM_ANY_TENSOR_UTIL 5     /* NVML_GPM_METRIC_ANY_TENSOR_UTIL */
#define NV_GPM_DRAM_BW_UTIL 10       /* NVML_GPM_METRIC_DRAM_BW_UTIL */
#define NV_GPM_SUPPORT_VERSION 1     /* NVML_GPM_SUPPORT_VERSION */
#define NV_GPM_METRICS_GET_VERSION 1 /* NVML_GPM_METRICS_GET_VERSION */
/* The array in nvmlGpmMetricsGet_t has NVML_GPM_METRIC_MAX entries: 98 in
 * the R525 nvml.h, 333 in later ones, with the struct version still 1. We
 * ask for three metrics and NVML should touch only numMetrics entries, but
 * the struct is sized above every known NVML_GPM_METRIC_MAX so that a
 * library that clears or copies its whole struct stays inside ours. It
 * lives in the heap handle (20 KiB), not on the stack. */
#define NV_GPM_METRICS_CAP 512

struct nv_memory { /* nvmlMemory_t (v1), bytes; used includes reserved */
  unsigned long long total, free, used;
};
struct nv_memory_v2 { /* nvmlMemory_v2_t, bytes; total = reserved + free + used */
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
/* nvmlMemory_v2 = NVML_STRUCT_VERSION(Memory, 2) (nvml.h). */
#define NV_MEMORY_V2_VERSION ((unsigned int)(sizeof(struct nv_memory_v2) | 2u << 24))
struct nv_utilization { /* nvmlUtilization_t, percent */
  unsigned int gpu, memory;
};
struct nv_gpm_support { /* nvmlGpmSupport_t */
  unsigned int version, is_supported_device;
};
struct nv_gpm_metric { /* nvmlGpmMetric_t */
  unsigned int metric_id;
  nv_return nvml_return;
  double value;
  struct {
    char *short_name, *long_name, *unit;
  } metric_info;
};
struct nv_gpm_metrics_get { /* nvmlGpmMetricsGet_t */
  unsigned int version, num_metrics;
  nv_gpm_sample sample1, sample2;
  struct nv_gpm_metric metrics[NV_GPM_METRICS_CAP];
};

struct nv_api {
  nv_return (*init)(void);                                      /* nvmlInit_v2 */
  nv_return (*shutdown)(void);                                  /* nvmlShutdown */
  nv_return (*get_count)(unsigned int *);                       /* nvmlDeviceGetCount_v2 */
  nv_return (*get_handle)(unsigned int, nv_device *);           /* nvmlDeviceGetHandleByIndex_v2 */
  const char *(*error_string)(nv_return);                       /* nvmlErrorString */
  nv_return (*get_name)(nv_device, char *, unsigned int);       /* nvmlDeviceGetName */
  nv_return (*get_memory)(nv_device, struct nv_memory *);       /* nvmlDeviceGetMemoryInfo */
  nv_return (*get_memory_v2)(nv_device, struct nv_memory_v2 *); /* nvmlDeviceGetMemoryInfo_v2 */
  nv_return (*get_util)(nv_device, struct nv_utilization *);    /* nvmlDeviceGetUtilizationRates */
  nv_return (*get_clock)(nv_device, int, unsigned int *);       /* nvmlDeviceGetClockInfo, MHz */
  nv_return (*get_power)(nv_device, unsigned int *);            /* nvmlDeviceGetPowerUsage, mW */
  nv_return (*get_energy)(nv_device,
                          unsigned long long *); /* nvmlDeviceGetTotalEnergyConsumption, mJ */
  nv_return (*gpm_query)(nv_device, struct nv_gpm_support *); /* nvmlGpmQueryDeviceSupport */
  nv_return (*gpm_alloc)(nv_gpm_sample *);                    /* nvmlGpmSampleAlloc */
  nv_return (*gpm_get)(nv_device, nv_gpm_sample);             /* nvmlGpmSampleGet */
  nv_return (*gpm_metrics)(struct nv_gpm_metrics_get *);      /* nvmlGpmMetricsGet */
  nv_return (*gpm_free)(nv_gpm_sample);                       /* nvmlGpmSampleFree */
};

struct gpu_dev {
  nv_device dev;
  char name[IM_GPU_NAME_MAX];
  bool gpm;      /* GPM usable on this device */
  bool gpm_prev; /* prev holds a sample */
  nv_gpm_sample prev, cur;
};

struct im_gpu {
  void *lib;
  char *path;
  bool initialised; /* nvmlInit succeeded; nvmlShutdown owed */
  struct nv_api api;
  struct nv_gpm_metrics_get mg; /* scratch for nvmlGpmMetricsGet */
  unsigned n, n_total;
  struct gpu_dev dev[IM_GPU_MAX];
};

/* ---- Loading ---- */

static void set_why(char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_why(char *why, size_t why_len, const char *fmt, ...) {
  if (!why || why_len == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, why_len, fmt, ap);
  va_end(ap);
}

/* ISO C has no conversion between object and function pointers, and dlsym
 * returns void *. POSIX guarantees the representation is the same, so we
 * copy the bytes (memcpy), which -Wpedantic accepts. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)),
               "dlsym results must fit a function pointer");
static bool resolve(void *lib, const char *name, void *fn_ptr_out) {
  void *sym = dlsym(lib, name);
  if (!sym)
    return false;
  memcpy(fn_ptr_out, &sym, sizeof sym);
  return true;
}

static const char *nv_strerror(const struct im_gpu *g, nv_return r) {
  const char *s = g->api.error_string ? g->api.error_string(r) : NULL;
  return s ? s : "unknown NVML error";
}

static void gpm_release(struct im_gpu *g, struct gpu_dev *d) {
  if (d->prev && g->api.gpm_free)
    g->api.gpm_free(d->prev);
  if (d->cur && g->api.gpm_free)
    g->api.gpm_free(d->cur);
  d->prev = d->cur = NULL;
  d->gpm = d->gpm_prev = false;
}

/* GPM needs all five functions, device support and two sample buffers;
 * anything short of that leaves the GPM figures not available. */
static void gpm_setup(struct im_gpu *g, struct gpu_dev *d) {
  const struct nv_api *a = &g->api;
  if (!a->gpm_query || !a->gpm_alloc || !a->gpm_get || !a->gpm_metrics || !a->gpm_free)
    return;
  struct nv_gpm_support sup = {.version = NV_GPM_SUPPORT_VERSION};
  if (a->gpm_query(d->dev, &sup) != NV_SUCCESS || !sup.is_supported_device)
    return;
  if (a->gpm_alloc(&d->prev) != NV_SUCCESS) {
    d->prev = NULL;
    return;
  }
  if (a->gpm_alloc(&d->cur) != NV_SUCCESS) {
    d->cur = NULL;
    gpm_release(g, d);
    return;
  }
  d->gpm = true;
}

static enum im_err load_api(struct im_gpu *g, char *why, size_t why_len) {
  static const struct {
    const char *name;
    size_t offset;
    bool required;
  } syms[] = {
#define NV_SYM(field, name, req) {name, offsetof(struct nv_api, field), req}
      NV_SYM(init, "nvmlInit_v2", true),
      NV_SYM(shutdown, "nvmlShutdown", true),
      NV_SYM(get_count, "nvmlDeviceGetCount_v2", true),
      NV_SYM(get_handle, "nvmlDeviceGetHandleByIndex_v2", true),
      NV_SYM(error_string, "nvmlErrorString", false),
      NV_SYM(get_name, "nvmlDeviceGetName", false),
      NV_SYM(get_memory, "nvmlDeviceGetMemoryInfo", false),
      NV_SYM(get_memory_v2, "nvmlDeviceGetMemoryInfo_v2", false),
      NV_SYM(get_util, "nvmlDeviceGetUtilizationRates", false),
      NV_SYM(get_clock, "nvmlDeviceGetClockInfo", false),
      NV_SYM(get_power, "nvmlDeviceGetPowerUsage", false),
      NV_SYM(get_energy, "nvmlDeviceGetTotalEnergyConsumption", false),
      NV_SYM(gpm_query, "nvmlGpmQueryDeviceSupport", false),
      NV_SYM(gpm_alloc, "nvmlGpmSampleAlloc", false),
      NV_SYM(gpm_get, "nvmlGpmSampleGet", false),
      NV_SYM(gpm_metrics, "nvmlGpmMetricsGet", false),
      NV_SYM(gpm_free, "nvmlGpmSampleFree", false),
#undef NV_SYM
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    /* Every member of nv_api is a function pointer; the offset table writes
     * each through its own slot. */
    void *slot = (char *)&g->api + syms[i].offset;
    if (!resolve(g->lib, syms[i].name, slot) && syms[i].required) {
      set_why(why, why_len, "%s lacks %s (not an NVML library, or too old)", g->path, syms[i].name);
      return IM_UNSUPPORTED;
    }
  }
  return IM_OK;
}

static const char *choose_path(const char *lib_path) {
  if (lib_path && *lib_path)
    return lib_path;
  const char *env = getenv(IM_GPU_NVML_ENV);
  if (env && *env)
    return env;
  return IM_GPU_NVML_DEFAULT;
}

static enum im_err open_devices(struct im_gpu *g, char *why, size_t why_len) {
  unsigned int count = 0;
  nv_return r = g->api.get_count(&count);
  if (r != NV_SUCCESS) {
    set_why(why, why_len, "nvmlDeviceGetCount_v2 failed: %s", nv_strerror(g, r));
    return IM_UNSUPPORTED;
  }
  if (count == 0) {
    set_why(why, why_len, "no GPU (NVML reports 0 devices)");
    return IM_UNSUPPORTED;
  }
  g->n_total = count;
  g->n = count < IM_GPU_MAX ? count : IM_GPU_MAX;
  for (unsigned i = 0; i < g->n; i++) {
    struct gpu_dev *d = &g->dev[i];
    r = g->api.get_handle(i, &d->dev);
    if (r != NV_SUCCESS) {
      set_why(why, why_len, "nvmlDeviceGetHandleByIndex_v2(%u) failed: %s", i, nv_strerror(g, r));
      return IM_UNSUPPORTED;
    }
    if (g->api.get_name && g->api.get_name(d->dev, d->name, sizeof d->name) == NV_SUCCESS)
      d->name[sizeof d->name - 1] = '\0';
    else
      d->name[0] = '\0';
    gpm_setup(g, d);
  }
  return IM_OK;
}

enum im_err im_gpu_open(const char *lib_path, struct im_gpu **out, char *why, size_t why_len) {
  enum im_err result = IM_INVAL;
  struct im_gpu *g = NULL;

  set_why(why, why_len, "%s", "");
  if (!out) {
    set_why(why, why_len, "im_gpu_open: no place for the handle");
    return IM_INVAL;
  }
  *out = NULL;

  result = IM_NOMEM;
  g = calloc(1, sizeof *g);
  if (!g)
    goto out;
  const char *path = choose_path(lib_path);
  g->path = strdup(path);
  if (!g->path)
    goto out;

  result = IM_UNSUPPORTED;
  g->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!g->lib) {
    const char *err = dlerror();
    set_why(why, why_len, "%s not found (%s)", path, err ? err : "dlopen failed");
    goto out;
  }
  result = load_api(g, why, why_len);
  if (result != IM_OK)
    goto out;

  nv_return r = g->api.init();
  if (r != NV_SUCCESS) {
    set_why(why, why_len, "nvmlInit_v2 failed: %s (error %d)", nv_strerror(g, r), r);
    result = IM_UNSUPPORTED;
    goto out;
  }
  g->initialised = true;

  result = open_devices(g, why, why_len);
  if (result != IM_OK)
    goto out;

  *out = g;
  g = NULL;
  result = IM_OK;
out:
  im_gpu_close(g);
  return result;
}

void im_gpu_close(struct im_gpu *g) {
  if (!g)
    return;
  for (unsigned i = 0; i < IM_GPU_MAX; i++)
    gpm_release(g, &g->dev[i]);
  if (g->initialised)
    g->api.shutdown();
  if (g->lib)
    dlclose(g->lib);
  free(g->path);
  free(g);
}

unsigned im_gpu_count(const struct im_gpu *g) {
  return g ? g->n : 0;
}
unsigned im_gpu_count_total(const struct im_gpu *g) {
  return g ? g->n_total : 0;
}
bool im_gpu_has_gpm(const struct im_gpu *g, unsigned i) {
  return g && i < g->n && g->dev[i].gpm;
}
const char *im_gpu_library(const struct im_gpu *g) {
  return g ? g->path : NULL;
}

/* ---- Sampling ---- */

/* Takes a GPM sample into d->cur and, when an earlier one exists, asks NVML
 * for the three metrics over the interval between them. A failed sample
 * keeps the earlier one, so the next figures average over the longer
 * interval instead of being lost. */
static void sample_gpm(struct im_gpu *g, struct gpu_dev *d, struct im_gpu_sample *s) {
  if (!d->gpm || g->api.gpm_get(d->dev, d->cur) != NV_SUCCESS)
    return;
  if (d->gpm_prev) {
    static const unsigned int ids[3] = {NV_GPM_DRAM_BW_UTIL, NV_GPM_ANY_TENSOR_UTIL,
                                        NV_GPM_SM_UTIL};
    struct nv_gpm_metrics_get *mg = &g->mg;
    memset(mg, 0, sizeof *mg);
    mg->version = NV_GPM_METRICS_GET_VERSION;
    mg->num_metrics = 3;
    mg->sample1 = d->prev;
    mg->sample2 = d->cur;
    for (unsigned k = 0; k < 3; k++)
      mg->metrics[k].metric_id = ids[k];
    if (g->api.gpm_metrics(mg) == NV_SUCCESS) {
      double *dst[3] = {&s->dram_bw_util, &s->tensor_active, &s->sm_active};
      for (unsigned k = 0; k < 3; k++) {
        const struct nv_gpm_metric *m = &mg->metrics[k];
        /* GPM reports percentages, 0.0 - 100.0 ("GPM Enums"). */
        if (m->nvml_return == NV_SUCCESS && isfinite(m->value))
          *dst[k] = m->value / 100.0;
      }
    }
  }
  nv_gpm_sample t = d->prev;
  d->prev = d->cur;
  d->cur = t;
  d->gpm_prev = true;
}

static void sample_one(struct im_gpu *g, struct gpu_dev *d, struct im_gpu_sample *s) {
  const struct nv_api *a = &g->api;
  memcpy(s->name, d->name, sizeof s->name);
  s->has_mem = false;
  s->mem_used_bytes = s->mem_total_bytes = 0;
  s->util_gpu_pct = s->util_mem_pct = NAN;
  s->sm_clock_mhz = s->power_w = NAN;
  s->has_energy = false;
  s->energy_mj = 0;
  s->dram_bw_util = s->tensor_active = s->sm_active = NAN;

  /* v2 first: used without the driver's reserved memory, as nvidia-smi
   * shows it. A driver without v2, or one that refuses the version, still
   * answers v1. */
  struct nv_memory_v2 m2 = {.version = NV_MEMORY_V2_VERSION};
  struct nv_memory mem;
  if (a->get_memory_v2 && a->get_memory_v2(d->dev, &m2) == NV_SUCCESS) {
    s->has_mem = true;
    s->mem_used_bytes = m2.used;
    s->mem_total_bytes = m2.total;
  } else if (a->get_memory && a->get_memory(d->dev, &mem) == NV_SUCCESS) {
    s->has_mem = true;
    s->mem_used_bytes = mem.used;
    s->mem_total_bytes = mem.total;
  }
  struct nv_utilization u;
  if (a->get_util && a->get_util(d->dev, &u) == NV_SUCCESS) {
    s->util_gpu_pct = u.gpu;
    s->util_mem_pct = u.memory;
  }
  unsigned int v;
  if (a->get_clock && a->get_clock(d->dev, NV_CLOCK_SM, &v) == NV_SUCCESS)
    s->sm_clock_mhz = v;
  if (a->get_power && a->get_power(d->dev, &v) == NV_SUCCESS)
    s->power_w = v / 1000.0;
  unsigned long long e;
  if (a->get_energy && a->get_energy(d->dev, &e) == NV_SUCCESS) {
    s->has_energy = true;
    s->energy_mj = e;
  }
  sample_gpm(g, d, s);
}

enum im_err im_gpu_sample(struct im_gpu *g, int64_t t_ns, struct im_gpu_snapshot *out) {
  if (!g || !out)
    return IM_INVAL;
  out->t_ns = t_ns;
  out->n_gpus = g->n;
  for (unsigned i = 0; i < g->n; i++)
    sample_one(g, &g->dev[i], &out->gpu[i]);
  return IM_OK;
}
