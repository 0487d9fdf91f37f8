/*
 * ec_test_util.h - helpers shared by the erasure unit tests: a scratch
 * directory per test under $STRATA_TEST_TMPDIR, drive path arrays, a
 * seeded PRNG (seed printed; STRATA_TEST_SEED overrides), recursive rm.
 * Included by single test files only; everything is static.
 */
#ifndef STRATA_TESTS_EC_TEST_UTIL_H
#define STRATA_TESTS_EC_TEST_UTIL_H

#include <ftw.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int ect_rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
    (void)sb;
    (void)flag;
    (void)f;
    return remove(p) < 0 ? -1 : 0;
}

static inline void ect_rm_rf(const char *p)
{
    nftw(p, ect_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* Fresh, empty directory for one test; returns a static buffer. */
static inline const char *ect_dir(const char *name)
{
    static char buf[1024];
    const char *base = getenv("STRATA_TEST_TMPDIR");
    if (!base)
        base = "/tmp";
    snprintf(buf, sizeof(buf), "%s/erasure-%s-%d", base, name, (int)getpid());
    ect_rm_rf(buf);
    mkdir(base, 0755);
    mkdir(buf, 0755);
    return buf;
}

/* Remove this process's scratch dirs; call after all tests passed, so a
 * failure leaves its evidence behind. */
static inline void ect_cleanup(void)
{
    const char *base = getenv("STRATA_TEST_TMPDIR");
    char pat[4096];
    snprintf(pat, sizeof(pat), "%s/erasure-*-%d", base ? base : "/tmp", (int)getpid());
    glob_t g;
    if (glob(pat, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            ect_rm_rf(g.gl_pathv[i]);
        globfree(&g);
    }
}

struct ect_drives {
    unsigned n;
    char path[16][2048];
    const char *ptr[16];
};

static inline void ect_drives_init(struct ect_drives *d, const char *root, unsigned n)
{
    d->n = n;
    for (unsigned i = 0; i < n; i++) {
        snprintf(d->path[i], sizeof(d->path[i]), "%s/d%u", root, i);
        d->ptr[i] = d->path[i];
    }
}

/* xorshift64*: fast, seedable, good enough for test data. */
static uint64_t ect_rng_state;

static inline uint64_t ect_seed(void)
{
    const char *e = getenv("STRATA_TEST_SEED");
    uint64_t seed = e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (!seed)
        seed = 1;
    printf("# seed %llu (set STRATA_TEST_SEED to reproduce)\n", (unsigned long long)seed);
    ect_rng_state = seed;
    return seed;
}

static inline uint64_t ect_rand(void)
{
    uint64_t x = ect_rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    ect_rng_state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static inline void ect_fill(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(ect_rand() >> 56);
}

/* Shard block idx's length in a shard file of the current format (2): full
 * blocks are ss bytes; the last stripe's only what its bytes need, 4 KiB
 * aligned.  Written out here, not taken from erasure/, so the tests check
 * the layout rather than repeat it. */
static inline size_t ect_block_len(size_t ss, unsigned k, uint64_t size, uint64_t idx)
{
    uint64_t stripe = (uint64_t)ss * k;
    if ((idx + 1) * stripe <= size)
        return ss;
    uint64_t rest = size - idx * stripe;
    return (size_t)((rest + k - 1) / k + 4095) / 4096 * 4096;
}

/* Bytes of a shard file's blocks: where its CRC table starts after the header. */
static inline uint64_t ect_blocks_bytes(size_t ss, unsigned k, uint64_t size)
{
    uint64_t stripe = (uint64_t)ss * k, blocks = (size + stripe - 1) / stripe;
    return blocks ? (blocks - 1) * ss + ect_block_len(ss, k, size, blocks - 1) : 0;
}

#endif
