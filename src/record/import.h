/* Results of other tools as request records (`infermeter import`,
 * docs/import.md): a vLLM `--save-result --save-detailed` file, a GuideLLM
 * benchmarks.json, an AIPerf profile_export.jsonl, and an OpenTelemetry
 * trace export (OTLP JSON) of real traffic.
 *
 * Each parser turns the file's bytes into records in infermeter's own
 * format (record/record.h), one stage per benchmark of the source, with
 * times relative to the earliest start of the stage; what the source does
 * not say stays -1 / 0 and is named in `missing` (the audit says so).
 * Pure: no I/O, no global state; bounded (at most IM_IMPORT_MAX_RECORDS
 * records, IM_IMPORT_MAX_CHUNKS token times per request). A vLLM file
 * without per-request arrays (`--save-result` alone) gives no records and
 * its figures in im.summary, IM_MISS_RECORDS set. */
#ifndef IM_RECORD_IMPORT_H
#define IM_RECORD_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/err.h"
#include "record/record.h"

#define IM_IMPORT_MAX_RECORDS 10000000u
#define IM_IMPORT_MAX_CHUNKS 1000000u
#define IM_IMPORT_MAX_STAGES 64
/* The largest file read (a vLLM file holds every ITL of every request). */
#define IM_IMPORT_MAX_BYTES ((size_t)2 << 30)

enum im_import_tool {
  IM_IMPORT_AUTO,
  IM_IMPORT_VLLM,
  IM_IMPORT_GUIDELLM,
  IM_IMPORT_AIPERF,
  IM_IMPORT_OTLP,
  IM_IMPORT_TOOL_COUNT_
};

/* What a source may lack (bits of im_import.missing). */
enum {
  IM_MISS_SCHEDULE = 1u << 0,    /* intended send times: open loop / coordinated
                                    omission cannot be judged */
  IM_MISS_START_TIMES = 1u << 1, /* when each request started: concurrency and
                                    throughput windows are not the source's */
  IM_MISS_TOKEN_TIMES = 1u << 2, /* per-token (chunk) arrival times: no ITL
                                    distribution, no stall analysis */
  IM_MISS_FIRST_TOKEN = 1u << 3, /* first token time: TTFT is the whole request */
  IM_MISS_SERVER = 1u << 4,      /* the server's /metrics (always: no scrape) */
  IM_MISS_CLIENT = 1u << 5,      /* the generator's CPU, fds, ports (self-check) */
  IM_MISS_TOKENS = 1u << 6,      /* token counts */
  IM_MISS_RECORDS = 1u << 7,     /* per-request records at all: a summary only */
  IM_MISS_COUNT_ = 8
};

struct im_import_stage {
  char label[160];
  double rate;         /* declared request rate (NaN: none or unknown) */
  int64_t duration_ns; /* the span of its requests' starts, +1 */
  size_t first, n;     /* its records: recs[first .. first+n) */
};

struct im_import {
  enum im_import_tool tool;
  char version[64];        /* the tool's version, "" when the file does not say */
  char model[128];         /* "" unknown */
  char backend[32];        /* the source's backend / endpoint name, "" unknown */
  char date[64];           /* the source's date text, "" unknown */
  double rate, burstiness; /* declared (NaN: unknown; vLLM "inf": +inf) */
  int64_t max_concurrency; /* -1 unknown or none */
  bool epoch_times;        /* the source's times are Unix epoch (set by the parser) */
  uint64_t wall_start_ns;  /* wall clock of the first start (0: unknown) */
  unsigned missing;        /* IM_MISS_* */
  struct im_import_stage st[IM_IMPORT_MAX_STAGES];
  size_t n_st;
  struct im_record *recs; /* owned */
  size_t n, cap;
  /* A vLLM file saved without --save-detailed: its summary figures (owned;
   * NULL otherwise), and no records. */
  json_t *summary;
  /* OTLP: spans seen and skipped (not an HTTP request span). */
  uint64_t spans, spans_skipped;
};

const char *im_import_tool_name(enum im_import_tool t);
/* "vllm", "guidellm", "aiperf", "otlp" (and "auto"): the tool, or
 * IM_IMPORT_TOOL_COUNT_ when unknown. */
enum im_import_tool im_import_tool_from_name(const char *name);
/* A sentence on what the absence of bit `miss` means (static). */
const char *im_import_missing_text(unsigned miss);

/* Parses data[0..len) as tool's format (IM_IMPORT_AUTO: recognised from
 * the content) into im (zeroed here; im_import_free after, on failure too).
 * IM_PARSE / IM_LIMIT / IM_UNSUPPORTED with the reason in err ("line N:"
 * where the format has lines); IM_NOMEM. */
enum im_err im_import_parse(const char *data, size_t len, enum im_import_tool tool,
                            struct im_import *im, char *err, size_t errlen) IM_WUR;
void im_import_free(struct im_import *im);

/* ---- internal, shared by the parsers (import*.c) */
/* A new record at the end of im->recs (reset, id = logical_id = n + 1,
 * attempt 1, stage), or NULL (IM_LIMIT / IM_NOMEM in *e). */
struct im_record *im__import_push(struct im_import *im, uint32_t stage, enum im_err *e);
/* Closes the stage holding recs[first..n): times relative to its earliest
 * start, its duration; IM_LIMIT when there are too many stages. */
enum im_err im__import_stage(struct im_import *im, size_t first, const char *label, double rate);
/* Times t (ns, any origin) of chunk arrivals into r (which has t_start). */
enum im_err im__import_chunk(struct im_record *r, int64_t t, uint32_t tokens);
/* An error class for an error text / HTTP status of another tool. */
enum im_errclass im__import_errclass(const char *text, int status);
/* A token count: a number in [0, 2^32 - 1] (truncated), else 0 (absent, negative,
 * too large or not a number). */
uint32_t im__json_count(const json_t *v);
/* JSON lines: fn for each non-blank line's document (borrowed), stopping at
 * the first error; "WHAT: line N: " and fn's reason (or the JSON error) in
 * err. */
typedef enum im_err (*im__import_line_fn)(const json_t *doc, void *ctx, char *why, size_t whylen);
enum im_err im__import_lines(const char *data, size_t len, const char *what, im__import_line_fn fn,
                             void *ctx, char *err, size_t errlen);
enum im_err im__import_vllm(const json_t *root, struct im_import *im, char *err, size_t errlen);
enum im_err im__import_guidellm(const json_t *root, struct im_import *im, char *err, size_t errlen);
enum im_err im__import_aiperf(const char *data, size_t len, struct im_import *im, char *err,
                              size_t errlen);
enum im_err im__import_otlp(const json_t *root, struct im_import *im, char *err, size_t errlen);
/* An OTLP file exporter's JSON lines, one export request per line. */
enum im_err im__import_otlp_lines(const char *data, size_t len, struct im_import *im, char *err,
                                  size_t errlen);

#endif
