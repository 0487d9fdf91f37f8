/*
 * bucket_doc_cache.c - the parsed bucket document cache (bucket_doc_cache.h).
 */
#include "bucket_doc_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv.h"
#include "strata/hex.h"

#include <openssl/rand.h>

#define DOC_TTL_NS 1000000000ull

struct strata_doc_ref {
    atomic_uint refs;
    void (*destroy)(void *parsed);
    void *parsed;
    /* A thread's copy: parsed belongs to parent, which the copy holds a
     * reference on. */
    struct strata_doc_ref *parent;
};

const void *strata_doc_ref_get(const struct strata_doc_ref *ref)
{
    return ref ? ref->parsed : NULL;
}

void strata_doc_ref_put(struct strata_doc_ref *ref)
{
    if (ref && atomic_fetch_sub(&ref->refs, 1) == 1) {
        if (ref->parent)
            strata_doc_ref_put(ref->parent);
        else
            ref->destroy(ref->parsed);
        free(ref);
    }
}

/*
 * Per-thread copies of entries, keyed by cache and bucket slot: a copy
 * holds its own count (this thread's only) and a reference on the shared
 * document; it keeps its entry's expiry and is used only while the
 * cache's epoch has not moved since it was taken, so it never serves what
 * the cache would no longer serve.  Released when the thread ends.
 */
#define DOC_LOCAL_SLOTS 16
struct doc_local {
    const struct strata_doc_cache *c; /* NULL: empty slot */
    uint64_t epoch;
    uint64_t expires_ns;
    int64_t created_ms;
    char bucket[STRATA_BUCKET_NAME_MAX + 1];
    struct strata_doc_ref *ref; /* this thread's copy; NULL: no document */
};
static __thread struct doc_local doc_local[DOC_LOCAL_SLOTS];
static pthread_key_t doc_local_key;
static pthread_once_t doc_local_once = PTHREAD_ONCE_INIT;

static void doc_local_release_cb(void *unused)
{
    (void)unused;
    for (int i = 0; i < DOC_LOCAL_SLOTS; i++) {
        strata_doc_ref_put(doc_local[i].ref);
        doc_local[i].ref = NULL;
        doc_local[i].c = NULL;
    }
}

static void doc_local_key_init(void)
{
    (void)pthread_key_create(&doc_local_key, doc_local_release_cb);
}

static struct doc_local *doc_local_slot(const struct strata_doc_cache *c, uint32_t h)
{
    return &doc_local[(h ^ (uint32_t)((uintptr_t)c >> 6)) % DOC_LOCAL_SLOTS];
}

/* Replaces the slot's copy with one of ref (NULL: no document). */
static void doc_local_store(struct doc_local *lc, const struct strata_doc_cache *c,
                            struct strata_doc_ref *ref, uint64_t epoch, uint64_t expires_ns,
                            const struct strata_bucket_info *bi)
{
    pthread_once(&doc_local_once, doc_local_key_init);
    /* Registers the release at thread exit (any non-NULL value does). */
    if (!pthread_getspecific(doc_local_key) &&
        pthread_setspecific(doc_local_key, doc_local) != 0)
        return;
    struct strata_doc_ref *copy = NULL;
    if (ref) {
        copy = malloc(sizeof(*copy));
        if (!copy)
            return;
        struct strata_doc_ref *shared = ref->parent ? ref->parent : ref;
        atomic_init(&copy->refs, 1); /* the slot's */
        copy->destroy = NULL;
        copy->parsed = shared->parsed;
        copy->parent = shared;
        atomic_fetch_add(&shared->refs, 1);
    }
    strata_doc_ref_put(lc->ref);
    lc->c = c;
    lc->ref = copy;
    lc->epoch = epoch;
    lc->expires_ns = expires_ns;
    lc->created_ms = bi->created_ms;
    snprintf(lc->bucket, sizeof(lc->bucket), "%s", bi->name);
}

/* Reads and parses the stored document: *out NULL when there is none. */
static int load(struct strata_doc_cache *c, struct strata_meta *m, const char *bucket,
                struct strata_doc_ref **out)
{
    void *doc = NULL;
    size_t len = 0;
    *out = NULL;
    int rc = strata_meta_bucket_config_get(m, bucket, c->kind, &doc, &len);
    if (rc == STRATA_ENOTFOUND || (rc == 0 && len == 0)) {
        free(doc);
        return 0;
    }
    if (rc)
        return rc;
    struct strata_doc_ref *ref = calloc(1, sizeof(*ref));
    if (!ref) {
        free(doc);
        return STRATA_ENOMEM;
    }
    rc = c->parse(doc, len, &ref->parsed);
    free(doc);
    if (rc) {
        strata_srv_log(STRATA_LOG_ERR, "bucket %s: stored %s configuration does not parse",
                       bucket, c->kind);
        free(ref);
        return STRATA_ECORRUPT;
    }
    atomic_init(&ref->refs, 1);
    ref->destroy = c->destroy;
    *out = ref;
    return 0;
}

static void cache_list(struct strata_doc_cache *c);

int strata_doc_cache_get(struct strata_doc_cache *c, struct strata_meta *m,
                         const struct strata_bucket_info *bi, struct strata_doc_ref **out)
{
    if (!atomic_load_explicit(&c->listed, memory_order_relaxed))
        cache_list(c);
    uint32_t h = strata_bcache_name_hash(bi->name);
    struct strata_doc_slot *s = &c->slots[h % STRATA_DOC_CACHE_SLOTS];
    uint64_t now = strata_bcache_now_ns();
    /* Read before the shared slots: an invalidation after this point
     * makes the copy taken below stale at once. */
    uint64_t epoch = atomic_load_explicit(&c->epoch, memory_order_acquire);
    struct doc_local *lc = doc_local_slot(c, h);
    if (lc->c == c && lc->epoch == epoch && lc->expires_ns > now &&
        lc->created_ms == bi->created_ms && strcmp(lc->bucket, bi->name) == 0) {
        if (lc->ref)
            atomic_fetch_add(&lc->ref->refs, 1);
        *out = lc->ref;
        return 0;
    }
    pthread_mutex_lock(&c->mu);
    bool hit = s->valid && s->expires_ns > now && s->created_ms == bi->created_ms &&
               strcmp(s->bucket, bi->name) == 0;
    struct strata_doc_ref *ref = hit ? s->ref : NULL;
    if (ref)
        atomic_fetch_add(&ref->refs, 1);
    uint64_t gen = s->gen, expires = s->expires_ns;
    pthread_mutex_unlock(&c->mu);
    if (!hit) {
        int rc = load(c, m, bi->name, &ref);
        if (rc)
            return rc; /* not cached: a quorum hiccup should not stick for a second */
        expires = now + DOC_TTL_NS;
        struct strata_doc_ref *old = NULL;
        pthread_mutex_lock(&c->mu);
        if (s->gen == gen) {
            old = s->ref;
            s->ref = ref;
            if (ref)
                atomic_fetch_add(&ref->refs, 1);
            snprintf(s->bucket, sizeof(s->bucket), "%s", bi->name);
            s->created_ms = bi->created_ms;
            s->expires_ns = expires;
            s->valid = true;
        }
        pthread_mutex_unlock(&c->mu);
        strata_doc_ref_put(old);
    }
    doc_local_store(lc, c, ref, epoch, expires, bi);
    *out = ref;
    return 0;
}

char *strata_doc_id_new(void)
{
    unsigned char rnd[12];
    char id[2 * sizeof(rnd) + 1];
    RAND_bytes(rnd, sizeof(rnd));
    strata_hex_encode(rnd, sizeof(rnd), id);
    return strdup(id);
}

static void slot_drop(struct strata_doc_cache *c, struct strata_doc_slot *s);

void strata_doc_cache_invalidate(struct strata_doc_cache *c, const char *bucket)
{
    if (bucket) {
        slot_drop(c, &c->slots[strata_bcache_name_hash(bucket) % STRATA_DOC_CACHE_SLOTS]);
        return;
    }
    for (size_t i = 0; i < STRATA_DOC_CACHE_SLOTS; i++)
        slot_drop(c, &c->slots[i]);
}

/* The caches used so far, newest first (listed_mu guards the list). */
static pthread_mutex_t listed_mu = PTHREAD_MUTEX_INITIALIZER;
static struct strata_doc_cache *listed_head;

static void cache_list(struct strata_doc_cache *c)
{
    pthread_mutex_lock(&listed_mu);
    if (!atomic_load(&c->listed)) {
        c->next_listed = listed_head;
        listed_head = c;
        atomic_store(&c->listed, true);
    }
    pthread_mutex_unlock(&listed_mu);
}

void strata_doc_caches_invalidate(const char *bucket)
{
    pthread_mutex_lock(&listed_mu);
    for (struct strata_doc_cache *c = listed_head; c; c = c->next_listed)
        strata_doc_cache_invalidate(c, bucket);
    pthread_mutex_unlock(&listed_mu);
}

static void slot_drop(struct strata_doc_cache *c, struct strata_doc_slot *s)
{
    pthread_mutex_lock(&c->mu);
    struct strata_doc_ref *old = s->ref;
    s->ref = NULL;
    s->valid = false; /* whoever holds the slot: cheap and always safe */
    s->gen++;
    atomic_fetch_add_explicit(&c->epoch, 1, memory_order_release);
    pthread_mutex_unlock(&c->mu);
    strata_doc_ref_put(old);
}
