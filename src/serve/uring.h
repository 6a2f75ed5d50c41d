/* Sends many small buffers to many sockets in one io_uring_enter (serve
 * --io uring; docs/serve.md "Output"). Built when liburing was found at
 * configure time (IM_HAVE_URING); otherwise, and when the kernel refuses
 * io_uring (seccomp in containers, io_uring_disabled, kernels before 5.6),
 * im_uring_open() fails and serve writes with write() instead.
 *
 * Every send carries MSG_DONTWAIT: a socket that cannot take all the bytes
 * at once completes with what it took (or -EAGAIN) instead of waiting, so
 * every result is known when im_uring_send_all() returns, as with a
 * non-blocking write(). */
#ifndef IM_SERVE_URING_H
#define IM_SERVE_URING_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

struct im_uring;

struct im_uring_send {
  int fd;
  const void *data;
  size_t len;
  int res;          /* out: bytes sent, or -errno */
  int64_t ns;       /* out: CLOCK_MONOTONIC just before the io_uring_enter that carried it */
  int64_t done_ns;  /* out: just after that io_uring_enter returned */
};

/* Creates a ring of `entries` submission slots. On failure returns
 * IM_UNSUPPORTED (not built with liburing, or the kernel said no; why names
 * the reason) or IM_NOMEM. The environment variable
 * INFERMETER_SERVE_NO_URING=1 makes it fail as a refusing kernel would (for
 * tests of the fallback). */
enum im_err im_uring_open(struct im_uring **out, unsigned entries, char *why, size_t why_len) IM_WUR;
void im_uring_close(struct im_uring *u);
/* Sends v[0..n): as many per io_uring_enter as the ring holds, in order.
 * Fills each res, ns, done_ns. Returns IM_SYS when a submission failed: the
 * entries from the first one not submitted on have ns 0 (the caller sends
 * them another way), and the ring must not be used again but closed. */
enum im_err im_uring_send_all(struct im_uring *u, struct im_uring_send *v, size_t n);
/* Whether this build has io_uring support at all. */
int im_uring_built(void);

#endif
