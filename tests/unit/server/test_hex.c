/*
 * test_hex.c - the one hex codec (include/strata/hex.h) used by erasure/,
 * meta/ and server/: digit values, lower-case encoding, validation with and
 * without lower_only, decoding, and that a failed decode leaves out as it
 * was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "strata/hex.h"

static void test_val(void **state)
{
    (void)state;
    const char *digits = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        assert_int_equal(strata_hex_val(digits[i]), i);
        if (i >= 10)
            assert_int_equal(strata_hex_val((char)(digits[i] - 32)), i);
    }
    for (int c = 1; c < 256; c++) {
        bool is = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        assert_int_equal(strata_hex_val((char)c) >= 0, is);
    }
}

static void test_encode_decode(void **state)
{
    (void)state;
    uint8_t in[256], back[256];
    char hex[513];
    for (int i = 0; i < 256; i++)
        in[i] = (uint8_t)i;
    strata_hex_encode(in, sizeof(in), hex);
    assert_int_equal(strlen(hex), 512);
    assert_memory_equal(hex, "000102", 6);
    assert_memory_equal(hex + 506, "fdfeff", 6);
    assert_true(strata_hex_is(hex, 512, true));
    assert_int_equal(strata_hex_decode(hex, 256, back, true), 0);
    assert_memory_equal(back, in, 256);
    strata_hex_encode(in, 0, hex);
    assert_string_equal(hex, "");
}

static void test_cases_and_bad_input(void **state)
{
    (void)state;
    uint8_t out[2] = {7, 7};
    assert_true(strata_hex_is("ABcd", 4, false));
    assert_false(strata_hex_is("ABcd", 4, true));
    assert_int_equal(strata_hex_decode("ABcd", 2, out, false), 0);
    assert_int_equal(out[0], 0xab);
    assert_int_equal(out[1], 0xcd);
    out[0] = out[1] = 7;
    assert_int_equal(strata_hex_decode("ABcd", 2, out, true), -1);
    assert_int_equal(strata_hex_decode("0g12", 2, out, false), -1);
    assert_int_equal(strata_hex_decode("12 4", 2, out, false), -1);
    assert_int_equal(out[0], 7); /* untouched on failure */
    assert_int_equal(out[1], 7);
    assert_false(strata_hex_is("12\0" "4", 4, false));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_val),
        cmocka_unit_test(test_encode_decode),
        cmocka_unit_test(test_cases_and_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
