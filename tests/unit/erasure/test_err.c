/*
 * test_err.c - include/strata/err.h: every code's message and log name
 * come from the one table of STRATA_ERR_MAP, success has its own, and
 * anything else (positive, past the last code, INT_MIN) is "unknown".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <limits.h>
#include <string.h>

#include "strata/err.h"

static void test_known_codes(void **state)
{
    (void)state;
    static const struct {
        int code;
        const char *name, *msg;
    } want[] = {
        {0, "OK", "success"},
        {STRATA_ENOTFOUND, "ENOTFOUND", "not found"},
        {STRATA_EIO, "EIO", "input/output error"},
        {STRATA_EPRECOND, "EPRECOND", "precondition failed"},
        {STRATA_EARCHIVED, "EARCHIVED", "data on an archive tier: restore it first"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        assert_string_equal(strata_errname(want[i].code), want[i].name);
        assert_string_equal(strata_strerror(want[i].code), want[i].msg);
    }
}

static void test_unknown_codes(void **state)
{
    (void)state;
    const int bad[] = {1, 7, STRATA_EARCHIVED - 1, -1000, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_string_equal(strata_errname(bad[i]), "EUNKNOWN");
        assert_string_equal(strata_strerror(bad[i]), "unknown error");
    }
}

/* Every code from -1 down to the last has its own name and a message. */
static void test_every_code_named(void **state)
{
    (void)state;
    for (int e = -1; e >= STRATA_EARCHIVED; e--) {
        const char *n = strata_errname(e), *m = strata_strerror(e);
        assert_true(n[0] == 'E' && strcmp(n, "EUNKNOWN") != 0);
        assert_true(m[0] && strcmp(m, "unknown error") != 0);
        for (int f = e + 1; f <= -1; f++)
            assert_string_not_equal(n, strata_errname(f));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_codes),
        cmocka_unit_test(test_unknown_codes),
        cmocka_unit_test(test_every_code_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
