/*
 * test_mpu_tomb.c - upload, part and bucket records under the newest-state
 * rule, on a 2+2 set (Wq = 3, Rq = 2) of real drive directories:
 *
 * - an abort or a complete that a drive missed (the drive offline) never
 *   brings the upload back into ListMultipartUploads, ListParts or
 *   UploadPart, also when that drive is one of only two readable drives;
 *   heal copies the dead state to it, removes its part records, and once
 *   every drive holds the dead state drops it (an abort's tombstone at
 *   once, a completed-upload record after the retry window);
 * - a completed upload answers a repeated Complete with the same part list
 *   with the same ETag and version id (also from a drive set where only
 *   one drive holds the completion), a different list, an abort, a part
 *   upload or ListParts with NoSuchUpload, and once the retry window has
 *   passed the repeat too;
 * - a bucket deleted while a drive missed it is not found (and not listed)
 *   with that drive among the only two readable ones, heal removes its
 *   record there, and a namesake created later wins over an older
 *   tombstone (newest state wins);
 * - leftovers of aborts and deletes from before tombstones existed (a
 *   live upload or bucket record on one drive only) are neither shown nor
 *   kept by heal; a bucket record from before state times reads and
 *   changes as before.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <time.h>

#include "meta_internal.h"
#include "meta_test_util.h"

/* ---- drives going away and coming back (meta_test_util.h) -------------- */

/* Close, take drives a and b (-1: none) away, open. */
static void reopen_without(struct mt_env *e, int a, int b)
{
    mt_close(e);
    if (a >= 0)
        mt_drive_away(e, a);
    if (b >= 0)
        mt_drive_away(e, b);
    assert_int_equal(mt_open(e), 0);
}

/* Close, bring drives a and b (-1: none) back, open. */
static void reopen_with(struct mt_env *e, int a, int b)
{
    mt_close(e);
    if (a >= 0)
        mt_drive_back(e, a);
    if (b >= 0)
        mt_drive_back(e, b);
    assert_int_equal(mt_open(e), 0);
}

/* ---- raw records ---------------------------------------------------------- */

enum { RAW_ABSENT, RAW_LIVE, RAW_TOMB, RAW_DONE, RAW_OTHER };

/* The kind of value key k holds on drive d (an open drive). */
static int raw_kind(struct mt_env *e, unsigned d, const char *k, size_t kl)
{
    assert_non_null(e->m->sets[0].drives[d].db);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    char *err = NULL;
    size_t vl = 0;
    char *v = rocksdb_get(e->m->sets[0].drives[d].db, ro, k, kl, &vl, &err);
    rocksdb_readoptions_destroy(ro);
    assert_null(err);
    int kind = !v                            ? RAW_ABSENT
               : vl && (uint8_t)v[0] == 0x01 ? RAW_LIVE
               : vl && (uint8_t)v[0] == 0x02 ? RAW_TOMB
               : vl && (uint8_t)v[0] == 0x03 ? RAW_DONE
                                             : RAW_OTHER;
    free(v);
    return kind;
}

static void raw_put(struct mt_env *e, unsigned d, const char *k, size_t kl, const char *v,
                    size_t vl)
{
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    char *err = NULL;
    rocksdb_put(e->m->sets[0].drives[d].db, wo, k, kl, v, vl, &err);
    rocksdb_writeoptions_destroy(wo);
    assert_null(err);
}

static void raw_del(struct mt_env *e, unsigned d, const char *k, size_t kl)
{
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    char *err = NULL;
    rocksdb_delete(e->m->sets[0].drives[d].db, wo, k, kl, &err);
    rocksdb_writeoptions_destroy(wo);
    assert_null(err);
}

static size_t ukey(char *out, size_t cap, const char *bucket, const char *key, const char *uid)
{
    uint8_t up[UPLOAD_LEN];
    assert_int_equal(strata_meta__upload_id_parse(uid, up), 0);
    return strata_meta__key_upload(out, cap, bucket, key, up);
}

/* Part records of upload uid on drive d. */
static int parts_on(struct mt_env *e, unsigned d, const char *uid)
{
    uint8_t up[UPLOAD_LEN];
    assert_int_equal(strata_meta__upload_id_parse(uid, up), 0);
    char lo[1 + UPLOAD_LEN + 4], hi[1 + UPLOAD_LEN + 4];
    strata_meta__key_part(lo, up, 0);
    strata_meta__key_part(hi, up, UINT32_MAX);
    rocksdb_readoptions_t *ro;
    rocksdb_iterator_t *it = strata_meta__iter_new(e->m, 0, d, &ro, hi, sizeof(hi), true);
    assert_non_null(it);
    int n = 0;
    for (rocksdb_iter_seek(it, lo, sizeof(lo)); rocksdb_iter_valid(it); rocksdb_iter_next(it))
        n++;
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return n;
}

/* ---- multipart helpers ---------------------------------------------------- */

static void mk_upload(struct mt_env *e, const char *bucket, const char *key,
                      char uid[STRATA_UPLOAD_ID_MAX + 1])
{
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = bucket;
    mo.key = key;
    assert_int_equal(strata_mpu_create(e->m, &mo, uid), 0);
}

static int put_part(struct mt_env *e, const char *bucket, const char *key, const char *uid,
                    unsigned no, const void *data, size_t len, char etag[STRATA_ETAG_MAX + 1])
{
    struct strata_part_opts po;
    memset(&po, 0, sizeof(po));
    po.bucket = bucket;
    po.key = key;
    po.upload_id = uid;
    po.part_number = no;
    po.size = len;
    struct strata_put *p;
    int rc = strata_mpu_part_begin(e->m, &po, &p);
    if (rc)
        return rc;
    if ((rc = strata_obj_put_write(p, data, len))) {
        strata_obj_put_abort(p);
        return rc;
    }
    struct strata_obj_info part;
    memset(&part, 0, sizeof(part));
    rc = strata_obj_put_commit(p, &part);
    if (rc == 0 && etag)
        snprintf(etag, STRATA_ETAG_MAX + 1, "%s", part.etag);
    strata_obj_info_fini(&part);
    return rc;
}

static int complete(struct mt_env *e, const char *bucket, const char *key, const char *uid,
                    const struct strata_mpu_part *parts, size_t n, struct strata_obj_info *out)
{
    struct strata_mpu_complete_opts co;
    memset(&co, 0, sizeof(co));
    co.bucket = bucket;
    co.key = key;
    co.upload_id = uid;
    co.parts = parts;
    co.nparts = n;
    return strata_mpu_complete(e->m, &co, out);
}

struct ulist {
    int n;
    char key[8][64];
    char id[8][STRATA_UPLOAD_ID_MAX + 1];
};

static int ulist_cb(const struct strata_mpu_list_entry *le, void *ud)
{
    struct ulist *u = ud;
    if (!le->is_prefix && u->n < 8) {
        snprintf(u->key[u->n], sizeof(u->key[0]), "%s", le->key);
        snprintf(u->id[u->n], sizeof(u->id[0]), "%s", le->info->upload_id);
    }
    u->n++;
    return 0;
}

/* Whether ListMultipartUploads of bucket shows upload uid. */
static bool listed(struct mt_env *e, const char *bucket, const char *uid)
{
    struct ulist u;
    memset(&u, 0, sizeof(u));
    struct strata_mpu_list_opts o = {.bucket = bucket};
    struct strata_mpu_list_result res;
    int rc = strata_mpu_list(e->m, &o, ulist_cb, &u, &res);
    if (rc)
        fail_msg("ListMultipartUploads: %s", strata_errname(rc));
    for (int i = 0; i < u.n && i < 8; i++)
        if (strcmp(u.id[i], uid) == 0)
            return true;
    return false;
}

static int no_part_cb(const struct strata_part_info *p, void *ud)
{
    (void)p;
    (*(int *)ud)++;
    return 0;
}

/* The upload is gone for every operation that names it. */
static void expect_upload_gone(struct mt_env *e, const char *bucket, const char *key,
                               const char *uid)
{
    assert_false(listed(e, bucket, uid));
    struct strata_mpu_info mi;
    int rc = strata_mpu_get(e->m, bucket, key, uid, &mi);
    if (rc != STRATA_ENOTFOUND)
        fail_msg("strata_mpu_get: %s, expected ENOTFOUND", strata_errname(rc));
    int n = 0;
    struct strata_mpu_parts_result pr;
    assert_int_equal(strata_mpu_list_parts(e->m, bucket, key, uid, 0, 0, no_part_cb, &n, &pr),
                     STRATA_ENOTFOUND);
    assert_int_equal(put_part(e, bucket, key, uid, 9, "late", 4, NULL), STRATA_ENOTFOUND);
}

/* ---- aborts and completes a drive missed -------------------------------- */

/* An abort drive 3 missed: with drives 0 and 1 away the upload is still
 * gone (before tombstones, drive 3's record was listed); heal copies the
 * tombstone and drops the part records, the next pass the tombstones. */
static void test_missed_abort(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("missedabort");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    char uid[STRATA_UPLOAD_ID_MAX + 1];
    mk_upload(e, "b", "k", uid);
    assert_int_equal(put_part(e, "b", "k", uid, 1, "part one", 8, NULL), 0);
    assert_true(listed(e, "b", uid));

    reopen_without(e, 3, -1);
    assert_int_equal(strata_mpu_abort(e->m, "b", "k", uid), 0);
    reopen_with(e, 3, -1);
    char k[600];
    size_t kl = ukey(k, sizeof(k), "b", "k", uid);
    assert_int_equal(raw_kind(e, 3, k, kl), RAW_LIVE);
    assert_int_equal(parts_on(e, 3, uid), 1);
    expect_upload_gone(e, "b", "k", uid);

    reopen_without(e, 0, 1);
    expect_upload_gone(e, "b", "k", uid);
    reopen_with(e, 0, 1);

    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_int_equal(raw_kind(e, 3, k, kl), RAW_TOMB);
    assert_int_equal(parts_on(e, 3, uid), 0);
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    for (unsigned d = 0; d < MT_DRIVES; d++) {
        assert_int_equal(raw_kind(e, d, k, kl), RAW_ABSENT);
        assert_int_equal(parts_on(e, d, uid), 0);
    }
    reopen_without(e, 0, 1);
    expect_upload_gone(e, "b", "k", uid);
    reopen_with(e, 0, 1);
    mt_teardown(e);
}

/* An abort that every drive took leaves no tombstone behind. */
static void test_abort_full_commit_no_tomb(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("abortfull");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    char uid[STRATA_UPLOAD_ID_MAX + 1];
    mk_upload(e, "b", "k", uid);
    assert_int_equal(put_part(e, "b", "k", uid, 1, "x", 1, NULL), 0);
    assert_int_equal(strata_mpu_abort(e->m, "b", "k", uid), 0);
    char k[600];
    size_t kl = ukey(k, sizeof(k), "b", "k", uid);
    for (unsigned d = 0; d < MT_DRIVES; d++) {
        assert_int_equal(raw_kind(e, d, k, kl), RAW_ABSENT);
        assert_int_equal(parts_on(e, d, uid), 0);
    }
    expect_upload_gone(e, "b", "k", uid);
    assert_int_equal(strata_mpu_abort(e->m, "b", "k", uid), STRATA_ENOTFOUND);
    mt_teardown(e);
}

/* A complete drive 3 missed: the upload stays gone with drive 3 among the
 * readable drives, and a repeated Complete answers the same version. */
static void test_missed_complete(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("missedcomplete");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "v", STRATA_VERSIONING_ENABLED), 0);
    char uid[STRATA_UPLOAD_ID_MAX + 1], et1[STRATA_ETAG_MAX + 1];
    mk_upload(e, "v", "k", uid);
    assert_int_equal(put_part(e, "v", "k", uid, 1, "hello parts", 11, et1), 0);
    struct strata_mpu_part mp = {1, et1, NULL, 0};

    reopen_without(e, 3, -1);
    struct strata_obj_info first;
    assert_int_equal(complete(e, "v", "k", uid, &mp, 1, &first), 0);
    reopen_with(e, 3, -1);
    char k[600];
    size_t kl = ukey(k, sizeof(k), "v", "k", uid);
    assert_int_equal(raw_kind(e, 3, k, kl), RAW_LIVE);
    assert_int_equal(raw_kind(e, 0, k, kl), RAW_DONE);
    expect_upload_gone(e, "v", "k", uid);

    /* Drive 3 (missed it) and drive 2 (holds the completion) only. */
    reopen_without(e, 0, 1);
    expect_upload_gone(e, "v", "k", uid);
    struct strata_obj_info again;
    assert_int_equal(complete(e, "v", "k", uid, &mp, 1, &again), 0);
    assert_string_equal(again.etag, first.etag);
    assert_string_equal(again.version_id, first.version_id);
    strata_obj_info_fini(&again);
    reopen_with(e, 0, 1);

    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_int_equal(raw_kind(e, 3, k, kl), RAW_DONE);
    assert_int_equal(parts_on(e, 3, uid), 0);
    /* Kept for retries (the window is a day by default). */
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    for (unsigned d = 0; d < MT_DRIVES; d++)
        assert_int_equal(raw_kind(e, d, k, kl), RAW_DONE);
    assert_int_equal(complete(e, "v", "k", uid, &mp, 1, &again), 0);
    assert_string_equal(again.etag, first.etag);
    assert_string_equal(again.version_id, first.version_id);
    strata_obj_info_fini(&again);
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, "v", "k", first.version_id, &got, &gl), 0);
    assert_int_equal(gl, 11);
    assert_memory_equal(got, "hello parts", 11);
    free(got);
    strata_obj_info_fini(&first);
    mt_teardown(e);
}

/* ---- the completed-upload record ---------------------------------------- */

/* Complete, then: the same list again (also with quotes and upper case in
 * the ETags) answers the same ETag, version id and checksum; a different
 * list, an abort, ListParts, a part upload answer NoSuchUpload; the object
 * stays as completed; no version is added. */
static void test_complete_retry(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("cretry");
    assert_non_null(e);
    assert_int_equal(mt_reopen_part_min(e, 1), 0);
    assert_int_equal(mt_bucket(e, "v", STRATA_VERSIONING_ENABLED), 0);
    assert_int_equal(mt_bucket(e, "u", 0), 0);
    for (int vb = 0; vb < 2; vb++) {
        const char *bucket = vb ? "u" : "v";
        struct strata_mpu_opts mo;
        memset(&mo, 0, sizeof(mo));
        mo.bucket = bucket;
        mo.key = "obj";
        mo.cksum_algo = STRATA_CKSUM_CRC32C;
        char uid[STRATA_UPLOAD_ID_MAX + 1], et[3][STRATA_ETAG_MAX + 1];
        assert_int_equal(strata_mpu_create(e->m, &mo, uid), 0);
        assert_int_equal(put_part(e, bucket, "obj", uid, 1, "aaaa", 4, et[0]), 0);
        assert_int_equal(put_part(e, bucket, "obj", uid, 2, "bbbb", 4, et[1]), 0);
        assert_int_equal(put_part(e, bucket, "obj", uid, 3, "cccc", 4, et[2]), 0);
        struct strata_mpu_part mp[2] = {{1, et[0], NULL, 0}, {2, et[1], NULL, 0}};
        struct strata_obj_info first, again;
        assert_int_equal(complete(e, bucket, "obj", uid, mp, 2, &first), 0);
        assert_int_equal(complete(e, bucket, "obj", uid, mp, 2, &again), 0);
        assert_string_equal(again.etag, first.etag);
        assert_string_equal(again.version_id, first.version_id);
        assert_int_equal(again.cksum_algo, STRATA_CKSUM_CRC32C);
        assert_int_equal(again.cksum_len, first.cksum_len);
        assert_memory_equal(again.cksum, first.cksum, first.cksum_len);
        assert_int_equal(again.cksum_type, first.cksum_type);
        assert_int_equal(again.size, 8);
        strata_obj_info_fini(&again);
        /* The ETags as a client may quote them. */
        char q0[STRATA_ETAG_MAX + 3], q1[STRATA_ETAG_MAX + 1];
        snprintf(q0, sizeof(q0), "\"%s\"", et[0]);
        snprintf(q1, sizeof(q1), "%s", et[1]);
        for (char *c = q1; *c; c++)
            *c = (char)(*c >= 'a' && *c <= 'f' ? *c - 32 : *c);
        struct strata_mpu_part mq[2] = {{1, q0, NULL, 0}, {2, q1, NULL, 0}};
        assert_int_equal(complete(e, bucket, "obj", uid, mq, 2, &again), 0);
        assert_string_equal(again.version_id, first.version_id);
        strata_obj_info_fini(&again);
        /* Other lists: another part, one part fewer, one more. */
        struct strata_mpu_part m3[3] = {
            {1, et[0], NULL, 0}, {2, et[1], NULL, 0}, {3, et[2], NULL, 0}};
        struct strata_mpu_part other[2] = {{1, et[0], NULL, 0}, {3, et[2], NULL, 0}};
        assert_int_equal(complete(e, bucket, "obj", uid, other, 2, &again), STRATA_ENOTFOUND);
        strata_obj_info_fini(&again);
        assert_int_equal(complete(e, bucket, "obj", uid, m3, 1, &again), STRATA_ENOTFOUND);
        strata_obj_info_fini(&again);
        assert_int_equal(complete(e, bucket, "obj", uid, m3, 3, &again), STRATA_ENOTFOUND);
        strata_obj_info_fini(&again);
        assert_int_equal(strata_mpu_abort(e->m, bucket, "obj", uid), STRATA_ENOTFOUND);
        expect_upload_gone(e, bucket, "obj", uid);
        /* Still answered after the abort and the late part. */
        assert_int_equal(complete(e, bucket, "obj", uid, mp, 2, &again), 0);
        assert_string_equal(again.etag, first.etag);
        strata_obj_info_fini(&again);
        uint8_t *got = NULL;
        size_t gl = 0;
        assert_int_equal(mt_get(e, bucket, "obj", NULL, &got, &gl), 0);
        assert_int_equal(gl, 8);
        assert_memory_equal(got, "aaaabbbb", 8);
        free(got);
        struct strata_obj_info h;
        assert_int_equal(strata_obj_head(e->m, bucket, "obj", NULL, &h), 0);
        assert_string_equal(h.version_id, first.version_id);
        assert_string_equal(h.etag, first.etag);
        strata_obj_info_fini(&h);
        strata_obj_info_fini(&first);
    }
    mt_teardown(e);
}

/* Past the retry window the completed-upload record no longer answers,
 * and heal drops it once every drive holds it. */
static void test_complete_retry_window(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("cwindow");
    assert_non_null(e);
    mt_close(e);
    struct strata_meta_opts o;
    memset(&o, 0, sizeof(o));
    o.mpu_retry_s = 1;
    assert_int_equal(mt_open_with(e, &o), 0);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    char uid[STRATA_UPLOAD_ID_MAX + 1], et[STRATA_ETAG_MAX + 1];
    mk_upload(e, "b", "k", uid);
    assert_int_equal(put_part(e, "b", "k", uid, 1, "abc", 3, et), 0);
    struct strata_mpu_part mp = {1, et, NULL, 0};
    struct strata_obj_info first, again;
    assert_int_equal(complete(e, "b", "k", uid, &mp, 1, &first), 0);
    char k[600];
    size_t kl = ukey(k, sizeof(k), "b", "k", uid);
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    for (unsigned d = 0; d < MT_DRIVES; d++)
        assert_int_equal(raw_kind(e, d, k, kl), RAW_DONE);
    assert_int_equal(complete(e, "b", "k", uid, &mp, 1, &again), 0);
    assert_string_equal(again.etag, first.etag);
    strata_obj_info_fini(&again);
    struct timespec ts = {1, 200000000};
    nanosleep(&ts, NULL);
    assert_int_equal(complete(e, "b", "k", uid, &mp, 1, &again), STRATA_ENOTFOUND);
    strata_obj_info_fini(&again);
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    for (unsigned d = 0; d < MT_DRIVES; d++)
        assert_int_equal(raw_kind(e, d, k, kl), RAW_ABSENT);
    assert_int_equal(complete(e, "b", "k", uid, &mp, 1, &again), STRATA_ENOTFOUND);
    strata_obj_info_fini(&again);
    /* The object is untouched by all this. */
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, "b", "k", NULL, &got, &gl), 0);
    assert_int_equal(gl, 3);
    free(got);
    strata_obj_info_fini(&first);
    mt_teardown(e);
}

/* A completed-upload record a drive missed is not dropped after the
 * window while that drive still holds the live upload record. */
static void test_window_waits_for_every_drive(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("cwindowall");
    assert_non_null(e);
    mt_close(e);
    struct strata_meta_opts o;
    memset(&o, 0, sizeof(o));
    o.mpu_retry_s = 1;
    assert_int_equal(mt_open_with(e, &o), 0);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    char uid[STRATA_UPLOAD_ID_MAX + 1], et[STRATA_ETAG_MAX + 1];
    mk_upload(e, "b", "k", uid);
    assert_int_equal(put_part(e, "b", "k", uid, 1, "abc", 3, et), 0);
    struct strata_mpu_part mp = {1, et, NULL, 0};
    mt_close(e);
    mt_drive_away(e, 3);
    assert_int_equal(mt_open_with(e, &o), 0);
    assert_int_equal(complete(e, "b", "k", uid, &mp, 1, NULL), 0);
    struct timespec ts = {1, 200000000};
    nanosleep(&ts, NULL);
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0); /* drive 3 away: kept */
    char k[600];
    size_t kl = ukey(k, sizeof(k), "b", "k", uid);
    for (unsigned d = 0; d < 3; d++)
        assert_int_equal(raw_kind(e, d, k, kl), RAW_DONE);
    mt_close(e);
    mt_drive_back(e, 3);
    assert_int_equal(mt_open_with(e, &o), 0);
    assert_int_equal(raw_kind(e, 3, k, kl), RAW_LIVE);
    expect_upload_gone(e, "b", "k", uid);
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0); /* copied to drive 3 */
    assert_int_equal(raw_kind(e, 3, k, kl), RAW_DONE);
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0); /* all hold it: dropped */
    for (unsigned d = 0; d < MT_DRIVES; d++)
        assert_int_equal(raw_kind(e, d, k, kl), RAW_ABSENT);
    expect_upload_gone(e, "b", "k", uid);
    mt_teardown(e);
}

/* ---- leftovers from before tombstones ------------------------------------ */

/* A live upload record (and a part record) on one drive only, as an abort
 * that drive missed left it before tombstones: not listed with that drive
 * merged, and heal removes both (three drives answer "absent"). */
static void test_upload_leftover_removed(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("upleft");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    char uid[STRATA_UPLOAD_ID_MAX + 1];
    mk_upload(e, "b", "k", uid);
    assert_int_equal(put_part(e, "b", "k", uid, 1, "p", 1, NULL), 0);
    char k[600];
    size_t kl = ukey(k, sizeof(k), "b", "k", uid);
    uint8_t up[UPLOAD_LEN];
    assert_int_equal(strata_meta__upload_id_parse(uid, up), 0);
    char pk[1 + UPLOAD_LEN + 4];
    strata_meta__key_part(pk, up, 1);
    for (unsigned d = 0; d < 3; d++) { /* the old abort: plain deletes */
        raw_del(e, d, k, kl);
        raw_del(e, d, pk, sizeof(pk));
    }
    expect_upload_gone(e, "b", "k", uid);
    /* Drives 2 (absent) and 3 (live) only: not listed; no quorum either
     * way for the rest (503 rather than a wrong answer). */
    reopen_without(e, 0, 1);
    assert_false(listed(e, "b", uid));
    struct strata_mpu_info mi;
    assert_int_not_equal(strata_mpu_get(e->m, "b", "k", uid, &mi), 0);
    reopen_with(e, 0, 1);
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    for (unsigned d = 0; d < MT_DRIVES; d++) {
        assert_int_equal(raw_kind(e, d, k, kl), RAW_ABSENT);
        assert_int_equal(parts_on(e, d, uid), 0);
    }
    mt_teardown(e);
}

/* ---- buckets --------------------------------------------------------------- */

struct blist {
    int n;
    bool gone_seen, keep_seen;
};

static int blist_cb(const struct strata_bucket_info *b, void *ud)
{
    struct blist *l = ud;
    l->n++;
    l->gone_seen |= strcmp(b->name, "gone") == 0;
    l->keep_seen |= strcmp(b->name, "keep") == 0;
    return 0;
}

static void expect_bucket(struct mt_env *e, const char *name, bool exists)
{
    struct strata_bucket_info b;
    int rc = strata_meta_bucket_get(e->m, name, &b);
    if (rc != (exists ? 0 : STRATA_ENOTFOUND))
        fail_msg("bucket %s: %s, expected %s", name, strata_errname(rc),
                 exists ? "found" : "ENOTFOUND");
    struct blist l = {0};
    rc = strata_meta_bucket_list(e->m, blist_cb, &l);
    if (rc)
        fail_msg("ListBuckets: %s", strata_errname(rc));
    assert_true(l.keep_seen);
    if (strcmp(name, "gone") == 0)
        assert_int_equal(l.gone_seen, exists);
}

/* DeleteBucket drive 3 missed: not found and not listed with drives 0 and
 * 1 away (before tombstones: 503 for the bucket and for ListBuckets);
 * heal removes drive 3's record; a later namesake wins over an older
 * tombstone a drive kept. */
static void test_missed_bucket_delete(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("missedbdel");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "keep", 0), 0);
    assert_int_equal(mt_bucket(e, "gone", 0), 0);
    reopen_without(e, 3, -1);
    assert_int_equal(strata_meta_bucket_delete(e->m, "gone"), 0);
    reopen_with(e, 3, -1);
    char k[600];
    size_t kl = strata_meta__key_bucket(k, sizeof(k), "gone");
    assert_int_equal(raw_kind(e, 3, k, kl), RAW_LIVE);
    expect_bucket(e, "gone", false);
    reopen_without(e, 0, 1);
    expect_bucket(e, "gone", false);
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = "gone";
    mo.key = "k";
    char uid[STRATA_UPLOAD_ID_MAX + 1];
    assert_int_equal(strata_mpu_create(e->m, &mo, uid), STRATA_ENOTFOUND);
    reopen_with(e, 0, 1);

    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_int_equal(raw_kind(e, 3, k, kl), RAW_TOMB);
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    for (unsigned d = 0; d < MT_DRIVES; d++)
        assert_int_equal(raw_kind(e, d, k, kl), RAW_ABSENT);
    reopen_without(e, 0, 1);
    expect_bucket(e, "gone", false);
    reopen_with(e, 0, 1);

    /* Deleted with drive 3 away (tombstones on 0-2), created again with
     * drive 0 away (0 keeps the tombstone, 3 had the old record): with 0
     * and 3 the only readable drives the new bucket is there. */
    assert_int_equal(mt_bucket(e, "gone", 0), 0);
    reopen_without(e, 3, -1);
    assert_int_equal(strata_meta_bucket_delete(e->m, "gone"), 0);
    mt_close(e);
    mt_drive_back(e, 3);
    mt_drive_away(e, 0);
    assert_int_equal(mt_open(e), 0);
    assert_int_equal(mt_bucket(e, "gone", STRATA_VERSIONING_ENABLED), 0);
    mt_close(e);
    mt_drive_back(e, 0);
    mt_drive_away(e, 1);
    mt_drive_away(e, 2);
    assert_int_equal(mt_open(e), 0);
    assert_int_equal(raw_kind(e, 0, k, kl), RAW_TOMB);
    assert_int_equal(raw_kind(e, 3, k, kl), RAW_LIVE);
    expect_bucket(e, "gone", true);
    struct strata_bucket_info bi;
    assert_int_equal(strata_meta_bucket_get(e->m, "gone", &bi), 0);
    assert_int_equal(bi.versioning, STRATA_VERSIONING_ENABLED);
    reopen_with(e, 1, 2);
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    for (unsigned d = 0; d < MT_DRIVES; d++)
        assert_int_equal(raw_kind(e, d, k, kl), RAW_LIVE);
    expect_bucket(e, "gone", true);
    mt_teardown(e);
}

/* A bucket record on one drive only, as a DeleteBucket that drive missed
 * left it before tombstones: heal removes it. */
static void test_bucket_leftover_removed(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("bleft");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "keep", 0), 0);
    assert_int_equal(mt_bucket(e, "gone", 0), 0);
    char k[600];
    size_t kl = strata_meta__key_bucket(k, sizeof(k), "gone");
    for (unsigned d = 0; d < 3; d++)
        raw_del(e, d, k, kl);
    expect_bucket(e, "gone", false);
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    for (unsigned d = 0; d < MT_DRIVES; d++)
        assert_int_equal(raw_kind(e, d, k, kl), RAW_ABSENT);
    expect_bucket(e, "gone", false);
    mt_teardown(e);
}

/* A bucket record written before state times (no field 11) reads as
 * before, its state time being its creation time: a drive that missed a
 * change to it is outvoted, and it is deleted with a newer tombstone. */
static void test_old_bucket_record(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("boldrec");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "keep", 0), 0);
    struct strata_bucket_info b;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "gone");
    snprintf(b.owner, sizeof(b.owner), "tester");
    b.created_ms = 1700000000000LL;
    b.incarnation = 7;
    char *v;
    size_t vl;
    assert_int_equal(strata_meta__bucket_encode(&b, &v, &vl), 0); /* the old layout */
    char k[600];
    size_t kl = strata_meta__key_bucket(k, sizeof(k), "gone");
    for (unsigned d = 0; d < MT_DRIVES; d++)
        raw_put(e, d, k, kl, v, vl);
    free(v);
    struct strata_bucket_info got;
    int64_t st = 0;
    char *rv = NULL;
    size_t rvl = 0;
    assert_int_equal(strata_meta__drive_get(e->m, 0, 0, k, kl, &rv, &rvl), 0);
    assert_int_equal(strata_meta__bucket_decode_at(rv, rvl, &got, &st), 0);
    free(rv);
    assert_int_equal(st, 1700000000000LL * 1000000);
    expect_bucket(e, "gone", true);
    /* A change drive 3 misses: the newer record wins with 0 and 1 away. */
    reopen_without(e, 3, -1);
    assert_int_equal(strata_meta_bucket_set_versioning(e->m, "gone", STRATA_VERSIONING_ENABLED), 0);
    reopen_with(e, 3, -1);
    reopen_without(e, 0, 1);
    assert_int_equal(strata_meta_bucket_get(e->m, "gone", &got), 0);
    assert_int_equal(got.versioning, STRATA_VERSIONING_ENABLED);
    assert_int_equal(got.incarnation, 7);
    reopen_with(e, 0, 1);
    assert_int_equal(strata_meta_bucket_delete(e->m, "gone"), 0);
    expect_bucket(e, "gone", false);
    for (unsigned d = 0; d < MT_DRIVES; d++) /* every drive took it: no tombstone left */
        assert_int_equal(raw_kind(e, d, k, kl), RAW_ABSENT);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missed_abort),
        cmocka_unit_test(test_abort_full_commit_no_tomb),
        cmocka_unit_test(test_missed_complete),
        cmocka_unit_test(test_complete_retry),
        cmocka_unit_test(test_complete_retry_window),
        cmocka_unit_test(test_window_waits_for_every_drive),
        cmocka_unit_test(test_upload_leftover_removed),
        cmocka_unit_test(test_missed_bucket_delete),
        cmocka_unit_test(test_bucket_leftover_removed),
        cmocka_unit_test(test_old_bucket_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
