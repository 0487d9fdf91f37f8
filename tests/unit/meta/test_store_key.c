/*
 * test_store_key.c - the store seam's key_txn and key_read (store.h),
 * driven directly on the local backend over real RocksDB stores: decide
 * sees the versions asked for; a refusal (or an edit of nothing) leaves
 * every drive's records and version-time index byte for byte as they were;
 * If-None-Match / If-Match are decided from the view; an inline object's
 * bytes are split into per-drive shards behind the seam (GET reads them
 * back); decide run twice on one view gives the same edit; the audit entry
 * an edit carries is appended once, before the apply or after a refusal;
 * with the write quorum lost the txn fails and nothing is left half
 * applied on the drives that took it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>

#include "meta_internal.h"
#include "meta_test_util.h"
#include "store.h"

/* Every 'D' and 'O' key of drive d with its value, as one byte string. */
static char *snapshot(struct mt_env *e, unsigned d, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    rocksdb_readoptions_t *ro;
    rocksdb_iterator_t *it = strata_meta__iter_new(e->m, 0, d, &ro, "P", 1, true);
    assert_non_null(it);
    for (rocksdb_iter_seek(it, "D", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(it, &kl);
        const char *v = rocksdb_iter_value(it, &vl);
        while (n + kl + vl + 2 * sizeof(size_t) > cap) {
            cap *= 2;
            s = realloc(s, cap);
            assert_non_null(s);
        }
        memcpy(s + n, &kl, sizeof(kl));
        n += sizeof(kl);
        memcpy(s + n, k, kl);
        n += kl;
        memcpy(s + n, &vl, sizeof(vl));
        n += sizeof(vl);
        memcpy(s + n, v, vl);
        n += vl;
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    *len = n;
    return s;
}

struct snaps {
    char *s[MT_DRIVES];
    size_t l[MT_DRIVES];
};

static void snap_take(struct mt_env *e, struct snaps *sn)
{
    for (unsigned d = 0; d < MT_DRIVES; d++)
        sn->s[d] = e->m->sets[0].drives[d].db ? snapshot(e, d, &sn->l[d]) : NULL;
}

static void snap_same(struct mt_env *e, struct snaps *sn)
{
    for (unsigned d = 0; d < MT_DRIVES; d++) {
        if (!sn->s[d])
            continue;
        size_t l;
        char *now = snapshot(e, d, &l);
        assert_int_equal(l, sn->l[d]);
        assert_memory_equal(now, sn->s[d], l);
        free(now);
        free(sn->s[d]);
    }
}

/* A decide that puts an inline version (the view's rules: versioning,
 * conditions), then answers refuse (0: apply). */
struct put_dec {
    int versioning;
    const char *if_match;
    bool inm;
    const char *data;
    int refuse;
    bool audit; /* ask for an audit entry */
    struct meta_rec r;
    struct strata_meta__key_edit e;
    int calls;
    struct strata_meta__key_view seen;
};

static int put_dec_fn(void *ud, const struct strata_meta__key_view *v,
                      struct strata_meta__key_edit *e)
{
    struct put_dec *x = ud;
    x->calls++;
    x->seen = *v;
    memset(&x->r, 0, sizeof(x->r));
    x->r.flags = REC_F_INLINE;
    x->r.size = strlen(x->data);
    snprintf(x->r.etag, sizeof(x->r.etag), "e-%s", x->data);
    snprintf(x->r.storage_class, sizeof(x->r.storage_class), "STANDARD");
    e->inline_data = x->data;
    e->inline_len = x->r.size;
    int rc = strata_meta__version_decide(v, x->versioning, &x->r, x->if_match, x->inm, e);
    if (x->audit) {
        e->audit.any = true;
        e->audit.action = "TestAction";
        e->audit.outcome = x->refuse ? "denied" : "allowed";
        snprintf(e->audit.version_id, sizeof(e->audit.version_id), "-");
    }
    x->e = *e;
    return rc ? rc : x->refuse;
}

static int txn_put(struct mt_env *e, const char *key, struct put_dec *x)
{
    struct strata_meta__key_txn t = {
        .bucket = "b",
        .key = key,
        .want = strata_meta__version_want(x->versioning),
        .want_copies = true,
        .decide = put_dec_fn,
        .ud = x,
    };
    return e->m->store->key_txn(e->m, &t);
}

static void expect_bytes(struct mt_env *e, const char *key, const char *want)
{
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, "b", key, NULL, &got, &gl), 0);
    assert_int_equal(gl, strlen(want));
    assert_memory_equal(got, want, gl);
    free(got);
}

static void test_refusal_changes_nothing(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("key-refuse");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_SUSPENDED), 0);
    assert_int_equal(mt_put(e, "b", "x", "v1", 2, NULL), 0);
    uint64_t seq0 = e->m->store->audit_last_seq(e->m);
    struct snaps sn;
    snap_take(e, &sn);
    /* decide built a full edit (a new null version replacing v1) and then
     * refused: nothing of it lands, its refusal is audited once. */
    struct put_dec x = {.versioning = STRATA_VERSIONING_SUSPENDED,
                        .data = "v2",
                        .refuse = STRATA_ELOCKED,
                        .audit = true};
    assert_int_equal(txn_put(e, "x", &x), STRATA_ELOCKED);
    assert_int_equal(x.calls, 1);
    assert_int_equal(x.e.op, STRATA_META__KEY_PUT);
    assert_int_equal(x.e.replace, STRATA_META__SLOT_NULL);
    snap_same(e, &sn);
    assert_int_equal(e->m->store->audit_last_seq(e->m), seq0 + 1);
    expect_bytes(e, "x", "v1");
    /* The same edit accepted: applied, its entry appended before it. */
    x.refuse = 0;
    assert_int_equal(txn_put(e, "x", &x), 0);
    assert_int_equal(e->m->store->audit_last_seq(e->m), seq0 + 2);
    expect_bytes(e, "x", "v2");
    /* The replaced null version is what the caller reclaims. */
    assert_true(x.e.reclaim.any);
    assert_true(x.e.reclaim.flags & REC_F_NULL);
    mt_teardown(e);
}

/* If-None-Match: * and If-Match, decided from the view's latest. */
static void test_conditions_from_view(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("key-cond");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_ENABLED), 0);
    struct put_dec a = {.versioning = STRATA_VERSIONING_ENABLED, .inm = true, .data = "first"};
    assert_int_equal(txn_put(e, "k", &a), 0);
    assert_int_equal(a.seen.latest.rc, STRATA_ENOTFOUND);
    expect_bytes(e, "k", "first"); /* the per-drive shards decode back */

    struct snaps sn;
    snap_take(e, &sn);
    struct put_dec b = {.versioning = STRATA_VERSIONING_ENABLED, .inm = true, .data = "second"};
    assert_int_equal(txn_put(e, "k", &b), STRATA_EPRECOND);
    assert_int_equal(b.seen.latest.rc, 0);
    assert_memory_equal(b.seen.latest.sk, a.e.sk, SORTKEY_LEN);
    struct put_dec c = {
        .versioning = STRATA_VERSIONING_ENABLED, .if_match = "e-other", .data = "second"};
    assert_int_equal(txn_put(e, "k", &c), STRATA_EPRECOND);
    struct put_dec d = {.versioning = STRATA_VERSIONING_ENABLED, .if_match = "*", .data = "second"};
    assert_int_equal(txn_put(e, "absent", &d), STRATA_ENOTFOUND);
    snap_same(e, &sn);
    expect_bytes(e, "k", "first");

    struct put_dec f = {
        .versioning = STRATA_VERSIONING_ENABLED, .if_match = "e-first", .data = "second"};
    assert_int_equal(txn_put(e, "k", &f), 0);
    expect_bytes(e, "k", "second");
    assert_false(f.e.reclaim.any); /* versioning enabled: first stays */
    /* key_read sees the committed version as the latest, applies nothing. */
    struct put_dec g = {.versioning = STRATA_VERSIONING_ENABLED, .inm = true, .data = "third"};
    struct strata_meta__key_txn t = {
        .bucket = "b", .key = "k", .want = STRATA_META__KEY_LATEST, .decide = put_dec_fn, .ud = &g};
    snap_take(e, &sn);
    assert_int_equal(e->m->store->key_read(e->m, &t), STRATA_EPRECOND);
    assert_memory_equal(g.seen.latest.sk, f.e.sk, SORTKEY_LEN);
    g.inm = false;
    assert_int_equal(e->m->store->key_read(e->m, &t), 0); /* decided PUT, nothing applied */
    snap_same(e, &sn);
    mt_teardown(e);
}

/* decide is a function of the view: run again, it returns the same edit.
 * Then refuses, so the txn applies nothing. */
static int rerun_fn(void *ud, const struct strata_meta__key_view *v,
                    struct strata_meta__key_edit *e)
{
    struct strata_meta__key_edit e2;
    memset(&e2, 0, sizeof(e2));
    struct meta_rec r1, r2;
    memset(&r1, 0, sizeof(r1));
    memset(&r2, 0, sizeof(r2));
    int rc1 = strata_meta__version_decide(v, STRATA_VERSIONING_SUSPENDED, &r1, NULL, false, e);
    int rc2 = strata_meta__version_decide(v, STRATA_VERSIONING_SUSPENDED, &r2, NULL, false, &e2);
    assert_int_equal(rc1, rc2);
    assert_int_equal(e->op, e2.op);
    assert_memory_equal(e->sk, e2.sk, SORTKEY_LEN);
    assert_int_equal(e->replace, e2.replace);
    assert_int_equal(e->tomb_ns, e2.tomb_ns);
    assert_int_equal(r1.mtime_ns, r2.mtime_ns);
    assert_int_equal(r1.flags, r2.flags);
    assert_memory_equal(&e->reclaim, &e2.reclaim, sizeof(e->reclaim));
    assert_int_equal(e->audit.any, e2.audit.any);
    /* The sort key comes from the view: its clock and random half. */
    uint8_t want[SORTKEY_LEN];
    strata_meta__sortkey_make(r1.mtime_ns, v->rand, want);
    assert_memory_equal(e->sk, want, SORTKEY_LEN);
    ++*(int *)ud;
    return rc1 ? rc1 : STRATA_EBUSY;
}

static void test_rerun_same_edit(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("key-rerun");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_SUSPENDED), 0);
    assert_int_equal(mt_put(e, "b", "x", "v1", 2, NULL), 0);
    int calls = 0;
    struct strata_meta__key_txn t = {.bucket = "b",
                                     .key = "x",
                                     .want = strata_meta__version_want(STRATA_VERSIONING_SUSPENDED),
                                     .decide = rerun_fn,
                                     .ud = &calls};
    struct snaps sn;
    snap_take(e, &sn);
    /* In a txn (rand filled), refused after the comparison (EBUSY: the
     * test's own refusal): nothing lands. */
    assert_int_equal(e->m->store->key_txn(e->m, &t), STRATA_EBUSY);
    assert_int_equal(calls, 1);
    snap_same(e, &sn);
    mt_teardown(e);
}

/* Object Lock refusal of a DeleteObject, decided in the view: denied,
 * audited once, the version untouched. */
static void test_locked_delete_refused(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("key-lock");
    assert_non_null(e);
    assert_int_equal(mt_lock_bucket(e, "b"), 0);
    struct strata_put_opts po;
    memset(&po, 0, sizeof(po));
    po.bucket = "b";
    po.key = "x";
    po.size = 4;
    po.lock.legal_hold = true;
    po.lock.legal_hold_set = true;
    struct strata_obj_info info;
    assert_int_equal(mt_put_opts(e, &po, "held", 4, 0, &info), 0);
    uint64_t seq0 = e->m->store->audit_last_seq(e->m);
    struct snaps sn;
    snap_take(e, &sn);
    struct strata_del_result dr;
    assert_int_equal(strata_obj_delete(e->m, "b", "x", info.version_id, &dr), STRATA_ELOCKED);
    snap_same(e, &sn);
    assert_int_equal(e->m->store->audit_last_seq(e->m), seq0 + 1);
    strata_obj_info_fini(&info);
    mt_teardown(e);
}

/* Reopen with drives 0 and 1 away (or back). */
static void two_drives(struct mt_env *e, bool away)
{
    mt_close(e);
    for (unsigned d = 0; d < 2; d++) {
        if (away)
            mt_drive_away(e, d);
        else
            mt_drive_back(e, d);
    }
    assert_int_equal(mt_open(e), 0);
}

/* Two of four drives away: the view still reads (read quorum), the apply
 * misses the write quorum, and the drives that took it are rolled back. */
static void test_quorum_lost(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("key-quorum");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_OFF), 0);
    assert_int_equal(mt_put(e, "b", "x", "v1", 2, NULL), 0);
    two_drives(e, true);
    struct snaps sn;
    snap_take(e, &sn);
    struct put_dec x = {.versioning = STRATA_VERSIONING_OFF, .data = "v2"};
    assert_int_equal(txn_put(e, "x", &x), STRATA_EQUORUM);
    assert_int_equal(x.calls, 1);
    assert_int_equal(x.seen.latest.rc, 0); /* decided on v1 */
    snap_same(e, &sn);
    two_drives(e, false);
    expect_bytes(e, "x", "v1");
    mt_teardown(e);
}

/* The same with a delete (a tombstone over the version, rolled back on the
 * drives that took it), then a versioned put (a new version beside the
 * old one, deleted again): nothing left half applied, the object intact. */
static void test_quorum_lost_remove_and_version(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("key-quorum-rm");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_OFF), 0);
    assert_int_equal(mt_put(e, "b", "x", "v1", 2, NULL), 0);
    assert_int_equal(mt_bucket(e, "v", STRATA_VERSIONING_ENABLED), 0);
    static const char big[] = "a version of some size, split into per-drive shards";
    assert_int_equal(mt_put(e, "v", "y", big, sizeof(big) - 1, NULL), 0);
    two_drives(e, true);
    struct snaps sn;
    snap_take(e, &sn);
    struct strata_del_result dr;
    assert_int_equal(strata_obj_delete(e->m, "b", "x", NULL, &dr), STRATA_EQUORUM);
    snap_same(e, &sn);
    snap_take(e, &sn);
    assert_int_equal(mt_put(e, "v", "y", "v2", 2, NULL), STRATA_EQUORUM);
    snap_same(e, &sn);
    two_drives(e, false);
    expect_bytes(e, "x", "v1");
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, "v", "y", NULL, &got, &gl), 0);
    assert_int_equal(gl, sizeof(big) - 1);
    assert_memory_equal(got, big, gl);
    free(got);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusal_changes_nothing),
        cmocka_unit_test(test_conditions_from_view),
        cmocka_unit_test(test_rerun_same_edit),
        cmocka_unit_test(test_locked_delete_refused),
        cmocka_unit_test(test_quorum_lost),
        cmocka_unit_test(test_quorum_lost_remove_and_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
