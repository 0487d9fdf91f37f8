/*
 * test_full_disk.c - a full disk fails the put cleanly.
 *
 * All four drives live on one small tmpfs.  Objects are written until a put
 * fails; that failure must be STRATA_ENOSPC or STRATA_EQUORUM, the failed
 * key must not be visible, and every object stored before must still read
 * back byte for byte.  Needs root to mount tmpfs: skips (77) otherwise.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strata/erasure.h"
#include "strata/meta.h"

#define NDRIVES 4
#define FILL_MAX 400

static char mnt[512];

static void fill(uint8_t *buf, size_t len, unsigned tag)
{
    uint32_t x = 2463534242u ^ (tag * 2654435761u);
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (uint8_t)x;
    }
}

static int put(struct strata_meta *m, const char *key, const uint8_t *buf, size_t len)
{
    struct strata_put_opts po = {.bucket = "full", .key = key, .size = len};
    struct strata_put *p = NULL;
    int rc = strata_obj_put_begin(m, &po, &p);
    if (rc)
        return rc;
    rc = strata_obj_put_write(p, buf, len);
    if (rc) {
        strata_obj_put_abort(p);
        return rc;
    }
    return strata_obj_put_commit(p, NULL);
}

static void check(struct strata_meta *m, const char *key, uint8_t *want, uint8_t *got,
                  size_t len, unsigned tag)
{
    struct strata_obj_info info = {0};
    struct strata_get *g = NULL;
    assert_int_equal(strata_obj_get_open(m, "full", key, NULL, &info, &g), 0);
    assert_int_equal(info.size, len);
    assert_int_equal(strata_obj_get_read(g, 0, got, len), 0);
    fill(want, len, tag);
    assert_memory_equal(got, want, len);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
}

static void test_full_disk(void **state)
{
    (void)state;
    const char *tmp = getenv("STRATA_TEST_TMPDIR");
    snprintf(mnt, sizeof(mnt), "%s/full-disk-%d", tmp ? tmp : "/tmp", (int)getpid());
    assert_int_equal(mkdir(mnt, 0755), 0);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=64m") != 0) {
        printf("# cannot mount tmpfs (%s): skipped\n", strerror(errno));
        rmdir(mnt);
        exit(77);
    }
    char paths_buf[NDRIVES][600];
    const char *paths[NDRIVES];
    for (int i = 0; i < NDRIVES; i++) {
        snprintf(paths_buf[i], sizeof(paths_buf[i]), "%s/d%d", mnt, i + 1);
        paths[i] = paths_buf[i];
    }
    struct strata_set *set = NULL;
    struct strata_meta *m = NULL;
    struct strata_errinfo ei = {0};
    struct strata_set_opts so = {.direct_io = true};
    assert_int_equal(strata_set_open(paths, NDRIVES, &so, &set, &ei), 0);
    struct strata_meta_opts mo = {0};
    assert_int_equal(strata_meta_open(&set, 1, &mo, &m, &ei), 0);
    struct strata_bucket_info b = {.name = "full", .owner = "test", .region = "us-east-1"};
    assert_int_equal(strata_meta_bucket_create(m, &b), 0);

    const size_t big = 1u << 20, small = 1000;
    uint8_t *buf = malloc(big), *got = malloc(big);
    assert_non_null(buf);
    assert_non_null(got);
    char key[64];
    for (unsigned i = 0; i < 4; i++) {
        snprintf(key, sizeof(key), "keep-small-%u", i);
        fill(buf, small, i);
        assert_int_equal(put(m, key, buf, small), 0);
        snprintf(key, sizeof(key), "keep-big-%u", i);
        fill(buf, big, 100 + i);
        assert_int_equal(put(m, key, buf, big), 0);
    }

    int rc = 0;
    unsigned stored = 0;
    for (unsigned i = 0; i < FILL_MAX; i++) {
        snprintf(key, sizeof(key), "fill-%u", i);
        fill(buf, big, 1000 + i);
        rc = put(m, key, buf, big);
        if (rc)
            break;
        stored++;
    }
    printf("# %u fill objects stored before the put failed with %s\n", stored,
           strata_errname(rc));
    assert_true(rc == STRATA_ENOSPC || rc == STRATA_EQUORUM);

    /* The failed key is not visible, in any form. */
    struct strata_obj_info info = {0};
    snprintf(key, sizeof(key), "fill-%u", stored);
    assert_int_equal(strata_obj_head(m, "full", key, NULL, &info), STRATA_ENOTFOUND);
    strata_obj_info_fini(&info);

    /* Everything stored earlier reads back identical. */
    for (unsigned i = 0; i < 4; i++) {
        snprintf(key, sizeof(key), "keep-small-%u", i);
        check(m, key, buf, got, small, i);
        snprintf(key, sizeof(key), "keep-big-%u", i);
        check(m, key, buf, got, big, 100 + i);
    }
    for (unsigned i = 0; i < stored; i++) {
        snprintf(key, sizeof(key), "fill-%u", i);
        check(m, key, buf, got, big, 1000 + i);
    }

    strata_meta_close(m);
    strata_set_close(set);
    free(buf);
    free(got);
    assert_int_equal(umount2(mnt, MNT_DETACH), 0);
    rmdir(mnt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_disk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
