/*
 * test_bucket.c - bucket create/get/list/delete, EEXISTS and ENOTEMPTY,
 * versioning state changes and configuration documents, on a fresh 2+2 set.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "meta_test_util.h"

struct names {
    char n[8][64];
    int count;
};

static int list_cb(const struct strata_bucket_info *b, void *ud)
{
    struct names *ns = ud;
    if (ns->count < 8)
        snprintf(ns->n[ns->count], 64, "%s", b->name);
    ns->count++;
    return 0;
}

static int stop_cb(const struct strata_bucket_info *b, void *ud)
{
    (void)b;
    (*(int *)ud)++;
    return 42;
}

static void test_bucket_crud(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("bucket");
    assert_non_null(e);
    struct strata_bucket_info b;
    assert_int_equal(strata_meta_bucket_get(e->m, "zeta", &b), STRATA_ENOTFOUND);
    assert_int_equal(mt_bucket(e, "zeta", 0), 0);
    assert_int_equal(mt_bucket(e, "alpha", 0), 0);
    assert_int_equal(mt_bucket(e, "mid", 0), 0);
    assert_int_equal(mt_bucket(e, "alpha", 0), STRATA_EEXISTS);
    assert_int_equal(strata_meta_bucket_get(e->m, "alpha", &b), 0);
    assert_string_equal(b.name, "alpha");
    assert_string_equal(b.owner, "tester");
    assert_string_equal(b.region, "us-east-1");
    assert_true(b.created_ms == 1700000000000LL);
    assert_int_equal(b.versioning, STRATA_VERSIONING_OFF);

    struct names ns;
    memset(&ns, 0, sizeof(ns));
    assert_int_equal(strata_meta_bucket_list(e->m, list_cb, &ns), 0);
    assert_int_equal(ns.count, 3);
    assert_string_equal(ns.n[0], "alpha");
    assert_string_equal(ns.n[1], "mid");
    assert_string_equal(ns.n[2], "zeta");
    int calls = 0;
    assert_int_equal(strata_meta_bucket_list(e->m, stop_cb, &calls), 42);
    assert_int_equal(calls, 1);

    /* Versioning: enabled, then suspended; "off" after enabled stays suspended. */
    assert_int_equal(strata_meta_bucket_set_versioning(e->m, "mid", STRATA_VERSIONING_ENABLED), 0);
    assert_int_equal(strata_meta_bucket_get(e->m, "mid", &b), 0);
    assert_int_equal(b.versioning, STRATA_VERSIONING_ENABLED);
    assert_int_equal(strata_meta_bucket_set_versioning(e->m, "mid", STRATA_VERSIONING_OFF), 0);
    assert_int_equal(strata_meta_bucket_get(e->m, "mid", &b), 0);
    assert_int_equal(b.versioning, STRATA_VERSIONING_SUSPENDED);
    assert_int_equal(strata_meta_bucket_set_versioning(e->m, "nope", STRATA_VERSIONING_ENABLED),
                     STRATA_ENOTFOUND);

    /* Not empty while an object remains. */
    uint8_t one = 'x';
    assert_int_equal(mt_put(e, "zeta", "k", &one, 1, NULL), 0);
    assert_int_equal(strata_meta_bucket_delete(e->m, "zeta"), STRATA_ENOTEMPTY);
    assert_int_equal(strata_obj_delete(e->m, "zeta", "k", NULL, NULL), 0);
    assert_int_equal(strata_meta_bucket_delete(e->m, "zeta"), 0);
    assert_int_equal(strata_meta_bucket_get(e->m, "zeta", &b), STRATA_ENOTFOUND);
    assert_int_equal(strata_meta_bucket_delete(e->m, "zeta"), STRATA_ENOTFOUND);

    /* A versioned bucket with only a delete marker is not empty. */
    assert_int_equal(strata_obj_delete(e->m, "mid", "gone", NULL, NULL), 0);
    assert_int_equal(strata_meta_bucket_delete(e->m, "mid"), STRATA_ENOTEMPTY);

    memset(&ns, 0, sizeof(ns));
    assert_int_equal(strata_meta_bucket_list(e->m, list_cb, &ns), 0);
    assert_int_equal(ns.count, 2);
    assert_string_equal(ns.n[0], "alpha");
    assert_string_equal(ns.n[1], "mid");

    /* The records survive a reopen. */
    mt_close(e);
    assert_int_equal(mt_open(e), 0);
    assert_int_equal(strata_meta_bucket_get(e->m, "mid", &b), 0);
    assert_int_equal(b.versioning, STRATA_VERSIONING_SUSPENDED);
    mt_teardown(e);
}

static void test_bucket_config(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("bconfig");
    assert_non_null(e);
    void *doc;
    size_t len;
    assert_int_equal(strata_meta_bucket_config_put(e->m, "b1", "policy", "{}", 2), STRATA_ENOTFOUND);
    assert_int_equal(mt_bucket(e, "b1", 0), 0);
    assert_int_equal(strata_meta_bucket_config_get(e->m, "b1", "policy", &doc, &len),
                     STRATA_ENOTFOUND);
    const char *xml = "<Tagging><TagSet/></Tagging>";
    assert_int_equal(strata_meta_bucket_config_put(e->m, "b1", "tagging", xml, strlen(xml)), 0);
    assert_int_equal(strata_meta_bucket_config_put(e->m, "b1", "policy", "{\"a\":1}", 7), 0);
    assert_int_equal(strata_meta_bucket_config_get(e->m, "b1", "tagging", &doc, &len), 0);
    assert_int_equal(len, strlen(xml));
    assert_memory_equal(doc, xml, len);
    free(doc);
    /* Replace, then delete with len 0. */
    assert_int_equal(strata_meta_bucket_config_put(e->m, "b1", "policy", "{}", 2), 0);
    assert_int_equal(strata_meta_bucket_config_get(e->m, "b1", "policy", &doc, &len), 0);
    assert_int_equal(len, 2);
    assert_memory_equal(doc, "{}", 2);
    free(doc);
    assert_int_equal(strata_meta_bucket_config_put(e->m, "b1", "policy", NULL, 0), 0);
    assert_int_equal(strata_meta_bucket_config_get(e->m, "b1", "policy", &doc, &len),
                     STRATA_ENOTFOUND);
    /* Deleting the bucket drops its documents: a new bucket of that name has none. */
    assert_int_equal(strata_meta_bucket_delete(e->m, "b1"), 0);
    assert_int_equal(mt_bucket(e, "b1", 0), 0);
    assert_int_equal(strata_meta_bucket_config_get(e->m, "b1", "tagging", &doc, &len),
                     STRATA_ENOTFOUND);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_crud),
        cmocka_unit_test(test_bucket_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
