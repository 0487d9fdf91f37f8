/*
 * test_replica.c - what bucket replication needs of meta: a put that keeps
 * a given version id (its place in the history and its time), a replay of
 * it replacing the copy (and its data), a version under Object Lock
 * replaced only by the same bytes, a replicated delete marker with a given
 * id, and one stored header set and removed in place, the others kept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "meta_internal.h"
#include "meta_test_util.h"

/* A version id a source would have made at mtime_ns. */
static void vid_at(int64_t mtime_ns, char vid[STRATA_VERSION_ID_MAX + 1])
{
    uint8_t sk[SORTKEY_LEN];
    strata_meta__sortkey_new(mtime_ns, sk);
    strata_meta__vid_format(sk, vid);
}

static int put_replica(struct mt_env *e, const char *key, const char *vid, const void *d,
                       size_t len, const struct strata_obj_lock *lock)
{
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = key;
    o.size = len;
    o.version_id = vid;
    if (lock)
        o.lock = *lock;
    struct strata_obj_info out;
    memset(&out, 0, sizeof(out));
    int rc = mt_put_opts(e, &o, d, len, 0, &out);
    if (rc == 0)
        assert_string_equal(out.version_id, vid);
    strata_obj_info_fini(&out);
    return rc;
}

static void bytes_are(struct mt_env *e, const char *key, const char *vid, const void *d,
                      size_t len)
{
    uint8_t *got = NULL;
    size_t n = 0;
    assert_int_equal(mt_get(e, "b", key, vid, &got, &n), 0);
    assert_int_equal(n, len);
    assert_memory_equal(got, d, len);
    free(got);
}

static void test_version_id_kept(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("replvid");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_ENABLED), 0);
    /* A local version now, then a replica made an hour earlier: the
     * replica lands below it in the history, with its own time. */
    struct strata_obj_info local;
    assert_int_equal(mt_put(e, "b", "k", "local", 5, &local), 0);
    char old[STRATA_VERSION_ID_MAX + 1];
    int64_t hour_ago = local.mtime_ms * 1000000LL - 3600LL * 1000000000LL;
    vid_at(hour_ago, old);
    assert_int_equal(put_replica(e, "k", old, "older", 5, NULL), 0);
    struct strata_obj_info h;
    assert_int_equal(strata_obj_head(e->m, "b", "k", NULL, &h), 0);
    assert_string_equal(h.version_id, local.version_id); /* still the latest */
    strata_obj_info_fini(&h);
    assert_int_equal(strata_obj_head(e->m, "b", "k", old, &h), 0);
    assert_int_equal(h.mtime_ms, hour_ago / 1000000);
    assert_false(h.is_latest);
    strata_obj_info_fini(&h);
    bytes_are(e, "k", old, "older", 5);
    strata_obj_info_fini(&local);
    /* Malformed ids, and buckets whose versioning is not Enabled. */
    assert_int_equal(put_replica(e, "k", "nothex", "x", 1, NULL), STRATA_EINVAL);
    assert_int_equal(mt_bucket(e, "plain", STRATA_VERSIONING_OFF), 0);
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "plain";
    o.key = "k";
    o.size = 1;
    o.version_id = old;
    assert_int_equal(mt_put_opts(e, &o, "x", 1, 0, NULL), STRATA_EINVAL);
    mt_teardown(e);
}

static void test_replay_replaces_and_drops_data(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("replreplay");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_ENABLED), 0);
    char vid[STRATA_VERSION_ID_MAX + 1];
    vid_at(1700000000000000000LL, vid);
    static uint8_t big1[300000], big2[300000]; /* erasure-coded, not inline */
    mt_fill(big1, sizeof(big1), 1);
    mt_fill(big2, sizeof(big2), 2);
    assert_int_equal(put_replica(e, "k", vid, big1, sizeof(big1), NULL), 0);
    int files = mt_data_files(e);
    assert_int_equal(put_replica(e, "k", vid, big2, sizeof(big2), NULL), 0);
    bytes_are(e, "k", vid, big2, sizeof(big2));
    assert_int_equal(mt_data_files(e), files); /* the first copy's data went */
    mt_teardown(e);
}

static void test_locked_keeps_its_bytes(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("repllock");
    assert_non_null(e);
    struct strata_bucket_info b;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "b");
    snprintf(b.owner, sizeof(b.owner), "tester");
    b.created_ms = 1700000000000LL;
    b.object_lock = true;
    b.versioning = STRATA_VERSIONING_ENABLED;
    assert_int_equal(strata_meta_bucket_create(e->m, &b), 0);
    char vid[STRATA_VERSION_ID_MAX + 1];
    vid_at(1700000000000000000LL, vid);
    struct strata_obj_lock lk = {.mode = STRATA_LOCK_COMPLIANCE,
                                 .until_ms = strata_meta_lock_now_ms(e->m) + 3600000};
    assert_int_equal(put_replica(e, "k", vid, "hello", 5, &lk), 0);
    assert_int_equal(put_replica(e, "k", vid, "HELLO", 5, &lk), STRATA_ELOCKED);
    bytes_are(e, "k", vid, "hello", 5);
    /* The same bytes again (a replay, or the lock extended) are taken. */
    lk.until_ms += 3600000;
    assert_int_equal(put_replica(e, "k", vid, "hello", 5, &lk), 0);
    struct strata_obj_info h;
    assert_int_equal(strata_obj_head(e->m, "b", "k", vid, &h), 0);
    assert_int_equal(h.lock.until_ms, lk.until_ms);
    strata_obj_info_fini(&h);
    mt_teardown(e);
}

static void test_delete_marker_replica(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("repldm");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_ENABLED), 0);
    struct strata_obj_info v;
    assert_int_equal(mt_put(e, "b", "k", "data", 4, &v), 0);
    char dm[STRATA_VERSION_ID_MAX + 1];
    vid_at(v.mtime_ms * 1000000LL + 5000000, dm);
    struct strata_del_result res;
    assert_int_equal(strata_obj_delete_marker_replica(e->m, "b", "k", dm, &res), 0);
    assert_true(res.delete_marker);
    assert_string_equal(res.version_id, dm);
    struct strata_obj_info h;
    assert_int_equal(strata_obj_head(e->m, "b", "k", NULL, &h), STRATA_ENOTFOUND);
    strata_obj_info_fini(&h);
    bytes_are(e, "k", v.version_id, "data", 4);
    /* Replayed: still one marker. */
    assert_int_equal(strata_obj_delete_marker_replica(e->m, "b", "k", dm, &res), 0);
    /* A replica may not replace a delete marker. */
    assert_int_equal(put_replica(e, "k", dm, "x", 1, NULL), STRATA_EEXISTS);
    assert_int_equal(strata_obj_delete_marker_replica(e->m, "b", "k", "zz", &res),
                     STRATA_EINVAL);
    strata_obj_info_fini(&v);
    mt_teardown(e);
}

static void test_hdr_set(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("replhdr");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_ENABLED), 0);
    const struct strata_kv kv[] = {{"content-type", "text/x"}, {"x-amz-meta-a", "1"}};
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = "k";
    o.size = 4;
    o.hdrs = kv;
    o.nhdrs = 2;
    struct strata_obj_info v;
    assert_int_equal(mt_put_opts(e, &o, "data", 4, 0, &v), 0);
    assert_int_equal(strata_obj_hdr_set(e->m, "b", "k", v.version_id, "x-amz-replication-status",
                                        "PENDING"), 0);
    assert_int_equal(strata_obj_hdr_set(e->m, "b", "k", v.version_id, "x-amz-replication-status",
                                        "COMPLETED"), 0);
    struct strata_obj_info h;
    assert_int_equal(strata_obj_head(e->m, "b", "k", v.version_id, &h), 0);
    assert_int_equal(h.nhdrs, 3);
    assert_string_equal(strata_obj_info_hdr(&h, "content-type"), "text/x");
    assert_string_equal(strata_obj_info_hdr(&h, "x-amz-meta-a"), "1");
    assert_string_equal(strata_obj_info_hdr(&h, "x-amz-replication-status"), "COMPLETED");
    strata_obj_info_fini(&h);
    assert_int_equal(strata_obj_hdr_set(e->m, "b", "k", v.version_id, "x-amz-meta-a", NULL), 0);
    assert_int_equal(strata_obj_head(e->m, "b", "k", v.version_id, &h), 0);
    assert_int_equal(h.nhdrs, 2);
    assert_null(strata_obj_info_hdr(&h, "x-amz-meta-a"));
    strata_obj_info_fini(&h);
    bytes_are(e, "k", v.version_id, "data", 4); /* inline shards intact */
    strata_obj_info_fini(&v);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_id_kept),
        cmocka_unit_test(test_replay_replaces_and_drops_data),
        cmocka_unit_test(test_locked_keeps_its_bytes),
        cmocka_unit_test(test_delete_marker_replica),
        cmocka_unit_test(test_hdr_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
