/*
 * test_store_local.c - the local backend behind the store seam (store.h):
 * the meta handle uses it; leases are always granted in any order of take,
 * renew and release (one process is the whole cluster) while bad names and
 * operations are refused as every backend refuses them; invalidation is a
 * no-op whose callback never runs, also across bucket and configuration
 * changes; the audit log's copies are read and counted through the ops;
 * bucket_txn hands decide the record as read and applies only what it
 * returns, and config_put is tied to the bucket's incarnation.  State documents, the clock's mark and the audit
 * chain keep their own tests (test_due, test_lock_clock, test_audit).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "meta_internal.h"
#include "meta_test_util.h"
#include "store.h"

static void test_handle_uses_local(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("store-local");
    assert_non_null(e);
    assert_ptr_equal(e->m->store, &strata_meta__store_local);
    assert_string_equal(e->m->store->name, "local");
    mt_teardown(e);
}

static void test_lease_contract(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("store-lease");
    assert_non_null(e);
    struct strata_meta *m = e->m;
    /* A pass: take, renew while working, release. */
    assert_int_equal(strata_meta_lease(m, "ilm", STRATA_LEASE_TAKE), 0);
    assert_int_equal(strata_meta_lease(m, "ilm", STRATA_LEASE_RENEW), 0);
    assert_int_equal(strata_meta_lease(m, "ilm", STRATA_LEASE_RENEW), 0);
    assert_int_equal(strata_meta_lease(m, "ilm", STRATA_LEASE_RELEASE), 0);
    /* Taking a held lease renews it; releasing one not held is no error. */
    assert_int_equal(strata_meta_lease(m, "gc", STRATA_LEASE_TAKE), 0);
    assert_int_equal(strata_meta_lease(m, "gc", STRATA_LEASE_TAKE), 0);
    assert_int_equal(strata_meta_lease(m, "gc", STRATA_LEASE_RELEASE), 0);
    assert_int_equal(strata_meta_lease(m, "gc", STRATA_LEASE_RELEASE), 0);
    /* Several leases at once. */
    assert_int_equal(strata_meta_lease(m, "ilm", STRATA_LEASE_TAKE), 0);
    assert_int_equal(strata_meta_lease(m, "audit", STRATA_LEASE_TAKE), 0);
    assert_int_equal(strata_meta_lease(m, "ilm", STRATA_LEASE_RELEASE), 0);
    assert_int_equal(strata_meta_lease(m, "audit", STRATA_LEASE_RELEASE), 0);

    /* Names become object names on RADOS: plain and short only. */
    char longname[STRATA_LEASE_NAME_MAX + 2];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = 0;
    const char *bad[] = {NULL, "", "ILM", "a/b", "a.b", "a b", longname};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(strata_meta_lease(m, bad[i], STRATA_LEASE_TAKE), STRATA_EINVAL);
    longname[STRATA_LEASE_NAME_MAX] = 0;
    assert_int_equal(strata_meta_lease(m, longname, STRATA_LEASE_TAKE), 0);
    assert_int_equal(strata_meta_lease(m, "re-shard_2", STRATA_LEASE_TAKE), 0);
    assert_int_equal(strata_meta_lease(m, "ilm", (enum strata_lease_op)7), STRATA_EINVAL);
    mt_teardown(e);
}

/* Queues on local drives are files of server/pqueue.c: the store keeps
 * none and says so. */
static void test_no_queues(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("store-queues");
    assert_non_null(e);
    struct strata_meta *m = e->m;
    assert_false(strata_meta_queues_shared(m));
    assert_false(strata_meta_queues_shared(NULL));
    struct strata_meta_queue_ent ent[1];
    size_t n = 7;
    uint64_t cnt = 7;
    const char *k = "k";
    assert_int_equal(strata_meta_queue_push(m, "notify.a", "x", 1), STRATA_ENOTIMPL);
    assert_int_equal(strata_meta_queue_read(m, "notify.a", "", 1, ent, &n), STRATA_ENOTIMPL);
    assert_int_equal(n, 0);
    assert_int_equal(strata_meta_queue_remove(m, "notify.a", &k, 1), STRATA_ENOTIMPL);
    assert_int_equal(strata_meta_queue_count(m, "notify.a", 10, &cnt), STRATA_ENOTIMPL);
    assert_int_equal(cnt, 0);
    assert_int_equal(strata_meta_queue_lease(m, "notify.a", STRATA_LEASE_TAKE), STRATA_ENOTIMPL);
    mt_teardown(e);
}

static void inval_cb(void *ud, const char *bucket)
{
    (void)bucket;
    ++*(int *)ud;
}

static void test_invalidate_noop(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("store-inval");
    assert_non_null(e);
    const struct strata_meta__store_ops *ops = e->m->store;
    int calls = 0;
    assert_int_equal(ops->on_invalidate(e->m, inval_cb, &calls), 0);
    assert_int_equal(mt_bucket(e, "inval", 0), 0);
    assert_int_equal(ops->invalidate(e->m, "inval"), 0);
    assert_int_equal(calls, 0); /* no other gateway: nothing to hear */
    /* The changes that invalidate (bucket.c) do not call it back either. */
    assert_int_equal(strata_meta_bucket_set_versioning(e->m, "inval", STRATA_VERSIONING_ENABLED),
                     0);
    assert_int_equal(strata_meta_bucket_config_put(e->m, "inval", "policy", "{}", 2), 0);
    assert_int_equal(strata_meta_bucket_delete(e->m, "inval"), 0);
    assert_int_equal(calls, 0);
    assert_int_equal(ops->on_invalidate(e->m, NULL, NULL), 0);
    mt_teardown(e);
}

static void test_audit_copies(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("store-audit");
    assert_non_null(e);
    const struct strata_meta__store_ops *ops = e->m->store;
    assert_int_equal(ops->audit_last_seq(e->m), 0); /* a new store: no entry */
    struct strata_audit_event ev = {.user = "-", .bucket = "b", .action = "Test",
                                    .outcome = "allowed"};
    assert_int_equal(strata_meta_audit_append(e->m, &ev), 0);
    assert_int_equal(strata_meta_audit_append(e->m, &ev), 0);
    assert_int_equal(ops->audit_last_seq(e->m), 2);

    /* Each drive holds a copy, read line by line with its newline. */
    for (int d = 0; d < MT_DRIVES; d++) {
        struct strata_meta__audit_copy *c;
        assert_int_equal(ops->audit_copy_open(e->drive[d], &c), 0);
        const char *line;
        size_t len;
        for (int i = 1; i <= 2; i++) {
            assert_int_equal(ops->audit_copy_next(c, &line, &len), 1);
            char want[32];
            int n = snprintf(want, sizeof(want), "{\"seq\":%d,", i);
            assert_true(len > (size_t)n && memcmp(line, want, (size_t)n) == 0);
            assert_int_equal(line[len - 1], '\n');
        }
        assert_int_equal(ops->audit_copy_next(c, &line, &len), 0);
        ops->audit_copy_close(c);
    }
    struct strata_meta__audit_copy *c = (void *)1;
    assert_int_equal(ops->audit_copy_open(e->root, &c), STRATA_ENOTFOUND);
    assert_null(c);
    ops->audit_copy_close(NULL);
    mt_teardown(e);
}

/* A decide that records what it saw and answers as told. */
struct txn_probe {
    int calls, before_calls;
    struct strata_meta__bucket_view seen;
    int rc, before_rc;
    enum strata_meta__bucket_edit edit;
    struct strata_bucket_info next;
};

static int probe_decide(void *ud, const struct strata_meta__bucket_view *view,
                        enum strata_meta__bucket_edit *edit, struct strata_bucket_info *next)
{
    struct txn_probe *p = ud;
    p->calls++;
    p->seen = *view;
    *edit = p->edit;
    *next = p->next;
    return p->rc;
}

static int probe_before(struct strata_meta *m, const char *name, void *ud)
{
    (void)m;
    (void)name;
    struct txn_probe *p = ud;
    p->before_calls++;
    return p->before_rc;
}

static void test_bucket_txn(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("store-btxn");
    assert_non_null(e);
    struct strata_meta *m = e->m;
    const struct strata_meta__store_ops *ops = m->store;
    struct txn_probe p = {.rc = STRATA_EINVAL, .edit = STRATA_META__BUCKET_PUT};
    snprintf(p.next.name, sizeof(p.next.name), "tx");
    snprintf(p.next.owner, sizeof(p.next.owner), "o1");
    p.next.incarnation = 42;
    struct strata_meta__bucket_txn t = {.name = "tx", .decide = probe_decide,
                                        .before_remove = probe_before, .ud = &p};

    /* Absent: decide sees so, and its error writes nothing. */
    assert_int_equal(ops->bucket_txn(m, &t), STRATA_EINVAL);
    assert_int_equal(p.calls, 1);
    assert_false(p.seen.exists);
    assert_int_equal(ops->bucket_get(m, "tx", NULL), STRATA_ENOTFOUND);

    /* A PUT writes next as given (the incarnation too). */
    p.rc = 0;
    assert_int_equal(ops->bucket_txn(m, &t), 0);
    struct strata_bucket_info b;
    assert_int_equal(ops->bucket_get(m, "tx", &b), 0);
    assert_string_equal(b.owner, "o1");
    assert_true(b.incarnation == 42);

    /* The next decide sees it; its error leaves it as it was. */
    p.rc = STRATA_EEXISTS;
    snprintf(p.next.owner, sizeof(p.next.owner), "o2");
    assert_int_equal(ops->bucket_txn(m, &t), STRATA_EEXISTS);
    assert_true(p.seen.exists);
    assert_int_equal(p.seen.info_rc, 0);
    assert_string_equal(p.seen.info.owner, "o1");
    assert_int_equal(ops->bucket_get(m, "tx", &b), 0);
    assert_string_equal(b.owner, "o1");

    /* Configuration documents belong to one incarnation. */
    assert_int_equal(ops->config_put(m, "tx", 41, "policy", "{}", 2), STRATA_ENOTFOUND);
    assert_int_equal(ops->config_put(m, "tx", 42, "policy", "{}", 2), 0);
    void *doc;
    size_t len;
    assert_int_equal(ops->config_get(m, "tx", "policy", &doc, &len), 0);
    assert_int_equal(len, 2);
    free(doc);
    assert_int_equal(ops->config_put(m, "tx", 42, "policy", NULL, 0), 0);
    assert_int_equal(ops->config_get(m, "tx", "policy", &doc, &len), STRATA_ENOTFOUND);
    assert_int_equal(ops->config_put(m, "tx", 42, "cors", "<x/>", 4), 0);

    /* want_empty: a version keeps the bucket. */
    assert_int_equal(mt_put(e, "tx", "k", "v", 1, NULL), 0);
    p.rc = 0;
    p.edit = STRATA_META__BUCKET_REMOVE;
    t.want_empty = true;
    p.rc = STRATA_ENOTEMPTY;
    assert_int_equal(ops->bucket_txn(m, &t), STRATA_ENOTEMPTY);
    assert_false(p.seen.empty);
    assert_int_equal(p.before_calls, 0);
    assert_int_equal(strata_obj_delete(m, "tx", "k", NULL, NULL), 0);

    /* before_remove runs once; its error cancels the removal. */
    p.rc = 0;
    p.before_rc = STRATA_EIO;
    assert_int_equal(ops->bucket_txn(m, &t), STRATA_EIO);
    assert_true(p.seen.empty);
    assert_int_equal(p.before_calls, 1);
    assert_int_equal(ops->bucket_get(m, "tx", NULL), 0);
    p.before_rc = 0;
    assert_int_equal(ops->bucket_txn(m, &t), 0);
    assert_int_equal(p.before_calls, 2);
    assert_int_equal(ops->bucket_get(m, "tx", NULL), STRATA_ENOTFOUND);
    /* A REMOVE of nothing is refused before before_remove. */
    assert_int_equal(ops->bucket_txn(m, &t), STRATA_ENOTFOUND);
    assert_int_equal(p.before_calls, 2);

    /* The documents went with it: a namesake starts without them. */
    assert_int_equal(mt_bucket(e, "tx", 0), 0);
    assert_int_equal(ops->config_get(m, "tx", "cors", &doc, &len), STRATA_ENOTFOUND);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handle_uses_local),
        cmocka_unit_test(test_lease_contract),
        cmocka_unit_test(test_no_queues),
        cmocka_unit_test(test_invalidate_noop),
        cmocka_unit_test(test_audit_copies),
        cmocka_unit_test(test_bucket_txn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
