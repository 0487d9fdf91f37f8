/*
 * bcache.c - bucket records a gateway keeps in memory, so a GET, a PUT or
 * a listing page does not read `buckets` first (one round trip less each;
 * RADOS.md, "Bucket records in memory").
 *
 * A record is cached only while this connection's invalidation watch on
 * `ctl` holds (lease_ctl.c): every change of a record through another
 * gateway is notified, and its watch callback drops the entry before it
 * acks, so the change is answered only after this cache forgot the old
 * record.  A broken watch drops everything, and nothing is cached until it
 * is back.  Tool handles and tests without a watch read `buckets` every
 * time, as before.
 *
 * The incarnation does not depend on the notification alone: a deleted
 * incarnation's shards are `closed` (or removed), and the readers of a
 * shard (get.c, key.c, scan.c) ask bucket_fresh when they meet that, so a
 * stale entry can cost a round trip but never serve another incarnation's
 * keys.
 *
 * An entry is put only when no drop happened since its read began (the
 * epoch), so a record read before a change cannot outlive the change, and
 * lives RADOS_CACHE_MAX_AGE_US at most, the bound a notifier waits out
 * when a watcher did not ack (as the server's own caches do).
 * Direct-mapped slots: a collision replaces the older entry.
 * Threads: any caller thread; bcache_mu guards the slots and the epoch.
 */
#include "rados.h"

#include <string.h>
#include <time.h>

#include "strata/erasure.h"

int64_t strata_meta__rados_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static struct rados_bcache_slot *slot_of(struct meta_rados *r, const char *name)
{
    return &r->bcache[strata_crc32c(0, name, strlen(name)) % RADOS_BCACHE_SLOTS];
}

void strata_meta__rados_bcache_drop(struct meta_rados *r, const char *bucket)
{
    pthread_mutex_lock(&r->bcache_mu);
    r->bcache_epoch++;
    if (!bucket) {
        for (size_t i = 0; i < RADOS_BCACHE_SLOTS; i++)
            r->bcache[i].used = false;
    } else {
        struct rados_bcache_slot *s = slot_of(r, bucket);
        if (s->used && strcmp(s->b.name, bucket) == 0)
            s->used = false;
    }
    pthread_mutex_unlock(&r->bcache_mu);
}

static bool lookup(struct meta_rados *r, const char *name, struct strata_bucket_info *out)
{
    pthread_mutex_lock(&r->bcache_mu);
    struct rados_bcache_slot *s = slot_of(r, name);
    bool hit = s->used && strcmp(s->b.name, name) == 0 &&
               strata_meta__rados_mono_us() - s->at_us < RADOS_CACHE_MAX_AGE_US;
    if (hit)
        *out = s->b;
    pthread_mutex_unlock(&r->bcache_mu);
    return hit;
}

int strata_meta__rados_bucket_fresh(struct strata_meta *m, const char *name,
                                    struct strata_bucket_info *out)
{
    struct meta_rados *r = meta_rados_of(m);
    pthread_mutex_lock(&r->bcache_mu);
    uint64_t epoch = r->bcache_epoch;
    pthread_mutex_unlock(&r->bcache_mu);
    int64_t at = strata_meta__rados_mono_us(); /* before the read: its age counts from here */
    bool keep = strata_meta__rados_watch_holds(r);
    char *v;
    size_t vl;
    struct strata_bucket_info b;
    int rc = strata_meta__rados_get1(r->meta, RADOS_OID_BUCKETS, name, &v, &vl);
    if (rc == 0)
        rc = strata_meta__bucket_decode_take(v, vl, &b);
    pthread_mutex_lock(&r->bcache_mu);
    struct rados_bcache_slot *s = slot_of(r, name);
    if (rc == 0 && keep && epoch == r->bcache_epoch && strcmp(b.name, name) == 0) {
        s->used = true;
        s->at_us = at;
        s->b = b;
    } else if (s->used && strcmp(s->b.name, name) == 0) {
        s->used = false; /* what it held is not known to be current */
    }
    pthread_mutex_unlock(&r->bcache_mu);
    if (rc == 0 && out)
        *out = b;
    return rc;
}

int strata_meta__rados_bucket_get(struct strata_meta *m, const char *name,
                                  struct strata_bucket_info *out)
{
    struct strata_bucket_info b;
    if (lookup(meta_rados_of(m), name, &b)) {
        if (out)
            *out = b;
        return 0;
    }
    return strata_meta__rados_bucket_fresh(m, name, out);
}

int strata_meta__rados_inc_recheck(struct strata_meta *m, const char *bucket, uint64_t inc)
{
    struct strata_bucket_info b;
    int rc = strata_meta__rados_bucket_fresh(m, bucket, &b);
    if (rc)
        return rc;
    return b.incarnation == inc ? 0 : STRATA_EBUSY;
}
