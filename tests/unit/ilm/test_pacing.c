/*
 * test_pacing.c - the scanner's budgets and pace (ilm/budget.c,
 * ilm/scanner.c): concurrent spenders of one budget keep its one rate, a
 * stop ends a wait at once, an unbounded budget never waits; and a full
 * pass whose start waited for a long due drain (--ilm-due-rate) still walks
 * at its own rate afterwards instead of catching up the drain's time at
 * full speed; and that the full heal a pass runs keeps --heal-rate (a
 * wiped drive's keys take at least keys / rate seconds) and still heals
 * everything.  Only lower bounds on times: a slow machine cannot fail it.
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

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One pass of an engine made with o, its stats in *st; its length in ms. */
static int64_t timed_pass(const struct strata_ilm_opts *o, struct strata_ilm_stats *st)
{
    struct strata_ilm *ilm = NULL;
    assert_int_equal(strata_ilm_create(o, &ilm), 0);
    int64_t t0 = mono_ms();
    assert_int_equal(strata_ilm_run_once(ilm, st), 0);
    int64_t took = mono_ms() - t0;
    strata_ilm_destroy(ilm);
    return took;
}

struct spender {
    struct strata_ilm_budget *b;
    atomic_bool stop;
};

static void *spend(void *arg)
{
    struct spender *s = arg;
    for (int i = 0; i < 30; i++)
        strata_ilm__budget_take(s->b, 1, &s->stop);
    return NULL;
}

static void test_budget_shared(void **state)
{
    (void)state;
    /* 4 threads x 30 units at 100/s: at least (120 - 10 of burst) / 100 s
     * together; one thread alone would be a quarter of that. */
    struct strata_ilm_budget b;
    strata_ilm__budget_init(&b, 100);
    struct spender s = {.b = &b};
    atomic_init(&s.stop, false);
    pthread_t th[4];
    int64_t t0 = mono_ms();
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, spend, &s), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_true(mono_ms() - t0 >= 1050);
    /* A stop ends the wait at once. */
    atomic_store(&s.stop, true);
    t0 = mono_ms();
    assert_true(strata_ilm__budget_take(&b, 1000, &s.stop));
    assert_true(strata_ilm__budget_take(&b, 1000, &s.stop));
    assert_true(mono_ms() - t0 < 1000);
    /* Unbounded: never waits. */
    strata_ilm__budget_fini(&b);
    strata_ilm__budget_init(&b, 0);
    atomic_store(&s.stop, false);
    assert_false(strata_ilm__budget_take(&b, 1u << 30, &s.stop));
    strata_ilm__budget_fini(&b);
}

static int no_tags(const uint8_t *raw, size_t len, struct strata_kv *out, size_t max, char *buf,
                   size_t buf_len)
{
    (void)raw, (void)len, (void)out, (void)max, (void)buf, (void)buf_len;
    return 0;
}

static void test_pass_pace_after_drain(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("pace");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "p", 0), 0);
    const char *doc = "<LifecycleConfiguration><Rule><ID>d</ID><Filter><Prefix>due/</Prefix>"
                      "</Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration>"
                      "</Rule></LifecycleConfiguration>";
    assert_int_equal(strata_meta_bucket_config_put(e->m, "p", "lifecycle", doc, strlen(doc)), 0);
    for (int i = 0; i < 20; i++) {
        char k[32];
        snprintf(k, sizeof(k), "due/%02d", i);
        assert_int_equal(mt_put(e, "p", k, "x", 1, NULL), 0);
    }
    for (int i = 0; i < 200; i++) {
        char k[32];
        snprintf(k, sizeof(k), "k%04d", i);
        assert_int_equal(mt_put(e, "p", k, "x", 1, NULL), 0);
    }
    struct timespec ts = {0, 400 * 1000000}; /* 4 lifecycle days: all 20 due */
    nanosleep(&ts, NULL);
    /* The pass's first drain expires 20 keys at 10/s (>= 1.8 s with the
     * budget's 100 ms credit), then walks 200 versions at 100/s (>= 2 s of
     * its own).  Charged to the walk, the drain's time let it run the 200
     * at full speed: about 2 s in all. */
    struct strata_ilm_opts o = {.meta = e->m, .sets = &e->set, .nsets = 1, .day_ms = 100,
                                .interval_s = 1, .rate_objs = 100, .due_rate = 10,
                                .tags_decode_cb = no_tags};
    struct strata_ilm_stats st;
    int64_t took = timed_pass(&o, &st);
    assert_int_equal(st.expired, 20);
    assert_int_equal(st.errors, 0);
    assert_true(st.scanned >= 200);
    print_message("pass with its drain: %lld ms\n", (long long)took);
    assert_true(took >= 3500);
    mt_teardown(e);
}

#define HEAL_OBJS 100
#define HEAL_BIG (200 * 1024)

static size_t heal_size(int i)
{
    return i % 10 == 0 ? HEAL_BIG : 1000 + (size_t)i;
}

static void test_full_heal_paced(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("healpace");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "h", 0), 0);
    uint8_t *d = malloc(HEAL_BIG);
    for (int i = 0; i < HEAL_OBJS; i++) {
        char k[32];
        snprintf(k, sizeof(k), "k%03d", i);
        mt_fill(d, heal_size(i), (uint32_t)i + 1);
        assert_int_equal(mt_put(e, "h", k, d, heal_size(i), NULL), 0);
    }
    /* Drive 0 replaced by an empty one: every record key is healed. */
    mt_close(e);
    mt_rm_rf(e->drive[0]);
    mkdir(e->drive[0], 0755);
    assert_int_equal(mt_open(e), 0);
    assert_true(strata_set_drive_fresh(e->set, 0));
    /* At least 2 keys per object (its version record and its index entry)
     * at 100 keys/s: >= (200 - 10 of credit - 16 of the last chunk) / 100
     * s.  Unpaced, the same heal takes a few ms here. */
    struct strata_ilm_opts o = {.meta = e->m, .sets = &e->set, .nsets = 1, .interval_s = 1,
                                .heal_interval_s = 3600, .heal_rate = 100,
                                .tags_decode_cb = no_tags};
    struct strata_ilm_stats st;
    int64_t took = timed_pass(&o, &st);
    print_message("pass with a full heal of %d objects at 100 keys/s: %lld ms\n", HEAL_OBJS,
                  (long long)took);
    assert_true(took >= 1700);
    assert_int_equal(st.errors, 0);
    assert_true(st.healed >= HEAL_OBJS);
    assert_false(strata_set_drive_fresh(e->set, 0)); /* the heal was whole */
    /* Everything healed: with two other drives gone, drive 0 carries its
     * share of every object. */
    mt_close(e);
    mt_rm_rf(e->drive[1]);
    mt_rm_rf(e->drive[2]);
    assert_int_equal(mt_open(e), 0);
    for (int i = 0; i < HEAL_OBJS; i++) {
        char k[32];
        snprintf(k, sizeof(k), "k%03d", i);
        mt_fill(d, heal_size(i), (uint32_t)i + 1);
        uint8_t *got = NULL;
        size_t gl = 0;
        assert_int_equal(mt_get(e, "h", k, NULL, &got, &gl), 0);
        assert_int_equal(gl, heal_size(i));
        assert_memory_equal(got, d, gl);
        free(got);
    }
    free(d);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget_shared),
        cmocka_unit_test(test_pass_pace_after_drain),
        cmocka_unit_test(test_full_heal_paced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
