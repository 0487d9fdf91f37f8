/*
 * thread.h - stopping a background thread that sleeps on a condition
 * variable until it has work or its stop flag is set, the shape of every
 * module's worker threads.  Header-only (static inline) so every module
 * shares it without a dependency edge.
 */
#ifndef STRATA_THREAD_H
#define STRATA_THREAD_H

#include <pthread.h>
#include <stdbool.h>

/* Set *stop under mu, wake the thread waiting on cv and wait until it has
 * ended.  Called once per thread, by its owner; this function can't fail. */
static inline void strata_thread_stop(pthread_t th, pthread_mutex_t *mu, pthread_cond_t *cv,
                                      bool *stop)
{
    pthread_mutex_lock(mu);
    *stop = true;
    pthread_cond_signal(cv);
    pthread_mutex_unlock(mu);
    pthread_join(th, NULL);
}

#endif
