/* min_reader: the minimal SSE load client, infermeter's physical-limit
 * reference (bench/CLIENT.md).
 *
 * One thread, raw epoll, non-blocking sockets to 127.0.0.1:PORT; streaming
 * POST /v1/completions over HTTP/1.1 keep-alive; one clock_gettime per read()
 * that returned bytes; the only parsing is what finding SSE event boundaries
 * needs (HTTP head, chunked framing, line starts). Every token-bearing event
 * (a "data: {" event: without stream_options the completions endpoint sends
 * nothing else before [DONE]) gets the time of the read that completed it,
 * as infermeter's client does.
 *
 *   min_reader --port P (--rate R [--seed S] | --concurrency C) --duration D
 *              [--output-len M] [--input-len L] [--model NAME] [--out FILE]
 *              [--grace S]
 *
 * --rate draws the same Poisson arrival times as `infermeter run --rate R
 * --seed S` (src/workload/sched.c and src/core/rng.c: xoshiro256** seeded by
 * splitmix, Exp(1) = -log(1-U), long-double running sum, rounded to ns), so
 * both clients see the same load. --out writes, after the run,
 *   R <request_id> <t_sched_ns> <t_send_ns> <status> <n_chunks>
 *   C <request_id> <index> <arrival_ns>
 * lines with absolute CLOCK_MONOTONIC times. The summary line on stderr has
 * the CPU time (getrusage) of the run, taken before the file is written.
 *
 * Build: cc -O2 -o min_reader bench/min_reader.c -lm */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define RBUF (256 * 1024)
#define HDR_MAX 8192
#define MAX_CONNS 65536

enum { C_CONNECTING, C_SENDING, C_HEAD, C_BODY, C_IDLE };
enum { CS_SIZE, CS_DATA, CS_CRLF, CS_TRAILER };
enum { EV_NONE, EV_TOKEN, EV_DONE };

struct req {
  int64_t t_sched, t_send;
  uint32_t conn, n, nchunks;
  int status;
};

struct chunk {
  uint32_t req, index;
  int64_t ns;
};

struct conn {
  int fd, state;
  uint32_t id, nreq;
  int32_t req;            /* current request, -1 none */
  char *w;                /* request bytes being written */
  size_t wlen, woff;
  char head[HDR_MAX];
  size_t hlen;
  int cst;                /* chunked decoder */
  size_t csz, crem, tline;
  char lpfx[8];           /* first bytes of the current SSE line */
  size_t lpos;
  int ev;
  struct conn *next_idle;
};

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the schedule: the same numbers as infermeter's Poisson ------------ */
static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static uint64_t rng_u64(uint64_t s[4]) {
  uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return r;
}
static size_t poisson(double rate, int64_t dur, uint64_t seed, int64_t **out) {
  uint64_t s[4], x = seed;
  for (int i = 0; i < 4; i++) {
    x += 0x9e3779b97f4a7c15ULL;
    s[i] = mix64(x);
  }
  size_t n = 0, cap = 1024;
  int64_t *v = malloc(cap * sizeof *v);
  long double sum = 0.0L;
  for (;;) {
    double u = (double)(rng_u64(s) >> 11) * 0x1.0p-53;
    sum += -log(1.0 - u);
    int64_t ns = (int64_t)llroundl(sum / (long double)rate * 1e9L);
    if (ns >= dur)
      break;
    if (n == cap && !(v = realloc(v, (cap *= 2) * sizeof *v))) {
      perror("realloc");
      exit(1);
    }
    v[n++] = ns;
  }
  *out = v;
  return n;
}

/* ---- state ---------------------------------------------------------------- */
static int ep, port, out_len = 64, in_len = 128;
static const char *model = "deepseek-v3";
static char *prompt_tail;
static struct conn *conns[MAX_CONNS];
static uint32_t nconns;
static struct conn *idle;
static struct req *reqs;
static size_t nreqs, capreqs;
static struct chunk *chunks;
static size_t nchunks, capchunks;
static uint64_t n_ok, n_err, keepalives;
static uint32_t inflight;

static void *grow(void *p, size_t *cap, size_t need, size_t sz) {
  if (need <= *cap)
    return p;
  size_t c = *cap ? *cap * 2 : 4096;
  while (c < need)
    c *= 2;
  void *q = realloc(p, c * sz);
  if (!q) {
    perror("realloc");
    exit(1);
  }
  *cap = c;
  return q;
}

static void ep_mod(struct conn *c, uint32_t evs) {
  struct epoll_event e = {.events = evs, .data.ptr = c};
  epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e);
}

static struct conn *conn_open(void) {
  if (nconns == MAX_CONNS) {
    fprintf(stderr, "min_reader: more than %d connections\n", MAX_CONNS);
    exit(1);
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    perror("socket");
    exit(1);
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct conn *c = calloc(1, sizeof *c);
  c->fd = fd;
  c->id = nconns;
  c->req = -1;
  conns[nconns++] = c;
  c->state = C_CONNECTING;
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) {
    perror("connect");
    exit(1);
  }
  struct epoll_event e = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
  epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
  return c;
}

static void try_send(struct conn *c) {
  while (c->woff < c->wlen) {
    ssize_t k = write(c->fd, c->w + c->woff, c->wlen - c->woff);
    if (k < 0) {
      if (errno == EAGAIN) {
        ep_mod(c, EPOLLIN | EPOLLOUT);
        return;
      }
      perror("write");
      exit(1);
    }
    if (c->woff == 0)
      reqs[c->req].t_send = now_ns();
    c->woff += (size_t)k;
  }
  if (c->state == C_SENDING) {
    c->state = C_HEAD;
    c->hlen = 0;
    ep_mod(c, EPOLLIN);
  }
}

/* Prepares request c->nreq on c and sends it (or waits for the connect). */
static void start_req(struct conn *c, int64_t t_sched) {
  reqs = grow(reqs, &capreqs, nreqs + 1, sizeof *reqs);
  reqs[nreqs] = (struct req){.t_sched = t_sched, .conn = c->id, .n = c->nreq++, .status = 0};
  c->req = (int32_t)nreqs++;
  inflight++;
  char id[32];
  snprintf(id, sizeof id, "mr-%u-%u", c->id, reqs[c->req].n);
  size_t blen = strlen(prompt_tail) + 256, cap = blen + 512;
  char *body = malloc(blen);
  int bn = snprintf(body, blen,
                    "{\"model\":\"%s\",\"prompt\":\"[%s]%s\",\"max_tokens\":%d,"
                    "\"stream\":true,\"ignore_eos\":true}",
                    model, id, prompt_tail, out_len);
  free(c->w);
  c->w = malloc(cap);
  c->wlen = (size_t)snprintf(c->w, cap,
                             "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                             "Content-Type: application/json\r\nX-Request-Id: %s\r\n"
                             "Content-Length: %d\r\n\r\n%s",
                             port, id, bn, body);
  free(body);
  c->woff = 0;
  c->cst = CS_SIZE;
  c->csz = c->tline = c->lpos = 0;
  c->ev = EV_NONE;
  if (c->state == C_CONNECTING)
    return; /* sent once writable */
  c->state = C_SENDING;
  try_send(c);
}

static void conn_fail(struct conn *c, const char *why) {
  fprintf(stderr, "min_reader: connection %u: %s\n", c->id, why);
  if (c->req >= 0) {
    n_err++;
    inflight--;
    c->req = -1;
  }
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  c->fd = -1;
  c->state = -1;
}

/* One decoded body span. Lines are found with memchr; only their first 7
 * bytes are looked at. */
static void feed_sse(struct conn *c, const char *p, size_t n, int64_t now) {
  while (n) {
    const char *nl = memchr(p, '\n', n);
    size_t take = nl ? (size_t)(nl - p) : n;
    if (c->lpos < 7) {
      size_t k = 7 - c->lpos < take ? 7 - c->lpos : take;
      memcpy(c->lpfx + c->lpos, p, k);
    }
    c->lpos += take;
    if (!nl)
      return;
    if (c->lpos == 0 || (c->lpos == 1 && c->lpfx[0] == '\r')) { /* event end */
      if (c->ev == EV_TOKEN) {
        struct req *r = &reqs[c->req];
        chunks = grow(chunks, &capchunks, nchunks + 1, sizeof *chunks);
        chunks[nchunks++] = (struct chunk){(uint32_t)c->req, r->nchunks++, now};
      }
      c->ev = EV_NONE;
    } else if (c->lpos >= 7 && memcmp(c->lpfx, "data: ", 6) == 0) {
      c->ev = c->lpfx[6] == '[' ? EV_DONE : EV_TOKEN;
    } else if (c->lpfx[0] == ':') {
      keepalives++;
    }
    c->lpos = 0;
    p = nl + 1;
    n -= take + 1;
  }
}

/* Chunked transfer decoding; returns true when the response is complete. */
static int feed_body(struct conn *c, const char *p, size_t n, int64_t now) {
  while (n) {
    switch (c->cst) {
    case CS_SIZE: {
      char ch = *p++;
      n--;
      if (ch >= '0' && ch <= '9')
        c->csz = c->csz * 16 + (size_t)(ch - '0');
      else if ((ch | 32) >= 'a' && (ch | 32) <= 'f')
        c->csz = c->csz * 16 + (size_t)((ch | 32) - 'a' + 10);
      else if (ch == '\n') {
        c->cst = c->csz ? CS_DATA : CS_TRAILER;
        c->crem = c->csz;
        c->csz = c->tline = 0;
      }
      break;
    }
    case CS_DATA: {
      size_t k = n < c->crem ? n : c->crem;
      feed_sse(c, p, k, now);
      p += k;
      n -= k;
      if (!(c->crem -= k))
        c->cst = CS_CRLF;
      break;
    }
    case CS_CRLF:
      if (*p == '\n')
        c->cst = CS_SIZE;
      p++;
      n--;
      break;
    case CS_TRAILER:
      if (*p == '\n') {
        if (c->tline == 0)
          return n == 1 ? 1 : -1; /* the server never pipelines ahead */
        c->tline = 0;
      } else if (*p != '\r')
        c->tline++;
      p++;
      n--;
      break;
    }
  }
  return 0;
}

static int closed_loop, stopping;
static int64_t t_end_sched;

static void response_done(struct conn *c, int64_t now) {
  n_ok++;
  inflight--;
  c->req = -1;
  if (closed_loop && !stopping && now < t_end_sched) {
    start_req(c, now);
    return;
  }
  c->state = C_IDLE;
  c->next_idle = idle;
  idle = c;
}

static void on_readable(struct conn *c, char *buf) {
  for (;;) {
    ssize_t k = read(c->fd, buf, RBUF);
    if (k < 0) {
      if (errno == EAGAIN)
        return;
      conn_fail(c, strerror(errno));
      return;
    }
    if (k == 0) {
      conn_fail(c, "closed by the server");
      return;
    }
    int64_t now = now_ns(); /* the one clock read of this read() */
    const char *p = buf;
    size_t n = (size_t)k;
    if (c->state == C_HEAD) {
      size_t room = HDR_MAX - c->hlen, m = n < room ? n : room;
      memcpy(c->head + c->hlen, p, m);
      size_t from = c->hlen > 3 ? c->hlen - 3 : 0;
      c->hlen += m;
      char *e = memmem(c->head + from, c->hlen - from, "\r\n\r\n", 4);
      if (!e) {
        if (c->hlen == HDR_MAX)
          conn_fail(c, "response head too large");
        return;
      }
      size_t used = (size_t)(e + 4 - c->head) - (c->hlen - m);
      int status = c->hlen > 12 ? atoi(c->head + 9) : 0;
      reqs[c->req].status = status;
      if (status != 200) {
        conn_fail(c, "status not 200");
        return;
      }
      c->state = C_BODY;
      p += used;
      n -= used;
    }
    if (c->state == C_BODY && n) {
      int r = feed_body(c, p, n, now);
      if (r < 0) {
        conn_fail(c, "bytes after the end of the response");
        return;
      }
      if (r > 0)
        response_done(c, now);
    }
    if ((size_t)k < RBUF)
      return; /* level-triggered: epoll reports what is left */
  }
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static void usage(void) {
  fprintf(stderr, "usage: min_reader --port P (--rate R [--seed S] | --concurrency C) "
                  "--duration SEC [--output-len M] [--input-len L] [--model NAME] "
                  "[--out FILE] [--grace SEC]\n");
  exit(1);
}

int main(int argc, char **argv) {
  double rate = 0, duration = 0, grace = 30;
  long conc = 0;
  uint64_t seed = 0;
  const char *out = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v)
      usage();
    if (!strcmp(a, "--port"))
      port = atoi(v);
    else if (!strcmp(a, "--rate"))
      rate = atof(v);
    else if (!strcmp(a, "--seed"))
      seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--concurrency"))
      conc = atol(v);
    else if (!strcmp(a, "--duration"))
      duration = atof(v);
    else if (!strcmp(a, "--output-len"))
      out_len = atoi(v);
    else if (!strcmp(a, "--input-len"))
      in_len = atoi(v);
    else if (!strcmp(a, "--model"))
      model = v;
    else if (!strcmp(a, "--out"))
      out = v;
    else if (!strcmp(a, "--grace"))
      grace = atof(v);
    else
      usage();
    i++;
  }
  if (port <= 0 || duration <= 0 || (rate > 0) == (conc > 0))
    usage();
  /* The prompt: one word per token of the server's simple tokenizer (a
   * word and its leading space), after the bracketed id (about 8 tokens). */
  size_t words = in_len > 8 ? (size_t)in_len - 8 : 1;
  prompt_tail = malloc(words * 6 + 1);
  for (size_t i = 0; i < words; i++)
    memcpy(prompt_tail + 6 * i, " token", 6);
  prompt_tail[words * 6] = '\0';

  ep = epoll_create1(EPOLL_CLOEXEC);
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  struct epoll_event te = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &te);
  int64_t *times = NULL;
  size_t ntimes = 0, next = 0;
  const int64_t dur = (int64_t)(duration * 1e9);
  if (rate > 0)
    ntimes = poisson(rate, dur, seed, &times);
  char *buf = malloc(RBUF);
  struct epoll_event evs[512];

  const int64_t t0 = now_ns();
  t_end_sched = t0 + dur;
  closed_loop = conc > 0;
  if (closed_loop)
    for (long i = 0; i < conc; i++)
      start_req(conn_open(), t0);
  int64_t deadline = t0 + dur + (int64_t)(grace * 1e9);
  for (;;) {
    int64_t now = now_ns();
    /* Open loop: every arrival that is due, on an idle connection or a new one. */
    while (next < ntimes && t0 + times[next] <= now) {
      struct conn *c = idle;
      if (c) {
        idle = c->next_idle;
        c->state = C_SENDING;
      } else
        c = conn_open();
      start_req(c, t0 + times[next++]);
    }
    if (now >= t_end_sched && (next >= ntimes))
      stopping = 1;
    if ((stopping && inflight == 0) || now >= deadline)
      break;
    struct itimerspec its = {0};
    int64_t wake = next < ntimes ? t0 + times[next] : (stopping ? deadline : t_end_sched);
    its.it_value.tv_sec = wake / 1000000000;
    its.it_value.tv_nsec = wake % 1000000000;
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
    int ne = epoll_wait(ep, evs, 512, -1);
    for (int i = 0; i < ne; i++) {
      struct conn *c = evs[i].data.ptr;
      if (!c) {
        uint64_t x;
        ssize_t r = read(tfd, &x, sizeof x);
        (void)r;
        continue;
      }
      if (c->fd < 0)
        continue;
      if (evs[i].events & EPOLLOUT) {
        if (c->state == C_CONNECTING) {
          int err = 0;
          socklen_t l = sizeof err;
          getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
          if (err) {
            conn_fail(c, strerror(err));
            continue;
          }
          c->state = c->req >= 0 ? C_SENDING : C_IDLE;
          if (c->req < 0)
            ep_mod(c, EPOLLIN);
        }
        if (c->state == C_SENDING)
          try_send(c);
      }
      if ((evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && c->fd >= 0 &&
          c->state != C_CONNECTING)
        on_readable(c, buf);
    }
  }
  const int64_t t_stop = now_ns();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double cpu_u = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
  double cpu_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
  /* p99 (nearest rank) of t_send - t_sched: the reference for dispatch_lag. */
  int64_t *lag = malloc((nreqs + 1) * sizeof *lag);
  size_t nlag = 0;
  for (size_t i = 0; i < nreqs; i++)
    if (reqs[i].t_send > 0)
      lag[nlag++] = reqs[i].t_send - reqs[i].t_sched;
  qsort(lag, nlag, sizeof *lag, cmp_i64);
  double lag_p99 = nlag ? (double)lag[(nlag * 99 + 99) / 100 - 1] : -1;
  fprintf(stderr,
          "min_reader: requests %zu ok %" PRIu64 " err %" PRIu64 " unfinished %u chunks %zu "
          "keepalives %" PRIu64 " conns %u wall_s %.3f cpu_user_s %.3f cpu_sys_s %.3f "
          "maxrss_kib %ld send_lag_p99_us %.1f\n",
          nreqs, n_ok, n_err, inflight, nchunks, keepalives, nconns, (double)(t_stop - t0) / 1e9,
          cpu_u, cpu_s, ru.ru_maxrss, lag_p99 / 1e3);
  if (out) {
    FILE *f = fopen(out, "w");
    if (!f) {
      perror(out);
      return 1;
    }
    static char fbuf[1 << 20];
    setvbuf(f, fbuf, _IOFBF, sizeof fbuf);
    for (size_t i = 0; i < nreqs; i++)
      fprintf(f, "R mr-%u-%u %" PRId64 " %" PRId64 " %d %u\n", reqs[i].conn, reqs[i].n,
              reqs[i].t_sched, reqs[i].t_send, reqs[i].status, reqs[i].nchunks);
    for (size_t i = 0; i < nchunks; i++) {
      const struct req *r = &reqs[chunks[i].req];
      fprintf(f, "C mr-%u-%u %u %" PRId64 "\n", r->conn, r->n, chunks[i].index, chunks[i].ns);
    }
    if (fclose(f)) {
      perror(out);
      return 1;
    }
  }
  return n_err || inflight ? 2 : 0;
}
