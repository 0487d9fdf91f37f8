/*
 * test_lock.c - Object Lock enforced by meta/ itself, called directly (no
 * HTTP layer): a locked version refuses deletion by id, with and without
 * the governance bypass; COMPLIANCE is extend-only; GOVERNANCE yields to
 * the bypass only; legal hold; expiry by the retention clock; delete
 * markers are never locked; the bucket default applies to puts and to
 * multipart completes; buckets without lock refuse lock parameters; the
 * versioning of a lock bucket cannot be suspended; an overwrite or null
 * delete marker never replaces a locked null version; a drive that missed
 * a retention change is outvoted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "meta_internal.h"
#include "meta_test_util.h"

/* A fresh drive set with Object Lock bucket "b"; *now is the lock clock. */
static struct mt_env *lock_setup(const char *name, int64_t *now)
{
    struct mt_env *e = mt_setup(name);
    assert_non_null(e);
    assert_int_equal(mt_lock_bucket(e, "b"), 0);
    *now = strata_meta_lock_now_ms(e->m);
    return e;
}

static int put_locked(struct mt_env *e, const char *key, int mode, int64_t until_ms, bool hold,
                      struct strata_obj_info *out)
{
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = key;
    o.size = 5;
    o.lock.mode = mode;
    o.lock.until_ms = until_ms;
    o.lock.legal_hold = hold;
    o.lock.legal_hold_set = hold;
    return mt_put_opts(e, &o, "hello", 5, 0, out);
}

static void still_there(struct mt_env *e, const char *key, const char *vid)
{
    uint8_t *d = NULL;
    size_t n = 0;
    assert_int_equal(mt_get(e, "b", key, vid, &d, &n), 0);
    assert_int_equal(n, 5);
    assert_memory_equal(d, "hello", 5);
    free(d);
}

static void test_compliance_direct_refusal(void **state)
{
    (void)state;
    int64_t now;
    struct mt_env *e = lock_setup("lockcomp", &now);
    struct strata_obj_info v;
    assert_int_equal(put_locked(e, "k", STRATA_LOCK_COMPLIANCE, now + 3600000, false, &v), 0);
    assert_int_equal(v.lock.mode, STRATA_LOCK_COMPLIANCE);
    assert_int_equal(v.lock.until_ms, now + 3600000);
    /* The object layer itself refuses, bypass or not. */
    assert_int_equal(strata_obj_delete(e->m, "b", "k", v.version_id, NULL), STRATA_ELOCKED);
    struct strata_lock_actor root = {.user = "root", .bypass_governance = true};
    assert_int_equal(strata_obj_delete_opts(e->m, "b", "k", v.version_id, &root, NULL),
                     STRATA_ELOCKED);
    still_there(e, "k", v.version_id);
    /* Shorten, remove, switch to GOVERNANCE: refused for everyone. */
    assert_int_equal(strata_obj_retention_put(e->m, "b", "k", v.version_id,
                                              STRATA_LOCK_COMPLIANCE, now + 60000, &root, NULL),
                     STRATA_ELOCKED);
    assert_int_equal(strata_obj_retention_put(e->m, "b", "k", v.version_id, STRATA_LOCK_NONE, 0,
                                              &root, NULL),
                     STRATA_ELOCKED);
    assert_int_equal(strata_obj_retention_put(e->m, "b", "k", v.version_id,
                                              STRATA_LOCK_GOVERNANCE, now + 7200000, &root, NULL),
                     STRATA_ELOCKED);
    /* Extending is fine. */
    char vid[STRATA_VERSION_ID_MAX + 1];
    assert_int_equal(strata_obj_retention_put(e->m, "b", "k", NULL, STRATA_LOCK_COMPLIANCE,
                                              now + 7200000, NULL, vid),
                     0);
    assert_string_equal(vid, v.version_id);
    struct strata_obj_info h;
    assert_int_equal(strata_obj_head(e->m, "b", "k", v.version_id, &h), 0);
    assert_int_equal(h.lock.mode, STRATA_LOCK_COMPLIANCE);
    assert_int_equal(h.lock.until_ms, now + 7200000);
    strata_obj_info_fini(&h);
    /* Delete without a version id adds a marker; the marker itself is
     * never locked and goes; the version stays. */
    struct strata_del_result dr;
    assert_int_equal(strata_obj_delete(e->m, "b", "k", NULL, &dr), 0);
    assert_true(dr.delete_marker);
    assert_int_equal(strata_obj_delete(e->m, "b", "k", dr.version_id, NULL), 0);
    still_there(e, "k", NULL);
    /* An overwrite adds a version and leaves the locked one alone. */
    struct strata_obj_info v2;
    assert_int_equal(mt_put(e, "b", "k", "other", 5, &v2), 0);
    assert_string_not_equal(v2.version_id, v.version_id);
    still_there(e, "k", v.version_id);
    strata_obj_info_fini(&v2);
    strata_obj_info_fini(&v);
    mt_teardown(e);
}

static void test_governance_bypass(void **state)
{
    (void)state;
    int64_t now;
    struct mt_env *e = lock_setup("lockgov", &now);
    struct strata_obj_info v;
    assert_int_equal(put_locked(e, "k", STRATA_LOCK_GOVERNANCE, now + 3600000, false, &v), 0);
    struct strata_lock_actor plain = {.user = "u"};
    struct strata_lock_actor bypass = {.user = "u", .bypass_governance = true};
    assert_int_equal(strata_obj_delete_opts(e->m, "b", "k", v.version_id, &plain, NULL),
                     STRATA_ELOCKED);
    /* Shorten: needs the bypass; extending and going COMPLIANCE do not. */
    assert_int_equal(strata_obj_retention_put(e->m, "b", "k", v.version_id,
                                              STRATA_LOCK_GOVERNANCE, now + 60000, &plain, NULL),
                     STRATA_ELOCKED);
    assert_int_equal(strata_obj_retention_put(e->m, "b", "k", v.version_id,
                                              STRATA_LOCK_GOVERNANCE, now + 60000, &bypass, NULL),
                     0);
    assert_int_equal(strata_obj_retention_put(e->m, "b", "k", v.version_id,
                                              STRATA_LOCK_GOVERNANCE, now + 120000, &plain, NULL),
                     0);
    /* Removing needs the bypass too. */
    assert_int_equal(strata_obj_retention_put(e->m, "b", "k", v.version_id, STRATA_LOCK_NONE, 0,
                                              &plain, NULL),
                     STRATA_ELOCKED);
    still_there(e, "k", v.version_id);
    assert_int_equal(strata_obj_delete_opts(e->m, "b", "k", v.version_id, &bypass, NULL), 0);
    assert_int_equal(strata_obj_head(e->m, "b", "k", v.version_id, NULL), STRATA_ENOTFOUND);
    /* GOVERNANCE -> COMPLIANCE without bypass; then it is extend-only. */
    struct strata_obj_info w;
    assert_int_equal(put_locked(e, "k2", STRATA_LOCK_GOVERNANCE, now + 3600000, false, &w), 0);
    assert_int_equal(strata_obj_retention_put(e->m, "b", "k2", w.version_id,
                                              STRATA_LOCK_COMPLIANCE, now + 3600000, &plain, NULL),
                     0);
    assert_int_equal(strata_obj_delete_opts(e->m, "b", "k2", w.version_id, &bypass, NULL),
                     STRATA_ELOCKED);
    strata_obj_info_fini(&w);
    strata_obj_info_fini(&v);
    mt_teardown(e);
}

static void test_legal_hold_and_expiry(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("lockhold");
    assert_non_null(e);
    assert_int_equal(mt_lock_bucket(e, "b"), 0);
    struct strata_obj_info v;
    assert_int_equal(put_locked(e, "k", STRATA_LOCK_NONE, 0, true, &v), 0);
    assert_true(v.lock.legal_hold);
    struct strata_lock_actor bypass = {.user = "u", .bypass_governance = true};
    /* A legal hold does not yield to the governance bypass. */
    assert_int_equal(strata_obj_delete_opts(e->m, "b", "k", v.version_id, &bypass, NULL),
                     STRATA_ELOCKED);
    assert_int_equal(strata_obj_legal_hold_put(e->m, "b", "k", v.version_id, false, NULL, NULL),
                     0);
    struct strata_obj_info h;
    assert_int_equal(strata_obj_head(e->m, "b", "k", v.version_id, &h), 0);
    assert_false(h.lock.legal_hold);
    assert_true(h.lock.legal_hold_set); /* OFF, not "never set" */
    strata_obj_info_fini(&h);
    assert_int_equal(strata_obj_delete(e->m, "b", "k", v.version_id, NULL), 0);
    strata_obj_info_fini(&v);
    /* Retention ends by the retention clock: refused before, allowed after. */
    int64_t now = strata_meta_lock_now_ms(e->m);
    assert_int_equal(put_locked(e, "t", STRATA_LOCK_COMPLIANCE, now + 1200, false, &v), 0);
    assert_int_equal(strata_obj_delete(e->m, "b", "t", v.version_id, NULL), STRATA_ELOCKED);
    while (strata_meta_lock_now_ms(e->m) <= now + 1200)
        usleep(50000);
    /* Expired retention may be replaced by a shorter-lived one, too. */
    assert_int_equal(strata_obj_delete(e->m, "b", "t", v.version_id, NULL), 0);
    strata_obj_info_fini(&v);
    /* A retention date in the past is refused on put and on change. */
    assert_int_equal(put_locked(e, "p", STRATA_LOCK_GOVERNANCE, now - 1000, false, &v),
                     STRATA_EINVAL);
    assert_int_equal(put_locked(e, "p", 7, now + 100000, false, &v), STRATA_EINVAL);
    assert_int_equal(mt_put(e, "b", "p", "hello", 5, &v), 0);
    assert_false(v.lock.legal_hold_set);
    assert_int_equal(strata_obj_retention_put(e->m, "b", "p", NULL, STRATA_LOCK_GOVERNANCE,
                                              now - 1000, NULL, NULL),
                     STRATA_EINVAL);
    /* Delete markers have no retention to set. */
    struct strata_del_result dr;
    assert_int_equal(strata_obj_delete(e->m, "b", "p", NULL, &dr), 0);
    assert_int_equal(strata_obj_retention_put(e->m, "b", "p", dr.version_id,
                                              STRATA_LOCK_GOVERNANCE, now + 100000, NULL, NULL),
                     STRATA_EMETHOD);
    strata_obj_info_fini(&v);
    mt_teardown(e);
}

static void test_default_retention(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("lockdef");
    assert_non_null(e);
    /* Not on an unversioned bucket; then on a versioned one. */
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    assert_int_equal(strata_meta_bucket_lock_set(e->m, "b", STRATA_LOCK_GOVERNANCE, 1, 0, NULL),
                     STRATA_EINVAL);
    assert_int_equal(strata_meta_bucket_set_versioning(e->m, "b", STRATA_VERSIONING_ENABLED), 0);
    assert_int_equal(strata_meta_bucket_lock_set(e->m, "b", STRATA_LOCK_GOVERNANCE, 1, 1, NULL),
                     STRATA_EINVAL);
    assert_int_equal(strata_meta_bucket_lock_set(e->m, "b", STRATA_LOCK_GOVERNANCE, 1, 0, NULL),
                     0);
    struct strata_bucket_info bi;
    assert_int_equal(strata_meta_bucket_get(e->m, "b", &bi), 0);
    assert_true(bi.object_lock);
    assert_int_equal(bi.lock_mode, STRATA_LOCK_GOVERNANCE);
    assert_int_equal(bi.lock_days, 1);
    assert_int_equal(strata_meta_bucket_set_versioning(e->m, "b", STRATA_VERSIONING_SUSPENDED),
                     STRATA_EINVAL);
    int64_t t0 = strata_meta_lock_now_ms(e->m);
    struct strata_obj_info v;
    assert_int_equal(mt_put(e, "b", "k", "hello", 5, &v), 0);
    int64_t t1 = strata_meta_lock_now_ms(e->m);
    assert_int_equal(v.lock.mode, STRATA_LOCK_GOVERNANCE);
    assert_true(v.lock.until_ms >= t0 + 86400000 && v.lock.until_ms <= t1 + 86400000);
    assert_int_equal(strata_obj_delete(e->m, "b", "k", v.version_id, NULL), STRATA_ELOCKED);
    strata_obj_info_fini(&v);
    /* Explicit headers win over the default. */
    assert_int_equal(put_locked(e, "x", STRATA_LOCK_COMPLIANCE, t1 + 5000, false, &v), 0);
    assert_int_equal(v.lock.mode, STRATA_LOCK_COMPLIANCE);
    assert_int_equal(v.lock.until_ms, t1 + 5000);
    strata_obj_info_fini(&v);
    /* Multipart: the default at complete; then years. */
    assert_int_equal(strata_meta_bucket_lock_set(e->m, "b", STRATA_LOCK_COMPLIANCE, 0, 2, NULL),
                     0);
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = "b";
    mo.key = "mp";
    mo.lock.legal_hold = true;
    mo.lock.legal_hold_set = true;
    assert_int_equal(mt_mpu_single(e->m, &mo, "hello", 5, &v), 0);
    assert_int_equal(v.lock.mode, STRATA_LOCK_COMPLIANCE);
    /* Two calendar years: 730 or 731 days. */
    assert_true(v.lock.until_ms >= t0 + 730 * 86400000LL);
    assert_true(v.lock.until_ms <= strata_meta_lock_now_ms(e->m) + 731 * 86400000LL);
    assert_true(v.lock.legal_hold);
    struct strata_lock_actor bypass = {.user = "u", .bypass_governance = true};
    assert_int_equal(strata_obj_delete_opts(e->m, "b", "mp", v.version_id, &bypass, NULL),
                     STRATA_ELOCKED);
    still_there(e, "mp", v.version_id);
    strata_obj_info_fini(&v);
    /* Clearing the default: new versions are unlocked again. */
    assert_int_equal(strata_meta_bucket_lock_set(e->m, "b", STRATA_LOCK_NONE, 0, 0, NULL), 0);
    assert_int_equal(mt_put(e, "b", "n", "hello", 5, &v), 0);
    assert_int_equal(v.lock.mode, STRATA_LOCK_NONE);
    assert_int_equal(strata_obj_delete(e->m, "b", "n", v.version_id, NULL), 0);
    strata_obj_info_fini(&v);
    mt_teardown(e);
}

static void test_no_lock_bucket(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("locknone");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_ENABLED), 0);
    int64_t now = strata_meta_lock_now_ms(e->m);
    struct strata_obj_info v;
    assert_int_equal(put_locked(e, "k", STRATA_LOCK_GOVERNANCE, now + 60000, false, &v),
                     STRATA_EINVAL);
    assert_int_equal(put_locked(e, "k", STRATA_LOCK_NONE, 0, true, &v), STRATA_EINVAL);
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = "b";
    mo.key = "mp";
    mo.lock.legal_hold = true;
    mo.lock.legal_hold_set = true;
    char uid[40];
    assert_int_equal(strata_mpu_create(e->m, &mo, uid), STRATA_EINVAL);
    assert_int_equal(mt_put(e, "b", "k", "hello", 5, &v), 0);
    assert_int_equal(strata_obj_retention_put(e->m, "b", "k", NULL, STRATA_LOCK_GOVERNANCE,
                                              now + 60000, NULL, NULL),
                     STRATA_EINVAL);
    assert_int_equal(strata_obj_legal_hold_put(e->m, "b", "k", NULL, true, NULL, NULL),
                     STRATA_EINVAL);
    /* A lock bucket cannot be created without versioning. */
    struct strata_bucket_info b;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "c");
    b.object_lock = true;
    assert_int_equal(strata_meta_bucket_create(e->m, &b), STRATA_EINVAL);
    strata_obj_info_fini(&v);
    mt_teardown(e);
}

/* Rewrite the bucket record on every drive (no API path can do this). */
static void force_versioning(struct mt_env *e, const char *name, int versioning)
{
    struct strata_bucket_info b;
    assert_int_equal(strata_meta_bucket_get(e->m, name, &b), 0);
    b.versioning = versioning;
    char *v;
    size_t vl;
    assert_int_equal(strata_meta__bucket_encode(&b, &v, &vl), 0);
    char k[128];
    size_t kl = strata_meta__key_bucket(k, sizeof(k), name);
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    for (int d = 0; d < MT_DRIVES; d++) {
        char *err = NULL;
        rocksdb_put(e->m->sets[0].drives[d].db, wo, k, kl, v, vl, &err);
        assert_null(err);
    }
    rocksdb_writeoptions_destroy(wo);
    free(v);
}

static void test_locked_null_version(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("locknull");
    assert_non_null(e);
    /* A null version written before versioning, then locked. */
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    struct strata_obj_info v;
    assert_int_equal(mt_put(e, "b", "k", "hello", 5, &v), 0);
    strata_obj_info_fini(&v);
    assert_int_equal(strata_meta_bucket_set_versioning(e->m, "b", STRATA_VERSIONING_ENABLED), 0);
    assert_int_equal(strata_meta_bucket_lock_set(e->m, "b", STRATA_LOCK_NONE, 0, 0, NULL), 0);
    int64_t now = strata_meta_lock_now_ms(e->m);
    assert_int_equal(strata_obj_retention_put(e->m, "b", "k", "null", STRATA_LOCK_COMPLIANCE,
                                              now + 3600000, NULL, NULL),
                     0);
    assert_int_equal(strata_obj_delete(e->m, "b", "k", "null", NULL), STRATA_ELOCKED);
    /* Even if the bucket record said "suspended", neither an overwrite nor
     * a null delete marker may replace the locked null version. */
    force_versioning(e, "b", STRATA_VERSIONING_SUSPENDED);
    assert_int_equal(mt_put(e, "b", "k", "xxxxx", 5, &v), STRATA_ELOCKED);
    assert_int_equal(strata_obj_delete(e->m, "b", "k", NULL, NULL), STRATA_ELOCKED);
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = "b";
    mo.key = "k";
    assert_int_equal(mt_mpu_single(e->m, &mo, "yyyyy", 5, &v), STRATA_ELOCKED);
    still_there(e, "k", "null");
    mt_teardown(e);
}

static void test_missed_retention_outvoted(void **state)
{
    (void)state;
    int64_t now;
    struct mt_env *e = lock_setup("lockvote", &now);
    struct strata_obj_info v;
    assert_int_equal(put_locked(e, "k", STRATA_LOCK_GOVERNANCE, now + 3600000, false, &v), 0);
    char k[256];
    size_t kl = strata_meta__key_obj(k, sizeof(k), "b", "k", NULL);
    uint8_t sk[SORTKEY_LEN];
    assert_int_equal(strata_meta__vid_parse(v.version_id, sk), 0);
    memcpy(k + kl, sk, SORTKEY_LEN);
    kl += SORTKEY_LEN;
    char *old;
    size_t oldl;
    assert_int_equal(strata_meta__drive_get(e->m, 0, 0, k, kl, &old, &oldl), 0);
    assert_int_equal(strata_obj_retention_put(e->m, "b", "k", NULL, STRATA_LOCK_COMPLIANCE,
                                              now + 7200000, NULL, NULL),
                     0);
    /* Drive 0 (read first) missed the change: the quorum still says
     * COMPLIANCE, so the bypass does not open it. */
    char *err = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_put(e->m->sets[0].drives[0].db, wo, k, kl, old, oldl, &err);
    assert_null(err);
    rocksdb_writeoptions_destroy(wo);
    free(old);
    struct strata_obj_info h;
    assert_int_equal(strata_obj_head(e->m, "b", "k", NULL, &h), 0);
    assert_int_equal(h.lock.mode, STRATA_LOCK_COMPLIANCE);
    strata_obj_info_fini(&h);
    struct strata_lock_actor bypass = {.user = "u", .bypass_governance = true};
    assert_int_equal(strata_obj_delete_opts(e->m, "b", "k", v.version_id, &bypass, NULL),
                     STRATA_ELOCKED);
    strata_obj_info_fini(&v);
    mt_teardown(e);
}

/* Drive d's raw record of bucket b key k version vid. */
static void raw_get(struct mt_env *e, unsigned d, const char *key, const char *vid, char *k,
                    size_t *kl, char **v, size_t *vl)
{
    *kl = strata_meta__key_obj(k, 256, "b", key, NULL);
    uint8_t sk[SORTKEY_LEN];
    assert_int_equal(strata_meta__vid_parse(vid, sk), 0);
    memcpy(k + *kl, sk, SORTKEY_LEN);
    *kl += SORTKEY_LEN;
    assert_int_equal(strata_meta__drive_get(e->m, 0, d, k, *kl, v, vl), 0);
}

static void test_half_missed_change_inline(void **state)
{
    (void)state;
    int64_t now;
    struct mt_env *e = lock_setup("lockhalf", &now);
    struct strata_obj_info v;
    /* 5 bytes: inline, each drive holds its own shard in the record. */
    assert_int_equal(put_locked(e, "k", STRATA_LOCK_GOVERNANCE, now + 3600000, false, &v), 0);
    char k[256], *old[2];
    size_t kl, oldl[2];
    raw_get(e, 2, "k", v.version_id, k, &kl, &old[0], &oldl[0]);
    raw_get(e, 3, "k", v.version_id, k, &kl, &old[1], &oldl[1]);
    assert_int_equal(strata_obj_retention_put(e->m, "b", "k", NULL, STRATA_LOCK_GOVERNANCE,
                                              now + 7200000, NULL, NULL),
                     0);
    /* Drives 2 and 3 missed it (a crash between the drives' commits). */
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    for (int i = 0; i < 2; i++) {
        char *err = NULL;
        rocksdb_put(e->m->sets[0].drives[2 + i].db, wo, k, kl, old[i], oldl[i], &err);
        assert_null(err);
        free(old[i]);
    }
    rocksdb_writeoptions_destroy(wo);
    /* The next change still reaches the write quorum and every drive. */
    assert_int_equal(strata_obj_retention_put(e->m, "b", "k", NULL, STRATA_LOCK_COMPLIANCE,
                                              now + 9000000, NULL, NULL),
                     0);
    for (unsigned d = 0; d < MT_DRIVES; d++) {
        char *raw;
        size_t rl;
        raw_get(e, d, "k", v.version_id, k, &kl, &raw, &rl);
        struct meta_rec r;
        assert_int_equal(strata_meta__rec_decode(raw, rl, false, &r), 0);
        assert_int_equal(r.lock.mode, STRATA_LOCK_COMPLIANCE);
        assert_int_equal(r.lock.until_ms, now + 9000000);
        strata_meta__rec_fini(&r);
        free(raw);
    }
    still_there(e, "k", v.version_id);
    strata_obj_info_fini(&v);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compliance_direct_refusal),
        cmocka_unit_test(test_governance_bypass),
        cmocka_unit_test(test_legal_hold_and_expiry),
        cmocka_unit_test(test_default_retention),
        cmocka_unit_test(test_no_lock_bucket),
        cmocka_unit_test(test_locked_null_version),
        cmocka_unit_test(test_missed_retention_outvoted),
        cmocka_unit_test(test_half_missed_change_inline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
