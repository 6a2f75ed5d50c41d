/* The load engine's own HTTP/1.1 client transport (docs/architecture.md
 * "Transports"): plain http:// targets, driven on the loader's epoll loop
 * with nonblocking sockets and no library in between. One recv per
 * readable event, one clock read per recv, the response parsed in one pass
 * (load/h1.h) straight into the same body path as libcurl's write
 * callback (loader_http.c, im__load_body).
 *
 * Semantics follow the libcurl path it replaces: the same timestamps
 * (t_start when the attempt is handed over, t_send when the request is
 * about to be written after the connect, t_hdr at the status line), a
 * keep-alive pool per target, libcurl's connect and total timeouts, and
 * every failure reported as the CURLcode libcurl gives for it, so
 * im__load_classify and im__load_cancel_finish see the same thing. A
 * reused connection the server closed before answering is retried once on
 * a new one (as libcurl does).
 *
 * Failures found while starting an attempt are never finished on the
 * spot (finish_attempt may start another one, which may fail too): they
 * wait on a list that the loop ends right after (im__load_h1_collect). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/log.h"
#include "load/h1.h"
#include "load/loader_int.h"
#include "net/net.h"

#define H1_MAX_ADDRS 4
/* One recv's buffer, shared by every connection of the loop (the parser
 * keeps what it needs): SSE events are small, a burst of them fits. */
#define H1_RECV_BUF (64u << 10)
/* Deadline lists (attempt.dl_list). */
enum { DL_NONE, DL_TOTAL, DL_CANCEL, DL_NOW };

struct h1_target {
  struct sockaddr_storage addr[H1_MAX_ADDRS];
  socklen_t addr_len[H1_MAX_ADDRS];
  int n_addr;
  char host[300];                /* the Host header's value */
  char prefix[1024];             /* the base URL's path ("" for none) */
  struct h1_conn *idle;          /* idle connections, most recent first */
};

struct h1_conn {
  int fd;
  struct h1_target *t;
  struct attempt *a;             /* the attempt on it; NULL when idle */
  struct h1_conn *iprev, *inext; /* the target's idle list */
  struct h1_conn *cprev, *cnext; /* connecting, by deadline */
  struct im_h1 p;
  int addr_i;
  uint32_t events;               /* registered with epoll */
  bool connecting;
  size_t sent;                   /* request bytes written */
  long port;
  int64_t connect_deadline;
};

struct dl_list {
  int64_t dur;                   /* ns; 0: no deadline */
  struct attempt *head, *tail;
};

struct im__load_h1 {
  struct h1_target *targets;
  uint32_t n_targets;
  struct h1_conn **by_fd;
  size_t cap_fd;
  uint32_t open;                 /* connections open */
  struct attempt *wait_head, *wait_tail; /* waiting for a --max-connections seat */
  int tfd;
  int64_t armed;                 /* absolute ns the timer holds; -1 off */
  struct dl_list dl[4];          /* by DL_*: total, cancel, failed now */
  struct h1_conn *conn_head, *conn_tail;
  int64_t connect_ns;
  bool rx_stamps;                /* the kernel's receive timestamps (SO_TIMESTAMPNS) */
  char buf[H1_RECV_BUF];
};

/* ---- choosing the transport --------------------------------------------- */

/* A base URL the fast path can reach: http://host[:port][/path], no
 * credentials, query or fragment. Fills host (as written, for Host:),
 * the name to resolve, port and the path prefix. */
static bool parse_url(const char *url, char *host, size_t host_cap, char *name, size_t name_cap,
                      char *port, char *prefix, size_t prefix_cap) {
  if (strncasecmp(url, "http://", 7) != 0)
    return false;
  const char *h = url + 7;
  if (strpbrk(h, "@?# \t\r\n"))
    return false;
  const char *slash = strchr(h, '/');
  size_t hl = slash ? (size_t)(slash - h) : strlen(h);
  if (!hl || hl >= host_cap || hl >= name_cap || strlen(slash ? slash : "") >= prefix_cap)
    return false;
  memcpy(host, h, hl);
  host[hl] = '\0';
  snprintf(prefix, prefix_cap, "%s", slash ? slash : "");
  const char *pc;
  if (host[0] == '[') {
    const char *rb = strchr(host, ']');
    if (!rb || rb == host + 1)
      return false;
    snprintf(name, name_cap, "%.*s", (int)(rb - host - 1), host + 1);
    pc = rb[1] == ':' ? rb + 1 : rb[1] ? NULL : rb + 1;
    if (!pc)
      return false;
  } else {
    pc = strchr(host, ':');
    snprintf(name, name_cap, "%.*s", (int)(pc ? (size_t)(pc - host) : hl), host);
    if (!name[0])
      return false;
  }
  if (pc && *pc == ':') {
    char *end;
    long v = strtol(pc + 1, &end, 10);
    if (pc[1] < '0' || pc[1] > '9' || *end || v < 1 || v > 65535)
      return false;
    snprintf(port, 8, "%ld", v);
  } else {
    snprintf(port, 8, "80");
  }
  return true;
}

/* Request headers the fast path sends itself, or that libcurl would treat
 * specially: a --header naming one goes through libcurl. */
static bool header_simple(const char *h) {
  static const char *const own[] = {"host", "content-length", "transfer-encoding", "connection",
                                    "expect", "content-type", "accept", "te", "upgrade"};
  const char *colon = strchr(h, ':');
  if (!colon || colon == h || strpbrk(h, "\r\n"))
    return false;
  for (const char *p = h; p < colon; p++)
    if (*p <= ' ' || *p >= 0x7f || strchr("()<>@,;:\\\"/[]?={}", *p))
      return false;
  const char *v = colon + 1;
  while (*v == ' ' || *v == '\t')
    v++;
  if (!*v)
    return false; /* "K:" removes a header in libcurl */
  for (size_t i = 0; i < sizeof own / sizeof *own; i++)
    if (strlen(own[i]) == (size_t)(colon - h) && !strncasecmp(h, own[i], (size_t)(colon - h)))
      return false;
  return true;
}

int im_load_transport_pick(const struct im_load_transport_in *in, char *why, size_t cap) {
  if (in->mode == IM_TRANSPORT_CURL)
    return IM_TRANSPORT_CURL;
  const char *no = NULL;
  char host[300], name[300], port[8], prefix[1024];
  for (uint32_t i = 0; i < (in->n_urls ? in->n_urls : 1) && !no; i++) {
    const char *u = in->n_urls ? in->urls[i] : in->url;
    if (!u || !parse_url(u, host, sizeof host, name, sizeof name, port, prefix, sizeof prefix))
      no = "the URL is not a plain http://host[:port][/path] URL (TLS, credentials or a query "
           "need libcurl)";
  }
  if (!no && in->http2)
    no = "--http2 needs libcurl";
  else if (!no && in->net && in->net->proxy)
    no = "--proxy needs libcurl";
  else if (!no && in->net && in->net->unix_socket)
    no = "--unix-socket needs libcurl";
  for (const char *const *h = in->headers; !no && h && *h; h++)
    if (!header_simple(*h))
      no = "a --header that libcurl treats specially (Host, Content-Type, Accept, Expect, "
           "Connection, Content-Length, an empty value) needs libcurl";
  if (!no && in->mode == IM_TRANSPORT_AUTO &&
      (getenv("http_proxy") || getenv("all_proxy") || getenv("ALL_PROXY")))
    no = "a proxy is set in the environment (http_proxy, all_proxy): libcurl follows it";
  if (!no)
    return IM_TRANSPORT_H1;
  if (in->mode == IM_TRANSPORT_H1) {
    snprintf(why, cap, "--transport h1: %s", no);
    return -1;
  }
  return IM_TRANSPORT_CURL;
}

const char *im_load_transport_name(int t) {
  return t == IM_TRANSPORT_H1 ? "h1" : t == IM_TRANSPORT_CURL ? "curl" : "auto";
}

/* ---- setup -------------------------------------------------------------- */

static enum im_err target_init(struct h1_target *t, const char *url) {
  char name[300], port[8];
  if (!parse_url(url, t->host, sizeof t->host, name, sizeof name, port, t->prefix,
                 sizeof t->prefix))
    return IM_INVAL;
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(name, port, &hints, &res) != 0)
    return IM_OK; /* no address: every attempt fails to resolve, as libcurl's */
  for (struct addrinfo *ai = res; ai && t->n_addr < H1_MAX_ADDRS; ai = ai->ai_next) {
    if (ai->ai_addrlen > sizeof t->addr[0])
      continue;
    memcpy(&t->addr[t->n_addr], ai->ai_addr, ai->ai_addrlen);
    t->addr_len[t->n_addr++] = ai->ai_addrlen;
  }
  freeaddrinfo(res);
  return IM_OK;
}

enum im_err im__load_h1_setup(struct loader *L) {
  const struct im_load_config *c = L->cfg;
  struct im__load_h1 *h = calloc(1, sizeof *h);
  if (!h)
    return IM_NOMEM;
  h->tfd = -1;
  h->armed = -1;
  h->n_targets = c->n_urls > 1 ? c->n_urls : 1;
  h->targets = calloc(h->n_targets, sizeof *h->targets);
  h->cap_fd = 1024;
  h->by_fd = calloc(h->cap_fd, sizeof *h->by_fd);
  if (!h->targets || !h->by_fd) {
    L->h1 = h;
    return IM_NOMEM;
  }
  L->h1 = h;
  for (uint32_t i = 0; i < h->n_targets; i++)
    if (target_init(&h->targets[i], c->n_urls > 1 ? c->base_urls[i] : c->base_url) != IM_OK)
      return IM_INVAL;
  /* libcurl's: CONNECTTIMEOUT_MS (0: its default, 300 s) and TIMEOUT_MS. */
  h->connect_ns = c->timeout_connect_ns / 1000000 * 1000000;
  if (h->connect_ns <= 0)
    h->connect_ns = 300 * 1000000000LL;
  /* Token times from the kernel's receipt of the bytes, not from when the
   * loop read them (docs/metrics.md §10); INFERMETER_NO_RX_TIMESTAMPS=1
   * reads the clock at the read instead, as before. */
  const char *no_ts = getenv("INFERMETER_NO_RX_TIMESTAMPS");
  h->rx_stamps = !(no_ts && *no_ts && strcmp(no_ts, "0"));
  struct attempt probe = {.cancel = false};
  h->dl[DL_TOTAL].dur = (int64_t)im__load_cancel_timeout_ms(L, &probe) * 1000000;
  probe.cancel = true;
  h->dl[DL_CANCEL].dur = (int64_t)im__load_cancel_timeout_ms(L, &probe) * 1000000;
  h->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = h->tfd};
  if (h->tfd < 0 || epoll_ctl(L->ep, EPOLL_CTL_ADD, h->tfd, &ev) < 0) {
    im_error("load engine: h1 timer: %s", strerror(errno));
    return IM_SYS;
  }
  return IM_OK;
}

static void conn_close(struct loader *L, struct h1_conn *cn);

void im__load_h1_teardown(struct loader *L) {
  struct im__load_h1 *h = L->h1;
  if (!h)
    return;
  for (size_t fd = 0; h->by_fd && fd < h->cap_fd; fd++)
    if (h->by_fd[fd])
      conn_close(L, h->by_fd[fd]);
  if (h->tfd >= 0)
    close(h->tfd);
  free(h->by_fd);
  free(h->targets);
  free(h);
  L->h1 = NULL;
}

/* ---- the request -------------------------------------------------------- */

/* prefix, value and CRLF onto b. */
static enum im_err append_line(struct im_buf *b, const char *prefix, const char *value) {
  enum im_err e = im_buf_puts(b, prefix);
  if (!e)
    e = im_buf_puts(b, value);
  if (!e)
    e = im_buf_append(b, "\r\n", 2);
  return e;
}

enum im_err im__load_h1_build(struct loader *L, struct attempt *a, const char *path,
                              const char *const *lines) {
  const struct im_load_config *c = L->cfg;
  const struct h1_target *t = &L->h1->targets[c->n_urls > 1 && a->rec.target ? a->rec.target - 1 : 0];
  struct im_buf *b = &a->h1_head;
  im_buf_reset(b);
  /* The head in one allocation (a realloc per doubling was most of the
   * appends' cost): the fixed text and lines are under 256 bytes. */
  size_t size = 256 + strlen(t->prefix) + strlen(t->host) + (c->api_key ? strlen(c->api_key) : 0);
  for (const char *const *l = lines; *l; l++)
    size += strlen(*l);
  for (const char *const *hd = c->headers; hd && *hd; hd++)
    size += strlen(*hd) + 2;
  im_buf_reserve_hint(b, size);
  /* Appends, not printf: the head is built once per request and printf's
   * format parsing was most of its cost (about 6,000 instructions). */
  enum im_err e = IM_OK;
  const char *const start[] = {"POST ", t->prefix, path, " HTTP/1.1\r\nHost: ", t->host, "\r\n"};
  for (size_t i = 0; !e && i < sizeof start / sizeof *start; i++)
    e = im_buf_puts(b, start[i]);
  for (const char *const *l = lines; !e && *l; l++)
    e = append_line(b, "", *l);
  if (!e && c->api_key)
    e = append_line(b, "Authorization: Bearer ", c->api_key);
  for (const char *const *hd = c->headers; !e && hd && *hd; hd++)
    e = append_line(b, "", *hd);
  if (!e)
    e = im_buf_puts(b, "Content-Length: ");
  if (!e)
    e = im_buf_put_i64(b, (int64_t)a->body.len);
  if (!e)
    e = im_buf_append(b, "\r\n\r\n", 4);
  if (e)
    im_buf_reset(b);
  return e;
}

/* ---- deadlines ---------------------------------------------------------- */

static void dl_unlink(struct loader *L, struct attempt *a) {
  if (a->dl_list == DL_NONE)
    return;
  struct dl_list *d = &L->h1->dl[a->dl_list];
  if (a->dl_prev)
    a->dl_prev->dl_next = a->dl_next;
  else
    d->head = a->dl_next;
  if (a->dl_next)
    a->dl_next->dl_prev = a->dl_prev;
  else
    d->tail = a->dl_prev;
  a->dl_prev = a->dl_next = NULL;
  a->dl_list = DL_NONE;
}

/* Appends: deadlines of one list are t_start + its duration, and t_start
 * only grows, so every list stays sorted. */
static void dl_append(struct loader *L, struct attempt *a, uint8_t list) {
  struct dl_list *d = &L->h1->dl[list];
  a->dl_list = list;
  a->dl_next = NULL;
  a->dl_prev = d->tail;
  if (d->tail)
    d->tail->dl_next = a;
  else
    d->head = a;
  d->tail = a;
}

static void conn_list_unlink(struct im__load_h1 *h, struct h1_conn *cn) {
  if (!cn->connecting)
    return;
  if (cn->cprev)
    cn->cprev->cnext = cn->cnext;
  else
    h->conn_head = cn->cnext;
  if (cn->cnext)
    cn->cnext->cprev = cn->cprev;
  else
    h->conn_tail = cn->cprev;
  cn->cprev = cn->cnext = NULL;
  cn->connecting = false;
}

/* Arms the timer at the earliest deadline when that is earlier than the armed one. */
static void arm(struct loader *L) {
  struct im__load_h1 *h = L->h1;
  int64_t t = -1;
  for (int i = DL_TOTAL; i <= DL_CANCEL; i++)
    if (h->dl[i].head && (t < 0 || h->dl[i].head->rec.t_start + h->dl[i].dur < t))
      t = h->dl[i].head->rec.t_start + h->dl[i].dur;
  if (h->conn_head && (t < 0 || h->conn_head->connect_deadline < t))
    t = h->conn_head->connect_deadline;
  int64_t abs = t < 0 ? -1 : L->t0 + t;
  /* Only an earlier deadline re-arms: when the earliest one went away (its
   * request ended, the usual case) the timer fires early, finds nothing
   * due and is armed again then. Re-arming on every change was a
   * timerfd_settime per request. */
  if (abs == h->armed || (h->armed > 0 && (abs < 0 || abs > h->armed)))
    return;
  h->armed = abs;
  struct itimerspec its;
  memset(&its, 0, sizeof its);
  if (abs > 0) {
    its.it_value.tv_sec = abs / 1000000000;
    its.it_value.tv_nsec = abs % 1000000000;
  }
  timerfd_settime(h->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* ---- connections -------------------------------------------------------- */

static void set_events(struct loader *L, struct h1_conn *cn, uint32_t ev) {
  if (cn->events == ev)
    return;
  struct epoll_event e = {.events = ev, .data.fd = cn->fd};
  epoll_ctl(L->ep, cn->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, cn->fd, &e);
  cn->events = ev;
}

static void idle_unlink(struct h1_conn *cn) {
  if (cn->iprev)
    cn->iprev->inext = cn->inext;
  else if (cn->t->idle == cn)
    cn->t->idle = cn->inext;
  if (cn->inext)
    cn->inext->iprev = cn->iprev;
  cn->iprev = cn->inext = NULL;
}

static void conn_close(struct loader *L, struct h1_conn *cn) {
  struct im__load_h1 *h = L->h1;
  conn_list_unlink(h, cn);
  if (!cn->a)
    idle_unlink(cn);
  else
    cn->a->conn = NULL;
  if (cn->events)
    epoll_ctl(L->ep, EPOLL_CTL_DEL, cn->fd, NULL);
  h->by_fd[cn->fd] = NULL;
  close(cn->fd);
  im_h1_cleanup(&cn->p);
  h->open--;
  free(cn);
}

/* Ends an attempt with a CURLcode: the connection goes back to the pool
 * (reuse) or is closed, and the attempt waits for im__load_h1_collect. */
static void end(struct loader *L, struct attempt *a, CURLcode res, bool reuse);

static void fail_errno(struct loader *L, struct attempt *a, int e) {
  a->os_errno = e;
  end(L, a, CURLE_COULDNT_CONNECT, false);
}

static bool grow_fd(struct im__load_h1 *h, int fd) {
  if ((size_t)fd < h->cap_fd)
    return true;
  size_t cap = h->cap_fd;
  while (cap <= (size_t)fd)
    cap *= 2;
  struct h1_conn **p = realloc(h->by_fd, cap * sizeof *p);
  if (!p)
    return false;
  memset(p + h->cap_fd, 0, (cap - h->cap_fd) * sizeof *p);
  h->by_fd = p;
  h->cap_fd = cap;
  return true;
}

static void send_request(struct loader *L, struct h1_conn *cn);
static void on_connected(struct loader *L, struct h1_conn *cn);
static bool resend(struct loader *L, struct h1_conn *cn);

/* A connection that never got a socket (or lost it while connecting):
 * freed, its attempt returned. */
static struct attempt *conn_abandon(struct loader *L, struct h1_conn *cn) {
  struct attempt *a = cn->a;
  conn_list_unlink(L->h1, cn);
  cn->a = NULL;
  a->conn = NULL;
  L->h1->open--;
  im_h1_cleanup(&cn->p);
  free(cn);
  return a;
}

/* A socket to the target's address i, connecting (nonblocking). False
 * with the attempt ended when none could be made. */
static void connect_addr(struct loader *L, struct h1_conn *cn) {
  struct im__load_h1 *h = L->h1;
  struct h1_target *t = cn->t;
  for (; cn->addr_i < t->n_addr; cn->addr_i++) {
    int fam = t->addr[cn->addr_i].ss_family;
    int fd = socket(fam, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      int e = errno;
      fail_errno(L, conn_abandon(L, cn), e);
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (h->rx_stamps)
      setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    if (!grow_fd(h, fd)) {
      close(fd);
      end(L, conn_abandon(L, cn), CURLE_OUT_OF_MEMORY, false);
      return;
    }
    cn->fd = fd;
    cn->events = 0;
    h->by_fd[fd] = cn;
    int r = connect(fd, (const struct sockaddr *)&t->addr[cn->addr_i], t->addr_len[cn->addr_i]);
    if (r == 0) {
      on_connected(L, cn);
      return;
    }
    if (errno == EINPROGRESS) {
      set_events(L, cn, EPOLLOUT);
      return;
    }
    int e = errno;
    h->by_fd[fd] = NULL;
    close(fd);
    cn->a->os_errno = e;
  }
  /* No address left. */
  struct attempt *a = conn_abandon(L, cn);
  if (!t->n_addr)
    end(L, a, CURLE_COULDNT_RESOLVE_HOST, false);
  else
    end(L, a, CURLE_COULDNT_CONNECT, false);
}

static void open_conn(struct loader *L, struct attempt *a, struct h1_target *t) {
  struct im__load_h1 *h = L->h1;
  struct h1_conn *cn = calloc(1, sizeof *cn);
  if (!cn) {
    end(L, a, CURLE_OUT_OF_MEMORY, false);
    return;
  }
  cn->t = t;
  cn->a = a;
  cn->fd = -1;
  a->conn = cn;
  a->h1_opened = true;
  a->rec.t_send = -1;
  im_h1_init(&cn->p);
  h->open++;
  cn->connect_deadline = rel_now(L) + h->connect_ns;
  cn->connecting = true;
  cn->cprev = h->conn_tail;
  if (h->conn_tail)
    h->conn_tail->cnext = cn;
  else
    h->conn_head = cn;
  h->conn_tail = cn;
  connect_addr(L, cn);
}

static void on_connected(struct loader *L, struct h1_conn *cn) {
  conn_list_unlink(L->h1, cn);
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  if (getsockname(cn->fd, (struct sockaddr *)&ss, &sl) == 0)
    cn->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                              : ((struct sockaddr_in *)&ss)->sin_port);
  cn->a->local_port = cn->port; /* the record's connection, even if no answer comes */
  /* t_send: the request is about to be written (libcurl's PRETRANSFER). */
  cn->a->rec.t_send = rel_now(L);
  send_request(L, cn);
}

/* Writes what is left of the request (head and body in one writev). */
static void send_request(struct loader *L, struct h1_conn *cn) {
  struct attempt *a = cn->a;
  size_t hl = a->h1_head.len, total = hl + a->body.len;
  while (cn->sent < total) {
    struct iovec iov[2];
    int n = 0;
    if (cn->sent < hl)
      iov[n++] = (struct iovec){a->h1_head.data + cn->sent, hl - cn->sent};
    size_t bo = cn->sent > hl ? cn->sent - hl : 0;
    if (a->body.len > bo)
      iov[n++] = (struct iovec){a->body.data + bo, a->body.len - bo};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    ssize_t w = sendmsg(cn->fd, &m, MSG_NOSIGNAL);
    if (w > 0) {
      cn->sent += (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      set_events(L, cn, EPOLLIN | EPOLLRDHUP | EPOLLOUT);
      return;
    }
    a->os_errno = w < 0 ? errno : EPIPE;
    if (!resend(L, cn))
      end(L, a, CURLE_SEND_ERROR, false);
    return;
  }
  /* The mask of an idle connection too: a reused one costs no epoll_ctl. */
  set_events(L, cn, EPOLLIN | EPOLLRDHUP);
}

/* Serves the --max-connections queue after a seat freed (a closed
 * connection) or a connection came back idle. */
static void serve_waiters(struct loader *L) {
  struct im__load_h1 *h = L->h1;
  uint32_t cap = L->cfg->max_connections;
  while (h->wait_head) {
    struct attempt *a = h->wait_head;
    struct h1_target *t = &h->targets[L->cfg->n_urls > 1 && a->rec.target ? a->rec.target - 1 : 0];
    struct h1_conn *cn = t->idle;
    if (!cn && cap && h->open >= cap) {
      /* Full: an idle connection of another target gives its seat. */
      struct h1_conn *other = NULL;
      for (uint32_t i = 0; i < h->n_targets && !other; i++)
        other = h->targets[i].idle;
      if (!other)
        return;
      conn_close(L, other);
    }
    h->wait_head = a->wnext;
    if (!h->wait_head)
      h->wait_tail = NULL;
    a->wnext = NULL;
    a->h1_waiting = false;
    if (cn) {
      idle_unlink(cn);
      cn->a = a;
      a->conn = cn;
      a->local_port = cn->port;
      a->rec.t_send = rel_now(L);
      cn->sent = 0;
      im_h1_reset(&cn->p);
      send_request(L, cn);
    } else {
      open_conn(L, a, t);
    }
  }
}

static void wait_unlink(struct im__load_h1 *h, struct attempt *a) {
  if (!a->h1_waiting)
    return;
  struct attempt **pp = &h->wait_head, *prev = NULL;
  while (*pp && *pp != a) {
    prev = *pp;
    pp = &(*pp)->wnext;
  }
  if (*pp)
    *pp = a->wnext;
  if (h->wait_tail == a)
    h->wait_tail = prev;
  a->wnext = NULL;
  a->h1_waiting = false;
}

/* The attempt leaves its connection: kept for the next request (reuse,
 * with keep-alive) or closed. */
static void detach(struct loader *L, struct attempt *a, bool reuse) {
  struct h1_conn *cn = a->conn;
  if (!cn)
    return;
  a->conn = NULL;
  cn->a = NULL;
  if (!reuse || !L->cfg->keepalive) {
    conn_close(L, cn);
  } else {
    cn->inext = cn->t->idle;
    if (cn->inext)
      cn->inext->iprev = cn;
    cn->iprev = NULL;
    cn->t->idle = cn;
    set_events(L, cn, EPOLLIN | EPOLLRDHUP);
  }
  serve_waiters(L);
}

static void end(struct loader *L, struct attempt *a, CURLcode res, bool reuse) {
  wait_unlink(L->h1, a);
  dl_unlink(L, a);
  a->h1_res = res;
  dl_append(L, a, DL_NOW);
  detach(L, a, reuse);
}

void im__load_h1_start(struct loader *L, struct attempt *a) {
  struct im__load_h1 *h = L->h1;
  a->in_h1 = true;
  a->os_errno = 0;
  struct dl_list *d = &h->dl[a->cancel ? DL_CANCEL : DL_TOTAL];
  if (d->dur > 0)
    dl_append(L, a, a->cancel ? DL_CANCEL : DL_TOTAL);
  struct h1_target *t = &h->targets[L->cfg->n_urls > 1 && a->rec.target ? a->rec.target - 1 : 0];
  struct h1_conn *cn = t->idle;
  if (cn) { /* kept alive: the request goes out in this loop turn */
    idle_unlink(cn);
    cn->a = a;
    a->conn = cn;
    a->local_port = cn->port;
    a->rec.t_send = a->rec.t_start;
    cn->sent = 0;
    im_h1_reset(&cn->p);
    send_request(L, cn);
    return;
  }
  uint32_t cap = L->cfg->max_connections;
  if (cap && h->open >= cap) {
    a->h1_waiting = true;
    if (h->wait_tail)
      h->wait_tail->wnext = a;
    else
      h->wait_head = a;
    h->wait_tail = a;
    serve_waiters(L); /* an idle connection of another target may give its seat */
    return;
  }
  open_conn(L, a, t);
}

void im__load_h1_release(struct loader *L, struct attempt *a) {
  wait_unlink(L->h1, a);
  dl_unlink(L, a);
  detach(L, a, false); /* ended from outside (abort, our timeouts): the connection closes */
  a->in_h1 = false;
}

/* ---- reading ------------------------------------------------------------ */

struct read_ctx {
  struct attempt *a;
  struct h1_conn *cn;
  int64_t now;
  bool stop;
};

static void cb_status(void *ud, int code) {
  struct read_ctx *x = ud;
  im__load_on_status(x->a, code, x->now, x->cn->port);
}

static void cb_header(void *ud, const char *n, size_t nl, const char *v, size_t vl) {
  struct read_ctx *x = ud;
  if (nl == 11 && !strncasecmp(n, "retry-after", 11))
    im__load_on_retry_after(x->a, v, vl);
  else if (nl == 12 && !strncasecmp(n, "content-type", 12))
    im__load_on_ctype(x->a, v, vl);
}

static int cb_body(void *ud, const char *d, size_t n) {
  struct read_ctx *x = ud;
  return !im__load_body(x->a, d, n, x->now);
}

static const struct im_h1_cb h1_cbs = {cb_status, cb_header, cb_body};

static CURLcode rc_code(enum im_h1_rc rc) {
  switch (rc) {
  case IM_H1_STOP: return CURLE_WRITE_ERROR;
  case IM_H1_E_CHUNK: return CURLE_RECV_ERROR; /* libcurl: a chunked-encoding problem */
  case IM_H1_E_NOTHING: return CURLE_GOT_NOTHING;
  case IM_H1_E_PARTIAL: return CURLE_PARTIAL_FILE;
  case IM_H1_E_NOMEM: return CURLE_OUT_OF_MEMORY;
  default: return CURLE_WEIRD_SERVER_REPLY;
  }
}

/* A reused connection that ended before any byte of the answer: the
 * server had closed it; the request goes again on a new one (once). */
static bool resend(struct loader *L, struct h1_conn *cn) {
  struct attempt *a = cn->a;
  if (a->h1_opened || a->h1_resent || cn->p.any)
    return false;
  struct h1_target *t = cn->t;
  a->h1_resent = true;
  a->os_errno = 0;
  conn_close(L, cn);
  open_conn(L, a, t);
  return true;
}

/* See loader_int.h. */
int64_t im__load_rx_stamp(struct msghdr *m, int64_t t0, int64_t now) {
  for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS)
      continue;
    struct timespec ts, real;
    memcpy(&ts, CMSG_DATA(c), sizeof ts);
    if (!ts.tv_sec || clock_gettime(CLOCK_REALTIME, &real))
      return -1;
    /* Realtime to monotonic through the two clocks' offset now: the
     * monotonic clock read after the realtime one, so a pause between the
     * two reads makes the time later, never earlier than the arrival. */
    int64_t rel = im_now_ns() - t0;
    int64_t ago = ((int64_t)real.tv_sec - (int64_t)ts.tv_sec) * 1000000000 +
                  ((int64_t)real.tv_nsec - (int64_t)ts.tv_nsec);
    int64_t t = rel - ago;
    return t < now ? t : now;
  }
  return -1;
}

static void on_readable(struct loader *L, struct h1_conn *cn) {
  struct im__load_h1 *h = L->h1;
  ssize_t n;
  union {
    char buf[CMSG_SPACE(sizeof(struct timespec)) * 2];
    struct cmsghdr align;
  } ctl;
  struct iovec iov = {.iov_base = h->buf, .iov_len = sizeof h->buf};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  do {
    m.msg_control = h->rx_stamps ? ctl.buf : NULL;
    m.msg_controllen = h->rx_stamps ? sizeof ctl.buf : 0;
    n = recvmsg(cn->fd, &m, 0);
  } while (n < 0 && errno == EINTR);
  struct attempt *a = cn->a;
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      return;
    a->os_errno = errno;
    if (!resend(L, cn))
      end(L, a, CURLE_RECV_ERROR, false);
    return;
  }
  if (n == 0) {
    enum im_h1_rc rc = im_h1_eof(&cn->p);
    if (rc == IM_H1_E_NOTHING && resend(L, cn))
      return;
    end(L, a, rc == IM_H1_DONE ? CURLE_OK : rc_code(rc), false);
    return;
  }
  /* One time per received buffer: every event in it arrived then (the
   * kernel's receipt of its last byte when stamped, else the read). Never
   * before the previous buffer of the answer. */
  struct read_ctx x = {.a = a, .cn = cn, .now = rel_now(L)};
  int64_t at = h->rx_stamps ? im__load_rx_stamp(&m, L->t0, x.now) : -1;
  if (at >= 0)
    x.now = at > a->last_chunk ? at : a->last_chunk;
  im__load_recv_lag(L, a, rel_now(L), at >= 0);
  size_t used = 0;
  enum im_h1_rc rc = im_h1_feed(&cn->p, h->buf, (size_t)n, &h1_cbs, &x, &used);
  if (rc == IM_H1_MORE)
    return;
  if (rc == IM_H1_DONE) {
    /* Bytes past the answer, or a request not all written: not reusable. */
    bool reuse = used == (size_t)n && im_h1_reusable(&cn->p) &&
                 cn->sent == a->h1_head.len + a->body.len;
    end(L, a, CURLE_OK, reuse);
    return;
  }
  end(L, a, rc_code(rc), false);
}

bool im__load_h1_event(struct loader *L, int fd, uint32_t events) {
  struct im__load_h1 *h = L->h1;
  if (fd == h->tfd) {
    uint64_t v;
    ssize_t r = read(fd, &v, sizeof v);
    (void)r;
    h->armed = -1;
    int64_t now = rel_now(L);
    for (int i = DL_TOTAL; i <= DL_CANCEL; i++)
      while (h->dl[i].head && h->dl[i].head->rec.t_start + h->dl[i].dur <= now)
        end(L, h->dl[i].head, CURLE_OPERATION_TIMEDOUT, false);
    while (h->conn_head && h->conn_head->connect_deadline <= now) {
      struct attempt *a = h->conn_head->a;
      end(L, a, CURLE_OPERATION_TIMEDOUT, false);
    }
    return true;
  }
  if (fd < 0 || (size_t)fd >= h->cap_fd || !h->by_fd[fd])
    return false;
  struct h1_conn *cn = h->by_fd[fd];
  if (!cn->a) { /* idle: the server closed it (or spoke out of turn) */
    conn_close(L, cn);
    serve_waiters(L);
    return true;
  }
  if (cn->connecting) {
    if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
      return true;
    int err = 0;
    socklen_t sl = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
      err = errno;
    if (!err) {
      on_connected(L, cn);
      return true;
    }
    cn->a->os_errno = err;
    epoll_ctl(L->ep, EPOLL_CTL_DEL, fd, NULL);
    h->by_fd[fd] = NULL;
    close(fd);
    cn->addr_i++;
    connect_addr(L, cn); /* the next address, or the attempt fails */
    return true;
  }
  if ((events & EPOLLOUT) && cn->sent < cn->a->h1_head.len + cn->a->body.len) {
    send_request(L, cn); /* a readable side is reported again next turn */
    return true;
  }
  if (events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP))
    on_readable(L, cn);
  return true;
}

void im__load_h1_collect(struct loader *L) {
  struct im__load_h1 *h = L->h1;
  struct attempt *a;
  while ((a = h->dl[DL_NOW].head)) {
    dl_unlink(L, a);
    im__load_finish(L, a, a->h1_res);
  }
  arm(L);
}
