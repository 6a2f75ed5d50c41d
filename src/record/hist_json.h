/* The on-disk form of a histogram (core/hist.h) in results.json: exact and
 * mergeable, so figures of several runs, threads or MPI ranks combine by
 * reading their histograms back and adding counts. In record/ because it is
 * a file format; core/ has no JSON library. */
#ifndef IM_RECORD_HIST_JSON_H
#define IM_RECORD_HIST_JSON_H

#include "core/err.h"
#include "core/hist.h"

struct json_t;

/* Serialisation to a JSON object (jansson), exact and mergeable:
 *   {"format":"im-hist-1","lowest":1,"highest":3600000000000,"digits":3,
 *    "count":N,"min":..,"max":..,"sum":S,"below":0,"above":0,
 *    "buckets":[[index,count],...]}
 * (non-empty buckets only, ascending index; "sum" is an integer when it fits
 * in int64, else a decimal string). On success *out is a new reference the
 * caller owns (json_decref). IM_NOMEM on allocation failure. */
enum im_err im_hist_to_json(const struct im_hist *h, struct json_t **out) IM_WUR;
/* Initialises *h from such an object (h must not be initialised, or be
 * cleaned up). IM_PARSE when a field is missing, of the wrong type, out of
 * range, or the totals disagree with the buckets; IM_INVAL for an invalid
 * layout; IM_NOMEM. On failure *h is left empty (cleanup is safe). */
enum im_err im_hist_from_json(struct im_hist *h, const struct json_t *json) IM_WUR;

#endif
