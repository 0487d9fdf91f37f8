/*
 * s3_bucket_encryption.c - Put/Get/DeleteBucketEncryption: the bucket's
 * default encryption, applied by sse.c to new objects (PutObject,
 * CopyObject, CreateMultipartUpload) that name no encryption themselves.
 * Stored as the bucket configuration document "encryption" (format in
 * sse.h).  Connection thread of the request.
 */
#include "bucket_doc_cache.h"
#include "srv.h"
#include "handlers.h"
#include "sse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOC_KIND "encryption"

/* The stored document "ALGO\nKEY_ID\nBUCKET_KEY" as a malloc'ed
 * struct strata_sse_default. */
static int default_parse(const void *doc, size_t len, void **out)
{
    char buf[128] = "", *nl1, *nl2;
    if (len < sizeof(buf))
        memcpy(buf, doc, len);
    nl1 = strchr(buf, '\n');
    nl2 = nl1 ? strchr(nl1 + 1, '\n') : NULL;
    if (!nl2 || (size_t)(nl1 - buf) >= sizeof(((struct strata_sse_default *)0)->algo) ||
        (size_t)(nl2 - nl1 - 1) >= sizeof(((struct strata_sse_default *)0)->key_id))
        return STRATA_ECORRUPT;
    struct strata_sse_default *d = calloc(1, sizeof(*d));
    if (!d)
        return STRATA_ENOMEM;
    memcpy(d->algo, buf, (size_t)(nl1 - buf));
    memcpy(d->key_id, nl1 + 1, (size_t)(nl2 - nl1 - 1));
    d->bucket_key = nl2[1] == '1';
    *out = d;
    return 0;
}

/* Every PUT asks for it: kept parsed, as the other bucket documents are
 * (one metadata read less per PUT). */
static struct strata_doc_cache cache = STRATA_DOC_CACHE_INIT(DOC_KIND, default_parse, free);

int strata_sse_default_get(struct strata_req *r, const char *bucket,
                           struct strata_sse_default *out)
{
    memset(out, 0, sizeof(*out));
    struct strata_bucket_info bi;
    int rc = r->bucket && strcmp(bucket, r->bucket) == 0 && r->binfo.name[0]
                 ? (bi = r->binfo, 0)
                 : strata_meta_bucket_get(r->srv->meta, bucket, &bi);
    struct strata_doc_ref *ref = NULL;
    if (rc == 0)
        rc = strata_doc_cache_get(&cache, r->srv->meta, &bi, &ref);
    if (rc == 0 && !ref)
        rc = STRATA_ENOTFOUND;
    if (rc == 0)
        *out = *(const struct strata_sse_default *)strata_doc_ref_get(ref);
    strata_doc_ref_put(ref);
    return rc;
}

void strata_h_encryption_get(struct strata_req *r)
{
    struct strata_sse_default d;
    int rc = strata_sse_default_get(r, r->bucket, &d);
    if (strata_req_refused(r, rc == STRATA_ENOTFOUND
                                  ? S3E_ServerSideEncryptionConfigurationNotFoundError
                                  : S3E_NONE))
        return;
    if (rc) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    struct strata_sbuf b;
    strata_xml_doc_open(&b, 4096, "ServerSideEncryptionConfiguration");
    strata_sbuf_puts(&b, "<Rule><ApplyServerSideEncryptionByDefault>");
    strata_sbuf_xml_elem(&b, "SSEAlgorithm", d.algo);
    if (d.key_id[0])
        strata_sbuf_xml_elem(&b, "KMSMasterKeyID", d.key_id);
    strata_sbuf_puts(&b, "</ApplyServerSideEncryptionByDefault>");
    strata_sbuf_xml_elem(&b, "BucketKeyEnabled", d.bucket_key ? "true" : "false");
    strata_sbuf_puts(&b, "</Rule>");
    strata_xml_doc_send(r, &b, "ServerSideEncryptionConfiguration");
}

void strata_h_encryption_put(struct strata_req *r)
{
    struct strata_sse_default d;
    enum s3_err e = strata_xml_encryption_parse(r->body.data, r->body.len, &d);
    if (!e)
        e = strata_sse_default_check(r, &d);
    if (strata_req_refused(r, e))
        return;
    char doc[128];
    int n = snprintf(doc, sizeof(doc), "%s\n%s\n%d", d.algo, d.key_id, d.bucket_key ? 1 : 0);
    int rc = strata_meta_bucket_config_put(r->srv->meta, r->bucket, DOC_KIND, doc, (size_t)n);
    strata_doc_cache_invalidate(&cache, r->bucket);
    if (rc) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    strata_req_send_empty(r, 200);
}

void strata_h_encryption_delete(struct strata_req *r)
{
    int rc = strata_meta_bucket_config_put(r->srv->meta, r->bucket, DOC_KIND, "", 0);
    strata_doc_cache_invalidate(&cache, r->bucket);
    if (rc && rc != STRATA_ENOTFOUND) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    strata_req_send_empty(r, 204);
}
