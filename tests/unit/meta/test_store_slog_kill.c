/*
 * test_store_slog_kill.c - the small-object log (strata_meta_opts
 * .small_object_log) under SIGKILL.
 *
 * A child process runs writer threads that overwrite their own inline
 * keys (1 byte to 100 KiB: one shard per drive in the drives' logs, 1 MiB
 * segments) at once, so their appends share the writers' group commits,
 * and reports each acknowledged put (key, generation) through a pipe; the
 * parent kills it with SIGKILL at a random point, reopens the drives and
 * checks that every key reads back byte for byte as a generation no older
 * than the last one acknowledged (the torn tails of the segments are never
 * read: no record names them).  After the rounds, the segments of the
 * replaced generations are gone: what is left on a drive is bounded by the
 * live objects, not by what was written.  STRATA_CRASH_RUNS rounds
 * (default 10); the seed is printed and taken back from STRATA_TEST_SEED.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "meta_test_util.h"
#include "slog_kill_util.h"
#include "strata/erasure.h"
#include "strata/meta.h"

#define NTHREADS 4
#define KEYS_PER 2
#define NKEYS (NTHREADS * KEYS_PER)
#define SIZE_MAX_OBJ (100 * 1024)

static struct mt_env *env;

static size_t obj_size(unsigned k, uint32_t gen)
{
    return 4 + (size_t)((gen * 2654435761u + k * 40503u) % (SIZE_MAX_OBJ - 4));
}

/* Bytes of (key, gen): the generation in the first four, then a stream of both. */
static void obj_fill(unsigned k, uint32_t gen, uint8_t *buf, size_t len)
{
    mt_fill(buf, len, gen * 131u + k);
    memcpy(buf, &gen, 4);
}

static void key_name(unsigned k, char out[32])
{
    snprintf(out, 32, "k%u", k);
}

static int open_log(void)
{
    struct strata_meta_opts mo = {.small_object_log = true, .slog_segment_mb = 1,
                                  .slog_grace_ms = 1};
    return mt_open_with(env, &mo);
}

static int put_gen(unsigned k, uint32_t gen, uint8_t *buf)
{
    char key[32];
    key_name(k, key);
    size_t len = obj_size(k, gen);
    obj_fill(k, gen, buf, len);
    return mt_put(env, "slog", key, buf, len, NULL);
}

static uint32_t verify_all(struct strata_meta *m, uint8_t *got, uint8_t *want,
                           const uint32_t acked[NKEYS])
{
    uint32_t hi = 0;
    for (unsigned k = 0; k < NKEYS; k++) {
        char key[32];
        key_name(k, key);
        struct strata_obj_info info = {0};
        struct strata_get *g = NULL;
        assert_int_equal(strata_obj_get_open(m, "slog", key, NULL, &info, &g), 0);
        assert_true(info.size >= 4 && info.size <= SIZE_MAX_OBJ);
        assert_int_equal(strata_obj_get_read(g, 0, got, info.size), 0);
        uint32_t gen;
        memcpy(&gen, got, 4);
        if (gen < acked[k])
            fail_msg("%s reads generation %u, but generation %u was acknowledged", key, gen,
                     acked[k]);
        assert_int_equal(info.size, obj_size(k, gen));
        obj_fill(k, gen, want, info.size);
        assert_memory_equal(got, want, info.size);
        strata_obj_get_close(g);
        strata_obj_info_fini(&info);
        if (gen > hi)
            hi = gen;
    }
    return hi;
}

static int segments(int d)
{
    char p[700];
    int w = snprintf(p, sizeof(p), "%s/slog", env->drive[d]);
    assert_true(w > 0 && (size_t)w < sizeof(p));
    return mt_count_files(p);
}

/* The highest segment id on drive 0: how many segments were ever made. */
static unsigned long long top_segment(void)
{
    char p[700];
    snprintf(p, sizeof(p), "%s/slog", env->drive[0]);
    DIR *d = opendir(p);
    assert_non_null(d);
    unsigned long long top = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        unsigned long long id = strtoull(de->d_name, NULL, 16);
        if (id > top)
            top = id;
    }
    closedir(d);
    return top;
}

static void test_slog_sigkill_runs(void **state)
{
    (void)state;
    env = mt_setup("slog-kill");
    assert_non_null(env);
    mt_close(env); /* opened without the log */
    unsigned seed = (unsigned)time(NULL);
    if (getenv("STRATA_TEST_SEED"))
        seed = (unsigned)strtoul(getenv("STRATA_TEST_SEED"), NULL, 0);
    int runs = 10;
    if (getenv("STRATA_CRASH_RUNS"))
        runs = atoi(getenv("STRATA_CRASH_RUNS"));
    printf("# slog kill test seed %u (STRATA_TEST_SEED), %d runs\n", seed, runs);
    srand(seed);

    uint8_t *got = malloc(SIZE_MAX_OBJ), *want = malloc(SIZE_MAX_OBJ);
    assert_non_null(got);
    assert_non_null(want);
    assert_int_equal(open_log(), 0);
    struct strata_bucket_info b = {.name = "slog", .owner = "test", .region = "us-east-1"};
    assert_int_equal(strata_meta_bucket_create(env->m, &b), 0);
    for (unsigned k = 0; k < NKEYS; k++)
        assert_int_equal(put_gen(k, 1, want), 0);
    mt_close(env);
    assert_true(segments(0) >= 1);

    uint32_t next_gen = 2;
    struct sk_acks as = {.nkeys = NKEYS};
    struct sk_plan plan = {.open = open_log, .put = put_gen, .buf_size = SIZE_MAX_OBJ,
                           .nthreads = NTHREADS, .per = KEYS_PER};
    for (unsigned k = 0; k < NKEYS; k++)
        as.acked[k] = 1;
    int most = 0;
    /* More rounds on a slow machine, until segments were made several
     * times over what may be left (twice). */
    int run;
    for (run = 0; run < runs || (top_segment() < 2 * (NKEYS + 2) && run < 3 * runs); run++) {
        plan.gen0 = next_gen;
        assert_int_equal(mt_run_and_kill_acks(sk_child, &plan, 100000, 500000,
                                              sizeof(struct sk_ack), sk_ack_cb, &as),
                         0);
        if (segments(0) > most)
            most = segments(0);
        assert_int_equal(open_log(), 0);
        uint32_t hi = verify_all(env->m, got, want, as.acked);
        mt_close(env);
        next_gen = (hi > next_gen ? hi : next_gen) + 1;
    }
    /* What the rounds wrote (~25 KiB per put and drive on average) filled
     * many 1 MiB segments; the dead ones go (at open, or after the
     * grace), leaving about the live objects' (8 x <= 50 KiB) and the
     * segments of the last opens. */
    assert_int_equal(open_log(), 0);
    assert_int_equal(put_gen(0, next_gen, want), 0);
    int left = 0;
    for (int t = 0; t < 100; t++) {
        usleep(20000);
        if ((left = segments(0)) <= NKEYS + 2)
            break;
    }
    verify_all(env->m, got, want, as.acked);
    printf("# %d runs, %lu puts acknowledged before the kills, %llu segments made, up to %d "
           "files on a drive, %d left\n", run, as.n, top_segment(), most, left);
    assert_true(as.n > 0);
    assert_true(top_segment() >= 2 * (NKEYS + 2));
    assert_true(left <= NKEYS + 2);
    free(got);
    free(want);
    mt_teardown(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slog_sigkill_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
