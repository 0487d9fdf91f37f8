/*
 * test_tier.c - data tiers in the object layer: a put naming a tier lands
 * its data on that tier's drives (records stay on the hot drives), gets
 * read it back transparently, an unknown tier is refused; transitions move
 * single-part, multipart and inline versions between tiers with identical
 * bytes, leave nothing on the tier they left, keep the old data for a get
 * handle opened before the switch until its close, refuse a version that
 * changed during the copy (no copy left behind), and clean up after a copy
 * that fails half way.  A restore run of a version on an archive tier that
 * fails before it claims the request (its pin stays busy) clears the
 * request: no ongoing restore, no copy, and a new request is accepted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "meta_internal.h"
#include "meta_test_util.h"
#include "strata/tier.h"

struct tenv {
    struct mt_env *e;
    char warm[MT_DRIVES][700];
    const char *wpaths[MT_DRIVES];
    struct strata_set *wset;
    struct strata_tier *wtier;
};

static int warm_files(struct tenv *t)
{
    int n = 0;
    for (int i = 0; i < MT_DRIVES; i++) {
        char p[800];
        snprintf(p, sizeof(p), "%s/data", t->warm[i]);
        n += mt_count_files(p);
        snprintf(p, sizeof(p), "%s/tmp", t->warm[i]);
        n += mt_count_files(p);
    }
    return n;
}

static int setup(void **state)
{
    struct tenv *t = calloc(1, sizeof(*t));
    t->e = mt_setup("tier");
    assert_non_null(t->e);
    for (int i = 0; i < MT_DRIVES; i++) {
        snprintf(t->warm[i], sizeof(t->warm[i]), "%s/w%d", t->e->root, i);
        t->wpaths[i] = t->warm[i];
    }
    struct strata_set_opts so;
    memset(&so, 0, sizeof(so));
    struct strata_errinfo ei;
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(strata_set_open(t->wpaths, MT_DRIVES, &so, &t->wset, &ei), 0);
    assert_int_equal(strata_tier_local_create("warm", &t->wset, 1, &t->wtier), 0);
    strata_meta_close(t->e->m);
    struct strata_meta_opts o;
    memset(&o, 0, sizeof(o));
    o.tiers = &t->wtier;
    o.ntiers = 1;
    o.part_size_min = 1;
    assert_int_equal(strata_meta_open(&t->e->set, 1, &o, &t->e->m, &ei), 0);
    assert_int_equal(mt_bucket(t->e, "b", STRATA_VERSIONING_OFF), 0);
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    struct tenv *t = *state;
    strata_meta_close(t->e->m);
    t->e->m = NULL;
    strata_tier_destroy(t->wtier);
    strata_set_close(t->wset);
    strata_set_close(t->e->set);
    t->e->set = NULL;
    mt_rm_rf(t->e->root);
    free(t->e);
    free(t);
    return 0;
}

static void check_bytes(struct tenv *t, const char *key, const uint8_t *want, size_t len)
{
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(t->e, "b", key, NULL, &got, &gl), 0);
    assert_int_equal(gl, len);
    assert_memory_equal(got, want, len);
    free(got);
}

static void check_where(struct tenv *t, const char *key, const char *tier, const char *cls)
{
    struct strata_obj_info in;
    assert_int_equal(strata_obj_head(t->e->m, "b", key, NULL, &in), 0);
    assert_string_equal(in.tier, tier);
    assert_string_equal(in.storage_class, cls);
    strata_obj_info_fini(&in);
}

static int transition(struct tenv *t, const char *key, const char *tier, const char *cls,
                      struct strata_transition_result *res)
{
    struct strata_transition tr = {.bucket = "b", .key = key, .tier = tier,
                                   .storage_class = cls};
    return strata_obj_transition(t->e->m, &tr, res);
}

static void test_put_on_tier(void **state)
{
    struct tenv *t = *state;
    size_t len = 300 * 1024;
    uint8_t *data = malloc(len);
    mt_fill(data, len, 1);
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = "w";
    o.size = len;
    o.tier = "warm";
    o.storage_class = "STANDARD_IA";
    assert_int_equal(mt_put_opts(t->e, &o, data, len, 64 * 1024, NULL), 0);
    assert_int_equal(warm_files(t), 4);
    assert_int_equal(mt_data_files(t->e), 0); /* records only on the hot drives */
    check_where(t, "w", "warm", "STANDARD_IA");
    check_bytes(t, "w", data, len);
    o.tier = "nowhere";
    o.key = "x";
    assert_int_equal(mt_put_opts(t->e, &o, data, len, 0, NULL), STRATA_EINVAL);
    assert_false(strata_meta_tier_known(t->e->m, "nowhere"));
    assert_true(strata_meta_tier_known(t->e->m, "hot"));
    assert_int_equal(strata_obj_delete(t->e->m, "b", "w", NULL, NULL), 0);
    assert_int_equal(warm_files(t), 0);
    free(data);
}

static void test_transition_single_and_back(void **state)
{
    struct tenv *t = *state;
    size_t len = 3 * 1024 * 1024 + 17;
    uint8_t *data = malloc(len);
    mt_fill(data, len, 2);
    assert_int_equal(mt_put(t->e, "b", "s", data, len, NULL), 0);
    assert_int_equal(mt_data_files(t->e), 4);
    struct strata_transition_result res;
    assert_int_equal(transition(t, "s", "warm", "STANDARD_IA", &res), 0);
    assert_true(res.moved);
    assert_int_equal(res.bytes, len);
    assert_int_equal(mt_data_files(t->e), 0);
    assert_int_equal(warm_files(t), 4);
    check_where(t, "s", "warm", "STANDARD_IA");
    check_bytes(t, "s", data, len);
    /* Already there: nothing moves. */
    assert_int_equal(transition(t, "s", "warm", "STANDARD_IA", &res), 0);
    assert_false(res.moved);
    assert_int_equal(res.bytes, 0);
    /* And back to hot. */
    assert_int_equal(transition(t, "s", "hot", "STANDARD", &res), 0);
    assert_true(res.moved);
    assert_int_equal(warm_files(t), 0);
    assert_int_equal(mt_data_files(t->e), 4);
    check_where(t, "s", "hot", "STANDARD");
    check_bytes(t, "s", data, len);
    assert_int_equal(transition(t, "s", "nowhere", "X", &res), STRATA_EINVAL);
    assert_int_equal(transition(t, "missing", "warm", "WARM", &res), STRATA_ENOTFOUND);
    assert_int_equal(strata_obj_delete(t->e->m, "b", "s", NULL, NULL), 0);
    free(data);
}

static void test_transition_multipart(void **state)
{
    struct tenv *t = *state;
    size_t len = 2 * 1024 * 1024 + 5;
    uint8_t *data = malloc(len);
    mt_fill(data, len, 3);
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = "b";
    mo.key = "m";
    assert_int_equal(mt_mpu_single(t->e->m, &mo, data, len, NULL), 0);
    int hot0 = mt_data_files(t->e);
    assert_int_equal(hot0, 4);
    struct strata_transition_result res;
    assert_int_equal(transition(t, "m", "warm", "WARM", &res), 0);
    assert_int_equal(res.bytes, len);
    assert_int_equal(mt_data_files(t->e), 0);
    assert_int_equal(warm_files(t), 4);
    check_where(t, "m", "warm", "WARM");
    check_bytes(t, "m", data, len);
    /* A part by number reads from the new tier too. */
    struct strata_obj_info in;
    struct strata_get *g;
    assert_int_equal(strata_obj_get_open(t->e->m, "b", "m", NULL, &in, &g), 0);
    struct strata_part_info pi;
    assert_int_equal(strata_obj_get_part(g, 1, &pi), 0);
    assert_int_equal(pi.size, len);
    strata_obj_get_close(g);
    strata_obj_info_fini(&in);
    /* Heal finds every shard where the record says it is. */
    struct strata_heal_stats hs;
    memset(&hs, 0, sizeof(hs));
    assert_int_equal(strata_meta_heal_all(t->e->m, &hs), 0);
    assert_int_equal(hs.shards_healed, 0);
    assert_int_equal(strata_obj_delete(t->e->m, "b", "m", NULL, NULL), 0);
    assert_int_equal(warm_files(t), 0);
    free(data);
}

static void test_transition_inline(void **state)
{
    struct tenv *t = *state;
    uint8_t data[1000];
    mt_fill(data, sizeof(data), 4);
    assert_int_equal(mt_put(t->e, "b", "i", data, sizeof(data), NULL), 0);
    struct strata_transition_result res;
    assert_int_equal(transition(t, "i", "warm", "GLACIER", &res), 0);
    assert_true(res.moved);
    assert_int_equal(res.bytes, 0); /* the bytes live in the records */
    assert_int_equal(warm_files(t), 0);
    check_where(t, "i", "warm", "GLACIER");
    struct strata_obj_info in;
    assert_int_equal(strata_obj_head(t->e->m, "b", "i", NULL, &in), 0);
    assert_true(in.inline_data);
    strata_obj_info_fini(&in);
    check_bytes(t, "i", data, sizeof(data));
    assert_int_equal(strata_obj_delete(t->e->m, "b", "i", NULL, NULL), 0);
}

static void test_reader_keeps_old_data(void **state)
{
    struct tenv *t = *state;
    size_t len = 2 * 1024 * 1024;
    uint8_t *data = malloc(len), *buf = malloc(len);
    mt_fill(data, len, 5);
    assert_int_equal(mt_put(t->e, "b", "r", data, len, NULL), 0);
    struct strata_obj_info in;
    struct strata_get *g;
    assert_int_equal(strata_obj_get_open(t->e->m, "b", "r", NULL, &in, &g), 0);
    strata_obj_info_fini(&in);
    struct strata_transition_result res;
    assert_int_equal(transition(t, "r", "warm", "WARM", &res), 0);
    /* The old copy stays while the handle opened before the switch reads. */
    assert_int_equal(mt_data_files(t->e), 4);
    assert_int_equal(warm_files(t), 4);
    assert_int_equal(strata_obj_get_read(g, 0, buf, len), 0);
    assert_memory_equal(buf, data, len);
    strata_obj_get_close(g);
    assert_int_equal(mt_data_files(t->e), 0);
    check_bytes(t, "r", data, len);
    assert_int_equal(strata_obj_delete(t->e->m, "b", "r", NULL, NULL), 0);
    free(data);
    free(buf);
}

struct race {
    struct tenv *t;
    int calls;
    int fail_at;      /* progress fails at this call (0: never) */
    bool overwrite;   /* overwrite the key on the first call */
};

static int race_progress(void *ud, uint64_t bytes)
{
    (void)bytes;
    struct race *r = ud;
    r->calls++;
    if (r->overwrite && r->calls == 1) {
        uint8_t x[10] = {0};
        assert_int_equal(mt_put(r->t->e, "b", "c", x, sizeof(x), NULL), 0);
    }
    return r->fail_at && r->calls == r->fail_at ? STRATA_EIO : 0;
}

static void test_copy_failures_leave_nothing(void **state)
{
    struct tenv *t = *state;
    size_t len = 3 * 1024 * 1024;
    uint8_t *data = malloc(len);
    mt_fill(data, len, 6);
    assert_int_equal(mt_put(t->e, "b", "c", data, len, NULL), 0);
    /* The copy fails half way: the source stays, the copy goes. */
    struct race r = {.t = t, .fail_at = 2};
    struct strata_transition tr = {.bucket = "b", .key = "c", .tier = "warm",
                                   .storage_class = "WARM", .progress = race_progress, .ud = &r};
    struct strata_transition_result res;
    assert_int_equal(strata_obj_transition(t->e->m, &tr, &res), STRATA_EIO);
    assert_false(res.moved);
    assert_int_equal(warm_files(t), 0);
    assert_int_equal(mt_data_files(t->e), 4);
    check_where(t, "c", "hot", "STANDARD");
    check_bytes(t, "c", data, len);
    /* The key is overwritten during the copy (unversioned: the version
     * copied is gone): no switch, the copy goes, the new object stays. */
    struct race r2 = {.t = t, .overwrite = true};
    tr.ud = &r2;
    assert_int_equal(strata_obj_transition(t->e->m, &tr, &res), STRATA_ENOTFOUND);
    assert_int_equal(warm_files(t), 0);
    assert_int_equal(mt_data_files(t->e), 0); /* the replaced version's data too */
    check_where(t, "c", "hot", "STANDARD");
    uint64_t n = 99;
    assert_int_equal(strata_meta_transition_reclaim(t->e->m, &n), 0);
    assert_int_equal(n, 0); /* nothing left to resolve */
    assert_int_equal(strata_obj_delete(t->e->m, "b", "c", NULL, NULL), 0);
    free(data);
}

/* Close and reopen meta, the warm tier and its set; warm drives named in
 * gone (a NULL-terminated list of indexes, may be NULL) are absent. */
static void reopen_all(struct tenv *t, const int *gone)
{
    strata_meta_close(t->e->m);
    t->e->m = NULL;
    strata_tier_destroy(t->wtier);
    strata_set_close(t->wset);
    const char *paths[MT_DRIVES];
    char away[MT_DRIVES][720];
    for (int i = 0; i < MT_DRIVES; i++) {
        paths[i] = t->warm[i];
        for (const int *g = gone; g && *g >= 0; g++)
            if (*g == i) {
                snprintf(away[i], sizeof(away[i]), "%s.away/none", t->warm[i]);
                paths[i] = away[i];
            }
    }
    struct strata_set_opts so;
    memset(&so, 0, sizeof(so));
    struct strata_errinfo ei;
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(strata_set_open(paths, MT_DRIVES, &so, &t->wset, &ei), 0);
    assert_int_equal(strata_tier_local_create("warm", &t->wset, 1, &t->wtier), 0);
    struct strata_meta_opts o;
    memset(&o, 0, sizeof(o));
    o.tiers = &t->wtier;
    o.ntiers = 1;
    o.part_size_min = 1;
    assert_int_equal(strata_meta_open(&t->e->set, 1, &o, &t->e->m, &ei), 0);
}

/* len bytes (mt_fill of seed) put as b/key on the warm tier: the caller
 * frees them. */
static uint8_t *put_warm(struct tenv *t, const char *key, int seed, size_t len)
{
    uint8_t *data = malloc(len);
    assert_non_null(data);
    mt_fill(data, len, seed);
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = key;
    o.size = len;
    o.tier = "warm";
    assert_int_equal(mt_put_opts(t->e, &o, data, len, 0, NULL), 0);
    return data;
}

/* A wiped warm drive is fresh until a heal pass refilled it, then not (also
 * after a restart); its shards are really there: with two other warm
 * drives gone the object still reads back. */
static void test_tier_fresh_cleared(void **state)
{
    struct tenv *t = *state;
    size_t len = 300 * 1024;
    uint8_t *data = put_warm(t, "w", 3, len);
    mt_rm_rf(t->warm[1]);
    reopen_all(t, NULL);
    assert_true(strata_set_drive_fresh(t->wset, 1));
    check_bytes(t, "w", data, len);
    reopen_all(t, NULL);
    assert_true(strata_set_drive_fresh(t->wset, 1)); /* until healed */
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(t->e->m, &st), 0);
    assert_true(st.shards_healed >= 1);
    assert_false(strata_set_drive_fresh(t->wset, 1));
    reopen_all(t, NULL);
    assert_false(strata_set_drive_fresh(t->wset, 1));
    const int gone[] = {0, 2, -1};
    reopen_all(t, gone);
    check_bytes(t, "w", data, len);
    reopen_all(t, NULL);
    free(data);
}

/* The step hook of test_restore_failed_before_claim: a drop in the
 * version's lock stripe between each read and pin of the run, as deletes
 * of other versions there do, so its pin never holds. */
static void drop_between_read_and_pin(void *ud, int step)
{
    struct tenv *t = ud;
    if (step != STRATA_RESTORE_STEP_READ)
        return;
    struct meta_drop d;
    memset(&d, 0, sizeof(d));
    assert_false(strata_meta__drop_park(t->e->m, 0, "b", "r", &d));
}

static void test_restore_failed_before_claim(void **state)
{
    struct tenv *t = *state;
    struct strata_meta *m = t->e->m;
    assert_int_equal(strata_meta_tier_archive(m, "warm"), 0);
    size_t len = 300 * 1024;
    uint8_t *data = put_warm(t, "r", 4, len);
    struct strata_restore_state st;
    assert_int_equal(strata_obj_restore_request(m, "b", "r", "null", 2, 0, &st), 0);
    assert_true(st.present && st.ongoing);
    strata_meta_set_step_hook(m, drop_between_read_and_pin, t);
    assert_int_equal(strata_obj_restore_run(m, "b", "r", "null", 0, &st), STRATA_EBUSY);
    strata_meta_set_step_hook(m, NULL, NULL);
    /* Nothing is making the copy: no restore is ongoing, none is left on
     * the hot drives, and a new request is accepted (not STRATA_EBUSY, a
     * 409 RestoreAlreadyInProgress) and made. */
    assert_int_equal(strata_obj_restore_get(m, "b", "r", "null", &st), 0);
    assert_false(st.present);
    assert_false(st.ongoing);
    assert_int_equal(mt_data_files(t->e), 0);
    assert_int_equal(strata_obj_restore_request(m, "b", "r", "null", 2, 0, &st), 0);
    assert_true(st.present && st.ongoing);
    assert_int_equal(strata_obj_restore_run(m, "b", "r", "null", 0, &st), 0);
    assert_true(st.present && !st.ongoing && st.expiry_ms > 0);
    assert_int_equal(strata_obj_restore_get(m, "b", "r", "null", &st), 0);
    assert_true(st.present && !st.ongoing);
    assert_int_equal(mt_data_files(t->e), 4); /* the copy, 2+2 shards */
    check_bytes(t, "r", data, len);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_put_on_tier, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transition_single_and_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transition_multipart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transition_inline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reader_keeps_old_data, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_failures_leave_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tier_fresh_cleared, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore_failed_before_claim, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
