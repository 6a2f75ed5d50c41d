/* One request attempt as the load engine records it (docs/metrics.md §1).
 *
 * Times are ns relative to the run's start (CLOCK_MONOTONIC at the moment the
 * schedule starts); -1 means the event did not happen. Chunk arrival times
 * are kept compactly, as µs offsets from t_start (4 bytes per token-bearing
 * chunk); chunk_tokens is NULL while every chunk carried exactly one token.
 *
 * A record is filled by the engine, written to requests.jsonl when the
 * attempt ends, then reduced to what the analysis keeps; analysis never
 * changes it. */
#ifndef INFERMETER_RECORD_H
#define INFERMETER_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/rng.h"

/* The longest requests.jsonl line written or read: a record of the most
 * chunks a record can hold (4M, each offset at most 10 digits and a comma,
 * each token count at most 5 digits and a comma) with every other field, so
 * a valid record always fits; the writer counts a longer line as a failed
 * write, never a torn one. */
#define IM_RECORD_LINE_MAX ((size_t)96 << 20)

enum im_req_kind {
  IM_KIND_MEASURED,
  IM_KIND_WARMUP,   /* scheduled inside the warm-up */
  IM_KIND_RETRY,    /* attempt >= 2 of a logical request */
  IM_KIND_HEALTH,   /* health checks / model polling during the run */
  IM_KIND_PROBE,    /* synthetic probes */
  IM_KIND_ABORTED,  /* still running after the grace period, or interrupted */
  IM_KIND_CANCELLED, /* abandoned by the client on purpose (--cancel-after) */
  IM_KIND_COUNT_
};

enum im_errclass {
  IM_EC_NONE,
  IM_EC_CONNECT,
  IM_EC_TIMEOUT_CONNECT,
  IM_EC_TIMEOUT_TTFT,
  IM_EC_TIMEOUT_IDLE,
  IM_EC_TIMEOUT_TOTAL,
  IM_EC_HTTP_4XX,
  IM_EC_HTTP_429,
  IM_EC_HTTP_5XX,
  IM_EC_RESET,        /* connection reset mid-stream */
  IM_EC_TRUNCATED,    /* stream ended without [DONE] */
  IM_EC_MALFORMED,    /* SSE or JSON that does not parse */
  IM_EC_ERROR_EVENT,  /* an error object inside the stream */
  IM_EC_INSUFFICIENT, /* finish_reason insufficient_system_resource (DeepSeek API) */
  IM_EC_ABORTED,
  IM_EC_NO_OUTPUT,    /* HTTP 200 but no token-bearing chunk */
  IM_EC_INVALID_JSON, /* --response-format: the answer is not JSON of the format */
  IM_EC_CONTEXT_OVERFLOW, /* the prompt (with max_tokens) exceeds the server's context:
                             refused by a 4xx or an error event (im_errclass_refine) */
  IM_EC_COUNT_
};

/* Where output_tokens comes from (docs/metrics.md §1). */
/* Content class of a prompt (--mix code=..,text=..), for per-class latency. */
enum im_req_class { IM_CLASS_NONE, IM_CLASS_TEXT, IM_CLASS_CODE, IM_CLASS_COUNT_ };

enum im_count_source {
  IM_COUNT_NONE,
  IM_COUNT_USAGE,       /* usage.completion_tokens */
  IM_COUNT_TOKENIZER,   /* tokenizer count of the text */
  IM_COUNT_CHUNKS,      /* one per token-bearing chunk */
  IM_COUNT_SOURCE_COUNT_
};


/* Targets of one run (several --url), at most. */
#define IM_RECORD_MAX_TARGETS 16

struct im_record {
  uint64_t id;              /* attempt id, unique within the run (from 1) */
  uint64_t logical_id;      /* the user request; = id for a first attempt */
  uint32_t attempt;         /* 1 for the first */
  uint32_t stage;
  enum im_req_kind kind;
  char request_id[48];      /* X-Request-Id sent (joins the server's logs) */

  int64_t t_sched;          /* when the schedule wanted it sent */
  int64_t t_sched_first;    /* t_sched of attempt 1 (user-visible latency base) */
  int64_t t_dispatch;       /* when the engine acted on it */
  int64_t t_start;          /* handed to HTTP (after any --max-concurrency wait) */
  int64_t t_send;           /* request written (after connect/TLS) */
  int64_t t_hdr;            /* status line received */
  int64_t t_first;          /* first token-bearing chunk */
  int64_t t_answer;         /* first chunk with `content` (after reasoning) */
  int64_t t_last;           /* last token-bearing chunk */
  int64_t t_end;            /* attempt over (success or error) */

  uint32_t n_chunks;        /* token-bearing chunks */
  uint32_t cap_chunks;
  uint32_t *chunk_us;       /* arrival - t_start, µs, per chunk */
  uint16_t *chunk_tokens;   /* tokens per chunk, NULL = all 1 */
  uint32_t keepalives;      /* `:` comment lines received */

  uint32_t prompt_tokens;   /* usage, else the client's count */
  uint32_t output_tokens;
  enum im_count_source output_source;
  uint32_t cached_tokens;   /* prompt_tokens_details.cached_tokens, DeepSeek
                               prompt_cache_hit_tokens or llama.cpp cache_n */
  uint32_t reasoning_tokens;
  uint32_t requested_tokens; /* max_tokens sent */
  bool ignore_eos;

  int http_status;          /* 0 when none arrived */
  enum im_errclass error;
  char finish_reason[32];   /* "" when none */
  bool cancelled;           /* the client let go of it on purpose (--cancel-after, the
                               end-of-run grace, an interrupt), whatever its kind: no
                               error and no finish_reason then mean "not waited for",
                               never a stream the server cut */
  uint64_t conn_id;         /* connection identity within the run */
  bool conn_new;            /* this attempt opened its connection */

  double temperature, top_p; /* sampling parameters sent (NaN: not sent) */
  uint64_t content_hash;     /* FNV-1a of what was asked (prompt, max_tokens,
                                sampling): equal for identical requests; 0 unknown */
  uint64_t session;          /* multi-turn session id (from 1); 0: not in a session */
  uint32_t turn;             /* turn within the session (from 1); 0: none */
  uint32_t context_tokens;   /* the client's count of the prompt it sent (template
                                included), whatever usage later says */
  enum im_req_class content_class;
  double repetition;         /* 1 - distinct / total 4-grams of the streamed
                                pieces (docs/metrics.md §7); NaN: not measured */
  uint32_t ngrams;           /* 4-grams it was computed over (0: none) */
  double entropy;            /* --logprobs: mean entropy (nats) per token over the
                                top alternatives streamed; NaN: none */
  /* Reasoning controls sent (docs/agents.md); written only when sent. */
  char reasoning_effort[8];  /* "" not sent */
  int8_t thinking;           /* 0 not sent, 1 on, -1 off */
  uint32_t tools;            /* tools offered (agent chains, docs/agents.md); 0 none */
  char model[64];            /* --model-mix: the model name sent; "" without a mix */
  uint16_t target;           /* several --url: 1 + the index of the target it was
                                sent to (manifest.target.urls); 0: one target */
  /* Who caused the client's lateness (docs/metrics.md §10), µs, -1 when not
   * measured (records of other tools and of older versions). The client's
   * part of a lag is the CPU time the engine's loop thread spent (and its
   * waits on its own builder and writer) between the due time and the act;
   * the rest of the lag is the host's (the thread was asleep past its wake-up,
   * or runnable and not running). */
  int32_t lag_client_us;      /* of the dispatch lag (t_dispatch - t_sched) */
  int32_t read_first_us;      /* receive lag of the read that held the first token */
  int32_t read_first_client_us;
  int32_t read_last_us;       /* ... and of the read that held the last token */
  int32_t read_last_client_us;
  uint32_t late_reads;        /* reads of this attempt later than IM_RECORD_LATE_READ_US */
  uint32_t late_reads_client; /* ... of which the client's part alone was that late */
};

/* A read whose receive lag is above this is counted late in the record. */
#define IM_RECORD_LATE_READ_US 1000

/* W3C trace context of the attempts (the `traceparent` the load engine
 * sends, and the OTLP export): trace id = run half : request half, where
 * the run half is im_trace_run(run_salt) and the request half
 * im_mix64(logical_id) | 1; the attempt's span id im_mix64(id ^ run half) | 1. */
uint64_t im_trace_run(const char *run_salt);
static inline uint64_t im_trace_request(uint64_t logical_id) { return im_mix64(logical_id) | 1; }
static inline uint64_t im_trace_span(uint64_t trace_run, uint64_t attempt_id) {
  return im_mix64(attempt_id ^ trace_run) | 1;
}

/* Name used in JSON for a kind / error class / count source. */
const char *im_kind_name(enum im_req_kind k);
const char *im_errclass_name(enum im_errclass e); /* "" for IM_EC_NONE */
const char *im_count_source_name(enum im_count_source s);
/* An error's class refined by the server's own words (text, len bytes: the
 * error body or the streamed error's message): IM_EC_HTTP_4XX or
 * IM_EC_ERROR_EVENT whose text is a context overflow, in the wordings of
 * llama.cpp (exceed_context_size_error), vLLM, SGLang and TGI, becomes
 * IM_EC_CONTEXT_OVERFLOW; any other class or text is returned as it was.
 * *prompt and *limit get the prompt's and the context's token counts the
 * text gives, 0 for one it does not give (either may be NULL). Reads at most
 * the first 2 KiB of text. */
enum im_errclass im_errclass_refine(enum im_errclass e, const char *text, size_t len,
                                    uint32_t *prompt, uint32_t *limit);
const char *im_req_class_name(enum im_req_class c); /* "" for IM_CLASS_NONE */

/* Resets r to an empty attempt (all times -1, temperature and top_p NaN,
 * kind measured, counts 0); r must be zero-filled or previously reset. Keeps
 * chunk_us's storage for reuse; frees chunk_tokens (non-NULL would mean a
 * chunk held != 1 tokens). */
void im_record_reset(struct im_record *r);
/* Frees the chunk arrays. */
void im_record_cleanup(struct im_record *r);
/* Appends a token-bearing chunk that arrived at t (run-relative ns) with n
 * tokens. Stores (t - t_start) in µs (0 when t < t_start; t_start -1 counts
 * as 0), saturating at UINT32_MAX; n saturates at 65535. The first n != 1
 * allocates chunk_tokens (earlier chunks get 1). Arrays grow geometrically.
 * Bounded: at most 4M chunks (IM_LIMIT beyond); on IM_LIMIT or IM_NOMEM the
 * record is unchanged. */
enum im_err im_record_add_chunk(struct im_record *r, int64_t t, uint32_t n) IM_WUR;
/* Tokens of chunk i. */
static inline uint32_t im_record_chunk_tokens(const struct im_record *r, uint32_t i) {
  return r->chunk_tokens ? r->chunk_tokens[i] : 1;
}

/* Appends the record as one JSON object and a newline (the requests.jsonl
 * line, documented in docs/results-schema.md). On error (IM_LIMIT when out's
 * cap is reached, IM_NOMEM) out is left as it was. */
enum im_err im_record_to_jsonl(const struct im_record *r, struct im_buf *out) IM_WUR;
/* Parses one requests.jsonl line back (for `report` and tests). r must be
 * reset first. IM_PARSE on error: msg (if not NULL) names the field at
 * fault, and r may be partly filled (reset it before reuse). Unknown keys
 * are ignored; output_shortfall is only type-checked. */
enum im_err im_record_from_json(const char *line, size_t len, struct im_record *r, char *msg,
                                size_t msg_len) IM_WUR;

#endif
