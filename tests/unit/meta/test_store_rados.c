/*
 * test_store_rados.c - the RADOS backend behind the store seam (store.h),
 * on a real Ceph cluster: two connections (two "gateways") to one cluster.
 * State documents; the clock's mark only moving forward; one unbroken
 * audit chain from appends interleaved by both gateways (across segment
 * boundaries: segments of 5 entries here); the create race of a bucket
 * (2 threads on each connection: exactly one creator, no leftover of the
 * losers); a refused decide leaving nothing; configuration tied to the
 * bucket's incarnation; leases (one holder, takeover after expiry with a
 * 3 s lease, release); invalidation reaching the other gateway within 1 s.
 *
 * Needs STRATA_TEST_RADOS_CONF (ceph.conf of a cluster prepared with
 * `strata rados init`), and STRATA_TEST_RADOS_ID / _PREFIX when not
 * admin / strata; without them every test is skipped (exit 77).
 * tests/integration/test_rados_store.py starts a cluster and runs this.
 * Raw librados reads check what the backend left in the pool.
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

#include <openssl/sha.h>

#include "rados/rados.h"

#define LEASE_MS 3000
#define AUDIT_SEG 5

static struct strata_rados_opts opts;
static struct strata_meta *g1, *g2; /* two gateways */
static char run[17];                /* this run's names are unique */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int group_setup(void **state)
{
    (void)state;
    strata_meta__rados_test_knobs(LEASE_MS, AUDIT_SEG);
    char msg[512];
    int rc = strata_meta__rados_open(&opts, &g1, msg, sizeof(msg));
    if (rc == 0)
        rc = strata_meta__rados_open(&opts, &g2, msg, sizeof(msg));
    if (rc)
        print_message("cannot open the RADOS store: %s\n", msg);
    snprintf(run, sizeof(run), "%08x%04x", (unsigned)time(NULL), (unsigned)getpid() & 0xffff);
    return rc ? -1 : 0;
}

static int group_teardown(void **state)
{
    (void)state;
    strata_meta__rados_close(g1);
    strata_meta__rados_close(g2);
    return 0;
}

static rados_ioctx_t raw(struct strata_meta *m)
{
    return meta_rados_of(m)->meta;
}

static bool obj_exists(struct strata_meta *m, const char *oid)
{
    uint64_t size;
    time_t mt;
    return rados_stat(raw(m), oid, &size, &mt) == 0;
}

/* ---- state documents ---- */

static void test_state(void **state)
{
    (void)state;
    char name[64];
    snprintf(name, sizeof(name), "scanner-pos-%s", run);
    void *doc;
    size_t len;
    assert_int_equal(strata_meta_state_get(g1, name, &doc, &len), STRATA_ENOTFOUND);
    assert_int_equal(strata_meta_state_put(g1, name, "pos\0x", 5), 0);
    assert_int_equal(strata_meta_state_get(g2, name, &doc, &len), 0); /* the other gateway */
    assert_int_equal(len, 5);
    assert_memory_equal(doc, "pos\0x", 5);
    free(doc);
    assert_int_equal(strata_meta_state_put(g2, name, "second", 6), 0);
    assert_int_equal(strata_meta_state_get(g1, name, &doc, &len), 0);
    assert_int_equal(len, 6);
    assert_memory_equal(doc, "second", 6);
    free(doc);
    assert_int_equal(strata_meta_state_put(g1, name, NULL, 0), 0); /* removes */
    assert_int_equal(strata_meta_state_get(g2, name, &doc, &len), STRATA_ENOTFOUND);
    assert_null(doc);
}

/* ---- the retention clock's mark ---- */

static void test_clock_forward_only(void **state)
{
    (void)state;
    const struct strata_meta__store_ops *ops = g1->store;
    int64_t cur = ops->clock_mark_read(g1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t base = (int64_t)ts.tv_sec * 1000 + 10000;
    if (cur >= base)
        base = cur + 10000;
    assert_int_equal(ops->clock_mark_advance(g1, base + 1000), 0);
    assert_int_equal(ops->clock_mark_read(g2), base + 1000);
    /* A gateway behind the mark does not lower it. */
    assert_int_equal(ops->clock_mark_advance(g2, base + 500), 0);
    assert_int_equal(ops->clock_mark_read(g1), base + 1000);
    assert_int_equal(ops->clock_mark_advance(g1, base + 1000), 0);
    assert_int_equal(ops->clock_mark_read(g2), base + 1000);
    assert_int_equal(ops->clock_mark_advance(g2, base + 2000), 0);
    assert_int_equal(ops->clock_mark_read(g1), base + 2000);
    /* Values whose low byte crosses 0x7f/0x80 (the OSD compares bytes as
     * signed chars: a binary mark 0x..80 would compare below 0x..7f). */
    int64_t hi = ((base + 2000) | 0xff) + 0x81; /* low byte 0x80 */
    assert_int_equal(ops->clock_mark_advance(g1, hi), 0);
    assert_int_equal(ops->clock_mark_advance(g2, hi - 1), 0);
    assert_int_equal(ops->clock_mark_read(g2), hi);
    assert_int_equal(ops->clock_mark_advance(g2, hi + 0x100), 0);
    assert_int_equal(ops->clock_mark_read(g1), hi + 0x100);
}

/* ---- audit chain ---- */

static void hex(const unsigned char *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

/* "SEQ PREV BODY\n", hashed whole (the test's stand-in for audit.c's JSON). */
static size_t seal(uint64_t seq, const char *body, const char *prev, char *line, size_t cap,
                   char hash[65])
{
    int n = snprintf(line, cap, "%" PRIu64 " %s %s\n", seq, prev, body);
    if (n <= 0 || (size_t)n >= cap)
        return 0;
    unsigned char d[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)line, (size_t)n - 1, d);
    hex(d, sizeof(d), hash);
    return (size_t)n;
}

#define APPENDS 12

struct appender {
    struct strata_meta *m;
    const char *who;
    int fails;
};

static void *append_thread(void *arg)
{
    struct appender *a = arg;
    for (int i = 0; i < APPENDS; i++) {
        char body[64];
        snprintf(body, sizeof(body), "%s-%s-%d", a->who, run, i);
        if (a->m->store->audit_append(a->m, body, seal) != 0)
            a->fails++;
    }
    return NULL;
}

static void test_audit_one_chain(void **state)
{
    (void)state;
    const struct strata_meta__store_ops *ops = g1->store;
    struct strata_meta__audit_found found;
    assert_int_equal(ops->audit_open(g1, NULL, &found), 0);
    assert_int_equal(ops->audit_open(g2, NULL, &found), 0);
    uint64_t before = ops->audit_last_seq(g1);
    struct appender a = {g1, "gw1", 0}, b = {g2, "gw2", 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, append_thread, &a);
    pthread_create(&tb, NULL, append_thread, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_int_equal(a.fails, 0);
    assert_int_equal(b.fails, 0);
    uint64_t after = ops->audit_last_seq(g2);
    assert_int_equal(after, before + 2 * APPENDS);
    assert_int_equal(ops->audit_last_seq(g1), after);

    /* Read the whole chain back as `strata audit` would: seq 1, 2, ...
     * without a gap, each line chained to the one before. */
    char where[4096];
    assert_int_equal(strata_meta__rados_audit_where(where, sizeof(where), &opts), 0);
    struct strata_meta__audit_copy *c;
    assert_int_equal(ops->audit_copy_open(where, &c), 0);
    const char *line;
    size_t len;
    uint64_t seq = 0;
    char prev[65] = "0000000000000000000000000000000000000000000000000000000000000000";
    int mine1 = 0, mine2 = 0;
    while (ops->audit_copy_next(c, &line, &len) == 1) {
        char buf[512];
        assert_true(len > 1 && len < sizeof(buf) && line[len - 1] == '\n');
        memcpy(buf, line, len);
        buf[len - 1] = 0;
        unsigned long long s;
        char p[65], body[256];
        assert_int_equal(sscanf(buf, "%llu %64s %255s", &s, p, body), 3);
        assert_int_equal(s, seq + 1);
        assert_string_equal(p, prev);
        unsigned char d[SHA256_DIGEST_LENGTH];
        SHA256((const unsigned char *)buf, len - 1, d);
        hex(d, sizeof(d), prev);
        seq = s;
        char tag1[64], tag2[64];
        snprintf(tag1, sizeof(tag1), "gw1-%s-", run);
        snprintf(tag2, sizeof(tag2), "gw2-%s-", run);
        mine1 += strncmp(body, tag1, strlen(tag1)) == 0;
        mine2 += strncmp(body, tag2, strlen(tag2)) == 0;
    }
    ops->audit_copy_close(c);
    assert_int_equal(seq, after);
    assert_int_equal(mine1, APPENDS);
    assert_int_equal(mine2, APPENDS);
    uint64_t aseq;
    char ahash[65];
    assert_true(ops->audit_copy_anchor(where, &aseq, ahash));
    assert_int_equal(aseq, after);
    assert_string_equal(ahash, prev);
    /* Segments of AUDIT_SEG entries: the chain spans several objects. */
    char oid[40];
    snprintf(oid, sizeof(oid), "audit.%" PRIu64, (after - 1) / AUDIT_SEG);
    assert_true(obj_exists(g1, oid));
    assert_true(after > AUDIT_SEG);
    ops->audit_close(g1);
    ops->audit_close(g2);
}

/* ---- buckets ---- */

struct creator {
    struct strata_meta *m;
    const char *name;
    uint64_t inc;
    int rc;
    pthread_barrier_t *go;
};

static int create_decide(void *ud, const struct strata_meta__bucket_view *view,
                         enum strata_meta__bucket_edit *edit, struct strata_bucket_info *next)
{
    const struct creator *c = ud;
    if (view->exists)
        return STRATA_EEXISTS;
    memset(next, 0, sizeof(*next));
    snprintf(next->name, sizeof(next->name), "%s", c->name);
    snprintf(next->owner, sizeof(next->owner), "owner-%016" PRIx64, c->inc);
    next->incarnation = c->inc;
    next->created_ms = 1;
    *edit = STRATA_META__BUCKET_PUT;
    return 0;
}

static void *create_thread(void *arg)
{
    struct creator *c = arg;
    struct strata_meta__bucket_txn t = {.name = c->name, .decide = create_decide, .ud = c};
    pthread_barrier_wait(c->go);
    c->rc = c->m->store->bucket_txn(c->m, &t);
    return NULL;
}

static void test_bucket_create_race(void **state)
{
    (void)state;
    char name[64];
    snprintf(name, sizeof(name), "race-%s", run);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 4);
    struct creator c[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (struct creator){.m = i % 2 ? g2 : g1, .name = name,
                                .inc = ((uint64_t)time(NULL) << 16) | (uint64_t)(i + 1),
                                .go = &go};
        pthread_create(&th[i], NULL, create_thread, &c[i]);
    }
    int wins = 0, winner = -1;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        if (c[i].rc == 0) {
            wins++;
            winner = i;
        } else {
            assert_int_equal(c[i].rc, STRATA_EEXISTS);
        }
    }
    pthread_barrier_destroy(&go);
    assert_int_equal(wins, 1);
    struct strata_bucket_info b1, b2;
    assert_int_equal(g1->store->bucket_get(g1, name, &b1), 0);
    assert_int_equal(g2->store->bucket_get(g2, name, &b2), 0);
    assert_int_equal(b1.incarnation, c[winner].inc);
    assert_int_equal(b2.incarnation, c[winner].inc);
    assert_string_equal(b1.owner, b2.owner);
    /* Only the winner's configuration object exists. */
    for (int i = 0; i < 4; i++) {
        char oid[32];
        strata_meta__rados_config_oid(oid, c[i].inc);
        assert_int_equal(obj_exists(g1, oid), i == winner);
    }
}

static int refuse_decide(void *ud, const struct strata_meta__bucket_view *view,
                         enum strata_meta__bucket_edit *edit, struct strata_bucket_info *next)
{
    (void)ud;
    (void)view;
    (void)edit;
    (void)next;
    return STRATA_EINVAL;
}

/* Creates, then its "rule" refuses: as a rule that checks after deciding. */
static int create_then_refuse(void *ud, const struct strata_meta__bucket_view *view,
                              enum strata_meta__bucket_edit *edit, struct strata_bucket_info *next)
{
    int rc = create_decide(ud, view, edit, next);
    return rc ? rc : STRATA_EINVAL;
}

static int raw_record(struct strata_meta *m, const char *name, char **v, size_t *vl)
{
    return strata_meta__rados_get1(raw(m), RADOS_OID_BUCKETS, name, v, vl);
}

static void test_bucket_refusal_leaves_nothing(void **state)
{
    (void)state;
    char name[64];
    snprintf(name, sizeof(name), "refused-%s", run);
    struct creator c = {.m = g1, .name = name, .inc = 0x5eed000000000001ull ^ (uint64_t)time(NULL)};
    struct strata_meta__bucket_txn t = {.name = name, .decide = refuse_decide, .ud = &c};
    assert_int_equal(g1->store->bucket_txn(g1, &t), STRATA_EINVAL);
    t.decide = create_then_refuse;
    assert_int_equal(g1->store->bucket_txn(g1, &t), STRATA_EINVAL);
    assert_int_equal(g2->store->bucket_get(g2, name, NULL), STRATA_ENOTFOUND);
    char oid[32];
    strata_meta__rados_config_oid(oid, c.inc);
    assert_false(obj_exists(g1, oid));

    /* An existing record: a refused change leaves it byte for byte. */
    t.decide = create_decide;
    assert_int_equal(g1->store->bucket_txn(g1, &t), 0);
    char *v0, *v1;
    size_t l0, l1;
    assert_int_equal(raw_record(g1, name, &v0, &l0), 0);
    t.decide = refuse_decide;
    assert_int_equal(g2->store->bucket_txn(g2, &t), STRATA_EINVAL);
    assert_int_equal(raw_record(g1, name, &v1, &l1), 0);
    assert_int_equal(l0, l1);
    assert_memory_equal(v0, v1, l0);
    free(v0);
    free(v1);
    assert_true(obj_exists(g1, oid));
}

static int remove_decide(void *ud, const struct strata_meta__bucket_view *view,
                         enum strata_meta__bucket_edit *edit, struct strata_bucket_info *next)
{
    (void)ud;
    (void)next;
    if (!view->exists)
        return STRATA_ENOTFOUND;
    *edit = STRATA_META__BUCKET_REMOVE;
    return 0;
}

static void test_config_incarnation(void **state)
{
    (void)state;
    char name[64];
    snprintf(name, sizeof(name), "config-%s", run);
    struct strata_bucket_info b = {0};
    snprintf(b.name, sizeof(b.name), "%s", name);
    snprintf(b.owner, sizeof(b.owner), "alice");
    assert_int_equal(strata_meta_bucket_create(g1, &b), 0);
    struct strata_bucket_info cur;
    assert_int_equal(strata_meta_bucket_get(g2, name, &cur), 0);
    assert_string_equal(cur.owner, "alice");
    const char doc[] = "<LifecycleConfiguration/>";
    assert_int_equal(strata_meta_bucket_config_put(g1, name, "lifecycle", doc, sizeof(doc)), 0);
    void *got;
    size_t len;
    assert_int_equal(strata_meta_bucket_config_get(g2, name, "lifecycle", &got, &len), 0);
    assert_int_equal(len, sizeof(doc));
    assert_memory_equal(got, doc, len);
    free(got);
    /* A stale incarnation is refused and changes nothing. */
    assert_int_equal(g2->store->config_put(g2, name, cur.incarnation + 1, "lifecycle", "x", 1),
                     STRATA_ENOTFOUND);
    assert_int_equal(strata_meta_bucket_config_get(g1, name, "lifecycle", &got, &len), 0);
    assert_memory_equal(got, doc, sizeof(doc));
    free(got);
    assert_int_equal(strata_meta_bucket_config_get(g1, name, "cors", &got, &len),
                     STRATA_ENOTFOUND);
    /* Removal takes the documents along; the old incarnation stays dead. */
    struct strata_meta__bucket_txn t = {.name = name, .want_empty = true,
                                        .decide = remove_decide};
    assert_int_equal(g2->store->bucket_txn(g2, &t), 0);
    char oid[32];
    strata_meta__rados_config_oid(oid, cur.incarnation);
    assert_false(obj_exists(g1, oid));
    assert_int_equal(g1->store->config_put(g1, name, cur.incarnation, "lifecycle", "y", 1),
                     STRATA_ENOTFOUND);
    assert_int_equal(strata_meta_bucket_create(g2, &b), 0);
    assert_int_equal(strata_meta_bucket_config_get(g1, name, "lifecycle", &got, &len),
                     STRATA_ENOTFOUND);
    assert_int_equal(g1->store->config_put(g1, name, cur.incarnation, "lifecycle", "y", 1),
                     STRATA_ENOTFOUND);
    assert_int_equal(g2->store->bucket_txn(g2, &t), 0);
    assert_int_equal(g2->store->bucket_txn(g2, &t), STRATA_ENOTFOUND);
}

struct listing {
    char names[8][64];
    int n;
    int seen_other;
};

static int list_cb(const struct strata_bucket_info *b, void *ud)
{
    struct listing *l = ud;
    if (strstr(b->name, run) && strncmp(b->name, "list", 4) == 0 && l->n < 8)
        snprintf(l->names[l->n++], 64, "%s", b->name);
    return 0;
}

static void test_bucket_list(void **state)
{
    (void)state;
    const char *order[] = {"lista", "listb", "listc"};
    for (int i = 2; i >= 0; i--) {
        struct strata_bucket_info b = {0};
        snprintf(b.name, sizeof(b.name), "%s-%s", order[i], run);
        assert_int_equal(strata_meta_bucket_create(i % 2 ? g1 : g2, &b), 0);
    }
    struct listing l = {0};
    assert_int_equal(strata_meta_bucket_list(g1, list_cb, &l), 0);
    assert_int_equal(l.n, 3);
    for (int i = 0; i < 3; i++) {
        char want[64];
        snprintf(want, sizeof(want), "%s-%s", order[i], run);
        assert_string_equal(l.names[i], want);
    }
}

/* A quick latency figure: bucket record changes (read + guarded write). */
static int toggle_decide(void *ud, const struct strata_meta__bucket_view *view,
                         enum strata_meta__bucket_edit *edit, struct strata_bucket_info *next)
{
    (void)ud;
    if (!view->exists)
        return STRATA_ENOTFOUND;
    *next = view->info;
    next->versioning = next->versioning == STRATA_VERSIONING_ENABLED
                           ? STRATA_VERSIONING_SUSPENDED
                           : STRATA_VERSIONING_ENABLED;
    *edit = STRATA_META__BUCKET_PUT;
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_bucket_txn_latency(void **state)
{
    (void)state;
    char name[64];
    snprintf(name, sizeof(name), "lat-%s", run);
    struct strata_bucket_info b = {0};
    snprintf(b.name, sizeof(b.name), "%s", name);
    assert_int_equal(strata_meta_bucket_create(g1, &b), 0);
    enum { N = 200 };
    int64_t us[N];
    struct strata_meta__bucket_txn t = {.name = name, .decide = toggle_decide};
    for (int i = 0; i < N; i++) {
        int64_t t0 = mono_us();
        assert_int_equal(g1->store->bucket_txn(g1, &t), 0);
        us[i] = mono_us() - t0;
    }
    qsort(us, N, sizeof(us[0]), cmp_i64);
    print_message("bucket_txn (read + guarded write), %d changes: p50 %" PRId64 " us, p99 %" PRId64
                  " us\n",
                  N, us[N / 2], us[N * 99 / 100]);
}

/* ---- leases ---- */

static void test_lease(void **state)
{
    (void)state;
    char name[32];
    snprintf(name, sizeof(name), "t%s", run);
    assert_int_equal(strata_meta_lease(g1, name, STRATA_LEASE_TAKE), 0);
    assert_int_equal(strata_meta_lease(g2, name, STRATA_LEASE_TAKE), STRATA_EBUSY);
    assert_int_equal(strata_meta_lease(g2, name, STRATA_LEASE_RENEW), STRATA_EBUSY);
    assert_int_equal(strata_meta_lease(g1, name, STRATA_LEASE_TAKE), 0); /* held: renews */
    assert_int_equal(strata_meta_lease(g1, name, STRATA_LEASE_RENEW), 0);
    /* g2 releasing a lease it does not hold changes nothing. */
    assert_int_equal(strata_meta_lease(g2, name, STRATA_LEASE_RELEASE), 0);
    assert_int_equal(strata_meta_lease(g2, name, STRATA_LEASE_TAKE), STRATA_EBUSY);
    /* g1 stops renewing (as if killed): g2 polls and takes over once the
     * lease expired, not before. */
    int64_t t0 = mono_ms(), took = -1;
    while (mono_ms() - t0 < 3 * LEASE_MS) {
        if (strata_meta_lease(g2, name, STRATA_LEASE_TAKE) == 0) {
            took = mono_ms() - t0;
            break;
        }
        usleep(100 * 1000);
    }
    print_message("lease takeover %" PRId64 " ms after the holder stopped renewing (lease %d ms)\n",
                  took, LEASE_MS);
    assert_true(took >= LEASE_MS - 300 && took <= LEASE_MS + 1500);
    /* The old holder learns it lost the lease. */
    assert_int_equal(strata_meta_lease(g1, name, STRATA_LEASE_RENEW), STRATA_EBUSY);
    assert_int_equal(strata_meta_lease(g1, name, STRATA_LEASE_TAKE), STRATA_EBUSY);
    assert_int_equal(strata_meta_lease(g2, name, STRATA_LEASE_RENEW), 0);
    /* Released: the other takes it at once. */
    assert_int_equal(strata_meta_lease(g2, name, STRATA_LEASE_RELEASE), 0);
    assert_int_equal(strata_meta_lease(g1, name, STRATA_LEASE_TAKE), 0);
    assert_int_equal(strata_meta_lease(g2, name, STRATA_LEASE_TAKE), STRATA_EBUSY);
    assert_int_equal(strata_meta_lease(g1, name, STRATA_LEASE_RELEASE), 0);
    assert_int_equal(strata_meta_lease(g1, name, STRATA_LEASE_RELEASE), 0); /* not held: 0 */
    assert_int_equal(strata_meta_lease(g1, "Bad/Name", STRATA_LEASE_TAKE), STRATA_EINVAL);
}

/* ---- invalidation ---- */

struct heard {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char bucket[STRATA_BUCKET_NAME_MAX + 1];
    int n;
    int64_t at_us;
};

static void on_inval(void *ud, const char *bucket)
{
    struct heard *h = ud;
    pthread_mutex_lock(&h->mu);
    snprintf(h->bucket, sizeof(h->bucket), "%s", bucket);
    h->n++;
    h->at_us = mono_us();
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

static void test_invalidate(void **state)
{
    (void)state;
    struct heard h2 = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    struct heard h1 = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    assert_int_equal(g2->store->on_invalidate(g2, on_inval, &h2), 0);
    assert_int_equal(g1->store->on_invalidate(g1, on_inval, &h1), 0);
    char name[64];
    snprintf(name, sizeof(name), "inval-%s", run);
    int64_t t0 = mono_us();
    assert_int_equal(g1->store->invalidate(g1, name), 0);
    int64_t ret_us = mono_us() - t0;
    /* Acked before invalidate returns: the callback already ran. */
    pthread_mutex_lock(&h2.mu);
    assert_int_equal(h2.n, 1);
    assert_string_equal(h2.bucket, name);
    int64_t lat = h2.at_us - t0;
    pthread_mutex_unlock(&h2.mu);
    print_message("invalidate: heard by the other gateway after %" PRId64
                  " us, returned after %" PRId64 " us\n",
                  lat, ret_us);
    assert_true(lat < 1000000);
    pthread_mutex_lock(&h1.mu);
    assert_int_equal(h1.n, 0); /* not its own change */
    pthread_mutex_unlock(&h1.mu);
    /* Unregistered: no more callbacks. */
    assert_int_equal(g2->store->on_invalidate(g2, NULL, NULL), 0);
    assert_int_equal(g1->store->invalidate(g1, name), 0);
    pthread_mutex_lock(&h2.mu);
    assert_int_equal(h2.n, 1);
    pthread_mutex_unlock(&h2.mu);
    /* And the other way round. */
    assert_int_equal(g2->store->invalidate(g2, "other"), 0);
    pthread_mutex_lock(&h1.mu);
    assert_int_equal(h1.n, 1);
    assert_string_equal(h1.bucket, "other");
    pthread_mutex_unlock(&h1.mu);
    assert_int_equal(g1->store->on_invalidate(g1, NULL, NULL), 0);
}

static void skip_reason(void **state)
{
    (void)state;
    skip();
}

int main(void)
{
    opts.conf = getenv("STRATA_TEST_RADOS_CONF");
    opts.id = getenv("STRATA_TEST_RADOS_ID");
    opts.prefix = getenv("STRATA_TEST_RADOS_PREFIX");
    if (!opts.conf || !*opts.conf) {
        print_message("test_store_rados: skipped: STRATA_TEST_RADOS_CONF is not set (a Ceph "
                      "cluster prepared with `strata rados init`; "
                      "tests/integration/test_rados_store.py sets it)\n");
        const struct CMUnitTest skipped[] = {cmocka_unit_test(skip_reason)};
        cmocka_run_group_tests(skipped, NULL, NULL);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state),
        cmocka_unit_test(test_clock_forward_only),
        cmocka_unit_test(test_audit_one_chain),
        cmocka_unit_test(test_bucket_create_race),
        cmocka_unit_test(test_bucket_refusal_leaves_nothing),
        cmocka_unit_test(test_config_incarnation),
        cmocka_unit_test(test_bucket_list),
        cmocka_unit_test(test_bucket_txn_latency),
        cmocka_unit_test(test_lease),
        cmocka_unit_test(test_invalidate),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
