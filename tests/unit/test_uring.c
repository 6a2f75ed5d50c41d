/* serve's io_uring sends (serve/uring.h) over socket pairs: every buffer
 * arrives whole and in order, a socket that cannot take everything completes
 * at once with what it took (MSG_DONTWAIT: nothing waits), a closed peer is
 * an error, and more buffers than the ring holds take several submissions.
 * Skipped (with a message) where the build or the kernel has no io_uring. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "serve/uring.h"

#define PAIRS 40

static void test_sends(struct im_uring *u) {
  int sv[PAIRS][2];
  struct im_uring_send v[PAIRS * 2];
  char msg[PAIRS * 2][32];
  for (int i = 0; i < PAIRS; i++)
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv[i]), 0);
  /* Two buffers per socket, interleaved: 0a 1a ... 39a 0b 1b ... 39b. */
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < PAIRS; i++) {
      int j = k * PAIRS + i;
      int n = snprintf(msg[j], sizeof msg[j], "<%d%c>", i, 'a' + k);
      v[j] = (struct im_uring_send){.fd = sv[i][0], .data = msg[j], .len = (size_t)n};
    }
  CHECK_EQ(im_uring_send_all(u, v, PAIRS * 2), IM_OK);
  for (int j = 0; j < PAIRS * 2; j++) {
    CHECK_EQ(v[j].res, (int)v[j].len);
    CHECK(v[j].ns > 0 && v[j].ns <= v[j].done_ns);
  }
  for (int i = 0; i < PAIRS; i++) {
    char got[64] = {0}, want[64];
    snprintf(want, sizeof want, "<%da><%db>", i, i);
    CHECK_EQ(read(sv[i][1], got, sizeof got - 1), (long)strlen(want));
    CHECK(!strcmp(got, want));
    close(sv[i][0]);
    close(sv[i][1]);
  }
}

/* A full socket: the send completes at once with part of the bytes or
 * -EAGAIN, never waits for the reader. */
static void test_full_socket(struct im_uring *u) {
  int sv[2];
  CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  static char big[4 << 20];
  memset(big, 'x', sizeof big);
  struct im_uring_send v = {.fd = sv[0], .data = big, .len = sizeof big};
  CHECK_EQ(im_uring_send_all(u, &v, 1), IM_OK);
  CHECK(v.res == -EAGAIN || (v.res > 0 && v.res < (int)sizeof big));
  /* Fill it up, then one more: -EAGAIN. */
  while (write(sv[0], big, 65536) > 0)
    ;
  v = (struct im_uring_send){.fd = sv[0], .data = "y", .len = 1};
  CHECK_EQ(im_uring_send_all(u, &v, 1), IM_OK);
  CHECK_EQ(v.res, -EAGAIN);
  close(sv[0]);
  close(sv[1]);
}

/* The peer is gone: an error result, no SIGPIPE. */
static void test_closed_peer(struct im_uring *u) {
  int sv[2];
  CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  close(sv[1]);
  struct im_uring_send v = {.fd = sv[0], .data = "z", .len = 1};
  CHECK_EQ(im_uring_send_all(u, &v, 1), IM_OK);
  CHECK_EQ(v.res, -EPIPE);
  close(sv[0]);
}

int main(void) {
  struct im_uring *u;
  char why[160];
  /* A ring of 16: 80 sends take five submissions. */
  enum im_err err = im_uring_open(&u, 16, why, sizeof why);
  if (err) {
    CHECK_EQ(err, IM_UNSUPPORTED);
    printf("SKIP (io_uring not available: %s)\n", why);
    return CHECK_DONE();
  }
  test_sends(u);
  test_full_socket(u);
  test_closed_peer(u);
  im_uring_close(u);
  return CHECK_DONE();
}
