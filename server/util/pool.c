/*
 * pool.c - sharded worker pool (see pool.h).
 */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "strata/err.h"

struct shard {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct strata_job *head, *tail;
    bool stopping;
    /* Written under mu, read by submitters of other shards without it (a
     * hint, not a promise): workers waiting for a job, jobs queued. */
    _Atomic unsigned idle, queued;
};

struct strata_pool {
    unsigned nshards, nworkers;
    struct shard *shards;
    pthread_t *threads;
    unsigned started;
};


static void *worker_main(void *arg)
{
    struct shard *sh = arg;
    pthread_mutex_lock(&sh->mu);
    for (;;) {
        while (!sh->head && !sh->stopping) {
            atomic_fetch_add(&sh->idle, 1);
            pthread_cond_wait(&sh->cv, &sh->mu);
            atomic_fetch_sub(&sh->idle, 1);
        }
        struct strata_job *j = sh->head;
        if (!j)
            break; /* stopping, queue drained */
        atomic_fetch_sub(&sh->queued, 1);
        sh->head = j->next;
        if (!sh->head)
            sh->tail = NULL;
        pthread_mutex_unlock(&sh->mu);
        j->fn(j);
        pthread_mutex_lock(&sh->mu);
    }
    pthread_mutex_unlock(&sh->mu);
    return NULL;
}

int strata_pool_start(unsigned nshards, unsigned nworkers, struct strata_pool **out)
{
    *out = NULL;
    if (nshards == 0)
        nshards = 1;
    if (nworkers < nshards)
        nworkers = nshards;
    struct strata_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return STRATA_ENOMEM;
    p->nshards = nshards;
    p->nworkers = nworkers;
    p->shards = calloc(nshards, sizeof(*p->shards));
    p->threads = calloc(nworkers, sizeof(*p->threads));
    if (!p->shards || !p->threads) {
        free(p->shards);
        free(p->threads);
        free(p);
        return STRATA_ENOMEM;
    }
    for (unsigned i = 0; i < nshards; i++) {
        pthread_mutex_init(&p->shards[i].mu, NULL);
        pthread_cond_init(&p->shards[i].cv, NULL);
    }
    /* Workers block in storage calls: small stacks are plenty. */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1u << 20);
    for (unsigned i = 0; i < nworkers; i++) {
        if (pthread_create(&p->threads[i], &attr, worker_main, &p->shards[i % nshards]) != 0)
            break;
        p->started++;
    }
    pthread_attr_destroy(&attr);
    if (p->started < nshards) {
        strata_pool_free(p);
        return STRATA_EIO;
    }
    *out = p;
    return 0;
}

/* Whether a job queued on sh now would find a worker waiting. */
static bool shard_free(struct shard *sh)
{
    return atomic_load_explicit(&sh->idle, memory_order_relaxed) >
           atomic_load_explicit(&sh->queued, memory_order_relaxed);
}

/* The shard of a hint: its bits mixed (callers pass pointers, whose low
 * bits are all zero: hint % nshards alone sent every request to one shard
 * and left the other shards' workers idle), and when that shard has no
 * worker free, the next one that has (a commit waiting on the cluster
 * holds its worker for a round trip; jobs must not queue behind it while
 * another shard's workers wait). */
static struct shard *shard_of(struct strata_pool *p, uint64_t hint)
{
    hint ^= hint >> 33; /* murmur3's fmix64 */
    hint *= 0xff51afd7ed558ccdull;
    hint ^= hint >> 33;
    unsigned i = (unsigned)(hint % p->nshards);
    for (unsigned k = 0; k < p->nshards; k++) {
        struct shard *sh = &p->shards[(i + k) % p->nshards];
        if (shard_free(sh))
            return sh;
    }
    return &p->shards[i];
}

int strata_pool_submit(struct strata_pool *p, uint64_t hint, struct strata_job *j)
{
    if (!p)
        return -1;
    struct shard *sh = shard_of(p, hint);
    j->next = NULL;
    pthread_mutex_lock(&sh->mu);
    if (sh->stopping) {
        pthread_mutex_unlock(&sh->mu);
        return -1;
    }
    if (sh->tail)
        sh->tail->next = j;
    else
        sh->head = j;
    sh->tail = j;
    atomic_fetch_add(&sh->queued, 1);
    pthread_cond_signal(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
    return 0;
}

void strata_pool_stop(struct strata_pool *p)
{
    if (!p)
        return;
    for (unsigned i = 0; i < p->nshards; i++) {
        pthread_mutex_lock(&p->shards[i].mu);
        p->shards[i].stopping = true;
        pthread_cond_broadcast(&p->shards[i].cv);
        pthread_mutex_unlock(&p->shards[i].mu);
    }
    for (unsigned i = 0; i < p->started; i++)
        pthread_join(p->threads[i], NULL);
    p->started = 0;
}

void strata_pool_free(struct strata_pool *p)
{
    if (!p)
        return;
    strata_pool_stop(p);
    for (unsigned i = 0; i < p->nshards; i++) {
        pthread_mutex_destroy(&p->shards[i].mu);
        pthread_cond_destroy(&p->shards[i].cv);
    }
    free(p->shards);
    free(p->threads);
    free(p);
}
