/* The server's and the machine's figures in results.json: metrics.server,
 * metrics.servers, metrics.tcp, metrics.gpu, and the series series.server,
 * series.tcp, series.gpu and series.client (docs/results-schema.md,
 * docs/server-metrics.md). Renders only: every number comes from
 * analyze/scraped.h or, for series.client, from series.jsonl as read.
 * NaN is rendered as null; a null figure has its reason next to it
 * (not_collected, not_available, kv_residency_reason, null_reasons). */
#ifndef IM_REPORT_SCRAPED_JSON_H
#define IM_REPORT_SCRAPED_JSON_H

#include <stdint.h>
#include <stdio.h>

#include "analyze/scraped.h"
#include "core/err.h"
#include "record/series.h"

struct json_t;

/* Adds "server", "servers", "tcp" and "gpu" to metrics and "server", "tcp"
 * (and "gpu" when some GPU was sampled) to series; existing keys of those
 * names are replaced. IM_OK, IM_INVAL for NULL arguments, IM_NOMEM (the
 * objects may then hold some of the keys). */
enum im_err im_server_json(const struct im_server_figures *f, struct json_t *metrics,
                           struct json_t *series) IM_WUR;

/* series.client of a stage: one object per loader thread 0..threads-1
 * ({"t_s", "cpu_share", "dispatch_lag_max_ms", "in_flight"} arrays, in file
 * order) from the set's client lines of that stage. *out is a new array
 * (the caller's reference). IM_NOMEM (*out NULL). */
enum im_err im_client_series_json(const struct im_series_set *s, uint32_t stage, uint32_t threads,
                                  struct json_t **out) IM_WUR;

/* The terminal's server line, one per scraped /metrics source with
 * figures (none when nothing was scraped): its queue, KV cache, prefix-cache
 * hit rate and token rates as the server counted them over the window of
 * window_s seconds. */
void im_server_text(FILE *o, const struct im_server_figures *f, double window_s);

#endif
