/*
 * test_sigv2.c - SigV2 (legacy clients): the examples of AWS's "Signing and
 * Authenticating REST Requests" page (path-style: the bucket is in the path)
 * and vectors from botocore's HmacV1Auth/HmacV1QueryAuth, plus expiry, skew
 * and wrong-secret failures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "auth.h"
#include "s3_error.h"

#define AKID "AKIAIOSFODNN7EXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

static struct strata_creds *g_creds;

static enum s3_err verify(const char *method, const char *path, const char *query,
                          const struct strata_auth_hdr *h, size_t nh, time_t now,
                          struct strata_auth_result *res)
{
    struct strata_auth_req r = {method, path, query, h, nh, now, NULL, 0, "eu-west-1"};
    return strata_s3_err_from_auth(strata_auth_verify(g_creds, &r, res));
}

/* A virtual-host style request: host_bucket is the bucket Host named. */
static enum s3_err verify_vhost(const char *host_bucket, const char *path,
                                const struct strata_auth_hdr *h, size_t nh, time_t now,
                                struct strata_auth_result *res)
{
    struct strata_auth_req r = {"GET", path, NULL, h, nh, now, host_bucket, strlen(host_bucket),
                                "eu-west-1"}; /* SigV2 has no region */
    return strata_s3_err_from_auth(strata_auth_verify(g_creds, &r, res));
}

/* AWS's example is virtual-host style: "GET /photos/puppy.jpg" to
 * johnsmith.s3.amazonaws.com signs "/johnsmith/photos/puppy.jpg".  The
 * bucket from Host is part of what is signed, so the same request replayed
 * with another bucket in Host (or path style onto another bucket) fails. */
static void test_host_bucket_bound(void **state)
{
    (void)state;
    struct strata_auth_hdr h[] = {
        {"Host", "johnsmith.s3.amazonaws.com"},
        {"Date", "Tue, 27 Mar 2007 19:36:42 +0000"},
        {"Authorization", "AWS " AKID ":bWq2s1WEIj+Ydj0vQ697zp+IXMU="},
    };
    struct strata_auth_result res;
    time_t now = 1175024202;
    assert_int_equal(verify_vhost("johnsmith", "/photos/puppy.jpg", h, 3, now, &res), S3E_NONE);
    assert_int_equal(verify_vhost("other", "/photos/puppy.jpg", h, 3, now, &res),
                     S3E_SignatureDoesNotMatch);
    /* the path-style signature of /johnsmith/photos/puppy.jpg, replayed
     * with Host naming bucket "other" (key "johnsmith/photos/puppy.jpg") */
    assert_int_equal(verify("GET", "/johnsmith/photos/puppy.jpg", NULL, h, 3, now, &res),
                     S3E_NONE);
    assert_int_equal(verify_vhost("other", "/johnsmith/photos/puppy.jpg", h, 3, now, &res),
                     S3E_SignatureDoesNotMatch);
    /* a bare virtual-host bucket is "/bucket/", never the slash-less form */
    assert_int_equal(verify_vhost("johnsmith", "/", h, 3, now, &res), S3E_SignatureDoesNotMatch);
}

static void test_aws_example_get(void **state)
{
    (void)state;
    struct strata_auth_hdr h[] = {
        {"Host", "127.0.0.1"},
        {"Date", "Tue, 27 Mar 2007 19:36:42 +0000"},
        {"Authorization", "AWS " AKID ":bWq2s1WEIj+Ydj0vQ697zp+IXMU="},
    };
    struct strata_auth_result res;
    time_t now = 1175024202;
    assert_int_equal(verify("GET", "/johnsmith/photos/puppy.jpg", NULL, h, 3, now, &res),
                     S3E_NONE);
    assert_false(res.anonymous);
    assert_string_equal(res.cred->access_key, AKID);
    assert_int_equal(res.payload_mode, STRATA_PAYLOAD_UNSIGNED);
    /* tampering, skew, another secret */
    assert_int_equal(verify("GET", "/johnsmith/photos/puppy.png", NULL, h, 3, now, &res),
                     S3E_SignatureDoesNotMatch);
    assert_int_equal(verify("GET", "/johnsmith/photos/puppy.jpg", NULL, h, 3, now + 901, &res),
                     S3E_RequestTimeTooSkewed);
    h[2].value = "AWS " AKID ":bWq2s1WEIj+Ydj0vQ697zp+IXMV=";
    assert_int_equal(verify("GET", "/johnsmith/photos/puppy.jpg", NULL, h, 3, now, &res),
                     S3E_SignatureDoesNotMatch);
    h[2].value = "AWS NOSUCHKEY:bWq2s1WEIj+Ydj0vQ697zp+IXMU=";
    assert_int_equal(verify("GET", "/johnsmith/photos/puppy.jpg", NULL, h, 3, now, &res),
                     S3E_InvalidAccessKeyId);
    /* botocore signs bucket requests as "/bucket/" and sends "/bucket"
     * (reference: Python hmac over "GET\n\n\n<date>\n/johnsmith/?acl") */
    h[2].value = "AWS " AKID ":3dBygG1T3GB6MRYKugIZofqZcO4=";
    assert_int_equal(verify("GET", "/johnsmith", "acl", h, 3, now, &res), S3E_NONE);
    assert_int_equal(verify("GET", "/johnsmith/", "acl", h, 3, now, &res), S3E_NONE);
    assert_int_equal(verify("GET", "/johnsmith/x", "acl", h, 3, now, &res),
                     S3E_SignatureDoesNotMatch);
    assert_int_equal(verify("GET", "/johnsmith", NULL, h, 3, now, &res),
                     S3E_SignatureDoesNotMatch);
    h[2].value = "AWS " AKID;
    assert_int_equal(verify("GET", "/johnsmith/photos/puppy.jpg", NULL, h, 3, now, &res),
                     S3E_InvalidArgument);
}

static void test_aws_example_put(void **state)
{
    (void)state;
    struct strata_auth_hdr h[] = {
        {"Content-Type", "image/jpeg"},
        {"Content-Length", "94328"},
        {"Host", "127.0.0.1"},
        {"Date", "Tue, 27 Mar 2007 21:15:45 +0000"},
        {"Authorization", "AWS " AKID ":MyyxeRY7whkBe+bq8fHCL/2kKUg="},
    };
    struct strata_auth_result res;
    assert_int_equal(verify("PUT", "/johnsmith/photos/puppy.jpg", NULL, h, 5, 1175030145, &res),
                     S3E_NONE);
    h[0].value = "image/png"; /* Content-Type is signed */
    assert_int_equal(verify("PUT", "/johnsmith/photos/puppy.jpg", NULL, h, 5, 1175030145, &res),
                     S3E_SignatureDoesNotMatch);
}

static void test_aws_example_list_and_xamzdate(void **state)
{
    (void)state;
    struct strata_auth_hdr h[] = {
        {"Host", "127.0.0.1"},
        {"Date", "Tue, 27 Mar 2007 19:42:41 +0000"},
        {"Authorization", "AWS " AKID ":htDYFYduRNen8P9ZfE/s9SuKy0U="},
    };
    struct strata_auth_result res;
    time_t now = 1175024561; /* 19:42:41 */
    /* prefix/max-keys/marker are not sub-resources: not signed */
    assert_int_equal(verify("GET", "/johnsmith/", "prefix=photos&max-keys=50&marker=puppy", h, 3,
                            now, &res),
                     S3E_NONE);
    /* x-amz-date replaces Date, whose line stays empty */
    struct strata_auth_hdr d[] = {
        {"User-Agent", "dotnet"},
        {"Host", "127.0.0.1"},
        {"Date", "Tue, 27 Mar 2007 21:20:27 +0000"},
        {"x-amz-date", "Tue, 27 Mar 2007 21:20:26 +0000"},
        {"Authorization", "AWS " AKID ":lx3byBScXR6KzyMaifNkardMwNk="},
    };
    assert_int_equal(verify("DELETE", "/johnsmith/photos/puppy.jpg", NULL, d, 5, 1175030426,
                            &res),
                     S3E_NONE);
    /* s3cmd's form: only x-amz-date, signed as an x-amz-* header under an
     * empty Date line (reference: Python hmac over that string to sign) */
    struct strata_auth_hdr s3cmd[] = {
        {"Host", "127.0.0.1"},
        {"x-amz-date", "Tue, 27 Mar 2007 21:20:26 +0000"},
        {"Authorization", "AWS " AKID ":R4dJ53KECjStyBO5iTBJZ4XVOaI="},
    };
    assert_int_equal(verify("DELETE", "/johnsmith/photos/puppy.jpg", NULL, s3cmd, 3, 1175030426,
                            &res),
                     S3E_NONE);
    assert_int_equal(verify("DELETE", "/johnsmith/photos/puppy.jpg", NULL, s3cmd, 3,
                            1175030426 + 3600, &res),
                     S3E_RequestTimeTooSkewed);
}

static void test_aws_example_query(void **state)
{
    (void)state;
    struct strata_auth_hdr h[] = {{"Host", "127.0.0.1"}};
    struct strata_auth_result res;
    const char *q = "AWSAccessKeyId=" AKID "&Expires=1175139620"
                    "&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D";
    assert_int_equal(verify("GET", "/johnsmith/photos/puppy.jpg", q, h, 1, 1175139620, &res),
                     S3E_NONE);
    assert_int_equal(res.payload_mode, STRATA_PAYLOAD_UNSIGNED);
    assert_int_equal(verify("GET", "/johnsmith/photos/puppy.jpg", q, h, 1, 1175139621, &res),
                     S3E_AccessDenied);
    assert_string_equal(res.err_msg, "Request has expired");
    /* a later Expires than was signed */
    q = "AWSAccessKeyId=" AKID "&Expires=1175139999&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D";
    assert_int_equal(verify("GET", "/johnsmith/photos/puppy.jpg", q, h, 1, 1175139620, &res),
                     S3E_SignatureDoesNotMatch);
    /* Expires at most 7 days ahead, as SigV4's X-Amz-Expires */
    q = "AWSAccessKeyId=" AKID "&Expires=1175139620&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D";
    assert_int_equal(verify("GET", "/johnsmith/photos/puppy.jpg", q, h, 1, 1175139620 - 604800,
                            &res),
                     S3E_NONE);
    assert_int_equal(verify("GET", "/johnsmith/photos/puppy.jpg", q, h, 1,
                            1175139620 - 604801, &res),
                     S3E_AccessDenied);
    assert_non_null(strstr(res.err_msg, "week"));
    q = "AWSAccessKeyId=" AKID "&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D";
    assert_int_equal(verify("GET", "/johnsmith/photos/puppy.jpg", q, h, 1, 1175139620, &res),
                     S3E_AccessDenied);
}

/* botocore 1.29 HmacV1Auth: sub-resources sorted with decoded values, a
 * non-sub-resource parameter left out, x-amz-meta-* sorted and lower-cased. */
static void test_botocore_vectors(void **state)
{
    (void)state;
    struct strata_auth_hdr h[] = {
        {"Content-MD5", "4gJE4saaMU4BqNR0kLY+lw=="},
        {"Content-Type", "image/jpeg"},
        {"X-Amz-Meta-B", "two"},
        {"x-amz-meta-a", "one"},
        {"Date", "Tue, 27 Mar 2007 21:15:45 GMT"},
        {"Authorization", "AWS " AKID ":XXvIip1KLuxSTsjFzQ6jG1iSoLk="},
    };
    struct strata_auth_result res;
    assert_int_equal(verify("PUT", "/bucket/photos/puppy%20dog.jpg",
                            "uploadId=abc%2Fdef&partNumber=2&foo=bar", h, 6, 1175030145, &res),
                     S3E_NONE);
    assert_int_equal(verify("PUT", "/bucket/photos/puppy%20dog.jpg",
                            "uploadId=abc%2Fdef&partNumber=3&foo=bar", h, 6, 1175030145, &res),
                     S3E_SignatureDoesNotMatch);
    h[3].value = "uno"; /* x-amz-* headers are signed */
    assert_int_equal(verify("PUT", "/bucket/photos/puppy%20dog.jpg",
                            "uploadId=abc%2Fdef&partNumber=2&foo=bar", h, 6, 1175030145, &res),
                     S3E_SignatureDoesNotMatch);

    struct strata_auth_hdr q[] = {{"Host", "127.0.0.1:9000"}};
    assert_int_equal(verify("GET", "/bucket/key.txt",
                            "versionId=v1&AWSAccessKeyId=" AKID
                            "&Signature=RW7TmbTz1dimqSLlLTo65O9urHw%3D&Expires=1175032600",
                            q, 1, 1175029000, &res),
                     S3E_NONE);
    assert_int_equal(verify("GET", "/bucket/key.txt",
                            "versionId=v2&AWSAccessKeyId=" AKID
                            "&Signature=RW7TmbTz1dimqSLlLTo65O9urHw%3D&Expires=1175032600",
                            q, 1, 1175029000, &res),
                     S3E_SignatureDoesNotMatch);
}

static int setup(void **state)
{
    (void)state;
    return strata_creds_load(AKID, SECRET, NULL, &g_creds, NULL, 0);
}

static int teardown(void **state)
{
    (void)state;
    strata_creds_destroy(g_creds);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aws_example_get),
        cmocka_unit_test(test_aws_example_put),
        cmocka_unit_test(test_aws_example_list_and_xamzdate),
        cmocka_unit_test(test_aws_example_query),
        cmocka_unit_test(test_botocore_vectors),
        cmocka_unit_test(test_host_bucket_bound),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
