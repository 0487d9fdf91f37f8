/*
 * test_post_policy.c - POST Object forms (auth/post_policy.c): SigV4 and
 * SigV2 signatures of the policy (vectors computed independently with
 * Python's hmac), the policy document's validation, each condition kind,
 * the coverage rule and content-length-range.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "post_policy.h"
#include "s3_error.h"
#include "base64.h"

#define AKID "AKIAIOSFODNN7EXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
/* {"expiration":"2030-01-01T00:00:00.000Z","conditions":
 *  [["starts-with","$key","user/"],{"bucket":"b1"}]} */
#define POLICY                                                                                     \
    "eyJleHBpcmF0aW9uIjoiMjAzMC0wMS0wMVQwMDowMDowMC4wMDBaIiwiY29uZGl0aW9ucyI6W1sic3RhcnRzLXdpdGgi" \
    "LCIka2V5IiwidXNlci8iXSx7ImJ1Y2tldCI6ImIxIn1dfQ=="
#define SIG_V4 "9c2604be0f28996c899494e11bad3be4183f276cb2359e3ab66439bf4f1b88f6"
#define SIG_V2 "XTu35wOnC+M1Qkpcu7t9MNNRwdY="

static struct strata_creds *g_creds;

static enum s3_err auth(const struct strata_auth_hdr *f, size_t n, const struct strata_cred **c)
{
    const char *msg;
    return strata_s3_err_from_auth(strata_post_auth(g_creds, f, n, c, &msg));
}

static void test_signatures(void **state)
{
    (void)state;
    const struct strata_cred *c = NULL;
    struct strata_auth_hdr v4[] = {
        {"key", "user/a"},
        {"Policy", POLICY},
        {"X-Amz-Algorithm", "AWS4-HMAC-SHA256"},
        {"x-amz-credential", AKID "/20151229/us-east-1/s3/aws4_request"},
        {"x-amz-date", "20151229T000000Z"},
        {"x-amz-signature", SIG_V4},
    };
    assert_int_equal(auth(v4, 6, &c), S3E_NONE);
    assert_non_null(c);
    assert_string_equal(c->access_key, AKID);
    v4[5].value = "0c2604be0f28996c899494e11bad3be4183f276cb2359e3ab66439bf4f1b88f6";
    assert_int_equal(auth(v4, 6, &c), S3E_SignatureDoesNotMatch);
    v4[5].value = SIG_V4;
    v4[3].value = AKID "/20151230/us-east-1/s3/aws4_request"; /* another day's key */
    assert_int_equal(auth(v4, 6, &c), S3E_SignatureDoesNotMatch);
    v4[3].value = "NOSUCHKEY/20151229/us-east-1/s3/aws4_request";
    assert_int_equal(auth(v4, 6, &c), S3E_InvalidAccessKeyId);
    v4[3].value = AKID "/20151229/us-east-1/s3";
    assert_int_equal(auth(v4, 6, &c), S3E_InvalidArgument);
    v4[3].value = AKID "/20151229/us-east-1/s3/aws4_request";
    v4[2].value = "AWS4-HMAC-SHA1";
    assert_int_equal(auth(v4, 6, &c), S3E_InvalidArgument);

    struct strata_auth_hdr v2[] = {
        {"key", "user/a"}, {"policy", POLICY}, {"AWSAccessKeyId", AKID}, {"Signature", SIG_V2}};
    assert_int_equal(auth(v2, 4, &c), S3E_NONE);
    assert_non_null(c);
    v2[3].value = "YTu35wOnC+M1Qkpcu7t9MNNRwdY=";
    assert_int_equal(auth(v2, 4, &c), S3E_SignatureDoesNotMatch);
    /* no policy and no signature: anonymous; one without the other: refused */
    assert_int_equal(auth(v2, 1, &c), S3E_NONE);
    assert_null(c);
    assert_int_equal(auth(v2, 2, &c), S3E_InvalidArgument);
    struct strata_auth_hdr nopol[] = {{"key", "k"}, {"AWSAccessKeyId", AKID}, {"signature", "x"}};
    assert_int_equal(auth(nopol, 3, &c), S3E_InvalidArgument);
}

/* Parses a JSON policy given as text (base64-encoded here). */
static enum s3_err parse_json(const char *json, struct strata_post_policy **p, char *msg,
                              size_t msg_len)
{
    char b64[4096];
    assert_true(strata_b64_encode((const uint8_t *)json, strlen(json), b64, sizeof(b64)) > 0);
    return strata_s3_err_from_auth(strata_post_policy_parse(b64, p, msg, msg_len));
}

static void test_region(void **state)
{
    (void)state;
    char got[64] = "";
    struct strata_auth_hdr f[] = {{"X-Amz-Credential", AKID "/20300101/eu-west-1/s3/aws4_request"}};
    assert_true(strata_post_region_ok(f, 1, "eu-west-1", got, sizeof(got)));
    assert_false(strata_post_region_ok(f, 1, "us-east-1", got, sizeof(got)));
    assert_string_equal(got, "eu-west-1");
    assert_false(strata_post_region_ok(f, 1, "eu-west-10", got, sizeof(got)));
    assert_false(strata_post_region_ok(f, 1, "eu-west", got, sizeof(got)));
    /* Nothing to compare: no credential (SigV2, anonymous), a malformed one. */
    struct strata_auth_hdr v2[] = {{"AWSAccessKeyId", AKID}};
    assert_true(strata_post_region_ok(v2, 1, "us-east-1", got, sizeof(got)));
    struct strata_auth_hdr bad[] = {{"x-amz-credential", AKID "/20300101"}};
    assert_true(strata_post_region_ok(bad, 1, "us-east-1", got, sizeof(got)));
}

static void test_document(void **state)
{
    (void)state;
    char msg[512];
    struct strata_post_policy *p = NULL;
    assert_int_equal(strata_s3_err_from_auth(strata_post_policy_parse("!!!", &p, msg, sizeof(msg))),
                     S3E_InvalidPolicyDocument);
    assert_int_equal(parse_json("{\"conditions\":[]", &p, msg, sizeof(msg)),
                     S3E_InvalidPolicyDocument);
    assert_string_equal(msg, "Invalid Policy: Invalid JSON.");
    assert_int_equal(parse_json("{\"conditions\":[]}", &p, msg, sizeof(msg)),
                     S3E_InvalidPolicyDocument);
    assert_string_equal(msg, "Invalid Policy: Policy missing expiration.");
    assert_int_equal(parse_json("{\"expiration\":\"2030-01-01T00:00:00Z\"}", &p, msg, sizeof(msg)),
                     S3E_InvalidPolicyDocument);
    assert_string_equal(msg, "Invalid Policy: Policy missing conditions.");
    assert_int_equal(parse_json("{\"expiration\":\"tomorrow\",\"conditions\":[]}", &p, msg,
                                sizeof(msg)),
                     S3E_InvalidPolicyDocument);
    const char *bad[] = {
        "[\"in\",\"$key\",\"a\"]",           "[\"eq\",\"key\",\"a\"]",
        "[\"eq\",\"$key\"]",                 "[\"starts-with\",\"$key\",1]",
        "{\"a\":\"1\",\"b\":\"2\"}",         "{\"a\":1}",
        "[\"content-length-range\",5,1]",    "[\"content-length-range\",-1,10]",
        "\"key\"",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char json[256];
        snprintf(json, sizeof(json),
                 "{\"expiration\":\"2030-01-01T00:00:00.000Z\",\"conditions\":[%s]}", bad[i]);
        assert_int_equal(parse_json(json, &p, msg, sizeof(msg)), S3E_InvalidPolicyDocument);
        assert_non_null(strstr(msg, "Invalid Condition"));
    }
    assert_int_equal(parse_json("{\"expiration\":\"2030-01-01T00:00:00.000Z\",\"conditions\":"
                                "[[\"content-length-range\",\"10\",\"100\"],"
                                "[\"content-length-range\",0,50]]}",
                                &p, msg, sizeof(msg)),
                     S3E_NONE);
    uint64_t lo, hi;
    assert_true(strata_post_policy_length_range(p, &lo, &hi));
    assert_int_equal(lo, 10); /* the narrowest of both */
    assert_int_equal(hi, 50);
    strata_post_policy_free(p);
}

static enum s3_err check(const char *conditions, const struct strata_auth_hdr *f, size_t n,
                         time_t now, char *msg)
{
    char json[1024];
    snprintf(json, sizeof(json), "{\"expiration\":\"2030-01-01T00:00:00.000Z\",\"conditions\":%s}",
             conditions);
    struct strata_post_policy *p = NULL;
    assert_int_equal(parse_json(json, &p, msg, 512), S3E_NONE);
    enum s3_err e = strata_s3_err_from_auth(strata_post_policy_check(p, "b1", f, n, now, msg, 512));
    strata_post_policy_free(p);
    return e;
}

static void test_conditions(void **state)
{
    (void)state;
    char msg[512];
    time_t now = 1700000000; /* 2023 */
    struct strata_auth_hdr f[] = {
        {"key", "user/eric/photo.jpg"},
        {"Content-Type", "image/jpeg"},
        {"x-amz-meta-tag", "anything"},
        {"policy", "ignored"},
        {"x-ignore-me", "1"},
        {"X-Amz-Signature", "00"},
    };
    const char *ok = "[[\"starts-with\",\"$key\",\"user/eric/\"],"
                     "[\"starts-with\",\"$Content-Type\",\"image/\"],"
                     "[\"starts-with\",\"$x-amz-meta-tag\",\"\"],{\"bucket\":\"b1\"}]";
    assert_int_equal(check(ok, f, 6, now, msg), S3E_NONE);
    /* expired */
    assert_int_equal(check(ok, f, 6, 1900000000, msg), S3E_AccessDenied);
    assert_string_equal(msg, "Invalid according to Policy: Policy expired.");
    /* eq, exact-match and field names case-insensitive */
    assert_int_equal(check("[[\"eq\",\"$KEY\",\"user/eric/photo.jpg\"],"
                           "{\"content-type\":\"image/jpeg\"},"
                           "[\"starts-with\",\"$x-amz-meta-tag\",\"any\"]]",
                           f, 6, now, msg),
                     S3E_NONE);
    assert_int_equal(check("[[\"eq\",\"$key\",\"user/eric/\"],{\"content-type\":\"image/jpeg\"},"
                           "[\"starts-with\",\"$x-amz-meta-tag\",\"\"]]",
                           f, 6, now, msg),
                     S3E_AccessDenied);
    assert_string_equal(msg, "Invalid according to Policy: Policy Condition failed: "
                             "[\"eq\", \"$key\", \"user/eric/\"]");
    /* starts-with fails */
    assert_int_equal(check("[[\"starts-with\",\"$key\",\"user/bob/\"],"
                           "{\"content-type\":\"image/jpeg\"},"
                           "[\"starts-with\",\"$x-amz-meta-tag\",\"\"]]",
                           f, 6, now, msg),
                     S3E_AccessDenied);
    /* the bucket condition is the bucket posted to */
    assert_int_equal(check("[{\"bucket\":\"b2\"}]", f, 1, now, msg), S3E_AccessDenied);
    /* a field no condition names */
    assert_int_equal(check("[[\"starts-with\",\"$key\",\"\"],{\"content-type\":\"image/jpeg\"}]",
                           f, 6, now, msg),
                     S3E_AccessDenied);
    assert_string_equal(msg, "Invalid according to Policy: Extra input fields: x-amz-meta-tag");
    /* a condition on a field the form lacks */
    assert_int_equal(check("[[\"eq\",\"$acl\",\"private\"],[\"starts-with\",\"$key\",\"\"]]", f, 1,
                           now, msg),
                     S3E_AccessDenied);
    /* Content-Type lists: each type must match the prefix */
    struct strata_auth_hdr ct[] = {{"Content-Type", "image/png, image/gif"}};
    assert_int_equal(check("[[\"starts-with\",\"$Content-Type\",\"image/\"]]", ct, 1, now, msg),
                     S3E_NONE);
    ct[0].value = "image/png, text/html";
    assert_int_equal(check("[[\"starts-with\",\"$Content-Type\",\"image/\"]]", ct, 1, now, msg),
                     S3E_AccessDenied);
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
        cmocka_unit_test(test_signatures),
        cmocka_unit_test(test_region),
        cmocka_unit_test(test_document),
        cmocka_unit_test(test_conditions),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
