/*
 * test_store_slog_acct.c - the small-object log's live-byte accounting
 * ('L' keys, meta/local/slog.c) with the commits' hints (meta_slog_hint):
 *
 * exact: after overwrites, deletes, versions, delete markers, the removal
 * of one version, a replica sent twice (the same sort key written again)
 * and empty objects, each drive's 'L' keys equal the shard bytes its 'O'
 * records name, per segment, read back from the store; and again after a
 * reopen.
 *
 * hinted: an overwrite reads back at most the value its tombstone drop
 * replaces (one per drive), not the replaced version's record and the new
 * version's key as well: the key txn's reads under the key lock say what
 * they held.
 *
 * sync_only_for_new_appends: a delete's writes leave an unsynced append
 * alone; the next put's write syncs it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "meta_internal.h"
#include "meta_test_util.h"
#include "strata/erasure.h"

static struct mt_env *env;

static int open_log(void)
{
    struct strata_meta_opts mo = {.small_object_log = true, .slog_segment_mb = 1};
    return mt_open_with(env, &mo);
}

static uint64_t be64(const char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | (uint8_t)p[i];
    return v;
}

#define SEGS_MAX 64

/* Per drive: the logged bytes the records name and the 'L' counts. */
static void check_counts(void)
{
    struct strata_meta *m = env->m;
    for (unsigned d = 0; d < m->sets[0].n; d++) {
        uint64_t seg[SEGS_MAX] = {0}, named[SEGS_MAX] = {0}, counted[SEGS_MAX] = {0};
        size_t n = 0, logged = 0;
        rocksdb_readoptions_t *ro = NULL;
        rocksdb_iterator_t *it = strata_meta__iter_new(m, 0, d, &ro, NULL, 0, true);
        assert_non_null(it);
        for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
            size_t kl, vl;
            const char *k = rocksdb_iter_key(it, &kl), *v = rocksdb_iter_value(it, &vl);
            uint64_t id = 0, bytes = 0;
            bool lkey = kl == SLOG_LKEY_LEN && k[0] == 'L';
            if (lkey) {
                assert_int_equal(vl, 8);
                id = be64(k + 1);
                bytes = be64(v);
                assert_true(bytes > 0); /* a count of zero is deleted */
            } else if (kl && k[0] == 'O' && vl && (uint8_t)v[0] == VAL_VERSION_BYTE) {
                struct meta_rec r;
                assert_int_equal(strata_meta__rec_decode(v, vl, false, &r), 0);
                id = r.log_seg;
                bytes = r.logged ? r.shard_len : 0;
                strata_meta__rec_fini(&r);
                if (!bytes)
                    continue;
                logged++;
            } else {
                continue;
            }
            size_t i;
            for (i = 0; i < n && seg[i] != id; i++)
                ;
            if (i == n) {
                assert_true(n < SEGS_MAX);
                seg[n++] = id;
            }
            if (lkey)
                counted[i] += bytes;
            else
                named[i] += bytes;
        }
        rocksdb_iter_destroy(it);
        rocksdb_readoptions_destroy(ro);
        assert_true(logged > 0);
        for (size_t i = 0; i < n; i++)
            if (named[i] != counted[i])
                fail_msg("drive %u segment %llu: records name %llu bytes, 'L' counts %llu", d,
                         (unsigned long long)seg[i], (unsigned long long)named[i],
                         (unsigned long long)counted[i]);
    }
}

static void put(const char *bucket, const char *key, size_t len, uint32_t seed, const char *vid,
                char *out_vid)
{
    uint8_t *b = malloc(len ? len : 1);
    assert_non_null(b);
    mt_fill(b, len, seed);
    struct strata_put_opts o = {.bucket = bucket, .key = key, .size = len, .version_id = vid};
    struct strata_obj_info info = {0};
    assert_int_equal(mt_put_opts(env, &o, b, len, 0, &info), 0);
    if (out_vid)
        snprintf(out_vid, STRATA_VERSION_ID_MAX + 1, "%s", info.version_id);
    strata_obj_info_fini(&info);
    free(b);
}

static void test_slog_acct_exact(void **state)
{
    (void)state;
    env = mt_setup("slog-acct");
    assert_non_null(env);
    mt_close(env);
    assert_int_equal(open_log(), 0);
    assert_int_equal(mt_bucket(env, "a", 0), 0);
    assert_int_equal(mt_bucket(env, "v", STRATA_VERSIONING_ENABLED), 0);
    for (unsigned k = 0; k < 6; k++) {
        char key[16];
        snprintf(key, sizeof(key), "k%u", k);
        put("a", key, 1000 + 7000 * k, k, NULL, NULL);
    }
    for (unsigned g = 0; g < 5; g++)
        put("a", "k1", 30000 + 1000 * g, 100 + g, NULL, NULL); /* overwrites */
    put("a", "k2", 0, 0, NULL, NULL);                          /* an empty object over one */
    assert_int_equal(strata_obj_delete(env->m, "a", "k3", NULL, NULL), 0);
    char v1[STRATA_VERSION_ID_MAX + 1], v2[STRATA_VERSION_ID_MAX + 1];
    put("v", "x", 40000, 200, NULL, v1);
    put("v", "x", 50000, 201, NULL, v2);
    put("v", "x", 20000, 202, NULL, NULL);
    struct strata_del_result dr;
    assert_int_equal(strata_obj_delete(env->m, "v", "x", NULL, &dr), 0); /* a marker */
    assert_int_equal(strata_obj_delete(env->m, "v", "x", v1, NULL), 0);  /* one version */
    /* A replica of v2 sent again: the same sort key written over itself. */
    put("v", "x", 50000, 201, v2, NULL);
    put("v", "x", 50000, 201, v2, NULL);
    usleep(100000); /* the tombstone drops (riders) */
    check_counts();
    mt_close(env);
    assert_int_equal(open_log(), 0);
    check_counts();
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(env, "v", "x", v2, &got, &gl), 0);
    uint8_t *want = malloc(50000);
    mt_fill(want, 50000, 201);
    assert_int_equal(gl, 50000);
    assert_memory_equal(got, want, gl);
    free(got);
    free(want);
    mt_teardown(env);
}

static uint64_t reads_all(void)
{
    uint64_t n = 0;
    for (unsigned d = 0; d < env->m->sets[0].n; d++) {
        uint64_t r, s;
        strata_meta__slog_counts(env->m->sets[0].drives[d].slog, &r, &s);
        n += r;
    }
    return n;
}

/* A store with the log, bucket "a" (unversioned) holding "k". */
static void setup_one(const char *name)
{
    env = mt_setup(name);
    assert_non_null(env);
    mt_close(env);
    assert_int_equal(open_log(), 0);
    assert_int_equal(mt_bucket(env, "a", 0), 0);
    put("a", "k", 60000, 1, NULL, NULL);
    usleep(50000);
}

static void test_slog_acct_hinted(void **state)
{
    (void)state;
    setup_one("slog-hint");
    enum { N = 40 };
    uint64_t before = reads_all();
    for (unsigned g = 0; g < N; g++)
        put("a", "k", 60000, 2 + g, NULL, NULL);
    usleep(100000); /* the last tombstone drops */
    uint64_t reads = reads_all() - before, drives = env->m->sets[0].n;
    printf("# %u overwrites on %llu drives: %llu values read back by the accounting\n", N,
           (unsigned long long)drives, (unsigned long long)reads);
    /* Without the hints: three per overwrite and drive (the replaced
     * record, the new key, the dropped tombstone). */
    assert_true(reads <= N * drives + drives);
    check_counts();
    mt_teardown(env);
}

static uint64_t syncs_of(unsigned d)
{
    uint64_t r, s;
    strata_meta__slog_counts(env->m->sets[0].drives[d].slog, &r, &s);
    return s;
}

/* A write whose batch names no new append (a delete's tombstone, its drop)
 * leaves the log unsynced; one naming an append syncs it first. */
static void test_slog_sync_only_for_new_appends(void **state)
{
    (void)state;
    setup_one("slog-sync");
    unsigned n = env->m->sets[0].n;
    uint64_t before[MT_DRIVES];
    static uint8_t shard[4096];
    for (unsigned d = 0; d < n; d++) {
        /* An append no record names: unsynced until a write needs it. */
        struct meta_rec r = {.flags = REC_F_INLINE, .shard = shard, .shard_len = sizeof(shard)};
        r.shard_crc = strata_crc32c(0, shard, sizeof(shard));
        assert_int_equal(strata_meta__slog_put(env->m->sets[0].drives[d].slog, &r), 0);
        before[d] = syncs_of(d);
    }
    assert_int_equal(strata_obj_delete(env->m, "a", "k", NULL, NULL), 0);
    usleep(100000); /* the tombstone drops */
    for (unsigned d = 0; d < n; d++)
        assert_int_equal(syncs_of(d), before[d]);
    put("a", "k2", 60000, 2, NULL, NULL);
    for (unsigned d = 0; d < n; d++)
        assert_true(syncs_of(d) > before[d]);
    mt_teardown(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slog_acct_exact),
        cmocka_unit_test(test_slog_acct_hinted),
        cmocka_unit_test(test_slog_sync_only_for_new_appends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
