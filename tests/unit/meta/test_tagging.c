/*
 * test_tagging.c - per-version object tags: given at put time and at
 * create-multipart time, put/get/delete on the latest or on a version id,
 * tags of one version leaving the others alone, delete markers refused,
 * inline objects still reading back byte-exact after a tag rewrite (each
 * drive keeps its own shard), the limit, and a drive that missed a tag
 * rewrite being outvoted and healed; the change stamps of one key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <time.h>

#include "meta_internal.h"
#include "meta_test_util.h"

static void tags_is(struct mt_env *e, const char *key, const char *vid, const char *want)
{
    void *t = NULL;
    size_t n = 0;
    char got_vid[STRATA_VERSION_ID_MAX + 1];
    assert_int_equal(strata_obj_tags_get(e->m, "b", key, vid, &t, &n, got_vid), 0);
    if (vid && *vid)
        assert_string_equal(got_vid, vid);
    if (!want) {
        assert_null(t);
        assert_int_equal(n, 0);
        return;
    }
    assert_int_equal(n, strlen(want));
    assert_memory_equal(t, want, n);
    free(t);
}

static int put_tagged(struct mt_env *e, const char *key, const void *d, size_t len,
                      const char *tags, char vid[48])
{
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = key;
    o.size = len;
    o.tags = tags;
    o.tags_len = tags ? strlen(tags) : 0;
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
    struct mt_env *e = mt_setup("tagver");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_ENABLED), 0);
    uint8_t big[300000];
    mt_fill(big, sizeof(big), 4);
    char v1[48], v2[48], v3[48];
    assert_int_equal(put_tagged(e, "k", "inline-one", 10, "a=1&b=2", v1), 0);
    assert_int_equal(put_tagged(e, "k", big, sizeof(big), NULL, v2), 0);
    assert_int_equal(put_tagged(e, "k", "three", 5, "c=3", v3), 0);
    tags_is(e, "k", v1, "a=1&b=2");
    tags_is(e, "k", v2, NULL);
    tags_is(e, "k", NULL, "c=3");
    /* Head exposes the tags of the version asked for. */
    struct strata_obj_info info;
    assert_int_equal(strata_obj_head(e->m, "b", "k", v1, &info), 0);
    assert_int_equal(info.tags_len, 7);
    assert_memory_equal(info.tags, "a=1&b=2", 7);
    strata_obj_info_fini(&info);
    /* Rewrite the old inline version's tags: others unchanged, bytes intact. */
    char vid[STRATA_VERSION_ID_MAX + 1];
    assert_int_equal(strata_obj_tags_put(e->m, "b", "k", v1, "x=9", 3, vid), 0);
    assert_string_equal(vid, v1);
    tags_is(e, "k", v1, "x=9");
    tags_is(e, "k", v3, "c=3");
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, "b", "k", v1, &got, &gl), 0);
    assert_int_equal(gl, 10);
    assert_memory_equal(got, "inline-one", 10);
    free(got);
    /* The non-inline version gets tags; its data still reads back. */
    assert_int_equal(strata_obj_tags_put(e->m, "b", "k", v2, "big=yes", 7, NULL), 0);
    tags_is(e, "k", v2, "big=yes");
    assert_int_equal(mt_get(e, "b", "k", v2, &got, &gl), 0);
    assert_int_equal(gl, sizeof(big));
    assert_memory_equal(got, big, sizeof(big));
    free(got);
    /* The latest keeps its version id and stays the latest. */
    assert_int_equal(strata_obj_tags_put(e->m, "b", "k", NULL, "l=1", 3, vid), 0);
    assert_string_equal(vid, v3);
    assert_int_equal(strata_obj_head(e->m, "b", "k", NULL, &info), 0);
    assert_string_equal(info.version_id, v3);
    assert_true(info.is_latest);
    strata_obj_info_fini(&info);
    /* Delete tags of one version. */
    assert_int_equal(strata_obj_tags_delete(e->m, "b", "k", v1, NULL), 0);
    tags_is(e, "k", v1, NULL);
    tags_is(e, "k", NULL, "l=1");
    /* Delete markers and absent things. */
    struct strata_del_result dr;
    assert_int_equal(strata_obj_delete(e->m, "b", "k", NULL, &dr), 0);
    void *t;
    size_t n;
    assert_int_equal(strata_obj_tags_get(e->m, "b", "k", NULL, &t, &n, NULL), STRATA_ENOTFOUND);
    assert_int_equal(strata_obj_tags_put(e->m, "b", "k", NULL, "a=1", 3, NULL),
                     STRATA_ENOTFOUND);
    assert_int_equal(strata_obj_tags_put(e->m, "b", "k", dr.version_id, "a=1", 3, NULL),
                     STRATA_EMETHOD);
    tags_is(e, "k", v3, "l=1");
    assert_int_equal(strata_obj_tags_get(e->m, "b", "nokey", NULL, &t, &n, NULL),
                     STRATA_ENOTFOUND);
    assert_int_equal(
        strata_obj_tags_get(e->m, "b", "k", "0123456789abcdef0123456789abcdef", &t, &n, NULL),
        STRATA_ENOTFOUND);
    /* The limit. */
    static char huge[STRATA_TAGS_MAX + 1];
    memset(huge, 'a', sizeof(huge));
    assert_int_equal(strata_obj_tags_put(e->m, "b", "k", v3, huge, sizeof(huge), NULL),
                     STRATA_ETOOBIG);
    mt_teardown(e);
}

static void test_multipart_tags(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("tagmp");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = "b";
    mo.key = "mp";
    mo.tags = "proj=x&team=y";
    mo.tags_len = 13;
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
    assert_int_equal(done.tags_len, 13);
    assert_memory_equal(done.tags, "proj=x&team=y", 13);
    strata_obj_info_fini(&done);
    tags_is(e, "mp", NULL, "proj=x&team=y");
    /* Retag the multipart object: the data and parts stay. */
    assert_int_equal(strata_obj_tags_put(e->m, "b", "mp", NULL, "z=1", 3, NULL), 0);
    tags_is(e, "mp", NULL, "z=1");
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, "b", "mp", NULL, &got, &gl), 0);
    assert_int_equal(gl, 5);
    assert_memory_equal(got, "hello", 5);
    free(got);
    mt_teardown(e);
}

static void test_missed_rewrite_heals(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("tagheal");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_ENABLED), 0);
    char v[48];
    assert_int_equal(put_tagged(e, "k", "data!", 5, "old=1", v), 0);
    /* Drive 3 misses the rewrite: its old record is put back under it. */
    char k[256];
    size_t kl = strata_meta__key_obj(k, sizeof(k), "b", "k", NULL);
    uint8_t sk[SORTKEY_LEN];
    assert_int_equal(strata_meta__vid_parse(v, sk), 0);
    memcpy(k + kl, sk, SORTKEY_LEN);
    kl += SORTKEY_LEN;
    char *old;
    size_t oldl;
    assert_int_equal(strata_meta__drive_get(e->m, 0, 3, k, kl, &old, &oldl), 0);
    assert_int_equal(strata_obj_tags_put(e->m, "b", "k", NULL, "new=2", 5, NULL), 0);
    char *err = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_put(e->m->sets[0].drives[3].db, wo, k, kl, old, oldl, &err);
    assert_null(err);
    rocksdb_writeoptions_destroy(wo);
    free(old);
    /* Drives 0-2 agree on the new tags; drive 3's stale copy does not vote. */
    tags_is(e, "k", NULL, "new=2");
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_true(st.records_healed >= 1);
    /* After heal, drive 3 carries the new tags: make it one of the two voters. */
    mt_close(e);
    mt_rm_rf(e->drive[0]);
    mt_rm_rf(e->drive[1]);
    assert_int_equal(mt_open(e), 0);
    assert_true(strata_set_drive_fresh(e->set, 0) && strata_set_drive_fresh(e->set, 1));
    tags_is(e, "k", NULL, "new=2");
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, "b", "k", NULL, &got, &gl), 0);
    assert_memory_equal(got, "data!", 5);
    free(got);
    mt_teardown(e);
}

/* The change stamps of one key (what event sequencers are) grow with its
 * changes even when the key's last change is ahead of this clock (as when
 * another gateway's clock is ahead): a replica whose id carries a time an
 * hour from now, then a tag rewrite, a reopen of the store, a new version,
 * a tag rewrite of the older version, a delete marker, and a removal. */
static void test_change_stamps(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("tagstamp");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_ENABLED), 0);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ahead = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + 3600000000000LL;
    uint8_t sk[SORTKEY_LEN];
    strata_meta__sortkey_new(ahead, sk);
    char vf[STRATA_VERSION_ID_MAX + 1];
    strata_meta__vid_format(sk, vf);
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = "k";
    o.size = 3;
    o.version_id = vf;
    struct strata_obj_info a, n;
    assert_int_equal(mt_put_opts(e, &o, "one", 3, 0, &a), 0);
    assert_true(a.seq_ns == ahead);
    int64_t t1 = 0, t2 = 0;
    char vid[STRATA_VERSION_ID_MAX + 1];
    assert_int_equal(strata_obj_tags_set(e->m, "b", "k", NULL, "t=1", 3, vid, &t1), 0);
    assert_string_equal(vid, vf);
    assert_true(t1 == ahead + 1); /* the clock is behind: just after the mtime */
    mt_close(e);
    assert_int_equal(mt_open(e), 0);
    struct strata_obj_info h;
    assert_int_equal(strata_obj_head(e->m, "b", "k", NULL, &h), 0);
    assert_true(h.seq_ns == t1); /* kept in the record (field 27) */
    strata_obj_info_fini(&h);
    assert_int_equal(mt_put(e, "b", "k", "two", 3, &n), 0);
    assert_true(n.seq_ns == t1 + 1); /* after the rewrite, not only the mtime */
    assert_true(strcmp(n.version_id, vf) < 0); /* and listed as the newer */
    assert_int_equal(strata_obj_tags_set(e->m, "b", "k", vf, "t=2", 3, NULL, &t2), 0);
    assert_true(t2 == t1 + 1); /* an older version's rewrite follows that version */
    struct strata_del_result dm, dv;
    assert_int_equal(strata_obj_delete(e->m, "b", "k", NULL, &dm), 0);
    assert_true(dm.delete_marker && dm.seq_ns == n.seq_ns + 1);
    assert_int_equal(strata_meta__vid_parse(dm.version_id, sk), 0);
    assert_true(strata_meta__sortkey_mtime(sk) == dm.seq_ns); /* a marker's stamp: its mtime */
    assert_int_equal(strata_obj_delete(e->m, "b", "k", n.version_id, &dv), 0);
    assert_true(dv.seq_ns == n.seq_ns + 1); /* a removal: after the removed version */
    strata_obj_info_fini(&a);
    strata_obj_info_fini(&n);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_multipart_tags),
        cmocka_unit_test(test_missed_rewrite_heals),
        cmocka_unit_test(test_change_stamps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
