/* Reading the Prometheus text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/) and the
 * text basics of OpenMetrics 1.0 (https://openmetrics.io), as inference
 * servers and exporters serve them on /metrics. (The writer is promexp.h.)
 *
 * One pass over a whole page held in memory, calling back per line:
 *   - `# HELP name text` (text unescaped: `\\` and `\n`), `# TYPE name type`
 *     (counter, gauge, histogram, summary, untyped; OpenMetrics unknown,
 *     gaugehistogram, info, stateset), `# UNIT name unit`, `# EOF` (nothing
 *     after it is read; non-blank text there is reported once); other `#`
 *     lines are comments and are skipped;
 *   - samples `name{label="value",...} value [timestamp]`: names may hold
 *     colons (`vllm:num_requests_running`); label values are unescaped (`\\`,
 *     `\"`, `\n`; any other escape makes the line malformed); a trailing comma
 *     inside the braces is allowed; values as Go writes them (`1e+06`, `+Inf`,
 *     `-Inf`, `NaN`, case-insensitive, also `Inf` without sign); an
 *     OpenMetrics exemplar (` # {...} v [ts]`) after the value is skipped;
 *   - line ends LF or CRLF; blank lines skipped; a page need not end in LF.
 * Each sample is tied to the family of the closest preceding `# TYPE` when
 * its name is the family name or the family name plus a suffix that type
 * allows (histogram: _bucket _sum _count _created; summary: _sum _count
 * _created; counter: _total _created; gaugehistogram: _bucket _gsum _gcount;
 * info: _info); otherwise its family is its own name and its type is
 * IM_PROM_NONE. Tracking only the last TYPE keeps the pass linear; the
 * format requires a family's lines to be contiguous anyway.
 *
 * Malformed lines are reported (line number, static reason) and skipped;
 * parsing goes on. Bounds (struct im_promparse_limits) cap a line's length,
 * the number of labels and the length of names: a hostile page cannot make
 * the parser allocate more than about max_line bytes plus the label array,
 * and the time is linear in the page size.
 *
 * Thread safety: none; one parser per thread. */
#ifndef INFERMETER_PROMPARSE_H
#define INFERMETER_PROMPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

enum im_prom_type {
  IM_PROM_NONE, /* no `# TYPE` line covers the sample */
  IM_PROM_UNTYPED,
  IM_PROM_COUNTER,
  IM_PROM_GAUGE,
  IM_PROM_HISTOGRAM,
  IM_PROM_SUMMARY,
  IM_PROM_UNKNOWN, /* OpenMetrics' name for untyped */
  IM_PROM_GAUGEHISTOGRAM,
  IM_PROM_INFO,
  IM_PROM_STATESET,
  IM_PROM_TYPE_COUNT_
};

/* What a sample's name adds to its family's name. */
enum im_prom_suffix {
  IM_PROM_SFX_NONE,
  IM_PROM_SFX_BUCKET,
  IM_PROM_SFX_SUM,
  IM_PROM_SFX_COUNT,
  IM_PROM_SFX_TOTAL,
  IM_PROM_SFX_CREATED,
  IM_PROM_SFX_GSUM,
  IM_PROM_SFX_GCOUNT,
  IM_PROM_SFX_INFO,
};

/* Lower-case type name as written in `# TYPE` ("none" for IM_PROM_NONE). */
const char *im_prom_type_name(enum im_prom_type t);

/* A label, unescaped, both strings NUL-terminated (a value may also hold
 * NUL bytes written literally; value_len counts them). */
struct im_prom_label {
  const char *name;
  const char *value;
  size_t value_len;
};

/* What the sample callback receives. Every pointer is valid only during the
 * callback. */
struct im_prom_sample {
  const char *name;   /* as written, e.g. "vllm:e2e_request_latency_seconds_bucket" */
  const char *family; /* the TYPE'd family, e.g. "vllm:e2e_request_latency_seconds" */
  enum im_prom_type type;
  enum im_prom_suffix suffix;
  const struct im_prom_label *labels; /* in page order */
  size_t n_labels;
  double value;
  int has_timestamp;
  /* As written: milliseconds since the epoch in format 0.0.4, seconds
   * (possibly fractional) in OpenMetrics; the page does not say which. */
  double timestamp;
  size_t line; /* 1-based */
};

enum im_prom_meta_kind {
  IM_PROM_META_HELP,
  IM_PROM_META_TYPE,
  IM_PROM_META_UNIT,
  IM_PROM_META_EOF
};

/* A metadata line. Pointers valid only during the callback. */
struct im_prom_meta {
  enum im_prom_meta_kind kind;
  const char *name; /* "" for EOF */
  /* HELP: the unescaped text; TYPE: the type as written; UNIT: the unit;
   * EOF: "". NUL-terminated. */
  const char *text;
  enum im_prom_type type; /* TYPE only (IM_PROM_NONE otherwise) */
  size_t line;
};

/* A skipped line. reason is a static English phrase ("bad label value
 * escape"). */
struct im_prom_error {
  size_t line;
  const char *reason;
};

/* Callbacks, each optional (NULL: ignored). Return IM_OK to go on; any
 * other value stops the parse and im_promparse_page returns it. */
struct im_promparse_cbs {
  enum im_err (*sample)(void *ud, const struct im_prom_sample *s);
  enum im_err (*meta)(void *ud, const struct im_prom_meta *m);
  enum im_err (*error)(void *ud, const struct im_prom_error *e);
  void *ud;
};

/* Defaults: far above what servers write (vLLM's longest lines are a few
 * hundred bytes; a DCGM sample carries ~10 labels). */
#define IM_PROMPARSE_DEFAULT_MAX_LINE ((size_t)64 << 10)
#define IM_PROMPARSE_DEFAULT_MAX_LABELS 64
#define IM_PROMPARSE_DEFAULT_MAX_NAME 1024

struct im_promparse_limits {
  size_t max_line;   /* bytes of a line, line end excluded; 0: default */
  size_t max_labels; /* labels of one sample; 0: default */
  size_t max_name;   /* bytes of a metric or label name; 0: default */
};

/* Counts of the last im_promparse_page call. */
struct im_promparse_stats {
  size_t lines;   /* lines read (up to and including `# EOF`) */
  size_t samples; /* delivered to the sample callback */
  size_t meta;    /* delivered to the meta callback */
  size_t errors;  /* malformed lines skipped */
  int saw_eof;    /* a `# EOF` line was read */
};

/* Caller-embedded parser; fields are private. */
struct im_promparse {
  size_t max_line, max_labels, max_name;
  struct im_buf scratch; /* unescaped names and values of the current line */
  struct im_buf family;  /* the last TYPE'd family name */
  enum im_prom_type family_type;
  struct im_prom_label *labels; /* max_labels entries, allocated on first use */
  size_t *label_off;            /* offsets into scratch while a line is parsed */
  struct im_promparse_stats stats;
};

/* Initialises p; limits may be NULL. Allocates nothing. */
void im_promparse_init(struct im_promparse *p, const struct im_promparse_limits *limits);
/* Frees p's storage. NULL ok; p may be initialised again afterwards. */
void im_promparse_cleanup(struct im_promparse *p);

/* Parses a whole page of len bytes (data may be NULL when len is 0; it need
 * not be NUL-terminated), calling back synchronously for every sample,
 * metadata line and malformed line. Forgets the TYPE context of any earlier
 * page first; keeps the storage between pages. Returns IM_OK (malformed
 * lines are not an error of the call), IM_NOMEM, or a callback's non-OK
 * value. stats may be NULL. */
enum im_err im_promparse_page(struct im_promparse *p, const char *data, size_t len,
                              const struct im_promparse_cbs *cbs,
                              struct im_promparse_stats *stats) IM_WUR;

/* Returns the value of the label named `name` in s, or NULL. */
const char *im_prom_sample_label(const struct im_prom_sample *s, const char *name);

/* One bucket of a cumulative histogram: count observations <= le. Counts are
 * doubles so that the caller can pass the difference of two scrapes. */
struct im_prom_bucket {
  double le;
  double count;
};

/* The q-quantile (0 <= q <= 1) of a cumulative histogram, estimated as
 * Prometheus' histogram_quantile() does (promql/quantile.go):
 *   - buckets must be in strictly increasing le order and the last must be
 *     le=+Inf (its count is the number of observations), else IM_INVAL;
 *   - counts that decrease from one bucket to the next (a scrape racing an
 *     observation, or a delta across a counter reset) are raised to the
 *     running maximum first, as Prometheus does;
 *   - no observations (the +Inf count is 0, or negative as a delta across a
 *     reset can be): *out = NaN, IM_OK;
 *   - q < 0 gives -Inf, q > 1 +Inf, NaN q NaN (IM_OK);
 *   - rank = q * observations; the first bucket whose count >= rank holds
 *     the quantile; within it the value is interpolated linearly between the
 *     bucket's lower bound (the previous bucket's le; 0 for the first bucket,
 *     which therefore assumes non-negative observations) and its le;
 *   - a first bucket with le <= 0 returns its le (no interpolation);
 *   - a quantile falling in the +Inf bucket returns the largest finite le
 *     (the estimate cannot exceed what the buckets resolve).
 * Works on deltas: subtract the counts of an earlier scrape, bucket by
 * bucket, to get the quantile over the interval between them.
 * n >= 2 (one finite bucket and +Inf) is required, else IM_INVAL. */
enum im_err im_prom_histogram_quantile(double q, const struct im_prom_bucket *b, size_t n,
                                       double *out) IM_WUR;

#endif
