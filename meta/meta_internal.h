/*
 * meta_internal.h - private types shared by the files of meta/.
 *
 * Nothing here leaves meta/: RocksDB handles live only behind these types.
 *
 * Key encoding (bytewise comparator; every value starts with a version byte):
 *
 *   KEY                                               VALUE
 *   'B' bucket                                        [0x01] msgpack map (bucket record)
 *                                                     or [0x02] tombstone (deleted bucket)
 *   'C' bucket 0x00 kind                              [0x01] document bytes, verbatim
 *   'O' bucket 0x00 key 0x00 sortkey[16]              [0x01] msgpack map (version record)
 *                                                     or [0x02] tombstone (deleted version)
 *   'T' bucket 0x00 key 0x00 sortkey[16] chunk[2]     [0x01] msgpack array (part table chunk)
 *   'U' bucket 0x00 key 0x00 upload[16]               [0x01] msgpack map (upload record)
 *                                                     or [0x02] tombstone (aborted upload)
 *                                                     or [0x03] msgpack map (completed upload)
 *   'P' upload[16] partno[4]                          [0x01] msgpack map (part record)
 *   'D' bucket 0x00 mtime[8] key 0x00 sortkey[16]     empty: version-time index entry (due.c)
 *   'S' name                                          [0x01] daemon state document (state.c)
 *   'R' bucket 0x00 key 0x00 sortkey[16]              [0x01] msgpack map (restored copy, restore.c)
 *
 * upload OFFSET SIZE DESCRIPTION
 *          0     8   big-endian initiation time, ns since the epoch
 *          8     8   random bytes
 * The upload id string is the 16 bytes in 32 lower-case hex characters, so
 * uploads of one key list in initiation order.  partno and chunk are
 * big-endian, so parts and chunks scan in number order.
 *
 * sortkey OFFSET SIZE DESCRIPTION
 *           0     8   big-endian UINT64_MAX - mtime_ns: newest version sorts first
 *           8     8   random bytes: unique among versions of one nanosecond
 * The version id string is the sortkey in 32 lower-case hex characters (so a
 * version id lookup is one Get), or "null" for the null version, whose
 * record carries REC_F_NULL and is found by scanning the key's versions.
 * Keys must not contain NUL: 0x00 ends the key, so "a" < "a/b" holds in the
 * encoded form exactly as in S3's binary key order.
 *
 * Version record map (msgpack, integer field keys, unknown keys skipped):
 *   FIELD TYPE      DESCRIPTION
 *   0     uint      record format version (REC_FORMAT)
 *   1     uint      flags: REC_F_DELETE_MARKER, REC_F_NULL, REC_F_INLINE
 *   2     uint      size in bytes
 *   3     str       etag (hex, no quotes)
 *   4     int       mtime, ns since the epoch
 *   5     bin[16]   data id (erasure-coded data; absent for inline/markers)
 *   6     bin       this drive's inline shard (drive i carries shard i)
 *   7     uint      CRC32C of the inline shard
 *   8     uint      inline shard length (equals len of field 6)
 *   9     str       storage class
 *   10    uint      checksum algorithm (enum strata_cksum_algo)
 *   11    bin       raw checksum
 *   12    array     stored headers, flat: name, value, name, value ...
 *   13    array     always empty (an early draft put parts here)
 *   14    uint      multipart: number of parts N (> 0 with REC_F_MULTIPART)
 *   15    bin       multipart: chunk index, per 'T' chunk c (parts c*MP_CHUNK_PARTS ..):
 *                   OFFSET 0 SIZE 8 big-endian object offset of the chunk's first part,
 *                   OFFSET 8 SIZE 4 big-endian CRC32C of the chunk's 'T' value
 *   16    uint      checksum type (enum strata_cksum_type)
 *   17    bin       tag set, verbatim (absent: no tags)
 *   18    uint      Object Lock retention mode (enum strata_lock_mode; absent: none)
 *   19    int       Object Lock retain-until date, Unix ms (with 18)
 *   20    bool      Object Lock legal hold (absent: never set, reads as off)
 *   21    bin       encryption: the caller's descriptor of the object key,
 *                   verbatim (absent: data stored as sent).  With it, the
 *                   data (inline or erasure-coded) is the chunked
 *                   AES-256-GCM stream of meta/sse.h, field 2 is the stored
 *                   (stream) size and field 22 the plaintext size.
 *   22    uint      encryption: plaintext size (present exactly with 21);
 *                   for a multipart version equal to field 2: its parts are
 *                   sealed one stream each (stream number = part number)
 *                   and their stored sizes are in the part table
 *   23    bin       access control list, verbatim (opaque to meta; the
 *                   server's encoding; absent: the default ACL, the bucket
 *                   owner with FULL_CONTROL)
 *   24    str       data tier name (absent: the hot tier, which holds the
 *                   records); a multipart version's parts all live there
 *   25, 26          the small-object log reference (local/slog.c)
 *   27    int       change stamp, ns: the order of the last in-place rewrite
 *                   (tags, ACL, lock, class...) among the key's changes,
 *                   after the version's mtime and any earlier rewrite
 *                   (strata_meta__stamp_after; absent: never rewritten).
 *                   Event sequencers follow it (strata_obj_info.seq_ns).
 * A multipart version has no data id: its parts' data ids, sizes, MD5s and
 * checksums are in its 'T' chunk records (MP_CHUNK_PARTS parts each), which
 * are written in the same batch as the version record and deleted after
 * the parts' data (so HEAD never reads them, and a ranged GET reads one
 * chunk, verified against the CRC32C in the version record).
 *
 * Tombstone (value of an 'O' key whose version was deleted for good):
 *   OFFSET SIZE DESCRIPTION
 *     0     1   VAL_TOMB_BYTE (0x02)
 *     1     8   big-endian deletion time, ns since the epoch
 * A hard delete (by version id, of an unversioned object, or of the null
 * version a write replaces) puts a tombstone over the version instead of
 * removing its key.  Sort keys are never reused, so per sort key the states
 * order absent < live < dead: a drive that missed the delete still holds
 * the live record, and any tombstone for that sort key overrides it in
 * reads, listings and heal.  A tombstone is only needed while some drive
 * may still hold the version: a commit that reached every drive of the set
 * drops its tombstones right away (store.c, unsynced), and heal copies the
 * others to every drive and drops them once every drive holds one.  A
 * tombstone never decodes as a record.
 *
 * Part table chunk ('T'): array of parts, each
 *   [uint part number, uint size, bin[16] MD5, bin data id (16, or 0 for an
 *    empty part), bin raw checksum, optional uint stored size (encrypted
 *    parts: size is the plaintext size, this the sealed stream's)]
 *
 * Upload record ('U', value byte 0x01) map: 0 format, 1 initiated ns, 2 checksum algorithm,
 *   3 checksum type, 4 stored headers (flat array as field 12 above),
 *   5 tag set (bin), 6 storage class, 7 lock mode, 8 retain-until ms,
 *   9 legal hold (7-9 as version fields 18-20; absent: none; 9 nil: never set),
 *   10 encryption descriptor (bin; the version record's field 21 for the
 *   completed object; its parts are sealed), 11 access control list (bin;
 *   the version record's field 23 for the completed object), 12 tier name
 *   of the parts' data (absent: hot).
 * Upload key states (mpu.c upload_state, heal.c heal_upload): upload ids
 * are never reused, so per key absent < live (0x01) < dead: an abort puts
 * a tombstone (VAL_TOMB_BYTE + 8-byte big-endian abort time, as for
 * versions), a complete the completed-upload record below, each in the
 * same batch that deletes the part records.  A dead state on any drive
 * outvotes a live record a drive kept (it missed the abort or complete).
 * A tombstone goes at once when every drive of the set took it (store.c),
 * else once heal has put it on every drive; a completed-upload record
 * stays for strata_meta_opts.mpu_retry_s after the complete, then heal
 * drops it once every drive holds a dead state.
 *
 * Completed-upload record ('U', value byte VAL_DONE_BYTE 0x03) map
 * (struct meta_done): 0 format (REC_FORMAT), 1 completion ns (int),
 *   2 part list digest bin[32] (SHA-256, mpu.c list_digest), 3 version
 *   sort key bin[16], 4 version flags (REC_F_MULTIPART, REC_F_NULL),
 *   5 ETag, 6 size (plaintext), 7 version mtime ns, 8 checksum algorithm,
 *   9 checksum type, 10 raw checksum (bin), 11 number of parts, 12 storage
 *   class, 13 encryption descriptor (bin; absent: stored as sent).  0-12
 *   are required.  What a repeated CompleteMultipartUpload is answered
 *   with.
 *
 * Part record ('P') map: 0 format, 1 size, 2 MD5 bin[16], 3 mtime ns,
 *   4 data id bin[16] (absent for an empty part), 5 checksum algorithm,
 *   6 raw checksum, 7 bucket, 8 key (so heal can take the key's lock),
 *   9 stored size of an encrypted part (field 1 is then its plaintext size),
 *   10 tier name of the part's data (absent: hot).  Part records have no
 *   dead state of their own: they live while their upload does, and heal
 *   removes one whose upload record is dead on any drive or absent on a
 *   write quorum (heal_part_rec).
 *
 * Transition intent ('X' bucket 0x00 key 0x00 sortkey[16], in the version's
 * set) map: 0 format, 1 source tier (str, "" = hot), 2 target tier, 3 array
 * of the source data ids (bin[16]), 4 array of the target data ids.  Written
 * on the write quorum before a transition copies anything; removed once the
 * data ids the version record does not refer to are gone (transition.c).
 *
 * Bucket record map: 0 format, 1 name, 2 owner, 3 region, 4 created_ms,
 *   5 versioning, 6 object_lock, 7 incarnation (uint, random per create;
 *   absent in records written before it existed: 0), 8 default retention
 *   mode, 9 default retention days, 10 default retention years (8-10
 *   absent: no default), 11 state time ns (int: when this state was
 *   written, by create or a change; absent in older records: created_ms).
 * Bucket names are reused, so the newest state wins by time
 * (strata_meta__bucket_newest): a live record's state time against a
 * tombstone's deletion time.  DeleteBucket writes a tombstone (VAL_TOMB_BYTE
 * + 8-byte big-endian time), every new state is stamped after the newest
 * one any drive holds (local/bucket.c bucket_stamp), and the tombstones go as
 * those of uploads do.
 */
#ifndef STRATA_META_META_INTERNAL_H
#define STRATA_META_META_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <rocksdb/c.h>

#include "dcache.h"
#include "store.h"
#include "strata/meta.h"
#include "strata/tier.h"

#define REC_FORMAT 1
#define VAL_VERSION_BYTE 0x01
#define VAL_TOMB_BYTE 0x02
#define VAL_DONE_BYTE 0x03 /* 'U' only: a completed upload (struct meta_done) */
#define TOMB_LEN 9
#define SORTKEY_LEN 16

#define REC_F_DELETE_MARKER 0x1u
#define REC_F_NULL 0x2u
#define REC_F_INLINE 0x4u
#define REC_F_MULTIPART 0x8u

#define MP_CHUNK_PARTS 128 /* parts per 'T' record: 10,000 parts are 79 records */
#define MP_IDX_ENT 12
#define UPLOAD_LEN 16

#define META_LOCK_STRIPES 512
#define META_PIN_SLOTS 256     /* hash slots of the reader pin table (pin.c) */
#define META_BUCKET_STRIPES 64 /* bucket_rw stripes (local/bucket.c) */
#define META_PARTS_MAX 10000

/* A decoded version record.  Pointers (shard) point into the buffer it was
 * decoded from; hdrs is owned (freed by strata_meta__rec_fini) when decoded
 * with want_hdrs, and borrowed when filled for encoding. */
struct meta_rec {
    uint32_t flags;
    uint64_t size;
    char etag[STRATA_ETAG_MAX + 1];
    int64_t mtime_ns;
    bool has_data_id;
    uint8_t data_id[STRATA_DATA_ID_LEN];
    const uint8_t *shard;
    size_t shard_len;
    uint32_t shard_crc;
    char storage_class[32];
    int cksum_algo;
    uint8_t cksum[STRATA_CKSUM_RAW_MAX];
    size_t cksum_len;
    struct strata_kv *hdrs;
    size_t nhdrs;
    void *hdr_buf; /* owned block behind hdrs when decoded */
    size_t nparts;         /* multipart: number of parts */
    const uint8_t *pidx;   /* multipart: chunk index (points into the buffer) */
    size_t pidx_len;
    int cksum_type;
    const uint8_t *tags;   /* points into the buffer; NULL when none */
    size_t tags_len;
    struct strata_obj_lock lock;
    const uint8_t *sse;    /* field 21; points into the buffer; NULL: not encrypted */
    size_t sse_len;
    uint64_t psize;        /* field 22: plaintext size of an encrypted version */
    const uint8_t *acl;    /* field 23; points into the buffer; NULL: default ACL */
    size_t acl_len;
    char tier[STRATA_TIER_NAME_MAX + 1]; /* field 24: data tier; "" = the hot tier */
    /* Fields 25, 26: the inline shard is in this drive's small-object log
     * (local/slog.c) at segment log_seg, offset log_off (shard_len bytes,
     * CRC32C shard_crc); shard is NULL until strata_meta__slog_load. */
    bool logged;
    uint64_t log_seg, log_off;
    int64_t changed_ns; /* field 27: the last rewrite's change stamp; 0: none */
};

/* One part, as in a part record or a part table chunk. */
struct meta_part {
    unsigned number;
    uint64_t size;
    uint8_t md5[16];
    bool has_data_id;
    uint8_t data_id[STRATA_DATA_ID_LEN];
    int cksum_algo;
    uint8_t cksum[STRATA_CKSUM_RAW_MAX];
    size_t cksum_len;
    int64_t mtime_ns;
    uint64_t ssize; /* encrypted part: stored (sealed) size; 0 otherwise */
    char tier[STRATA_TIER_NAME_MAX + 1]; /* part record field 10: data tier; "" = hot */
};

/* A decoded upload record; hdrs/tags are owned when decoded (upload_fini). */
struct meta_upload {
    int64_t init_ns;
    int cksum_algo;
    int cksum_type;
    char storage_class[32];
    struct strata_kv *hdrs;
    size_t nhdrs;
    void *hdr_buf;
    uint8_t *tags;
    size_t tags_len;
    struct strata_obj_lock lock;
    uint8_t *sse; /* encryption descriptor, owned; NULL: parts stored as sent */
    size_t sse_len;
    uint8_t *acl; /* access control list of the final object, owned; NULL: default */
    size_t acl_len;
    char tier[STRATA_TIER_NAME_MAX + 1]; /* field 12: the parts' tier; "" = hot */
};

struct meta_drive;

/* One unit of work for a drive's writer thread: a batch and where to report.
 * A job without a wait is a rider: the writer thread owns it and its batch,
 * writes it with the next group and frees both (store.c, tombs_drop). */
struct meta_wjob {
    struct meta_wjob *next;
    rocksdb_writebatch_t *wb;
    const struct meta_slog_hints *hints; /* NULL: none */
    int rc;
    struct meta_wwait *wait;
};

struct meta_wwait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned pending;
};

struct meta_drive {
    struct strata_meta *m;
    unsigned set, idx;
    rocksdb_t *db; /* NULL when offline */
    pthread_t thr;
    bool thr_started;
    pthread_mutex_t mu; /* protects head, tail, stop and the write-failure state */
    pthread_cond_t cv;
    struct meta_wjob *head, *tail;
    bool stop;
    /* Write-failure state (store.c): the store refused a write; writes
     * skip it until wretry_ns, when one write probes it again. */
    bool wfail, wfail_nospc;
    uint64_t wretry_ns;
    /* Its WAL failed while the memtable was empty: no write reaches db
     * again before a restart, not even a probe (store.c). */
    bool wdead;
    /* Every write to db holds it shared, a WAL sync exclusive: a sync never
     * runs beside a write that may fail (store.c). */
    pthread_rwlock_t io_rw;
    /* The small-object log (local/slog.c); NULL: none on this drive. */
    struct meta_slog *slog;
};

/* Level-0 files that start a merge into level 1, and level 1's least
 * size (RocksDB's default); level 1 holds one level-0 batch (store.c). */
#define STRATA_META_L0_TRIGGER 8
#define STRATA_META_L1_MIN ((uint64_t)256 << 20)

struct meta_set {
    struct strata_set *set;
    unsigned n;
    struct meta_drive drives[STRATA_DRIVES_MAX];
};

struct strata_meta__store_ops;

struct strata_meta {
    /* The store seam (store.h): the cluster state goes through it. */
    const struct strata_meta__store_ops *store;
    void *store_priv; /* the backend's own state (RADOS: meta/rados/rados.h); local: NULL */
    struct meta_set *sets;
    unsigned nsets;
    size_t inline_max;
    bool slog_on;            /* strata_meta_opts.small_object_log: append inline shards */
    uint64_t slog_seg_bytes; /* a segment is sealed past this size */
    uint64_t slog_grace_ms;  /* a dead segment is unlinked after this */
    uint64_t slog_compact_ms; /* the compaction thread's period */
    struct meta_slog_compactor *slog_compactor; /* local/slog_compact.c; NULL: none */
    size_t object_cache_mb; /* the latest-version cache's budget (local/rcache.c) */
    size_t memtable_size; /* write_buffer_size of every store (strata_meta_opts.memtable_mb) */
    size_t part_size_min;
    int64_t mpu_retry_ns; /* completed-upload records answer retries this long (mpu.c) */
    struct strata_logger log;
    rocksdb_cache_t *cache;
    rocksdb_block_based_table_options_t *bbto;
    rocksdb_options_t *dbopts;
    rocksdb_writeoptions_t *wsync;
    rocksdb_writeoptions_t *wnosync; /* tombstone drops only (store.c) */
    rocksdb_readoptions_t *ropts;
    rocksdb_readoptions_t *ropts_nocache; /* maintenance reads (heal): see strata_meta__iter_new */
    pthread_mutex_t bucket_mu; /* serialises bucket record changes */
    pthread_mutex_t key_mu[META_LOCK_STRIPES];
    /* Per key stripe: odd while a key_txn of one of its keys commits
     * (under key_mu), bumped before and after; lock-free quorum reads
     * use it to tell a half-applied commit from a settled state (qread.c). */
    _Atomic uint64_t key_wseq[META_LOCK_STRIPES];
    /* Commits of versions and uploads hold their bucket's stripe shared
     * and re-check the bucket; DeleteBucket holds it exclusive (local/bucket.c). */
    pthread_rwlock_t bucket_rw[META_BUCKET_STRIPES];
    /* Reader pins and parked drops (pin.c), guarded by pin_mu. */
    pthread_mutex_t pin_mu;
    struct meta_pin *pins[META_PIN_SLOTS];
    uint64_t drop_gen[META_LOCK_STRIPES];
    /* Data tiers: tiers[0] is the hot tier over the sets above (created
     * here), the others are the caller's (strata_meta_opts.tiers). */
    struct strata_tier *tiers[STRATA_TIERS_MAX];
    unsigned ntiers;
    /* Bit i: tiers[i] is an archive tier, read only through restored
     * copies (restore.c, strata_meta_tier_archive). */
    uint32_t archive_tiers;
    struct meta_audit *audit;           /* local/audit_files.c */
    pthread_mutex_t heal_mu;            /* one heal at a time (heal.c) */
    struct meta_healq *healq;           /* keys of commits that missed a drive (healq.c) */
    struct meta_lock_clock *lock_clock; /* lock_clock.c */
    struct meta_rcache *rcache;         /* latest versions read (local/rcache.c); NULL: none */
    struct meta_dcache *dcache;         /* whole data objects GETs read (dcache.c); NULL: none */
    bool dcache_on_write;               /* and the ones PUTs store (data_cache_on_write) */
    void (*step_hook)(void *ud, int step); /* transition.c: fault tests */
    void *step_ud;
};

/* ---- local/slog.c: the small-object log (format and reclaim: README) ---- */
struct meta_slog;
/* What a commit read of an 'O' key on one drive under the key's lock,
 * before its batch: the log reference the value names (logged false: a
 * value without one, or none).  The write's accounting takes it instead of
 * reading the value back; the key is read when no hint names it.  A
 * logged hint must be exact: it is subtracted from the live bytes. */
struct meta_slog_hint {
    const char *k;
    size_t kl;
    bool logged;
    uint64_t seg, off, len;
};
/* A commit's hints for one drive (a put: the replaced version's key and
 * the new one's). */
struct meta_slog_hints {
    struct meta_slog_hint h[2];
    size_t n;
};
/* 'L' seg[8, big-endian]: 8 bytes big-endian, the live bytes of the
 * drive's log segment seg (absent: none). */
#define SLOG_LKEY_LEN 9
/* Open drive (set, d)'s log in DRIVE/slog (created when m->slog_on; when
 * off, an existing one is opened read only): *out NULL when there is none.
 * Reads db's 'L' keys.  Caller closes after db's writer stopped. */
int strata_meta__slog_open(struct strata_meta *m, unsigned set, unsigned d, rocksdb_t *db,
                           const char *drive, struct meta_slog **out);
void strata_meta__slog_close(struct meta_slog *s);
/* Append r's shard (shard, shard_len, shard_crc set) to the log: then r
 * refers to it (logged, shard NULL).  STRATA_ENOTIMPL when s is NULL, read
 * only or the shard empty; other errors when the append failed.  On
 * error r is unchanged (the record keeps its shard inline). */
int strata_meta__slog_put(struct meta_slog *s, struct meta_rec *r);
/* A logged record's shard read and checked: r->shard and *buf (caller
 * frees) point at it.  0 also for a record not logged (*buf NULL);
 * STRATA_ECORRUPT (r->shard NULL) for a missing, short or bad shard;
 * with nowait (event threads), STRATA_EBUSY when the bytes are not in the
 * page cache (RWF_NOWAIT). */
int strata_meta__slog_load(struct meta_slog *s, struct meta_rec *r, bool nowait, uint8_t **buf);
/* rocksdb_write of wb for a drive with a log: the appends made so far
 * fdatasync'ed first, and the live bytes its 'O' writes change put in the
 * same write.  err as rocksdb_write's (also set when the log failed). */
int strata_meta__slog_write(struct meta_slog *s, rocksdb_t *db, rocksdb_writeoptions_t *wo,
                            rocksdb_writebatch_t *wb, const struct meta_slog_hint *hints,
                            size_t nhints, char **err);
/* Unlink the dead sealed segments whose grace is over (syncing the WAL
 * first); returns the monotonic ns of the next one due, 0: none.  Writer
 * thread and the compaction thread, outside io_rw. */
uint64_t strata_meta__slog_reap(struct meta_slog *s);
/* Up to max sealed segments at most half live whose appends all have their
 * records written, each picked once per open, into ids (compaction). */
size_t strata_meta__slog_victims(struct meta_slog *s, uint64_t *ids, size_t max);
/* How many replaced values the accounting read from the store for want of
 * a hint, and how many segment fdatasyncs the writes made (tests). */
void strata_meta__slog_counts(struct meta_slog *s, uint64_t *acct_reads, uint64_t *syncs);
/* local/slog_compact.c: the compaction thread (m->slog_on only); stop is a
 * no-op when it never started.  compact_round: one pass over every drive,
 * moving the live shards of the victims; the shards moved in *moved. */
int strata_meta__slog_compactor_start(struct strata_meta *m);
void strata_meta__slog_compactor_stop(struct strata_meta *m);
int strata_meta__slog_compact_round(struct strata_meta *m, uint64_t *moved);

/* ---- record.c ---- */
size_t strata_meta__key_obj(char *out, size_t cap, const char *bucket, const char *key,
                            const uint8_t *sortkey);
size_t strata_meta__key_bucket(char *out, size_t cap, const char *bucket);
size_t strata_meta__key_config(char *out, size_t cap, const char *bucket, const char *kind);
void strata_meta__sortkey_new(int64_t mtime_ns, uint8_t sk[SORTKEY_LEN]);
/* The same with the random half given (a key_txn view's rand). */
void strata_meta__sortkey_make(int64_t mtime_ns, const uint8_t rnd[8], uint8_t sk[SORTKEY_LEN]);
int64_t strata_meta__sortkey_mtime(const uint8_t sk[SORTKEY_LEN]);
/* The change stamp of a change of r's key decided at now_ns (wall clock):
 * now_ns, or just after r's last change (its mtime or its last rewrite's
 * stamp, field 27) when the clock is not past it.  Stamps of one key's
 * changes so grow in the order the index commits them, whichever
 * gateway's clock decides.  This function can't fail. */
int64_t strata_meta__stamp_after(const struct meta_rec *r, int64_t now_ns);
void strata_meta__vid_format(const uint8_t sk[SORTKEY_LEN], char out[STRATA_VERSION_ID_MAX + 1]);
int strata_meta__vid_parse(const char *vid, uint8_t sk[SORTKEY_LEN]);
/* Returns a malloc'ed value (caller frees) in out and outlen. */
int strata_meta__rec_encode(const struct meta_rec *r, char **out, size_t *outlen);
int strata_meta__rec_decode(const void *buf, size_t len, bool want_hdrs, struct meta_rec *r);
/* The tombstone value of a version deleted at del_ns (TOMB_LEN bytes). */
void strata_meta__tomb_encode(int64_t del_ns, char out[TOMB_LEN]);
static inline bool strata_meta__is_tomb(const void *v, size_t vl)
{
    return vl >= 1 && *(const uint8_t *)v == VAL_TOMB_BYTE;
}
static inline bool strata_meta__is_done(const void *v, size_t vl)
{
    return vl >= 1 && *(const uint8_t *)v == VAL_DONE_BYTE;
}
/* A dead state: a tombstone, or (upload keys) a completed upload. */
static inline bool strata_meta__is_dead(const void *v, size_t vl)
{
    return strata_meta__is_tomb(v, vl) || strata_meta__is_done(v, vl);
}
/* Into wb: k set to v (put) or deleted (!put), the one write of a batch
 * that either stores a value or removes it (an undo batch's old value). */
static inline void strata_meta__wb_write(rocksdb_writebatch_t *wb, const char *k, size_t kl,
                                         bool put, const char *v, size_t vl)
{
    if (put)
        rocksdb_writebatch_put(wb, k, kl, v, vl);
    else
        rocksdb_writebatch_delete(wb, k, kl);
}
/* A name that becomes part of an object name (state.c): 1 to max bytes,
 * each one of chars. */
bool strata_meta__name_plain(const char *name, size_t max, const char *chars);
/* Frees an owned byte field (tag set, ACL, encryption descriptor) and
 * leaves it empty. */
static inline void strata_meta__bytes_free(uint8_t **p, size_t *len)
{
    free(*p);
    *p = NULL;
    *len = 0;
}
/* A new version's record borrows what its request stores with it: the
 * headers, the tag set and the ACL. */
static inline void strata_meta__rec_borrow(struct meta_rec *r, struct strata_kv *hdrs,
                                           size_t nhdrs, const uint8_t *tags, size_t tags_len,
                                           const uint8_t *acl, size_t acl_len)
{
    r->hdrs = hdrs;
    r->nhdrs = nhdrs;
    r->tags = tags;
    r->tags_len = tags_len;
    r->acl = acl;
    r->acl_len = acl_len;
}
/* The deletion time of a tombstone (TOMB_LEN bytes or more). */
int64_t strata_meta__tomb_time(const void *v, size_t vl);
void strata_meta__rec_fini(struct meta_rec *r);
/* Same version: flags, size, etag, data id, mtime. */
bool strata_meta__rec_same(const struct meta_rec *a, const struct meta_rec *b);
/* The same version's data (flags, size, etag, mtime, data id, part index):
 * records that may differ only in what is rewritten in place (tags, lock). */
bool strata_meta__rec_same_data(const struct meta_rec *a, const struct meta_rec *b);
int strata_meta__bucket_encode(const struct strata_bucket_info *b, char **out, size_t *outlen);
int strata_meta__bucket_decode(const void *buf, size_t len, struct strata_bucket_info *b);
/* A stored record as a backend's bucket_get answers it: decode v (then
 * freed) into out, which may be NULL (only whether it decodes). */
int strata_meta__bucket_decode_take(char *v, size_t vl, struct strata_bucket_info *out);
/* With the state time (field 11; 0: none written).  decode_at's state_ns
 * (may be NULL) falls back to the creation time for older records. */
int strata_meta__bucket_encode_at(const struct strata_bucket_info *b, int64_t state_ns, char **out,
                                  size_t *outlen);
int strata_meta__bucket_decode_at(const void *buf, size_t len, struct strata_bucket_info *b,
                                  int64_t *state_ns);
/* Bounds check of a msgpack byte string before msgpack-c allocates for it. */
bool strata_meta__mp_sane(const uint8_t *p, size_t len);

size_t strata_meta__key_upload(char *out, size_t cap, const char *bucket, const char *key,
                               const uint8_t *upload);
size_t strata_meta__key_part(char *out, const uint8_t upload[UPLOAD_LEN], unsigned partno);
size_t strata_meta__key_ptab(char *out, size_t cap, const char *bucket, const char *key,
                             const uint8_t *sk, unsigned chunk);
int strata_meta__upload_encode(const struct meta_upload *u, char **out, size_t *outlen);
int strata_meta__upload_decode(const void *buf, size_t len, struct meta_upload *u);
void strata_meta__upload_fini(struct meta_upload *u);
/* What ListMultipartUploads and ListParts show of upload u of bucket/key. */
void strata_meta__upload_info(struct strata_mpu_info *out, const char *bucket, const char *key,
                              const uint8_t upload[UPLOAD_LEN], const struct meta_upload *u);
/* A completed upload: what answers a repeated CompleteMultipartUpload. */
struct meta_done {
    int64_t done_ns;    /* when the complete committed */
    uint8_t digest[32]; /* SHA-256 of the part list (mpu.c, list_digest) */
    uint8_t sk[SORTKEY_LEN];
    uint32_t flags; /* the version's: REC_F_MULTIPART, REC_F_NULL */
    char etag[STRATA_ETAG_MAX + 1];
    uint64_t size; /* plaintext */
    int64_t mtime_ns;
    int cksum_algo, cksum_type;
    uint8_t cksum[STRATA_CKSUM_RAW_MAX];
    size_t cksum_len;
    size_t nparts;
    char storage_class[32];
    const uint8_t *sse; /* encryption descriptor (points into the buffer) */
    size_t sse_len;
};
int strata_meta__done_encode(const struct meta_done *d, char **out, size_t *outlen);
int strata_meta__done_decode(const void *buf, size_t len, struct meta_done *d);
int strata_meta__part_encode(const struct meta_part *p, const char *bucket, const char *key,
                             char **out, size_t *outlen);
/* bucket/key (may be NULL) receive the owner key, NUL-terminated. */
int strata_meta__part_decode(const void *buf, size_t len, struct meta_part *p,
                             char bucket[STRATA_BUCKET_NAME_MAX + 1],
                             char key[STRATA_KEY_MAX + 1]);
int strata_meta__ptab_encode(const struct meta_part *parts, size_t n, char **out,
                             size_t *outlen);
/* Decodes up to cap parts into parts; *n receives the count. */
int strata_meta__ptab_decode(const void *buf, size_t len, struct meta_part *parts, size_t cap,
                             size_t *n);
size_t strata_meta__cksum_len(int algo);

/* ---- due.c ---- */
/* 'D' bucket 0x00 mtime_ns[8]: where bucket's entries of that time start;
 * its length (2 + blen + 8). */
size_t strata_meta__key_due_prefix(char *out, const char *bucket, size_t blen, uint64_t mtime_ns);
/* The mtime (ms) of an index key of a bucket name blen bytes long. */
int64_t strata_meta__key_due_mtime_ms(const char *k, size_t blen);
/* The index key of an 'O' key (0 when k is not one). */
size_t strata_meta__key_due_of_obj(char *out, size_t cap, const char *ok, size_t okl);
/* Append to wb the index puts/deletes of its 'O' puts, tombstones and deletes. */
void strata_meta__due_hook(rocksdb_writebatch_t *wb);

/* ---- healq.c ---- */
int strata_meta__healq_init(struct strata_meta *m);
void strata_meta__healq_fini(struct strata_meta *m);
/* Queue the record keys of wb (a batch of set) for heal. */
void strata_meta__healq_push(struct strata_meta *m, unsigned set, rocksdb_writebatch_t *wb);
/* Heal up to max (0 = all) queued keys into *st; the caller holds
 * heal_mu.  Returns how many keys it took. */
size_t strata_meta__heal_queued_locked(struct strata_meta *m, size_t max,
                                       struct strata_heal_stats *st);

/* ---- heal.c ---- */
struct meta_hctx;
/* Heal one record key of set (under its key lock), as strata_meta_heal_all does. */
void strata_meta__heal_key(struct strata_meta *m, unsigned set, const char *k, size_t kl,
                           struct strata_heal_stats *st, unsigned *failed);

/* ---- cksum.c ---- */
/* CRC of A||B from crc(A), crc(B) and len(B), as zlib's crc32_combine, for
 * CRC32, CRC32C and CRC64NVME (all reflected, init = xorout = all ones). */
uint64_t strata_meta__crc_combine(int algo, uint64_t crc_a, uint64_t crc_b, uint64_t len_b);

/* ---- store.c ---- */
bool strata_meta__drive_readable(const struct strata_meta *m, unsigned set, unsigned d);
/* Apply wbs[d] (NULL = skip) on every drive concurrently with synced writes;
 * ok[d] says which drives committed.  Returns the number committed. */
unsigned strata_meta__set_apply(struct strata_meta *m, unsigned set, rocksdb_writebatch_t **wbs,
                                bool *ok);
/* As set_apply, then rolls back with undo[] (NULL entries skip) and returns
 * STRATA_EQUORUM when fewer than the write quorum committed (STRATA_ENOSPC
 * when full drives are at least half of the drives that missed it). */
int strata_meta__set_commit(struct strata_meta *m, unsigned set, rocksdb_writebatch_t **wbs,
                            rocksdb_writebatch_t **undo);
/* As set_commit, with undo[] (all NULL) filled by undo_fn only when the
 * rollback runs: building it copies each drive's replaced record (an
 * inline version's shard) for a rollback that a commit reaching its quorum
 * never needs. */
typedef void (*meta_undo_fn)(void *ud, rocksdb_writebatch_t **undo);
int strata_meta__set_commit_lazy(struct strata_meta *m, unsigned set, rocksdb_writebatch_t **wbs,
                                 rocksdb_writebatch_t **undo, meta_undo_fn undo_fn, void *ud);
/* The same with hints[d] (may be NULL) for drive d's batch: a key txn's,
 * under its key lock. */
int strata_meta__set_commit_hinted(struct strata_meta *m, unsigned set,
                                   rocksdb_writebatch_t **wbs,
                                   const struct meta_slog_hints *hints,
                                   rocksdb_writebatch_t **undo, meta_undo_fn undo_fn, void *ud);
/* Destroy the per-drive batches and undos of a commit (NULL entries skip). */
void strata_meta__batches_free(rocksdb_writebatch_t **wbs, rocksdb_writebatch_t **undo);
/*
 * Every write to a drive's store outside set_apply goes through these (heal,
 * the version-time index, tombstone drops), so a store that failed a write
 * is skipped and a WAL sync never meets a failed WAL (store.c).  They return
 * 0, STRATA_ENOSPC (drive full) or STRATA_EIO (offline, failed, or skipped
 * while failed).  drive_sync_wal makes the unsynced writes durable.
 */
int strata_meta__drive_put(struct strata_meta *m, unsigned set, unsigned d,
                           rocksdb_writeoptions_t *wo, const char *k, size_t kl, const char *v,
                           size_t vl);
int strata_meta__drive_delete(struct strata_meta *m, unsigned set, unsigned d,
                              rocksdb_writeoptions_t *wo, const char *k, size_t kl);
int strata_meta__drive_write(struct strata_meta *m, unsigned set, unsigned d,
                             rocksdb_writeoptions_t *wo, rocksdb_writebatch_t *wb);
int strata_meta__drive_sync_wal(struct strata_meta *m, unsigned set, unsigned d);
/* Get into a malloc'ed buffer; STRATA_ENOTFOUND when absent. */
int strata_meta__drive_get(struct strata_meta *m, unsigned set, unsigned d, const char *k,
                           size_t klen, char **val, size_t *vlen);
/* The same for maintenance reads (heal), which leave the block cache alone. */
int strata_meta__drive_get_uncached(struct strata_meta *m, unsigned set, unsigned d,
                                    const char *k, size_t klen, char **val, size_t *vlen);
unsigned strata_meta__set_of(const struct strata_meta *m, const char *bucket, const char *key);
uint32_t strata_meta__key_hash(const char *bucket, const char *key);
pthread_mutex_t *strata_meta__key_lock(struct strata_meta *m, const char *bucket,
                                       const char *key);
/* The key's stripe commit sequence (key_wseq). */
_Atomic uint64_t *strata_meta__key_wseq(struct strata_meta *m, const char *bucket, const char *key);
/* fill_cache false: a maintenance walk, whose blocks stay out of the block
 * cache so that it does not evict what foreground reads keep there. */
rocksdb_iterator_t *strata_meta__iter_new(struct strata_meta *m, unsigned set, unsigned d,
                                          rocksdb_readoptions_t **ro, const char *upper,
                                          size_t upper_len, bool fill_cache);
/* Up to cap readable drives of the set used for listing: N - Wq + 1 of them. */
unsigned strata_meta__list_drives(const struct strata_meta *m, unsigned set, unsigned *out);

/* A k-way merge of RocksDB iterators over [lo, hi): equal keys collapse.
 * When drives disagree on a key's value, a tombstone is the one shown. */
#define MERGE_MAX (STRATA_DRIVES_MAX * 8)
struct meta_merge {
    unsigned n;
    rocksdb_iterator_t *it[MERGE_MAX];
    rocksdb_readoptions_t *ro[MERGE_MAX];
    unsigned iset[MERGE_MAX]; /* set of each iterator's drive */
    char hi[STRATA_KEY_MAX + STRATA_BUCKET_NAME_MAX + 64];
    size_t hilen;
    int cur; /* iterator holding the current smallest key, -1 at end */
    unsigned cur_have, cur_of; /* iterators at the current key / of its set */
    unsigned cur_live;         /* of cur_have: those holding it not dead */
};
/* merge_open flags.  MERGE_ALL_DRIVES: every open drive of each set, not
 * just the N - Wq + 1 a listing needs (walks that heal, reclaim or purge).
 * MERGE_NO_CACHE: a maintenance walk (see strata_meta__iter_new). */
#define MERGE_ALL_DRIVES 0x1u
#define MERGE_NO_CACHE 0x2u
#define MERGE_MAINTENANCE (MERGE_ALL_DRIVES | MERGE_NO_CACHE)
int strata_meta__merge_open(struct meta_merge *mg, struct strata_meta *m, const unsigned *sets,
                            unsigned nsets, unsigned flags, const char *hi, size_t hilen);
void strata_meta__merge_seek(struct meta_merge *mg, const char *k, size_t klen);
/* Current key/value, or false at the end. */
bool strata_meta__merge_cur(struct meta_merge *mg, const char **k, size_t *klen, const char **v,
                            size_t *vlen);
void strata_meta__merge_next(struct meta_merge *mg);
/* How many of the merged drives of the current key's set hold the current
 * key (have) out of how many are merged for that set (of). */
void strata_meta__merge_votes(const struct meta_merge *mg, unsigned *have, unsigned *of);
/* How many of them hold the current key live: a dead state won the merge
 * though some merged drive holds it live (a delete it missed, or a
 * tombstone no commit wrote). */
unsigned strata_meta__merge_live(const struct meta_merge *mg);
void strata_meta__merge_close(struct meta_merge *mg);

/* Raw quorum read of one key in a set: drives read in order until the read
 * quorum hold identical bytes (win >= 0) or agree it is absent
 * (STRATA_ENOTFOUND).  read_all reads every readable drive (for undo). */
struct meta_qraw {
    char *v[STRATA_DRIVES_MAX];
    size_t vl[STRATA_DRIVES_MAX];
    int rc[STRATA_DRIVES_MAX]; /* 0, STRATA_ENOTFOUND, or no vote */
    bool tried[STRATA_DRIVES_MAX];
    int win;
};
int strata_meta__qraw_get(struct strata_meta *m, unsigned set, const char *k, size_t kl,
                          bool read_all, struct meta_qraw *q);
void strata_meta__qraw_fini(struct meta_qraw *q);
/* Batches writing v at k (NULL: deleting it) on every open drive of set,
 * and undo batches putting back the value old read there (none, or old
 * NULL: deleting k); free them with strata_meta__batches_free. */
void strata_meta__key_batches(struct strata_meta *m, unsigned set, const char *k, size_t kl,
                              const char *v, size_t vl, const struct meta_qraw *old,
                              rocksdb_writebatch_t **wbs, rocksdb_writebatch_t **undo);

/* ---- object.c ---- */
/* info from a version key_get found (store.h), its stored headers
 * included (caller strata_obj_info_fini's): 0 or the record's decode error. */
int strata_meta__info_from_found(struct strata_obj_info *info, const char *bucket,
                                 const char *key, const struct strata_meta__key_found *f);
/* The agreed record of a version (version_id as strata_obj_head; delete
 * markers: STRATA_ENOTFOUND / STRATA_EMETHOD), its sort key, decoded from
 * *raw (caller frees raw, then rec_fini). */
int strata_meta__rec_get(struct strata_meta *m, const char *bucket, const char *key,
                         const char *version_id, uint8_t sk[SORTKEY_LEN], struct meta_rec *out,
                         char **raw);
void strata_meta__info_from_rec(struct strata_obj_info *info, const char *bucket,
                                const char *key, const uint8_t *sk, struct meta_rec *r);
/* Delete the parts' data of a multipart version, then its 'T' records on
 * every drive (after the version record is gone).  Takes the key lock. */
void strata_meta__mp_drop(struct strata_meta *m, unsigned set, const char *bucket,
                          const char *key, const uint8_t *sk, size_t nparts, unsigned tier);
/* Load chunk c of a multipart version's part table (verified against the
 * CRC32C of the version record's index).  Returns the count in *n. */
int strata_meta__ptab_load(struct strata_meta *m, unsigned set, const char *bucket,
                           const char *key, const uint8_t *sk, const struct meta_rec *r,
                           unsigned c, struct meta_part *parts, size_t *n);

/* Per-drive additions to a version commit's batches (wb) and undo. */
typedef void (*meta_extra_fn)(void *ud, unsigned d, const uint8_t *sk, rocksdb_writebatch_t *wb,
                              rocksdb_writebatch_t *undo);
/* Decides on the agreed record cur (sort key sk) what a rewrite changes
 * (e: struct meta_edit, store.h, preset to cur's values); a non-zero
 * return aborts the rewrite and is returned.  Pure: a key_txn decide. */
typedef int (*meta_edit_fn)(void *ud, const uint8_t *sk, const struct meta_rec *cur,
                            struct meta_edit *e);
/* Apply a rewrite's edit e to the decoded record r (pointers into e; a
 * header edit gives r a new header list in *hkv, freed by the caller after
 * encoding r).  0 or STRATA_ENOMEM. */
int strata_meta__rec_edit(struct meta_rec *r, const struct meta_edit *e, struct strata_kv **hkv);
/* Rewrite a version record in place through key_txn (tags, ACL, SSE, a
 * transition's switch).  vid_out and seq_ns_out (the rewrite's change
 * stamp, record field 27) may be NULL. */
int strata_meta__rec_rewrite(struct strata_meta *m, const char *bucket, const char *key,
                             const char *version_id, meta_edit_fn fn, void *ud,
                             char vid_out[STRATA_VERSION_ID_MAX + 1], int64_t *seq_ns_out);

/* What a commit replaced, for dropping its data after the key lock is gone. */
struct meta_drop {
    bool any;
    uint32_t flags;
    bool has_data_id;
    uint8_t data_id[STRATA_DATA_ID_LEN];
    uint8_t sk[SORTKEY_LEN];
    size_t nparts;
    unsigned tier; /* index into m->tiers of the data */
    bool intent;   /* resolve the transition intent of version sk instead */
};
/* Start a rewrite's decide on the view's version slot (the version named
 * by the txn's version_id, read with its copies): the slot's error, a
 * delete marker's (latest: STRATA_ENOTFOUND, else STRATA_EMETHOD), or 0
 * with e->op REWRITE, e->rw preset to the record's values and vid the
 * version's id. */
int strata_meta__rewrite_begin(const struct strata_meta__key_view *v, const char *version_id,
                               struct strata_meta__key_edit *e,
                               char vid[STRATA_VERSION_ID_MAX + 1]);
/* The version id of a slot's version ("null" for the null version). */
void strata_meta__slot_vid(const struct strata_meta__key_slot *s,
                           char out[STRATA_VERSION_ID_MAX + 1]);
/* The slots a new version's commit reads under versioning. */
unsigned strata_meta__version_want(int versioning);
/* The rules of a new version (PUT, copy, complete): conditions (If-Match,
 * If-None-Match: *) on the latest, the null version it replaces (Object
 * Lock), its mtime and sort key; fills r's flags and mtime and e (PUT,
 * replace, reclaim, a refusal's audit entry).  Pure. */
int strata_meta__version_decide(const struct strata_meta__key_view *v, int versioning,
                                struct meta_rec *r, const char *if_match,
                                bool if_none_match_star, struct strata_meta__key_edit *e);
/* The rules of a replica's new version (bucket replication; versioning
 * enabled): sort key sk, the source's, and the mtime it carries; the
 * version of that id, read into the view's version slot, is replaced (its
 * data reclaimed) unless it is a delete marker (STRATA_EEXISTS) or under
 * Object Lock with other bytes (an other ETag: STRATA_ELOCKED).  Pure. */
int strata_meta__replica_decide(const struct strata_meta__key_view *v, struct meta_rec *r,
                                const uint8_t sk[SORTKEY_LEN], struct strata_meta__key_edit *e);
/* The meta_drop of a reclaim (tier by name). */
void strata_meta__drop_of_reclaim(const struct strata_meta *m,
                                  const struct strata_meta__key_reclaim *rc,
                                  struct meta_drop *drop);
/* Remove what drop names now, or (when a reader has the version pinned)
 * when its last reader is done. */
void strata_meta__drop(struct strata_meta *m, unsigned set, const char *bucket, const char *key,
                       const struct meta_drop *drop);
/* Remove what drop names now. */
void strata_meta__drop_now(struct strata_meta *m, unsigned set, const char *bucket,
                           const char *key, const struct meta_drop *drop);

/* ---- tiers (store.c) ---- */
/* The tier named name ("" or NULL: the hot tier), or NULL when unknown. */
struct strata_tier *strata_meta__tier(struct strata_meta *m, const char *name);
/* Its index, or -1. */
int strata_meta__tier_idx(const struct strata_meta *m, const char *name);
/* Remove data object id of bucket/key from the named tier ("" = hot). */
int strata_meta__data_rm(struct strata_meta *m, const char *tier, const char *bucket,
                         const char *key, const uint8_t *id);
/* The placement hint of bucket/key's data (tier.h). */
uint32_t strata_meta__place(const char *bucket, const char *key);

/* ---- transition.c ---- */
/* Resolve a transition intent of version sk of bucket/key: remove the
 * listed data the version record does not refer to, then the intent.
 * Runs only when no reader pins the version (pin.c parks it otherwise). */
void strata_meta__intent_resolve_now(struct strata_meta *m, unsigned set, const char *bucket,
                                     const char *key, const uint8_t sk[SORTKEY_LEN]);
/* Tell the fault tests' hook (strata_meta_set_step_hook) that a
 * transition reached step s (STRATA_TR_STEP_*; the backends report
 * REMOVED and DONE from intent_resolve). */
void strata_meta__tr_step(struct strata_meta *m, int s);

/* ---- local/intent.c ---- */
size_t strata_meta__key_intent(char *out, size_t cap, const char *bucket, const char *key,
                               const uint8_t *sk);
/* Put (v) or delete (v NULL) a small record on every open drive of the
 * set: a put needs the write quorum (undone below it), a delete is best
 * effort.  The local backend's transition intents (local/intent.c) and
 * restored-copy records (restore.c). */
int strata_meta__intent_write(struct strata_meta *m, unsigned set, const char *k, size_t kl,
                              const char *v, size_t vl);
struct msgpack_packer;
struct msgpack_unpacked;
struct msgpack_sbuffer;
/* Start a small record's value in sb (initialised here) through pk:
 * VAL_VERSION_BYTE, a map of nfields, field 0 = REC_FORMAT. */
void strata_meta__mp_map_begin(struct msgpack_sbuffer *sb, struct msgpack_packer *pk,
                               uint32_t nfields);
/* Unpack a small record's value (VAL_VERSION_BYTE, then one msgpack map)
 * into up (initialised here: the caller destroys it either way); whether
 * it is one. */
bool strata_meta__mp_map_open(const char *buf, size_t len, struct msgpack_unpacked *up);
/* An array of data ids (bin[16] each) packed into pk. */
void strata_meta__pk_ids(struct msgpack_packer *pk, uint8_t (*ids)[STRATA_DATA_ID_LEN], size_t n);
/* cb for every key of kind ('R' restored copies, restore.c: kind bucket 0
 * key 0 sortkey) of every set of the local backend, read on every drive;
 * *n counts them.  cb may write and delete such keys. */
typedef void (*meta_vkey_fn)(struct strata_meta *m, unsigned set, const char *bucket,
                             const char *key, const uint8_t *sk, void *ud);
int strata_meta__walk_vkeys(struct strata_meta *m, char kind, meta_vkey_fn cb, void *ud,
                            uint64_t *n);
/* One stored data object of a version. */
struct meta_piece {
    uint8_t id[STRATA_DATA_ID_LEN];
    uint64_t size; /* stored bytes */
};
/* The data ids of record r (version sk): one, or every non-empty part's,
 * in part order (caller frees *out). */
int strata_meta__pieces_of(struct strata_meta *m, unsigned set, const char *bucket,
                           const char *key, const uint8_t *sk, const struct meta_rec *r,
                           struct meta_piece **out, size_t *n);
/* Copy data object id (size bytes) of tier src to nid on tier dst (with
 * lk's lock state when given and dst keeps one), chunk_cb after every
 * chunk copied (non-zero aborts); *crc: CRC32C of the bytes.  buf holds
 * 1 MiB. */
int strata_meta__data_copy(struct strata_tier *src, struct strata_tier *dst, uint32_t place,
                           const uint8_t *id, const uint8_t *nid, uint64_t size,
                           const struct strata_tier_lock *lk,
                           int (*chunk_cb)(void *ud, size_t n), void *ud, uint8_t *buf,
                           uint32_t *crc);
/* Whether nid on dst holds size bytes of CRC32C crc (the tier's verify, or
 * a read-back into buf, 1 MiB). */
int strata_meta__data_verify(struct strata_tier *dst, uint32_t place, const uint8_t *nid,
                             uint64_t size, uint32_t crc, uint8_t *buf);

/* ---- restore.c ---- */
/* Restored copies of version sk of bucket/key: the version is gone or
 * replaced (a drop ran): remove its restored copy and its record. */
void strata_meta__restore_drop(struct strata_meta *m, unsigned set, const char *bucket,
                               const char *key, const uint8_t sk[SORTKEY_LEN]);
/* GET of a version on an archive tier: 0 with the restored copy's data ids
 * (pairs: the version's id, the copy's id on the hot tier; caller frees
 * *map) when a restored copy is ready and unexpired, else STRATA_EARCHIVED
 * (or a read error). */
int strata_meta__restore_map(struct strata_meta *m, const char *bucket, const char *key,
                             const uint8_t sk[SORTKEY_LEN],
                             uint8_t (**map)[2][STRATA_DATA_ID_LEN], size_t *n);
/* cb for every hot-tier data id an 'R' record value names (orphan reclaim). */
void strata_meta__restore_refs(const char *v, size_t vl, void (*cb)(const uint8_t *id, void *ud),
                               void *ud);
/* Piece i of a done 'R' record value: its copy's id and size (heal);
 * STRATA_ENOTFOUND past the last, STRATA_EBUSY while ongoing. */
int strata_meta__restore_piece(const char *v, size_t vl, size_t i, uint8_t id[STRATA_DATA_ID_LEN],
                               uint64_t *size);
/* Whether a reader pins version sk of bucket/key now (pin.c). */
bool strata_meta__pinned(struct strata_meta *m, unsigned set, const char *bucket,
                         const char *key, const uint8_t sk[SORTKEY_LEN]);

/* ---- local/bucket.c: the local backend's, used by heal.c and the commit
 * paths of object.c and mpu.c until they move behind the seam ---- */
/*
 * Newest state wins among one set's copies of a bucket record: v/vl/rc per
 * drive (rc 0: v holds a value; STRATA_ENOTFOUND: absent; else no answer),
 * voter[d] the drives whose copies count.  Walking the distinct values
 * newest first (a live record's state time, field 11 or its creation time;
 * a tombstone's deletion time), the first tombstone, or the first live
 * record held by Wq - (N - voters) voters (it may have been committed),
 * wins.  Returns the drive holding it (*holders: its identical copies on
 * voters), or -1 when none qualifies.
 */
int strata_meta__bucket_newest(struct strata_meta *m, unsigned set, char *const *v,
                               const size_t *vl, const int *rc, const bool *voter,
                               unsigned *holders);
/*
 * Before committing a version or an upload of bucket (ahead of the key
 * lock): hold the bucket's stripe shared and check that the bucket exists
 * with the incarnation the operation began with.  0 with *held set (release
 * it after the commit), or STRATA_ENOTFOUND / a read error with nothing
 * held.
 */
int strata_meta__bucket_hold(struct strata_meta *m, const char *bucket, uint64_t incarnation,
                             pthread_rwlock_t **held);
void strata_meta__bucket_release(pthread_rwlock_t *held); /* NULL is a no-op */

/* ---- pin.c (reader pins; see the file's comment) ---- */
struct meta_pin;
/* The drop generation of bucket/key's stripe; read before the lookup. */
uint64_t strata_meta__pin_gen(struct strata_meta *m, const char *bucket, const char *key);
/* Pin a version found by a lookup that began after gen was read.
 * STRATA_EBUSY when a drop of the stripe ran since (look up again). */
int strata_meta__pin(struct strata_meta *m, unsigned set, const char *bucket, const char *key,
                     const uint8_t sk[SORTKEY_LEN], uint64_t gen, struct meta_pin **out);
/* Release a pin (NULL is a no-op); the last one runs a parked drop. */
void strata_meta__unpin(struct strata_meta *m, struct meta_pin *p);
/* Bump the stripe's drop generation; true (drop parked on the pin, the
 * caller must not drop) when the version is pinned. */
bool strata_meta__drop_park(struct strata_meta *m, unsigned set, const char *bucket,
                            const char *key, const struct meta_drop *drop);
void strata_meta__pins_fini(struct strata_meta *m);
/* cb for the data id of every parked drop (under pin_mu: cb must not lock). */
void strata_meta__pins_parked_data(struct strata_meta *m,
                                   void (*cb)(const uint8_t id[STRATA_DATA_ID_LEN], void *ud),
                                   void *ud);

/* ---- lock.c ---- */
/* The lock of a new version: the explicit one (mode or legal hold), with the
 * bucket's default retention when no mode was given.  STRATA_EINVAL for a
 * lock on a bucket without object lock, a bad mode, or a date not after now. */
int strata_meta__lock_for_new(struct strata_meta *m, const struct strata_bucket_info *b,
                              const struct strata_obj_lock *req, struct strata_obj_lock *out);
/* Check an explicit lock request against the bucket (as above, no default). */
int strata_meta__lock_check_req(struct strata_meta *m, const struct strata_bucket_info *b,
                                const struct strata_obj_lock *req);
/* 0 when the version with record r (sort key sk) may be removed or
 * replaced at retention time now_ms, else STRATA_ELOCKED.  A refusal or a
 * governance bypass fills *a with its audit entry (action names the
 * caller's operation), which key_txn appends.  actor may be NULL.  Pure. */
int strata_meta__lock_may_remove(const uint8_t *sk, const struct meta_rec *r,
                                 const struct strata_lock_actor *actor, const char *action,
                                 int64_t now_ms, struct strata_meta__key_audit *a);

/* ---- mpu.c ---- */
/* Commit a part record (data already durable) through the store after
 * checking that the upload exists; drops the replaced part's data after. */
int strata_meta__part_store(struct strata_meta *m, const char *bucket, const char *key,
                            const uint8_t upload[UPLOAD_LEN], const struct meta_part *part);
int strata_meta__upload_id_parse(const char *s, uint8_t upload[UPLOAD_LEN]);
/* Read the upload record by quorum into u (caller upload_fini's; the
 * local backend's, local/mpu.c). */
int strata_meta__upload_read(struct strata_meta *m, unsigned set, const char *bucket,
                             const char *key, const uint8_t upload[UPLOAD_LEN],
                             struct meta_upload *u);
/* A backend's complete: t's decide over the view of key view v, the upload
 * record uv (done: a completed-upload record) and the committed parts;
 * e gets me->key.  STRATA_EINTERNAL for an edit that is not a complete's. */
int strata_meta__mpu_decide(const struct strata_meta__mpu_txn *t,
                            const struct strata_meta__key_view *v, bool done, const char *uv,
                            size_t uvl, const struct meta_part *parts, size_t nparts,
                            struct strata_meta__mpu_edit *me, struct strata_meta__key_edit *e);
/* Append data id of tier ("" hot) to refs: 0 or STRATA_ENOMEM (backends'). */
int strata_meta__data_refs_add(struct strata_meta__data_refs *refs, const char *tier,
                               const uint8_t *id);

/* ---- audit.c ---- */
/* Open the store's audit log and find the chain's tail; a torn last entry
 * is cut and the cut recorded.  Between lock_clock_open (entries are timed
 * by it) and lock_clock_start. */
/* store.c: the handle every backend starts from (the local store's ops,
 * locks, pins, heal queue, sizes from opts), and the retention clock and
 * audit log opened through the backend set in m->store afterwards. */
int strata_meta__new(const struct strata_meta_opts *opts, struct strata_meta **out);
int strata_meta__open_finish(struct strata_meta *m);
int strata_meta__audit_open(struct strata_meta *m);
void strata_meta__audit_close(struct strata_meta *m); /* not open: a no-op */
/* n lower-case hex digits, n == 64 (a SHA-256 in an audit entry). */
bool strata_meta__hex64_valid(const char *s, size_t n);
/* Append an entry with user and bucket "-"; a failure is logged. */
typedef void strata_meta__note_fn(struct strata_meta *m, const char *action, const char *outcome,
                                  const char *detail);
strata_meta__note_fn strata_meta__audit_note;

/* ---- lock_clock.c ---- */
/* "2026-01-02T03:04:05.678Z" */
void strata_meta__iso8601(int64_t ms, char out[32]);
/* Set the retention clock from the drives' marks (no appends). */
int strata_meta__lock_clock_open(struct strata_meta *m);
/* After audit_open: record a jump found at open (through note, which
 * store.c gives as strata_meta__audit_note), persist the mark, start the
 * thread. */
int strata_meta__lock_clock_start(struct strata_meta *m, strata_meta__note_fn *note);
void strata_meta__lock_clock_close(struct strata_meta *m); /* persists a last mark */

#endif /* STRATA_META_META_INTERNAL_H */
