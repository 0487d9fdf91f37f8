/*
 * test_codec.c - seeded random (k, m) sweep over 2..12 x 1..4: encode,
 * erase every pattern of up to m shards, reconstruct, compare byte for
 * byte; parity is also cross-checked against ISA-L's _base reference
 * encoder.  The seed is printed; STRATA_TEST_SEED reproduces a run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <isa-l/erasure_code.h>

#include "ec_test_util.h"
#include "strata/erasure.h"

static void test_codec_sweep(void **state)
{
    (void)state;
    ect_seed();
    uint8_t *orig[16], *work[16];
    for (unsigned k = 2; k <= 12; k++) {
        for (unsigned m = 1; m <= 4 && k + m <= STRATA_DRIVES_MAX; m++) {
            unsigned n = k + m;
            /* Odd lengths too: ISA-L has separate tail paths. */
            size_t len = 1 + (size_t)(ect_rand() % 3000);
            struct strata_ec_codec *c;
            assert_int_equal(strata_ec_codec_create(k, m, &c), 0);
            for (unsigned i = 0; i < n; i++) {
                orig[i] = malloc(len);
                work[i] = malloc(len);
                assert_non_null(orig[i]);
                assert_non_null(work[i]);
            }
            for (unsigned i = 0; i < k; i++)
                ect_fill(orig[i], len);
            strata_ec_encode(c, orig, len);

            /* Parity equals ISA-L's reference (non-SIMD) encoder's. */
            uint8_t *mat = malloc(n * k), *tb = malloc(k * m * 32), *ref[4];
            gf_gen_cauchy1_matrix(mat, (int)n, (int)k);
            ec_init_tables((int)k, (int)m, mat + k * k, tb);
            for (unsigned i = 0; i < m; i++)
                ref[i] = malloc(len);
            ec_encode_data_base((int)len, (int)k, (int)m, tb, orig, ref);
            for (unsigned i = 0; i < m; i++) {
                assert_memory_equal(ref[i], orig[k + i], len);
                free(ref[i]);
            }
            free(mat);
            free(tb);

            /* Every erasure pattern of 1..m shards. */
            unsigned patterns = 0;
            for (uint32_t mask = 1; mask < (1u << n); mask++) {
                unsigned pc = (unsigned)__builtin_popcount(mask);
                if (pc > m)
                    continue;
                bool present[16];
                for (unsigned i = 0; i < n; i++) {
                    present[i] = !(mask & (1u << i));
                    memcpy(work[i], orig[i], len);
                    if (!present[i])
                        memset(work[i], 0xA5, len);
                }
                assert_int_equal(strata_ec_reconstruct(c, work, present, len), 0);
                for (unsigned i = 0; i < n; i++)
                    assert_memory_equal(work[i], orig[i], len);
                patterns++;
            }
            assert_true(patterns > 0);

            /* m+1 erasures cannot be repaired and must say so. */
            bool present[16];
            for (unsigned i = 0; i < n; i++)
                present[i] = i > m;
            assert_int_equal(strata_ec_reconstruct(c, work, present, len), STRATA_ECORRUPT);

            for (unsigned i = 0; i < n; i++) {
                free(orig[i]);
                free(work[i]);
            }
            strata_ec_codec_destroy(c);
        }
    }
}

static void test_codec_args(void **state)
{
    (void)state;
    struct strata_ec_codec *c = NULL;
    assert_int_equal(strata_ec_codec_create(0, 2, &c), STRATA_EINVAL);
    assert_int_equal(strata_ec_codec_create(2, 0, &c), STRATA_EINVAL);
    assert_int_equal(strata_ec_codec_create(12, 5, &c), STRATA_EINVAL);
    assert_int_equal(strata_ec_codec_create(12, 4, &c), 0);
    strata_ec_codec_destroy(c);
    strata_ec_codec_destroy(NULL);
}

/* The decode-table cache must not mix patterns up: alternate two patterns
 * repeatedly on the same codec. */
static void test_codec_cache_patterns(void **state)
{
    (void)state;
    struct strata_ec_codec *c;
    assert_int_equal(strata_ec_codec_create(4, 2, &c), 0);
    uint8_t *orig[6], *work[6];
    size_t len = 4096;
    for (unsigned i = 0; i < 6; i++) {
        orig[i] = malloc(len);
        work[i] = malloc(len);
    }
    for (unsigned i = 0; i < 4; i++)
        ect_fill(orig[i], len);
    strata_ec_encode(c, orig, len);
    for (unsigned round = 0; round < 20; round++) {
        unsigned a = round % 6, b = (round * 7 + 1) % 6;
        bool present[6];
        for (unsigned i = 0; i < 6; i++) {
            present[i] = i != a && i != b;
            memcpy(work[i], orig[i], len);
            if (!present[i])
                memset(work[i], 0, len);
        }
        assert_int_equal(strata_ec_reconstruct(c, work, present, len), 0);
        for (unsigned i = 0; i < 6; i++)
            assert_memory_equal(work[i], orig[i], len);
    }
    for (unsigned i = 0; i < 6; i++) {
        free(orig[i]);
        free(work[i]);
    }
    strata_ec_codec_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codec_sweep),
        cmocka_unit_test(test_codec_args),
        cmocka_unit_test(test_codec_cache_patterns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
