/*
 * bucket_doc_cache.c - the parsed bucket document cache (bucket_doc_cache.h).
 */
#include "bucket_doc_cache.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv.h"
#include "strata/hex.h"

#include <openssl/rand.h>

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

static void ref_hold(void *v)
{
    struct strata_doc_ref *ref = v;
    atomic_fetch_add(&ref->refs, 1);
}

static void ref_put(void *v)
{
    strata_doc_ref_put(v);
}

static void *ref_local_copy(void *v)
{
    struct strata_doc_ref *ref = v, *copy = malloc(sizeof(*copy));
    if (!copy)
        return NULL;
    struct strata_doc_ref *shared = ref->parent ? ref->parent : ref;
    atomic_init(&copy->refs, 1); /* the thread slot's */
    copy->destroy = NULL;
    copy->parsed = shared->parsed;
    copy->parent = shared;
    atomic_fetch_add(&shared->refs, 1);
    return copy;
}

const struct strata_ecache_ops strata_doc_ecache_ops = {ref_hold, ref_put, ref_local_copy};

struct load_arg {
    struct strata_doc_cache *c;
    struct strata_meta *m;
    const char *bucket;
};

/* Reads and parses the stored document: *out NULL when there is none. */
static int load(void *arg, void **out)
{
    struct load_arg *a = arg;
    struct strata_doc_cache *c = a->c;
    void *doc = NULL;
    size_t len = 0;
    *out = NULL;
    int rc = strata_meta_bucket_config_get(a->m, a->bucket, c->kind, &doc, &len);
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
                       a->bucket, c->kind);
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
    struct load_arg a = {c, m, bi->name};
    void *v = NULL;
    int rc = strata_ecache_get(&c->ec, bi->name, bi->created_ms, load, &a, &v);
    *out = v;
    return rc;
}

void strata_doc_cache_invalidate(struct strata_doc_cache *c, const char *bucket)
{
    strata_ecache_invalidate(&c->ec, bucket);
}

char *strata_doc_id_new(void)
{
    unsigned char rnd[12];
    char id[2 * sizeof(rnd) + 1];
    RAND_bytes(rnd, sizeof(rnd));
    strata_hex_encode(rnd, sizeof(rnd), id);
    return strdup(id);
}
