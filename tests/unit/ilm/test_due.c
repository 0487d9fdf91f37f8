/*
 * test_due.c - the scanner's due work from meta's version-time index
 * (ilm/due.c) and its persisted pass position (ilm/scanpos.c), on a real
 * meta with 100 ms lifecycle days.  Drains are called directly
 * (strata_ilm__due_tick), never a full pass, so what expires here was
 * found through the index: current versions by their mtime, noncurrent
 * ones by the newer version's entry, nothing visited twice, a rule change
 * drained from the oldest entry, a locked version left alone, an expired
 * object delete marker removed by Expiration Days.  The
 * position test stops a paced pass midway and checks that the next pass
 * continues there and then forgets the position.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "ilm_internal.h"
#include "meta/meta_test_util.h"

#define DAY_MS 100
#define DEADLINE_MS 30000

static int no_tags(const uint8_t *raw, size_t len, struct strata_kv *out, size_t max, char *buf,
                   size_t buf_len)
{
    (void)raw, (void)len, (void)out, (void)max, (void)buf, (void)buf_len;
    return 0;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static struct strata_ilm *engine(struct mt_env *e, unsigned rate)
{
    struct strata_ilm_opts o = {.meta = e->m, .sets = &e->set, .nsets = 1, .day_ms = DAY_MS,
                                .interval_s = 1, .rate_objs = rate, .tags_decode_cb = no_tags};
    struct strata_ilm *ilm = NULL;
    assert_int_equal(strata_ilm_create(&o, &ilm), 0);
    return ilm;
}

static void lifecycle(struct mt_env *e, const char *bucket, const char *rules)
{
    char doc[2048];
    int n = snprintf(doc, sizeof(doc), "<LifecycleConfiguration>%s</LifecycleConfiguration>",
                     rules);
    assert_int_equal(strata_meta_bucket_config_put(e->m, bucket, "lifecycle", doc, (size_t)n), 0);
}

static void put(struct mt_env *e, const char *bucket, const char *key, struct strata_obj_info *out)
{
    assert_int_equal(mt_put(e, bucket, key, "data", 4, out), 0);
}

static bool present(struct mt_env *e, const char *bucket, const char *key, const char *vid)
{
    struct strata_obj_info info;
    memset(&info, 0, sizeof(info));
    int rc = strata_obj_head(e->m, bucket, key, vid, &info);
    strata_obj_info_fini(&info);
    return rc == 0;
}

/* Drain until pred or the deadline (a slow machine only waits longer). */
static struct strata_ilm_stats drain_until(struct strata_ilm *ilm, struct mt_env *e,
                                           bool (*pred)(struct mt_env *))
{
    struct strata_ilm_stats sum;
    memset(&sum, 0, sizeof(sum));
    for (int waited = 0; !pred(e); waited += 20) {
        assert_true(waited < DEADLINE_MS);
        sleep_ms(20);
        strata_ilm__due_tick(ilm, true, &sum);
    }
    return sum;
}

static void test_bound(void **state)
{
    (void)state;
    const int64_t days[] = {1, 2, 30};
    const int64_t dms[] = {100, 2000, 86400000};
    for (size_t i = 0; i < 3; i++) {
        for (size_t j = 0; j < 3; j++) {
            for (int64_t now = 1700000000000LL; now < 1700000000000LL + 5 * dms[j];
                 now += dms[j] / 7 + 1) {
                int64_t b = strata_ilm__due_bound(now, (unsigned)days[i], dms[j]);
                assert_true(strata_lc_due_ms(b - 1, (unsigned)days[i], dms[j]) <= now);
                assert_true(strata_lc_due_ms(b, (unsigned)days[i], dms[j]) > now);
            }
        }
    }
}

static bool cur_done(struct mt_env *e)
{
    for (int i = 0; i < 20; i++) {
        char k[32];
        snprintf(k, sizeof(k), "due/%02d", i);
        if (present(e, "b", k, NULL))
            return false;
    }
    return true;
}

static void test_expire_by_index(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("due-cur");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    lifecycle(e, "b",
              "<Rule><ID>due</ID><Filter><Prefix>due/</Prefix></Filter><Status>Enabled</Status>"
              "<Expiration><Days>1</Days></Expiration></Rule>");
    for (int i = 0; i < 20; i++) {
        char k[32];
        snprintf(k, sizeof(k), "due/%02d", i);
        put(e, "b", k, NULL);
        snprintf(k, sizeof(k), "keep/%02d", i);
        put(e, "b", k, NULL);
    }
    struct strata_ilm *ilm = engine(e, 0);
    struct strata_ilm_stats st = drain_until(ilm, e, cur_done);
    assert_int_equal(st.expired, 20);
    assert_int_equal(st.errors, 0);
    assert_int_equal(st.passes, 0); /* no full pass ran */
    assert_true(st.due_scanned >= 20 && st.due_scanned <= 40);
    for (int i = 0; i < 20; i++) {
        char k[32];
        snprintf(k, sizeof(k), "keep/%02d", i);
        assert_true(present(e, "b", k, NULL));
    }
    /* Drained entries are behind the cursor: a later drain visits nothing. */
    sleep_ms(3 * DAY_MS);
    memset(&st, 0, sizeof(st));
    strata_ilm__due_tick(ilm, true, &st);
    assert_int_equal(st.due_scanned, 0);
    assert_int_equal(st.expired, 0);
    /* A new object becomes due and is found alone. */
    put(e, "b", "due/new", NULL);
    for (int waited = 0; present(e, "b", "due/new", NULL); waited += 20) {
        assert_true(waited < DEADLINE_MS);
        sleep_ms(20);
        strata_ilm__due_tick(ilm, true, &st);
    }
    assert_int_equal(st.expired, 1);
    assert_int_equal(st.due_scanned, 1);
    strata_ilm_destroy(ilm);
    /* The cursors survive a new engine (restart): still nothing to visit. */
    ilm = engine(e, 0);
    memset(&st, 0, sizeof(st));
    strata_ilm__due_tick(ilm, true, &st);
    assert_int_equal(st.due_scanned, 0);
    strata_ilm_destroy(ilm);
    mt_teardown(e);
}

static char nc_old[STRATA_VERSION_ID_MAX + 1], nc_new[STRATA_VERSION_ID_MAX + 1];

static bool nc_done(struct mt_env *e)
{
    return !present(e, "v", "k", nc_old);
}

static void test_noncurrent_by_index(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("due-nc");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "v", STRATA_VERSIONING_ENABLED), 0);
    lifecycle(e, "v",
              "<Rule><ID>nc</ID><Filter/><Status>Enabled</Status><NoncurrentVersionExpiration>"
              "<NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule>");
    struct strata_obj_info a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    put(e, "v", "k", &a);
    put(e, "v", "k", &b);
    snprintf(nc_old, sizeof(nc_old), "%s", a.version_id);
    snprintf(nc_new, sizeof(nc_new), "%s", b.version_id);
    strata_obj_info_fini(&a);
    strata_obj_info_fini(&b);
    struct strata_ilm *ilm = engine(e, 0);
    struct strata_ilm_stats st = drain_until(ilm, e, nc_done);
    assert_int_equal(st.noncurrent_expired, 1);
    assert_int_equal(st.expired, 0);
    assert_true(present(e, "v", "k", nc_new)); /* the current version stays */
    assert_true(present(e, "v", "k", NULL));
    strata_ilm_destroy(ilm);
    mt_teardown(e);
}

static bool b_done(struct mt_env *e)
{
    return !present(e, "r", "b/1", NULL);
}

struct vcount {
    unsigned versions, markers;
};
static int vcount_cb(const struct strata_list_entry *ent, void *ud)
{
    struct vcount *c = ud;
    if (ent->info && ent->info->delete_marker)
        c->markers++;
    else if (ent->info)
        c->versions++;
    return 0;
}
static struct vcount vcount(struct mt_env *e, const char *bucket, const char *prefix)
{
    struct vcount c = {0};
    struct strata_list_opts lo = {.bucket = bucket, .prefix = prefix, .max_keys = 1000,
                                  .versions = true};
    struct strata_list_result res;
    assert_int_equal(strata_obj_list(e->m, &lo, vcount_cb, &c, &res), 0);
    return c;
}

static bool alone_marker_done(struct mt_env *e)
{
    return vcount(e, "v", "d/alone").markers == 0;
}

static bool behind_done(struct mt_env *e)
{
    struct vcount c = vcount(e, "v", "d/behind");
    return c.versions == 0 && c.markers == 0;
}

static int64_t real_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Expiration Days also removes an expired object delete marker (the key's
 * only version) once the marker is that old, through the index alone; a
 * marker with a noncurrent version behind it stays until that version is
 * gone, then goes in the same drain. */
static void test_days_marker_by_index(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("due-dm");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "v", STRATA_VERSIONING_ENABLED), 0);
    lifecycle(e, "v",
              "<Rule><ID>d</ID><Filter><Prefix>d/</Prefix></Filter><Status>Enabled</Status>"
              "<Expiration><Days>10</Days></Expiration>"
              "<NoncurrentVersionExpiration><NoncurrentDays>20</NoncurrentDays>"
              "</NoncurrentVersionExpiration></Rule>");
    int64_t t0 = real_ms();
    put(e, "v", "d/behind", NULL);
    assert_int_equal(strata_obj_delete(e->m, "v", "d/behind", NULL, NULL), 0);
    assert_int_equal(strata_obj_delete(e->m, "v", "d/alone", NULL, NULL), 0);
    assert_int_equal(strata_obj_delete(e->m, "v", "keep/alone", NULL, NULL), 0);
    struct strata_ilm *ilm = engine(e, 0);
    struct strata_ilm_stats st;
    memset(&st, 0, sizeof(st));
    strata_ilm__due_tick(ilm, true, &st); /* not 10 days old yet */
    assert_int_equal(st.markers_removed, 0);
    assert_int_equal(vcount(e, "v", "d/alone").markers, 1);
    st = drain_until(ilm, e, alone_marker_done);
    assert_true(real_ms() - t0 >= 10 * DAY_MS);
    assert_int_equal(st.markers_removed, 1);
    assert_int_equal(st.expired, 0); /* a marker is never expired into another */
    /* Old enough too, but its noncurrent version (20 days) is behind it. */
    struct vcount b = vcount(e, "v", "d/behind");
    assert_int_equal(b.versions, 1);
    assert_int_equal(b.markers, 1);
    struct strata_ilm_stats st2 = drain_until(ilm, e, behind_done);
    assert_true(real_ms() - t0 >= 20 * DAY_MS);
    assert_int_equal(st2.noncurrent_expired, 1);
    assert_int_equal(st2.markers_removed, 1);
    assert_int_equal(st.passes + st2.passes, 0); /* the index alone */
    assert_int_equal(st.errors + st2.errors, 0);
    assert_int_equal(vcount(e, "v", "keep/").markers, 1); /* no rule: stays */
    strata_ilm_destroy(ilm);
    mt_teardown(e);
}

static void test_rule_change_rebuilds(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("due-rule");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "r", 0), 0);
    lifecycle(e, "r",
              "<Rule><ID>x</ID><Filter><Prefix>a/</Prefix></Filter><Status>Enabled</Status>"
              "<Expiration><Days>1</Days></Expiration></Rule>");
    put(e, "r", "a/1", NULL);
    put(e, "r", "b/1", NULL);
    struct strata_ilm *ilm = engine(e, 0);
    sleep_ms(4 * DAY_MS);
    struct strata_ilm_stats st;
    memset(&st, 0, sizeof(st));
    strata_ilm__due_tick(ilm, true, &st);
    assert_false(present(e, "r", "a/1", NULL));
    assert_true(present(e, "r", "b/1", NULL)); /* passed over: not its rule */
    /* The same rule id with another filter is a new action: drained from the start. */
    lifecycle(e, "r",
              "<Rule><ID>x</ID><Filter><Prefix>b/</Prefix></Filter><Status>Enabled</Status>"
              "<Expiration><Days>1</Days></Expiration></Rule>");
    st = drain_until(ilm, e, b_done);
    assert_int_equal(st.expired, 1);
    strata_ilm_destroy(ilm);
    mt_teardown(e);
}

static bool lock_done(struct mt_env *e)
{
    struct strata_obj_info info;
    memset(&info, 0, sizeof(info));
    int rc = strata_obj_head(e->m, "l", "k", NULL, &info);
    strata_obj_info_fini(&info);
    return rc == STRATA_ENOTFOUND; /* a delete marker on top */
}

static void test_locked_left_alone(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("due-lock");
    assert_non_null(e);
    struct strata_bucket_info b;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "l");
    b.versioning = STRATA_VERSIONING_ENABLED;
    b.object_lock = true;
    assert_int_equal(strata_meta_bucket_create(e->m, &b), 0);
    lifecycle(e, "l",
              "<Rule><ID>all</ID><Filter/><Status>Enabled</Status><Expiration><Days>1</Days>"
              "</Expiration><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays>"
              "</NoncurrentVersionExpiration></Rule>");
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "l";
    o.key = "k";
    o.size = 5;
    o.lock.mode = STRATA_LOCK_COMPLIANCE;
    o.lock.until_ms = strata_meta_lock_now_ms(e->m) + 3600000;
    struct strata_obj_info v;
    memset(&v, 0, sizeof(v));
    assert_int_equal(mt_put_opts(e, &o, "hello", 5, 0, &v), 0);
    struct strata_ilm *ilm = engine(e, 0);
    struct strata_ilm_stats st = drain_until(ilm, e, lock_done);
    assert_int_equal(st.expired, 1); /* a marker: markers are never locked */
    /* The marker's entry makes the locked version due as noncurrent: refused. */
    memset(&st, 0, sizeof(st));
    for (int waited = 0; st.skipped_locked == 0; waited += 20) {
        assert_true(waited < DEADLINE_MS);
        sleep_ms(20);
        strata_ilm__due_tick(ilm, true, &st);
    }
    assert_int_equal(st.noncurrent_expired, 0);
    assert_true(present(e, "l", "k", v.version_id));
    strata_obj_info_fini(&v);
    strata_ilm_destroy(ilm);
    mt_teardown(e);
}

static void test_position_survives(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("due-pos");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "p", 0), 0);
    lifecycle(e, "p",
              "<Rule><ID>never</ID><Filter><Prefix>zzz/</Prefix></Filter><Status>Enabled</Status>"
              "<Expiration><Days>1000</Days></Expiration></Rule>");
    for (int i = 0; i < 400; i++) {
        char k[32];
        snprintf(k, sizeof(k), "k%04d", i);
        put(e, "p", k, NULL);
    }
    /* 50 versions a second: the pass takes 8 s; stop it after about 2. */
    struct strata_ilm *ilm = engine(e, 50);
    assert_int_equal(strata_ilm_start(ilm), 0);
    struct strata_ilm_progress pr;
    memset(&pr, 0, sizeof(pr));
    uint64_t stopped_at;
    for (int waited = 0; pr.st.scanned < 100; waited += 20) {
        assert_true(waited < DEADLINE_MS);
        sleep_ms(20);
        strata_ilm_progress_get(ilm, &pr);
    }
    assert_true(pr.running);
    assert_string_equal(pr.bucket, "p");
    strata_ilm_destroy(ilm); /* stops between two pages */
    stopped_at = pr.st.scanned;
    void *doc = NULL;
    size_t len = 0;
    assert_int_equal(strata_meta_state_get(e->m, "ilm-pass", &doc, &len), 0);
    assert_true(len > 2 && memcmp(doc, "p\0k0", 4) == 0);
    free(doc);
    /* A new engine (a restart) continues there, not from the first key. */
    ilm = engine(e, 0);
    struct strata_ilm_stats st;
    assert_int_equal(strata_ilm_run_once(ilm, &st), 0);
    /* The key a page ended in is walked again (its versions may go on). */
    assert_true(st.scanned > 0 && st.scanned <= 400 - stopped_at + 1);
    assert_int_equal(strata_meta_state_get(e->m, "ilm-pass", &doc, &len), STRATA_ENOTFOUND);
    /* The pass after a complete one starts over. */
    assert_int_equal(strata_ilm_run_once(ilm, &st), 0);
    assert_int_equal(st.scanned, 400);
    strata_ilm_destroy(ilm);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bound),
        cmocka_unit_test(test_expire_by_index),
        cmocka_unit_test(test_noncurrent_by_index),
        cmocka_unit_test(test_days_marker_by_index),
        cmocka_unit_test(test_rule_change_rebuilds),
        cmocka_unit_test(test_locked_left_alone),
        cmocka_unit_test(test_position_survives),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
