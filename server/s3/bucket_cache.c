/*
 * bucket_cache.c - a small cache of bucket records in front of
 * strata_meta_bucket_get, which reads the record from every drive for a
 * quorum: on small GETs that was about half the metadata work.  Entries
 * live one second; this daemon invalidates a bucket whenever it changes
 * one (create, delete, versioning), so it never serves its own stale
 * writes.  Misses are not cached.  Any connection thread: 256 slots under
 * 16 striped mutexes, held only to copy an entry.
 *
 * In front of the shared table each thread keeps copies of the entries it
 * read, so that requests on one hot bucket do not take the same mutex
 * from both event threads for every request.  A copy keeps its entry's
 * expiry and is used only while no invalidation happened since it was
 * taken (one epoch counter, written only by invalidations): it never
 * serves a record the shared table would no longer serve.
 */
#include "srv.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#define BC_SLOTS 256
#define BC_LOCKS 16
#define BC_TTL_NS 1000000000ull

struct bc_entry {
    bool valid;
    uint64_t gen; /* bumped by invalidate: a read that raced it is not stored */
    uint64_t expires_ns;
    struct strata_bucket_info info;
};

static struct bc_entry table[BC_SLOTS];

#define BC_LOCAL_SLOTS 16
struct bc_local {
    bool valid;
    uint64_t epoch; /* bc_epoch when the copy was taken */
    uint64_t expires_ns;
    struct strata_bucket_info info;
};
static __thread struct bc_local local[BC_LOCAL_SLOTS];
static atomic_uint_fast64_t bc_epoch; /* bumped by every invalidation */
static pthread_mutex_t locks[BC_LOCKS] = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER,
};

uint32_t strata_bcache_name_hash(const char *name)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *name; name++)
        h = (h ^ (uint8_t)*name) * 16777619u;
    return h;
}

uint64_t strata_bcache_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static unsigned slot_of(const char *name)
{
    return strata_bcache_name_hash(name) % BC_SLOTS;
}

int strata_bcache_get(struct strata_meta *m, const char *name, struct strata_bucket_info *out)
{
    unsigned s = slot_of(name);
    pthread_mutex_t *l = &locks[s % BC_LOCKS];
    uint64_t now = strata_bcache_now_ns();
    /* Read before the shared table: an invalidation after this point
     * makes the copy taken below stale at once. */
    uint64_t epoch = atomic_load_explicit(&bc_epoch, memory_order_acquire);
    struct bc_local *lc = &local[s % BC_LOCAL_SLOTS];
    if (lc->valid && lc->epoch == epoch && lc->expires_ns > now &&
        strcmp(lc->info.name, name) == 0) {
        *out = lc->info;
        return 0;
    }
    pthread_mutex_lock(l);
    struct bc_entry *e = &table[s];
    bool hit = e->valid && e->expires_ns > now && strcmp(e->info.name, name) == 0;
    if (hit)
        *out = e->info;
    uint64_t gen = e->gen, expires = e->expires_ns;
    pthread_mutex_unlock(l);
    if (!hit) {
        int rc = strata_meta_bucket_get(m, name, out);
        if (rc)
            return rc;
        expires = now + BC_TTL_NS;
        pthread_mutex_lock(l);
        if (e->gen == gen) {
            e->info = *out;
            e->expires_ns = expires;
            e->valid = true;
        }
        pthread_mutex_unlock(l);
    }
    lc->info = *out;
    lc->epoch = epoch;
    lc->expires_ns = expires;
    lc->valid = true;
    return 0;
}

static void slot_drop(unsigned s)
{
    pthread_mutex_lock(&locks[s % BC_LOCKS]);
    table[s].valid = false; /* whoever holds the slot: cheap and always safe */
    table[s].gen++;
    atomic_fetch_add_explicit(&bc_epoch, 1, memory_order_release);
    pthread_mutex_unlock(&locks[s % BC_LOCKS]);
}

void strata_bcache_invalidate(const char *name)
{
    if (name) {
        slot_drop(slot_of(name));
        return;
    }
    for (unsigned s = 0; s < BC_SLOTS; s++)
        slot_drop(s);
}
