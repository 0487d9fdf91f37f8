/*
 * test_lock_kill.c - Object Lock state under SIGKILL.
 *
 * Retention: a child process extends the COMPLIANCE retention of one version
 * again and again (generation g sets retain-until base + g s) and reports
 * each acknowledged change on a pipe; the parent kills it with SIGKILL after
 * a random delay, reopens the drives and checks that the version holds
 * either the last acknowledged retention or the one in flight - never none,
 * never an older one - and still refuses deletion.
 *
 * Multipart: a child completes locked multipart uploads of one key over and
 * over (COMPLIANCE + legal hold given at create); after the kill every
 * version of the key carries the lock and its bytes, the number of versions
 * is the acknowledged count or one more, and none can be deleted.
 *
 * STRATA_LOCK_KILL_RUNS runs of each (default 12); the seed is printed and
 * taken back from STRATA_TEST_SEED.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "meta_test_util.h"

#define PART "part data of a locked multipart object"

static int64_t base_ms;

static int64_t gen_until(uint32_t g)
{
    return base_ms + (int64_t)g * 1000;
}

/* Child: extend the retention of bucket b key "r" version vid forever. */
static void retention_child(struct mt_env *e, const char *vid, uint32_t g0, int fd)
{
    if (mt_open(e))
        _exit(3);
    if (write(fd, "r", 1) != 1)
        _exit(6);
    for (uint32_t g = g0;; g++) {
        int rc = strata_obj_retention_put(e->m, "b", "r", vid, STRATA_LOCK_COMPLIANCE,
                                          gen_until(g), NULL, NULL);
        if (rc)
            _exit(100 - rc); /* the parent names the error */
        if (write(fd, &g, sizeof(g)) != sizeof(g))
            _exit(6);
    }
}

static int complete_one(struct strata_meta *m)
{
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = "b";
    mo.key = "mp";
    mo.lock.mode = STRATA_LOCK_COMPLIANCE;
    mo.lock.until_ms = base_ms;
    mo.lock.legal_hold = true;
    mo.lock.legal_hold_set = true;
    return mt_mpu_single(m, &mo, PART, strlen(PART), NULL);
}

static void mpu_child(struct mt_env *e, int fd)
{
    if (mt_open(e))
        _exit(3);
    if (write(fd, "r", 1) != 1)
        _exit(6);
    for (uint32_t n = 1;; n++) {
        int rc = complete_one(e->m);
        if (rc)
            _exit(100 - rc);
        if (write(fd, &n, sizeof(n)) != sizeof(n))
            _exit(6);
    }
}

/* Fork child_fn, kill it after a random delay; returns the last value it
 * acknowledged (or none_val). */
static uint32_t run_and_kill(struct mt_env *e, int which, const char *vid, uint32_t g0,
                             uint32_t none_val)
{
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        if (which == 0)
            retention_child(e, vid, g0, pfd[1]);
        else
            mpu_child(e, pfd[1]);
        _exit(7);
    }
    close(pfd[1]);
    char c;
    assert_int_equal(read(pfd[0], &c, 1), 1);
    /* A multipart complete takes several synced commits: give it longer. */
    usleep((useconds_t)(rand() % (which == 0 ? 60000 : 250000)));
    kill(pid, SIGKILL);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFSIGNALED(st))
        fail_msg("child exited by itself with status %d (%s)", WEXITSTATUS(st),
                 WEXITSTATUS(st) > 100 ? strata_errname(100 - WEXITSTATUS(st)) : "setup");
    uint32_t last = none_val, v;
    while (read(pfd[0], &v, sizeof(v)) == (ssize_t)sizeof(v))
        last = v;
    close(pfd[0]);
    return last;
}

static int runs_wanted(void)
{
    const char *s = getenv("STRATA_LOCK_KILL_RUNS");
    return s ? atoi(s) : 12;
}

static void seed_once(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    unsigned seed = (unsigned)time(NULL);
    if (getenv("STRATA_TEST_SEED"))
        seed = (unsigned)strtoul(getenv("STRATA_TEST_SEED"), NULL, 0);
    printf("# lock kill test seed %u (STRATA_TEST_SEED), %d runs\n", seed, runs_wanted());
    srand(seed);
}

static int make_lock_bucket(struct mt_env *e)
{
    struct strata_bucket_info b;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "b");
    b.versioning = STRATA_VERSIONING_ENABLED;
    b.object_lock = true;
    return strata_meta_bucket_create(e->m, &b);
}

static void test_kill_during_retention_put(void **state)
{
    (void)state;
    seed_once();
    struct mt_env *e = mt_setup("lockkillret");
    assert_non_null(e);
    assert_int_equal(make_lock_bucket(e), 0);
    base_ms = strata_meta_lock_now_ms(e->m) + 3600000;
    struct strata_put_opts o;
    memset(&o, 0, sizeof(o));
    o.bucket = "b";
    o.key = "r";
    o.size = 5;
    o.lock.mode = STRATA_LOCK_COMPLIANCE;
    o.lock.until_ms = gen_until(0);
    struct strata_obj_info v;
    assert_int_equal(mt_put_opts(e, &o, "hello", 5, 0, &v), 0);
    char vid[STRATA_VERSION_ID_MAX + 1];
    snprintf(vid, sizeof(vid), "%s", v.version_id);
    strata_obj_info_fini(&v);
    mt_close(e);

    uint32_t cur = 0; /* the generation the version holds */
    int moved = 0, in_flight = 0;
    for (int run = 0; run < runs_wanted(); run++) {
        uint32_t acked = run_and_kill(e, 0, vid, cur + 1, cur);
        assert_int_equal(mt_open(e), 0);
        struct strata_obj_info h;
        assert_int_equal(strata_obj_head(e->m, "b", "r", vid, &h), 0);
        assert_int_equal(h.lock.mode, STRATA_LOCK_COMPLIANCE);
        /* The acknowledged change, or the one in flight: never older. */
        bool old = h.lock.until_ms == gen_until(acked);
        bool next = h.lock.until_ms == gen_until(acked + 1);
        if (!old && !next)
            fail_msg("run %d: retain-until %lld is neither generation %u nor %u", run,
                     (long long)h.lock.until_ms, acked, acked + 1);
        in_flight += next;
        moved += acked != cur;
        cur = next ? acked + 1 : acked;
        strata_obj_info_fini(&h);
        struct strata_lock_actor bypass = {.user = "test", .bypass_governance = true};
        assert_int_equal(strata_obj_delete_opts(e->m, "b", "r", vid, &bypass, NULL),
                         STRATA_ELOCKED);
        mt_close(e);
    }
    printf("# %d runs: %d advanced, %d kept the change in flight, generation %u\n", runs_wanted(),
           moved, in_flight, cur);
    assert_int_equal(mt_open(e), 0);
    mt_teardown(e);
}

struct mp_count {
    unsigned versions;
    bool bad_lock;
};

static int mp_cb(const struct strata_list_entry *le, void *ud)
{
    struct mp_count *c = ud;
    if (le->is_prefix || le->info->delete_marker)
        return 0;
    c->versions++;
    const struct strata_obj_lock *l = &le->info->lock;
    if (l->mode != STRATA_LOCK_COMPLIANCE || l->until_ms != base_ms || !l->legal_hold)
        c->bad_lock = true;
    return 0;
}

static void test_kill_during_locked_complete(void **state)
{
    (void)state;
    seed_once();
    struct mt_env *e = mt_setup("lockkillmpu");
    assert_non_null(e);
    assert_int_equal(make_lock_bucket(e), 0);
    base_ms = strata_meta_lock_now_ms(e->m) + 3600000;
    mt_close(e);
    unsigned total = 0;
    for (int run = 0; run < runs_wanted(); run++) {
        uint32_t acked = run_and_kill(e, 1, NULL, 0, 0);
        assert_int_equal(mt_open(e), 0);
        struct strata_list_opts lo;
        memset(&lo, 0, sizeof(lo));
        lo.bucket = "b";
        lo.prefix = "mp";
        lo.max_keys = 1000;
        lo.versions = true;
        struct mp_count c = {0, false};
        struct strata_list_result res;
        assert_int_equal(strata_obj_list(e->m, &lo, mp_cb, &c, &res), 0);
        assert_false(res.truncated);
        assert_false(c.bad_lock);
        if (c.versions != total + acked && c.versions != total + acked + 1)
            fail_msg("run %d: %u versions, expected %u or %u", run, c.versions, total + acked,
                     total + acked + 1);
        total = c.versions;
        if (total) {
            uint8_t *d = NULL;
            size_t n = 0;
            assert_int_equal(mt_get(e, "b", "mp", NULL, &d, &n), 0);
            assert_int_equal(n, strlen(PART));
            assert_memory_equal(d, PART, n);
            free(d);
            struct strata_obj_info h;
            assert_int_equal(strata_obj_head(e->m, "b", "mp", NULL, &h), 0);
            assert_int_equal(strata_obj_delete(e->m, "b", "mp", h.version_id, NULL),
                             STRATA_ELOCKED);
            strata_obj_info_fini(&h);
        }
        mt_close(e);
    }
    printf("# %d runs, %u locked multipart versions, all intact\n", runs_wanted(), total);
    assert_int_equal(mt_open(e), 0);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_during_retention_put),
        cmocka_unit_test(test_kill_during_locked_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
