/*
 * test_s3_xml.c - XML in and out: every request-body parser refuses a
 * DOCTYPE (MalformedXML) and still parses the same document without one;
 * the text escaper writes C0 controls as AWS does; keys must be UTF-8.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libxml/parser.h>

#include "srv.h"

#define DT "<!DOCTYPE x [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;\">]>"

struct doc {
    const char *plain; /* well-formed, accepted */
};

static bool any_user(void *ud, bool by_email, const char *value, char *id_out)
{
    (void)ud, (void)by_email;
    snprintf(id_out, STRATA_ACL_ID_MAX, "%s", value);
    return true;
}

static const struct doc docs[] = {
    {"<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint>"
     "</CreateBucketConfiguration>"},
    {"<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>"},
    {"<Delete><Object><Key>k</Key></Object></Delete>"},
    {"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"e\"</ETag></Part>"
     "</CompleteMultipartUpload>"},
    {"<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>"},
    {"<AccessControlPolicy><Owner><ID>o</ID></Owner><AccessControlList><Grant>"
     "<Grantee><ID>o</ID></Grantee><Permission>FULL_CONTROL</Permission></Grant>"
     "</AccessControlList></AccessControlPolicy>"},
};

/* Runs the parser for docs[i] on body; returns its answer. */
static enum s3_err run_parser(size_t i, const char *body)
{
    size_t len = strlen(body);
    enum s3_err e = S3E_InternalError;
    switch (i) {
    case 0: {
        char region[32];
        e = strata_xml_location_parse(body, len, region, sizeof(region));
        if (!e)
            assert_string_equal(region, "eu-west-1");
        break;
    }
    case 1: {
        int st;
        e = strata_xml_versioning_parse(body, len, &st);
        break;
    }
    case 2: {
        struct strata_xml_delobj *o;
        size_t n;
        bool quiet;
        e = strata_xml_delete_parse(body, len, 1000, &o, &n, &quiet);
        if (!e)
            strata_xml_delete_free(o, n);
        break;
    }
    case 3: {
        struct strata_xml_part *p;
        size_t n;
        e = strata_xml_complete_parse(body, len, 10000, &p, &n);
        if (!e)
            strata_xml_complete_free(p, n);
        break;
    }
    case 4: {
        struct strata_sbuf b;
        strata_sbuf_init(&b, 65536);
        e = strata_xml_tagging_parse(body, len, 10, &b);
        strata_sbuf_fini(&b);
        break;
    }
    case 5: {
        struct strata_acl *a = malloc(sizeof(*a));
        assert_non_null(a);
        e = strata_xml_acl_parse(body, len, a, any_user, NULL);
        free(a);
        if (e == S3E_MalformedACLError) /* the ACL calls' name for MalformedXML */
            e = S3E_MalformedXML;
        break;
    }
    default:
        fail();
    }
    return e;
}

static void test_doctype_refused(void **state)
{
    (void)state;
    char body[2048];
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        assert_int_equal(run_parser(i, docs[i].plain), S3E_NONE);
        snprintf(body, sizeof(body), "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" DT "%s",
                 docs[i].plain);
        assert_int_equal(run_parser(i, body), S3E_MalformedXML);
        snprintf(body, sizeof(body), "<!DOCTYPE foo SYSTEM \"file:///etc/passwd\">%s", docs[i].plain);
        assert_int_equal(run_parser(i, body), S3E_MalformedXML);
    }
    /* An entity used in the text, with the DOCTYPE that defines it. */
    assert_int_equal(run_parser(2, DT "<Delete><Object><Key>&b;</Key></Object></Delete>"),
                     S3E_MalformedXML);
}

static void test_escape_controls(void **state)
{
    (void)state;
    struct strata_sbuf b;
    strata_sbuf_init(&b, 4096);
    strata_sbuf_xml(&b, "a\x01" "b\tc\nd\re\x1f<&>\"'\x7f");
    strata_sbuf_append(&b, "", 1);
    assert_string_equal(b.data, "a&#x1;b\tc\nd&#13;e&#x1f;&lt;&amp;&gt;&quot;&apos;\x7f");
    strata_sbuf_fini(&b);
}

static void test_utf8_valid(void **state)
{
    (void)state;
    static const char *const good[] = {"", "plain", "tab\tctl\x01", "\xc3\xbc", "\xe6\x97\xa5",
                                       "\xf0\x9f\x98\x80", "\xef\xbf\xbf", "\xf4\x8f\xbf\xbf"};
    static const char *const bad[] = {
        "\xff", "a\x80", "\xc0\xaf",         /* overlong '/' */
        "\xc3",                              /* truncated */
        "\xe0\x80\xaf",                      /* overlong */
        "\xed\xa0\x80",                      /* surrogate */
        "\xf4\x90\x80\x80",                  /* > U+10FFFF */
        "\xf8\x88\x80\x80\x80", "\xe6\x97",  /* truncated 3-byte */
        "ok\xc3(",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (!strata_s3_utf8_valid(good[i]))
            fail_msg("good %zu refused", i);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (strata_s3_utf8_valid(bad[i]))
            fail_msg("bad %zu accepted", i);
}

/* CreateBucketConfiguration elements Strata does not act on are refused. */
static void test_bucket_config_extras(void **state)
{
    (void)state;
    static const char *const extra[] = {
        "<Location><Name>usw2-az1</Name><Type>AvailabilityZone</Type></Location>",
        "<Bucket><DataRedundancy>SingleAvailabilityZone</DataRedundancy>"
        "<Type>Directory</Type></Bucket>",
        "<Tags><Tag><Key>k</Key><Value>v</Value></Tag></Tags>",
    };
    char region[32], body[512];
    for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
        snprintf(body, sizeof(body),
                 "<CreateBucketConfiguration><LocationConstraint>eu-west-1"
                 "</LocationConstraint>%s</CreateBucketConfiguration>",
                 extra[i]);
        assert_int_equal(strata_xml_location_parse(body, strlen(body), region, sizeof(region)),
                         S3E_NotImplemented);
    }
    const char *ok = "<CreateBucketConfiguration> <LocationConstraint>eu-west-1"
                     "</LocationConstraint><!-- c --></CreateBucketConfiguration>";
    assert_int_equal(strata_xml_location_parse(ok, strlen(ok), region, sizeof(region)), S3E_NONE);
    assert_string_equal(region, "eu-west-1");
}

/* RestoreRequest: Days and the retrieval tier checked, SELECT restores 501. */
static void test_restore_request(void **state)
{
    (void)state;
    static const struct {
        const char *xml;
        enum s3_err want;
        unsigned days;
    } cases[] = {
        {"<RestoreRequest><Days>7</Days></RestoreRequest>", S3E_NONE, 7},
        {"<RestoreRequest><Days>1</Days><GlacierJobParameters><Tier>Bulk</Tier>"
         "</GlacierJobParameters><Description>d</Description></RestoreRequest>",
         S3E_NONE, 1},
        {"<RestoreRequest><Tier>Expedited</Tier></RestoreRequest>", S3E_NONE, 0},
        {"<RestoreRequest><Days>0</Days></RestoreRequest>", S3E_MalformedXML, 0},
        {"<RestoreRequest><Days>2147483648</Days></RestoreRequest>", S3E_MalformedXML, 0},
        {"<RestoreRequest><Days> 3</Days></RestoreRequest>", S3E_MalformedXML, 0},
        {"<RestoreRequest><Tier>standard</Tier></RestoreRequest>", S3E_MalformedXML, 0},
        {"<RestoreRequest><GlacierJobParameters/></RestoreRequest>", S3E_MalformedXML, 0},
        {"<RestoreRequest><Extra/></RestoreRequest>", S3E_MalformedXML, 0},
        {"<Restore><Days>1</Days></Restore>", S3E_MalformedXML, 0},
        {"<RestoreRequest><Type>SELECT</Type></RestoreRequest>", S3E_NotImplemented, 0},
        {"<RestoreRequest><Type>GET</Type></RestoreRequest>", S3E_MalformedXML, 0},
        {"<RestoreRequest><OutputLocation/></RestoreRequest>", S3E_NotImplemented, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unsigned days = 99;
        assert_int_equal(strata_xml_restore_parse(cases[i].xml, strlen(cases[i].xml), &days),
                         cases[i].want);
        if (cases[i].want == S3E_NONE)
            assert_int_equal(days, cases[i].days);
    }
}

int main(void)
{
    xmlInitParser();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_doctype_refused),
        cmocka_unit_test(test_escape_controls),
        cmocka_unit_test(test_utf8_valid),
        cmocka_unit_test(test_bucket_config_extras),
        cmocka_unit_test(test_restore_request),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    xmlCleanupParser();
    return rc;
}
