/*
 * test_lc_match.c - rule matching and due dates (ilm/lc_match.c): every
 * filter kind, disabled rules, AWS's rounding of due dates to the next
 * midnight UTC (and to the next lifecycle-day boundary with a short day),
 * and precedence when several rules match one object (AWS: the shorter
 * expiration wins).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "strata/ilm.h"

#define NS "<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
#define END "</LifecycleConfiguration>"
#define DAY 86400000LL

static void load(const char *xml, struct strata_lc_config *c)
{
    assert_int_equal(strata_lc_config_parse(xml, strlen(xml), c, NULL), 0);
}

static struct strata_lc_obj obj(const char *key, uint64_t size, const struct strata_kv *tags,
                                size_t ntags)
{
    struct strata_lc_obj o = {.key = key, .size = size, .tags = tags, .ntags = ntags};
    return o;
}

static void test_due_rounding(void **state)
{
    (void)state;
    /* AWS: object created 2012-12-21 10:30 UTC (1356085800), 1 day ->
     * due 2012-12-23 00:00 UTC. */
    assert_int_equal(strata_lc_due_ms(1356085800000LL, 1, DAY), 1356220800000LL);
    /* exactly midnight stays */
    assert_int_equal(strata_lc_due_ms(1356220800000LL - DAY, 1, DAY), 1356220800000LL);
    /* 2-second lifecycle days: 101.5 s + 2 days = 105.5 s -> 106 s */
    assert_int_equal(strata_lc_due_ms(101500, 2, 2000), 106000);
    assert_int_equal(strata_lc_due_ms(100000, 1, 2000), 102000);
    /* day_ms 0 means a real day */
    assert_int_equal(strata_lc_due_ms(1356085800000LL, 1, 0), 1356220800000LL);
}

static void test_every_filter_kind(void **state)
{
    (void)state;
    struct strata_lc_config c;
    load(NS "<Rule><ID>prefix</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status>"
            "<Expiration><Days>1</Days></Expiration></Rule>"
            "<Rule><ID>tag</ID><Filter><Tag><Key>class</Key><Value>tmp</Value></Tag></Filter>"
            "<Status>Enabled</Status><Expiration><Days>2</Days></Expiration></Rule>"
            "<Rule><ID>big</ID><Filter><ObjectSizeGreaterThan>1000</ObjectSizeGreaterThan>"
            "</Filter><Status>Enabled</Status><Expiration><Days>3</Days></Expiration></Rule>"
            "<Rule><ID>small</ID><Filter><ObjectSizeLessThan>10</ObjectSizeLessThan></Filter>"
            "<Status>Enabled</Status><Expiration><Days>4</Days></Expiration></Rule>"
            "<Rule><ID>and</ID><Filter><And><Prefix>docs/</Prefix><Tag><Key>a</Key><Value>1"
            "</Value></Tag><Tag><Key>b</Key><Value>2</Value></Tag><ObjectSizeGreaterThan>100"
            "</ObjectSizeGreaterThan><ObjectSizeLessThan>200</ObjectSizeLessThan></And>"
            "</Filter><Status>Enabled</Status><Expiration><Days>5</Days></Expiration></Rule>" END,
         &c);
    const struct strata_lc_filter *prefix = &c.rules[0].filter, *tag = &c.rules[1].filter,
                                  *big = &c.rules[2].filter, *small = &c.rules[3].filter,
                                  *and = &c.rules[4].filter;
    struct strata_kv tmp[] = {{"class", "tmp"}};
    struct strata_kv other[] = {{"class", "keep"}};
    struct strata_kv ab[] = {{"b", "2"}, {"x", "y"}, {"a", "1"}};
    struct strata_kv a_only[] = {{"a", "1"}};
    struct strata_lc_obj o;

    o = obj("logs/x", 500, NULL, 0);
    assert_true(strata_lc_filter_match(prefix, &o));
    o = obj("log/x", 500, NULL, 0);
    assert_false(strata_lc_filter_match(prefix, &o));
    o = obj("LOGS/x", 500, NULL, 0); /* case-sensitive, as AWS */
    assert_false(strata_lc_filter_match(prefix, &o));

    o = obj("k", 500, tmp, 1);
    assert_true(strata_lc_filter_match(tag, &o));
    o = obj("k", 500, other, 1);
    assert_false(strata_lc_filter_match(tag, &o));
    o = obj("k", 500, NULL, 0);
    assert_false(strata_lc_filter_match(tag, &o));

    /* strict bounds */
    o = obj("k", 1000, NULL, 0);
    assert_false(strata_lc_filter_match(big, &o));
    o = obj("k", 1001, NULL, 0);
    assert_true(strata_lc_filter_match(big, &o));
    o = obj("k", 10, NULL, 0);
    assert_false(strata_lc_filter_match(small, &o));
    o = obj("k", 9, NULL, 0);
    assert_true(strata_lc_filter_match(small, &o));

    /* And: every predicate, tags in any order, extra tags fine */
    o = obj("docs/r", 150, ab, 3);
    assert_true(strata_lc_filter_match(and, &o));
    o = obj("docs/r", 150, a_only, 1);
    assert_false(strata_lc_filter_match(and, &o));
    o = obj("docs/r", 250, ab, 3);
    assert_false(strata_lc_filter_match(and, &o));
    o = obj("doc/r", 150, ab, 3);
    assert_false(strata_lc_filter_match(and, &o));
    strata_lc_config_fini(&c);
}

/* Overlapping rules: the earliest expiration applies; disabled rules and
 * non-matching rules never do; Date and Days compete on their due dates. */
static void test_precedence(void **state)
{
    (void)state;
    struct strata_lc_config c;
    load(NS "<Rule><ID>all-30</ID><Filter/><Status>Enabled</Status>"
            "<Expiration><Days>30</Days></Expiration></Rule>"
            "<Rule><ID>logs-7</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status>"
            "<Expiration><Days>7</Days></Expiration></Rule>"
            "<Rule><ID>off-1</ID><Filter/><Status>Disabled</Status>"
            "<Expiration><Days>1</Days></Expiration></Rule>"
            "<Rule><ID>date</ID><Filter><Prefix>logs/old/</Prefix></Filter>"
            "<Status>Enabled</Status><Expiration><Date>2013-01-01T00:00:00Z</Date></Expiration>"
            "</Rule>" END,
         &c);
    int64_t mtime = 1356085800000LL; /* 2012-12-21 10:30 UTC */
    int64_t due = 0;
    struct strata_lc_obj o = obj("data/x", 1, NULL, 0);
    const struct strata_lc_rule *r = strata_lc_expiry(&c, &o, mtime, DAY, &due);
    assert_non_null(r);
    assert_string_equal(r->id, "all-30");
    assert_int_equal(due, strata_lc_due_ms(mtime, 30, DAY));
    o = obj("logs/x", 1, NULL, 0);
    r = strata_lc_expiry(&c, &o, mtime, DAY, &due);
    assert_string_equal(r->id, "logs-7");
    assert_int_equal(due, 1356739200000LL); /* 2012-12-29 00:00 UTC */
    /* the Date (2013-01-01) is later than 7 days: logs-7 still wins ... */
    o = obj("logs/old/x", 1, NULL, 0);
    r = strata_lc_expiry(&c, &o, mtime, DAY, &due);
    assert_string_equal(r->id, "logs-7");
    /* ... but for an object written on 2012-12-30 the Date comes first */
    r = strata_lc_expiry(&c, &o, mtime + 9 * DAY, DAY, &due);
    assert_string_equal(r->id, "date");
    assert_int_equal(due, 1356998400000LL); /* 2013-01-01 */
    strata_lc_config_fini(&c);

    load(NS "<Rule><ID>off</ID><Filter/><Status>Disabled</Status>"
            "<Expiration><Days>1</Days></Expiration></Rule>" END,
         &c);
    o = obj("x", 1, NULL, 0);
    assert_null(strata_lc_expiry(&c, &o, mtime, DAY, &due));
    strata_lc_config_fini(&c);
}

static void test_noncurrent(void **state)
{
    (void)state;
    struct strata_lc_config c;
    load(NS "<Rule><ID>keep2</ID><Filter/><Status>Enabled</Status><NoncurrentVersionExpiration>"
            "<NoncurrentDays>10</NoncurrentDays><NewerNoncurrentVersions>2"
            "</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>"
            "<Rule><ID>tmp-1</ID><Filter><Prefix>tmp/</Prefix></Filter><Status>Enabled</Status>"
            "<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays>"
            "</NoncurrentVersionExpiration></Rule>" END,
         &c);
    int64_t since = 100 * DAY, due = 0;
    struct strata_lc_obj o = obj("a", 1, NULL, 0);
    /* the two newest noncurrent versions are retained */
    assert_null(strata_lc_noncurrent_expiry(&c, &o, since, 0, DAY, &due));
    assert_null(strata_lc_noncurrent_expiry(&c, &o, since, 1, DAY, &due));
    const struct strata_lc_rule *r = strata_lc_noncurrent_expiry(&c, &o, since, 2, DAY, &due);
    assert_string_equal(r->id, "keep2");
    assert_int_equal(due, 110 * DAY);
    /* tmp/: both rules match; the one without retention is due first */
    o = obj("tmp/a", 1, NULL, 0);
    r = strata_lc_noncurrent_expiry(&c, &o, since, 0, DAY, &due);
    assert_string_equal(r->id, "tmp-1");
    assert_int_equal(due, 101 * DAY);
    /* no current-version expiration in this configuration */
    assert_null(strata_lc_expiry(&c, &o, since, DAY, &due));
    strata_lc_config_fini(&c);
}

/* Expiration Days removes an expired object delete marker once the marker
 * is that old; the earliest rule wins (ExpiredObjectDeleteMarker at once);
 * tag or size filters, Date rules and disabled rules never do. */
static void test_days_markers(void **state)
{
    (void)state;
    struct strata_lc_config c;
    load(NS "<Rule><ID>d3</ID><Filter><Prefix>d/</Prefix></Filter><Status>Enabled</Status>"
            "<Expiration><Days>3</Days></Expiration></Rule>"
            "<Rule><ID>tag1</ID><Filter><Tag><Key>a</Key><Value>b</Value></Tag></Filter>"
            "<Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>"
            "<Rule><ID>size1</ID><Filter><ObjectSizeLessThan>10</ObjectSizeLessThan></Filter>"
            "<Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>"
            "<Rule><ID>off1</ID><Filter/><Status>Disabled</Status>"
            "<Expiration><Days>1</Days></Expiration></Rule>"
            "<Rule><ID>date</ID><Filter><Prefix>dt/</Prefix></Filter><Status>Enabled</Status>"
            "<Expiration><Date>1970-01-01T00:00:00Z</Date></Expiration></Rule>"
            "<Rule><ID>d5</ID><Filter><Prefix>d/now/</Prefix></Filter><Status>Enabled</Status>"
            "<Expiration><Days>5</Days></Expiration></Rule>"
            "<Rule><ID>edm</ID><Filter><Prefix>d/now/</Prefix></Filter><Status>Enabled</Status>"
            "<Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker>"
            "</Expiration></Rule>" END,
         &c);
    int64_t due = -1;
    const struct strata_lc_rule *r = strata_lc_marker_rule(&c, "d/x", 5 * DAY + 1, DAY, &due);
    assert_non_null(r);
    assert_string_equal(r->id, "d3");
    assert_int_equal(due, 9 * DAY); /* the marker's mtime + 3 days, next day boundary */
    r = strata_lc_marker_rule(&c, "d/now/x", 5 * DAY + 1, DAY, &due);
    assert_string_equal(r->id, "edm");
    assert_int_equal(due, 5 * DAY + 1);
    assert_null(strata_lc_marker_rule(&c, "dt/x", 0, DAY, &due));
    assert_null(strata_lc_marker_rule(&c, "x", 0, DAY, &due));
    /* The Date at the epoch is a date (due at once), not "no expiration". */
    struct strata_lc_obj o = obj("dt/x", 1, NULL, 0);
    r = strata_lc_expiry(&c, &o, 7 * DAY, DAY, &due);
    assert_non_null(r);
    assert_string_equal(r->id, "date");
    assert_int_equal(due, 0);
    strata_lc_config_fini(&c);
}

static void test_markers_and_uploads(void **state)
{
    (void)state;
    struct strata_lc_config c;
    load(NS "<Rule><ID>edm</ID><Filter><Prefix>m/</Prefix></Filter><Status>Enabled</Status>"
            "<Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker>"
            "</Expiration></Rule>"
            "<Rule><ID>edm-false</ID><Filter/><Status>Enabled</Status>"
            "<Expiration><ExpiredObjectDeleteMarker>false</ExpiredObjectDeleteMarker>"
            "</Expiration></Rule>"
            "<Rule><ID>abort-3</ID><Filter><Prefix>up/</Prefix></Filter><Status>Enabled</Status>"
            "<AbortIncompleteMultipartUpload><DaysAfterInitiation>3</DaysAfterInitiation>"
            "</AbortIncompleteMultipartUpload></Rule>"
            "<Rule><ID>abort-1</ID><Filter><Prefix>up/now/</Prefix></Filter>"
            "<Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>1"
            "</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>" END,
         &c);
    int64_t due = -1;
    assert_string_equal(strata_lc_marker_rule(&c, "m/x", 5 * DAY + 1, DAY, &due)->id, "edm");
    assert_int_equal(due, 5 * DAY + 1); /* at once */
    assert_null(strata_lc_marker_rule(&c, "n/x", 0, DAY, &due)); /* "false" does nothing */
    const struct strata_lc_rule *r = strata_lc_abort_rule(&c, "up/x", 5 * DAY + 1, DAY, &due);
    assert_string_equal(r->id, "abort-3");
    assert_int_equal(due, 9 * DAY);
    r = strata_lc_abort_rule(&c, "up/now/x", 5 * DAY + 1, DAY, &due);
    assert_string_equal(r->id, "abort-1");
    assert_int_equal(due, 7 * DAY);
    assert_null(strata_lc_abort_rule(&c, "down/x", 0, DAY, &due));
    /* expiration rules do not expire uploads, nor the reverse */
    struct strata_lc_obj o = obj("up/x", 1, NULL, 0);
    assert_null(strata_lc_expiry(&c, &o, 0, DAY, &due));
    strata_lc_config_fini(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_due_rounding),
        cmocka_unit_test(test_every_filter_kind),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_noncurrent),
        cmocka_unit_test(test_markers_and_uploads),
        cmocka_unit_test(test_days_markers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
