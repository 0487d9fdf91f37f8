/*
 * test_bucket.c - bucket create/get/list/delete, EEXISTS and ENOTEMPTY,
 * versioning state changes and configuration documents, on a fresh 2+2 set;
 * delete aborting incomplete uploads (but not with an object left) and
 * sweeping an upload record only one drive kept; puts,
 * delete markers, multipart creates and completes that began before a
 * delete fail instead of committing into the deleted bucket or into a
 * namesake created since.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "meta_internal.h"
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

static int mpu_new(struct mt_env *e, const char *bucket, const char *key,
                   char uid[STRATA_UPLOAD_ID_MAX + 1])
{
    struct strata_mpu_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = bucket;
    o.key = key;
    return strata_mpu_create(e->m, &o, uid);
}

/* Upload part 1 of (bucket, key, uid) with n bytes; its ETag into etag. */
static int mpu_part(struct mt_env *e, const char *bucket, const char *key, const char *uid,
                    size_t n, char etag[STRATA_ETAG_MAX + 1])
{
    struct strata_part_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = bucket;
    o.key = key;
    o.upload_id = uid;
    o.part_number = 1;
    o.size = n;
    struct strata_put *p;
    int rc = strata_mpu_part_begin(e->m, &o, &p);
    if (rc)
        return rc;
    uint8_t *d = malloc(n);
    mt_fill(d, n, 7);
    rc = strata_obj_put_write(p, d, n);
    free(d);
    if (rc) {
        strata_obj_put_abort(p);
        return rc;
    }
    struct strata_obj_info info;
    rc = strata_obj_put_commit(p, &info);
    if (rc == 0)
        snprintf(etag, STRATA_ETAG_MAX + 1, "%s", info.etag);
    strata_obj_info_fini(&info);
    return rc;
}

static int mpu_done(struct mt_env *e, const char *bucket, const char *key, const char *uid,
                    const char *etag)
{
    struct strata_mpu_part part = {1, etag, NULL, 0};
    struct strata_mpu_complete_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = bucket;
    o.key = key;
    o.upload_id = uid;
    o.parts = &part;
    o.nparts = 1;
    return strata_mpu_complete(e->m, &o, NULL);
}

static int count_uploads_cb(const struct strata_mpu_list_entry *en, void *ud)
{
    (void)en;
    (*(int *)ud)++;
    return 0;
}

static int count_uploads(struct mt_env *e, const char *bucket)
{
    struct strata_mpu_list_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = bucket;
    struct strata_mpu_list_result res;
    int n = 0;
    int rc = strata_mpu_list(e->m, &o, count_uploads_cb, &n, &res);
    return rc ? rc : n;
}

static void test_delete_aborts_uploads(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("bkt-uploads");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "u", 0), 0);
    char uid[3][STRATA_UPLOAD_ID_MAX + 1], etag[STRATA_ETAG_MAX + 1];
    for (int i = 0; i < 3; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(mpu_new(e, "u", key, uid[i]), 0);
        assert_int_equal(mpu_part(e, "u", key, uid[i], 200000, etag), 0);
    }
    int part_files = mt_data_files(e);
    assert_int_equal(part_files, 3 * MT_DRIVES);

    /* An object keeps the bucket, and the uploads stay. */
    uint8_t one = 'x';
    assert_int_equal(mt_put(e, "u", "obj", &one, 1, NULL), 0);
    assert_int_equal(strata_meta_bucket_delete(e->m, "u"), STRATA_ENOTEMPTY);
    assert_int_equal(count_uploads(e, "u"), 3);
    assert_int_equal(mt_data_files(e), part_files);

    /* Uploads alone do not: they are aborted, their parts' data removed. */
    assert_int_equal(strata_obj_delete(e->m, "u", "obj", NULL, NULL), 0);
    assert_int_equal(strata_meta_bucket_delete(e->m, "u"), 0);
    assert_int_equal(mt_data_files(e), 0);
    assert_int_equal(mt_bucket(e, "u", 0), 0);
    assert_int_equal(count_uploads(e, "u"), 0);
    assert_int_equal(mpu_part(e, "u", "k0", uid[0], 1000, etag), STRATA_ENOTFOUND);
    assert_int_equal(mpu_done(e, "u", "k1", uid[1], etag), STRATA_ENOTFOUND);

    /* An upload record only drive 0 kept (it missed an abort before
     * aborts left tombstones): three drives answer "absent", so it is not
     * listed (nor could it be aborted).  It must neither keep the bucket
     * forever nor resurface under the next bucket of that name. */
    struct meta_upload up;
    memset(&up, 0, sizeof(up));
    up.init_ns = 1;
    char *v;
    size_t vl;
    assert_int_equal(strata_meta__upload_encode(&up, &v, &vl), 0);
    uint8_t id[UPLOAD_LEN] = {0, 0, 0, 0, 0, 0, 0, 1, 9, 9, 9, 9, 9, 9, 9, 9};
    char k[128];
    size_t kl = strata_meta__key_upload(k, sizeof(k), "u", "stale", id);
    rocksdb_writebatch_t *wbs[STRATA_DRIVES_MAX] = {0};
    bool ok[STRATA_DRIVES_MAX];
    wbs[0] = rocksdb_writebatch_create();
    rocksdb_writebatch_put(wbs[0], k, kl, v, vl);
    strata_meta__set_apply(e->m, 0, wbs, ok);
    rocksdb_writebatch_destroy(wbs[0]);
    free(v);
    assert_true(ok[0]);
    assert_int_equal(count_uploads(e, "u"), 0);
    assert_int_equal(strata_meta_bucket_delete(e->m, "u"), 0);
    assert_int_equal(mt_bucket(e, "u", 0), 0);
    assert_int_equal(count_uploads(e, "u"), 0);
    mt_teardown(e);
}

static void test_commit_after_delete(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("bkt-race");
    assert_non_null(e);
    const size_t n = 300000; /* erasure-coded: data files to clean up */
    uint8_t *d = malloc(n);
    mt_fill(d, n, 9);
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "r";
    o.key = "k";
    o.size = n;
    for (int recreate = 0; recreate < 2; recreate++) {
        /* A put begun before DeleteBucket fails at commit, whether the
         * name was taken again meanwhile or not, and leaves no data. */
        assert_int_equal(mt_bucket(e, "r", 0), 0);
        struct strata_put *p;
        assert_int_equal(strata_obj_put_begin(e->m, &o, &p), 0);
        assert_int_equal(strata_obj_put_write(p, d, n), 0);
        assert_int_equal(strata_meta_bucket_delete(e->m, "r"), 0);
        if (recreate)
            assert_int_equal(mt_bucket(e, "r", 0), 0);
        assert_int_equal(strata_obj_put_commit(p, NULL), STRATA_ENOTFOUND);
        assert_int_equal(mt_data_files(e), 0);
        uint8_t *got;
        size_t gl;
        assert_int_equal(mt_get(e, "r", "k", NULL, &got, &gl), STRATA_ENOTFOUND);
        if (recreate)
            assert_int_equal(strata_meta_bucket_delete(e->m, "r"), 0); /* empty */
    }
    /* A complete of an upload begun in the old bucket finds no upload. */
    assert_int_equal(mt_bucket(e, "r", 0), 0);
    char uid[STRATA_UPLOAD_ID_MAX + 1], etag[STRATA_ETAG_MAX + 1];
    assert_int_equal(mpu_new(e, "r", "m", uid), 0);
    assert_int_equal(mpu_part(e, "r", "m", uid, 1000, etag), 0);
    assert_int_equal(strata_meta_bucket_delete(e->m, "r"), 0);
    assert_int_equal(mt_bucket(e, "r", 0), 0);
    assert_int_equal(mpu_done(e, "r", "m", uid, etag), STRATA_ENOTFOUND);
    assert_int_equal(mt_data_files(e), 0);
    assert_int_equal(strata_meta_bucket_delete(e->m, "r"), 0); /* empty */
    /* A re-created bucket has a new incarnation. */
    struct strata_bucket_info b1, b2;
    assert_int_equal(mt_bucket(e, "r", 0), 0);
    assert_int_equal(strata_meta_bucket_get(e->m, "r", &b1), 0);
    assert_int_equal(strata_meta_bucket_delete(e->m, "r"), 0);
    assert_int_equal(mt_bucket(e, "r", 0), 0);
    assert_int_equal(strata_meta_bucket_get(e->m, "r", &b2), 0);
    assert_true(b1.incarnation != b2.incarnation);
    free(d);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_crud),
        cmocka_unit_test(test_bucket_config),
        cmocka_unit_test(test_delete_aborts_uploads),
        cmocka_unit_test(test_commit_after_delete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
