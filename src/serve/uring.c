/* io_uring sends for serve's output (serve/uring.h). */
#include "serve/uring.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"

#ifdef IM_HAVE_URING
#include <liburing.h>
#include <sys/socket.h>

struct im_uring {
  struct io_uring ring;
  unsigned entries;
};

int im_uring_built(void) { return 1; }

enum im_err im_uring_open(struct im_uring **out, unsigned entries, char *why, size_t why_len) {
  *out = NULL;
  const char *off = getenv("INFERMETER_SERVE_NO_URING");
  if (off && strcmp(off, "1") == 0) {
    snprintf(why, why_len, "INFERMETER_SERVE_NO_URING=1");
    return IM_UNSUPPORTED;
  }
  struct im_uring *u = calloc(1, sizeof *u);
  if (!u)
    return IM_NOMEM;
  int r = io_uring_queue_init(entries, &u->ring, 0);
  if (r < 0) {
    snprintf(why, why_len, "io_uring_setup: %s", strerror(-r));
    free(u);
    return IM_UNSUPPORTED;
  }
  u->entries = entries;
  *out = u;
  return IM_OK;
}

void im_uring_close(struct im_uring *u) {
  if (!u)
    return;
  io_uring_queue_exit(&u->ring);
  free(u);
}

enum im_err im_uring_send_all(struct im_uring *u, struct im_uring_send *v, size_t n) {
  size_t i = 0;
  while (i < n) {
    size_t k = 0;
    for (; i + k < n; k++) {
      struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
      if (!sqe)
        break;
      io_uring_prep_send(sqe, v[i + k].fd, v[i + k].data, v[i + k].len, MSG_DONTWAIT | MSG_NOSIGNAL);
      io_uring_sqe_set_data64(sqe, (uint64_t)(i + k));
    }
    int64_t ns = im_now_ns();
    /* MSG_DONTWAIT: each send completes inline, so the wait ends at once. */
    int r = io_uring_submit_and_wait(&u->ring, (unsigned)k);
    int64_t done = im_now_ns();
    if (r < 0) {
      /* Nothing was submitted; the ring is not used again (see uring.h). */
      for (size_t j = i; j < n; j++)
        v[j].ns = 0;
      return IM_SYS;
    }
    for (size_t j = i; j < i + k; j++) {
      v[j].res = -ECANCELED; /* until its completion says otherwise */
      v[j].ns = ns;
      v[j].done_ns = done;
    }
    for (size_t got = 0; got < k;) {
      struct io_uring_cqe *cqe;
      int w = io_uring_wait_cqe(&u->ring, &cqe);
      if (w == -EINTR)
        continue;
      if (w < 0) {
        for (size_t j = i + k; j < n; j++)
          v[j].ns = 0;
        return IM_SYS;
      }
      v[io_uring_cqe_get_data64(cqe)].res = cqe->res;
      io_uring_cqe_seen(&u->ring, cqe);
      got++;
    }
    i += k;
  }
  return IM_OK;
}

#else /* no liburing at build time */

struct im_uring {
  int unused;
};

int im_uring_built(void) { return 0; }

enum im_err im_uring_open(struct im_uring **out, unsigned entries, char *why, size_t why_len) {
  (void)entries;
  *out = NULL;
  snprintf(why, why_len, "built without liburing");
  return IM_UNSUPPORTED;
}

void im_uring_close(struct im_uring *u) { (void)u; }

enum im_err im_uring_send_all(struct im_uring *u, struct im_uring_send *v, size_t n) {
  (void)u;
  for (size_t i = 0; i < n; i++)
    v[i].res = -ENOSYS;
  return IM_SYS;
}

#endif
