/*
 * test_lc_transition.c - storage classes and tiers (the class map) and
 * which Transition / NoncurrentVersionTransition is due (ilm/lc_transition.c),
 * with the parser's transition validation (AWS: a class once per rule, no
 * Date/Days mix, the 30-day minimum of the IA classes with real days).
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
#define T0 1356085800000LL /* 2012-12-21 10:30 UTC */

static void load(const char *xml, struct strata_lc_config *c)
{
    assert_int_equal(strata_lc_config_parse(xml, strlen(xml), c, NULL), 0);
}

static int refuse(const char *xml)
{
    struct strata_lc_config c;
    struct strata_lc_error e;
    assert_int_equal(strata_lc_config_parse(xml, strlen(xml), &c, &e), STRATA_EINVAL);
    return e.fault;
}

static void test_class_map(void **state)
{
    (void)state;
    struct strata_class_map m;
    strata_class_map_default(&m);
    assert_string_equal(strata_class_map_tier(&m, "STANDARD"), "hot");
    assert_string_equal(strata_class_map_tier(&m, "STANDARD_IA"), "warm");
    assert_string_equal(strata_class_map_tier(&m, "WARM"), "warm");
    assert_string_equal(strata_class_map_tier(&m, "GLACIER"), "compliance");
    assert_string_equal(strata_class_map_tier(&m, "DEEP_ARCHIVE"), "compliance");
    assert_string_equal(strata_class_map_tier(&m, "COMPLIANCE"), "compliance");
    assert_null(strata_class_map_tier(&m, "ONEZONE_IA"));
    assert_null(strata_class_map_tier(&m, "standard")); /* class names are upper case */
    assert_null(strata_class_map_tier(&m, NULL));
    assert_string_equal(strata_class_map_class(&m, "hot"), "STANDARD");
    assert_string_equal(strata_class_map_class(&m, "warm"), "STANDARD_IA");
    assert_string_equal(strata_class_map_class(&m, "compliance"), "GLACIER");
    assert_null(strata_class_map_class(&m, "nowhere"));
    /* Remap and add. */
    assert_int_equal(strata_class_map_set(&m, "GLACIER:archive"), 0);
    assert_string_equal(strata_class_map_tier(&m, "GLACIER"), "archive");
    assert_int_equal(strata_class_map_set(&m, "ONEZONE_IA:warm"), 0);
    assert_string_equal(strata_class_map_tier(&m, "ONEZONE_IA"), "warm");
    size_t n = m.n;
    assert_int_equal(strata_class_map_set(&m, "ONEZONE_IA:hot"), 0);
    assert_int_equal(m.n, n); /* replaced, not added */
    assert_string_equal(strata_class_map_tier(&m, "ONEZONE_IA"), "hot");
    /* Bad specs change nothing. */
    assert_int_equal(strata_class_map_set(&m, "GLACIER"), STRATA_EINVAL);
    assert_int_equal(strata_class_map_set(&m, ":warm"), STRATA_EINVAL);
    assert_int_equal(strata_class_map_set(&m, "glacier:warm"), STRATA_EINVAL);
    assert_int_equal(strata_class_map_set(&m, "GLACIER:Warm"), STRATA_EINVAL);
    assert_int_equal(strata_class_map_set(&m, "GLACIER:"), STRATA_EINVAL);
    assert_string_equal(strata_class_map_tier(&m, "GLACIER"), "archive");
    /* Full. */
    char spec[64];
    int rc = 0;
    for (int i = 0; rc == 0 && i < STRATA_CLASS_MAP_MAX + 1; i++) {
        snprintf(spec, sizeof(spec), "C%d:warm", i);
        rc = strata_class_map_set(&m, spec);
    }
    assert_int_equal(rc, STRATA_ENOSPC);
}

static void test_class_rank(void **state)
{
    (void)state;
    assert_true(strata_lc_class_rank("STANDARD") < strata_lc_class_rank("STANDARD_IA"));
    assert_int_equal(strata_lc_class_rank("STANDARD_IA"), strata_lc_class_rank("WARM"));
    assert_true(strata_lc_class_rank("WARM") < strata_lc_class_rank("INTELLIGENT_TIERING"));
    assert_true(strata_lc_class_rank("INTELLIGENT_TIERING") < strata_lc_class_rank("ONEZONE_IA"));
    assert_true(strata_lc_class_rank("ONEZONE_IA") < strata_lc_class_rank("GLACIER_IR"));
    assert_true(strata_lc_class_rank("GLACIER_IR") < strata_lc_class_rank("GLACIER"));
    assert_int_equal(strata_lc_class_rank("GLACIER"), strata_lc_class_rank("COMPLIANCE"));
    assert_true(strata_lc_class_rank("GLACIER") < strata_lc_class_rank("DEEP_ARCHIVE"));
    assert_int_equal(strata_lc_class_rank("MYCLASS"), 0);
    assert_int_equal(strata_lc_class_rank(NULL), 0);
}

static void test_parse_transitions(void **state)
{
    (void)state;
    struct strata_lc_config c;
    load(NS "<Rule><ID>r</ID><Filter/><Status>Enabled</Status>"
            "<Transition><Days>30</Days><StorageClass>STANDARD_IA</StorageClass></Transition>"
            "<Transition><Days>90</Days><StorageClass>GLACIER</StorageClass></Transition>"
            "<NoncurrentVersionTransition><NoncurrentDays>7</NoncurrentDays>"
            "<StorageClass>WARM</StorageClass><NewerNoncurrentVersions>3"
            "</NewerNoncurrentVersions></NoncurrentVersionTransition></Rule>" END, &c);
    assert_int_equal(c.nrules, 1);
    const struct strata_lc_rule *r = &c.rules[0];
    assert_int_equal(r->ntr, 2);
    assert_int_equal(r->tr[0].days, 30);
    assert_string_equal(r->tr[0].storage_class, "STANDARD_IA");
    assert_int_equal(r->tr[1].days, 90);
    assert_string_equal(r->tr[1].storage_class, "GLACIER");
    assert_int_equal(r->nnctr, 1);
    assert_int_equal(r->nctr[0].days, 7);
    assert_int_equal(r->nctr[0].newer, 3);
    assert_string_equal(r->nctr[0].storage_class, "WARM");
    /* Fine for the parse; the IA minimum is a separate check. */
    struct strata_lc_error e;
    assert_int_equal(strata_lc_check_min_days(&c, &e), 0);
    strata_lc_config_fini(&c);
    load(NS "<Rule><ID>r</ID><Filter/><Status>Enabled</Status>"
            "<Transition><Date>2031-01-01T00:00:00Z</Date><StorageClass>COMPLIANCE"
            "</StorageClass></Transition></Rule>" END, &c);
    assert_int_equal(c.rules[0].tr[0].date_ms, 1924992000000LL);
    strata_lc_config_fini(&c);
    load(NS "<Rule><ID>r</ID><Filter/><Status>Enabled</Status>"
            "<Transition><Days>29</Days><StorageClass>STANDARD_IA</StorageClass></Transition>"
            "</Rule>" END, &c);
    assert_int_equal(strata_lc_check_min_days(&c, &e), STRATA_EINVAL);
    assert_int_equal(e.fault, STRATA_LC_INVALID_ARG);
    strata_lc_config_fini(&c);
    load(NS "<Rule><ID>r</ID><Filter/><Status>Enabled</Status>"
            "<NoncurrentVersionTransition><NoncurrentDays>1</NoncurrentDays>"
            "<StorageClass>ONEZONE_IA</StorageClass></NoncurrentVersionTransition>"
            "</Rule>" END, &c);
    assert_int_equal(strata_lc_check_min_days(&c, &e), STRATA_EINVAL);
    strata_lc_config_fini(&c);
    /* AWS's errors. */
    assert_int_equal(refuse(NS "<Rule><ID>r</ID><Filter/><Status>Enabled</Status>"
                               "<Transition><Days>1</Days><StorageClass>GLACIER</StorageClass>"
                               "</Transition><Transition><Days>5</Days><StorageClass>GLACIER"
                               "</StorageClass></Transition></Rule>" END),
                     STRATA_LC_INVALID_ARG);
    assert_int_equal(refuse(NS "<Rule><ID>r</ID><Filter/><Status>Enabled</Status>"
                               "<Transition><Days>1</Days><StorageClass>GLACIER</StorageClass>"
                               "</Transition><Transition><Date>2031-01-01T00:00:00Z</Date>"
                               "<StorageClass>WARM</StorageClass></Transition></Rule>" END),
                     STRATA_LC_INVALID_REQ);
    assert_int_equal(refuse(NS "<Rule><ID>r</ID><Filter/><Status>Enabled</Status>"
                               "<Transition><Days>1</Days><StorageClass>STANDARD</StorageClass>"
                               "</Transition></Rule>" END),
                     STRATA_LC_INVALID_CLASS);
    assert_int_equal(refuse(NS "<Rule><ID>r</ID><Filter/><Status>Enabled</Status>"
                               "<Transition><Days>1</Days></Transition></Rule>" END),
                     STRATA_LC_MALFORMED);
    assert_int_equal(refuse(NS "<Rule><ID>r</ID><Filter/><Status>Enabled</Status>"
                               "<Transition><Days>1</Days><Date>2031-01-01T00:00:00Z</Date>"
                               "<StorageClass>WARM</StorageClass></Transition></Rule>" END),
                     STRATA_LC_MALFORMED);
}

static void test_transition_due(void **state)
{
    (void)state;
    struct strata_lc_config c;
    load(NS "<Rule><ID>chain</ID><Filter><Prefix>a/</Prefix></Filter><Status>Enabled</Status>"
            "<Transition><Days>30</Days><StorageClass>STANDARD_IA</StorageClass></Transition>"
            "<Transition><Days>90</Days><StorageClass>GLACIER</StorageClass></Transition></Rule>"
            "<Rule><ID>off</ID><Filter/><Status>Disabled</Status>"
            "<Transition><Days>0</Days><StorageClass>DEEP_ARCHIVE</StorageClass></Transition>"
            "</Rule>"
            "<Rule><ID>big</ID><Filter><ObjectSizeGreaterThan>1000</ObjectSizeGreaterThan>"
            "</Filter><Status>Enabled</Status>"
            "<Transition><Days>60</Days><StorageClass>COMPLIANCE</StorageClass></Transition>"
            "</Rule>" END, &c);
    struct strata_lc_obj small = {.key = "a/x", .size = 10};
    struct strata_lc_obj big = {.key = "a/x", .size = 5000};
    struct strata_lc_obj other = {.key = "b/x", .size = 10};
    /* Due 30 days later at midnight UTC (AWS rounds up). */
    int64_t d30 = strata_lc_due_ms(T0, 30, DAY);
    assert_null(strata_lc_transition_due(&c, &small, T0, d30 - 1, DAY));
    const struct strata_lc_transition *t = strata_lc_transition_due(&c, &small, T0, d30, DAY);
    assert_non_null(t);
    assert_string_equal(t->storage_class, "STANDARD_IA");
    /* The coldest stage reached wins: at 90 days GLACIER, not IA. */
    t = strata_lc_transition_due(&c, &small, T0, strata_lc_due_ms(T0, 90, DAY), DAY);
    assert_string_equal(t->storage_class, "GLACIER");
    /* Across rules: the big object reaches COMPLIANCE (60) before GLACIER (90). */
    t = strata_lc_transition_due(&c, &big, T0, strata_lc_due_ms(T0, 60, DAY), DAY);
    assert_string_equal(t->storage_class, "COMPLIANCE");
    t = strata_lc_transition_due(&c, &big, T0, strata_lc_due_ms(T0, 90, DAY), DAY);
    assert_string_equal(t->storage_class, "GLACIER");
    /* The disabled rule never acts; the prefix filter holds. */
    assert_null(strata_lc_transition_due(&c, &other, T0, T0 + 1000 * DAY, DAY));
    /* Short lifecycle days (--lc-day-seconds 2). */
    t = strata_lc_transition_due(&c, &small, 0, 60 * 2000, 2000);
    assert_string_equal(t->storage_class, "STANDARD_IA");
    strata_lc_config_fini(&c);
    /* Date-based: due at the date. */
    load(NS "<Rule><ID>d</ID><Filter/><Status>Enabled</Status>"
            "<Transition><Date>2031-01-01T00:00:00Z</Date><StorageClass>WARM</StorageClass>"
            "</Transition></Rule>" END, &c);
    assert_null(strata_lc_transition_due(&c, &other, T0, 1924992000000LL - 1, DAY));
    assert_non_null(strata_lc_transition_due(&c, &other, T0, 1924992000000LL, DAY));
    strata_lc_config_fini(&c);
}

static void test_nc_transition_due(void **state)
{
    (void)state;
    struct strata_lc_config c;
    load(NS "<Rule><ID>nc</ID><Filter/><Status>Enabled</Status>"
            "<NoncurrentVersionTransition><NoncurrentDays>10</NoncurrentDays>"
            "<StorageClass>STANDARD_IA</StorageClass><NewerNoncurrentVersions>2"
            "</NewerNoncurrentVersions></NoncurrentVersionTransition>"
            "<NoncurrentVersionTransition><NoncurrentDays>40</NoncurrentDays>"
            "<StorageClass>GLACIER</StorageClass></NoncurrentVersionTransition></Rule>" END, &c);
    struct strata_lc_obj o = {.key = "k", .size = 1};
    int64_t d10 = strata_lc_due_ms(T0, 10, DAY), d40 = strata_lc_due_ms(T0, 40, DAY);
    /* The two newest noncurrent versions are kept from the IA move. */
    assert_null(strata_lc_nc_transition_due(&c, &o, T0, 0, d10, DAY));
    assert_null(strata_lc_nc_transition_due(&c, &o, T0, 1, d10, DAY));
    const struct strata_lc_transition *t = strata_lc_nc_transition_due(&c, &o, T0, 2, d10, DAY);
    assert_string_equal(t->storage_class, "STANDARD_IA");
    assert_null(strata_lc_nc_transition_due(&c, &o, T0, 2, d10 - 1, DAY));
    /* GLACIER keeps none: even the newest noncurrent version moves at 40. */
    t = strata_lc_nc_transition_due(&c, &o, T0, 0, d40, DAY);
    assert_string_equal(t->storage_class, "GLACIER");
    strata_lc_config_fini(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_class_map),
        cmocka_unit_test(test_class_rank),
        cmocka_unit_test(test_parse_transitions),
        cmocka_unit_test(test_transition_due),
        cmocka_unit_test(test_nc_transition_due),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
