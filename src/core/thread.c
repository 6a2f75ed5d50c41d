#include "core/thread.h"

#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

int im_thread_start(pthread_t *t, void *(*fn)(void *), void *arg) {
  /* The new thread inherits the mask in force at creation. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int e = pthread_create(t, NULL, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return e;
}

int im_thread_start_background(pthread_t *t, void *(*fn)(void *), void *arg) {
  int e = im_thread_start(t, fn, arg);
  if (e)
    return e;
  const char *v = getenv("INFERMETER_AUX_THREADS");
  if (v && !strcmp(v, "normal"))
    return 0;
  /* Lowering a thread to SCHED_IDLE needs no privilege; a refusal (another
   * kernel, a seccomp filter) leaves it as it was, which is only slower to
   * give way. The thread may run its first instructions before this. */
  struct sched_param p = {.sched_priority = 0};
  (void)pthread_setschedparam(*t, SCHED_IDLE, &p);
  return 0;
}
