/* TCP socket states toward the target; contracts in observe/sockstat.h.
 *
 * Kernel facts used here (not code): the sock_diag request and reply
 * layouts and the bytecode ops are those of linux/inet_diag.h and
 * linux/sock_diag.h; the bytecode interpreter and its audit rules are
 * inet_diag_bc_run() and inet_diag_bc_audit() in net/ipv4/inet_diag.c
 * (ports compared in host order, a program accepts when it jumps exactly to
 * its end); the /proc/net/tcp{,6} line format is that of tcp4_seq_show()
 * and tcp6_seq_show() (addresses as the raw 32-bit words printed with
 * %08X, ports and state in hex); state numbers from
 * include/net/tcp_states.h. */
#include "observe/sockstat.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

/* One buffer for netlink datagrams and /proc reads. The kernel sizes dump
 * datagrams to at most 32 KiB (netlink_recvmsg caps max_recvmsg_len), so
 * 64 KiB never truncates; a /proc line is under 200 bytes. */
#define IO_BUF_SIZE 65536
#define ROOT_MAX 256
/* A dump that stalls this long is reported, not waited on forever. */
#define NL_TIMEOUT_S 5
/* Kernel's TCP_NEW_SYN_RECV: a request socket, shown as SYN_RECV. */
#define KERNEL_NEW_SYN_RECV 12
/* idiag_states: bits 1..12 (every state and request sockets). Bit 13, the
 * kernel's bound-but-inactive sockets, is left out: /proc does not list
 * them and they are not connections. */
#define NL_STATES_MASK 0x1ffeu

/* An endpoint, IPv4 kept as its mapped IPv6 form so that both compare
 * with one memcmp. Port in host order. */
struct endpoint {
  uint8_t addr[16];
  uint16_t port;
};

struct im_sockstat {
  struct endpoint target;
  bool want_v4;  /* target is IPv4 (or mapped): read the IPv4 table too */
  bool bytecode; /* send the port filter; cleared if the kernel rejects it */
  enum im_sockstat_mode mode, path;
  int nl_fd; /* -1 when closed (reopened lazily) */
  uint32_t seq;
  int last_errno;
  int inject_errno;
  char root[ROOT_MAX];
  char *buf; /* IO_BUF_SIZE bytes */
};

/* ------------------------------------------------------------ helpers */

static const uint8_t v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static void endpoint_v4(struct endpoint *e, const void *addr4, uint16_t port) {
  memcpy(e->addr, v4_mapped_prefix, 12);
  memcpy(e->addr + 12, addr4, 4);
  e->port = port;
}

static enum im_err endpoint_from_sockaddr(struct endpoint *e, const struct sockaddr *sa,
                                          socklen_t len) {
  if (!sa)
    return IM_INVAL;
  if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
    struct sockaddr_in sin;
    memcpy(&sin, sa, sizeof sin);
    endpoint_v4(e, &sin.sin_addr, ntohs(sin.sin_port));
  } else if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
    struct sockaddr_in6 sin6;
    memcpy(&sin6, sa, sizeof sin6);
    memcpy(e->addr, &sin6.sin6_addr, 16);
    e->port = ntohs(sin6.sin6_port);
  } else {
    return IM_INVAL;
  }
  return e->port ? IM_OK : IM_INVAL;
}

static bool endpoint_eq(const struct endpoint *a, const struct endpoint *b) {
  return a->port == b->port && memcmp(a->addr, b->addr, 16) == 0;
}

static bool is_v4(const struct endpoint *e) {
  return memcmp(e->addr, v4_mapped_prefix, 12) == 0;
}

static bool is_loopback(const struct endpoint *e) {
  static const uint8_t v6_loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  return (is_v4(e) && e->addr[12] == 127) || memcmp(e->addr, v6_loopback, 16) == 0;
}

/* Whether a socket (local, remote) in state counts toward target t. A
 * connection from this host to itself has both ends here: its client end
 * (remote == t) counts in every state; its server end (local == t, the peer
 * on this host: the target's address or a loopback one) only in TIME_WAIT,
 * the one state the server end holds alone once the client end is gone, so
 * that each connection counts once (observe/sockstat.h). */
static bool counts_toward(const struct endpoint *local, const struct endpoint *remote,
                          const struct endpoint *t, int state) {
  if (endpoint_eq(remote, t))
    return true;
  if (!endpoint_eq(local, t))
    return false;
  bool same_host = !memcmp(remote->addr, t->addr, 16) || is_loopback(remote);
  return !same_host || state == IM_TCP_TIME_WAIT;
}

static void count_state(struct im_sockstat_counts *c, int state) {
  if (state == KERNEL_NEW_SYN_RECV)
    state = IM_TCP_SYN_RECV;
  if (state >= 1 && state < IM_TCP_NSTATES) {
    c->state[state]++;
    c->total++;
  } else {
    c->skipped++;
  }
}

const char *im_tcp_state_name(int state) {
  static const char *const names[IM_TCP_NSTATES] = {
      "?",         "ESTABLISHED", "SYN_SENT",   "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2",
      "TIME_WAIT", "CLOSE",       "CLOSE_WAIT", "LAST_ACK", "LISTEN",    "CLOSING"};
  return state >= 1 && state < IM_TCP_NSTATES ? names[state] : "?";
}

/* Errors meaning "this kernel or sandbox will not do sock_diag", as opposed
 * to transient failures (EMFILE, ENOBUFS, EINTR). */
static bool nl_refused(int err) {
  return err == EPERM || err == EACCES || err == EPROTONOSUPPORT || err == EAFNOSUPPORT ||
         err == EOPNOTSUPP || err == ENOENT;
}

/* ------------------------------------------------------------ /proc */

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

static bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

/* Reads exactly n hex digits at *p (n <= 8) into *v. */
static bool hex_n(const char **p, const char *end, size_t n, uint32_t *v) {
  if ((size_t)(end - *p) < n)
    return false;
  uint32_t x = 0;
  for (size_t i = 0; i < n; i++) {
    int d = hexval((*p)[i]);
    if (d < 0)
      return false;
    x = x << 4 | (uint32_t)d;
  }
  *p += n;
  *v = x;
  return true;
}

/* "ADDR:PORT" where ADDR is 8 or 32 hex digits, each group of 8 being one
 * 32-bit word of the address as the kernel holds it in memory (network
 * order bytes, printed as a native integer), so memcpy of the parsed word
 * gives back the bytes on either endianness. Sets *width to 8 or 32. */
static bool parse_endpoint(const char **pp, const char *end, struct endpoint *e, size_t *width) {
  const char *p = *pp, *colon = p;
  while (colon < end && *colon != ':')
    colon++;
  size_t w = (size_t)(colon - p);
  if (colon == end || (w != 8 && w != 32))
    return false;
  uint8_t raw[16];
  for (size_t i = 0; i < w / 8; i++) {
    uint32_t word;
    if (!hex_n(&p, colon, 8, &word))
      return false;
    memcpy(raw + 4 * i, &word, 4);
  }
  p++; /* ':' */
  uint32_t port;
  if (!hex_n(&p, end, 4, &port))
    return false;
  if (w == 8)
    endpoint_v4(e, raw, (uint16_t)port);
  else {
    memcpy(e->addr, raw, 16);
    e->port = (uint16_t)port;
  }
  *width = w;
  *pp = p;
  return true;
}

static bool skip_blanks(const char **p, const char *end) {
  const char *q = *p;
  while (q < end && is_blank(*q))
    q++;
  bool any = q != *p;
  *p = q;
  return any;
}

/* One line of /proc/net/tcp{,6}: "  sl: LOCAL REMOTE ST ...". Blank lines
 * and the header are ignored; anything else that does not parse is
 * counted as skipped. */
static void proc_line(const char *p, size_t len, const struct endpoint *t,
                      struct im_sockstat_counts *acc) {
  const char *end = p + len;
  skip_blanks(&p, end);
  if (p == end)
    return;
  if (end - p >= 2 && p[0] == 's' && p[1] == 'l')
    return; /* header */
  const char *digits = p;
  while (p < end && *p >= '0' && *p <= '9')
    p++;
  struct endpoint local, remote;
  size_t wl, wr;
  uint32_t st;
  if (p == digits || p == end || *p++ != ':' || !skip_blanks(&p, end) ||
      !parse_endpoint(&p, end, &local, &wl) || !skip_blanks(&p, end) ||
      !parse_endpoint(&p, end, &remote, &wr) || wl != wr || !skip_blanks(&p, end) ||
      !hex_n(&p, end, 2, &st) || (p < end && !is_blank(*p)) || st < 1 || st > KERNEL_NEW_SYN_RECV) {
    acc->skipped++;
    return;
  }
  if (counts_toward(&local, &remote, t, (int)st))
    count_state(acc, (int)st);
}

static void proc_lines(const char *data, size_t len, const struct endpoint *t,
                       struct im_sockstat_counts *acc) {
  const char *p = data, *end = data + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *stop = nl ? nl : end;
    proc_line(p, (size_t)(stop - p), t, acc);
    p = nl ? nl + 1 : end;
  }
}

enum im_err im_sockstat_parse_proc(const char *data, size_t len, const struct sockaddr *target,
                                   socklen_t target_len, struct im_sockstat_counts *acc) {
  struct endpoint t;
  if (!acc || (!data && len) || endpoint_from_sockaddr(&t, target, target_len) != IM_OK)
    return IM_INVAL;
  if (len)
    proc_lines(data, len, &t, acc);
  return IM_OK;
}

/* Streams root/net/<name> through s->buf, complete lines at a time. A line
 * that alone fills the buffer is dropped (counted as skipped). *found is
 * false when the file does not exist. */
static enum im_err proc_read(struct im_sockstat *s, const char *name,
                             struct im_sockstat_counts *out, bool *found) {
  char path[ROOT_MAX + 16];
  snprintf(path, sizeof path, "%s/net/%s", s->root, name);
  *found = false;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return IM_OK;
    s->last_errno = errno;
    return IM_SYS;
  }
  *found = true;
  enum im_err result = IM_SYS;
  size_t have = 0;
  bool discarding = false;
  for (;;) {
    ssize_t n = read(fd, s->buf + have, IO_BUF_SIZE - have);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      s->last_errno = errno;
      goto out;
    }
    if (n == 0)
      break;
    const char *p = s->buf, *end = s->buf + have + (size_t)n;
    const char *nl;
    while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
      if (discarding) {
        discarding = false;
        out->skipped++;
      } else {
        proc_line(p, (size_t)(nl - p), &s->target, out);
      }
      p = nl + 1;
    }
    have = (size_t)(end - p);
    if (have == IO_BUF_SIZE) {
      discarding = true;
      have = 0;
    } else if (have && p != s->buf) {
      memmove(s->buf, p, have);
    }
  }
  if (discarding)
    out->skipped++;
  else if (have)
    proc_line(s->buf, have, &s->target, out);
  result = IM_OK;
out:
  close(fd);
  return result;
}

static enum im_err proc_sample(struct im_sockstat *s, struct im_sockstat_counts *out) {
  bool found4 = false, found6 = false;
  enum im_err r = IM_OK;
  if (s->want_v4)
    r = proc_read(s, "tcp", out, &found4);
  if (r == IM_OK)
    r = proc_read(s, "tcp6", out, &found6);
  if (r == IM_OK && !found4 && !found6)
    r = IM_NOTFOUND;
  return r;
}

/* ------------------------------------------------------------ netlink */

static int nl_open(struct im_sockstat *s) {
  int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0)
    return errno;
  struct timeval tv = {.tv_sec = NL_TIMEOUT_S, .tv_usec = 0};
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) {
    int err = errno;
    close(fd);
    return err;
  }
  s->nl_fd = fd;
  return 0;
}

/* After an error the kernel may still hold a half-sent dump on the socket
 * (a new dump request would then fail with EBUSY), so the socket is
 * dropped and reopened by the next sample. */
static void nl_reset(struct im_sockstat *s) {
  if (s->nl_fd >= 0)
    close(s->nl_fd);
  s->nl_fd = -1;
}

static enum im_err nl_errno(struct im_sockstat *s, int err) {
  s->last_errno = err;
  return nl_refused(err) ? IM_UNSUPPORTED : IM_SYS;
}

static void nl_count(const struct im_sockstat *s, const struct inet_diag_msg *m,
                     struct im_sockstat_counts *out) {
  struct endpoint local, remote;
  if (m->idiag_family == AF_INET) {
    endpoint_v4(&local, &m->id.idiag_src[0], ntohs(m->id.idiag_sport));
    endpoint_v4(&remote, &m->id.idiag_dst[0], ntohs(m->id.idiag_dport));
  } else if (m->idiag_family == AF_INET6) {
    memcpy(local.addr, m->id.idiag_src, 16);
    memcpy(remote.addr, m->id.idiag_dst, 16);
    local.port = ntohs(m->id.idiag_sport);
    remote.port = ntohs(m->id.idiag_dport);
  } else {
    return;
  }
  if (counts_toward(&local, &remote, &s->target, m->idiag_state))
    count_state(out, m->idiag_state);
}

/* Sends one dump request for family. The bytecode is "sport == P ||
 * dport == P" in the shape the kernel's audit accepts (every op reachable
 * by its "yes" chain):
 *   0: S_EQ  yes 8 (to 8)   no 12 (to 12)    4: port
 *   8: JMP   yes 4          no 12 (to 20 = end: accept)
 *  12: D_EQ  yes 8 (to 20)  no 12 (to 24 = past end: reject)   16: port */
/* NLA_HDRLEN without its int arithmetic (-Wconversion): a netlink
 * attribute header rounded up to 4 bytes (linux/netlink.h). */
#define IM_NLA_HDRLEN ((sizeof(struct nlattr) + 3u) & ~(size_t)3u)

static enum im_err nl_request(struct im_sockstat *s, int family) {
  struct {
    struct nlmsghdr nlh;
    struct inet_diag_req_v2 req;
    struct nlattr nla;
    struct inet_diag_bc_op bc[5];
  } msg;
  _Static_assert(sizeof msg == NLMSG_LENGTH(sizeof(struct inet_diag_req_v2)) + IM_NLA_HDRLEN +
                                   5 * sizeof(struct inet_diag_bc_op),
                 "netlink request must be packed");
  memset(&msg, 0, sizeof msg);
  size_t len = NLMSG_LENGTH(sizeof msg.req);
  msg.req.sdiag_family = (uint8_t)family;
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = NL_STATES_MASK;
  if (s->bytecode) {
    unsigned short port = s->target.port;
    msg.bc[0] = (struct inet_diag_bc_op){INET_DIAG_BC_S_EQ, 8, 12};
    msg.bc[1] = (struct inet_diag_bc_op){0, 0, port};
    msg.bc[2] = (struct inet_diag_bc_op){INET_DIAG_BC_JMP, 4, 12};
    msg.bc[3] = (struct inet_diag_bc_op){INET_DIAG_BC_D_EQ, 8, 12};
    msg.bc[4] = (struct inet_diag_bc_op){0, 0, port};
    msg.nla.nla_type = INET_DIAG_REQ_BYTECODE;
    msg.nla.nla_len = (uint16_t)(IM_NLA_HDRLEN + sizeof msg.bc);
    len = sizeof msg;
  }
  msg.nlh.nlmsg_len = (uint32_t)len;
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  msg.nlh.nlmsg_seq = ++s->seq;

  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  for (;;) {
    ssize_t n = sendto(s->nl_fd, &msg, len, 0, (const struct sockaddr *)&kernel, sizeof kernel);
    if (n == (ssize_t)len)
      return IM_OK;
    if (n < 0 && errno == EINTR)
      continue;
    return n < 0 ? nl_errno(s, errno) : IM_IO;
  }
}

/* Result of walking one datagram. */
enum nl_walk { NL_MORE, NL_DONE, NL_ERROR };

/* Walks the messages of one datagram of n bytes in s->buf. Messages of an
 * older sequence (a dump abandoned earlier) are ignored. On NL_ERROR, *err
 * is the kernel's errno, or 0 for a malformed datagram. */
static enum nl_walk nl_walk(struct im_sockstat *s, size_t n, struct im_sockstat_counts *out,
                            int *err) {
  size_t off = 0;
  *err = 0;
  while (n - off >= sizeof(struct nlmsghdr)) {
    /* The kernel aligns every message to NLMSG_ALIGNTO (4) and s->buf
     * comes from malloc, so the casts below are aligned. */
    const struct nlmsghdr *h = (const struct nlmsghdr *)(const void *)(s->buf + off);
    if (h->nlmsg_len < sizeof *h || h->nlmsg_len > n - off)
      return NL_ERROR;
    const void *payload = (const char *)h + NLMSG_HDRLEN;
    size_t plen = h->nlmsg_len - NLMSG_HDRLEN; /* nlmsg_len >= NLMSG_HDRLEN */
    if (h->nlmsg_seq == s->seq) {
      if (h->nlmsg_type == NLMSG_DONE) {
        /* The payload is the dump's final status (0 or -errno). */
        int status = 0;
        if (plen >= sizeof status)
          memcpy(&status, payload, sizeof status);
        if (status < 0) {
          *err = -status;
          return NL_ERROR;
        }
        return NL_DONE;
      }
      if (h->nlmsg_type == NLMSG_ERROR) {
        struct nlmsgerr e;
        if (plen < sizeof e)
          return NL_ERROR;
        memcpy(&e, payload, sizeof e);
        if (e.error != 0) { /* 0 is an acknowledgement */
          *err = -e.error;
          return NL_ERROR;
        }
      } else if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY && plen >= sizeof(struct inet_diag_msg)) {
        nl_count(s, (const struct inet_diag_msg *)payload, out);
      }
    }
    off += NLMSG_ALIGN(h->nlmsg_len);
    if (off > n)
      break;
  }
  return NL_MORE;
}

/* One dump of one family, streamed through s->buf. IM_AGAIN: the kernel
 * rejected the bytecode (EINVAL); the caller retries without it. */
static enum im_err nl_dump(struct im_sockstat *s, int family, struct im_sockstat_counts *out) {
  enum im_err r = nl_request(s, family);
  if (r != IM_OK)
    return r;
  for (;;) {
    struct sockaddr_nl from;
    struct iovec iov = {.iov_base = s->buf, .iov_len = IO_BUF_SIZE};
    struct msghdr mh = {
        .msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov, .msg_iovlen = 1};
    ssize_t n = recvmsg(s->nl_fd, &mh, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        s->last_errno = errno;
        return IM_IO; /* no reply within NL_TIMEOUT_S */
      }
      return nl_errno(s, errno);
    }
    if (mh.msg_flags & MSG_TRUNC)
      return IM_LIMIT;
    if (from.nl_pid != 0)
      continue; /* not from the kernel */
    int err;
    switch (nl_walk(s, (size_t)n, out, &err)) {
    case NL_MORE:
      break;
    case NL_DONE:
      return IM_OK;
    case NL_ERROR:
      if (err == 0)
        return IM_IO;
      if (err == EINVAL && s->bytecode)
        return IM_AGAIN;
      return nl_errno(s, err);
    }
  }
}

static enum im_err nl_sample(struct im_sockstat *s, struct im_sockstat_counts *out) {
  if (s->inject_errno)
    return nl_errno(s, s->inject_errno);
  if (s->nl_fd < 0) {
    int err = nl_open(s);
    if (err)
      return nl_errno(s, err);
  }
  static const int families[2] = {AF_INET, AF_INET6};
  for (int i = s->want_v4 ? 0 : 1; i < 2; i++) {
    enum im_err r = nl_dump(s, families[i], out);
    if (r == IM_AGAIN) {
      /* Kernels that refuse the filter still dump everything; matching is
       * in user space anyway, so only the speed changes. */
      s->bytecode = false;
      r = nl_dump(s, families[i], out);
    }
    if (r != IM_OK) {
      nl_reset(s);
      return r;
    }
  }
  return IM_OK;
}

/* ------------------------------------------------------------ public */

enum im_err im_sockstat_open(struct im_sockstat **out, const struct sockaddr *target,
                             socklen_t target_len, enum im_sockstat_mode mode) {
  enum im_err result = IM_INVAL;
  struct im_sockstat *s = NULL;
  struct endpoint t;
  if (!out)
    return IM_INVAL;
  *out = NULL;
  if (endpoint_from_sockaddr(&t, target, target_len) != IM_OK ||
      (mode != IM_SOCKSTAT_AUTO && mode != IM_SOCKSTAT_NETLINK && mode != IM_SOCKSTAT_PROCFS))
    goto out;
  result = IM_NOMEM;
  s = calloc(1, sizeof *s);
  if (!s)
    goto out;
  s->nl_fd = -1;
  s->buf = malloc(IO_BUF_SIZE);
  if (!s->buf)
    goto out;
  s->target = t;
  s->want_v4 = is_v4(&t);
  s->bytecode = true;
  s->mode = mode;
  s->path = IM_SOCKSTAT_PROCFS;
  strcpy(s->root, "/proc");
  if (mode != IM_SOCKSTAT_PROCFS) {
    int err = nl_open(s);
    if (err == 0) {
      s->path = IM_SOCKSTAT_NETLINK;
    } else if (mode == IM_SOCKSTAT_NETLINK || !nl_refused(err)) {
      result = nl_refused(err) ? IM_UNSUPPORTED : IM_SYS;
      errno = err;
      goto out;
    }
  }
  *out = s;
  s = NULL;
  result = IM_OK;
out:
  im_sockstat_close(s);
  return result;
}

enum im_err im_sockstat_sample(struct im_sockstat *s, struct im_sockstat_counts *out) {
  if (!s || !out)
    return IM_INVAL;
  memset(out, 0, sizeof *out);
  s->last_errno = 0;
  enum im_err r;
  if (s->path == IM_SOCKSTAT_NETLINK) {
    out->path = IM_SOCKSTAT_NETLINK;
    r = nl_sample(s, out);
    if (r == IM_UNSUPPORTED && s->mode == IM_SOCKSTAT_AUTO) {
      /* Refused for good (a sandbox does not change its mind): /proc from
       * now on. */
      nl_reset(s);
      s->path = IM_SOCKSTAT_PROCFS;
      memset(out, 0, sizeof *out);
    } else {
      goto done;
    }
  }
  out->path = IM_SOCKSTAT_PROCFS;
  r = proc_sample(s, out);
done:
  if (r != IM_OK) {
    enum im_sockstat_mode path = out->path;
    memset(out, 0, sizeof *out);
    out->path = path;
  }
  return r;
}

int im_sockstat_errno(const struct im_sockstat *s) {
  return s ? s->last_errno : 0;
}

enum im_sockstat_mode im_sockstat_path(const struct im_sockstat *s) {
  return s ? s->path : IM_SOCKSTAT_PROCFS;
}

enum im_err im_sockstat_set_proc_root(struct im_sockstat *s, const char *root) {
  if (!s || !root)
    return IM_INVAL;
  size_t n = strlen(root);
  if (n >= ROOT_MAX)
    return IM_LIMIT;
  memcpy(s->root, root, n + 1);
  return IM_OK;
}

void im_sockstat_close(struct im_sockstat *s) {
  if (!s)
    return;
  nl_reset(s);
  free(s->buf);
  free(s);
}

void im__sockstat_inject_netlink_errno(struct im_sockstat *s, int err) {
  if (s)
    s->inject_errno = err;
}
