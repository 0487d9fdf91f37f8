/*
 * test_store_format.c - the per-drive stores' RocksDB layout (meta/store.c):
 * a store written by the previous layout (CRC32C block checksums) reads
 * back unchanged, and lists, after the daemon opens it with the current
 * options (XXH3 block checksums), also once new files sit beside the old
 * ones; concurrent commits merged into one synced write per drive (group
 * commit) all read back, also after the write-ahead logs are replayed;
 * the memtable budget (strata_meta_opts.memtable_mb) bounds every store's
 * memtables while far more than the budget is written; level 0 gathers
 * STRATA_META_L0_TRIGGER memtables before a merge into a level 1 of that
 * size (the OPTIONS file RocksDB writes into each store).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <rocksdb/c.h>

#include "meta_internal.h"
#include "meta_test_util.h"

#define SMALL 1000u
#define LARGE (100u * 1024) /* inline: 50 KiB shards on 4 drives */

/* Rewrite a drive's store the way the previous layout wrote it: RocksDB's
 * default options replay the log into an SST with CRC32C checksums. */
static void rewrite_old_layout(const char *drive)
{
    char path[700];
    snprintf(path, sizeof(path), "%s/meta", drive);
    rocksdb_options_t *o = rocksdb_options_create();
    char *err = NULL;
    rocksdb_t *db = rocksdb_open(o, path, &err);
    assert_null(err);
    rocksdb_compact_range(db, NULL, 0, NULL, 0);
    rocksdb_close(db);
    rocksdb_options_destroy(o);
}

static void check_obj(struct mt_env *e, const char *key, size_t len, uint32_t seed)
{
    uint8_t *want = malloc(len), *got = NULL;
    size_t got_len = 0;
    assert_non_null(want);
    mt_fill(want, len, seed);
    assert_int_equal(mt_get(e, "b", key, NULL, &got, &got_len), 0);
    assert_int_equal(got_len, len);
    assert_memory_equal(got, want, len);
    free(got);
    free(want);
}

static void put_obj(struct mt_env *e, const char *key, size_t len, uint32_t seed)
{
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    mt_fill(buf, len, seed);
    assert_int_equal(mt_put(e, "b", key, buf, len, NULL), 0);
    free(buf);
}

static int count_cb(const struct strata_list_entry *le, void *ud)
{
    (void)le;
    (*(unsigned *)ud)++;
    return 0;
}

static unsigned list_count(struct mt_env *e)
{
    struct strata_list_opts lo;
    memset(&lo, 0, sizeof(lo));
    lo.bucket = "b";
    lo.max_keys = 1000;
    struct strata_list_result res;
    memset(&res, 0, sizeof(res));
    unsigned n = 0;
    assert_int_equal(strata_obj_list(e->m, &lo, count_cb, &n, &res), 0);
    assert_false(res.truncated);
    return n;
}

static void test_old_layout_reads(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("oldfmt");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_OFF), 0);
    put_obj(e, "small", SMALL, 1);
    put_obj(e, "large", LARGE, 2);
    put_obj(e, "gone", LARGE, 3);
    assert_int_equal(strata_obj_delete(e->m, "b", "gone", NULL, NULL), 0);
    mt_close(e);
    for (int d = 0; d < MT_DRIVES; d++)
        rewrite_old_layout(e->drive[d]);

    assert_int_equal(mt_open(e), 0);
    check_obj(e, "small", SMALL, 1);
    check_obj(e, "large", LARGE, 2);
    assert_int_equal(list_count(e), 2);
    uint8_t *got = NULL;
    size_t got_len = 0;
    assert_int_equal(mt_get(e, "b", "gone", NULL, &got, &got_len), STRATA_ENOTFOUND);
    /* New writes beside the old files, overwrites of old versions too. */
    put_obj(e, "large", LARGE, 4);
    put_obj(e, "large2", LARGE, 5);
    mt_close(e);
    assert_int_equal(mt_open(e), 0);
    check_obj(e, "small", SMALL, 1);
    check_obj(e, "large", LARGE, 4);
    check_obj(e, "large2", LARGE, 5);
    assert_int_equal(list_count(e), 3);
    mt_teardown(e);
}

#define WRITERS 8
#define PER_WRITER 12

struct writer {
    struct mt_env *e;
    unsigned id;
    int rc;
};

static void *writer_fn(void *arg)
{
    struct writer *w = arg;
    size_t len = (w->id % 2) ? LARGE : SMALL;
    uint8_t *buf = malloc(len);
    for (unsigned i = 0; i < PER_WRITER && buf && w->rc == 0; i++) {
        char key[32];
        snprintf(key, sizeof(key), "w%u-%u", w->id, i);
        mt_fill(buf, len, w->id * 1000 + i);
        w->rc = mt_put(w->e, "b", key, buf, len, NULL);
    }
    if (!buf)
        w->rc = STRATA_ENOMEM;
    free(buf);
    return NULL;
}

static void check_writers(struct mt_env *e)
{
    for (unsigned id = 0; id < WRITERS; id++)
        for (unsigned i = 0; i < PER_WRITER; i++) {
            char key[32];
            snprintf(key, sizeof(key), "w%u-%u", id, i);
            check_obj(e, key, (id % 2) ? LARGE : SMALL, id * 1000 + i);
        }
    assert_int_equal(list_count(e), WRITERS * PER_WRITER);
}

static void test_group_commit(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("group");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_OFF), 0);
    pthread_t t[WRITERS];
    struct writer w[WRITERS];
    for (unsigned i = 0; i < WRITERS; i++) {
        w[i] = (struct writer){.e = e, .id = i};
        assert_int_equal(pthread_create(&t[i], NULL, writer_fn, &w[i]), 0);
    }
    for (unsigned i = 0; i < WRITERS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].rc, 0);
    }
    check_writers(e);
    mt_close(e); /* the records are in the logs only: reopening replays them */
    assert_int_equal(mt_open(e), 0);
    check_writers(e);
    mt_teardown(e);
}

/* Writes 10 MiB of inline shards to each drive under an 8 MiB budget for
 * all four stores (1 MiB memtables, two per store at most): RocksDB's
 * default would keep all of it in memtables. */
static void test_memtable_budget(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("memtable");
    assert_non_null(e);
    assert_int_equal(strata_meta_memtable_size(e->m), (STRATA_MEMTABLE_MB_DEFAULT << 20) / 8);
    strata_meta_close(e->m);
    struct strata_meta_opts o = {.memtable_mb = 8};
    struct strata_errinfo ei = {.drive = -1};
    assert_int_equal(strata_meta_open(&e->set, 1, &o, &e->m, &ei), 0);
    assert_int_equal(strata_meta_memtable_size(e->m), 1u << 20);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_OFF), 0);
    uint64_t peak = 0;
    for (unsigned i = 0; i < 200; i++) {
        char key[32];
        snprintf(key, sizeof(key), "k%u", i % 50); /* overwrites too */
        put_obj(e, key, LARGE, i);
        for (unsigned d = 0; d < MT_DRIVES; d++) {
            struct strata_meta_store_stats st;
            assert_int_equal(strata_meta_store_stats_get(e->m, 0, d, &st), 0);
            if (st.memtable_bytes > peak)
                peak = st.memtable_bytes;
        }
    }
    /* Two 1 MiB memtables, each overshooting by at most a record and an
     * arena block before it is switched. */
    assert_true(peak > (1u << 20));
    assert_true(peak <= 3u << 20);
    for (unsigned i = 150; i < 200; i++) {
        char key[32];
        snprintf(key, sizeof(key), "k%u", i % 50);
        check_obj(e, key, LARGE, i);
    }
    mt_teardown(e);
}

/* The value of "key=" in the newest OPTIONS file of a drive's store. */
static uint64_t store_option(const char *drive, const char *key)
{
    char dir[700], path[1400], best[300] = "";
    snprintf(dir, sizeof(dir), "%s/meta", drive);
    DIR *dh = opendir(dir);
    assert_non_null(dh);
    struct dirent *de;
    while ((de = readdir(dh)) != NULL) /* OPTIONS-<6+ digit number>: names sort by number */
        if (strncmp(de->d_name, "OPTIONS-", 8) == 0 &&
            (strlen(de->d_name) > strlen(best) ||
             (strlen(de->d_name) == strlen(best) && strcmp(de->d_name, best) > 0)))
            snprintf(best, sizeof(best), "%s", de->d_name);
    closedir(dh);
    assert_true(best[0] != '\0');
    snprintf(path, sizeof(path), "%s/%s", dir, best);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512], want[128];
    snprintf(want, sizeof(want), "%s=", key);
    uint64_t v = UINT64_MAX;
    while (fgets(line, sizeof(line), f)) {
        const char *p = line + strspn(line, " \t");
        if (strncmp(p, want, strlen(want)) == 0)
            v = strtoull(p + strlen(want), NULL, 10);
    }
    fclose(f);
    assert_true(v != UINT64_MAX);
    return v;
}

/* Every store of the default budget (four drives: 64 MiB memtables) and
 * of a small one (1 MiB memtables: level 1 keeps RocksDB's 256 MiB). */
static void test_level_shape(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("levels");
    assert_non_null(e);
    for (unsigned d = 0; d < MT_DRIVES; d++) {
        assert_int_equal(store_option(e->drive[d], "level0_file_num_compaction_trigger"), 8);
        assert_int_equal(store_option(e->drive[d], "level0_slowdown_writes_trigger"), 24);
        assert_int_equal(store_option(e->drive[d], "level0_stop_writes_trigger"), 40);
        assert_int_equal(store_option(e->drive[d], "max_bytes_for_level_base"),
                         (uint64_t)8 * ((STRATA_MEMTABLE_MB_DEFAULT << 20) / 8));
    }
    strata_meta_close(e->m);
    struct strata_meta_opts o = {.memtable_mb = 8};
    struct strata_errinfo ei = {.drive = -1};
    assert_int_equal(strata_meta_open(&e->set, 1, &o, &e->m, &ei), 0);
    for (unsigned d = 0; d < MT_DRIVES; d++)
        assert_int_equal(store_option(e->drive[d], "max_bytes_for_level_base"), 256u << 20);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_old_layout_reads),
        cmocka_unit_test(test_group_commit),
        cmocka_unit_test(test_memtable_budget),
        cmocka_unit_test(test_level_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
