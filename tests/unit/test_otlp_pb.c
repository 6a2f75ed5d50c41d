/* The OTLP protobuf encoder (export/otlp_pb.h) on small documents whose bytes
 * are worked out by hand from the wire format: tag = field << 3 | wire
 * type; varints 7 bits at a time, low first; fixed64 and double 8 bytes
 * little-endian; messages and packed fields length-delimited. */
#include <string.h>

#include "check.h"
#include "export/otlp_pb.h"

static size_t enc(const char *text, unsigned char *out, size_t cap, int *rc) {
  json_error_t e;
  json_t *doc = json_loads(text, 0, &e);
  struct im_buf b;
  im_buf_init(&b, 1 << 20);
  *rc = doc ? im_otlp_pb_encode(doc, &b) : -2;
  size_t n = b.len < cap ? b.len : cap;
  if (n)
    memcpy(out, b.data, n);
  im_buf_cleanup(&b);
  json_decref(doc);
  return n;
}

#define CHECK_BYTES(got, n, ...)                                             \
  do {                                                                       \
    static const unsigned char want[] = {__VA_ARGS__};                       \
    CHECK_EQ(n, sizeof want);                                                \
    CHECK(n == sizeof want && !memcmp(got, want, sizeof want));              \
  } while (0)

int main(void) {
  unsigned char b[256];
  int rc;
  /* ExportTraceServiceRequest.resource_spans (1) > ScopeSpans (2) > Span (2):
   * span_id (2, bytes 0a ff), kind (6, varint 3), start_time_unix_nano (7,
   * fixed64 258 = 0x102): 12 02 0a ff | 30 03 | 39 02 01 00 x6 = 15 bytes. */
  size_t n = enc("{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"spanId\":\"0aff\","
                 "\"kind\":3,\"startTimeUnixNano\":\"258\"}]}]}]}",
                 b, sizeof b, &rc);
  CHECK_EQ(rc, 0);
  CHECK_BYTES(b, n, 0x0a, 0x13, 0x12, 0x11, 0x12, 0x0f, 0x12, 0x02, 0x0a, 0xff, 0x30, 0x03, 0x39,
              0x02, 0x01, 0, 0, 0, 0, 0, 0);
  /* A string and a negative int64 (ten-byte varint) in an attribute of the
   * resource: KeyValue{key "k" (1), value (2) AnyValue{int_value (3) -1}}. */
  n = enc("{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"k\",\"value\":"
          "{\"intValue\":\"-1\"}}]}}]}",
          b, sizeof b, &rc);
  CHECK_EQ(rc, 0);
  CHECK_BYTES(b, n, 0x0a, 0x14, 0x0a, 0x12, 0x0a, 0x10, 0x0a, 0x01, 'k', 0x12, 0x0b, 0x18, 0xff,
              0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
  /* Metrics: Metric{name "m" (1), histogram (9){data_points (1)
   * {explicit_bounds (7) packed [1.0], bucket_counts (6) packed [2, 3]},
   * aggregation_temporality (2) 2}}. */
  n = enc("{\"resourceMetrics\":[{\"scopeMetrics\":[{\"metrics\":[{\"name\":\"m\",\"histogram\":"
          "{\"dataPoints\":[{\"explicitBounds\":[1.0],\"bucketCounts\":[\"2\",\"3\"]}],"
          "\"aggregationTemporality\":2}}]}]}]}",
          b, sizeof b, &rc);
  CHECK_EQ(rc, 0);
  CHECK_BYTES(b, n, 0x0a, 0x29, 0x12, 0x27, 0x12, 0x25, 0x0a, 0x01, 'm', 0x4a, 0x20, 0x0a, 0x1c,
              0x3a, 0x08, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x32, 0x10, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0,
              0, 0, 0, 0, 0, 0, 0x10, 0x02);
  /* What the messages do not have is refused, never dropped. */
  enc("{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"spanID\":\"00\"}]}]}]}", b, sizeof b,
      &rc);
  CHECK_EQ(rc, -1); /* a misspelt key */
  enc("{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"spanId\":\"0g\"}]}]}]}", b, sizeof b,
      &rc);
  CHECK_EQ(rc, -1); /* not hex */
  enc("{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"kind\":\"3\"}]}]}]}", b, sizeof b, &rc);
  CHECK_EQ(rc, -1); /* an enum as a string */
  enc("{\"resourceMetrics\":[{\"scopeMetrics\":[{\"metrics\":[{\"histogram\":{\"dataPoints\":"
      "[{\"count\":\"-5\"}]}}]}]}]}",
      b, sizeof b, &rc);
  CHECK_EQ(rc, -1); /* a negative fixed64 */
  return CHECK_DONE();
}
