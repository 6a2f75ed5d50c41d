/* sse_load: a closed-loop load client for SSE streaming completions, made to
 * saturate `infermeter serve` from one core without becoming the bottleneck.
 *
 * Usage:
 *   sse_load -p PORT [-c STREAMS] [-d SECONDS] [-w WARMUP_S] [-t MAX_TOKENS]
 *            [-r CONNECTS_PER_MS] [-q MAX_PENDING] [-T TAIL_S] [-R RAMP_MAX_S]
 *            [-m MODEL] [-P PROMPT]
 *
 *   -p PORT     server port on 127.0.0.1 (required; nothing else is contacted)
 *   -c N        concurrent streams = TCP connections (default 100)
 *   -d S        measurement window in seconds (default 10)
 *   -w S        warm-up after the last connection is up, before the window (default 2)
 *   -t M        max_tokens of every request (default 256)
 *   -r K        new connections per 1 ms tick during the ramp (default 16)
 *   -q Q        at most Q connections waiting for their first response head;
 *               keeps the ramp well under the listen backlog (default 256)
 *   -T S        keep the load on for S seconds after the window (default 0.5),
 *               so a script can snapshot the server while it is still loaded
 *   -R S        give up waiting for the ramp after S seconds (default 30)
 *   -m MODEL    "model" field (default: omitted, the server's own)
 *   -P PROMPT   prompt text (default a short sentence; JSON-escaped by you)
 *
 * Every connection sends POST /v1/completions (HTTP/1.1 keep-alive,
 * "stream":true,"ignore_eos":true) and, as soon as the response's last chunk
 * arrives, the next request on the same connection: N streams are always in
 * flight. A connection that fails is reopened. Responses are parsed as any SSE
 * client would: HTTP chunked framing, then event-stream lines ending in CR,
 * LF or CRLF, fields split at the first colon, one optional space stripped,
 * data lines joined by LF, an event dispatched on a blank line; every piece
 * may be split across reads at any byte. An event whose data is a JSON object
 * with "text":" counts as one token (one token per event without --mtp).
 *
 * On stderr, 'sse_load: window start' and 'sse_load: window end' lines mark
 * the measurement window as it happens (a script snapshots the server there).
 * On stdout, one JSON object; window_* are CLOCK_MONOTONIC ns, the clock of
 * the server's --truth-log, so the log can be cut to the window.
 *
 * Not built by CMake. Build and run from the repository root:
 *   cc -O2 -std=c17 -D_GNU_SOURCE -o /tmp/sse_load bench/sse_load.c
 *   /tmp/sse_load -p 8000 -c 1000 -d 15
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Bounds: the server's heads are ~250 bytes and its events ~200; anything
 * far beyond is a framing error, not a reason to allocate. */
#define HEAD_MAX 8192
#define LINE_MAX_ 8192
#define DATA_MAX 16384
#define CHUNK_MAX (16u << 20)

enum err_kind { E_CONNECT, E_RESET, E_EOF, E_STATUS, E_PARSE, E_NO_DONE, E_EVENT, E_KIND_COUNT };
static const char *const err_names[E_KIND_COUNT] = {"connect", "reset",   "eof",        "http_status",
                                                    "parse",   "no_done", "error_event"};

enum cstate { C_CLOSED, C_CONNECTING, C_SENDING, C_HEAD, C_BODY };
enum bstate { B_SIZE, B_EXT, B_SIZE_LF, B_DATA, B_DATA_CR, B_DATA_LF, B_TRAILER, B_LENGTH, B_EOF };

struct conn {
  int fd;
  enum cstate st;
  bool want_out;   /* EPOLLOUT registered */
  bool had_head;   /* first response head seen since connecting */
  size_t woff;     /* request bytes sent */
  /* HTTP response */
  char head[HEAD_MAX];
  size_t head_len;
  int status;
  bool close_after;
  enum bstate bst;
  uint64_t chunk_left; /* chunk bytes left, or Content-Length bytes left */
  unsigned size_digits;
  size_t trailer_line;
  /* event stream */
  char line[LINE_MAX_];
  size_t line_len;
  bool last_cr;
  char data[DATA_MAX];
  size_t data_len;
  bool has_data;
  bool done;
};

struct counts {
  uint64_t requests, tokens, keepalives, bytes;
  uint64_t errors[E_KIND_COUNT];
};

struct load {
  int ep;
  struct conn *conns;
  int n;
  int n_up;      /* connections that have had a response head */
  int n_pending; /* opened, no response head yet */
  char *req;
  size_t req_len;
  struct sockaddr_in addr;
  int64_t now, window_start, window_end;
  bool in_window, stopping;
  struct counts total, window;
};

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static void count_err(struct load *l, enum err_kind k) {
  l->total.errors[k]++;
  if (l->in_window)
    l->window.errors[k]++;
}

static void set_out(struct load *l, struct conn *c, bool on) {
  if (c->want_out == on)
    return;
  struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c};
  if (epoll_ctl(l->ep, EPOLL_CTL_MOD, c->fd, &ev) == 0)
    c->want_out = on;
}

static void conn_drop(struct load *l, struct conn *c) {
  if (c->fd >= 0)
    close(c->fd); /* also removes it from the epoll set */
  if (c->had_head)
    l->n_up--;
  else if (c->st != C_CLOSED)
    l->n_pending--;
  c->fd = -1;
  c->st = C_CLOSED;
  c->had_head = false;
}

static void conn_fail(struct load *l, struct conn *c, enum err_kind k) {
  count_err(l, k);
  conn_drop(l, c);
}

static void request_reset(struct conn *c) {
  c->woff = 0;
  c->head_len = 0;
  c->status = 0;
  c->close_after = false;
  c->line_len = 0;
  c->last_cr = false;
  c->data_len = 0;
  c->has_data = false;
  c->done = false;
}

/* Sends what is left of the request; false if the connection failed. */
static bool conn_send(struct load *l, struct conn *c) {
  while (c->woff < l->req_len) {
    ssize_t w = send(c->fd, l->req + c->woff, l->req_len - c->woff, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EAGAIN || errno == EINTR) {
        set_out(l, c, true);
        return true;
      }
      conn_fail(l, c, E_RESET);
      return false;
    }
    c->woff += (size_t)w;
  }
  set_out(l, c, false);
  c->st = C_HEAD;
  return true;
}

static void conn_open(struct load *l, struct conn *c) {
  request_reset(c);
  c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->fd < 0) {
    count_err(l, E_CONNECT);
    return;
  }
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->st = C_CONNECTING;
  c->want_out = true;
  l->n_pending++;
  struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
  if (epoll_ctl(l->ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
    conn_fail(l, c, E_CONNECT);
    return;
  }
  if (connect(c->fd, (struct sockaddr *)&l->addr, sizeof l->addr) < 0 && errno != EINPROGRESS)
    conn_fail(l, c, E_CONNECT);
}

/* ---- event stream ------------------------------------------------------- */

static void dispatch_event(struct load *l, struct conn *c) {
  if (!c->has_data)
    return;
  const char *d = c->data;
  size_t n = c->data_len;
  c->has_data = false;
  c->data_len = 0;
  if (n == 6 && !memcmp(d, "[DONE]", 6)) {
    c->done = true;
    return;
  }
  if (n && d[0] == '{') {
    if (memmem(d, n, "\"text\":\"", 8)) {
      l->total.tokens++;
      if (l->in_window)
        l->window.tokens++;
    } else if (memmem(d, n, "\"error\"", 7)) {
      count_err(l, E_EVENT);
    }
  }
}

/* One complete line (without its terminator). */
static bool sse_line(struct load *l, struct conn *c, const char *s, size_t n) {
  if (n == 0) {
    dispatch_event(l, c);
    return true;
  }
  if (s[0] == ':') {
    l->total.keepalives++;
    if (l->in_window)
      l->window.keepalives++;
    return true;
  }
  const char *colon = memchr(s, ':', n);
  size_t name_len = colon ? (size_t)(colon - s) : n;
  if (name_len != 4 || memcmp(s, "data", 4))
    return true; /* event, id, retry and unknown fields do not matter here */
  const char *v = colon ? colon + 1 : s + n;
  size_t vn = (size_t)(s + n - v);
  if (vn && *v == ' ')
    v++, vn--;
  size_t need = c->data_len + (c->has_data ? 1 : 0) + vn;
  if (need > DATA_MAX)
    return false;
  if (c->has_data)
    c->data[c->data_len++] = '\n';
  memcpy(c->data + c->data_len, v, vn);
  c->data_len += vn;
  c->has_data = true;
  return true;
}

/* Feeds chunk payload bytes to the event-stream parser. Lines wholly inside
 * p are parsed in place; only a line split across calls is copied. */
static bool sse_feed(struct load *l, struct conn *c, const char *p, size_t n) {
  const char *end = p + n;
  if (c->last_cr && p < end) {
    c->last_cr = false;
    if (*p == '\n')
      p++;
  }
  while (p < end) {
    const char *nl = p;
    while (nl < end && *nl != '\n' && *nl != '\r')
      nl++;
    if (nl == end) {
      size_t k = (size_t)(end - p);
      if (c->line_len + k > LINE_MAX_)
        return false;
      memcpy(c->line + c->line_len, p, k);
      c->line_len += k;
      return true;
    }
    bool ok;
    if (c->line_len) {
      size_t k = (size_t)(nl - p);
      if (c->line_len + k > LINE_MAX_)
        return false;
      memcpy(c->line + c->line_len, p, k);
      ok = sse_line(l, c, c->line, c->line_len + k);
      c->line_len = 0;
    } else {
      ok = sse_line(l, c, p, (size_t)(nl - p));
    }
    if (!ok)
      return false;
    if (*nl == '\r') {
      if (nl + 1 == end)
        c->last_cr = true;
      else if (nl[1] == '\n')
        nl++;
    }
    p = nl + 1;
  }
  return true;
}

/* ---- HTTP response ------------------------------------------------------ */

static bool header_is(const char *name, size_t n, const char *want) {
  return strlen(want) == n && !strncasecmp(name, want, n);
}

/* Parses the head in c->head[0..len); sets up the body state. */
static bool parse_head(struct conn *c, size_t len) {
  const char *p = c->head, *end = c->head + len;
  if (len < 12 || memcmp(p, "HTTP/1.", 7))
    return false;
  bool http10 = p[7] == '0';
  c->status = atoi(p + 9);
  bool chunked = false, has_len = false;
  uint64_t clen = 0;
  c->close_after = http10;
  p = memchr(p, '\n', (size_t)(end - p));
  while (p && ++p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol)
      break;
    const char *colon = memchr(p, ':', (size_t)(eol - p));
    if (colon) {
      const char *v = colon + 1;
      size_t vn = (size_t)(eol - v);
      while (vn && (*v == ' ' || *v == '\t'))
        v++, vn--;
      size_t nn = (size_t)(colon - p);
      if (header_is(p, nn, "transfer-encoding")) {
        chunked = memmem(v, vn, "chunked", 7) != NULL;
      } else if (header_is(p, nn, "content-length")) {
        has_len = true;
        clen = strtoull(v, NULL, 10);
      } else if (header_is(p, nn, "connection")) {
        if (vn >= 5 && !strncasecmp(v, "close", 5))
          c->close_after = true;
        else if (vn >= 10 && !strncasecmp(v, "keep-alive", 10))
          c->close_after = false;
      }
    }
    p = eol;
  }
  if (chunked) {
    c->bst = B_SIZE;
    c->chunk_left = 0;
    c->size_digits = 0;
  } else if (has_len) {
    c->bst = B_LENGTH;
    c->chunk_left = clen;
  } else {
    c->bst = B_EOF;
    c->close_after = true;
  }
  return true;
}

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

/* The response has ended: count it and start the next one (or close). */
static void response_done(struct load *l, struct conn *c) {
  if (c->status != 200)
    count_err(l, E_STATUS);
  else if (!c->done)
    count_err(l, E_NO_DONE);
  else {
    l->total.requests++;
    if (l->in_window)
      l->window.requests++;
  }
  if (c->close_after || c->status != 200 || l->stopping) {
    conn_drop(l, c);
    return;
  }
  request_reset(c);
  c->st = C_SENDING;
  conn_send(l, c);
}

/* Feeds body bytes. Returns the number consumed, or -1 on a framing error;
 * stops early (consumed < n) when the response ended. */
static ssize_t body_feed(struct load *l, struct conn *c, const char *p, size_t n) {
  size_t i = 0;
  while (i < n) {
    char ch = p[i];
    switch (c->bst) {
    case B_SIZE: {
      int h = hexval(ch);
      if (h >= 0) {
        if (++c->size_digits > 8)
          return -1;
        c->chunk_left = c->chunk_left * 16 + (uint64_t)h;
        i++;
        break;
      }
      if (!c->size_digits || c->chunk_left > CHUNK_MAX)
        return -1;
      c->bst = ch == '\r' ? B_SIZE_LF : B_EXT;
      if (ch == '\n')
        c->bst = B_SIZE_LF; /* reparsed below as the LF */
      else
        i++;
      break;
    }
    case B_EXT: { /* chunk extensions: skipped up to the line end */
      const char *lf = memchr(p + i, '\n', n - i);
      if (!lf) {
        i = n;
        break;
      }
      i = (size_t)(lf - p);
      c->bst = B_SIZE_LF;
      break;
    }
    case B_SIZE_LF:
      if (ch == '\r') {
        i++;
        break;
      }
      if (ch != '\n')
        return -1;
      i++;
      c->size_digits = 0;
      if (c->chunk_left == 0) {
        c->bst = B_TRAILER;
        c->trailer_line = 0;
      } else {
        c->bst = B_DATA;
      }
      break;
    case B_DATA: {
      size_t k = n - i < c->chunk_left ? n - i : (size_t)c->chunk_left;
      if (!sse_feed(l, c, p + i, k))
        return -1;
      i += k;
      c->chunk_left -= k;
      if (!c->chunk_left)
        c->bst = B_DATA_CR;
      break;
    }
    case B_DATA_CR:
      if (ch == '\r') {
        c->bst = B_DATA_LF;
        i++;
        break;
      }
      /* A bare LF is accepted too. */
      /* fall through */
    case B_DATA_LF:
      if (ch != '\n')
        return -1;
      i++;
      c->bst = B_SIZE;
      c->chunk_left = 0;
      break;
    case B_TRAILER:
      i++;
      if (ch == '\r')
        break;
      if (ch != '\n') {
        if (++c->trailer_line > HEAD_MAX)
          return -1;
        break;
      }
      if (c->trailer_line == 0) {
        response_done(l, c);
        return (ssize_t)i;
      }
      c->trailer_line = 0;
      break;
    case B_LENGTH: {
      size_t k = n - i < c->chunk_left ? n - i : (size_t)c->chunk_left;
      if (!sse_feed(l, c, p + i, k))
        return -1;
      i += k;
      c->chunk_left -= k;
      if (!c->chunk_left) {
        response_done(l, c);
        return (ssize_t)i;
      }
      break;
    }
    case B_EOF:
      if (!sse_feed(l, c, p + i, n - i))
        return -1;
      i = n;
      break;
    }
  }
  return (ssize_t)i;
}

/* Bytes just read, in any state; loops because one read may end a response
 * and (in principle) start the next. */
static void conn_input(struct load *l, struct conn *c, const char *p, size_t n) {
  while (n && c->st != C_CLOSED) {
    if (c->st == C_SENDING || c->st == C_CONNECTING) {
      conn_fail(l, c, E_PARSE); /* response bytes before the request was sent */
      return;
    }
    if (c->st == C_HEAD) {
      size_t old = c->head_len;
      size_t k = n < HEAD_MAX - old ? n : HEAD_MAX - old;
      memcpy(c->head + old, p, k);
      c->head_len += k;
      size_t from = old >= 3 ? old - 3 : 0;
      char *e = memmem(c->head + from, c->head_len - from, "\r\n\r\n", 4);
      if (!e) {
        if (c->head_len == HEAD_MAX)
          conn_fail(l, c, E_PARSE);
        return;
      }
      size_t head_len = (size_t)(e - c->head) + 4;
      if (!parse_head(c, head_len)) {
        conn_fail(l, c, E_PARSE);
        return;
      }
      if (!c->had_head) {
        c->had_head = true;
        l->n_pending--;
        l->n_up++;
      }
      size_t used = head_len - old;
      p += used;
      n -= used;
      c->st = C_BODY;
      if (c->bst == B_LENGTH && c->chunk_left == 0) {
        response_done(l, c);
        continue;
      }
    }
    if (c->st == C_BODY) {
      ssize_t used = body_feed(l, c, p, n);
      if (used < 0) {
        conn_fail(l, c, E_PARSE);
        return;
      }
      p += used;
      n -= (size_t)used;
    }
  }
}

static void conn_readable(struct load *l, struct conn *c, char *buf, size_t cap) {
  ssize_t r = recv(c->fd, buf, cap, 0);
  if (r < 0) {
    if (errno != EAGAIN && errno != EINTR)
      conn_fail(l, c, E_RESET);
    return;
  }
  if (r == 0) {
    if (c->st == C_BODY && c->bst == B_EOF) {
      dispatch_event(l, c);
      c->close_after = true;
      response_done(l, c);
    } else {
      conn_fail(l, c, E_EOF);
    }
    return;
  }
  l->total.bytes += (uint64_t)r;
  if (l->in_window)
    l->window.bytes += (uint64_t)r;
  conn_input(l, c, buf, (size_t)r);
}

static void conn_writable(struct load *l, struct conn *c) {
  if (c->st == C_CONNECTING) {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
      conn_fail(l, c, E_CONNECT);
      return;
    }
    c->st = C_SENDING;
  }
  if (c->st == C_SENDING)
    conn_send(l, c);
  else
    set_out(l, c, false);
}

/* ---- main --------------------------------------------------------------- */

static int raise_nofile(int need) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
    return -1;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)need) {
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)need)
      rl.rlim_max = (rlim_t)need; /* needs CAP_SYS_RESOURCE; tried anyway */
    rl.rlim_cur = (rlim_t)need;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
      getrlimit(RLIMIT_NOFILE, &rl);
      fprintf(stderr,
              "sse_load: RLIMIT_NOFILE is %llu (hard %llu), %d needed for the streams; "
              "raise it with 'ulimit -n %d' as root or fewer -c\n",
              (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, need, need);
      return -1;
    }
  }
  return 0;
}

static void print_counts(const char *name, const struct counts *k, double secs, bool last) {
  uint64_t errs = 0;
  for (int i = 0; i < E_KIND_COUNT; i++)
    errs += k->errors[i];
  printf("  \"%s\": {\"seconds\": %.3f, \"requests_completed\": %llu, \"tokens\": %llu, "
         "\"tokens_per_s\": %.1f, \"requests_per_s\": %.2f, \"bytes_per_s\": %.0f, "
         "\"keepalive_comments\": %llu, \"errors\": %llu, \"error_kinds\": {",
         name, secs, (unsigned long long)k->requests, (unsigned long long)k->tokens,
         secs > 0 ? (double)k->tokens / secs : 0.0, secs > 0 ? (double)k->requests / secs : 0.0,
         secs > 0 ? (double)k->bytes / secs : 0.0, (unsigned long long)k->keepalives,
         (unsigned long long)errs);
  for (int i = 0; i < E_KIND_COUNT; i++)
    printf("%s\"%s\": %llu", i ? ", " : "", err_names[i], (unsigned long long)k->errors[i]);
  printf("}}%s\n", last ? "" : ",");
}

static void usage(void) {
  fprintf(stderr, "usage: sse_load -p PORT [-c STREAMS] [-d SECONDS] [-w WARMUP_S] [-t MAX_TOKENS]\n"
                  "                [-r CONNECTS_PER_MS] [-q MAX_PENDING] [-T TAIL_S] [-R RAMP_MAX_S]\n"
                  "                [-m MODEL] [-P PROMPT]   (see the top of bench/sse_load.c)\n");
}

int main(int argc, char **argv) {
  int port = 0, streams = 100, max_tokens = 256, ramp_per_tick = 16, max_pending = 256;
  double duration = 10, warmup = 2, tail = 0.5, ramp_max = 30;
  const char *model = NULL;
  const char *prompt = "Write a short story about a lighthouse keeper and the sea.";
  int opt;
  while ((opt = getopt(argc, argv, "p:c:d:w:t:r:q:T:R:m:P:h")) != -1) {
    switch (opt) {
    case 'p': port = atoi(optarg); break;
    case 'c': streams = atoi(optarg); break;
    case 'd': duration = atof(optarg); break;
    case 'w': warmup = atof(optarg); break;
    case 't': max_tokens = atoi(optarg); break;
    case 'r': ramp_per_tick = atoi(optarg); break;
    case 'q': max_pending = atoi(optarg); break;
    case 'T': tail = atof(optarg); break;
    case 'R': ramp_max = atof(optarg); break;
    case 'm': model = optarg; break;
    case 'P': prompt = optarg; break;
    default: usage(); return 2;
    }
  }
  if (port <= 0 || port > 65535 || streams <= 0 || streams > 1000000 || duration <= 0 ||
      duration > 3600 || warmup < 0 || warmup > 600 || tail < 0 || tail > 60 || ramp_max <= 0 ||
      ramp_max > 600 || max_tokens <= 0 || ramp_per_tick <= 0 || max_pending <= 0) {
    usage();
    return 2;
  }
  if (raise_nofile(streams + 64) < 0)
    return 1;

  struct load l;
  memset(&l, 0, sizeof l);
  l.n = streams;
  l.addr.sin_family = AF_INET;
  l.addr.sin_port = htons((uint16_t)port);
  l.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  char body[4096];
  int bl = snprintf(body, sizeof body,
                    "{%s%s%s\"prompt\":\"%s\",\"stream\":true,\"ignore_eos\":true,\"max_tokens\":%d}",
                    model ? "\"model\":\"" : "", model ? model : "", model ? "\"," : "", prompt,
                    max_tokens);
  if (bl < 0 || (size_t)bl >= sizeof body) {
    fprintf(stderr, "sse_load: -P prompt too long (at most ~4000 bytes)\n");
    return 2;
  }
  char reqbuf[8192];
  int rl = snprintf(reqbuf, sizeof reqbuf,
                    "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                    "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
                    "Content-Length: %d\r\n\r\n%s",
                    port, bl, body);
  l.req = reqbuf;
  l.req_len = (size_t)rl;
  l.conns = calloc((size_t)streams, sizeof *l.conns);
  l.ep = epoll_create1(EPOLL_CLOEXEC);
  if (!l.conns || l.ep < 0) {
    fprintf(stderr, "sse_load: %s\n", l.conns ? strerror(errno) : "out of memory");
    return 1;
  }
  for (int i = 0; i < streams; i++)
    l.conns[i].fd = -1;

  enum { MAX_EVENTS = 512 };
  struct epoll_event evs[MAX_EVENTS];
  static char buf[1 << 16];
  double cpu0 = cpu_s(), cpu_w0 = 0, cpu_w1 = 0;
  int64_t t0 = now_ns(), ramp_done = -1, stop_at = -1;
  int64_t ramp_deadline = t0 + (int64_t)(ramp_max * 1e9);
  int next_open = 0; /* round-robin scan position for closed slots */
  bool window_over = false;
  l.now = t0;

  for (;;) {
    l.now = now_ns();
    /* Phases: ramp -> warm-up -> window -> tail -> stop. */
    if (ramp_done < 0 && (l.n_up == streams || l.now >= ramp_deadline)) {
      ramp_done = l.now;
      l.window_start = ramp_done + (int64_t)(warmup * 1e9);
      l.window_end = l.window_start + (int64_t)(duration * 1e9);
      stop_at = l.window_end + (int64_t)(tail * 1e9);
    }
    if (ramp_done >= 0 && !l.in_window && !window_over && l.now >= l.window_start) {
      l.in_window = true;
      l.window_start = l.now;
      l.window_end = l.now + (int64_t)(duration * 1e9);
      stop_at = l.window_end + (int64_t)(tail * 1e9);
      cpu_w0 = cpu_s();
      fprintf(stderr, "sse_load: window start\n");
    }
    if (l.in_window && l.now >= l.window_end) {
      l.in_window = false;
      window_over = true;
      l.window_end = l.now;
      cpu_w1 = cpu_s();
      fprintf(stderr, "sse_load: window end\n");
    }
    if (stop_at >= 0 && l.now >= stop_at)
      break;

    /* Open (or reopen) connections, a few per tick, never more than
     * max_pending waiting for the server to accept and answer. */
    int budget = ramp_per_tick;
    for (int scanned = 0; l.n_up + l.n_pending < streams && scanned < streams && budget > 0 &&
                          l.n_pending < max_pending;
         scanned++) {
      struct conn *c = &l.conns[next_open];
      next_open = (next_open + 1) % streams;
      if (c->st == C_CLOSED) {
        conn_open(&l, c);
        budget--;
      }
    }
    bool all_open = l.n_up + l.n_pending >= streams;
    int timeout = all_open ? 10 : 1;
    int ne = epoll_wait(l.ep, evs, MAX_EVENTS, timeout);
    if (ne < 0) {
      if (errno == EINTR)
        continue;
      perror("sse_load: epoll_wait");
      return 1;
    }
    l.now = now_ns();
    for (int i = 0; i < ne; i++) {
      struct conn *c = evs[i].data.ptr;
      uint32_t e = evs[i].events;
      if (c->st == C_CLOSED)
        continue; /* dropped by an earlier event in this batch */
      if (e & EPOLLOUT)
        conn_writable(&l, c);
      if (c->st != C_CLOSED && c->st != C_CONNECTING && (e & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        conn_readable(&l, c, buf, sizeof buf);
      else if (c->st == C_CONNECTING && (e & (EPOLLHUP | EPOLLERR)))
        conn_fail(&l, c, E_CONNECT);
    }
  }
  l.stopping = true;
  int64_t t_end = now_ns();
  double cpu_end = cpu_s();
  for (int i = 0; i < streams; i++)
    if (l.conns[i].fd >= 0)
      close(l.conns[i].fd);
  if (!window_over) { /* ramp never finished within -R and no window ran */
    cpu_w1 = cpu_w0 = cpu_end;
    l.window_start = l.window_end = t_end;
  }
  double wsecs = (double)(l.window_end - l.window_start) * 1e-9;
  printf("{\n  \"streams\": %d, \"streams_up_at_end\": %d, \"max_tokens\": %d, \"duration_s\": %.3f, "
         "\"warmup_s\": %.3f, \"ramp_s\": %.3f,\n",
         streams, l.n_up, max_tokens, wsecs, warmup, ramp_done >= 0 ? (double)(ramp_done - t0) * 1e-9 : -1.0);
  uint64_t werrs = 0;
  for (int i = 0; i < E_KIND_COUNT; i++)
    werrs += l.window.errors[i];
  printf("  \"requests_completed\": %llu, \"tokens\": %llu, \"tokens_per_s\": %.1f, "
         "\"client_cpu_s\": %.3f, \"client_cpu_per_wall_s\": %.3f, \"errors\": %llu,\n",
         (unsigned long long)l.window.requests, (unsigned long long)l.window.tokens,
         wsecs > 0 ? (double)l.window.tokens / wsecs : 0.0, cpu_w1 - cpu_w0,
         wsecs > 0 ? (cpu_w1 - cpu_w0) / wsecs : 0.0, (unsigned long long)werrs);
  printf("  \"window_start_ns\": %lld, \"window_end_ns\": %lld,\n", (long long)l.window_start,
         (long long)l.window_end);
  print_counts("window", &l.window, wsecs, false);
  print_counts("total", &l.total, (double)(t_end - t0) * 1e-9, false);
  printf("  \"total_client_cpu_s\": %.3f\n}\n", cpu_end - cpu0);
  free(l.conns);
  close(l.ep);
  return window_over ? 0 : 1;
}
