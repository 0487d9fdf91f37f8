/*
 * observe.c - the helper thread of an io context that runs a writer's
 * observer callback (strata_ec_writer_observe) over full stripe buffers
 * while the writer's own thread goes on filling, encoding and submitting
 * the next stripes.  Used for the PUT digests: MD5 of the ETag costs more
 * CPU per byte than everything else on the write path together, so running
 * it beside the caller roughly doubles what one PUT stream can feed.
 *
 * The helper is started on first use and lives as long as its io context
 * (pooled contexts keep it parked on a condition variable), so a PUT does
 * not pay for a thread creation.  Work items are tickets: post() returns a
 * sequence number, wait(seq) returns once every item up to seq has been
 * handed to the callback and the callback returned.  Items run in post
 * order, one at a time, so a digest sees the bytes in object order.
 *
 * Threads: post/wait/stop are called by the thread that owns the io
 * context; the helper thread only runs callbacks.  Lock: obs->mu, never
 * held while a callback runs.
 */
#include "ec_internal.h"
#include "strata/thread.h"

#include <stdlib.h>

#define OBS_QUEUE STRATA_EC_OBS_QUEUE

struct strata_ec__obs {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* helper waits for items */
    pthread_cond_t done_cv; /* owner waits for progress */
    strata_ec_observe_cb cb;
    void *ud;
    const void *ptr[OBS_QUEUE];
    size_t len[OBS_QUEUE];
    uint64_t posted, done; /* tickets: items 1..posted queued, 1..done finished */
    bool stop;
};

static void *obs_main(void *arg)
{
    struct strata_ec__obs *o = arg;
    /* Else it inherits its creator's name (e.g. a daemon's connection
     * thread), which misleads top and perf. */
    pthread_setname_np(pthread_self(), "strata-ec-obs");
    pthread_mutex_lock(&o->mu);
    for (;;) {
        while (o->done == o->posted && !o->stop)
            pthread_cond_wait(&o->work_cv, &o->mu);
        if (o->done == o->posted)
            break; /* stop, and nothing left */
        unsigned i = (unsigned)(o->done % OBS_QUEUE);
        const void *p = o->ptr[i];
        size_t n = o->len[i];
        strata_ec_observe_cb cb = o->cb;
        void *ud = o->ud;
        pthread_mutex_unlock(&o->mu);
        cb(ud, p, n);
        pthread_mutex_lock(&o->mu);
        o->done++;
        pthread_cond_broadcast(&o->done_cv);
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

struct strata_ec__obs *strata_ec__obs_start(void)
{
    struct strata_ec__obs *o = calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->work_cv, NULL);
    pthread_cond_init(&o->done_cv, NULL);
    if (pthread_create(&o->th, NULL, obs_main, o) != 0) {
        pthread_mutex_destroy(&o->mu);
        pthread_cond_destroy(&o->work_cv);
        pthread_cond_destroy(&o->done_cv);
        free(o);
        return NULL;
    }
    return o;
}

uint64_t strata_ec__obs_post(struct strata_ec__obs *o, strata_ec_observe_cb cb, void *ud,
                             const void *data, size_t len)
{
    pthread_mutex_lock(&o->mu);
    /* The writer waits for a slot's ticket before refilling it, so the
     * queue never holds more than its number of stripe buffers. */
    STRATA_ASSERT(o->posted - o->done < OBS_QUEUE);
    STRATA_ASSERT(o->done == o->posted || (o->cb == cb && o->ud == ud));
    o->cb = cb;
    o->ud = ud;
    unsigned i = (unsigned)(o->posted % OBS_QUEUE);
    o->ptr[i] = data;
    o->len[i] = len;
    uint64_t t = ++o->posted;
    pthread_cond_signal(&o->work_cv);
    pthread_mutex_unlock(&o->mu);
    return t;
}

void strata_ec__obs_wait(struct strata_ec__obs *o, uint64_t ticket)
{
    pthread_mutex_lock(&o->mu);
    while (o->done < ticket)
        pthread_cond_wait(&o->done_cv, &o->mu);
    pthread_mutex_unlock(&o->mu);
}

uint64_t strata_ec__obs_last(struct strata_ec__obs *o)
{
    pthread_mutex_lock(&o->mu);
    uint64_t t = o->posted;
    pthread_mutex_unlock(&o->mu);
    return t;
}

void strata_ec__obs_stop(struct strata_ec__obs *o)
{
    if (!o)
        return;
    strata_thread_stop(o->th, &o->mu, &o->work_cv, &o->stop);
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->work_cv);
    pthread_cond_destroy(&o->done_cv);
    free(o);
}
