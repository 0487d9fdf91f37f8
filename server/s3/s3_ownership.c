/*
 * s3_ownership.c - Put/Get/DeleteBucketOwnershipControls.  The rule is the
 * bucket's "ownership" configuration document (the ObjectOwnership name);
 * CreateBucket stores one for every new bucket (BucketOwnerEnforced unless
 * x-amz-object-ownership says otherwise, as AWS does since April 2023).
 * Without one (buckets created before, or after a delete) objects belong
 * to their writer, as with ObjectWriter.  Connection threads.
 */
#include "srv.h"
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "authz.h"
#include "s3_bucket_config.h"

void strata_h_ownership_get(struct strata_req *r)
{
    void *doc = NULL;
    size_t len = 0;
    int rc = strata_meta_bucket_config_get(r->srv->meta, r->bucket, "ownership", &doc, &len);
    int own = rc == 0 ? strata_ownership_parse(doc, len) : STRATA_OWN_NONE;
    free(doc);
    if (rc && rc != STRATA_ENOTFOUND) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return;
    }
    if (strata_req_refused(r, own == STRATA_OWN_NONE ? S3E_OwnershipControlsNotFoundError
                                                     : S3E_NONE))
        return;
    struct strata_sbuf b;
    strata_xml_doc_open(&b, 1024, "OwnershipControls");
    /* The names are fixed words: nothing to escape. */
    strata_sbuf_printf(&b, "<Rule><ObjectOwnership>%s</ObjectOwnership></Rule>",
                       strata_ownership_name(own));
    strata_xml_doc_send(r, &b, "OwnershipControls");
}

void strata_h_ownership_put(struct strata_req *r)
{
    int own;
    if (strata_req_refused(r, strata_xml_ownership_parse(r->body.data, r->body.len, &own)))
        return;
    if (own == STRATA_OWN_ENFORCED) {
        /* AWS: ACLs can only be disabled while the bucket ACL is private. */
        struct strata_policy_ref *ref = strata_req_policy_ref(r);
        if (!ref)
            return;
        bool priv = strata_acl_is_owner_only(strata_policy_ref_acl(ref), r->binfo.owner);
        strata_policy_ref_put(ref);
        if (!priv) {
            strata_req_error(r, S3E_InvalidBucketAclWithObjectOwnership, 0);
            return;
        }
    }
    const char *name = strata_ownership_name(own);
    strata_bucket_config_write(r, "ownership", name, strlen(name), NULL, 200);
}

void strata_h_ownership_delete(struct strata_req *r)
{
    strata_bucket_config_write(r, "ownership", NULL, 0, NULL, 204);
}
