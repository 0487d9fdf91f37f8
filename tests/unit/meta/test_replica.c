/*
 * test_replica.c - what bucket replication needs of meta: a put that keeps
 * a given version id (its place in the history and its time), a replay of
 * it replacing the copy (and its data), a version under Object Lock
 * replaced only by the same bytes, a replicated delete marker with a given
 * id, and one stored header set and removed in place, the others kept.
 * A multipart complete keeps a given version id the same way.
 * The replica rule is a key_txn decide: run twice on one view it gives the
 * same edit, and a replay that misses the write quorum leaves the version
 * it would have replaced on the drives that took it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "meta_internal.h"
#include "meta_test_util.h"
#include "store.h"

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

/* A versioned bucket b with a local version of k made now (its id in
 * latest); *at: the time an hour earlier, a replica's, its version id in
 * old. */
static struct mt_env *local_then_hour_ago(const char *name, char latest[STRATA_VERSION_ID_MAX + 1],
                                          char old[STRATA_VERSION_ID_MAX + 1], int64_t *at)
{
    struct mt_env *e = mt_setup(name);
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_ENABLED), 0);
    struct strata_obj_info local;
    assert_int_equal(mt_put(e, "b", "k", "local", 5, &local), 0);
    memcpy(latest, local.version_id, STRATA_VERSION_ID_MAX + 1);
    *at = local.mtime_ms * 1000000LL - 3600LL * 1000000000LL;
    strata_obj_info_fini(&local);
    vid_at(*at, old);
    return e;
}

/* The replica old (made at) lands below latest in k's history, with its
 * own time. */
static void below_latest(struct mt_env *e, const char *latest, const char *old, int64_t at)
{
    struct strata_obj_info h;
    assert_int_equal(strata_obj_head(e->m, "b", "k", NULL, &h), 0);
    assert_string_equal(h.version_id, latest); /* still the latest */
    strata_obj_info_fini(&h);
    assert_int_equal(strata_obj_head(e->m, "b", "k", old, &h), 0);
    assert_int_equal(h.mtime_ms, at / 1000000);
    assert_false(h.is_latest);
    strata_obj_info_fini(&h);
}

static void test_version_id_kept(void **state)
{
    (void)state;
    /* A local version now, then a replica made an hour earlier. */
    char latest[STRATA_VERSION_ID_MAX + 1], old[STRATA_VERSION_ID_MAX + 1];
    int64_t hour_ago;
    struct mt_env *e = local_then_hour_ago("replvid", latest, old, &hour_ago);
    assert_int_equal(put_replica(e, "k", old, "older", 5, NULL), 0);
    below_latest(e, latest, old, hour_ago);
    bytes_are(e, "k", old, "older", 5);
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

/* strata_mpu_complete_as: the replica's version id and time kept, below a
 * newer local version; completed again under that id (multipart over
 * multipart, one part table key), the new copy reads, and completed again
 * as a plain replica PUT, the multipart copy's parts go. */
static void test_mpu_complete_as(void **state)
{
    (void)state;
    char latest[STRATA_VERSION_ID_MAX + 1], old[STRATA_VERSION_ID_MAX + 1];
    int64_t hour_ago;
    struct mt_env *e = local_then_hour_ago("replmpu", latest, old, &hour_ago);
    static uint8_t big1[300000], big2[300000]; /* erasure-coded, not inline */
    mt_fill(big1, sizeof(big1), 3);
    mt_fill(big2, sizeof(big2), 4);
    struct strata_obj_info v;
    int base = mt_data_files(e);
    assert_int_equal(mt_mpu_plain(e->m, "b", "k", old, big1, sizeof(big1), &v), 0);
    int copy = mt_data_files(e) - base; /* one copy's data files */
    assert_true(copy > 0);
    assert_string_equal(v.version_id, old);
    assert_non_null(strstr(v.etag, "-1")); /* a multipart version */
    strata_obj_info_fini(&v);
    below_latest(e, latest, old, hour_ago);
    bytes_are(e, "k", old, big1, sizeof(big1));
    assert_int_equal(mt_mpu_plain(e->m, "b", "k", old, big2, sizeof(big2), NULL), 0);
    bytes_are(e, "k", old, big2, sizeof(big2));
    /* The first copy's parts wait for the orphan audit. */
    assert_int_equal(mt_data_files(e), base + 2 * copy);
    assert_int_equal(put_replica(e, "k", old, big1, sizeof(big1), NULL), 0);
    bytes_are(e, "k", old, big1, sizeof(big1));
    assert_int_equal(mt_data_files(e), base + 2 * copy); /* big2's part went, big1's came */
    /* Malformed ids, and buckets whose versioning is not Enabled. */
    assert_int_equal(mt_mpu_plain(e->m, "b", "k", "nothex", "x", 1, NULL), STRATA_EINVAL);
    assert_int_equal(mt_bucket(e, "plain", STRATA_VERSIONING_OFF), 0);
    assert_int_equal(mt_mpu_plain(e->m, "plain", "k", old, "x", 1, NULL), STRATA_EINVAL);
    struct strata_obj_info h;
    assert_int_equal(strata_obj_head(e->m, "plain", "k", NULL, &h), STRATA_ENOTFOUND);
    mt_teardown(e);
}

static void test_locked_keeps_its_bytes(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("repllock");
    assert_non_null(e);
    assert_int_equal(mt_lock_bucket(e, "b"), 0);
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
    /* The same bytes with a weaker lock are refused: a shorter retention,
     * GOVERNANCE for COMPLIANCE, no retention, a legal hold released. */
    struct strata_obj_lock weaker[4] = {
        {.mode = STRATA_LOCK_COMPLIANCE, .until_ms = lk.until_ms - 1000},
        {.mode = STRATA_LOCK_GOVERNANCE, .until_ms = lk.until_ms},
        {.mode = STRATA_LOCK_NONE},
        {.mode = STRATA_LOCK_COMPLIANCE, .until_ms = lk.until_ms},
    };
    lk.legal_hold = lk.legal_hold_set = true;
    assert_int_equal(put_replica(e, "k", vid, "hello", 5, &lk), 0);
    for (unsigned i = 0; i < 4; i++)
        assert_int_equal(put_replica(e, "k", vid, "hello", 5, &weaker[i]), STRATA_ELOCKED);
    assert_int_equal(strata_obj_head(e->m, "b", "k", vid, &h), 0);
    assert_int_equal(h.lock.mode, STRATA_LOCK_COMPLIANCE);
    assert_int_equal(h.lock.until_ms, lk.until_ms);
    assert_true(h.lock.legal_hold);
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
    /* A replica may not replace a delete marker, nor a marker a version. */
    assert_int_equal(put_replica(e, "k", dm, "x", 1, NULL), STRATA_EEXISTS);
    char ov[STRATA_VERSION_ID_MAX + 1];
    vid_at(v.mtime_ms * 1000000LL - 5000000, ov);
    assert_int_equal(put_replica(e, "k", ov, "older", 5, NULL), 0);
    assert_int_equal(strata_obj_delete_marker_replica(e->m, "b", "k", ov, &res), STRATA_EEXISTS);
    bytes_are(e, "k", ov, "older", 5);
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

/* A delete marker committed with the replication status, then set by its
 * id (the latest marker by no id stays ENOTFOUND); the data below intact. */
static void test_marker_status(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("replmk");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_ENABLED), 0);
    struct strata_obj_info v;
    assert_int_equal(mt_put(e, "b", "k", "data", 4, &v), 0);
    const struct strata_kv st = {"x-amz-replication-status", "PENDING"};
    struct strata_lock_actor a = {.user = "u", .marker_hdr = &st};
    struct strata_del_result res;
    assert_int_equal(strata_obj_delete_opts(e->m, "b", "k", NULL, &a, &res), 0);
    assert_true(res.delete_marker);
    struct strata_obj_info h;
    assert_int_equal(strata_obj_head(e->m, "b", "k", res.version_id, &h), STRATA_EMETHOD);
    assert_true(h.delete_marker);
    assert_string_equal(strata_obj_info_hdr(&h, "x-amz-replication-status"), "PENDING");
    strata_obj_info_fini(&h);
    assert_int_equal(strata_obj_hdr_set(e->m, "b", "k", res.version_id,
                                        "x-amz-replication-status", "COMPLETED"), 0);
    assert_int_equal(strata_obj_hdr_set(e->m, "b", "k", NULL, "x-amz-replication-status", "X"),
                     STRATA_ENOTFOUND);
    assert_int_equal(strata_obj_head(e->m, "b", "k", res.version_id, &h), STRATA_EMETHOD);
    assert_true(h.delete_marker);
    assert_int_equal(h.nhdrs, 1);
    assert_string_equal(strata_obj_info_hdr(&h, "x-amz-replication-status"), "COMPLETED");
    strata_obj_info_fini(&h);
    assert_int_equal(strata_obj_head(e->m, "b", "k", NULL, &h), STRATA_ENOTFOUND);
    strata_obj_info_fini(&h);
    bytes_are(e, "k", v.version_id, "data", 4);
    strata_obj_info_fini(&v);
    mt_teardown(e);
}

/* Runs the replica rule twice on the txn's view: the same edit, its sort
 * key the source's, the version of that id replaced and reclaimed. */
struct rerun {
    uint8_t sk[SORTKEY_LEN];
    int calls;
};

static int rerun_fn(void *ud, const struct strata_meta__key_view *v,
                    struct strata_meta__key_edit *e)
{
    struct rerun *x = ud;
    struct strata_meta__key_edit e2;
    memset(&e2, 0, sizeof(e2));
    struct meta_rec r1, r2;
    memset(&r1, 0, sizeof(r1));
    memset(&r2, 0, sizeof(r2));
    snprintf(r1.etag, sizeof(r1.etag), "etag");
    snprintf(r2.etag, sizeof(r2.etag), "etag");
    int rc1 = strata_meta__replica_decide(v, &r1, x->sk, e);
    int rc2 = strata_meta__replica_decide(v, &r2, x->sk, &e2);
    assert_int_equal(rc1, 0);
    assert_int_equal(rc2, 0);
    assert_int_equal(e->op, STRATA_META__KEY_PUT);
    assert_int_equal(e2.op, e->op);
    assert_memory_equal(e->sk, x->sk, SORTKEY_LEN);
    assert_memory_equal(e2.sk, x->sk, SORTKEY_LEN);
    assert_int_equal(e->replace, STRATA_META__SLOT_VERSION);
    assert_int_equal(e2.replace, e->replace);
    assert_int_equal(r1.mtime_ns, strata_meta__sortkey_mtime(x->sk));
    assert_int_equal(r2.mtime_ns, r1.mtime_ns);
    assert_int_equal(r2.flags, r1.flags);
    assert_true(e->reclaim.any);
    assert_memory_equal(e->reclaim.sk, x->sk, SORTKEY_LEN);
    assert_memory_equal(&e->reclaim, &e2.reclaim, sizeof(e->reclaim));
    x->calls++;
    return 0;
}

static void test_rerun_same_edit(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("replrerun");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_ENABLED), 0);
    char vid[STRATA_VERSION_ID_MAX + 1];
    vid_at(1700000000000000000LL, vid);
    static uint8_t big[300000];
    mt_fill(big, sizeof(big), 3);
    assert_int_equal(put_replica(e, "k", vid, big, sizeof(big), NULL), 0);
    struct rerun x;
    memset(&x, 0, sizeof(x));
    assert_int_equal(strata_meta__vid_parse(vid, x.sk), 0);
    struct strata_meta__key_txn t = {.bucket = "b",
                                     .key = "k",
                                     .want = STRATA_META__KEY_LATEST | STRATA_META__KEY_VERSION,
                                     .version_id = vid,
                                     .decide = rerun_fn,
                                     .ud = &x};
    assert_int_equal(e->m->store->key_read(e->m, &t), 0); /* nothing applied */
    assert_int_equal(x.calls, 1);
    bytes_are(e, "k", vid, big, sizeof(big));
    mt_teardown(e);
}

/* A replay that misses the write quorum (two of four drives away) is
 * undone: the drives that took it get back their own copy of the version
 * it was written over, which still reads. */
static void test_replay_quorum_lost(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("replquorum");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_ENABLED), 0);
    char vid[STRATA_VERSION_ID_MAX + 1];
    vid_at(1700000000000000000LL, vid);
    assert_int_equal(put_replica(e, "k", vid, "one", 3, NULL), 0);
    mt_close(e);
    mt_drive_away(e, 0);
    mt_drive_away(e, 1);
    assert_int_equal(mt_open(e), 0);
    assert_int_equal(put_replica(e, "k", vid, "two", 3, NULL), STRATA_EQUORUM);
    bytes_are(e, "k", vid, "one", 3); /* from drives 2 and 3 alone */
    mt_close(e);
    mt_drive_back(e, 0);
    mt_drive_back(e, 1);
    assert_int_equal(mt_open(e), 0);
    bytes_are(e, "k", vid, "one", 3);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_id_kept),
        cmocka_unit_test(test_replay_replaces_and_drops_data),
        cmocka_unit_test(test_mpu_complete_as),
        cmocka_unit_test(test_locked_keeps_its_bytes),
        cmocka_unit_test(test_delete_marker_replica),
        cmocka_unit_test(test_hdr_set),
        cmocka_unit_test(test_marker_status),
        cmocka_unit_test(test_rerun_same_edit),
        cmocka_unit_test(test_replay_quorum_lost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
