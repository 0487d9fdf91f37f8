/*
 * s3_policy.c - Put/Get/DeleteBucketPolicy and GetBucketPolicyStatus.
 * The policy is validated by server/auth/policy.c and stored verbatim as
 * the bucket's "policy" configuration document; a rejected policy leaves
 * the stored one untouched.  Who may call these is decided by
 * strata_authz_request (the owner only).  Connection threads.
 */
#include "srv.h"
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "authz.h"
#include "s3_bucket_config.h"

void strata_h_policy_get(struct strata_req *r)
{
    /* The document as it was put, as AWS returns it. */
    strata_bucket_config_send(r, "policy", S3E_NoSuchBucketPolicy, "application/json");
}

void strata_h_policy_put(struct strata_req *r)
{
    char msg[256];
    struct strata_policy *p = NULL;
    int rc = strata_policy_parse(r->body.data ? r->body.data : "", r->body.len, r->bucket, &p, msg,
                                 sizeof(msg));
    if (rc) {
        /* msg outlives the answer: strata_req_error copies it. */
        r->err_msg = msg;
        strata_req_error(r, rc == STRATA_ENOTIMPL ? S3E_NotImplemented
                            : rc == STRATA_ENOMEM ? S3E_InternalError
                                                  : S3E_MalformedPolicy,
                         rc == STRATA_ENOMEM ? rc : 0);
        r->err_msg = NULL;
        return;
    }
    bool pub = strata_policy_is_public(p);
    strata_policy_destroy(p);
    /* BlockPublicPolicy refuses a public policy (AWS: 403 AccessDenied). */
    struct strata_policy_ref *ref = NULL;
    rc = pub ? strata_policy_cache_get(r->srv->meta, &r->binfo, &ref) : 0;
    bool blocked = ref && (strata_policy_ref_pab(ref, NULL) & STRATA_PAB_BLOCK_PUBLIC_POLICY);
    strata_policy_ref_put(ref);
    if (rc || blocked) {
        if (rc)
            strata_req_error_strata(r, rc, S3CTX_BUCKET);
        else
            strata_req_error(r, S3E_AccessDenied, 0);
        return;
    }
    strata_bucket_config_write(r, "policy", r->body.data, r->body.len, NULL, 204);
}

void strata_h_policy_delete(struct strata_req *r)
{
    void *doc;
    size_t len;
    if (!strata_bucket_config_read(r, "policy", S3E_NoSuchBucketPolicy, &doc, &len))
        return;
    free(doc);
    strata_bucket_config_write(r, "policy", NULL, 0, NULL, 204);
}

void strata_h_policy_status(struct strata_req *r)
{
    struct strata_policy_ref *ref = strata_req_policy_ref(r);
    if (!ref)
        return;
    const struct strata_policy *p = strata_policy_ref_get(ref);
    /* RestrictPublicBuckets keeps a public policy from making the bucket
     * public, which is what IsPublic reports. */
    bool pub = p && strata_policy_is_public(p) &&
               !(strata_policy_ref_pab(ref, NULL) & STRATA_PAB_RESTRICT_PUBLIC_BUCKETS);
    strata_policy_ref_put(ref);
    if (strata_req_refused(r, p ? S3E_NONE : S3E_NoSuchBucketPolicy))
        return;
    struct strata_sbuf b;
    strata_xml_doc_open(&b, 1024, "PolicyStatus");
    strata_sbuf_xml_elem(&b, "IsPublic", pub ? "true" : "false");
    strata_xml_doc_send(r, &b, "PolicyStatus");
}
