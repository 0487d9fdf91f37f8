/*
 * lease_ctl.c - work that runs once per cluster, and bucket caches across
 * gateways.
 *
 * Leases: lease.NAME carries a cls_lock exclusive lock "strata" whose
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOCK_NAME "strata"
#define NOTIFY_TIMEOUT_MS 1000
#define CACHE_MAX_AGE_US 1000000

int strata_meta__rados_lease(struct strata_meta *m, const char *name, enum strata_lease_op op)
{
    struct meta_rados *r = meta_rados_of(m);
    char oid[STRATA_LEASE_NAME_MAX + 8];
    snprintf(oid, sizeof(oid), "lease.%s", name);
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
    char *reply = NULL;
    size_t rlen = 0;
    int rc = rados_notify2(r->meta, RADOS_OID_CTL, msg, n, NOTIFY_TIMEOUT_MS, &reply, &rlen);
    if (reply)
        rados_buffer_free(reply);
    if (rc == -ETIMEDOUT) { /* a watcher missed it: outlast its cache */
        usleep(CACHE_MAX_AGE_US);
        return 0;
    }
    return strata_meta__rados_err(rc);
}

static void watch_cb(void *arg, uint64_t notify_id, uint64_t handle, uint64_t notifier_id,
                     void *data, size_t len)
{
    (void)notifier_id;
    struct meta_rados *r = arg;
    char msg[STRATA_BUCKET_NAME_MAX + RADOS_GW_ID_LEN + 8];
    bool ours = false;
    if (len > 2 + RADOS_GW_ID_LEN + 1 && len < sizeof(msg)) {
        memcpy(msg, data, len);
        msg[len] = 0;
        const char *gw = msg + 2, *bucket = gw + RADOS_GW_ID_LEN + 1;
        ours = msg[0] == 'B' && memcmp(gw, r->gw, RADOS_GW_ID_LEN) == 0;
        if (msg[0] == 'B' && !ours && *bucket) {
            pthread_mutex_lock(&r->watch_mu);
            strata_meta__invalidate_fn cb = r->cb;
            void *ud = r->cb_ud;
            pthread_mutex_unlock(&r->watch_mu);
            if (cb)
                cb(ud, bucket);
        }
    }
    /* After the drop: the notifier answers its client once all acked. */
    rados_notify_ack(r->meta, RADOS_OID_CTL, notify_id, handle, NULL, 0);
}

static void watch_err(void *arg, uint64_t cookie, int err)
{
    (void)arg;
    (void)cookie;
    (void)err;
    /* Re-watching (and dropping the whole cache meanwhile) comes with the
     * gateway's bucket cache: RADOS.md, "Next step". */
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
            pthread_mutex_unlock(&r->watch_mu);
        }
    } else if (unwatch) {
        rc = rados_unwatch2(r->meta, r->watch_cookie);
        rados_watch_flush(r->c);
        pthread_mutex_lock(&r->watch_mu);
        r->watching = false;
        pthread_mutex_unlock(&r->watch_mu);
    }
    return strata_meta__rados_err(rc);
}
