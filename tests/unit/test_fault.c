#include <stdint.h>
#include <string.h>

#include "check.h"
#include "serve/fault.h"

static struct im_fault parse_ok(const char *spec) {
  struct im_fault f;
  char msg[256] = "";
  memset(&f, 0xAB, sizeof f);
  enum im_err err = im_fault_parse(spec, &f, msg, sizeof msg);
  CHECK_EQ(err, IM_OK);
  if (err != IM_OK)
    fprintf(stderr, "  spec '%s': %s\n", spec, msg);
  return f;
}

/* Expects IM_INVAL with a message that contains want. */
static void parse_bad(const char *spec, const char *want) {
  struct im_fault f;
  char msg[256] = "";
  CHECK_EQ(im_fault_parse(spec, &f, msg, sizeof msg), IM_INVAL);
  CHECK(strstr(msg, want) != NULL);
  if (!strstr(msg, want))
    fprintf(stderr, "  spec '%s': message \"%s\" lacks \"%s\"\n", spec, msg, want);
}

static void test_kinds(void) {
  struct im_fault f = parse_ok("429");
  CHECK_EQ(f.kind, IM_FAULT_429);
  CHECK_NEAR(f.prob, 1.0, 0);
  CHECK_EQ(f.retry_after_s, 1);
  CHECK_EQ(f.from_ns, 0);
  CHECK_EQ(f.to_ns, -1);

  f = parse_ok("429:0.25@retry_after=7");
  CHECK_NEAR(f.prob, 0.25, 1e-15);
  CHECK_EQ(f.retry_after_s, 7);

  f = parse_ok("503:0.1");
  CHECK_EQ(f.kind, IM_FAULT_503);
  CHECK_EQ(f.retry_after_s, 0);
  CHECK_EQ(parse_ok("503@retry_after=3").retry_after_s, 3);
  CHECK_EQ(parse_ok("500:0.01").kind, IM_FAULT_500);
  CHECK_EQ(parse_ok("400").kind, IM_FAULT_400);

  f = parse_ok("reset:0.5");
  CHECK_EQ(f.kind, IM_FAULT_RESET);
  CHECK_EQ(f.after_tokens, 0);
  CHECK_EQ(parse_ok("reset@after_tokens=12").after_tokens, 12);

  f = parse_ok("fin:0.2@after_tokens=5");
  CHECK_EQ(f.kind, IM_FAULT_FIN);
  CHECK_EQ(f.after_tokens, 5);
  f = parse_ok("error-event@after_tokens=3");
  CHECK_EQ(f.kind, IM_FAULT_ERROR_EVENT);
  CHECK_EQ(f.after_tokens, 3);

  f = parse_ok("stall:0.3@token=10,ms=2000");
  CHECK_EQ(f.kind, IM_FAULT_STALL);
  CHECK_EQ(f.token, 10);
  CHECK_EQ(f.ms_ns, 2000000000LL);
  CHECK_EQ(parse_ok("slow@ms=2.5").ms_ns, 2500000);

  f = parse_ok("hiccup@every=30s,ms=500");
  CHECK_EQ(f.kind, IM_FAULT_HICCUP);
  CHECK_EQ(f.every_ns, 30000000000LL);
  CHECK_EQ(f.ms_ns, 500000000);
  CHECK_EQ(parse_ok("hiccup@every=250ms,ms=10").every_ns, 250000000);

  f = parse_ok("connection-close:0.5");
  CHECK_EQ(f.kind, IM_FAULT_CONNECTION_CLOSE);
  CHECK_NEAR(f.prob, 0.5, 0);

  f = parse_ok("kv-shrink@at=60s,fraction=0.25");
  CHECK_EQ(f.kind, IM_FAULT_KV_SHRINK);
  CHECK_EQ(f.at_ns, 60000000000LL);
  CHECK_NEAR(f.fraction, 0.25, 0);

  /* Windows, spaces, case, key order. */
  f = parse_ok("  Reset:0.1@to=20s, from=500ms ,after_tokens=4 ");
  CHECK_EQ(f.kind, IM_FAULT_RESET);
  CHECK_EQ(f.from_ns, 500000000);
  CHECK_EQ(f.to_ns, 20000000000LL);
  CHECK_EQ(f.after_tokens, 4);
  CHECK_NEAR(parse_ok("500:0").prob, 0.0, 0);
  CHECK_NEAR(parse_ok("500:1").prob, 1.0, 0);

  for (int k = 0; k < IM_FAULT_KIND_COUNT; k++)
    CHECK(strcmp(im_fault_kind_name((enum im_fault_kind)k), "unknown") != 0);
  CHECK_STR(im_fault_kind_name(IM_FAULT_ERROR_EVENT), "error-event");
  CHECK_STR(im_fault_kind_name(IM_FAULT_KIND_COUNT), "unknown");
}

static void test_errors(void) {
  parse_bad("rest", "unknown fault kind 'rest'");
  parse_bad("rest", "connection-close"); /* lists the kinds */
  parse_bad("", "empty fault kind");
  parse_bad(":0.5", "empty fault kind");
  parse_bad("429:1.5", "probability '1.5'");
  parse_bad("429:1.5", "outside 0 to 1");
  parse_bad("429:-0.1", "outside 0 to 1");
  parse_bad("429:abc", "'abc' of fault '429' is not a number");
  parse_bad("429:", "is not a number");
  parse_bad("429:0.5x", "not a number");
  parse_bad("429:nan", "not a number");
  parse_bad("reset@colour=red", "unknown key 'colour'");
  parse_bad("reset@colour=red", "after_tokens"); /* says what it takes */
  parse_bad("reset@ms=5", "key 'ms' is not valid for fault 'reset'");
  parse_bad("429@after_tokens=1", "not valid for fault '429'");
  parse_bad("hiccup@ms=100", "fault 'hiccup' needs 'every'");
  parse_bad("hiccup@every=10s", "needs 'ms'");
  parse_bad("hiccup", "needs 'every', 'ms'");
  parse_bad("stall@ms=10", "needs 'token'");
  parse_bad("slow", "needs 'ms'");
  parse_bad("kv-shrink@at=5s", "needs 'fraction'");
  parse_bad("fin", "needs 'after_tokens'");
  parse_bad("reset@after_tokens=-1", "'after_tokens' needs a non-negative integer");
  parse_bad("reset@after_tokens=2.5", "non-negative integer");
  parse_bad("stall@token=x,ms=1", "'token' needs a non-negative integer, got 'x'");
  parse_bad("slow@ms=500ms", "'ms' needs a number of milliseconds");
  parse_bad("slow@ms=-3", "'ms' needs");
  parse_bad("hiccup@every=often,ms=3", "'every' needs a duration");
  parse_bad("hiccup@every=0s,ms=3", "'every' must be longer than 0");
  parse_bad("429@from=soon", "'from' needs a duration");
  parse_bad("429@from=10s,to=5s", "'to' must be later than 'from'");
  parse_bad("kv-shrink@at=1s,fraction=1.5", "'fraction' needs");
  parse_bad("kv-shrink@at=1s,fraction=0", "'fraction' needs");
  parse_bad("429@retry_after=1e9", "'retry_after' needs");
  parse_bad("429@retry_after", "is not key=value");
  parse_bad("429@", "nothing after '@'");
  parse_bad("slow@ms=1,ms=2", "given twice");
  char longspec[700];
  memset(longspec, 'a', sizeof longspec - 1);
  longspec[sizeof longspec - 1] = '\0';
  parse_bad(longspec, "longer than");

  /* A NULL message buffer is allowed; the output is untouched on error. */
  struct im_fault f = {.kind = IM_FAULT_SLOW, .ms_ns = 42};
  CHECK_EQ(im_fault_parse("bogus", &f, NULL, 0), IM_INVAL);
  CHECK_EQ(f.ms_ns, 42);
  char tiny[8];
  CHECK_EQ(im_fault_parse("bogus", &f, tiny, sizeof tiny), IM_INVAL);
  CHECK_EQ(strlen(tiny), 7);
}

static int draw_count(const char *spec, int n, uint64_t seed, int64_t now_ns) {
  struct im_fault f = parse_ok(spec);
  struct im_rng rng;
  struct im_fault_plan plan;
  int hits = 0;
  im_rng_seed(&rng, seed);
  for (int k = 0; k < n; k++) {
    im_fault_plan_request(&f, 1, &rng, now_ns, &plan);
    hits += plan.applied != 0;
  }
  return hits;
}

static void test_plans(void) {
  CHECK_EQ(draw_count("500:0", 10000, 1, 0), 0);
  CHECK_EQ(draw_count("500:1", 10000, 1, 0), 10000);
  /* Binomial(10000, 0.3): sd about 46; 5 sd either side. */
  int hits = draw_count("reset:0.3", 10000, 2, 0);
  CHECK_NEAR(hits, 3000, 230);

  /* Windows: [from, to). */
  CHECK_EQ(draw_count("500@from=10s,to=20s", 10, 1, 9999999999LL), 0);
  CHECK_EQ(draw_count("500@from=10s,to=20s", 10, 1, 10000000000LL), 10);
  CHECK_EQ(draw_count("500@from=10s,to=20s", 10, 1, 19999999999LL), 10);
  CHECK_EQ(draw_count("500@from=10s,to=20s", 10, 1, 20000000000LL), 0);
  CHECK_EQ(draw_count("500@from=10s", 10, 1, 3600000000000LL), 10);

  /* Fields of each kind, and what "none" looks like. */
  struct im_fault fs[8];
  struct im_rng rng;
  struct im_fault_plan plan;
  im_rng_seed(&rng, 3);
  im_fault_plan_none(&plan);
  CHECK_EQ(plan.status, 0);
  CHECK_EQ(plan.reset_after, -1);
  CHECK_EQ(plan.fin_after, -1);
  CHECK_EQ(plan.error_after, -1);
  CHECK_EQ(plan.stall_token, -1);
  CHECK_EQ(plan.slow_ns, 0);
  CHECK_EQ(plan.applied, 0);

  /* First drawn status fault wins; other kinds add up. */
  fs[0] = parse_ok("503:0");             /* never drawn */
  fs[1] = parse_ok("429@retry_after=4"); /* wins */
  fs[2] = parse_ok("500");               /* drawn but too late */
  fs[3] = parse_ok("stall@token=3,ms=250");
  fs[4] = parse_ok("slow@ms=20");
  fs[5] = parse_ok("fin@after_tokens=9");
  fs[6] = parse_ok("hiccup@every=1s,ms=5"); /* engine-wide: ignored */
  fs[7] = parse_ok("kv-shrink@at=0s,fraction=0.5");
  im_fault_plan_request(fs, 8, &rng, 0, &plan);
  CHECK_EQ(plan.status, 429);
  CHECK_EQ(plan.retry_after_s, 4);
  CHECK_EQ(plan.stall_token, 3);
  CHECK_EQ(plan.stall_ns, 250000000);
  CHECK_EQ(plan.slow_ns, 20000000);
  CHECK_EQ(plan.fin_after, 9);
  CHECK_EQ(plan.reset_after, -1);
  CHECK_EQ(plan.error_after, -1);
  CHECK_EQ(plan.applied, (1u << IM_FAULT_429) | (1u << IM_FAULT_STALL) | (1u << IM_FAULT_SLOW) |
                             (1u << IM_FAULT_FIN));

  /* Engine-wide kinds never show up in a request plan. */
  fs[0] = parse_ok("hiccup@every=1s,ms=5");
  fs[1] = parse_ok("connection-close");
  fs[2] = parse_ok("kv-shrink@at=1s,fraction=0.5");
  im_fault_plan_request(fs, 3, &rng, 5000000000LL, &plan);
  CHECK_EQ(plan.applied, 0);
  CHECK_EQ(plan.status, 0);
  CHECK(im_fault_in_window(&fs[0], 0));

  /* Certain faults draw nothing from the stream. */
  struct im_rng a, b;
  im_rng_seed(&a, 9);
  im_rng_seed(&b, 9);
  fs[0] = parse_ok("500");
  fs[1] = parse_ok("400:0");
  im_fault_plan_request(fs, 2, &a, 0, &plan);
  CHECK_EQ(im_rng_u64(&a), im_rng_u64(&b));

  /* Deterministic for a seed. */
  fs[0] = parse_ok("reset:0.5@after_tokens=1");
  fs[1] = parse_ok("503:0.5");
  uint32_t seq1 = 0, seq2 = 0;
  im_rng_seed(&a, 77);
  im_rng_seed(&b, 77);
  for (int k = 0; k < 16; k++) {
    im_fault_plan_request(fs, 2, &a, 0, &plan);
    seq1 = seq1 * 4 + plan.applied % 7;
    im_fault_plan_request(fs, 2, &b, 0, &plan);
    seq2 = seq2 * 4 + plan.applied % 7;
  }
  CHECK_EQ(seq1, seq2);
}

static void test_header(void) {
  struct im_fault fs[2];
  struct im_rng rng;
  struct im_fault_plan plan;
  char msg[256];
  im_rng_seed(&rng, 1);
  fs[0] = parse_ok("503@retry_after=2");
  fs[1] = parse_ok("slow@ms=10");
  im_fault_plan_request(fs, 2, &rng, 0, &plan);
  CHECK_EQ(plan.status, 503);

  /* Probability in the header is ignored (forced to 1); the header status
   * replaces the drawn one, other drawn effects stay. */
  const char *h = "429:0@retry_after=9";
  CHECK_OK(im_fault_plan_header(h, strlen(h), &plan, msg, sizeof msg));
  CHECK_EQ(plan.status, 429);
  CHECK_EQ(plan.retry_after_s, 9);
  CHECK_EQ(plan.slow_ns, 10000000);
  CHECK(plan.applied & (1u << IM_FAULT_429));
  CHECK(!(plan.applied & (1u << IM_FAULT_503)));
  CHECK(plan.applied & (1u << IM_FAULT_SLOW));

  h = "reset@after_tokens=5 trailing bytes not part of the value";
  CHECK_OK(im_fault_plan_header(h, strlen("reset@after_tokens=5"), &plan, msg, sizeof msg));
  CHECK_EQ(plan.reset_after, 5);
  h = "slow@ms=99";
  CHECK_OK(im_fault_plan_header(h, strlen(h), &plan, msg, sizeof msg));
  CHECK_EQ(plan.slow_ns, 99000000);
  h = "connection-close";
  CHECK_OK(im_fault_plan_header(h, strlen(h), &plan, msg, sizeof msg));
  CHECK(plan.applied & (1u << IM_FAULT_CONNECTION_CLOSE));

  /* Errors leave the plan unchanged. */
  struct im_fault_plan before = plan;
  h = "hiccup@every=1s,ms=3";
  CHECK_EQ(im_fault_plan_header(h, strlen(h), &plan, msg, sizeof msg), IM_INVAL);
  CHECK(strstr(msg, "engine-wide") != NULL);
  h = "500@from=1s";
  CHECK_EQ(im_fault_plan_header(h, strlen(h), &plan, msg, sizeof msg), IM_INVAL);
  CHECK(strstr(msg, "'from' is not valid in a fault header") != NULL);
  h = "reset@after_tokens=oops";
  CHECK_EQ(im_fault_plan_header(h, strlen(h), &plan, msg, sizeof msg), IM_INVAL);
  CHECK(strstr(msg, "'after_tokens'") != NULL);
  CHECK(memcmp(&before, &plan, sizeof plan) == 0);
  static char big[1000];
  memset(big, 'x', sizeof big);
  CHECK_EQ(im_fault_plan_header(big, sizeof big, &plan, msg, sizeof msg), IM_INVAL);
  CHECK_EQ(im_fault_plan_header("5\0003", 3, &plan, msg, sizeof msg), IM_INVAL);
}

int main(void) {
  test_kinds();
  test_errors();
  test_plans();
  test_header();
  return CHECK_DONE();
}
