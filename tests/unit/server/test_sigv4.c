/*
 * test_sigv4.c - strata_auth_verify for SigV4 (Authorization header and
 * presigned query) against the examples AWS publishes for S3
 * ("Signature Calculations for the Authorization Header: Transferring
 * Payload in a Single Chunk", "Authenticating Requests: Using Query
 * Parameters", "...in Multiple Chunks", "...Including Trailing Headers"),
 * plus the failure paths.  A request carrying AWS's published signature only
 * verifies when Strata computes exactly that signature, so each example
 * checks the whole canonicalisation.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "auth.h"
#include "s3_error.h"

#define AKID "AKIAIOSFODNN7EXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define T20130524 ((time_t)1369353600) /* 2013-05-24T00:00:00Z */
#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define CRED_SCOPE "Credential=" AKID "/20130524/us-east-1/s3/aws4_request"

static struct strata_creds *load(const char *secret)
{
    struct strata_creds *c = NULL;
    char err[128];
    assert_int_equal(strata_creds_load(AKID, secret, NULL, &c, err, sizeof(err)), 0);
    return c;
}

static enum s3_err verify(const char *secret, const char *method, const char *path,
                          const char *query, const struct strata_auth_hdr *h, size_t nh,
                          time_t now, struct strata_auth_result *res)
{
    /* The table outlives the call: res->cred points into it. */
    static struct strata_creds *c;
    strata_creds_destroy(c);
    c = load(secret);
    struct strata_auth_req r = {.method = method, .raw_path = path, .raw_query = query,
                                .hdrs = h, .nhdrs = nh, .now = now};
    return strata_s3_err_from_auth(strata_auth_verify(c, &r, res));
}

/* ---- AWS example: GET Object with Range ---------------------------------- */

#define GET_SIG "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
static struct strata_auth_hdr get_hdrs[] = {
    {"Host", "examplebucket.s3.amazonaws.com"},
    {"Range", "bytes=0-9"},
    {"x-amz-content-sha256", EMPTY_SHA},
    {"x-amz-date", "20130524T000000Z"},
    {"Authorization", "AWS4-HMAC-SHA256 " CRED_SCOPE
                      ",SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=" GET_SIG},
};

static void test_aws_example_get_object(void **state)
{
    (void)state;
    struct strata_auth_result res;
    assert_int_equal(verify(SECRET, "GET", "/test.txt", NULL, get_hdrs, 5, T20130524, &res),
                     S3E_NONE);
    assert_false(res.anonymous);
    assert_non_null(res.cred);
    assert_string_equal(res.cred->access_key, AKID);
    assert_int_equal(res.payload_mode, STRATA_PAYLOAD_SIGNED);
    assert_int_equal(res.payload_sha256[0], 0xe3);
    assert_int_equal(res.payload_sha256[31], 0x55);
    assert_string_equal(res.seed_signature, GET_SIG);
    assert_string_equal(res.scope, "20130524/us-east-1/s3/aws4_request");
    assert_string_equal(res.amz_date, "20130524T000000Z");
    assert_true(res.decoded_length == UINT64_MAX);
}

static void test_wrong_secret(void **state)
{
    (void)state;
    struct strata_auth_result res;
    assert_int_equal(verify("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ", "GET", "/test.txt", NULL,
                            get_hdrs, 5, T20130524, &res),
                     S3E_SignatureDoesNotMatch);
    assert_null(res.cred);
}

static void test_unknown_key(void **state)
{
    (void)state;
    struct strata_creds *c = NULL;
    assert_int_equal(strata_creds_load("OTHERKEY", SECRET, NULL, &c, NULL, 0), 0);
    struct strata_auth_req r = {"GET",     "/test.txt", NULL,       get_hdrs, 5,
                                T20130524, NULL,        0,          "us-east-1"};
    struct strata_auth_result res;
    assert_int_equal(strata_s3_err_from_auth(strata_auth_verify(c, &r, &res)),
                     S3E_InvalidAccessKeyId);
    strata_creds_destroy(c);
}

static void test_tampered(void **state)
{
    (void)state;
    struct strata_auth_hdr h[5];
    struct strata_auth_result res;
    memcpy(h, get_hdrs, sizeof(h));
    h[1].value = "bytes=0-8"; /* a signed header changed in flight */
    assert_int_equal(verify(SECRET, "GET", "/test.txt", NULL, h, 5, T20130524, &res),
                     S3E_SignatureDoesNotMatch);
    /* path, method and query are signed too */
    assert_int_equal(verify(SECRET, "GET", "/test.txT", NULL, get_hdrs, 5, T20130524, &res),
                     S3E_SignatureDoesNotMatch);
    assert_int_equal(verify(SECRET, "HEAD", "/test.txt", NULL, get_hdrs, 5, T20130524, &res),
                     S3E_SignatureDoesNotMatch);
    assert_int_equal(verify(SECRET, "GET", "/test.txt", "acl", get_hdrs, 5, T20130524, &res),
                     S3E_SignatureDoesNotMatch);
    /* one flipped signature digit */
    memcpy(h, get_hdrs, sizeof(h));
    char authz[512];
    snprintf(authz, sizeof(authz), "%s", get_hdrs[4].value);
    authz[strlen(authz) - 1] = authz[strlen(authz) - 1] == '1' ? '2' : '1';
    h[4].value = authz;
    assert_int_equal(verify(SECRET, "GET", "/test.txt", NULL, h, 5, T20130524, &res),
                     S3E_SignatureDoesNotMatch);
}

static void test_unsigned_amz_header(void **state)
{
    (void)state;
    struct strata_auth_hdr h[6];
    struct strata_auth_result res;
    memcpy(h, get_hdrs, sizeof(get_hdrs));
    h[5] = (struct strata_auth_hdr){"X-Amz-Copy-Source", "/other/key"};
    assert_int_equal(verify(SECRET, "GET", "/test.txt", NULL, h, 6, T20130524, &res),
                     S3E_AccessDenied);
    assert_non_null(res.err_msg);
    /* a header that is neither signed nor x-amz-* is fine */
    h[5] = (struct strata_auth_hdr){"User-Agent", "curl"};
    assert_int_equal(verify(SECRET, "GET", "/test.txt", NULL, h, 6, T20130524, &res), S3E_NONE);
}

static void test_skew(void **state)
{
    (void)state;
    struct strata_auth_result res;
    assert_int_equal(verify(SECRET, "GET", "/test.txt", NULL, get_hdrs, 5, T20130524 + 14 * 60,
                            &res),
                     S3E_NONE);
    assert_int_equal(verify(SECRET, "GET", "/test.txt", NULL, get_hdrs, 5, T20130524 - 900, &res),
                     S3E_NONE);
    assert_int_equal(verify(SECRET, "GET", "/test.txt", NULL, get_hdrs, 5, T20130524 + 901, &res),
                     S3E_RequestTimeTooSkewed);
    assert_int_equal(verify(SECRET, "GET", "/test.txt", NULL, get_hdrs, 5, T20130524 - 16 * 60,
                            &res),
                     S3E_RequestTimeTooSkewed);
}

static void test_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "AWS4-HMAC-SHA256 SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=" GET_SIG,
        "AWS4-HMAC-SHA256 " CRED_SCOPE ",Signature=" GET_SIG,
        "AWS4-HMAC-SHA256 " CRED_SCOPE ",SignedHeaders=host;x-amz-date",
        "AWS4-HMAC-SHA256 " CRED_SCOPE ",SignedHeaders=host;x-amz-date,Signature=abc",
        "AWS4-HMAC-SHA256 " CRED_SCOPE ",SignedHeaders=host;x-amz-date,Signature=" GET_SIG
        ",Extra=1",
        "AWS4-HMAC-SHA256 Credential=" AKID "/20130524/us-east-1/sqs/aws4_request"
        ",SignedHeaders=host,Signature=" GET_SIG,
        "AWS4-HMAC-SHA256 Credential=" AKID "/2013052/us-east-1/s3/aws4_request"
        ",SignedHeaders=host,Signature=" GET_SIG,
        "AWS4-HMAC-SHA256 Credential=" AKID "/20130524/us-east-1/s3/aws4_reques"
        ",SignedHeaders=host,Signature=" GET_SIG,
        "AWS4-HMAC-SHA256 Credential=" AKID ",SignedHeaders=host,Signature=" GET_SIG,
        "AWS4-HMAC-SHA256 " CRED_SCOPE ",SignedHeaders=range;x-amz-date,Signature=" GET_SIG,
        "AWS4-HMAC-SHA256 " CRED_SCOPE ",SignedHeaders=host;;x-amz-date,Signature=" GET_SIG,
        "AWS4-HMAC-SHA256 " CRED_SCOPE ",SignedHeaders=Host;x-amz-date,Signature=" GET_SIG,
        "AWS4-HMAC-SHA256",
        "AWS4-HMAC-SHA256 garbage",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct strata_auth_hdr h[5];
        struct strata_auth_result res;
        memcpy(h, get_hdrs, sizeof(h));
        h[4].value = bad[i];
        enum s3_err e = verify(SECRET, "GET", "/test.txt", NULL, h, 5, T20130524, &res);
        if (e != S3E_AuthorizationHeaderMalformed)
            fail_msg("case %zu: got %d for %s", i, (int)e, bad[i]);
    }
    /* an unknown scheme */
    struct strata_auth_hdr h[5];
    struct strata_auth_result res;
    memcpy(h, get_hdrs, sizeof(h));
    h[4].value = "Bearer abc";
    assert_int_equal(verify(SECRET, "GET", "/test.txt", NULL, h, 5, T20130524, &res),
                     S3E_InvalidArgument);
    /* credential date differs from x-amz-date */
    h[4].value = "AWS4-HMAC-SHA256 Credential=" AKID "/20130525/us-east-1/s3/aws4_request"
                 ",SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=" GET_SIG;
    assert_int_equal(verify(SECRET, "GET", "/test.txt", NULL, h, 5, T20130524, &res),
                     S3E_AuthorizationHeaderMalformed);
}

static void test_missing_headers(void **state)
{
    (void)state;
    struct strata_auth_hdr h[4] = {get_hdrs[0], get_hdrs[1], get_hdrs[3], get_hdrs[4]};
    struct strata_auth_result res;
    /* S3 answers 400 InvalidRequest "Missing required header for this
     * request: x-amz-content-sha256" */
    assert_int_equal(verify(SECRET, "GET", "/test.txt", NULL, h, 4, T20130524, &res),
                     S3E_InvalidRequest);
    assert_non_null(strstr(res.err_msg, "x-amz-content-sha256"));
    struct strata_auth_hdr h2[4] = {get_hdrs[0], get_hdrs[1], get_hdrs[2], get_hdrs[4]};
    assert_int_equal(verify(SECRET, "GET", "/test.txt", NULL, h2, 4, T20130524, &res),
                     S3E_AccessDenied);
    struct strata_auth_hdr h3[5];
    memcpy(h3, get_hdrs, sizeof(h3));
    h3[2].value = "not-a-hash";
    assert_int_equal(verify(SECRET, "GET", "/test.txt", NULL, h3, 5, T20130524, &res),
                     S3E_InvalidArgument);
}

static void test_anonymous(void **state)
{
    (void)state;
    struct strata_auth_hdr h[] = {{"Host", "examplebucket.s3.amazonaws.com"}};
    struct strata_auth_result res;
    assert_int_equal(verify(SECRET, "GET", "/test.txt", "list-type=2", h, 1, T20130524, &res),
                     S3E_NONE);
    assert_true(res.anonymous);
    assert_null(res.cred);
}

/* ---- AWS example: PUT Object (Date and x-amz-date, $ in the key) ------- */

static void test_aws_example_put_object(void **state)
{
    (void)state;
    struct strata_auth_hdr h[] = {
        {"Host", "examplebucket.s3.amazonaws.com"},
        {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
        {"x-amz-date", "20130524T000000Z"},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"x-amz-content-sha256", "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"},
        {"Authorization",
         "AWS4-HMAC-SHA256 " CRED_SCOPE
         ",SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class"
         ",Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"},
    };
    struct strata_auth_result res;
    assert_int_equal(verify(SECRET, "PUT", "/test%24file.text", NULL, h, 6, T20130524, &res),
                     S3E_NONE);
    assert_int_equal(res.payload_mode, STRATA_PAYLOAD_SIGNED);
    assert_int_equal(res.payload_sha256[0], 0x44);
    assert_int_equal(res.payload_sha256[1], 0xce);
    assert_int_equal(res.payload_sha256[31], 0x72);
    /* S3 does not re-encode the path: the decoded form must not verify */
    assert_int_equal(verify(SECRET, "PUT", "/test$file.text", NULL, h, 6, T20130524, &res),
                     S3E_SignatureDoesNotMatch);
}

/* ---- AWS examples: GET Bucket lifecycle, GET Bucket (list) -------------- */

static void test_aws_example_query(void **state)
{
    (void)state;
    struct strata_auth_hdr h[] = {
        {"Host", "examplebucket.s3.amazonaws.com"},
        {"x-amz-date", "20130524T000000Z"},
        {"x-amz-content-sha256", EMPTY_SHA},
        {"Authorization",
         "AWS4-HMAC-SHA256 " CRED_SCOPE ",SignedHeaders=host;x-amz-content-sha256;x-amz-date"
         ",Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"},
    };
    struct strata_auth_result res;
    assert_int_equal(verify(SECRET, "GET", "/", "lifecycle", h, 4, T20130524, &res), S3E_NONE);
    h[3].value = "AWS4-HMAC-SHA256 " CRED_SCOPE
                 ", SignedHeaders=host;x-amz-content-sha256;x-amz-date"
                 ", Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7";
    assert_int_equal(verify(SECRET, "GET", "/", "max-keys=2&prefix=J", h, 4, T20130524, &res),
                     S3E_NONE);
    /* parameter order as sent does not matter; values do */
    assert_int_equal(verify(SECRET, "GET", "/", "prefix=J&max-keys=2", h, 4, T20130524, &res),
                     S3E_NONE);
    assert_int_equal(verify(SECRET, "GET", "/", "prefix=K&max-keys=2", h, 4, T20130524, &res),
                     S3E_SignatureDoesNotMatch);
}

/* Reference computed with botocore 1.29 S3SigV4Auth (an independent
 * implementation): spaces, '+', '~', '!', '/' and UTF-8 in path and query,
 * an empty value, names differing in case, and a header with runs of
 * spaces. */
static void test_botocore_canonicalisation(void **state)
{
    (void)state;
    struct strata_auth_hdr h[] = {
        {"Host", "127.0.0.1:9000"},
        {"X-Amz-Meta-Foo", "  a   b  "},
        {"X-Amz-Date", "20130524T000000Z"},
        {"X-Amz-Content-SHA256", EMPTY_SHA},
        {"Authorization",
         "AWS4-HMAC-SHA256 " CRED_SCOPE
         ", SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-meta-foo"
         ", Signature=2a703d1c583f29218ee93f2b18cd591f382d4b287ac65b469986ac591393b74f"},
    };
    struct strata_auth_result res;
    assert_int_equal(verify(SECRET, "GET", "/bucket/dir/a%20b%2Bc~%21.txt",
                            "prefix=a%20b&list-type=2&marker=x%2Fy&empty=&zeta=%E2%82%AC&Zeta=1",
                            h, 5, T20130524, &res),
                     S3E_NONE);
    /* the same query with '+' for the space and lower-case escapes */
    assert_int_equal(verify(SECRET, "GET", "/bucket/dir/a%20b%2Bc~%21.txt",
                            "prefix=a+b&list-type=2&marker=x%2fy&empty&zeta=%e2%82%ac&Zeta=1", h,
                            5, T20130524, &res),
                     S3E_NONE);
}

/* ---- presigned URL (AWS example) ----------------------------------------- */

#define PRESIGN_Q                                                                               \
    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AKID                                   \
    "%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400" \
    "&X-Amz-SignedHeaders=host"
#define PRESIGN_SIG "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"

static void test_aws_example_presign(void **state)
{
    (void)state;
    struct strata_cred cred = {AKID, SECRET, "root", false, ""};
    char url[1024];
    assert_int_equal(strata_presign_v4(&cred, "GET", "examplebucket.s3.amazonaws.com",
                                       "/test.txt", "us-east-1", T20130524, 86400, url,
                                       sizeof(url)),
                     0);
    assert_string_equal(url, "/test.txt?" PRESIGN_Q "&X-Amz-Signature=" PRESIGN_SIG);
    char small[64];
    assert_int_not_equal(strata_presign_v4(&cred, "GET", "examplebucket.s3.amazonaws.com",
                                           "/test.txt", "us-east-1", T20130524, 86400, small,
                                           sizeof(small)),
                         0);

    struct strata_auth_hdr h[] = {{"Host", "examplebucket.s3.amazonaws.com"}};
    const char *q = PRESIGN_Q "&X-Amz-Signature=" PRESIGN_SIG;
    struct strata_auth_result res;
    assert_int_equal(verify(SECRET, "GET", "/test.txt", q, h, 1, T20130524 + 10, &res), S3E_NONE);
    assert_int_equal(res.payload_mode, STRATA_PAYLOAD_UNSIGNED);
    assert_string_equal(res.cred->access_key, AKID);
    /* still valid at the last second, expired one second later */
    assert_int_equal(verify(SECRET, "GET", "/test.txt", q, h, 1, T20130524 + 86400, &res),
                     S3E_NONE);
    assert_int_equal(verify(SECRET, "GET", "/test.txt", q, h, 1, T20130524 + 86401, &res),
                     S3E_AccessDenied);
    assert_string_equal(res.err_msg, "Request has expired");
    /* another host, another key */
    struct strata_auth_hdr h2[] = {{"Host", "evil.example.com"}};
    assert_int_equal(verify(SECRET, "GET", "/test.txt", q, h2, 1, T20130524, &res),
                     S3E_SignatureDoesNotMatch);
    assert_int_equal(verify(SECRET, "GET", "/test2.txt", q, h, 1, T20130524, &res),
                     S3E_SignatureDoesNotMatch);
}

static void test_presign_bad_params(void **state)
{
    (void)state;
    struct strata_auth_hdr h[] = {{"Host", "examplebucket.s3.amazonaws.com"}};
    struct strata_auth_result res;
    static const char *const bad[] = {
        "X-Amz-Algorithm=AWS4-HMAC-SHA1&X-Amz-Credential=a%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=10&X-Amz-SignedHeaders=host&X-Amz-Signature=" PRESIGN_SIG,
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20130524T000000Z&X-Amz-Expires=10"
        "&X-Amz-SignedHeaders=host&X-Amz-Signature=" PRESIGN_SIG,
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AKID "%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=604801&X-Amz-SignedHeaders=host&X-Amz-Signature=" PRESIGN_SIG,
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AKID "%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=-1&X-Amz-SignedHeaders=host&X-Amz-Signature=" PRESIGN_SIG,
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AKID "%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=0&X-Amz-SignedHeaders=host&X-Amz-Signature=" PRESIGN_SIG,
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AKID "%2F20130524%2Fus-east-1%2Fs3"
        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=10&X-Amz-SignedHeaders=host&X-Amz-Signature=" PRESIGN_SIG,
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AKID "%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Date=2013-05-24&X-Amz-Expires=10&X-Amz-SignedHeaders=host&X-Amz-Signature=" PRESIGN_SIG,
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AKID "%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=10&X-Amz-SignedHeaders=host&X-Amz-Signature=zz",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        enum s3_err e = verify(SECRET, "GET", "/test.txt", bad[i], h, 1, T20130524, &res);
        if (e != S3E_AuthorizationQueryParametersError)
            fail_msg("case %zu: got %d", i, (int)e);
    }
    /* both an Authorization header and a presigned query */
    struct strata_auth_hdr h2[5];
    memcpy(h2, get_hdrs, sizeof(h2));
    assert_int_equal(verify(SECRET, "GET", "/test.txt", PRESIGN_Q "&X-Amz-Signature=" PRESIGN_SIG,
                            h2, 5, T20130524, &res),
                     S3E_InvalidArgument);
}

/* The server's region against the credential's: the same request is
 * accepted where it was signed for and refused elsewhere, before the
 * access key is looked up, with AWS's wording and wrong_region set. */
static void test_region(void **state)
{
    (void)state;
    struct strata_creds *c = NULL, *other = NULL;
    assert_int_equal(strata_creds_load(AKID, SECRET, NULL, &c, NULL, 0), 0);
    assert_int_equal(strata_creds_load("OTHERKEY", SECRET, NULL, &other, NULL, 0), 0);
    struct strata_auth_req r = {"GET",     "/test.txt", NULL,       get_hdrs, 5,
                                T20130524, NULL,        0,          "us-east-1"};
    struct strata_auth_result res;
    assert_int_equal(strata_s3_err_from_auth(strata_auth_verify(c, &r, &res)), S3E_NONE);
    assert_false(res.wrong_region);
    r.region = "eu-west-1";
    assert_int_equal(strata_s3_err_from_auth(strata_auth_verify(c, &r, &res)),
                     S3E_AuthorizationHeaderMalformed);
    assert_true(res.wrong_region);
    assert_null(res.cred);
    assert_string_equal(res.err_msg, "The authorization header is malformed; the region "
                                     "'us-east-1' is wrong; expecting 'eu-west-1'");
    /* Before the key: an unknown key signed for another region hears of the region. */
    assert_int_equal(strata_s3_err_from_auth(strata_auth_verify(other, &r, &res)),
                     S3E_AuthorizationHeaderMalformed);
    assert_true(res.wrong_region);
    r.region = "us-east-10"; /* a prefix of the scope's region is another region */
    assert_int_equal(strata_s3_err_from_auth(strata_auth_verify(c, &r, &res)),
                     S3E_AuthorizationHeaderMalformed);
    r.region = "us-east";
    assert_int_equal(strata_s3_err_from_auth(strata_auth_verify(c, &r, &res)),
                     S3E_AuthorizationHeaderMalformed);

    /* Presigned: the query's error code and wording. */
    struct strata_cred cred = {AKID, SECRET, "root", false, ""};
    char url[1024];
    time_t now = 1700000000;
    assert_int_equal(strata_presign_v4(&cred, "GET", "h:1", "/b/k", "eu-west-3", now, 60, url,
                                       sizeof(url)),
                     0);
    char *q = strchr(url, '?');
    *q++ = '\0';
    struct strata_auth_hdr h[] = {{"Host", "h:1"}};
    struct strata_auth_req pr = {"GET", url, q, h, 1, now, NULL, 0, "eu-west-3"};
    assert_int_equal(strata_s3_err_from_auth(strata_auth_verify(c, &pr, &res)), S3E_NONE);
    assert_false(res.wrong_region);
    pr.region = "us-east-1";
    assert_int_equal(strata_s3_err_from_auth(strata_auth_verify(c, &pr, &res)),
                     S3E_AuthorizationQueryParametersError);
    assert_true(res.wrong_region);
    assert_string_equal(res.err_msg, "Error parsing the X-Amz-Credential parameter; the region "
                                     "'eu-west-3' is wrong; expecting 'us-east-1'");
    /* Other errors leave wrong_region false. */
    pr.region = "eu-west-3";
    pr.now = now + 3600;
    assert_int_equal(strata_s3_err_from_auth(strata_auth_verify(c, &pr, &res)), S3E_AccessDenied);
    assert_false(res.wrong_region);
    strata_creds_destroy(c);
    strata_creds_destroy(other);
}

static void test_presign_roundtrip(void **state)
{
    (void)state;
    struct strata_cred cred = {AKID, SECRET, "root", false, ""};
    char url[1024];
    time_t now = 1700000000;
    assert_int_equal(strata_presign_v4(&cred, "PUT", "127.0.0.1:9000", "/bkt/a%20key", "eu-west-3",
                                       now, 60, url, sizeof(url)),
                     0);
    char *q = strchr(url, '?');
    assert_non_null(q);
    *q++ = '\0';
    struct strata_auth_hdr h[] = {{"host", "127.0.0.1:9000"}, {"Content-Length", "5"}};
    struct strata_auth_result res;
    assert_int_equal(verify(SECRET, "PUT", url, q, h, 2, now + 60, &res), S3E_NONE);
    assert_string_equal(res.scope + 8, "/eu-west-3/s3/aws4_request");
    assert_int_equal(verify(SECRET, "PUT", url, q, h, 2, now + 61, &res), S3E_AccessDenied);
    assert_int_equal(verify(SECRET, "GET", url, q, h, 2, now, &res), S3E_SignatureDoesNotMatch);
    /* not valid yet */
    assert_int_equal(verify(SECRET, "PUT", url, q, h, 2, now - 3600, &res), S3E_AccessDenied);
    assert_int_equal(strata_presign_v4(&cred, "GET", "h", "/", "r", now, 604801, url, sizeof(url)),
                     -3 /* STRATA_EINVAL */);
    assert_int_equal(strata_presign_v4(&cred, "GET", "h", "/", "r", now, 0, url, sizeof(url)),
                     -3 /* STRATA_EINVAL: AWS's minimum is 1 s */);
}

/* ---- streaming: seed signatures of the chunked examples ---------------- */

static void test_aws_example_chunked_seed(void **state)
{
    (void)state;
    struct strata_auth_hdr h[] = {
        {"Host", "s3.amazonaws.com"},
        {"x-amz-date", "20130524T000000Z"},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"},
        {"Content-Encoding", "aws-chunked"},
        {"x-amz-decoded-content-length", "66560"},
        {"Content-Length", "66824"},
        {"Authorization",
         "AWS4-HMAC-SHA256 " CRED_SCOPE
         ",SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
         "x-amz-decoded-content-length;x-amz-storage-class"
         ",Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"},
    };
    struct strata_auth_result res;
    assert_int_equal(verify(SECRET, "PUT", "/examplebucket/chunkObject.txt", NULL, h, 8, T20130524,
                            &res),
                     S3E_NONE);
    assert_int_equal(res.payload_mode, STRATA_PAYLOAD_STREAMING_SIGNED);
    assert_string_equal(res.seed_signature,
                        "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
    assert_true(res.decoded_length == 66560);
    assert_string_equal(res.trailer, "");
}

static void test_aws_example_trailer_seed(void **state)
{
    (void)state;
    struct strata_auth_hdr h[] = {
        {"Host", "s3.amazonaws.com"},
        {"x-amz-date", "20130524T000000Z"},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"},
        {"Content-Encoding", "aws-chunked"},
        {"x-amz-decoded-content-length", "66560"},
        {"x-amz-trailer", "x-amz-checksum-crc32c"},
        {"Authorization",
         "AWS4-HMAC-SHA256 " CRED_SCOPE
         ",SignedHeaders=content-encoding;host;x-amz-content-sha256;x-amz-date;"
         "x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer"
         ",Signature=106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e"},
    };
    struct strata_auth_result res;
    assert_int_equal(verify(SECRET, "PUT", "/examplebucket/chunkObject.txt", NULL, h, 8, T20130524,
                            &res),
                     S3E_NONE);
    assert_int_equal(res.payload_mode, STRATA_PAYLOAD_STREAMING_SIGNED_TRAILER);
    assert_string_equal(res.trailer, "x-amz-checksum-crc32c");
    assert_true(res.decoded_length == 66560);
}

/* ---- concurrency: per-thread contexts and signing-key caches ------------- */

struct thr_arg {
    const struct strata_creds *creds;
    int id;
    int failures;
};

static void *verify_thread(void *p)
{
    struct thr_arg *a = p;
    static const char *const regions[] = {"us-east-1", "eu-west-3"};
    static const char *const keys[] = {"USERA", "USERB"};
    static const char *const secrets[] = {"secretA", "secretB"};
    for (int i = 0; i < 400; i++) {
        int u = (i + a->id) & 1;
        struct strata_cred cred;
        memset(&cred, 0, sizeof(cred));
        strcpy(cred.access_key, keys[u]);
        /* every 4th request is signed with the other user's secret */
        strcpy(cred.secret, secrets[(i & 3) == 3 ? !u : u]);
        char url[1024];
        time_t now = 1700000000 + i * 97;
        if (strata_presign_v4(&cred, "GET", "h:1", "/b/k", regions[(i >> 1) & 1], now, 600, url,
                              sizeof(url)) != 0) {
            a->failures++;
            continue;
        }
        char *q = strchr(url, '?');
        *q++ = '\0';
        struct strata_auth_hdr h[] = {{"Host", "h:1"}};
        struct strata_auth_req r = {"GET", url, q, h, 1, now, NULL, 0, NULL};
        struct strata_auth_result res;
        enum s3_err want = (i & 3) == 3 ? S3E_SignatureDoesNotMatch : S3E_NONE;
        if (strata_s3_err_from_auth(strata_auth_verify(a->creds, &r, &res)) != want)
            a->failures++;
    }
    return NULL;
}

static void test_concurrent_verify(void **state)
{
    (void)state;
    const char *dir = getenv("STRATA_TEST_TMPDIR");
    char path[512];
    snprintf(path, sizeof(path), "%s/sigv4-users-%d", dir && *dir ? dir : "/tmp", (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("USERA secretA\nUSERB secretB\n", f);
    fclose(f);
    struct strata_creds *c = NULL;
    assert_int_equal(strata_creds_load(AKID, SECRET, path, &c, NULL, 0), 0);
    unlink(path);
    pthread_t t[4];
    struct thr_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (struct thr_arg){c, i, 0};
        assert_int_equal(pthread_create(&t[i], NULL, verify_thread, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(args[i].failures, 0);
    }
    strata_creds_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aws_example_get_object),
        cmocka_unit_test(test_aws_example_put_object),
        cmocka_unit_test(test_aws_example_query),
        cmocka_unit_test(test_botocore_canonicalisation),
        cmocka_unit_test(test_aws_example_presign),
        cmocka_unit_test(test_aws_example_chunked_seed),
        cmocka_unit_test(test_aws_example_trailer_seed),
        cmocka_unit_test(test_wrong_secret),
        cmocka_unit_test(test_unknown_key),
        cmocka_unit_test(test_tampered),
        cmocka_unit_test(test_unsigned_amz_header),
        cmocka_unit_test(test_skew),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_missing_headers),
        cmocka_unit_test(test_anonymous),
        cmocka_unit_test(test_presign_bad_params),
        cmocka_unit_test(test_presign_roundtrip),
        cmocka_unit_test(test_region),
        cmocka_unit_test(test_concurrent_verify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
