/* TCP sockets toward the target, counted by state (docs/metrics.md §5).
 *
 * Once a second during a run, infermeter counts the TCP sockets of this host
 * (of the caller's network namespace) whose local OR remote address:port is
 * the target's, by kernel TCP state. Two paths:
 *
 *   - netlink sock_diag (NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY with
 *     struct inet_diag_req_v2, linux/inet_diag.h), one dump per address
 *     family, all states. The kernel filters on ports with a small bytecode
 *     program ("sport == P || dport == P"); the address comparison is done
 *     here, in user space. Replies are streamed through one fixed 64 KiB
 *     buffer allocated at open, so a host with a million sockets costs time,
 *     never memory.
 *   - /proc/net/tcp and /proc/net/tcp6, read line by line through the same
 *     fixed buffer, filtered entirely in user space.
 *
 * Matching: a socket counts when (remote addr:port == target), the
 * client's end, or (local addr:port == target) with a peer on another host
 * (e.g. the target's own listener, or this host serving others). IPv4-mapped IPv6 addresses
 * (::ffff:a.b.c.d) match their IPv4 form both ways (a dual-stack server's
 * accepted sockets, a target given as a mapped address). A listener bound
 * to a wildcard address (0.0.0.0, ::) does NOT match a target such as
 * 127.0.0.1 (the address differs); IPv6 scope ids are ignored. A target
 * that is a pure IPv6 address skips the IPv4 table (no IPv4 socket can
 * match it).
 *
 * What the counts mean:
 *   - TIME_WAIT stays with whichever side closed first. Toward a remote
 *     target only this host's (client-side) closes are visible; the
 *     server's TIME_WAIT lives on the server. On loopback (a peer whose
 *     address is the target's or a loopback one) both ends are local; a
 *     connection counts once: its client end in every state, its server end
 *     only in TIME_WAIT (where the server closed first and the client end is
 *     gone). So ESTABLISHED is the number of the client's connections.
 *   - States are the kernel's numbers (include/net/tcp_states.h), shown by
 *     both paths alike. Request (half-open) sockets, which netlink reports
 *     as TCP_NEW_SYN_RECV (12) or TCP_SYN_RECV, count as SYN_RECV, as
 *     /proc/net/tcp prints them. Sockets in states outside 1..12 (e.g. the
 *     kernel's bound-but-inactive 13, never requested) are not counted.
 *   - A sample is not atomic: sockets change state while the kernel walks
 *     its tables, so one socket may be missed or seen twice in one sample
 *     when it moves between hash tables; for a per-second series this is
 *     noise.
 *
 * Permissions: sock_diag dumps of TCP need no privilege on Linux; some
 * sandboxes and seccomp profiles refuse the netlink socket (EPERM,
 * EPROTONOSUPPORT, EAFNOSUPPORT) or lack the tcp_diag module (ENOENT).
 * IM_SOCKSTAT_AUTO then falls back to /proc, once and for good.
 *
 * Threads: a handle is used by one thread at a time; distinct handles are
 * independent. Sampling blocks: with 10,000 sockets toward the target,
 * about 12-20 ms by netlink and 50-80 ms by /proc (2-core VM under load,
 * bench/sockstat_speed.c); /proc also pays for every other socket on the
 * host. Call it from a thread that may block, not from a
 * latency-measuring event loop. */
#ifndef IM_OBSERVE_SOCKSTAT_H
#define IM_OBSERVE_SOCKSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/err.h"
#include "record/series.h"

/* enum im_tcp_state (the kernel's numbers) is in record/series.h. */

enum im_sockstat_mode {
  IM_SOCKSTAT_AUTO,    /* netlink, falling back to /proc when refused */
  IM_SOCKSTAT_NETLINK, /* netlink only: refusal is an error */
  IM_SOCKSTAT_PROCFS   /* /proc/net/tcp{,6} only */
};

/* One sample. */
struct im_sockstat_counts {
  uint32_t state[IM_TCP_NSTATES]; /* by enum im_tcp_state; [0] always 0 */
  uint32_t total;                 /* sum of state[] */
  uint32_t skipped;               /* records not counted: malformed /proc lines,
                                     states outside 1..12 */
  enum im_sockstat_mode path;     /* NETLINK or PROCFS: what produced it */
};

/* Opaque sampler handle. */
struct im_sockstat;

/* Opens a sampler for target (a struct sockaddr_in or sockaddr_in6 of
 * target_len bytes; a host name is resolved once by the caller). The
 * target must have a nonzero port. NETLINK and AUTO open the netlink socket
 * now; NETLINK fails with IM_UNSUPPORTED when the kernel refuses it
 * (AUTO then uses /proc instead). Allocates one 64 KiB buffer.
 * On success *out is a new handle owned by the caller (im_sockstat_close);
 * on failure *out is NULL. Errors: IM_INVAL (bad target or mode), IM_NOMEM,
 * IM_UNSUPPORTED, IM_SYS (errno is left as the failed call set it). */
enum im_err im_sockstat_open(struct im_sockstat **out, const struct sockaddr *target,
                             socklen_t target_len, enum im_sockstat_mode mode) IM_WUR;

/* Takes one sample into *out (overwritten; out->path says which path ran).
 * AUTO mode: if netlink is refused (EPERM, EACCES, EPROTONOSUPPORT,
 * EAFNOSUPPORT, EOPNOTSUPP, ENOENT), the handle switches to /proc for this
 * and every later sample. A /proc table that does not exist (tcp6 on a
 * host without IPv6) contributes nothing; IM_NOTFOUND when every table read
 * is missing. Errors: IM_UNSUPPORTED (NETLINK mode refused), IM_LIMIT (a
 * netlink reply larger than the buffer), IM_IO (a malformed or timed-out
 * netlink reply), IM_SYS (see im_sockstat_errno), IM_NOTFOUND. On error
 * *out is zeroed except for path. */
enum im_err im_sockstat_sample(struct im_sockstat *s, struct im_sockstat_counts *out) IM_WUR;

/* The errno behind the last IM_SYS/IM_UNSUPPORTED from sample (0 if none). */
int im_sockstat_errno(const struct im_sockstat *s);

/* The path the next sample will take (NETLINK or PROCFS). */
enum im_sockstat_mode im_sockstat_path(const struct im_sockstat *s);

/* Reads the /proc tables under root instead of "/proc" (root/net/tcp and
 * root/net/tcp6), for tests with fake files. root is copied; at most 255
 * bytes (IM_LIMIT beyond). Affects only the /proc path. */
enum im_err im_sockstat_set_proc_root(struct im_sockstat *s, const char *root) IM_WUR;

/* Frees the handle and closes its netlink socket. NULL is a no-op. */
void im_sockstat_close(struct im_sockstat *s);

/* Parses len bytes of /proc/net/tcp or /proc/net/tcp6 text (either, or
 * both concatenated: each line's address width says its family) and ADDS
 * the sockets matching target to *acc (state[], total, skipped; acc->path is
 * left alone). The header line is ignored; a malformed line (bad field,
 * address width other than 8 or 32 hex digits, state outside 1..12) is
 * skipped and counted in acc->skipped; a last line without '\n' is parsed.
 * Pure; thread-safe. IM_INVAL for a bad target, else IM_OK. */
enum im_err im_sockstat_parse_proc(const char *data, size_t len, const struct sockaddr *target,
                                   socklen_t target_len, struct im_sockstat_counts *acc) IM_WUR;

/* English name of a state ("ESTABLISHED", "TIME_WAIT", ...); "?" otherwise. */
const char *im_tcp_state_name(int state);

/* The summary of a series of samples (TIME_WAIT growth) is in
 * analyze/machine.h. */

/* Internal, for tests: makes the next netlink dumps of s fail as if the
 * kernel had answered -err (0 clears). Exercises the AUTO fallback. */
void im__sockstat_inject_netlink_errno(struct im_sockstat *s, int err);

#endif
