/* OTLP protobuf encoding: see export/otlp_pb.h. */
#include "export/otlp_pb.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* How a JSON value is written (proto3 wire format). */
enum ft {
  F_MSG,        /* a message (an array: repeated), wire type 2 */
  F_STR,        /* string, wire type 2 */
  F_HEX,        /* bytes, given as lowercase hex (trace and span ids) */
  F_ENUM,       /* enum / int32 from a JSON integer, varint */
  F_INT64,      /* int64 given as a decimal string (or a number), varint */
  F_BOOL,       /* bool, varint */
  F_FIXED64,    /* fixed64 given as a decimal string (or a number), wire type 1 */
  F_DOUBLE,     /* double, wire type 1 */
  F_PK_FIXED64, /* repeated fixed64, packed */
  F_PK_DOUBLE,  /* repeated double, packed */
};

struct msg;
struct fd {
  const char *json;
  uint32_t num;
  enum ft t;
  const struct msg *sub;
};
struct msg {
  const struct fd *f;
  size_t n;
};

#define MSG(name, ...)                                                       \
  static const struct fd name##_f[] = {__VA_ARGS__};                         \
  static const struct msg name = {name##_f, sizeof name##_f / sizeof name##_f[0]}

/* opentelemetry/proto/common/v1/common.proto */
static const struct msg any_value;
MSG(array_value, {"values", 1, F_MSG, &any_value});
static const struct fd any_value_f[] = {
    {"stringValue", 1, F_STR, NULL}, {"boolValue", 2, F_BOOL, NULL},
    {"intValue", 3, F_INT64, NULL},  {"doubleValue", 4, F_DOUBLE, NULL},
    {"arrayValue", 5, F_MSG, &array_value}};
static const struct msg any_value = {any_value_f, sizeof any_value_f / sizeof any_value_f[0]};
MSG(key_value, {"key", 1, F_STR, NULL}, {"value", 2, F_MSG, &any_value});
MSG(scope, {"name", 1, F_STR, NULL}, {"version", 2, F_STR, NULL},
    {"attributes", 3, F_MSG, &key_value});
/* opentelemetry/proto/resource/v1/resource.proto */
MSG(resource, {"attributes", 1, F_MSG, &key_value});
/* opentelemetry/proto/trace/v1/trace.proto */
MSG(status, {"message", 2, F_STR, NULL}, {"code", 3, F_ENUM, NULL});
MSG(event, {"timeUnixNano", 1, F_FIXED64, NULL}, {"name", 2, F_STR, NULL},
    {"attributes", 3, F_MSG, &key_value});
MSG(span, {"traceId", 1, F_HEX, NULL}, {"spanId", 2, F_HEX, NULL},
    {"traceState", 3, F_STR, NULL}, {"parentSpanId", 4, F_HEX, NULL}, {"name", 5, F_STR, NULL},
    {"kind", 6, F_ENUM, NULL}, {"startTimeUnixNano", 7, F_FIXED64, NULL},
    {"endTimeUnixNano", 8, F_FIXED64, NULL}, {"attributes", 9, F_MSG, &key_value},
    {"events", 11, F_MSG, &event}, {"status", 15, F_MSG, &status});
MSG(scope_spans, {"scope", 1, F_MSG, &scope}, {"spans", 2, F_MSG, &span},
    {"schemaUrl", 3, F_STR, NULL});
MSG(resource_spans, {"resource", 1, F_MSG, &resource},
    {"scopeSpans", 2, F_MSG, &scope_spans}, {"schemaUrl", 3, F_STR, NULL});
/* opentelemetry/proto/metrics/v1/metrics.proto */
MSG(hist_point, {"startTimeUnixNano", 2, F_FIXED64, NULL}, {"timeUnixNano", 3, F_FIXED64, NULL},
    {"count", 4, F_FIXED64, NULL}, {"sum", 5, F_DOUBLE, NULL},
    {"bucketCounts", 6, F_PK_FIXED64, NULL}, {"explicitBounds", 7, F_PK_DOUBLE, NULL},
    {"attributes", 9, F_MSG, &key_value}, {"min", 11, F_DOUBLE, NULL},
    {"max", 12, F_DOUBLE, NULL});
MSG(histogram, {"dataPoints", 1, F_MSG, &hist_point},
    {"aggregationTemporality", 2, F_ENUM, NULL});
MSG(metric, {"name", 1, F_STR, NULL}, {"description", 2, F_STR, NULL}, {"unit", 3, F_STR, NULL},
    {"histogram", 9, F_MSG, &histogram});
MSG(scope_metrics, {"scope", 1, F_MSG, &scope}, {"metrics", 2, F_MSG, &metric},
    {"schemaUrl", 3, F_STR, NULL});
MSG(resource_metrics, {"resource", 1, F_MSG, &resource},
    {"scopeMetrics", 2, F_MSG, &scope_metrics}, {"schemaUrl", 3, F_STR, NULL});
/* opentelemetry/proto/collector/{trace,metrics}/v1/{trace,metrics}_service.proto */
MSG(export_request, {"resourceSpans", 1, F_MSG, &resource_spans},
    {"resourceMetrics", 1, F_MSG, &resource_metrics});

/* ---- the wire ------------------------------------------------------------ */

static int varint(struct im_buf *b, uint64_t v) {
  unsigned char t[10];
  size_t n = 0;
  do {
    t[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  return im_buf_append(b, t, n) ? -1 : 0;
}

static int tag(struct im_buf *b, uint32_t num, unsigned wire) {
  return varint(b, (uint64_t)num << 3 | wire);
}

static int fixed64(struct im_buf *b, uint64_t v) {
  unsigned char t[8];
  for (int i = 0; i < 8; i++)
    t[i] = (unsigned char)(v >> (8 * i));
  return im_buf_append(b, t, 8) ? -1 : 0;
}

static int dbl(struct im_buf *b, double d) {
  uint64_t v;
  memcpy(&v, &d, sizeof v);
  return fixed64(b, v);
}

static int delimited(struct im_buf *b, uint32_t num, const void *data, size_t len) {
  return tag(b, num, 2) || varint(b, len) || (len && im_buf_append(b, data, len)) ? -1 : 0;
}

/* A 64-bit integer from a decimal string or a JSON integer. */
static int int64_of(const json_t *v, bool is_signed, uint64_t *out) {
  if (json_is_integer(v)) {
    *out = (uint64_t)json_integer_value(v);
    return 0;
  }
  const char *s = json_string_value(v);
  if (!s || !*s)
    return -1;
  char *end;
  errno = 0;
  *out = is_signed ? (uint64_t)strtoll(s, &end, 10) : strtoull(s, &end, 10);
  return errno || *end || (!is_signed && *s == '-') ? -1 : 0;
}

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int encode_msg(const json_t *o, const struct msg *m, struct im_buf *b);

/* One value of field f (an element, for a repeated message). */
static int value(const json_t *v, const struct fd *f, struct im_buf *b) {
  uint64_t u;
  switch (f->t) {
  case F_MSG: {
    struct im_buf sub;
    im_buf_init(&sub, b->max);
    int rc = encode_msg(v, f->sub, &sub) || delimited(b, f->num, sub.data, sub.len) ? -1 : 0;
    im_buf_cleanup(&sub);
    return rc;
  }
  case F_STR:
    return json_is_string(v) ? delimited(b, f->num, json_string_value(v), json_string_length(v))
                             : -1;
  case F_HEX: {
    const char *s = json_string_value(v);
    size_t n = s ? strlen(s) : 1;
    unsigned char raw[64];
    if (n % 2 || n / 2 > sizeof raw)
      return -1;
    for (size_t i = 0; i < n / 2; i++) {
      int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
      if (hi < 0 || lo < 0)
        return -1;
      raw[i] = (unsigned char)(hi << 4 | lo);
    }
    return delimited(b, f->num, raw, n / 2);
  }
  case F_ENUM:
    return json_is_integer(v) ? tag(b, f->num, 0) || varint(b, (uint64_t)json_integer_value(v))
                              : -1;
  case F_INT64:
    return int64_of(v, true, &u) ? -1 : tag(b, f->num, 0) || varint(b, u);
  case F_BOOL:
    return json_is_boolean(v) ? tag(b, f->num, 0) || varint(b, json_is_true(v)) : -1;
  case F_FIXED64:
    return int64_of(v, false, &u) ? -1 : tag(b, f->num, 1) || fixed64(b, u);
  case F_DOUBLE:
    return json_is_number(v) ? tag(b, f->num, 1) || dbl(b, json_number_value(v)) : -1;
  case F_PK_FIXED64:
  case F_PK_DOUBLE: {
    size_t n = json_array_size(v);
    if (!json_is_array(v))
      return -1;
    if (!n)
      return 0;
    if (tag(b, f->num, 2) || varint(b, 8 * n))
      return -1;
    for (size_t i = 0; i < n; i++) {
      const json_t *e = json_array_get(v, i);
      if (f->t == F_PK_DOUBLE ? !json_is_number(e) || dbl(b, json_number_value(e))
                              : int64_of(e, false, &u) || fixed64(b, u))
        return -1;
    }
    return 0;
  }
  }
  return -1;
}

static int encode_msg(const json_t *o, const struct msg *m, struct im_buf *b) {
  if (!json_is_object(o))
    return -1;
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)o, k, v) {
    const struct fd *f = NULL;
    for (size_t i = 0; i < m->n && !f; i++)
      if (!strcmp(m->f[i].json, k))
        f = &m->f[i];
    if (!f)
      return -1;
    if (f->t == F_MSG && json_is_array(v)) {
      size_t i;
      const json_t *e;
      json_array_foreach(v, i, e) if (value(e, f, b)) return -1;
    } else if (!json_is_null(v) && value(v, f, b)) {
      return -1;
    }
  }
  return 0;
}

int im_otlp_pb_encode(const json_t *doc, struct im_buf *out) {
  return encode_msg(doc, &export_request, out);
}
