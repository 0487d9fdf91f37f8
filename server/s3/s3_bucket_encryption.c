/*
 * s3_bucket_encryption.c - Put/Get/DeleteBucketEncryption: the bucket's
 * default encryption, applied by sse.c to new objects (PutObject,
 * CopyObject, CreateMultipartUpload) that name no encryption themselves.
 * Stored as the bucket configuration document "encryption" (format in
 * sse.h).  Connection thread of the request.
 */
#include "srv.h"
#include "handlers.h"
#include "sse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S3_NS "http://s3.amazonaws.com/doc/2006-03-01/"
#define XML_HEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define DOC_KIND "encryption"

int strata_sse_default_get(struct strata_req *r, const char *bucket,
                           struct strata_sse_default *out)
{
    memset(out, 0, sizeof(*out));
    void *doc = NULL;
    size_t len = 0;
    int rc = strata_meta_bucket_config_get(r->srv->meta, bucket, DOC_KIND, &doc, &len);
    if (rc == 0 && len == 0)
        rc = STRATA_ENOTFOUND;
    if (rc == 0) {
        char buf[128] = "", *nl1, *nl2;
        if (len < sizeof(buf))
            memcpy(buf, doc, len);
        nl1 = strchr(buf, '\n');
        nl2 = nl1 ? strchr(nl1 + 1, '\n') : NULL;
        if (!nl2 || (size_t)(nl1 - buf) >= sizeof(out->algo) ||
            (size_t)(nl2 - nl1 - 1) >= sizeof(out->key_id)) {
            rc = STRATA_ECORRUPT;
        } else {
            memcpy(out->algo, buf, (size_t)(nl1 - buf));
            memcpy(out->key_id, nl1 + 1, (size_t)(nl2 - nl1 - 1));
            out->bucket_key = nl2[1] == '1';
        }
    }
    free(doc);
    return rc;
}

void strata_h_encryption_get(struct strata_req *r)
{
    struct strata_sse_default d;
    int rc = strata_sse_default_get(r, r->bucket, &d);
    if (rc == STRATA_ENOTFOUND) {
        strata_req_error(r, S3E_ServerSideEncryptionConfigurationNotFoundError, 0);
        return;
    }
    if (rc) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    struct strata_sbuf b;
    strata_sbuf_init(&b, 4096);
    strata_sbuf_puts(&b, XML_HEAD "<ServerSideEncryptionConfiguration xmlns=\"" S3_NS "\"><Rule>"
                                  "<ApplyServerSideEncryptionByDefault>");
    strata_sbuf_xml_elem(&b, "SSEAlgorithm", d.algo);
    if (d.key_id[0])
        strata_sbuf_xml_elem(&b, "KMSMasterKeyID", d.key_id);
    strata_sbuf_printf(&b, "</ApplyServerSideEncryptionByDefault><BucketKeyEnabled>%s"
                           "</BucketKeyEnabled></Rule></ServerSideEncryptionConfiguration>",
                       d.bucket_key ? "true" : "false");
    strata_req_send_xml(r, 200, &b);
}

void strata_h_encryption_put(struct strata_req *r)
{
    struct strata_sse_default d;
    enum s3_err e = strata_xml_encryption_parse(r->body.data, r->body.len, &d);
    if (!e)
        e = strata_sse_default_check(r, &d);
    if (e) {
        strata_req_error(r, e, 0);
        return;
    }
    char doc[128];
    int n = snprintf(doc, sizeof(doc), "%s\n%s\n%d", d.algo, d.key_id, d.bucket_key ? 1 : 0);
    int rc = strata_meta_bucket_config_put(r->srv->meta, r->bucket, DOC_KIND, doc, (size_t)n);
    if (rc) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    strata_req_send(r, 200,
                    MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
}

void strata_h_encryption_delete(struct strata_req *r)
{
    int rc = strata_meta_bucket_config_put(r->srv->meta, r->bucket, DOC_KIND, "", 0);
    if (rc && rc != STRATA_ENOTFOUND) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    strata_req_send(r, 204,
                    MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
}
