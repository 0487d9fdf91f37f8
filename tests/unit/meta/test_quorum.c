/*
 * test_quorum.c - read quorum, absence and listings when drives missed
 * writes or deletes, on a 2+2 set (Wq = 3, Rq = 2) of real drive
 * directories with real RocksDBs.
 *
 * - A replaced drive next to a drive that missed a PUT must not make the
 *   object 404 (the exact reproduction: drive 2 a plain file during the
 *   PUT, then back, drive 1 an empty directory; start, stop, start and two
 *   more restarts), and heal must refill the replaced drive.
 * - A drive that missed a DELETE must not bring the object back in HEAD,
 *   GET or listings, not even when it is one of only two readable drives.
 * - A drive that missed an overwrite must not add a stale version.
 * - A version on fewer drives than could have committed it (the leftover
 *   of a failed write) is neither read nor listed.
 * - Heal copies tombstones, then drops them once every drive holds one;
 *   tombstones do not keep a bucket from being deleted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <time.h>

#include "meta_internal.h"
#include "meta_test_util.h"

/* ---- drives going away and coming back ---------------------------------- */

/* The drive's path becomes a plain file: the drive is unavailable. */
static void reopen(struct mt_env *e)
{
    mt_close(e);
    assert_int_equal(mt_open(e), 0);
}

/* ---- listing helpers ------------------------------------------------------ */

struct seen {
    int n;
    char key[16][64];
    char etag[16][STRATA_ETAG_MAX + 1];
    char vid[16][STRATA_VERSION_ID_MAX + 1];
    bool latest[16];
};

static int seen_cb(const struct strata_list_entry *le, void *ud)
{
    struct seen *s = ud;
    if (s->n < 16) {
        snprintf(s->key[s->n], sizeof(s->key[0]), "%s", le->key);
        if (le->info) {
            snprintf(s->etag[s->n], sizeof(s->etag[0]), "%s", le->info->etag);
            snprintf(s->vid[s->n], sizeof(s->vid[0]), "%s", le->info->version_id);
            s->latest[s->n] = le->info->is_latest;
        }
    }
    s->n++;
    return 0;
}

static void list(struct mt_env *e, const char *bucket, bool versions, const char *delim,
                 struct seen *s)
{
    memset(s, 0, sizeof(*s));
    struct strata_list_opts o = {.bucket = bucket, .max_keys = 1000, .versions = versions,
                                 .delimiter = delim};
    struct strata_list_result r;
    assert_int_equal(strata_obj_list(e->m, &o, seen_cb, s, &r), 0);
    assert_false(r.truncated);
}

/* HEAD, GET and both listings show exactly these bytes as bucket/key. */
static void expect_object(struct mt_env *e, const char *bucket, const char *key,
                          const uint8_t *want, size_t len)
{
    struct strata_obj_info info;
    int rc = strata_obj_head(e->m, bucket, key, NULL, &info);
    if (rc)
        fail_msg("HEAD %s/%s: %s", bucket, key, strata_errname(rc));
    assert_int_equal(info.size, len);
    char etag[STRATA_ETAG_MAX + 1];
    snprintf(etag, sizeof(etag), "%s", info.etag);
    strata_obj_info_fini(&info);
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, bucket, key, NULL, &got, &gl), 0);
    assert_int_equal(gl, len);
    assert_memory_equal(got, want, len);
    free(got);
    for (int versions = 0; versions < 2; versions++) {
        struct seen s;
        list(e, bucket, versions, NULL, &s);
        int hits = 0;
        for (int i = 0; i < s.n && i < 16; i++) {
            if (strcmp(s.key[i], key) != 0 || !s.latest[i])
                continue;
            hits++;
            assert_string_equal(s.etag[i], etag);
        }
        if (hits != 1)
            fail_msg("%s/%s listed as latest %d times (versions=%d)", bucket, key, hits,
                     versions);
    }
}

/* HEAD and GET answer 404 and no listing shows the key at all. */
static void expect_gone(struct mt_env *e, const char *bucket, const char *key)
{
    struct strata_obj_info info;
    int rc = strata_obj_head(e->m, bucket, key, NULL, &info);
    if (rc != STRATA_ENOTFOUND)
        fail_msg("HEAD %s/%s: %s, expected ENOTFOUND", bucket, key, strata_errname(rc));
    strata_obj_info_fini(&info);
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, bucket, key, NULL, &got, &gl), STRATA_ENOTFOUND);
    for (int versions = 0; versions < 2; versions++) {
        struct seen s;
        list(e, bucket, versions, NULL, &s);
        for (int i = 0; i < s.n && i < 16; i++)
            if (strcmp(s.key[i], key) == 0)
                fail_msg("%s/%s still listed (versions=%d)", bucket, key, versions);
    }
    /* With a delimiter its prefix must not appear either. */
    struct seen s;
    list(e, bucket, false, "/", &s);
    for (int i = 0; i < s.n && i < 16; i++)
        if (strncmp(s.key[i], key, strlen(s.key[i])) == 0)
            fail_msg("prefix %s of deleted %s/%s still listed", s.key[i], bucket, key);
}

/* 'O' keys of bucket/key on drive d (tombstones included). */
static int okeys_on(struct mt_env *e, unsigned d, const char *bucket, const char *key,
                    int *tombs)
{
    char pfx[600], hi[600];
    size_t pl = strata_meta__key_obj(pfx, sizeof(pfx), bucket, key, NULL);
    memcpy(hi, pfx, pl);
    hi[pl - 1] = 1;
    rocksdb_readoptions_t *ro;
    rocksdb_iterator_t *it = strata_meta__iter_new(e->m, 0, d, &ro, hi, pl, true);
    assert_non_null(it);
    int n = 0;
    *tombs = 0;
    for (rocksdb_iter_seek(it, pfx, pl); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t vl;
        const char *v = rocksdb_iter_value(it, &vl);
        n++;
        *tombs += strata_meta__is_tomb(v, vl);
    }
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return n;
}

/* ---- issue A, exactly as reproduced --------------------------------------- */

static void test_replaced_drive_and_missed_put(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("repro");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    mt_close(e);

    /* 1. Drive 2 unavailable (a plain file); x (inline) and y (erasure
     *    coded) are written to drives 1, 3 and 4. */
    mt_drive_away(e, 1);
    assert_int_equal(mt_open(e), 0);
    assert_false(strata_set_drive_online(e->set, 1));
    uint8_t x[5000], *y = malloc(300 * 1024);
    mt_fill(x, sizeof(x), 1);
    mt_fill(y, 300 * 1024, 2);
    assert_int_equal(mt_put(e, "b", "x", x, sizeof(x), NULL), 0);
    assert_int_equal(mt_put(e, "b", "dir/y", y, 300 * 1024, NULL), 0);
    mt_close(e);

    /* 2. Drive 2 comes back without x; drive 1 is replaced by an empty one. */
    mt_drive_back(e, 1);
    mt_rm_rf(e->drive[0]);
    assert_int_equal(mkdir(e->drive[0], 0755), 0);

    /* 3. Start, stop, start again, and two more restarts. */
    for (int start = 0; start < 4; start++) {
        assert_int_equal(mt_open(e), 0);
        assert_true(strata_set_drive_fresh(e->set, 0)); /* until healed */
        assert_false(strata_set_drive_fresh(e->set, 1));
        expect_object(e, "b", "x", x, sizeof(x));
        expect_object(e, "b", "dir/y", y, 300 * 1024);
        struct seen s;
        list(e, "b", false, "/", &s);
        assert_int_equal(s.n, 2);
        assert_string_equal(s.key[0], "dir/");
        assert_string_equal(s.key[1], "x");
        mt_close(e);
    }

    /* Heal refills drives 1 and 2, and only then drive 1 stops being fresh. */
    assert_int_equal(mt_open(e), 0);
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_true(st.records_healed >= 4); /* x and y on drives 1 and 2 */
    assert_false(strata_set_drive_fresh(e->set, 0));
    reopen(e);
    assert_false(strata_set_drive_fresh(e->set, 0));
    expect_object(e, "b", "x", x, sizeof(x));
    mt_close(e);

    /* Proof that drives 1 and 2 now hold both: the others go away. */
    mt_drive_away(e, 2);
    mt_drive_away(e, 3);
    assert_int_equal(mt_open(e), 0);
    expect_object(e, "b", "x", x, sizeof(x));
    expect_object(e, "b", "dir/y", y, 300 * 1024);
    mt_close(e);
    mt_drive_back(e, 2);
    mt_drive_back(e, 3);
    assert_int_equal(mt_open(e), 0);
    free(y);
    mt_teardown(e);
}

/* A fresh drive stays fresh, across restarts, until a heal pass could
 * decide and copy everything: with too few voters heal must not clear it. */
static void test_fresh_survives_failed_heal(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("freshheal");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    assert_int_equal(mt_put(e, "b", "k", "v", 1, NULL), 0);
    mt_close(e);
    mt_rm_rf(e->drive[3]);
    assert_int_equal(mkdir(e->drive[3], 0755), 0);
    assert_int_equal(mt_open(e), 0);
    assert_true(strata_set_drive_fresh(e->set, 3));
    mt_close(e);
    /* Drives 1 and 2 away: drive 3 is the only voter, below Rq. */
    mt_drive_away(e, 0);
    mt_drive_away(e, 1);
    assert_int_equal(mt_open(e), 0);
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_true(strata_set_drive_fresh(e->set, 3));
    mt_close(e);
    mt_drive_back(e, 0);
    mt_drive_back(e, 1);
    assert_int_equal(mt_open(e), 0);
    assert_true(strata_set_drive_fresh(e->set, 3));
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_false(strata_set_drive_fresh(e->set, 3));
    reopen(e);
    assert_false(strata_set_drive_fresh(e->set, 3));
    expect_object(e, "b", "k", (const uint8_t *)"v", 1);
    mt_teardown(e);
}

/* ---- a drive that missed a DELETE ----------------------------------------- */

static void test_missed_delete_unversioned(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("misseddel");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    assert_int_equal(mt_put(e, "b", "a/x", "hello", 5, NULL), 0);
    assert_int_equal(mt_put(e, "b", "keep", "k", 1, NULL), 0);
    mt_close(e);

    mt_drive_away(e, 0); /* drive 1 misses the delete */
    assert_int_equal(mt_open(e), 0);
    assert_int_equal(strata_obj_delete(e->m, "b", "a/x", NULL, NULL), 0);
    mt_close(e);
    mt_drive_back(e, 0);

    for (int start = 0; start < 2; start++) {
        assert_int_equal(mt_open(e), 0);
        expect_gone(e, "b", "a/x");
        expect_object(e, "b", "keep", (const uint8_t *)"k", 1);
        mt_close(e);
    }

    /* Only the drive that missed it and one that saw it are readable. */
    mt_drive_away(e, 1);
    mt_drive_away(e, 2);
    assert_int_equal(mt_open(e), 0);
    expect_gone(e, "b", "a/x");
    mt_close(e);
    mt_drive_back(e, 1);
    mt_drive_back(e, 2);

    /* Heal carries the tombstone to drive 1, then drops it everywhere. */
    assert_int_equal(mt_open(e), 0);
    int tombs;
    assert_int_equal(okeys_on(e, 0, "b", "a/x", &tombs), 1);
    assert_int_equal(tombs, 0);
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    for (unsigned d = 0; d < MT_DRIVES; d++) {
        assert_int_equal(okeys_on(e, d, "b", "a/x", &tombs), 1);
        assert_int_equal(tombs, 1);
    }
    expect_gone(e, "b", "a/x");
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    for (unsigned d = 0; d < MT_DRIVES; d++)
        assert_int_equal(okeys_on(e, d, "b", "a/x", &tombs), 0);
    expect_gone(e, "b", "a/x");

    /* Tombstones do not keep the bucket in use. */
    assert_int_equal(strata_obj_delete(e->m, "b", "keep", NULL, NULL), 0);
    assert_int_equal(strata_meta_bucket_delete(e->m, "b"), 0);
    mt_teardown(e);
}

static void test_missed_delete_of_version(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("missedver");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "v", STRATA_VERSIONING_ENABLED), 0);
    struct strata_obj_info o1, o2;
    assert_int_equal(mt_put(e, "v", "x", "one", 3, &o1), 0);
    assert_int_equal(mt_put(e, "v", "x", "two!", 4, &o2), 0);
    mt_close(e);

    mt_drive_away(e, 0);
    assert_int_equal(mt_open(e), 0);
    struct strata_del_result dr;
    assert_int_equal(strata_obj_delete(e->m, "v", "x", o2.version_id, &dr), 0);
    mt_close(e);
    mt_drive_back(e, 0);

    assert_int_equal(mt_open(e), 0);
    expect_object(e, "v", "x", (const uint8_t *)"one", 3);
    uint8_t *got = NULL;
    size_t gl;
    assert_int_equal(mt_get(e, "v", "x", o2.version_id, &got, &gl), STRATA_ENOTFOUND);
    struct seen s;
    list(e, "v", true, NULL, &s);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.vid[0], o1.version_id);
    assert_true(s.latest[0]);
    mt_close(e);

    /* Two readable drives, one of them the one that missed the delete. */
    mt_drive_away(e, 1);
    mt_drive_away(e, 2);
    assert_int_equal(mt_open(e), 0);
    expect_object(e, "v", "x", (const uint8_t *)"one", 3);
    assert_int_equal(mt_get(e, "v", "x", o2.version_id, &got, &gl), STRATA_ENOTFOUND);
    mt_close(e);
    mt_drive_back(e, 1);
    mt_drive_back(e, 2);
    assert_int_equal(mt_open(e), 0);
    strata_obj_info_fini(&o1);
    strata_obj_info_fini(&o2);
    mt_teardown(e);
}

/* ---- a drive that missed an overwrite -------------------------------------- */

static void test_missed_overwrite(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("missedput");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    assert_int_equal(mt_put(e, "b", "x", "old", 3, NULL), 0);
    mt_close(e);
    mt_drive_away(e, 0);
    assert_int_equal(mt_open(e), 0);
    assert_int_equal(mt_put(e, "b", "x", "newer", 5, NULL), 0);
    mt_close(e);
    mt_drive_back(e, 0);
    assert_int_equal(mt_open(e), 0);
    expect_object(e, "b", "x", (const uint8_t *)"newer", 5);
    struct seen s;
    list(e, "b", true, NULL, &s); /* the replaced null version is gone */
    assert_int_equal(s.n, 1);
    mt_close(e);
    /* The drive that missed it plus one that saw it: HEAD names the newer
     * version; its inline shards are on one drive only, so GET answers
     * "unavailable" rather than the old bytes. */
    mt_drive_away(e, 1);
    mt_drive_away(e, 2);
    assert_int_equal(mt_open(e), 0);
    struct strata_obj_info info;
    assert_int_equal(strata_obj_head(e->m, "b", "x", NULL, &info), 0);
    assert_int_equal(info.size, 5);
    strata_obj_info_fini(&info);
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, "b", "x", NULL, &got, &gl), STRATA_EQUORUM);
    assert_null(got);
    mt_close(e);
    mt_drive_back(e, 1);
    mt_drive_back(e, 2);
    assert_int_equal(mt_open(e), 0);
    mt_teardown(e);
}

/* With every drive committing, no tombstone is left behind: deletes and
 * overwrites cost no space once they reached all drives. */
static void test_tombstones_dropped_on_full_commit(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("tombfull");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    assert_int_equal(mt_bucket(e, "v", STRATA_VERSIONING_ENABLED), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(mt_put(e, "b", "x", "abc", 3, NULL), 0);
    assert_int_equal(mt_put(e, "b", "y", "abc", 3, NULL), 0);
    assert_int_equal(strata_obj_delete(e->m, "b", "y", NULL, NULL), 0);
    struct strata_obj_info o;
    assert_int_equal(mt_put(e, "v", "z", "abc", 3, &o), 0);
    assert_int_equal(strata_obj_delete(e->m, "v", "z", o.version_id, NULL), 0);
    strata_obj_info_fini(&o);
    /* The drops ride with each drive's next group commit: this commit,
     * queued after them on every drive of the one set, has them written. */
    assert_int_equal(mt_put(e, "b", "barrier", "abc", 3, NULL), 0);
    int tombs;
    for (unsigned d = 0; d < MT_DRIVES; d++) {
        assert_int_equal(okeys_on(e, d, "b", "x", &tombs), 1);
        assert_int_equal(tombs, 0);
        assert_int_equal(okeys_on(e, d, "b", "y", &tombs), 0);
        assert_int_equal(okeys_on(e, d, "v", "z", &tombs), 0);
    }
    expect_object(e, "b", "x", (const uint8_t *)"abc", 3);
    expect_gone(e, "b", "y");
    expect_gone(e, "v", "z");
    mt_teardown(e);
}

/* ---- versions below quorum -------------------------------------------------- */

/* Put a version record of bucket/key straight into drive d's store, as a
 * write that crashed after reaching one drive would leave it. */
/* sk_io: the sort key to use, or all zero to make one (returned there). */
static void plant_rec(struct mt_env *e, unsigned d, const char *bucket, const char *key,
                      const char *etag, int64_t mtime_ns, uint32_t flags,
                      uint8_t sk_io[SORTKEY_LEN])
{
    struct meta_rec r;
    memset(&r, 0, sizeof(r));
    r.flags = flags;
    snprintf(r.etag, sizeof(r.etag), "%s", etag);
    r.mtime_ns = mtime_ns;
    if (!(flags & REC_F_DELETE_MARKER)) {
        r.size = 123;
        r.has_data_id = true;
        strata_data_id_new(r.data_id);
    }
    char *v;
    size_t vl;
    assert_int_equal(strata_meta__rec_encode(&r, &v, &vl), 0);
    static const uint8_t zero[SORTKEY_LEN];
    uint8_t sk[SORTKEY_LEN];
    if (sk_io && memcmp(sk_io, zero, SORTKEY_LEN) != 0)
        memcpy(sk, sk_io, SORTKEY_LEN);
    else
        strata_meta__sortkey_new(mtime_ns, sk);
    if (sk_io)
        memcpy(sk_io, sk, SORTKEY_LEN);
    char k[600];
    size_t kl = strata_meta__key_obj(k, sizeof(k), bucket, key, sk);
    char *err = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_put(e->m->sets[0].drives[d].db, wo, k, kl, v, vl, &err);
    rocksdb_writeoptions_destroy(wo);
    assert_null(err);
    free(v);
}

static void plant(struct mt_env *e, unsigned d, const char *bucket, const char *key,
                  const char *etag, int64_t mtime_ns)
{
    plant_rec(e, d, bucket, key, etag, mtime_ns, REC_F_NULL, NULL);
}

static void test_below_quorum_not_shown(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("belowq");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    assert_int_equal(mt_put(e, "b", "real", "data", 4, NULL), 0);
    /* A leftover of a newer failed write of "real", and of a new key. */
    int64_t later = (int64_t)4e18;
    plant(e, 0, "b", "real", "0123456789abcdef0123456789abcdef", later);
    plant(e, 0, "b", "ghost", "0123456789abcdef0123456789abcdef", later);
    plant(e, 1, "b", "pfx/ghost2", "0123456789abcdef0123456789abcdef", later);
    expect_object(e, "b", "real", (const uint8_t *)"data", 4);
    expect_gone(e, "b", "ghost");
    expect_gone(e, "b", "pfx/ghost2");
    struct seen s;
    list(e, "b", false, NULL, &s);
    assert_int_equal(s.n, 1);
    list(e, "b", true, NULL, &s);
    assert_int_equal(s.n, 1);
    /* Heal removes them (three voters answer "absent", a write quorum). */
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    expect_gone(e, "b", "ghost");
    expect_object(e, "b", "real", (const uint8_t *)"data", 4);
    mt_teardown(e);
}

/* ---- minority records: removed, rolled forward, or kept ---------------------- */

/* Every key of kind ('O', 'T') of bucket/key on drive d: counted, or
 * removed when rm (as if the write that made them never reached it). */
static int kind_keys(struct mt_env *e, unsigned d, char kind, const char *bucket,
                     const char *key, bool rm)
{
    char pfx[600], hi[600];
    size_t pl = strata_meta__key_obj(pfx, sizeof(pfx), bucket, key, NULL);
    pfx[0] = kind;
    memcpy(hi, pfx, pl);
    hi[pl - 1] = 1;
    rocksdb_readoptions_t *ro;
    rocksdb_iterator_t *it = strata_meta__iter_new(e->m, 0, d, &ro, hi, pl, true);
    assert_non_null(it);
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    int n = 0;
    for (rocksdb_iter_seek(it, pfx, pl); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl;
        const char *k = rocksdb_iter_key(it, &kl);
        char *err = NULL;
        n++;
        if (rm)
            rocksdb_delete(e->m->sets[0].drives[d].db, wo, k, kl, &err);
        assert_null(err);
    }
    rocksdb_writeoptions_destroy(wo);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return n;
}

/* Live (non-tombstone) 'O' keys of bucket/key over every drive. */
static int live_copies(struct mt_env *e, const char *bucket, const char *key)
{
    int n = 0, tombs;
    for (unsigned d = 0; d < MT_DRIVES; d++)
        n += okeys_on(e, d, bucket, key, &tombs) - tombs;
    return n;
}

/* A drive offline during DeleteObject (unversioned) and DeleteObjectVersion
 * keeps the deleted versions and their shards; one heal pass leaves no
 * live copy, nothing listed, and only the surviving version's shards. */
static void test_missed_delete_reclaims_data(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("misseddata");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    assert_int_equal(mt_bucket(e, "v", STRATA_VERSIONING_ENABLED), 0);
    size_t n = 300 * 1024;
    uint8_t *y = malloc(n);
    mt_fill(y, n, 5);
    struct strata_obj_info o1, o2;
    assert_int_equal(mt_put(e, "b", "x", y, n, NULL), 0);
    int f_bx = mt_data_files(e);
    assert_true(f_bx > 0);
    assert_int_equal(mt_put(e, "v", "x", y, n, &o1), 0);
    int f_o1 = mt_data_files(e) - f_bx;
    assert_int_equal(mt_put(e, "v", "x", "short", 5, NULL), 0); /* inline, current */
    mt_fill(y, n, 6);
    assert_int_equal(mt_put(e, "v", "x", y, n, &o2), 0);
    mt_close(e);

    mt_drive_away(e, 0);
    assert_int_equal(mt_open(e), 0);
    assert_int_equal(strata_obj_delete(e->m, "b", "x", NULL, NULL), 0);
    struct strata_del_result dr;
    assert_int_equal(strata_obj_delete(e->m, "v", "x", o2.version_id, &dr), 0);
    mt_close(e);
    mt_drive_back(e, 0);
    assert_int_equal(mt_open(e), 0);
    assert_int_equal(live_copies(e, "b", "x"), 1); /* drive 0's */
    assert_true(mt_data_files(e) > f_o1);

    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_int_equal(live_copies(e, "b", "x"), 0);
    expect_gone(e, "b", "x");
    struct seen s;
    list(e, "v", true, NULL, &s);
    assert_int_equal(s.n, 2);
    for (int i = 0; i < s.n; i++)
        assert_string_not_equal(s.vid[i], o2.version_id);
    uint8_t *got = NULL;
    size_t gl;
    assert_int_equal(mt_get(e, "v", "x", o2.version_id, &got, &gl), STRATA_ENOTFOUND);
    assert_int_equal(mt_data_files(e), f_o1); /* only o1's shards are left */
    mt_fill(y, n, 5);
    assert_int_equal(mt_get(e, "v", "x", o1.version_id, &got, &gl), 0);
    assert_int_equal(gl, n);
    assert_memory_equal(got, y, n);
    free(got);
    /* The next pass drops the tombstones: nothing at all is left of b/x. */
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    int tombs;
    for (unsigned d = 0; d < MT_DRIVES; d++)
        assert_int_equal(okeys_on(e, d, "b", "x", &tombs), 0);
    strata_obj_info_fini(&o1);
    strata_obj_info_fini(&o2);
    free(y);
    mt_teardown(e);
}

/* A version on one drive of four, without a tombstone (a write that
 * reached one drive and crashed before its undo): three voters answer
 * "absent", a write quorum, so one pass removes it and its shards. */
static void test_minority_removed(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("minrm");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    assert_int_equal(mt_put(e, "b", "real", "data", 4, NULL), 0);
    size_t n = 300 * 1024;
    uint8_t *y = malloc(n);
    mt_fill(y, n, 7);
    assert_int_equal(mt_put(e, "b", "dir/left", y, n, NULL), 0);
    assert_true(mt_data_files(e) > 0);
    for (unsigned d = 1; d < MT_DRIVES; d++)
        kind_keys(e, d, 'O', "b", "dir/left", true);
    plant(e, 0, "b", "ghost", "0123456789abcdef0123456789abcdef", (int64_t)4e18);
    expect_gone(e, "b", "dir/left");
    expect_gone(e, "b", "ghost");
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_int_equal(st.minority_removed, 2);
    assert_int_equal(live_copies(e, "b", "dir/left"), 0);
    assert_int_equal(live_copies(e, "b", "ghost"), 0);
    int tombs;
    for (unsigned d = 0; d < MT_DRIVES; d++) /* every drive online: no tombstone */
        assert_int_equal(okeys_on(e, d, "b", "dir/left", &tombs), 0);
    assert_int_equal(mt_data_files(e), 0);
    expect_gone(e, "b", "dir/left");
    expect_object(e, "b", "real", (const uint8_t *)"data", 4);
    free(y);
    mt_teardown(e);
}

/* A version on two drives of four: neither its presence nor its absence
 * has a write quorum, yet the fast read path (two agreeing drives) shows
 * it.  Heal rolls it forward, so it no longer depends on which drives
 * answer. */
static void test_minority_undecided_rolled_forward(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("minfwd");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t n = 300 * 1024;
    uint8_t *y = malloc(n);
    mt_fill(y, n, 8);
    uint8_t x[3000];
    mt_fill(x, sizeof(x), 9);
    assert_int_equal(mt_put(e, "b", "amb", y, n, NULL), 0);
    assert_int_equal(mt_put(e, "b", "amb-inline", x, sizeof(x), NULL), 0);
    for (unsigned d = 2; d < MT_DRIVES; d++) {
        kind_keys(e, d, 'O', "b", "amb", true);
        kind_keys(e, d, 'O', "b", "amb-inline", true);
    }
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_int_equal(live_copies(e, "b", "amb"), 4);
    assert_int_equal(live_copies(e, "b", "amb-inline"), 4);
    mt_close(e);
    mt_drive_away(e, 0);
    mt_drive_away(e, 1);
    assert_int_equal(mt_open(e), 0);
    expect_object(e, "b", "amb", y, n);
    expect_object(e, "b", "amb-inline", x, sizeof(x));
    mt_close(e);
    mt_drive_back(e, 0);
    mt_drive_back(e, 1);
    assert_int_equal(mt_open(e), 0);
    free(y);
    mt_teardown(e);
}

/* A multipart version with its part table on one drive of four (a complete
 * that reached one drive and crashed): heal removes the version and its
 * 'T' chunks; the part data is left to the orphan reclaim, which removes
 * it once no record names it. */
static void test_minority_multipart_removed(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("minmpu");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t n = 300 * 1024;
    uint8_t *y = malloc(n);
    mt_fill(y, n, 12);
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = "b";
    mo.key = "mp";
    assert_int_equal(mt_reopen_part_min(e, 1), 0);
    assert_int_equal(mt_mpu_single(e->m, &mo, y, n, NULL), 0);
    assert_true(mt_data_files(e) > 0);
    for (unsigned d = 1; d < MT_DRIVES; d++) {
        kind_keys(e, d, 'O', "b", "mp", true);
        kind_keys(e, d, 'T', "b", "mp", true);
    }
    assert_int_equal(kind_keys(e, 0, 'T', "b", "mp", false), 1);
    expect_gone(e, "b", "mp");
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_int_equal(st.minority_removed, 1);
    for (unsigned d = 0; d < MT_DRIVES; d++) {
        assert_int_equal(kind_keys(e, d, 'O', "b", "mp", false), 0);
        assert_int_equal(kind_keys(e, d, 'T', "b", "mp", false), 0);
    }
    assert_true(mt_data_files(e) > 0); /* the parts' data: not dropped by heal */
    struct strata_orphans *os = NULL;
    uint64_t removed = 0;
    assert_int_equal(strata_meta_orphan_round(e->m, &os, 0, &removed), 0);
    assert_int_equal(strata_meta_orphan_round(e->m, &os, 0, &removed), 0);
    strata_meta_orphans_free(os);
    assert_int_equal(removed, 1);
    assert_int_equal(mt_data_files(e), 0);
    expect_gone(e, "b", "mp");
    free(y);
    mt_teardown(e);
}

/* An undecided minority null version (two drives of four) older than the
 * key's committed null version (a failed write whose replacement did not
 * see it) was replaced: removed, not rolled forward into a second null
 * version of the key. */
static void test_minority_replaced_null_removed(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("minnull");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t old_ns = (int64_t)ts.tv_sec * 1000000000 - 60000000000LL;
    assert_int_equal(mt_put(e, "b", "n", "now", 3, NULL), 0);
    uint8_t sk[SORTKEY_LEN] = {0};
    for (unsigned d = 0; d < 2; d++)
        plant_rec(e, d, "b", "n", "", old_ns, REC_F_NULL | REC_F_DELETE_MARKER, sk);
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_int_equal(st.minority_healed, 0);
    assert_int_equal(st.minority_removed, 1);
    assert_int_equal(live_copies(e, "b", "n"), 4);
    struct seen s;
    list(e, "b", true, NULL, &s);
    assert_int_equal(s.n, 1);
    expect_object(e, "b", "n", (const uint8_t *)"now", 3);
    mt_teardown(e);
}

/*
 * An overwrite of bucket "b" key "x" (old, then nw) that crashed with its
 * batch (the new version and the old one's tombstone) applied on the drives
 * in mask new_on only; the others keep the old version live alone.  Built
 * as a commit with one drive away (the tombstone stays), then the batch
 * taken back on the drives outside new_on.
 */
static void overwrite_split(struct mt_env *e, unsigned new_on, const uint8_t *old,
                            const uint8_t *nw, size_t len)
{
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    assert_int_equal(mt_put(e, "b", "x", old, len, NULL), 0);
    unsigned away = 0;
    while (new_on & (1u << away))
        away++;
    /* The other drives' own records of the old version (their shards). */
    char pfx[600], hi[600];
    size_t pl = strata_meta__key_obj(pfx, sizeof(pfx), "b", "x", NULL);
    memcpy(hi, pfx, pl);
    hi[pl - 1] = 1;
    char *sk[MT_DRIVES] = {0}, *sv[MT_DRIVES] = {0};
    size_t skl[MT_DRIVES], svl[MT_DRIVES];
    for (unsigned d = 0; d < MT_DRIVES; d++) {
        if (d == away || (new_on & (1u << d)))
            continue;
        rocksdb_readoptions_t *ro;
        rocksdb_iterator_t *it = strata_meta__iter_new(e->m, 0, d, &ro, hi, pl, true);
        assert_non_null(it);
        rocksdb_iter_seek(it, pfx, pl);
        assert_true(rocksdb_iter_valid(it));
        const char *k = rocksdb_iter_key(it, &skl[d]);
        const char *v = rocksdb_iter_value(it, &svl[d]);
        sk[d] = malloc(skl[d]);
        sv[d] = malloc(svl[d]);
        memcpy(sk[d], k, skl[d]);
        memcpy(sv[d], v, svl[d]);
        rocksdb_iter_destroy(it);
        rocksdb_readoptions_destroy(ro);
    }
    /* The crash comes before the commit drops the old version's shards:
     * every drive keeps them (hard links, put back after the commit). */
    char cmd[4000];
    for (unsigned d = 0; d < MT_DRIVES; d++) {
        snprintf(cmd, sizeof(cmd), "[ ! -d '%s/data' ] || cp -al '%s/data' '%s.keep'", e->drive[d],
                 e->drive[d], e->drive[d]);
        assert_int_equal(system(cmd), 0);
    }
    mt_close(e);
    mt_drive_away(e, (int)away); /* keeps the old version live, and its tombstone */
    assert_int_equal(mt_open(e), 0);
    assert_int_equal(mt_put(e, "b", "x", nw, len, NULL), 0);
    mt_close(e);
    mt_drive_back(e, (int)away);
    for (unsigned d = 0; d < MT_DRIVES; d++) {
        snprintf(cmd, sizeof(cmd),
                 "[ ! -d '%s.keep' ] || { cp -an '%s.keep/.' '%s/data/' && rm -rf '%s.keep'; }",
                 e->drive[d], e->drive[d], e->drive[d], e->drive[d]);
        assert_int_equal(system(cmd), 0);
    }
    assert_int_equal(mt_open(e), 0);
    /* The drives outside new_on as if their batches never applied. */
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    for (unsigned d = 0; d < MT_DRIVES; d++) {
        if (!sk[d])
            continue;
        assert_int_equal(kind_keys(e, d, 'O', "b", "x", true), 2);
        char *err = NULL;
        rocksdb_put(e->m->sets[0].drives[d].db, wo, sk[d], skl[d], sv[d], svl[d], &err);
        assert_null(err);
        free(sk[d]);
        free(sv[d]);
    }
    rocksdb_writeoptions_destroy(wo);
    int tombs;
    for (unsigned d = 0; d < MT_DRIVES; d++) {
        assert_int_equal(okeys_on(e, d, "b", "x", &tombs), new_on & (1u << d) ? 2 : 1);
        assert_int_equal(tombs, new_on & (1u << d) ? 1 : 0);
    }
}

/* An overwrite that reached one drive of four before the crash (the new
 * version and the old one's tombstone in that drive's batch; the others
 * kept the old version live): the old version is the acknowledged one.
 * Heal removes the new version and must undo the tombstone on that drive,
 * not copy it to the others (which would lose the key). */
static void test_below_quorum_overwrite_rolled_back(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("owhalf");
    assert_non_null(e);
    uint8_t old[3000], nw[3000];
    mt_fill(old, sizeof(old), 21);
    mt_fill(nw, sizeof(nw), 22);
    overwrite_split(e, 1u << 0, old, nw, sizeof(old));
    assert_int_equal(live_copies(e, "b", "x"), 4);
    expect_object(e, "b", "x", old, sizeof(old));
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_int_equal(st.minority_removed, 1);
    int tombs;
    for (unsigned d = 0; d < MT_DRIVES; d++) {
        assert_int_equal(okeys_on(e, d, "b", "x", &tombs), 1);
        assert_int_equal(tombs, 0);
    }
    expect_object(e, "b", "x", old, sizeof(old));
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    expect_object(e, "b", "x", old, sizeof(old));
    mt_teardown(e);
}

/* The same overwrite on two drives of four, on a 2+2 set: the old
 * version's tombstone has a new version beside it that a read quorum (two
 * drives) may have shown, so heal rolls the new version forward and copies
 * the tombstone.  Before heal, each read order answers one of the two
 * versions (never "absent": the key was acknowledged); after heal the new
 * one, listed once. */
static void test_even_split_overwrite_2p2(void **state)
{
    (void)state;
    static const unsigned layouts[] = {0x3, 0x5, 0x6, 0x9, 0xa, 0xc};
    uint8_t old[3000], nw[3000];
    mt_fill(old, sizeof(old), 31);
    mt_fill(nw, sizeof(nw), 32);
    for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
        struct mt_env *e = mt_setup("owsplit");
        assert_non_null(e);
        overwrite_split(e, layouts[i], old, nw, sizeof(old));
        uint8_t *got = NULL;
        size_t gl = 0;
        assert_int_equal(mt_get(e, "b", "x", NULL, &got, &gl), 0);
        assert_int_equal(gl, sizeof(old));
        assert_true(memcmp(got, old, gl) == 0 || memcmp(got, nw, gl) == 0);
        expect_object(e, "b", "x", got, gl);
        free(got);
        struct strata_heal_stats st;
        assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
        assert_int_equal(live_copies(e, "b", "x"), 4);
        expect_object(e, "b", "x", nw, sizeof(nw));
        mt_teardown(e);
    }
}

/* The same on a 3+1 set (Rq = Wq = 3): neither version has a read quorum,
 * so every read takes the slow path.  The new version is on two drives,
 * fewer than any read quorum, and the acknowledged old one's tombstones
 * are on two, fewer than a commit or a read quorum reaches: GET, HEAD and
 * the listings answer the old version (they answered "absent").  The new
 * version's shards reached three drives (data is written before the
 * records), so heal rolls it forward and the old null version it replaced
 * goes: after heal the new version is the answer. */
static void test_even_split_overwrite_3p1(void **state)
{
    (void)state;
    size_t n = 300 * 1024;
    uint8_t *old = malloc(n), *nw = malloc(n);
    mt_fill(old, n, 41);
    mt_fill(nw, n, 42);
    struct mt_env *e = mt_setup_parity("owsplit31", 1);
    assert_non_null(e);
    overwrite_split(e, 0x6, old, nw, n);
    expect_object(e, "b", "x", old, n);
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_int_equal(st.minority_healed, 1);
    assert_int_equal(st.minority_removed, 1);
    expect_object(e, "b", "x", nw, n);
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_int_equal(live_copies(e, "b", "x"), 4);
    expect_object(e, "b", "x", nw, n);
    mt_teardown(e);
    free(old);
    free(nw);
}

/* A version under Object Lock on one drive of four: its absence has a
 * write quorum, but a locked version is never removed; its shards are
 * whole, so heal puts it back on every drive. */
static void test_minority_locked_kept(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("minlock");
    assert_non_null(e);
    struct strata_bucket_info b;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "lk");
    snprintf(b.owner, sizeof(b.owner), "tester");
    b.versioning = STRATA_VERSIONING_ENABLED;
    b.object_lock = true;
    assert_int_equal(strata_meta_bucket_create(e->m, &b), 0);
    size_t n = 300 * 1024;
    uint8_t *y = malloc(n);
    mt_fill(y, n, 10);
    const char *keys[2] = {"held", "retained"};
    for (int i = 0; i < 2; i++) {
        struct strata_put_opts o;
        memset(&o, 0, sizeof(o));
        o.bucket = "lk";
        o.key = keys[i];
        o.size = n;
        if (i == 0) {
            o.lock.legal_hold = true;
            o.lock.legal_hold_set = true;
        } else {
            o.lock.mode = STRATA_LOCK_COMPLIANCE;
            o.lock.until_ms = strata_meta_lock_now_ms(e->m) + 3600000;
        }
        assert_int_equal(mt_put_opts(e, &o, y, n, 0, NULL), 0);
        for (unsigned d = 1; d < MT_DRIVES; d++)
            kind_keys(e, d, 'O', "lk", keys[i], true);
    }
    int files = mt_data_files(e);
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_int_equal(st.minority_removed, 0);
    assert_int_equal(st.minority_healed, 2);
    assert_int_equal(mt_data_files(e), files);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(live_copies(e, "lk", keys[i]), 4);
        expect_object(e, "lk", keys[i], y, n);
    }
    free(y);
    mt_teardown(e);
}

/* A drive whose meta/ vanished (its data/ kept) is marked fresh at open,
 * so its empty store is no evidence of absence: here two such drives
 * would otherwise make, with a drive that missed the write, a write
 * quorum against the only drive left with the record.  Heal puts the
 * record back everywhere and the bytes read back. */
static void test_lost_store_is_fresh(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("loststore");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    size_t n = 300 * 1024;
    uint8_t *y = malloc(n);
    mt_fill(y, n, 11);
    mt_close(e);
    mt_drive_away(e, 3);
    assert_int_equal(mt_open(e), 0);
    assert_int_equal(mt_put(e, "b", "k", y, n, NULL), 0);
    mt_close(e);
    mt_drive_back(e, 3);
    for (int i = 0; i < 2; i++) {
        char p[700];
        snprintf(p, sizeof(p), "%s/meta", e->drive[i]);
        mt_rm_rf(p);
    }
    assert_int_equal(mt_open(e), 0);
    assert_true(strata_set_drive_fresh(e->set, 0));
    assert_true(strata_set_drive_fresh(e->set, 1));
    assert_false(strata_set_drive_fresh(e->set, 2));
    assert_false(strata_set_drive_fresh(e->set, 3));
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_int_equal(st.minority_removed, 0);
    assert_false(strata_set_drive_fresh(e->set, 0));
    assert_false(strata_set_drive_fresh(e->set, 1));
    assert_int_equal(live_copies(e, "b", "k"), 4);
    expect_object(e, "b", "k", y, n);
    mt_close(e);
    mt_drive_away(e, 2);
    mt_drive_away(e, 3);
    assert_int_equal(mt_open(e), 0);
    expect_object(e, "b", "k", y, n);
    mt_close(e);
    mt_drive_back(e, 2);
    mt_drive_back(e, 3);
    assert_int_equal(mt_open(e), 0);
    free(y);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replaced_drive_and_missed_put),
        cmocka_unit_test(test_fresh_survives_failed_heal),
        cmocka_unit_test(test_missed_delete_unversioned),
        cmocka_unit_test(test_missed_delete_of_version),
        cmocka_unit_test(test_missed_overwrite),
        cmocka_unit_test(test_tombstones_dropped_on_full_commit),
        cmocka_unit_test(test_below_quorum_not_shown),
        cmocka_unit_test(test_missed_delete_reclaims_data),
        cmocka_unit_test(test_minority_removed),
        cmocka_unit_test(test_minority_undecided_rolled_forward),
        cmocka_unit_test(test_minority_replaced_null_removed),
        cmocka_unit_test(test_minority_multipart_removed),
        cmocka_unit_test(test_minority_locked_kept),
        cmocka_unit_test(test_below_quorum_overwrite_rolled_back),
        cmocka_unit_test(test_even_split_overwrite_2p2),
        cmocka_unit_test(test_even_split_overwrite_3p1),
        cmocka_unit_test(test_lost_store_is_fresh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
