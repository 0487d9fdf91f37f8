/*
 * epoch_cache.h - the one-second per-bucket cache behind the bucket record,
 * policy/ACL and configuration document caches (bucket_cache.c, authz.c,
 * bucket_doc_cache.c).
 *
 * A value is an opaque reference-counted pointer (NULL is a value too: "the
 * bucket has none"), keyed by bucket name and a stamp (the bucket's creation
 * time where a re-created bucket must not see its predecessor's value, else
 * 0).  Entries live one second; the daemon invalidates a bucket whenever it
 * changes what is cached.  Load errors are not cached.
 *
 * Threads: any.  The shared table is 256 slots under 16 striped mutexes,
 * held only to copy a pointer.  In front of it each thread keeps copies of
 * the entries it read (ops->local_copy: a reference only that thread
 * counts), so requests on one hot bucket do not take the same mutex or
 * bump the same count from every event thread.  A copy keeps its entry's
 * expiry and is used only while the cache's epoch, bumped by every
 * invalidation, has not moved since it was taken: it never serves what
 * the table would no longer serve.  Copies are released when their thread
 * ends.
 */
#ifndef STRATA_SERVER_EPOCH_CACHE_H
#define STRATA_SERVER_EPOCH_CACHE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/meta.h"

#define STRATA_ECACHE_SLOTS 256
#define STRATA_ECACHE_LOCKS 16

/* What the cache does with its values (never called with NULL). */
struct strata_ecache_ops {
    void (*hold)(void *v); /* one more reference */
    void (*put)(void *v);  /* one reference less */
    /* A copy for this thread's use only, holding one reference, that
     * keeps v's contents alive; NULL when out of memory (not kept then). */
    void *(*local_copy)(void *v);
};

struct strata_ecache_slot {
    bool valid;
    uint64_t gen; /* bumped by invalidate: a load that raced it is not stored */
    uint64_t expires_ns;
    int64_t stamp;
    char name[STRATA_BUCKET_NAME_MAX + 1];
    void *v;
};

struct strata_ecache {
    const struct strata_ecache_ops *ops;
    pthread_mutex_t locks[STRATA_ECACHE_LOCKS];
    struct strata_ecache_slot slots[STRATA_ECACHE_SLOTS];
    _Atomic uint64_t epoch; /* bumped by every invalidation */
    /* Listed (once, at its first get) for strata_ecaches_invalidate. */
    _Atomic bool listed;
    struct strata_ecache *next_listed;
};

/* A static cache: static struct strata_ecache c = STRATA_ECACHE_INIT(&ops); */
#define STRATA_ECACHE_M PTHREAD_MUTEX_INITIALIZER
#define STRATA_ECACHE_INIT(ops)                                                                    \
    {                                                                                              \
        (ops), {STRATA_ECACHE_M, STRATA_ECACHE_M, STRATA_ECACHE_M, STRATA_ECACHE_M,                \
                STRATA_ECACHE_M, STRATA_ECACHE_M, STRATA_ECACHE_M, STRATA_ECACHE_M,                \
                STRATA_ECACHE_M, STRATA_ECACHE_M, STRATA_ECACHE_M, STRATA_ECACHE_M,                \
                STRATA_ECACHE_M, STRATA_ECACHE_M, STRATA_ECACHE_M, STRATA_ECACHE_M},               \
            {{0}}, 0, false, NULL                                                                  \
    }

/* Reads the value of a missing entry: 0 with *out (one reference for the
 * caller, or NULL), or an error that is returned and not cached. */
typedef int (*strata_ecache_load_fn)(void *arg, void **out);

/* The value of (name, stamp): 0 with *out (one reference the caller puts
 * back with ops->put, or NULL), or load's error. */
int strata_ecache_get(struct strata_ecache *c, const char *name, int64_t stamp,
                      strata_ecache_load_fn load, void *arg, void **out);
/* After this daemon changes what the cache holds for bucket name (NULL:
 * every bucket, when another gateway's changes may have been missed). */
void strata_ecache_invalidate(struct strata_ecache *c, const char *name);
/* strata_ecache_invalidate on every cache used so far in this process
 * (bucket records, policies, configuration documents): another gateway on
 * the same store changed bucket name (NULL: anything). */
void strata_ecaches_invalidate(const char *name);

/*
 * A value shared by reference count, for caches whose values are the
 * caller's own struct with this as its first member (strata_eref_ops).
 * The original, when its last reference goes, is released by free_fn
 * (what it owns and the struct).  A thread's copy is a byte copy of the
 * whole value (size bytes) with its own count: it lends the original's
 * contents and holds a reference on it.
 */
struct strata_eref {
    atomic_uint refs;
    struct strata_eref *parent; /* a copy's original, else NULL */
    size_t size;
    void (*free_fn)(struct strata_eref *e);
};
extern const struct strata_ecache_ops strata_eref_ops;
/* e as an original with one reference (the caller's). */
void strata_eref_init(struct strata_eref *e, size_t size, void (*free_fn)(struct strata_eref *e));
void strata_eref_hold(struct strata_eref *e); /* NULL is a no-op */
void strata_eref_put(struct strata_eref *e);  /* NULL is a no-op */

/* The slot hash of a bucket name (FNV-1a) and the coarse monotonic clock
 * the entries' expiry uses. */
uint32_t strata_ecache_name_hash(const char *name);
uint64_t strata_ecache_now_ns(void);

#endif /* STRATA_SERVER_EPOCH_CACHE_H */
