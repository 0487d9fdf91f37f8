/*
 * test_rados_data.c - object data in RADOS (meta/rados/data.c) and the
 * reclaim of data no record refers to (meta/rados/gc.c), on a real Ceph
 * cluster: byte-exact round trips through the hot tier over PREFIX.data
 * (sizes around the 4 MiB stripe, ranged reads across stripe edges, read
 * through the other connection), a writer destroyed before finish leaving
 * no stripe, the writer's observer (every byte in order by finish, full
 * stripes on the helper thread, none running after destroy), remove (also
 * of a dead writer's stripes without stripe 0),
 * stat and reads of missing or short stripes; the w/ entry of a PUT (kept
 * until the grace, then reclaimed with its stripes by the gc pass; cleared
 * by the commit, whose data survives; a commit after the gc took its data
 * fails; nothing while another gateway holds the gc lease); the g/ entry
 * of a replaced version (its data kept until the
 * grace, removed after it); multipart: each part's w/ cleared by its
 * commit, a replaced part, the parts a complete leaves out, an aborted
 * upload's parts and a replaced or deleted multipart version's parts (its
 * part table) all reclaimed after the grace and not before, the data pool
 * counted before and after, the live objects' bytes read back; a part
 * committed between a complete's or an abort's reads and its op (a test
 * hook) reclaimed by the gc pass once the upload is settled, an open
 * upload's parts never; a replica sent again under the same version id
 * over a multipart copy queues the old copy's parts.  Prints the write and read throughput of 64
 * MiB objects with 1 and 8 stripes in flight.
 *
 * The cluster: rados_test_env.h (skipped, 77, without one);
 * tests/integration/test_rados_store.py runs it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rados/index.h"
#include "rados/rados.h"
#include "rados_test_env.h"
#include "strata/hex.h"

#define MIB (1024u * 1024u)
#define GRACE_MS 2000 /* the reclaim grace of this test's connections */

static struct strata_rados_opts opts;
static struct strata_meta *g1, *g2;
static rados_ioctx_t data_io; /* PREFIX.data, raw */
static char run[17];

static int group_setup(void **state)
{
    (void)state;
    strata_meta__rados_test_reclaim_grace(GRACE_MS);
    char msg[512], pool[80];
    int rc = strata_meta__rados_open(&opts, &g1, msg, sizeof(msg));
    if (rc == 0)
        rc = strata_meta__rados_open(&opts, &g2, msg, sizeof(msg));
    if (rc) {
        print_message("cannot open the RADOS store: %s\n", msg);
        return -1;
    }
    snprintf(pool, sizeof(pool), "%s.data", meta_rados_of(g1)->prefix);
    if (rados_ioctx_create(meta_rados_of(g1)->c, pool, &data_io) < 0)
        return -1;
    snprintf(run, sizeof(run), "%08x%04x", (unsigned)time(NULL), (unsigned)getpid() & 0xffff);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    rados_ioctx_destroy(data_io);
    strata_meta__rados_close(g1);
    strata_meta__rados_close(g2);
    return 0;
}

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Byte off of object seed: a hash, so a stripe in the wrong place shows. */
static uint8_t pat(uint64_t seed, uint64_t off)
{
    uint64_t x = (off ^ (seed << 40)) * 0x9E3779B97F4A7C15ull;
    return (uint8_t)(x >> 56);
}

static void fill(uint8_t *b, uint64_t seed, uint64_t off, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = pat(seed, off + i);
}

/* Stripe objects of id in PREFIX.data. */
static unsigned stripes_of(const uint8_t id[16])
{
    char hex[33];
    strata_meta__rados_sk_hex(id, hex);
    rados_list_ctx_t ls;
    assert_int_equal(rados_nobjects_list_open(data_io, &ls), 0);
    const char *oid;
    unsigned n = 0;
    while (rados_nobjects_list_next(ls, &oid, NULL, NULL) == 0)
        if (strncmp(oid, hex, 32) == 0 && oid[32] == '.')
            n++;
    rados_nobjects_list_close(ls);
    return n;
}

/* Write size bytes of pattern seed as data id id through tier t, in
 * uneven pieces; finish (or not). */
static void *write_obj(struct strata_tier *t, const uint8_t id[16], uint64_t size, uint64_t seed,
                       bool finish)
{
    void *w;
    assert_int_equal(t->ops->writer_open(t->impl, 0, id, &w), 0);
    size_t piece = MIB + 4099;
    uint8_t *b = malloc(piece);
    for (uint64_t off = 0; off < size;) {
        size_t n = size - off < piece ? (size_t)(size - off) : piece;
        fill(b, seed, off, n);
        assert_int_equal(t->ops->write(w, b, n), 0);
        off += n;
    }
    free(b);
    if (!finish)
        return w;
    assert_int_equal(t->ops->finish(w), 0);
    t->ops->writer_destroy(w);
    return NULL;
}

/* [off, off+len) read through t equals the pattern. */
static void check_range(struct strata_tier *t, void *r, uint64_t seed, uint64_t off, size_t len)
{
    uint8_t *b = malloc(len + 1), *want = malloc(len + 1);
    fill(want, seed, off, len);
    assert_int_equal(t->ops->read(r, off, b, len), 0);
    assert_memory_equal(b, want, len);
    free(b);
    free(want);
}

static void test_roundtrip_sizes(void **state)
{
    (void)state;
    const uint64_t sizes[] = {0, 1, 4 * MIB - 1, 4 * MIB, 4 * MIB + 1, 33 * MIB};
    struct strata_tier *t1 = g1->tiers[0], *t2 = g2->tiers[0];
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint64_t size = sizes[i], seed = i + 1;
        uint8_t id[16];
        strata_data_id_new(id);
        write_obj(t1, id, size, seed, true);
        unsigned want_stripes = size == 0 ? 1 : (unsigned)((size + 4 * MIB - 1) / (4 * MIB));
        assert_int_equal(stripes_of(id), want_stripes);
        assert_int_equal(t1->ops->stat(t1->impl, 0, id, size), 0);
        /* Read through the other connection: whole, in 1 MiB + 1 pieces. */
        void *r;
        assert_int_equal(t2->ops->reader_open(t2->impl, 0, id, size, &r), 0);
        for (uint64_t off = 0; off < size;) {
            size_t n = size - off < MIB + 1 ? (size_t)(size - off) : MIB + 1;
            check_range(t2, r, seed, off, n);
            off += n;
        }
        t2->ops->reader_close(r);
        /* Ranges across every stripe edge, out of order, on a fresh reader. */
        assert_int_equal(t1->ops->reader_open(t1->impl, 0, id, size, &r), 0);
        for (uint64_t e = 4 * MIB * (uint64_t)(want_stripes - 1);; e -= 4 * MIB) {
            uint64_t from = e >= 3 ? e - 3 : 0, to = e + 5 < size ? e + 5 : size;
            if (to > from)
                check_range(t1, r, seed, from, (size_t)(to - from));
            if (e == 0)
                break;
        }
        if (size > 0) { /* the last byte alone, and peek at it */
            check_range(t1, r, seed, size - 1, 1);
            const uint8_t *p;
            size_t n;
            assert_int_equal(t1->ops->peek(r, size - 1, 10, &p, &n), 0);
            assert_int_equal(n, 1);
            assert_int_equal(*p, pat(seed, size - 1));
        }
        uint8_t x;
        assert_int_equal(t1->ops->read(r, size, &x, 1), STRATA_EINVAL); /* past the end */
        t1->ops->reader_close(r);
        if (size > 8 * MIB) { /* with a limit: a range in the middle */
            assert_int_equal(t1->ops->reader_open(t1->impl, 0, id, size, &r), 0);
            t1->ops->reader_limit(r, 13 * MIB);
            check_range(t1, r, seed, 5 * MIB - 7, 8 * MIB);
            t1->ops->reader_close(r);
        }
        assert_int_equal(t1->ops->remove(t1->impl, 0, id), 0);
        assert_int_equal(stripes_of(id), 0);
        assert_int_equal(t1->ops->stat(t1->impl, 0, id, size), STRATA_ENOTFOUND);
    }
}

static void test_writer_destroy_leaves_nothing(void **state)
{
    (void)state;
    struct strata_tier *t = g1->tiers[0];
    uint8_t id[16];
    strata_data_id_new(id);
    void *w = write_obj(t, id, 21 * MIB, 7, false); /* stripes 1-4 written, 0 and 5 held */
    assert_true(stripes_of(id) >= 1);
    t->ops->writer_destroy(w);
    assert_int_equal(stripes_of(id), 0);
    assert_int_equal(t->ops->stat(t->impl, 0, id, 21 * MIB), STRATA_ENOTFOUND);
}

/* What a writer's observer saw: an order-sensitive hash of the bytes, how
 * many, and whether a callback ran off the writing thread. */
struct seen {
    uint64_t fnv, n;
    pthread_t writer;
    bool off_thread;
    unsigned delay_us; /* each callback sleeps this long first */
};

static uint64_t fnv_add(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001B3ull;
    return h;
}

static void seen_cb(void *ud, const void *data, size_t len)
{
    struct seen *s = ud;
    if (s->delay_us)
        usleep(s->delay_us);
    s->fnv = fnv_add(s->fnv, data, len);
    s->n += len;
    if (!pthread_equal(pthread_self(), s->writer))
        s->off_thread = true;
}

static void test_writer_observer(void **state)
{
    (void)state;
    struct strata_tier *t = g1->tiers[0];
    assert_non_null(t->ops->writer_observe);
    const uint64_t sizes[] = {0, 1, 4 * MIB - 1, 4 * MIB, 4 * MIB + 1, 33 * MIB};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint64_t size = sizes[i], seed = 40 + i;
        uint8_t id[16];
        strata_data_id_new(id);
        void *w;
        assert_int_equal(t->ops->writer_open(t->impl, 0, id, &w), 0);
        struct seen s = {.fnv = 0xcbf29ce484222325ull, .writer = pthread_self(),
                         .delay_us = size > 8 * MIB ? 20000 : 0}; /* lags: the writer must wait */
        assert_int_equal(t->ops->writer_observe(w, seen_cb, &s), 0);
        assert_int_equal(t->ops->writer_observe(w, seen_cb, &s), STRATA_EINVAL); /* once */
        uint64_t want = 0xcbf29ce484222325ull;
        size_t piece = MIB + 4099;
        uint8_t *b = malloc(piece);
        for (uint64_t off = 0; off < size;) {
            size_t n = size - off < piece ? (size_t)(size - off) : piece;
            fill(b, seed, off, n);
            want = fnv_add(want, b, n);
            assert_int_equal(t->ops->write(w, b, n), 0);
            off += n;
        }
        free(b);
        assert_int_equal(t->ops->finish(w), 0);
        /* Every callback returned with finish: all bytes, in order. */
        assert_int_equal(s.n, size);
        assert_true(s.fnv == want);
        /* Full stripes go to the helper thread; less than one stays here. */
        assert_int_equal(s.off_thread, size >= 4 * MIB);
        t->ops->writer_destroy(w);
        void *r;
        assert_int_equal(t->ops->reader_open(t->impl, 0, id, size, &r), 0);
        if (size)
            check_range(t, r, seed, 0, (size_t)size);
        t->ops->reader_close(r);
        assert_int_equal(t->ops->remove(t->impl, 0, id), 0);
    }
    /* Destroyed before finish: every callback has returned when destroy
     * does (the caller frees what cb updates next), nothing is left. */
    uint8_t id[16];
    strata_data_id_new(id);
    void *w;
    assert_int_equal(t->ops->writer_open(t->impl, 0, id, &w), 0);
    struct seen s = {.fnv = 0xcbf29ce484222325ull, .writer = pthread_self(), .delay_us = 30000};
    assert_int_equal(t->ops->writer_observe(w, seen_cb, &s), 0);
    uint8_t *b = malloc(MIB);
    for (uint64_t off = 0; off < 13 * MIB; off += MIB) {
        fill(b, 77, off, MIB);
        assert_int_equal(t->ops->write(w, b, MIB), 0);
    }
    free(b);
    t->ops->writer_destroy(w);
    uint64_t n = s.n;
    assert_int_equal(n, 12 * MIB); /* the three full stripes */
    usleep(100000);
    assert_int_equal(s.n, n);
    assert_int_equal(stripes_of(id), 0);
}

static void test_remove(void **state)
{
    (void)state;
    struct strata_tier *t = g1->tiers[0];
    uint8_t id[16];
    strata_data_id_new(id);
    write_obj(t, id, 9 * MIB, 3, true);
    assert_int_equal(stripes_of(id), 3);
    assert_int_equal(t->ops->remove(t->impl, 0, id), 0);
    assert_int_equal(stripes_of(id), 0);
    assert_int_equal(t->ops->remove(t->impl, 0, id), 0); /* absent is fine */
    /* A writer that died: stripes 1..40 with a gap of 7 (a window of 8
     * whose oldest write was the last to land), no stripe 0. */
    char hex[33], oid[48];
    strata_meta__rados_sk_hex(id, hex);
    for (unsigned s = 1; s <= 40; s++) {
        if (s >= 14 && s <= 20)
            continue;
        snprintf(oid, sizeof(oid), "%s.%08x", hex, s);
        assert_int_equal(rados_write_full(data_io, oid, "x", 1), 0);
    }
    assert_int_equal(stripes_of(id), 33);
    assert_int_equal(t->ops->remove(t->impl, 0, id), 0);
    assert_int_equal(stripes_of(id), 0);
}

static void test_stat_read_missing(void **state)
{
    (void)state;
    struct strata_tier *t = g1->tiers[0];
    uint8_t id[16];
    strata_data_id_new(id);
    uint64_t size = 9 * MIB; /* stripes 4, 4, 1 MiB */
    write_obj(t, id, size, 5, true);
    assert_int_equal(t->ops->stat(t->impl, 0, id, size), 0);
    assert_int_equal(t->ops->stat(t->impl, 0, id, size + 1), STRATA_ECORRUPT); /* wrong size */
    char hex[33], oid[48];
    strata_meta__rados_sk_hex(id, hex);
    /* Stripe 1 shorter than recorded: reads in it fail, never wrong bytes. */
    snprintf(oid, sizeof(oid), "%s.%08x", hex, 1);
    assert_int_equal(rados_write_full(data_io, oid, "short", 5), 0);
    void *r;
    uint8_t b[16];
    assert_int_equal(t->ops->reader_open(t->impl, 0, id, size, &r), 0);
    check_range(t, r, 5, 0, 16);
    assert_int_equal(t->ops->read(r, 4 * MIB, b, 1), STRATA_ECORRUPT);
    t->ops->reader_close(r);
    /* The last stripe longer than recorded: not the object's bytes either. */
    snprintf(oid, sizeof(oid), "%s.%08x", hex, 2);
    char *longer = calloc(1, MIB + 1);
    assert_int_equal(rados_write_full(data_io, oid, longer, MIB + 1), 0);
    free(longer);
    assert_int_equal(t->ops->stat(t->impl, 0, id, size), STRATA_ECORRUPT);
    assert_int_equal(t->ops->reader_open(t->impl, 0, id, size, &r), 0);
    assert_int_equal(t->ops->read(r, 8 * MIB, b, 1), STRATA_ECORRUPT);
    t->ops->reader_close(r);
    /* The last stripe gone: stat and reads there say not found. */
    assert_int_equal(rados_remove(data_io, oid), 0);
    assert_int_equal(t->ops->stat(t->impl, 0, id, size), STRATA_ENOTFOUND);
    assert_int_equal(t->ops->reader_open(t->impl, 0, id, size, &r), 0);
    assert_int_equal(t->ops->read(r, 8 * MIB + 10, b, 4), STRATA_ENOTFOUND);
    t->ops->reader_close(r);
    assert_int_equal(t->ops->remove(t->impl, 0, id), 0);
    assert_int_equal(stripes_of(id), 0);
}

/* ---- w/ and g/ ---- */

struct mk {
    const char *name;
    uint64_t inc;
    int versioning;
};

static int mk_decide(void *ud, const struct strata_meta__bucket_view *view,
                     enum strata_meta__bucket_edit *edit, struct strata_bucket_info *next)
{
    const struct mk *c = ud;
    if (view->exists)
        return STRATA_EEXISTS;
    memset(next, 0, sizeof(*next));
    snprintf(next->name, sizeof(next->name), "%s", c->name);
    snprintf(next->owner, sizeof(next->owner), "o");
    next->incarnation = c->inc;
    next->versioning = c->versioning;
    next->created_ms = 1;
    *edit = STRATA_META__BUCKET_PUT;
    return 0;
}

/* A bucket of this run named into name (versioning as given); returns
 * its incarnation. */
static uint64_t mk_bucket_v(const char *tag, char name[64], int versioning)
{
    static unsigned seq;
    snprintf(name, 64, "gc-%s-%s", tag, run);
    struct mk c = {name, ((uint64_t)time(NULL) << 24) | ((uint64_t)getpid() << 8) | ++seq,
                   versioning};
    struct strata_meta__bucket_txn t = {.name = name, .decide = mk_decide, .ud = &c};
    assert_int_equal(g1->store->bucket_txn(g1, &t), 0);
    return c.inc;
}

static uint64_t mk_bucket(const char *tag, char name[64])
{
    return mk_bucket_v(tag, name, STRATA_VERSIONING_OFF);
}

/* A new version whose data is id, through the rules' decide (object.c). */
struct dput {
    struct meta_rec rec;
    const uint8_t *replica_sk; /* a replica's: the source's sort key */
};

static int dput_decide(void *ud, const struct strata_meta__key_view *v,
                       struct strata_meta__key_edit *e)
{
    struct dput *p = ud;
    if (p->replica_sk)
        return strata_meta__replica_decide(v, &p->rec, p->replica_sk, e);
    return strata_meta__version_decide(v, STRATA_VERSIONING_OFF, &p->rec, NULL, false, e);
}

/* A PUT's commit of data id; with replica_vid, a replica's of that version
 * (versioned bucket). */
static int commit_as(const char *bucket, uint64_t inc, const char *key, const uint8_t id[16],
                     uint64_t size, const char *replica_vid)
{
    struct dput p;
    memset(&p, 0, sizeof(p));
    uint8_t sk[16];
    if (replica_vid) {
        assert_int_equal(strata_meta__vid_parse(replica_vid, sk), 0);
        p.replica_sk = sk;
    }
    p.rec.size = size;
    p.rec.has_data_id = true;
    memcpy(p.rec.data_id, id, 16);
    snprintf(p.rec.etag, sizeof(p.rec.etag), "e");
    snprintf(p.rec.storage_class, sizeof(p.rec.storage_class), "STANDARD");
    struct strata_meta__key_txn t = {
        .bucket = bucket, .key = key, .incarnation = inc, .hold_bucket = true,
        .want = strata_meta__version_want(replica_vid ? STRATA_VERSIONING_ENABLED
                                                      : STRATA_VERSIONING_OFF),
        .version_id = replica_vid, .decide = dput_decide, .ud = &p};
    if (replica_vid)
        t.want |= STRATA_META__KEY_VERSION;
    return g1->store->key_txn(g1, &t);
}

static int commit(const char *bucket, uint64_t inc, const char *key, const uint8_t id[16],
                  uint64_t size)
{
    return commit_as(bucket, inc, key, id, size, NULL);
}

/* Whether the key's shard has omap key k (and, with val, its value). */
static bool shard_has(uint64_t inc, const char *key, const char *k)
{
    char oid[48];
    strata_meta__rados_idx_oid(oid, inc, strata_meta__rados_idx_shard(key, strlen(key)));
    char *v;
    size_t vl;
    int rc = strata_meta__rados_get1(meta_rados_of(g1)->meta, oid, k, &v, &vl);
    free(v);
    assert_true(rc == 0 || rc == STRATA_ENOTFOUND);
    return rc == 0;
}

/* Omap keys of key's shard under prefix for which match (NULL: any) is
 * true. */
static unsigned shard_count(uint64_t inc, const char *key, const char *prefix,
                            bool (*match)(const char *k, const void *ud), const void *ud)
{
    char oid[48];
    strata_meta__rados_idx_oid(oid, inc, strata_meta__rados_idx_shard(key, strlen(key)));
    rados_read_op_t op = rados_create_read_op();
    rados_omap_iter_t it;
    unsigned char more;
    int pr;
    rados_read_op_omap_get_vals2(op, "", prefix, 1000, &it, &more, &pr);
    assert_int_equal(rados_read_op_operate(op, meta_rados_of(g1)->meta, oid, 0), 0);
    unsigned n = 0;
    char *k, *v;
    size_t vl;
    while (rados_omap_get_next(it, &k, &v, &vl) == 0 && k)
        n += !match || match(k, ud);
    rados_omap_get_end(it);
    rados_release_read_op(op);
    return n;
}

/* g/DUE/ID of the data id whose hex is ud. */
static bool g_of_id(const char *k, const void *ud)
{
    return strlen(k) > 19 && strcmp(k + 19, ud) == 0;
}

/* The g/ key of id on the key's shard, if any (DUE unknown). */
static bool shard_has_g(uint64_t inc, const char *key, const uint8_t id[16])
{
    char hex[33];
    strata_meta__rados_sk_hex(id, hex);
    return shard_count(inc, key, "g/", g_of_id, hex) > 0;
}

/* A PUT's data before its commit: a new data id (and its w/ key),
 * pending on bucket/key, size bytes of pattern seed written. */
static void put_data(const char *bucket, uint64_t inc, const char *key, uint8_t id[16],
                     char wkey[40], uint64_t size, uint64_t seed)
{
    strata_data_id_new(id);
    strata_meta__rados_wkey(wkey, id);
    assert_int_equal(g1->store->pending_add(g1, bucket, inc, key, NULL, id), 0);
    write_obj(g1->tiers[0], id, size, seed, true);
}

static int gc(unsigned age_s)
{
    uint64_t removed = 0;
    int rc = strata_meta_orphan_round(g1, NULL, age_s, &removed);
    return rc;
}

static void test_pending_never_committed(void **state)
{
    (void)state;
    char bucket[64], wkey[40];
    uint64_t inc = mk_bucket("w", bucket);
    uint8_t id[16];
    put_data(bucket, inc, "k/never", id, wkey, 6 * MIB, 9);
    assert_true(shard_has(inc, "k/never", wkey));
    assert_int_equal(stripes_of(id), 2);
    /* Younger than the grace (60 s): kept. */
    assert_int_equal(gc(60), 0);
    assert_true(shard_has(inc, "k/never", wkey));
    assert_int_equal(stripes_of(id), 2);
    sleep(2);
    /* Another gateway holds the gc lease: this one does nothing. */
    assert_int_equal(strata_meta_lease(g2, "gc", STRATA_LEASE_TAKE), 0);
    assert_int_equal(gc(1), 0);
    assert_true(shard_has(inc, "k/never", wkey));
    assert_int_equal(stripes_of(id), 2);
    assert_int_equal(strata_meta_lease(g2, "gc", STRATA_LEASE_RELEASE), 0);
    /* Older than a 1 s grace: moved to g/ and removed in the same pass. */
    assert_int_equal(gc(1), 0);
    assert_false(shard_has(inc, "k/never", wkey));
    assert_false(shard_has_g(inc, "k/never", id));
    assert_int_equal(stripes_of(id), 0);
    /* An incarnation that does not exist: no entry, an error (503: the
     * bucket exists under another one, the retry meets it). */
    assert_int_equal(g1->store->pending_add(g1, bucket, inc + 1, "k", NULL, id), STRATA_EBUSY);
}

static void test_commit_clears_pending(void **state)
{
    (void)state;
    char bucket[64], wkey[40];
    uint64_t inc = mk_bucket("c", bucket);
    uint8_t id[16];
    put_data(bucket, inc, "k/done", id, wkey, 5 * MIB, 11);
    assert_true(shard_has(inc, "k/done", wkey));
    assert_int_equal(commit(bucket, inc, "k/done", id, 5 * MIB), 0);
    assert_false(shard_has(inc, "k/done", wkey)); /* gone with the commit */
    assert_int_equal(gc(0), 0);                   /* any age: nothing pending */
    assert_int_equal(g1->tiers[0]->ops->stat(g1->tiers[0]->impl, 0, id, 5 * MIB), 0);
    assert_int_equal(stripes_of(id), 2);

    /* A PUT stalled past the grace: the gc took its entry and data, and
     * its commit then fails instead of naming data that is gone. */
    uint8_t id2[16];
    put_data(bucket, inc, "k/stalled", id2, wkey, 1 * MIB, 12);
    assert_int_equal(gc(0), 0);
    assert_int_equal(stripes_of(id2), 0);
    assert_int_equal(commit(bucket, inc, "k/stalled", id2, 1 * MIB), STRATA_EIO);
    char hk[RADOS_IKEY_MAX];
    strata_meta__rados_ikey(hk, 'h', "k/stalled", 9);
    assert_false(shard_has(inc, "k/stalled", hk)); /* no version */
}

static void test_replaced_data_reclaimed_after_grace(void **state)
{
    (void)state;
    char bucket[64], wkey[40];
    uint64_t inc = mk_bucket("g", bucket);
    uint8_t a[16], b[16];
    struct strata_tier *t = g1->tiers[0];
    put_data(bucket, inc, "k/r", a, wkey, 5 * MIB, 21);
    assert_int_equal(commit(bucket, inc, "k/r", a, 5 * MIB), 0);
    assert_false(shard_has_g(inc, "k/r", a));
    /* Overwrite (versioning off): a's data is unreferenced, queued in g/. */
    put_data(bucket, inc, "k/r", b, wkey, 5 * MIB, 22);
    int64_t t0 = mono_us();
    assert_int_equal(commit(bucket, inc, "k/r", b, 5 * MIB), 0);
    assert_true(shard_has_g(inc, "k/r", a));
    /* Before the grace: kept (a reader elsewhere may still read it). */
    assert_int_equal(gc(0), 0);
    if (mono_us() - t0 < GRACE_MS * 1000LL) {
        assert_true(shard_has_g(inc, "k/r", a));
        assert_int_equal(t->ops->stat(t->impl, 0, a, 5 * MIB), 0);
    }
    usleep((GRACE_MS + 300) * 1000);
    assert_int_equal(gc(0), 0);
    assert_false(shard_has_g(inc, "k/r", a));
    assert_int_equal(stripes_of(a), 0);
    assert_int_equal(t->ops->stat(t->impl, 0, b, 5 * MIB), 0); /* the current version's */
    assert_int_equal(stripes_of(b), 2);
}

/* ---- multipart: parts' w/ and the g/ reclaim of parts and versions ---- */

/* Objects in PREFIX.data. */
static unsigned pool_objects(void)
{
    rados_list_ctx_t ls;
    assert_int_equal(rados_nobjects_list_open(data_io, &ls), 0);
    const char *oid;
    unsigned n = 0;
    while (rados_nobjects_list_next(ls, &oid, NULL, NULL) == 0)
        n++;
    rados_nobjects_list_close(ls);
    return n;
}

/* Part no of upload up: size bytes of pattern seed as a new data id (w/
 * first, as object.c), then its record.  Its ETag (md5 = seed) in etag. */
static void part_put(const char *bucket, uint64_t inc, const char *key, const char *upload_id,
                     unsigned no, uint64_t size, uint64_t seed, uint8_t id[16], char etag[33])
{
    char wkey[40];
    put_data(bucket, inc, key, id, wkey, size, seed);
    struct meta_part p;
    memset(&p, 0, sizeof(p));
    p.number = no;
    p.size = size;
    memset(p.md5, (int)seed, 16);
    p.has_data_id = true;
    memcpy(p.data_id, id, 16);
    p.mtime_ns = 1;
    strata_hex_encode(p.md5, 16, etag);
    uint8_t up[UPLOAD_LEN];
    assert_int_equal(strata_meta__upload_id_parse(upload_id, up), 0);
    assert_int_equal(strata_meta__part_store(g1, bucket, key, up, &p), 0);
    /* The part's commit made its w/ entry name the upload: it stays until
     * the complete or abort that reads the part. */
    char oid[48], *v = NULL, at[40];
    size_t vl = 0;
    strata_meta__rados_idx_oid(oid, inc, strata_meta__rados_idx_shard(key, strlen(key)));
    assert_int_equal(strata_meta__rados_get1(meta_rados_of(g1)->meta, oid, wkey, &v, &vl), 0);
    snprintf(at, sizeof(at), " @%s ", upload_id);
    assert_non_null(strstr(v, at));
    free(v);
}

/* Whether data id's w/ entry is on key's shard. */
static bool pending(uint64_t inc, const char *key, const uint8_t id[16])
{
    char wkey[40];
    strata_meta__rados_wkey(wkey, id);
    return shard_has(inc, key, wkey);
}

/* CompleteMultipartUpload; with vid, a replica's keeping that version id. */
static int complete_as(const char *bucket, const char *key, const char *upload_id,
                       const unsigned *nos, char (*etags)[33], size_t n, const char *vid)
{
    struct strata_mpu_part pl[8];
    for (size_t i = 0; i < n; i++)
        pl[i] = (struct strata_mpu_part){.part_number = nos[i], .etag = etags[i]};
    struct strata_mpu_complete_opts o = {.bucket = bucket, .key = key, .upload_id = upload_id,
                                         .parts = pl, .nparts = n};
    return strata_mpu_complete_as(g1, &o, vid, NULL);
}

static int complete(const char *bucket, const char *key, const char *upload_id,
                    const unsigned *nos, char (*etags)[33], size_t n)
{
    return complete_as(bucket, key, upload_id, nos, etags, n, NULL);
}

/* g/DUE/SK/t: a multipart version's parts. */
static bool g_of_parts(const char *k, const void *ud)
{
    (void)ud;
    return strlen(k) == 2 + 16 + 1 + 32 + 2 && strcmp(k + strlen(k) - 2, "/t") == 0;
}

static bool shard_has_gparts(uint64_t inc, const char *key)
{
    return shard_count(inc, key, "g/", g_of_parts, NULL) > 0;
}

/* Part table chunks (t/) of key on its shard. */
static unsigned shard_chunks(uint64_t inc, const char *key)
{
    char pre[RADOS_IKEY_MAX];
    strata_meta__rados_ikey(pre, 't', key, strlen(key));
    return shard_count(inc, key, pre, NULL, NULL);
}

/* The whole of data id read back through the hot tier. */
static void read_back(const uint8_t id[16], uint64_t size, uint64_t seed)
{
    struct strata_tier *t = g1->tiers[0];
    void *r;
    assert_int_equal(t->ops->reader_open(t->impl, 0, id, size, &r), 0);
    check_range(t, r, seed, 0, (size_t)size);
    t->ops->reader_close(r);
}

static void test_multipart_reclaim(void **state)
{
    (void)state;
    char bucket[64], up1[STRATA_UPLOAD_ID_MAX + 1], up2[STRATA_UPLOAD_ID_MAX + 1],
        up3[STRATA_UPLOAD_ID_MAX + 1], up4[STRATA_UPLOAD_ID_MAX + 1];
    uint64_t inc = mk_bucket("mp", bucket);
    unsigned before = pool_objects();
    uint8_t a1[16], a2[16], a2b[16], a3[16], c1[16], d1[16], e1[16], e2[16];
    char et[4][33];
    /* Upload 1 of k/mp: part 1 (5 MiB: 2 stripes), part 2 replaced by a
     * re-upload, part 3 left out of the complete. */
    struct strata_mpu_opts mo = {.bucket = bucket, .key = "k/mp"};
    assert_int_equal(strata_mpu_create(g1, &mo, up1), 0);
    part_put(bucket, inc, "k/mp", up1, 1, 5 * MIB, 31, a1, et[0]);
    part_put(bucket, inc, "k/mp", up1, 2, MIB, 32, a2, et[1]);
    assert_false(shard_has_g(inc, "k/mp", a2));
    int64_t t0 = mono_us(); /* before the first g/ entry */
    part_put(bucket, inc, "k/mp", up1, 2, MIB + 7, 33, a2b, et[1]);
    assert_true(shard_has_g(inc, "k/mp", a2)); /* the replaced part, by its op */
    part_put(bucket, inc, "k/mp", up1, 3, MIB, 34, a3, et[2]);
    const unsigned two[] = {1, 2};
    assert_int_equal(complete(bucket, "k/mp", up1, two, et, 2), 0);
    assert_true(shard_has_g(inc, "k/mp", a3)); /* left out, by the complete's op */
    const uint8_t *settled[] = {a1, a2, a2b, a3}; /* in the table or in g/: none pending */
    for (size_t i = 0; i < 4; i++)
        assert_false(pending(inc, "k/mp", settled[i]));
    assert_false(shard_has_g(inc, "k/mp", a1));
    assert_false(shard_has_g(inc, "k/mp", a2b));
    assert_int_equal(shard_chunks(inc, "k/mp"), 1);
    /* Overwritten by a plain PUT: the multipart version's parts queued. */
    uint8_t b[16];
    char wkey[40];
    put_data(bucket, inc, "k/mp", b, wkey, 5 * MIB, 35);
    assert_int_equal(commit(bucket, inc, "k/mp", b, 5 * MIB), 0);
    assert_true(shard_has_gparts(inc, "k/mp"));
    /* Upload 2 of k/ab: aborted, its part queued by the abort's op. */
    mo.key = "k/ab";
    assert_int_equal(strata_mpu_create(g1, &mo, up2), 0);
    part_put(bucket, inc, "k/ab", up2, 1, MIB, 36, c1, et[3]);
    assert_int_equal(strata_mpu_abort(g1, bucket, "k/ab", up2), 0);
    assert_true(shard_has_g(inc, "k/ab", c1));
    assert_false(pending(inc, "k/ab", c1));
    /* Upload 3 of k/del: completed, then the version deleted. */
    mo.key = "k/del";
    assert_int_equal(strata_mpu_create(g1, &mo, up3), 0);
    part_put(bucket, inc, "k/del", up3, 1, 2 * MIB, 37, d1, et[0]);
    const unsigned one[] = {1};
    assert_int_equal(complete(bucket, "k/del", up3, one, et, 1), 0);
    struct strata_del_result dr;
    assert_int_equal(strata_obj_delete(g1, bucket, "k/del", NULL, &dr), 0);
    assert_true(shard_has_gparts(inc, "k/del"));
    /* Upload 4 of k/live: stays, with its two parts' data. */
    mo.key = "k/live";
    assert_int_equal(strata_mpu_create(g1, &mo, up4), 0);
    part_put(bucket, inc, "k/live", up4, 1, 5 * MIB, 38, e1, et[0]);
    part_put(bucket, inc, "k/live", up4, 2, 3 * MIB, 39, e2, et[1]);
    assert_int_equal(complete(bucket, "k/live", up4, two, et, 2), 0);
    /* 2 + 1 + 1 + 1 (k/mp) + 2 (b) + 1 (k/ab) + 1 (k/del) + 2 + 1 (k/live) */
    assert_int_equal(pool_objects(), before + 12);
    /* Before the grace: nothing removed (readers elsewhere may read it). */
    assert_int_equal(gc(0), 0);
    if (mono_us() - t0 < GRACE_MS * 1000LL) {
        assert_int_equal(stripes_of(a1), 2);
        assert_int_equal(stripes_of(a3), 1);
        assert_int_equal(stripes_of(d1), 1);
        assert_int_equal(pool_objects(), before + 12);
    }
    usleep((GRACE_MS + 300) * 1000);
    assert_int_equal(gc(0), 0);
    const uint8_t *gone[] = {a1, a2, a2b, a3, c1, d1};
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
        assert_int_equal(stripes_of(gone[i]), 0);
    assert_false(shard_has_gparts(inc, "k/mp"));
    assert_false(shard_has_gparts(inc, "k/del"));
    assert_int_equal(shard_chunks(inc, "k/mp"), 0);
    assert_int_equal(shard_chunks(inc, "k/del"), 0);
    assert_false(shard_has_g(inc, "k/mp", a3));
    assert_false(shard_has_g(inc, "k/ab", c1));
    /* What is live stays whole: b, and k/live's parts and table. */
    assert_int_equal(pool_objects(), before + 2 + 2 + 1);
    read_back(b, 5 * MIB, 35);
    read_back(e1, 5 * MIB, 38);
    read_back(e2, 3 * MIB, 39);
    assert_int_equal(shard_chunks(inc, "k/live"), 1);
}

/* A part committed between a complete's (or an abort's) reads and its
 * guarded op: the settle hook commits it there. */
struct race {
    const char *bucket, *key, *upload_id;
    uint64_t inc;
    uint8_t id[16];
    char etag[33];
    bool fired;
};

static void race_part(void *ud)
{
    struct race *x = ud;
    strata_meta__rados_test_settle_hook(NULL, NULL); /* once */
    part_put(x->bucket, x->inc, x->key, x->upload_id, 9, MIB, 61, x->id, x->etag);
    x->fired = true;
}

static void test_part_racing_complete_or_abort_reclaimed(void **state)
{
    (void)state;
    char bucket[64], up1[STRATA_UPLOAD_ID_MAX + 1], up2[STRATA_UPLOAD_ID_MAX + 1],
        up3[STRATA_UPLOAD_ID_MAX + 1], et[1][33], et2[33];
    uint64_t inc = mk_bucket("race", bucket);
    unsigned before = pool_objects();
    uint8_t p1[16], q1[16], o1[16];
    struct strata_mpu_opts mo = {.bucket = bucket, .key = "k/c"};
    assert_int_equal(strata_mpu_create(g1, &mo, up1), 0);
    part_put(bucket, inc, "k/c", up1, 1, 5 * MIB, 62, p1, et[0]);
    /* Part 9 lands after the complete read the parts: the complete still
     * commits (part 1 alone), its range removal takes part 9's record. */
    struct race x = {.bucket = bucket, .key = "k/c", .upload_id = up1, .inc = inc};
    strata_meta__rados_test_settle_hook(race_part, &x);
    const unsigned one[] = {1};
    assert_int_equal(complete(bucket, "k/c", up1, one, et, 1), 0);
    assert_true(x.fired);
    assert_int_equal(stripes_of(x.id), 1);
    assert_true(pending(inc, "k/c", x.id)); /* its data: named by nothing but w/ */
    assert_false(pending(inc, "k/c", p1));
    /* The same against an abort. */
    mo.key = "k/a";
    assert_int_equal(strata_mpu_create(g1, &mo, up2), 0);
    part_put(bucket, inc, "k/a", up2, 1, MIB, 63, q1, et2);
    struct race y = {.bucket = bucket, .key = "k/a", .upload_id = up2, .inc = inc};
    strata_meta__rados_test_settle_hook(race_part, &y);
    assert_int_equal(strata_mpu_abort(g1, bucket, "k/a", up2), 0);
    assert_true(y.fired);
    assert_true(pending(inc, "k/a", y.id));
    assert_true(shard_has_g(inc, "k/a", q1)); /* the part it read: queued by its op */
    /* An open upload: its committed part is kept by the gc pass whatever
     * its age. */
    mo.key = "k/open";
    assert_int_equal(strata_mpu_create(g1, &mo, up3), 0);
    part_put(bucket, inc, "k/open", up3, 1, MIB, 64, o1, et2);
    /* p1 2 + x 1 + q1 1 + y 1 + o1 1 */
    assert_int_equal(pool_objects(), before + 6);
    /* Any age: the racing parts' entries go to g/ due now, with their data. */
    assert_int_equal(gc(0), 0);
    assert_int_equal(stripes_of(x.id), 0);
    assert_int_equal(stripes_of(y.id), 0);
    assert_false(pending(inc, "k/c", x.id));
    assert_false(pending(inc, "k/a", y.id));
    assert_false(shard_has_g(inc, "k/c", x.id));
    assert_true(pending(inc, "k/open", o1));
    assert_int_equal(stripes_of(o1), 1);
    read_back(p1, 5 * MIB, 62);
    usleep((GRACE_MS + 300) * 1000);
    assert_int_equal(gc(0), 0);
    /* Left: the completed version's part and the open upload's. */
    assert_int_equal(stripes_of(q1), 0);
    assert_int_equal(pool_objects(), before + 2 + 1);
    read_back(p1, 5 * MIB, 62);
    read_back(o1, MIB, 64);
    assert_true(pending(inc, "k/open", o1));
}

/* A replica sent again under the same version id: the copy it replaces
 * was multipart, so its parts (named by the table the new copy writes
 * over, or by none once a plain PUT replaces it) are queued for reclaim. */
static void test_replica_sent_again_reclaims_old_parts(void **state)
{
    (void)state;
    char bucket[64], up1[STRATA_UPLOAD_ID_MAX + 1], up2[STRATA_UPLOAD_ID_MAX + 1], et[2][33];
    uint64_t inc = mk_bucket_v("rep", bucket, STRATA_VERSIONING_ENABLED);
    unsigned before = pool_objects();
    uint8_t sk[16], a1[16], a2[16], b1[16], c[16];
    char vid[STRATA_VERSION_ID_MAX + 1], wkey[40];
    strata_meta__sortkey_new(1700000000000000000LL, sk);
    strata_meta__vid_format(sk, vid);
    const unsigned one[] = {1}, two[] = {1, 2};
    /* The first copy: two parts. */
    struct strata_mpu_opts mo = {.bucket = bucket, .key = "k/rep"};
    assert_int_equal(strata_mpu_create(g1, &mo, up1), 0);
    part_put(bucket, inc, "k/rep", up1, 1, 5 * MIB, 71, a1, et[0]);
    part_put(bucket, inc, "k/rep", up1, 2, MIB, 72, a2, et[1]);
    assert_int_equal(complete_as(bucket, "k/rep", up1, two, et, 2, vid), 0);
    assert_false(shard_has_g(inc, "k/rep", a1));
    /* Sent again as a multipart upload of one part: the first copy's parts
     * queued, the new one's not. */
    assert_int_equal(strata_mpu_create(g1, &mo, up2), 0);
    part_put(bucket, inc, "k/rep", up2, 1, MIB, 73, b1, et[0]);
    assert_int_equal(complete_as(bucket, "k/rep", up2, one, et, 1, vid), 0);
    assert_true(shard_has_g(inc, "k/rep", a1));
    assert_true(shard_has_g(inc, "k/rep", a2));
    assert_false(shard_has_g(inc, "k/rep", b1));
    assert_int_equal(shard_chunks(inc, "k/rep"), 1); /* the new copy's table */
    /* Sent again as a plain PUT: the second copy's part queued, its table
     * removed. */
    put_data(bucket, inc, "k/rep", c, wkey, MIB, 74);
    assert_int_equal(commit_as(bucket, inc, "k/rep", c, MIB, vid), 0);
    assert_true(shard_has_g(inc, "k/rep", b1));
    assert_false(shard_has_g(inc, "k/rep", c));
    assert_int_equal(shard_chunks(inc, "k/rep"), 0);
    assert_int_equal(pool_objects(), before + 2 + 1 + 1 + 1);
    usleep((GRACE_MS + 300) * 1000);
    assert_int_equal(gc(0), 0);
    assert_int_equal(stripes_of(a1), 0);
    assert_int_equal(stripes_of(a2), 0);
    assert_int_equal(stripes_of(b1), 0);
    assert_int_equal(pool_objects(), before + 1);
    read_back(c, MIB, 74);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* One 64 MiB object written in 1 MiB pieces and read back in 1 MiB reads
 * through t: the times in *wus, *rus. */
static void timed_round_trip(struct strata_tier *t, const uint8_t *buf, uint8_t *back,
                             uint64_t size, int64_t *wus, int64_t *rus)
{
    uint8_t id[16];
    strata_data_id_new(id);
    void *w, *r;
    int64_t t0 = mono_us();
    assert_int_equal(t->ops->writer_open(t->impl, 0, id, &w), 0);
    for (uint64_t off = 0; off < size; off += MIB)
        assert_int_equal(t->ops->write(w, buf + off, MIB), 0);
    assert_int_equal(t->ops->finish(w), 0);
    t->ops->writer_destroy(w);
    *wus = mono_us() - t0;
    t0 = mono_us();
    assert_int_equal(t->ops->reader_open(t->impl, 0, id, size, &r), 0);
    for (uint64_t off = 0; off < size; off += MIB)
        assert_int_equal(t->ops->read(r, off, back + off, MIB), 0);
    t->ops->reader_close(r);
    *rus = mono_us() - t0;
    assert_memory_equal(back, buf, size);
    assert_int_equal(t->ops->remove(t->impl, 0, id), 0);
}

/* Write and read MB/s of 64 MiB objects with 1 and 8 stripes in flight
 * (printed): the runs of the two alternate, so load on the machine falls
 * on both alike.  One run each in the suite (the bytes are still checked);
 * STRATA_RADOS_BENCH_RUNS=5 for the figures in meta/RADOS.md. */
static void test_throughput(void **state)
{
    (void)state;
    enum { MAX_RUNS = 9, NW = 2 };
    const char *env = getenv("STRATA_RADOS_BENCH_RUNS");
    int RUNS = env ? atoi(env) : 1;
    if (RUNS < 1 || RUNS > MAX_RUNS)
        RUNS = 1;
    const uint64_t size = 64 * MIB;
    uint8_t *buf = malloc(size), *back = malloc(size);
    fill(buf, 99, 0, size);
    char pool[80];
    snprintf(pool, sizeof(pool), "%s.data", meta_rados_of(g1)->prefix);
    const unsigned windows[NW] = {1, 8};
    struct strata_tier *t[NW];
    int64_t wus[NW][MAX_RUNS], rus[NW][MAX_RUNS];
    for (int wi = 0; wi < NW; wi++) {
        struct strata_meta__rados_data_opts o = {.window = windows[wi], .readahead = windows[wi]};
        assert_int_equal(
            strata_meta__rados_data_create(meta_rados_of(g1), "bench", pool, &o, &t[wi]), 0);
    }
    for (int i = 0; i < RUNS; i++)
        for (int wi = 0; wi < NW; wi++)
            timed_round_trip(t[wi], buf, back, size, &wus[wi][i], &rus[wi][i]);
    for (int wi = 0; wi < NW; wi++) {
        qsort(wus[wi], RUNS, sizeof(int64_t), cmp_i64);
        qsort(rus[wi], RUNS, sizeof(int64_t), cmp_i64);
        print_message("64 MiB, window %u: write p50 %.0f MB/s (%.0f-%.0f), read p50 %.0f MB/s "
                      "(%.0f-%.0f), %d runs\n",
                      windows[wi], size / (double)wus[wi][RUNS / 2],
                      size / (double)wus[wi][RUNS - 1], size / (double)wus[wi][0],
                      size / (double)rus[wi][RUNS / 2], size / (double)rus[wi][RUNS - 1],
                      size / (double)rus[wi][0], RUNS);
        strata_tier_destroy(t[wi]);
    }
    free(buf);
    free(back);
}

int main(void)
{
    if (!rados_test_env(&opts, "test_rados_data"))
        return 77;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_sizes),
        cmocka_unit_test(test_writer_destroy_leaves_nothing),
        cmocka_unit_test(test_writer_observer),
        cmocka_unit_test(test_remove),
        cmocka_unit_test(test_stat_read_missing),
        cmocka_unit_test(test_pending_never_committed),
        cmocka_unit_test(test_commit_clears_pending),
        cmocka_unit_test(test_replaced_data_reclaimed_after_grace),
        cmocka_unit_test(test_multipart_reclaim),
        cmocka_unit_test(test_part_racing_complete_or_abort_reclaimed),
        cmocka_unit_test(test_replica_sent_again_reclaims_old_parts),
        cmocka_unit_test(test_throughput),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
