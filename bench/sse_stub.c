/* sse_stub: the cheapest streaming server we can write, with a ground-truth
 * log; the fixed point against which bench/compare.sh measures client
 * precision (infermeter run vs bench/min_reader.c, bench/CLIENT.md).
 *
 * One thread, epoll, HTTP/1.1 keep-alive on 127.0.0.1. Every POST (any path)
 * is answered with a chunked text/event-stream of max_tokens events (from the
 * body, default 100), one token per event, each written GAP after the
 * previous one (the first GAP after the request arrived), the last with
 * finish_reason "length", then (when the body asks for stream_options
 * include_usage) an event with usage, and "data: [DONE]". Chat paths get
 * chat.completion.chunk deltas, others text_completion chunks. GET
 * /v1/models lists one model; every other GET is 200 with an empty body.
 *
 * With --gap-ms 0 every stream writes --per-write K events per write() as
 * fast as the socket takes them (the client's raw capacity).
 *
 * --truth-log FILE: one line per token event, taken just before its write():
 *   {"type":"chunk","id":"<X-Request-Id>","index":K,"ns":<CLOCK_MONOTONIC>}
 * (the same shape as `infermeter serve --truth-log`, so bench/join_truth.c
 * reads both). Buffered; flushed at exit (SIGINT/SIGTERM).
 *
 * --first-ms F: the first event F ms after the request arrived (a server's
 * TTFT; default: one GAP), the others as above.
 *
 *   sse_stub [--port P] [--gap-ms G] [--per-write K] [--first-ms F] [--truth-log FILE]
 *
 * Prints "listening on http://127.0.0.1:PORT" first.
 * Build: cc -O2 -o sse_stub bench/sse_stub.c */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define RBUF 65536
#define WBUF 65536

struct conn {
  int fd;
  char in[RBUF];
  size_t in_len;
  bool streaming, chat, usage;
  char id[96];
  int max_tokens, sent;
  int64_t due; /* next event's instant; heap key */
  size_t heap_at;
  char out[WBUF]; /* bytes not yet taken by the socket */
  size_t out_len;
};

static int64_t gap_ns = 10000000;
static int64_t first_ns = -1; /* --first-ms (-1: one gap) */
static int per_write = 1;
static FILE *truth;
static volatile sig_atomic_t stop;
static struct conn **heap;
static size_t heap_n, heap_cap;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- a binary min-heap of streams by due instant ------------------------ */
static void heap_swap(size_t a, size_t b) {
  struct conn *t = heap[a];
  heap[a] = heap[b];
  heap[b] = t;
  heap[a]->heap_at = a;
  heap[b]->heap_at = b;
}
static void heap_up(size_t i) {
  while (i && heap[(i - 1) / 2]->due > heap[i]->due) {
    heap_swap(i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
}
static void heap_down(size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < heap_n && heap[l]->due < heap[m]->due)
      m = l;
    if (r < heap_n && heap[r]->due < heap[m]->due)
      m = r;
    if (m == i)
      return;
    heap_swap(i, m);
    i = m;
  }
}
static void heap_push(struct conn *c) {
  if (heap_n == heap_cap) {
    heap_cap = heap_cap ? 2 * heap_cap : 1024;
    heap = realloc(heap, heap_cap * sizeof *heap);
    if (!heap) {
      perror("realloc");
      exit(1);
    }
  }
  heap[heap_n] = c;
  c->heap_at = heap_n++;
  heap_up(c->heap_at);
}
static void heap_remove(struct conn *c) {
  if (c->heap_at == SIZE_MAX)
    return;
  size_t i = c->heap_at;
  heap_n--;
  if (i != heap_n) {
    heap[i] = heap[heap_n];
    heap[i]->heap_at = i;
    heap_up(i);
    heap_down(heap[i]->heap_at);
  }
  c->heap_at = SIZE_MAX;
}

/* ---- output ---------------------------------------------------------------- */
static void conn_close(int ep, struct conn *c) {
  heap_remove(c);
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  free(c);
}

/* Appends a chunked-encoding frame holding data[0..n). */
static bool put_frame(struct conn *c, const char *data, size_t n) {
  char head[16];
  int h = snprintf(head, sizeof head, "%zx\r\n", n);
  if (c->out_len + (size_t)h + n + 2 > WBUF)
    return false;
  memcpy(c->out + c->out_len, head, (size_t)h);
  memcpy(c->out + c->out_len + h, data, n);
  memcpy(c->out + c->out_len + h + n, "\r\n", 2);
  c->out_len += (size_t)h + n + 2;
  return true;
}

/* Writes what is buffered; false when the connection failed. */
static bool flush_out(struct conn *c) {
  size_t off = 0;
  while (off < c->out_len) {
    ssize_t w = write(c->fd, c->out + off, c->out_len - off);
    if (w > 0) {
      off += (size_t)w;
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    } else {
      return false;
    }
  }
  memmove(c->out, c->out + off, c->out_len - off);
  c->out_len -= off;
  return true;
}

static void put_event(struct conn *c, int64_t created) {
  char ev[512];
  int n;
  bool last = c->sent + 1 == c->max_tokens;
  const char *fin = last ? "\"length\"" : "null";
  if (c->chat)
    n = snprintf(ev, sizeof ev,
                 "data: {\"id\":\"%s\",\"object\":\"chat.completion.chunk\",\"created\":%" PRId64
                 ",\"model\":\"stub\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok\"},"
                 "\"finish_reason\":%s}]}\n\n",
                 c->id, created, fin);
  else
    n = snprintf(ev, sizeof ev,
                 "data: {\"id\":\"%s\",\"object\":\"text_completion\",\"created\":%" PRId64
                 ",\"model\":\"stub\",\"choices\":[{\"index\":0,\"text\":\" tok\","
                 "\"finish_reason\":%s}]}\n\n",
                 c->id, created, fin);
  put_frame(c, ev, (size_t)n);
  if (last && c->usage) {
    n = snprintf(ev, sizeof ev,
                 "data: {\"id\":\"%s\",\"object\":\"%s\",\"created\":%" PRId64
                 ",\"model\":\"stub\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,"
                 "\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n",
                 c->id, c->chat ? "chat.completion.chunk" : "text_completion", created,
                 c->max_tokens, c->max_tokens + 1);
    put_frame(c, ev, (size_t)n);
  } else if (last) {
    put_frame(c, "data: [DONE]\n\n", 14);
  }
  if (last) {
    memcpy(c->out + c->out_len, "0\r\n\r\n", 5);
    c->out_len += 5;
  }
}

/* Writes the stream's next event(s); false when the connection failed. */
static bool emit(struct conn *c) {
  int k = gap_ns ? 1 : per_write;
  int64_t created = (int64_t)time(NULL);
  for (int i = 0; i < k && c->sent < c->max_tokens; i++) {
    if (c->out_len + 1200 > WBUF)
      break; /* the client is slow: wait for the socket */
    put_event(c, created);
    if (truth)
      fprintf(truth, "{\"type\":\"chunk\",\"id\":\"%s\",\"index\":%d,\"ns\":%" PRId64 "}\n", c->id,
              c->sent, now_ns());
    c->sent++;
  }
  if (!flush_out(c))
    return false;
  if (c->sent == c->max_tokens)
    c->streaming = false;
  return true;
}

/* ---- requests ---------------------------------------------------------------- */
static const char *find_header(const char *head, size_t n, const char *name, size_t *len) {
  size_t nl = strlen(name);
  for (const char *p = head; p + nl < head + n; p++) {
    if ((p == head || p[-1] == '\n') && !strncasecmp(p, name, nl) && p[nl] == ':') {
      const char *v = p + nl + 1;
      while (*v == ' ')
        v++;
      const char *e = memchr(v, '\r', (size_t)(head + n - v));
      *len = e ? (size_t)(e - v) : 0;
      return v;
    }
  }
  return NULL;
}

/* Handles every complete request in c->in; false when the connection must
 * close. */
static bool on_input(struct conn *c) {
  static uint64_t seq;
  while (!c->streaming && c->in_len) {
    char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
    if (!end)
      return c->in_len < RBUF;
    size_t head_len = (size_t)(end - c->in) + 4, clen = 0, vl;
    const char *v = find_header(c->in, head_len, "Content-Length", &vl);
    if (v)
      clen = strtoul(v, NULL, 10);
    if (head_len + clen > RBUF)
      return false;
    if (c->in_len < head_len + clen)
      return true;
    bool post = !strncmp(c->in, "POST ", 5);
    if (post) {
      v = find_header(c->in, head_len, "X-Request-Id", &vl);
      if (v && vl && vl < sizeof c->id) {
        memcpy(c->id, v, vl);
        c->id[vl] = 0;
      } else {
        snprintf(c->id, sizeof c->id, "stub-%" PRIu64, ++seq);
      }
      c->chat = memmem(c->in, head_len, "/chat/", 6) != NULL;
      c->usage = memmem(c->in + head_len, clen, "\"include_usage\":true", 20) != NULL;
      c->max_tokens = 100;
      char *mt = memmem(c->in + head_len, clen, "\"max_tokens\":", 13);
      if (mt)
        c->max_tokens = atoi(mt + 13);
      if (c->max_tokens < 1)
        c->max_tokens = 1;
      static const char hdr[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                "Transfer-Encoding: chunked\r\n\r\n";
      memcpy(c->out + c->out_len, hdr, sizeof hdr - 1);
      c->out_len += sizeof hdr - 1;
      c->streaming = true;
      c->sent = 0;
      c->due = now_ns() + (first_ns >= 0 ? first_ns : gap_ns);
      heap_push(c);
    } else {
      const char *body = "";
      if (memmem(c->in, head_len, "/v1/models", 10))
        body = "{\"object\":\"list\",\"data\":[{\"id\":\"stub\",\"object\":\"model\","
               "\"owned_by\":\"bench\",\"max_model_len\":1000000}]}";
      char r[512];
      int n = snprintf(r, sizeof r,
                       "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                       "Content-Length: %zu\r\n\r\n%s",
                       strlen(body), body);
      if (c->out_len + (size_t)n > WBUF)
        return false;
      memcpy(c->out + c->out_len, r, (size_t)n);
      c->out_len += (size_t)n;
    }
    memmove(c->in, c->in + head_len + clen, c->in_len - head_len - clen);
    c->in_len -= head_len + clen;
    if (!flush_out(c))
      return false;
  }
  return true;
}

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

int main(int argc, char **argv) {
  int port = 0;
  const char *truth_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--port") && i + 1 < argc)
      port = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--gap-ms") && i + 1 < argc)
      gap_ns = (int64_t)(atof(argv[++i]) * 1e6);
    else if (!strcmp(argv[i], "--first-ms") && i + 1 < argc)
      first_ns = (int64_t)(atof(argv[++i]) * 1e6);
    else if (!strcmp(argv[i], "--per-write") && i + 1 < argc)
      per_write = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--truth-log") && i + 1 < argc)
      truth_path = argv[++i];
    else {
      fprintf(stderr, "usage: sse_stub [--port P] [--gap-ms G] [--per-write K] "
                      "[--first-ms F] [--truth-log FILE]\n");
      return 2;
    }
  }
  if (per_write < 1)
    per_write = 1;
  if (truth_path) {
    truth = fopen(truth_path, "w");
    if (!truth) {
      perror(truth_path);
      return 1;
    }
    setvbuf(truth, NULL, _IOFBF, 1 << 22);
  }
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 4096) ||
      getsockname(ls, (struct sockaddr *)&a, &al)) {
    perror("listen");
    return 1;
  }
  printf("listening on http://127.0.0.1:%d\n", ntohs(a.sin_port));
  fflush(stdout);
  int ep = epoll_create1(0), tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
  ev.data.ptr = &tfd;
  epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
  struct epoll_event evs[256];
  int64_t armed = -1;
  while (!stop) {
    /* Streams due now (gap 0: every stream each turn) write first. */
    int64_t t = now_ns();
    while (heap_n && heap[0]->due <= t) {
      struct conn *c = heap[0];
      heap_remove(c);
      if (!emit(c)) {
        conn_close(ep, c);
        continue;
      }
      if (!c->streaming && c->in_len && !on_input(c)) {
        conn_close(ep, c);
        continue;
      }
      if (c->streaming) {
        c->due = gap_ns ? c->due + gap_ns : t + 1; /* gap 0: once per turn */
        if (!gap_ns && c->out_len) {
          /* The socket is full: wait for EPOLLOUT instead of spinning. */
          ev.events = EPOLLIN | EPOLLOUT;
          ev.data.ptr = c;
          epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
          continue;
        }
        heap_push(c);
      }
    }
    int timeout = -1;
    if (heap_n) {
      /* A stream already due (gap 0: every turn) spins; one due later (a
       * gap, or --first-ms) waits on the timer. */
      if (heap[0]->due <= now_ns()) {
        timeout = 0;
      } else if (heap[0]->due != armed) {
        struct itimerspec its = {0};
        its.it_value.tv_sec = heap[0]->due / 1000000000;
        its.it_value.tv_nsec = heap[0]->due % 1000000000;
        timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
        armed = heap[0]->due;
      }
    }
    int n = epoll_wait(ep, evs, 256, timeout);
    for (int i = 0; i < n; i++) {
      if (evs[i].data.ptr == NULL) {
        for (;;) {
          int fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK);
          if (fd < 0)
            break;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          struct conn *c = calloc(1, sizeof *c);
          if (!c) {
            close(fd);
            continue;
          }
          c->fd = fd;
          c->heap_at = SIZE_MAX;
          ev.events = EPOLLIN;
          ev.data.ptr = c;
          epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        }
      } else if (evs[i].data.ptr == &tfd) {
        uint64_t x;
        if (read(tfd, &x, sizeof x) < 0 && errno != EAGAIN)
          perror("timerfd");
        armed = -1;
      } else {
        struct conn *c = evs[i].data.ptr;
        bool ok = true;
        if (evs[i].events & EPOLLOUT) {
          ok = flush_out(c);
          if (ok && !c->out_len) {
            ev.events = EPOLLIN;
            ev.data.ptr = c;
            epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
            if (c->streaming && c->heap_at == SIZE_MAX) {
              c->due = now_ns();
              heap_push(c);
            }
          }
        }
        if (ok && (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
          ssize_t r = read(c->fd, c->in + c->in_len, RBUF - c->in_len);
          if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
            ok = false;
          else if (r > 0) {
            c->in_len += (size_t)r;
            ok = on_input(c);
          }
        }
        if (!ok)
          conn_close(ep, c);
      }
    }
  }
  if (truth)
    fclose(truth);
  return 0;
}
