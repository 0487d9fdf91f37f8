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
    struct strata_eref e; /* first: a thread's copy lends its original's parsed */
    void (*destroy)(void *parsed);
    void *parsed;
};

const void *strata_doc_ref_get(const struct strata_doc_ref *ref)
{
    return ref ? ref->parsed : NULL;
}

void strata_doc_ref_put(struct strata_doc_ref *ref)
{
    strata_eref_put(ref ? &ref->e : NULL);
}

/* The original's release (strata_eref free_fn). */
static void ref_free(struct strata_eref *e)
{
    struct strata_doc_ref *ref = (struct strata_doc_ref *)e;
    ref->destroy(ref->parsed);
    free(ref);
}

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
    strata_eref_init(&ref->e, sizeof(*ref), ref_free);
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
