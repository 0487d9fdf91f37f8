/*
 * test_store_slog_compact.c - compaction of the small-object log
 * (meta/local/slog_compact.c).
 *
 * moves_live_shards: 128 inline objects fill several 1 MiB segments per
 * drive, 7 in 8 are deleted, so every sealed segment is mostly dead but
 * none is dead: only compaction can give the space back.  The segments
 * left must be bounded by the live shards, and every object left reads
 * back byte for byte, before and after a reopen.
 *
 * sigkill: a child overwrites churn keys from several threads (their
 * records are switched by the compaction while they are overwritten: a
 * switch that did not check the record still names the old place would
 * bring back an older generation) beside long-lived keys written once,
 * with the compaction running every 10 ms, and is killed at a random
 * point.  After each kill every key reads back byte for byte, the churn
 * keys no older than acknowledged.  STRATA_CRASH_RUNS rounds (default 8);
 * the seed is printed and taken back from STRATA_TEST_SEED.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "meta_test_util.h"
#include "slog_kill_util.h"
#include "strata/meta.h"

#define OBJ 80000 /* one ~40 KiB shard per drive (2+2) */

static struct mt_env *env;

static int open_log(unsigned compact_ms)
{
    struct strata_meta_opts mo = {.small_object_log = true,
                                  .slog_segment_mb = 1,
                                  .slog_grace_ms = 1,
                                  .slog_compact_ms = compact_ms};
    return mt_open_with(env, &mo);
}

/* Bytes of all segments on drive d. */
static uint64_t seg_bytes(int d)
{
    char p[700];
    snprintf(p, sizeof(p), "%s/slog", env->drive[d]);
    DIR *dir = opendir(p);
    assert_non_null(dir);
    uint64_t n = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        char f[1000];
        struct stat st;
        snprintf(f, sizeof(f), "%s/%s", p, de->d_name);
        if (strstr(de->d_name, ".seg") && stat(f, &st) == 0)
            n += (uint64_t)st.st_size;
    }
    closedir(dir);
    return n;
}

static uint64_t max_seg_bytes(void)
{
    uint64_t hi = 0;
    for (int d = 0; d < MT_DRIVES; d++)
        if (seg_bytes(d) > hi)
            hi = seg_bytes(d);
    return hi;
}

static void check_obj(const char *key, uint32_t seed, size_t len)
{
    uint8_t *got = NULL, *want = malloc(len);
    size_t gl = 0;
    assert_non_null(want);
    assert_int_equal(mt_get(env, "c", key, NULL, &got, &gl), 0);
    mt_fill(want, len, seed);
    assert_int_equal(gl, len);
    assert_memory_equal(got, want, len);
    free(got);
    free(want);
}

#define NOBJ 128

static void check_kept(void)
{
    for (unsigned k = 0; k < NOBJ; k++) {
        char key[32];
        snprintf(key, sizeof(key), "o%u", k);
        if (k % 8 == 0) {
            check_obj(key, k, OBJ);
        } else {
            uint8_t *got = NULL;
            size_t gl = 0;
            assert_int_equal(mt_get(env, "c", key, NULL, &got, &gl), STRATA_ENOTFOUND);
        }
    }
}

static void test_slog_compact_moves_live_shards(void **state)
{
    (void)state;
    env = mt_setup("slog-compact");
    assert_non_null(env);
    mt_close(env);
    assert_int_equal(open_log(20), 0);
    assert_int_equal(mt_bucket(env, "c", 0), 0);
    uint8_t *buf = malloc(OBJ);
    assert_non_null(buf);
    for (unsigned k = 0; k < NOBJ; k++) {
        char key[32];
        snprintf(key, sizeof(key), "o%u", k);
        mt_fill(buf, OBJ, k);
        assert_int_equal(mt_put(env, "c", key, buf, OBJ, NULL), 0);
    }
    uint64_t before = max_seg_bytes();
    for (unsigned k = 0; k < NOBJ; k++)
        if (k % 8) {
            char key[32];
            snprintf(key, sizeof(key), "o%u", k);
            assert_int_equal(strata_obj_delete(env->m, "c", key, NULL, NULL), 0);
        }
    /* 16 live shards of ~40 KiB: at most twice that plus a segment. */
    uint64_t bound = 2 * (NOBJ / 8) * (OBJ / 2 + 64) + (1u << 20), left = 0;
    for (int t = 0; t < 500 && (left = max_seg_bytes()) > bound; t++)
        usleep(20000);
    printf("# %llu bytes of segments per drive before the deletes, %llu after the "
           "compaction (bound %llu)\n",
           (unsigned long long)before, (unsigned long long)left, (unsigned long long)bound);
    assert_true(before > 4 * (1u << 20));
    assert_true(left <= bound);
    check_kept();
    mt_close(env);
    assert_int_equal(open_log(20), 0);
    check_kept();
    assert_true(max_seg_bytes() <= bound);
    free(buf);
    mt_teardown(env);
}

/* ---- under SIGKILL ---- */

#define NTHREADS  3
#define CHURN_PER 2
#define NCHURN    (NTHREADS * CHURN_PER)
#define NLONG     24

static size_t churn_size(unsigned k, uint32_t gen)
{
    return 4 + (size_t)((gen * 2654435761u + k * 40503u) % (OBJ - 4));
}

static void churn_fill(unsigned k, uint32_t gen, uint8_t *buf, size_t len)
{
    mt_fill(buf, len, gen * 131u + k);
    memcpy(buf, &gen, 4);
}

static int churn_put(unsigned k, uint32_t gen, uint8_t *buf)
{
    char key[32];
    snprintf(key, sizeof(key), "c%u", k);
    size_t len = churn_size(k, gen);
    churn_fill(k, gen, buf, len);
    return mt_put(env, "c", key, buf, len, NULL);
}

static int open_churn(void)
{
    return open_log(10);
}

static uint32_t verify_all(const uint32_t acked[NCHURN])
{
    uint8_t *want = malloc(OBJ);
    assert_non_null(want);
    uint32_t hi = 0;
    for (unsigned k = 0; k < NLONG; k++) {
        char key[32];
        snprintf(key, sizeof(key), "l%u", k);
        check_obj(key, 1000 + k, OBJ);
    }
    for (unsigned k = 0; k < NCHURN; k++) {
        char key[32];
        snprintf(key, sizeof(key), "c%u", k);
        uint8_t *got = NULL;
        size_t gl = 0;
        assert_int_equal(mt_get(env, "c", key, NULL, &got, &gl), 0);
        assert_true(gl >= 4);
        uint32_t gen;
        memcpy(&gen, got, 4);
        if (gen < acked[k])
            fail_msg("%s reads generation %u, but generation %u was acknowledged", key, gen,
                     acked[k]);
        assert_int_equal(gl, churn_size(k, gen));
        churn_fill(k, gen, want, gl);
        assert_memory_equal(got, want, gl);
        free(got);
        if (gen > hi)
            hi = gen;
    }
    free(want);
    return hi;
}

static void test_slog_compact_sigkill(void **state)
{
    (void)state;
    env = mt_setup("slog-compact-kill");
    assert_non_null(env);
    mt_close(env);
    unsigned seed = (unsigned)time(NULL);
    if (getenv("STRATA_TEST_SEED"))
        seed = (unsigned)strtoul(getenv("STRATA_TEST_SEED"), NULL, 0);
    int runs = 8;
    if (getenv("STRATA_CRASH_RUNS"))
        runs = atoi(getenv("STRATA_CRASH_RUNS"));
    printf("# slog compaction kill test seed %u (STRATA_TEST_SEED), %d runs\n", seed, runs);
    srand(seed);
    uint8_t *buf = malloc(OBJ);
    assert_non_null(buf);
    assert_int_equal(open_log(10), 0);
    assert_int_equal(mt_bucket(env, "c", 0), 0);
    /* Long-lived keys between generations of the churn keys, so that
     * every early segment holds some of both. */
    struct sk_acks as = {.nkeys = NCHURN};
    for (unsigned k = 0; k < NLONG; k++) {
        char key[32];
        snprintf(key, sizeof(key), "l%u", k);
        mt_fill(buf, OBJ, 1000 + k);
        assert_int_equal(mt_put(env, "c", key, buf, OBJ, NULL), 0);
        unsigned c = k % NCHURN;
        snprintf(key, sizeof(key), "c%u", c);
        size_t len = churn_size(c, 1 + k / NCHURN);
        churn_fill(c, 1 + k / NCHURN, buf, len);
        assert_int_equal(mt_put(env, "c", key, buf, len, NULL), 0);
        as.acked[c] = 1 + k / NCHURN;
    }
    mt_close(env);
    struct sk_plan plan = {.open = open_churn,
                           .put = churn_put,
                           .buf_size = OBJ,
                           .nthreads = NTHREADS,
                           .per = CHURN_PER};
    uint32_t next_gen = NLONG / NCHURN + 2;
    for (int run = 0; run < runs; run++) {
        plan.gen0 = next_gen;
        assert_int_equal(mt_run_and_kill_acks(sk_child, &plan, 200000, 700000,
                                              sizeof(struct sk_ack), sk_ack_cb, &as),
                         0);
        assert_int_equal(open_log(10), 0);
        uint32_t hi = verify_all(as.acked);
        mt_close(env);
        next_gen = (hi > next_gen ? hi : next_gen) + 1;
    }
    /* Left alone, the compaction brings the long-lived shards together:
     * what stays is bounded by the live shards, not by what was written. */
    assert_int_equal(open_log(10), 0);
    uint64_t bound = 2 * (NLONG + NCHURN) * (OBJ / 2 + 64) + (1u << 20), left = 0;
    for (int t = 0; t < 500 && (left = max_seg_bytes()) > bound; t++)
        usleep(20000);
    verify_all(as.acked);
    printf("# %d runs, %lu puts acknowledged before the kills, %llu segment bytes left on a "
           "drive (bound %llu)\n",
           runs, as.n, (unsigned long long)left, (unsigned long long)bound);
    assert_true(as.n > 0);
    assert_true(left <= bound);
    free(buf);
    mt_teardown(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slog_compact_moves_live_shards),
        cmocka_unit_test(test_slog_compact_sigkill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
