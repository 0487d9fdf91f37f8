/*
 * test_due.c - meta's version-time index (meta/due.c), state documents
 * (meta/state.c) and immediate heal queue (meta/healq.c) on four real drive
 * directories: every write path adds or removes the entry with its record
 * (put, overwrite of the null version, a delete marker, a delete by version
 * id, multipart complete), on every drive; a range scan returns entries in
 * mtime order; a stale entry is dropped only where no live record backs
 * it; state documents round-trip and survive a reopen; a commit that
 * missed a drive is healed from the queue.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "meta_internal.h"
#include "meta_test_util.h"

struct ents {
    unsigned n;
    char key[64][STRATA_KEY_MAX + 1];
    char vid[64][STRATA_VERSION_ID_MAX + 1];
    int64_t ms[64];
};

static int ents_cb(const struct strata_due_entry *e, void *ud)
{
    struct ents *s = ud;
    if (s->n < 64) {
        memcpy(s->key[s->n], e->key, sizeof(s->key[0]));
        snprintf(s->vid[s->n], sizeof(s->vid[0]), "%s", e->version_id);
        s->ms[s->n] = e->mtime_ms;
    }
    s->n++;
    return 0;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct ents scan(struct mt_env *e, const char *bucket)
{
    struct ents s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(strata_meta_due_scan(e->m, bucket, 0, wall_ms() + 60000, ents_cb, &s), 0);
    return s;
}

/* Index entries held by drive d alone for bucket (a raw count). */
static unsigned drive_entries(struct mt_env *e, unsigned d, const char *bucket)
{
    char lo[128], hi[128];
    size_t bl = strlen(bucket);
    lo[0] = hi[0] = 'D';
    memcpy(lo + 1, bucket, bl + 1);
    memcpy(hi + 1, bucket, bl);
    hi[bl + 1] = 1;
    rocksdb_readoptions_t *ro = NULL;
    rocksdb_iterator_t *it = strata_meta__iter_new(e->m, 0, d, &ro, hi, bl + 2, true);
    unsigned n = 0;
    for (rocksdb_iter_seek(it, lo, bl + 2); rocksdb_iter_valid(it); rocksdb_iter_next(it))
        n++;
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    return n;
}

static void put_vid(struct mt_env *e, const char *b, const char *k, const char *data,
                    char vid[STRATA_VERSION_ID_MAX + 1])
{
    struct strata_obj_info out;
    memset(&out, 0, sizeof(out));
    assert_int_equal(mt_put(e, b, k, data, strlen(data), &out), 0);
    if (vid)
        snprintf(vid, STRATA_VERSION_ID_MAX + 1, "%s", out.version_id);
    strata_obj_info_fini(&out);
}

static void test_versioned_paths(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("due-ver");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "v", STRATA_VERSIONING_ENABLED), 0);
    int64_t t0 = wall_ms();
    char v1[STRATA_VERSION_ID_MAX + 1], v2[STRATA_VERSION_ID_MAX + 1];
    put_vid(e, "v", "k", "one", v1);
    put_vid(e, "v", "k", "two", v2); /* v1 becomes noncurrent: v2's entry says when */
    struct ents s = scan(e, "v");
    assert_int_equal(s.n, 2);
    assert_string_equal(s.vid[0], v1); /* oldest first */
    assert_string_equal(s.vid[1], v2);
    assert_true(s.ms[0] >= t0 - 1 && s.ms[0] <= s.ms[1] && s.ms[1] <= wall_ms());
    for (unsigned d = 0; d < MT_DRIVES; d++)
        assert_int_equal(drive_entries(e, d, "v"), 2); /* in the same batch on every drive */

    /* A delete marker is a version: it gets an entry too. */
    struct strata_del_result dr;
    memset(&dr, 0, sizeof(dr));
    assert_int_equal(strata_obj_delete(e->m, "v", "k", NULL, &dr), 0);
    assert_true(dr.delete_marker);
    s = scan(e, "v");
    assert_int_equal(s.n, 3);
    assert_string_equal(s.vid[2], dr.version_id);

    /* A delete by version id removes that entry, on every drive. */
    assert_int_equal(strata_obj_delete(e->m, "v", "k", v1, NULL), 0);
    s = scan(e, "v");
    assert_int_equal(s.n, 2);
    assert_string_equal(s.vid[0], v2);
    for (unsigned d = 0; d < MT_DRIVES; d++)
        assert_int_equal(drive_entries(e, d, "v"), 2);

    /* A time window returns only what is in it. */
    struct ents w;
    memset(&w, 0, sizeof(w));
    assert_int_equal(strata_meta_due_scan(e->m, "v", 0, t0 - 1000, ents_cb, &w), 0);
    assert_int_equal(w.n, 0);
    /* Other buckets' entries never show. */
    assert_int_equal(mt_bucket(e, "v2", STRATA_VERSIONING_OFF), 0);
    put_vid(e, "v2", "x", "x", NULL);
    assert_int_equal(scan(e, "v").n, 2);
    mt_teardown(e);
}

static void test_unversioned_overwrite(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("due-off");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "u", STRATA_VERSIONING_OFF), 0);
    char v1[STRATA_VERSION_ID_MAX + 1];
    put_vid(e, "u", "k", "one", v1);
    uint8_t *big = malloc(300000);
    mt_fill(big, 300000, 7);
    assert_int_equal(mt_put(e, "u", "k", big, 300000, NULL), 0); /* replaces the null version */
    free(big);
    struct ents s = scan(e, "u");
    assert_int_equal(s.n, 1); /* the replaced version's entry went with it */
    for (unsigned d = 0; d < MT_DRIVES; d++)
        assert_int_equal(drive_entries(e, d, "u"), 1);
    assert_int_equal(strata_obj_delete(e->m, "u", "k", NULL, NULL), 0);
    assert_int_equal(scan(e, "u").n, 0);
    for (unsigned d = 0; d < MT_DRIVES; d++)
        assert_int_equal(drive_entries(e, d, "u"), 0);
    mt_teardown(e);
}

static void test_multipart(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("due-mpu");
    assert_non_null(e);
    assert_int_equal(mt_reopen_part_min(e, 1), 0);
    assert_int_equal(mt_bucket(e, "m", STRATA_VERSIONING_OFF), 0);
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = "m";
    mo.key = "big";
    assert_int_equal(mt_mpu_single(e->m, &mo, "hello", 5, NULL), 0);
    struct ents s = scan(e, "m");
    assert_int_equal(s.n, 1);
    assert_string_equal(s.key[0], "big");
    mt_teardown(e);
}

static void test_stale_drop(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("due-stale");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "s", STRATA_VERSIONING_ENABLED), 0);
    char v1[STRATA_VERSION_ID_MAX + 1];
    put_vid(e, "s", "live", "x", v1);
    /* A dropping of a live version's entry is refused where the record is. */
    assert_int_equal(strata_meta_due_drop(e->m, "s", "live", v1), 0);
    assert_int_equal(scan(e, "s").n, 1);
    /* An entry no record backs (as a drive that missed a delete keeps). */
    uint8_t sk[SORTKEY_LEN];
    strata_meta__sortkey_new((int64_t)wall_ms() * 1000000, sk);
    char ok[256], dk[256], vid[STRATA_VERSION_ID_MAX + 1];
    size_t okl = strata_meta__key_obj(ok, sizeof(ok), "s", "ghost", sk);
    size_t dkl = strata_meta__key_due_of_obj(dk, sizeof(dk), ok, okl);
    assert_true(dkl > 0);
    char *err = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_put(e->m->sets[0].drives[2].db, wo, dk, dkl, "", 0, &err);
    assert_null(err);
    rocksdb_writeoptions_destroy(wo);
    struct ents s = scan(e, "s");
    assert_int_equal(s.n, 2); /* the merge sees every drive's entries */
    strata_meta__vid_format(sk, vid);
    assert_int_equal(strata_meta_due_drop(e->m, "s", "ghost", vid), 0);
    s = scan(e, "s");
    assert_int_equal(s.n, 1);
    assert_string_equal(s.key[0], "live");
    assert_int_equal(strata_meta_due_drop(e->m, "s", "ghost", "not-an-id"), STRATA_EINVAL);
    mt_teardown(e);
}

static void test_state_docs(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("due-state");
    assert_non_null(e);
    void *doc = NULL;
    size_t len = 0;
    assert_int_equal(strata_meta_state_get(e->m, "pos", &doc, &len), STRATA_ENOTFOUND);
    assert_int_equal(strata_meta_state_put(e->m, "pos", "b\0k\0", 4), 0);
    mt_close(e);
    assert_int_equal(mt_open(e), 0);
    assert_int_equal(strata_meta_state_get(e->m, "pos", &doc, &len), 0);
    assert_int_equal(len, 4);
    assert_memory_equal(doc, "b\0k\0", 4);
    free(doc);
    assert_int_equal(strata_meta_state_put(e->m, "pos", NULL, 0), 0);
    assert_int_equal(strata_meta_state_get(e->m, "pos", &doc, &len), STRATA_ENOTFOUND);
    assert_int_equal(strata_meta_state_put(e->m, "", "x", 1), STRATA_EINVAL);
    mt_teardown(e);
}

static void test_heal_queue(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("due-healq");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "h", STRATA_VERSIONING_ENABLED), 0);
    size_t pending = 99;
    strata_meta_heal_queue_stats(e->m, &pending, NULL);
    assert_int_equal(pending, 0); /* commits on every drive queue nothing */
    /* Drive 3 misses two puts (its store is away; the quorum of 3 commits). */
    struct meta_drive *dr = &e->m->sets[0].drives[3];
    rocksdb_t *db = dr->db;
    dr->db = NULL;
    char v1[STRATA_VERSION_ID_MAX + 1], v2[STRATA_VERSION_ID_MAX + 1];
    put_vid(e, "h", "a", "inline-a", v1);
    put_vid(e, "h", "b", "inline-b", v2);
    dr->db = db;
    strata_meta_heal_queue_stats(e->m, &pending, NULL);
    assert_true(pending >= 2);
    char ok[256];
    uint8_t sk[SORTKEY_LEN];
    assert_int_equal(strata_meta__vid_parse(v1, sk), 0);
    size_t okl = strata_meta__key_obj(ok, sizeof(ok), "h", "a", sk);
    char *v = NULL;
    size_t vl = 0;
    assert_int_equal(strata_meta__drive_get(e->m, 0, 3, ok, okl, &v, &vl), STRATA_ENOTFOUND);
    assert_int_equal(drive_entries(e, 3, "h"), 0);
    struct strata_heal_stats hs;
    int n = strata_meta_heal_queued(e->m, 0, &hs, &pending);
    assert_true(n >= 2);
    assert_int_equal(pending, 0);
    assert_true(hs.records_healed >= 2);
    assert_int_equal(strata_meta__drive_get(e->m, 0, 3, ok, okl, &v, &vl), 0);
    free(v);
    /* The index entries came with a full heal (raw records on a quorum). */
    assert_int_equal(strata_meta_heal_all(e->m, NULL), 0);
    assert_int_equal(drive_entries(e, 3, "h"), 2);
    mt_teardown(e);
}

/* A write that misses a drive while a long paced full heal runs. */
struct late_probe {
    struct mt_env *e;
    unsigned calls, checked_at;
    char vid[STRATA_VERSION_ID_MAX + 1];
};

static bool drive_has(struct mt_env *e, unsigned d, const char *b, const char *k, const char *vid)
{
    char ok[256];
    uint8_t sk[SORTKEY_LEN];
    assert_int_equal(strata_meta__vid_parse(vid, sk), 0);
    size_t okl = strata_meta__key_obj(ok, sizeof(ok), b, k, sk);
    char *v = NULL;
    size_t vl = 0;
    int rc = strata_meta__drive_get(e->m, 0, d, ok, okl, &v, &vl);
    free(v);
    return rc == 0;
}

static int late_probe_cb(void *ud, uint64_t keys)
{
    (void)keys;
    struct late_probe *p = ud;
    if (++p->calls == 1) {
        /* Drive 3 misses this put: its key goes to the heal queue.  The
         * heal's own walk started before it and never sees it. */
        struct meta_drive *dr = &p->e->m->sets[0].drives[3];
        rocksdb_t *db = dr->db;
        dr->db = NULL;
        put_vid(p->e, "p", "late", "written during the heal", p->vid);
        dr->db = db;
        assert_false(drive_has(p->e, 3, "p", "late", p->vid));
    } else if (!p->checked_at && drive_has(p->e, 3, "p", "late", p->vid)) {
        p->checked_at = p->calls; /* healed while the full heal still runs */
    }
    return 0;
}

static void test_heal_queue_served_by_paced_heal(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("due-healq-paced");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "p", STRATA_VERSIONING_ENABLED), 0);
    for (unsigned i = 0; i < 100; i++) {
        char k[32];
        snprintf(k, sizeof(k), "k%03u", i);
        put_vid(e, "p", k, "body", NULL);
    }
    struct late_probe p = {.e = e};
    struct strata_heal_stats hs;
    assert_int_equal(strata_meta_heal_all_paced(e->m, late_probe_cb, &p, &hs), 0);
    /* 100 objects are at least 200 keys: many pace points after the put. */
    assert_true(p.calls > 4);
    assert_true(p.checked_at >= 2 && p.checked_at < p.calls);
    size_t pending = 99;
    strata_meta_heal_queue_stats(e->m, &pending, NULL);
    assert_int_equal(pending, 0);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_versioned_paths), cmocka_unit_test(test_unversioned_overwrite),
        cmocka_unit_test(test_multipart),       cmocka_unit_test(test_stale_drop),
        cmocka_unit_test(test_state_docs),      cmocka_unit_test(test_heal_queue),
        cmocka_unit_test(test_heal_queue_served_by_paced_heal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
