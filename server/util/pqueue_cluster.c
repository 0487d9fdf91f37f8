/*
 * pqueue_cluster.c - queues in a store shared by several gateways
 * (contract in pqueue_cluster.h, layout in meta/RADOS.md "Queues").
 *
 * A lease thread takes the queue's lease (strata_meta_queue_lease) and
 * renews it every STRATA_LEASE_RENEW_MS; it also counts the queue about
 * every COUNT_MS for the bound and the pending figure.  While the lease is
 * held the delivery threads take messages: one thread at a time reads the
 * queue from its first key, skipping keys other threads hold (taken
 * before, not yet done) and messages whose ordering key (opts.order_key)
 * a held one has, and takes the next one (or up to
 * STRATA_PQUEUE_BATCH_MAX for send_batch); always reading from the first
 * key picks up a message another gateway pushed with an earlier stamp.
 * A message the callback is done with is removed from the cluster (a
 * failed remove means a redelivery, as at-least-once allows).  A thread
 * retrying a failed send with backoff gives its messages back when the
 * lease is lost: the new holder delivers them.
 *
 * The pending figure is the last count plus this gateway's pushes since,
 * less its removals since.  A count that a push or removal of this
 * gateway overlaps may or may not have seen it, so such a count is not
 * taken (the figure would stay one off until the next one): while the
 * queue is short (one RADOS op counts it) pushes and removals wait for the
 * count and it always holds; a long queue's count, which takes many ops,
 * is tried again at the next round, and taken as it is only after
 * OVERLAPS_MAX rounds in a row were overlapped (a bound is still needed).
 */
#include "pqueue_cluster.h"

#include "strata/meta.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POLL_MS       200 /* how often an idle holder looks for other gateways' pushes */
#define COUNT_MS      1000
#define COUNT_SLOW_MS 10000 /* a long queue is counted less often */
#define COUNT_LONG    1000
#define HELD_MAX      (STRATA_PQUEUE_THREADS_MAX * STRATA_PQUEUE_BATCH_MAX)
#define OVERLAPS_MAX  5

struct pqueue_cluster {
    struct strata_pqueue_opts o;
    char name[STRATA_META_QUEUE_NAME_MAX + 1];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, leased, reading;
    uint64_t counted, pushed_since; /* the last count; pushes of this gateway after it */
    /* This gateway's pushes and removals: in flight, and done (a count
     * overlapped by none is exact); counting: new ones wait. */
    unsigned inflight;
    uint64_t ops_done;
    bool counting;
    unsigned overlaps; /* counts of a long queue not taken, in a row */
    /* Keys delivery threads hold; gone: done with during a read, which
     * may still show it (held until that read ends). */
    struct held {
        char key[STRATA_META_QUEUE_KEY_MAX];
        bool gone;
        uint64_t okey; /* the message's opts.order_key (0: none) */
    } held[HELD_MAX];
    size_t nheld;
    unsigned started;
    bool lease_started;
    pthread_t th[STRATA_PQUEUE_THREADS_MAX], lease_th;
    struct strata_pqueue__counts counts;
};

/* Waits up to ms or until signalled; mutex held. */
static void wait_ms(struct pqueue_cluster *q, uint64_t ms)
{
    strata_pqueue__wait(&q->cv, &q->mu, ms);
}

static bool is_held(const struct pqueue_cluster *q, const char *key)
{
    for (size_t i = 0; i < q->nheld; i++)
        if (strcmp(q->held[i].key, key) == 0)
            return true;
    return false;
}

/* Whether a message held and not done with has ordering key ok. */
static bool okey_held(const struct pqueue_cluster *q, uint64_t ok)
{
    for (size_t i = 0; ok && i < q->nheld; i++)
        if (!q->held[i].gone && q->held[i].okey == ok)
            return true;
    return false;
}

/* Keys no longer held by a thread (removed: gone); mutex held.  A key
 * removed while a thread reads stays held until the read ends (purge),
 * or that read could take it again. */
static void unhold(struct pqueue_cluster *q, const struct strata_meta_queue_ent *e, size_t n,
                   bool removed)
{
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < q->nheld; i++)
            if (strcmp(q->held[i].key, e[k].key) == 0) {
                if (removed && q->reading)
                    q->held[i].gone = true;
                else
                    q->held[i] = q->held[--q->nheld];
                break;
            }
}

/* After a read: the keys removed during it are let go; mutex held. */
static void purge(struct pqueue_cluster *q)
{
    for (size_t i = 0; i < q->nheld;)
        if (q->held[i].gone)
            q->held[i] = q->held[--q->nheld];
        else
            i++;
}

static void (*count_hook)(void *ud);
static void *count_hook_ud;

void strata_pqueue__cluster_test_count_hook(void (*hook)(void *ud), void *ud)
{
    count_hook = hook;
    count_hook_ud = ud;
}

/* A push or removal of this gateway begins (after a count in progress
 * that makes the others wait) or ends; mutex held. */
static void op_begin(struct pqueue_cluster *q)
{
    while (q->counting)
        pthread_cond_wait(&q->cv, &q->mu);
    q->inflight++;
}

static void op_end(struct pqueue_cluster *q)
{
    q->inflight--;
    q->ops_done++;
    if (q->inflight == 0)
        pthread_cond_broadcast(&q->cv); /* a count may wait */
}

/* Counts the queue (see the top); mutex held (released around the
 * count).  true: taken. */
static bool count(struct pqueue_cluster *q)
{
    /* A short queue is counted in one op (COUNT_LONG keys at most) while
     * this gateway's pushes and removals wait. */
    bool alone = q->counted + q->pushed_since < COUNT_LONG;
    if (alone) {
        q->counting = true;
        while (q->inflight)
            pthread_cond_wait(&q->cv, &q->mu);
    }
    uint64_t ops = q->ops_done, n = 0, before = q->pushed_since;
    bool quiet = q->inflight == 0;
    uint64_t upto = alone && q->o.max > COUNT_LONG ? COUNT_LONG : q->o.max;
    pthread_mutex_unlock(&q->mu);
    int rc = strata_meta_queue_count(q->o.cluster, q->name, upto, &n);
    if (count_hook)
        count_hook(count_hook_ud);
    pthread_mutex_lock(&q->mu);
    if (alone) {
        q->counting = false;
        pthread_cond_broadcast(&q->cv);
    }
    if (rc)
        return false;
    if (quiet && q->inflight == 0 && q->ops_done == ops) {
        if (n == upto && upto < q->o.max) {
            /* Longer than one op counts: at least n, counted in full at
             * the next round. */
            q->counted = n;
            q->pushed_since = 0;
            return false;
        }
        q->counted = n;
        q->pushed_since = 0;
        q->overlaps = 0;
        return true;
    }
    if (++q->overlaps < OVERLAPS_MAX)
        return false;
    /* A long queue busy with this gateway's traffic at every count: taken
     * as it is, for the bound (the figure may be a few off until the
     * next count). */
    q->overlaps = 0;
    q->counted = n;
    q->pushed_since = q->pushed_since > before ? q->pushed_since - before : 0;
    return true;
}

/* The lease, renewed while held, and the count. */
static void *lease_main(void *arg)
{
    struct pqueue_cluster *q = arg;
    uint64_t lease_at = 0, count_at = 0;
    pthread_mutex_lock(&q->mu);
    while (!q->stop) {
        uint64_t now = strata_pqueue__now_ms();
        if (now - lease_at >= strata_meta_lease_renew_ms(q->o.cluster) || lease_at == 0) {
            bool was = q->leased;
            pthread_mutex_unlock(&q->mu);
            int rc = strata_meta_queue_lease(q->o.cluster, q->name,
                                             was ? STRATA_LEASE_RENEW : STRATA_LEASE_TAKE);
            pthread_mutex_lock(&q->mu);
            q->leased = rc == 0;
            lease_at = strata_pqueue__now_ms();
            if (q->leased != was)
                pthread_cond_broadcast(&q->cv);
        }
        uint64_t est = q->counted + q->pushed_since;
        if (now - count_at >= (est < COUNT_LONG ? COUNT_MS : COUNT_SLOW_MS) || count_at == 0) {
            /* One not taken is tried again at the next round. */
            if (count(q) || count_at == 0)
                count_at = strata_pqueue__now_ms();
        }
        if (!q->stop)
            wait_ms(q, COUNT_MS);
    }
    bool was = q->leased;
    q->leased = false;
    pthread_mutex_unlock(&q->mu);
    if (was)
        strata_meta_queue_lease(q->o.cluster, q->name, STRATA_LEASE_RELEASE);
    return NULL;
}

/* Reads the first messages no thread holds, up to want, into e and holds
 * them; mutex held (released around the reads).  The count. */
static size_t take(struct pqueue_cluster *q, struct strata_meta_queue_ent *e, size_t want)
{
    q->reading = true;
    char after[STRATA_META_QUEUE_KEY_MAX] = "";
    size_t n = 0;
    for (;;) {
        struct strata_meta_queue_ent page[STRATA_META_QUEUE_READ_MAX];
        size_t got = 0, max = q->nheld + want;
        max = max > STRATA_META_QUEUE_READ_MAX ? STRATA_META_QUEUE_READ_MAX : max;
        pthread_mutex_unlock(&q->mu);
        int rc = strata_meta_queue_read(q->o.cluster, q->name, after, max, page, &got);
        pthread_mutex_lock(&q->mu);
        if (rc) {
            atomic_fetch_add(&q->counts.failed, 1);
            break;
        }
        size_t bytes = 0;
        for (size_t i = 0; i < got; i++) {
            bool fits = n == 0 || bytes + page[i].len <= STRATA_PQUEUE_MSG_MAX;
            /* A message behind one of its ordering key still held waits:
             * a later read takes it once that one is done. */
            uint64_t ok = q->o.order_key && !q->o.send_batch && n < want
                              ? q->o.order_key(q->o.ud, page[i].msg, page[i].len)
                              : 0;
            if (n < want && fits && !is_held(q, page[i].key) && !okey_held(q, ok)) {
                e[n] = page[i];
                bytes += page[i].len;
                memcpy(q->held[q->nheld].key, page[i].key, STRATA_META_QUEUE_KEY_MAX);
                q->held[q->nheld].okey = ok;
                q->held[q->nheld++].gone = false;
                page[i].msg = NULL;
                n++;
            }
        }
        if (got)
            memcpy(after, page[got - 1].key, sizeof(after));
        strata_meta_queue_ents_fini(page, got);
        if (n || got < max)
            break; /* took some, or read to the end */
    }
    q->reading = false;
    purge(q);
    pthread_cond_broadcast(&q->cv);
    return n;
}

/* Removes e[0..k) from the cluster (delivered or given up) and from the
 * pending figure; mutex held (released around the removal). */
static void done(struct pqueue_cluster *q, struct strata_meta_queue_ent *e, size_t k)
{
    const char *keys[STRATA_PQUEUE_BATCH_MAX];
    for (size_t i = 0; i < k; i++)
        keys[i] = e[i].key;
    op_begin(q);
    pthread_mutex_unlock(&q->mu);
    int rc = strata_meta_queue_remove(q->o.cluster, q->name, keys, k);
    pthread_mutex_lock(&q->mu);
    if (rc != 0) {
        op_end(q);
        atomic_fetch_add(&q->counts.failed, 1); /* still queued: delivered again later */
        return;
    }
    /* Out of the count first, then out of the pushes since. */
    uint64_t gone = k < q->counted ? k : q->counted;
    q->counted -= gone;
    gone = k - gone < q->pushed_since ? k - gone : q->pushed_since;
    q->pushed_since -= gone;
    op_end(q);
}

/* Sends e[0..n) until the callback is done with all, backing off between
 * tries, while the lease is held; mutex held (released around the sends). */
static void send_all(struct pqueue_cluster *q, struct strata_meta_queue_ent *e, size_t n)
{
    uint64_t backoff = 0;
    size_t i = 0;
    while (!q->stop && q->leased && i < n) {
        pthread_mutex_unlock(&q->mu);
        struct iovec v[STRATA_PQUEUE_BATCH_MAX];
        for (size_t j = i; j < n; j++)
            v[j - i] = (struct iovec){.iov_base = e[j].msg, .iov_len = e[j].len};
        enum strata_pqueue_sent rc;
        size_t k = strata_pqueue__send(&q->o, v, n - i, &rc);
        pthread_mutex_lock(&q->mu);
        if (k) {
            done(q, e + i, k);
            strata_pqueue__count_sent(&q->counts, rc, k);
            unhold(q, e + i, k, true);
            i += k;
            if (i == n)
                break;
        }
        atomic_fetch_add(&q->counts.failed, 1);
        backoff = strata_pqueue__backoff(backoff);
        for (uint64_t until = strata_pqueue__now_ms() + backoff;
             !q->stop && q->leased && strata_pqueue__now_ms() < until;)
            wait_ms(q, until - strata_pqueue__now_ms());
    }
    unhold(q, e + i, n - i, false); /* lease lost or stopping: left for the holder */
    strata_meta_queue_ents_fini(e, n);
}

static void *deliver_main(void *arg)
{
    struct pqueue_cluster *q = arg;
    struct strata_meta_queue_ent e[STRATA_PQUEUE_BATCH_MAX];
    size_t want = q->o.send_batch ? STRATA_PQUEUE_BATCH_MAX : 1;
    pthread_mutex_lock(&q->mu);
    while (!q->stop) {
        if (!q->leased || q->reading) {
            wait_ms(q, POLL_MS);
            continue;
        }
        size_t n = take(q, e, want);
        if (n == 0) {
            if (!q->stop)
                wait_ms(q, POLL_MS);
            continue;
        }
        pthread_cond_signal(&q->cv); /* another thread may take the next ones */
        send_all(q, e, n);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

int strata_pqueue__cluster_push(struct pqueue_cluster *q, const void *msg, size_t len)
{
    pthread_mutex_lock(&q->mu);
    int rc = -1;
    if (q->counted + q->pushed_since < q->o.max && len <= STRATA_PQUEUE_MSG_MAX) {
        op_begin(q);
        pthread_mutex_unlock(&q->mu);
        rc = strata_meta_queue_push(q->o.cluster, q->name, msg, len) == 0 ? 0 : -1;
        pthread_mutex_lock(&q->mu);
        if (rc == 0)
            q->pushed_since++;
        op_end(q);
        pthread_cond_broadcast(&q->cv); /* a delivery thread may be polling */
    }
    pthread_mutex_unlock(&q->mu);
    atomic_fetch_add(rc == 0 ? &q->counts.queued : &q->counts.dropped, 1);
    return rc;
}

void strata_pqueue__cluster_stats(struct pqueue_cluster *q, struct strata_pqueue_stats *out)
{
    strata_pqueue__counts_get(&q->counts, out);
    pthread_mutex_lock(&q->mu);
    out->pending = q->counted + q->pushed_since;
    pthread_mutex_unlock(&q->mu);
    out->copies = 1;
}

void strata_pqueue__cluster_destroy(struct pqueue_cluster *q)
{
    if (!q)
        return;
    strata_pqueue__stop(&q->mu, &q->cv, &q->stop, q->th, q->started);
    if (q->lease_started)
        pthread_join(q->lease_th, NULL); /* after the senders: it releases the lease */
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    free(q);
}

int strata_pqueue__cluster_create(const struct strata_pqueue_opts *o, struct pqueue_cluster **out,
                                  char *err, size_t err_len)
{
    *out = NULL;
    struct pqueue_cluster *q = calloc(1, sizeof(*q));
    if (!q) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    q->o = *o;
    if (!q->o.max)
        q->o.max = 1;
    int nl = snprintf(q->name, sizeof(q->name), "%s.%s", o->space ? o->space : "", o->name);
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    if (!o->space || nl >= (int)sizeof(q->name)) {
        snprintf(err, err_len, "queue %s: name too long for the cluster", o->name);
        strata_pqueue__cluster_destroy(q);
        return -1;
    }
    /* Reachable and writable now, rather than dropping every push later. */
    uint64_t n = 0;
    int rc = strata_meta_queue_count(o->cluster, q->name, q->o.max, &n);
    if (rc) {
        snprintf(err, err_len, "queue %s in the cluster: %s", q->name, strata_strerror(rc));
        strata_pqueue__cluster_destroy(q);
        return -1;
    }
    q->counted = n;
    atomic_store(&q->counts.queued, n);
    unsigned nth = strata_pqueue__threads(o->threads);
    if (pthread_create(&q->lease_th, NULL, lease_main, q) != 0) {
        snprintf(err, err_len, "queue %s: cannot start its threads", o->name);
        strata_pqueue__cluster_destroy(q);
        return -1;
    }
    q->lease_started = true;
    if (strata_pqueue__start(q->th, nth, deliver_main, q, &q->started, o->name, err, err_len)) {
        strata_pqueue__cluster_destroy(q);
        return -1;
    }
    *out = q;
    return 0;
}
