/*
 * bucket_doc_cache.c - the parsed bucket document cache (bucket_doc_cache.h).
 */
#include "bucket_doc_cache.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv.h"

#define DOC_TTL_NS 1000000000ull

struct strata_doc_ref {
    atomic_uint refs;
    void (*destroy)(void *parsed);
    void *parsed;
};

const void *strata_doc_ref_get(const struct strata_doc_ref *ref)
{
    return ref ? ref->parsed : NULL;
}

void strata_doc_ref_put(struct strata_doc_ref *ref)
{
    if (ref && atomic_fetch_sub(&ref->refs, 1) == 1) {
        ref->destroy(ref->parsed);
        free(ref);
    }
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

int strata_doc_cache_get(struct strata_doc_cache *c, struct strata_meta *m,
                         const struct strata_bucket_info *bi, struct strata_doc_ref **out)
{
    struct strata_doc_slot *s = &c->slots[strata_bcache_name_hash(bi->name) %
                                          STRATA_DOC_CACHE_SLOTS];
    uint64_t now = strata_bcache_now_ns();
    pthread_mutex_lock(&c->mu);
    bool hit = s->valid && s->expires_ns > now && s->created_ms == bi->created_ms &&
               strcmp(s->bucket, bi->name) == 0;
    struct strata_doc_ref *ref = hit ? s->ref : NULL;
    if (ref)
        atomic_fetch_add(&ref->refs, 1);
    uint64_t gen = s->gen;
    pthread_mutex_unlock(&c->mu);
    if (hit) {
        *out = ref;
        return 0;
    }
    int rc = load(c, m, bi->name, &ref);
    if (rc)
        return rc; /* not cached: a quorum hiccup should not stick for a second */
    struct strata_doc_ref *old = NULL;
    pthread_mutex_lock(&c->mu);
    if (s->gen == gen) {
        old = s->ref;
        s->ref = ref;
        if (ref)
            atomic_fetch_add(&ref->refs, 1);
        snprintf(s->bucket, sizeof(s->bucket), "%s", bi->name);
        s->created_ms = bi->created_ms;
        s->expires_ns = now + DOC_TTL_NS;
        s->valid = true;
    }
    pthread_mutex_unlock(&c->mu);
    strata_doc_ref_put(old);
    *out = ref;
    return 0;
}

void strata_doc_cache_invalidate(struct strata_doc_cache *c, const char *bucket)
{
    struct strata_doc_slot *s = &c->slots[strata_bcache_name_hash(bucket) %
                                          STRATA_DOC_CACHE_SLOTS];
    pthread_mutex_lock(&c->mu);
    struct strata_doc_ref *old = s->ref;
    s->ref = NULL;
    s->valid = false; /* whoever holds the slot: cheap and always safe */
    s->gen++;
    pthread_mutex_unlock(&c->mu);
    strata_doc_ref_put(old);
}
