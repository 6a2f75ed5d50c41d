/* Fuzz target for the streaming-response parser (src/proto/sse.c and
 * src/proto/oai_chunk.c).
 *
 * Input: byte 0 picks the limits (small ones reach IM_LIMIT) and byte 1
 * seeds the split points; the rest is the stream. Checks:
 *   - the stream fed whole and fed in data-dependent pieces gives the same
 *     events, comments and errors (a hash of everything delivered);
 *   - every event's data is decoded as a chunk by the hand-written scanner
 *     and by the jansson reference: whenever jansson accepts it, the scanner
 *     must too, with the same fields;
 *   - the whole stream is also decoded directly as one chunk (a JSON fuzzer
 *     for the scanner that needs no "data:" framing). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/oai_chunk.h"
#include "proto/sse.h"
#include "fuzz.h"

struct ctx {
  uint64_t hash;
  size_t events;
  struct im_oai_chunk mine, ref;
};

static uint64_t mix(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ s[i]) * 0x100000001b3ULL; /* FNV-1a 64 */
  return h;
}

static int same(struct im_oai_str a, struct im_oai_str b) {
  if (!a.ptr || !b.ptr)
    return !a.ptr && !b.ptr;
  return a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0;
}

static void check_chunk(struct ctx *c, const char *s, size_t n) {
  enum im_err e = im_oai_chunk_decode(&c->mine, s, n);
  enum im_err ej = im__oai_chunk_decode_jansson(&c->ref, s, n);
  REQUIRE(e == IM_OK || e == IM_PARSE || e == IM_LIMIT);
  if (e == IM_OK) {
    const struct im_oai_chunk *m = &c->mine;
    /* Touch every string so ASan sees a bad pointer. */
    const struct im_oai_str *strs[] = {&m->content,     &m->text,          &m->reasoning,
                                       &m->role,        &m->finish_reason, &m->tool_calls_json,
                                       &m->err_message, &m->err_type,      &m->err_code,
                                       &m->logprobs_json};
    uint64_t h = 0;
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
      if (strs[i]->ptr)
        h = mix(h, strs[i]->ptr, strs[i]->len);
    (void)h;
  }
  if (ej != IM_OK || e == IM_LIMIT)
    return;
  /* jansson 2.14 skips a raw NUL byte between tokens ({"a":1<NUL>}), which
   * RFC 8259 does not allow; the scanner rejects it. Found by this target. */
  if (e == IM_PARSE && memchr(s, '\0', n))
    return;
  REQUIRE(e == IM_OK);
  const struct im_oai_chunk *m = &c->mine, *r = &c->ref;
  REQUIRE(m->kind == r->kind);
  REQUIRE(m->cls == r->cls);
  REQUIRE(m->object == r->object);
  REQUIRE(m->n_choices == r->n_choices);
  REQUIRE(m->has_choice == r->has_choice);
  REQUIRE(same(m->content, r->content));
  REQUIRE(same(m->text, r->text));
  REQUIRE(same(m->reasoning, r->reasoning));
  REQUIRE(same(m->role, r->role));
  REQUIRE(same(m->finish_reason, r->finish_reason));
  REQUIRE(m->n_tool_calls == r->n_tool_calls);
  REQUIRE(m->has_usage == r->has_usage);
  REQUIRE(memcmp(&m->usage, &r->usage, sizeof m->usage) == 0);
  REQUIRE(m->has_timings == r->has_timings);
  REQUIRE(memcmp(&m->timings, &r->timings, sizeof m->timings) == 0);
  REQUIRE(same(m->err_message, r->err_message));
  REQUIRE(same(m->err_type, r->err_type));
  REQUIRE(m->err_code_num == r->err_code_num);
  if (r->err_code.ptr)
    REQUIRE(same(m->err_code, r->err_code));
}

static enum im_err on_event(void *ud, const struct im_sse_event *ev) {
  struct ctx *c = ud;
  c->events++;
  unsigned char k = (unsigned char)ev->kind;
  c->hash = mix(c->hash, &k, 1);
  c->hash = mix(c->hash, ev->data, ev->data_len);
  c->hash = mix(c->hash, "|", 1);
  c->hash = mix(c->hash, ev->type, ev->type_len);
  c->hash = mix(c->hash, "|", 1);
  c->hash = mix(c->hash, ev->id, ev->id_len);
  c->hash = mix(c->hash, &ev->retry_ms, sizeof ev->retry_ms);
  if (ev->kind == IM_SSE_EVENT) {
    REQUIRE(ev->data[ev->data_len] == '\0');
    check_chunk(c, ev->data, ev->data_len);
  }
  return IM_OK;
}

/* Feeds s in pieces whose sizes come from a xorshift seeded by seed (0:
 * whole); returns the first error, then im_sse_finish's result in *fin. */
static enum im_err run(struct ctx *c, const struct im_sse_limits *lim, const char *s, size_t n,
                       unsigned seed, enum im_err *fin) {
  struct im_sse p;
  im_sse_init(&p, lim, on_event, c);
  c->hash = 0xcbf29ce484222325ULL;
  c->events = 0;
  enum im_err err = IM_OK;
  uint32_t x = seed * 2654435761u + 1;
  size_t at = 0;
  while (at < n && !err) {
    size_t k = n - at;
    if (seed) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      size_t cut = (x & 3) == 0 ? 1 : (x >> 8) % 64;
      if (cut < k)
        k = cut;
    }
    err = im_sse_feed(&p, s + at, k);
    at += k;
  }
  *fin = err ? im_sse_feed(&p, "", 0) : im_sse_finish(&p);
  if (err)
    REQUIRE(*fin == IM_STATE);
  im_sse_cleanup(&p);
  return err;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  struct im_sse_limits small = {.max_line = 48, .max_data = 96};
  const struct im_sse_limits *lim = data[0] & 1 ? &small : NULL;
  unsigned seed = data[1] ? data[1] : 1;
  const char *s = (const char *)data + 2;
  size_t n = size - 2;

  struct ctx c;
  memset(&c, 0, sizeof c);
  im_oai_chunk_init(&c.mine, 0);
  im_oai_chunk_init(&c.ref, 0);

  enum im_err fin1, fin2;
  enum im_err e1 = run(&c, lim, s, n, 0, &fin1);
  uint64_t h1 = c.hash;
  size_t n1 = c.events;
  enum im_err e2 = run(&c, lim, s, n, seed, &fin2);
  REQUIRE(e1 == e2);
  REQUIRE(fin1 == fin2);
  REQUIRE(n1 == c.events);
  REQUIRE(h1 == c.hash);

  check_chunk(&c, s, n);

  im_oai_chunk_cleanup(&c.mine);
  im_oai_chunk_cleanup(&c.ref);
  return 0;
}
