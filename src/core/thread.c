#include "core/thread.h"

#include <signal.h>

int im_thread_start(pthread_t *t, void *(*fn)(void *), void *arg) {
  /* The new thread inherits the mask in force at creation. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int e = pthread_create(t, NULL, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return e;
}
