/* The HTML report (`infermeter report DIR --html FILE`, written at the end
 * of every run as DIR/report.html): one self-contained page drawn from a
 * results.json document — inline SVG charts drawn here, inline CSS (light
 * and dark by the reader's preference, printable); no script, no network,
 * no framework. Every chart has axes with units
 * and a legend, carries data-points="N" (the points it draws), and keeps
 * its numbers in a table behind a <details> toggle; a chart without data
 * says why instead of drawing an empty box.
 *
 * Reads only the document (a one-stage run, a run of stages, or a repeat
 * set's aggregate); never recomputes a figure. */
#ifndef IM_REPORT_HTML_H
#define IM_REPORT_HTML_H

#include <jansson.h>

#include "core/buf.h"
#include "core/err.h"

/* Appends the page for `results` (title: `title`, e.g. the directory) to
 * out. IM_NOMEM (or IM_LIMIT when out's bound is reached); IM_INVAL when
 * results is not an object. */
enum im_err im_html_report(const json_t *results, const char *title, struct im_buf *out) IM_WUR;

/* The page of an `infermeter analyze-routing` document (docs/deepseek.md):
 * the expert x time heat map, load balance over time, load skew and
 * routing jitter per layer. IM_NOMEM / IM_LIMIT; IM_INVAL when doc is not
 * an object. */
enum im_err im_html_routing(const json_t *doc, const char *title, struct im_buf *out) IM_WUR;

/* The page of `infermeter compare --html` from its JSON (one comparison
 * object, or an array of them): per stage the compare table, the ratios
 * B/A with their CIs against the noise band, and each figure's runs of A
 * and B as dots with their means. IM_INVAL when doc is neither. */
enum im_err im_html_compare(const json_t *doc, const char *title, struct im_buf *out) IM_WUR;

#endif
