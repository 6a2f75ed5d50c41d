/* CSV (RFC 4180) renderings of a run directory, for spreadsheets and
 * plotting scripts: `--output-format csv` writes DIR/requests.csv and
 * DIR/summary.csv beside the JSON (docs/cli.md, "CSV output").
 *
 * RFC 4180: a header row, then one row per record; fields separated by
 * commas, rows ended by CRLF; a field holding a comma, a double quote, CR or
 * LF is enclosed in double quotes, with its double quotes doubled; every row
 * has as many fields as the header. Values: numbers in the shortest form
 * that reads back to the same double, true/false, strings as they are,
 * null and absent keys as empty fields.
 *
 * Thread-safety: none needed (no shared state). Failure: IM_IO with errno
 * set when a write fails, IM_NOMEM, or IM_PARSE/IM_IO from reading (with
 * the reason in `why`). */
#ifndef IM_REPORT_CSV_H
#define IM_REPORT_CSV_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "core/err.h"

/* One field, quoted when RFC 4180 requires it (no separator written). */
enum im_err im_csv_field(FILE *out, const char *s, size_t n) IM_WUR;

/* requests.jsonl -> CSV: one row per line that parses as a JSON object (the
 * bad lines `report` skips are skipped here too), one column per scalar
 * key in order of first appearance (nested objects flattened as a.b;
 * arrays, i.e. the chunk arrival times, stay in the JSONL only), then
 * ttft_ms, tpot_ms and e2el_ms of the attempt by docs/metrics.md §1
 * (empty where the attempt has no such time). Two passes over the file;
 * memory bounded by the longest line. *rows: data rows written. */
enum im_err im_csv_requests(const char *jsonl_path, FILE *out, size_t *rows, char *why,
                            size_t why_len) IM_WUR;

/* results.json -> CSV: one row per stage (a one-stage run: one row),
 * columns stage, label, then every scalar of that stage's `summary`
 * (flattened), the union over the stages in order of first appearance. */
enum im_err im_csv_summary(const json_t *results, FILE *out) IM_WUR;

#endif
