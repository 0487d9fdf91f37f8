/*
 * test_read_limit.c - strata_ec_reader_limit: a reader told where the
 * caller's range ends reads no stripe ahead past it (a ranged GET of a big
 * object reads only the stripes covering the range), and reads past the
 * limit still return the right bytes.  Shard reads are counted with the
 * per-drive I/O counters (strata_set_drive_io_get).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "ec_test_util.h"
#include "strata/erasure.h"

#define BLOCK (64u * 1024)

static uint64_t reads(const struct strata_set *set)
{
    uint64_t n = 0;
    for (unsigned d = 0; d < strata_set_n(set); d++) {
        struct strata_drive_io_stats st;
        strata_set_drive_io_get(set, d, STRATA_DRIVE_IO_READ, &st);
        n += st.count;
    }
    return n;
}

/* Shard reads of reading stripes 0 and 1 in two sequential calls, with the
 * reader limited to end (0: no limit); the bytes are checked. */
static uint64_t two_stripes(struct strata_set *set, const uint8_t *id, const uint8_t *data,
                            size_t size, uint64_t end)
{
    size_t stripe = strata_set_stripe_size(set);
    uint8_t *out = malloc(2 * stripe);
    assert_non_null(out);
    uint64_t before = reads(set);
    struct strata_ec_reader *r;
    assert_int_equal(strata_ec_reader_open(set, id, size, &r), 0);
    if (end)
        strata_ec_reader_limit(r, end);
    assert_int_equal(strata_ec_reader_read(r, 0, out, stripe), 0);
    assert_int_equal(strata_ec_reader_read(r, stripe, out + stripe, stripe), 0);
    assert_memory_equal(out, data, 2 * stripe);
    if (end) {
        /* Past the limit: still served, just not read ahead. */
        assert_int_equal(strata_ec_reader_read(r, 5 * stripe + 3, out, stripe - 3), 0);
        assert_memory_equal(out, data + 5 * stripe + 3, stripe - 3);
    }
    strata_ec_reader_close(r); /* waits for every read in flight */
    free(out);
    return reads(set) - before;
}

static void test_limit(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    ect_drives_init(&d, ect_dir("limit"), 4);
    struct strata_set_opts o = {.direct_io = true, .no_fsync = true, .block_size = BLOCK};
    struct strata_set *set = NULL;
    assert_int_equal(strata_set_open(d.ptr, 4, &o, &set, NULL), 0);
    unsigned k = strata_set_k(set);
    size_t stripe = strata_set_stripe_size(set), size = 8 * stripe;
    uint8_t *data = malloc(size);
    assert_non_null(data);
    for (size_t i = 0; i < size; i++)
        data[i] = (uint8_t)ect_rand();
    uint8_t id[STRATA_DATA_ID_LEN];
    strata_data_id_new(id);
    struct strata_ec_writer *w;
    assert_int_equal(strata_ec_writer_create(set, id, &w), 0);
    assert_int_equal(strata_ec_writer_write(w, data, size), 0);
    assert_int_equal(strata_ec_writer_finish(w, NULL), 0);
    strata_ec_writer_destroy(w);

    /* Header and table of each data shard, then K block reads a stripe. */
    uint64_t unlimited = two_stripes(set, id, data, size, 0);
    assert_int_equal(unlimited, k + 5 * k); /* stripes 0-4: three ahead of stripe 1 */
    uint64_t limited = two_stripes(set, id, data, size, 2 * stripe);
    assert_int_equal(limited, k + 2 * k + 1 * k); /* + stripe 5 read past the limit */
    /* A limit inside stripe 1 still lets stripe 1 be read ahead. */
    assert_int_equal(two_stripes(set, id, data, size, stripe + 1), k + 2 * k + 1 * k);
    /* One byte: nothing ahead at all. */
    uint64_t before = reads(set);
    struct strata_ec_reader *r;
    assert_int_equal(strata_ec_reader_open(set, id, size, &r), 0);
    strata_ec_reader_limit(r, 1);
    uint8_t b;
    assert_int_equal(strata_ec_reader_read(r, 0, &b, 1), 0);
    assert_int_equal(b, data[0]);
    strata_ec_reader_close(r);
    assert_int_equal(reads(set) - before, k + k);

    strata_ec_delete(set, id);
    free(data);
    strata_set_close(set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (rc == 0)
        ect_cleanup();
    return rc;
}
