/*
 * test_obj_acl.c - the access control list of a version (opaque bytes to
 * meta): given at put and at create-multipart time, absent by default
 * (records without one, as written before the field existed), replaced
 * per version by strata_obj_acl_put without touching the data or the
 * tags, the limit, and delete markers refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "meta_internal.h"
#include "meta_test_util.h"

static void acl_is(struct mt_env *e, const char *key, const char *vid, const char *want)
{
    struct strata_obj_info info;
    memset(&info, 0, sizeof(info));
    assert_int_equal(strata_obj_head(e->m, "b", key, vid, &info), 0);
    if (!want) {
        assert_null(info.acl);
        assert_int_equal(info.acl_len, 0);
    } else {
        assert_int_equal(info.acl_len, strlen(want));
        assert_memory_equal(info.acl, want, info.acl_len);
    }
    strata_obj_info_fini(&info);
}

static int put_acl(struct mt_env *e, const char *key, const void *d, size_t len, const char *acl,
                   char vid[48])
{
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = key;
    o.size = len;
    o.acl = acl;
    o.acl_len = acl ? strlen(acl) : 0;
    o.tags = "t=1";
    o.tags_len = 3;
    struct strata_obj_info out;
    int rc = mt_put_opts(e, &o, d, len, 0, &out);
    if (rc == 0) {
        snprintf(vid, 48, "%s", out.version_id);
        strata_obj_info_fini(&out);
    }
    return rc;
}

static void test_versions(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("aclver");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_ENABLED), 0);
    uint8_t big[300000];
    mt_fill(big, sizeof(big), 7);
    char v1[48], v2[48], v3[48];
    assert_int_equal(put_acl(e, "k", "inline", 6, "acl-one", v1), 0);
    assert_int_equal(put_acl(e, "k", big, sizeof(big), NULL, v2), 0);
    assert_int_equal(put_acl(e, "k", "three", 5, "acl-three", v3), 0);
    acl_is(e, "k", v1, "acl-one");
    acl_is(e, "k", v2, NULL);
    acl_is(e, "k", NULL, "acl-three");
    /* Replace one version's ACL: the others, the tags and the data stay. */
    char vid[STRATA_VERSION_ID_MAX + 1];
    assert_int_equal(strata_obj_acl_put(e->m, "b", "k", v2, "acl-two", 7, vid), 0);
    assert_string_equal(vid, v2);
    acl_is(e, "k", v2, "acl-two");
    acl_is(e, "k", v1, "acl-one");
    void *t = NULL;
    size_t tl = 0;
    assert_int_equal(strata_obj_tags_get(e->m, "b", "k", v2, &t, &tl, NULL), 0);
    assert_int_equal(tl, 3);
    free(t);
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, "b", "k", v2, &got, &gl), 0);
    assert_int_equal(gl, sizeof(big));
    assert_memory_equal(got, big, gl);
    free(got);
    assert_int_equal(mt_get(e, "b", "k", v1, &got, &gl), 0);
    assert_int_equal(gl, 6);
    assert_memory_equal(got, "inline", 6); /* each drive kept its own inline shard */
    free(got);
    /* Length 0 goes back to the default. */
    assert_int_equal(strata_obj_acl_put(e->m, "b", "k", NULL, NULL, 0, NULL), 0);
    acl_is(e, "k", NULL, NULL);
    static char huge[STRATA_ACL_MAX + 1];
    assert_int_equal(strata_obj_acl_put(e->m, "b", "k", v1, huge, sizeof(huge), NULL),
                     STRATA_ETOOBIG);
    acl_is(e, "k", v1, "acl-one");
    struct strata_del_result dr;
    assert_int_equal(strata_obj_delete(e->m, "b", "k", NULL, &dr), 0);
    assert_int_equal(strata_obj_acl_put(e->m, "b", "k", NULL, "x", 1, NULL), STRATA_ENOTFOUND);
    assert_int_equal(strata_obj_acl_put(e->m, "b", "k", dr.version_id, "x", 1, NULL),
                     STRATA_EMETHOD);
    mt_teardown(e);
}

static void test_multipart_acl(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("aclmp");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = "b";
    mo.key = "mp";
    mo.acl = "mp-acl";
    mo.acl_len = 6;
    char uid[40];
    assert_int_equal(strata_mpu_create(e->m, &mo, uid), 0);
    struct strata_part_opts po;
    memset(&po, 0, sizeof(po));
    po.bucket = "b";
    po.key = "mp";
    po.upload_id = uid;
    po.part_number = 1;
    po.size = 5;
    struct strata_put *p;
    assert_int_equal(strata_mpu_part_begin(e->m, &po, &p), 0);
    assert_int_equal(strata_obj_put_write(p, "hello", 5), 0);
    struct strata_obj_info out;
    assert_int_equal(strata_obj_put_commit(p, &out), 0);
    struct strata_mpu_part part = {1, out.etag, NULL, 0};
    struct strata_mpu_complete_opts co = {"b",   "mp",  uid, &part, 1,   NULL,
                                          false, false, 0,   NULL,  NULL};
    struct strata_obj_info done;
    assert_int_equal(strata_mpu_complete(e->m, &co, &done), 0);
    strata_obj_info_fini(&out);
    strata_obj_info_fini(&done);
    acl_is(e, "mp", NULL, "mp-acl");
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_multipart_acl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
