/*
 * test_route_authz.c - the route table (server/s3/router.c) as the
 * authorisation sees it: every route declares how it is authorised and
 * its s3: action, no two routes match the same request, and the actions
 * are the ones AWS documents for each operation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "srv.h"

/* A failed condition names its route. */
#define ROUTE_CHECK(rt, cond)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            print_error("route %s %s: %s\n", (rt)->method, (rt)->op, #cond);                       \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

static bool same_sub(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

static const struct strata_route *by_op(const char *op, int level)
{
    size_t n = 0;
    const struct strata_route *t = strata_route_table(&n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].op, op) == 0 && t[i].level == level)
            return &t[i];
    return NULL;
}

/* No route without its authorisation: a kind, and an s3: action unless it
 * needs no credentials at all.  Each kind only where authz.c can apply it. */
static void test_every_route_has_action(void **state)
{
    (void)state;
    size_t n = 0;
    const struct strata_route *t = strata_route_table(&n);
    assert_true(n >= 60);
    for (size_t i = 0; i < n; i++) {
        const struct strata_route *rt = &t[i];
        const struct strata_route_authz *az = &rt->authz;
        ROUTE_CHECK(rt, rt->op && rt->run);
        ROUTE_CHECK(rt, az->kind != STRATA_AZ_UNSET);
        if (az->kind == STRATA_AZ_PUBLIC) {
            /* Only the CORS preflight is answered without credentials. */
            ROUTE_CHECK(rt, strcmp(rt->method, "OPTIONS") == 0);
            ROUTE_CHECK(rt, !az->action && !az->version_action);
            continue;
        }
        ROUTE_CHECK(rt, az->action != NULL);
        ROUTE_CHECK(rt, strncmp(az->action, "s3:", 3) == 0 && strlen(az->action) > 3);
        if (az->version_action) {
            /* A version names an object (the request's, or the keys a
             * handler checks): its own action, *Version*. */
            ROUTE_CHECK(rt, rt->level == STRATA_LVL_OBJECT || az->kind == STRATA_AZ_HANDLER);
            ROUTE_CHECK(rt, strncmp(az->version_action, "s3:", 3) == 0 &&
                                strstr(az->version_action, "Version"));
        }
        /* authz.c runs against a bucket only: a route without one (the
         * service, or NO_BUCKET) is any signed caller's, and only those. */
        bool no_bucket = rt->level == STRATA_LVL_SERVICE || (rt->flags & STRATA_RT_NO_BUCKET);
        ROUTE_CHECK(rt, no_bucket == (az->kind == STRATA_AZ_SIGNED));
        /* The object ACL check left to the handler needs an object. */
        ROUTE_CHECK(rt, az->kind != STRATA_AZ_POLICY_OBJECT || rt->level == STRATA_LVL_OBJECT);
        ROUTE_CHECK(rt, !(rt->flags & STRATA_RT_BODY_STREAM) || (rt->begin && rt->body_cb));
    }
}

/* A request as the router sees it, with a query of the route's
 * subresource and x-amz-copy-source for the copies. */
struct probe {
    struct strata_req r;
    char query[64];
};

static const struct strata_route *route_of(struct probe *p, const struct strata_route *rt)
{
    memset(p, 0, sizeof(*p));
    p->r.method = rt->method;
    p->r.level = rt->level;
    if (rt->sub) {
        snprintf(p->query, sizeof(p->query), "%s%s", rt->sub,
                 strcmp(rt->sub, "uploadId") == 0 ? "=u1&partNumber=1" : "");
        p->r.nq = strata_s3_query_parse(p->query, p->r.q, STRATA_SRV_QPARAMS_MAX);
    }
    if (rt->flags & STRATA_RT_COPY_SOURCE) {
        p->r.hdrs[0].name = "x-amz-copy-source";
        p->r.hdrs[0].value = "/src/key";
        p->r.nhdrs = 1;
    }
    bool notimpl = false;
    const struct strata_route *hit = strata_route_find(&p->r, &notimpl);
    assert_false(notimpl);
    return hit;
}

/* What a route matches on is its method, level, subresource and whether
 * x-amz-copy-source is sent: no two rows may share all four, and each
 * row's own request routes to that row and no other. */
static void test_no_two_routes_match(void **state)
{
    (void)state;
    size_t n = 0;
    const struct strata_route *t = strata_route_table(&n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            bool clash =
                strcmp(t[i].method, t[j].method) == 0 && t[i].level == t[j].level &&
                same_sub(t[i].sub, t[j].sub) &&
                (t[i].flags & STRATA_RT_COPY_SOURCE) == (t[j].flags & STRATA_RT_COPY_SOURCE);
            if (clash)
                print_message("%s and %s match the same requests\n", t[i].op, t[j].op);
            assert_false(clash);
        }
    struct probe *p = malloc(sizeof(*p));
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) {
        const struct strata_route *hit = route_of(p, &t[i]);
        if (hit != &t[i])
            print_message("%s %s routes to %s\n", t[i].method, t[i].op, hit ? hit->op : "none");
        assert_ptr_equal(hit, &t[i]);
    }
    free(p);
}

/* A sample of the actions against AWS's documented ones (the "Permissions"
 * of each operation in the S3 API reference), above all where the action
 * is not the operation's name. */
static void test_aws_action_names(void **state)
{
    (void)state;
    static const struct {
        const char *op;
        int level;
        const char *action;
        const char *version_action;
    } aws[] = {
        {"ListBuckets", STRATA_LVL_SERVICE, "s3:ListAllMyBuckets", NULL},
        {"CreateBucket", STRATA_LVL_BUCKET, "s3:CreateBucket", NULL},
        {"HeadBucket", STRATA_LVL_BUCKET, "s3:ListBucket", NULL},
        {"ListObjects", STRATA_LVL_BUCKET, "s3:ListBucket", NULL},
        {"ListObjectVersions", STRATA_LVL_BUCKET, "s3:ListBucketVersions", NULL},
        {"ListMultipartUploads", STRATA_LVL_BUCKET, "s3:ListBucketMultipartUploads", NULL},
        {"DeleteBucket", STRATA_LVL_BUCKET, "s3:DeleteBucket", NULL},
        {"GetBucketCors", STRATA_LVL_BUCKET, "s3:GetBucketCORS", NULL},
        {"DeleteBucketCors", STRATA_LVL_BUCKET, "s3:PutBucketCORS", NULL},
        {"GetBucketLifecycleConfiguration", STRATA_LVL_BUCKET, "s3:GetLifecycleConfiguration",
         NULL},
        {"DeleteBucketLifecycle", STRATA_LVL_BUCKET, "s3:PutLifecycleConfiguration", NULL},
        {"GetBucketEncryption", STRATA_LVL_BUCKET, "s3:GetEncryptionConfiguration", NULL},
        {"PutBucketEncryption", STRATA_LVL_BUCKET, "s3:PutEncryptionConfiguration", NULL},
        {"DeleteBucketEncryption", STRATA_LVL_BUCKET, "s3:PutEncryptionConfiguration", NULL},
        {"GetObjectLockConfiguration", STRATA_LVL_BUCKET, "s3:GetBucketObjectLockConfiguration",
         NULL},
        {"GetBucketNotificationConfiguration", STRATA_LVL_BUCKET, "s3:GetBucketNotification", NULL},
        {"GetBucketReplication", STRATA_LVL_BUCKET, "s3:GetReplicationConfiguration", NULL},
        {"DeleteBucketReplication", STRATA_LVL_BUCKET, "s3:PutReplicationConfiguration", NULL},
        {"GetPublicAccessBlock", STRATA_LVL_BUCKET, "s3:GetBucketPublicAccessBlock", NULL},
        {"DeleteBucketTagging", STRATA_LVL_BUCKET, "s3:PutBucketTagging", NULL},
        {"GetBucketPolicyStatus", STRATA_LVL_BUCKET, "s3:GetBucketPolicyStatus", NULL},
        {"DeleteObjects", STRATA_LVL_BUCKET, "s3:DeleteObject", "s3:DeleteObjectVersion"},
        {"PostObject", STRATA_LVL_BUCKET, "s3:PutObject", NULL},
        {"GetObject", STRATA_LVL_OBJECT, "s3:GetObject", "s3:GetObjectVersion"},
        {"HeadObject", STRATA_LVL_OBJECT, "s3:GetObject", "s3:GetObjectVersion"},
        {"PutObject", STRATA_LVL_OBJECT, "s3:PutObject", NULL},
        {"CopyObject", STRATA_LVL_OBJECT, "s3:PutObject", NULL},
        {"UploadPartCopy", STRATA_LVL_OBJECT, "s3:PutObject", NULL},
        {"CompleteMultipartUpload", STRATA_LVL_OBJECT, "s3:PutObject", NULL},
        {"ListParts", STRATA_LVL_OBJECT, "s3:ListMultipartUploadParts", NULL},
        {"AbortMultipartUpload", STRATA_LVL_OBJECT, "s3:AbortMultipartUpload", NULL},
        {"DeleteObject", STRATA_LVL_OBJECT, "s3:DeleteObject", "s3:DeleteObjectVersion"},
        {"GetObjectAcl", STRATA_LVL_OBJECT, "s3:GetObjectAcl", "s3:GetObjectVersionAcl"},
        {"GetObjectAttributes", STRATA_LVL_OBJECT, "s3:GetObjectAttributes",
         "s3:GetObjectVersionAttributes"},
        {"DeleteObjectTagging", STRATA_LVL_OBJECT, "s3:DeleteObjectTagging",
         "s3:DeleteObjectVersionTagging"},
        {"PutObjectLegalHold", STRATA_LVL_OBJECT, "s3:PutObjectLegalHold", NULL},
        {"RestoreObject", STRATA_LVL_OBJECT, "s3:RestoreObject", NULL},
    };
    for (size_t i = 0; i < sizeof(aws) / sizeof(aws[0]); i++) {
        const struct strata_route *rt = by_op(aws[i].op, aws[i].level);
        if (!rt || !rt->authz.action || strcmp(rt->authz.action, aws[i].action) != 0)
            print_error("%s: %s, AWS: %s\n", aws[i].op,
                        rt && rt->authz.action ? rt->authz.action : "none", aws[i].action);
        assert_non_null(rt);
        assert_non_null(rt->authz.action);
        assert_string_equal(rt->authz.action, aws[i].action);
        if (aws[i].version_action) {
            assert_non_null(rt->authz.version_action);
            assert_string_equal(rt->authz.version_action, aws[i].version_action);
        } else {
            assert_null(rt->authz.version_action);
        }
    }
}

/* How each family of routes is decided: the policy's own operations,
 * the reads whose object ACL the handler checks, the per-key handlers. */
static void test_kinds(void **state)
{
    (void)state;
    static const char *const admin[] = {"GetBucketPolicy", "PutBucketPolicy", "DeleteBucketPolicy",
                                        "GetBucketPolicyStatus"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(by_op(admin[i], STRATA_LVL_BUCKET)->authz.kind, STRATA_AZ_POLICY_ADMIN);
    static const char *const deferred[] = {"GetObject", "HeadObject", "GetObjectAcl",
                                           "PutObjectAcl"};
    size_t n = 0, ndeferred = 0;
    const struct strata_route *t = strata_route_table(&n);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(by_op(deferred[i], STRATA_LVL_OBJECT)->authz.kind,
                         STRATA_AZ_POLICY_OBJECT);
    for (size_t i = 0; i < n; i++)
        ndeferred += t[i].authz.kind == STRATA_AZ_POLICY_OBJECT;
    assert_int_equal(ndeferred, 4); /* only handlers that call strata_authz_object */
    assert_int_equal(by_op("DeleteObjects", STRATA_LVL_BUCKET)->authz.kind, STRATA_AZ_HANDLER);
    assert_int_equal(by_op("PostObject", STRATA_LVL_BUCKET)->authz.kind, STRATA_AZ_HANDLER);
    assert_int_equal(by_op("PreflightCORS", STRATA_LVL_OBJECT)->authz.kind, STRATA_AZ_PUBLIC);
    /* Bucket configuration the owner can grant others by policy (AWS),
     * default encryption included. */
    static const char *const config[] = {"GetBucketEncryption", "PutBucketEncryption",
                                         "DeleteBucketEncryption", "GetBucketTagging",
                                         "PutBucketTagging", "DeleteBucketTagging"};
    for (size_t i = 0; i < sizeof(config) / sizeof(config[0]); i++)
        assert_int_equal(by_op(config[i], STRATA_LVL_BUCKET)->authz.kind, STRATA_AZ_POLICY);
    /* No bucket to check: any signed caller (users own their buckets;
     * there are no per-user policies). */
    assert_int_equal(by_op("ListBuckets", STRATA_LVL_SERVICE)->authz.kind, STRATA_AZ_SIGNED);
    assert_int_equal(by_op("CreateBucket", STRATA_LVL_BUCKET)->authz.kind, STRATA_AZ_SIGNED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_route_has_action),
        cmocka_unit_test(test_no_two_routes_match),
        cmocka_unit_test(test_aws_action_names),
        cmocka_unit_test(test_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
