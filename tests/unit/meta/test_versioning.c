/*
 * test_versioning.c - AWS versioning flows (enabled, suspended, delete
 * markers, deletes by version id, EMETHOD on a marker) and conditional
 * writes (If-Match, If-None-Match: * with racing creators).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>

#include "meta_test_util.h"

static void put_str(struct mt_env *e, const char *b, const char *k, const char *s, char *vid)
{
    struct strata_obj_info out;
    assert_int_equal(mt_put(e, b, k, s, strlen(s), &out), 0);
    if (vid)
        snprintf(vid, STRATA_VERSION_ID_MAX + 1, "%s", out.version_id);
    strata_obj_info_fini(&out);
}

static void expect_body(struct mt_env *e, const char *b, const char *k, const char *vid,
                        const char *s)
{
    uint8_t *d = NULL;
    size_t l = 0;
    assert_int_equal(mt_get(e, b, k, vid, &d, &l), 0);
    assert_int_equal(l, strlen(s));
    assert_memory_equal(d, s, l);
    free(d);
}

static void test_enabled(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("venabled");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "v", STRATA_VERSIONING_ENABLED), 0);
    char v1[48], v2[48], v3[48];
    put_str(e, "v", "k", "one", v1);
    put_str(e, "v", "k", "two", v2);
    assert_string_not_equal(v1, "null");
    assert_string_not_equal(v1, v2);
    expect_body(e, "v", "k", NULL, "two");
    expect_body(e, "v", "k", v1, "one");
    expect_body(e, "v", "k", v2, "two");
    struct strata_obj_info info;
    assert_int_equal(strata_obj_head(e->m, "v", "k", v1, &info), 0);
    assert_false(info.is_latest);
    strata_obj_info_fini(&info);
    assert_int_equal(strata_obj_head(e->m, "v", "k", v2, &info), 0);
    assert_true(info.is_latest);
    strata_obj_info_fini(&info);

    /* Delete without version id: a marker hides the key. */
    struct strata_del_result dr;
    assert_int_equal(strata_obj_delete(e->m, "v", "k", NULL, &dr), 0);
    assert_true(dr.delete_marker);
    snprintf(v3, sizeof(v3), "%s", dr.version_id);
    assert_string_not_equal(v3, "null");
    assert_int_equal(strata_obj_head(e->m, "v", "k", NULL, &info), STRATA_ENOTFOUND);
    assert_true(info.delete_marker);
    assert_string_equal(info.version_id, v3);
    strata_obj_info_fini(&info);
    /* The marker asked for by id: EMETHOD with info filled. */
    assert_int_equal(strata_obj_head(e->m, "v", "k", v3, &info), STRATA_EMETHOD);
    assert_true(info.delete_marker);
    strata_obj_info_fini(&info);
    struct strata_get *g;
    assert_int_equal(strata_obj_get_open(e->m, "v", "k", v3, &info, &g), STRATA_EMETHOD);
    strata_obj_info_fini(&info);
    expect_body(e, "v", "k", v1, "one"); /* older versions stay readable */

    /* Removing the marker by id brings v2 back. */
    assert_int_equal(strata_obj_delete(e->m, "v", "k", v3, &dr), 0);
    assert_true(dr.delete_marker);
    assert_string_equal(dr.version_id, v3);
    expect_body(e, "v", "k", NULL, "two");
    /* Removing v2 for good makes v1 the latest. */
    assert_int_equal(strata_obj_delete(e->m, "v", "k", v2, &dr), 0);
    assert_false(dr.delete_marker);
    expect_body(e, "v", "k", NULL, "one");
    assert_int_equal(strata_obj_head(e->m, "v", "k", v2, &info), STRATA_ENOTFOUND);
    assert_int_equal(strata_obj_delete(e->m, "v", "k", v2, &dr), STRATA_ENOTFOUND);
    assert_int_equal(strata_obj_head(e->m, "v", "k", "garbage-id", &info), STRATA_ENOTFOUND);
    assert_true(strata_meta_version_id_valid(v2));
    assert_true(strata_meta_version_id_valid("null"));
    assert_false(strata_meta_version_id_valid("garbage-id"));
    assert_false(strata_meta_version_id_valid("NULL"));
    assert_false(strata_meta_version_id_valid(""));
    assert_int_equal(strata_obj_head(e->m, "v", "k", "null", &info), STRATA_ENOTFOUND);

    /* Big versions keep their own data; deleting one leaves the other. */
    size_t big = 200 * 1024;
    uint8_t *a = malloc(big), *b = malloc(big);
    mt_fill(a, big, 1);
    mt_fill(b, big, 2);
    struct strata_obj_info oa, ob;
    assert_int_equal(mt_put(e, "v", "big", a, big, &oa), 0);
    assert_int_equal(mt_put(e, "v", "big", b, big, &ob), 0);
    int files2 = mt_data_files(e);
    assert_int_equal(strata_obj_delete(e->m, "v", "big", ob.version_id, NULL), 0);
    assert_true(mt_data_files(e) < files2);
    uint8_t *d = NULL;
    size_t l = 0;
    assert_int_equal(mt_get(e, "v", "big", NULL, &d, &l), 0);
    assert_int_equal(l, big);
    assert_memory_equal(d, a, big);
    free(d);
    strata_obj_info_fini(&oa);
    strata_obj_info_fini(&ob);
    free(a);
    free(b);
    mt_teardown(e);
}

static void test_suspended(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("vsusp");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "s", 0), 0);
    char n0[48], v1[48], n1[48], n2[48];
    put_str(e, "s", "k", "unversioned", n0);
    assert_string_equal(n0, "null");
    assert_int_equal(strata_meta_bucket_set_versioning(e->m, "s", STRATA_VERSIONING_ENABLED), 0);
    put_str(e, "s", "k", "versioned", v1);
    assert_string_not_equal(v1, "null");
    /* The pre-versioning object is the null version. */
    expect_body(e, "s", "k", "null", "unversioned");
    assert_int_equal(strata_meta_bucket_set_versioning(e->m, "s", STRATA_VERSIONING_SUSPENDED), 0);
    put_str(e, "s", "k", "suspended-1", n1);
    assert_string_equal(n1, "null");
    put_str(e, "s", "k", "suspended-2", n2);
    assert_string_equal(n2, "null");
    /* Null replaced in place; the versioned one survives. */
    expect_body(e, "s", "k", NULL, "suspended-2");
    expect_body(e, "s", "k", "null", "suspended-2");
    expect_body(e, "s", "k", v1, "versioned");
    /* Delete on suspended: a null delete marker replaces the null version. */
    struct strata_del_result dr;
    assert_int_equal(strata_obj_delete(e->m, "s", "k", NULL, &dr), 0);
    assert_true(dr.delete_marker);
    assert_string_equal(dr.version_id, "null");
    struct strata_obj_info info;
    assert_int_equal(strata_obj_head(e->m, "s", "k", NULL, &info), STRATA_ENOTFOUND);
    assert_true(info.delete_marker);
    assert_string_equal(info.version_id, "null");
    strata_obj_info_fini(&info);
    assert_int_equal(strata_obj_head(e->m, "s", "k", "null", &info), STRATA_EMETHOD);
    strata_obj_info_fini(&info);
    expect_body(e, "s", "k", v1, "versioned");
    /* Removing the null marker uncovers the versioned one. */
    assert_int_equal(strata_obj_delete(e->m, "s", "k", "null", &dr), 0);
    assert_true(dr.delete_marker);
    expect_body(e, "s", "k", NULL, "versioned");
    mt_teardown(e);
}

struct racer {
    struct mt_env *e;
    pthread_barrier_t *bar;
    int id;
    int rc;
};

static void *race_create(void *arg)
{
    struct racer *r = arg;
    char body[32];
    snprintf(body, sizeof(body), "writer-%d", r->id);
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "c";
    o.key = "once";
    o.size = strlen(body);
    o.if_none_match_star = true;
    struct strata_put *p;
    r->rc = strata_obj_put_begin(r->e->m, &o, &p);
    if (r->rc)
        return NULL;
    strata_obj_put_write(p, body, strlen(body));
    pthread_barrier_wait(r->bar);
    r->rc = strata_obj_put_commit(p, NULL);
    return NULL;
}

static void test_conditional(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("cond");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "c", 0), 0);
    for (int round = 0; round < 5; round++) {
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, 2);
        struct racer rs[2] = {{e, &bar, 0, -99}, {e, &bar, 1, -99}};
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, race_create, &rs[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&bar);
        int wins = (rs[0].rc == 0) + (rs[1].rc == 0);
        int fails = (rs[0].rc == STRATA_EPRECOND) + (rs[1].rc == STRATA_EPRECOND);
        assert_int_equal(wins, 1);
        assert_int_equal(fails, 1);
        char exp[32];
        snprintf(exp, sizeof(exp), "writer-%d", rs[0].rc == 0 ? 0 : 1);
        expect_body(e, "c", "once", NULL, exp);
        assert_int_equal(strata_obj_delete(e->m, "c", "once", NULL, NULL), 0);
    }
    /* If-Match: only with the current etag. */
    struct strata_obj_info out;
    assert_int_equal(mt_put(e, "c", "m", "v1", 2, &out), 0);
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "c";
    o.key = "m";
    o.size = 2;
    o.if_match = "0123456789abcdef0123456789abcdef";
    assert_int_equal(mt_put_opts(e, &o, "v2", 2, 0, NULL), STRATA_EPRECOND);
    o.if_match = out.etag;
    assert_int_equal(mt_put_opts(e, &o, "v2", 2, 0, NULL), 0);
    expect_body(e, "c", "m", NULL, "v2");
    o.key = "absent"; /* no current version: NOTFOUND (S3's 404), for "*" too */
    assert_int_equal(mt_put_opts(e, &o, "v2", 2, 0, NULL), STRATA_ENOTFOUND);
    o.if_match = "*";
    assert_int_equal(mt_put_opts(e, &o, "v2", 2, 0, NULL), STRATA_ENOTFOUND);
    o.key = "m"; /* "*" matches any current version */
    assert_int_equal(mt_put_opts(e, &o, "v3", 2, 0, NULL), 0);
    expect_body(e, "c", "m", NULL, "v3");
    /* If-None-Match on an existing big object: refused, nothing left behind. */
    int files = mt_data_files(e);
    size_t big = 300 * 1024;
    uint8_t *d = calloc(1, big);
    o.key = "m";
    o.if_match = NULL;
    o.if_none_match_star = true;
    o.size = big;
    assert_int_equal(mt_put_opts(e, &o, d, big, 0, NULL), STRATA_EPRECOND);
    assert_int_equal(mt_data_files(e), files);
    free(d);
    strata_obj_info_fini(&out);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enabled),
        cmocka_unit_test(test_suspended),
        cmocka_unit_test(test_conditional),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
