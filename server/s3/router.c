/*
 * router.c - the routing table: {method, level, subresource} -> handler
 * and the operation's authorisation (its s3: action, read by authz.c).
 * Requests naming an S3 subresource or feature Strata does not implement
 * get 501 NotImplemented, never a wrong success.  Pure lookups; any
 * connection thread.
 */
#include "srv.h"
#include "handlers.h"
#include "repl_hooks.h"

#include <string.h>
#include <strings.h>

#define XML STRATA_RT_BODY_XML
#define STREAM STRATA_RT_BODY_STREAM
#define NOB STRATA_RT_NO_BUCKET
#define INPL STRATA_RT_IN_PLACE
#define SVC STRATA_LVL_SERVICE
#define BKT STRATA_LVL_BUCKET
#define OBJ STRATA_LVL_OBJECT
#define COPY STRATA_RT_COPY_SOURCE

/* Each route's authorisation (srv.h, enum strata_authz_kind): the s3:
 * action AWS documents for the operation, and its *Version action for a
 * request naming a versionId. */
#define POL(a) {STRATA_AZ_POLICY, a, NULL}
#define POLV(a, v) {STRATA_AZ_POLICY, a, v}
#define POLO(a, v) {STRATA_AZ_POLICY_OBJECT, a, v}
#define ADMIN(a) {STRATA_AZ_POLICY_ADMIN, a, NULL}
#define HANDLER(a, v) {STRATA_AZ_HANDLER, a, v}
#define SIGNED(a) {STRATA_AZ_SIGNED, a, NULL}
#define PUBLIC {STRATA_AZ_PUBLIC, NULL, NULL}

static const struct strata_route routes[] = {
    {"GET", SVC, NULL, 0, "ListBuckets", NULL, NULL, strata_h_list_buckets,
     SIGNED("s3:ListAllMyBuckets")},
    {"PUT", BKT, NULL, XML | NOB, "CreateBucket", NULL, NULL, strata_h_bucket_create,
     SIGNED("s3:CreateBucket")},
    {"HEAD", BKT, NULL, 0, "HeadBucket", NULL, NULL, strata_h_bucket_head, POL("s3:ListBucket")},
    {"DELETE", BKT, NULL, 0, "DeleteBucket", NULL, NULL, strata_h_bucket_delete,
     POL("s3:DeleteBucket")},
    {"GET", BKT, NULL, 0, "ListObjects", NULL, NULL, strata_h_list_objects, POL("s3:ListBucket")},
    {"GET", BKT, "location", 0, "GetBucketLocation", NULL, NULL, strata_h_bucket_location,
     POL("s3:GetBucketLocation")},
    {"GET", BKT, "versioning", 0, "GetBucketVersioning", NULL, NULL, strata_h_bucket_versioning_get,
     POL("s3:GetBucketVersioning")},
    {"PUT", BKT, "versioning", XML, "PutBucketVersioning", NULL, NULL,
     strata_h_bucket_versioning_put, POL("s3:PutBucketVersioning")},
    {"GET", BKT, "versions", 0, "ListObjectVersions", NULL, NULL, strata_h_list_versions,
     POL("s3:ListBucketVersions")},
    {"GET", BKT, "acl", 0, "GetBucketAcl", NULL, NULL, strata_h_acl_get, POL("s3:GetBucketAcl")},
    {"GET", BKT, "encryption", 0, "GetBucketEncryption", NULL, NULL, strata_h_encryption_get,
     POL("s3:GetEncryptionConfiguration")},
    {"PUT", BKT, "encryption", XML, "PutBucketEncryption", NULL, NULL, strata_h_encryption_put,
     POL("s3:PutEncryptionConfiguration")},
    {"DELETE", BKT, "encryption", 0, "DeleteBucketEncryption", NULL, NULL,
     strata_h_encryption_delete, POL("s3:PutEncryptionConfiguration")},
    {"PUT", BKT, "acl", XML, "PutBucketAcl", NULL, NULL, strata_h_acl_put, POL("s3:PutBucketAcl")},
    /* DeleteObjects: each key is checked as s3:DeleteObject(Version) by
     * the handler; the request itself needs no permission of its own. */
    {"POST", BKT, "delete", XML, "DeleteObjects", NULL, NULL, strata_h_delete_multi,
     HANDLER("s3:DeleteObject", "s3:DeleteObjectVersion")},
    {"PUT", OBJ, NULL, STREAM, "PutObject", strata_h_put_begin, strata_h_put_body, strata_h_put_run,
     POL("s3:PutObject")},
    {"GET", OBJ, NULL, INPL, "GetObject", NULL, NULL, strata_h_get,
     POLO("s3:GetObject", "s3:GetObjectVersion")},
    {"HEAD", OBJ, NULL, INPL, "HeadObject", NULL, NULL, strata_h_get,
     POLO("s3:GetObject", "s3:GetObjectVersion")},
    {"DELETE", OBJ, NULL, 0, "DeleteObject", NULL, NULL, strata_h_delete,
     POLV("s3:DeleteObject", "s3:DeleteObjectVersion")},
    {"GET", OBJ, "acl", 0, "GetObjectAcl", NULL, NULL, strata_h_acl_get,
     POLO("s3:GetObjectAcl", "s3:GetObjectVersionAcl")},
    {"GET", OBJ, "attributes", 0, "GetObjectAttributes", NULL, NULL, strata_h_attributes,
     POLV("s3:GetObjectAttributes", "s3:GetObjectVersionAttributes")},
    {"GET", OBJ, "tagging", 0, "GetObjectTagging", NULL, NULL, strata_h_tagging_get,
     POLV("s3:GetObjectTagging", "s3:GetObjectVersionTagging")},
    {"PUT", OBJ, "tagging", XML, "PutObjectTagging", NULL, NULL, strata_h_tagging_put,
     POLV("s3:PutObjectTagging", "s3:PutObjectVersionTagging")},
    {"DELETE", OBJ, "tagging", 0, "DeleteObjectTagging", NULL, NULL, strata_h_tagging_delete,
     POLV("s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging")},
    {"GET", BKT, "tagging", 0, "GetBucketTagging", NULL, NULL, strata_h_tagging_get,
     POL("s3:GetBucketTagging")},
    {"PUT", BKT, "tagging", XML, "PutBucketTagging", NULL, NULL, strata_h_tagging_put,
     POL("s3:PutBucketTagging")},
    {"DELETE", BKT, "tagging", 0, "DeleteBucketTagging", NULL, NULL, strata_h_tagging_delete,
     POL("s3:PutBucketTagging")},
    {"POST", OBJ, "uploads", 0, "CreateMultipartUpload", NULL, NULL, strata_h_mpu_create,
     POL("s3:PutObject")},
    {"PUT", OBJ, "uploadId", STREAM, "UploadPart", strata_h_mpu_part_begin, strata_h_put_body,
     strata_h_put_run, POL("s3:PutObject")},
    {"POST", OBJ, "uploadId", XML, "CompleteMultipartUpload", NULL, NULL, strata_h_mpu_complete,
     POL("s3:PutObject")},
    {"DELETE", OBJ, "uploadId", 0, "AbortMultipartUpload", NULL, NULL, strata_h_mpu_abort,
     POL("s3:AbortMultipartUpload")},
    {"GET", OBJ, "uploadId", 0, "ListParts", NULL, NULL, strata_h_mpu_list_parts,
     POL("s3:ListMultipartUploadParts")},
    {"GET", BKT, "uploads", 0, "ListMultipartUploads", NULL, NULL, strata_h_mpu_list,
     POL("s3:ListBucketMultipartUploads")},
    {"PUT", OBJ, "acl", XML, "PutObjectAcl", NULL, NULL, strata_h_acl_put,
     POLO("s3:PutObjectAcl", "s3:PutObjectVersionAcl")},
    {"GET", BKT, "object-lock", 0, "GetObjectLockConfiguration", NULL, NULL,
     strata_h_lock_config_get, POL("s3:GetBucketObjectLockConfiguration")},
    {"PUT", BKT, "object-lock", XML, "PutObjectLockConfiguration", NULL, NULL,
     strata_h_lock_config_put, POL("s3:PutBucketObjectLockConfiguration")},
    {"GET", OBJ, "retention", 0, "GetObjectRetention", NULL, NULL, strata_h_retention_get,
     POL("s3:GetObjectRetention")},
    {"PUT", OBJ, "retention", XML, "PutObjectRetention", NULL, NULL, strata_h_retention_put,
     POL("s3:PutObjectRetention")},
    {"GET", OBJ, "legal-hold", 0, "GetObjectLegalHold", NULL, NULL, strata_h_legal_hold_get,
     POL("s3:GetObjectLegalHold")},
    {"PUT", OBJ, "legal-hold", XML, "PutObjectLegalHold", NULL, NULL, strata_h_legal_hold_put,
     POL("s3:PutObjectLegalHold")},
    {"POST", OBJ, "restore", XML, "RestoreObject", NULL, NULL, strata_h_restore,
     POL("s3:RestoreObject")},
    {"GET", BKT, "lifecycle", 0, "GetBucketLifecycleConfiguration", NULL, NULL,
     strata_h_lifecycle_get, POL("s3:GetLifecycleConfiguration")},
    {"PUT", BKT, "lifecycle", XML, "PutBucketLifecycleConfiguration", NULL, NULL,
     strata_h_lifecycle_put, POL("s3:PutLifecycleConfiguration")},
    {"DELETE", BKT, "lifecycle", 0, "DeleteBucketLifecycle", NULL, NULL, strata_h_lifecycle_delete,
     POL("s3:PutLifecycleConfiguration")},
    {"GET", BKT, "policy", 0, "GetBucketPolicy", NULL, NULL, strata_h_policy_get,
     ADMIN("s3:GetBucketPolicy")},
    {"PUT", BKT, "policy", XML, "PutBucketPolicy", NULL, NULL, strata_h_policy_put,
     ADMIN("s3:PutBucketPolicy")},
    {"DELETE", BKT, "policy", 0, "DeleteBucketPolicy", NULL, NULL, strata_h_policy_delete,
     ADMIN("s3:DeleteBucketPolicy")},
    {"GET", BKT, "policyStatus", 0, "GetBucketPolicyStatus", NULL, NULL, strata_h_policy_status,
     ADMIN("s3:GetBucketPolicyStatus")},
    {"GET", BKT, "ownershipControls", 0, "GetBucketOwnershipControls", NULL, NULL,
     strata_h_ownership_get, POL("s3:GetBucketOwnershipControls")},
    {"PUT", BKT, "ownershipControls", XML, "PutBucketOwnershipControls", NULL, NULL,
     strata_h_ownership_put, POL("s3:PutBucketOwnershipControls")},
    {"DELETE", BKT, "ownershipControls", 0, "DeleteBucketOwnershipControls", NULL, NULL,
     strata_h_ownership_delete, POL("s3:PutBucketOwnershipControls")},
    {"GET", BKT, "publicAccessBlock", 0, "GetPublicAccessBlock", NULL, NULL, strata_h_pab_get,
     POL("s3:GetBucketPublicAccessBlock")},
    {"PUT", BKT, "publicAccessBlock", XML, "PutPublicAccessBlock", NULL, NULL, strata_h_pab_put,
     POL("s3:PutBucketPublicAccessBlock")},
    {"DELETE", BKT, "publicAccessBlock", 0, "DeletePublicAccessBlock", NULL, NULL,
     strata_h_pab_delete, POL("s3:PutBucketPublicAccessBlock")},
    {"GET", BKT, "cors", 0, "GetBucketCors", NULL, NULL, strata_h_cors_get,
     POL("s3:GetBucketCORS")},
    {"PUT", BKT, "cors", XML, "PutBucketCors", NULL, NULL, strata_h_cors_put,
     POL("s3:PutBucketCORS")},
    {"DELETE", BKT, "cors", 0, "DeleteBucketCors", NULL, NULL, strata_h_cors_delete,
     POL("s3:PutBucketCORS")},
    {"GET", BKT, "notification", 0, "GetBucketNotificationConfiguration", NULL, NULL,
     strata_h_notification_get, POL("s3:GetBucketNotification")},
    {"PUT", BKT, "notification", XML, "PutBucketNotificationConfiguration", NULL, NULL,
     strata_h_notification_put, POL("s3:PutBucketNotification")},
    {"GET", BKT, "replication", 0, "GetBucketReplication", NULL, NULL, strata_h_replication_get,
     POL("s3:GetReplicationConfiguration")},
    {"PUT", BKT, "replication", XML, "PutBucketReplication", NULL, NULL, strata_h_replication_put,
     POL("s3:PutReplicationConfiguration")},
    {"DELETE", BKT, "replication", 0, "DeleteBucketReplication", NULL, NULL,
     strata_h_replication_delete, POL("s3:PutReplicationConfiguration")},
    /* Preflight: carries no credentials and changes nothing; answered from
     * the bucket's CORS rules alone (s3_cors.c). */
    {"OPTIONS", BKT, NULL, 0, "PreflightCORS", NULL, NULL, strata_h_cors_preflight, PUBLIC},
    {"OPTIONS", OBJ, NULL, 0, "PreflightCORS", NULL, NULL, strata_h_cors_preflight, PUBLIC},
    /* Browser form upload: the body is multipart/form-data (s3_post.c).
     * The signer and the key are known only from the form, so the handler
     * checks s3:PutObject. */
    {"POST", BKT, NULL, STREAM, "PostObject", strata_h_post_begin, strata_h_post_body,
     strata_h_post_run, HANDLER("s3:PutObject", NULL)},
    /* x-amz-copy-source turns PutObject and UploadPart into a copy. */
    {"PUT", OBJ, NULL, COPY, "CopyObject", NULL, NULL, strata_h_copy, POL("s3:PutObject")},
    {"PUT", OBJ, "uploadId", COPY, "UploadPartCopy", NULL, NULL, strata_h_part_copy,
     POL("s3:PutObject")},
};

const struct strata_route *strata_route_table(size_t *n)
{
    *n = sizeof(routes) / sizeof(routes[0]);
    return routes;
}

/* The copy that stands for plain (PutObject, UploadPart) when
 * x-amz-copy-source is sent: the COPY route of its method, level and
 * subresource. */
static const struct strata_route *copy_of(const struct strata_route *plain)
{
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const struct strata_route *rt = &routes[i];
        if ((rt->flags & STRATA_RT_COPY_SOURCE) && rt->level == plain->level &&
            strcmp(rt->method, plain->method) == 0 && (rt->sub == NULL) == (plain->sub == NULL) &&
            (!rt->sub || strcmp(rt->sub, plain->sub) == 0))
            return rt;
    }
    return plain;
}

/* Every S3 subresource; a request naming one selects it (or 501). */
static const char *const subresources[] = {
    "acl",          "accelerate",   "analytics",         "attributes",     "cors",
    "delete",       "encryption",   "intelligent-tiering", "inventory",    "legal-hold",
    "lifecycle",    "location",     "logging",           "metrics",        "notification",
    "object-lock",  "ownershipControls", "policy",       "policyStatus",   "publicAccessBlock",
    "replication",  "requestPayment", "restore",         "retention",      "select",
    "tagging",      "torrent",      "uploadId",          "uploads",        "versioning",
    "versions",     "website",      "session",
    /* Newer operations: S3 Metadata tables, ABAC, RenameObject.  Without
     * them here ?metadataTable on DELETE would run DeleteBucket, and
     * ?renameObject on PUT a PutObject of the empty body. */
    "metadataTable", "metadataConfiguration", "metadataInventoryTable",
    "metadataJournalTable", "abac", "renameObject",
};

/* Request headers asking for features Strata does not implement. */
static const char *const unsupported_hdrs[] = {
    "x-amz-write-offset-bytes", /* appends: directory buckets only on AWS */
    "x-amz-server-side-encryption-customer-algorithm",
    "x-amz-server-side-encryption-customer-key",
    "x-amz-copy-source-server-side-encryption-customer-algorithm",
    "x-amz-copy-source-server-side-encryption-customer-key",
    "x-amz-server-side-encryption-aws-kms-key-id",
    "x-amz-server-side-encryption-context",
    "x-amz-server-side-encryption",
    "x-amz-website-redirect-location",
    /* ACL headers are taken by the operations that set an ACL (hdr_taken);
     * anywhere else they would be dropped: a wrong success. */
    "x-amz-acl",
    "x-amz-grant-read",
    "x-amz-grant-write",
    "x-amz-grant-read-acp",
    "x-amz-grant-write-acp",
    "x-amz-grant-full-control",
    "x-amz-object-ownership",
    /* A replication peer's version id (repl_hooks.h): PutObject, DeleteObject,
     * a multipart upload's create, complete and sealed parts (UploadPart of
     * a multipart SSE-C replica), and the tag, retention,
     * legal hold and ACL changes of a version only; copies and the rest would drop
     * it. */
    STRATA_REPL_HDR,
};

/* Whether operation op takes header h from the list above (sse.c checks
 * the values); everywhere else it is refused with 501.  The multipart
 * operations after create take the SSE-C customer key (UploadPart and
 * UploadPartCopy need it, CompleteMultipartUpload checks it), and reach
 * their handlers with the other SSE headers, which they answer as AWS
 * does: 400 InvalidArgument "... header is not supported for this
 * operation" (strata_sse_mpu_hdrs_check). */
static bool hdr_taken(const char *op, const char *h)
{
    bool obj = strcmp(op, "PutObject") == 0 || strcmp(op, "CopyObject") == 0 ||
               strcmp(op, "CreateMultipartUpload") == 0;
    bool part = strcmp(op, "UploadPart") == 0 || strcmp(op, "UploadPartCopy") == 0 ||
                strcmp(op, "CompleteMultipartUpload") == 0;
    bool copy = strcmp(op, "CopyObject") == 0 || strcmp(op, "UploadPartCopy") == 0;
    if (strncmp(h, "x-amz-server-side-encryption", 28) == 0 &&
        (h[28] == '\0' || strcmp(h + 28, "-aws-kms-key-id") == 0 ||
         strcmp(h + 28, "-context") == 0))
        return obj || part;
    if (strncmp(h, "x-amz-server-side-encryption-customer-", 38) == 0)
        return obj || part;
    if (strncmp(h, "x-amz-copy-source-server-side-encryption-customer-", 50) == 0)
        return copy;
    if (strcmp(h, "x-amz-object-ownership") == 0)
        return strcmp(op, "CreateBucket") == 0;
    if (strcmp(h, STRATA_REPL_HDR) == 0)
        return strcmp(op, "PutObject") == 0 || strcmp(op, "DeleteObject") == 0 ||
               strcmp(op, "PutObjectTagging") == 0 || strcmp(op, "DeleteObjectTagging") == 0 ||
               strcmp(op, "PutObjectRetention") == 0 || strcmp(op, "PutObjectLegalHold") == 0 ||
               strcmp(op, "PutObjectAcl") == 0 || strcmp(op, "CreateMultipartUpload") == 0 ||
               strcmp(op, "UploadPart") == 0 || strcmp(op, "CompleteMultipartUpload") == 0;
    if (strcmp(h, "x-amz-acl") == 0 || strncmp(h, "x-amz-grant-", 12) == 0)
        return obj || strcmp(op, "CreateBucket") == 0 || strcmp(op, "PutBucketAcl") == 0 ||
               strcmp(op, "PutObjectAcl") == 0;
    return false;
}

/* Headers the routed operation would not evaluate: conditional deletes
 * (If-Match; the x-amz-if-match-* of directory buckets), CopyObject's
 * destination conditions and a source range (UploadPartCopy's only).
 * Deleting or copying regardless would be a wrong success. */
static bool conditions_taken(struct strata_req *r, const struct strata_route *rt)
{
    static const char *const del_conds[] = {"If-Match", "x-amz-if-match-last-modified-time",
                                            "x-amz-if-match-size",
                                            "x-amz-if-match-initiated-time"};
    bool del = strcmp(rt->method, "DELETE") == 0 && rt->level == STRATA_LVL_OBJECT;
    for (size_t i = 0; del && i < sizeof(del_conds) / sizeof(del_conds[0]); i++)
        if (strata_req_hdr(r, del_conds[i]))
            return false;
    if (strcmp(rt->op, "CopyObject") == 0 &&
        (strata_req_hdr(r, "If-Match") || strata_req_hdr(r, "If-None-Match") ||
         strata_req_hdr(r, "x-amz-copy-source-range")))
        return false;
    return true;
}

const struct strata_route *strata_route_find(struct strata_req *r, bool *notimpl)
{
    const char *sub = NULL;
    *notimpl = false;
    /* A preflight is about the request it announces, whatever subresource
     * that names (POST ?uploads, PUT ?partNumber&uploadId, ...). */
    bool preflight = strcmp(r->method, "OPTIONS") == 0;
    /* No subresource starts with "X-Amz-": a presigned GET, whose query is
     * only its signature, skips the ~40 x nq compares of the scan. */
    bool maybe_sub = false;
    for (int i = 0; i < r->nq && !maybe_sub; i++)
        maybe_sub = strncmp(r->q[i].name, "X-Amz-", 6) != 0;
    for (size_t i = 0; i < sizeof(subresources) / sizeof(subresources[0]) && !sub; i++)
        if (!preflight && maybe_sub && strata_req_query(r, subresources[i]))
            sub = subresources[i];
    bool method_known = false;
    const struct strata_route *hit = NULL;
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const struct strata_route *rt = &routes[i];
        if (rt->level != r->level || (rt->flags & STRATA_RT_COPY_SOURCE))
            continue;
        if (strcmp(rt->method, r->method) == 0)
            method_known = true;
        if (strcmp(rt->method, r->method) != 0)
            continue;
        if ((sub == NULL) != (rt->sub == NULL) || (sub && strcmp(sub, rt->sub) != 0))
            continue;
        hit = rt;
        break;
    }
    if (!hit) {
        /* A subresource we do not serve, or a method S3 has but we lack
         * (POST object, ...): not implemented.  Anything else: 405. */
        *notimpl = sub != NULL || method_known || strcmp(r->method, "POST") == 0;
        return NULL;
    }
    if (hit->body_cb == strata_h_put_body && strata_req_hdr(r, "x-amz-copy-source"))
        hit = copy_of(hit);
    if (!conditions_taken(r, hit)) {
        *notimpl = true;
        return NULL;
    }
    if (strcmp(r->method, "PUT") == 0 || strcmp(r->method, "POST") == 0) {
        for (size_t i = 0; i < sizeof(unsupported_hdrs) / sizeof(unsupported_hdrs[0]); i++) {
            const char *v = strata_req_hdr(r, unsupported_hdrs[i]);
            if (v && !hdr_taken(hit->op, unsupported_hdrs[i])) {
                *notimpl = true;
                return NULL;
            }
        }
    }
    return hit;
}
