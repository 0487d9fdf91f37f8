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
 * the cache moves on.  Any connection thread; one mutex per cache, held
 * only to copy a pointer.  In front of it each thread keeps copies of the
 * entries it read (bucket_doc_cache.c), so that the event threads do not
 * take the cache's one mutex for every GET.
 */
#ifndef STRATA_SERVER_S3_BUCKET_DOC_CACHE_H
#define STRATA_SERVER_S3_BUCKET_DOC_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/meta.h"

#define STRATA_DOC_CACHE_SLOTS 64

struct strata_doc_ref; /* one parsed document, reference counted */

struct strata_doc_slot {
    bool valid;
    uint64_t gen; /* bumped by invalidate: a read that raced it is not stored */
    uint64_t expires_ns;
    int64_t created_ms;
    char bucket[STRATA_BUCKET_NAME_MAX + 1];
    struct strata_doc_ref *ref; /* NULL: the bucket has no document */
};

struct strata_doc_cache {
    const char *kind; /* the configuration document's kind */
    /* Parses a stored document into *out: 0, or non-zero when it does not
     * parse (stored documents were validated: corruption or a bug). */
    int (*parse)(const void *doc, size_t len, void **out);
    void (*destroy)(void *parsed);
    pthread_mutex_t mu;
    struct strata_doc_slot slots[STRATA_DOC_CACHE_SLOTS];
    /* Bumped by every invalidation: a thread's copy taken at an older
     * epoch is not used. */
    _Atomic uint64_t epoch;
    /* Listed (once, at its first get) for strata_doc_caches_invalidate. */
    _Atomic bool listed;
    struct strata_doc_cache *next_listed;
};

/* A static cache: static struct strata_doc_cache c = STRATA_DOC_CACHE_INIT(...); */
#define STRATA_DOC_CACHE_INIT(kind, parse, destroy)                                                \
    {                                                                                              \
        (kind), (parse), (destroy), PTHREAD_MUTEX_INITIALIZER, {{0}}, 0, false, NULL               \
    }

/* The parsed document of bucket bi: 0 with *out (NULL when it has none;
 * release with strata_doc_ref_put), STRATA_ECORRUPT when the stored one
 * does not parse, or the metadata error. */
int strata_doc_cache_get(struct strata_doc_cache *c, struct strata_meta *m,
                         const struct strata_bucket_info *bi, struct strata_doc_ref **out);
const void *strata_doc_ref_get(const struct strata_doc_ref *ref); /* NULL for NULL */
void strata_doc_ref_put(struct strata_doc_ref *ref);              /* NULL is a no-op */
/* After this daemon stores or deletes the bucket's document (NULL: every
 * bucket's). */
void strata_doc_cache_invalidate(struct strata_doc_cache *c, const char *bucket);
/* The same in every document cache used so far (another gateway changed
 * the bucket). */
void strata_doc_caches_invalidate(const char *bucket);
/* A name for a rule or configuration the request gave none (AWS names
 * them itself): 24 random hex digits, malloc'ed (caller frees), or NULL. */
char *strata_doc_id_new(void);

#endif /* STRATA_SERVER_S3_BUCKET_DOC_CACHE_H */
