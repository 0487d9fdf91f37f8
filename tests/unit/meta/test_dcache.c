/*
 * test_dcache.c - the data cache (meta/dcache.c) on a 2+2 set of real
 * drive directories with real RocksDBs: a budget of 4 MiB (one object up
 * to 1 MiB), objects inlined only up to 4 KiB.
 *
 * - The second GET of an erasure-coded object is a hit and its bytes
 *   (read, and through the descriptor strata_obj_get_fd gives) are the
 *   object's, whole and for ranges.
 * - Never stale: an overwrite, a GET of an older version by its id, a
 *   delete (the entry goes with the data), a multipart object (its part).
 * - Only a read from offset 0 to the end fills (a Range does not), only
 *   objects up to a quarter of the budget, and a working set over the
 *   budget stays within it, evicting.
 * - An encrypted version: its stored (sealed) bytes may be cached, its
 *   plaintext is never in the cache's memory files, and no descriptor is
 *   given for it.
 * - data_cache_on_write: a PUT or part upload fills the cache with the
 *   bytes it stores, so the first GET is a hit; a PUT that fails (short
 *   body, a precondition at the commit), an aborted upload, or the cache
 *   off for writes leaves no entry; ciphertext only for an encrypted PUT.
 * - Recycling: an entry gone (evicted, or dropped with its data) leaves its
 *   memfd as a spare the next fill overwrites; what GETs read is the new
 *   object's bytes, entries and spares stay within the budget, and a
 *   memfd lent out by strata_obj_get_fd is never overwritten.
 * - Concurrent misses: eight readers of one object at once (the 8 ranged
 *   streams of a checkpoint read) over a full cache: one fill wins, the
 *   others' entries go (a use after free here once; ASan's run sees it),
 *   and every reader gets the object's bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "meta_test_util.h"

#define BUDGET_MB 4u
#define KEY       ((const uint8_t *)"0123456789abcdef0123456789abcdef")

static struct mt_env *setup_w(const char *name, bool on_write)
{
    struct mt_env *e = mt_setup(name);
    assert_non_null(e);
    struct strata_meta_opts o;
    memset(&o, 0, sizeof(o));
    o.inline_max = 4096;
    o.data_cache_mb = BUDGET_MB;
    o.data_cache_on_write = on_write;
    assert_int_equal(mt_reopen_opts(e, &o), 0);
    return e;
}

static struct mt_env *setup(const char *name)
{
    return setup_w(name, false);
}

static struct strata_data_cache_stats stats(struct mt_env *e)
{
    struct strata_data_cache_stats st;
    strata_meta_data_cache_stats(e->m, &st);
    return st;
}

/* GET bucket/key (version vid) equals want[0..len). */
static void expect_bytes(struct mt_env *e, const char *b, const char *k, const char *vid,
                         const void *want, size_t len)
{
    uint8_t *got = NULL;
    size_t gl = 0;
    int rc = mt_get(e, b, k, vid, &got, &gl);
    if (rc)
        fail_msg("GET %s/%s: %s", b, k, strata_errname(rc));
    assert_int_equal(gl, len);
    assert_memory_equal(got, want, len);
    free(got);
}

/* GET [off, off + len) through strata_obj_get_fd: -1 when not given,
 * else 0 after comparing the descriptor's bytes with want + off. */
static int fd_range(struct mt_env *e, const char *b, const char *k, const uint8_t *want,
                    uint64_t off, uint64_t len)
{
    struct strata_obj_info info;
    struct strata_get *g;
    assert_int_equal(strata_obj_get_open(e->m, b, k, NULL, &info, &g), 0);
    uint64_t fo = 0;
    int fd = strata_obj_get_fd(g, off, len, &fo);
    strata_obj_get_close(g); /* the descriptor keeps the bytes */
    strata_obj_info_fini(&info);
    if (fd < 0)
        return -1;
    uint8_t *got = malloc(len);
    assert_int_equal(pread(fd, got, len, (off_t)fo), (ssize_t)len);
    assert_memory_equal(got, want + off, len);
    free(got);
    close(fd);
    return 0;
}

static void test_hit(void **state)
{
    (void)state;
    struct mt_env *e = setup("dc-hit");
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t n = 700 * 1024 + 13;
    uint8_t *d = malloc(n);
    mt_fill(d, n, 1);
    assert_int_equal(mt_put(e, "b", "k", d, n, NULL), 0);
    assert_int_equal(fd_range(e, "b", "k", d, 0, n), -1); /* nothing read yet */
    expect_bytes(e, "b", "k", NULL, d, n);                /* fills */
    struct strata_data_cache_stats s0 = stats(e);
    assert_int_equal(s0.entries, 1);
    assert_int_equal(s0.bytes, n);
    expect_bytes(e, "b", "k", NULL, d, n);
    assert_int_equal(stats(e).hits, s0.hits + 1);
    assert_int_equal(fd_range(e, "b", "k", d, 0, n), 0);
    assert_int_equal(fd_range(e, "b", "k", d, 1000, 5000), 0);
    assert_int_equal(fd_range(e, "b", "k", d, n - 1, 1), 0);
    /* a ranged read of a hit */
    struct strata_obj_info info;
    struct strata_get *g;
    uint8_t buf[777];
    assert_int_equal(strata_obj_get_open(e->m, "b", "k", NULL, &info, &g), 0);
    assert_true(strata_obj_get_in_memory(g));
    assert_int_equal(strata_obj_get_read(g, 123456, buf, sizeof(buf)), 0);
    assert_memory_equal(buf, d + 123456, sizeof(buf));
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    free(d);
    mt_teardown(e);
}

static void test_never_stale(void **state)
{
    (void)state;
    struct mt_env *e = setup("dc-stale");
    assert_int_equal(mt_bucket(e, "v", STRATA_VERSIONING_ENABLED), 0);
    assert_int_equal(mt_bucket(e, "u", 0), 0);
    size_t n = 300 * 1024;
    uint8_t *a = malloc(n), *b = malloc(n);
    mt_fill(a, n, 2);
    mt_fill(b, n, 3);
    struct strata_obj_info v1;
    assert_int_equal(mt_put(e, "v", "k", a, n, &v1), 0);
    expect_bytes(e, "v", "k", NULL, a, n);
    expect_bytes(e, "v", "k", NULL, a, n); /* a hit */
    assert_int_equal(mt_put(e, "v", "k", b, n, NULL), 0);
    expect_bytes(e, "v", "k", NULL, b, n);
    expect_bytes(e, "v", "k", NULL, b, n);
    assert_int_equal(fd_range(e, "v", "k", b, 0, n), 0);
    expect_bytes(e, "v", "k", v1.version_id, a, n); /* the old version, by id */
    strata_obj_info_fini(&v1);

    /* Unversioned: an overwrite drops the old data, and its entry. */
    assert_int_equal(mt_put(e, "u", "k", a, n, NULL), 0);
    expect_bytes(e, "u", "k", NULL, a, n);
    uint64_t before = stats(e).entries;
    assert_int_equal(mt_put(e, "u", "k", b, n, NULL), 0);
    assert_int_equal(stats(e).entries, before - 1);
    expect_bytes(e, "u", "k", NULL, b, n);
    expect_bytes(e, "u", "k", NULL, b, n);
    before = stats(e).entries;
    assert_int_equal(strata_obj_delete(e->m, "u", "k", NULL, NULL), 0);
    assert_int_equal(stats(e).entries, before - 1);
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, "u", "k", NULL, &got, &gl), STRATA_ENOTFOUND);
    free(a);
    free(b);
    mt_teardown(e);
}

static void test_fill_rules(void **state)
{
    (void)state;
    struct mt_env *e = setup("dc-rules");
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t n = 400 * 1024;
    uint8_t *d = malloc(n);
    mt_fill(d, n, 4);
    assert_int_equal(mt_put(e, "b", "k", d, n, NULL), 0);
    /* A range from the middle, and one from 0 that stops early: no fill. */
    struct strata_obj_info info;
    struct strata_get *g;
    uint8_t buf[4096];
    assert_int_equal(strata_obj_get_open(e->m, "b", "k", NULL, &info, &g), 0);
    assert_int_equal(strata_obj_get_read(g, 5000, buf, sizeof(buf)), 0);
    assert_memory_equal(buf, d + 5000, sizeof(buf));
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    assert_int_equal(strata_obj_get_open(e->m, "b", "k", NULL, &info, &g), 0);
    strata_obj_get_window(g, sizeof(buf));
    assert_int_equal(strata_obj_get_read(g, 0, buf, sizeof(buf)), 0);
    assert_memory_equal(buf, d, sizeof(buf));
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    assert_int_equal(stats(e).entries, 0);
    assert_int_equal(stats(e).bytes, 0);
    assert_int_equal(fd_range(e, "b", "k", d, 0, n), -1);

    /* Over a quarter of the budget: never kept. */
    size_t big = (BUDGET_MB << 20) / 4 + 1;
    uint8_t *bd = malloc(big);
    mt_fill(bd, big, 5);
    assert_int_equal(mt_put(e, "b", "big", bd, big, NULL), 0);
    expect_bytes(e, "b", "big", NULL, bd, big);
    expect_bytes(e, "b", "big", NULL, bd, big);
    assert_int_equal(stats(e).entries, 0);
    assert_int_equal(stats(e).hits, 0);
    free(bd);
    free(d);
    mt_teardown(e);
}

/* PUT count objects of n bytes (seeds from seed) as b/k<i>: their bytes in
 * d[i], their keys in k[i]. */
static void put_objects(struct mt_env *e, size_t n, int count, uint32_t seed, uint8_t **d,
                        char (*k)[16])
{
    for (int i = 0; i < count; i++) {
        d[i] = malloc(n);
        mt_fill(d[i], n, seed + (uint32_t)i);
        snprintf(k[i], 16, "k%02d", i);
        assert_int_equal(mt_put(e, "b", k[i], d[i], n, NULL), 0);
    }
}

static void test_budget(void **state)
{
    (void)state;
    struct mt_env *e = setup("dc-budget");
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t n = 900 * 1024;
    enum { NOBJ = 12 };
    uint8_t *d[NOBJ];
    char k[NOBJ][16];
    put_objects(e, n, NOBJ, 100, d, k);
    for (int pass = 0; pass < 3; pass++) {
        for (int i = 0; i < NOBJ; i++) {
            expect_bytes(e, "b", k[i], NULL, d[i], n);
            struct strata_data_cache_stats st = stats(e);
            assert_true(st.bytes <= (uint64_t)BUDGET_MB << 20);
            assert_true(st.entries <= 4);
        }
    }
    struct strata_data_cache_stats st = stats(e);
    assert_int_equal(st.budget, (uint64_t)BUDGET_MB << 20);
    assert_true(st.evictions > 0);
    assert_true(st.entries >= 3); /* it holds what fits */
    for (int i = 0; i < NOBJ; i++)
        free(d[i]);
    mt_teardown(e);
}

static void test_multipart(void **state)
{
    (void)state;
    struct mt_env *e = setup("dc-mpu");
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t n = 600 * 1024 + 7;
    uint8_t *d = malloc(n), *d2 = malloc(n);
    mt_fill(d, n, 6);
    mt_fill(d2, n, 7);
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = "b";
    mo.key = "mp";
    assert_int_equal(mt_mpu_single_as(e->m, &mo, NULL, d, n, NULL), 0);
    expect_bytes(e, "b", "mp", NULL, d, n);
    uint64_t h = stats(e).hits;
    expect_bytes(e, "b", "mp", NULL, d, n);
    assert_int_equal(stats(e).hits, h + 1);
    assert_int_equal(fd_range(e, "b", "mp", d, 100, 200000), 0);
    /* Completed again over it: the new object's bytes, never the part's. */
    assert_int_equal(mt_mpu_single_as(e->m, &mo, NULL, d2, n, NULL), 0);
    expect_bytes(e, "b", "mp", NULL, d2, n);
    expect_bytes(e, "b", "mp", NULL, d2, n);
    assert_int_equal(fd_range(e, "b", "mp", d2, 0, n), 0);
    free(d);
    free(d2);
    mt_teardown(e);
}

/* Whether any of this process's data cache memfds holds needle. */
static bool memfds_hold(const char *needle)
{
    DIR *dir = opendir("/proc/self/fd");
    assert_non_null(dir);
    bool found = false;
    int nfiles = 0;
    struct dirent *de;
    while ((de = readdir(dir)) && !found) {
        char p[300], target[256];
        snprintf(p, sizeof(p), "/proc/self/fd/%s", de->d_name);
        ssize_t tl = readlink(p, target, sizeof(target) - 1);
        if (tl <= 0)
            continue;
        target[tl] = 0;
        if (!strstr(target, "strata-data-cache"))
            continue;
        nfiles++;
        int fd = open(p, O_RDONLY);
        assert_true(fd >= 0);
        off_t sz = lseek(fd, 0, SEEK_END);
        char *buf = malloc((size_t)sz + 1);
        assert_int_equal(pread(fd, buf, (size_t)sz, 0), sz);
        found = memmem(buf, (size_t)sz, needle, strlen(needle)) != NULL;
        free(buf);
        close(fd);
    }
    closedir(dir);
    assert_true(nfiles > 0); /* the cache's files are there to look at */
    return found;
}

/* PUT b/enc encrypted with KEY, n bytes of secret repeated: the plaintext. */
static uint8_t *put_sse(struct mt_env *e, const char *secret, size_t n)
{
    size_t sl = strlen(secret);
    uint8_t *pt = malloc(n);
    for (size_t i = 0; i < n; i++)
        pt[i] = (uint8_t)secret[i % sl];
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = "enc";
    o.size = n;
    o.sse_key = KEY;
    o.sse = "desc-v1";
    o.sse_len = 7;
    assert_int_equal(mt_put_opts(e, &o, pt, n, 0, NULL), 0);
    return pt;
}

/* GET b/enc with KEY: the plaintext pt, and no descriptor for it. */
static void get_sse(struct mt_env *e, const uint8_t *pt, size_t n)
{
    uint8_t *got = malloc(n);
    struct strata_obj_info info;
    struct strata_get *g;
    assert_int_equal(strata_obj_get_open(e->m, "b", "enc", NULL, &info, &g), 0);
    assert_int_equal(strata_obj_get_key(g, KEY), 0);
    assert_int_equal(strata_obj_get_read(g, 0, got, n), 0);
    assert_memory_equal(got, pt, n);
    uint64_t fo;
    assert_int_equal(strata_obj_get_fd(g, 0, n, &fo), -1);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    free(got);
}

static void test_sse(void **state)
{
    (void)state;
    struct mt_env *e = setup("dc-sse");
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    const char *secret = "SSE-SECRET-PLAINTEXT-in-the-cache|";
    size_t n = 500 * 1024;
    uint8_t *pt = put_sse(e, secret, n);
    get_sse(e, pt, n);
    get_sse(e, pt, n);
    assert_int_equal(stats(e).hits, 1); /* the stored bytes were kept */
    assert_false(memfds_hold(secret));
    /* The check itself finds plaintext where it is: a plain object. */
    assert_int_equal(mt_put(e, "b", "plain", pt, n, NULL), 0);
    expect_bytes(e, "b", "plain", NULL, pt, n);
    assert_true(memfds_hold(secret));
    free(pt);
    mt_teardown(e);
}

static void test_write_fill(void **state)
{
    (void)state;
    struct mt_env *e = setup_w("dc-wfill", true);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t n = 700 * 1024 + 5;
    uint8_t *a = malloc(n), *b = malloc(n);
    mt_fill(a, n, 21);
    mt_fill(b, n, 22);
    /* Chunks of 64 KiB: the first ones go inline until the writer starts. */
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = "k";
    o.size = n;
    assert_int_equal(mt_put_opts(e, &o, a, n, 65536, NULL), 0);
    struct strata_data_cache_stats s0 = stats(e);
    assert_int_equal(s0.entries, 1);
    assert_int_equal(s0.bytes, n);
    assert_int_equal(s0.fills, 1);
    assert_int_equal(fd_range(e, "b", "k", a, 0, n), 0); /* before any read */
    expect_bytes(e, "b", "k", NULL, a, n);
    assert_int_equal(stats(e).hits, s0.hits + 2);
    assert_int_equal(stats(e).misses, s0.misses); /* no read of the drives */
    /* An overwrite: the new bytes, the old entry gone with its data. */
    assert_int_equal(mt_put(e, "b", "k", b, n, NULL), 0);
    assert_int_equal(stats(e).entries, 1);
    expect_bytes(e, "b", "k", NULL, b, n);
    assert_int_equal(stats(e).misses, s0.misses);

    /* A body shorter than announced: the PUT fails, nothing is kept. */
    struct strata_data_cache_stats s1 = stats(e);
    struct strata_put *p;
    o.key = "short";
    assert_int_equal(strata_obj_put_begin(e->m, &o, &p), 0);
    assert_int_equal(strata_obj_put_write(p, a, n - 1), 0);
    assert_int_equal(strata_obj_put_commit(p, NULL), STRATA_EINCOMPLETE);
    assert_int_equal(stats(e).entries, s1.entries);
    assert_int_equal(stats(e).bytes, s1.bytes);
    /* If-None-Match * on a key that exists: refused at the commit, after
     * the data was finished; the entry goes and the object is unchanged. */
    o.key = "k";
    o.if_none_match_star = true;
    assert_int_equal(mt_put_opts(e, &o, a, n, 0, NULL), STRATA_EPRECOND);
    o.if_none_match_star = false;
    assert_int_equal(stats(e).entries, s1.entries);
    assert_int_equal(stats(e).bytes, s1.bytes);
    expect_bytes(e, "b", "k", NULL, b, n);

    /* A part: cached at its upload; an abort ends its entry. */
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = "b";
    mo.key = "mp";
    char uid[STRATA_UPLOAD_ID_MAX + 1];
    assert_int_equal(strata_mpu_create(e->m, &mo, uid), 0);
    struct strata_obj_info part;
    assert_int_equal(mt_part_upload(e->m, "b", "mp", uid, 1, a, n, &part), 0);
    strata_obj_info_fini(&part);
    assert_int_equal(stats(e).entries, s1.entries + 1);
    assert_int_equal(strata_mpu_abort(e->m, "b", "mp", uid), 0);
    assert_int_equal(stats(e).entries, s1.entries);
    assert_int_equal(stats(e).bytes, s1.bytes);
    /* Completed: the first GET of the object is answered from the part's entry. */
    uint64_t m0 = stats(e).misses;
    assert_int_equal(mt_mpu_single_as(e->m, &mo, NULL, a, n, NULL), 0);
    expect_bytes(e, "b", "mp", NULL, a, n);
    assert_int_equal(stats(e).misses, m0);
    assert_int_equal(fd_range(e, "b", "mp", a, 4096, 100000), 0);
    free(a);
    free(b);
    mt_teardown(e);
}

/* Without data_cache_on_write a PUT fills nothing: the first GET misses. */
static void test_write_fill_off(void **state)
{
    (void)state;
    struct mt_env *e = setup("dc-wfill-off");
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t n = 300 * 1024;
    uint8_t *a = malloc(n);
    mt_fill(a, n, 23);
    assert_int_equal(mt_put(e, "b", "k", a, n, NULL), 0);
    assert_int_equal(stats(e).entries, 0);
    expect_bytes(e, "b", "k", NULL, a, n);
    assert_int_equal(stats(e).misses, 1);
    free(a);
    mt_teardown(e);
}

/* An encrypted PUT fills the cache with its stored (sealed) bytes only. */
static void test_write_fill_sse(void **state)
{
    (void)state;
    struct mt_env *e = setup_w("dc-wfill-sse", true);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    const char *secret = "SSE-SECRET-PLAINTEXT-written|";
    size_t n = 500 * 1024;
    uint8_t *pt = put_sse(e, secret, n);
    assert_int_equal(stats(e).entries, 1);
    assert_false(memfds_hold(secret));
    get_sse(e, pt, n);
    assert_int_equal(stats(e).hits, 1);
    assert_int_equal(stats(e).misses, 0);
    free(pt);
    mt_teardown(e);
}

/* Entries and spares within the budget. */
static void within_budget(struct mt_env *e)
{
    struct strata_data_cache_stats st = stats(e);
    assert_true(st.bytes + st.spare <= st.budget);
}

static void test_recycle(void **state)
{
    (void)state;
    struct mt_env *e = setup("dc-recycle");
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t n = 900 * 1024;
    enum { NOBJ = 8 };
    uint8_t *d[NOBJ];
    char k[NOBJ][16];
    put_objects(e, n, NOBJ, 300, d, k);
    for (int i = 0; i < 4; i++) /* four fills: 3.5 of the 4 MiB */
        expect_bytes(e, "b", k[i], NULL, d[i], n);
    assert_int_equal(stats(e).reused, 0);
    assert_int_equal(stats(e).spare, 0);
    /* k0's memfd lent to a sender, then k0 deleted: its entry goes. */
    struct strata_obj_info info;
    struct strata_get *g;
    assert_int_equal(strata_obj_get_open(e->m, "b", k[0], NULL, &info, &g), 0);
    uint64_t fo = 1;
    int lent = strata_obj_get_fd(g, 0, n, &fo);
    assert_true(lent >= 0);
    assert_int_equal(fo, 0);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    assert_int_equal(strata_obj_delete(e->m, "b", k[0], NULL, NULL), 0);
    assert_int_equal(stats(e).entries, 3);
    assert_int_equal(stats(e).spare, 0); /* lent: freed, not kept */
    /* k1 deleted: its memfd is a spare, and k4's fill takes it. */
    assert_int_equal(strata_obj_delete(e->m, "b", k[1], NULL, NULL), 0);
    assert_int_equal(stats(e).spare, n);
    within_budget(e);
    expect_bytes(e, "b", k[4], NULL, d[4], n);
    assert_int_equal(stats(e).reused, 1);
    assert_int_equal(stats(e).spare, 0);
    uint64_t h = stats(e).hits;
    expect_bytes(e, "b", k[4], NULL, d[4], n); /* a hit: k4's bytes, not k1's */
    assert_int_equal(stats(e).hits, h + 1);
    assert_int_equal(fd_range(e, "b", k[4], d[4], 0, n), 0);
    /* Room left and no spare: k5's fill takes a new memfd. */
    expect_bytes(e, "b", k[5], NULL, d[5], n);
    assert_int_equal(stats(e).reused, 1);
    assert_int_equal(stats(e).entries, 4);
    /* A full cache: each fill evicts one entry and overwrites its memfd. */
    for (int i = 6; i < NOBJ; i++) {
        uint64_t r0 = stats(e).reused, ev0 = stats(e).evictions;
        expect_bytes(e, "b", k[i], NULL, d[i], n);
        within_budget(e);
        assert_int_equal(stats(e).evictions, ev0 + 1);
        assert_int_equal(stats(e).reused, r0 + 1);
        h = stats(e).hits;
        expect_bytes(e, "b", k[i], NULL, d[i], n);
        assert_int_equal(stats(e).hits, h + 1);
    }
    for (int i = 2; i < NOBJ; i++) /* whatever was evicted or kept, right bytes */
        expect_bytes(e, "b", k[i], NULL, d[i], n);
    within_budget(e);
    /* The lent descriptor still holds k0's bytes. */
    uint8_t *got = malloc(n);
    assert_int_equal(pread(lent, got, n, 0), (ssize_t)n);
    assert_memory_equal(got, d[0], n);
    free(got);
    close(lent);
    for (int i = 0; i < NOBJ; i++)
        free(d[i]);
    mt_teardown(e);
}

struct race {
    struct mt_env *e;
    pthread_barrier_t *go;
    char (*k)[16];
    uint8_t **d;
    size_t n, nobj;
    int bad;
};

static void *race_reader(void *arg)
{
    struct race *r = arg;
    for (int pass = 0; pass < 3; pass++) {
        for (size_t i = 0; i < r->nobj; i++) {
            pthread_barrier_wait(r->go); /* every reader misses k[i] at once */
            uint8_t *got = NULL;
            size_t gl = 0;
            if (mt_get(r->e, "b", r->k[i], NULL, &got, &gl) != 0 || gl != r->n ||
                memcmp(got, r->d[i], r->n) != 0)
                r->bad++;
            free(got);
        }
    }
    return NULL;
}

static void test_concurrent_fills(void **state)
{
    (void)state;
    struct mt_env *e = setup("dc-race");
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t n = 900 * 1024;
    enum { NOBJ = 10, READERS = 8 };
    uint8_t *d[NOBJ];
    char k[NOBJ][16];
    put_objects(e, n, NOBJ, 500, d, k);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, READERS);
    struct race r[READERS];
    pthread_t t[READERS];
    for (int i = 0; i < READERS; i++) {
        r[i] = (struct race){.e = e, .go = &go, .k = k, .d = d, .n = n, .nobj = NOBJ};
        assert_int_equal(pthread_create(&t[i], NULL, race_reader, &r[i]), 0);
    }
    int bad = 0;
    for (int i = 0; i < READERS; i++) {
        pthread_join(t[i], NULL);
        bad += r[i].bad;
    }
    pthread_barrier_destroy(&go);
    assert_int_equal(bad, 0);
    within_budget(e);
    assert_true(stats(e).fills >= NOBJ);
    for (int i = 0; i < NOBJ; i++)
        free(d[i]);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit),        cmocka_unit_test(test_never_stale),
        cmocka_unit_test(test_fill_rules), cmocka_unit_test(test_budget),
        cmocka_unit_test(test_multipart),  cmocka_unit_test(test_sse),
        cmocka_unit_test(test_write_fill), cmocka_unit_test(test_write_fill_off),
        cmocka_unit_test(test_write_fill_sse), cmocka_unit_test(test_recycle),
        cmocka_unit_test(test_concurrent_fills),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
