/*
 * s3_public_access.c - Put/Get/DeletePublicAccessBlock of a bucket.  The
 * four settings are the bucket's "public-access-block" configuration
 * document: four bytes '0'/'1' in STRATA_PAB_* bit order (authz.h).  They
 * are enforced where they apply: BlockPublicAcls by strata_acl_check_set
 * (s3_acl.c), IgnorePublicAcls and RestrictPublicBuckets by the decision
 * in s3/authz.c, BlockPublicPolicy by PutBucketPolicy (s3_policy.c).
 * Connection threads.
 */
#include "srv.h"
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "authz.h"
#include "s3_bucket_config.h"

static const char *const pab_names[] = {"BlockPublicAcls", "IgnorePublicAcls",
                                        "BlockPublicPolicy", "RestrictPublicBuckets"};

void strata_h_pab_get(struct strata_req *r)
{
    struct strata_policy_ref *ref = strata_req_policy_ref(r);
    if (!ref)
        return;
    bool set = false;
    unsigned bits = strata_policy_ref_pab(ref, &set);
    strata_policy_ref_put(ref);
    if (strata_req_refused(r, set ? S3E_NONE : S3E_NoSuchPublicAccessBlockConfiguration))
        return;
    struct strata_sbuf b;
    strata_xml_doc_open(&b, 1024, "PublicAccessBlockConfiguration");
    for (unsigned i = 0; i < 4; i++)
        strata_sbuf_xml_elem(&b, pab_names[i], bits & (1u << i) ? "true" : "false");
    strata_xml_doc_send(r, &b, "PublicAccessBlockConfiguration");
}

void strata_h_pab_put(struct strata_req *r)
{
    unsigned bits;
    if (strata_req_refused(r, strata_xml_pab_parse(r->body.data, r->body.len, &bits)))
        return;
    char doc[4];
    for (unsigned i = 0; i < 4; i++)
        doc[i] = bits & (1u << i) ? '1' : '0';
    strata_bucket_config_write(r, "public-access-block", doc, sizeof(doc), NULL, 200);
}

void strata_h_pab_delete(struct strata_req *r)
{
    strata_bucket_config_write(r, "public-access-block", NULL, 0, NULL, 204);
}
