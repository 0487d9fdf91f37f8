/*
 * codec.c - Reed-Solomon over GF(2^8) with ISA-L: a Cauchy generator matrix
 * (any K of the K+M rows are invertible), expanded tables for the SIMD
 * encoder, and reconstruction by inverting the surviving rows.
 *
 * Decode tables depend only on which shards are present, so they are cached
 * per erasure pattern (a small direct-mapped cache under a mutex); a GET
 * that keeps hitting the same dead drive pays the matrix inversion once.
 *
 * Threads: a codec is immutable after create except the decode cache,
 * which is locked, so any number of threads may share one codec.
 */
#include "strata/erasure.h"

#include <isa-l/erasure_code.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define DEC_CACHE_SLOTS 32

struct dec_entry {
    uint32_t present; /* 0: empty slot (at least k bits are always set) */
    unsigned nmissing;
    uint8_t src[STRATA_DRIVES_MAX]; /* shard indexes used as sources */
    uint8_t dst[STRATA_DRIVES_MAX]; /* shard indexes rebuilt */
    uint8_t *tbls;                  /* k * nmissing * 32 bytes */
};

struct strata_ec_codec {
    unsigned k, m;
    uint8_t *matrix; /* (k+m) x k; the top k rows are the identity */
    uint8_t *tbls;   /* encode tables for the m parity rows */
    pthread_mutex_t mu;
    struct dec_entry cache[DEC_CACHE_SLOTS];
};

int strata_ec_codec_create(unsigned k, unsigned m, struct strata_ec_codec **out)
{
    if (k < 1 || m < 1 || k + m > STRATA_DRIVES_MAX)
        return STRATA_EINVAL;
    struct strata_ec_codec *c = calloc(1, sizeof(*c));
    if (!c)
        return STRATA_ENOMEM;
    c->k = k;
    c->m = m;
    c->matrix = malloc((size_t)(k + m) * k);
    c->tbls = malloc((size_t)k * m * 32);
    if (!c->matrix || !c->tbls) {
        free(c->matrix);
        free(c->tbls);
        free(c);
        return STRATA_ENOMEM;
    }
    gf_gen_cauchy1_matrix(c->matrix, (int)(k + m), (int)k);
    ec_init_tables((int)k, (int)m, c->matrix + (size_t)k * k, c->tbls);
    pthread_mutex_init(&c->mu, NULL);
    *out = c;
    return 0;
}

void strata_ec_codec_destroy(struct strata_ec_codec *c)
{
    if (!c)
        return;
    for (unsigned i = 0; i < DEC_CACHE_SLOTS; i++)
        free(c->cache[i].tbls);
    pthread_mutex_destroy(&c->mu);
    free(c->matrix);
    free(c->tbls);
    free(c);
}

void strata_ec_encode(const struct strata_ec_codec *c, uint8_t *const *shards, size_t len)
{
    /* ISA-L takes int lengths; shard blocks are far below 2 GiB, but chunk anyway. */
    const size_t chunk = (size_t)1 << 30;
    for (size_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        uint8_t *src[STRATA_DRIVES_MAX], *dst[STRATA_DRIVES_MAX];
        for (unsigned i = 0; i < c->k; i++)
            src[i] = shards[i] + off;
        for (unsigned i = 0; i < c->m; i++)
            dst[i] = shards[c->k + i] + off;
        ec_encode_data((int)n, (int)c->k, (int)c->m, c->tbls, src, dst);
    }
}

/* Build decode tables for one pattern; 0, STRATA_ENOMEM or STRATA_ECORRUPT. */
static int dec_build(const struct strata_ec_codec *c, uint32_t present, struct dec_entry *e)
{
    unsigned k = c->k, n = c->k + c->m, ns = 0, nm = 0;
    uint8_t sub[STRATA_DRIVES_MAX * STRATA_DRIVES_MAX], inv[STRATA_DRIVES_MAX * STRATA_DRIVES_MAX];
    uint8_t rows[STRATA_DRIVES_MAX * STRATA_DRIVES_MAX];

    for (unsigned i = 0; i < n; i++) {
        if ((present >> i) & 1) {
            if (ns < k)
                e->src[ns++] = (uint8_t)i;
        } else {
            e->dst[nm++] = (uint8_t)i;
        }
    }
    if (ns < k)
        return STRATA_ECORRUPT;
    for (unsigned r = 0; r < k; r++)
        memcpy(sub + r * k, c->matrix + (size_t)e->src[r] * k, k);
    if (gf_invert_matrix(sub, inv, (int)k) < 0)
        return STRATA_EINTERNAL; /* cannot happen with a Cauchy matrix */
    /* A missing data row is a row of the inverse; a missing parity row is
     * its generator row times the inverse (parity of the recovered data). */
    for (unsigned j = 0; j < nm; j++) {
        unsigned d = e->dst[j];
        if (d < k) {
            memcpy(rows + j * k, inv + d * k, k);
        } else {
            for (unsigned col = 0; col < k; col++) {
                uint8_t s = 0;
                for (unsigned t = 0; t < k; t++)
                    s ^= gf_mul(c->matrix[(size_t)d * k + t], inv[t * k + col]);
                rows[j * k + col] = s;
            }
        }
    }
    e->tbls = malloc((size_t)k * (nm ? nm : 1) * 32);
    if (!e->tbls)
        return STRATA_ENOMEM;
    if (nm)
        ec_init_tables((int)k, (int)nm, rows, e->tbls);
    e->nmissing = nm;
    e->present = present;
    return 0;
}

int strata_ec_reconstruct(const struct strata_ec_codec *c, uint8_t *const *shards,
                          const bool *present, size_t len)
{
    unsigned n = c->k + c->m, have = 0;
    uint32_t mask = 0;
    for (unsigned i = 0; i < n; i++)
        if (present[i]) {
            mask |= 1u << i;
            have++;
        }
    if (have < c->k)
        return STRATA_ECORRUPT;
    if (have == n)
        return 0;

    /* The cache is mutable state behind a const codec: locking makes that
     * invisible to callers, who may share the codec between threads. */
    struct strata_ec_codec *mc = (struct strata_ec_codec *)c;
    struct dec_entry *slot = &mc->cache[(mask * 2654435761u) >> 27 & (DEC_CACHE_SLOTS - 1)];
    struct dec_entry e = {0};
    pthread_mutex_lock(&mc->mu);
    if (slot->present == mask) {
        e = *slot;
        e.tbls = malloc((size_t)c->k * e.nmissing * 32);
        if (e.tbls)
            memcpy(e.tbls, slot->tbls, (size_t)c->k * e.nmissing * 32);
    }
    pthread_mutex_unlock(&mc->mu);
    if (!e.tbls) {
        int rc = dec_build(c, mask, &e);
        if (rc < 0)
            return rc;
        struct dec_entry copy = e;
        copy.tbls = malloc((size_t)c->k * e.nmissing * 32);
        if (copy.tbls) {
            memcpy(copy.tbls, e.tbls, (size_t)c->k * e.nmissing * 32);
            pthread_mutex_lock(&mc->mu);
            free(slot->tbls);
            *slot = copy;
            pthread_mutex_unlock(&mc->mu);
        }
    }

    const size_t chunk = (size_t)1 << 30;
    for (size_t off = 0; off < len; off += chunk) {
        size_t l = len - off < chunk ? len - off : chunk;
        uint8_t *src[STRATA_DRIVES_MAX], *dst[STRATA_DRIVES_MAX];
        for (unsigned i = 0; i < c->k; i++)
            src[i] = shards[e.src[i]] + off;
        for (unsigned i = 0; i < e.nmissing; i++)
            dst[i] = shards[e.dst[i]] + off;
        ec_encode_data((int)l, (int)c->k, (int)e.nmissing, e.tbls, src, dst);
    }
    free(e.tbls);
    return 0;
}
