/* Threads of infermeter: every thread but the main one blocks all signals,
 * so the process's handlers (Ctrl-C, SIGTERM) run on the main thread only
 * and a blocking call elsewhere is never interrupted by them. */
#ifndef INFERMETER_THREAD_H
#define INFERMETER_THREAD_H

#include <pthread.h>

/* pthread_create(t, NULL, fn, arg) with every signal blocked in the new
 * thread (the caller's mask is unchanged on return). Returns 0 or
 * pthread_create's error number (then no thread exists). Thread-safe. */
int im_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

/* As im_thread_start, for a thread whose timing does not matter (the
 * record writer, observers, progress, exporters): it runs under Linux's
 * SCHED_IDLE policy, so a measuring loop that wakes up on the same core
 * preempts it at once instead of waiting out its time slice. Where the
 * policy cannot be set, or the environment variable
 * INFERMETER_AUX_THREADS=normal asks for it (to measure the difference),
 * the thread keeps the normal policy. Thread-safe. */
int im_thread_start_background(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
