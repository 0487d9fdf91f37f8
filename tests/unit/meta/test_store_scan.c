/*
 * test_store_scan.c - the store's scans (store.h, "scans") on the local
 * backend, over real RocksDB stores on four drives: key order whatever the
 * order of the puts, CURRENT (each key's latest) against VERSIONS (every
 * version, newest first), the prefix bound, the after marker with and
 * without a version, scan_skip_past as one seek (the keys looked at stay
 * a handful instead of every key under the prefix), the read rule when a
 * merged drive disagrees (a version only one drive holds is not shown; one
 * a drive missed is), live uploads (an aborted one and one only a drive
 * holds are not), the version-time index in time order within its range,
 * an empty bucket and other buckets' keys, and the specs a scan refuses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "local/local.h"
#include "meta_test_util.h"
#include "store.h"

static const struct strata_meta__store_ops *OPS = &strata_meta__store_local;

static struct strata_meta__scan *open_scan(struct mt_env *e, enum strata_meta__scan_kind kind,
                                           const char *prefix, const char *after,
                                           const uint8_t *after_sk)
{
    struct strata_meta__scan_spec spec = {
        .bucket = "b", .kind = kind, .prefix = prefix, .after = after, .after_sk = after_sk};
    struct strata_meta__scan *s = NULL;
    assert_int_equal(OPS->scan_open(e->m, &spec, &s), 0);
    assert_non_null(s);
    return s;
}

/* The scan's keys (and version ids) joined by spaces into out; the count. */
static int drain(struct strata_meta__scan *s, char *out, size_t cap, bool vids)
{
    struct strata_meta__scan_ent en;
    int n = 0, rc;
    out[0] = 0;
    while ((rc = OPS->scan_next(s, &en)) == 1) {
        size_t l = strlen(out);
        snprintf(out + l, cap - l, "%s%s%s%s", l ? " " : "", en.key, vids ? "@" : "",
                 vids ? en.info->version_id : "");
        assert_string_equal(en.key, en.info->key);
        n++;
    }
    assert_int_equal(rc, 0);
    return n;
}

static struct mt_env *setup_bucket(const char *name, int versioning)
{
    struct mt_env *e = mt_setup(name);
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", versioning), 0);
    return e;
}

static void put(struct mt_env *e, const char *key, const char *body, char vid[48])
{
    struct strata_obj_info i;
    assert_int_equal(mt_put(e, "b", key, body, strlen(body), &i), 0);
    if (vid)
        snprintf(vid, 48, "%s", i.version_id);
    strata_obj_info_fini(&i);
}

static void test_order_and_prefix(void **state)
{
    (void)state;
    struct mt_env *e = setup_bucket("scan-order", 0);
    static const char *keys[] = {"c", "a/2", "b", "a/1", "a", "a/10", "d\xc3\xa9"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        put(e, keys[i], keys[i], NULL);
    char got[512];
    struct strata_meta__scan *s = open_scan(e, STRATA_META__SCAN_CURRENT, NULL, NULL, NULL);
    assert_int_equal(drain(s, got, sizeof(got), false), 7);
    assert_string_equal(got, "a a/1 a/10 a/2 b c d\xc3\xa9"); /* byte order */
    OPS->scan_close(s);
    s = open_scan(e, STRATA_META__SCAN_CURRENT, "a/", NULL, NULL);
    assert_int_equal(drain(s, got, sizeof(got), false), 3);
    assert_string_equal(got, "a/1 a/10 a/2");
    OPS->scan_close(s);
    s = open_scan(e, STRATA_META__SCAN_CURRENT, "zz", NULL, NULL);
    assert_int_equal(drain(s, got, sizeof(got), false), 0);
    OPS->scan_close(s);
    /* The entry carries the version as HEAD shows it. */
    s = open_scan(e, STRATA_META__SCAN_CURRENT, "b", NULL, NULL);
    struct strata_meta__scan_ent en;
    assert_int_equal(OPS->scan_next(s, &en), 1);
    assert_string_equal(en.key, "b");
    assert_int_equal(en.info->size, 1);
    assert_string_equal(en.info->version_id, "null");
    assert_null(en.sk); /* CURRENT: no sort key */
    assert_int_equal(OPS->scan_next(s, &en), 0);
    assert_int_equal(OPS->scan_next(s, &en), 0); /* stays at the end */
    OPS->scan_close(s);
    OPS->scan_close(NULL);
    mt_teardown(e);
}

static void test_versions_and_markers(void **state)
{
    (void)state;
    struct mt_env *e = setup_bucket("scan-versions", STRATA_VERSIONING_ENABLED);
    char v1[48], v2[48], v3[48], w1[48];
    put(e, "k", "one", v1);
    put(e, "k", "two", v2);
    put(e, "k", "three", v3);
    put(e, "m", "m", w1);
    char want[512], got[512];
    struct strata_meta__scan *s = open_scan(e, STRATA_META__SCAN_VERSIONS, NULL, NULL, NULL);
    assert_int_equal(drain(s, got, sizeof(got), true), 4);
    snprintf(want, sizeof(want), "k@%s k@%s k@%s m@%s", v3, v2, v1, w1); /* newest first */
    assert_string_equal(got, want);
    OPS->scan_close(s);
    s = open_scan(e, STRATA_META__SCAN_CURRENT, NULL, NULL, NULL);
    assert_int_equal(drain(s, got, sizeof(got), true), 2);
    snprintf(want, sizeof(want), "k@%s m@%s", v3, w1);
    assert_string_equal(got, want);
    OPS->scan_close(s);
    /* After a key: past every version of it. */
    s = open_scan(e, STRATA_META__SCAN_VERSIONS, NULL, "k", NULL);
    assert_int_equal(drain(s, got, sizeof(got), true), 1);
    snprintf(want, sizeof(want), "m@%s", w1);
    assert_string_equal(got, want);
    OPS->scan_close(s);
    /* After one version: its older versions follow. */
    uint8_t sk[SORTKEY_LEN];
    assert_int_equal(strata_meta__vid_parse(v2, sk), 0);
    s = open_scan(e, STRATA_META__SCAN_VERSIONS, NULL, "k", sk);
    assert_int_equal(drain(s, got, sizeof(got), true), 2);
    snprintf(want, sizeof(want), "k@%s m@%s", v1, w1);
    assert_string_equal(got, want);
    OPS->scan_close(s);
    /* The entry's sort key is the version's. */
    s = open_scan(e, STRATA_META__SCAN_VERSIONS, "m", NULL, NULL);
    struct strata_meta__scan_ent en;
    assert_int_equal(OPS->scan_next(s, &en), 1);
    assert_non_null(en.sk);
    assert_int_equal(strata_meta__vid_parse(w1, sk), 0);
    assert_memory_equal(en.sk, sk, SORTKEY_LEN);
    OPS->scan_close(s);
    /* A delete marker is the latest: CURRENT shows it (the lister hides it). */
    struct strata_del_result dm;
    memset(&dm, 0, sizeof(dm));
    assert_int_equal(strata_obj_delete(e->m, "b", "m", NULL, &dm), 0);
    s = open_scan(e, STRATA_META__SCAN_CURRENT, "m", NULL, NULL);
    assert_int_equal(OPS->scan_next(s, &en), 1);
    assert_true(en.info->delete_marker);
    assert_int_equal(OPS->scan_next(s, &en), 0);
    OPS->scan_close(s);
    mt_teardown(e);
}

static void test_skip_past_seeks(void **state)
{
    (void)state;
    struct mt_env *e = setup_bucket("scan-skip", 0);
    char key[32];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "dir/%03d", i);
        put(e, key, "x", NULL);
    }
    put(e, "zed", "z", NULL);
    struct strata_meta__scan_ent en;
    /* Walked key by key, every key under dir/ is looked at. */
    struct strata_meta__scan *s = open_scan(e, STRATA_META__SCAN_CURRENT, NULL, NULL, NULL);
    int n = 0;
    while (OPS->scan_next(s, &en) == 1)
        n++;
    assert_int_equal(n, 201);
    uint64_t walked = strata_meta__local_scan_visited(s);
    assert_true(walked >= 201);
    OPS->scan_close(s);
    /* Skipped past: the next entry is the first key after the prefix, and
     * only a handful of keys are looked at. */
    s = open_scan(e, STRATA_META__SCAN_CURRENT, NULL, NULL, NULL);
    assert_int_equal(OPS->scan_next(s, &en), 1);
    assert_string_equal(en.key, "dir/000");
    assert_true(OPS->scan_skip_past(s, "dir/", 4));
    assert_int_equal(OPS->scan_next(s, &en), 1);
    assert_string_equal(en.key, "zed");
    assert_int_equal(OPS->scan_next(s, &en), 0);
    uint64_t skipped = strata_meta__local_scan_visited(s);
    assert_true(skipped <= 4);
    OPS->scan_close(s);
    /* Nothing can follow a prefix of 0xff bytes; a prefix past the end
     * leaves an empty scan. */
    s = open_scan(e, STRATA_META__SCAN_CURRENT, NULL, NULL, NULL);
    assert_false(OPS->scan_skip_past(s, "\xff\xff", 2));
    assert_true(OPS->scan_skip_past(s, "zed", 3));
    assert_int_equal(OPS->scan_next(s, &en), 0);
    OPS->scan_close(s);
    mt_teardown(e);
}

/* The raw key of bucket b key k version sk. */
static size_t raw_key(char *k, const char *key, const uint8_t *sk)
{
    size_t kl = strata_meta__key_obj(k, 512, "b", key, NULL);
    memcpy(k + kl, sk, SORTKEY_LEN);
    return kl + SORTKEY_LEN;
}

static void raw_put(struct mt_env *e, unsigned d, const char *k, size_t kl, const char *v,
                    size_t vl)
{
    char *err = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_put(e->m->sets[0].drives[d].db, wo, k, kl, v, vl, &err);
    rocksdb_writeoptions_destroy(wo);
    assert_null(err);
}

static void raw_delete(struct mt_env *e, unsigned d, const char *k, size_t kl)
{
    char *err = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_delete(e->m->sets[0].drives[d].db, wo, k, kl, &err);
    rocksdb_writeoptions_destroy(wo);
    assert_null(err);
}

static void test_drive_disagrees(void **state)
{
    (void)state;
    struct mt_env *e = setup_bucket("scan-disagree", STRATA_VERSIONING_ENABLED);
    char v1[48], w1[48];
    put(e, "k", "one", v1);
    put(e, "w", "wide", w1);
    uint8_t sk1[SORTKEY_LEN], skf[SORTKEY_LEN];
    assert_int_equal(strata_meta__vid_parse(v1, sk1), 0);
    char k[512], kf[512];
    size_t kl = raw_key(k, "k", sk1);
    char *val;
    size_t vl;
    assert_int_equal(strata_meta__drive_get(e->m, 0, 0, k, kl, &val, &vl), 0);
    /* A newer version of k only drive 0 (merged, read first) holds: a write
     * that never reached its quorum.  Neither scan shows it. */
    strata_meta__sortkey_new(strata_meta_lock_now_ms(e->m) * 1000000 + 3600000000000LL, skf);
    size_t kfl = raw_key(kf, "k", skf);
    raw_put(e, 0, kf, kfl, val, vl);
    char want[512], got[512];
    struct strata_meta__scan *s = open_scan(e, STRATA_META__SCAN_CURRENT, NULL, NULL, NULL);
    assert_int_equal(drain(s, got, sizeof(got), true), 2);
    snprintf(want, sizeof(want), "k@%s w@%s", v1, w1);
    assert_string_equal(got, want);
    OPS->scan_close(s);
    s = open_scan(e, STRATA_META__SCAN_VERSIONS, NULL, NULL, NULL);
    assert_int_equal(drain(s, got, sizeof(got), true), 2);
    assert_string_equal(got, want);
    OPS->scan_close(s);
    /* w's record missed by drive 0 (a committed write it did not take):
     * the quorum still shows it. */
    uint8_t skw[SORTKEY_LEN];
    assert_int_equal(strata_meta__vid_parse(w1, skw), 0);
    char kw[512];
    size_t kwl = raw_key(kw, "w", skw);
    raw_delete(e, 0, kw, kwl);
    s = open_scan(e, STRATA_META__SCAN_VERSIONS, NULL, NULL, NULL);
    assert_int_equal(drain(s, got, sizeof(got), true), 2);
    assert_string_equal(got, want);
    OPS->scan_close(s);
    free(val);
    mt_teardown(e);
}

static void create_upload(struct mt_env *e, const char *key, char id[STRATA_UPLOAD_ID_MAX + 1])
{
    struct strata_mpu_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = key;
    assert_int_equal(strata_mpu_create(e->m, &o, id), 0);
}

/* The UPLOADS scan's "key@upload" list joined by spaces into out. */
static int drain_uploads(struct strata_meta__scan *s, char *out, size_t cap)
{
    struct strata_meta__scan_ent en;
    int n = 0, rc;
    out[0] = 0;
    while ((rc = OPS->scan_next(s, &en)) == 1) {
        size_t l = strlen(out);
        assert_non_null(en.upload);
        assert_null(en.info);
        assert_string_equal(en.upload->key, en.key);
        assert_string_equal(en.upload->bucket, "b");
        assert_string_equal(en.upload->storage_class, "STANDARD");
        snprintf(out + l, cap - l, "%s%s@%s", l ? " " : "", en.key, en.upload->upload_id);
        n++;
    }
    assert_int_equal(rc, 0);
    return n;
}

static void test_uploads(void **state)
{
    (void)state;
    struct mt_env *e = setup_bucket("scan-uploads", 0);
    char a1[STRATA_UPLOAD_ID_MAX + 1], a2[STRATA_UPLOAD_ID_MAX + 1], b1[STRATA_UPLOAD_ID_MAX + 1],
        c1[STRATA_UPLOAD_ID_MAX + 1], gone[STRATA_UPLOAD_ID_MAX + 1];
    create_upload(e, "u/b", b1);
    create_upload(e, "u/a", a1);
    create_upload(e, "u/a", a2);
    create_upload(e, "v", c1);
    create_upload(e, "u/c", gone);
    assert_int_equal(strata_mpu_abort(e->m, "b", "u/c", gone), 0);
    /* Uploads of one key by upload id. */
    const char *lo = strcmp(a1, a2) < 0 ? a1 : a2, *hi = lo == a1 ? a2 : a1;
    char want[512], got[512];
    struct strata_meta__scan *s = open_scan(e, STRATA_META__SCAN_UPLOADS, NULL, NULL, NULL);
    assert_int_equal(drain_uploads(s, got, sizeof(got)), 4); /* the aborted one is not shown */
    snprintf(want, sizeof(want), "u/a@%s u/a@%s u/b@%s v@%s", lo, hi, b1, c1);
    assert_string_equal(got, want);
    OPS->scan_close(s);
    s = open_scan(e, STRATA_META__SCAN_UPLOADS, "u/", "u/a", NULL);
    assert_int_equal(drain_uploads(s, got, sizeof(got)), 1);
    snprintf(want, sizeof(want), "u/b@%s", b1);
    assert_string_equal(got, want);
    OPS->scan_close(s);
    uint8_t up[16];
    assert_int_equal(strata_meta__upload_id_parse(lo, up), 0);
    s = open_scan(e, STRATA_META__SCAN_UPLOADS, "u/", "u/a", up);
    assert_int_equal(drain_uploads(s, got, sizeof(got)), 2);
    snprintf(want, sizeof(want), "u/a@%s u/b@%s", hi, b1);
    assert_string_equal(got, want);
    OPS->scan_close(s);
    s = open_scan(e, STRATA_META__SCAN_UPLOADS, NULL, NULL, NULL);
    struct strata_meta__scan_ent en;
    assert_int_equal(OPS->scan_next(s, &en), 1);
    assert_true(OPS->scan_skip_past(s, "u/", 2));
    assert_int_equal(OPS->scan_next(s, &en), 1);
    assert_string_equal(en.key, "v");
    OPS->scan_close(s);
    /* An upload record only drive 0 holds (a create that never reached
     * its quorum) is not live by the read rule. */
    char k[512], kf[512];
    size_t kl = strata_meta__key_upload(k, sizeof(k), "b", "v", NULL);
    assert_int_equal(strata_meta__upload_id_parse(c1, up), 0);
    memcpy(k + kl, up, 16);
    kl += 16;
    char *val;
    size_t vl;
    assert_int_equal(strata_meta__drive_get(e->m, 0, 0, k, kl, &val, &vl), 0);
    memcpy(kf, k, kl);
    kf[kl - 1] ^= 0x01; /* another upload id of v */
    raw_put(e, 0, kf, kl, val, vl);
    free(val);
    s = open_scan(e, STRATA_META__SCAN_UPLOADS, "v", NULL, NULL);
    assert_int_equal(drain_uploads(s, got, sizeof(got)), 1);
    snprintf(want, sizeof(want), "v@%s", c1);
    assert_string_equal(got, want);
    OPS->scan_close(s);
    mt_teardown(e);
}

static void test_due(void **state)
{
    (void)state;
    struct mt_env *e = setup_bucket("scan-due", STRATA_VERSIONING_ENABLED);
    char v1[48], v2[48], w1[48];
    put(e, "z", "1", v1);
    put(e, "a", "2", w1);
    put(e, "z", "3", v2);
    struct strata_meta__scan_spec spec = {.bucket = "b",
                                          .kind = STRATA_META__SCAN_DUE,
                                          .from_ms = 0,
                                          .to_ms = INT64_MAX / 1000000};
    struct strata_meta__scan *s;
    assert_int_equal(OPS->scan_open(e->m, &spec, &s), 0);
    struct strata_meta__scan_ent en;
    const char *want_k[] = {"z", "a", "z"}, *want_v[] = {v1, w1, v2};
    int64_t prev = 0;
    for (int i = 0; i < 3; i++) { /* oldest first, whatever the keys */
        assert_int_equal(OPS->scan_next(s, &en), 1);
        assert_string_equal(en.key, want_k[i]);
        char vid[48];
        strata_meta__vid_format(en.sk, vid);
        assert_string_equal(vid, want_v[i]);
        assert_true(en.due_ms >= prev && en.due_ms > 0);
        prev = en.due_ms;
    }
    assert_int_equal(OPS->scan_next(s, &en), 0);
    assert_false(OPS->scan_skip_past(s, "z", 1)); /* time order: no key prefix */
    OPS->scan_close(s);
    /* The range bounds the entries: [first, last) leaves the last out. */
    spec.to_ms = prev;
    assert_int_equal(OPS->scan_open(e->m, &spec, &s), 0);
    int n = 0;
    while (OPS->scan_next(s, &en) == 1)
        n++;
    assert_true(n < 3);
    OPS->scan_close(s);
    spec.from_ms = prev + 1;
    spec.to_ms = prev + 2;
    assert_int_equal(OPS->scan_open(e->m, &spec, &s), 0);
    assert_int_equal(OPS->scan_next(s, &en), 0);
    OPS->scan_close(s);
    /* An empty range, or a prefix on a DUE scan, is refused. */
    spec.to_ms = spec.from_ms;
    assert_int_equal(OPS->scan_open(e->m, &spec, &s), STRATA_EINVAL);
    spec.to_ms = spec.from_ms + 1;
    spec.prefix = "z";
    assert_int_equal(OPS->scan_open(e->m, &spec, &s), STRATA_EINVAL);
    mt_teardown(e);
}

static void test_empty_and_errors(void **state)
{
    (void)state;
    struct mt_env *e = setup_bucket("scan-empty", 0);
    char got[64];
    struct strata_meta__scan *s = open_scan(e, STRATA_META__SCAN_CURRENT, NULL, NULL, NULL);
    assert_int_equal(drain(s, got, sizeof(got), false), 0);
    OPS->scan_close(s);
    s = open_scan(e, STRATA_META__SCAN_VERSIONS, "p", "q", NULL);
    assert_int_equal(drain(s, got, sizeof(got), false), 0);
    OPS->scan_close(s);
    /* Keys of another bucket are never seen. */
    assert_int_equal(mt_bucket(e, "b2", 0), 0);
    assert_int_equal(mt_put(e, "b2", "x", "x", 1, NULL), 0);
    s = open_scan(e, STRATA_META__SCAN_CURRENT, NULL, NULL, NULL);
    assert_int_equal(drain(s, got, sizeof(got), false), 0);
    OPS->scan_close(s);

    uint8_t sk[SORTKEY_LEN] = {0};
    char longkey[STRATA_KEY_MAX + 2];
    memset(longkey, 'a', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = 0;
    struct strata_meta__scan_spec bad[] = {
        {.bucket = NULL, .kind = STRATA_META__SCAN_CURRENT},
        {.bucket = "", .kind = STRATA_META__SCAN_CURRENT},
        {.bucket = "b", .kind = (enum strata_meta__scan_kind)42},
        {.bucket = "b", .kind = STRATA_META__SCAN_CURRENT, .prefix = longkey},
        {.bucket = "b", .kind = STRATA_META__SCAN_CURRENT, .after = longkey},
        /* a version marker needs a key, and a VERSIONS scan */
        {.bucket = "b", .kind = STRATA_META__SCAN_VERSIONS, .after_sk = sk},
        {.bucket = "b", .kind = STRATA_META__SCAN_CURRENT, .after = "k", .after_sk = sk},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        s = (struct strata_meta__scan *)&bad[i]; /* must be reset on failure */
        assert_int_equal(OPS->scan_open(e->m, &bad[i], &s), STRATA_EINVAL);
        assert_null(s);
    }
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_prefix),
        cmocka_unit_test(test_versions_and_markers),
        cmocka_unit_test(test_skip_past_seeks),
        cmocka_unit_test(test_drive_disagrees),
        cmocka_unit_test(test_uploads),
        cmocka_unit_test(test_due),
        cmocka_unit_test(test_empty_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
