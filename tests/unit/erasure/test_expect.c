/*
 * test_expect.c - strata_ec_writer_expect: the tmp shard files are
 * allocated to their final length (at most 64 MiB ahead of the bytes
 * written) before the writes reach it (so O_DIRECT writes overwrite
 * instead of extending them); the published files have
 * exactly the layout's length whether the announced size was right, too
 * large or too small, and read back byte for byte; misuse is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>

#include "ec_test_util.h"
#include "ec_test_shards.h"
#include "strata/erasure.h"

#define BLOCK (64u * 1024)
#define AHEAD ((off_t)64 << 20) /* how far allocation runs ahead of the bytes */

static struct strata_set *open_set(const char *name, struct ect_drives *d)
{
    ect_drives_init(d, ect_dir(name), 4);
    struct strata_set_opts o = {.direct_io = true, .no_fsync = true, .block_size = BLOCK};
    return ect_set_open(d, &o);
}

/* Length of a shard file of an object of size bytes, from the layout. */
static off_t file_len(struct strata_set *set, uint64_t size)
{
    size_t ss = strata_set_shard_size(set), stripe = strata_set_stripe_size(set);
    uint64_t blocks = (size + stripe - 1) / stripe;
    return (off_t)(4096 + ect_blocks_bytes(ss, strata_set_k(set), size) +
                   (blocks * 4 + 4095) / 4096 * 4096);
}

/* Sizes of the files in drive's tmp/; their number. */
static unsigned tmp_sizes(const struct ect_drives *d, unsigned drive, off_t *out, unsigned max)
{
    char dir[2100], p[2400];
    snprintf(dir, sizeof(dir), "%s/tmp", d->path[drive]);
    DIR *dh = opendir(dir);
    assert_non_null(dh);
    unsigned n = 0;
    struct dirent *e;
    while ((e = readdir(dh))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        assert_true(n < max);
        out[n++] = st.st_size;
    }
    closedir(dh);
    return n;
}

/* Announce `announced` bytes, write `size`: published files of the
 * written size's length, the bytes read back. */
static void put_expecting(struct strata_set *set, const struct ect_drives *d, uint64_t announced,
                          size_t size)
{
    uint8_t *data = malloc(size), *out = malloc(size);
    assert_non_null(data);
    assert_non_null(out);
    ect_fill(data, size);
    uint8_t id[STRATA_DATA_ID_LEN];
    strata_data_id_new(id);
    struct strata_ec_writer *w;
    assert_int_equal(strata_ec_writer_create(set, id, &w), 0);
    assert_int_equal(strata_ec_writer_expect(w, announced), 0);
    assert_int_equal(strata_ec_writer_expect(w, announced), STRATA_EINVAL); /* twice */
    /* Allocated before any byte was written, at most AHEAD of the bytes. */
    off_t first = file_len(set, announced) < AHEAD ? file_len(set, announced) : AHEAD;
    for (unsigned dr = 0; dr < d->n; dr++) {
        off_t sz[4];
        assert_int_equal(tmp_sizes(d, dr, sz, 4), 1);
        assert_int_equal(sz[0], first);
    }
    assert_int_equal(strata_ec_writer_write(w, data, size), 0);
    uint32_t mask = 0;
    assert_int_equal(strata_ec_writer_finish(w, &mask), 0);
    assert_int_equal(mask, 0xf);
    strata_ec_writer_destroy(w);
    for (unsigned dr = 0; dr < d->n; dr++) {
        char p[2400];
        struct stat st;
        ect_drive_file(d, dr, id, p, sizeof(p));
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_size, file_len(set, size));
        off_t sz[4];
        assert_int_equal(tmp_sizes(d, dr, sz, 4), 0);
    }
    memset(out, 0, size);
    assert_int_equal(ect_get(set, id, out, size), 0);
    assert_memory_equal(out, data, size);
    free(data);
    free(out);
}

static void test_expect_exact(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    struct strata_set *set = open_set("expect-exact", &d);
    size_t stripe = strata_set_stripe_size(set);
    const size_t sizes[] = {1, stripe - 1, stripe, stripe + 1, 5 * stripe + 123, 9 * stripe};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        put_expecting(set, &d, sizes[i], sizes[i]);
    strata_set_close(set);
    ect_cleanup();
}

/* A wrong announcement costs a truncate at finish, never a wrong file. */
static void test_expect_wrong_size(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    struct strata_set *set = open_set("expect-wrong", &d);
    size_t stripe = strata_set_stripe_size(set);
    put_expecting(set, &d, 5 * stripe, 2 * stripe + 7); /* fewer bytes came */
    put_expecting(set, &d, 5 * stripe + 9, 5 * stripe); /* one stripe less */
    put_expecting(set, &d, stripe, 3 * stripe + 1);     /* more bytes came */
    /* 5 GiB announced, a little sent: only AHEAD of it was ever held. */
    put_expecting(set, &d, 5ull << 30, 2 * stripe + 7);
    strata_set_close(set);
    ect_cleanup();
}

static void test_expect_misuse(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    struct strata_set *set = open_set("expect-misuse", &d);
    uint8_t id[STRATA_DATA_ID_LEN], b[100] = {1};
    strata_data_id_new(id);
    struct strata_ec_writer *w;
    assert_int_equal(strata_ec_writer_create(set, id, &w), 0);
    assert_int_equal(strata_ec_writer_write(w, b, sizeof(b)), 0);
    assert_int_equal(strata_ec_writer_expect(w, 1000), STRATA_EINVAL); /* after bytes */
    strata_ec_writer_destroy(w);
    /* destroy of an announced, unfinished writer removes its tmp files */
    assert_int_equal(strata_ec_writer_create(set, id, &w), 0);
    assert_int_equal(strata_ec_writer_expect(w, 3 * strata_set_stripe_size(set)), 0);
    strata_ec_writer_destroy(w);
    for (unsigned dr = 0; dr < d.n; dr++) {
        off_t sz[4];
        assert_int_equal(tmp_sizes(&d, dr, sz, 4), 0);
    }
    strata_set_close(set);
    ect_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expect_exact),
        cmocka_unit_test(test_expect_wrong_size),
        cmocka_unit_test(test_expect_misuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
