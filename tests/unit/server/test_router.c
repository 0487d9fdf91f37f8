/*
 * test_router.c - the routing table: which operation a method, level,
 * subresource and headers select, and that unsupported subresources and
 * features are 501 NotImplemented (never a wrong success) while unknown
 * methods are 405.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "srv.h"

/* A request as the router sees it: method, level, query names, headers. */
static struct strata_req *mk(const char *method, int level, const char *query,
                             const char *hdr_name, const char *hdr_value)
{
    struct strata_req *r = calloc(1, sizeof(*r));
    r->method = method;
    r->level = level;
    r->qbuf = query ? strdup(query) : NULL;
    r->nq = r->qbuf ? strata_s3_query_parse(r->qbuf, r->q, STRATA_SRV_QPARAMS_MAX) : 0;
    if (hdr_name) {
        r->hdrs[0].name = hdr_name;
        r->hdrs[0].value = hdr_value;
        r->nhdrs = 1;
    }
    return r;
}

static void rm(struct strata_req *r)
{
    free(r->qbuf);
    free(r);
}

/* The op name routed to, "501", "405". */
static const char *route(const char *method, int level, const char *query, const char *hn,
                         const char *hv)
{
    static char out[64];
    struct strata_req *r = mk(method, level, query, hn, hv);
    bool notimpl = false;
    const struct strata_route *rt = strata_route_find(r, &notimpl);
    snprintf(out, sizeof(out), "%s", rt ? rt->op : notimpl ? "501" : "405");
    if (rt)
        assert_false(notimpl);
    rm(r);
    return out;
}

/* Presigned URLs carry only X-Amz-* parameters besides any subresource:
 * the subresource still routes, wherever it sits in the query. */
static void test_presigned_query(void **state)
{
    (void)state;
    const char *sig = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=60&X-Amz-Signature=00";
    char q[256];
    assert_string_equal(route("GET", STRATA_LVL_OBJECT, sig, NULL, NULL), "GetObject");
    snprintf(q, sizeof(q), "%s&tagging", sig);
    assert_string_equal(route("GET", STRATA_LVL_OBJECT, q, NULL, NULL), "GetObjectTagging");
    snprintf(q, sizeof(q), "acl&%s", sig);
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, q, NULL, NULL), "PutObjectAcl");
    snprintf(q, sizeof(q), "%s&uploadId=u1&partNumber=2", sig);
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, q, NULL, NULL), "UploadPart");
    /* Not a subresource, however it is spelled: still the plain operation. */
    assert_string_equal(route("GET", STRATA_LVL_OBJECT, "X-Amz-tagging", NULL, NULL),
                        "GetObject");
}

static void test_service_and_bucket(void **state)
{
    assert_string_equal(route("GET", STRATA_LVL_SERVICE, NULL, NULL, NULL), "ListBuckets");
    assert_string_equal(route("PUT", STRATA_LVL_BUCKET, NULL, NULL, NULL), "CreateBucket");
    assert_string_equal(route("HEAD", STRATA_LVL_BUCKET, NULL, NULL, NULL), "HeadBucket");
    assert_string_equal(route("DELETE", STRATA_LVL_BUCKET, NULL, NULL, NULL), "DeleteBucket");
    assert_string_equal(route("GET", STRATA_LVL_BUCKET, "list-type=2&prefix=a", NULL, NULL),
                        "ListObjects");
    assert_string_equal(route("GET", STRATA_LVL_BUCKET, "location", NULL, NULL),
                        "GetBucketLocation");
    assert_string_equal(route("PUT", STRATA_LVL_BUCKET, "versioning", NULL, NULL),
                        "PutBucketVersioning");
    assert_string_equal(route("GET", STRATA_LVL_BUCKET, "versions&prefix=x", NULL, NULL),
                        "ListObjectVersions");
    assert_string_equal(route("POST", STRATA_LVL_BUCKET, "delete", NULL, NULL), "DeleteObjects");
    assert_string_equal(route("POST", STRATA_LVL_BUCKET, "delete=", NULL, NULL), "DeleteObjects");
    assert_string_equal(route("GET", STRATA_LVL_BUCKET, "uploads", NULL, NULL),
                        "ListMultipartUploads");
    assert_string_equal(route("PUT", STRATA_LVL_BUCKET, "tagging", NULL, NULL),
                        "PutBucketTagging");
    assert_string_equal(route("GET", STRATA_LVL_BUCKET, "encryption", NULL, NULL),
                        "GetBucketEncryption");
    assert_string_equal(route("PUT", STRATA_LVL_BUCKET, "encryption", NULL, NULL),
                        "PutBucketEncryption");
    assert_string_equal(route("DELETE", STRATA_LVL_BUCKET, "encryption", NULL, NULL),
                        "DeleteBucketEncryption");
    assert_string_equal(route("GET", STRATA_LVL_BUCKET, "lifecycle", NULL, NULL),
                        "GetBucketLifecycleConfiguration");
    assert_string_equal(route("PUT", STRATA_LVL_BUCKET, "lifecycle", NULL, NULL),
                        "PutBucketLifecycleConfiguration");
    assert_string_equal(route("DELETE", STRATA_LVL_BUCKET, "lifecycle", NULL, NULL),
                        "DeleteBucketLifecycle");
    /* Subresources Strata does not implement: 501, never a listing. */
    assert_string_equal(route("GET", STRATA_LVL_BUCKET, "policy", NULL, NULL), "GetBucketPolicy");
    assert_string_equal(route("PUT", STRATA_LVL_BUCKET, "policy", NULL, NULL), "PutBucketPolicy");
    assert_string_equal(route("DELETE", STRATA_LVL_BUCKET, "policy", NULL, NULL),
                        "DeleteBucketPolicy");
    assert_string_equal(route("GET", STRATA_LVL_BUCKET, "policyStatus", NULL, NULL),
                        "GetBucketPolicyStatus");
    assert_string_equal(route("GET", STRATA_LVL_BUCKET, "publicAccessBlock", NULL, NULL),
                        "GetPublicAccessBlock");
    assert_string_equal(route("DELETE", STRATA_LVL_BUCKET, "publicAccessBlock", NULL, NULL),
                        "DeletePublicAccessBlock");
    assert_string_equal(route("PUT", STRATA_LVL_BUCKET, "ownershipControls", NULL, NULL),
                        "PutBucketOwnershipControls");
    assert_string_equal(route("GET", STRATA_LVL_BUCKET, "cors", NULL, NULL), "GetBucketCors");
    assert_string_equal(route("PUT", STRATA_LVL_BUCKET, "cors", NULL, NULL), "PutBucketCors");
    assert_string_equal(route("DELETE", STRATA_LVL_BUCKET, "cors", NULL, NULL),
                        "DeleteBucketCors");
    assert_string_equal(route("POST", STRATA_LVL_BUCKET, NULL, NULL, NULL), "PostObject");
    /* A preflight is about the request it announces, whatever its query. */
    assert_string_equal(route("OPTIONS", STRATA_LVL_BUCKET, NULL, NULL, NULL), "PreflightCORS");
    assert_string_equal(route("OPTIONS", STRATA_LVL_OBJECT, "uploads", NULL, NULL),
                        "PreflightCORS");
    assert_string_equal(route("OPTIONS", STRATA_LVL_OBJECT, "X-Amz-Signature=ab&acl", NULL, NULL),
                        "PreflightCORS");
    const char *unimpl[] = {"inventory", "analytics", "website", "logging"};
    for (size_t i = 0; i < sizeof(unimpl) / sizeof(unimpl[0]); i++) {
        assert_string_equal(route("GET", STRATA_LVL_BUCKET, unimpl[i], NULL, NULL), "501");
        assert_string_equal(route("PUT", STRATA_LVL_BUCKET, unimpl[i], NULL, NULL), "501");
    }
    assert_string_equal(route("GET", STRATA_LVL_BUCKET, "replication", NULL, NULL),
                        "GetBucketReplication");
    assert_string_equal(route("DELETE", STRATA_LVL_BUCKET, "replication", NULL, NULL),
                        "DeleteBucketReplication");
    assert_string_equal(route("POST", STRATA_LVL_BUCKET, "replication", NULL, NULL), "501");
    assert_string_equal(route("PUT", STRATA_LVL_BUCKET, NULL, "x-amz-bucket-object-lock-enabled",
                              "true"),
                        "CreateBucket");
    assert_string_equal(route("GET", STRATA_LVL_BUCKET, "object-lock", NULL, NULL),
                        "GetObjectLockConfiguration");
    assert_string_equal(route("PUT", STRATA_LVL_BUCKET, "object-lock", NULL, NULL),
                        "PutObjectLockConfiguration");
    assert_string_equal(route("PATCH", STRATA_LVL_BUCKET, NULL, NULL, NULL), "405");
    assert_string_equal(route("DELETE", STRATA_LVL_SERVICE, NULL, NULL, NULL), "405");
}

static void test_object(void **state)
{
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, NULL, NULL, NULL), "PutObject");
    assert_string_equal(route("GET", STRATA_LVL_OBJECT, "versionId=abc", NULL, NULL),
                        "GetObject");
    assert_string_equal(route("GET", STRATA_LVL_OBJECT, "response-content-type=x%2Fy", NULL,
                              NULL),
                        "GetObject");
    assert_string_equal(route("HEAD", STRATA_LVL_OBJECT, "partNumber=1", NULL, NULL),
                        "HeadObject");
    assert_string_equal(route("DELETE", STRATA_LVL_OBJECT, NULL, NULL, NULL), "DeleteObject");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, NULL, "x-amz-copy-source", "/b/k"),
                        "CopyObject");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, "partNumber=1&uploadId=u",
                              "x-amz-copy-source", "/b/k"),
                        "UploadPartCopy");
    assert_string_equal(route("POST", STRATA_LVL_OBJECT, "uploads", NULL, NULL),
                        "CreateMultipartUpload");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, "partNumber=2&uploadId=u", NULL, NULL),
                        "UploadPart");
    assert_string_equal(route("POST", STRATA_LVL_OBJECT, "uploadId=u", NULL, NULL),
                        "CompleteMultipartUpload");
    assert_string_equal(route("DELETE", STRATA_LVL_OBJECT, "uploadId=u", NULL, NULL),
                        "AbortMultipartUpload");
    assert_string_equal(route("GET", STRATA_LVL_OBJECT, "uploadId=u", NULL, NULL), "ListParts");
    assert_string_equal(route("GET", STRATA_LVL_OBJECT, "tagging", NULL, NULL),
                        "GetObjectTagging");
    assert_string_equal(route("GET", STRATA_LVL_OBJECT, "acl", NULL, NULL), "GetObjectAcl");
    assert_string_equal(route("GET", STRATA_LVL_OBJECT, "attributes", NULL, NULL),
                        "GetObjectAttributes");
    assert_string_equal(route("GET", STRATA_LVL_OBJECT, "retention", NULL, NULL),
                        "GetObjectRetention");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, "retention", NULL, NULL),
                        "PutObjectRetention");
    assert_string_equal(route("GET", STRATA_LVL_OBJECT, "legal-hold", NULL, NULL),
                        "GetObjectLegalHold");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, "legal-hold", NULL, NULL),
                        "PutObjectLegalHold");
    assert_string_equal(route("POST", STRATA_LVL_OBJECT, "restore", NULL, NULL),
                        "RestoreObject");
    assert_string_equal(route("POST", STRATA_LVL_BUCKET, "restore", NULL, NULL), "501");
    assert_string_equal(route("POST", STRATA_LVL_OBJECT, "select&select-type=2", NULL, NULL),
                        "501");
    assert_string_equal(route("POST", STRATA_LVL_OBJECT, NULL, NULL, NULL), "501");
    /* Features behind headers we cannot honour. */
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, NULL, "x-amz-object-lock-mode",
                              "GOVERNANCE"),
                        "PutObject");
    /* PutObject and CreateMultipartUpload take SSE (the handler checks
     * the value); UploadPart, UploadPartCopy and CompleteMultipartUpload
     * the SSE-C customer key, and their handlers answer the other SSE
     * headers with AWS's 400 InvalidArgument; the copy-source key goes
     * with copies only; elsewhere SSE-KMS key ids are 501. */
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, NULL, "X-Amz-Server-Side-Encryption",
                              "AES256"),
                        "PutObject");
    assert_string_equal(route("POST", STRATA_LVL_OBJECT, "uploads",
                              "X-Amz-Server-Side-Encryption", "AES256"),
                        "CreateMultipartUpload");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, "uploadId=x&partNumber=1",
                              "X-Amz-Server-Side-Encryption", "AES256"),
                        "UploadPart");
    assert_string_equal(route("POST", STRATA_LVL_OBJECT, "uploadId=x",
                              "x-amz-server-side-encryption-customer-key", "k"),
                        "CompleteMultipartUpload");
    assert_string_equal(
        route("POST", STRATA_LVL_OBJECT, "uploadId=x", "x-amz-server-side-encryption", "aws:kms"),
        "CompleteMultipartUpload");
    assert_string_equal(route("GET", STRATA_LVL_OBJECT, "uploadId=x",
                              "x-amz-server-side-encryption-customer-key", "k"),
                        "ListParts");
    assert_string_equal(
        route("PUT", STRATA_LVL_OBJECT, "tagging", "x-amz-server-side-encryption", "aws:kms"),
        "501");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, NULL,
                              "x-amz-server-side-encryption-customer-algorithm", "AES256"),
                        "PutObject");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, "uploadId=x&partNumber=1",
                              "x-amz-server-side-encryption-customer-key", "k"),
                        "UploadPart");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, NULL,
                              "x-amz-copy-source-server-side-encryption-customer-key", "k"),
                        "501");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, NULL,
                              "x-amz-server-side-encryption-aws-kms-key-id", "k"),
                        "PutObject");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, "uploadId=x&partNumber=1",
                              "x-amz-server-side-encryption-aws-kms-key-id", "k"),
                        "UploadPart");
    assert_string_equal(route("PUT", STRATA_LVL_BUCKET, "tagging",
                              "x-amz-server-side-encryption-aws-kms-key-id", "k"),
                        "501");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, NULL, "x-amz-tagging", "a=b"),
                        "PutObject");
}

/* ACL headers reach exactly the operations that set an ACL (which
 * check their values); anywhere else they would be dropped, so 501. */
static void test_access_control_hdrs(void **state)
{
    (void)state;
    static const char *const hdrs[] = {"x-amz-grant-read", "x-amz-grant-write",
                                       "x-amz-grant-read-acp", "X-Amz-Grant-Write-Acp",
                                       "x-amz-grant-full-control", "x-amz-acl"};
    for (size_t i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
        const char *v = "id=someone";
        assert_string_equal(route("PUT", STRATA_LVL_BUCKET, NULL, hdrs[i], v), "CreateBucket");
        assert_string_equal(route("PUT", STRATA_LVL_OBJECT, NULL, hdrs[i], v), "PutObject");
        assert_string_equal(route("POST", STRATA_LVL_OBJECT, "uploads", hdrs[i], v),
                            "CreateMultipartUpload");
        assert_string_equal(route("PUT", STRATA_LVL_BUCKET, "acl", hdrs[i], v), "PutBucketAcl");
        assert_string_equal(route("PUT", STRATA_LVL_OBJECT, "acl", hdrs[i], v), "PutObjectAcl");
        assert_string_equal(route("PUT", STRATA_LVL_OBJECT, "uploadId", hdrs[i], v), "501");
        assert_string_equal(route("PUT", STRATA_LVL_OBJECT, "tagging", hdrs[i], v), "501");
        assert_string_equal(route("PUT", STRATA_LVL_BUCKET, "versioning", hdrs[i], v), "501");
    }
    static const char *const own[] = {"ObjectWriter", "BucketOwnerPreferred",
                                      "BucketOwnerEnforced"};
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
        assert_string_equal(route("PUT", STRATA_LVL_BUCKET, NULL, "x-amz-object-ownership", own[i]),
                            "CreateBucket");
        assert_string_equal(route("PUT", STRATA_LVL_OBJECT, NULL, "x-amz-object-ownership", own[i]),
                            "501");
    }
}

/* Newer operations and conditions Strata does not evaluate: 501, never
 * the plain route (DeleteBucket, ListObjects, PutObject, DeleteObject). */
static void test_not_served(void **state)
{
    static const char *const bsub[] = {"metadataTable", "metadataConfiguration",
                                       "metadataInventoryTable", "metadataJournalTable", "abac"};
    static const char *const methods[] = {"GET", "PUT", "POST", "DELETE"};
    for (size_t i = 0; i < sizeof(bsub) / sizeof(bsub[0]); i++)
        for (size_t j = 0; j < sizeof(methods) / sizeof(methods[0]); j++)
            assert_string_equal(route(methods[j], STRATA_LVL_BUCKET, bsub[i], NULL, NULL), "501");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, "renameObject", "x-amz-rename-source",
                              "/b/k"),
                        "501");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, "encryption", NULL, NULL), "501");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, NULL, "x-amz-write-offset-bytes", "0"),
                        "501");
    assert_string_equal(route("DELETE", STRATA_LVL_OBJECT, NULL, "If-Match", "*"), "501");
    assert_string_equal(route("DELETE", STRATA_LVL_OBJECT, NULL, "x-amz-if-match-size", "1"),
                        "501");
    assert_string_equal(route("DELETE", STRATA_LVL_OBJECT, "uploadId=u",
                              "x-amz-if-match-initiated-time", "x"),
                        "501");
    assert_string_equal(route("DELETE", STRATA_LVL_BUCKET, NULL, "If-Match", "*"),
                        "DeleteBucket");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, NULL, "If-Match", "\"e\""), "PutObject");
    assert_string_equal(route("PUT", STRATA_LVL_OBJECT, NULL, "If-None-Match", "*"), "PutObject");
    assert_string_equal(route("GET", STRATA_LVL_OBJECT, NULL, "If-Match", "\"e\""), "GetObject");
    assert_string_equal(route("GET", STRATA_LVL_OBJECT, "x-id=GetObject", NULL, NULL),
                        "GetObject");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_service_and_bucket),
        cmocka_unit_test(test_presigned_query),
        cmocka_unit_test(test_object),
        cmocka_unit_test(test_access_control_hdrs),
        cmocka_unit_test(test_not_served),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
