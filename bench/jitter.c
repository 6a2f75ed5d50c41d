/* A reproducible jittery host (issue "Verdicts you can trust 1 of 3").
 *
 * Busy loops at nice 0 or 19 do not reproduce a shared VM: the kernel
 * preempts them as soon as the client wakes. What does is a process per
 * CPU under SCHED_FIFO, pinned to its CPU, each busy-waiting BURST ms at
 * every multiple of PERIOD ms of CLOCK_MONOTONIC, so that every CPU is
 * taken at the same instants and a thread due then waits for the burst to
 * end. With BURST 3 and PERIOD 50, about 6 % of wake-ups are up to 3 ms
 * late.
 *
 *   cc -O2 -std=c17 -D_GNU_SOURCE -o jitter bench/jitter.c
 *   ./jitter BURST_MS PERIOD_MS [SECONDS] [CPUS]
 *
 * Needs CAP_SYS_NICE (root) for SCHED_FIFO; without it the bursts run at
 * the default policy and say so (the jitter is then much weaker). Runs
 * SECONDS (default: until killed; SIGTERM/SIGINT end every child). The
 * kernel's RT throttling (sched_rt_runtime_us, 95 % by default) bounds the
 * harm of a wrong setting. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static int child(int cpu, int64_t burst, int64_t period, int64_t end) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET((size_t)cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    perror("jitter: sched_setaffinity");
  struct sched_param sp = {.sched_priority = 1};
  if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
    fprintf(stderr, "jitter: cpu %d: SCHED_FIFO refused (%s): bursts at the default policy\n",
            cpu, strerror(errno));
  while (!stop) {
    int64_t t = now_ns();
    if (end && t >= end)
      break;
    int64_t next = (t / period + 1) * period;
    struct timespec ts = {.tv_sec = next / 1000000000, .tv_nsec = next % 1000000000};
    if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
      continue;
    int64_t until = next + burst;
    while (now_ns() < until && !stop)
      ;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: jitter BURST_MS PERIOD_MS [SECONDS] [CPUS]\n");
    return 2;
  }
  double burst_ms = atof(argv[1]), period_ms = atof(argv[2]);
  double secs = argc > 3 ? atof(argv[3]) : 0;
  long cpus = argc > 4 ? atol(argv[4]) : sysconf(_SC_NPROCESSORS_ONLN);
  if (!(burst_ms > 0) || !(period_ms > burst_ms) || cpus < 1 || cpus > 1024) {
    fprintf(stderr, "jitter: need 0 < BURST < PERIOD and 1..1024 CPUs\n");
    return 2;
  }
  int64_t burst = (int64_t)(burst_ms * 1e6), period = (int64_t)(period_ms * 1e6);
  int64_t end = secs > 0 ? now_ns() + (int64_t)(secs * 1e9) : 0;
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  pid_t pids[1024];
  for (long c = 0; c < cpus; c++) {
    pids[c] = fork();
    if (pids[c] == 0)
      return child((int)c, burst, period, end);
    if (pids[c] < 0) {
      perror("jitter: fork");
      cpus = c;
      break;
    }
  }
  for (long c = 0; c < cpus; c++) {
    while (waitpid(pids[c], NULL, 0) < 0 && errno == EINTR)
      if (stop)
        for (long k = 0; k < cpus; k++)
          kill(pids[k], SIGTERM);
  }
  return 0;
}
