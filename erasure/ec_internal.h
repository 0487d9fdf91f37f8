/*
 * ec_internal.h - types shared by the files of erasure/ (never by other
 * modules): the set, its drives, the pool of io_uring contexts, and the
 * shard file header codec.
 *
 * Threads: struct strata_set is shared by every thread; its mutable parts
 * are the io context pool (pool_mu), the stats and the drive flags (relaxed
 * atomics).  An io context is owned by one writer/reader at a time.
 */
#ifndef STRATA_ERASURE_EC_INTERNAL_H
#define STRATA_ERASURE_EC_INTERNAL_H

#include <liburing.h>
#include <pthread.h>

#include "strata/assert.h"
#include "strata/erasure.h"

#define STRATA_EC_ALIGN 4096u
#define STRATA_EC_HDR_SIZE 4096u
#define STRATA_EC_UUID_LEN 36
#define STRATA_EC_POOL_KEEP 32 /* idle io contexts kept per set */
#define STRATA_EC_RING_ENTRIES 64
/* Stripe buffers per io context: a writer has up to NBUF - 1 stripes in
 * flight while it fills one, a sequential reader reads NBUF - 1 ahead.
 * NBUF * STRATA_DRIVES_MAX operations must fit the ring's completion queue
 * (2 * RING_ENTRIES). */
#define STRATA_EC_NBUF 4

struct strata_ec__drive {
    struct strata_drive_io_stats io[STRATA_DRIVE_IO_OPS]; /* by op; drive_io.c */
    char *path;
    char uuid[STRATA_EC_UUID_LEN + 1];
    bool online; /* written at open, read without lock afterwards */
    bool fresh;  /* atomically cleared by strata_set_drive_mark_healed */
    /* enum strata_drive_state, ONLINE when none (relaxed atomics, health.c):
     * fault from erasure's own writes, cleared by the probe; store_fault
     * from meta/'s store, cleared by its next successful write. */
    int fault, store_fault;
};

struct strata_ec__obs; /* observer helper thread, observe.c */

/*
 * One ring plus up to NBUF O_DIRECT-aligned stripe buffers (N shard blocks
 * each, contiguous, so the first K blocks are the stripe's object bytes in
 * order).  buf[0] exists from creation; the others are allocated on first
 * use (strata_ec__io_buf), so small objects never pay for the pipeline
 * depth.  obs is the observer helper thread, started on first use.
 * fixed: the buffers registered with the ring (bit i: buf[i] is fixed
 * buffer i), so their writes skip pinning the pages on every request;
 * a ring that refuses registration (locked-memory limit) writes them as
 * plain buffers.
 */
struct strata_ec__io {
    struct io_uring ring;
    uint8_t *buf[STRATA_EC_NBUF];
    bool fixed_table; /* the sparse table of NBUF fixed buffers exists */
    uint32_t fixed;
    struct strata_ec__obs *obs;
    struct strata_ec__io *next; /* free list link while pooled */
};

struct strata_set {
    unsigned n, k, m;
    unsigned set_index;
    size_t block_size; /* object bytes per stripe as formatted */
    size_t shard_size;
    unsigned layout; /* format version of the deployment: shard.c's block layout */
    bool direct_io; /* O_DIRECT probe succeeded on every online drive */
    uint64_t read_cached_max; /* strata_set_opts */
    bool no_fsync;
    struct strata_logger log;
    char deployment_id[STRATA_EC_UUID_LEN + 1];
    struct strata_ec__drive drives[STRATA_DRIVES_MAX];
    struct strata_ec_codec *codec;

    pthread_mutex_t pool_mu;
    struct strata_ec__io *pool;
    unsigned pool_len;

    struct strata_set_stats stats; /* updated with relaxed atomics */

    /* Health probe thread (health.c), started at open. */
    pthread_t probe_th;
    pthread_mutex_t probe_mu;
    pthread_cond_t probe_cv;
    bool probe_started, probe_stop;
};

/* Shard file header, decoded.  See shard.c for the on-disk table. */
struct strata_ec__hdr {
    uint32_t version;
    uint8_t data_id[STRATA_DATA_ID_LEN];
    uint32_t shard_index, k, m;
    uint64_t block_size, shard_size, object_size, block_count;
    uint32_t table_crc;
};

#define STRATA_EC__STAT_ADD(set, field, v)                                      \
    __atomic_fetch_add(&(set)->stats.field, (uint64_t)(v), __ATOMIC_RELAXED)

/* A shard I/O on drive d submitted at t0_ns (strata_ec__now_ns) has
 * completed; ok false for a failed or short one (drive_io.c). */
uint64_t strata_ec__now_ns(void);
void strata_ec__drive_io_note(struct strata_set *set, unsigned d, enum strata_drive_io_op op,
                              uint64_t t0_ns, bool ok);

/* A write-side operation on drive d failed with errno e: drive_err counts
 * it under op and sets the drive's state from e; drive_fault only sets the
 * state (for failures drive_io_note already counted).  Errors of the
 * process rather than the drive (ENOMEM, EMFILE, ECANCELED, ...) leave
 * the state alone (health.c). */
void strata_ec__drive_err(struct strata_set *set, unsigned d, enum strata_drive_io_op op, int e);
void strata_ec__drive_fault(struct strata_set *set, unsigned d, int e);
/* Online and neither read-only nor faulty: writers and heal write to it
 * (a full drive too: its space may have come back). */
bool strata_ec__drive_writable(const struct strata_set *set, unsigned d);
/* Probe thread of the set (health.c): start at the end of open (0 or
 * STRATA_ENOMEM), stop before close (joins; no-op if not started). */
int strata_ec__probe_start(struct strata_set *set);
void strata_ec__probe_stop(struct strata_set *set);

/* Creates the tmp/ file path for writing (open flags | O_CREAT | O_EXCL)
 * and holds an flock on it while the fd is open: strata_ec_tmp_reclaim
 * leaves a held file alone however old it is (a slow write is not a
 * leftover).  The fd, or -1 with open's errno. */
int strata_ec__tmp_create(const char *path, int flags);

/* Borrow an io context (ring + stripe buffers); NULL on failure with *err set. */
struct strata_ec__io *strata_ec__io_get(struct strata_set *set, int *err);
void strata_ec__io_put(struct strata_set *set, struct strata_ec__io *io);
/* Stripe buffer i of io, allocated on first use; NULL when out of memory. */
uint8_t *strata_ec__io_buf(const struct strata_set *set, struct strata_ec__io *io, unsigned i);

/* Observer helper (observe.c): declared in strata/erasure.h, which the
 * RADOS data tier also uses. */
_Static_assert(STRATA_EC_NBUF <= STRATA_EC_OBS_QUEUE, "a writer posts at most NBUF");

/* Drive that holds shard index `shard` of data_id (rotated). */
unsigned strata_ec__shard_drive(const struct strata_set *set,
                                const uint8_t data_id[STRATA_DATA_ID_LEN], unsigned shard);

/* "<drive>/data/<hh>/<32 hex>" and the subdir; 0 or STRATA_ENOMEM. */
int strata_ec__shard_path(const struct strata_set *set, unsigned drive,
                          const uint8_t data_id[STRATA_DATA_ID_LEN], char **path, char **dir);

/* Encode/decode the 4096-byte header.  decode returns STRATA_ECORRUPT on a bad
 * magic/CRC and STRATA_EFORMAT on an unknown version. */
void strata_ec__hdr_encode(const struct strata_ec__hdr *h, uint8_t out[STRATA_EC_HDR_SIZE]);
int strata_ec__hdr_decode(const uint8_t in[STRATA_EC_HDR_SIZE], struct strata_ec__hdr *h);

/* errno -> STRATA_E* at the syscall boundary (reads: ENOENT -> ENOTFOUND). */
int strata_ec__errno_map(int e);

size_t strata_ec__round_up(size_t v, size_t a);

/* fsync a directory by path (makes its new entries durable); errno-style
 * negative on failure. */
int strata_ec__dir_fsync(const char *p);

#endif /* STRATA_ERASURE_EC_INTERNAL_H */
