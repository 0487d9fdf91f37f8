/*
 * epoch_cache.c - the per-bucket cache with per-thread copies
 * (epoch_cache.h).
 */
#include "epoch_cache.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TTL_NS 1000000000ull

uint32_t strata_ecache_name_hash(const char *name)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *name; name++)
        h = (h ^ (uint8_t)*name) * 16777619u;
    return h;
}

uint64_t strata_ecache_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* This thread's copies, of every cache, by cache and bucket slot. */
#define LOCAL_SLOTS 64
struct local {
    const struct strata_ecache *c; /* NULL: empty slot */
    uint64_t epoch;
    uint64_t expires_ns;
    int64_t stamp;
    char name[STRATA_BUCKET_NAME_MAX + 1];
    void *v; /* this thread's copy; NULL: the bucket has none */
};
static __thread struct local local[LOCAL_SLOTS];
static pthread_key_t local_key;
static pthread_once_t local_once = PTHREAD_ONCE_INIT;

static void local_drop(struct local *lc)
{
    if (lc->c && lc->v)
        lc->c->ops->put(lc->v);
    lc->c = NULL;
    lc->v = NULL;
}

static void local_release_cb(void *unused)
{
    (void)unused;
    for (int i = 0; i < LOCAL_SLOTS; i++)
        local_drop(&local[i]);
}

static void local_key_init(void)
{
    (void)pthread_key_create(&local_key, local_release_cb);
}

static struct local *local_slot(const struct strata_ecache *c, uint32_t h)
{
    return &local[(h ^ (uint32_t)((uintptr_t)c >> 6)) % LOCAL_SLOTS];
}

/* Replaces the slot's copy with one of v (NULL: the bucket has none). */
static void local_store(struct local *lc, const struct strata_ecache *c, void *v, uint64_t epoch,
                        uint64_t expires_ns, const char *name, int64_t stamp)
{
    pthread_once(&local_once, local_key_init);
    /* Registers the release at thread exit (any non-NULL value does). */
    if (!pthread_getspecific(local_key) && pthread_setspecific(local_key, local) != 0)
        return;
    void *copy = NULL;
    if (v && !(copy = c->ops->local_copy(v)))
        return;
    local_drop(lc);
    lc->c = c;
    lc->v = copy;
    lc->epoch = epoch;
    lc->expires_ns = expires_ns;
    lc->stamp = stamp;
    snprintf(lc->name, sizeof(lc->name), "%s", name);
}

static void cache_list(struct strata_ecache *c);

int strata_ecache_get(struct strata_ecache *c, const char *name, int64_t stamp,
                      strata_ecache_load_fn load, void *arg, void **out)
{
    if (!atomic_load_explicit(&c->listed, memory_order_relaxed))
        cache_list(c);
    uint32_t h = strata_ecache_name_hash(name);
    struct strata_ecache_slot *e = &c->slots[h % STRATA_ECACHE_SLOTS];
    pthread_mutex_t *l = &c->locks[h % STRATA_ECACHE_SLOTS % STRATA_ECACHE_LOCKS];
    uint64_t now = strata_ecache_now_ns();
    /* Read before the shared table: an invalidation after this point
     * makes the copy taken below stale at once. */
    uint64_t epoch = atomic_load_explicit(&c->epoch, memory_order_acquire);
    struct local *lc = local_slot(c, h);
    if (lc->c == c && lc->epoch == epoch && lc->expires_ns > now && lc->stamp == stamp &&
        strcmp(lc->name, name) == 0) {
        if (lc->v)
            c->ops->hold(lc->v);
        *out = lc->v;
        return 0;
    }
    pthread_mutex_lock(l);
    bool hit = e->valid && e->expires_ns > now && e->stamp == stamp && strcmp(e->name, name) == 0;
    void *v = hit ? e->v : NULL;
    if (v)
        c->ops->hold(v);
    uint64_t gen = e->gen, expires = e->expires_ns;
    pthread_mutex_unlock(l);
    if (!hit) {
        int rc = load(arg, &v);
        if (rc)
            return rc; /* not cached: a quorum hiccup should not stick for a second */
        expires = now + TTL_NS;
        void *old = NULL;
        pthread_mutex_lock(l);
        if (e->gen == gen) {
            old = e->v;
            e->v = v;
            if (v)
                c->ops->hold(v);
            snprintf(e->name, sizeof(e->name), "%s", name);
            e->stamp = stamp;
            e->expires_ns = expires;
            e->valid = true;
        }
        pthread_mutex_unlock(l);
        if (old)
            c->ops->put(old);
    }
    local_store(lc, c, v, epoch, expires, name, stamp);
    *out = v;
    return 0;
}

static void slot_drop(struct strata_ecache *c, unsigned s)
{
    pthread_mutex_t *l = &c->locks[s % STRATA_ECACHE_LOCKS];
    pthread_mutex_lock(l);
    struct strata_ecache_slot *e = &c->slots[s];
    void *old = e->v;
    e->v = NULL;
    e->valid = false; /* whoever holds the slot: cheap and always safe */
    e->gen++;
    atomic_fetch_add_explicit(&c->epoch, 1, memory_order_release);
    pthread_mutex_unlock(l);
    if (old)
        c->ops->put(old);
}

void strata_ecache_invalidate(struct strata_ecache *c, const char *name)
{
    if (name) {
        slot_drop(c, strata_ecache_name_hash(name) % STRATA_ECACHE_SLOTS);
        return;
    }
    for (unsigned s = 0; s < STRATA_ECACHE_SLOTS; s++)
        slot_drop(c, s);
}

/* The caches used so far, newest first (listed_mu guards the list). */
static pthread_mutex_t listed_mu = PTHREAD_MUTEX_INITIALIZER;
static struct strata_ecache *listed_head;

static void cache_list(struct strata_ecache *c)
{
    pthread_mutex_lock(&listed_mu);
    if (!atomic_load(&c->listed)) {
        c->next_listed = listed_head;
        listed_head = c;
        atomic_store(&c->listed, true);
    }
    pthread_mutex_unlock(&listed_mu);
}

void strata_ecaches_invalidate(const char *name)
{
    pthread_mutex_lock(&listed_mu);
    for (struct strata_ecache *c = listed_head; c; c = c->next_listed)
        strata_ecache_invalidate(c, name);
    pthread_mutex_unlock(&listed_mu);
}

/* ---- values shared by reference count ------------------------------------- */

void strata_eref_init(struct strata_eref *e, size_t size, void (*free_fn)(struct strata_eref *e))
{
    atomic_init(&e->refs, 1);
    e->parent = NULL;
    e->size = size;
    e->free_fn = free_fn;
}

void strata_eref_hold(struct strata_eref *e)
{
    if (e)
        atomic_fetch_add(&e->refs, 1);
}

void strata_eref_put(struct strata_eref *e)
{
    if (!e || atomic_fetch_sub(&e->refs, 1) != 1)
        return;
    if (e->parent) {
        strata_eref_put(e->parent);
        free(e);
    } else {
        e->free_fn(e);
    }
}

static void eref_hold(void *v)
{
    strata_eref_hold(v);
}

static void eref_put(void *v)
{
    strata_eref_put(v);
}

/* A thread's copy: its own count, and a reference on the original, whose
 * contents it lends. */
static void *eref_local_copy(void *v)
{
    struct strata_eref *e = v, *copy = malloc(e->size);
    if (!copy)
        return NULL;
    memcpy((void *)copy, (const void *)e, e->size);
    atomic_init(&copy->refs, 1); /* the thread slot's */
    copy->parent = e->parent ? e->parent : e;
    strata_eref_hold(copy->parent);
    return copy;
}

const struct strata_ecache_ops strata_eref_ops = {eref_hold, eref_put, eref_local_copy};
