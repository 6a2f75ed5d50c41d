/* Latency broken down by what a request was: its context length (buckets
 * 0-4K, 4-8K, 8-16K, 16-32K, 32K+, K = 1024 tokens) and its content class,
 * plus the shape of multi-turn sessions. Over completed measured requests
 * (warm-up, retries' failed attempts and errors excluded); the context of a
 * request is its prompt tokens (the server's usage count when it sent one,
 * else the client's). Percentiles nearest-rank, as ours in docs/metrics.md. */
#ifndef IM_ANALYZE_BREAKDOWN_H
#define IM_ANALYZE_BREAKDOWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "record/record.h"
#include "analyze/summary.h"

struct json_t;

#define IM_CTX_BUCKETS 5
/* Lower bound (tokens) of context bucket i; bucket i is [lo(i), lo(i+1)). */
unsigned im_breakdown_bucket_lo(int i);
/* "0-4K", "4-8K", "8-16K", "16-32K", "32K+". */
const char *im_breakdown_bucket_name(int i);
/* The bucket of a context length. */
int im_breakdown_bucket(unsigned tokens);

/* [{"bucket":"0-4K","lo":0,"hi":4096,"n":..,"ttft_ms":{"mean","p50","p90","p99"},
 *   "tpot_ms":{...}}, ...] (every bucket, n 0 with nulls when empty). */
struct json_t *im_breakdown_context_json(const struct im_record *r, size_t n,
                                         const struct im_summary_config *sc);
/* {"text": {...}, "code": {...}}: the same figures per content class. */
struct json_t *im_breakdown_class_json(const struct im_record *r, size_t n,
                                       const struct im_summary_config *sc);
/* {"sessions", "turns_completed", "turns_per_session_mean", "max_turn",
 *  "context_tokens_max", "ended_by_failure"}. */
struct json_t *im_breakdown_sessions_json(const struct im_record *r, size_t n);
/* The tables for people: by context when any request belongs to a session
 * or spans more than one bucket; by class when by_class. */
void im_breakdown_text(FILE *f, const struct im_record *r, size_t n,
                       const struct im_summary_config *sc, bool by_class);

#endif
