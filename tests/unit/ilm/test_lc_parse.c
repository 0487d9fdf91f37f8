/*
 * test_lc_parse.c - LifecycleConfiguration parsing and validation
 * (ilm/lc_parse.c) against the examples of AWS's "Examples of S3 Lifecycle
 * configurations" and the errors AWS answers for bad documents.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "strata/ilm.h"

#define NS "<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
#define END "</LifecycleConfiguration>"

static int parse(const char *xml, struct strata_lc_config *c, struct strata_lc_error *e)
{
    return strata_lc_config_parse(xml, strlen(xml), c, e);
}

/* The document must be refused with fault; nothing is returned. */
static void refused(const char *xml, int rc, int fault)
{
    struct strata_lc_config c;
    struct strata_lc_error e;
    int got = parse(xml, &c, &e);
    if (got != rc || e.fault != fault)
        fprintf(stderr, "doc: %s\n  rc %d fault %d (%s)\n", xml, got, e.fault, e.msg);
    assert_int_equal(got, rc);
    assert_int_equal(e.fault, fault);
    assert_null(c.rules);
    assert_int_equal(c.nrules, 0);
}

static void malformed(const char *xml)
{
    refused(xml, STRATA_EINVAL, STRATA_LC_MALFORMED);
}

static void invalid_arg(const char *xml)
{
    refused(xml, STRATA_EINVAL, STRATA_LC_INVALID_ARG);
}

/* AWS example 1: a prefix filter, expiration after 3650 days. */
static void test_prefix_filter(void **state)
{
    (void)state;
    struct strata_lc_config c;
    struct strata_lc_error e;
    assert_int_equal(parse(NS "<Rule><ID>ExampleRule</ID><Filter><Prefix>tax/</Prefix></Filter>"
                              "<Status>Enabled</Status><Expiration><Days>3650</Days></Expiration>"
                              "</Rule>" END,
                           &c, &e),
                     0);
    assert_int_equal(c.nrules, 1);
    assert_string_equal(c.rules[0].id, "ExampleRule");
    assert_true(c.rules[0].enabled);
    assert_false(c.rules[0].legacy_prefix);
    assert_string_equal(c.rules[0].filter.prefix, "tax/");
    assert_int_equal(c.rules[0].exp_days, 3650);
    strata_lc_config_fini(&c);
}

/* The legacy top-level Prefix (awscli, MLflow) and an empty Filter. */
static void test_legacy_prefix_and_empty_filter(void **state)
{
    (void)state;
    struct strata_lc_config c;
    assert_int_equal(parse("<LifecycleConfiguration><Rule><ID>old</ID><Prefix>logs/</Prefix>"
                           "<Status>Disabled</Status><Expiration><Days>1</Days></Expiration>"
                           "</Rule><Rule><Filter></Filter><Status>Enabled</Status>"
                           "<AbortIncompleteMultipartUpload><DaysAfterInitiation>7"
                           "</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>" END,
                           &c, NULL),
                     0);
    assert_int_equal(c.nrules, 2);
    assert_true(c.rules[0].legacy_prefix);
    assert_false(c.rules[0].enabled);
    assert_string_equal(c.rules[0].filter.prefix, "logs/");
    assert_null(c.rules[1].filter.prefix);
    assert_int_equal(c.rules[1].abort_days, 7);
    assert_string_equal(c.rules[1].id, "rule-1"); /* made up, as AWS does */
    strata_lc_config_fini(&c);
}

/* AWS example: And of a prefix and two tags, sizes; a Tag alone. */
static void test_tag_and_size(void **state)
{
    (void)state;
    struct strata_lc_config c;
    assert_int_equal(
        parse(NS "<Rule><ID>a</ID><Filter><And><Prefix>tax/</Prefix>"
                 "<Tag><Key>key1</Key><Value>value1</Value></Tag>"
                 "<Tag><Key>key2</Key><Value>value2</Value></Tag>"
                 "<ObjectSizeGreaterThan>500</ObjectSizeGreaterThan>"
                 "<ObjectSizeLessThan>64000</ObjectSizeLessThan></And></Filter>"
                 "<Status>Enabled</Status><Expiration><Date>2027-01-01T00:00:00.000Z</Date>"
                 "</Expiration></Rule>"
                 "<Rule><ID>b</ID><Filter><Tag><Key>k</Key><Value></Value></Tag></Filter>"
                 "<Status>Enabled</Status><NoncurrentVersionExpiration><NoncurrentDays>30"
                 "</NoncurrentDays><NewerNoncurrentVersions>2</NewerNoncurrentVersions>"
                 "</NoncurrentVersionExpiration></Rule>"
                 "<Rule><ID>c</ID><Filter><ObjectSizeGreaterThan>0</ObjectSizeGreaterThan>"
                 "</Filter><Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true"
                 "</ExpiredObjectDeleteMarker></Expiration></Rule>" END,
              &c, NULL),
        0);
    assert_int_equal(c.nrules, 3);
    const struct strata_lc_filter *f = &c.rules[0].filter;
    assert_string_equal(f->prefix, "tax/");
    assert_int_equal(f->ntags, 2);
    assert_string_equal(f->tags[1].key, "key2");
    assert_string_equal(f->tags[1].value, "value2");
    assert_true(f->has_size_gt && f->has_size_lt);
    assert_int_equal(f->size_gt, 500);
    assert_int_equal(f->size_lt, 64000);
    assert_int_equal(c.rules[0].exp_date_ms, 1798761600000LL); /* 2027-01-01 */
    assert_int_equal(c.rules[1].filter.ntags, 1);
    assert_string_equal(c.rules[1].filter.tags[0].value, "");
    assert_int_equal(c.rules[1].nc_days, 30);
    assert_int_equal(c.rules[1].nc_newer, 2);
    assert_true(c.rules[2].exp_delete_marker);
    assert_true(c.rules[2].filter.has_size_gt);
    strata_lc_config_fini(&c);
}

/* Transitions parse (their values: test_lc_transition.c); a bad class or
 * Days with Date is the client's error. */
static void test_transition_validation(void **state)
{
    (void)state;
    struct strata_lc_config c;
    struct strata_lc_error e;
    const char *ok = NS "<Rule><ID>t</ID><Filter/><Status>Enabled</Status><Transition><Days>30"
                        "</Days><StorageClass>STANDARD_IA</StorageClass></Transition></Rule>" END;
    assert_int_equal(parse(ok, &c, &e), 0);
    assert_true(c.rules[0].has_transition);
    strata_lc_config_fini(&c);
    refused(NS "<Rule><ID>t</ID><Filter/><Status>Enabled</Status><Transition><Days>30</Days>"
               "<StorageClass>PLATINUM</StorageClass></Transition></Rule>" END,
            STRATA_EINVAL, STRATA_LC_INVALID_CLASS);
    malformed(NS "<Rule><ID>t</ID><Filter/><Status>Enabled</Status><Transition><Days>30</Days>"
                 "<Date>2027-01-01T00:00:00Z</Date><StorageClass>GLACIER</StorageClass>"
                 "</Transition></Rule>" END);
}

/* Dates are kept exactly, before 1970 and at the epoch too (a Transition
 * Date there once read as Days 0): Expiration and Transition alike, years
 * 0000..9999; a time other than midnight is InvalidArgument, a year of five
 * digits is no ISO 8601 date. */
static void test_dates_any_year(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t ms;
    } dates[] = {{"1015-01-01T00:00:00Z", -30136924800000LL},
                 {"1969-12-31T00:00:00.000Z", -86400000LL},
                 {"1970-01-01", 0},
                 {"0000-01-01T00:00:00Z", -62167219200000LL},
                 {"9999-12-31T00:00:00+00:00", 253402214400000LL}};
    for (size_t i = 0; i < sizeof(dates) / sizeof(dates[0]); i++) {
        char doc[512];
        snprintf(doc, sizeof(doc),
                 NS "<Rule><ID>e</ID><Filter/><Status>Enabled</Status><Expiration><Date>%s"
                    "</Date></Expiration></Rule><Rule><ID>t</ID><Filter/><Status>Enabled"
                    "</Status><Transition><Date>%s</Date><StorageClass>GLACIER</StorageClass>"
                    "</Transition></Rule>" END,
                 dates[i].text, dates[i].text);
        struct strata_lc_config c;
        struct strata_lc_error e;
        assert_int_equal(parse(doc, &c, &e), 0);
        assert_true(c.rules[0].exp_has_date);
        assert_int_equal(c.rules[0].exp_date_ms, dates[i].ms);
        assert_int_equal(c.rules[0].exp_days, 0);
        assert_int_equal(c.rules[1].ntr, 1);
        assert_true(c.rules[1].tr[0].has_date);
        assert_int_equal(c.rules[1].tr[0].date_ms, dates[i].ms);
        assert_int_equal(c.rules[1].tr[0].days, 0);
        strata_lc_config_fini(&c);
    }
    /* A Date before 1970 is a Date: mixed with Days it is refused. */
    refused(NS "<Rule><ID>t</ID><Filter/><Status>Enabled</Status><Transition><Date>"
               "1969-12-31T00:00:00Z</Date><StorageClass>GLACIER</StorageClass></Transition>"
               "<Transition><Days>30</Days><StorageClass>DEEP_ARCHIVE</StorageClass>"
               "</Transition></Rule>" END,
            STRATA_EINVAL, STRATA_LC_INVALID_REQ);
    invalid_arg(NS "<Rule><ID>t</ID><Filter/><Status>Enabled</Status><Transition><Date>"
                   "1015-01-01T12:00:00Z</Date><StorageClass>GLACIER</StorageClass>"
                   "</Transition></Rule>" END);
    invalid_arg(NS "<Rule><ID>e</ID><Filter/><Status>Enabled</Status><Expiration><Date>"
                   "1969-12-31T23:59:59Z</Date></Expiration></Rule>" END);
    malformed(NS "<Rule><ID>e</ID><Filter/><Status>Enabled</Status><Expiration><Date>"
                 "10000-01-01T00:00:00Z</Date></Expiration></Rule>" END);
    malformed(NS "<Rule><ID>t</ID><Filter/><Status>Enabled</Status><Transition><Date>"
                 "-001-01-01T00:00:00Z</Date><StorageClass>GLACIER</StorageClass>"
                 "</Transition></Rule>" END);
}

static void test_malformed(void **state)
{
    (void)state;
    malformed("not xml");
    malformed("<LifecycleConfiguration/>");            /* no rule */
    malformed("<Lifecycle><Rule/></Lifecycle>");        /* wrong root */
    malformed(NS "<Rule><ID>x</ID><Filter/><Expiration><Days>1</Days></Expiration></Rule>" END);
    malformed(NS "<Rule><Filter/><Status>On</Status><Expiration><Days>1</Days></Expiration>"
                 "</Rule>" END);
    /* both Filter and Prefix; neither */
    malformed(NS "<Rule><Prefix>a</Prefix><Filter/><Status>Enabled</Status><Expiration><Days>1"
                 "</Days></Expiration></Rule>" END);
    malformed(NS "<Rule><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>" END);
    /* two predicates without And */
    malformed(NS "<Rule><Filter><Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter>"
                 "<Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>" END);
    /* Days and Date; Days with ExpiredObjectDeleteMarker */
    malformed(NS "<Rule><Filter/><Status>Enabled</Status><Expiration><Days>1</Days>"
                 "<Date>2027-01-01T00:00:00Z</Date></Expiration></Rule>" END);
    malformed(NS "<Rule><Filter/><Status>Enabled</Status><Expiration><Days>1</Days>"
                 "<ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>"
                 "</Rule>" END);
    malformed(NS "<Rule><Filter/><Status>Enabled</Status><Expiration><Days>ten</Days>"
                 "</Expiration></Rule>" END);
    malformed(NS "<Rule><Filter/><Status>Enabled</Status><Expiration><Days>1</Days>"
                 "</Expiration><Bogus/></Rule>" END);
    malformed(NS "<Rule><Filter/><Status>Enabled</Status><Expiration><Days>1</Days>"
                 "</Expiration><Expiration><Days>2</Days></Expiration></Rule>" END);
}

static void test_invalid_argument(void **state)
{
    (void)state;
    invalid_arg(NS "<Rule><Filter/><Status>Enabled</Status><Expiration><Days>0</Days>"
                   "</Expiration></Rule>" END);
    invalid_arg(NS "<Rule><Filter/><Status>Enabled</Status><Expiration><Days>-3</Days>"
                   "</Expiration></Rule>" END);
    invalid_arg(NS "<Rule><Filter/><Status>Enabled</Status><Expiration>"
                   "<Date>2027-01-01T10:00:00Z</Date></Expiration></Rule>" END);
    invalid_arg(NS "<Rule><Filter/><Status>Enabled</Status><NoncurrentVersionExpiration>"
                   "<NoncurrentDays>0</NoncurrentDays></NoncurrentVersionExpiration></Rule>" END);
    invalid_arg(NS "<Rule><Filter/><Status>Enabled</Status><NoncurrentVersionExpiration>"
                   "<NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>101"
                   "</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>" END);
    invalid_arg(NS "<Rule><Filter/><Status>Enabled</Status><AbortIncompleteMultipartUpload>"
                   "<DaysAfterInitiation>0</DaysAfterInitiation>"
                   "</AbortIncompleteMultipartUpload></Rule>" END);
    /* same ID twice */
    invalid_arg(NS "<Rule><ID>x</ID><Filter/><Status>Enabled</Status><Expiration><Days>1</Days>"
                   "</Expiration></Rule><Rule><ID>x</ID><Filter/><Status>Enabled</Status>"
                   "<Expiration><Days>2</Days></Expiration></Rule>" END);
    /* sizes the wrong way round; duplicate tag keys */
    invalid_arg(NS "<Rule><Filter><And><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan>"
                   "<ObjectSizeLessThan>10</ObjectSizeLessThan></And></Filter>"
                   "<Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>" END);
    invalid_arg(NS "<Rule><Filter><And><Tag><Key>k</Key><Value>1</Value></Tag>"
                   "<Tag><Key>k</Key><Value>2</Value></Tag></And></Filter>"
                   "<Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>" END);
    /* ID over 255 characters */
    char doc[1024], id[300];
    memset(id, 'i', 256);
    id[256] = '\0';
    snprintf(doc, sizeof(doc), NS "<Rule><ID>%s</ID><Filter/><Status>Enabled</Status>"
                                  "<Expiration><Days>1</Days></Expiration></Rule>" END, id);
    invalid_arg(doc);
}

static void test_invalid_request(void **state)
{
    (void)state;
    /* no action */
    refused(NS "<Rule><ID>x</ID><Filter/><Status>Enabled</Status></Rule>" END, STRATA_EINVAL,
            STRATA_LC_INVALID_REQ);
    refused(NS "<Rule><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>"
               "<Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>1"
               "</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>" END,
            STRATA_EINVAL, STRATA_LC_INVALID_REQ);
    refused(NS "<Rule><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>"
               "<Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true"
               "</ExpiredObjectDeleteMarker></Expiration></Rule>" END,
            STRATA_EINVAL, STRATA_LC_INVALID_REQ);
}

/* 1000 rules are fine, 1001 are not. */
static void test_rule_limit(void **state)
{
    (void)state;
    for (int n = 1000; n <= 1001; n++) {
        size_t cap = (size_t)n * 200 + 200, len = 0;
        char *doc = malloc(cap);
        assert_non_null(doc);
        len += (size_t)snprintf(doc + len, cap - len, NS);
        for (int i = 0; i < n; i++)
            len += (size_t)snprintf(doc + len, cap - len,
                                    "<Rule><ID>r%d</ID><Filter><Prefix>p%d/</Prefix></Filter>"
                                    "<Status>Enabled</Status><Expiration><Days>%d</Days>"
                                    "</Expiration></Rule>",
                                    i, i, i + 1);
        len += (size_t)snprintf(doc + len, cap - len, END);
        struct strata_lc_config c;
        struct strata_lc_error e;
        int rc = strata_lc_config_parse(doc, len, &c, &e);
        if (n == 1000) {
            assert_int_equal(rc, 0);
            assert_int_equal(c.nrules, 1000);
            assert_int_equal(c.rules[999].exp_days, 1000);
            strata_lc_config_fini(&c);
        } else {
            assert_int_equal(rc, STRATA_EINVAL);
            assert_int_equal(e.fault, STRATA_LC_MALFORMED);
        }
        free(doc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix_filter),
        cmocka_unit_test(test_legacy_prefix_and_empty_filter),
        cmocka_unit_test(test_tag_and_size),
        cmocka_unit_test(test_transition_validation),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_invalid_argument),
        cmocka_unit_test(test_invalid_request),
        cmocka_unit_test(test_rule_limit),
        cmocka_unit_test(test_dates_any_year),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
