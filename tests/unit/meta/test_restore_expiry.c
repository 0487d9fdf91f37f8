/*
 * test_restore_expiry.c - the expiry of a restored copy, as AWS computes
 * it: the time of the request plus Days, rounded up to the next midnight
 * UTC (a day boundary of the epoch; shorter test days likewise).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "strata/meta.h"

#define DAY 86400000LL
/* 2026-11-27 00:00:00 UTC */
#define MIDNIGHT 1795737600000LL

static void mid_day_rounds_up_to_midnight(void **state)
{
    (void)state;
    /* 17:05:31.250 plus one day: 2026-11-29 00:00:00 UTC. */
    int64_t now = MIDNIGHT + 17 * 3600000LL + 5 * 60000LL + 31250;
    assert_int_equal(strata_restore_expiry_ms(now, 1, DAY), MIDNIGHT + 2 * DAY);
    assert_int_equal(strata_restore_expiry_ms(now, 30, DAY), MIDNIGHT + 31 * DAY);
    /* One millisecond after midnight still goes to the next one. */
    assert_int_equal(strata_restore_expiry_ms(MIDNIGHT + 1, 1, DAY), MIDNIGHT + 2 * DAY);
}

static void exact_midnight_stays(void **state)
{
    (void)state;
    assert_int_equal(strata_restore_expiry_ms(MIDNIGHT, 1, DAY), MIDNIGHT + DAY);
    assert_int_equal(strata_restore_expiry_ms(MIDNIGHT, 7, DAY), MIDNIGHT + 7 * DAY);
}

static void test_days_are_short(void **state)
{
    (void)state;
    /* --lc-day-seconds 1: a day is a second, rounded up to whole seconds. */
    assert_int_equal(strata_restore_expiry_ms(10500, 1, 1000), 12000);
    assert_int_equal(strata_restore_expiry_ms(10000, 3, 1000), 13000);
    /* 0 or less: a real day. */
    assert_int_equal(strata_restore_expiry_ms(MIDNIGHT + 5, 1, 0), MIDNIGHT + 2 * DAY);
}

static void large_days_do_not_wrap(void **state)
{
    (void)state;
    int64_t e = strata_restore_expiry_ms(MIDNIGHT + 1, 2147483647u, DAY);
    assert_true(e > MIDNIGHT);
    assert_int_equal(e % DAY, 0);
    assert_int_equal(e, MIDNIGHT + 2147483648LL * DAY);
}

/* How long a copy being made may stay silent before another run takes it:
 * an hour of a real day, at least 3 s with test days. */
static void stale_time_is_an_hour_of_a_day(void **state)
{
    (void)state;
    assert_int_equal(strata_restore_stale_ms(DAY), 3600000);
    assert_int_equal(strata_restore_stale_ms(0), 3600000); /* the default day */
    assert_int_equal(strata_restore_stale_ms(1000), 3000);
    assert_int_equal(strata_restore_stale_ms(240000), 10000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mid_day_rounds_up_to_midnight),
        cmocka_unit_test(exact_midnight_stays),
        cmocka_unit_test(test_days_are_short),
        cmocka_unit_test(large_days_do_not_wrap),
        cmocka_unit_test(stale_time_is_an_hour_of_a_day),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
