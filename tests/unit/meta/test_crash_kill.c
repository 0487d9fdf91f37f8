/*
 * test_crash_kill.c - crash safety of the object layer under SIGKILL.
 *
 * A child process overwrites a handful of objects (inline, single-stripe and
 * multi-stripe sizes) over and over, reporting every acknowledged put
 * (key, generation) through a pipe; the parent waits for at least one
 * acknowledgement, kills the child with SIGKILL after a further random
 * delay, reopens the drives and checks every object is wholly one
 * generation, no older than the last one acknowledged for it: its bytes are
 * exactly what that generation wrote, its size and ETag match, and the
 * listing shows exactly the expected keys.  After each reopen tmp/ is empty
 * on every drive (leftovers are reclaimed at open), and the unreferenced
 * shard files in data/ (no orphan reclaim yet) stay within what the kills
 * can leave: per kill at most one finished-but-uncommitted object and one
 * replaced-but-not-dropped object, N shard files each.  Repeated
 * STRATA_CRASH_RUNS times (default 50).  The seed is printed and taken back
 * from STRATA_TEST_SEED.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "meta_test_util.h"
#include "strata/erasure.h"
#include "strata/meta.h"

#define NDRIVES 4
#define NKEYS 4
#define GEN_MAX 1000000u

static const char *const keys[NKEYS] = {"small/inline", "mid/one-stripe", "big/multi-stripe",
                                        "grow/varies"};

static char root[512];
static char drive_paths[NDRIVES][600];

/* Size of generation gen of key i: fixed per key, except the last key whose
 * size changes with the generation so a mix of two would show. */
static size_t obj_size(int i, uint32_t gen)
{
    switch (i) {
    case 0:
        return 4096;
    case 1:
        return 300 * 1024;
    case 2:
        return 3 * 1024 * 1024 + 12345;
    default:
        return 200 * 1024 + (size_t)(gen % 7) * 333333;
    }
}

/* Deterministic bytes of (key, gen): the generation number in the first
 * four bytes, then a xorshift stream seeded by both. */
static void obj_fill(int i, uint32_t gen, uint8_t *buf, size_t len)
{
    uint64_t x = 0x9e3779b97f4a7c15ull ^ ((uint64_t)i << 32) ^ gen;
    for (size_t off = 0; off < len; off++) {
        if ((off & 7) == 0) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        buf[off] = (uint8_t)(x >> ((off & 7) * 8));
    }
    if (len >= 4)
        memcpy(buf, &gen, 4);
}

static int open_all(struct strata_set **set, struct strata_meta **meta)
{
    const char *paths[NDRIVES];
    for (int i = 0; i < NDRIVES; i++)
        paths[i] = drive_paths[i];
    struct strata_set_opts so = {.direct_io = true};
    struct strata_errinfo ei = {0};
    int rc = strata_set_open(paths, NDRIVES, &so, set, &ei);
    if (rc)
        return rc;
    struct strata_meta_opts mo = {0};
    rc = strata_meta_open(set, 1, &mo, meta, &ei);
    if (rc) {
        strata_set_close(*set);
        *set = NULL;
    }
    return rc;
}

static int put_gen(struct strata_meta *m, int i, uint32_t gen, uint8_t *buf)
{
    size_t len = obj_size(i, gen);
    obj_fill(i, gen, buf, len);
    struct strata_put_opts po = {.bucket = "crash", .key = keys[i], .size = len};
    struct strata_put *p = NULL;
    int rc = strata_obj_put_begin(m, &po, &p);
    if (rc)
        return rc;
    /* Odd chunk sizes so stripe boundaries fall inside writes. */
    for (size_t off = 0; off < len;) {
        size_t n = len - off < 70001 ? len - off : 70001;
        rc = strata_obj_put_write(p, buf + off, n);
        if (rc) {
            strata_obj_put_abort(p);
            return rc;
        }
        off += n;
    }
    return strata_obj_put_commit(p, NULL);
}

/* An acknowledged put, as the child reports it (8 bytes: atomic in a pipe). */
struct ack {
    uint32_t key, gen;
};

/* The child: overwrite every key with ever newer generations until killed.
 * It writes one byte to fd once the drives are open, then one struct ack
 * per put that returned success. */
static void writer_child(uint32_t gen0, int fd)
{
    struct strata_set *set;
    struct strata_meta *m;
    if (open_all(&set, &m))
        _exit(3);
    if (write(fd, "r", 1) != 1)
        _exit(6);
    uint8_t *buf = malloc(obj_size(2, 0) + 4 * 333333 + 300 * 1024);
    if (!buf)
        _exit(4);
    for (uint32_t gen = gen0;; gen++) {
        for (int i = 0; i < NKEYS; i++) {
            if (put_gen(m, i, gen, buf))
                _exit(5);
            struct ack a = {.key = (uint32_t)i, .gen = gen};
            if (write(fd, &a, sizeof(a)) != (ssize_t)sizeof(a))
                _exit(7);
        }
    }
}

static int count_under(const char *sub)
{
    int n = 0;
    for (int i = 0; i < NDRIVES; i++) {
        char p[700];
        int w = snprintf(p, sizeof(p), "%s/%s", drive_paths[i], sub);
        assert_true(w > 0 && (size_t)w < sizeof(p)); /* also tells -O2's truncation check */
        n += mt_count_files(p);
    }
    return n;
}

static void md5_hex(const uint8_t *buf, size_t len, char out[33])
{
    unsigned char d[16];
    unsigned int dl = 0;
    EVP_Digest(buf, len, d, &dl, EVP_md5(), NULL);
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

struct list_ctx {
    int n;
    char seen[NKEYS + 4][64];
};

static int list_cb(const struct strata_list_entry *e, void *ud)
{
    struct list_ctx *lc = ud;
    if (lc->n < NKEYS + 4)
        snprintf(lc->seen[lc->n], sizeof(lc->seen[0]), "%s", e->key);
    lc->n++;
    return 0;
}

/* Every key must read back as exactly one whole generation, no older than
 * acked[i]; returns the highest generation seen. */
static uint32_t verify_all(struct strata_meta *m, uint8_t *got, uint8_t *want,
                           const uint32_t acked[NKEYS])
{
    uint32_t hi = 0;
    for (int i = 0; i < NKEYS; i++) {
        struct strata_obj_info info = {0};
        struct strata_get *g = NULL;
        int rc = strata_obj_get_open(m, "crash", keys[i], NULL, &info, &g);
        assert_int_equal(rc, 0);
        assert_true(info.size >= 4);
        assert_int_equal(strata_obj_get_read(g, 0, got, info.size), 0);
        uint32_t gen;
        memcpy(&gen, got, 4);
        assert_true(gen < GEN_MAX);
        if (gen < acked[i])
            fail_msg("%s reads generation %u, but generation %u was acknowledged", keys[i], gen,
                     acked[i]);
        /* Size, bytes and ETag must all belong to that one generation. */
        assert_int_equal(info.size, obj_size(i, gen));
        obj_fill(i, gen, want, info.size);
        assert_memory_equal(got, want, info.size);
        char hex[33];
        md5_hex(want, info.size, hex);
        assert_string_equal(info.etag, hex);
        strata_obj_get_close(g);
        strata_obj_info_fini(&info);
        if (gen > hi)
            hi = gen;
    }
    struct list_ctx lc = {0};
    struct strata_list_opts lo = {.bucket = "crash", .max_keys = 1000};
    struct strata_list_result lr = {0};
    assert_int_equal(strata_obj_list(m, &lo, list_cb, &lc, &lr), 0);
    assert_int_equal(lc.n, NKEYS);
    assert_false(lr.truncated);
    return hi;
}

static void test_sigkill_runs(void **state)
{
    (void)state;
    const char *tmp = getenv("STRATA_TEST_TMPDIR");
    snprintf(root, sizeof(root), "%s/crash-kill-%d", tmp ? tmp : "/tmp", (int)getpid());
    assert_int_equal(mkdir(root, 0755), 0);
    for (int i = 0; i < NDRIVES; i++)
        snprintf(drive_paths[i], sizeof(drive_paths[i]), "%s/d%d", root, i + 1);

    unsigned seed = (unsigned)time(NULL);
    const char *s = getenv("STRATA_TEST_SEED");
    if (s)
        seed = (unsigned)strtoul(s, NULL, 0);
    int runs = 50;
    if (getenv("STRATA_CRASH_RUNS"))
        runs = atoi(getenv("STRATA_CRASH_RUNS"));
    printf("# crash test seed %u (STRATA_TEST_SEED), %d runs\n", seed, runs);
    srand(seed);

    size_t maxsz = obj_size(2, 0) + 4 * 333333 + 300 * 1024;
    uint8_t *got = malloc(maxsz), *want = malloc(maxsz);
    assert_non_null(got);
    assert_non_null(want);

    struct strata_set *set;
    struct strata_meta *m;
    assert_int_equal(open_all(&set, &m), 0);
    struct strata_bucket_info b = {.name = "crash", .owner = "test", .region = "us-east-1"};
    assert_int_equal(strata_meta_bucket_create(m, &b), 0);
    for (int i = 0; i < NKEYS; i++)
        assert_int_equal(put_gen(m, i, 1, want), 0);
    strata_meta_close(m);
    strata_set_close(set);

    uint32_t next_gen = 2, acked[NKEYS] = {1, 1, 1, 1};
    int killed_mid_write = 0, advanced = 0;
    unsigned long acks_total = 0;
    /* Three EC objects (the first key is inline) of one shard file per drive. */
    const int data_live = 3 * NDRIVES;
    assert_int_equal(count_under("data"), data_live);
    for (int run = 0; run < runs; run++) {
        int pfd[2];
        assert_int_equal(pipe(pfd), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(pfd[0]);
            writer_child(next_gen, pfd[1]);
        }
        close(pfd[1]);
        char c;
        assert_int_equal(read(pfd[0], &c, 1), 1);
        /* The kill lands after at least one acknowledged write, and then
         * anywhere up to several whole rounds in. */
        struct ack a;
        assert_int_equal(read(pfd[0], &a, sizeof(a)), sizeof(a));
        unsigned long acks = 1;
        acked[a.key] = a.gen > acked[a.key] ? a.gen : acked[a.key];
        usleep((useconds_t)(rand() % 80000));
        kill(pid, SIGKILL);
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        if (WIFSIGNALED(st))
            killed_mid_write++;
        else
            fail_msg("writer exited by itself with status %d", WEXITSTATUS(st));
        ssize_t r;
        while ((r = read(pfd[0], &a, sizeof(a))) == (ssize_t)sizeof(a)) {
            assert_true(a.key < NKEYS);
            acked[a.key] = a.gen > acked[a.key] ? a.gen : acked[a.key];
            acks++;
        }
        assert_int_equal(r, 0); /* EOF: whole records only */
        close(pfd[0]);
        acks_total += acks;

        assert_int_equal(open_all(&set, &m), 0);
        if (count_under("tmp") != 0)
            fail_msg("run %d: %d files left in tmp/ after reopen", run, count_under("tmp"));
        uint32_t hi = verify_all(m, got, want, acked);
        if (hi >= next_gen)
            advanced++;
        int orphans = count_under("data") - data_live;
        if (orphans < 0 || orphans > 2 * NDRIVES * (run + 1))
            fail_msg("run %d: %d unreferenced shard files after %d kills", run, orphans,
                     run + 1);
        strata_meta_close(m);
        strata_set_close(set);
        next_gen = (hi > next_gen ? hi : next_gen) + 1;
        assert_true(next_gen < GEN_MAX);
    }
    assert_true(acks_total >= (unsigned long)runs);
    printf("# %d runs, %d killed by SIGKILL, %lu puts acknowledged before the kills, "
           "%d after committing new data, last generation %u, %d unreferenced shard files\n",
           runs, killed_mid_write, acks_total, advanced, next_gen - 1,
           count_under("data") - data_live);
    free(got);
    free(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigkill_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
