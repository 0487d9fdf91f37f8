/*
 * test_url.c - the one percent-decoder and the one AWS URI-encoder
 * (server/http/url.c): escapes of either case, '+' only in query mode, the NUL
 * rule (%00 refused everywhere), malformed and truncated escapes, capacity
 * limits, in-place decoding, keep_slash, and round trips over every byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sbuf.h"
#include "url.h"

static long dec(const char *s, char *out, size_t cap, bool plus)
{
    return strata_url_decode(s, strlen(s), out, cap, plus);
}

static void test_decode(void **state)
{
    (void)state;
    char out[64];
    long n = dec("a%20b%2bc%2Bd+e%E2%82%ac", out, sizeof(out), false);
    assert_int_equal(n, 12);
    assert_memory_equal(out, "a b+c+d+e\xE2\x82\xAC", 12);
    n = dec("a+b", out, sizeof(out), true);
    assert_int_equal(n, 3);
    assert_memory_equal(out, "a b", 3);
    assert_int_equal(dec("", out, sizeof(out), true), 0);
    /* malformed or truncated escapes */
    assert_int_equal(dec("%", out, sizeof(out), false), -1);
    assert_int_equal(dec("a%4", out, sizeof(out), false), -1);
    assert_int_equal(dec("%zz", out, sizeof(out), false), -1);
    assert_int_equal(dec("%4g", out, sizeof(out), false), -1);
    assert_int_equal(dec("%%41", out, sizeof(out), false), -1);
    /* the NUL rule: never, in either mode */
    assert_int_equal(dec("a%00b", out, sizeof(out), false), -1);
    assert_int_equal(dec("a%00b", out, sizeof(out), true), -1);
    assert_int_equal(dec("%01", out, sizeof(out), true), 1);
    assert_int_equal(out[0], 1);
    /* a length-delimited input stops at n, even inside an escape */
    assert_int_equal(strata_url_decode("%41%42", 3, out, sizeof(out), false), 1);
    assert_int_equal(strata_url_decode("%41%42", 4, out, sizeof(out), false), -1);
    /* capacity */
    assert_int_equal(dec("abcd", out, 4, false), 4);
    assert_int_equal(dec("abcde", out, 4, false), -1);
    assert_int_equal(dec("%41%42%43%44", out, 4, false), 4);
    assert_int_equal(dec("%41%42%43%44%45", out, 4, false), -1);
}

static void test_decode_str(void **state)
{
    (void)state;
    /* Paths keep '+' (decoded once, exactly). */
    char p[] = "/b/a+b%2520%E2%82%AC/..//x";
    assert_int_equal(strata_url_decode_str(p, false), 0);
    assert_string_equal(p, "/b/a+b%20\xE2\x82\xAC/..//x");
    char q[] = "x+y%3D";
    assert_int_equal(strata_url_decode_str(q, true), 0);
    assert_string_equal(q, "x y=");
    char z[] = "key%00.txt";
    assert_int_equal(strata_url_decode_str(z, false), -1);
    char t[] = "trunc%2";
    assert_int_equal(strata_url_decode_str(t, false), -1);
}

static void test_encode(void **state)
{
    (void)state;
    char out[64];
    const char *s = "a b/c+d~-_.\xE2\x82\xAC*";
    long n = strata_url_encode(s, strlen(s), out, sizeof(out), true);
    assert_true(n > 0);
    out[n] = '\0';
    assert_string_equal(out, "a%20b/c%2Bd~-_.%E2%82%AC%2A");
    n = strata_url_encode(s, strlen(s), out, sizeof(out), false);
    out[n] = '\0';
    assert_string_equal(out, "a%20b%2Fc%2Bd~-_.%E2%82%AC%2A");
    /* capacity: an escape is never split */
    assert_int_equal(strata_url_encode("ab", 2, out, 2, false), 2);
    assert_int_equal(strata_url_encode("a b", 3, out, 3, false), -1);
    assert_int_equal(strata_url_encode("a b", 3, out, 5, false), 5);
    /* the bytes of a length-delimited input, NUL included */
    assert_int_equal(strata_url_encode("a\0b", 3, out, sizeof(out), false), 5);
    assert_memory_equal(out, "a%00b", 5);
}

static void test_encode_sbuf(void **state)
{
    (void)state;
    struct strata_sbuf b;
    strata_sbuf_init(&b, 1024);
    assert_int_equal(strata_url_encode_sbuf(&b, "a b/c+d~\xE2\x82\xAC", true), 0);
    assert_string_equal(b.data, "a%20b/c%2Bd~%E2%82%AC");
    strata_sbuf_fini(&b);
    /* longer than one internal slice */
    char big[1000];
    memset(big, ' ', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    strata_sbuf_init(&b, 1u << 20);
    assert_int_equal(strata_url_encode_sbuf(&b, big, false), 0);
    assert_int_equal(b.len, 3 * 999);
    for (size_t i = 0; i < b.len; i += 3)
        assert_memory_equal(b.data + i, "%20", 3);
    strata_sbuf_fini(&b);
    /* over the sbuf's cap */
    strata_sbuf_init(&b, 8);
    assert_int_equal(strata_url_encode_sbuf(&b, "   ", false), -1);
    strata_sbuf_fini(&b);
}

/* Every byte 1..255 encodes and decodes back, in both modes. */
static void test_round_trip(void **state)
{
    (void)state;
    char in[255], enc[3 * 255], back[255];
    for (int i = 0; i < 255; i++)
        in[i] = (char)(i + 1);
    for (int keep = 0; keep < 2; keep++) {
        long e = strata_url_encode(in, sizeof(in), enc, sizeof(enc), keep);
        assert_true(e > 0);
        for (int plus = 0; plus < 2; plus++) {
            long d = strata_url_decode(enc, (size_t)e, back, sizeof(back), plus);
            assert_int_equal(d, 255);
            assert_memory_equal(back, in, 255);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode),     cmocka_unit_test(test_decode_str),
        cmocka_unit_test(test_encode),     cmocka_unit_test(test_encode_sbuf),
        cmocka_unit_test(test_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
