/*
 * test_store_rados.c - the RADOS backend behind the store seam (store.h),
 * on a real Ceph cluster: two connections (two "gateways") to one cluster.
 * State documents; the clock's mark only moving forward; one unbroken
 * audit chain from appends interleaved by both gateways (across segment
 * boundaries: segments of 5 entries here); the create race of a bucket
 * (2 threads on each connection: exactly one creator, no leftover of the
 * losers, index shards included); a refused decide leaving nothing;
 * configuration tied to the bucket's incarnation; leases (one holder, takeover after expiry with a
 * 3 s lease, release); invalidation reaching the other gateway within 1 s.
 * Versions in the index shards: key_txn PUT / REWRITE / REMOVE and
 * key_read across both gateways, the If-None-Match race (8 writers, 20
 * rounds), refusals leaving the omap byte-identical, a bucket deletion
 * closing its shards, CURRENT / VERSIONS scans over 8 shards with prefix,
 * after and skip_past (omap entries read counted), and the figures of a
 * PUT commit and a page of 1,000 (printed).  The due index: DUE scans
 * over 8 shards (ranges, bounds, oldest first), e/ entries removed with
 * their version (a delete, an overwritten null version); transition
 * intents: written, found by the INTENTS scan as a crash leaves them,
 * resolved by strata_meta_transition_reclaim either way (switched or not:
 * the losing copy queued in g/ in the same op), resolved twice but queued
 * once; the DUE scan over 10,000 versions (printed).
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

#include "strata/hex.h"

#include "rados/index.h"
#include "rados/rados.h"
#include "rados_test_env.h"

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

/* Lines collected (NUL-terminated copies). */
struct lines {
    char **v;
    size_t n;
};

static void lines_add(struct lines *l, const char *line, size_t len)
{
    l->v = realloc(l->v, (l->n + 1) * sizeof(*l->v));
    assert_non_null(l->v);
    l->v[l->n] = strndup(line, len);
    assert_non_null(l->v[l->n]);
    l->n++;
}

static void lines_fini(struct lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static int tail_line(void *ud, const char *line, size_t len)
{
    lines_add(ud, line, len);
    return 0;
}

static int tail_stop_after_2(void *ud, const char *line, size_t len)
{
    struct lines *l = ud;
    lines_add(l, line, len);
    return l->n == 2;
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
    struct lines all = {0};
    while (ops->audit_copy_next(c, &line, &len) == 1) {
        char buf[512];
        assert_true(len > 1 && len < sizeof(buf) && line[len - 1] == '\n');
        lines_add(&all, line, len);
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
    /* The admin API's tail: the last entries, oldest first, from either
     * gateway, byte for byte what the chain holds (across segments). */
    assert_int_equal(all.n, after);
    for (unsigned tn = 1; tn <= after + 3; tn += 4) {
        struct lines t1 = {0}, t2 = {0};
        char w1[64], w2[64];
        assert_int_equal(strata_meta_audit_tail(g1, tn, tail_line, &t1, w1, sizeof(w1)), 0);
        assert_int_equal(strata_meta_audit_tail(g2, tn, tail_line, &t2, w2, sizeof(w2)), 0);
        char pool[80];
        snprintf(pool, sizeof(pool), "%s.meta", meta_rados_of(g1)->prefix);
        assert_string_equal(w1, pool);
        size_t want = tn < after ? tn : after;
        assert_int_equal(t1.n, want);
        assert_int_equal(t2.n, want);
        for (size_t i = 0; i < want; i++) {
            assert_string_equal(t1.v[i], all.v[after - want + i]);
            assert_string_equal(t2.v[i], all.v[after - want + i]);
        }
        lines_fini(&t1);
        lines_fini(&t2);
    }
    struct lines one = {0}; /* the callback stops it */
    char w[64];
    assert_int_equal(strata_meta_audit_tail(g1, 9, tail_stop_after_2, &one, w, sizeof(w)), 0);
    assert_int_equal(one.n, 2);
    assert_string_equal(one.v[0], all.v[after - 9]);
    lines_fini(&one);
    lines_fini(&all);
    ops->audit_close(g1);
    ops->audit_close(g2);
}

/* ---- buckets ---- */

struct creator {
    struct strata_meta *m;
    const char *name;
    uint64_t inc;
    int versioning;
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
    next->versioning = c->versioning;
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
        for (unsigned sh = 0; sh < RADOS_IDX_SHARDS; sh++) { /* and its index shards */
            char ioid[48];
            strata_meta__rados_idx_oid(ioid, c[i].inc, sh);
            assert_int_equal(obj_exists(g1, ioid), i == winner);
        }
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

/* ---- keys: versions in the index shards ---- */

static int get_body(struct strata_meta *m, const char *b, const char *k, const char *vid,
                    struct strata_obj_info *info, char *out, size_t cap);

/* A bucket of this run for the key tests; returns its incarnation. */
static uint64_t mk_bucket_v(const char *name, int versioning)
{
    static unsigned seq;
    struct creator c = {.m = g1, .name = name, .versioning = versioning,
                        .inc = ((uint64_t)time(NULL) << 24) | ((uint64_t)getpid() << 8) | ++seq};
    struct strata_meta__bucket_txn t = {.name = name, .decide = create_decide, .ud = &c};
    assert_int_equal(g1->store->bucket_txn(g1, &t), 0);
    return c.inc;
}

static uint64_t mk_bucket(const char *name)
{
    return mk_bucket_v(name, STRATA_VERSIONING_OFF);
}

/* A new inline version through the rules' own decide (object.c). */
struct putc {
    struct meta_rec rec;
    const char *data;
    size_t len;
    bool inm;
    int versioning;
    uint8_t sk[16];
};

static int put_decide(void *ud, const struct strata_meta__key_view *v,
                      struct strata_meta__key_edit *e)
{
    struct putc *p = ud;
    int rc = strata_meta__version_decide(v, p->versioning, &p->rec, NULL, p->inm, e);
    if (rc == 0) {
        e->inline_data = p->data;
        e->inline_len = p->len;
        memcpy(p->sk, e->sk, 16);
    }
    return rc;
}

static int put_key_v(struct strata_meta *m, const char *bucket, uint64_t inc, const char *key,
                     const char *data, bool inm, uint8_t sk[16], int versioning)
{
    struct putc p;
    memset(&p, 0, sizeof(p));
    p.rec.flags = REC_F_INLINE;
    p.rec.size = strlen(data);
    snprintf(p.rec.etag, sizeof(p.rec.etag), "e-%s", data);
    snprintf(p.rec.storage_class, sizeof(p.rec.storage_class), "STANDARD");
    p.data = data;
    p.len = strlen(data);
    p.inm = inm;
    p.versioning = versioning;
    struct strata_meta__key_txn t = {
        .bucket = bucket, .key = key, .incarnation = inc, .hold_bucket = true,
        .want = strata_meta__version_want(p.versioning), .decide = put_decide, .ud = &p};
    int rc = m->store->key_txn(m, &t);
    if (rc == 0 && sk)
        memcpy(sk, p.sk, 16);
    return rc;
}

static int put_key(struct strata_meta *m, const char *bucket, uint64_t inc, const char *key,
                   const char *data, bool inm, uint8_t sk[16])
{
    return put_key_v(m, bucket, inc, key, data, inm, sk, STRATA_VERSIONING_ENABLED);
}

/* What key_read saw of one slot. */
struct seen {
    int rc;
    uint8_t sk[16];
    char etag[STRATA_ETAG_MAX + 1];
    char data[64];
    size_t tags_len;
    char sc[32];
};

static int read_decide(void *ud, const struct strata_meta__key_view *v,
                       struct strata_meta__key_edit *e)
{
    (void)e;
    struct seen *s = ud;
    const struct strata_meta__key_slot *sl = v->version.rc != STRATA_ENOTFOUND || !v->latest.rec
                                                 ? &v->version : &v->latest;
    if (v->latest.rec && v->version.rc == STRATA_ENOTFOUND && !v->version.rec)
        sl = &v->latest;
    s->rc = sl->rc;
    if (sl->rc == 0) {
        memcpy(s->sk, sl->sk, 16);
        snprintf(s->etag, sizeof(s->etag), "%s", sl->rec->etag);
        size_t n = sl->rec->shard_len < sizeof(s->data) - 1 ? sl->rec->shard_len : 0;
        if (n) /* a multipart version has no bytes in its record */
            memcpy(s->data, sl->rec->shard, n);
        s->data[n] = 0;
        s->tags_len = sl->rec->tags_len;
        snprintf(s->sc, sizeof(s->sc), "%s", sl->rec->storage_class);
    }
    return 0;
}

static struct seen read_latest(struct strata_meta *m, const char *bucket, const char *key)
{
    struct seen s = {.rc = -1};
    struct strata_meta__key_txn t = {.bucket = bucket, .key = key,
                                     .want = STRATA_META__KEY_LATEST, .decide = read_decide,
                                     .ud = &s};
    assert_int_equal(m->store->key_read(m, &t), 0);
    return s;
}

/* Every omap entry of an object, as one byte string (keys and values). */
static size_t omap_dump(struct strata_meta *m, const char *oid, char *out, size_t cap)
{
    size_t o = 0;
    char after[RADOS_IKEY_MAX + 2] = "";
    unsigned char more = 1;
    while (more) {
        rados_read_op_t op = rados_create_read_op();
        rados_omap_iter_t it;
        int pr = 0;
        rados_read_op_omap_get_vals2(op, after, "", 500, &it, &more, &pr);
        assert_int_equal(rados_read_op_operate(op, raw(m), oid, 0), 0);
        char *k, *v;
        size_t vl;
        while (rados_omap_get_next(it, &k, &v, &vl) == 0 && k) {
            size_t kl = strlen(k);
            assert_true(o + kl + vl + 2 < cap);
            memcpy(out + o, k, kl + 1);
            o += kl + 1;
            if (vl) /* e/ entries are empty (v may be NULL) */
                memcpy(out + o, v, vl);
            o += vl;
            out[o++] = '\n';
            snprintf(after, sizeof(after), "%s", k);
        }
        rados_omap_get_end(it);
        rados_release_read_op(op);
    }
    return o;
}

static void key_oid(char oid[48], uint64_t inc, const char *key)
{
    strata_meta__rados_idx_oid(oid, inc, strata_meta__rados_idx_shard(key, strlen(key)));
}

static void test_key_put_read(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "keys-%s", run);
    uint64_t inc = mk_bucket(b);
    uint8_t sk1[16], sk2[16];
    assert_int_equal(put_key(g1, b, inc, "dir/a\x01x", "hello", false, sk1), 0);
    /* The other gateway reads it, bytes included. */
    struct seen s = read_latest(g2, b, "dir/a\x01x");
    assert_int_equal(s.rc, 0);
    assert_memory_equal(s.sk, sk1, 16);
    assert_string_equal(s.etag, "e-hello");
    assert_string_equal(s.data, "hello");
    /* A second version becomes the latest; the head names it. */
    assert_int_equal(put_key(g2, b, inc, "dir/a\x01x", "world", false, sk2), 0);
    s = read_latest(g1, b, "dir/a\x01x");
    assert_string_equal(s.data, "world");
    char oid[48], hk[RADOS_IKEY_MAX], hex[33], *v;
    size_t vl;
    key_oid(oid, inc, "dir/a\x01x");
    strata_meta__rados_ikey(hk, 'h', "dir/a\x01x", 7);
    assert_string_equal(hk, "h/dir/a\x02\x01x\x01");
    assert_int_equal(strata_meta__rados_get1(raw(g1), oid, hk, &v, &vl), 0);
    strata_meta__rados_sk_hex(sk2, hex);
    /* The head: the latest's sort key, then its record without the bytes. */
    assert_true(vl > 32);
    assert_memory_equal(v, hex, 32);
    struct meta_rec hr;
    assert_int_equal(strata_meta__rec_decode(v + 32, vl - 32, false, &hr), 0);
    assert_string_equal(hr.etag, "e-world");
    assert_int_equal(hr.size, 5);
    assert_int_equal(hr.shard_len, 0);
    strata_meta__rec_fini(&hr);
    free(v);
    /* A version commit for an incarnation that never was is refused (the
     * bucket exists under another: 503, retried, never NoSuchBucket), and
     * leaves no shard behind. */
    assert_int_equal(put_key(g1, b, inc + 1, "dir/a\x01x", "stale", false, NULL),
                     STRATA_EBUSY);
    key_oid(oid, inc + 1, "dir/a\x01x");
    assert_false(obj_exists(g1, oid));
    /* The shards come with the bucket. */
    for (unsigned i = 0; i < RADOS_IDX_SHARDS; i++) {
        strata_meta__rados_idx_oid(oid, inc, i);
        assert_true(obj_exists(g1, oid));
    }
}

#define INM_THREADS 8
#define INM_ROUNDS 20

struct inm_arg {
    struct strata_meta *m;
    const char *bucket, *key;
    uint64_t inc;
    char data[16];
    int rc;
    pthread_barrier_t *go;
};

static void *inm_thread(void *a)
{
    struct inm_arg *x = a;
    pthread_barrier_wait(x->go);
    x->rc = put_key(x->m, x->bucket, x->inc, x->key, x->data, true, NULL);
    return NULL;
}

static void test_key_if_none_match_race(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "inm-%s", run);
    uint64_t inc = mk_bucket(b);
    for (int round = 0; round < INM_ROUNDS; round++) {
        char key[32];
        snprintf(key, sizeof(key), "race/%02d", round);
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, INM_THREADS);
        struct inm_arg a[INM_THREADS];
        pthread_t th[INM_THREADS];
        for (int i = 0; i < INM_THREADS; i++) {
            a[i] = (struct inm_arg){.m = i % 2 ? g2 : g1, .bucket = b, .key = key, .inc = inc,
                                    .go = &go};
            snprintf(a[i].data, sizeof(a[i].data), "w%d", i);
            pthread_create(&th[i], NULL, inm_thread, &a[i]);
        }
        int wins = 0, winner = -1;
        for (int i = 0; i < INM_THREADS; i++) {
            pthread_join(th[i], NULL);
            if (a[i].rc == 0) {
                wins++;
                winner = i;
            } else {
                assert_int_equal(a[i].rc, STRATA_EPRECOND);
            }
        }
        pthread_barrier_destroy(&go);
        assert_int_equal(wins, 1);
        struct seen s = read_latest(g2, b, key);
        assert_string_equal(s.data, a[winner].data);
    }
}

struct tag_ud {
    const char *tags;
};

static int tags_cb(void *ud, const uint8_t *sk, const struct meta_rec *cur, struct meta_edit *e)
{
    (void)sk;
    (void)cur;
    const struct tag_ud *t = ud;
    e->tags = t->tags;
    e->tags_len = strlen(t->tags);
    return 0;
}

static int refuse_cb(void *ud, const uint8_t *sk, const struct meta_rec *cur, struct meta_edit *e)
{
    (void)ud;
    (void)sk;
    (void)cur;
    (void)e;
    return STRATA_ELOCKED;
}

static int remove_version_decide(void *ud, const struct strata_meta__key_view *v,
                                 struct strata_meta__key_edit *e)
{
    (void)ud;
    if (v->version.rc)
        return v->version.rc;
    e->op = STRATA_META__KEY_REMOVE;
    e->replace = STRATA_META__SLOT_VERSION;
    e->tomb_ns = v->now_ns;
    return 0;
}

static void test_key_rewrite_remove(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "rw-%s", run);
    uint64_t inc = mk_bucket(b);
    uint8_t sk1[16], sk2[16];
    assert_int_equal(put_key(g1, b, inc, "obj", "one", false, sk1), 0);
    assert_int_equal(put_key(g1, b, inc, "obj", "two", false, sk2), 0);
    char vid1[STRATA_VERSION_ID_MAX + 1], vid2[STRATA_VERSION_ID_MAX + 1], got[64];
    strata_meta__vid_format(sk1, vid1);
    strata_meta__vid_format(sk2, vid2);
    /* Tags on the older version: its other fields stay. */
    struct tag_ud tu = {"k=v&a=b"};
    assert_int_equal(strata_meta__rec_rewrite(g2, b, "obj", vid1, tags_cb, &tu, got, NULL), 0);
    assert_string_equal(got, vid1);
    struct seen s = {.rc = -1};
    struct strata_meta__key_txn rt = {.bucket = b, .key = "obj", .want = STRATA_META__KEY_VERSION,
                                      .version_id = vid1, .decide = read_decide, .ud = &s};
    assert_int_equal(g1->store->key_read(g1, &rt), 0);
    assert_int_equal(s.rc, 0);
    assert_memory_equal(s.sk, sk1, 16);
    assert_int_equal(s.tags_len, strlen("k=v&a=b"));
    assert_string_equal(s.etag, "e-one");
    assert_string_equal(s.data, "one");
    assert_string_equal(s.sc, "STANDARD");
    /* The latest is still the newer one. */
    assert_string_equal(read_latest(g1, b, "obj").data, "two");
    /* A rewrite refused by its rule changes nothing, byte for byte. */
    char oid[48];
    key_oid(oid, inc, "obj");
    static char before[1 << 16], after[1 << 16];
    size_t bl = omap_dump(g1, oid, before, sizeof(before));
    assert_int_equal(strata_meta__rec_rewrite(g1, b, "obj", vid2, refuse_cb, NULL, NULL, NULL),
                     STRATA_ELOCKED);
    /* And so does a PUT refused by If-None-Match. */
    assert_int_equal(put_key(g2, b, inc, "obj", "three", true, NULL), STRATA_EPRECOND);
    size_t al = omap_dump(g1, oid, after, sizeof(after));
    assert_int_equal(al, bl);
    assert_memory_equal(after, before, bl);
    /* REMOVE of the latest: the head moves to the older version. */
    struct strata_meta__key_txn rm = {.bucket = b, .key = "obj", .want = STRATA_META__KEY_VERSION,
                                      .version_id = vid2, .decide = remove_version_decide};
    assert_int_equal(g2->store->key_txn(g2, &rm), 0);
    s = read_latest(g1, b, "obj");
    assert_int_equal(s.rc, 0);
    assert_string_equal(s.data, "one");
    assert_int_equal(g2->store->key_txn(g2, &rm), STRATA_ENOTFOUND); /* gone for good */
    /* REMOVE of the last version: nothing of the key is left. */
    rm.version_id = vid1;
    assert_int_equal(g1->store->key_txn(g1, &rm), 0);
    assert_int_equal(read_latest(g2, b, "obj").rc, STRATA_ENOTFOUND);
    char hk[RADOS_IKEY_MAX], *v;
    size_t vl;
    strata_meta__rados_ikey(hk, 'h', "obj", 3);
    assert_int_equal(strata_meta__rados_get1(raw(g1), oid, hk, &v, &vl), STRATA_ENOTFOUND);
    assert_int_equal(omap_dump(g1, oid, after, sizeof(after)), 0);
}

/* DeleteBucket's rule, reporting what it saw in ud. */
static int delete_empty_decide(void *ud, const struct strata_meta__bucket_view *view,
                               enum strata_meta__bucket_edit *edit,
                               struct strata_bucket_info *next)
{
    (void)next;
    *(bool *)ud = view->empty;
    *edit = STRATA_META__BUCKET_REMOVE;
    return view->empty ? 0 : STRATA_ENOTEMPTY;
}

static int remove_vid(struct strata_meta *m, const char *bucket, const char *key,
                      const uint8_t sk[16])
{
    char vid[STRATA_VERSION_ID_MAX + 1];
    strata_meta__vid_format(sk, vid);
    struct strata_meta__key_txn rm = {.bucket = bucket, .key = key,
                                      .want = STRATA_META__KEY_VERSION, .version_id = vid,
                                      .decide = remove_version_decide};
    return m->store->key_txn(m, &rm);
}

static void test_bucket_delete_closes_shards(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "del-%s", run);
    uint64_t inc = mk_bucket(b);
    uint8_t sk1[16], sk2[16];
    assert_int_equal(put_key(g1, b, inc, "k1", "v1", false, sk1), 0);
    bool saw_empty = true;
    struct strata_meta__bucket_txn del = {.name = b, .want_empty = true,
                                          .decide = delete_empty_decide, .ud = &saw_empty};
    /* Not empty: refused, and the shards open again. */
    assert_int_equal(g2->store->bucket_txn(g2, &del), STRATA_ENOTEMPTY);
    assert_false(saw_empty);
    assert_int_equal(put_key(g2, b, inc, "k2", "v2", false, sk2), 0);
    char oid[48], *v;
    size_t vl;
    key_oid(oid, inc, "k2");
    assert_int_equal(strata_meta__rados_get1(raw(g1), oid, RADOS_LAYOUT_KEY, &v, &vl),
                     STRATA_ENOTFOUND);
    /* While the shards are closed (a deletion between its close and its
     * outcome) a commit lands nothing and says SlowDown. */
    bool empty = true;
    assert_int_equal(strata_meta__rados_shards_close(meta_rados_of(g1), inc, &empty), 0);
    assert_false(empty);
    static char before[1 << 14], after[1 << 14];
    size_t bl = omap_dump(g1, oid, before, sizeof(before));
    assert_int_equal(put_key(g2, b, inc, "k2", "v3", false, NULL), STRATA_EBUSY);
    assert_int_equal(omap_dump(g1, oid, after, sizeof(after)), bl);
    assert_memory_equal(after, before, bl);
    strata_meta__rados_shards_open(meta_rados_of(g1), inc);
    /* Empty: deleted; its shards stay closed and its commits are refused. */
    assert_int_equal(remove_vid(g1, b, "k1", sk1), 0);
    assert_int_equal(remove_vid(g1, b, "k2", sk2), 0);
    assert_int_equal(g2->store->bucket_txn(g2, &del), 0);
    assert_true(saw_empty);
    assert_int_equal(strata_meta__rados_get1(raw(g1), oid, RADOS_LAYOUT_KEY, &v, &vl), 0);
    assert_string_equal(v, "closed");
    free(v);
    assert_int_equal(put_key(g1, b, inc, "k3", "v", false, NULL), STRATA_ENOTFOUND);
}

/* An unversioned bucket: a PUT replaces the null version (one entry left). */
static void test_key_unversioned_overwrite(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "unv-%s", run);
    uint64_t inc = mk_bucket(b);
    for (int i = 0; i < 3; i++) {
        char d[8];
        snprintf(d, sizeof(d), "d%d", i);
        assert_int_equal(put_key_v(i % 2 ? g2 : g1, b, inc, "same", d, false, NULL,
                                   STRATA_VERSIONING_OFF), 0);
    }
    struct strata_meta__scan *sc;
    struct strata_meta__scan_spec ver = {.bucket = b, .kind = STRATA_META__SCAN_VERSIONS};
    assert_int_equal(g1->store->scan_open(g1, &ver, &sc), 0);
    struct strata_meta__scan_ent e;
    assert_int_equal(g1->store->scan_next(sc, &e), 1);
    assert_string_equal(e.key, "same");
    assert_string_equal(e.info->version_id, "null");
    assert_string_equal(e.info->etag, "e-d2");
    assert_int_equal(g1->store->scan_next(sc, &e), 0);
    g1->store->scan_close(sc);
    struct seen s = {.rc = -1};
    struct strata_meta__key_txn rt = {.bucket = b, .key = "same", .want = STRATA_META__KEY_VERSION,
                                      .version_id = "null", .decide = read_decide, .ud = &s};
    assert_int_equal(g2->store->key_read(g2, &rt), 0);
    assert_int_equal(s.rc, 0);
    assert_string_equal(s.data, "d2");
}

/* ---- scans ---- */

#define SCAN_PREFIXES 50
#define SCAN_PER 40
#define SCAN_TWICE 100 /* keys with a second version */

static char scan_bucket[64];

static void scan_fill(void)
{
    if (scan_bucket[0])
        return;
    snprintf(scan_bucket, sizeof(scan_bucket), "scan-%s", run);
    uint64_t inc = mk_bucket(scan_bucket);
    for (int p = 0; p < SCAN_PREFIXES; p++)
        for (int k = 0; k < SCAN_PER; k++) {
            char key[32];
            snprintf(key, sizeof(key), "p%02d/k%04d", p, k);
            assert_int_equal(put_key((p + k) % 2 ? g2 : g1, scan_bucket, inc, key, "a", false,
                                     NULL), 0);
        }
    for (int i = 0; i < SCAN_TWICE; i++) {
        char key[32];
        snprintf(key, sizeof(key), "p%02d/k%04d", i % SCAN_PREFIXES, i / SCAN_PREFIXES);
        assert_int_equal(put_key(g1, scan_bucket, inc, key, "b", false, NULL), 0);
    }
}

/* Walk a scan: entries, checking key order (and newest first within a
 * key); *last gets the last key. */
static int walk(struct strata_meta__scan *sc, bool versions, char *first, int *twice)
{
    struct strata_meta__scan_ent e;
    char prev[STRATA_KEY_MAX + 1] = "";
    uint8_t prev_sk[16] = {0};
    int n = 0, rc;
    while ((rc = g1->store->scan_next(sc, &e)) == 1) {
        int c = strcmp(prev, e.key);
        if (n)
            assert_true(versions ? c <= 0 : c < 0);
        if (versions && n && c == 0)
            assert_true(memcmp(prev_sk, e.sk, 16) < 0);
        if (versions)
            memcpy(prev_sk, e.sk, 16);
        if (n == 0 && first)
            strcpy(first, e.key);
        if (twice && strcmp(e.info->etag, "e-b") == 0)
            (*twice)++;
        snprintf(prev, sizeof(prev), "%s", e.key);
        n++;
    }
    assert_int_equal(rc, 0);
    return n;
}

static void test_scan_order(void **state)
{
    (void)state;
    scan_fill();
    struct strata_meta__scan *sc;
    struct strata_meta__scan_spec cur = {.bucket = scan_bucket, .kind = STRATA_META__SCAN_CURRENT};
    assert_int_equal(g2->store->scan_open(g2, &cur, &sc), 0);
    int twice = 0;
    char first[64];
    assert_int_equal(walk(sc, false, first, &twice), SCAN_PREFIXES * SCAN_PER);
    assert_int_equal(twice, SCAN_TWICE); /* CURRENT shows each key's newest */
    assert_string_equal(first, "p00/k0000");
    g2->store->scan_close(sc);
    struct strata_meta__scan_spec ver = {.bucket = scan_bucket,
                                         .kind = STRATA_META__SCAN_VERSIONS};
    assert_int_equal(g1->store->scan_open(g1, &ver, &sc), 0);
    twice = 0;
    assert_int_equal(walk(sc, true, NULL, &twice), SCAN_PREFIXES * SCAN_PER + SCAN_TWICE);
    assert_int_equal(twice, SCAN_TWICE);
    g1->store->scan_close(sc);
    /* prefix + after: the keys of p07/ past k0010. */
    cur.prefix = "p07/";
    cur.after = "p07/k0010";
    assert_int_equal(g1->store->scan_open(g1, &cur, &sc), 0);
    assert_int_equal(walk(sc, false, first, NULL), SCAN_PER - 11);
    assert_string_equal(first, "p07/k0011");
    g1->store->scan_close(sc);
    /* VERSIONS after one version of a key with two: its older one follows. */
    char okey[32];
    snprintf(okey, sizeof(okey), "p03/k0000"); /* i = 3: has a second version */
    struct strata_meta__scan_spec v1 = {.bucket = scan_bucket, .kind = STRATA_META__SCAN_VERSIONS,
                                        .prefix = "p03/", .after = okey};
    assert_int_equal(g1->store->scan_open(g1, &v1, &sc), 0);
    assert_int_equal(walk(sc, true, first, NULL), SCAN_PER - 1 + 1); /* k0001 has 2 (i=53) */
    g1->store->scan_close(sc);
    struct strata_meta__scan_spec v0 = v1;
    v0.after = NULL;
    assert_int_equal(g1->store->scan_open(g1, &v0, &sc), 0);
    struct strata_meta__scan_ent e;
    assert_int_equal(g1->store->scan_next(sc, &e), 1);
    assert_string_equal(e.key, okey);
    uint8_t newest[16];
    memcpy(newest, e.sk, 16);
    g1->store->scan_close(sc);
    v1.after_sk = newest;
    assert_int_equal(g1->store->scan_open(g1, &v1, &sc), 0);
    assert_int_equal(g1->store->scan_next(sc, &e), 1);
    assert_string_equal(e.key, okey);
    assert_true(memcmp(e.sk, newest, 16) > 0);
    assert_string_equal(e.info->etag, "e-a");
    g1->store->scan_close(sc);
}

static void test_scan_skip_past(void **state)
{
    (void)state;
    scan_fill();
    struct strata_meta__scan *sc;
    struct strata_meta__scan_spec cur = {.bucket = scan_bucket, .kind = STRATA_META__SCAN_CURRENT};
    /* A delimiter listing: one entry per common prefix, then a seek. */
    uint64_t v0 = strata_meta__rados_scan_visited();
    assert_int_equal(g1->store->scan_open(g1, &cur, &sc), 0);
    struct strata_meta__scan_ent e;
    int n = 0, rc;
    while ((rc = g1->store->scan_next(sc, &e)) == 1) {
        char p[16];
        snprintf(p, sizeof(p), "p%02d/", n % 100);
        assert_memory_equal(e.key, p, 4);
        n++;
        g1->store->scan_skip_past(sc, e.key, 4);
    }
    assert_int_equal(rc, 0);
    g1->store->scan_close(sc);
    uint64_t skip_visited = strata_meta__rados_scan_visited() - v0;
    assert_int_equal(n, SCAN_PREFIXES);
    /* The plain walk reads one entry per key (its head), not its versions. */
    v0 = strata_meta__rados_scan_visited();
    assert_int_equal(g1->store->scan_open(g1, &cur, &sc), 0);
    walk(sc, false, NULL, NULL);
    g1->store->scan_close(sc);
    uint64_t walk_visited = strata_meta__rados_scan_visited() - v0;
    print_message("scan: delimiter listing read %" PRIu64 " omap entries, a full walk %" PRIu64
                  "\n", skip_visited, walk_visited);
    assert_int_equal(walk_visited, SCAN_PREFIXES * SCAN_PER);
    assert_true(skip_visited * 2 < walk_visited);
}

/* One page of scan s as list.c reads it: up to max entries, taking one
 * more to know whether it is truncated; keep(i, e, ud) for each one it
 * shows.  Returns how many it shows. */
static int page_run(struct strata_meta *m, const struct strata_meta__scan_spec *s, int max,
                    void (*keep)(int i, const struct strata_meta__scan_ent *e, void *ud), void *ud)
{
    struct strata_meta__scan *sc;
    assert_int_equal(m->store->scan_open(m, s, &sc), 0);
    struct strata_meta__scan_ent e;
    int n = 0;
    while (n <= max && m->store->scan_next(sc, &e) == 1) {
        if (n < max)
            keep(n, &e, ud);
        n++;
    }
    m->store->scan_close(sc);
    return n < max ? n : max;
}

struct keys_etags {
    char (*keys)[32];
    char (*etags)[STRATA_ETAG_MAX + 1];
};

static void keep_key(int i, const struct strata_meta__scan_ent *e, void *ud)
{
    struct keys_etags *o = ud;
    snprintf(o->keys[i], 32, "%s", e->key);
    snprintf(o->etags[i], STRATA_ETAG_MAX + 1, "%s", e->info->etag);
}

/* One ListObjectsV2-like page: up to max keys after `after` (NULL: from
 * the start); keys[i] and etags[i] get what it shows.  Returns how many. */
static int page_of(struct strata_meta *m, const char *b, const char *prefix, const char *after,
                   int max, char keys[][32], char etags[][STRATA_ETAG_MAX + 1])
{
    struct strata_meta__scan_spec s = {.bucket = b,
                                       .kind = STRATA_META__SCAN_CURRENT,
                                       .prefix = prefix,
                                       .after = after,
                                       .want = (unsigned)max + 1};
    struct keys_etags o = {keys, etags};
    return page_run(m, &s, max, keep_key, &o);
}

/* Pages continue on what the page before read past its end, checked
 * against the shard's version: a page shows what a fresh read would,
 * keys added, removed and rewritten between the pages included. */
static void test_scan_pages_continue(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "pages-%s", run);
    uint64_t inc = mk_bucket(b);
    enum { N = 400, MAX = 20 };
    uint8_t sk23[16];
    for (int i = 0; i < N; i++) {
        char key[32];
        snprintf(key, sizeof(key), "k%04d", i);
        assert_int_equal(put_key(i % 2 ? g2 : g1, b, inc, key, "a", false, i == 23 ? sk23 : NULL),
                         0);
    }
    /* A walk of pages of 20: every key once, in order. */
    static char keys[MAX][32], etags[MAX][STRATA_ETAG_MAX + 1];
    char after[32] = "";
    uint64_t v0 = strata_meta__rados_scan_visited(), h0 = strata_meta__rados_scan_stash_hits();
    int total = 0, pages = 0, n;
    while ((n = page_of(g1, b, NULL, after[0] ? after : NULL, MAX, keys, etags)) > 0) {
        for (int i = 0; i < n; i++) {
            char want[32];
            snprintf(want, sizeof(want), "k%04d", total + i);
            assert_string_equal(keys[i], want);
        }
        total += n;
        pages++;
        snprintf(after, sizeof(after), "%s", keys[n - 1]);
    }
    assert_int_equal(total, N);
    uint64_t visited = strata_meta__rados_scan_visited() - v0;
    uint64_t hits = strata_meta__rados_scan_stash_hits() - h0;
    /* Without the stash each page reads 8 x share(21) = 8 x 7 entries. */
    print_message("scan: %d pages of %d read %" PRIu64 " entries (%d without the stash), %" PRIu64
                  " continued on a stash\n",
                  pages, MAX, visited, pages * 56, hits);
    assert_int_equal(hits, (uint64_t)(pages - 1));
    assert_true(visited * 3 < (uint64_t)pages * 56 * 2);
    /* Between page 1 and page 2 another gateway adds a key inside page 2,
     * removes one and rewrites one: page 2 shows them all. */
    assert_int_equal(page_of(g1, b, NULL, NULL, MAX, keys, etags), MAX);
    assert_string_equal(keys[MAX - 1], "k0019");
    assert_int_equal(put_key(g2, b, inc, "k0019z", "first", false, NULL), 0);
    assert_int_equal(put_key(g2, b, inc, "k0021x", "new", false, NULL), 0);
    assert_int_equal(remove_vid(g2, b, "k0023", sk23), 0);
    assert_int_equal(put_key(g2, b, inc, "k0024", "zz", false, NULL), 0);
    h0 = strata_meta__rados_scan_stash_hits();
    assert_int_equal(page_of(g1, b, NULL, "k0019", MAX, keys, etags), MAX);
    assert_int_equal(strata_meta__rados_scan_stash_hits() - h0, 1);
    /* k0019z first: its shard's stream, read again, is merged before any
     * entry is taken */
    const char *want[] = {"k0019z", "k0020", "k0021", "k0021x", "k0022", "k0024", "k0025"};
    for (int i = 0; i < 7; i++)
        assert_string_equal(keys[i], want[i]);
    assert_string_equal(etags[0], "e-first");
    assert_string_equal(etags[3], "e-new");
    assert_string_equal(etags[5], "e-zz");
    assert_string_equal(etags[6], "e-a");
    assert_string_equal(keys[MAX - 1], "k0038"); /* two added, one removed */
    /* A page after another key (not where a page ended) reads afresh. */
    h0 = strata_meta__rados_scan_stash_hits();
    assert_int_equal(page_of(g1, b, NULL, "k0030", MAX, keys, etags), MAX);
    assert_string_equal(keys[0], "k0031");
    assert_int_equal(strata_meta__rados_scan_stash_hits() - h0, 0);
    /* Under a prefix: pages continue on their stash; the same key under
     * another prefix is another listing. */
    h0 = strata_meta__rados_scan_stash_hits();
    assert_int_equal(page_of(g1, b, "k01", NULL, MAX, keys, etags), MAX);
    assert_int_equal(page_of(g1, b, "k01", "k0119", MAX, keys, etags), MAX);
    assert_string_equal(keys[0], "k0120");
    assert_string_equal(keys[MAX - 1], "k0139");
    assert_int_equal(strata_meta__rados_scan_stash_hits() - h0, 1);
    assert_int_equal(page_of(g1, b, "k01", NULL, MAX, keys, etags), MAX);
    assert_int_equal(page_of(g1, b, "k0", "k0119", MAX, keys, etags), MAX);
    assert_string_equal(keys[0], "k0120");
    assert_int_equal(strata_meta__rados_scan_stash_hits() - h0, 1);
    /* The last page of a prefix: what is left, nothing past the prefix. */
    assert_int_equal(page_of(g1, b, "k01", "k0189", MAX, keys, etags), 10);
    assert_string_equal(keys[9], "k0199");
}

/* One version of a ListObjectVersions page. */
struct vent {
    char key[32];
    uint8_t sk[16];
    char etag[STRATA_ETAG_MAX + 1];
};

static void keep_vent(int i, const struct strata_meta__scan_ent *e, void *ud)
{
    struct vent *v = (struct vent *)ud + i;
    snprintf(v->key, sizeof(v->key), "%s", e->key);
    memcpy(v->sk, e->sk, 16);
    snprintf(v->etag, sizeof(v->etag), "%s", e->info->etag);
}

/* One ListObjectVersions-like page: up to max versions after version
 * after_sk of key `after` (NULL: from the start), as list.c reads it (its
 * next page starts after the last shown: key-marker and
 * version-id-marker).  Returns how many. */
static int vpage_of(struct strata_meta *m, const char *b, const char *after,
                    const uint8_t *after_sk, int max, struct vent *out)
{
    struct strata_meta__scan_spec s = {.bucket = b,
                                       .kind = STRATA_META__SCAN_VERSIONS,
                                       .after = after,
                                       .after_sk = after_sk,
                                       .want = (unsigned)max + 1};
    return page_run(m, &s, max, keep_vent, out);
}

static bool vent_equal(const struct vent *a, const struct vent *b)
{
    return strcmp(a->key, b->key) == 0 && memcmp(a->sk, b->sk, 16) == 0 &&
           strcmp(a->etag, b->etag) == 0;
}

/* ListObjectVersions pages continue on the read-ahead of the page before,
 * as ListObjectsV2 pages do (test_scan_pages_continue): every version once,
 * each entry read about once, and a page shows exactly what a fresh read
 * through the other gateway shows when that gateway wrote in between. */
static void test_scan_version_pages_continue(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "vpages-%s", run);
    uint64_t inc = mk_bucket(b);
    enum { N = 150, MAX = 20 };
    int total_v = 0;
    for (int i = 0; i < N; i++) {
        char key[32];
        snprintf(key, sizeof(key), "k%04d", i);
        for (int v = 0; v <= i % 3; v++, total_v++)
            assert_int_equal(
                put_key((i + v) % 2 ? g2 : g1, b, inc, key, v ? "b" : "a", false, NULL), 0);
    }
    /* The whole listing, one scan of the other gateway (no want: no stash). */
    static struct vent all[3 * N], pg[MAX], fresh[MAX];
    struct strata_meta__scan_spec s = {.bucket = b, .kind = STRATA_META__SCAN_VERSIONS};
    int nall = page_run(g2, &s, 3 * N - 1, keep_vent, all);
    assert_int_equal(nall, total_v);
    /* A walk of pages of 20 through g1: exactly that, in order. */
    uint64_t v0 = strata_meta__rados_scan_visited(), h0 = strata_meta__rados_scan_stash_hits();
    int total = 0, pages = 0, n, mid_key = 0;
    char after[32] = "";
    uint8_t after_sk[16];
    while ((n = vpage_of(g1, b, after[0] ? after : NULL, after[0] ? after_sk : NULL, MAX, pg)) >
           0) {
        for (int i = 0; i < n; i++)
            assert_true(vent_equal(&pg[i], &all[total + i]));
        total += n;
        pages++;
        mid_key += total < nall && strcmp(all[total].key, pg[n - 1].key) == 0;
        snprintf(after, sizeof(after), "%s", pg[n - 1].key);
        memcpy(after_sk, pg[n - 1].sk, 16);
    }
    assert_int_equal(total, nall);
    uint64_t visited = strata_meta__rados_scan_visited() - v0;
    uint64_t hits = strata_meta__rados_scan_stash_hits() - h0;
    print_message("scan: %d version pages of %d (%d ending inside a key) read %" PRIu64
                  " entries (%d without the stash), %" PRIu64 " continued on a stash\n",
                  pages, MAX, mid_key, visited, pages * 56, hits);
    assert_true(mid_key > 0); /* version-id markers inside a key's versions */
    assert_int_equal(hits, (uint64_t)(pages - 1));
    assert_true(visited * 3 < (uint64_t)pages * 56 * 2);
    /* Between page 1 and page 2 the other gateway adds a version of the
     * marker's key (newer: before the marker, not shown), one of a key
     * inside page 2, a new key inside page 2, and removes a version of
     * page 2: page 2 is what a fresh read of g2 shows. */
    assert_int_equal(vpage_of(g1, b, NULL, NULL, MAX, pg), MAX);
    struct vent mark = pg[MAX - 1];
    assert_int_equal(put_key(g2, b, inc, mark.key, "m", false, NULL), 0);
    const struct vent *p2 = &all[MAX]; /* page 2 before the writes */
    assert_int_equal(put_key(g2, b, inc, p2[4].key, "v", false, NULL), 0);
    char nk[40];
    snprintf(nk, sizeof(nk), "%sx", p2[8].key);
    assert_int_equal(put_key(g2, b, inc, nk, "n", false, NULL), 0);
    assert_int_equal(remove_vid(g2, b, p2[12].key, p2[12].sk), 0);
    h0 = strata_meta__rados_scan_stash_hits();
    assert_int_equal(vpage_of(g1, b, mark.key, mark.sk, MAX, pg), MAX);
    assert_int_equal(strata_meta__rados_scan_stash_hits() - h0, 1);
    assert_int_equal(vpage_of(g2, b, mark.key, mark.sk, MAX, fresh), MAX);
    bool saw_v = false, saw_n = false, saw_rm = false;
    for (int i = 0; i < MAX; i++) {
        assert_true(vent_equal(&pg[i], &fresh[i]));
        saw_v = saw_v || (strcmp(pg[i].key, p2[4].key) == 0 && strcmp(pg[i].etag, "e-v") == 0);
        saw_n = saw_n || strcmp(pg[i].key, nk) == 0;
        saw_rm = saw_rm || vent_equal(&pg[i], &p2[12]);
        assert_string_not_equal(pg[i].etag, "e-m");
    }
    assert_true(saw_v && saw_n && !saw_rm);
    /* A page after a version that is not where a page ended reads afresh. */
    h0 = strata_meta__rados_scan_stash_hits();
    assert_int_equal(vpage_of(g1, b, all[50].key, all[50].sk, MAX, pg), MAX);
    assert_int_equal(strata_meta__rados_scan_stash_hits() - h0, 0);
}

static void test_scan_empty(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "empty-%s", run);
    mk_bucket(b);
    struct strata_meta__scan *sc;
    struct strata_meta__scan_ent e;
    for (int k = 0; k < 2; k++) {
        struct strata_meta__scan_spec s = {
            .bucket = b, .kind = k ? STRATA_META__SCAN_VERSIONS : STRATA_META__SCAN_CURRENT};
        assert_int_equal(g2->store->scan_open(g2, &s, &sc), 0);
        assert_int_equal(g2->store->scan_next(sc, &e), 0);
        g2->store->scan_close(sc);
    }
    struct strata_meta__scan_spec s = {.bucket = "no-such-bucket-x",
                                       .kind = STRATA_META__SCAN_CURRENT};
    assert_int_equal(g2->store->scan_open(g2, &s, &sc), STRATA_ENOTFOUND);
}

/* Figures (this shared machine; the numbers are printed, not asserted). */
static void test_key_scan_figures(void **state)
{
    (void)state;
    scan_fill();
    char b[64];
    snprintf(b, sizeof(b), "klat-%s", run);
    uint64_t inc = mk_bucket(b);
    int64_t us[200];
    for (int i = 0; i < 200; i++) {
        char key[32];
        snprintf(key, sizeof(key), "lat/%04d", i);
        int64_t t0 = mono_us();
        assert_int_equal(put_key(g1, b, inc, key, "0123456789", false, NULL), 0);
        us[i] = mono_us() - t0;
    }
    qsort(us, 200, sizeof(us[0]), cmp_i64);
    print_message("key_txn PUT (inline 10 B, 200 keys): p50 %" PRId64 " us, p99 %" PRId64
                  " us\n", us[100], us[197]);
    /* GET of those keys through the other gateway (object layer: bucket
     * record, one read op, bytes out of the record). */
    for (int i = 0; i < 200; i++) {
        char key[32], body[16];
        snprintf(key, sizeof(key), "lat/%04d", i);
        struct strata_obj_info info;
        int64_t t0 = mono_us();
        assert_int_equal(get_body(g2, b, key, NULL, &info, body, sizeof(body)), 0);
        us[i] = mono_us() - t0;
        assert_string_equal(body, "0123456789");
        strata_obj_info_fini(&info);
    }
    qsort(us, 200, sizeof(us[0]), cmp_i64);
    print_message("GET (inline 10 B, 200 keys, other gateway): p50 %" PRId64 " us, p99 %" PRId64
                  " us\n", us[100], us[197]);
    int64_t pg[20];
    for (int r = 0; r < 20; r++) {
        struct strata_meta__scan *sc;
        struct strata_meta__scan_spec cur = {.bucket = scan_bucket,
                                             .kind = STRATA_META__SCAN_CURRENT};
        int64_t t0 = mono_us();
        assert_int_equal(g1->store->scan_open(g1, &cur, &sc), 0);
        struct strata_meta__scan_ent e;
        for (int i = 0; i < 1000; i++)
            assert_int_equal(g1->store->scan_next(sc, &e), 1);
        pg[r] = mono_us() - t0;
        g1->store->scan_close(sc);
    }
    qsort(pg, 20, sizeof(pg[0]), cmp_i64);
    print_message("scan CURRENT, a page of 1,000 keys over 8 shards (20 runs): p50 %" PRId64
                  " us, max %" PRId64 " us\n", pg[10], pg[19]);
}

/* ---- GET and HEAD: key_get, through the object layer ---- */

/* GET of bucket/key (version vid) through the object layer on m: the
 * bytes (NUL-terminated) and the info, or the error (info as left). */
static int get_body(struct strata_meta *m, const char *b, const char *k, const char *vid,
                    struct strata_obj_info *info, char *out, size_t cap)
{
    struct strata_get *g;
    out[0] = 0;
    int rc = strata_obj_get_open(m, b, k, vid, info, &g);
    if (rc)
        return rc;
    assert_true(info->size < cap);
    rc = strata_obj_get_read(g, 0, out, info->size);
    out[info->size] = 0;
    strata_obj_get_close(g);
    return rc;
}

/* A gateway caches bucket records while its watch holds (bcache.c).  Its
 * cached record goes stale here on purpose: the bucket is deleted and
 * created again through the store ops of the other connection, which
 * notify nobody (meta/bucket.c does).  Its GETs, HEADs and a removal
 * must still reach the new incarnation: the old one's shards are closed
 * or removed, and the readers ask again.  (A version commit holds the
 * incarnation its request began with: one begun on a stale record answers
 * 404, as one begun before a delete and create does.) */
static void noop_inval(void *ud, const char *bucket)
{
    (void)ud;
    (void)bucket;
}

static void test_cached_record_never_shows_old_incarnation(void **state)
{
    (void)state;
    assert_int_equal(g1->store->on_invalidate(g1, noop_inval, NULL), 0);
    char b[64], body[64];
    snprintf(b, sizeof(b), "reinc-%s", run);
    struct strata_obj_info info;
    /* round & 1: the old shards removed (else closed); round & 2: g1's
     * first request after the change is a DELETE (a key txn), round & 4 a
     * listing (a scan opened on the cached record), else a GET. */
    for (int round = 0; round < 6; round++) {
        uint64_t old = mk_bucket(b);
        uint8_t sk[16];
        assert_int_equal(put_key(g2, b, old, "k", "old-bytes", false, sk), 0);
        assert_int_equal(get_body(g1, b, "k", NULL, &info, body, sizeof(body)), 0);
        assert_string_equal(body, "old-bytes"); /* g1 has the record cached */
        strata_obj_info_fini(&info);
        assert_int_equal(remove_vid(g2, b, "k", sk), 0);
        bool empty = false;
        struct strata_meta__bucket_txn del = {.name = b, .want_empty = true,
                                              .decide = delete_empty_decide, .ud = &empty};
        assert_int_equal(g2->store->bucket_txn(g2, &del), 0);
        if (round & 1)
            strata_meta__rados_shards_remove(meta_rados_of(g2), old);
        struct creator c = {.m = g2, .name = b, .versioning = STRATA_VERSIONING_OFF,
                            .inc = old | (1ull << 63)}; /* mk_bucket never sets it */
        struct strata_meta__bucket_txn mk = {.name = b, .decide = create_decide, .ud = &c};
        assert_int_equal(g2->store->bucket_txn(g2, &mk), 0);
        assert_int_equal(
            put_key_v(g2, b, c.inc, "k", "new-bytes", false, NULL, STRATA_VERSIONING_OFF), 0);
        uint8_t sk2[16];
        assert_int_equal(
            put_key_v(g2, b, c.inc, "k2", "gone-soon", false, sk2, STRATA_VERSIONING_OFF), 0);
        /* Through g1, whose cache still names the old incarnation. */
        if (round & 4) {
            struct strata_meta__scan *sc;
            struct strata_meta__scan_spec cur = {.bucket = b,
                                                 .kind = STRATA_META__SCAN_CURRENT};
            assert_int_equal(g1->store->scan_open(g1, &cur, &sc), 0);
            char first[STRATA_KEY_MAX + 1] = "";
            assert_int_equal(walk(sc, false, first, NULL), 2); /* k, k2: the new ones */
            assert_string_equal(first, "k");
            g1->store->scan_close(sc);
        }
        if (round & 2) {
            assert_int_equal(remove_vid(g1, b, "k2", sk2), 0);
            assert_int_equal(get_body(g2, b, "k2", NULL, &info, body, sizeof(body)),
                             STRATA_ENOTFOUND);
            strata_obj_info_fini(&info);
        } else {
            assert_int_equal(get_body(g1, b, "k2", NULL, &info, body, sizeof(body)), 0);
            assert_string_equal(body, "gone-soon");
            strata_obj_info_fini(&info);
            assert_int_equal(strata_obj_delete(g2, b, "k2", NULL, NULL), 0);
        }
        assert_int_equal(get_body(g1, b, "k", NULL, &info, body, sizeof(body)), 0);
        assert_string_equal(body, "new-bytes");
        strata_obj_info_fini(&info);
        assert_int_equal(strata_obj_head(g1, b, "k", NULL, &info), 0);
        assert_int_equal(info.size, 9);
        strata_obj_info_fini(&info);
        assert_int_equal(strata_obj_delete(g2, b, "k", NULL, NULL), 0);
        assert_int_equal(g2->store->bucket_txn(g2, &del), 0);
    }
    assert_int_equal(g1->store->on_invalidate(g1, NULL, NULL), 0);
}

/* A request begun on a cached record whose incarnation was replaced
 * meanwhile (a notification this gateway missed; the store ops here
 * notify nobody): while the bucket exists it never answers NoSuchBucket
 * but 503 (clients retry) with the record read again, so the retry lands
 * in the current incarnation; once the bucket is gone, 404. */
static void test_stale_incarnation_is_retried_not_404(void **state)
{
    (void)state;
    assert_int_equal(g1->store->on_invalidate(g1, noop_inval, NULL), 0);
    char b[64];
    snprintf(b, sizeof(b), "stale-%s", run);
    for (int round = 0; round < 2; round++) { /* round 1: old shards removed */
        uint64_t old = mk_bucket(b);
        struct strata_bucket_info bi;
        assert_int_equal(strata_meta_bucket_get(g1, b, &bi), 0); /* g1 caches it */
        assert_int_equal(bi.incarnation, old);
        bool empty = false;
        struct strata_meta__bucket_txn del = {.name = b, .want_empty = true,
                                              .decide = delete_empty_decide, .ud = &empty};
        assert_int_equal(g2->store->bucket_txn(g2, &del), 0);
        if (round)
            strata_meta__rados_shards_remove(meta_rados_of(g2), old);
        struct creator c = {.m = g2, .name = b, .versioning = STRATA_VERSIONING_OFF,
                            .inc = old | (1ull << 63)};
        struct strata_meta__bucket_txn mk = {.name = b, .decide = create_decide, .ud = &c};
        assert_int_equal(g2->store->bucket_txn(g2, &mk), 0);
        /* g1's requests begun on the old record: a PUT's data, a PUT's
         * commit, an upload's create. */
        uint8_t id[16], up[UPLOAD_LEN];
        strata_data_id_new(id);
        assert_int_equal(g1->store->pending_add(g1, b, old, "k", NULL, id), STRATA_EBUSY);
        assert_int_equal(put_key_v(g1, b, old, "k", "x", false, NULL, STRATA_VERSIONING_OFF),
                         STRATA_EBUSY);
        memset(up, 0x5a, sizeof(up));
        assert_int_equal(g1->store->upload_create(g1, b, "k", old, up, "\x01", 1), STRATA_EBUSY);
        /* The record was read again: the retry commits to the new one. */
        assert_int_equal(strata_meta_bucket_get(g1, b, &bi), 0);
        assert_int_equal(bi.incarnation, c.inc);
        assert_int_equal(put_key_v(g1, b, c.inc, "k", "y", false, NULL, STRATA_VERSIONING_OFF),
                         0);
        char body[16];
        struct strata_obj_info info;
        assert_int_equal(get_body(g2, b, "k", NULL, &info, body, sizeof(body)), 0);
        assert_string_equal(body, "y");
        strata_obj_info_fini(&info);
        assert_int_equal(strata_obj_delete(g2, b, "k", NULL, NULL), 0);
        assert_int_equal(g2->store->bucket_txn(g2, &del), 0);
        /* Gone for good: NoSuchBucket. */
        assert_int_equal(put_key_v(g1, b, c.inc, "k", "z", false, NULL, STRATA_VERSIONING_OFF),
                         STRATA_ENOTFOUND);
        assert_int_equal(g1->store->pending_add(g1, b, c.inc, "k", NULL, id), STRATA_ENOTFOUND);
    }
    assert_int_equal(g1->store->on_invalidate(g1, NULL, NULL), 0);
}

/* A version of size bytes whose data is a data object (not inline). */
struct bigc {
    struct meta_rec rec;
    uint8_t sk[16];
};

static int big_decide(void *ud, const struct strata_meta__key_view *v,
                      struct strata_meta__key_edit *e)
{
    struct bigc *c = ud;
    int rc = strata_meta__version_decide(v, STRATA_VERSIONING_ENABLED, &c->rec, NULL, false, e);
    if (rc == 0)
        memcpy(c->sk, e->sk, 16);
    return rc;
}

/* What key_get handed over, copied out. */
struct got {
    int calls;
    uint8_t sk[16];
    uint32_t flags;
    uint64_t size;
    uint8_t data_id[STRATA_DATA_ID_LEN];
    bool is_latest;
};

static int got_fn(void *ud, const struct strata_meta__key_found *f)
{
    struct got *g = ud;
    g->calls++;
    memcpy(g->sk, f->sk, 16);
    g->flags = f->rec->flags;
    g->size = f->rec->size;
    memcpy(g->data_id, f->rec->data_id, sizeof(g->data_id));
    g->is_latest = f->is_latest;
    return 0;
}

/* Versions written through one gateway are read through the other at
 * once: latest, by id, a delete marker (404 / 405 with the marker's info,
 * as S3's x-amz-delete-marker), a version deleted for good, a large record. */
static void test_get_head_across_gateways(void **state)
{
    (void)state;
    char b[64], body[256];
    snprintf(b, sizeof(b), "get-%s", run);
    uint64_t inc = mk_bucket_v(b, STRATA_VERSIONING_ENABLED);
    uint8_t sk1[16], sk2[16];
    char vid1[STRATA_VERSION_ID_MAX + 1], vid2[STRATA_VERSION_ID_MAX + 1];
    assert_int_equal(put_key(g1, b, inc, "doc", "v1-hello", false, sk1), 0);
    assert_int_equal(put_key(g1, b, inc, "doc", "v2-world", false, sk2), 0);
    strata_meta__vid_format(sk1, vid1);
    strata_meta__vid_format(sk2, vid2);
    struct strata_obj_info info;
    /* The latest, through the other gateway: record and bytes. */
    assert_int_equal(get_body(g2, b, "doc", NULL, &info, body, sizeof(body)), 0);
    assert_string_equal(body, "v2-world");
    assert_string_equal(info.version_id, vid2);
    assert_string_equal(info.etag, "e-v2-world");
    assert_true(info.is_latest);
    assert_true(info.inline_data);
    assert_false(info.delete_marker);
    strata_obj_info_fini(&info);
    /* The older version by id: not the latest. */
    assert_int_equal(get_body(g2, b, "doc", vid1, &info, body, sizeof(body)), 0);
    assert_string_equal(body, "v1-hello");
    assert_string_equal(info.version_id, vid1);
    assert_false(info.is_latest);
    strata_obj_info_fini(&info);
    assert_int_equal(strata_obj_head(g2, b, "doc", vid2, &info), 0);
    assert_true(info.is_latest);
    assert_int_equal(info.size, 8);
    strata_obj_info_fini(&info);
    /* A delete marker through g1: g2's GET and HEAD of the latest are 404
     * with the marker's info; the marker by its id is 405. */
    struct strata_del_result del;
    assert_int_equal(strata_obj_delete(g1, b, "doc", NULL, &del), 0);
    assert_true(del.delete_marker);
    assert_int_equal(strata_obj_head(g2, b, "doc", NULL, &info), STRATA_ENOTFOUND);
    assert_true(info.delete_marker);
    assert_string_equal(info.version_id, del.version_id);
    strata_obj_info_fini(&info);
    assert_int_equal(get_body(g2, b, "doc", NULL, &info, body, sizeof(body)), STRATA_ENOTFOUND);
    assert_true(info.delete_marker);
    strata_obj_info_fini(&info);
    assert_int_equal(strata_obj_head(g2, b, "doc", del.version_id, &info), STRATA_EMETHOD);
    assert_true(info.delete_marker);
    assert_true(info.is_latest);
    strata_obj_info_fini(&info);
    /* The versions below the marker stay readable by id. */
    assert_int_equal(get_body(g2, b, "doc", vid2, &info, body, sizeof(body)), 0);
    assert_string_equal(body, "v2-world");
    assert_false(info.is_latest);
    strata_obj_info_fini(&info);
    /* A version deleted for good on g1 is gone on g2 at once. */
    assert_int_equal(get_body(g2, b, "doc", vid1, &info, body, sizeof(body)), 0);
    strata_obj_info_fini(&info);
    assert_int_equal(strata_obj_delete(g1, b, "doc", vid1, &del), 0);
    assert_false(del.delete_marker);
    assert_int_equal(strata_obj_head(g2, b, "doc", vid1, &info), STRATA_ENOTFOUND);
    strata_obj_info_fini(&info);
    assert_int_equal(get_body(g2, b, "doc", vid1, &info, body, sizeof(body)), STRATA_ENOTFOUND);
    strata_obj_info_fini(&info);
    /* Absent things: a malformed id, another key, another bucket. */
    assert_int_equal(strata_obj_head(g2, b, "doc", "zz", &info), STRATA_ENOTFOUND);
    assert_int_equal(strata_obj_head(g2, b, "nope", NULL, &info), STRATA_ENOTFOUND);
    assert_int_equal(strata_obj_head(g2, "no-such-bucket-y", "doc", NULL, &info),
                     STRATA_ENOTFOUND);
    strata_obj_info_fini(&info);
    /* A large record (data in a data object): HEAD and the record. */
    struct bigc c;
    memset(&c, 0, sizeof(c));
    c.rec.size = 300 * 1024;
    snprintf(c.rec.etag, sizeof(c.rec.etag), "big-etag");
    snprintf(c.rec.storage_class, sizeof(c.rec.storage_class), "STANDARD");
    c.rec.has_data_id = true;
    for (int i = 0; i < STRATA_DATA_ID_LEN; i++)
        c.rec.data_id[i] = (uint8_t)(0xa0 + i);
    struct strata_meta__key_txn t = {.bucket = b, .key = "big", .incarnation = inc,
                                     .hold_bucket = true,
                                     .want = strata_meta__version_want(STRATA_VERSIONING_ENABLED),
                                     .decide = big_decide, .ud = &c};
    /* Its data is announced first, as a PUT does (the commit requires w/). */
    assert_int_equal(g1->store->pending_add(g1, b, inc, "big", NULL, c.rec.data_id), 0);
    assert_int_equal(g1->store->key_txn(g1, &t), 0);
    assert_int_equal(strata_obj_head(g2, b, "big", NULL, &info), 0);
    assert_int_equal(info.size, 300 * 1024);
    assert_false(info.inline_data);
    assert_string_equal(info.etag, "big-etag");
    strata_obj_info_fini(&info);
    struct got gt = {0};
    assert_int_equal(g2->store->key_get(g2, b, "big", NULL, got_fn, &gt), 0);
    assert_int_equal(gt.calls, 1);
    assert_memory_equal(gt.sk, c.sk, 16);
    assert_memory_equal(gt.data_id, c.rec.data_id, STRATA_DATA_ID_LEN);
    assert_int_equal(gt.size, 300 * 1024);
    assert_true(gt.is_latest);
    assert_int_equal(gt.flags & REC_F_INLINE, 0);
    /* key_get calls nothing when there is nothing. */
    memset(&gt, 0, sizeof(gt));
    assert_int_equal(g2->store->key_get(g2, b, "missing", NULL, got_fn, &gt), STRATA_ENOTFOUND);
    assert_int_equal(gt.calls, 0);
}

/* The null version: the newest in a never-versioned key, and found under
 * many newer versions (more than one page of them). */
static void test_get_null(void **state)
{
    (void)state;
    char b[64], body[64];
    snprintf(b, sizeof(b), "null-%s", run);
    uint64_t inc = mk_bucket_v(b, STRATA_VERSIONING_ENABLED);
    assert_int_equal(put_key_v(g1, b, inc, "n", "null-1", false, NULL, STRATA_VERSIONING_OFF), 0);
    assert_int_equal(put_key_v(g2, b, inc, "n", "null-2", false, NULL, STRATA_VERSIONING_OFF), 0);
    struct strata_obj_info info;
    assert_int_equal(get_body(g1, b, "n", "null", &info, body, sizeof(body)), 0);
    assert_string_equal(body, "null-2");
    assert_string_equal(info.version_id, "null");
    assert_true(info.is_latest);
    strata_obj_info_fini(&info);
    /* 40 newer versions: "null" is past the first pages. */
    char last[16];
    for (int i = 0; i < 40; i++) {
        snprintf(last, sizeof(last), "ver-%02d", i);
        assert_int_equal(put_key(i % 2 ? g1 : g2, b, inc, "n", last, false, NULL), 0);
    }
    assert_int_equal(get_body(g2, b, "n", "null", &info, body, sizeof(body)), 0);
    assert_string_equal(body, "null-2");
    assert_string_equal(info.version_id, "null");
    assert_false(info.is_latest);
    strata_obj_info_fini(&info);
    assert_int_equal(get_body(g2, b, "n", NULL, &info, body, sizeof(body)), 0);
    assert_string_equal(body, last);
    strata_obj_info_fini(&info);
    /* Deleted by "null" on one gateway: gone on the other. */
    struct strata_del_result del;
    assert_int_equal(strata_obj_delete(g2, b, "n", "null", &del), 0);
    assert_int_equal(get_body(g1, b, "n", "null", &info, body, sizeof(body)), STRATA_ENOTFOUND);
    strata_obj_info_fini(&info);
    /* A key without a null version. */
    assert_int_equal(put_key(g1, b, inc, "v", "only", false, NULL), 0);
    assert_int_equal(strata_obj_head(g2, b, "v", "null", &info), STRATA_ENOTFOUND);
    strata_obj_info_fini(&info);
}

/* Inline bytes that do not match their CRC32C: GET fails, HEAD does not
 * read them. */
static void test_get_inline_corrupt(void **state)
{
    (void)state;
    char b[64], body[64];
    snprintf(b, sizeof(b), "crc-%s", run);
    uint64_t inc = mk_bucket(b);
    uint8_t sk[16];
    assert_int_equal(put_key(g1, b, inc, "c", "payload", false, sk), 0);
    char oid[48], ok[RADOS_IKEY_MAX], *v;
    size_t vl;
    key_oid(oid, inc, "c");
    size_t okl = strata_meta__rados_ikey(ok, 'o', "c", 1);
    strata_meta__rados_sk_hex(sk, ok + okl);
    assert_int_equal(strata_meta__rados_get1(raw(g1), oid, ok, &v, &vl), 0);
    struct meta_rec r;
    assert_int_equal(strata_meta__rec_decode(v, vl, false, &r), 0);
    r.shard = (const uint8_t *)"PAYLOAD"; /* same length, CRC32C of "payload" */
    char *nv;
    size_t nvl;
    assert_int_equal(strata_meta__rec_encode(&r, &nv, &nvl), 0);
    assert_int_equal(strata_meta__rados_cas1(raw(g1), oid, NULL, NULL, 0, ok, nv, nvl), 0);
    free(nv);
    free(v);
    struct strata_obj_info info;
    assert_int_equal(get_body(g2, b, "c", NULL, &info, body, sizeof(body)), STRATA_ECORRUPT);
    strata_obj_info_fini(&info);
    assert_int_equal(strata_obj_head(g2, b, "c", NULL, &info), 0);
    assert_int_equal(info.size, 7);
    strata_obj_info_fini(&info);
}

/* CURRENT lists each key from its head: the head follows a new version, a
 * rewrite of the latest, the removal of the latest and of the last one. */
static struct strata_obj_info *current_of(struct strata_meta *m, const char *b,
                                          struct strata_meta__scan **sc, const char *key)
{
    struct strata_meta__scan_spec cur = {.bucket = b, .kind = STRATA_META__SCAN_CURRENT,
                                         .prefix = key};
    assert_int_equal(m->store->scan_open(m, &cur, sc), 0);
    struct strata_meta__scan_ent e;
    int rc = m->store->scan_next(*sc, &e);
    assert_true(rc == 0 || rc == 1);
    return rc == 1 && strcmp(e.key, key) == 0 ? e.info : NULL;
}

static void test_scan_current_heads(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "heads-%s", run);
    uint64_t inc = mk_bucket(b);
    uint8_t sk1[16], sk2[16];
    char vid2[STRATA_VERSION_ID_MAX + 1];
    struct strata_meta__scan *sc;
    assert_int_equal(put_key(g1, b, inc, "h", "one", false, sk1), 0);
    assert_int_equal(put_key(g1, b, inc, "h", "two", false, sk2), 0);
    strata_meta__vid_format(sk2, vid2);
    struct strata_obj_info *i = current_of(g2, b, &sc, "h");
    assert_non_null(i);
    assert_string_equal(i->etag, "e-two");
    assert_string_equal(i->version_id, vid2);
    assert_int_equal(i->size, 3);
    assert_int_equal(i->tags_len, 0);
    g2->store->scan_close(sc);
    /* Tags on the latest: the head carries them. */
    struct tag_ud tu = {"t=1"};
    assert_int_equal(strata_meta__rec_rewrite(g1, b, "h", vid2, tags_cb, &tu, NULL, NULL), 0);
    i = current_of(g2, b, &sc, "h");
    assert_non_null(i);
    assert_int_equal(i->tags_len, 3);
    assert_memory_equal(i->tags, "t=1", 3);
    g2->store->scan_close(sc);
    /* Tags on the older version: the head stays. */
    char vid1[STRATA_VERSION_ID_MAX + 1];
    strata_meta__vid_format(sk1, vid1);
    struct tag_ud tu2 = {"old=1"};
    assert_int_equal(strata_meta__rec_rewrite(g2, b, "h", vid1, tags_cb, &tu2, NULL, NULL), 0);
    i = current_of(g1, b, &sc, "h");
    assert_non_null(i);
    assert_int_equal(i->tags_len, 3);
    g1->store->scan_close(sc);
    /* The latest removed: the head is the older version, tags and all. */
    assert_int_equal(remove_vid(g2, b, "h", sk2), 0);
    i = current_of(g1, b, &sc, "h");
    assert_non_null(i);
    assert_string_equal(i->etag, "e-one");
    assert_string_equal(i->version_id, vid1);
    assert_int_equal(i->tags_len, 5);
    g1->store->scan_close(sc);
    /* The last removed: no head, nothing listed. */
    assert_int_equal(remove_vid(g1, b, "h", sk1), 0);
    assert_null(current_of(g2, b, &sc, "h"));
    g2->store->scan_close(sc);
}

/* ---- multipart: u/, p/, t/ on the key's shard ---- */

/* A part whose md5 and data id are made of seed (no data objects: the
 * records alone are what the backend keeps here). */
static void part_make(struct meta_part *p, unsigned no, uint64_t size, uint8_t seed)
{
    memset(p, 0, sizeof(*p));
    p->number = no;
    p->size = size;
    memset(p->md5, seed, 16);
    p->md5[0] = (uint8_t)no;
    p->has_data_id = true;
    memset(p->data_id, seed, STRATA_DATA_ID_LEN);
    p->data_id[0] = (uint8_t)no;
    p->data_id[1] = (uint8_t)(no >> 8);
    p->mtime_ns = 1;
}

static void mpu_new(struct strata_meta *m, const char *b, const char *key,
                    char id[STRATA_UPLOAD_ID_MAX + 1])
{
    struct strata_mpu_opts o = {.bucket = b, .key = key};
    assert_int_equal(strata_mpu_create(m, &o, id), 0);
}

/* A part's data is pending (w/) before its record, as object.c makes it
 * (absent bucket: nothing, the part's own answer is checked). */
static void part_pending(struct strata_meta *m, const char *b, const char *key,
                         const struct meta_part *p)
{
    struct strata_bucket_info bi;
    if (m->store->bucket_get(m, b, &bi) == 0)
        assert_int_equal(m->store->pending_add(m, b, bi.incarnation, key, NULL, p->data_id), 0);
}

static int part_up(struct strata_meta *m, const char *b, const char *key, const char *id,
                   unsigned no, uint8_t seed)
{
    uint8_t up[UPLOAD_LEN];
    assert_int_equal(strata_meta__upload_id_parse(id, up), 0);
    struct meta_part p;
    part_make(&p, no, 100 + no, seed);
    part_pending(m, b, key, &p);
    return strata_meta__part_store(m, b, key, up, &p);
}

/* The part list of numbers nos (seeds as uploaded) for a complete. */
struct plist {
    struct strata_mpu_part *v;
    char (*et)[33];
    size_t n;
};

static void plist_make(struct plist *pl, const unsigned *nos, const uint8_t *seeds, size_t n)
{
    pl->v = calloc(n, sizeof(*pl->v));
    pl->et = calloc(n, sizeof(*pl->et));
    assert_non_null(pl->v);
    assert_non_null(pl->et);
    pl->n = n;
    for (size_t i = 0; i < n; i++) {
        struct meta_part p;
        part_make(&p, nos[i], 0, seeds[i]);
        strata_hex_encode(p.md5, 16, pl->et[i]);
        pl->v[i].part_number = nos[i];
        pl->v[i].etag = pl->et[i];
    }
}

static void plist_free(struct plist *pl)
{
    free(pl->v);
    free(pl->et);
}

static int mpu_done(struct strata_meta *m, const char *b, const char *key, const char *id,
                    const struct plist *pl, bool inm, struct strata_obj_info *out)
{
    struct strata_mpu_complete_opts o = {.bucket = b, .key = key, .upload_id = id,
                                         .parts = pl->v, .nparts = pl->n,
                                         .if_none_match_star = inm};
    return strata_mpu_complete(m, &o, out);
}

/* Whether key's shard holds omap key k. */
static bool shard_has_key(struct strata_meta *m, uint64_t inc, const char *key, const char *k)
{
    char oid[48], *v = NULL;
    size_t vl;
    key_oid(oid, inc, key);
    int rc = strata_meta__rados_get1(raw(m), oid, k, &v, &vl);
    free(v);
    assert_true(rc == 0 || rc == STRATA_ENOTFOUND);
    return rc == 0;
}

/* Whether key's shard has a g/DUE/ID entry for data id (any DUE). */
static bool shard_has_gid(struct strata_meta *m, uint64_t inc, const char *key,
                          const uint8_t id[STRATA_DATA_ID_LEN])
{
    char oid[48], hex[33];
    key_oid(oid, inc, key);
    strata_meta__rados_sk_hex(id, hex);
    rados_read_op_t op = rados_create_read_op();
    rados_omap_iter_t it;
    unsigned char more;
    int pr = 0;
    rados_read_op_omap_get_vals2(op, "", "g/", 1000, &it, &more, &pr);
    assert_int_equal(rados_read_op_operate(op, raw(m), oid, 0), 0);
    bool found = false;
    char *k, *v;
    size_t vl;
    while (rados_omap_get_next(it, &k, &v, &vl) == 0 && k)
        if (strlen(k) == 2 + 16 + 1 + 32 && strcmp(k + 19, hex) == 0)
            found = true;
    rados_omap_get_end(it);
    rados_release_read_op(op);
    return found;
}

/* Omap keys of the shard of key starting with kind + "/" + key + 0x01 (its
 * u/, p/ or t/ entries), counted; the first value in *first (malloc'ed). */
static size_t shard_keys(struct strata_meta *m, uint64_t inc, const char *key, char kind,
                         char **first, size_t *first_len)
{
    char oid[48], pre[RADOS_IKEY_MAX], after[RADOS_IKEY_MAX + 64] = "";
    key_oid(oid, inc, key);
    strata_meta__rados_ikey(pre, kind, key, strlen(key));
    if (first)
        *first = NULL;
    size_t n = 0;
    unsigned char more = 1;
    while (more) {
        rados_read_op_t op = rados_create_read_op();
        rados_omap_iter_t it;
        int pr = 0;
        rados_read_op_omap_get_vals2(op, after, pre, 1000, &it, &more, &pr);
        assert_int_equal(rados_read_op_operate(op, raw(m), oid, 0), 0);
        char *k, *v;
        size_t vl;
        while (rados_omap_get_next(it, &k, &v, &vl) == 0 && k) {
            if (first && !*first) {
                *first = malloc(vl + 1);
                memcpy(*first, v, vl);
                *first_len = vl;
            }
            snprintf(after, sizeof(after), "%s", k);
            n++;
        }
        rados_omap_get_end(it);
        rados_release_read_op(op);
    }
    return n;
}

static int lp_collect(const struct strata_part_info *p, void *ud)
{
    unsigned *seen = ud;
    seen[++seen[0]] = p->part_number;
    return 0;
}

static void test_mpu_two_gateways(void **state)
{
    (void)state;
    char b[64], id[STRATA_UPLOAD_ID_MAX + 1];
    snprintf(b, sizeof(b), "mpu-%s", run);
    uint64_t inc = mk_bucket(b);
    const char *key = "big/\x01obj";
    mpu_new(g1, b, key, id);
    /* The other gateway sees the upload. */
    struct strata_mpu_info mi;
    assert_int_equal(strata_mpu_get(g2, b, key, id, &mi), 0);
    assert_string_equal(mi.key, key);
    assert_string_equal(mi.upload_id, id);
    /* Parts 1, 3, 5 on one gateway, 2, 4 on the other. */
    for (unsigned no = 1; no <= 5; no++)
        assert_int_equal(part_up(no % 2 ? g1 : g2, b, key, id, no, 0x10), 0);
    /* Part 3 replaced (through the store op: the old data goes to g/ in
     * the same op, nothing comes back; the new data's w/ now names the
     * upload, until the complete or abort that reads the part). */
    uint8_t up[UPLOAD_LEN];
    assert_int_equal(strata_meta__upload_id_parse(id, up), 0);
    struct meta_part p3, p3old;
    part_make(&p3, 3, 103, 0x33);
    part_make(&p3old, 3, 103, 0x10);
    struct strata_meta__data_refs old;
    part_pending(g2, b, key, &p3);
    assert_int_equal(g2->store->part_put(g2, b, key, up, &p3, &old), 0);
    assert_int_equal(old.n, 0);
    free(old.v);
    assert_true(shard_has_gid(g1, inc, key, p3old.data_id));
    assert_false(shard_has_gid(g1, inc, key, p3.data_id));
    char wk[40];
    strata_meta__rados_wkey(wk, p3.data_id);
    assert_true(shard_has_key(g1, inc, key, wk));
    /* The same data again: written again, nothing to reclaim. */
    assert_int_equal(g1->store->part_put(g1, b, key, up, &p3, &old), 0);
    free(old.v);
    assert_false(shard_has_gid(g1, inc, key, p3.data_id));
    /* Its w/ gone (as the gc pass takes a stalled part's): refused (its
     * data may be gone). */
    char oid[48];
    key_oid(oid, inc, key);
    assert_int_equal(strata_meta__rados_cas1(raw(g1), oid, NULL, NULL, 0, wk, NULL, 0), 0);
    assert_false(shard_has_key(g1, inc, key, wk));
    assert_int_equal(g1->store->part_put(g1, b, key, up, &p3, &old), STRATA_EIO);
    /* Pending again: replaces nothing that needs reclaiming. */
    part_pending(g1, b, key, &p3);
    assert_int_equal(g1->store->part_put(g1, b, key, up, &p3, &old), 0);
    assert_int_equal(old.n, 0);
    free(old.v);
    assert_false(shard_has_gid(g1, inc, key, p3.data_id));
    /* ListParts on either gateway: 1..5 in order, with a marker. */
    unsigned seen[16] = {0};
    struct strata_mpu_parts_result res;
    assert_int_equal(strata_mpu_list_parts(g1, b, key, id, 0, 1000, lp_collect, seen, &res), 0);
    assert_int_equal(seen[0], 5);
    for (unsigned i = 1; i <= 5; i++)
        assert_int_equal(seen[i], i);
    memset(seen, 0, sizeof(seen));
    assert_int_equal(strata_mpu_list_parts(g2, b, key, id, 2, 2, lp_collect, seen, &res), 0);
    assert_int_equal(seen[0], 2);
    assert_int_equal(seen[1], 3);
    assert_int_equal(seen[2], 4);
    assert_true(res.truncated);
    assert_int_equal(res.next_marker, 4);
    assert_int_equal(shard_keys(g1, inc, key, 'p', NULL, NULL), 5);

    /* Complete errors leave everything as it was. */
    unsigned nos_missing[] = {1, 2, 6};
    uint8_t s10[] = {0x10, 0x10, 0x10, 0x10, 0x10};
    struct plist pl;
    plist_make(&pl, nos_missing, s10, 3);
    assert_int_equal(mpu_done(g2, b, key, id, &pl, false, NULL), STRATA_EBADPART);
    plist_free(&pl);
    unsigned nos_order[] = {1, 3, 2};
    plist_make(&pl, nos_order, s10, 3);
    assert_int_equal(mpu_done(g2, b, key, id, &pl, false, NULL), STRATA_EPARTORDER);
    plist_free(&pl);
    unsigned nos_stale[] = {1, 3};
    plist_make(&pl, nos_stale, s10, 2); /* part 3's ETag before its replacement */
    assert_int_equal(mpu_done(g2, b, key, id, &pl, false, NULL), STRATA_EBADPART);
    plist_free(&pl);
    assert_int_equal(shard_keys(g1, inc, key, 'p', NULL, NULL), 5);
    assert_int_equal(shard_keys(g1, inc, key, 'h', NULL, NULL), 0);

    /* Complete of 1, 3 (replaced), 4 on the other gateway: parts 2 and 5
     * are reclaimed, the version is there for the first gateway. */
    unsigned nos[] = {1, 3, 4};
    uint8_t seeds[] = {0x10, 0x33, 0x10};
    plist_make(&pl, nos, seeds, 3);
    struct strata_obj_info info;
    assert_int_equal(mpu_done(g2, b, key, id, &pl, false, &info), 0);
    assert_int_equal(info.size, 101 + 103 + 104);
    assert_true(strstr(info.etag, "-3") != NULL);
    struct seen s = read_latest(g1, b, key);
    assert_int_equal(s.rc, 0);
    assert_string_equal(s.etag, info.etag);
    /* u/ is the completed-upload record; no p/ left; one t/ chunk. */
    char *uv;
    size_t uvl;
    assert_int_equal(shard_keys(g1, inc, key, 'u', &uv, &uvl), 1);
    assert_true(strata_meta__is_done(uv, uvl));
    free(uv);
    assert_int_equal(shard_keys(g1, inc, key, 'p', NULL, NULL), 0);
    assert_int_equal(shard_keys(g1, inc, key, 't', NULL, NULL), 1);
    /* Gone as an upload on both gateways; a retried complete with the same
     * list is answered from the completed-upload record within the retry
     * window, another list is NoSuchUpload. */
    assert_int_equal(strata_mpu_get(g1, b, key, id, &mi), STRATA_ENOTFOUND);
    assert_int_equal(part_up(g1, b, key, id, 6, 0x10), STRATA_ENOTFOUND);
    assert_int_equal(strata_mpu_abort(g1, b, key, id), STRATA_ENOTFOUND);
    g1->mpu_retry_ns = 60000000000LL;
    struct strata_obj_info again;
    assert_int_equal(mpu_done(g1, b, key, id, &pl, false, &again), 0);
    assert_string_equal(again.etag, info.etag);
    assert_string_equal(again.version_id, info.version_id);
    g1->mpu_retry_ns = 0;
    assert_int_equal(mpu_done(g1, b, key, id, &pl, false, &again), STRATA_ENOTFOUND);
    plist_free(&pl);
    strata_obj_info_fini(&info);
    strata_obj_info_fini(&again);
}

/* A replica's complete (strata_mpu_complete_as) on RADOS: the version
 * keeps the source's id and time, below the key's newer version; completed
 * again under that id from the other gateway, the one version is the new
 * copy, its part table written over the first's (one t/ chunk). */
static void test_mpu_complete_as(void **state)
{
    (void)state;
    char b[64], id[STRATA_UPLOAD_ID_MAX + 1];
    snprintf(b, sizeof(b), "mpuas-%s", run);
    uint64_t inc = mk_bucket_v(b, STRATA_VERSIONING_ENABLED);
    const char *key = "k";
    uint8_t sk[SORTKEY_LEN];
    char vid[STRATA_VERSION_ID_MAX + 1];
    int64_t at = 1700000000000000000LL;
    strata_meta__sortkey_new(at, sk);
    strata_meta__vid_format(sk, vid);
    struct strata_obj_info info;
    mpu_new(g1, b, key, id); /* a newer version first */
    assert_int_equal(part_up(g1, b, key, id, 1, 0x40), 0);
    unsigned nos[] = {1};
    uint8_t s40[] = {0x40}, seeds[] = {0x41, 0x42};
    struct plist pl;
    plist_make(&pl, nos, s40, 1);
    assert_int_equal(mpu_done(g1, b, key, id, &pl, false, &info), 0);
    char latest[STRATA_VERSION_ID_MAX + 1], etags[2][STRATA_ETAG_MAX + 1];
    memcpy(latest, info.version_id, sizeof(latest));
    strata_obj_info_fini(&info);
    plist_free(&pl);
    for (int i = 0; i < 2; i++) {
        struct strata_meta *g = i ? g2 : g1;
        mpu_new(g, b, key, id);
        assert_int_equal(part_up(g, b, key, id, 1, seeds[i]), 0);
        plist_make(&pl, nos, &seeds[i], 1);
        struct strata_mpu_complete_opts o = {.bucket = b, .key = key, .upload_id = id,
                                             .parts = pl.v, .nparts = pl.n};
        assert_int_equal(strata_mpu_complete_as(g, &o, vid, &info), 0);
        assert_string_equal(info.version_id, vid);
        memcpy(etags[i], info.etag, sizeof(etags[i]));
        strata_obj_info_fini(&info);
        assert_int_equal(strata_obj_head(g == g1 ? g2 : g1, b, key, vid, &info), 0);
        assert_int_equal(info.mtime_ms, at / 1000000);
        assert_false(info.is_latest);
        assert_string_equal(info.etag, etags[i]); /* this copy's */
        strata_obj_info_fini(&info);
        plist_free(&pl);
    }
    assert_string_not_equal(etags[0], etags[1]);
    assert_int_equal(strata_obj_head(g1, b, key, NULL, &info), 0);
    assert_string_equal(info.version_id, latest);
    strata_obj_info_fini(&info);
    assert_int_equal(shard_keys(g1, inc, key, 't', NULL, NULL), 2); /* latest's, the replica's */
    /* Malformed ids are refused. */
    mpu_new(g1, b, key, id);
    assert_int_equal(part_up(g1, b, key, id, 1, 0x43), 0);
    uint8_t s43[] = {0x43};
    plist_make(&pl, nos, s43, 1);
    struct strata_mpu_complete_opts o = {.bucket = b, .key = key, .upload_id = id,
                                         .parts = pl.v, .nparts = pl.n};
    assert_int_equal(strata_mpu_complete_as(g1, &o, "nothex", NULL), STRATA_EINVAL);
    plist_free(&pl);
}

static void test_mpu_abort_removes(void **state)
{
    (void)state;
    char b[64], id[STRATA_UPLOAD_ID_MAX + 1];
    snprintf(b, sizeof(b), "mpa-%s", run);
    uint64_t inc = mk_bucket(b);
    mpu_new(g1, b, "k", id);
    for (unsigned no = 1; no <= 3; no++)
        assert_int_equal(part_up(g2, b, "k", id, no, 0x20), 0);
    assert_int_equal(shard_keys(g1, inc, "k", 'u', NULL, NULL), 1);
    assert_int_equal(shard_keys(g1, inc, "k", 'p', NULL, NULL), 3);
    uint8_t up[UPLOAD_LEN];
    assert_int_equal(strata_meta__upload_id_parse(id, up), 0);
    struct strata_meta__data_refs unref;
    assert_int_equal(g2->store->mpu_abort(g2, b, "k", up, &unref), 0);
    assert_int_equal(unref.n, 0); /* every part's data queued in g/ by the abort's op */
    free(unref.v);
    for (unsigned no = 1; no <= 3; no++) {
        struct meta_part p;
        part_make(&p, no, 0, 0x20);
        assert_true(shard_has_gid(g1, inc, "k", p.data_id));
    }
    assert_int_equal(shard_keys(g1, inc, "k", 'u', NULL, NULL), 0);
    assert_int_equal(shard_keys(g1, inc, "k", 'p', NULL, NULL), 0);
    assert_int_equal(strata_mpu_abort(g1, b, "k", id), STRATA_ENOTFOUND);
    assert_int_equal(part_up(g1, b, "k", id, 4, 0x20), STRATA_ENOTFOUND);
    struct strata_mpu_info mi;
    assert_int_equal(strata_mpu_get(g1, b, "k", id, &mi), STRATA_ENOTFOUND);
    /* DeleteBucket aborts the uploads left, with its shards closed. */
    mpu_new(g1, b, "left", id);
    assert_int_equal(part_up(g2, b, "left", id, 1, 0x21), 0);
    assert_int_equal(strata_meta_bucket_delete(g2, b), 0);
    assert_int_equal(shard_keys(g1, inc, "left", 'u', NULL, NULL), 0);
    assert_int_equal(shard_keys(g1, inc, "left", 'p', NULL, NULL), 0);
    assert_int_equal(strata_mpu_get(g1, b, "left", id, &mi), STRATA_ENOTFOUND);
}

#define RACE_ROUNDS 30

struct race_arg {
    struct strata_meta *m;
    const char *bucket, *key, *id;
    const struct plist *pl;
    bool abort, inm;
    int delay_us; /* before it starts: both outcomes of the race occur */
    bool replace; /* put part 1 again with other data (seed 0x41) */
    int rc;
    pthread_barrier_t *go;
};

static void *race_thread(void *a)
{
    struct race_arg *x = a;
    pthread_barrier_wait(x->go);
    if (x->delay_us)
        usleep((useconds_t)x->delay_us);
    if (x->replace)
        x->rc = part_up(x->m, x->bucket, x->key, x->id, 1, 0x41);
    else
        x->rc = x->abort ? strata_mpu_abort(x->m, x->bucket, x->key, x->id)
                         : mpu_done(x->m, x->bucket, x->key, x->id, x->pl, x->inm, NULL);
    return NULL;
}

static void mpu_fill(struct strata_meta *m, uint64_t inc, const char *key, const char *id,
                     unsigned n, uint8_t seed, const char *bucket);

/* rounds of a complete of nparts parts on one gateway against an abort on
 * the other, either side starting later by steps of lag_us. */
static void race_rounds(const char *b, uint64_t inc, unsigned nparts, int rounds, int lag_us)
{
    unsigned *nos = calloc(nparts, sizeof(*nos));
    uint8_t *seeds = calloc(nparts, 1);
    for (unsigned i = 0; i < nparts; i++) {
        nos[i] = i + 1;
        seeds[i] = 0x40;
    }
    struct plist pl;
    plist_make(&pl, nos, seeds, nparts);
    unsigned completes = 0, aborts = 0;
    for (int round = 0; round < rounds; round++) {
        char key[32], id[STRATA_UPLOAD_ID_MAX + 1];
        snprintf(key, sizeof(key), "race-%u-%d", nparts, round);
        mpu_new(g1, b, key, id);
        if (nparts == 2) {
            assert_int_equal(part_up(g1, b, key, id, 1, 0x40), 0);
            assert_int_equal(part_up(g2, b, key, id, 2, 0x40), 0);
        } else {
            mpu_fill(g1, inc, key, id, nparts, 0x40, b);
        }
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        /* Either side starts a little later, by steps that cross the
         * other's read-to-write window. */
        int lag = (round / 2 % 5) * lag_us;
        struct race_arg a[2] = {
            {g1, b, key, id, &pl, false, false, round % 2 ? lag : 0, false, -1, &go},
            {g2, b, key, id, &pl, true, false, round % 2 ? 0 : lag, false, -1, &go}};
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, race_thread, &a[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&go);
        /* Exactly one wins; the other finds the upload gone. */
        assert_true((a[0].rc == 0) != (a[1].rc == 0));
        assert_int_equal(a[0].rc == 0 ? a[1].rc : a[0].rc, STRATA_ENOTFOUND);
        /* Nothing half-visible: the version and the done record, or
         * neither; never a part record left. */
        char *uv = NULL;
        size_t uvl = 0;
        size_t nu = shard_keys(g1, inc, key, 'u', &uv, &uvl);
        assert_int_equal(shard_keys(g1, inc, key, 'p', NULL, NULL), 0);
        if (a[0].rc == 0) {
            completes++;
            assert_int_equal(nu, 1);
            assert_true(strata_meta__is_done(uv, uvl));
            assert_int_equal(read_latest(g2, b, key).rc, 0);
            assert_int_equal(shard_keys(g1, inc, key, 't', NULL, NULL),
                             (nparts + MP_CHUNK_PARTS - 1) / MP_CHUNK_PARTS);
        } else {
            aborts++;
            assert_int_equal(nu, 0);
            assert_int_equal(read_latest(g2, b, key).rc, STRATA_ENOTFOUND);
            assert_int_equal(shard_keys(g1, inc, key, 't', NULL, NULL), 0);
        }
        free(uv);
    }
    print_message("complete of %u parts against abort, %d rounds: %u completes, %u aborts won\n",
                  nparts, rounds, completes, aborts);
    plist_free(&pl);
    free(nos);
    free(seeds);
}

static void test_mpu_complete_races_abort(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "mpr-%s", run);
    uint64_t inc = mk_bucket(b);
    race_rounds(b, inc, 2, RACE_ROUNDS, 300);
    /* Parts read in two pages: an abort between them must not make the
     * complete see a live upload without its parts. */
    race_rounds(b, inc, 1200, 10, 1000);
}

/* A part replaced while its upload is completed: the complete must not
 * keep the data the replacement hands back for reclaim. */
static void test_mpu_complete_races_part(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "mpp-%s", run);
    uint64_t inc = mk_bucket(b);
    const unsigned n = 1200;
    unsigned *nos = calloc(n, sizeof(*nos));
    uint8_t *seeds = calloc(n, 1);
    for (unsigned i = 0; i < n; i++) {
        nos[i] = i + 1;
        seeds[i] = 0x40;
    }
    struct plist pl;
    plist_make(&pl, nos, seeds, n);
    unsigned completes = 0, replaced = 0;
    for (int round = 0; round < 10; round++) {
        char key[32], id[STRATA_UPLOAD_ID_MAX + 1];
        snprintf(key, sizeof(key), "repl-%d", round);
        mpu_new(g1, b, key, id);
        mpu_fill(g1, inc, key, id, n, 0x40, b);
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        struct race_arg a[2] = {{g1, b, key, id, &pl, false, false, 0, false, -1, &go},
                                {g2, b, key, id, NULL, false, false, round * 700, true, -1, &go}};
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, race_thread, &a[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&go);
        /* The complete first (the part then finds the upload gone), or the
         * part first (its new ETag is not the one listed). */
        assert_true((a[0].rc == 0) != (a[1].rc == 0));
        if (a[0].rc == 0) {
            completes++;
            assert_int_equal(a[1].rc, STRATA_ENOTFOUND);
        } else {
            replaced++;
            assert_int_equal(a[0].rc, STRATA_EBADPART);
            struct strata_mpu_info mi;
            assert_int_equal(strata_mpu_get(g1, b, key, id, &mi), 0);
        }
    }
    print_message("complete of %u parts against a part replaced, 10 rounds: %u completes, "
                  "%u replacements first\n",
                  n, completes, replaced);
    plist_free(&pl);
    free(nos);
    free(seeds);
}

#define INM_UPLOADS 4

static void test_mpu_complete_if_none_match(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "mpi-%s", run);
    uint64_t inc = mk_bucket(b);
    unsigned nos[] = {1};
    uint8_t seeds[] = {0x50};
    struct plist pl;
    plist_make(&pl, nos, seeds, 1);
    for (int round = 0; round < RACE_ROUNDS; round++) {
        char key[32], id[INM_UPLOADS][STRATA_UPLOAD_ID_MAX + 1];
        snprintf(key, sizeof(key), "inm-%d", round);
        for (int i = 0; i < INM_UPLOADS; i++) {
            mpu_new(i % 2 ? g2 : g1, b, key, id[i]);
            assert_int_equal(part_up(g1, b, key, id[i], 1, 0x50), 0);
        }
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, INM_UPLOADS);
        struct race_arg a[INM_UPLOADS];
        pthread_t th[INM_UPLOADS];
        for (int i = 0; i < INM_UPLOADS; i++) {
            a[i] = (struct race_arg){i % 2 ? g2 : g1, b, key, id[i], &pl, false, true, 0, false,
                                     -1, &go};
            pthread_create(&th[i], NULL, race_thread, &a[i]);
        }
        int wins = 0, lost = 0;
        for (int i = 0; i < INM_UPLOADS; i++) {
            pthread_join(th[i], NULL);
            wins += a[i].rc == 0;
            lost += a[i].rc == STRATA_EPRECOND;
        }
        pthread_barrier_destroy(&go);
        assert_int_equal(wins, 1);
        assert_int_equal(lost, INM_UPLOADS - 1);
        /* The losers' uploads are untouched: still live, parts kept. */
        assert_int_equal(shard_keys(g1, inc, key, 'p', NULL, NULL), INM_UPLOADS - 1);
        for (int i = 0; i < INM_UPLOADS; i++) {
            struct strata_mpu_info mi;
            assert_int_equal(strata_mpu_get(g2, b, key, id[i], &mi),
                             a[i].rc == 0 ? STRATA_ENOTFOUND : 0);
        }
    }
    plist_free(&pl);
}

struct ulist {
    char key[8][32];
    char id[8][STRATA_UPLOAD_ID_MAX + 1];
    int n;
};

static int ul_cb(const struct strata_mpu_list_entry *e, void *ud)
{
    struct ulist *u = ud;
    assert_true(u->n < 8);
    snprintf(u->key[u->n], sizeof(u->key[0]), "%s", e->key);
    snprintf(u->id[u->n], sizeof(u->id[0]), "%s", e->is_prefix ? "" : e->info->upload_id);
    u->n++;
    return 0;
}

static void test_mpu_uploads_scan(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "mpl-%s", run);
    mk_bucket(b);
    /* Keys on several shards; two uploads of "d/b". */
    const char *keys[] = {"a", "d/a", "d/b", "d/b", "d/c/x", "e", "z"};
    char ids[7][STRATA_UPLOAD_ID_MAX + 1];
    for (int i = 0; i < 7; i++)
        mpu_new(i % 2 ? g1 : g2, b, keys[i], ids[i]);
    if (strcmp(ids[2], ids[3]) > 0) { /* order of the two uploads of d/b */
        char t[STRATA_UPLOAD_ID_MAX + 1];
        memcpy(t, ids[2], sizeof(t));
        memcpy(ids[2], ids[3], sizeof(t));
        memcpy(ids[3], t, sizeof(t));
    }
    /* A completed upload is not listed. */
    char done_id[STRATA_UPLOAD_ID_MAX + 1];
    mpu_new(g1, b, "d/done", done_id);
    assert_int_equal(part_up(g1, b, "d/done", done_id, 1, 0x60), 0);
    unsigned nos[] = {1};
    uint8_t seeds[] = {0x60};
    struct plist pl;
    plist_make(&pl, nos, seeds, 1);
    assert_int_equal(mpu_done(g2, b, "d/done", done_id, &pl, false, NULL), 0);
    plist_free(&pl);

    /* The whole scan: key order, then upload id. */
    struct strata_meta__scan_spec spec = {.bucket = b, .kind = STRATA_META__SCAN_UPLOADS};
    struct strata_meta__scan *sc;
    struct strata_meta__scan_ent e;
    assert_int_equal(g2->store->scan_open(g2, &spec, &sc), 0);
    for (int i = 0; i < 7; i++) {
        assert_int_equal(g2->store->scan_next(sc, &e), 1);
        assert_string_equal(e.key, keys[i]);
        assert_int_equal(e.keylen, strlen(keys[i]));
        assert_string_equal(e.upload->upload_id, ids[i]);
    }
    assert_int_equal(g2->store->scan_next(sc, &e), 0);
    g2->store->scan_close(sc);
    /* Prefix "d/", after "d/b" + its first upload: the second upload of
     * d/b, then d/c/x. */
    uint8_t up[UPLOAD_LEN];
    assert_int_equal(strata_meta__upload_id_parse(ids[2], up), 0);
    spec.prefix = "d/";
    spec.after = "d/b";
    spec.after_sk = up;
    assert_int_equal(g1->store->scan_open(g1, &spec, &sc), 0);
    assert_int_equal(g1->store->scan_next(sc, &e), 1);
    assert_string_equal(e.key, "d/b");
    assert_string_equal(e.upload->upload_id, ids[3]);
    assert_int_equal(g1->store->scan_next(sc, &e), 1);
    assert_string_equal(e.key, "d/c/x");
    assert_int_equal(g1->store->scan_next(sc, &e), 0);
    g1->store->scan_close(sc);
    /* after a key alone: past all its uploads. */
    spec.after_sk = NULL;
    assert_int_equal(g1->store->scan_open(g1, &spec, &sc), 0);
    assert_int_equal(g1->store->scan_next(sc, &e), 1);
    assert_string_equal(e.key, "d/c/x");
    g1->store->scan_close(sc);
    /* skip_past a prefix: one seek past d/ lands on e. */
    spec.prefix = NULL;
    spec.after = NULL;
    assert_int_equal(g1->store->scan_open(g1, &spec, &sc), 0);
    assert_int_equal(g1->store->scan_next(sc, &e), 1);
    assert_string_equal(e.key, "a");
    assert_int_equal(g1->store->scan_next(sc, &e), 1);
    assert_string_equal(e.key, "d/a");
    assert_true(g1->store->scan_skip_past(sc, "d/", 2));
    assert_int_equal(g1->store->scan_next(sc, &e), 1);
    assert_string_equal(e.key, "e");
    g1->store->scan_close(sc);
    /* ListMultipartUploads' rules over it: delimiter and markers. */
    struct ulist ul = {0};
    struct strata_mpu_list_opts lo = {.bucket = b, .delimiter = "/"};
    struct strata_mpu_list_result lr;
    assert_int_equal(strata_mpu_list(g1, &lo, ul_cb, &ul, &lr), 0);
    assert_int_equal(ul.n, 4);
    assert_string_equal(ul.key[0], "a");
    assert_string_equal(ul.key[1], "d/");
    assert_string_equal(ul.key[2], "e");
    assert_string_equal(ul.key[3], "z");
    memset(&ul, 0, sizeof(ul));
    lo = (struct strata_mpu_list_opts){.bucket = b, .prefix = "d/", .max_uploads = 2};
    assert_int_equal(strata_mpu_list(g2, &lo, ul_cb, &ul, &lr), 0);
    assert_int_equal(ul.n, 2);
    assert_true(lr.truncated);
    assert_string_equal(lr.next_key_marker, "d/b");
    assert_string_equal(lr.next_upload_id_marker, ids[2]);
    memset(&ul, 0, sizeof(ul));
    char km[STRATA_KEY_MAX + 1], um[STRATA_UPLOAD_ID_MAX + 1];
    snprintf(km, sizeof(km), "%s", lr.next_key_marker);
    snprintf(um, sizeof(um), "%s", lr.next_upload_id_marker);
    lo.key_marker = km;
    lo.upload_id_marker = um;
    lo.max_uploads = 10;
    assert_int_equal(strata_mpu_list(g2, &lo, ul_cb, &ul, &lr), 0);
    assert_int_equal(ul.n, 2);
    assert_string_equal(ul.id[0], ids[3]);
    assert_string_equal(ul.key[1], "d/c/x");
    assert_false(lr.truncated);
}

/* n part records put straight into the shard (the figures' fill: the
 * part_put path is measured by the tests above), then completes timed. */
static void mpu_fill(struct strata_meta *m, uint64_t inc, const char *key, const char *id,
                     unsigned n, uint8_t seed, const char *bucket)
{
    char oid[48], pk[RADOS_IKEY_MAX + 64];
    key_oid(oid, inc, key);
    size_t o = strata_meta__rados_ikey(pk, 'p', key, strlen(key));
    const unsigned batch = 1000;
    char **ks = calloc(batch, sizeof(*ks)), **vs = calloc(batch, sizeof(*vs));
    size_t *ls = calloc(batch, sizeof(*ls));
    for (unsigned from = 1; from <= n; from += batch) {
        unsigned cnt = n - from + 1 < batch ? n - from + 1 : batch;
        for (unsigned i = 0; i < cnt; i++) {
            struct meta_part p;
            part_make(&p, from + i, 5u << 20, seed);
            assert_int_equal(strata_meta__part_encode(&p, bucket, key, &vs[i], &ls[i]), 0);
            ks[i] = malloc(o + 40);
            memcpy(ks[i], pk, o);
            snprintf(ks[i] + o, 40, "%s/%04x", id, from + i);
        }
        rados_write_op_t op = rados_create_write_op();
        rados_write_op_omap_set(op, (const char *const *)ks, (const char *const *)vs, ls, cnt);
        assert_int_equal(rados_write_op_operate(op, raw(m), oid, NULL, 0), 0);
        rados_release_write_op(op);
        for (unsigned i = 0; i < cnt; i++) {
            free(ks[i]);
            free(vs[i]);
        }
    }
    free(ks);
    free(vs);
    free(ls);
}

/* Completes of uploads of nparts parts (runs samples); p50 in ms. */
static double complete_p50(const char *b, uint64_t inc, unsigned nparts, int runs)
{
    int64_t *us = calloc((size_t)runs, sizeof(*us));
    unsigned *nos = calloc(nparts, sizeof(*nos));
    uint8_t *seeds = calloc(nparts, 1);
    for (unsigned i = 0; i < nparts; i++) {
        nos[i] = i + 1;
        seeds[i] = 0x70;
    }
    struct plist pl;
    plist_make(&pl, nos, seeds, nparts);
    for (int r = 0; r < runs; r++) {
        char key[48], id[STRATA_UPLOAD_ID_MAX + 1];
        snprintf(key, sizeof(key), "many-%u-%d", nparts, r);
        mpu_new(g1, b, key, id);
        mpu_fill(g1, inc, key, id, nparts, 0x70, b);
        int64_t t0 = mono_us();
        struct strata_obj_info info;
        assert_int_equal(mpu_done(g2, b, key, id, &pl, false, &info), 0);
        us[r] = mono_us() - t0;
        assert_int_equal(info.size, (uint64_t)nparts * (5u << 20));
        strata_obj_info_fini(&info);
        /* Applied whole: the parts gone, the table in its chunks. */
        assert_int_equal(shard_keys(g1, inc, key, 'p', NULL, NULL), 0);
        assert_int_equal(shard_keys(g1, inc, key, 't', NULL, NULL),
                         (nparts + MP_CHUNK_PARTS - 1) / MP_CHUNK_PARTS);
    }
    qsort(us, (size_t)runs, sizeof(*us), cmp_i64);
    double p50 = us[runs / 2] / 1000.0;
    print_message("complete of %u parts (one guarded op), %d runs: p50 %.1f ms, min %.1f, "
                  "max %.1f ms\n",
                  nparts, runs, p50, us[0] / 1000.0, us[runs - 1] / 1000.0);
    plist_free(&pl);
    free(us);
    free(nos);
    free(seeds);
    return p50;
}

static void test_mpu_complete_figures(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "mpf-%s", run);
    uint64_t inc = mk_bucket(b);
    complete_p50(b, inc, 1000, 9);
    const char *big = getenv("STRATA_TEST_RADOS_MPU_10K");
    if (big && *big)
        complete_p50(b, inc, 10000, 5);
}

/* ---- the due index (e/) and its DUE scan ---- */

/* A new version whose mtime is mtime_ns: the rules' own decide on a view
 * whose clock says so (the due index is keyed by it). */
struct putat {
    struct putc p;
    int64_t mtime_ns;
};

static int putat_decide(void *ud, const struct strata_meta__key_view *v,
                        struct strata_meta__key_edit *e)
{
    struct putat *a = ud;
    struct strata_meta__key_view w = *v;
    w.now_ns = a->mtime_ns;
    return put_decide(&a->p, &w, e);
}

static int put_at(struct strata_meta *m, const char *bucket, uint64_t inc, const char *key,
                  int64_t mtime_ns, int versioning, uint8_t sk[16])
{
    struct putat a;
    memset(&a, 0, sizeof(a));
    a.p.rec.flags = REC_F_INLINE;
    a.p.rec.size = 1;
    snprintf(a.p.rec.etag, sizeof(a.p.rec.etag), "e-t");
    snprintf(a.p.rec.storage_class, sizeof(a.p.rec.storage_class), "STANDARD");
    a.p.data = "t";
    a.p.len = 1;
    a.p.versioning = versioning;
    a.mtime_ns = mtime_ns;
    struct strata_meta__key_txn t = {.bucket = bucket,
                                     .key = key,
                                     .incarnation = inc,
                                     .hold_bucket = true,
                                     .want = strata_meta__version_want(versioning),
                                     .decide = putat_decide,
                                     .ud = &a};
    int rc = m->store->key_txn(m, &t);
    if (rc == 0 && sk)
        memcpy(sk, a.p.sk, 16);
    return rc;
}

struct due_seen {
    int n;
    char key[64][32];
    uint8_t sk[64][16];
    int64_t ms[64];
};

/* Every entry of a DUE scan of [from, to), checked oldest first. */
static int due_scan(struct strata_meta *m, const char *bucket, int64_t from, int64_t to,
                    struct due_seen *out)
{
    struct strata_meta__scan_spec spec = {
        .bucket = bucket, .kind = STRATA_META__SCAN_DUE, .from_ms = from, .to_ms = to};
    struct strata_meta__scan *sc;
    int rc = m->store->scan_open(m, &spec, &sc);
    if (rc)
        return rc;
    struct strata_meta__scan_ent e;
    memset(out, 0, sizeof(*out));
    while ((rc = m->store->scan_next(sc, &e)) == 1) {
        assert_true(out->n < 64);
        assert_true(e.due_ms >= from && e.due_ms < to);
        if (out->n)
            assert_true(e.due_ms >= out->ms[out->n - 1]);
        assert_int_equal(e.keylen, strlen(e.key));
        snprintf(out->key[out->n], sizeof(out->key[0]), "%s", e.key);
        memcpy(out->sk[out->n], e.sk, 16);
        out->ms[out->n++] = e.due_ms;
    }
    m->store->scan_close(sc);
    assert_int_equal(rc, 0);
    return 0;
}

#define DUE_KEYS 48
#define DUE_T0   1700000000000LL /* ms */

static void test_due_scan(void **state)
{
    (void)state;
    char b[64], other[64];
    snprintf(b, sizeof(b), "due-%s", run);
    snprintf(other, sizeof(other), "due2-%s", run);
    uint64_t inc = mk_bucket(b), inc2 = mk_bucket(other);
    /* Key order and time order differ: key i is the (i * 29 % 48)-th oldest. */
    uint8_t sks[DUE_KEYS][16];
    unsigned shards = 0;
    for (int i = 0; i < DUE_KEYS; i++) {
        char key[32];
        snprintf(key, sizeof(key), "d/%02d", i);
        int64_t ms = DUE_T0 + (int64_t)(i * 29 % DUE_KEYS) * 1000;
        assert_int_equal(
            put_at(i % 2 ? g2 : g1, b, inc, key, ms * 1000000, STRATA_VERSIONING_ENABLED, sks[i]),
            0);
        shards |= 1u << strata_meta__rados_idx_shard(key, strlen(key));
    }
    assert_true(__builtin_popcount(shards) >= 4); /* a merge over shards, not one */
    /* Not a whole ms: due in the ms it falls in. */
    uint8_t odd[16];
    int64_t last_ms = DUE_T0 + DUE_KEYS * 1000;
    assert_int_equal(
        put_at(g1, b, inc, "odd", last_ms * 1000000 + 999999, STRATA_VERSIONING_ENABLED, odd), 0);
    assert_int_equal(
        put_at(g1, other, inc2, "elsewhere", DUE_T0 * 1000000, STRATA_VERSIONING_ENABLED, NULL), 0);
    static struct due_seen s;
    assert_int_equal(due_scan(g2, b, DUE_T0, last_ms, &s), 0);
    assert_int_equal(s.n, DUE_KEYS);
    for (int j = 0; j < DUE_KEYS; j++) {
        int i = 0;
        while (i * 29 % DUE_KEYS != j)
            i++;
        char key[32];
        snprintf(key, sizeof(key), "d/%02d", i);
        assert_string_equal(s.key[j], key);
        assert_memory_equal(s.sk[j], sks[i], 16);
        assert_int_equal(s.ms[j], DUE_T0 + j * 1000);
    }
    /* A window: [5 s, 15 s) holds the 5th to the 14th oldest. */
    assert_int_equal(due_scan(g1, b, DUE_T0 + 5000, DUE_T0 + 15000, &s), 0);
    assert_int_equal(s.n, 10);
    assert_int_equal(s.ms[0], DUE_T0 + 5000);
    assert_int_equal(s.ms[9], DUE_T0 + 14000);
    /* Bounds: from is in, to is out. */
    assert_int_equal(due_scan(g1, b, DUE_T0 + 5000, DUE_T0 + 5001, &s), 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(due_scan(g1, b, DUE_T0 + 5001, DUE_T0 + 6000, &s), 0);
    assert_int_equal(s.n, 0);
    assert_int_equal(due_scan(g1, b, last_ms, last_ms + 1, &s), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.key[0], "odd");
    assert_memory_equal(s.sk[0], odd, 16);
    assert_int_equal(due_scan(g1, b, 0, DUE_T0, &s), 0);
    assert_int_equal(s.n, 0);
    /* The other bucket's entry is its own. */
    assert_int_equal(due_scan(g1, other, 0, INT64_MAX / 1000000, &s), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.key[0], "elsewhere");
    struct strata_meta__scan *sc;
    struct strata_meta__scan_spec bad = {
        .bucket = b, .kind = STRATA_META__SCAN_DUE, .from_ms = 10, .to_ms = 10};
    assert_int_equal(g1->store->scan_open(g1, &bad, &sc), STRATA_EINVAL);
}

/* The e/ keys in a shard object. */
static int ekeys(struct strata_meta *m, const char *oid, char out[8][RADOS_EKEY_MAX])
{
    rados_read_op_t op = rados_create_read_op();
    rados_omap_iter_t it;
    unsigned char more = 0;
    int pr = 0, n = 0;
    rados_read_op_omap_get_vals2(op, "", "e/", 100, &it, &more, &pr);
    assert_int_equal(rados_read_op_operate(op, raw(m), oid, 0), 0);
    char *k, *v;
    size_t vl;
    while (rados_omap_get_next(it, &k, &v, &vl) == 0 && k) {
        assert_true(n < 8);
        assert_int_equal(vl, 0);
        snprintf(out[n++], RADOS_EKEY_MAX, "%s", k);
    }
    rados_omap_get_end(it);
    rados_release_read_op(op);
    return n;
}

static void test_due_removed_with_version(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "duerm-%s", run);
    uint64_t inc = mk_bucket(b);
    uint8_t sk1[16], sk2[16];
    int64_t t = DUE_T0 * 1000000;
    assert_int_equal(put_at(g1, b, inc, "r\x01k", t, STRATA_VERSIONING_ENABLED, sk1), 0);
    assert_int_equal(put_at(g2, b, inc, "r\x01k", t + 1000000, STRATA_VERSIONING_ENABLED, sk2), 0);
    char oid[48], e[8][RADOS_EKEY_MAX], want[RADOS_EKEY_MAX];
    key_oid(oid, inc, "r\x01k");
    assert_int_equal(ekeys(g1, oid, e), 2);
    strata_meta__rados_ekey(want, "r\x01k", 3, sk1);
    assert_string_equal(e[0], want);
    assert_memory_equal(want, "e/17979cfe362a0000\x01r\x02\x01k\x01", 24); /* the layout */
    /* A version removed for good takes its entry with it (one op). */
    assert_int_equal(remove_vid(g2, b, "r\x01k", sk2), 0);
    assert_int_equal(ekeys(g1, oid, e), 1);
    assert_string_equal(e[0], want);
    static struct due_seen s;
    assert_int_equal(due_scan(g1, b, 0, DUE_T0 + 10, &s), 0);
    assert_int_equal(s.n, 1);
    assert_memory_equal(s.sk[0], sk1, 16);
    assert_int_equal(remove_vid(g1, b, "r\x01k", sk1), 0);
    assert_int_equal(ekeys(g1, oid, e), 0);
    assert_int_equal(due_scan(g1, b, 0, DUE_T0 + 10, &s), 0);
    assert_int_equal(s.n, 0);
    /* Unversioned: each PUT replaces the null version, and its entry. */
    uint8_t skn[16];
    for (int i = 0; i < 3; i++)
        assert_int_equal(put_at(i % 2 ? g2 : g1, b, inc, "null-key", t + i * 1000000,
                                STRATA_VERSIONING_OFF, skn),
                         0);
    key_oid(oid, inc, "null-key");
    assert_int_equal(ekeys(g1, oid, e), 1);
    strata_meta__rados_ekey(want, "null-key", 8, skn);
    assert_string_equal(e[0], want);
    assert_int_equal(due_scan(g2, b, 0, DUE_T0 + 10, &s), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.key[0], "null-key");
    assert_int_equal(s.ms[0], DUE_T0 + 2);
}

/* ---- transition intents (x/) ---- */

/* A version whose data is data id `id` on tier `tier` (not inline). */
static void put_data(struct strata_meta *m, const char *bucket, uint64_t inc, const char *key,
                     const uint8_t id[16], uint8_t sk[16])
{
    struct putc p;
    memset(&p, 0, sizeof(p));
    p.rec.size = 100;
    p.rec.has_data_id = true;
    memcpy(p.rec.data_id, id, 16);
    snprintf(p.rec.etag, sizeof(p.rec.etag), "e-data");
    snprintf(p.rec.storage_class, sizeof(p.rec.storage_class), "STANDARD");
    p.versioning = STRATA_VERSIONING_ENABLED;
    struct strata_meta__key_txn t = {.bucket = bucket,
                                     .key = key,
                                     .incarnation = inc,
                                     .hold_bucket = true,
                                     .want = strata_meta__version_want(p.versioning),
                                     .decide = put_decide,
                                     .ud = &p};
    /* Its data's pending entry first, as a PUT writes it (the commit
     * removes it, and refuses a record whose entry is gone). */
    assert_int_equal(m->store->pending_add(m, bucket, inc, key, NULL, id), 0);
    assert_int_equal(m->store->key_txn(m, &t), 0);
    memcpy(sk, p.sk, 16);
}

/* An intent's bytes as transition.c writes them (meta_internal.h): from
 * the hot tier (old id) to "warm" (new id). */
static size_t intent_bytes(char *out, const uint8_t old[16], const uint8_t nw[16])
{
    size_t o = 0;
    out[o++] = VAL_VERSION_BYTE;
    const char head[] = "\x85\x00\x01\x01\xa0\x02\xa4warm\x03\x91\xc4\x10";
    memcpy(out + o, head, sizeof(head) - 1);
    o += sizeof(head) - 1;
    memcpy(out + o, old, 16);
    o += 16;
    memcpy(out + o, "\x04\x91\xc4\x10", 4);
    o += 4;
    memcpy(out + o, nw, 16);
    return o + 16;
}

/* The g/ entries of a shard object: count, and whether one names id with
 * the value gc.c reads: the tier's name, "-" for the hot tier (""). */
static int gents(struct strata_meta *m, const char *oid, const uint8_t id[16], const char *tier,
                 bool *found)
{
    char idhex[33];
    strata_meta__rados_sk_hex(id, idhex);
    const char *want = *tier ? tier : "-";
    size_t wl = strlen(want);
    rados_read_op_t op = rados_create_read_op();
    rados_omap_iter_t it;
    unsigned char more = 0;
    int pr = 0, n = 0;
    rados_read_op_omap_get_vals2(op, "", "g/", 100, &it, &more, &pr);
    assert_int_equal(rados_read_op_operate(op, raw(m), oid, 0), 0);
    char *k, *v;
    size_t vl;
    *found = false;
    int64_t now = (int64_t)time(NULL) * 1000;
    while (rados_omap_get_next(it, &k, &v, &vl) == 0 && k) {
        n++;
        /* g/DUE/ID: due 15 min from now, 16 hex ms */
        assert_int_equal(strlen(k), 2 + 16 + 1 + 32);
        int64_t due = (int64_t)strtoull(k + 2, NULL, 16);
        assert_true(due > now + 14 * 60 * 1000 && due < now + 16 * 60 * 1000);
        if (strcmp(k + 19, idhex) == 0 && vl == wl && memcmp(v, want, wl) == 0)
            *found = true;
    }
    rados_omap_get_end(it);
    rados_release_read_op(op);
    return n;
}

static bool intent_listed(struct strata_meta *m, const char *bucket, const char *key,
                          const uint8_t sk[16])
{
    struct strata_meta__scan_spec spec = {.kind = STRATA_META__SCAN_INTENTS};
    struct strata_meta__scan *sc;
    assert_int_equal(m->store->scan_open(m, &spec, &sc), 0);
    struct strata_meta__scan_ent e;
    bool seen = false;
    int rc;
    while ((rc = m->store->scan_next(sc, &e)) == 1)
        seen = seen || (strcmp(e.bucket, bucket) == 0 && strcmp(e.key, key) == 0 &&
                        memcmp(e.sk, sk, 16) == 0);
    m->store->scan_close(sc);
    assert_int_equal(rc, 0);
    return seen;
}

/* A transition's switch: the record names the copy on another tier. */
static int switch_to_cb(void *ud, const uint8_t *sk, const struct meta_rec *cur,
                        struct meta_edit *e)
{
    (void)sk;
    (void)cur;
    const struct meta_edit *to = ud;
    e->tier = to->tier;
    e->storage_class = to->storage_class;
    e->set_data_id = true;
    memcpy(e->data_id, to->data_id, 16);
    return 0;
}

static void test_intent_resolve(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "tr1-%s", run);
    uint64_t inc = mk_bucket(b);
    const struct strata_meta__store_ops *ops = g1->store;
    uint8_t a[16], nb[16], sk[16];
    memset(a, 0xa1, 16);
    memset(nb, 0xb2, 16);
    char iv[128];
    size_t ivl = intent_bytes(iv, a, nb);
    char oid[48], *got;
    size_t gl;
    bool found;
    uint64_t n;

    /* Not switched (a crash before the switch): the record still names
     * the source, so the copy on "warm" loses. */
    put_data(g1, b, inc, "stay", a, sk);
    assert_int_equal(ops->intent_put(g1, b, "stay", sk, iv, ivl), 0);
    assert_int_equal(g2->store->intent_get(g2, b, "stay", sk, &got, &gl), 0);
    assert_int_equal(gl, ivl);
    assert_memory_equal(got, iv, ivl);
    free(got);
    assert_true(intent_listed(g2, b, "stay", sk)); /* the scan finds what a crash left */
    key_oid(oid, inc, "stay");
    assert_int_equal(gents(g1, oid, nb, "warm", &found), 0);
    assert_int_equal(strata_meta_transition_reclaim(g2, &n), 0);
    assert_true(n >= 1);
    assert_int_equal(g1->store->intent_get(g1, b, "stay", sk, &got, &gl), STRATA_ENOTFOUND);
    assert_int_equal(gents(g1, oid, nb, "warm", &found), 1);
    assert_true(found);
    assert_false(intent_listed(g1, b, "stay", sk));

    /* Switched (a crash after it): the record names the copy on "warm",
     * so the source loses. */
    snprintf(b, sizeof(b), "tr2-%s", run);
    inc = mk_bucket(b);
    put_data(g1, b, inc, "moved", a, sk);
    assert_int_equal(ops->intent_put(g1, b, "moved", sk, iv, ivl), 0);
    char vid[STRATA_VERSION_ID_MAX + 1];
    strata_meta__vid_format(sk, vid);
    struct meta_edit sw = {.tier = "warm", .storage_class = "WARM", .set_data_id = true};
    memcpy(sw.data_id, nb, 16);
    assert_int_equal(
        strata_meta__rec_rewrite(g2, b, "moved", vid, switch_to_cb, &sw, NULL, NULL), 0);
    assert_int_equal(strata_meta_transition_reclaim(g1, &n), 0);
    key_oid(oid, inc, "moved");
    assert_int_equal(gents(g1, oid, a, "", &found), 1);
    assert_true(found);
    gents(g1, oid, nb, "warm", &found);
    assert_false(found);
    assert_int_equal(g2->store->intent_get(g2, b, "moved", sk, &got, &gl), STRATA_ENOTFOUND);

    /* The version is gone: both copies lose.  Resolved twice (two
     * gateways): queued once. */
    uint8_t skg[16];
    snprintf(b, sizeof(b), "tr3-%s", run);
    inc = mk_bucket(b);
    put_data(g2, b, inc, "gone", a, skg);
    assert_int_equal(ops->intent_put(g2, b, "gone", skg, iv, ivl), 0);
    assert_int_equal(remove_vid(g1, b, "gone", skg), 0);
    struct strata_meta__intent_loss loss[2] = {{"", a}, {"warm", nb}};
    assert_int_equal(g1->store->intent_resolve(g1, b, "gone", skg, iv, ivl, loss, 2), 0);
    assert_int_equal(g2->store->intent_resolve(g2, b, "gone", skg, iv, ivl, loss, 2), 0);
    key_oid(oid, inc, "gone");
    assert_int_equal(gents(g1, oid, a, "", &found), 2);
    assert_true(found);
    gents(g1, oid, nb, "warm", &found);
    assert_true(found);
    assert_int_equal(g1->store->intent_get(g1, b, "gone", skg, &got, &gl), STRATA_ENOTFOUND);
}

/* ---- figures: the DUE scan over 10,000 versions (printed) ---- */

#define FIG_VERSIONS 10000
#define FIG_THREADS  4

struct fill_arg {
    struct strata_meta *m;
    const char *bucket;
    uint64_t inc;
    int from, to, fails;
};

static void *fill_thread(void *x)
{
    struct fill_arg *a = x;
    for (int i = a->from; i < a->to; i++) {
        char key[32];
        snprintf(key, sizeof(key), "f/%05d", (i * 7919) % FIG_VERSIONS);
        if (put_at(a->m, a->bucket, a->inc, key, (DUE_T0 + i) * 1000000, STRATA_VERSIONING_ENABLED,
                   NULL))
            a->fails++;
    }
    return NULL;
}

static void test_due_scan_figures(void **state)
{
    (void)state;
    char b[64];
    snprintf(b, sizeof(b), "duefig-%s", run);
    uint64_t inc = mk_bucket(b);
    pthread_t th[FIG_THREADS];
    struct fill_arg a[FIG_THREADS];
    for (int t = 0; t < FIG_THREADS; t++) {
        a[t] = (struct fill_arg){.m = t % 2 ? g2 : g1,
                                 .bucket = b,
                                 .inc = inc,
                                 .from = t * FIG_VERSIONS / FIG_THREADS,
                                 .to = (t + 1) * FIG_VERSIONS / FIG_THREADS};
        pthread_create(&th[t], NULL, fill_thread, &a[t]);
    }
    for (int t = 0; t < FIG_THREADS; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(a[t].fails, 0);
    }
    int64_t all[5], page[5];
    for (int r = 0; r < 5; r++) {
        struct strata_meta__scan_spec spec = {.bucket = b,
                                              .kind = STRATA_META__SCAN_DUE,
                                              .from_ms = DUE_T0,
                                              .to_ms = DUE_T0 + FIG_VERSIONS};
        struct strata_meta__scan *sc;
        int64_t t0 = mono_us();
        assert_int_equal(g1->store->scan_open(g1, &spec, &sc), 0);
        struct strata_meta__scan_ent e;
        int n = 0, rc;
        while ((rc = g1->store->scan_next(sc, &e)) == 1) {
            assert_int_equal(e.due_ms, DUE_T0 + n); /* oldest first, every one */
            if (++n == 1000)
                page[r] = mono_us() - t0;
        }
        all[r] = mono_us() - t0;
        g1->store->scan_close(sc);
        assert_int_equal(rc, 0);
        assert_int_equal(n, FIG_VERSIONS);
    }
    qsort(all, 5, sizeof(all[0]), cmp_i64);
    qsort(page, 5, sizeof(page[0]), cmp_i64);
    print_message("DUE scan over %d versions on 8 shards (5 runs): whole range p50 %" PRId64
                  " ms (min %" PRId64 ", max %" PRId64 "), first 1,000 entries p50 %" PRId64
                  " ms\n",
                  FIG_VERSIONS, all[2] / 1000, all[0] / 1000, all[4] / 1000, page[2] / 1000);
}

int main(void)
{
    if (!rados_test_env(&opts, "test_store_rados"))
        return 77;
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
        cmocka_unit_test(test_key_put_read),
        cmocka_unit_test(test_key_if_none_match_race),
        cmocka_unit_test(test_key_rewrite_remove),
        cmocka_unit_test(test_bucket_delete_closes_shards),
        cmocka_unit_test(test_key_unversioned_overwrite),
        cmocka_unit_test(test_scan_order),
        cmocka_unit_test(test_scan_skip_past),
        cmocka_unit_test(test_scan_empty),
        cmocka_unit_test(test_scan_pages_continue),
        cmocka_unit_test(test_scan_version_pages_continue),
        cmocka_unit_test(test_key_scan_figures),
        cmocka_unit_test(test_get_head_across_gateways),
        cmocka_unit_test(test_get_null),
        cmocka_unit_test(test_get_inline_corrupt),
        cmocka_unit_test(test_cached_record_never_shows_old_incarnation),
        cmocka_unit_test(test_scan_current_heads),
        cmocka_unit_test(test_mpu_two_gateways),
        cmocka_unit_test(test_stale_incarnation_is_retried_not_404),
        cmocka_unit_test(test_mpu_complete_as),
        cmocka_unit_test(test_mpu_abort_removes),
        cmocka_unit_test(test_mpu_complete_races_abort),
        cmocka_unit_test(test_mpu_complete_races_part),
        cmocka_unit_test(test_mpu_complete_if_none_match),
        cmocka_unit_test(test_mpu_uploads_scan),
        cmocka_unit_test(test_mpu_complete_figures),
        cmocka_unit_test(test_due_scan),
        cmocka_unit_test(test_due_removed_with_version),
        cmocka_unit_test(test_intent_resolve),
        cmocka_unit_test(test_due_scan_figures),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
