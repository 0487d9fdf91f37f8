/*
 * test_store_enospc.c - a drive whose metadata store fills up must not take
 * the process down, and must take writes again once it has room.
 *
 * Debian's RocksDB 7.8 keeps its assertions and aborts when a file writer
 * that failed is used again: the info LOG on the full drive (the WAL error's
 * own report, the shutdown lines at close) and rocksdb_flush_wal on a store
 * whose WAL append failed (heal syncs the WALs).  Small inline objects fill
 * the stores (their shards live in the records), so the WAL append is what
 * fails.  Each drive filesystem is a tmpfs filled with a ballast file before
 * the stores open (RocksDB preallocates its WAL; ballast written later would
 * leave the WAL room).  Needs root to mount tmpfs: skips (77) otherwise.
 *
 * one_drive_full: drive 0 fills; puts keep succeeding on the other three
 * (write quorum 3 of 2+2), heal passes run while it is full, deletes, then
 * the ballast goes: the drive takes writes again (RocksDB recovers the store
 * once its disk has the memtable budget free), heal refills it, and after
 * close/reopen every acknowledged object reads back byte for byte, also
 * with two other drives replaced by empty ones (so from drive 0's records).
 *
 * all_drives_full: the four drives share one tmpfs; puts fail with
 * STRATA_ENOSPC (503 "storage full"), again on a second try, the failed
 * keys never show, heal and close do not abort; after freeing space and
 * reopening, acknowledged objects read back and new puts succeed.
 *
 * wal_failed_empty_memtable: drive 0's WAL fails while its memtable is
 * empty; once RocksDB recovers the store, puts go on without aborting and
 * the drive stays out until close and reopen (details at the test).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <time.h>

#include "meta_internal.h"
#include "meta_test_util.h"

#define OBJ (64 * 1024) /* inline: 32 KiB of shard per drive record */
#define FILL_MAX 600

struct fx {
    char root[300];
    char mnt[400]; /* the tmpfs, empty until mounted */
    struct mt_env e;
    bool okf[FILL_MAX];
};

static struct fx F;

static int mount_tmpfs(const char *dir, const char *size)
{
    char opt[64];
    snprintf(opt, sizeof(opt), "size=%s", size);
    mkdir(dir, 0755);
    return mount("tmpfs", dir, "tmpfs", 0, opt);
}

/* Fill the filesystem of dir up to leave bytes free, with file name. */
static void ballast_named(const char *dir, const char *name, long leave)
{
    struct statvfs sv;
    assert_int_equal(statvfs(dir, &sv), 0);
    long left = (long)(sv.f_bavail * sv.f_frsize) - leave;
    char p[700];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    assert_true(fd >= 0);
    static char z[1 << 16];
    memset(z, 0x5a, sizeof(z));
    while (left > 0) {
        long n = left > (long)sizeof(z) ? (long)sizeof(z) : left;
        if (write(fd, z, (size_t)n) != n)
            break;
        left -= n;
    }
    close(fd);
}

static void ballast(const char *dir, long leave)
{
    ballast_named(dir, "ballast", leave);
}

static void ballast_rm(const char *dir)
{
    char p[700];
    snprintf(p, sizeof(p), "%s/ballast", dir);
    assert_int_equal(unlink(p), 0);
}

static int put_obj(const char *key, uint32_t seed)
{
    uint8_t *buf = malloc(OBJ);
    mt_fill(buf, OBJ, seed);
    int rc = mt_put(&F.e, "b", key, buf, OBJ, NULL);
    free(buf);
    return rc;
}

/* The object reads back as put; or, with want_absent, it is not found. */
static void check_obj(const char *key, uint32_t seed, bool want_absent)
{
    uint8_t *got = NULL;
    size_t len = 0;
    int rc = mt_get(&F.e, "b", key, NULL, &got, &len);
    if (want_absent) {
        assert_int_equal(rc, STRATA_ENOTFOUND);
        return;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(len, OBJ);
    uint8_t *want = malloc(OBJ);
    mt_fill(want, OBJ, seed);
    assert_memory_equal(got, want, OBJ);
    free(want);
    free(got);
}

static void check_fill(unsigned n)
{
    char key[64];
    for (unsigned i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "fill-%u", i);
        check_obj(key, 1000 + i, !F.okf[i]);
    }
}

static void heal_now(void)
{
    struct strata_heal_stats hs;
    memset(&hs, 0, sizeof(hs));
    (void)strata_meta_heal_queued(F.e.m, 0, &hs, NULL);
    assert_int_equal(strata_meta_heal_all(F.e.m, &hs), 0);
}

static bool drive_failed(unsigned d)
{
    struct meta_drive *dr = &F.e.m->sets[0].drives[d];
    pthread_mutex_lock(&dr->mu);
    bool f = dr->wfail;
    pthread_mutex_unlock(&dr->mu);
    return f;
}

static void env_init(const char *name)
{
    memset(&F, 0, sizeof(F));
    const char *tmp = getenv("STRATA_TEST_TMPDIR");
    snprintf(F.root, sizeof(F.root), "%s/store-enospc-%s-%d", tmp ? tmp : "/tmp", name,
             (int)getpid());
    mt_rm_rf(F.root);
    assert_int_equal(mkdir(F.root, 0755), 0);
}

static void env_fini(void)
{
    if (F.mnt[0])
        umount2(F.mnt, MNT_DETACH);
    mt_rm_rf(F.root);
}

static void skip_no_mount(const char *dir)
{
    printf("# cannot mount tmpfs on %s (%s): skipped\n", dir, strerror(errno));
    mt_rm_rf(F.root);
    exit(77);
}

/* A tmpfs of size on F.mnt holding the first own_n drives (the others
 * under F.root), filled up to leave bytes before the stores open (RocksDB
 * preallocates its WAL at open); opens meta with bucket "b". */
static void setup_on_tmpfs(const char *size, int own_n, long leave,
                           const struct strata_meta_opts *mo)
{
    snprintf(F.mnt, sizeof(F.mnt), "%s/m", F.root);
    if (mount_tmpfs(F.mnt, size) != 0)
        skip_no_mount(F.mnt);
    for (int i = 0; i < MT_DRIVES; i++) {
        snprintf(F.e.drive[i], sizeof(F.e.drive[i]), "%s/d%d", i < own_n ? F.mnt : F.root,
                 i);
        assert_int_equal(mkdir(F.e.drive[i], 0755), 0);
        F.e.paths[i] = F.e.drive[i];
    }
    ballast(F.mnt, leave);
    assert_int_equal(mt_open_with(&F.e, mo), 0);
    assert_int_equal(mt_bucket(&F.e, "b", 0), 0);
}

static void test_one_drive_full(void **state)
{
    (void)state;
    env_init("one");
    /* Drive 0 on its own tmpfs: large enough that the free space after the
     * ballast goes covers RocksDB's recovery reserve (the memtable budget). */
    static const struct strata_meta_opts small = {.memtable_mb = 64}; /* 8 MiB each */
    setup_on_tmpfs("256m", 1, 512 * 1024, &small);

    /* Every put succeeds: drive 0 fills, the other three are a quorum.  Heal
     * passes run meanwhile (they sync the WALs: the abort before). */
    char key[64];
    unsigned n = 400;
    for (unsigned i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "fill-%u", i);
        assert_int_equal(put_obj(key, 1000 + i), 0);
        F.okf[i] = true;
        if (i % 100 == 99)
            heal_now();
    }
    assert_true(drive_failed(0));
    /* Another write after the failure, and deletes. */
    assert_int_equal(put_obj("after-error", 7), 0);
    for (unsigned i = 0; i < n; i += 4) {
        snprintf(key, sizeof(key), "fill-%u", i);
        assert_int_equal(strata_obj_delete(F.e.m, "b", key, NULL, NULL), 0);
        F.okf[i] = false;
    }
    heal_now();
    check_fill(n);

    /* Space returns: the store takes writes again by itself (RocksDB polls
     * the free space), without a restart. */
    ballast_rm(F.mnt);
    time_t until = time(NULL) + 60;
    unsigned k = 0;
    while (drive_failed(0) && time(NULL) < until) {
        snprintf(key, sizeof(key), "probe-%u", k);
        assert_int_equal(put_obj(key, 3000 + k), 0);
        k++;
        usleep(200 * 1000);
    }
    assert_false(drive_failed(0));
    printf("# drive 0 took writes again after %u probe puts\n", k);
    heal_now();

    /* Close and reopen: everything acknowledged reads back.  Then drives 1
     * and 2 are replaced by empty ones (fresh: they do not vote), so every
     * inline object needs drive 0's shard: heal refilled the drive that was
     * full, byte for byte. */
    mt_close(&F.e);
    assert_int_equal(mt_open(&F.e), 0);
    check_fill(n);
    check_obj("after-error", 7, false);
    mt_close(&F.e);
    for (int i = 1; i <= 2; i++) {
        char moved[700];
        snprintf(moved, sizeof(moved), "%s.away", F.e.drive[i]);
        assert_int_equal(rename(F.e.drive[i], moved), 0);
        assert_int_equal(mkdir(F.e.drive[i], 0755), 0);
    }
    assert_int_equal(mt_open(&F.e), 0);
    check_fill(n);
    check_obj("after-error", 7, false);
    for (unsigned i = 0; i < k; i++) {
        snprintf(key, sizeof(key), "probe-%u", i);
        check_obj(key, 3000 + i, false);
    }
    mt_close(&F.e);
    env_fini();
}

static void test_all_drives_full(void **state)
{
    (void)state;
    env_init("all");
    /* RocksDB preallocates a WAL of ~1.1 memtables on its first write.  On
     * a tmpfs smaller than that the fallocate fails at once; a smaller one
     * takes pages until the disk is full and only then gives them back,
     * so the other drives' writes of that moment fail spuriously.  Memtables
     * larger than this tmpfs keep every write's outcome to the real space. */
    static const struct strata_meta_opts big = {.memtable_mb = 512};
    setup_on_tmpfs("32m", MT_DRIVES, 2 * 1024 * 1024, &big);

    char key[64];
    int rc = 0;
    unsigned n = 0;
    for (; n < FILL_MAX && rc == 0; n++) {
        snprintf(key, sizeof(key), "fill-%u", n);
        rc = put_obj(key, 1000 + n);
        F.okf[n] = rc == 0;
    }
    printf("# %u puts, the last failed with %s\n", n, strata_errname(rc));
    assert_int_equal(rc, STRATA_ENOSPC);
    /* A second write to the same full stores fails the same way. */
    assert_int_equal(put_obj("again", 9), STRATA_ENOSPC);
    check_obj("again", 9, true);
    struct strata_heal_stats hs;
    memset(&hs, 0, sizeof(hs));
    (void)strata_meta_heal_queued(F.e.m, 0, &hs, NULL);
    (void)strata_meta_heal_all(F.e.m, &hs);
    check_fill(n);

    /* Close while full must not abort; reopen with room again. */
    mt_close(&F.e);
    ballast_rm(F.mnt);
    assert_int_equal(mt_open_with(&F.e, &big), 0);
    check_fill(n);
    check_obj("again", 9, true);
    assert_int_equal(put_obj("again", 9), 0);
    check_obj("again", 9, false);
    mt_close(&F.e);
    env_fini();
}

/*
 * RocksDB 7.8 resumes a store whose WAL write failed while its memtable was
 * empty without switching to a new WAL; the next write through it reused
 * the failed file writer and aborted the process.  Drive 0's memtable is
 * flushed (empty, a new WAL without preallocation: less room than a
 * memtable), the drive filled: the next put fails in its WAL.  Space
 * returns, RocksDB recovers the store, puts go on: drive 0 must stay out
 * (no probe) until a close and reopen, which must not abort either.
 */
static void test_wal_failed_empty_memtable(void **state)
{
    (void)state;
    env_init("walempty");
    static const struct strata_meta_opts mid = {.memtable_mb = 128}; /* 16 MiB each */
    setup_on_tmpfs("64m", 1, 8 * 1024 * 1024, &mid);
    assert_int_equal(put_obj("before", 1), 0);
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    char *err = NULL;
    rocksdb_flush(F.e.m->sets[0].drives[0].db, fo, &err);
    rocksdb_flushoptions_destroy(fo);
    assert_null(err);
    ballast_named(F.mnt, "ballast2", 0);
    assert_int_equal(put_obj("failed-on-0", 2), 0);
    assert_true(drive_failed(0));
    assert_true(F.e.m->sets[0].drives[0].wdead);
    char p[700];
    snprintf(p, sizeof(p), "%s/ballast2", F.mnt);
    assert_int_equal(unlink(p), 0);
    ballast_rm(F.mnt);
    /* RocksDB polls the free space every few seconds; a probe once a
     * second would have reached the resumed store. */
    char key[64];
    unsigned k = 0;
    for (time_t until = time(NULL) + 10; time(NULL) < until; k++) {
        snprintf(key, sizeof(key), "after-%u", k);
        assert_int_equal(put_obj(key, 100 + k), 0);
        usleep(200 * 1000);
    }
    assert_true(drive_failed(0));
    mt_close(&F.e);
    assert_int_equal(mt_open_with(&F.e, &mid), 0);
    assert_int_equal(put_obj("reopened", 3), 0);
    assert_false(drive_failed(0));
    heal_now();
    check_obj("before", 1, false);
    check_obj("failed-on-0", 2, false);
    check_obj("reopened", 3, false);
    for (unsigned i = 0; i < k; i++) {
        snprintf(key, sizeof(key), "after-%u", i);
        check_obj(key, 100 + i, false);
    }
    mt_close(&F.e);
    env_fini();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_drive_full),
        cmocka_unit_test(test_all_drives_full),
        cmocka_unit_test(test_wal_failed_empty_memtable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
