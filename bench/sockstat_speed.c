/* Time per observe/sockstat sample with many loopback connections toward
 * the target, netlink sock_diag vs /proc/net/tcp.
 *
 * Build and run from the repository root:
 *   cmake --build build --target sockstat_speed && \
 *     build/bench/sockstat_speed [connections=10000] [samples=50]
 *
 * A forked child holds the listener on 127.0.0.1:0 and the accepted ends,
 * this process holds the clients, so each needs one descriptor per
 * connection (RLIMIT_NOFILE is raised to its hard limit). The target then
 * has 2 * connections ESTABLISHED sockets plus its listener; whatever else
 * the host holds is walked by the kernel too and shows in the timings. */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "observe/sockstat.h"

static void die(const char *what) {
  fprintf(stderr, "sockstat_speed: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void run(struct sockaddr_in *target, enum im_sockstat_mode mode, const char *label,
                int samples) {
  struct im_sockstat *s = NULL;
  enum im_err r = im_sockstat_open(&s, (struct sockaddr *)target, sizeof *target, mode);
  if (r != IM_OK) {
    printf("%-8s unavailable: %s\n", label, im_strerror(r));
    return;
  }
  struct im_sockstat_counts k;
  double best = 1e30, sum = 0;
  for (int i = 0; i < samples; i++) {
    int64_t t0 = im_now_ns();
    r = im_sockstat_sample(s, &k);
    double ms = (double)(im_now_ns() - t0) / 1e6;
    if (r != IM_OK) {
      printf("%-8s sample failed: %s (errno %d)\n", label, im_strerror(r), im_sockstat_errno(s));
      im_sockstat_close(s);
      return;
    }
    sum += ms;
    if (ms < best)
      best = ms;
  }
  printf("%-8s %6.3f ms/sample mean, %6.3f min over %d; ESTABLISHED %u LISTEN %u "
         "TIME_WAIT %u total %u\n",
         label, sum / samples, best, samples, k.state[IM_TCP_ESTABLISHED], k.state[IM_TCP_LISTEN],
         k.state[IM_TCP_TIME_WAIT], k.total);
  im_sockstat_close(s);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 10000;
  int samples = argc > 2 ? atoi(argv[2]) : 50;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
    die("getrlimit");
  rl.rlim_cur = rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
    die("setrlimit");
  if ((rlim_t)n + 16 > rl.rlim_cur) {
    n = (int)rl.rlim_cur - 16;
    fprintf(stderr, "sockstat_speed: RLIMIT_NOFILE %llu: %d connections\n",
            (unsigned long long)rl.rlim_cur, n);
  }

  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 4096) != 0 ||
      getsockname(lfd, (struct sockaddr *)&a, &alen) != 0)
    die("listener");

  int ready[2], quit[2];
  if (pipe(ready) != 0 || pipe(quit) != 0)
    die("pipe");
  pid_t child = fork();
  if (child < 0)
    die("fork");
  if (child == 0) {
    /* Server side: accept every connection, report, hold until told. */
    close(ready[0]);
    close(quit[1]);
    for (int i = 0; i < n; i++)
      if (accept(lfd, NULL, NULL) < 0)
        die("accept");
    char b = 'r';
    if (write(ready[1], &b, 1) != 1)
      die("write");
    (void)read(quit[0], &b, 1);
    _exit(0);
  }
  close(ready[1]);
  close(quit[0]);
  close(lfd);
  int64_t t0 = im_now_ns();
  for (int i = 0; i < n; i++) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
      die("connect");
  }
  char b;
  if (read(ready[0], &b, 1) != 1)
    die("child");
  printf("%d connections to 127.0.0.1:%u in %.0f ms\n", n, ntohs(a.sin_port),
         (double)(im_now_ns() - t0) / 1e6);

  run(&a, IM_SOCKSTAT_NETLINK, "netlink", samples);
  run(&a, IM_SOCKSTAT_PROCFS, "procfs", samples);

  close(quit[1]);
  waitpid(child, NULL, 0);
  return 0;
}
