/*
 * test_s3_error.c - the S3 error table, the STRATA_E* -> S3 mapping, the
 * bounded string buffer and the libxml2 request-body parsers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "srv.h"
#include "srv_err.h"

static void test_table(void **state)
{
    assert_string_equal(strata_s3_err_code(S3E_NoSuchKey), "NoSuchKey");
    assert_int_equal(strata_s3_err_status(S3E_NoSuchKey), 404);
    assert_int_equal(strata_s3_err_status(S3E_InvalidRange), 416);
    assert_int_equal(strata_s3_err_status(S3E_NotImplemented), 501);
    assert_int_equal(strata_s3_err_status(S3E_SlowDown), 503);
    for (int e = 1; e < S3E__COUNT; e++) {
        const char *m = strata_s3_err_message((enum s3_err)e);
        assert_non_null(m);
        assert_true(strlen(m) > 0);
        int st = strata_s3_err_status((enum s3_err)e);
        assert_true(st >= 300 && st < 600);
    }
    /* Out of range falls back to InternalError. */
    assert_string_equal(strata_s3_err_code((enum s3_err)9999), "InternalError");
}

static void test_map(void **state)
{
    assert_int_equal(strata_s3_err_from_strata(0, S3CTX_OBJECT), S3E_NONE);
    assert_int_equal(strata_s3_err_from_strata(STRATA_ENOTFOUND, S3CTX_BUCKET), S3E_NoSuchBucket);
    assert_int_equal(strata_s3_err_from_strata(STRATA_ENOTFOUND, S3CTX_OBJECT), S3E_NoSuchKey);
    assert_int_equal(strata_s3_err_from_strata(STRATA_ENOTFOUND, S3CTX_VERSION), S3E_NoSuchVersion);
    assert_int_equal(strata_s3_err_from_strata(STRATA_ENOTFOUND, S3CTX_UPLOAD), S3E_NoSuchUpload);
    assert_int_equal(strata_s3_err_from_strata(STRATA_EEXISTS, S3CTX_BUCKET),
                     S3E_BucketAlreadyOwnedByYou);
    assert_int_equal(strata_s3_err_from_strata(STRATA_ENOTEMPTY, S3CTX_BUCKET), S3E_BucketNotEmpty);
    assert_int_equal(strata_s3_err_from_strata(STRATA_EQUORUM, S3CTX_OBJECT),
                     S3E_ServiceUnavailable);
    assert_int_equal(strata_s3_err_from_strata(STRATA_EBUSY, S3CTX_OBJECT), S3E_SlowDown);
    assert_int_equal(strata_s3_err_from_strata(STRATA_ENOSPC, S3CTX_OBJECT),
                     S3E_ServiceUnavailable);
    assert_int_equal(strata_s3_err_from_strata(STRATA_EBADDIGEST, S3CTX_OBJECT), S3E_BadDigest);
    assert_int_equal(strata_s3_err_from_strata(STRATA_ESHA256MISMATCH, S3CTX_OBJECT),
                     S3E_XAmzContentSHA256Mismatch);
    assert_int_equal(strata_s3_err_from_strata(STRATA_ECHECKSUM, S3CTX_OBJECT), S3E_BadDigest);
    assert_int_equal(strata_s3_err_from_strata(STRATA_EPRECOND, S3CTX_OBJECT),
                     S3E_PreconditionFailed);
    assert_int_equal(strata_s3_err_from_strata(STRATA_EINCOMPLETE, S3CTX_OBJECT),
                     S3E_IncompleteBody);
    assert_int_equal(strata_s3_err_from_strata(STRATA_ETOOBIG, S3CTX_OBJECT), S3E_EntityTooLarge);
    assert_int_equal(strata_s3_err_from_strata(STRATA_EINVAL, S3CTX_OBJECT), S3E_InvalidArgument);
    assert_int_equal(strata_s3_err_from_strata(STRATA_EMETHOD, S3CTX_OBJECT),
                     S3E_MethodNotAllowed);
    assert_int_equal(strata_s3_err_from_strata(STRATA_ENOTIMPL, S3CTX_OBJECT),
                     S3E_NotImplemented);
    assert_int_equal(strata_s3_err_from_strata(STRATA_EIO, S3CTX_OBJECT), S3E_InternalError);
    assert_int_equal(strata_s3_err_from_strata(-12345, S3CTX_OBJECT), S3E_InternalError);
    assert_non_null(strstr(strata_s3_err_detail(STRATA_ENOSPC, S3E_ServiceUnavailable), "full"));
    assert_string_equal(strata_s3_err_detail(0, S3E_NoSuchKey),
                        strata_s3_err_message(S3E_NoSuchKey));
}

static void test_sbuf(void **state)
{
    struct strata_sbuf b;
    strata_sbuf_init(&b, 64);
    assert_int_equal(strata_sbuf_xml(&b, "a<b>&\"'"), 0);
    assert_string_equal(b.data, "a&lt;b&gt;&amp;&quot;&apos;");
    strata_sbuf_fini(&b);
    strata_sbuf_init(&b, 8);
    assert_int_equal(strata_sbuf_puts(&b, "12345678"), 0);
    assert_int_equal(strata_sbuf_puts(&b, "9"), -1);
    assert_true(b.failed);
    assert_int_equal(strata_sbuf_puts(&b, ""), -1); /* sticky */
    strata_sbuf_fini(&b);
    strata_sbuf_init(&b, 4096);
    char big[600];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(strata_sbuf_printf(&b, "<%s>", big), 0);
    assert_int_equal(b.len, 601);
    size_t len;
    char *p = strata_sbuf_steal(&b, &len);
    assert_int_equal(len, 601);
    assert_int_equal(b.len, 0);
    free(p);
    strata_sbuf_fini(&b);
}

static void test_xml_delete(void **state)
{
    const char *doc = "<?xml version=\"1.0\"?><Delete xmlns=\"http://s3.amazonaws.com/doc/"
                      "2006-03-01/\"><Quiet>true</Quiet><Object><Key>a &amp; b</Key></Object>"
                      "<Object><Key>k2</Key><VersionId>v1</VersionId></Object></Delete>";
    struct strata_xml_delobj *o;
    size_t n;
    bool quiet;
    assert_int_equal(strata_xml_delete_parse(doc, strlen(doc), 1000, &o, &n, &quiet), S3E_NONE);
    assert_int_equal(n, 2);
    assert_true(quiet);
    assert_string_equal(o[0].key, "a & b");
    assert_null(o[0].version_id);
    assert_string_equal(o[1].version_id, "v1");
    strata_xml_delete_free(o, n);
    assert_int_equal(strata_xml_delete_parse(doc, strlen(doc), 1, &o, &n, &quiet),
                     S3E_MalformedXML);
    const char *bad = "<Delete><Object><Key>x</Key></Object>";
    assert_int_equal(strata_xml_delete_parse(bad, strlen(bad), 1000, &o, &n, &quiet),
                     S3E_MalformedXML);
    const char *empty = "<Delete></Delete>";
    assert_int_equal(strata_xml_delete_parse(empty, strlen(empty), 1000, &o, &n, &quiet),
                     S3E_MalformedXML);
    const char *nokey = "<Delete><Object><VersionId>1</VersionId></Object></Delete>";
    assert_int_equal(strata_xml_delete_parse(nokey, strlen(nokey), 1000, &o, &n, &quiet),
                     S3E_MalformedXML);
}

static void test_xml_config(void **state)
{
    char region[32];
    const char *loc = "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                      "<LocationConstraint>eu-west-1</LocationConstraint>"
                      "</CreateBucketConfiguration>";
    assert_int_equal(strata_xml_location_parse(loc, strlen(loc), region, sizeof(region)), S3E_NONE);
    assert_string_equal(region, "eu-west-1");
    assert_int_equal(strata_xml_location_parse("", 0, region, sizeof(region)), S3E_NONE);
    assert_string_equal(region, "");
    assert_int_equal(strata_xml_location_parse("<x", 2, region, sizeof(region)), S3E_MalformedXML);
    int st;
    const char *v = "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
    assert_int_equal(strata_xml_versioning_parse(v, strlen(v), &st), S3E_NONE);
    assert_int_equal(st, STRATA_VERSIONING_ENABLED);
    const char *s = "<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>";
    assert_int_equal(strata_xml_versioning_parse(s, strlen(s), &st), S3E_NONE);
    assert_int_equal(st, STRATA_VERSIONING_SUSPENDED);
    const char *b = "<VersioningConfiguration><Status>On</Status></VersioningConfiguration>";
    assert_int_equal(strata_xml_versioning_parse(b, strlen(b), &st), S3E_MalformedXML);
}

static void test_xml_complete(void **state)
{
    const char *doc = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                      "<Part><PartNumber>1</PartNumber><ETag>\"aa\"</ETag>"
                      "<ChecksumCRC32>AAECAw==</ChecksumCRC32></Part>"
                      "<Part><ETag>bb</ETag><PartNumber>2</PartNumber></Part>"
                      "</CompleteMultipartUpload>";
    struct strata_xml_part *p;
    size_t n;
    assert_int_equal(strata_xml_complete_parse(doc, strlen(doc), 10000, &p, &n), S3E_NONE);
    assert_int_equal(n, 2);
    assert_int_equal(p[0].part_number, 1);
    assert_string_equal(p[0].etag, "\"aa\"");
    assert_int_equal(p[0].cksum_len, 4);
    assert_memory_equal(p[0].cksum, "\x00\x01\x02\x03", 4);
    assert_int_equal(p[1].part_number, 2);
    assert_int_equal(p[1].cksum_len, 0);
    strata_xml_complete_free(p, n);
    assert_int_equal(strata_xml_complete_parse(doc, strlen(doc), 1, &p, &n), S3E_MalformedXML);
    const char *bad[] = {
        "<CompleteMultipartUpload></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>a</ETag></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>10001</PartNumber><ETag>a</ETag></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1x</PartNumber><ETag>a</ETag></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part>"
        "</CompleteMultipartUpload>",
        "<Other><Part><PartNumber>1</PartNumber><ETag>a</ETag></Part></Other>",
        "<CompleteMultipartUpload><Part>",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(strata_xml_complete_parse(bad[i], strlen(bad[i]), 10000, &p, &n),
                         S3E_MalformedXML);
    const char *badck = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>a</ETag>"
                        "<ChecksumSHA256>!!</ChecksumSHA256></Part></CompleteMultipartUpload>";
    assert_int_equal(strata_xml_complete_parse(badck, strlen(badck), 10000, &p, &n),
                     S3E_InvalidRequest);
}

static void test_xml_tagging(void **state)
{
    struct strata_sbuf b;
    strata_sbuf_init(&b, 4096);
    const char *doc = "<Tagging><TagSet><Tag><Key>a b</Key><Value>x&amp;y</Value></Tag>"
                      "<Tag><Key>k</Key><Value></Value></Tag></TagSet></Tagging>";
    assert_int_equal(strata_xml_tagging_parse(doc, strlen(doc), 10, &b), S3E_NONE);
    assert_string_equal(b.data, "a%20b=x%26y&k=");
    strata_sbuf_fini(&b);
    strata_sbuf_init(&b, 4096);
    assert_int_equal(strata_xml_tagging_parse(doc, strlen(doc), 1, &b), S3E_InvalidTag);
    const char *dup = "<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag>"
                      "<Tag><Key>a</Key><Value>2</Value></Tag></TagSet></Tagging>";
    assert_int_equal(strata_xml_tagging_parse(dup, strlen(dup), 10, &b), S3E_InvalidTag);
    const char *nokey = "<Tagging><TagSet><Tag><Value>1</Value></Tag></TagSet></Tagging>";
    assert_int_equal(strata_xml_tagging_parse(nokey, strlen(nokey), 10, &b), S3E_MalformedXML);
    assert_int_equal(strata_xml_tagging_parse("<Tagging/>", 10, 10, &b), S3E_MalformedXML);
    strata_sbuf_fini(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),      cmocka_unit_test(test_map),
        cmocka_unit_test(test_sbuf),       cmocka_unit_test(test_xml_delete),
        cmocka_unit_test(test_xml_config), cmocka_unit_test(test_xml_complete),
        cmocka_unit_test(test_xml_tagging),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
