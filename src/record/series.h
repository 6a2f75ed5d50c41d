/* DIR/series.jsonl: every sample the observers and the generator took
 * during a run, one JSON object per line, appended as each sample is taken
 * (a run killed with SIGKILL keeps every line written before). The figures
 * of metrics.server, metrics.tcp, metrics.gpu and the series of
 * results.json are computed from it (src/analyze/scraped.c), so a results
 * directory can be re-analysed without the run.
 *
 * Line kinds, told apart by "src" (docs/server-metrics.md, "series.jsonl"):
 *   source         a scraped endpoint: index, URL (credentials redacted), DCGM or not
 *   server         one successful scrape: absolute CLOCK_MONOTONIC ns, engines,
 *                  each unified concept's canonical value by name, the TTFT and
 *                  ITL cumulative buckets, per-series values, the raw labelled
 *                  numbers the figures read (KV-cache geometry)
 *   scrape_error   a scrape that failed, with its reason
 *   tcp            socket counts toward the target by kernel TCP state
 *   gpu            one NVML sample of every GPU
 *   not_collected  why the TCP states or the GPU counters were not sampled
 *   client         one self-sample of a loader thread (stage, thread, run-relative ns)
 * Doubles are written with the fewest of 15, 16 or 17 significant digits
 * (%.17g at most) that read back bit-exactly; NaN and infinities as null,
 * except a bucket bound of +Inf, written "+Inf".
 *
 * Writers format one line ('\n' included) into a caller's struct im_buf,
 * whose own cap bounds it; the caller writes it with one write(2) on an
 * O_APPEND descriptor (lines of concurrent writers then never interleave
 * on a regular file). On failure (IM_LIMIT, IM_NOMEM) the buffer is left as
 * it was before the call.
 *
 * The reader takes a whole file into a struct im_series_set of plain
 * arrays. Bounded: a line longer than IM_SERIES_LINE_MAX, a line that is not
 * a JSON object of a known shape, and a last line without its '\n' (a
 * write cut short) are skipped and counted, with their line numbers (the
 * first IM_SERIES_MAX_BAD); points beyond IM_SERIES_MAX_POINTS are
 * dropped and counted. Lines of an unknown "src" are skipped and counted
 * apart (a newer writer). Never a crash on any input.
 *
 * Thread safety: a set belongs to one thread at a time; the writers are
 * pure functions of their arguments. */
#ifndef IM_RECORD_SERIES_H
#define IM_RECORD_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

#define IM_SERIES_LINE_MAX ((size_t)1 << 20) /* bytes of one line, '\n' excluded */
#define IM_SERIES_MAX_POINTS ((size_t)1 << 20) /* points of all kinds in one set */
#define IM_SERIES_MAX_SOURCES 16
#define IM_SERIES_MAX_NAMES 64   /* distinct concept names in one set */
#define IM_SERIES_NAME_LEN 48    /* a concept or engine name, NUL included */
#define IM_SERIES_MAX_ENGINES 16 /* engine names per source */
#define IM_SERIES_MAX_BUCKETS 64 /* = IM_NM_MAX_BUCKETS */
#define IM_SERIES_MAX_PER_SERIES 1024 /* = IM_NM_DEFAULT_MAX_SERIES */
#define IM_SERIES_MAX_RAW 16
#define IM_SERIES_KEY_LEN 96     /* = IM_NM_KEY_MAX */
#define IM_SERIES_URL_LEN 2200
#define IM_SERIES_REASON_LEN 256
#define IM_SERIES_MAX_BAD 64
/* Times (ns) beyond ±2^61 (73 years) make a line corrupt: the difference
 * of two readable times never overflows. */
#define IM_SERIES_T_MAX ((int64_t)1 << 61)

/* Kernel TCP states (include/net/tcp_states.h), the index of the "state"
 * array of a tcp line and of struct im_series_tcp.state. */
enum im_tcp_state {
  IM_TCP_ESTABLISHED = 1,
  IM_TCP_SYN_SENT = 2,
  IM_TCP_SYN_RECV = 3,
  IM_TCP_FIN_WAIT1 = 4,
  IM_TCP_FIN_WAIT2 = 5,
  IM_TCP_TIME_WAIT = 6,
  IM_TCP_CLOSE = 7,
  IM_TCP_CLOSE_WAIT = 8,
  IM_TCP_LAST_ACK = 9,
  IM_TCP_LISTEN = 10,
  IM_TCP_CLOSING = 11,
  IM_TCP_NSTATES = 12 /* size of the arrays; index 0 unused */
};

/* GPUs of one sample; NVML devices beyond are not sampled (observe/gpu.h).
 * 16 covers the largest single-node boards. */
#define IM_GPU_MAX 16
/* NVML_DEVICE_NAME_V2_BUFFER_SIZE (NVML API reference, "Constants"). */
#define IM_GPU_NAME_MAX 96

/* One GPU at one instant (observe/gpu.h says how each figure is had). A
 * figure not available is NaN, or a false has_* flag. */
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
  int64_t t_ns; /* CLOCK_MONOTONIC when taken */
  unsigned n_gpus;
  struct im_gpu_sample gpu[IM_GPU_MAX];
};

/* A cumulative histogram as the page showed it (summed over series). */
struct im_series_bucket {
  double le;    /* upper bound, INFINITY for +Inf */
  double count; /* observations <= le */
};
struct im_series_hist {
  size_t n; /* buckets, ascending le; 0: the page had no such histogram */
  struct im_series_bucket b[IM_SERIES_MAX_BUCKETS];
  double sum, count; /* _sum and _count */
};

/* One series of a scalar concept, kept apart (observe/namemap.h). */
struct im_series_labelled {
  char concept[IM_SERIES_NAME_LEN];
  char engine[IM_SERIES_NAME_LEN];
  char key[IM_SERIES_KEY_LEN];
  double value;
};

/* A number carried by a label of a metric no concept maps, e.g.
 * vllm:cache_config_info{num_gpu_blocks="8677"}. */
struct im_series_raw {
  char metric[IM_SERIES_KEY_LEN];
  char label[IM_SERIES_NAME_LEN];
  double value;
};

/* A concept's canonical value, by name (observe/namemap.h's names). */
struct im_series_value {
  const char *name;
  double value; /* NaN: written null */
};

/* What one successful scrape says, for im_series_fmt_server. Every
 * pointer is borrowed for the call; arrays may be NULL when their n is 0;
 * ttft and itl may be NULL (absent). */
struct im_series_scrape {
  size_t source;
  const char *url; /* redacted by the writer */
  bool dcgm;
  int64_t t_mono;
  const char *const *engines;
  size_t n_engines;
  const struct im_series_value *values;
  size_t n_values;
  const struct im_series_hist *ttft, *itl;
  const struct im_series_labelled *per_series;
  size_t n_per_series;
  const struct im_series_raw *raw;
  size_t n_raw;
  uint64_t malformed_lines; /* of this page */
};

/* ---- The set a reader builds ---- */

/* One successful scrape, read back. */
struct im_series_server {
  int64_t t_mono;
  double v[IM_SERIES_MAX_NAMES]; /* by im_series_name_index; NaN absent */
  uint64_t malformed_lines;
  struct im_series_hist ttft, itl;
};

struct im_series_source {
  bool seen;
  char url[IM_SERIES_URL_LEN];
  bool dcgm;
  char engines[IM_SERIES_MAX_ENGINES][IM_SERIES_NAME_LEN]; /* in order first seen */
  size_t n_engines;
  uint64_t failures;                      /* scrape_error lines */
  char last_error[IM_SERIES_REASON_LEN];  /* "" before any */
  struct im_series_server *pts;           /* n_pts, in file order */
  size_t n_pts, cap_pts;
  /* Of the latest server line (the last page's): */
  struct im_series_labelled *per_series;
  size_t n_per_series;
  struct im_series_raw raw[IM_SERIES_MAX_RAW];
  size_t n_raw;
};

struct im_series_tcp {
  int64_t t_mono;
  uint32_t state[IM_TCP_NSTATES];
  uint32_t total, skipped;
  bool procfs; /* read from /proc/net/tcp* (else netlink sock_diag) */
};

struct im_series_client {
  uint32_t stage, thread;
  int64_t t; /* ns relative to the stage's start */
  double cpu_share, dispatch_lag_max_ms;
  int64_t in_flight;
};

enum im_series_bad_kind {
  IM_SERIES_BAD_CORRUPT,   /* not JSON, or not the shape of its kind */
  IM_SERIES_BAD_TOO_LONG,  /* over IM_SERIES_LINE_MAX */
  IM_SERIES_BAD_TRUNCATED, /* the last line, without '\n' */
};

struct im_series_bad {
  size_t line; /* 1-based */
  enum im_series_bad_kind kind;
};

struct im_series_set {
  char names[IM_SERIES_MAX_NAMES][IM_SERIES_NAME_LEN]; /* concept names seen */
  size_t n_names, names_dropped;
  struct im_series_source src[IM_SERIES_MAX_SOURCES];
  size_t n_src; /* highest source index seen + 1 */
  struct im_series_tcp *tcp;
  size_t n_tcp, cap_tcp;
  struct im_gpu_snapshot *gpu;
  size_t n_gpu, cap_gpu;
  struct im_series_client *client;
  size_t n_client, cap_client;
  char tcp_why[IM_SERIES_REASON_LEN]; /* not_collected reasons; "" none */
  char gpu_why[IM_SERIES_REASON_LEN];
  size_t lines;          /* lines seen */
  size_t n_bad;          /* bad lines (bad[] holds the first IM_SERIES_MAX_BAD) */
  struct im_series_bad bad[IM_SERIES_MAX_BAD];
  size_t unknown;        /* lines of an unknown src, skipped */
  size_t points_dropped; /* beyond IM_SERIES_MAX_POINTS */
};

/* ---- Writers: one line each, appended to out ---- */

/* Copies url into out (outlen bytes, truncated, NUL-terminated) with any
 * user:password@ part replaced by "***@". */
void im_series_redact_url(const char *url, char *out, size_t outlen);

enum im_err im_series_fmt_source(struct im_buf *out, size_t source, const char *url,
                                 bool dcgm) IM_WUR;
enum im_err im_series_fmt_server(struct im_buf *out, const struct im_series_scrape *s) IM_WUR;
enum im_err im_series_fmt_scrape_error(struct im_buf *out, size_t source, const char *url,
                                       int64_t t_mono, const char *reason) IM_WUR;
/* state: IM_TCP_NSTATES counts by kernel state. */
enum im_err im_series_fmt_tcp(struct im_buf *out, const struct im_series_tcp *p) IM_WUR;
enum im_err im_series_fmt_gpu(struct im_buf *out, const struct im_gpu_snapshot *g) IM_WUR;
/* what: "tcp" or "gpu" (IM_INVAL otherwise). */
enum im_err im_series_fmt_not_collected(struct im_buf *out, const char *what,
                                        const char *reason) IM_WUR;
enum im_err im_series_fmt_client(struct im_buf *out, const struct im_series_client *c) IM_WUR;

/* ---- The set ---- */

/* An empty set. IM_NOMEM (*out NULL). Free with im_series_free. */
enum im_err im_series_new(struct im_series_set **out) IM_WUR;
/* NULL ok. */
void im_series_free(struct im_series_set *s);

/* Adds one line (len bytes, without its '\n'; need not be NUL-terminated)
 * to s as line number s->lines + 1. A line that does not parse or lacks a
 * required field is counted in s->bad, not an error. IM_OK, or IM_NOMEM
 * (s keeps what it had). */
enum im_err im_series_add_line(struct im_series_set *s, const char *line, size_t len) IM_WUR;

/* Counts a line that could not be read whole (too long, or truncated) as
 * line number s->lines + 1. */
void im_series_add_bad(struct im_series_set *s, enum im_series_bad_kind kind);

/* A deep copy of src. IM_NOMEM (*out NULL). */
enum im_err im_series_copy(const struct im_series_set *src, struct im_series_set **out) IM_WUR;

/* Reads the file at path (or len bytes at data) into a new set *out
 * (im_series_free). Bad lines are counted in the set, not errors. Errors:
 * IM_IO (the file cannot be opened or read; err says which and why),
 * IM_NOMEM; *out is NULL then. err may be NULL. */
enum im_err im_series_read(const char *path, struct im_series_set **out, char *err,
                           size_t errlen) IM_WUR;
enum im_err im_series_read_mem(const char *data, size_t len, struct im_series_set **out) IM_WUR;

/* Index of a concept name in s->names, -1 when no line had it. */
int im_series_name_index(const struct im_series_set *s, const char *name);

/* "corrupt", "too_long", "truncated". */
const char *im_series_bad_kind_name(enum im_series_bad_kind k);

#endif
