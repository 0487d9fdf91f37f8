/*
 * erasure.h - drive sets, the ISA-L Reed-Solomon codec, bitrot-checked shard
 * files and io_uring shard I/O.
 *
 * A drive is a directory holding format.json, meta/ (owned by meta/), data/
 * (shard files) and tmp/ (in-flight writes).  A set is N = K + M drives.  An
 * object's data is cut into stripes of K * shard_size bytes; each stripe is
 * encoded into K data and M parity shard blocks, one per drive.  Every shard
 * block carries a CRC32C that every read verifies.  Which drive holds which
 * shard index rotates with the data id, so parity load spreads over drives.
 *
 * Threads: a struct strata_set may be used from any number of threads at
 * once.  A writer or reader handle belongs to one thread at a time.
 * Nothing in this module prints; messages go to the injected logger.
 */
#ifndef STRATA_ERASURE_H
#define STRATA_ERASURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/err.h"
#include "strata/log.h"

#define STRATA_DRIVES_MIN 4
#define STRATA_DRIVES_MAX 16
#define STRATA_EC_BLOCK_SIZE_DEFAULT (1u << 20) /* bytes of object data per stripe */
#define STRATA_DATA_ID_LEN 16
/* On-disk format of a deployment (format.json, shard headers).  1: every
 * shard block is shard_size bytes, the last stripe zero padded.  2: the
 * last stripe's blocks are only as long as its bytes need (rounded up to
 * 4 KiB), so a 300 KiB object on 2+2 takes 4 x 160 KiB, not 4 x 520 KiB.
 * New deployments are formatted with the newest; older ones keep theirs. */
#define STRATA_FORMAT_VERSION 2
#define STRATA_FORMAT_VERSION_MIN 1

/* ---- checksums (CRC32C/CRC32 from ISA-L; CRC64/NVME table driven) ------ */

/* Each takes the running value (0 to start) and returns the new one. */
uint32_t strata_crc32c(uint32_t crc, const void *buf, size_t len);
uint32_t strata_crc32(uint32_t crc, const void *buf, size_t len);    /* IEEE, as gzip */
uint64_t strata_crc64nvme(uint64_t crc, const void *buf, size_t len); /* CRC-64/NVME */

/* ---- codec -------------------------------------------------------------- */

struct strata_ec_codec; /* ISA-L Cauchy matrix and expanded tables */

/* k >= 1, m >= 1, k + m <= STRATA_DRIVES_MAX.  Caller destroys. */
int strata_ec_codec_create(unsigned k, unsigned m, struct strata_ec_codec **out);
void strata_ec_codec_destroy(struct strata_ec_codec *c);

/* shards[0..k-1] hold data, shards[k..k+m-1] receive parity; len bytes each.
 * This function can't fail. */
void strata_ec_encode(const struct strata_ec_codec *c, uint8_t *const *shards, size_t len);

/*
 * Rebuild every shard i with present[i] == false, in place, from any k
 * present ones.  All k + m buffers must be allocated.  STRATA_ECORRUPT when
 * fewer than k are present.
 */
int strata_ec_reconstruct(const struct strata_ec_codec *c, uint8_t *const *shards,
                          const bool *present, size_t len);

/* ---- drive sets --------------------------------------------------------- */

struct strata_set;

struct strata_set_opts {
    unsigned m;           /* parity drives; 0 picks the default: N/2 rounded down, at most 4 */
    size_t block_size;    /* 0 picks STRATA_EC_BLOCK_SIZE_DEFAULT */
    unsigned set_index;   /* position of this set in the deployment */
    bool direct_io;       /* try O_DIRECT; falls back to buffered I/O where refused */
    /* With direct_io: readers of objects up to this many bytes read the
     * shard files through the page cache (every block's CRC is still
     * checked; heal always reads past the cache).  0: every read direct. */
    uint64_t read_cached_max;
    bool no_fsync;        /* benchmarks of the codec path only; never in the daemon */
    struct strata_logger log;
};

/*
 * Open the set made of the n drive directories in paths, in set order.
 * A drive directory that is empty (or does not exist and can be created) is
 * formatted: if other drives of the set are formatted it takes the place of
 * the missing member and is marked fresh (needs healing, see
 * strata_set_drive_fresh); if all are empty a new deployment is created.
 * Files left in the online drives' tmp/ by an interrupted write are removed.  A drive directory that cannot be read is
 * marked offline and the set still opens while at least K drives are online.
 * Refused with STRATA_EFORMAT, and ei->msg naming the drive path, when a
 * drive is from another deployment, is given in the wrong position, or has
 * an unknown format version.  Caller closes.
 */
int strata_set_open(const char *const *paths, unsigned n, const struct strata_set_opts *opts,
                    struct strata_set **out, struct strata_errinfo *ei);
void strata_set_close(struct strata_set *set);

unsigned strata_set_k(const struct strata_set *set);
unsigned strata_set_m(const struct strata_set *set);
unsigned strata_set_n(const struct strata_set *set);
unsigned strata_set_write_quorum(const struct strata_set *set); /* K, or K+1 when K == M */
unsigned strata_set_read_quorum(const struct strata_set *set);  /* K */
size_t strata_set_shard_size(const struct strata_set *set);     /* per stripe, 4 KiB aligned */
size_t strata_set_stripe_size(const struct strata_set *set);    /* K * shard size */
unsigned strata_set_format_version(const struct strata_set *set); /* STRATA_FORMAT_VERSION_MIN.. */
const char *strata_set_deployment_id(const struct strata_set *set);
const char *strata_set_drive_path(const struct strata_set *set, unsigned drive);
bool strata_set_drive_online(const struct strata_set *set, unsigned drive);
/* A replacement drive that heal has not refilled yet.  The state is kept
 * on the drive (a marker file written before its format.json), so it
 * survives restarts until strata_set_drive_mark_healed. */
bool strata_set_drive_fresh(const struct strata_set *set, unsigned drive);
/* The drive lost what it held (meta/ found its store gone): write its
 * marker durably, then set the flag.  0, STRATA_EINVAL for an offline
 * drive, or the write's STRATA_E* (the flag stays as it was). */
int strata_set_drive_mark_fresh(struct strata_set *set, unsigned drive);
/* Heal refilled the drive: remove its marker durably, then clear the flag.
 * 0, or STRATA_E* when the marker could not be removed (the drive stays fresh). */
int strata_set_drive_mark_healed(struct strata_set *set, unsigned drive);

/* Counters since open; read without locks (relaxed atomics). */
struct strata_set_stats {
    uint64_t bitrot_detected;     /* shard blocks whose CRC32C failed */
    uint64_t shards_missing;      /* shard reads that found no file or got EIO */
    uint64_t stripes_reconstructed;
    uint64_t shards_healed;
};
void strata_set_stats_get(const struct strata_set *set, struct strata_set_stats *out);

/* Per-drive shard I/O since open: the stripe reads and writes of the
 * readers and writers below (io_uring submit to completion), by drive.
 * Latency buckets are per bucket, not cumulative: bucket[i] counts I/Os
 * that took at most strata_drive_io_bounds_s[i] seconds (and more than
 * the bound before), bucket[STRATA_DRIVE_IO_BUCKETS] the rest; count is
 * their sum.  An error is a failed or short read or write; it is timed
 * too.  The other ops (below) only count errors: count, sum_ns and the
 * buckets stay 0.  Relaxed atomics. */
#define STRATA_DRIVE_IO_BUCKETS 14
extern const double strata_drive_io_bounds_s[STRATA_DRIVE_IO_BUCKETS];
/* Only read and write (the stripe I/Os) are timed; every op counts its
 * errors: open (create of a tmp file), sync (fsync of a file or directory),
 * rename, remove (unlink), store (a write of meta/'s store on the drive,
 * reported by strata_set_drive_store_result) and probe (the health probe). */
enum strata_drive_io_op {
    STRATA_DRIVE_IO_READ = 0,
    STRATA_DRIVE_IO_WRITE = 1,
    STRATA_DRIVE_IO_SYNC,
    STRATA_DRIVE_IO_OPEN,
    STRATA_DRIVE_IO_RENAME,
    STRATA_DRIVE_IO_REMOVE,
    STRATA_DRIVE_IO_STORE,
    STRATA_DRIVE_IO_PROBE,
};
#define STRATA_DRIVE_IO_TIMED 2 /* READ and WRITE have latencies */
#define STRATA_DRIVE_IO_OPS   8
const char *strata_drive_io_op_name(enum strata_drive_io_op op); /* "read", "sync", ... */
struct strata_drive_io_stats {
    uint64_t count, errors, sum_ns;
    uint64_t bucket[STRATA_DRIVE_IO_BUCKETS + 1];
};
void strata_set_drive_io_get(const struct strata_set *set, unsigned drive,
                             enum strata_drive_io_op op, struct strata_drive_io_stats *out);

/*
 * Drive health.  A drive that was usable at open is ONLINE until a write on
 * it fails: EROFS makes it READONLY, ENOSPC/EDQUOT FULL, any other I/O
 * error (EIO, a vanished tree) FAULTY.  Writers and heal skip a READONLY or
 * FAULTY drive (reads still use it; a FULL one is still tried, its space
 * may come back any moment).  A probe thread of the set (write, fsync and unlink
 * of a 4 KiB file in the drive's tmp/, every STRATA_DRIVE_PROBE_MS, never
 * on a request's path) returns it to ONLINE once that works again (a FULL
 * drive also needs four shard blocks of free space); heal then refills
 * what it missed.  Transitions are logged.  OFFLINE: not usable since open.
 * The failures of meta/'s store on the drive count too (below).
 */
enum strata_drive_state {
    STRATA_DRIVE_ONLINE = 0,
    STRATA_DRIVE_OFFLINE,
    STRATA_DRIVE_FAULTY,
    STRATA_DRIVE_READONLY,
    STRATA_DRIVE_FULL,
};
#define STRATA_DRIVE_STATES   5
#define STRATA_DRIVE_PROBE_MS 2000
/* "online", "offline", "faulty", "read-only", "full". */
const char *strata_drive_state_name(enum strata_drive_state st);
/* Any thread; relaxed atomics. */
enum strata_drive_state strata_set_drive_state(const struct strata_set *set, unsigned drive);
/* meta/ reports the outcome of each write to its store on the drive (it
 * maps the store's status, having no errno): ONLINE on success ends a
 * store fault; another state is counted as a failed op "store" and holds
 * the drive in that state until a store write
 * succeeds again.  Any thread. */
void strata_set_drive_store_result(struct strata_set *set, unsigned drive,
                                   enum strata_drive_state st);

/* A fresh random data id (OpenSSL RAND_bytes).  This function can't fail. */
void strata_data_id_new(uint8_t id[STRATA_DATA_ID_LEN]);

/* ---- streaming shard writer -------------------------------------------- */

/*
 * Writes one data object's N shard files under tmp/, stripe by stripe: bytes
 * fed in are buffered until a stripe is full (and more bytes come, or
 * finish), then encoded and fanned out to all online drives in one io_uring
 * submission (the next stripes fill while up to three previous ones are in
 * flight).  finish() writes the final stripe, each file's block CRC table
 * and header, fsyncs, and renames into data/.
 * Nothing is referenced by metadata until the caller commits it, so a crash
 * at any point leaves only unreferenced files for the scanner.
 */
struct strata_ec_writer;

int strata_ec_writer_create(struct strata_set *set, const uint8_t data_id[STRATA_DATA_ID_LEN],
                            struct strata_ec_writer **out);
/* STRATA_EQUORUM (or STRATA_ENOSPC when that is why) once fewer than the
 * write quorum of drives are still accepting writes. */
int strata_ec_writer_write(struct strata_ec_writer *w, const void *buf, size_t len);
/* On success *ok_mask has bit i set for every drive that holds its shard
 * durably; at least the write quorum.  On failure the tmp files are gone. */
int strata_ec_writer_finish(struct strata_ec_writer *w, uint32_t *ok_mask);
uint64_t strata_ec_writer_size(const struct strata_ec_writer *w); /* bytes fed so far */
/*
 * Observe the object bytes as they are written, for digests that should not
 * hold the caller up: cb(ud, data, len) sees every byte fed to w exactly
 * once, in order, read from w's own stripe buffers by a helper thread while
 * the caller goes on writing (or on the caller's thread, inside write and
 * finish, when no helper thread can be had).  Call before the first write,
 * at most once (else STRATA_EINVAL).  Every callback has returned when
 * finish() returns (whatever its result), when write() returns an error
 * and when destroy() returns; until then the caller must not touch what cb
 * updates.  cb must not call into w.
 */
typedef void (*strata_ec_observe_cb)(void *ud, const void *data, size_t len);
int strata_ec_writer_observe(struct strata_ec_writer *w, strata_ec_observe_cb cb, void *ud);
/* Optional, before the first write: the object will be size bytes.  Each
 * shard file is allocated to its final length (fallocate, at most 64 MiB
 * ahead of the bytes written: an announced size holds little space), so the
 * shard writes overwrite allocated space instead of extending the file,
 * which ext4 does not do without blocking: io_uring would hand every
 * O_DIRECT write to a worker thread.  A hint: when another size is
 * written, finish first truncates the files to the length it gives.
 * Durability is unchanged (finish's fsync covers data and allocation).
 * STRATA_EINVAL after a write, a second call, or on a failed writer. */
int strata_ec_writer_expect(struct strata_ec_writer *w, uint64_t size);
/* The observer's helper thread, for other writers too (the RADOS data
 * tier).  start: NULL when no thread can be had.  post: queue cb(ud, data,
 * len), returns its ticket; at most STRATA_EC_OBS_QUEUE items may be queued
 * and not yet run.  wait: until every item up to ticket has run.  last: the
 * newest ticket.  stop: runs what is queued, joins, frees (NULL: no-op).
 * Items run one at a time in post order; post/wait/stop from one thread. */
#define STRATA_EC_OBS_QUEUE 4
struct strata_ec__obs;
struct strata_ec__obs *strata_ec__obs_start(void);
uint64_t strata_ec__obs_post(struct strata_ec__obs *o, strata_ec_observe_cb cb, void *ud,
                             const void *data, size_t len);
void strata_ec__obs_wait(struct strata_ec__obs *o, uint64_t ticket);
uint64_t strata_ec__obs_last(struct strata_ec__obs *o);
void strata_ec__obs_stop(struct strata_ec__obs *o);
/* Removes tmp files if not finished; frees w.  NULL is a no-op. */
void strata_ec_writer_destroy(struct strata_ec_writer *w);

/* ---- streaming shard reader -------------------------------------------- */

/*
 * Reads byte ranges of a data object.  Reads only the K data shards of each
 * stripe it needs, verifies every block's CRC32C, and reconstructs from
 * parity when a shard is missing, unreadable or corrupt (counted in the set
 * stats).  Sequential reads are read ahead up to three stripes.  Never
 * returns wrong bytes: with fewer than K good shards the read fails with
 * STRATA_EQUORUM when drives are offline, STRATA_ENOTFOUND when every
 * failed shard's file does not exist (the data was deleted), else
 * STRATA_ECORRUPT.  A shard file is opened on its first use (parity ones
 * only when a data shard fails) and stays open until close; the caller
 * keeps the data from being deleted meanwhile (meta pins it).
 */
struct strata_ec_reader;

int strata_ec_reader_open(struct strata_set *set, const uint8_t data_id[STRATA_DATA_ID_LEN],
                          uint64_t size, struct strata_ec_reader **out);
/* Exactly len bytes at off into buf; off + len <= size. */
int strata_ec_reader_read(struct strata_ec_reader *r, uint64_t off, void *buf, size_t len);
/* Like read, without the copy: *p points at the bytes at off in the
 * reader's stripe buffer, *n of them (1..max; fewer when the stripe ends
 * first; 0 at off == size).  Valid until the next call on r. */
int strata_ec_reader_peek(struct strata_ec_reader *r, uint64_t off, size_t max,
                          const uint8_t **p, size_t *n);
/* The caller reads nothing at or past end (a Range answer's last byte + 1):
 * read-ahead stops at the stripe holding end - 1.  Reads past end still
 * work, without read-ahead beyond it.  Default: the object's size. */
void strata_ec_reader_limit(struct strata_ec_reader *r, uint64_t end);
void strata_ec_reader_close(struct strata_ec_reader *r); /* NULL is a no-op */

/* Rewrite the shard files of data_id that are missing or corrupt on any
 * online drive.  *healed counts shard files rewritten (may be NULL). */
int strata_ec_heal(struct strata_set *set, const uint8_t data_id[STRATA_DATA_ID_LEN], uint64_t size,
                   unsigned *healed);
/* Remove data_id's shard files from every drive.  Missing files are fine. */
int strata_ec_delete(struct strata_set *set, const uint8_t data_id[STRATA_DATA_ID_LEN]);
/* Remove tmp/ leftovers older than age_s seconds on every drive. */
int strata_ec_tmp_reclaim(struct strata_set *set, unsigned age_s, unsigned *removed);
/* Calls cb for each shard file under data/ on an online drive whose mtime
 * is at least age_s seconds old, with its data id (once per drive that
 * holds one).  A non-zero return from cb stops the walk and is returned. */
int strata_ec_data_list(struct strata_set *set, unsigned age_s,
                        int (*cb)(const uint8_t id[STRATA_DATA_ID_LEN], void *ud), void *ud);

/* ---- inline (small object) shards -------------------------------------- */

/*
 * Small objects live in the metadata records: drive i's record carries shard
 * i.  encode() returns one malloc'ed buffer of n * *shard_len bytes (shard i
 * at i * *shard_len; caller frees) and each shard's CRC32C in crcs[0..n-1].
 * Shard i belongs to drive i (no rotation for inline data).
 */
int strata_ec_inline_encode(const struct strata_set *set, const void *data, size_t len,
                            uint8_t **shards_buf, size_t *shard_len, uint32_t *crcs);
/*
 * shards[i] is drive i's shard or NULL when its record was not read.  Each
 * given shard is checked against crcs[i]; bad ones count as missing (and in
 * the set's bitrot counter).  Writes len bytes to out.  STRATA_ECORRUPT with
 * fewer than K good shards.
 */
int strata_ec_inline_decode(struct strata_set *set, const uint8_t *const *shards,
                            const uint32_t *crcs, size_t shard_len, size_t len, void *out);

#endif /* STRATA_ERASURE_H */
