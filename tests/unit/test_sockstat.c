/* Tests for observe/sockstat: live loopback sockets (IPv4, IPv6, a
 * dual-stack server seen through IPv4-mapped addresses) sampled by both
 * paths, the /proc parser on handcrafted files, the AUTO fallback, and the
 * series summary on synthetic data. No sleeps: where the kernel may lag, the
 * sampler is polled until a deadline. */
#include "analyze/machine.h"
#include "observe/sockstat.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "check.h"
#include "core/clock.h"

#define NCONN 12
#define POLL_DEADLINE_NS 5000000000LL

/* ------------------------------------------------------------ fixtures */

struct conns {
  int listener;
  int cli[NCONN], srv[NCONN];
  struct sockaddr_storage addr; /* the listener's address and port */
  socklen_t len;
};

static void set_timeout(int fd) {
  struct timeval tv = {.tv_sec = 5, .tv_usec = 0};
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

static void make_addr(struct sockaddr_storage *ss, socklen_t *len, int family, const char *text,
                      uint16_t port) {
  memset(ss, 0, sizeof *ss);
  if (family == AF_INET) {
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    CHECK_EQ(inet_pton(AF_INET, text, &a->sin_addr), 1);
    *len = sizeof *a;
  } else {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    CHECK_EQ(inet_pton(AF_INET6, text, &a->sin6_addr), 1);
    *len = sizeof *a;
  }
}

static uint16_t port_of(const struct sockaddr_storage *ss) {
  return ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
                                        : ((const struct sockaddr_in6 *)ss)->sin6_port);
}

/* Listens on listen_text:0 (dual-stack when v6only is false) and connects
 * NCONN clients of connect_family to connect_text:port, accepting each.
 * Returns false (and reports why) when the address family is missing on
 * this host, so that the caller can skip. */
static bool conns_open(struct conns *c, int listen_family, const char *listen_text, bool v6only,
                       int connect_family, const char *connect_text) {
  c->listener = socket(listen_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c->listener < 0) {
    fprintf(stderr, "SKIP: socket(%d): %s\n", listen_family, strerror(errno));
    return false;
  }
  if (listen_family == AF_INET6) {
    int on = v6only;
    CHECK_OK(setsockopt(c->listener, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on));
  }
  struct sockaddr_storage la;
  socklen_t llen;
  make_addr(&la, &llen, listen_family, listen_text, 0);
  if (bind(c->listener, (struct sockaddr *)&la, llen) != 0) {
    fprintf(stderr, "SKIP: bind %s: %s\n", listen_text, strerror(errno));
    close(c->listener);
    return false;
  }
  CHECK_OK(listen(c->listener, NCONN));
  socklen_t blen = sizeof la;
  CHECK_OK(getsockname(c->listener, (struct sockaddr *)&la, &blen));
  uint16_t port = port_of(&la);
  make_addr(&c->addr, &c->len, connect_family, connect_text, port);
  for (int i = 0; i < NCONN; i++) {
    c->cli[i] = socket(connect_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(c->cli[i] >= 0);
    CHECK_OK(connect(c->cli[i], (struct sockaddr *)&c->addr, c->len));
    c->srv[i] = accept4(c->listener, NULL, NULL, SOCK_CLOEXEC);
    CHECK(c->srv[i] >= 0);
    set_timeout(c->srv[i]);
  }
  return true;
}

/* Client side closes first: after the server has read EOF and closed, the
 * clients hold TIME_WAIT and the server ends leave no trace. */
static void conns_close_client_first(struct conns *c) {
  for (int i = 0; i < NCONN; i++)
    close(c->cli[i]);
  for (int i = 0; i < NCONN; i++) {
    char b;
    CHECK_EQ(read(c->srv[i], &b, 1), 0); /* the client's FIN */
    close(c->srv[i]);
  }
}

static void conns_close_all(struct conns *c) {
  for (int i = 0; i < NCONN; i++) {
    close(c->cli[i]);
    close(c->srv[i]);
  }
  close(c->listener);
}

static bool netlink_available(const struct conns *c) {
  struct im_sockstat *s = NULL;
  enum im_err r =
      im_sockstat_open(&s, (const struct sockaddr *)&c->addr, c->len, IM_SOCKSTAT_NETLINK);
  struct im_sockstat_counts k;
  if (r == IM_OK)
    r = im_sockstat_sample(s, &k);
  im_sockstat_close(s);
  if (r != IM_OK)
    fprintf(stderr, "NOTE: netlink sock_diag unavailable here (%s)\n", im_strerror(r));
  return r == IM_OK;
}

/* Polls the sampler (no sleep) until the counts show the wanted ESTABLISHED,
 * TIME_WAIT, LISTEN and total, or the deadline passes. */
static bool poll_counts(const struct conns *c, enum im_sockstat_mode mode, uint32_t est,
                        uint32_t tw, uint32_t listen_n, uint32_t total,
                        struct im_sockstat_counts *k) {
  struct im_sockstat *s = NULL;
  CHECK_OK(im_sockstat_open(&s, (const struct sockaddr *)&c->addr, c->len, mode));
  if (!s)
    return false;
  bool ok = false;
  int64_t deadline = im_now_ns() + POLL_DEADLINE_NS;
  do {
    enum im_err r = im_sockstat_sample(s, k);
    CHECK_OK(r);
    if (r != IM_OK)
      break;
    ok = k->state[IM_TCP_ESTABLISHED] == est && k->state[IM_TCP_TIME_WAIT] == tw &&
         k->state[IM_TCP_LISTEN] == listen_n && k->total == total;
  } while (!ok && im_now_ns() < deadline);
  im_sockstat_close(s);
  return ok;
}

static void check_same(const struct im_sockstat_counts *a, const struct im_sockstat_counts *b) {
  for (int st = 0; st < IM_TCP_NSTATES; st++) {
    if (a->state[st] != b->state[st])
      IM__FAIL("state %s: netlink %u vs procfs %u", im_tcp_state_name(st), a->state[st],
               b->state[st]);
    im_test_checks++;
  }
  CHECK_EQ(a->total, b->total);
}

/* ------------------------------------------------------------ live tests */

/* NCONN connections to a listener on addr:0, sampled by both paths while
 * established, then after the clients close first. */
static void test_live(int family, const char *addr) {
  struct conns c;
  if (!conns_open(&c, family, addr, true, family, addr))
    return;
  bool nl = netlink_available(&c);
  struct im_sockstat_counts kn, kp;
  memset(&kn, 0, sizeof kn);

  /* Both ends are local, each connection counts once (its client end):
   * NCONN established, plus the listener. */
  if (nl) {
    CHECK(poll_counts(&c, IM_SOCKSTAT_NETLINK, NCONN, 0, 1, NCONN + 1, &kn));
    CHECK_EQ(kn.state[IM_TCP_ESTABLISHED], NCONN);
    CHECK_EQ(kn.state[IM_TCP_LISTEN], 1);
    CHECK_EQ(kn.path, IM_SOCKSTAT_NETLINK);
  }
  CHECK(poll_counts(&c, IM_SOCKSTAT_PROCFS, NCONN, 0, 1, NCONN + 1, &kp));
  CHECK_EQ(kp.state[IM_TCP_ESTABLISHED], NCONN);
  CHECK_EQ(kp.state[IM_TCP_LISTEN], 1);
  CHECK_EQ(kp.skipped, 0);
  CHECK_EQ(kp.path, IM_SOCKSTAT_PROCFS);
  if (nl)
    check_same(&kn, &kp);

  /* The client closes first: the clients are in TIME_WAIT, the server ends
   * are gone (LAST_ACK ended with the client's ACK). */
  conns_close_client_first(&c);
  if (nl) {
    CHECK(poll_counts(&c, IM_SOCKSTAT_NETLINK, 0, NCONN, 1, NCONN + 1, &kn));
    CHECK_EQ(kn.state[IM_TCP_TIME_WAIT], NCONN);
    CHECK_EQ(kn.state[IM_TCP_LAST_ACK], 0);
    CHECK_EQ(kn.state[IM_TCP_FIN_WAIT2], 0);
  }
  CHECK(poll_counts(&c, IM_SOCKSTAT_PROCFS, 0, NCONN, 1, NCONN + 1, &kp));
  CHECK_EQ(kp.state[IM_TCP_TIME_WAIT], NCONN);
  CHECK_EQ(kp.state[IM_TCP_CLOSE_WAIT], 0);
  if (nl)
    check_same(&kn, &kp);
  close(c.listener);
}

/* A dual-stack listener on [::]:P and IPv4 clients to 127.0.0.1:P: the
 * accepted sockets are IPv6 with local ::ffff:127.0.0.1:P. They match the
 * target 127.0.0.1:P and the target ::ffff:127.0.0.1:P alike; the wildcard
 * listener matches neither. */
static void test_mapped(void) {
  struct conns c;
  if (!conns_open(&c, AF_INET6, "::", false, AF_INET, "127.0.0.1"))
    return;
  bool nl = netlink_available(&c);
  struct conns mapped = c;
  make_addr(&mapped.addr, &mapped.len, AF_INET6, "::ffff:127.0.0.1", port_of(&c.addr));
  struct im_sockstat_counts k4, k6;
  CHECK(poll_counts(&c, IM_SOCKSTAT_PROCFS, NCONN, 0, 0, NCONN, &k4));
  CHECK(poll_counts(&mapped, IM_SOCKSTAT_PROCFS, NCONN, 0, 0, NCONN, &k6));
  if (nl) {
    CHECK(poll_counts(&c, IM_SOCKSTAT_NETLINK, NCONN, 0, 0, NCONN, &k4));
    CHECK(poll_counts(&mapped, IM_SOCKSTAT_NETLINK, NCONN, 0, 0, NCONN, &k6));
  }
  CHECK_EQ(k4.state[IM_TCP_ESTABLISHED], NCONN);
  CHECK_EQ(k6.state[IM_TCP_ESTABLISHED], NCONN);
  conns_close_all(&c);
}

/* AUTO falls back to /proc when netlink is refused, and stays there;
 * NETLINK reports the refusal. */
static void test_fallback(void) {
  struct conns c;
  if (!conns_open(&c, AF_INET, "127.0.0.1", true, AF_INET, "127.0.0.1"))
    return;
  const struct sockaddr *t = (const struct sockaddr *)&c.addr;
  struct im_sockstat *s = NULL;
  struct im_sockstat_counts k;
  CHECK_OK(im_sockstat_open(&s, t, c.len, IM_SOCKSTAT_AUTO));
  if (netlink_available(&c)) {
    CHECK_EQ(im_sockstat_path(s), IM_SOCKSTAT_NETLINK);
    CHECK_OK(im_sockstat_sample(s, &k));
    CHECK_EQ(k.path, IM_SOCKSTAT_NETLINK);
    CHECK_EQ(k.state[IM_TCP_ESTABLISHED], NCONN);
  }
  im__sockstat_inject_netlink_errno(s, EPERM);
  CHECK_OK(im_sockstat_sample(s, &k));
  CHECK_EQ(k.path, IM_SOCKSTAT_PROCFS);
  CHECK_EQ(k.state[IM_TCP_ESTABLISHED], NCONN);
  CHECK_EQ(k.state[IM_TCP_LISTEN], 1);
  im__sockstat_inject_netlink_errno(s, 0);
  CHECK_EQ(im_sockstat_path(s), IM_SOCKSTAT_PROCFS);
  CHECK_OK(im_sockstat_sample(s, &k));
  CHECK_EQ(k.path, IM_SOCKSTAT_PROCFS);
  im_sockstat_close(s);

  s = NULL;
  if (im_sockstat_open(&s, t, c.len, IM_SOCKSTAT_NETLINK) == IM_OK) {
    im__sockstat_inject_netlink_errno(s, EPROTONOSUPPORT);
    CHECK_EQ(im_sockstat_sample(s, &k), IM_UNSUPPORTED);
    CHECK_EQ(im_sockstat_errno(s), EPROTONOSUPPORT);
    CHECK_EQ(k.path, IM_SOCKSTAT_NETLINK);
    CHECK_EQ(k.total, 0);
    im__sockstat_inject_netlink_errno(s, EIO);
    CHECK_EQ(im_sockstat_sample(s, &k), IM_SYS);
    CHECK_EQ(im_sockstat_errno(s), EIO);
    im__sockstat_inject_netlink_errno(s, 0);
    CHECK_EQ(im_sockstat_path(s), IM_SOCKSTAT_NETLINK);
    CHECK_OK(im_sockstat_sample(s, &k)); /* the handle recovers */
    CHECK_EQ(k.state[IM_TCP_ESTABLISHED], NCONN);
  }
  im_sockstat_close(s);
  conns_close_all(&c);
}

static void test_open_args(void) {
  struct im_sockstat *s = (struct im_sockstat *)&s;
  struct sockaddr_storage a;
  socklen_t len;
  make_addr(&a, &len, AF_INET, "127.0.0.1", 0);
  CHECK_EQ(im_sockstat_open(&s, (struct sockaddr *)&a, len, IM_SOCKSTAT_PROCFS), IM_INVAL);
  CHECK(s == NULL);
  make_addr(&a, &len, AF_INET, "127.0.0.1", 80);
  CHECK_EQ(im_sockstat_open(&s, (struct sockaddr *)&a, len - 1, IM_SOCKSTAT_PROCFS), IM_INVAL);
  CHECK_EQ(im_sockstat_open(&s, NULL, len, IM_SOCKSTAT_PROCFS), IM_INVAL);
  CHECK_EQ(im_sockstat_open(&s, (struct sockaddr *)&a, len, (enum im_sockstat_mode)7), IM_INVAL);
  a.ss_family = AF_UNIX;
  CHECK_EQ(im_sockstat_open(&s, (struct sockaddr *)&a, len, IM_SOCKSTAT_PROCFS), IM_INVAL);
  im_sockstat_close(NULL);
  CHECK_STR(im_tcp_state_name(IM_TCP_TIME_WAIT), "TIME_WAIT");
  CHECK_STR(im_tcp_state_name(IM_TCP_CLOSING), "CLOSING");
  CHECK_STR(im_tcp_state_name(0), "?");
  CHECK_STR(im_tcp_state_name(12), "?");
}

/* ------------------------------------------------------------ /proc files */

/* Writes an endpoint as the kernel does: each 32-bit word of the address
 * as held in memory, printed with %08X, then the port in hex. */
static void fmt_ep(char *out, size_t cap, const char *ip, uint16_t port) {
  uint8_t raw[16];
  size_t words = 1;
  if (inet_pton(AF_INET, ip, raw) != 1) {
    CHECK_EQ(inet_pton(AF_INET6, ip, raw), 1);
    words = 4;
  }
  size_t off = 0;
  for (size_t i = 0; i < words; i++) {
    uint32_t w;
    memcpy(&w, raw + 4 * i, 4);
    off += (size_t)snprintf(out + off, cap - off, "%08X", w);
  }
  snprintf(out + off, cap - off, ":%04X", port);
}

static void add_line(char *buf, size_t cap, int sl, const char *lip, uint16_t lport,
                     const char *rip, uint16_t rport, int st) {
  char l[64], r[64];
  fmt_ep(l, sizeof l, lip, lport);
  fmt_ep(r, sizeof r, rip, rport);
  size_t n = strlen(buf);
  snprintf(buf + n, cap - n,
           "%4d: %s %s %02X 00000000:00000000 00:00000000 00000000     0        0 12345 1 "
           "0000000000000000 100 0 0 10 0\n",
           sl, l, r, st);
}

static void write_file(const char *dir, const char *name, const char *data, size_t len) {
  char path[512];
  snprintf(path, sizeof path, "%s/net/%s", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  CHECK(fd >= 0);
  CHECK_EQ(write(fd, data, len), (long long)len);
  close(fd);
}

static void remove_file(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/net/%s", dir, name);
  (void)unlink(path);
}

static const char hdr4[] =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
    "timeout inode\n";
static const char hdr6[] =
    "  sl  local_address                         remote_address                        st "
    "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";

/* A connection from this host to itself has both ends in the table: it
 * counts once, by its client end, but for a server end left alone in
 * TIME_WAIT (observe/sockstat.h). */
static void test_loopback_once(void) {
  char v4[4096];
  strcpy(v4, hdr4);
  add_line(v4, sizeof v4, 0, "127.0.0.1", 8000, "0.0.0.0", 0, 0x0A);    /* LISTEN */
  add_line(v4, sizeof v4, 1, "127.0.0.1", 40000, "127.0.0.1", 8000, 0x01); /* client end */
  add_line(v4, sizeof v4, 2, "127.0.0.1", 8000, "127.0.0.1", 40000, 0x01); /* its server end */
  add_line(v4, sizeof v4, 3, "127.0.0.1", 8000, "127.0.0.1", 40001, 0x06); /* server closed first */
  add_line(v4, sizeof v4, 4, "127.0.0.1", 8000, "127.0.0.2", 40002, 0x01); /* loopback peer */
  add_line(v4, sizeof v4, 5, "127.0.0.1", 8000, "10.0.0.9", 40003, 0x01);  /* another host */
  struct sockaddr_storage t;
  socklen_t l;
  make_addr(&t, &l, AF_INET, "127.0.0.1", 8000);
  struct im_sockstat_counts k;
  memset(&k, 0, sizeof k);
  CHECK_OK(im_sockstat_parse_proc(v4, strlen(v4), (struct sockaddr *)&t, l, &k));
  CHECK_EQ(k.state[IM_TCP_LISTEN], 1);
  CHECK_EQ(k.state[IM_TCP_ESTABLISHED], 2); /* the client end and the other host's */
  CHECK_EQ(k.state[IM_TCP_TIME_WAIT], 1);
  CHECK_EQ(k.total, 4);
}

static void test_proc_files(void) {
  enum { CAP = 200000 };
  char *v4 = calloc(1, CAP), *v6 = calloc(1, CAP);
  CHECK(v4 && v6);
  if (!v4 || !v6)
    return;
  /* Target 10.0.0.5:8000. */
  strcpy(v4, hdr4);
  add_line(v4, CAP, 0, "10.0.0.5", 8000, "0.0.0.0", 0, 0x0A);             /* LISTEN, local */
  add_line(v4, CAP, 1, "10.0.0.1", 40000, "10.0.0.5", 8000, 0x01);        /* ESTAB, remote */
  add_line(v4, CAP, 2, "10.0.0.1", 40001, "10.0.0.5", 8000, 0x06);        /* TIME_WAIT */
  add_line(v4, CAP, 3, "10.0.0.1", 40002, "10.0.0.6", 8000, 0x01);        /* other host */
  add_line(v4, CAP, 4, "10.0.0.5", 8001, "10.0.0.1", 40000, 0x01);        /* other port */
  add_line(v4, CAP, 5, "10.0.0.5", 8000, "10.0.0.1", 40003, 0x0D);        /* state 13: skipped */
  add_line(v4, CAP, 6, "10.0.0.5", 8000, "10.0.0.1", 40004, 0x00);        /* state 0: skipped */
  strcat(v4, "   7: ZZ00000A:1F40 0100000A:9C40 01 00000000:00000000\n"); /* bad hex */
  strcat(v4, "   8: 0500000A:1F40\n");                                    /* truncated */
  strcat(v4, "garbage\n\n   \n");                                         /* 1 bad, blank ignored */
  strcat(v4, "   9: 0500000A:1F40 0100000A:9C40 001\n");                  /* 3-digit state */
  {
    /* A line longer than the reader's 64 KiB buffer. */
    size_t n = strlen(v4);
    memcpy(v4 + n, "  10: ", 6);
    memset(v4 + n + 6, 'A', 70000);
    v4[n + 70006] = '\n';
    v4[n + 70007] = '\0';
  }
  add_line(v4, CAP, 11, "10.0.0.1", 40005, "10.0.0.5", 8000, 0x08); /* CLOSE_WAIT */
  size_t len4 = strlen(v4) - 1;                                     /* no final '\n' */

  strcpy(v6, hdr6);
  add_line(v6, CAP, 0, "::ffff:10.0.0.5", 8000, "::ffff:10.0.0.1", 40010, 0x01); /* mapped */
  add_line(v6, CAP, 1, "2001:db8::1", 8000, "2001:db8::2", 50000, 0x01);         /* v6 target */
  add_line(v6, CAP, 2, "::ffff:10.0.0.1", 40011, "::ffff:10.0.0.5", 8000, 0x02); /* SYN_SENT */
  add_line(v6, CAP, 3, "2001:db8::2", 50001, "2001:db8::1", 8000, 0x06);         /* v6 target */
  {
    char l[64], r[64];
    fmt_ep(l, sizeof l, "::ffff:10.0.0.5", 8000);
    fmt_ep(r, sizeof r, "10.0.0.1", 40012);
    size_t n = strlen(v6);
    snprintf(v6 + n, CAP - n, "   4: %s %s 01 mixed widths\n", l, r); /* skipped */
  }
  size_t len6 = strlen(v6);

  /* The same files through the pure parser, v4 target. */
  struct sockaddr_storage t4, t6, tm;
  socklen_t l4, l6, lm;
  make_addr(&t4, &l4, AF_INET, "10.0.0.5", 8000);
  make_addr(&t6, &l6, AF_INET6, "2001:db8::1", 8000);
  make_addr(&tm, &lm, AF_INET6, "::ffff:10.0.0.5", 8000);
  struct im_sockstat_counts k;
  memset(&k, 0, sizeof k);
  CHECK_OK(im_sockstat_parse_proc(v4, len4, (struct sockaddr *)&t4, l4, &k));
  CHECK_OK(im_sockstat_parse_proc(v6, len6, (struct sockaddr *)&t4, l4, &k));
  CHECK_EQ(k.state[IM_TCP_LISTEN], 1);
  CHECK_EQ(k.state[IM_TCP_ESTABLISHED], 2);
  CHECK_EQ(k.state[IM_TCP_TIME_WAIT], 1);
  CHECK_EQ(k.state[IM_TCP_CLOSE_WAIT], 1);
  CHECK_EQ(k.state[IM_TCP_SYN_SENT], 1);
  CHECK_EQ(k.total, 6);
  CHECK_EQ(k.skipped, 8); /* 13, 00, ZZ, truncated, garbage, 001, long, mixed */
  CHECK_EQ(im_sockstat_parse_proc(v4, len4, NULL, 0, &k), IM_INVAL);

  /* The same through files under a fake root, in PROCFS mode. */
  char dir[] = "/tmp/im_sockstat_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char net[600];
  snprintf(net, sizeof net, "%s/net", dir);
  CHECK_OK(mkdir(net, 0700));
  write_file(dir, "tcp", v4, len4);
  write_file(dir, "tcp6", v6, len6);

  struct im_sockstat *s = NULL;
  CHECK_OK(im_sockstat_open(&s, (struct sockaddr *)&t4, l4, IM_SOCKSTAT_PROCFS));
  CHECK_OK(im_sockstat_set_proc_root(s, dir));
  struct im_sockstat_counts kf;
  CHECK_OK(im_sockstat_sample(s, &kf));
  CHECK_EQ(kf.path, IM_SOCKSTAT_PROCFS);
  for (int st = 0; st < IM_TCP_NSTATES; st++)
    CHECK_EQ(kf.state[st], k.state[st]);
  CHECK_EQ(kf.total, 6);
  CHECK_EQ(kf.skipped, 8);
  im_sockstat_close(s);

  /* Target given as the mapped form: the same sockets. */
  CHECK_OK(im_sockstat_open(&s, (struct sockaddr *)&tm, lm, IM_SOCKSTAT_PROCFS));
  CHECK_OK(im_sockstat_set_proc_root(s, dir));
  CHECK_OK(im_sockstat_sample(s, &kf));
  CHECK_EQ(kf.total, 6);
  CHECK_EQ(kf.state[IM_TCP_ESTABLISHED], 2);
  im_sockstat_close(s);

  /* A pure IPv6 target reads only tcp6. */
  CHECK_OK(im_sockstat_open(&s, (struct sockaddr *)&t6, l6, IM_SOCKSTAT_PROCFS));
  CHECK_OK(im_sockstat_set_proc_root(s, dir));
  CHECK_OK(im_sockstat_sample(s, &kf));
  CHECK_EQ(kf.state[IM_TCP_ESTABLISHED], 1);
  CHECK_EQ(kf.state[IM_TCP_TIME_WAIT], 1);
  CHECK_EQ(kf.total, 2);
  CHECK_EQ(kf.skipped, 1);

  /* No tcp6 (IPv6 disabled): nothing from it; no table at all: NOTFOUND. */
  remove_file(dir, "tcp6");
  CHECK_EQ(im_sockstat_sample(s, &kf), IM_NOTFOUND);
  CHECK_EQ(kf.total, 0);
  im_sockstat_close(s);
  CHECK_OK(im_sockstat_open(&s, (struct sockaddr *)&t4, l4, IM_SOCKSTAT_PROCFS));
  CHECK_OK(im_sockstat_set_proc_root(s, dir));
  CHECK_OK(im_sockstat_sample(s, &kf));
  CHECK_EQ(kf.total, 4);
  CHECK_EQ(kf.skipped, 7);
  {
    char longroot[300];
    memset(longroot, 'x', sizeof longroot - 1);
    longroot[sizeof longroot - 1] = '\0';
    CHECK_EQ(im_sockstat_set_proc_root(s, longroot), IM_LIMIT);
  }
  im_sockstat_close(s);
  remove_file(dir, "tcp");
  CHECK_OK(rmdir(net));
  CHECK_OK(rmdir(dir));

  /* The kernel's own spelling, on a little-endian host: 127.0.0.1:8080. */
  uint32_t one = 1;
  uint8_t first;
  memcpy(&first, &one, 1);
  if (first == 1) {
    /* Client ends (the server end of a loopback connection counts only in
     * TIME_WAIT, as line 3's). */
    static const char line4[] = "   1: 0100007F:B077 0100007F:1F90 01 0\n";
    static const char line6[] =
        "   2: 00000000000000000000000001000000:B078 00000000000000000000000001000000:1F90 0A\n"
        "   3: 0000000000000000FFFF00000100007F:1F90 0000000000000000FFFF00000100007F:B079 06\n";
    struct sockaddr_storage a, b;
    socklen_t la, lb;
    make_addr(&a, &la, AF_INET, "127.0.0.1", 8080);
    make_addr(&b, &lb, AF_INET6, "::1", 8080);
    memset(&k, 0, sizeof k);
    CHECK_OK(im_sockstat_parse_proc(line4, strlen(line4), (struct sockaddr *)&a, la, &k));
    CHECK_OK(im_sockstat_parse_proc(line6, strlen(line6), (struct sockaddr *)&a, la, &k));
    CHECK_EQ(k.state[IM_TCP_ESTABLISHED], 1);
    CHECK_EQ(k.state[IM_TCP_TIME_WAIT], 1);
    CHECK_EQ(k.total, 2);
    memset(&k, 0, sizeof k);
    CHECK_OK(im_sockstat_parse_proc(line6, strlen(line6), (struct sockaddr *)&b, lb, &k));
    CHECK_EQ(k.state[IM_TCP_LISTEN], 1);
    CHECK_EQ(k.total, 1);
  }
  free(v4);
  free(v6);
}

/* ------------------------------------------------------------ summary */

static void series(struct im_series_tcp *p, size_t n, const double *t_s, const uint32_t *tw) {
  memset(p, 0, n * sizeof *p);
  for (size_t i = 0; i < n; i++) {
    p[i].t_mono = 1000000000000LL + (int64_t)(t_s[i] * 1e9);
    p[i].state[IM_TCP_TIME_WAIT] = tw[i];
    p[i].state[IM_TCP_ESTABLISHED] = (uint32_t)(100 + i);
  }
}

static void test_summary(void) {
  struct im_series_tcp p[10] = {{0}};
  struct im_tcp_summary sm;
  double t[10];
  uint32_t tw[10];

  im_tcp_summarize(p, 0, &sm);
  CHECK_EQ(sm.n, 0);
  CHECK(isnan(sm.time_wait_growth_per_s));
  CHECK(!sm.growing);

  /* TIME_WAIT = 10 + 5 t: slope 5/s, growing. */
  for (int i = 0; i < 10; i++) {
    t[i] = i;
    tw[i] = (uint32_t)(10 + 5 * i);
  }
  series(p, 10, t, tw);
  im_tcp_summarize(p, 10, &sm);
  CHECK_NEAR(sm.time_wait_growth_per_s, 5.0, 1e-9);
  CHECK_EQ(sm.time_wait_max, 55);
  CHECK_EQ(sm.established_max, 109);
  CHECK_NEAR(sm.span_s, 9.0, 1e-9);
  CHECK(sm.growing);

  /* One sample: slope undefined. */
  im_tcp_summarize(p, 1, &sm);
  CHECK(isnan(sm.time_wait_growth_per_s));
  CHECK_EQ(sm.time_wait_max, 10);
  CHECK(!sm.growing);

  /* Fewer than 6 points never count as growing. */
  im_tcp_summarize(p, 5, &sm);
  CHECK_NEAR(sm.time_wait_growth_per_s, 5.0, 1e-9);
  CHECK(!sm.growing);

  /* Uneven times: TIME_WAIT = 2 t at t = 0, 0.5, 3, 4, 7, 10. */
  const double tu[6] = {0, 0.5, 3, 4, 7, 10};
  for (int i = 0; i < 6; i++)
    tw[i] = (uint32_t)(2 * tu[i]);
  series(p, 6, tu, tw);
  im_tcp_summarize(p, 6, &sm);
  CHECK_NEAR(sm.time_wait_growth_per_s, 2.0, 1e-9);
  CHECK(sm.growing);

  /* Slow drift (0.5/s) is not growth. */
  for (int i = 0; i < 10; i++) {
    t[i] = 2.0 * i;
    tw[i] = (uint32_t)(40 + i);
  }
  series(p, 10, t, tw);
  im_tcp_summarize(p, 10, &sm);
  CHECK_NEAR(sm.time_wait_growth_per_s, 0.5, 1e-9);
  CHECK(!sm.growing);

  /* Flat with noise. */
  for (int i = 0; i < 10; i++) {
    t[i] = i;
    tw[i] = (uint32_t)(50 + (i % 2 ? 3 : -3));
  }
  series(p, 10, t, tw);
  im_tcp_summarize(p, 10, &sm);
  CHECK_NEAR(sm.time_wait_growth_per_s, 0.0, 0.7);
  CHECK(!sm.growing);

  /* One burst in the middle: slope 100 * 0.5 / 17.5 > 1, but the last
   * third is no higher than the first. */
  const uint32_t burst[6] = {0, 0, 0, 100, 0, 0};
  for (int i = 0; i < 6; i++)
    t[i] = i;
  series(p, 6, t, burst);
  im_tcp_summarize(p, 6, &sm);
  CHECK_NEAR(sm.time_wait_growth_per_s, 50.0 / 17.5, 1e-9);
  CHECK(!sm.growing);

  /* Slope 25 / 17.5 > 1 and last third > first, but the noise dwarfs the
   * slope (t ~ 0.19): not significant. */
  const uint32_t noisy[6] = {50, 0, 0, 0, 0, 60};
  series(p, 6, t, noisy);
  im_tcp_summarize(p, 6, &sm);
  CHECK_NEAR(sm.time_wait_growth_per_s, 25.0 / 17.5, 1e-9);
  CHECK(!sm.growing);

  /* All samples at one instant: no slope. */
  const double same[6] = {3, 3, 3, 3, 3, 3};
  series(p, 6, same, tw);
  im_tcp_summarize(p, 6, &sm);
  CHECK(isnan(sm.time_wait_growth_per_s));
  CHECK(!sm.growing);
}

int main(void) {
  test_open_args();
  test_proc_files();
  test_loopback_once();
  test_summary();
  test_live(AF_INET, "127.0.0.1");
  test_live(AF_INET6, "::1");
  test_mapped();
  test_fallback();
  return CHECK_DONE();
}
