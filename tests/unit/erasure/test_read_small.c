/*
 * test_read_small.c - first reads of an object, whose shard headers and
 * CRC tables are fetched together: one vectored read per data shard for
 * one-stripe objects, one batch of header/table reads for larger ones.
 * For sizes up to three stripes, each way a data shard can be bad - file
 * missing, header rotten, block rotten, table rotten, file truncated - is
 * answered from parity with the right counter raised and the right number
 * of stripes rebuilt, and more bad shards than parity are refused (never
 * wrong bytes).  O_DIRECT and buffered.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>

#include "ec_test_util.h"
#include "ec_test_shards.h"
#include "strata/erasure.h"

#define BLOCK (64u * 1024)

static struct strata_set *open_set(const char *name, struct ect_drives *d, bool direct)
{
    ect_drives_init(d, ect_dir(name), 4);
    struct strata_set_opts o = {.direct_io = direct, .no_fsync = true, .block_size = BLOCK};
    return ect_set_open(d, &o);
}

enum damage { NONE, MISSING, HEADER, BLOCK_ROT, TABLE, TRUNCATED };

static void run(bool direct)
{
    ect_seed();
    struct ect_drives d;
    struct strata_set *set = open_set(direct ? "small-direct" : "small-buffered", &d, direct);
    size_t ss = strata_set_shard_size(set), stripe = strata_set_stripe_size(set);
    const size_t sizes[] = {1,      4096,       ss - 1, ss, ss + 1, stripe - 1, stripe,
                            stripe + 1, 2 * stripe + 5, 3 * stripe};
    size_t max = 3 * stripe;
    uint8_t *data = malloc(max), *out = malloc(max);
    assert_non_null(data);
    assert_non_null(out);
    for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
        size_t size = sizes[z];
        uint64_t blocks = (size + stripe - 1) / stripe;
        for (int dmg = NONE; dmg <= TRUNCATED; dmg++) {
            for (size_t i = 0; i < size; i++)
                data[i] = (uint8_t)ect_rand();
            uint8_t id[STRATA_DATA_ID_LEN];
            strata_data_id_new(id);
            ect_put(set, id, data, size);
            char path[4096];
            unsigned victim = (unsigned)(ect_rand() % 2); /* a data shard of 2+2 */
            ect_shard_file(&d, id, victim, path, sizeof(path));
            switch (dmg) {
            case MISSING:
                assert_int_equal(unlink(path), 0);
                break;
            case HEADER:
                ect_flip(path, 20); /* inside the data id, covered by the header CRC */
                break;
            case BLOCK_ROT:
                ect_flip(path, 4096 + (off_t)(ect_rand() % ect_block_len(ss, 2, size, 0)));
                break;
            case TABLE:
                ect_flip(path, 4096 + (off_t)ect_blocks_bytes(ss, 2, size));
                break;
            case TRUNCATED:
                assert_int_equal(truncate(path, 4096 + (off_t)ect_block_len(ss, 2, size, 0)), 0);
                break;
            default:
                break;
            }
            struct strata_set_stats a, b;
            strata_set_stats_get(set, &a);
            memset(out, 0, max);
            assert_int_equal(ect_get(set, id, out, size), 0);
            assert_memory_equal(out, data, size);
            strata_set_stats_get(set, &b);
            assert_int_equal(b.shards_missing - a.shards_missing, dmg == MISSING ? 1 : 0);
            assert_int_equal(b.bitrot_detected - a.bitrot_detected,
                             dmg == NONE || dmg == MISSING ? 0 : 1);
            assert_int_equal(b.stripes_reconstructed - a.stripes_reconstructed,
                             dmg == NONE ? 0 : dmg == BLOCK_ROT ? 1 : blocks);
            if (dmg == HEADER) {
                /* Rot in the other data shard and one parity shard too:
                 * three bad of four, fewer than K good - refused. */
                ect_shard_file(&d, id, 1 - victim, path, sizeof(path));
                ect_flip(path, 4096 + 7);
                ect_shard_file(&d, id, 2, path, sizeof(path));
                ect_flip(path, 20);
                assert_int_equal(ect_get(set, id, out, size), STRATA_ECORRUPT);
            }
            strata_ec_delete(set, id);
        }
    }
    free(data);
    free(out);
    strata_set_close(set);
}

static void test_small_direct(void **state)
{
    (void)state;
    run(true);
}

static void test_small_buffered(void **state)
{
    (void)state;
    run(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_direct),
        cmocka_unit_test(test_small_buffered),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (rc == 0)
        ect_cleanup();
    return rc;
}
