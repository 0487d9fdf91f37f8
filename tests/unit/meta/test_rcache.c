/*
 * test_rcache.c - the local store's latest-version cache (meta/local/
 * rcache.c) on a 2+2 set of real drive directories with real RocksDBs.
 *
 * - A repeated GET of an unchanged small object is answered from the
 *   cache (its hit count grows, the bytes are the object's), a HEAD after
 *   it too.
 * - A cached version never outlives a change of the key: overwrite,
 *   DeleteObject (unversioned and a delete marker), tags, ACL, legal hold
 *   and retention, a multipart complete, a write straight to the drives'
 *   stores (heal's and the tombstone drop's path), and a drive becoming
 *   fresh (replaced) or healed.
 * - Readers racing a writer: once a PUT returned, no GET shows an older
 *   version (a read that began before the commit never stays cached past
 *   it), and none answers ENOTFOUND (the key exists throughout).
 * - A 100 KiB inline object is kept whole and its GET body is the cache's
 *   bytes (no copy), never stale after an overwrite or delete; a working
 *   set over the budget (--object-cache-mb) stays within it and turns over.
 * - An event thread's lookup (strata_obj_*_nowait) answers only from
 *   memory: a 100 KiB inline object (too big for a 1 MiB cache) whose records
 *   were flushed to the drives' files is STRATA_EBUSY (never "absent"),
 *   answered once a waiting read brought its blocks into RocksDB's block
 *   cache, and after an overwrite shows the new bytes, never the old.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>

#include "local/rcache.h"
#include "meta_internal.h"
#include "meta_test_util.h"
#include "strata/erasure.h"

static uint64_t hits(struct mt_env *e)
{
    uint64_t n, b, h, mi;
    strata_meta__rcache_stats(e->m, &n, &b, &h, &mi);
    return h;
}

/* GET bucket/key equals want[0..len). */
static void expect_bytes(struct mt_env *e, const char *b, const char *k, const void *want,
                         size_t len)
{
    uint8_t *got = NULL;
    size_t gl = 0;
    int rc = mt_get(e, b, k, NULL, &got, &gl);
    if (rc)
        fail_msg("GET %s/%s: %s", b, k, strata_errname(rc));
    assert_int_equal(gl, len);
    assert_memory_equal(got, want, len);
    free(got);
}

/* Put and GET twice: the second answer is the cache's. */
static void put_cached(struct mt_env *e, const char *b, const char *k, const void *d, size_t len)
{
    assert_int_equal(mt_put(e, b, k, d, len, NULL), 0);
    expect_bytes(e, b, k, d, len);
    uint64_t h = hits(e);
    expect_bytes(e, b, k, d, len);
    assert_int_equal(hits(e), h + 1);
}

static void test_hit(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("rc-hit");
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    uint8_t d[4096];
    mt_fill(d, sizeof(d), 1);
    assert_int_equal(mt_put(e, "b", "k", d, sizeof(d), NULL), 0);
    uint64_t h0 = hits(e);
    expect_bytes(e, "b", "k", d, sizeof(d)); /* fills */
    assert_int_equal(hits(e), h0);
    for (int i = 0; i < 5; i++)
        expect_bytes(e, "b", "k", d, sizeof(d));
    assert_int_equal(hits(e), h0 + 5);
    struct strata_obj_info info;
    assert_int_equal(strata_obj_head(e->m, "b", "k", NULL, &info), 0);
    assert_int_equal(info.size, sizeof(d));
    strata_obj_info_fini(&info);
    assert_int_equal(hits(e), h0 + 6);
    /* A larger, erasure-coded object: its record is cached, its data read. */
    size_t big = 600 << 10;
    uint8_t *bd = malloc(big);
    mt_fill(bd, big, 2);
    put_cached(e, "b", "big", bd, big);
    free(bd);
    mt_teardown(e);
}

static void test_overwrite_and_delete(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("rc-ovw");
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    assert_int_equal(mt_bucket(e, "v", STRATA_VERSIONING_ENABLED), 0);
    uint8_t a[4096], b[3000];
    mt_fill(a, sizeof(a), 3);
    mt_fill(b, sizeof(b), 4);
    put_cached(e, "b", "k", a, sizeof(a));
    assert_int_equal(mt_put(e, "b", "k", b, sizeof(b), NULL), 0);
    expect_bytes(e, "b", "k", b, sizeof(b));
    expect_bytes(e, "b", "k", b, sizeof(b));
    assert_int_equal(strata_obj_delete(e->m, "b", "k", NULL, NULL), 0);
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, "b", "k", NULL, &got, &gl), STRATA_ENOTFOUND);
    /* A delete marker over a cached version. */
    put_cached(e, "v", "k", a, sizeof(a));
    assert_int_equal(strata_obj_delete(e->m, "v", "k", NULL, NULL), 0);
    assert_int_equal(mt_get(e, "v", "k", NULL, &got, &gl), STRATA_ENOTFOUND);
    struct strata_obj_info info;
    assert_int_equal(strata_obj_head(e->m, "v", "k", NULL, &info), STRATA_ENOTFOUND);
    assert_true(info.delete_marker);
    strata_obj_info_fini(&info);
    /* A multipart complete over a cached version. */
    put_cached(e, "b", "m", a, sizeof(a));
    assert_int_equal(mt_mpu_plain(e->m, "b", "m", NULL, b, sizeof(b), NULL), 0);
    expect_bytes(e, "b", "m", b, sizeof(b));
    mt_teardown(e);
}

static void test_tags_acl_lock(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("rc-attr");
    assert_int_equal(mt_lock_bucket(e, "l"), 0);
    uint8_t a[2048];
    mt_fill(a, sizeof(a), 5);
    put_cached(e, "l", "k", a, sizeof(a));
    struct strata_obj_info info;
    char vid[STRATA_VERSION_ID_MAX + 1];
    assert_int_equal(strata_obj_tags_put(e->m, "l", "k", NULL, "t1", 2, vid), 0);
    assert_int_equal(strata_obj_head(e->m, "l", "k", NULL, &info), 0);
    assert_int_equal(info.tags_len, 2);
    assert_memory_equal(info.tags, "t1", 2);
    strata_obj_info_fini(&info);
    expect_bytes(e, "l", "k", a, sizeof(a)); /* cached again, with the tags */
    assert_int_equal(strata_obj_acl_put(e->m, "l", "k", NULL, "acl-x", 5, vid), 0);
    assert_int_equal(strata_obj_head(e->m, "l", "k", NULL, &info), 0);
    assert_int_equal(info.acl_len, 5);
    assert_memory_equal(info.acl, "acl-x", 5);
    assert_int_equal(info.tags_len, 2);
    strata_obj_info_fini(&info);
    expect_bytes(e, "l", "k", a, sizeof(a));
    struct strata_lock_actor actor = {.user = "tester", .bypass_governance = false};
    assert_int_equal(strata_obj_legal_hold_put(e->m, "l", "k", NULL, true, &actor, vid), 0);
    assert_int_equal(strata_obj_head(e->m, "l", "k", NULL, &info), 0);
    assert_true(info.lock.legal_hold);
    strata_obj_info_fini(&info);
    expect_bytes(e, "l", "k", a, sizeof(a));
    int64_t until = strata_meta_lock_now_ms(e->m) + 86400000;
    assert_int_equal(
        strata_obj_retention_put(e->m, "l", "k", NULL, STRATA_LOCK_GOVERNANCE, until, &actor, vid),
        0);
    assert_int_equal(strata_obj_head(e->m, "l", "k", NULL, &info), 0);
    assert_int_equal(info.lock.mode, STRATA_LOCK_GOVERNANCE);
    assert_int_equal(info.lock.until_ms, until);
    strata_obj_info_fini(&info);
    mt_teardown(e);
}

/* A version of bucket/key written straight to drive d's store through the
 * store's write path (as heal and the tombstone drop write). */
static void drive_put_rec(struct mt_env *e, unsigned d, const char *bucket, const char *key,
                          const uint8_t *sk, const char *etag)
{
    struct meta_rec r;
    memset(&r, 0, sizeof(r));
    snprintf(r.etag, sizeof(r.etag), "%s", etag);
    r.mtime_ns = strata_meta__sortkey_mtime(sk);
    r.flags = REC_F_NULL;
    r.size = 123;
    r.has_data_id = true;
    memset(r.data_id, 7, sizeof(r.data_id));
    char *v;
    size_t vl;
    assert_int_equal(strata_meta__rec_encode(&r, &v, &vl), 0);
    char k[600];
    size_t kl = strata_meta__key_obj(k, sizeof(k), bucket, key, sk);
    assert_int_equal(strata_meta__drive_put(e->m, 0, d, e->m->wsync, k, kl, v, vl), 0);
    free(v);
}

static void test_store_write_and_drives(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("rc-store");
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    uint8_t a[4096];
    mt_fill(a, sizeof(a), 6);
    /* A drive marked fresh (replaced) no longer votes: the cached answer
     * of four voters is not used; heal ends its fresh state: not either. */
    put_cached(e, "b", "f", a, sizeof(a));
    uint64_t h = hits(e);
    assert_int_equal(strata_set_drive_mark_fresh(e->set, 1), 0);
    expect_bytes(e, "b", "f", a, sizeof(a));
    assert_int_equal(hits(e), h); /* read again */
    expect_bytes(e, "b", "f", a, sizeof(a));
    assert_int_equal(hits(e), h + 1);
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_false(strata_set_drive_fresh(e->set, 1));
    expect_bytes(e, "b", "f", a, sizeof(a));
    assert_int_equal(hits(e), h + 1);

    put_cached(e, "b", "k", a, sizeof(a));
    /* A newer version reaching every drive's store directly. */
    uint8_t sk[SORTKEY_LEN];
    strata_meta__sortkey_new((int64_t)4e18, sk);
    for (unsigned d = 0; d < MT_DRIVES; d++)
        drive_put_rec(e, d, "b", "k", sk, "planted");
    struct strata_obj_info info;
    assert_int_equal(strata_obj_head(e->m, "b", "k", NULL, &info), 0);
    assert_string_equal(info.etag, "planted");
    assert_int_equal(info.size, 123);
    strata_obj_info_fini(&info);
    mt_teardown(e);
}

/* ---- lookups that never wait on a drive ------------------------------------ */

/* Every drive's memtables written to its files (reopened, reads then
 * need blocks that only a file read brings into the block cache). */
static void flush_drives(struct mt_env *e)
{
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    for (unsigned d = 0; d < e->m->sets[0].n; d++) {
        char *err = NULL;
        rocksdb_flush(e->m->sets[0].drives[d].db, fo, &err);
        if (err)
            fail_msg("flush drive %u: %s", d, err);
    }
    rocksdb_flushoptions_destroy(fo);
}

/* GET bucket/key without waiting: rc, and on 0 its bytes equal want. */
static int get_nowait(struct mt_env *e, const char *b, const char *k, const void *want,
                      size_t len)
{
    struct strata_obj_info info;
    struct strata_get *g = NULL;
    int rc = strata_obj_get_open_nowait(e->m, b, k, NULL, &info, &g);
    if (rc) {
        assert_null(g);
        strata_obj_info_fini(&info);
        return rc;
    }
    assert_int_equal(info.size, len);
    assert_true(strata_obj_get_in_memory(g));
    uint8_t *got = malloc(len);
    assert_int_equal(strata_obj_get_read(g, 0, got, len), 0);
    assert_memory_equal(got, want, len);
    free(got);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    return 0;
}

/* Reopen e's meta handle with a latest-version cache of mb MiB. */
static void reopen_cache_mb(struct mt_env *e, size_t mb)
{
    struct strata_meta_opts o;
    memset(&o, 0, sizeof(o));
    o.object_cache_mb = mb;
    assert_int_equal(mt_reopen_opts(e, &o), 0);
}

static uint64_t entries(struct mt_env *e, uint64_t *bytes)
{
    uint64_t n, b, h, mi;
    strata_meta__rcache_stats(e->m, &n, &b, &h, &mi);
    if (bytes)
        *bytes = b;
    return n;
}

/* The bytes a GET of b/k would send, pinned by its open handle. */
static const uint8_t *open_bytes(struct mt_env *e, const char *b, const char *k,
                                 struct strata_get **g)
{
    struct strata_obj_info info;
    assert_int_equal(strata_obj_get_open(e->m, b, k, NULL, &info, g), 0);
    strata_obj_info_fini(&info);
    assert_true(strata_obj_get_in_memory(*g));
    return strata_obj_get_bytes(*g);
}

/* A dataloader's 100 KiB inline object is kept whole: the second GET is a
 * hit whose body is the cache's bytes (two GETs share them, no copy), a
 * body still being sent keeps its bytes through an overwrite, and after
 * the overwrite and a delete no GET shows the old bytes. */
static void test_large_inline(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("rc-large");
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t n = 100 << 10;
    uint8_t *a = malloc(n), *b = malloc(n);
    mt_fill(a, n, 21);
    mt_fill(b, n, 22);
    put_cached(e, "b", "k", a, n);
    uint64_t bytes;
    assert_int_equal(entries(e, &bytes), 1);
    assert_true(bytes > n);
    struct strata_get *g1, *g2;
    const uint8_t *p1 = open_bytes(e, "b", "k", &g1);
    const uint8_t *p2 = open_bytes(e, "b", "k", &g2);
    assert_ptr_equal(p1, p2);
    assert_memory_equal(p1, a, n);
    strata_obj_get_close(g2);
    /* Overwritten while g1's body is out: g1 keeps the version it opened,
     * every later GET has the new bytes (filled again, then a hit). */
    assert_int_equal(mt_put(e, "b", "k", b, n, NULL), 0);
    uint64_t h = hits(e);
    expect_bytes(e, "b", "k", b, n);
    assert_int_equal(hits(e), h);
    expect_bytes(e, "b", "k", b, n);
    assert_int_equal(hits(e), h + 1);
    assert_memory_equal(p1, a, n);
    strata_obj_get_close(g1);
    /* Deleted: absent at once. */
    assert_int_equal(strata_obj_delete(e->m, "b", "k", NULL, NULL), 0);
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, "b", "k", NULL, &got, &gl), STRATA_ENOTFOUND);
    free(a);
    free(b);
    mt_teardown(e);
}

/* A working set of 100 KiB objects over the budget: the cache holds what
 * the budget allows (never more), keeps turning over (the keys read last
 * are hits) and answers every key's own bytes. */
static void test_budget(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("rc-budget");
    reopen_cache_mb(e, 4);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t n = 100 << 10;
    uint8_t *d = malloc(n);
    char k[32];
    for (int i = 0; i < 60; i++) {
        mt_fill(d, n, (unsigned)(100 + i));
        snprintf(k, sizeof(k), "s/%05d", i);
        assert_int_equal(mt_put(e, "b", k, d, n, NULL), 0);
    }
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < 60; i++) {
            mt_fill(d, n, (unsigned)(100 + i));
            snprintf(k, sizeof(k), "s/%05d", i);
            expect_bytes(e, "b", k, d, n);
            uint64_t bytes;
            uint64_t nent = entries(e, &bytes);
            assert_true(bytes <= ((uint64_t)4 << 20));
            assert_true(nent <= 4 * 1024 / 100);
        }
    uint64_t bytes;
    assert_true(entries(e, &bytes) >= 10);
    assert_true(bytes >= 10 * n);
    /* Still filled once full: the key read last is there. */
    uint64_t h = hits(e);
    expect_bytes(e, "b", k, d, n);
    assert_int_equal(hits(e), h + 1);
    free(d);
    mt_teardown(e);
}

static void test_nowait(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("rc-nowait");
    reopen_cache_mb(e, 1); /* entries of 64 KiB at most */
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t n = 100 << 10; /* inline (<= 128 KiB), over the cache's entry size */
    uint8_t *a = malloc(n), *b = malloc(n);
    mt_fill(a, n, 8);
    mt_fill(b, n, 9);
    assert_int_equal(mt_put(e, "b", "k", a, n, NULL), 0);
    /* Read once (the blocks of the drives' files the read passes are
     * cached), then the version in the memtables: answered. */
    expect_bytes(e, "b", "k", a, n);
    assert_int_equal(get_nowait(e, "b", "k", a, n), 0);
    flush_drives(e);
    /* A new meta handle: a new, empty block cache. */
    reopen_cache_mb(e, 1);
    /* Only in the drives' files now: refused, not "absent" nor corrupt. */
    assert_int_equal(get_nowait(e, "b", "k", a, n), STRATA_EBUSY);
    struct strata_obj_info info;
    assert_int_equal(strata_obj_head_nowait(e->m, "b", "k", NULL, &info), STRATA_EBUSY);
    strata_obj_info_fini(&info);
    /* A waiting read brings the blocks in: then answered from memory, the
     * cache of latest versions holding no entry for it. */
    uint64_t nent, bytes, h, mi;
    expect_bytes(e, "b", "k", a, n);
    assert_int_equal(get_nowait(e, "b", "k", a, n), 0);
    strata_meta__rcache_stats(e->m, &nent, &bytes, &h, &mi);
    assert_int_equal(nent, 0);
    assert_int_equal(strata_obj_head_nowait(e->m, "b", "k", NULL, &info), 0);
    assert_int_equal(info.size, n);
    strata_obj_info_fini(&info);
    /* Overwritten: the new bytes or a refusal, never the old ones. */
    assert_int_equal(mt_put(e, "b", "k", b, n, NULL), 0);
    int rc = get_nowait(e, "b", "k", b, n);
    assert_true(rc == 0 || rc == STRATA_EBUSY);
    expect_bytes(e, "b", "k", b, n);
    assert_int_equal(get_nowait(e, "b", "k", b, n), 0);
    /* Deleted: absent or a refusal. */
    assert_int_equal(strata_obj_delete(e->m, "b", "k", NULL, NULL), 0);
    rc = get_nowait(e, "b", "k", b, n);
    assert_true(rc == STRATA_ENOTFOUND || rc == STRATA_EBUSY);
    free(a);
    free(b);
    mt_teardown(e);
}

/* ---- readers racing a writer ---------------------------------------------- */

struct race {
    struct mt_env *e;
    atomic_int committed; /* the last round whose PUT returned */
    atomic_bool stop;
    atomic_int bad, absent;
};

/* The round number in the object's first 4 bytes. */
static int round_of(const uint8_t *p)
{
    return (int)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

static void *reader(void *arg)
{
    struct race *r = arg;
    while (!atomic_load(&r->stop)) {
        int before = atomic_load(&r->committed);
        uint8_t *got = NULL;
        size_t gl = 0;
        int rc = mt_get(r->e, "b", "race", NULL, &got, &gl);
        if (rc == 0) {
            if (gl < 4 || round_of(got) < before) {
                fprintf(stderr, "GET after round %d showed round %d\n", before,
                        gl < 4 ? -1 : round_of(got));
                atomic_fetch_add(&r->bad, 1);
            }
            free(got);
        } else if (rc == STRATA_ENOTFOUND) {
            /* The key has a committed version throughout: an overwrite
             * half applied on the drives must read as old or new. */
            atomic_fetch_add(&r->absent, 1);
        } else {
            fprintf(stderr, "GET after round %d: %s\n", before, strata_errname(rc));
            atomic_fetch_add(&r->bad, 1);
        }
    }
    return NULL;
}

/* Three readers GET the key while a writer overwrites it round after
 * round, on a set with parity drives. */
static void readers_race_writer(unsigned parity)
{
    struct mt_env *e = mt_setup_parity("rc-race", parity);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    uint8_t d[1024];
    mt_fill(d, sizeof(d), 7);
    memset(d, 0, 4);
    assert_int_equal(mt_put(e, "b", "race", d, sizeof(d), NULL), 0);
    struct race r = {.e = e};
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&t[i], NULL, reader, &r), 0);
    for (int round = 1; round <= 400; round++) {
        d[0] = (uint8_t)(round >> 24);
        d[1] = (uint8_t)(round >> 16);
        d[2] = (uint8_t)(round >> 8);
        d[3] = (uint8_t)round;
        assert_int_equal(mt_put(e, "b", "race", d, sizeof(d), NULL), 0);
        atomic_store(&r.committed, round);
        /* Read after write on the writer's own thread too. */
        uint8_t *got = NULL;
        size_t gl = 0;
        assert_int_equal(mt_get(e, "b", "race", NULL, &got, &gl), 0);
        assert_int_equal(round_of(got), round);
        free(got);
    }
    atomic_store(&r.stop, true);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&r.bad), 0);
    int absent = atomic_load(&r.absent);
    mt_teardown(e);
    if (absent)
        fail_msg("%d GETs racing an overwrite answered ENOTFOUND", absent);
}

/* A working set of 2,000 keys read round-robin (a dataloader's pass over
 * its shard of the dataset) stays cached: the second pass is all hits.  A
 * direct-mapped table of 8,192 slots missed the keys that share a slot on
 * every pass (504 of these 2,000 names; sequential names such as
 * ws/00000.. happen to spread over distinct slots, CRC32C being linear). */
static void test_working_set(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("rc-ws");
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    enum { NKEYS = 2000 };
    uint8_t d[64];
    char k[32];
    for (int i = 0; i < NKEYS; i++) {
        mt_fill(d, sizeof(d), (unsigned)i);
        snprintf(k, sizeof(k), "ws/%d/x", i * 7919);
        assert_int_equal(mt_put(e, "b", k, d, sizeof(d), NULL), 0);
    }
    for (int pass = 0; pass < 2; pass++) {
        uint64_t h0 = hits(e);
        for (int i = 0; i < NKEYS; i++) {
            mt_fill(d, sizeof(d), (unsigned)i);
            snprintf(k, sizeof(k), "ws/%d/x", i * 7919);
            expect_bytes(e, "b", k, d, sizeof(d));
        }
        if (pass == 1 && hits(e) - h0 != NKEYS)
            fail_msg("second pass: %llu of %d GETs from the cache",
                     (unsigned long long)(hits(e) - h0), NKEYS);
    }
    mt_teardown(e);
}

/* 2+2: a half-applied overwrite still has a read quorum either way; a read
 * crossing quick commits does not. */
static void test_readers_race_writer(void **state)
{
    (void)state;
    readers_race_writer(2);
}

/* 3+1: read quorum 3 of 4, so an overwrite applied on 2 drives leaves no
 * quorum for the new version and a tombstone over the old one. */
static void test_readers_race_writer_3p1(void **state)
{
    (void)state;
    readers_race_writer(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit),
        cmocka_unit_test(test_overwrite_and_delete),
        cmocka_unit_test(test_tags_acl_lock),
        cmocka_unit_test(test_store_write_and_drives),
        cmocka_unit_test(test_nowait),
        cmocka_unit_test(test_large_inline),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_readers_race_writer),
        cmocka_unit_test(test_readers_race_writer_3p1),
        cmocka_unit_test(test_working_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
