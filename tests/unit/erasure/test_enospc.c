/*
 * test_enospc.c - a full drive: four drives on one 8 MiB tmpfs (mounted
 * here; skipped with 77 when mount is not permitted).  Writing more than
 * fits must fail with STRATA_ENOSPC (or EQUORUM) and leave no tmp files;
 * afterwards the space is free again.  tmpfs refuses O_DIRECT, so this also
 * covers the buffered fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <sys/mount.h>

#include <liburing.h>

#include "ec_test_util.h"
#include "strata/erasure.h"

static char mnt[1024];

static unsigned count_tmp(const struct ect_drives *d)
{
    unsigned n = 0;
    for (unsigned i = 0; i < d->n; i++) {
        char p[4200];
        snprintf(p, sizeof(p), "%s/tmp", d->path[i]);
        DIR *dir = opendir(p);
        if (!dir)
            continue;
        struct dirent *de;
        while ((de = readdir(dir)))
            if (de->d_name[0] != '.')
                n++;
        closedir(dir);
    }
    return n;
}

static void test_enospc_writer(void **state)
{
    (void)state;
    ect_seed();
    struct ect_drives d;
    ect_drives_init(&d, mnt, 4);
    struct strata_set_opts o = {.direct_io = true};
    struct strata_set *s;
    struct strata_errinfo ei;
    assert_int_equal(strata_set_open(d.ptr, 4, &o, &s, &ei), 0);

    size_t chunk = strata_set_stripe_size(s);
    uint8_t *data = malloc(chunk);
    ect_fill(data, chunk);

    /* A small object fits. */
    uint8_t id[STRATA_DATA_ID_LEN];
    strata_data_id_new(id);
    struct strata_ec_writer *w;
    uint32_t mask = 0;
    assert_int_equal(strata_ec_writer_create(s, id, &w), 0);
    assert_int_equal(strata_ec_writer_write(w, data, 1000), 0);
    assert_int_equal(strata_ec_writer_finish(w, &mask), 0);
    assert_int_equal(mask, 0xf);
    strata_ec_writer_destroy(w);

    /* 16 MiB of object is 32 MiB of shards on an 8 MiB filesystem. */
    strata_data_id_new(id);
    assert_int_equal(strata_ec_writer_create(s, id, &w), 0);
    int rc = 0;
    for (unsigned i = 0; i < 16 && rc == 0; i++)
        rc = strata_ec_writer_write(w, data, chunk);
    if (rc == 0)
        rc = strata_ec_writer_finish(w, &mask);
    assert_true(rc == STRATA_ENOSPC || rc == STRATA_EQUORUM);
    printf("# full drives: %s\n", strata_errname(rc));
    /* Once failed, the writer stays failed and its tmp files are gone. */
    assert_int_equal(strata_ec_writer_write(w, data, 1), rc);
    assert_int_equal(count_tmp(&d), 0);
    strata_ec_writer_destroy(w);
    assert_int_equal(count_tmp(&d), 0);

    /* The space came back: the next small write works. */
    strata_data_id_new(id);
    assert_int_equal(strata_ec_writer_create(s, id, &w), 0);
    assert_int_equal(strata_ec_writer_write(w, data, 5000), 0);
    assert_int_equal(strata_ec_writer_finish(w, &mask), 0);
    strata_ec_writer_destroy(w);
    struct strata_ec_reader *r;
    uint8_t back[5000];
    assert_int_equal(strata_ec_reader_open(s, id, 5000, &r), 0);
    assert_int_equal(strata_ec_reader_read(r, 0, back, 5000), 0);
    assert_memory_equal(back, data, 5000);
    strata_ec_reader_close(r);
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
    snprintf(mnt, sizeof(mnt), "%s", ect_dir("enospc"));
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=8m") != 0) {
        printf("# skip: cannot mount tmpfs (%s)\n", strerror(errno));
        return 77;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_enospc_writer)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    umount2(mnt, MNT_DETACH);
    rmdir(mnt);
    return rc;
}
