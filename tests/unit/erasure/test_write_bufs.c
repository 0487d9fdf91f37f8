/*
 * test_write_bufs.c - the writer's stripe buffers as the ring sees them:
 * a fresh io context registers them as fixed buffers and writes through
 * them; a context whose ring holds no registration (what a daemon over
 * its locked-memory limit gets) writes them as plain buffers; both give
 * the same bytes back.  The CRC table of every shard file matches a CRC32C
 * computed here over each block as it is on the drive (the writer CRCs
 * its stripes in column slices), for sizes whose last block is shorter
 * than a slice, between slices, and full.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <unistd.h>

#include "ec_internal.h"
#include "ec_test_util.h"
#include "ec_test_shards.h"
#include "strata/erasure.h"

static struct strata_set *open_set(const char *name, struct ect_drives *d, size_t block)
{
    ect_drives_init(d, ect_dir(name), 4); /* 2+2 */
    struct strata_set_opts o = {.direct_io = true, .no_fsync = true, .block_size = block};
    return ect_set_open(d, &o);
}

/* Every block of every shard file of id has the CRC its table names. */
static void check_crc_tables(const struct ect_drives *d, const uint8_t *id, size_t ss,
                             uint64_t size)
{
    uint64_t stripe = (uint64_t)ss * 2, blocks = (size + stripe - 1) / stripe;
    uint64_t bb = ect_blocks_bytes(ss, 2, size);
    for (unsigned dr = 0; dr < d->n; dr++) {
        char p[4200];
        ect_drive_file(d, dr, id, p, sizeof(p));
        int fd = open(p, O_RDONLY);
        assert_true(fd >= 0);
        uint8_t *blk = malloc(ss);
        uint8_t *tab = malloc(blocks * 4);
        assert_int_equal(pread(fd, tab, blocks * 4, (off_t)(4096 + bb)), (ssize_t)(blocks * 4));
        for (uint64_t i = 0; i < blocks; i++) {
            size_t len = ect_block_len(ss, 2, size, i);
            assert_int_equal(pread(fd, blk, len, (off_t)(4096 + i * ss)), (ssize_t)len);
            uint32_t want = (uint32_t)tab[4 * i] | (uint32_t)tab[4 * i + 1] << 8 |
                            (uint32_t)tab[4 * i + 2] << 16 | (uint32_t)tab[4 * i + 3] << 24;
            assert_int_equal(strata_crc32c(0, blk, len), want);
        }
        free(blk);
        free(tab);
        close(fd);
    }
}

static void write_read_check(struct strata_set *s, const struct ect_drives *d,
                             const uint8_t *data, size_t size)
{
    uint8_t id[STRATA_DATA_ID_LEN];
    strata_data_id_new(id);
    assert_int_equal(ect_put(s, id, data, size), 0xf);
    uint8_t *back = malloc(size);
    memset(back, 0, size);
    assert_int_equal(ect_get(s, id, back, size), 0);
    assert_memory_equal(back, data, size);
    free(back);
    check_crc_tables(d, id, strata_set_shard_size(s), size);
}

/* Shard blocks of 256 KiB, so slices of the encode are 32 KiB columns of
 * them; sizes end a last block before one slice, inside the second, on a
 * slice boundary, and full. */
static void test_crc_tables_by_slices(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    struct strata_set *s = open_set("slices", &d, 512u << 10);
    size_t ss = strata_set_shard_size(s), stripe = strata_set_stripe_size(s);
    assert_int_equal(ss, 256u << 10);
    const size_t sizes[] = {1, 4096 * 2 + 7, stripe * 3 + 2 * 40000 + 5, stripe * 2 + 2 * 65536,
                            stripe * 5};
    uint8_t *data = malloc(stripe * 6);
    ect_fill(data, stripe * 6);
    for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        write_read_check(s, &d, data, sizes[i]);
    free(data);
    strata_set_close(s);
}

static void test_fixed_and_plain_buffers(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    struct strata_set *s = open_set("fixed", &d, 64u << 10);
    size_t stripe = strata_set_stripe_size(s), size = stripe * 9 + 12345;
    uint8_t *data = malloc(size);
    ect_fill(data, size);

    /* A fresh context: every stripe buffer the writer used is registered. */
    write_read_check(s, &d, data, size);
    int err = 0;
    struct strata_ec__io *io = strata_ec__io_get(s, &err);
    assert_non_null(io);
    assert_true(io->fixed_table);
    for (unsigned b = 0; b < STRATA_EC_NBUF; b++) {
        assert_non_null(io->buf[b]); /* nine stripes went through every slot */
        assert_true(io->fixed & (1u << b));
    }

    /* The same context without its registration: plain writes. */
    assert_int_equal(io_uring_unregister_buffers(&io->ring), 0);
    io->fixed_table = false;
    io->fixed = 0;
    strata_ec__io_put(s, io); /* the pool hands it to the next writer */
    write_read_check(s, &d, data, size);
    io = strata_ec__io_get(s, &err);
    assert_non_null(io);
    assert_false(io->fixed_table);
    assert_int_equal(io->fixed, 0);
    strata_ec__io_put(s, io);

    free(data);
    strata_set_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc_tables_by_slices),
        cmocka_unit_test(test_fixed_and_plain_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
