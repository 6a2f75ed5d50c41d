/* Fault specs: parsing and per-request plans.
 *
 * A spec is copied into a bounded local buffer and cut in place with NULs,
 * so values can go straight to strtod/strtoll/im_parse_duration. Every error
 * message names the part at fault and what would be accepted. */
#include "serve/fault.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"

#define SPEC_MAX 512 /* longest spec accepted, in bytes */

static const char *const kind_names[IM_FAULT_KIND_COUNT] = {
    [IM_FAULT_429] = "429",
    [IM_FAULT_503] = "503",
    [IM_FAULT_500] = "500",
    [IM_FAULT_400] = "400",
    [IM_FAULT_RESET] = "reset",
    [IM_FAULT_FIN] = "fin",
    [IM_FAULT_ERROR_EVENT] = "error-event",
    [IM_FAULT_STALL] = "stall",
    [IM_FAULT_SLOW] = "slow",
    [IM_FAULT_HICCUP] = "hiccup",
    [IM_FAULT_CONNECTION_CLOSE] = "connection-close",
    [IM_FAULT_KV_SHRINK] = "kv-shrink",
};

#define KIND_LIST                                                                                  \
  "429, 503, 500, 400, reset, fin, error-event, stall, slow, hiccup, connection-close, kv-shrink"

/* In the order messages list them. */
enum key {
  K_FROM,
  K_TO,
  K_RETRY_AFTER,
  K_AFTER_TOKENS,
  K_TOKEN,
  K_EVERY,
  K_AT,
  K_MS,
  K_FRACTION,
  K_COUNT
};

static const char *const key_names[K_COUNT] = {
    [K_FROM] = "from",
    [K_TO] = "to",
    [K_RETRY_AFTER] = "retry_after",
    [K_AFTER_TOKENS] = "after_tokens",
    [K_TOKEN] = "token",
    [K_MS] = "ms",
    [K_EVERY] = "every",
    [K_AT] = "at",
    [K_FRACTION] = "fraction",
};

#define B(k) (1u << (k))
#define WINDOW (B(K_FROM) | B(K_TO))

/* Keys each kind takes, those it requires (the header's keys without a
 * default), and a usage example for messages. */
static const struct {
  unsigned allowed, required;
  const char *usage;
} kinds[IM_FAULT_KIND_COUNT] = {
    [IM_FAULT_429] = {WINDOW | B(K_RETRY_AFTER), 0, "429:0.1@retry_after=2"},
    [IM_FAULT_503] = {WINDOW | B(K_RETRY_AFTER), 0, "503:0.1@retry_after=5"},
    [IM_FAULT_500] = {WINDOW, 0, "500:0.01"},
    [IM_FAULT_400] = {WINDOW, 0, "400:0.01"},
    [IM_FAULT_RESET] = {WINDOW | B(K_AFTER_TOKENS), 0, "reset:0.05@after_tokens=20"},
    [IM_FAULT_FIN] = {WINDOW | B(K_AFTER_TOKENS), B(K_AFTER_TOKENS), "fin:0.05@after_tokens=20"},
    [IM_FAULT_ERROR_EVENT] = {WINDOW | B(K_AFTER_TOKENS), B(K_AFTER_TOKENS),
                              "error-event:0.05@after_tokens=20"},
    [IM_FAULT_STALL] = {WINDOW | B(K_TOKEN) | B(K_MS), B(K_TOKEN) | B(K_MS),
                        "stall:0.1@token=10,ms=2000"},
    [IM_FAULT_SLOW] = {WINDOW | B(K_MS), B(K_MS), "slow:0.1@ms=50"},
    [IM_FAULT_HICCUP] = {WINDOW | B(K_EVERY) | B(K_MS), B(K_EVERY) | B(K_MS),
                         "hiccup@every=30s,ms=500"},
    [IM_FAULT_CONNECTION_CLOSE] = {WINDOW | B(K_MS), 0, "connection-close:0.5@ms=20"},
    [IM_FAULT_KV_SHRINK] = {WINDOW | B(K_AT) | B(K_FRACTION), B(K_AT) | B(K_FRACTION),
                            "kv-shrink@at=60s,fraction=0.5"},
};

/* Caps on integer values: far beyond any sensible setting, and low enough
 * that nothing downstream overflows when converting to ns. */
#define RETRY_AFTER_MAX 86400
#define TOKENS_MAX 1000000000LL
#define MS_MAX 1e9

__attribute__((format(printf, 3, 4))) static void say(char *msg, size_t msg_len, const char *fmt,
                                                      ...) {
  if (!msg || msg_len == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, msg_len, fmt, ap);
  va_end(ap);
}

const char *im_fault_kind_name(enum im_fault_kind kind) {
  return (unsigned)kind < IM_FAULT_KIND_COUNT ? kind_names[kind] : "unknown";
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
    s[--n] = '\0';
  return s;
}

/* "after_tokens, from, to": the keys a kind takes, for messages. */
static void list_keys(unsigned allowed, char *out, size_t cap) {
  size_t off = 0;
  out[0] = '\0';
  for (int k = 0; k < K_COUNT; k++) {
    if (!(allowed & B(k)))
      continue;
    int w = snprintf(out + off, cap - off, "%s'%s'", off ? ", " : "", key_names[k]);
    if (w < 0 || (size_t)w >= cap - off)
      return;
    off += (size_t)w;
  }
}

static bool parse_number(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end != '\0' || errno || !isfinite(v))
    return false;
  *out = v;
  return true;
}

static bool parse_count(const char *s, long long max, int64_t *out) {
  char *end;
  if (*s < '0' || *s > '9') /* no sign, no space */
    return false;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*end != '\0' || errno || v > max)
    return false;
  *out = v;
  return true;
}

/* One key=value into f. */
static enum im_err parse_value(struct im_fault *f, enum key key, const char *val, char *msg,
                               size_t msg_len) {
  const char *name = key_names[key];
  int64_t n = 0;
  double x = 0;
  switch (key) {
  case K_FROM:
  case K_TO:
  case K_EVERY:
  case K_AT:
    if (im_parse_duration(val, &n) != 0) {
      say(msg, msg_len, "'%s' needs a duration such as 500ms or 30s, got '%s'", name, val);
      return IM_INVAL;
    }
    if (key == K_EVERY && n <= 0) {
      say(msg, msg_len, "'every' must be longer than 0, got '%s'", val);
      return IM_INVAL;
    }
    *(key == K_FROM    ? &f->from_ns
      : key == K_TO    ? &f->to_ns
      : key == K_EVERY ? &f->every_ns
                       : &f->at_ns) = n;
    return IM_OK;
  case K_MS:
    if (!parse_number(val, &x) || x < 0 || x > MS_MAX) {
      say(msg, msg_len, "'ms' needs a number of milliseconds such as ms=250, got '%s'", val);
      return IM_INVAL;
    }
    f->ms_ns = (int64_t)llround(x * 1e6);
    return IM_OK;
  case K_FRACTION:
    if (!parse_number(val, &x) || !(x > 0) || x > 1) {
      say(msg, msg_len, "'fraction' needs a number above 0 and at most 1, got '%s'", val);
      return IM_INVAL;
    }
    f->fraction = x;
    return IM_OK;
  case K_RETRY_AFTER:
    if (!parse_count(val, RETRY_AFTER_MAX, &n)) {
      say(msg, msg_len, "'retry_after' needs a whole number of seconds from 0 to %d, got '%s'",
          RETRY_AFTER_MAX, val);
      return IM_INVAL;
    }
    f->retry_after_s = (int)n;
    return IM_OK;
  case K_AFTER_TOKENS:
  case K_TOKEN:
    if (!parse_count(val, TOKENS_MAX, &n)) {
      say(msg, msg_len, "'%s' needs a non-negative integer, got '%s'", name, val);
      return IM_INVAL;
    }
    *(key == K_TOKEN ? &f->token : &f->after_tokens) = n;
    return IM_OK;
  default:
    return IM_INVAL;
  }
}

static enum im_err parse_keys(struct im_fault *f, char *list, unsigned *given, char *msg,
                              size_t msg_len) {
  const char *kname = kind_names[f->kind];
  unsigned allowed = kinds[f->kind].allowed;
  char takes[128];
  list_keys(allowed, takes, sizeof takes);
  for (char *save = NULL, *item = strtok_r(list, ",", &save); item;
       item = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(item, '=');
    if (!eq) {
      say(msg, msg_len, "'%s' in fault '%s' is not key=value (it takes: %s)", trim(item), kname,
          takes);
      return IM_INVAL;
    }
    *eq = '\0';
    char *k = trim(item), *v = trim(eq + 1);
    int key = 0;
    while (key < K_COUNT && strcmp(k, key_names[key]) != 0)
      key++;
    if (key == K_COUNT) {
      say(msg, msg_len, "unknown key '%s' in fault '%s' (it takes: %s)", k, kname, takes);
      return IM_INVAL;
    }
    if (!(allowed & B(key))) {
      say(msg, msg_len, "key '%s' is not valid for fault '%s' (it takes: %s)", k, kname, takes);
      return IM_INVAL;
    }
    if (*given & B(key)) {
      say(msg, msg_len, "key '%s' given twice in fault '%s'", k, kname);
      return IM_INVAL;
    }
    *given |= B(key);
    enum im_err err = parse_value(f, (enum key)key, v, msg, msg_len);
    if (err != IM_OK)
      return err;
  }
  return IM_OK;
}

/* Parses spec into *out; *given receives the keys that were set. */
static enum im_err parse_spec(const char *spec, struct im_fault *out, unsigned *given, char *msg,
                              size_t msg_len) {
  char buf[SPEC_MAX + 1];
  *given = 0;
  if (!spec || !out) {
    say(msg, msg_len, "no fault spec given");
    return IM_INVAL;
  }
  size_t len = strlen(spec);
  if (len > SPEC_MAX) {
    say(msg, msg_len, "fault spec is longer than %d bytes", SPEC_MAX);
    return IM_INVAL;
  }
  memcpy(buf, spec, len + 1);
  char *head = trim(buf), *keys = strchr(head, '@'), *prob = NULL;
  if (keys)
    *keys++ = '\0';
  if ((prob = strchr(head, ':')))
    *prob++ = '\0';
  head = trim(head);
  if (*head == '\0') {
    say(msg, msg_len, "empty fault kind in '%s' (expected KIND[:PROBABILITY][@key=value,...])",
        spec);
    return IM_INVAL;
  }

  struct im_fault f = {.prob = 1.0, .to_ns = -1, .fraction = 1.0};
  int kind = 0;
  while (kind < IM_FAULT_KIND_COUNT && strcasecmp(head, kind_names[kind]) != 0)
    kind++;
  if (kind == IM_FAULT_KIND_COUNT) {
    say(msg, msg_len, "unknown fault kind '%s' (expected one of " KIND_LIST ")", head);
    return IM_INVAL;
  }
  f.kind = (enum im_fault_kind)kind;
  f.retry_after_s = kind == IM_FAULT_429 ? 1 : 0;

  if (prob) {
    prob = trim(prob);
    double p;
    if (!parse_number(prob, &p)) {
      say(msg, msg_len,
          "probability '%s' of fault '%s' is not a number (expected 0 to 1, e.g. 0.05)", prob,
          kind_names[kind]);
      return IM_INVAL;
    }
    if (p < 0 || p > 1) {
      say(msg, msg_len, "probability '%s' of fault '%s' is outside 0 to 1", prob, kind_names[kind]);
      return IM_INVAL;
    }
    f.prob = p;
  }
  if (keys) {
    if (*trim(keys) == '\0') {
      say(msg, msg_len, "nothing after '@' in fault '%s' (e.g. %s)", kind_names[kind],
          kinds[kind].usage);
      return IM_INVAL;
    }
    enum im_err err = parse_keys(&f, keys, given, msg, msg_len);
    if (err != IM_OK)
      return err;
  }
  unsigned missing = kinds[kind].required & ~*given;
  if (missing) {
    char names[128];
    list_keys(missing, names, sizeof names);
    say(msg, msg_len, "fault '%s' needs %s (e.g. %s)", kind_names[kind], names, kinds[kind].usage);
    return IM_INVAL;
  }
  if (f.to_ns >= 0 && f.to_ns <= f.from_ns) {
    say(msg, msg_len, "'to' must be later than 'from' in fault '%s'", kind_names[kind]);
    return IM_INVAL;
  }
  *out = f;
  return IM_OK;
}

enum im_err im_fault_parse(const char *spec, struct im_fault *out, char *msg, size_t msg_len) {
  unsigned given;
  return parse_spec(spec, out, &given, msg, msg_len);
}

bool im_fault_in_window(const struct im_fault *f, int64_t now_ns) {
  return now_ns >= f->from_ns && (f->to_ns < 0 || now_ns < f->to_ns);
}

void im_fault_plan_none(struct im_fault_plan *plan) {
  *plan = (struct im_fault_plan){
      .reset_after = -1, .fin_after = -1, .error_after = -1, .stall_token = -1};
}

static bool is_status(enum im_fault_kind k) {
  return k == IM_FAULT_429 || k == IM_FAULT_503 || k == IM_FAULT_500 || k == IM_FAULT_400;
}

/* Puts one fault into the plan. Drawn faults fill only what is still
 * unset (the first drawn fault of each effect wins); a header fault
 * (override) replaces it. */
static void apply(struct im_fault_plan *plan, const struct im_fault *f, bool override) {
  static const int status_of[] = {
      [IM_FAULT_429] = 429, [IM_FAULT_503] = 503, [IM_FAULT_500] = 500, [IM_FAULT_400] = 400};
  switch (f->kind) {
  case IM_FAULT_429:
  case IM_FAULT_503:
  case IM_FAULT_500:
  case IM_FAULT_400:
    if (!override && plan->status != 0)
      return;
    /* Only one status is answered: a replaced one no longer applies. */
    for (int k = 0; k < IM_FAULT_KIND_COUNT; k++)
      if (is_status((enum im_fault_kind)k))
        plan->applied &= ~(1u << k);
    plan->status = status_of[f->kind];
    plan->retry_after_s = f->retry_after_s;
    break;
  case IM_FAULT_RESET:
    if (!override && plan->reset_after >= 0)
      return;
    plan->reset_after = f->after_tokens;
    break;
  case IM_FAULT_FIN:
    if (!override && plan->fin_after >= 0)
      return;
    plan->fin_after = f->after_tokens;
    break;
  case IM_FAULT_ERROR_EVENT:
    if (!override && plan->error_after >= 0)
      return;
    plan->error_after = f->after_tokens;
    break;
  case IM_FAULT_STALL:
    if (!override && plan->stall_token >= 0)
      return;
    plan->stall_token = f->token;
    plan->stall_ns = f->ms_ns;
    break;
  case IM_FAULT_SLOW:
    if (!override && plan->slow_ns > 0)
      return;
    plan->slow_ns = f->ms_ns;
    break;
  case IM_FAULT_CONNECTION_CLOSE: /* only from a header: this response */
    break;
  default:
    return;
  }
  plan->applied |= 1u << f->kind;
}

void im_fault_plan_request(const struct im_fault *faults, size_t n, struct im_rng *rng,
                           int64_t now_ns, struct im_fault_plan *plan) {
  im_fault_plan_none(plan);
  for (size_t i = 0; i < n; i++) {
    const struct im_fault *f = &faults[i];
    if (f->kind == IM_FAULT_HICCUP || f->kind == IM_FAULT_KV_SHRINK ||
        f->kind == IM_FAULT_CONNECTION_CLOSE || !im_fault_in_window(f, now_ns))
      continue;
    /* Certain outcomes draw nothing, so adding a fault with probability 1
     * does not shift the random stream of the others. */
    if (f->prob <= 0.0 || (f->prob < 1.0 && im_rng_uniform(rng) >= f->prob))
      continue;
    apply(plan, f, false);
  }
}

enum im_err im_fault_plan_header(const char *value, size_t len, struct im_fault_plan *plan,
                                 char *msg, size_t msg_len) {
  char buf[SPEC_MAX + 1];
  struct im_fault f;
  unsigned given;
  if (!value || len > SPEC_MAX) {
    say(msg, msg_len, "fault header value is longer than %d bytes", SPEC_MAX);
    return IM_INVAL;
  }
  memcpy(buf, value, len);
  buf[len] = '\0';
  if (memchr(buf, '\0', len)) {
    say(msg, msg_len, "fault header value contains a NUL byte");
    return IM_INVAL;
  }
  enum im_err err = parse_spec(buf, &f, &given, msg, msg_len);
  if (err != IM_OK)
    return err;
  if (f.kind == IM_FAULT_HICCUP || f.kind == IM_FAULT_KV_SHRINK) {
    say(msg, msg_len, "fault '%s' is engine-wide: give it with --fault, not in a request header",
        kind_names[f.kind]);
    return IM_INVAL;
  }
  if (given & WINDOW) {
    say(msg, msg_len, "'%s' is not valid in a fault header (time windows belong to --fault)",
        given & B(K_FROM) ? "from" : "to");
    return IM_INVAL;
  }
  f.prob = 1.0; /* a header asks for the fault on this request */
  apply(plan, &f, true);
  return IM_OK;
}
