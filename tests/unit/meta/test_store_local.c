/*
 * test_store_local.c - the local backend behind the store seam (store.h):
 * the meta handle uses it; leases are always granted in any order of take,
 * renew and release (one process is the whole cluster) while bad names and
 * operations are refused as every backend refuses them; invalidation is a
 * no-op whose callback never runs; the audit log's copies are read and
 * counted through the ops.  State documents, the clock's mark and the audit
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handle_uses_local),
        cmocka_unit_test(test_lease_contract),
        cmocka_unit_test(test_invalidate_noop),
        cmocka_unit_test(test_audit_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
