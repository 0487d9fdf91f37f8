/*
 * test_read_cached.c - strata_set_opts.read_cached_max: readers of objects
 * up to that size read the shard files through the page cache, bigger ones
 * with O_DIRECT (when the filesystem takes it).  The cache never changes
 * what is served: rot written after a cached read is still caught by the
 * block CRCs and answered from parity, heal rewrites the rotten shard, and
 * a deleted object is ENOTFOUND, not its cached bytes.  Page residency is
 * checked with mincore(2) on the shard files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/mman.h>

#include "ec_test_util.h"
#include "ec_test_shards.h"
#include "strata/erasure.h"

#define BLOCK (64u * 1024)

static struct strata_set *open_set(struct ect_drives *d, uint64_t cached_max)
{
    ect_drives_init(d, ect_dir("cached"), 4);
    struct strata_set_opts o = {
        .direct_io = true, .no_fsync = true, .block_size = BLOCK, .read_cached_max = cached_max};
    return ect_set_open(d, &o);
}

/* Drop the file's cached pages (the test's own header reads included). */
static void drop_cache(const char *path)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    close(fd);
}

/* Is the page at off (past the 4 KiB header: a block) in the page cache? */
static bool resident(const char *path, off_t off)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    assert_true(p != MAP_FAILED);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *vec = calloc(((size_t)sb.st_size + pg - 1) / pg, 1);
    assert_non_null(vec);
    assert_int_equal(mincore(p, (size_t)sb.st_size, vec), 0);
    bool in = vec[(size_t)off / pg] & 1;
    free(vec);
    munmap(p, (size_t)sb.st_size);
    return in;
}

/* Whether the set took O_DIRECT on this filesystem (tmpfs refuses it):
 * a direct read leaves no block page behind. */
static bool direct_taken(const struct ect_drives *d, struct strata_set *set)
{
    size_t stripe = strata_set_stripe_size(set);
    size_t size = 8 * stripe;
    uint8_t *data = malloc(size), *out = malloc(size);
    assert_non_null(data);
    assert_non_null(out);
    for (size_t i = 0; i < size; i++)
        data[i] = (uint8_t)ect_rand();
    uint8_t id[STRATA_DATA_ID_LEN];
    strata_data_id_new(id);
    ect_put(set, id, data, size);
    char path[4096];
    ect_shard_file(d, id, 0, path, sizeof(path));
    drop_cache(path);
    assert_int_equal(ect_get(set, id, out, size), 0);
    assert_memory_equal(out, data, size);
    bool direct = !resident(path, 4096);
    strata_ec_delete(set, id);
    free(data);
    free(out);
    return direct;
}

static void test_cached_reads(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    struct strata_set *probe = open_set(&d, 0);
    bool direct = direct_taken(&d, probe);
    size_t ss = strata_set_shard_size(probe), stripe = strata_set_stripe_size(probe);
    strata_set_close(probe);
    if (!direct)
        print_message("O_DIRECT refused here: residency checks skipped\n");

    const size_t small = 2 * stripe, big = 3 * stripe;
    struct strata_set *set = open_set(&d, small); /* small is read cached, big direct */

    uint8_t *data = malloc(big), *out = malloc(big);
    assert_non_null(data);
    assert_non_null(out);
    const size_t sizes[] = {small, big};
    for (unsigned z = 0; z < 2; z++) {
        size_t size = sizes[z];
        for (size_t i = 0; i < size; i++)
            data[i] = (uint8_t)ect_rand();
        uint8_t id[STRATA_DATA_ID_LEN];
        strata_data_id_new(id);
        ect_put(set, id, data, size);
        char path[4096];
        ect_shard_file(&d, id, 1, path, sizeof(path));
        drop_cache(path);

        memset(out, 0, big);
        assert_int_equal(ect_get(set, id, out, size), 0);
        assert_memory_equal(out, data, size);
        if (direct)
            assert_int_equal(resident(path, 4096 + (off_t)ss), size == small);

        /* Rot after the cached read: written through the file, so the
         * cached page holds it too - the CRC catches it, parity answers. */
        struct strata_set_stats a, b;
        strata_set_stats_get(set, &a);
        ect_flip(path, 4096 + (off_t)ss + 17); /* shard 1's block of stripe 1 */
        memset(out, 0, big);
        assert_int_equal(ect_get(set, id, out, size), 0);
        assert_memory_equal(out, data, size);
        strata_set_stats_get(set, &b);
        assert_int_equal(b.bitrot_detected - a.bitrot_detected, 1);
        assert_int_equal(b.stripes_reconstructed - a.stripes_reconstructed, 1);

        /* Heal rewrites the shard (a new file); the next read is clean. */
        unsigned healed = 0;
        assert_int_equal(strata_ec_heal(set, id, size, &healed), 0);
        assert_int_equal(healed, 1);
        strata_set_stats_get(set, &a);
        memset(out, 0, big);
        assert_int_equal(ect_get(set, id, out, size), 0);
        assert_memory_equal(out, data, size);
        strata_set_stats_get(set, &b);
        assert_int_equal(b.bitrot_detected - a.bitrot_detected, 0);

        /* Deleted: the cached pages of the unlinked files serve nothing. */
        assert_int_equal(strata_ec_delete(set, id), 0);
        assert_int_equal(ect_get(set, id, out, size), STRATA_ENOTFOUND);
    }
    free(data);
    free(out);
    strata_set_close(set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cached_reads),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (rc == 0)
        ect_cleanup();
    return rc;
}
