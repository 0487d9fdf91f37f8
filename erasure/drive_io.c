/*
 * drive_io.c - per-drive shard I/O latency and error counters (contract
 * in erasure.h, strata_set_drive_io_get).  Called by the readers and
 * writers of shard.c on every stripe I/O completion, from any thread:
 * relaxed atomic adds only.
 */
#include "ec_internal.h"

#include <string.h>
#include <time.h>

/* 100 us .. 2.5 s: an NVMe read sits in the first buckets, a stalled or
 * dying drive in the last ones. */
const double strata_drive_io_bounds_s[STRATA_DRIVE_IO_BUCKETS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
    0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5,
};

uint64_t strata_ec__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void strata_ec__drive_io_note(struct strata_set *set, unsigned d, enum strata_drive_io_op op,
                              uint64_t t0_ns, bool ok)
{
    if (d >= set->n || t0_ns == 0)
        return;
    uint64_t ns = strata_ec__now_ns() - t0_ns;
    struct strata_drive_io_stats *st = &set->drives[d].io[op];
    unsigned b = 0;
    while (b < STRATA_DRIVE_IO_BUCKETS && (double)ns > strata_drive_io_bounds_s[b] * 1e9)
        b++;
    __atomic_fetch_add(&st->bucket[b], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&st->sum_ns, ns, __ATOMIC_RELAXED);
    __atomic_fetch_add(&st->count, 1, __ATOMIC_RELAXED);
    if (!ok)
        __atomic_fetch_add(&st->errors, 1, __ATOMIC_RELAXED);
}

const char *strata_drive_io_op_name(enum strata_drive_io_op op)
{
    static const char *const names[STRATA_DRIVE_IO_OPS] = {
        "read", "write", "sync", "open", "rename", "remove", "store", "probe",
    };
    return (unsigned)op < STRATA_DRIVE_IO_OPS ? names[op] : "?";
}

void strata_set_drive_io_get(const struct strata_set *set, unsigned drive,
                             enum strata_drive_io_op op, struct strata_drive_io_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (drive >= set->n || (unsigned)op >= STRATA_DRIVE_IO_OPS)
        return;
    const struct strata_drive_io_stats *st = &set->drives[drive].io[op];
    for (unsigned b = 0; b <= STRATA_DRIVE_IO_BUCKETS; b++)
        out->bucket[b] = __atomic_load_n(&st->bucket[b], __ATOMIC_RELAXED);
    out->sum_ns = __atomic_load_n(&st->sum_ns, __ATOMIC_RELAXED);
    out->errors = __atomic_load_n(&st->errors, __ATOMIC_RELAXED);
    /* The count is the buckets' sum, so a scrape racing a note still sees
     * cumulative buckets that end at _count. */
    for (unsigned b = 0; b <= STRATA_DRIVE_IO_BUCKETS; b++)
        out->count += out->bucket[b];
}
