/* OTLP export (--otlp URL, docs/otlp.md): a run directory's attempts as
 * OpenTelemetry spans and its figures as GenAI client metrics, sent as
 * OTLP/HTTP JSON to URL/v1/traces and URL/v1/metrics after the run (and by
 * `infermeter report DIR --otlp URL`), never while measuring.
 *
 * Spans follow the GenAI semantic conventions v1.41.0 (schemaUrl
 * https://opentelemetry.io/schemas/1.41.0; the names are experimental and
 * may move): one CLIENT span per attempt, named "{gen_ai.operation.name}
 * {gen_ai.request.model}", child of one span per logical request; trace and
 * span ids are those of the traceparent the attempt sent (record/record.h),
 * so the server's spans join. During a run, a thread of its own (never a
 * measuring thread) follows requests.jsonl and sends each attempt's span as
 * soon as its record is written (batches of at most 512, or every 2 s; at
 * most 8,192 spans waiting, beyond which new ones are dropped and counted);
 * the request spans and the metrics follow at the end, when every attempt
 * of a request is known. Spans are head-sampled per logical request
 * (--otlp-sample R, by a hash of the trace id: a request keeps all of its
 * attempts or none); metrics are never sampled. Requests go in batches of
 * at most 512 spans, retried on 429, 502, 503 and 504 (Retry-After
 * honoured, at most 5 tries); what could not be sent is counted.
 *
 * Errors: enum im_err with a message; a problem that does not stop the
 * export (a collector's refusal of one batch) goes to opts.note. Nothing
 * here prints. Threads: the live exporter runs on a background thread
 * (SCHED_IDLE, core/thread.h) that reads only the run directory's files;
 * note may be called from it. Secrets: the API key is never sent. */
#ifndef IM_EXPORT_OTLP_H
#define IM_EXPORT_OTLP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

struct im_otlp_opts {
  const char *url;         /* base, e.g. http://127.0.0.1:4318 */
  double sample;           /* head-sampling share of logical requests, (0, 1] */
  const char *provider;    /* gen_ai.provider.name (NULL: from the target) */
  const char *api_key;     /* never sent to the collector */
  bool protobuf;           /* --otlp-protocol http/protobuf (default http/json) */
  /* A batch the collector refused, one line (NULL: dropped); called from
   * the live exporter's thread too. */
  void (*note)(void *data, const char *line);
  void *data;
};

struct im_otlp_stats {
  uint64_t spans_sent, spans_dropped, requests, retries;
  uint64_t metric_points;
};

/* Exports dir's spans and metrics (without the attempt spans when
 * attempts_sent: the live exporter sent them). IM_OK, or an error with msg
 * saying why (the run's results are unaffected). */
enum im_err im_otlp_export(const char *dir, const struct im_otlp_opts *o, bool attempts_sent,
                           struct im_otlp_stats *st, char *msg, size_t msg_len) IM_WUR;

/* The live exporter of a run being written to dir. */
struct im_otlp_live {
  char dir[4096];
  struct im_otlp_opts o;
  struct im_otlp_stats st;
  pthread_t thread;
  atomic_bool stop;
  bool running;
};
/* Starts following dir/requests.jsonl (created by the run). IM_OK, or an
 * error with msg saying why. */
enum im_err im_otlp_live_start(struct im_otlp_live *l, const char *dir,
                               const struct im_otlp_opts *o, char *msg, size_t msg_len) IM_WUR;
/* Sends what is left and joins (no-op when not running). */
void im_otlp_live_stop(struct im_otlp_live *l);

#endif
