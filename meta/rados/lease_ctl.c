/*
 * lease_ctl.c - work that runs once per cluster, and bucket caches across
 * gateways.
 *
 * Leases: lease.NAME (and a queue's q.NAME, queue.c) carries a cls_lock
 * exclusive lock "strata" whose
 * cookie is this connection's gateway id, lease_ms long (STRATA_LEASE_MS).
 * TAKE locks with MAY_RENEW (so taking a lease held renews it); RENEW with
 * MUST_RENEW, which fails once the lock expired or another gateway took it
 * over (RADOS.md: -EBUSY after a takeover, -ENOENT after an expiry), so a
 * holder that stalled past its lease learns it lost it.  Needs the `x` cap
 * on PREFIX.meta (cls_lock is an object class).
 *
 * Invalidation: every gateway watches `ctl`; a change notifies "B GW NAME"
 * and returns once every watcher acked (watchers drop the bucket's cached
 * records before they ack).  A watcher that did not ack within a second
 * (a broken watch) is waited out for the cache's maximum age, a second.
 * A gateway ignores its own notifications (its caches were updated by the
 * change itself).
 */
#include "rados.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOCK_NAME "strata"
#define NOTIFY_TIMEOUT_MS 1000

int strata_meta__rados_lease(struct strata_meta *m, const char *name, enum strata_lease_op op)
{
    char oid[STRATA_LEASE_NAME_MAX + 8];
    snprintf(oid, sizeof(oid), "lease.%s", name);
    return strata_meta__rados_lock(meta_rados_of(m), oid, op);
}

unsigned strata_meta__rados_lease_renew_ms(struct strata_meta *m)
{
    return meta_rados_of(m)->lease_ms / 3;
}

int strata_meta__rados_lock(struct meta_rados *r, const char *oid, enum strata_lease_op op)
{
    if (op == STRATA_LEASE_RELEASE) {
        int rc = rados_unlock(r->meta, oid, LOCK_NAME, r->gw);
        return rc == -ENOENT ? 0 : strata_meta__rados_err(rc);
    }
    struct timeval dur = {.tv_sec = r->lease_ms / 1000, .tv_usec = (r->lease_ms % 1000) * 1000};
    uint8_t flags = op == STRATA_LEASE_TAKE ? LIBRADOS_LOCK_FLAG_MAY_RENEW
                                            : LIBRADOS_LOCK_FLAG_MUST_RENEW;
    int rc = rados_lock_exclusive(r->meta, oid, LOCK_NAME, r->gw, "strata gateway", &dur, flags);
    if (rc == -EBUSY || rc == -EEXIST || (op == STRATA_LEASE_RENEW && rc == -ENOENT))
        return STRATA_EBUSY;
    return strata_meta__rados_err(rc);
}

int strata_meta__rados_invalidate(struct strata_meta *m, const char *bucket)
{
    struct meta_rados *r = meta_rados_of(m);
    char msg[STRATA_BUCKET_NAME_MAX + RADOS_GW_ID_LEN + 8];
    int n = snprintf(msg, sizeof(msg), "B %s %s", r->gw, bucket);
    strata_meta__rados_bcache_drop(r, bucket); /* its own change: not notified to itself */
    char *reply = NULL;
    size_t rlen = 0;
    int rc = rados_notify2(r->meta, RADOS_OID_CTL, msg, n, NOTIFY_TIMEOUT_MS, &reply, &rlen);
    if (reply)
        rados_buffer_free(reply);
    if (rc == -ETIMEDOUT) { /* a watcher missed it: outlast its cache */
        usleep(RADOS_CACHE_MAX_AGE_US);
        return 0;
    }
    return strata_meta__rados_err(rc);
}

/* Run the registered hook: bucket's cached records changed elsewhere
 * (NULL: everything, changes may have been missed). */
static void caches_drop(struct meta_rados *r, const char *bucket)
{
    strata_meta__rados_bcache_drop(r, bucket); /* first: the hook's refills read anew */
    pthread_mutex_lock(&r->watch_mu);
    strata_meta__invalidate_fn cb = r->cb;
    void *ud = r->cb_ud;
    pthread_mutex_unlock(&r->watch_mu);
    if (cb)
        cb(ud, bucket);
}

static void watch_cb(void *arg, uint64_t notify_id, uint64_t handle, uint64_t notifier_id,
                     void *data, size_t len)
{
    (void)notifier_id;
    struct meta_rados *r = arg;
    char msg[STRATA_BUCKET_NAME_MAX + RADOS_GW_ID_LEN + 8];
    bool ours = false;
    /* "C GW": a gateway opening asks for the running ones' lock clocks. */
    struct strata_meta *clock_of = atomic_load(&r->clock_of);
    if (len == 2 + RADOS_GW_ID_LEN && memcmp(data, "C ", 2) == 0 && clock_of &&
        memcmp((const char *)data + 2, r->gw, RADOS_GW_ID_LEN) != 0) {
        char now[24];
        int n = snprintf(now, sizeof(now), "%lld", (long long)strata_meta_lock_now_ms(clock_of));
        rados_notify_ack(r->meta, RADOS_OID_CTL, notify_id, handle, now, n);
        return;
    }
    if (len > 2 + RADOS_GW_ID_LEN + 1 && len < sizeof(msg)) {
        memcpy(msg, data, len);
        msg[len] = 0;
        const char *gw = msg + 2, *bucket = gw + RADOS_GW_ID_LEN + 1;
        ours = msg[0] == 'B' && memcmp(gw, r->gw, RADOS_GW_ID_LEN) == 0;
        if (msg[0] == 'B' && !ours && *bucket)
            caches_drop(r, bucket);
    }
    /* After the drop: the notifier answers its client once all acked. */
    rados_notify_ack(r->meta, RADOS_OID_CTL, notify_id, handle, NULL, 0);
}

/* Ask the other gateways on ctl for their lock clocks (RADOS.md,
 * "Retention clock"): the number of answers, their highest in *max_ms. */
int strata_meta__rados_clock_peers(struct strata_meta *m, int64_t *max_ms)
{
    struct meta_rados *r = meta_rados_of(m);
    char msg[2 + RADOS_GW_ID_LEN + 1];
    int n = snprintf(msg, sizeof(msg), "C %s", r->gw);
    char *reply = NULL;
    size_t rlen = 0;
    int rc = rados_notify2(r->meta, RADOS_OID_CTL, msg, n, NOTIFY_TIMEOUT_MS, &reply, &rlen);
    int answers = 0;
    *max_ms = -1;
    struct notify_ack_t *acks = NULL;
    struct notify_timeout_t *tmo = NULL;
    size_t nacks = 0, ntmo = 0;
    /* A watcher that did not answer in time (-ETIMEDOUT) leaves the
     * others' answers in the reply. */
    if ((rc == 0 || rc == -ETIMEDOUT) && reply &&
        rados_decode_notify_response(reply, rlen, &acks, &nacks, &tmo, &ntmo) == 0) {
        for (size_t i = 0; i < nacks; i++) {
            char v[24];
            if (acks[i].payload_len == 0 || acks[i].payload_len >= sizeof(v))
                continue; /* not a gateway's clock (an ack without payload) */
            memcpy(v, acks[i].payload, acks[i].payload_len);
            v[acks[i].payload_len] = 0;
            char *end;
            long long ms = strtoll(v, &end, 10);
            if (*end || ms <= 0)
                continue;
            answers++;
            if (ms > *max_ms)
                *max_ms = ms;
        }
        rados_free_notify_response(acks, nacks, tmo);
    }
    if (reply)
        rados_buffer_free(reply);
    return rc == 0 || rc == -ETIMEDOUT ? answers : strata_meta__rados_err(rc);
}

bool strata_meta__rados_watch_holds(struct meta_rados *r)
{
    pthread_mutex_lock(&r->watch_mu);
    bool holds = r->watching && !r->watch_broken && !r->stopping;
    pthread_mutex_unlock(&r->watch_mu);
    return holds;
}

/* The watch broke (the OSD lost this client longer than the watch
 * timeout): notifications may be missed until it is re-established. */
static void watch_err(void *arg, uint64_t cookie, int err)
{
    (void)cookie;
    (void)err;
    struct meta_rados *r = arg;
    pthread_mutex_lock(&r->watch_mu);
    r->watch_broken = true;
    pthread_cond_signal(&r->watch_cv);
    pthread_mutex_unlock(&r->watch_mu);
    caches_drop(r, NULL);
}

/* Re-establishes a broken watch, once a second until it holds, dropping
 * the caches after each attempt (entries taken meanwhile live a second at
 * most) and once more when the watch is back.  Not in watch_err: librados
 * calls that on its own thread, where unwatch and watch must not run. */
static void *rewatch_thread(void *arg)
{
    struct meta_rados *r = arg;
    pthread_mutex_lock(&r->watch_mu);
    while (!r->stopping) {
        if (!r->watch_broken) {
            pthread_cond_wait(&r->watch_cv, &r->watch_mu);
            continue;
        }
        uint64_t old = r->watch_cookie;
        pthread_mutex_unlock(&r->watch_mu);
        rados_unwatch2(r->meta, old);
        uint64_t cookie;
        int rc = rados_watch3(r->meta, RADOS_OID_CTL, &cookie, watch_cb, watch_err, 30, r);
        caches_drop(r, NULL);
        pthread_mutex_lock(&r->watch_mu);
        if (rc == 0) {
            r->watch_cookie = cookie;
            r->watch_broken = false;
            continue;
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        if (!r->stopping)
            pthread_cond_timedwait(&r->watch_cv, &r->watch_mu, &until);
    }
    pthread_mutex_unlock(&r->watch_mu);
    return NULL;
}

void strata_meta__rados_watch_stop(struct meta_rados *r)
{
    pthread_mutex_lock(&r->watch_mu);
    r->stopping = true;
    pthread_cond_signal(&r->watch_cv);
    bool started = r->rewatch_started, watching = r->watching;
    r->rewatch_started = false;
    pthread_mutex_unlock(&r->watch_mu);
    strata_meta__rados_bcache_drop(r, NULL); /* no longer kept current */
    if (started)
        pthread_join(r->rewatch_thr, NULL);
    if (watching) {
        rados_unwatch2(r->meta, r->watch_cookie);
        rados_watch_flush(r->c);
        r->watching = false;
    }
}

int strata_meta__rados_on_invalidate(struct strata_meta *m, strata_meta__invalidate_fn cb,
                                     void *ud)
{
    struct meta_rados *r = meta_rados_of(m);
    pthread_mutex_lock(&r->watch_mu);
    r->cb = cb;
    r->cb_ud = ud;
    bool watch = cb && !r->watching, unwatch = !cb && r->watching;
    pthread_mutex_unlock(&r->watch_mu);
    int rc = 0;
    if (watch) {
        uint64_t cookie;
        rc = rados_watch3(r->meta, RADOS_OID_CTL, &cookie, watch_cb, watch_err, 30, r);
        if (rc == 0) {
            pthread_mutex_lock(&r->watch_mu);
            r->watch_cookie = cookie;
            r->watching = true;
            r->stopping = false;
            if (!r->rewatch_started &&
                pthread_create(&r->rewatch_thr, NULL, rewatch_thread, r) == 0)
                r->rewatch_started = true;
            pthread_mutex_unlock(&r->watch_mu);
        }
    } else if (unwatch) {
        strata_meta__rados_watch_stop(r);
    }
    return strata_meta__rados_err(rc);
}
