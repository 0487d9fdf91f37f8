/*
 * test_s3_sign.c - the S3 client's SigV4 (server/remote/s3_sign.c): AWS's
 * published GET example signs to its published signature; headers whose
 * names extend another's ("x-amz-server-side-encryption" and its
 * "-aws-kms-key-id", "x-amz-meta-a" and "x-amz-meta-a-b") are signed in
 * name order; empty lines (not sent by libcurl) are not signed; a bad URL
 * or no payload hash is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "s3_sign.h"

#define AK "AKIAIOSFODNN7EXAMPLE"
#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define T20130524 1369353600 /* 2013-05-24T00:00:00Z */

/* The value of the line named name (with ": "), or NULL. */
static const char *line_of(const struct curl_slist *l, const char *name)
{
    size_t n = strlen(name);
    for (; l; l = l->next)
        if (strncmp(l->data, name, n) == 0 && l->data[n] == ':')
            return l->data + n + 2;
    return NULL;
}

/* AWS's "GET Object" example of "Signature Calculations for the
 * Authorization Header: Transferring Payload in a Single Chunk". */
static void aws_example(void **st)
{
    (void)st;
    struct curl_slist *l = curl_slist_append(NULL, "Range: bytes=0-9");
    l = curl_slist_append(l, "x-amz-content-sha256: " EMPTY);
    assert_int_equal(strata_s3c_sign("GET", "https://examplebucket.s3.amazonaws.com/test.txt", AK,
                                     SK, "us-east-1", T20130524, &l),
                     0);
    assert_string_equal(line_of(l, "Host"), "examplebucket.s3.amazonaws.com");
    assert_string_equal(line_of(l, "x-amz-date"), "20130524T000000Z");
    assert_string_equal(line_of(l, "Authorization"),
                        "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request, "
                        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    curl_slist_free_all(l);
}

static void names_in_order_empty_unsigned(void **st)
{
    (void)st;
    struct curl_slist *l = curl_slist_append(NULL, "x-amz-server-side-encryption-aws-kms-key-id: k1");
    l = curl_slist_append(l, "x-amz-server-side-encryption: aws:kms");
    l = curl_slist_append(l, "x-amz-meta-a-b: 2");
    l = curl_slist_append(l, "X-Amz-Meta-A:   1  ");
    l = curl_slist_append(l, "Expect:");
    l = curl_slist_append(l, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    assert_int_equal(strata_s3c_sign("PUT", "http://127.0.0.1:9000/b/k?partNumber=1&uploadId=u",
                                     AK, SK, "eu-west-1", T20130524, &l),
                     0);
    assert_string_equal(line_of(l, "Host"), "127.0.0.1:9000");
    const char *a = line_of(l, "Authorization");
    assert_non_null(a);
    assert_non_null(strstr(a, "/20130524/eu-west-1/s3/aws4_request, SignedHeaders=host;"
                              "x-amz-content-sha256;x-amz-date;x-amz-meta-a;x-amz-meta-a-b;"
                              "x-amz-server-side-encryption;"
                              "x-amz-server-side-encryption-aws-kms-key-id, Signature="));
    curl_slist_free_all(l);
}

static void refusals(void **st)
{
    (void)st;
    struct curl_slist *l = curl_slist_append(NULL, "x-amz-content-sha256: " EMPTY);
    assert_int_equal(strata_s3c_sign("GET", "ftp://h/b", AK, SK, "us-east-1", T20130524, &l), -1);
    assert_int_equal(strata_s3c_sign("GET", "http:///b", AK, SK, "us-east-1", T20130524, &l), -1);
    assert_null(line_of(l, "Authorization"));
    curl_slist_free_all(l);
    l = curl_slist_append(NULL, "Range: bytes=0-9"); /* no payload hash */
    assert_int_equal(strata_s3c_sign("GET", "http://h/b", AK, SK, "us-east-1", T20130524, &l), -1);
    assert_null(line_of(l, "Authorization"));
    curl_slist_free_all(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(aws_example),
        cmocka_unit_test(names_in_order_empty_unsigned),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
