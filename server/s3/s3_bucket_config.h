/*
 * s3_bucket_config.h - what the handlers of a bucket configuration
 * document (?cors, ?policy, ?lifecycle, ...) share: read it or answer its
 * "not found" error, store or delete it and answer.  Connection threads.
 */
#ifndef STRATA_SERVER_S3_BUCKET_CONFIG_H
#define STRATA_SERVER_S3_BUCKET_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "s3_error.h"

struct strata_req;
struct strata_doc_cache;
struct strata_sbuf;

/* The request bucket's document kind: true with *doc (malloc'ed, caller
 * frees) and *len > 0; false once the request is answered, with missing
 * when the bucket has none (or an empty one), else the metadata error. */
bool strata_bucket_config_read(struct strata_req *r, const char *kind, enum s3_err missing,
                               void **doc, size_t *len);

/* Answer 200 with the stored document as its body (content_type), or as
 * strata_bucket_config_read answers. */
void strata_bucket_config_send(struct strata_req *r, const char *kind, enum s3_err missing,
                               const char *content_type);

/* Store doc (len 0: delete) as the request bucket's document kind, drop the
 * bucket's cached copies and answer status, or the metadata error.  A
 * delete answers status also when there was none, as AWS does.  The copies
 * dropped are cache's, or with cache NULL the authorisation policy cache's
 * (it holds the policy, ownership and public access block documents). */
void strata_bucket_config_write(struct strata_req *r, const char *kind, const void *doc, size_t len,
                                struct strata_doc_cache *cache, int status);
/* The same for a PUT of the canonical form in b (finished here): 200, or
 * InternalError when it did not fit b. */
void strata_bucket_config_write_buf(struct strata_req *r, const char *kind, struct strata_sbuf *b,
                                    struct strata_doc_cache *cache);

/* Formats a document's parsed form (the cache's) in canonical XML. */
typedef void (*strata_bucket_config_fmt)(struct strata_sbuf *b, const void *parsed);

/* Answer 200 with the request bucket's document as cache holds it, formatted
 * by fmt within max bytes; else missing, or the metadata error.  With missing
 * S3E_NONE a bucket without one is formatted from NULL (an empty document). */
void strata_bucket_config_send_cached(struct strata_req *r, struct strata_doc_cache *cache,
                                      enum s3_err missing, size_t max,
                                      strata_bucket_config_fmt fmt);

/*
 * A cached configuration type T: defines the static cache `cache` of
 * documents kind and the static callbacks name_parse (for the cache),
 * name_destroy and name_format (for strata_bucket_config_send_cached).
 * The parser is enum s3_err parse(doc, len, <extra...>, T **out,
 * const char **msg); the stored form was validated when written, so extra
 * arguments (the write's checks, such as known targets) are NULL there.
 */
#define STRATA_BUCKET_CONFIG_CACHE(cache, kind, name, T, free_fn, format_fn, parse, ...)          \
    static int name##_parse(const void *doc, size_t len, void **out)                               \
    {                                                                                              \
        const char *msg;                                                                           \
        T *c = NULL;                                                                               \
        enum s3_err e = parse(doc, len, ##__VA_ARGS__, &c, &msg);                                  \
        *out = c;                                                                                  \
        return e == S3E_NONE ? 0 : -1;                                                             \
    }                                                                                              \
    static void name##_destroy(void *parsed)                                                       \
    {                                                                                              \
        free_fn(parsed);                                                                           \
    }                                                                                              \
    static void name##_format(struct strata_sbuf *b, const void *parsed)                           \
    {                                                                                              \
        format_fn(b, parsed);                                                                      \
    }                                                                                              \
    static struct strata_doc_cache cache =                                                         \
        STRATA_DOC_CACHE_INIT(kind, name##_parse, name##_destroy)

#endif /* STRATA_SERVER_S3_BUCKET_CONFIG_H */
