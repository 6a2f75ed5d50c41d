/* The live /metrics listener (metrics_listen.h). Plain sockets and poll(2)
 * rather than libuv: one connection at a time is all a scraper needs, and a
 * blocking thread keeps the page's rendering out of every other loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "export/metrics_listen.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/thread.h"

#define HEAD_MAX 8192
#define IDLE_MS 2000
#define PAGE_MAX ((size_t)16 << 20)

enum im_err im_metrics_listen_parse(const char *spec, char *host, size_t hostcap, uint16_t *port,
                                     char *msg, size_t msgcap) {
  const char *p = spec, *colon = strrchr(spec, ':');
  size_t hl = 0;
  const char *h = "127.0.0.1";
  if (spec[0] == '[') {
    const char *close = strchr(spec, ']');
    if (!close || close[1] != ':')
      goto bad;
    h = spec + 1;
    hl = (size_t)(close - h);
    p = close + 2;
  } else if (colon) {
    h = spec;
    hl = (size_t)(colon - spec);
    p = colon + 1;
  } else {
    hl = strlen(h);
  }
  if (hl == 0 || hl >= hostcap)
    goto bad;
  memcpy(host, h, hl);
  host[hl] = 0;
  char *end;
  errno = 0;
  long v = strtol(p, &end, 10);
  if (!*p || *end || errno || v < 0 || v > 65535)
    goto bad;
  *port = (uint16_t)v;
  struct in6_addr a6;
  struct in_addr a4;
  if (inet_pton(AF_INET, host, &a4) != 1 && inet_pton(AF_INET6, host, &a6) != 1)
    goto bad;
  return IM_OK;
bad:
  snprintf(msg, msgcap,
           "--metrics-listen '%s': expected PORT, ADDR:PORT or [V6ADDR]:PORT with a numeric "
           "address and a port 0..65535 (e.g. 127.0.0.1:9464)",
           spec);
  return IM_INVAL;
}

static void send_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return; /* the scraper went away: nothing to do */
    p += w;
    n -= (size_t)w;
  }
}

static void reply(int fd, const char *status, const char *type, const char *body, size_t len,
                  bool head_only) {
  char hdr[256];
  int n = snprintf(hdr, sizeof hdr,
                   "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                   "Connection: close\r\n\r\n",
                   status, type, len);
  send_all(fd, hdr, (size_t)n);
  if (!head_only)
    send_all(fd, body, len);
}

/* Reads a request head (until an empty line), at most HEAD_MAX bytes, with
 * IDLE_MS between reads. Returns its length, 0 when the client stopped or
 * was too slow, -1 when too large. */
static ssize_t read_head(int fd, int stop_fd, char *buf) {
  size_t len = 0;
  for (;;) {
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = stop_fd, .events = POLLIN}};
    int n = poll(p, 2, IDLE_MS);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0 || p[1].revents)
      return 0;
    ssize_t r = recv(fd, buf + len, HEAD_MAX - len, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return 0;
    len += (size_t)r;
    buf[len] = 0;
    if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
      return (ssize_t)len;
    if (len == HEAD_MAX)
      return -1;
  }
}

static void serve_one(struct im_metrics_listen *m, int fd, struct im_buf *page) {
  char head[HEAD_MAX + 1];
  ssize_t n = read_head(fd, m->stop_fd, head);
  if (n < 0) {
    reply(fd, "431 Request Header Fields Too Large", "text/plain", "", 0, false);
    return;
  }
  if (n == 0)
    return;
  bool get = !strncmp(head, "GET ", 4), hd = !strncmp(head, "HEAD ", 5);
  const char *path = head + (get ? 4 : hd ? 5 : 0);
  size_t plen = strcspn(path, " ?\r\n");
  if (!get && !hd) {
    reply(fd, "405 Method Not Allowed", "text/plain", "GET only\n", 9, false);
    return;
  }
  if (!(plen == 8 && !strncmp(path, "/metrics", 8)) && !(plen == 1 && path[0] == '/')) {
    reply(fd, "404 Not Found", "text/plain", "see /metrics\n", 13, hd);
    return;
  }
  im_buf_reset(page);
  if (m->page(m->ctx, page) != IM_OK) {
    reply(fd, "500 Internal Server Error", "text/plain", "page too large\n", 15, hd);
    return;
  }
  reply(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", page->data, page->len, hd);
  atomic_fetch_add(&m->served, 1);
}

static void *listen_main(void *arg) {
  struct im_metrics_listen *m = arg;
  struct im_buf page;
  im_buf_init(&page, PAGE_MAX);
  for (;;) {
    struct pollfd p[2] = {{.fd = m->fd, .events = POLLIN}, {.fd = m->stop_fd, .events = POLLIN}};
    int n = poll(p, 2, -1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 || p[1].revents)
      break;
    int c = accept4(m->fd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0)
      continue; /* EMFILE, ECONNABORTED...: the next scrape tries again */
    serve_one(m, c, &page);
    close(c);
  }
  im_buf_cleanup(&page);
  return NULL;
}

enum im_err im_metrics_listen_start(struct im_metrics_listen *m, const char *spec,
                                     enum im_err (*page)(void *ctx, struct im_buf *out), void *ctx,
                                     char *msg, size_t msgcap) {
  char host[64];
  uint16_t port;
  memset(m, 0, sizeof *m);
  m->fd = m->stop_fd = -1;
  enum im_err err = im_metrics_listen_parse(spec, host, sizeof host, &port, msg, msgcap);
  if (err)
    return err;
  struct sockaddr_storage ss = {0};
  socklen_t sl;
  if (strchr(host, ':')) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    (void)inet_pton(AF_INET6, host, &a->sin6_addr);
    sl = sizeof *a;
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    (void)inet_pton(AF_INET, host, &a->sin_addr);
    sl = sizeof *a;
  }
  int one = 1;
  m->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (m->fd < 0 || setsockopt(m->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
      bind(m->fd, (struct sockaddr *)&ss, sl) || listen(m->fd, 16)) {
    snprintf(msg, msgcap, "--metrics-listen %s: cannot listen: %s", spec, strerror(errno));
    goto fail;
  }
  if (getsockname(m->fd, (struct sockaddr *)&ss, &sl) == 0)
    m->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                             : ((struct sockaddr_in *)&ss)->sin_port);
  if ((m->stop_fd = eventfd(0, EFD_CLOEXEC)) < 0) {
    snprintf(msg, msgcap, "--metrics-listen: eventfd: %s", strerror(errno));
    goto fail;
  }
  snprintf(m->host, sizeof m->host, "%s", host);
  m->page = page;
  m->ctx = ctx;
  int e = im_thread_start_background(&m->thread, listen_main, m);
  if (e) {
    snprintf(msg, msgcap, "--metrics-listen: cannot start its thread: %s", strerror(e));
    goto fail;
  }
  m->on = true;
  return IM_OK;
fail:
  if (m->fd >= 0)
    close(m->fd);
  if (m->stop_fd >= 0)
    close(m->stop_fd);
  m->fd = m->stop_fd = -1;
  return IM_SYS;
}

void im_metrics_listen_stop(struct im_metrics_listen *m) {
  if (!m->on)
    return;
  uint64_t one = 1;
  ssize_t w = write(m->stop_fd, &one, sizeof one);
  (void)w;
  pthread_join(m->thread, NULL);
  close(m->fd);
  close(m->stop_fd);
  m->fd = m->stop_fd = -1;
  m->on = false;
}

uint64_t im_metrics_listen_served(struct im_metrics_listen *m) {
  return atomic_load(&m->served);
}
