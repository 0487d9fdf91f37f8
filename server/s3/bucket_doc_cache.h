/*
 * bucket_doc_cache.h - a one-second cache of one kind of bucket
 * configuration document ("cors", ...), kept parsed, in front of
 * strata_meta_bucket_config_get (which reads every drive for a quorum).
 *
 * Entries live one second and are keyed by bucket name and creation time,
 * so a bucket re-created under the same name never sees its predecessor's
 * document; this daemon invalidates a bucket whenever it changes the
 * document.  Read errors are not cached.  Parsed documents are shared and
 * reference counted: a reader keeps its own until it puts it back, however
 * the cache moves on.  Any connection thread; the table and the per-thread
 * copies in front of it are epoch_cache.c's.
 */
#ifndef STRATA_SERVER_S3_BUCKET_DOC_CACHE_H
#define STRATA_SERVER_S3_BUCKET_DOC_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "epoch_cache.h"
#include "strata/meta.h"

struct strata_doc_ref; /* one parsed document, reference counted */

struct strata_doc_cache {
    const char *kind; /* the configuration document's kind */
    /* Parses a stored document into *out: 0, or non-zero when it does not
     * parse (stored documents were validated: corruption or a bug). */
    int (*parse)(const void *doc, size_t len, void **out);
    void (*destroy)(void *parsed);
    struct strata_ecache ec; /* keyed by bucket name and creation time */
};

/* A static cache: static struct strata_doc_cache c = STRATA_DOC_CACHE_INIT(...); */
#define STRATA_DOC_CACHE_INIT(kind, parse, destroy)                                                \
    {                                                                                              \
        (kind), (parse), (destroy), STRATA_ECACHE_INIT(&strata_eref_ops)                           \
    }

/* The parsed document of bucket bi: 0 with *out (NULL when it has none;
 * release with strata_doc_ref_put), STRATA_ECORRUPT when the stored one
 * does not parse, or the metadata error. */
int strata_doc_cache_get(struct strata_doc_cache *c, struct strata_meta *m,
                         const struct strata_bucket_info *bi, struct strata_doc_ref **out);
const void *strata_doc_ref_get(const struct strata_doc_ref *ref); /* NULL for NULL */
void strata_doc_ref_put(struct strata_doc_ref *ref);              /* NULL is a no-op */
/* After this daemon stores or deletes the bucket's document. */
void strata_doc_cache_invalidate(struct strata_doc_cache *c, const char *bucket);
/* A name for a rule or configuration the request gave none (AWS names
 * them itself): 24 random hex digits, malloc'ed (caller frees), or NULL. */
char *strata_doc_id_new(void);

#endif /* STRATA_SERVER_S3_BUCKET_DOC_CACHE_H */
