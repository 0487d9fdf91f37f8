/*
 * test_due_transition.c - transitions found through the version-time
 * index (ilm/due.c), never by a full pass: a meta with two more tiers
 * ("warm" serves STANDARD_IA, "cold" GLACIER), 100 ms lifecycle days, and
 * drains called directly (strata_ilm__due_tick).  Checks that a
 * Transition moves current versions through both stages with identical
 * bytes, leaves other prefixes and colder versions alone (the waterfall),
 * moves a locked version and keeps its lock; that a
 * NoncurrentVersionTransition moves the noncurrent version only; that a
 * rule whose class changed is drained again from the start; that an
 * expiration due in the same tick as a slow move is carried out while the
 * move is still copying (the started engine: expirations on the scanner
 * thread, moves on the mover); that a move refused because a reader still
 * holds the previous copy (EBUSY: its intent is parked on the reader) is
 * retried once the reader is gone, without a full pass.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdatomic.h>
#include <time.h>

#include <cmocka.h>

#include "ilm_internal.h"
#include "meta/meta_test_util.h"
#include "strata/tier.h"

#define DAY_MS 100
#define DEADLINE_MS 30000
#define SIZE (300 * 1024)

struct tenv {
    struct mt_env *e;
    char dirs[2][MT_DRIVES][700];
    struct strata_set *sets[2];
    struct strata_tier *tiers[2];
    struct strata_class_map map;
};

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

static int setup(void **state)
{
    struct tenv *t = calloc(1, sizeof(*t));
    t->e = mt_setup("due-tr");
    assert_non_null(t->e);
    const char *names[2] = {"warm", "cold"};
    for (int k = 0; k < 2; k++) {
        const char *paths[MT_DRIVES];
        for (int i = 0; i < MT_DRIVES; i++) {
            snprintf(t->dirs[k][i], sizeof(t->dirs[k][i]), "%s/%s%d", t->e->root, names[k], i);
            paths[i] = t->dirs[k][i];
        }
        struct strata_set_opts so;
        memset(&so, 0, sizeof(so));
        struct strata_errinfo ei;
        memset(&ei, 0, sizeof(ei));
        assert_int_equal(strata_set_open(paths, MT_DRIVES, &so, &t->sets[k], &ei), 0);
        assert_int_equal(strata_tier_local_create(names[k], &t->sets[k], 1, &t->tiers[k]), 0);
    }
    strata_meta_close(t->e->m);
    struct strata_meta_opts o;
    memset(&o, 0, sizeof(o));
    o.tiers = t->tiers;
    o.ntiers = 2;
    struct strata_errinfo ei;
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(strata_meta_open(&t->e->set, 1, &o, &t->e->m, &ei), 0);
    strata_class_map_default(&t->map);
    assert_int_equal(strata_class_map_set(&t->map, "GLACIER:cold"), 0);
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    struct tenv *t = *state;
    strata_meta_close(t->e->m);
    t->e->m = NULL;
    for (int k = 0; k < 2; k++) {
        strata_tier_destroy(t->tiers[k]);
        strata_set_close(t->sets[k]);
    }
    strata_set_close(t->e->set);
    t->e->set = NULL;
    mt_rm_rf(t->e->root);
    free(t->e);
    free(t);
    return 0;
}

static struct strata_ilm *engine(struct tenv *t)
{
    struct strata_ilm_opts o = {.meta = t->e->m, .sets = &t->e->set, .nsets = 1,
                                .day_ms = DAY_MS, .interval_s = 1, .tags_decode_cb = no_tags,
                                .classes = &t->map};
    struct strata_ilm *ilm = NULL;
    assert_int_equal(strata_ilm_create(&o, &ilm), 0);
    return ilm;
}

static void lifecycle(struct tenv *t, const char *bucket, const char *rules)
{
    char doc[2048];
    int n = snprintf(doc, sizeof(doc), "<LifecycleConfiguration>%s</LifecycleConfiguration>",
                     rules);
    assert_int_equal(strata_meta_bucket_config_put(t->e->m, bucket, "lifecycle", doc, (size_t)n),
                     0);
}

static uint8_t data[SIZE];

static void put(struct tenv *t, const char *bucket, const char *key, struct strata_put_opts *po,
                struct strata_obj_info *out)
{
    struct strata_put_opts o;
    if (!po) {
        memset(&o, 0, sizeof(o));
        po = &o;
    }
    po->bucket = bucket;
    po->key = key;
    po->size = SIZE;
    assert_int_equal(mt_put_opts(t->e, po, data, SIZE, 0, out), 0);
}

/* The class of bucket/key (version vid, NULL: current); "" when absent. */
static const char *class_of(struct tenv *t, const char *bucket, const char *key, const char *vid)
{
    static char cls[32];
    struct strata_obj_info in;
    memset(&in, 0, sizeof(in));
    cls[0] = '\0';
    if (strata_obj_head(t->e->m, bucket, key, vid, &in) == 0)
        snprintf(cls, sizeof(cls), "%s", in.storage_class);
    strata_obj_info_fini(&in);
    return cls;
}

static void check_bytes(struct tenv *t, const char *bucket, const char *key, const char *vid)
{
    uint8_t *got = NULL;
    size_t len = 0;
    assert_int_equal(mt_get(t->e, bucket, key, vid, &got, &len), 0);
    assert_int_equal(len, SIZE);
    assert_memory_equal(got, data, SIZE);
    free(got);
}

typedef bool (*pred_fn)(struct tenv *);

/* Drain until pred or the deadline (a slow machine only waits longer). */
static struct strata_ilm_stats drain_until(struct strata_ilm *ilm, struct tenv *t, pred_fn pred)
{
    struct strata_ilm_stats sum;
    memset(&sum, 0, sizeof(sum));
    for (int waited = 0; !pred(t); waited += 20) {
        assert_true(waited < DEADLINE_MS);
        sleep_ms(20);
        strata_ilm__due_tick(ilm, true, &sum);
    }
    return sum;
}

static bool all_in(struct tenv *t, const char *cls)
{
    for (int i = 0; i < 4; i++) {
        char k[32];
        snprintf(k, sizeof(k), "mv/%d", i);
        if (strcmp(class_of(t, "b", k, NULL), cls) != 0)
            return false;
    }
    return strcmp(class_of(t, "b", "lk", NULL), cls) == 0;
}

/* Stage one reached: a slow machine may have seen stage two due first
 * (the coldest stage due wins, as on AWS), so GLACIER counts too. */
static bool all_moved(struct tenv *t)
{
    for (int i = 0; i < 5; i++) {
        char k[32];
        snprintf(k, sizeof(k), "mv/%d", i);
        if (strcmp(class_of(t, "b", i < 4 ? k : "lk", NULL), "STANDARD") == 0)
            return false;
    }
    return true;
}
static bool all_cold(struct tenv *t) { return all_in(t, "GLACIER"); }

static void test_two_stages_by_index(void **state)
{
    struct tenv *t = *state;
    mt_fill(data, SIZE, 7);
    struct strata_bucket_info b;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "b");
    b.versioning = STRATA_VERSIONING_ENABLED;
    b.object_lock = true;
    assert_int_equal(strata_meta_bucket_create(t->e->m, &b), 0);
    /* Stage one after 2 days, stage two after 30 (3 s): the drains must
     * find both, the second one for versions already on warm. */
    lifecycle(t, "b",
              "<Rule><ID>mv</ID><Filter/><Status>Enabled</Status>"
              "<Transition><Days>2</Days><StorageClass>STANDARD_IA</StorageClass></Transition>"
              "<Transition><Days>30</Days><StorageClass>GLACIER</StorageClass></Transition>"
              "</Rule>");
    for (int i = 0; i < 4; i++) {
        char k[32];
        snprintf(k, sizeof(k), "mv/%d", i);
        put(t, "b", k, NULL, NULL);
    }
    struct strata_put_opts lo;
    memset(&lo, 0, sizeof(lo));
    lo.lock.mode = STRATA_LOCK_COMPLIANCE;
    lo.lock.until_ms = strata_meta_lock_now_ms(t->e->m) + 3600000;
    put(t, "b", "lk", &lo, NULL);
    /* Already colder than the first stage: the waterfall never moves it back. */
    put(t, "b", "frozen", NULL, NULL);
    struct strata_transition tr = {.bucket = "b", .key = "frozen", .tier = "cold",
                                   .storage_class = "GLACIER"};
    struct strata_transition_result res;
    assert_int_equal(strata_obj_transition(t->e->m, &tr, &res), 0);

    struct strata_ilm *ilm = engine(t);
    struct strata_ilm_stats st = drain_until(ilm, t, all_moved);
    assert_int_equal(st.passes, 0); /* no full pass ran */
    assert_int_equal(st.errors, 0);
    assert_int_equal(st.transitioned, 5);
    assert_int_equal(st.bytes_moved, 5ull * SIZE);
    assert_string_equal(class_of(t, "b", "frozen", NULL), "GLACIER");
    check_bytes(t, "b", "mv/0", NULL);

    struct strata_ilm_stats st2 = drain_until(ilm, t, all_cold);
    assert_int_equal(st2.errors, 0);
    assert_int_equal(st2.passes, 0);
    assert_true(st2.transitioned <= 5); /* those still on warm */
    assert_int_equal(st2.bytes_moved, st2.transitioned * SIZE);
    assert_string_equal(class_of(t, "b", "frozen", NULL), "GLACIER");
    for (int i = 0; i < 4; i++) {
        char k[32];
        snprintf(k, sizeof(k), "mv/%d", i);
        check_bytes(t, "b", k, NULL);
    }
    /* The locked version moved and keeps its lock: a delete is refused. */
    struct strata_obj_info in;
    memset(&in, 0, sizeof(in));
    assert_int_equal(strata_obj_head(t->e->m, "b", "lk", NULL, &in), 0);
    assert_int_equal(in.lock.mode, STRATA_LOCK_COMPLIANCE);
    assert_int_equal(in.lock.until_ms, lo.lock.until_ms);
    assert_string_equal(in.tier, "cold");
    assert_int_equal(strata_obj_delete(t->e->m, "b", "lk", in.version_id, NULL), STRATA_ELOCKED);
    strata_obj_info_fini(&in);
    check_bytes(t, "b", "lk", NULL);
    /* Drained (once more for "frozen", whose stage-two entry may have come
     * due after the others moved): nothing more to visit, nothing moves. */
    sleep_ms(3 * DAY_MS);
    memset(&st, 0, sizeof(st));
    strata_ilm__due_tick(ilm, true, &st);
    assert_int_equal(st.transitioned, 0);
    sleep_ms(3 * DAY_MS);
    memset(&st, 0, sizeof(st));
    strata_ilm__due_tick(ilm, true, &st);
    assert_int_equal(st.due_scanned, 0);
    assert_int_equal(st.transitioned, 0);
    strata_ilm_destroy(ilm);
}

static char nc_old[STRATA_VERSION_ID_MAX + 1];

static bool nc_moved(struct tenv *t)
{
    return strcmp(class_of(t, "v", "k", nc_old), "STANDARD_IA") == 0;
}

static void test_noncurrent_by_index(void **state)
{
    struct tenv *t = *state;
    mt_fill(data, SIZE, 8);
    assert_int_equal(mt_bucket(t->e, "v", STRATA_VERSIONING_ENABLED), 0);
    lifecycle(t, "v",
              "<Rule><ID>nc</ID><Filter/><Status>Enabled</Status><NoncurrentVersionTransition>"
              "<NoncurrentDays>1</NoncurrentDays><StorageClass>STANDARD_IA</StorageClass>"
              "</NoncurrentVersionTransition></Rule>");
    struct strata_obj_info a, c;
    memset(&a, 0, sizeof(a));
    memset(&c, 0, sizeof(c));
    put(t, "v", "k", NULL, &a);
    put(t, "v", "k", NULL, &c);
    snprintf(nc_old, sizeof(nc_old), "%s", a.version_id);
    struct strata_ilm *ilm = engine(t);
    struct strata_ilm_stats st = drain_until(ilm, t, nc_moved);
    assert_int_equal(st.transitioned, 1);
    assert_int_equal(st.passes, 0);
    assert_string_equal(class_of(t, "v", "k", c.version_id), "STANDARD"); /* current stays */
    check_bytes(t, "v", "k", nc_old);
    strata_obj_info_fini(&a);
    strata_obj_info_fini(&c);
    strata_ilm_destroy(ilm);
}

static bool r_warm(struct tenv *t) { return strcmp(class_of(t, "r", "k", NULL), "STANDARD_IA") == 0; }
static bool r_cold(struct tenv *t) { return strcmp(class_of(t, "r", "k", NULL), "GLACIER") == 0; }

static void test_class_change_restarts(void **state)
{
    struct tenv *t = *state;
    mt_fill(data, SIZE, 9);
    assert_int_equal(mt_bucket(t->e, "r", STRATA_VERSIONING_OFF), 0);
    lifecycle(t, "r",
              "<Rule><ID>x</ID><Filter/><Status>Enabled</Status><Transition><Days>1</Days>"
              "<StorageClass>STANDARD_IA</StorageClass></Transition></Rule>");
    put(t, "r", "k", NULL, NULL);
    struct strata_ilm *ilm = engine(t);
    drain_until(ilm, t, r_warm);
    /* Same rule id and days, another class: a new cursor, drained from the
     * oldest entry, so the version already behind the old cursor moves. */
    lifecycle(t, "r",
              "<Rule><ID>x</ID><Filter/><Status>Enabled</Status><Transition><Days>1</Days>"
              "<StorageClass>GLACIER</StorageClass></Transition></Rule>");
    struct strata_ilm_stats st = drain_until(ilm, t, r_cold);
    assert_int_equal(st.transitioned, 1);
    assert_int_equal(st.passes, 0);
    check_bytes(t, "r", "k", NULL);
    strata_ilm_destroy(ilm);
}

/* ---- an expiration does not wait behind a slow move ------------------------ */

#define BIG (3u << 20)
static uint8_t big[BIG];

struct order {
    struct tenv *t;
    atomic_int hooked;       /* the move reached its first copied chunk */
    atomic_bool gone_inside; /* z/k was expired while the move was copying */
};
static struct order ord;

static bool expired_z(struct tenv *t)
{
    struct strata_obj_info in;
    memset(&in, 0, sizeof(in));
    int rc = strata_obj_head(t->e->m, "x", "z/k", NULL, &in);
    strata_obj_info_fini(&in);
    return rc == STRATA_ENOTFOUND;
}

/* Runs on the thread that moves a/big, inside strata_obj_transition, after
 * its first MiB: the move is in progress until this returns.  Waits for
 * the expiration (a generous deadline: only an expiration stuck behind
 * this very move can miss it). */
static void step_cb(void *ud, int step)
{
    struct order *o = ud;
    if (step != STRATA_TR_STEP_COPYING || atomic_fetch_add(&o->hooked, 1) != 0)
        return;
    for (int waited = 0; waited < 20000; waited += 20) {
        if (expired_z(o->t)) {
            atomic_store(&o->gone_inside, true);
            return;
        }
        sleep_ms(20);
    }
}

static bool a_moved(struct tenv *t) { return strcmp(class_of(t, "x", "a/big", NULL), "STANDARD_IA") == 0; }

static void test_expiry_not_behind_move(void **state)
{
    struct tenv *t = *state;
    mt_fill(big, BIG, 11);
    assert_int_equal(mt_bucket(t->e, "x", STRATA_VERSIONING_OFF), 0);
    /* The move's rule first, and its key first in the listing: whoever
     * finds both (a drain or the pass) meets the move first. */
    lifecycle(t, "x",
              "<Rule><ID>mv</ID><Filter><Prefix>a/</Prefix></Filter><Status>Enabled</Status>"
              "<Transition><Days>1</Days><StorageClass>STANDARD_IA</StorageClass></Transition>"
              "</Rule><Rule><ID>ex</ID><Filter><Prefix>z/</Prefix></Filter>"
              "<Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>");
    struct strata_put_opts po;
    memset(&po, 0, sizeof(po));
    po.bucket = "x";
    po.key = "a/big";
    po.size = BIG;
    assert_int_equal(mt_put_opts(t->e, &po, big, BIG, 0, NULL), 0);
    assert_int_equal(mt_put(t->e, "x", "z/k", "tiny", 4, NULL), 0);
    ord.t = t;
    atomic_init(&ord.hooked, 0);
    atomic_init(&ord.gone_inside, false);
    strata_meta_set_step_hook(t->e->m, step_cb, &ord);
    /* 1 MiB/s: the 3 MiB copy alone lasts about 3 s; 1 s lifecycle days,
     * passes an hour apart (only the one at start runs). */
    struct strata_ilm_opts o = {.meta = t->e->m, .sets = &t->e->set, .nsets = 1,
                                .day_ms = 1000, .interval_s = 3600, .drain_ms = 100,
                                .tags_decode_cb = no_tags, .classes = &t->map, .move_mbps = 1};
    struct strata_ilm *ilm = NULL;
    assert_int_equal(strata_ilm_create(&o, &ilm), 0);
    assert_int_equal(strata_ilm_start(ilm), 0);
    for (int waited = 0; !a_moved(t); waited += 50) {
        assert_true(waited < DEADLINE_MS * 2);
        sleep_ms(50);
    }
    strata_ilm_stop(ilm, true);
    assert_int_equal(atomic_load(&ord.hooked), 1);
    assert_true(atomic_load(&ord.gone_inside)); /* expired while the move was copying */
    struct strata_ilm_stats tot;
    strata_ilm_stats_get(ilm, NULL, &tot);
    assert_int_equal(tot.expired, 1);
    assert_int_equal(tot.transitioned, 1);
    assert_int_equal(tot.errors, 0);
    uint8_t *got = NULL;
    size_t len = 0;
    assert_int_equal(mt_get(t->e, "x", "a/big", NULL, &got, &len), 0);
    assert_int_equal(len, BIG);
    assert_memory_equal(got, big, BIG);
    free(got);
    strata_meta_set_step_hook(t->e->m, NULL, NULL);
    strata_ilm_destroy(ilm);
}

/* ---- a move refused while a reader holds the old copy is retried ------------ */

static bool q_warm(struct tenv *t) { return strcmp(class_of(t, "q", "k", NULL), "STANDARD_IA") == 0; }
static bool q_cold(struct tenv *t) { return strcmp(class_of(t, "q", "k", NULL), "GLACIER") == 0; }

static void test_busy_move_retried(void **state)
{
    struct tenv *t = *state;
    mt_fill(data, SIZE, 12);
    assert_int_equal(mt_bucket(t->e, "q", STRATA_VERSIONING_OFF), 0);
    /* Stage two 2 s after stage one (100 ms days). */
    lifecycle(t, "q",
              "<Rule><ID>q</ID><Filter/><Status>Enabled</Status>"
              "<Transition><Days>1</Days><StorageClass>STANDARD_IA</StorageClass></Transition>"
              "<Transition><Days>20</Days><StorageClass>GLACIER</StorageClass></Transition>"
              "</Rule>");
    put(t, "q", "k", NULL, NULL);
    /* A reader of the hot copy: stage one's move switches the record, and
     * the removal of the hot copy (with the intent) waits for this close. */
    struct strata_obj_info in;
    memset(&in, 0, sizeof(in));
    struct strata_get *g = NULL;
    assert_int_equal(strata_obj_get_open(t->e->m, "q", "k", NULL, &in, &g), 0);
    struct strata_ilm *ilm = engine(t);
    struct strata_ilm_stats st = drain_until(ilm, t, q_warm);
    assert_int_equal(st.transitioned, 1);
    /* Stage two comes due and is drained while the intent is still
     * pending: meta refuses the move (EBUSY). */
    sleep_ms(25 * DAY_MS);
    for (int i = 0; i < 3; i++) {
        strata_ilm__due_tick(ilm, true, &st);
        sleep_ms(DAY_MS);
    }
    assert_string_equal(class_of(t, "q", "k", NULL), "STANDARD_IA");
    assert_int_equal(strata_ilm__retry_pending(ilm), 1); /* refused, waiting its turn */
    struct strata_ilm_progress pr;
    strata_ilm_progress_get(ilm, &pr);
    assert_int_equal(pr.move_retries, 1); /* what status and /metrics show */
    /* The reader still reads the old bytes to the end; its close resolves
     * the intent. */
    uint8_t *buf = malloc(SIZE);
    assert_int_equal(strata_obj_get_read(g, 0, buf, SIZE), 0);
    assert_memory_equal(buf, data, SIZE);
    free(buf);
    strata_obj_get_close(g);
    strata_obj_info_fini(&in);
    /* No full pass: the refused move is retried by the drains. */
    st = drain_until(ilm, t, q_cold);
    assert_int_equal(st.passes, 0);
    assert_int_equal(st.transitioned, 1);
    strata_ilm_progress_get(ilm, &pr);
    assert_int_equal(pr.move_retries, 0);
    assert_int_equal(pr.move_backlog, 0);
    struct strata_ilm_stats tot;
    strata_ilm_stats_get(ilm, NULL, &tot);
    assert_int_equal(tot.passes, 0);
    check_bytes(t, "q", "k", NULL);
    strata_ilm_destroy(ilm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_two_stages_by_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_noncurrent_by_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_class_change_restarts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expiry_not_behind_move, setup, teardown),
        cmocka_unit_test_setup_teardown(test_busy_move_retried, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
