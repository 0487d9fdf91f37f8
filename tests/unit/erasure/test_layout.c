/*
 * test_layout.c - the shard file layout of each format version.
 *
 * Format 2 (new deployments): the last stripe's blocks are only as long as
 * its bytes need, so a small object is not padded to a whole stripe; heal
 * rebuilds such a file byte for byte, and rot in a short block is caught
 * and repaired.  Format 1 (deployments made before): files keep full
 * blocks, are read and healed as before, and a replacement drive joins
 * with format 1.  Drives of one set that disagree on the version are
 * refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <jansson.h>

#include "ec_test_util.h"
#include "ec_test_shards.h"
#include "strata/erasure.h"

#define BLOCK (64u * 1024) /* 2+2: shard size 32 KiB, stripe 64 KiB */
#define SS (32u * 1024)
#define STRIPE (64u * 1024)

static struct strata_set *open_set(struct ect_drives *d)
{
    struct strata_set_opts o = {.direct_io = true, .no_fsync = true, .block_size = BLOCK};
    return ect_set_open(d, &o);
}

static void set_version(const struct ect_drives *d, unsigned i, int version)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/format.json", d->path[i]);
    json_t *j = json_load_file(p, 0, NULL);
    assert_non_null(j);
    json_object_set_new(j, "format_version", json_integer(version));
    assert_int_equal(json_dump_file(j, p, 0), 0);
    json_decref(j);
}

static int get_version(const struct ect_drives *d, unsigned i)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/format.json", d->path[i]);
    json_t *j = json_load_file(p, 0, NULL);
    assert_non_null(j);
    int v = (int)json_integer_value(json_object_get(j, "format_version"));
    json_decref(j);
    return v;
}

static void check_bytes(struct strata_set *set, const uint8_t *id, const uint8_t *data,
                        size_t size)
{
    uint8_t *out = malloc(size + 1);
    assert_non_null(out);
    struct strata_ec_reader *r;
    assert_int_equal(strata_ec_reader_open(set, id, size, &r), 0);
    assert_int_equal(strata_ec_reader_read(r, 0, out, size), 0);
    assert_memory_equal(out, data, size);
    /* A range across the start of the last stripe, and its last byte. */
    if (size > STRIPE) {
        uint64_t at = (size - 1) / STRIPE * STRIPE - 100;
        assert_int_equal(strata_ec_reader_read(r, at, out, size - at), 0);
        assert_memory_equal(out, data + at, size - at);
    }
    assert_int_equal(strata_ec_reader_read(r, size - 1, out, 1), 0);
    assert_int_equal(out[0], data[size - 1]);
    strata_ec_reader_close(r);
    free(out);
}

static uint8_t *slurp(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    uint8_t *b = malloc((size_t)sb.st_size + 1);
    assert_non_null(b);
    assert_int_equal(pread(fd, b, (size_t)sb.st_size, 0), sb.st_size);
    close(fd);
    *len = (size_t)sb.st_size;
    return b;
}

/*
 * Write objects of awkward sizes; every shard file must be `expect(size)`
 * bytes; bytes read back; then for each object one drive's file is
 * deleted and another's last block rotted, and heal must rebuild both
 * byte for byte (the rotten one is caught by its CRC first).
 */
static void roundtrip_and_heal(struct strata_set *set, const struct ect_drives *d, bool compact)
{
    const size_t sizes[] = {1, 4095, 4097, SS - 1, SS + 1, 40000, STRIPE - 1, STRIPE,
                            STRIPE + 1, 2 * STRIPE + 3 * 4096 + 5, 3 * STRIPE};
    size_t max = 3 * STRIPE;
    uint8_t *data = malloc(max);
    assert_non_null(data);
    for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
        size_t size = sizes[z];
        uint64_t blocks = (size + STRIPE - 1) / STRIPE;
        ect_fill(data, size);
        uint8_t id[STRATA_DATA_ID_LEN];
        strata_data_id_new(id);
        assert_int_equal(ect_put(set, id, data, size), 0xf);
        size_t want = 4096 + (compact ? ect_blocks_bytes(SS, 2, size) : blocks * SS) + 4096;
        uint8_t *orig[4];
        size_t olen[4];
        for (unsigned dr = 0; dr < 4; dr++) {
            char p[4200];
            ect_drive_file(d, dr, id, p, sizeof(p));
            orig[dr] = slurp(p, &olen[dr]);
            assert_int_equal(olen[dr], want);
        }
        check_bytes(set, id, data, size);

        /* Drive 0 loses its file, drive 2's last block rots. */
        char p0[4200], p2[4200];
        ect_drive_file(d, 0, id, p0, sizeof(p0));
        ect_drive_file(d, 2, id, p2, sizeof(p2));
        assert_int_equal(unlink(p0), 0);
        size_t last = compact ? ect_block_len(SS, 2, size, blocks - 1) : SS;
        ect_flip(p2, (off_t)(4096 + (blocks - 1) * SS + last - 1));
        struct strata_set_stats a, b;
        strata_set_stats_get(set, &a);
        check_bytes(set, id, data, size); /* from the two good shards */
        unsigned healed = 0;
        assert_int_equal(strata_ec_heal(set, id, size, &healed), 0);
        assert_int_equal(healed, 2);
        strata_set_stats_get(set, &b);
        assert_true(b.bitrot_detected > a.bitrot_detected);
        for (unsigned dr = 0; dr < 4; dr++) {
            char p[4200];
            size_t n;
            ect_drive_file(d, dr, id, p, sizeof(p));
            uint8_t *now = slurp(p, &n);
            assert_int_equal(n, olen[dr]);
            assert_memory_equal(now, orig[dr], n);
            free(now);
            free(orig[dr]);
        }
        /* Healed: a read needs no parity any more. */
        strata_set_stats_get(set, &a);
        check_bytes(set, id, data, size);
        strata_set_stats_get(set, &b);
        assert_int_equal(b.stripes_reconstructed, a.stripes_reconstructed);
        assert_int_equal(b.bitrot_detected, a.bitrot_detected);
        strata_ec_delete(set, id);
    }
    free(data);
}

static void test_format2_compact(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    ect_drives_init(&d, ect_dir("layout2"), 4);
    struct strata_set *set = open_set(&d);
    for (unsigned i = 0; i < 4; i++)
        assert_int_equal(get_version(&d, i), STRATA_FORMAT_VERSION);
    assert_int_equal(STRATA_FORMAT_VERSION, 2);
    roundtrip_and_heal(set, &d, true);
    strata_set_close(set);
}

static void test_format1_kept(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    ect_drives_init(&d, ect_dir("layout1"), 4);
    struct strata_set *set = open_set(&d);
    strata_set_close(set);
    for (unsigned i = 0; i < 4; i++)
        set_version(&d, i, 1); /* as a deployment made before format 2 */
    set = open_set(&d);
    roundtrip_and_heal(set, &d, false);

    /* A format 1 object stays readable, and a replacement drive joins the
     * deployment's format, not the newest. */
    uint8_t id[STRATA_DATA_ID_LEN], data[5000];
    ect_fill(data, sizeof(data));
    strata_data_id_new(id);
    assert_int_equal(ect_put(set, id, data, sizeof(data)), 0xf);
    strata_set_close(set);
    ect_rm_rf(d.path[3]);
    assert_int_equal(mkdir(d.path[3], 0755), 0);
    set = open_set(&d);
    assert_true(strata_set_drive_fresh(set, 3));
    assert_int_equal(get_version(&d, 3), 1);
    check_bytes(set, id, data, sizeof(data));
    unsigned healed = 0;
    assert_int_equal(strata_ec_heal(set, id, sizeof(data), &healed), 0);
    assert_int_equal(healed, 1);
    char p[4200];
    ect_drive_file(&d, 3, id, p, sizeof(p));
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_size, 4096 + SS + 4096);
    strata_set_close(set);
}

static void test_versions_disagree(void **state)
{
    (void)state;
    struct ect_drives d;
    ect_drives_init(&d, ect_dir("layoutmix"), 4);
    struct strata_set *set = open_set(&d);
    strata_set_close(set);
    set_version(&d, 1, 1);
    struct strata_set_opts o = {.block_size = BLOCK, .no_fsync = true};
    struct strata_errinfo ei;
    assert_int_equal(strata_set_open(d.ptr, 4, &o, &set, &ei), STRATA_EFORMAT);
    assert_non_null(strstr(ei.msg, d.path[1]));
    set_version(&d, 1, 0);
    assert_int_equal(strata_set_open(d.ptr, 4, &o, &set, &ei), STRATA_EFORMAT);
    assert_non_null(strstr(ei.msg, "version 0"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format2_compact),
        cmocka_unit_test(test_format1_kept),
        cmocka_unit_test(test_versions_disagree),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    ect_cleanup();
    return rc;
}
