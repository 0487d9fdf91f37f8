/*
 * test_s3_client.c - the S3 client's pure parts (server/remote/s3_client.c):
 * remote URLs (endpoint, bucket, prefix; what is refused), the result class
 * of every kind of answer, S3 XML error bodies, and key encoding for the
 * signed path.  Its requests are exercised against a real daemon by
 * tests/integration/test_remote_tier.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "s3_client.h"

static void test_url(void **state)
{
    (void)state;
    struct strata_s3c_url u;
    char err[256];
    assert_int_equal(strata_s3c_url_parse("http://127.0.0.1:9000/cold", &u, err, sizeof(err)), 0);
    assert_string_equal(u.endpoint, "http://127.0.0.1:9000");
    assert_string_equal(u.bucket, "cold");
    assert_string_equal(u.prefix, "");
    assert_int_equal(
        strata_s3c_url_parse("https://s3.example.com/my.bucket/a/b/", &u, err, sizeof(err)), 0);
    assert_string_equal(u.endpoint, "https://s3.example.com:443");
    assert_string_equal(u.bucket, "my.bucket");
    assert_string_equal(u.prefix, "a/b");
    assert_int_equal(strata_s3c_url_parse("http://[::1]:8080/bkt/p", &u, err, sizeof(err)), 0);
    assert_string_equal(u.endpoint, "http://[::1]:8080");
    assert_string_equal(u.prefix, "p");
    assert_int_equal(strata_s3c_url_parse("http://h/bkt", &u, err, sizeof(err)), 0);
    assert_string_equal(u.endpoint, "http://h:80");

    const char *bad[] = {"ftp://h/b",        "http://h",           "http://h/",
                         "http://h/AB",      "http://h/b_c",       "http://u:p@h/bkt",
                         "http://h:0/bkt",   "http://h:99999/bkt", "http://h:x/bkt",
                         "http://h/bkt?x=1", "http://h/bkt/a//b",  "http://:80/bkt",
                         "http://h/bk"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        if (strata_s3c_url_parse(bad[i], &u, err, sizeof(err)) != -1)
            fail_msg("accepted %s", bad[i]);
        assert_non_null(strstr(err, "remote URL"));
    }
}

static void test_classify(void **state)
{
    (void)state;
    assert_int_equal(strata_s3c_classify(200, ""), STRATA_S3C_OK);
    assert_int_equal(strata_s3c_classify(204, NULL), STRATA_S3C_OK);
    assert_int_equal(strata_s3c_classify(206, ""), STRATA_S3C_OK);
    assert_int_equal(strata_s3c_classify(0, ""), STRATA_S3C_RETRY);
    assert_int_equal(strata_s3c_classify(500, "InternalError"), STRATA_S3C_RETRY);
    assert_int_equal(strata_s3c_classify(503, "SlowDown"), STRATA_S3C_RETRY);
    assert_int_equal(strata_s3c_classify(502, ""), STRATA_S3C_RETRY);
    assert_int_equal(strata_s3c_classify(429, ""), STRATA_S3C_RETRY);
    assert_int_equal(strata_s3c_classify(400, "RequestTimeout"), STRATA_S3C_RETRY);
    assert_int_equal(strata_s3c_classify(404, "NoSuchKey"), STRATA_S3C_NOT_FOUND);
    assert_int_equal(strata_s3c_classify(404, ""), STRATA_S3C_NOT_FOUND); /* HEAD: no body */
    assert_int_equal(strata_s3c_classify(403, "SignatureDoesNotMatch"), STRATA_S3C_AUTH);
    assert_int_equal(strata_s3c_classify(403, "AccessDenied"), STRATA_S3C_AUTH);
    assert_int_equal(strata_s3c_classify(401, ""), STRATA_S3C_AUTH);
    assert_int_equal(strata_s3c_classify(400, "BadDigest"), STRATA_S3C_OTHER);
    assert_int_equal(strata_s3c_classify(409, "InvalidRequest"), STRATA_S3C_OTHER);
    assert_int_equal(strata_s3c_classify(301, ""), STRATA_S3C_OTHER);
    assert_string_equal(strata_s3c_result_name(STRATA_S3C_RETRY), "retry");
    assert_string_equal(strata_s3c_result_name(STRATA_S3C_NOT_FOUND), "not-found");
}

static void test_error_parse(void **state)
{
    (void)state;
    struct strata_s3c_error e = {0};
    const char *b = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>"
                    "<Message>Please reduce your request rate.</Message>"
                    "<RequestId>X</RequestId></Error>";
    strata_s3c_error_parse(b, strlen(b), &e);
    assert_string_equal(e.code, "SlowDown");
    assert_string_equal(e.message, "Please reduce your request rate.");
    struct strata_s3c_error f = {0};
    strata_s3c_error_parse("<html>oops</html>", 17, &f);
    assert_string_equal(f.code, "");
    strata_s3c_error_parse("not xml at all <", 16, &f);
    assert_string_equal(f.code, "");
    strata_s3c_error_parse(NULL, 0, &f);
    assert_string_equal(f.message, "");
    /* a long code is cut, never overflows */
    char big[400];
    int n = snprintf(big, sizeof(big), "<Error><Code>%0200d</Code></Error>", 7);
    strata_s3c_error_parse(big, (size_t)n, &f);
    assert_int_equal(strlen(f.code), sizeof(f.code) - 1);
}

static void test_key_encode(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(strata_s3c_key_encode("a b/c+d~e.f_g-h", out, sizeof(out)), 0);
    assert_string_equal(out, "a%20b/c%2Bd~e.f_g-h");
    assert_int_equal(strata_s3c_key_encode("\xE2\x82\xAC=?&", out, sizeof(out)), 0);
    assert_string_equal(out, "%E2%82%AC%3D%3F%26");
    assert_int_equal(strata_s3c_key_encode("", out, sizeof(out)), 0);
    assert_string_equal(out, "");
    char small[4];
    assert_int_equal(strata_s3c_key_encode("abcd", small, sizeof(small)), -1);
    assert_int_equal(strata_s3c_key_encode("abc", small, sizeof(small)), 0);
    assert_int_equal(strata_s3c_key_encode(" ", small, sizeof(small)), 0);
    assert_string_equal(small, "%20");
}

static void test_create(void **state)
{
    (void)state;
    struct strata_s3c *c = NULL;
    char err[256];
    struct strata_s3c_opts o = {.access_key = "AK", .secret_key = "SK"};
    assert_int_equal(strata_s3c_create("http://127.0.0.1:1", &o, &c, err, sizeof(err)), 0);
    /* Nothing listens on port 1: no answer is a RETRY with libcurl's reason. */
    struct strata_s3c_obj info;
    struct strata_s3c_error e;
    assert_int_equal(strata_s3c_head_object(c, "bkt", "k", NULL, &info, &e), STRATA_S3C_RETRY);
    assert_int_equal(e.http_status, 0);
    assert_true(strlen(e.message) > 0);
    /* bad names are refused before any request */
    assert_int_equal(strata_s3c_head_object(c, "", "k", NULL, &info, &e), STRATA_S3C_OTHER);
    assert_int_equal(strata_s3c_put_retention(c, "bkt", "k", NULL, "FOREVER", "2030", NULL, &e),
                     STRATA_S3C_OTHER);
    strata_s3c_obj_fini(&info);
    strata_s3c_destroy(c);
    strata_s3c_destroy(NULL);
    o.access_key = "A:K";
    assert_int_equal(strata_s3c_create("http://h:1", &o, &c, err, sizeof(err)), -1);
    o.access_key = "AK";
    assert_int_equal(strata_s3c_create("h:1", &o, &c, err, sizeof(err)), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url),         cmocka_unit_test(test_classify),
        cmocka_unit_test(test_error_parse), cmocka_unit_test(test_key_encode),
        cmocka_unit_test(test_create),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
