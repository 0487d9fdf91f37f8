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
#include <stdio.h>
#include <string.h>
#include <time.h>

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

/* The formatter's own calendar against gmtime_r, one time every 5 days (a
 * different second and millisecond each) from year 1 to 9999, and around
 * leap days and the 1970 boundary. */
static void test_iso8601_calendar(void **state)
{
    (void)state;
    const int64_t first = -62135596800000LL, last = 253402300799999LL; /* 0001 .. 9999 */
    int64_t step = 5 * 86400000LL + 3723456; /* 5 days, 1 h 2 min 3.456 s */
    unsigned n = 0;
    for (int64_t ms = first; ms <= last; ms += step, n++) {
        char got[64], want[64];
        strata_iso8601_format(ms, got, sizeof(got));
        int64_t sec = ms / 1000, rem = ms % 1000;
        if (rem < 0) {
            sec--;
            rem += 1000;
        }
        time_t t = (time_t)sec;
        struct tm tm;
        gmtime_r(&t, &tm);
        snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)rem);
        assert_string_equal(got, want);
    }
    assert_true(n > 700000);
    char buf[64];
    strata_iso8601_format(1709210096789LL, buf, sizeof(buf));
    assert_string_equal(buf, "2024-02-29T12:34:56.789Z");
    strata_iso8601_format(951782400000LL, buf, sizeof(buf));
    assert_string_equal(buf, "2000-02-29T00:00:00.000Z");
    strata_iso8601_format(-86400001LL, buf, sizeof(buf));
    assert_string_equal(buf, "1969-12-30T23:59:59.999Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_iso8601),
        cmocka_unit_test(test_iso8601_calendar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
