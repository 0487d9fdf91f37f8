/*
 * test_lock_clock.c - the retention clock: it starts at the wall clock on
 * first open and advances with it; its high-water mark is persisted on
 * every drive at open, by the thread and at close; a mark ahead of the wall
 * clock (on the write quorum of drives) is never undercut, while a mark
 * forged on fewer drives moves nothing; a wall clock far past the mark at
 * open is logged at WARN through the injected logger and recorded as a
 * ClockJump in the audit log.  Steps of the wall clock while running are
 * tested under libfaketime by tests/integration/test_lock_clock.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <time.h>

#include "meta_internal.h"
#include "meta_test_util.h"

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct logcap {
    int warns;
    char last[1024];
};

static void log_cb(int level, const char *module, const char *msg, void *ud)
{
    struct logcap *lc = ud;
    if (level <= STRATA_LOG_WARN) {
        lc->warns++;
        snprintf(lc->last, sizeof(lc->last), "%s", msg);
    }
}

/* mt_open with a logger. */
static int open_logged(struct mt_env *e, struct logcap *lc)
{
    struct strata_set_opts so;
    memset(&so, 0, sizeof(so));
    struct strata_errinfo ei;
    memset(&ei, 0, sizeof(ei));
    int rc = strata_set_open(e->paths, MT_DRIVES, &so, &e->set, &ei);
    if (rc)
        return rc;
    struct strata_meta_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.log.cb = log_cb;
    mo.log.ud = lc;
    mo.log.level = STRATA_LOG_DEBUG;
    memset(lc, 0, sizeof(*lc));
    rc = strata_meta_open(&e->set, 1, &mo, &e->m, &ei);
    if (rc) {
        strata_set_close(e->set);
        e->set = NULL;
    }
    return rc;
}

static int64_t mark_of(const struct mt_env *e, int d)
{
    char p[700];
    snprintf(p, sizeof(p), "%s/lock-clock", e->drive[d]);
    FILE *f = fopen(p, "r");
    if (!f)
        return -1;
    long long ms = -1;
    char buf[256] = "";
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = 0;
    fclose(f);
    const char *v = strstr(buf, "\"lock_ms\":");
    if (v)
        ms = strtoll(v + 10, NULL, 10);
    return ms;
}

static void mark_set(const struct mt_env *e, int d, int64_t ms)
{
    char p[700];
    snprintf(p, sizeof(p), "%s/lock-clock", e->drive[d]);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fprintf(f, "{\"format\":1,\"lock_ms\":%lld,\"wall_ms\":%lld}\n", (long long)ms,
            (long long)ms);
    fclose(f);
}

static int count_in_log(const struct mt_env *e, int d, const char *needle)
{
    char p[700];
    snprintf(p, sizeof(p), "%s/audit.log", e->drive[d]);
    FILE *f = fopen(p, "r");
    if (!f)
        return 0;
    int n = 0;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0)
        n += strstr(line, needle) != NULL;
    free(line);
    fclose(f);
    return n;
}

static void test_first_open_follows_wall(void **state)
{
    struct mt_env *e = mt_setup("clock-first");
    assert_non_null(e);
    int64_t w0 = wall_ms();
    int64_t l0 = strata_meta_lock_now_ms(e->m);
    assert_true(l0 >= w0 - 2000 && l0 <= w0 + 2000);
    /* Persisted at open, on every drive. */
    for (int d = 0; d < MT_DRIVES; d++) {
        int64_t mk = mark_of(e, d);
        assert_true(mk > 0 && mk <= strata_meta_lock_now_ms(e->m));
    }
    struct timespec ts = {0, 50 * 1000000};
    nanosleep(&ts, NULL);
    int64_t l1 = strata_meta_lock_now_ms(e->m);
    assert_true(l1 >= l0 + 40 && l1 < l0 + 5000);
    /* No event for a first start. */
    assert_int_equal(count_in_log(e, 0, "ClockJump"), 0);
    mt_teardown(e);
}

static void test_mark_persisted_across_reopen(void **state)
{
    struct mt_env *e = mt_setup("clock-persist");
    assert_non_null(e);
    /* The thread persists the mark every STRATA_LOCK_CLOCK_PERSIST_MS. */
    int64_t first = mark_of(e, 0);
    /* Poll (a loaded machine may run the thread late) for up to 20 s. */
    for (int d = 0; d < MT_DRIVES; d++) {
        int waited = 0;
        while (mark_of(e, d) < first + STRATA_LOCK_CLOCK_PERSIST_MS - 100 && waited++ < 200) {
            struct timespec ts = {0, 100 * 1000000};
            nanosleep(&ts, NULL);
        }
        assert_true(mark_of(e, d) >= first + STRATA_LOCK_CLOCK_PERSIST_MS - 100);
    }
    int64_t before = strata_meta_lock_now_ms(e->m);
    mt_close(e);
    for (int d = 0; d < MT_DRIVES; d++)
        assert_true(mark_of(e, d) >= before);
    assert_int_equal(mt_open(e), 0);
    assert_true(strata_meta_lock_now_ms(e->m) >= before);
    mt_teardown(e);
}

/* A previous run whose clock was ahead (or a clock set back across the
 * restart): the lock clock continues from the mark, never below it. */
static void test_never_below_mark(void **state)
{
    struct mt_env *e = mt_setup("clock-ahead");
    assert_non_null(e);
    mt_close(e);
    int64_t ahead = wall_ms() + 86400000; /* one day */
    for (int d = 0; d < MT_DRIVES; d++)
        mark_set(e, d, ahead);
    struct logcap lc;
    assert_int_equal(open_logged(e, &lc), 0);
    int64_t l = strata_meta_lock_now_ms(e->m);
    assert_true(l >= ahead && l < ahead + 5000);
    assert_true(lc.warns >= 1);
    assert_non_null(strstr(lc.last, "behind the last persisted lock clock"));
    for (int d = 0; d < MT_DRIVES; d++)
        assert_int_equal(count_in_log(e, d, "\"action\":\"ClockJump\""), 1);
    for (int i = 0; i < 1000; i++) {
        int64_t x = strata_meta_lock_now_ms(e->m);
        assert_true(x >= l);
        l = x;
    }
    /* The marks never go back either, at close. */
    mt_close(e);
    for (int d = 0; d < MT_DRIVES; d++)
        assert_true(mark_of(e, d) >= ahead);
    mt_rm_rf(e->root);
    free(e);
}

/* A mark on fewer drives than the write quorum (3 of 4) moves nothing:
 * one forged or corrupt file cannot push the clock forward. */
static void test_minority_mark_ignored(void **state)
{
    struct mt_env *e = mt_setup("clock-minority");
    assert_non_null(e);
    mt_close(e);
    int64_t far = wall_ms() + 10LL * 365 * 86400000;
    mark_set(e, 0, far);
    mark_set(e, 1, far);
    assert_int_equal(mt_open(e), 0);
    int64_t l = strata_meta_lock_now_ms(e->m);
    assert_true(l < wall_ms() + 2000);
    mt_close(e);
    /* With the write quorum of drives holding it, it counts. */
    mark_set(e, 0, far);
    mark_set(e, 1, far);
    mark_set(e, 2, far);
    assert_int_equal(mt_open(e), 0);
    assert_true(strata_meta_lock_now_ms(e->m) >= far);
    mt_teardown(e);
}

/* The wall clock far past the mark at open: logged loudly and audited. */
static void test_jump_at_open_recorded(void **state)
{
    struct mt_env *e = mt_setup("clock-jump");
    assert_non_null(e);
    mt_close(e);
    int64_t old = wall_ms() - 2 * 3600 * 1000;
    for (int d = 0; d < MT_DRIVES; d++)
        mark_set(e, d, old);
    struct logcap lc;
    assert_int_equal(open_logged(e, &lc), 0);
    int64_t l = strata_meta_lock_now_ms(e->m);
    assert_true(l >= wall_ms() - 2000);
    assert_int_equal(lc.warns, 1);
    assert_non_null(strstr(lc.last, "ClockJump"));
    assert_non_null(strstr(lc.last, "past the last persisted lock clock"));
    for (int d = 0; d < MT_DRIVES; d++) {
        assert_int_equal(count_in_log(e, d, "\"action\":\"ClockJump\",\"outcome\":\"detected\""),
                         1);
        struct strata_audit_verify v;
        assert_int_equal(strata_audit_verify_drive(e->drive[d], &v), 0);
        assert_false(v.broken);
        assert_int_equal(v.entries, 1);
    }
    mt_close(e);
    /* A quick restart is not a jump. */
    assert_int_equal(open_logged(e, &lc), 0);
    assert_int_equal(lc.warns, 0);
    assert_int_equal(count_in_log(e, 0, "ClockJump"), 1);
    mt_teardown(e);
}

/* Marks removed while the audit log has entries: the clock starts at the
 * wall clock, and that is recorded. */
static void test_marks_removed(void **state)
{
    struct mt_env *e = mt_setup("clock-removed");
    assert_non_null(e);
    struct strata_audit_event ev = {.user = "u", .bucket = "b", .action = "DeleteObject",
                                    .outcome = "denied"};
    assert_int_equal(strata_meta_audit_append(e->m, &ev), 0);
    mt_close(e);
    for (int d = 0; d < MT_DRIVES; d++) {
        char p[700];
        snprintf(p, sizeof(p), "%s/lock-clock", e->drive[d]);
        assert_int_equal(unlink(p), 0);
    }
    struct logcap lc;
    assert_int_equal(open_logged(e, &lc), 0);
    assert_int_equal(lc.warns, 1);
    assert_non_null(strstr(lc.last, "no lock clock mark"));
    assert_int_equal(count_in_log(e, 0, "\"action\":\"ClockJump\""), 1);
    mt_close(e);
    /* A first start (empty audit log) records nothing. */
    for (int d = 0; d < MT_DRIVES; d++) {
        char p[700];
        snprintf(p, sizeof(p), "%s/lock-clock", e->drive[d]);
        unlink(p);
        snprintf(p, sizeof(p), "%s/audit.log", e->drive[d]);
        unlink(p);
    }
    assert_int_equal(open_logged(e, &lc), 0);
    assert_int_equal(lc.warns, 0);
    assert_int_equal(count_in_log(e, 0, "ClockJump"), 0);
    mt_teardown(e);
}

/* An unreadable mark is skipped with a warning, not trusted. */
static void test_corrupt_mark(void **state)
{
    struct mt_env *e = mt_setup("clock-corrupt");
    assert_non_null(e);
    mt_close(e);
    char p[700];
    snprintf(p, sizeof(p), "%s/lock-clock", e->drive[3]);
    FILE *f = fopen(p, "w");
    fputs("{\"format\":1,\"lock_ms\":99999999999999", f); /* torn */
    fclose(f);
    struct logcap lc;
    assert_int_equal(open_logged(e, &lc), 0);
    assert_true(lc.warns >= 1);
    assert_true(strata_meta_lock_now_ms(e->m) < wall_ms() + 2000);
    assert_true(mark_of(e, 3) < wall_ms() + 2000); /* rewritten */
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_open_follows_wall),
        cmocka_unit_test(test_mark_persisted_across_reopen),
        cmocka_unit_test(test_never_below_mark),
        cmocka_unit_test(test_minority_mark_ignored),
        cmocka_unit_test(test_jump_at_open_recorded),
        cmocka_unit_test(test_marks_removed),
        cmocka_unit_test(test_corrupt_mark),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
