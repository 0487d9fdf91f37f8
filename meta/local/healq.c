/*
 * healq.c - the immediate heal queue: the record keys of a commit that
 * reached its write quorum but not every drive of its set (a drive was
 * offline or its write failed) are queued here by set_commit, and
 * strata_meta_heal_queued (the scanner's thread) heals them soon after
 * instead of at the next full heal.  In memory only: after a restart the
 * next strata_meta_heal_all finds the same keys by comparing drives.
 * Bounded: when full, keys are counted as dropped and left to that pass.
 * Threads: push from any committing thread; heal_queued from one at a time
 * (it takes heal_mu, which strata_meta_heal_all takes too; a paced full
 * heal serves the queue itself between its keys, see heal.c).
 */
#include "local.h"

#include <stdlib.h>
#include <string.h>

#define HEALQ_MAX 65536

struct hq_ent {
    unsigned set;
    size_t kl;
    char *k;
};

struct meta_healq {
    pthread_mutex_t mu;
    struct hq_ent *v;
    size_t n;
    uint64_t dropped;
};

int strata_meta__healq_init(struct strata_meta *m)
{
    struct meta_healq *q = calloc(1, sizeof(*q));
    if (!q)
        return STRATA_ENOMEM;
    q->v = calloc(HEALQ_MAX, sizeof(*q->v));
    if (!q->v) {
        free(q);
        return STRATA_ENOMEM;
    }
    pthread_mutex_init(&q->mu, NULL);
    m->healq = q;
    return 0;
}

void strata_meta__healq_fini(struct strata_meta *m)
{
    struct meta_healq *q = m->healq;
    if (!q)
        return;
    for (size_t i = 0; i < q->n; i++)
        free(q->v[i].k);
    free(q->v);
    pthread_mutex_destroy(&q->mu);
    free(q);
    m->healq = NULL;
}

struct push_ctx {
    struct meta_healq *q;
    unsigned set;
};

static void push_key(struct push_ctx *c, const char *k, size_t kl)
{
    if (kl == 0 || k[0] == 'D')
        return; /* index entries heal with their own key in a full pass */
    struct meta_healq *q = c->q;
    if (q->n == HEALQ_MAX) {
        q->dropped++;
        return;
    }
    char *copy = malloc(kl);
    if (!copy) {
        q->dropped++;
        return;
    }
    memcpy(copy, k, kl);
    q->v[q->n++] = (struct hq_ent){.set = c->set, .kl = kl, .k = copy};
}

static void push_put_cb(void *st, const char *k, size_t kl, const char *v, size_t vl)
{
    (void)v;
    (void)vl;
    push_key(st, k, kl);
}

static void push_del_cb(void *st, const char *k, size_t kl)
{
    push_key(st, k, kl);
}

void strata_meta__healq_push(struct strata_meta *m, unsigned set, rocksdb_writebatch_t *wb)
{
    struct push_ctx c = {.q = m->healq, .set = set};
    pthread_mutex_lock(&c.q->mu);
    rocksdb_writebatch_iterate(wb, &c, push_put_cb, push_del_cb);
    pthread_mutex_unlock(&c.q->mu);
}

void strata_meta__local_heal_queue_stats(struct strata_meta *m, size_t *pending,
                                         uint64_t *dropped)
{
    struct meta_healq *q = m->healq;
    pthread_mutex_lock(&q->mu);
    if (pending)
        *pending = q->n;
    if (dropped)
        *dropped = q->dropped;
    pthread_mutex_unlock(&q->mu);
}

/* Heal up to max queued keys (0 = all) into *st; heal_mu is held. */
size_t strata_meta__heal_queued_locked(struct strata_meta *m, size_t max,
                                       struct strata_heal_stats *st)
{
    struct meta_healq *q = m->healq;
    pthread_mutex_lock(&q->mu);
    size_t take = max && max < q->n ? max : q->n;
    struct hq_ent *batch = take ? malloc(take * sizeof(*batch)) : NULL;
    if (batch) {
        /* Oldest first: take from the front, keep the rest in order. */
        memcpy(batch, q->v, take * sizeof(*batch));
        memmove(q->v, q->v + take, (q->n - take) * sizeof(*q->v));
        q->n -= take;
    } else {
        take = 0;
    }
    pthread_mutex_unlock(&q->mu);
    bool touched[64] = {0};
    for (size_t i = 0; i < take; i++) {
        unsigned failed = 0;
        strata_meta__heal_key(m, batch[i].set, batch[i].k, batch[i].kl, st, &failed);
        if (batch[i].set < 64)
            touched[batch[i].set] = true;
        free(batch[i].k);
    }
    free(batch);
    /* Heal writes are unsynced: make them durable as heal_all does. */
    for (unsigned s = 0; s < m->nsets && s < 64; s++) {
        if (!touched[s])
            continue;
        for (unsigned d = 0; d < m->sets[s].n; d++)
            (void)strata_meta__drive_sync_wal(m, s, d); /* skips a failed store */
    }
    return take;
}

int strata_meta__local_heal_queued(struct strata_meta *m, size_t max,
                                   struct strata_heal_stats *out, size_t *pending)
{
    struct strata_heal_stats st = {0};
    pthread_mutex_lock(&m->heal_mu);
    size_t take = strata_meta__heal_queued_locked(m, max, &st);
    pthread_mutex_unlock(&m->heal_mu);
    if (pending)
        strata_meta__local_heal_queue_stats(m, pending, NULL);
    if (out)
        *out = st;
    return (int)take;
}
