/* OTLP/HTTP's binary encoding (--otlp-protocol http/protobuf, docs/otlp.md):
 * the OTLP/JSON document the exporter builds (export/otlp.c), written as the
 * protobuf message it stands for: ExportTraceServiceRequest for
 * {"resourceSpans": ...}, ExportMetricsServiceRequest for
 * {"resourceMetrics": ...}. A small hand-written wire encoder driven by a
 * table of the fields infermeter sends (their numbers and types are those
 * of opentelemetry-proto v1, opentelemetry/proto/{collector,trace,metrics,
 * common,resource}/v1/ .proto files). A key outside the table is an error, so a
 * field added to the JSON without its protobuf number cannot be dropped
 * silently. */
#ifndef IM_EXPORT_OTLP_PB_H
#define IM_EXPORT_OTLP_PB_H

#include <jansson.h>

#include "core/buf.h"

/* Appends the encoding of doc to out. 0, or -1 (a key or value the
 * messages do not have, or out of memory). */
int im_otlp_pb_encode(const json_t *doc, struct im_buf *out);

#endif
