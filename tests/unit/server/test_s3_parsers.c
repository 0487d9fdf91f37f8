/*
 * test_s3_parsers.c - the S3 front end's pure helpers: bucket names, Range,
 * conditional headers, dates, query parsing, base64, drive ranges,
 * header selection, listing resume keys, checksums.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "drive_args.h"
#include "base64.h"
#include "query.h"
#include "s3_checksum.h"
#include "s3_conditional.h"
#include "s3_list_resume.h"
#include "s3_names.h"
#include "s3_object_headers.h"
#include "s3_range.h"
#include "s3_tags.h"
#include "sbuf.h"
#include "strata/meta.h"

static void test_bucket_names(void **state)
{
    const char *good[] = {"abc", "my-bucket", "a.b.c", "123", "a1-b2.c3",
                          "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij123"};
    const char *bad[] = {"ab", "ABC", "-abc", "abc-", "a..b", "a.-b", "a-.b", "192.168.1.1",
                         "xn--abc", "abc-s3alias", "abc--ol-s3", "a_b", "a b", ".abc", "",
                         "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij1234"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_true(strata_s3_bucket_name_valid(good[i]));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (strata_s3_bucket_name_valid(bad[i]))
            fail_msg("accepted bad bucket name '%s'", bad[i]);
    }
}

static void test_region_names(void **state)
{
    (void)state;
    const char *good[] = {"us-east-1", "eu-west-1", "us-gov-west-1",
                          "dc1",       "A",         "abcdefghijabcdefghijabcdefghij1"};
    const char *bad[] = {"",        "-us",     "us-",     "us_east_1",
                         "us east", "us/east", "eu.west", "abcdefghijabcdefghijabcdefghij12"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (!strata_s3_region_name_valid(good[i]))
            fail_msg("refused region name '%s'", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (strata_s3_region_name_valid(bad[i]))
            fail_msg("accepted bad region name '%s'", bad[i]);
}

static void test_range(void **state)
{
    uint64_t off = 99, len = 99;
    assert_int_equal(strata_s3_range_parse(NULL, 100, &off, &len), 0);
    assert_int_equal(strata_s3_range_parse("bytes=0-9", 100, &off, &len), 1);
    assert_int_equal(off, 0);
    assert_int_equal(len, 10);
    assert_int_equal(strata_s3_range_parse("bytes=10-", 100, &off, &len), 1);
    assert_int_equal(off, 10);
    assert_int_equal(len, 90);
    assert_int_equal(strata_s3_range_parse("bytes=-5", 100, &off, &len), 1);
    assert_int_equal(off, 95);
    assert_int_equal(len, 5);
    assert_int_equal(strata_s3_range_parse("bytes=-500", 100, &off, &len), 1);
    assert_int_equal(off, 0);
    assert_int_equal(len, 100);
    assert_int_equal(strata_s3_range_parse("bytes=90-200", 100, &off, &len), 1);
    assert_int_equal(off, 90);
    assert_int_equal(len, 10);
    assert_int_equal(strata_s3_range_parse("bytes=99-99", 100, &off, &len), 1);
    assert_int_equal(len, 1);
    /* unsatisfiable */
    assert_int_equal(strata_s3_range_parse("bytes=100-", 100, &off, &len), -1);
    assert_int_equal(strata_s3_range_parse("bytes=100-200", 100, &off, &len), -1);
    assert_int_equal(strata_s3_range_parse("bytes=-0", 100, &off, &len), -1);
    assert_int_equal(strata_s3_range_parse("bytes=0-0", 0, &off, &len), -1);
    /* ignored: whole object */
    assert_int_equal(strata_s3_range_parse("bytes=0-1,5-6", 100, &off, &len), 0);
    assert_int_equal(strata_s3_range_parse("items=0-1", 100, &off, &len), 0);
    assert_int_equal(strata_s3_range_parse("bytes=5-1", 100, &off, &len), 0);
    assert_int_equal(strata_s3_range_parse("bytes=abc", 100, &off, &len), 0);
    assert_int_equal(strata_s3_range_parse("bytes=-", 100, &off, &len), 0);
    assert_int_equal(strata_s3_range_parse("bytes=99999999999999999999999-", 100, &off, &len), 0);
}

static void test_etag_match(void **state)
{
    assert_true(strata_s3_etag_list_match("\"abc\"", "abc"));
    assert_true(strata_s3_etag_list_match("abc", "abc"));
    assert_true(strata_s3_etag_list_match("\"x\", W/\"abc\"", "abc"));
    assert_true(strata_s3_etag_list_match("*", "abc"));
    assert_false(strata_s3_etag_list_match("\"abcd\"", "abc"));
    assert_false(strata_s3_etag_list_match("\"ab\"", "abc"));
    assert_false(strata_s3_etag_list_match("", "abc"));
}

static void test_cond(void **state)
{
    const char *etag = "abc";
    time_t mtime = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT */
    const char *before = "Sat, 05 Nov 1994 08:49:37 GMT";
    const char *same = "Sun, 06 Nov 1994 08:49:37 GMT";
    const char *after = "Mon, 07 Nov 1994 08:49:37 GMT";
    struct strata_s3_cond c = {0};
    assert_int_equal(strata_s3_cond_eval(&c, etag, mtime), 0);
    c = (struct strata_s3_cond){.if_match = "\"zzz\""};
    assert_int_equal(strata_s3_cond_eval(&c, etag, mtime), 412);
    c = (struct strata_s3_cond){.if_match = "\"abc\""};
    assert_int_equal(strata_s3_cond_eval(&c, etag, mtime), 0);
    /* If-Match true wins over a failing If-Unmodified-Since (RFC 7232 6). */
    c = (struct strata_s3_cond){.if_match = "\"abc\"", .if_unmodified_since = before};
    assert_int_equal(strata_s3_cond_eval(&c, etag, mtime), 0);
    c = (struct strata_s3_cond){.if_unmodified_since = before};
    assert_int_equal(strata_s3_cond_eval(&c, etag, mtime), 412);
    c = (struct strata_s3_cond){.if_unmodified_since = same};
    assert_int_equal(strata_s3_cond_eval(&c, etag, mtime), 0);
    c = (struct strata_s3_cond){.if_none_match = "\"abc\""};
    assert_int_equal(strata_s3_cond_eval(&c, etag, mtime), 304);
    c = (struct strata_s3_cond){.if_none_match = "\"x\""};
    assert_int_equal(strata_s3_cond_eval(&c, etag, mtime), 0);
    /* If-None-Match present: If-Modified-Since is ignored. */
    c = (struct strata_s3_cond){.if_none_match = "\"x\"", .if_modified_since = after};
    assert_int_equal(strata_s3_cond_eval(&c, etag, mtime), 0);
    c = (struct strata_s3_cond){.if_modified_since = same};
    assert_int_equal(strata_s3_cond_eval(&c, etag, mtime), 304);
    c = (struct strata_s3_cond){.if_modified_since = before};
    assert_int_equal(strata_s3_cond_eval(&c, etag, mtime), 0);
    c = (struct strata_s3_cond){.if_modified_since = "garbage"};
    assert_int_equal(strata_s3_cond_eval(&c, etag, mtime), 0);
    /* 412 beats 304. */
    c = (struct strata_s3_cond){.if_match = "\"q\"", .if_none_match = "\"abc\""};
    assert_int_equal(strata_s3_cond_eval(&c, etag, mtime), 412);
}

static void test_query(void **state)
{
    struct strata_qparam q[4];
    char b1[] = "list-type=2&prefix=a%20b%2Bc+d&acl&delimiter=%2F";
    assert_int_equal(strata_s3_query_parse(b1, q, 4), 4);
    assert_string_equal(q[0].name, "list-type");
    assert_string_equal(q[0].value, "2");
    assert_string_equal(q[1].value, "a b+c d");
    assert_string_equal(q[2].name, "acl");
    assert_string_equal(q[2].value, "");
    assert_string_equal(q[3].value, "/");
    char b2[] = "a=1&b=2&c=3&d=4&e=5";
    assert_int_equal(strata_s3_query_parse(b2, q, 4), -1);
    char b3[] = "a=%00";
    assert_int_equal(strata_s3_query_parse(b3, q, 4), -1);
    char b4[] = "a=%zz";
    assert_int_equal(strata_s3_query_parse(b4, q, 4), -1);
    char b5[] = "";
    assert_int_equal(strata_s3_query_parse(b5, q, 4), 0);
}

static void test_b64(void **state)
{
    uint8_t out[32];
    char enc[64];
    assert_int_equal(strata_b64_decode("AAECAw==", out, sizeof(out)), 4);
    assert_memory_equal(out, "\x00\x01\x02\x03", 4);
    assert_int_equal(strata_b64_decode("1B2M2Y8AsgTpgAmY7PhCfg==", out, sizeof(out)), 16);
    assert_int_equal(strata_b64_decode("not base64!", out, sizeof(out)), -1);
    assert_int_equal(strata_b64_decode("AAE", out, sizeof(out)), -1);
    assert_int_equal(strata_b64_decode("AAECAw==", out, 3), -1);
    assert_int_equal(strata_b64_encode((const uint8_t *)"\x00\x01\x02\x03", 4, enc, sizeof(enc)), 8);
    assert_string_equal(enc, "AAECAw==");
    assert_int_equal(strata_b64_encode((const uint8_t *)"abcd", 4, enc, 8), -1);
}

static void test_drive_expand(void **state)
{
    char *out[64];
    size_t n = 0;
    assert_int_equal(strata_drive_args_expand("/mnt/d{1...4}", out, &n, 64), 0);
    assert_int_equal(n, 4);
    assert_string_equal(out[0], "/mnt/d1");
    assert_string_equal(out[3], "/mnt/d4");
    assert_int_equal(strata_drive_args_expand("/x{01...03}/y", out, &n, 64), 0);
    assert_int_equal(n, 7);
    assert_string_equal(out[4], "/x01/y");
    assert_string_equal(out[6], "/x03/y");
    assert_int_equal(strata_drive_args_expand("/h{a...b}/d{1...2}", out, &n, 64), 0);
    assert_int_equal(n, 11);
    assert_string_equal(out[7], "/ha/d1");
    assert_string_equal(out[8], "/ha/d2");
    assert_string_equal(out[10], "/hb/d2");
    assert_int_equal(strata_drive_args_expand("/plain", out, &n, 64), 0);
    assert_string_equal(out[11], "/plain");
    for (size_t i = 0; i < n; i++)
        free(out[i]);
    n = 0;
    assert_int_equal(strata_drive_args_expand("/d{4...1}", out, &n, 64), -1);
    assert_int_equal(strata_drive_args_expand("/d{1..4}", out, &n, 64), -1);
    assert_int_equal(strata_drive_args_expand("/d{1...", out, &n, 64), -1);
    assert_int_equal(n, 0);
    assert_int_equal(strata_drive_args_expand("/d{1...100}", out, &n, 64), -1);
    for (size_t i = 0; i < n; i++)
        free(out[i]);
    assert_int_equal(strata_drive_set_size_pick(4), 4);
    assert_int_equal(strata_drive_set_size_pick(16), 16);
    assert_int_equal(strata_drive_set_size_pick(32), 16);
    assert_int_equal(strata_drive_set_size_pick(24), 12);
    assert_int_equal(strata_drive_set_size_pick(3), 0);
    assert_int_equal(strata_drive_set_size_pick(17), 0);
}

static void test_hdr_select(void **state)
{
    assert_true(strata_s3_hdr_is_stored("content-type"));
    assert_true(strata_s3_hdr_is_stored("cache-control"));
    assert_true(strata_s3_hdr_is_stored("expires"));
    assert_true(strata_s3_hdr_is_stored("x-amz-meta-foo"));
    assert_false(strata_s3_hdr_is_stored("x-amz-meta-"));
    assert_false(strata_s3_hdr_is_stored("authorization"));
    assert_false(strata_s3_hdr_is_stored("content-length"));
    assert_false(strata_s3_hdr_is_stored("x-amz-content-sha256"));
    char out[64];
    strata_s3_content_encoding_strip("aws-chunked", out, sizeof(out));
    assert_string_equal(out, "");
    strata_s3_content_encoding_strip("aws-chunked,gzip", out, sizeof(out));
    assert_string_equal(out, "gzip");
    strata_s3_content_encoding_strip("gzip, aws-chunked, br", out, sizeof(out));
    assert_string_equal(out, "gzip,br");
}

static void test_resume_key(void **state)
{
    char out[64];
    assert_string_equal(strata_s3_list_resume_key("", "/", "abc", out, sizeof(out)), "abc");
    assert_string_equal(strata_s3_list_resume_key("", "/", "a/", out, sizeof(out)), "a/\xff");
    assert_string_equal(strata_s3_list_resume_key("p/", "/", "p/q/r", out, sizeof(out)),
                        "p/q/\xff");
    assert_string_equal(strata_s3_list_resume_key("p/", "/", "p/q", out, sizeof(out)), "p/q");
    assert_string_equal(strata_s3_list_resume_key("", NULL, "a/b", out, sizeof(out)), "a/b");
    assert_string_equal(strata_s3_list_resume_key("x", "/", "a/b", out, sizeof(out)), "a/b");
}

static void test_cksum(void **state)
{
    uint8_t out[32];
    char b64[64];
    /* AWS examples: CRC32 of "123456789" is cbf43926, CRC32C e3069283. */
    assert_int_equal(strata_s3_cksum_compute(STRATA_CKSUM_CRC32, "123456789", 9, out), 0);
    assert_memory_equal(out, "\xcb\xf4\x39\x26", 4);
    assert_int_equal(strata_s3_cksum_compute(STRATA_CKSUM_CRC32C, "123456789", 9, out), 0);
    assert_memory_equal(out, "\xe3\x06\x92\x83", 4);
    assert_int_equal(strata_s3_cksum_compute(STRATA_CKSUM_SHA256, "", 0, out), 0);
    strata_b64_encode(out, 32, b64, sizeof(b64));
    assert_string_equal(b64, "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
    assert_int_equal(strata_s3_cksum_from_hdr("X-Amz-Checksum-CRC32C"), STRATA_CKSUM_CRC32C);
    assert_int_equal(strata_s3_cksum_from_hdr("x-amz-checksum-type"), 0);
    assert_int_equal(strata_s3_cksum_from_algo_name("sha1"), STRATA_CKSUM_SHA1);
    assert_int_equal(strata_s3_cksum_len(STRATA_CKSUM_CRC64NVME), 8);
    assert_string_equal(strata_s3_cksum_hdr(STRATA_CKSUM_SHA256), "x-amz-checksum-sha256");
    assert_int_equal(strata_s3_cksum_compute(99, "", 0, out), -1);
}

static void test_tags(void **state)
{
    char q[] = "a=1&b%20c=d%26e&empty=";
    struct strata_qparam t[8];
    int n = strata_s3_query_parse(q, t, 8);
    assert_int_equal(n, 3);
    assert_int_equal(strata_s3_tags_validate(t, n, 10), 0);
    assert_int_equal(strata_s3_tags_validate(t, n, 2), -1);
    struct strata_sbuf b;
    strata_sbuf_init(&b, 1024);
    assert_int_equal(strata_s3_tags_encode(&b, t, n), 0);
    assert_string_equal(b.data, "a=1&b%20c=d%26e&empty=");
    assert_int_equal(strata_s3_tags_count((const uint8_t *)b.data, b.len), 3);
    assert_int_equal(strata_s3_tags_count(NULL, 0), 0);
    strata_sbuf_fini(&b);
    struct strata_qparam dup[2] = {{"k", "1"}, {"k", "2"}};
    assert_int_equal(strata_s3_tags_validate(dup, 2, 10), -1);
    char longk[130];
    memset(longk, 'k', 129);
    longk[129] = '\0';
    struct strata_qparam lk[1] = {{longk, "v"}};
    assert_int_equal(strata_s3_tags_validate(lk, 1, 10), -1);
    longk[128] = '\0'; /* 128 characters is the limit, inclusive */
    assert_int_equal(strata_s3_tags_validate(lk, 1, 10), 0);
    struct strata_qparam ek[1] = {{"", "v"}};
    assert_int_equal(strata_s3_tags_validate(ek, 1, 10), -1);
}

static void test_rfc2047(void **state)
{
    (void)state;
    char out[64];
    assert_true(strata_s3_rfc2047_decode("=?UTF-8?B?SGVsbG8gV29ybGTDqQ==?=", out, sizeof(out)));
    assert_string_equal(out, "Hello World\xc3\xa9");
    assert_true(strata_s3_rfc2047_decode("=?utf-8?q?caf=C3=A9_au_lait?=", out, sizeof(out)));
    assert_string_equal(out, "caf\xc3\xa9 au lait");
    assert_true(strata_s3_rfc2047_decode("=?US-ASCII?Q?plain?=", out, sizeof(out)));
    assert_string_equal(out, "plain");
    static const char *const no[] = {
        "plain", "=?UTF-8?B?SGVsbG8=", "=?UTF-8?X?abc?=", "=?ISO-8859-1?B?6Q==?=",
        "=?UTF-8?B?not base64?=", "=?UTF-8?Q?bad=G1?=", "=?UTF-8?Q?cut=C?=", "=?UTF-8?Q?nul=00?=",
        "=?UTF-8?B?AA==?=", "x =?UTF-8?B?SGVsbG8=?=", "=?UTF-8?B?SGVsbG8=?= y",
    };
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        assert_false(strata_s3_rfc2047_decode(no[i], out, sizeof(out)));
    char tiny[4];
    assert_false(strata_s3_rfc2047_decode("=?UTF-8?Q?toolong?=", tiny, sizeof(tiny)));
    assert_false(strata_s3_rfc2047_decode("=?UTF-8?B?SGVsbG8=?=", tiny, sizeof(tiny)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_names), cmocka_unit_test(test_region_names),
        cmocka_unit_test(test_range),        cmocka_unit_test(test_etag_match),
        cmocka_unit_test(test_cond),         cmocka_unit_test(test_query),
        cmocka_unit_test(test_b64),          cmocka_unit_test(test_drive_expand),
        cmocka_unit_test(test_hdr_select),   cmocka_unit_test(test_resume_key),
        cmocka_unit_test(test_cksum),        cmocka_unit_test(test_tags),
        cmocka_unit_test(test_rfc2047),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
