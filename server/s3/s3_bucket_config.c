/*
 * s3_bucket_config.c - the read and write steps every bucket configuration
 * document handler takes (see s3_bucket_config.h).
 */
#include "s3_bucket_config.h"

#include <stdlib.h>

#include "authz.h"
#include "bucket_doc_cache.h"
#include "srv.h"

bool strata_bucket_config_read(struct strata_req *r, const char *kind, enum s3_err missing,
                               void **doc, size_t *len)
{
    *doc = NULL;
    *len = 0;
    int rc = strata_meta_bucket_config_get(r->srv->meta, r->bucket, kind, doc, len);
    if (rc == STRATA_ENOTFOUND || (rc == 0 && *len == 0)) {
        free(*doc);
        *doc = NULL;
        strata_req_error(r, missing, 0);
        return false;
    }
    if (rc) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return false;
    }
    return true;
}

void strata_bucket_config_send(struct strata_req *r, const char *kind, enum s3_err missing,
                               const char *content_type)
{
    void *doc;
    size_t len;
    if (!strata_bucket_config_read(r, kind, missing, &doc, &len))
        return;
    strata_req_send_body(r, 200, content_type, doc, len);
}

void strata_bucket_config_write(struct strata_req *r, const char *kind, const void *doc, size_t len,
                                struct strata_doc_cache *cache, int status)
{
    int rc = strata_meta_bucket_config_put(r->srv->meta, r->bucket, kind, len ? doc : "", len);
    if (cache)
        strata_doc_cache_invalidate(cache, r->bucket);
    else
        strata_policy_cache_invalidate(r->bucket);
    if (rc && !(rc == STRATA_ENOTFOUND && len == 0)) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    strata_req_send_empty(r, status);
}

void strata_bucket_config_write_buf(struct strata_req *r, const char *kind, struct strata_sbuf *b,
                                    struct strata_doc_cache *cache)
{
    if (b->failed)
        strata_req_error(r, S3E_InternalError, STRATA_ENOMEM);
    else
        strata_bucket_config_write(r, kind, b->data, b->len, cache, 200);
    strata_sbuf_fini(b);
}

void strata_bucket_config_send_cached(struct strata_req *r, struct strata_doc_cache *cache,
                                      enum s3_err missing, size_t max,
                                      strata_bucket_config_fmt fmt)
{
    struct strata_doc_ref *ref = NULL;
    int rc = strata_doc_cache_get(cache, r->srv->meta, &r->binfo, &ref);
    if (rc) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    if (!ref && missing != S3E_NONE) {
        strata_req_error(r, missing, 0);
        return;
    }
    struct strata_sbuf b;
    strata_sbuf_init(&b, max);
    fmt(&b, strata_doc_ref_get(ref));
    strata_doc_ref_put(ref);
    strata_req_send_xml(r, 200, &b);
}
