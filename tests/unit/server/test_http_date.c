/*
 * test_http_date.c - the one HTTP-date parser and formatter and the ISO
 * 8601 formatter (server/http/http_date.c): all three HTTP-date forms, the
 * numeric-zone form of AWS's SigV2 examples, surrounding spaces, and what
 * must be refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "http_date.h"
#include "strata/err.h"

static void test_forms(void **state)
{
    (void)state;
    char buf[64];
    time_t t = 0;
    strata_http_date_format(784111777, buf, sizeof(buf));
    assert_string_equal(buf, "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_int_equal(strata_http_date_parse(buf, &t), 0);
    assert_int_equal(t, 784111777);
    assert_int_equal(strata_http_date_parse("Sunday, 06-Nov-94 08:49:37 GMT", &t), 0);
    assert_int_equal(t, 784111777);
    assert_int_equal(strata_http_date_parse("Sun Nov  6 08:49:37 1994", &t), 0);
    assert_int_equal(t, 784111777);
    /* numeric zones (AWS's SigV2 examples use +0000) */
    assert_int_equal(strata_http_date_parse("Tue, 27 Mar 2007 19:36:42 +0000", &t), 0);
    assert_int_equal(t, 1175024202);
    assert_int_equal(strata_http_date_parse("Tue, 27 Mar 2007 21:36:42 +0200", &t), 0);
    assert_int_equal(t, 1175024202);
    /* surrounding spaces */
    assert_int_equal(strata_http_date_parse("  Sun, 06 Nov 1994 08:49:37 GMT  ", &t), 0);
    assert_int_equal(t, 784111777);
}

static void test_refused(void **state)
{
    (void)state;
    time_t t = 42;
    assert_int_equal(strata_http_date_parse("yesterday", &t), STRATA_EINVAL);
    assert_int_equal(strata_http_date_parse("Sun, 06 Nov 1994 08:49:37 GMT junk", &t),
                     STRATA_EINVAL);
    assert_int_equal(strata_http_date_parse("Sun, 06 Nov 1994", &t), STRATA_EINVAL);
    assert_int_equal(strata_http_date_parse("", &t), STRATA_EINVAL);
    assert_int_equal(strata_http_date_parse(NULL, &t), STRATA_EINVAL);
    assert_int_equal(t, 42);
}

static void test_iso8601(void **state)
{
    (void)state;
    char buf[64];
    strata_iso8601_format(784111777123LL, buf, sizeof(buf));
    assert_string_equal(buf, "1994-11-06T08:49:37.123Z");
    strata_iso8601_format(0, buf, sizeof(buf));
    assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
    /* Before 1970 (lifecycle Dates): floored, four-digit years. */
    strata_iso8601_format(-1, buf, sizeof(buf));
    assert_string_equal(buf, "1969-12-31T23:59:59.999Z");
    strata_iso8601_format(-30136924800000LL, buf, sizeof(buf));
    assert_string_equal(buf, "1015-01-01T00:00:00.000Z");
    strata_iso8601_format(-61693833600000LL, buf, sizeof(buf));
    assert_string_equal(buf, "0015-01-01T00:00:00.000Z");
    strata_iso8601_format(253402214400000LL, buf, sizeof(buf));
    assert_string_equal(buf, "9999-12-31T00:00:00.000Z");
    int64_t ms;
    assert_int_equal(strata_iso8601_parse("1994-11-06T08:49:37.123Z", &ms), 0);
    assert_int_equal(ms, 784111777123LL);
    assert_int_equal(strata_iso8601_parse("1994-11-06T08:49:37Z", &ms), 0);
    assert_int_equal(ms, 784111777000LL);
    assert_int_equal(strata_iso8601_parse("1994-11-06T10:49:37.5+02:00", &ms), 0);
    assert_int_equal(ms, 784111777500LL);
    assert_int_equal(strata_iso8601_parse("1994-11-06T08:49:37.123456Z", &ms), 0);
    assert_int_equal(ms, 784111777123LL);
    assert_int_equal(strata_iso8601_parse("1994-11-06T08:49:37", &ms), STRATA_EINVAL);
    assert_int_equal(strata_iso8601_parse("1994-11-06T08:49:37Zjunk", &ms), STRATA_EINVAL);
    assert_int_equal(strata_iso8601_parse("1994-11-06T08:49:37.Z", &ms), STRATA_EINVAL);
    assert_int_equal(strata_iso8601_parse("1969-12-31T23:59:59Z", &ms), STRATA_EINVAL);
    assert_int_equal(strata_iso8601_parse("tomorrow", &ms), STRATA_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_iso8601),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
