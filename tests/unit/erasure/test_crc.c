/*
 * test_crc.c - known-answer vectors for CRC32C, CRC32 and CRC-64/NVME,
 * incremental (split buffer) equality, and a bitwise reference for
 * CRC-64/NVME to cross-check the slice-by-8 tables on random data.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "ec_test_util.h"
#include "strata/erasure.h"

static const char check[] = "123456789";

static void test_crc32c_vectors(void **state)
{
    (void)state;
    assert_int_equal(strata_crc32c(0, check, 9), 0xe3069283u);
    assert_int_equal(strata_crc32c(0, "", 0), 0);
    /* RFC 3720 B.4 vectors. */
    uint8_t b[32];
    memset(b, 0, 32);
    assert_int_equal(strata_crc32c(0, b, 32), 0x8a9136aau);
    memset(b, 0xff, 32);
    assert_int_equal(strata_crc32c(0, b, 32), 0x62a8ab43u);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)i;
    assert_int_equal(strata_crc32c(0, b, 32), 0x46dd794eu);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)(31 - i);
    assert_int_equal(strata_crc32c(0, b, 32), 0x113fdb5cu);
    /* Running value: split anywhere gives the same answer. */
    uint32_t c = strata_crc32c(0, check, 4);
    assert_int_equal(strata_crc32c(c, check + 4, 5), 0xe3069283u);
}

static void test_crc32_vectors(void **state)
{
    (void)state;
    assert_int_equal(strata_crc32(0, check, 9), 0xcbf43926u);
    assert_int_equal(strata_crc32(0, "", 0), 0);
    const char *fox = "The quick brown fox jumps over the lazy dog";
    assert_int_equal(strata_crc32(0, fox, strlen(fox)), 0x414fa339u);
    uint32_t c = strata_crc32(0, fox, 10);
    assert_int_equal(strata_crc32(c, fox + 10, strlen(fox) - 10), 0x414fa339u);
}

/* Bit-at-a-time CRC-64/NVME straight from the parameters, as an oracle. */
static uint64_t crc64_ref(const uint8_t *p, size_t n)
{
    uint64_t c = ~0ull;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int j = 0; j < 8; j++)
            c = (c & 1) ? (c >> 1) ^ 0x9a6c9329ac4bc9b5ull : c >> 1;
    }
    return ~c;
}

static void test_crc64nvme_vectors(void **state)
{
    (void)state;
    assert_true(strata_crc64nvme(0, check, 9) == 0xae8b14860a799888ull);
    assert_true(strata_crc64nvme(0, "", 0) == 0);
    /* S3's x-amz-checksum-crc64nvme of "Hello world" (as botocore/awscrt report,
     * base64 "OOJZ0D8xKts=" -> 0x38e259d03f312adb). */
    assert_true(strata_crc64nvme(0, "Hello world", 11) == 0x38e259d03f312adbull);
    uint64_t seed = ect_seed();
    (void)seed;
    uint8_t buf[4099];
    ect_fill(buf, sizeof(buf));
    for (size_t n = 0; n < sizeof(buf); n += 1 + n / 3) {
        uint64_t want = crc64_ref(buf, n);
        assert_true(strata_crc64nvme(0, buf, n) == want);
        size_t cut = n ? (size_t)(ect_rand() % n) : 0;
        uint64_t c = strata_crc64nvme(0, buf, cut);
        assert_true(strata_crc64nvme(c, buf + cut, n - cut) == want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c_vectors),
        cmocka_unit_test(test_crc32_vectors),
        cmocka_unit_test(test_crc64nvme_vectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
