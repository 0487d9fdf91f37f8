/*
 * test_stream.c - the io_uring shard writer and reader end to end on real
 * directories: object sizes around every stripe boundary, random ranged
 * reads, M drives' data removed, M+1 removed (must fail, never return
 * wrong bytes), bitrot in a shard block, heal, delete, tmp reclaim, a drive
 * vanishing while a writer runs, and inline shards.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>

#include <liburing.h>

#include "ec_test_util.h"
#include "ec_test_shards.h"
#include "strata/erasure.h"

/* n drives with m = n == 6 ? 2 : default, so 6 drives are 4+2 and 4 are 2+2. */
static struct strata_set *open_set(const char *name, struct ect_drives *d, unsigned n, bool direct,
                                   bool no_fsync)
{
    ect_drives_init(d, ect_dir(name), n);
    struct strata_set_opts o = {.direct_io = direct, .no_fsync = no_fsync, .m = n == 6 ? 2 : 0};
    return ect_set_open(d, &o);
}

/* Write in random-sized pieces, as an HTTP body arrives. */
static uint32_t put(struct strata_set *s, const uint8_t *id, const uint8_t *data, size_t size)
{
    struct strata_ec_writer *w;
    assert_int_equal(strata_ec_writer_create(s, id, &w), 0);
    size_t off = 0;
    while (off < size) {
        size_t n = 1 + (size_t)(ect_rand() % (300 * 1024));
        if (n > size - off)
            n = size - off;
        assert_int_equal(strata_ec_writer_write(w, data + off, n), 0);
        off += n;
    }
    assert_int_equal(strata_ec_writer_size(w), size);
    uint32_t mask = 0;
    assert_int_equal(strata_ec_writer_finish(w, &mask), 0);
    strata_ec_writer_destroy(w);
    return mask;
}

/* Sequential read in random pieces; returns the first error or 0. */
static int get_all(struct strata_set *s, const uint8_t *id, uint8_t *out, size_t size)
{
    struct strata_ec_reader *r;
    int rc = strata_ec_reader_open(s, id, size, &r);
    if (rc < 0)
        return rc;
    size_t off = 0;
    while (off < size && rc == 0) {
        size_t n = 1 + (size_t)(ect_rand() % (700 * 1024));
        if (n > size - off)
            n = size - off;
        rc = strata_ec_reader_read(r, off, out + off, n);
        off += n;
    }
    strata_ec_reader_close(r);
    return rc;
}

static void check_ranges(struct strata_set *s, const uint8_t *id, const uint8_t *data, size_t size,
                         unsigned count)
{
    if (size == 0)
        return;
    struct strata_ec_reader *r;
    assert_int_equal(strata_ec_reader_open(s, id, size, &r), 0);
    uint8_t *buf = malloc(size);
    for (unsigned i = 0; i < count; i++) {
        uint64_t off = ect_rand() % size;
        size_t len = 1 + (size_t)(ect_rand() % (size - off));
        if (len > 3 * 1024 * 1024)
            len = 3 * 1024 * 1024;
        assert_int_equal(strata_ec_reader_read(r, off, buf, len), 0);
        assert_memory_equal(buf, data + off, len);
    }
    assert_int_equal(strata_ec_reader_read(r, size, buf, 1), STRATA_ERANGE);
    free(buf);
    strata_ec_reader_close(r);
}

static void rm_data(const struct ect_drives *d, unsigned drive)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/data", d->path[drive]);
    ect_rm_rf(p);
}

static void test_stream_sizes(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    struct strata_set *s = open_set("sizes", &d, 6, true, false); /* 4+2 */
    size_t ss = strata_set_shard_size(s), stripe = strata_set_stripe_size(s);
    assert_int_equal(ss, 262144);
    const size_t sizes[] = {0,      1,          4095,           ss - 1,          stripe,
                            stripe + 1, stripe * 7 / 2, (size_t)20 << 20};
    uint8_t *data = malloc((size_t)20 << 20), *back = malloc((size_t)20 << 20);
    ect_fill(data, (size_t)20 << 20);
    for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint8_t id[STRATA_DATA_ID_LEN];
        strata_data_id_new(id);
        uint32_t mask = put(s, id, data, sizes[i]);
        assert_int_equal(mask, 0x3f);
        memset(back, 0, sizes[i]);
        assert_int_equal(get_all(s, id, back, sizes[i]), 0);
        assert_memory_equal(back, data, sizes[i]);
        check_ranges(s, id, data, sizes[i], sizes[i] > stripe ? 30 : 8);
        /* Each drive holds one complete shard file with its own index. */
        unsigned seen = 0;
        for (unsigned dr = 0; dr < 6; dr++) {
            char p[4200];
            ect_drive_file(&d, dr, id, p, sizeof(p));
            int si = ect_shard_index_of(p);
            assert_in_range(si, 0, 5);
            seen |= 1u << si;
            struct stat sb;
            assert_int_equal(stat(p, &sb), 0);
            size_t blocks = (sizes[i] + stripe - 1) / stripe;
            size_t tab = (blocks * 4 + 4095) / 4096 * 4096;
            /* Format 2: the last stripe's block is no longer than it needs. */
            assert_int_equal((size_t)sb.st_size, 4096 + ect_blocks_bytes(ss, 4, sizes[i]) + tab);
            if (sizes[i] % stripe)
                assert_true((size_t)sb.st_size < 4096 + blocks * ss + tab);
        }
        assert_int_equal(seen, 0x3f);
    }
    struct strata_set_stats st;
    strata_set_stats_get(s, &st);
    assert_int_equal(st.bitrot_detected, 0);
    assert_int_equal(st.stripes_reconstructed, 0);
    /* Nothing left behind in tmp/. */
    unsigned removed = 99;
    assert_int_equal(strata_ec_tmp_reclaim(s, 0, &removed), 0);
    assert_int_equal(removed, 0);
    free(data);
    free(back);
    strata_set_close(s);
}

static void test_stream_degraded_and_heal(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    struct strata_set *s = open_set("degraded", &d, 6, false, true);
    size_t size = strata_set_stripe_size(s) * 7 / 2 + 12345;
    uint8_t *data = malloc(size), *back = malloc(size);
    ect_fill(data, size);
    uint8_t id[STRATA_DATA_ID_LEN];
    strata_data_id_new(id);
    assert_int_equal(put(s, id, data, size), 0x3f);

    /* M = 2 drives lose their data directories: the ones holding data
     * shards 0 and 2, so every stripe must be rebuilt from parity. */
    unsigned dr0 = ect_drive_of_shard(&d, id, 0), dr2 = ect_drive_of_shard(&d, id, 2);
    unsigned dr1 = ect_drive_of_shard(&d, id, 1), dr4 = ect_drive_of_shard(&d, id, 4);
    unsigned dr3 = ect_drive_of_shard(&d, id, 3);
    rm_data(&d, dr0);
    rm_data(&d, dr2);
    memset(back, 0, size);
    assert_int_equal(get_all(s, id, back, size), 0);
    assert_memory_equal(back, data, size);
    check_ranges(s, id, data, size, 20);
    struct strata_set_stats st;
    strata_set_stats_get(s, &st);
    assert_true(st.shards_missing >= 2);
    assert_true(st.stripes_reconstructed >= 4); /* every stripe of the full read */

    /* Heal rewrites exactly the two missing shard files... */
    unsigned healed = 0;
    assert_int_equal(strata_ec_heal(s, id, size, &healed), 0);
    assert_int_equal(healed, 2);
    char p[4200];
    ect_drive_file(&d, dr0, id, p, sizeof(p));
    assert_int_equal(ect_shard_index_of(p), 0);
    ect_drive_file(&d, dr2, id, p, sizeof(p));
    assert_int_equal(ect_shard_index_of(p), 2);
    assert_int_equal(strata_ec_heal(s, id, size, &healed), 0);
    assert_int_equal(healed, 0);
    strata_set_stats_get(s, &st);
    assert_int_equal(st.shards_healed, 2);

    /* ...so losing two other drives is survivable again. */
    rm_data(&d, dr1);
    rm_data(&d, dr4);
    memset(back, 0, size);
    assert_int_equal(get_all(s, id, back, size), 0);
    assert_memory_equal(back, data, size);

    /* M+1 drives' files gone: an error, never bytes; missing files are
     * "not found", not corruption. */
    rm_data(&d, dr3);
    memset(back, 0, size);
    int rc = get_all(s, id, back, size);
    assert_int_equal(rc, STRATA_ENOTFOUND);
    assert_int_equal(strata_ec_heal(s, id, size, &healed), rc);

    free(data);
    free(back);
    strata_set_close(s);
}

static void test_stream_bitrot(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    struct strata_set *s = open_set("bitrot", &d, 4, false, true); /* 2+2 */
    size_t size = strata_set_stripe_size(s) * 2 + 777;
    uint8_t *data = malloc(size), *back = malloc(size);
    ect_fill(data, size);
    uint8_t id[STRATA_DATA_ID_LEN];
    strata_data_id_new(id);
    assert_int_equal(put(s, id, data, size), 0xf);

    /* Flip one byte in the second block of data shard 0. */
    unsigned drive = 99;
    char p[4200];
    for (unsigned dr = 0; dr < 4; dr++) {
        ect_drive_file(&d, dr, id, p, sizeof(p));
        if (ect_shard_index_of(p) == 0) {
            drive = dr;
            break;
        }
    }
    assert_int_not_equal(drive, 99);
    int fd = open(p, O_RDWR);
    assert_true(fd >= 0);
    off_t at = 4096 + (off_t)strata_set_shard_size(s) + 100;
    uint8_t b;
    assert_int_equal(pread(fd, &b, 1, at), 1);
    b ^= 0x40;
    assert_int_equal(pwrite(fd, &b, 1, at), 1);
    close(fd);

    struct strata_set_stats st0, st1;
    strata_set_stats_get(s, &st0);
    assert_int_equal(get_all(s, id, back, size), 0);
    assert_memory_equal(back, data, size);
    strata_set_stats_get(s, &st1);
    assert_true(st1.bitrot_detected > st0.bitrot_detected);
    assert_true(st1.stripes_reconstructed > st0.stripes_reconstructed);

    /* Heal replaces the rotten shard file; reading is then clean. */
    unsigned healed = 0;
    assert_int_equal(strata_ec_heal(s, id, size, &healed), 0);
    assert_int_equal(healed, 1);
    strata_set_stats_get(s, &st0);
    assert_int_equal(get_all(s, id, back, size), 0);
    assert_memory_equal(back, data, size);
    strata_set_stats_get(s, &st1);
    assert_int_equal(st1.bitrot_detected, st0.bitrot_detected);

    /* A rotten header makes the whole shard count as bad; still correct. */
    fd = open(p, O_RDWR);
    assert_int_equal(pwrite(fd, "XX", 2, 0), 2);
    close(fd);
    assert_int_equal(get_all(s, id, back, size), 0);
    assert_memory_equal(back, data, size);

    /* Corrupt 3 of 4 shards (more than M): error, not wrong data. */
    for (unsigned dr = 0; dr < 3; dr++) {
        ect_drive_file(&d, dr, id, p, sizeof(p));
        fd = open(p, O_RDWR);
        assert_int_equal(pwrite(fd, "garbage!", 8, 4096 + 5), 8);
        close(fd);
    }
    assert_int_equal(get_all(s, id, back, size), STRATA_ECORRUPT);

    free(data);
    free(back);
    strata_set_close(s);
}

static void test_stream_delete_reclaim(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    struct strata_set *s = open_set("delete", &d, 4, false, true);
    uint8_t data[5000], back[5000], id[STRATA_DATA_ID_LEN];
    ect_fill(data, sizeof(data));
    strata_data_id_new(id);
    put(s, id, data, sizeof(data));
    char p[4200];
    struct stat sb;
    assert_int_equal(strata_ec_delete(s, id), 0);
    for (unsigned dr = 0; dr < 4; dr++) {
        ect_drive_file(&d, dr, id, p, sizeof(p));
        assert_int_equal(stat(p, &sb), -1);
    }
    assert_int_equal(strata_ec_delete(s, id), 0); /* missing files are fine */
    assert_int_equal(get_all(s, id, back, sizeof(back)), STRATA_ENOTFOUND);

    /* A writer destroyed before finish leaves nothing in tmp/ or data/. */
    struct strata_ec_writer *w;
    strata_data_id_new(id);
    assert_int_equal(strata_ec_writer_create(s, id, &w), 0);
    assert_int_equal(strata_ec_writer_write(w, data, sizeof(data)), 0);
    strata_ec_writer_destroy(w);
    unsigned removed = 99;
    assert_int_equal(strata_ec_tmp_reclaim(s, 0, &removed), 0);
    assert_int_equal(removed, 0);
    ect_drive_file(&d, 0, id, p, sizeof(p));
    assert_int_equal(stat(p, &sb), -1);

    /* A write in progress is no leftover however old its tmp/ files
     * look: reclaim leaves them, the writer publishes its data. */
    strata_data_id_new(id);
    assert_int_equal(strata_ec_writer_create(s, id, &w), 0);
    assert_int_equal(strata_ec_writer_write(w, data, sizeof(data)), 0);
    assert_int_equal(strata_ec_tmp_reclaim(s, 0, &removed), 0);
    assert_int_equal(removed, 0);
    uint32_t mask = 0;
    assert_int_equal(strata_ec_writer_finish(w, &mask), 0);
    assert_int_equal(mask, 0xf);
    strata_ec_writer_destroy(w);
    assert_int_equal(get_all(s, id, back, sizeof(back)), 0);
    assert_memory_equal(back, data, sizeof(data));

    /* Reclaim takes old leftovers and leaves young ones. */
    char old[4200], young[4200];
    snprintf(old, sizeof(old), "%s/tmp/old.part", d.path[1]);
    snprintf(young, sizeof(young), "%s/tmp/young.part", d.path[2]);
    fclose(fopen(old, "w"));
    fclose(fopen(young, "w"));
    struct timespec ts[2] = {{.tv_sec = time(NULL) - 7200}, {.tv_sec = time(NULL) - 7200}};
    assert_int_equal(utimensat(AT_FDCWD, old, ts, 0), 0);
    assert_int_equal(strata_ec_tmp_reclaim(s, 3600, &removed), 0);
    assert_int_equal(removed, 1);
    assert_int_equal(stat(old, &sb), -1);
    assert_int_equal(stat(young, &sb), 0);
    strata_set_close(s);
}

/* A drive directory deleted while the daemon runs behaves as missing: the
 * writer drops it and still reaches quorum; the reader rebuilds. */
static void test_stream_drive_vanishes(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    struct strata_set *s = open_set("vanish", &d, 6, false, true);
    size_t size = strata_set_stripe_size(s) * 3;
    uint8_t *data = malloc(size), *back = malloc(size);
    ect_fill(data, size);
    uint8_t id[STRATA_DATA_ID_LEN];
    strata_data_id_new(id);
    ect_rm_rf(d.path[5]);
    uint32_t mask = put(s, id, data, size);
    assert_int_equal(mask, 0x1f);
    assert_int_equal(get_all(s, id, back, size), 0);
    assert_memory_equal(back, data, size);
    /* Heal cannot recreate a vanished drive root: nothing healed, no error. */
    unsigned healed = 9;
    assert_int_equal(strata_ec_heal(s, id, size, &healed), 0);
    assert_int_equal(healed, 0);
    /* A drive vanishing between create and finish is dropped at publish. */
    struct strata_ec_writer *w = NULL;
    strata_data_id_new(id);
    assert_int_equal(strata_ec_writer_create(s, id, &w), 0);
    assert_int_equal(strata_ec_writer_write(w, data, size / 2), 0);
    ect_rm_rf(d.path[4]);
    assert_int_equal(strata_ec_writer_write(w, data + size / 2, size - size / 2), 0);
    assert_int_equal(strata_ec_writer_finish(w, &mask), 0);
    assert_int_equal(mask, 0x0f);
    strata_ec_writer_destroy(w);
    memset(back, 0, size);
    assert_int_equal(get_all(s, id, back, size), 0);
    assert_memory_equal(back, data, size);
    /* Below write quorum (K=4 of 6 with 3 gone): the writer refuses. */
    ect_rm_rf(d.path[3]);
    strata_data_id_new(id);
    assert_int_equal(strata_ec_writer_create(s, id, &w), STRATA_EQUORUM);
    free(data);
    free(back);
    strata_set_close(s);
}

static void test_stream_inline(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    struct strata_set *s = open_set("inline", &d, 6, false, true); /* 4+2 */
    const size_t sizes[] = {0, 1, 17, 4096, 100000};
    for (unsigned t = 0; t < 5; t++) {
        size_t len = sizes[t];
        uint8_t *data = malloc(len + 1), *out = malloc(len + 1);
        ect_fill(data, len);
        uint8_t *buf = NULL;
        size_t sl = 0;
        uint32_t crcs[6];
        assert_int_equal(strata_ec_inline_encode(s, data, len, &buf, &sl, crcs), 0);
        assert_true(sl * 4 >= len);
        /* Shard i is drive i: shard 0 starts with the object's first bytes. */
        if (len)
            assert_memory_equal(buf, data, len < sl ? len : sl);
        const uint8_t *sh[6];
        for (unsigned i = 0; i < 6; i++) {
            sh[i] = buf + i * sl;
            assert_int_equal(crcs[i], strata_crc32c(0, sh[i], sl));
        }
        assert_int_equal(strata_ec_inline_decode(s, sh, crcs, sl, len, out), 0);
        assert_memory_equal(out, data, len);
        /* A rotten parity shard is not looked at while the data shards
         * are good: same bytes, nothing counted. */
        struct strata_set_stats p0, p1;
        strata_set_stats_get(s, &p0);
        buf[4 * sl] ^= 1;
        memset(out, 0, len);
        assert_int_equal(strata_ec_inline_decode(s, sh, crcs, sl, len, out), 0);
        assert_memory_equal(out, data, len);
        strata_set_stats_get(s, &p1);
        assert_int_equal(p1.bitrot_detected, p0.bitrot_detected);
        /* ... but counted once a data shard is missing and parity is used. */
        sh[2] = NULL;
        memset(out, 0, len);
        assert_int_equal(strata_ec_inline_decode(s, sh, crcs, sl, len, out), 0);
        assert_memory_equal(out, data, len);
        strata_set_stats_get(s, &p1);
        assert_int_equal(p1.bitrot_detected, p0.bitrot_detected + 1);
        buf[4 * sl] ^= 1;
        sh[2] = buf + 2 * sl;
        /* Two records missing. */
        sh[0] = NULL;
        sh[3] = NULL;
        memset(out, 0, len);
        assert_int_equal(strata_ec_inline_decode(s, sh, crcs, sl, len, out), 0);
        assert_memory_equal(out, data, len);
        /* One missing, one corrupt. */
        sh[3] = buf + 3 * sl;
        buf[sl + 1] ^= 1;
        struct strata_set_stats a, b;
        strata_set_stats_get(s, &a);
        memset(out, 0, len);
        assert_int_equal(strata_ec_inline_decode(s, sh, crcs, sl, len, out), 0);
        assert_memory_equal(out, data, len);
        strata_set_stats_get(s, &b);
        assert_int_equal(b.bitrot_detected, a.bitrot_detected + 1);
        /* Plus one more missing: fewer than K good. */
        sh[5] = NULL;
        assert_int_equal(strata_ec_inline_decode(s, sh, crcs, sl, len, out), STRATA_ECORRUPT);
        free(buf);
        free(data);
        free(out);
    }
    strata_set_close(s);
}

struct thr_arg {
    struct strata_set *s;
    const uint8_t *data;
    size_t size;
    int ok;
};

static void *thr_main(void *p)
{
    struct thr_arg *a = p;
    uint8_t *back = malloc(a->size);
    a->ok = 1;
    for (int i = 0; i < 4 && a->ok; i++) {
        uint8_t id[STRATA_DATA_ID_LEN];
        strata_data_id_new(id);
        struct strata_ec_writer *w;
        uint32_t mask;
        if (strata_ec_writer_create(a->s, id, &w) || strata_ec_writer_write(w, a->data, a->size) ||
            strata_ec_writer_finish(w, &mask))
            a->ok = 0;
        strata_ec_writer_destroy(w);
        struct strata_ec_reader *r;
        if (!a->ok || strata_ec_reader_open(a->s, id, a->size, &r)) {
            a->ok = 0;
            break;
        }
        if (strata_ec_reader_read(r, 0, back, a->size) || memcmp(back, a->data, a->size))
            a->ok = 0;
        strata_ec_reader_close(r);
    }
    free(back);
    return NULL;
}

/* One set, several threads, one handle per thread. */
static void test_stream_threads(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    struct strata_set *s = open_set("threads", &d, 4, false, true);
    size_t size = strata_set_stripe_size(s) * 2 + 99;
    uint8_t *data = malloc(size);
    ect_fill(data, size);
    pthread_t t[4];
    struct thr_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (struct thr_arg){.s = s, .data = data, .size = size};
        assert_int_equal(pthread_create(&t[i], NULL, thr_main, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].ok, 1);
    }
    free(data);
    strata_set_close(s);
}

int main(void)
{
    /* Skip only when the kernel has no usable io_uring (old kernel, seccomp). */
    struct io_uring probe;
    int ur = io_uring_queue_init(4, &probe, 0);
    if (ur == -ENOSYS || ur == -EPERM) {
        printf("# skip: io_uring unavailable (%s)\n", strerror(-ur));
        return 77;
    }
    if (ur == 0)
        io_uring_queue_exit(&probe);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_sizes),
        cmocka_unit_test(test_stream_degraded_and_heal),
        cmocka_unit_test(test_stream_bitrot),
        cmocka_unit_test(test_stream_delete_reclaim),
        cmocka_unit_test(test_stream_drive_vanishes),
        cmocka_unit_test(test_stream_inline),
        cmocka_unit_test(test_stream_threads),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (rc == 0)
        ect_cleanup();
    return rc;
}
