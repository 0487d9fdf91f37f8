/*
 * meta.h - the namespace and the object layer.
 *
 * Each drive of each set holds its own RocksDB (drive/meta/).  Bucket
 * records are replicated to every drive of every set; an object's version
 * records live on every drive of the set chosen by a stable hash of bucket
 * and key.  Writes commit a record to every online drive of the set with a
 * synced write and succeed only with at least the write quorum; reads take a
 * version once the read quorum of drives agree on it.  Listing merges the
 * key streams of N - Wq + 1 drives of each set, so every committed key is
 * seen.
 *
 * The object layer joins these records with erasure-coded data: put streams
 * bytes into an erasure writer (or, for small objects, into the records
 * themselves), computing digests on the way, and commits the record only
 * when every expected digest matches.  The data of a replaced or deleted
 * version is removed only after the new record is committed, and only once
 * no get handle reads that version any more.
 *
 * Threads: a struct strata_meta may be used from any number of threads.  A
 * put or get handle belongs to one thread at a time.  Nothing here prints.
 */
#ifndef STRATA_META_H
#define STRATA_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/erasure.h"
#include "strata/err.h"
#include "strata/log.h"
#include "strata/tier.h"

#define STRATA_BUCKET_NAME_MAX 63
#define STRATA_KEY_MAX 1024        /* bytes of UTF-8 */
#define STRATA_VERSION_ID_MAX 40   /* printable, URL safe, "null" for the null version */

/* Whether vid has the form of a version id this store hands out ("null"
 * or one it generated).  S3 answers 400 for any other form, while a
 * well-formed id that names no version is 404. */
bool strata_meta_version_id_valid(const char *vid);
#define STRATA_ETAG_MAX 48         /* hex MD5, optionally "-N"; no quotes */
#define STRATA_HDRS_MAX 8192       /* stored header bytes per version */
#define STRATA_INLINE_MAX_DEFAULT (128u * 1024)
#define STRATA_MEMTABLE_MB_DEFAULT 512u /* strata_meta_opts.memtable_mb */

struct strata_meta;

#define STRATA_PARTS_MAX 10000
#define STRATA_PART_SIZE_MIN_DEFAULT (5u * 1024 * 1024)
#define STRATA_UPLOAD_ID_MAX 32    /* lower-case hex, URL safe */
#define STRATA_TAGS_MAX 4096       /* stored tag-set bytes per version or upload */
#define STRATA_ACL_MAX 16384       /* stored access-control-list bytes per version or upload */

struct strata_meta_opts {
    size_t inline_max;      /* objects up to this size live in the records; 0 = default */
    /* Small-object log (meta/README.md): an inline object's shard on each
     * drive is appended to that drive's log segments and its record holds
     * where; off: the shard is in the record.  Records of either kind are
     * read whatever the setting. */
    bool small_object_log;
    unsigned slog_segment_mb; /* a log segment is sealed past this; 0 = 64 */
    unsigned slog_grace_ms;   /* a dead sealed segment is unlinked after; 0 = 5000 */
    unsigned slog_compact_ms; /* sealed segments at most half live are compacted this often; 0 = 10000 */
    size_t part_size_min;   /* multipart: every part but the last; 0 = 5 MiB (tests lower it) */
    size_t block_cache_mb;  /* RocksDB block cache shared by all drives; 0 = 64 */
    /* Latest-version cache (records and whole inline objects, local
     * backend), MiB; 0 = 64. */
    size_t object_cache_mb;
    /* Data cache (meta/dcache.h): whole erasure-coded data objects GETs
     * read, kept in memory and sent from there, MiB; 0 = none.  One object
     * up to a quarter of it. */
    size_t data_cache_mb;
    /* A PUT or part upload of an erasure-coded object that fits the data
     * cache also fills it with the bytes it stores (readable once
     * committed), so a read right after the write needs no drive. */
    bool data_cache_on_write;
    /* Memtable budget of all drive stores together, MiB; 0 = 64.  Each
     * store gets budget / (stores x 2) per memtable (at least 1 MiB), two
     * memtables at most (one filling, one flushing). */
    size_t memtable_mb;
    struct strata_logger log;
    /* Data tiers besides the hot one (STRATA_TIER_HOT: the sets given to
     * strata_meta_open, which also hold every record).  Owned by the
     * caller, kept until strata_meta_close; distinct names, not "hot". */
    struct strata_tier *const *tiers;
    unsigned ntiers;
    /* How long a completed multipart upload answers a repeated
     * CompleteMultipartUpload (strata_mpu_complete), seconds; 0 = the
     * default.  Its record is dropped by the first heal pass after that. */
    unsigned mpu_retry_s;
};
#define STRATA_MPU_RETRY_S_DEFAULT 86400u
#define STRATA_TIER_HOT "hot"
/* Whether a tier of that name was configured ("hot" always is). */
bool strata_meta_tier_known(struct strata_meta *m, const char *name);

/*
 * Open (creating when absent) the RocksDB of every online drive of every
 * set.  The sets stay owned by the caller and must outlive the meta handle.
 * Caller closes.
 */
int strata_meta_open(struct strata_set *const *sets, unsigned nsets,
                     const struct strata_meta_opts *opts, struct strata_meta **out,
                     struct strata_errinfo *ei);
void strata_meta_close(struct strata_meta *m);

/* ---- buckets ------------------------------------------------------------ */

enum strata_versioning {
    STRATA_VERSIONING_OFF = 0, /* never enabled */
    STRATA_VERSIONING_ENABLED,
    STRATA_VERSIONING_SUSPENDED,
};

struct strata_bucket_info {
    char name[STRATA_BUCKET_NAME_MAX + 1];
    char owner[128];   /* access key of the owning user */
    char region[32];
    int64_t created_ms; /* Unix ms */
    int versioning;     /* enum strata_versioning */
    bool object_lock;   /* Object Lock enabled: versioning stays enabled for good */
    /* Random, chosen by strata_meta_bucket_create (the caller's value is
     * ignored): tells a re-created bucket from the one deleted before it. */
    uint64_t incarnation;
    /* Default retention of new versions (object lock buckets only): mode
     * (enum strata_lock_mode, NONE = no default) for lock_days days or
     * lock_years years (exactly one of them non-zero with a mode). */
    int lock_mode;
    unsigned lock_days;
    unsigned lock_years;
};

/* STRATA_EEXISTS when the bucket exists (the caller compares owners). */
int strata_meta_bucket_create(struct strata_meta *m, const struct strata_bucket_info *b);
int strata_meta_bucket_get(struct strata_meta *m, const char *name, struct strata_bucket_info *out);
/*
 * STRATA_ENOTEMPTY while any version or delete marker remains.  Incomplete
 * multipart uploads do not keep a bucket: they are aborted (their parts'
 * data removed) before the bucket goes, as AWS does.  Puts, multipart
 * creates and completes, and delete markers that commit after the bucket
 * is gone fail with STRATA_ENOTFOUND (they re-check the bucket, under a
 * lock this function holds exclusively), also when a bucket of the same
 * name was created since they began.
 */
int strata_meta_bucket_delete(struct strata_meta *m, const char *name);
/* Calls cb for every bucket in name order; a non-zero return from cb stops
 * the walk and is returned. */
int strata_meta_bucket_list(struct strata_meta *m,
                            int (*cb)(const struct strata_bucket_info *b, void *ud), void *ud);
/* STRATA_EINVAL when suspending (or turning off) versioning of an Object
 * Lock bucket (S3 InvalidBucketState). */
int strata_meta_bucket_set_versioning(struct strata_meta *m, const char *name, int versioning);

/*
 * Named configuration documents of a bucket ("tagging", "lifecycle",
 * "policy", "object-lock", ...), stored verbatim.  get returns a malloc'ed
 * copy (caller frees) or STRATA_ENOTFOUND; put with len 0 deletes.
 */
int strata_meta_bucket_config_put(struct strata_meta *m, const char *bucket, const char *kind,
                                  const void *doc, size_t len);
int strata_meta_bucket_config_get(struct strata_meta *m, const char *bucket, const char *kind,
                                  void **doc, size_t *len);

/* ---- object versions ---------------------------------------------------- */

enum strata_cksum_algo {
    STRATA_CKSUM_NONE = 0,
    STRATA_CKSUM_CRC32,
    STRATA_CKSUM_CRC32C,
    STRATA_CKSUM_CRC64NVME,
    STRATA_CKSUM_SHA1,
    STRATA_CKSUM_SHA256,
};
#define STRATA_CKSUM_RAW_MAX 32

/* How a multipart object's checksum was formed (x-amz-checksum-type). */
enum strata_cksum_type {
    STRATA_CKSUM_TYPE_NONE = 0,  /* single-part objects: the checksum of the bytes */
    STRATA_CKSUM_TYPE_COMPOSITE, /* checksum of the concatenated raw part checksums, "-N" */
    STRATA_CKSUM_TYPE_FULL_OBJECT, /* CRC of the whole object (CRC32/CRC32C/CRC64NVME only) */
};

/* A name/value pair, both NUL-terminated. */
struct strata_kv {
    const char *name;
    const char *value;
};

/* Object Lock state of one version (see "object lock" below). */
enum strata_lock_mode {
    STRATA_LOCK_NONE = 0,
    STRATA_LOCK_GOVERNANCE,
    STRATA_LOCK_COMPLIANCE,
};
struct strata_obj_lock {
    int mode;         /* enum strata_lock_mode; NONE: no retention */
    int64_t until_ms; /* retain-until date, Unix ms; set with a mode */
    bool legal_hold;
    bool legal_hold_set; /* a legal hold (ON or OFF) was ever set on the version */
};

/*
 * One version of an object as stored.  Fixed fields are inline; the stored
 * headers (Content-Type, Cache-Control, x-amz-meta-*, ... chosen by the
 * caller of put, names lower case) live in hdrs[0..nhdrs-1], whose strings
 * point into a buffer owned by the struct.  Release with strata_obj_info_fini.
 */
struct strata_obj_info {
    char bucket[STRATA_BUCKET_NAME_MAX + 1];
    char key[STRATA_KEY_MAX + 1];
    char version_id[STRATA_VERSION_ID_MAX + 1]; /* "null" when unversioned */
    bool is_latest;
    bool delete_marker;
    uint64_t size;
    char etag[STRATA_ETAG_MAX + 1];
    int64_t mtime_ms;
    /* The change stamp of this version's last change, ns: its mtime, or
     * the stamp of its last in-place rewrite (tags, ACL, lock, class).
     * The changes of one key get growing stamps in the order the index
     * commits them, from every gateway on one store (each is the
     * deciding gateway's clock or just after the key's last stamp): what
     * event sequencers follow. */
    int64_t seq_ns;
    char storage_class[32]; /* "STANDARD" unless a tier says otherwise */
    char tier[STRATA_TIER_NAME_MAX + 1]; /* the tier holding the data ("hot") */
    bool inline_data;       /* the bytes live in the records (hot tier) */
    int cksum_algo;         /* enum strata_cksum_algo */
    uint8_t cksum[STRATA_CKSUM_RAW_MAX];
    size_t cksum_len;
    struct strata_kv *hdrs;
    size_t nhdrs;
    void *priv_; /* owned buffer behind hdrs */
    /* Multipart objects: nparts > 0 (the ETag ends in "-nparts"), and
     * cksum_type says how cksum was formed; see strata_obj_get_part(). */
    unsigned nparts;
    int cksum_type; /* enum strata_cksum_type */
    /* The raw tag set stored with this version (opaque to meta; the server
     * picks the encoding, e.g. "k1=v1&k2=v2").  Owned by the struct (freed
     * by strata_obj_info_fini); NULL when the version has no tags. */
    uint8_t *tags;
    size_t tags_len;
    struct strata_obj_lock lock; /* retention and legal hold of this version */
    /* Encrypted versions: the descriptor the put stored (opaque to meta;
     * the server records how to find the object key in it), owned by the
     * struct; NULL when the data is stored as sent.  size is the
     * plaintext size either way. */
    uint8_t *sse;
    size_t sse_len;
    /* The access control list stored with this version (opaque to meta),
     * owned by the struct; NULL when it has none (the default ACL). */
    uint8_t *acl;
    size_t acl_len;
};
void strata_obj_info_fini(struct strata_obj_info *info); /* safe on a zeroed struct */
/* Value of a stored header by lower-case name, or NULL. */
const char *strata_obj_info_hdr(const struct strata_obj_info *info, const char *name);

/* ---- put ---------------------------------------------------------------- */

struct strata_put_opts {
    const char *bucket;
    const char *key;
    const struct strata_kv *hdrs; /* copied; total bytes <= STRATA_HDRS_MAX */
    size_t nhdrs;
    uint64_t size; /* exact body length when known, else UINT64_MAX */
    /* Expected digests; NULL when the client sent none. */
    const uint8_t *md5;    /* 16 bytes: Content-MD5 -> STRATA_EBADDIGEST */
    const uint8_t *sha256; /* 32 bytes: signed payload -> STRATA_ESHA256MISMATCH */
    /* S3 checksum to compute and store; expected value may come now or later
     * through strata_obj_put_expect_checksum (trailers) -> STRATA_ECHECKSUM */
    int cksum_algo;
    const uint8_t *cksum; /* cksum_len raw bytes, or NULL */
    size_t cksum_len;
    /* Conditional write: checked atomically with the commit -> STRATA_EPRECOND;
     * if_match on a key without a current version -> STRATA_ENOTFOUND. */
    const char *if_match;     /* etag (no quotes) the current version must have, or "*" */
    bool if_none_match_star;  /* the key must not exist */
    /* Tag set stored with the new version (x-amz-tagging), copied;
     * <= STRATA_TAGS_MAX bytes (else STRATA_ETOOBIG); NULL/0 for none. */
    const void *tags;
    size_t tags_len;
    /* Object Lock of the new version (x-amz-object-lock-*).  A zeroed
     * struct asks for nothing; mode NONE takes the bucket's default
     * retention.  On a bucket without object lock any lock is STRATA_EINVAL;
     * a retain-until not after strata_meta_lock_now_ms() is STRATA_EINVAL. */
    struct strata_obj_lock lock;
    /* Encryption at rest: with sse_key (32 bytes, used for this one
     * version only) the data is stored as the chunked AES-256-GCM stream of
     * meta/sse.h and sse (1..STRATA_SSE_DESC_MAX bytes, copied) is stored
     * in the record for the reader to find the key again.  The ETag and
     * the checksums cover the plaintext; etag_override (32 hex chars) when
     * set replaces the ETag (AWS's SSE-C and SSE-KMS ETags are not the MD5
     * of the plaintext).  Not for multipart parts. */
    const uint8_t *sse_key;
    const void *sse;
    size_t sse_len;
    const char *etag_override;
    /* A replica of a version encrypted elsewhere (bucket replication of
     * SSE-C data, whose key this side never has): without sse_key, with
     * sse and etag_override, the writes are the version's sealed stream
     * (strata_obj_get_read_sealed on the source, size still the plaintext
     * size) stored as they come.  The ETag and cksum given are stored as
     * the version's, unchecked here (each chunk's GCM tag is checked on
     * every read); Content-MD5 and SHA-256 cover the stream.  Not for
     * parts. */
    bool sse_sealed;
    /* Access control list of the new version, opaque to meta (the server
     * picks the encoding), copied; <= STRATA_ACL_MAX bytes (else
     * STRATA_ETOOBIG); NULL/0 stores none: the default ACL. */
    const void *acl;
    size_t acl_len;
    /* Storage class to report (NULL: STANDARD, at most 31 bytes) and the
     * tier the data goes to (NULL: hot; unknown: STRATA_EINVAL).  Inline
     * objects keep their bytes in the records (hot tier) whatever the tier. */
    const char *storage_class;
    const char *tier;
    /* A replica (bucket replication): the version id the source gave it,
     * kept instead of a new one; its modification time is the one the id
     * carries.  NULL: a new id.  Only on a versioning-enabled bucket (else
     * STRATA_EINVAL), and a malformed id is STRATA_EINVAL. */
    const char *version_id;
};
#define STRATA_SSE_DESC_MAX 1024

struct strata_put;

/* STRATA_ENOTFOUND if the bucket does not exist; STRATA_EINVAL for a bad key.
 * Caller ends the handle with commit or abort. */
int strata_obj_put_begin(struct strata_meta *m, const struct strata_put_opts *opts,
                         struct strata_put **out);
/* Any chunk size.  After a failure the handle only accepts abort. */
int strata_obj_put_write(struct strata_put *p, const void *buf, size_t len);
int strata_obj_put_expect_checksum(struct strata_put *p, int algo, const uint8_t *raw, size_t len);
/*
 * Verify size and digests, finish the data, commit the record on the write
 * quorum, then drop the data of the version it replaced (deferred while a
 * get handle reads it).  STRATA_ENOTFOUND when the bucket was deleted (or
 * deleted and created again) since begin.  Frees p whatever
 * the outcome; on failure nothing is stored.  out (may be NULL) receives
 * the committed version; the caller finis it.
 */
int strata_obj_put_commit(struct strata_put *p, struct strata_obj_info *out);
void strata_obj_put_abort(struct strata_put *p); /* frees p; NULL is a no-op */

/* ---- get, head, delete -------------------------------------------------- */

/*
 * version_id NULL (or "") means the latest.  STRATA_ENOTFOUND when absent;
 * when the latest is a delete marker also STRATA_ENOTFOUND with
 * info->delete_marker set and info->version_id filled.  A delete marker
 * asked for by version id returns STRATA_EMETHOD with info filled.
 */
int strata_obj_head(struct strata_meta *m, const char *bucket, const char *key,
                    const char *version_id, struct strata_obj_info *info);

struct strata_get;
/*
 * As head, and opens the data for reading.  Caller closes.  Until close,
 * the version's data stays readable: an overwrite or delete committing
 * meanwhile defers the removal of that data to the last close of a handle
 * reading it (STRATA_EBUSY in the rare case that the key keeps being
 * replaced between lookup and pin, 16 times in a row).
 */
int strata_obj_get_open(struct strata_meta *m, const char *bucket, const char *key,
                        const char *version_id, struct strata_obj_info *info,
                        struct strata_get **out);
/*
 * strata_obj_head and strata_obj_get_open for an event thread: answered
 * only from memory (the local store's latest-version cache, RocksDB's
 * memtables and block cache), never waiting on a drive's files or a
 * commit in flight.  STRATA_EBUSY where the answer needs that (nothing
 * held, info holds nothing to free): call the plain one on a thread that
 * may wait.  A store without such reads (RADOS) answers as the plain one.
 * The data of an erasure-coded version is only opened, never read here.
 */
int strata_obj_head_nowait(struct strata_meta *m, const char *bucket, const char *key,
                           const char *version_id, struct strata_obj_info *info);
int strata_obj_get_open_nowait(struct strata_meta *m, const char *bucket, const char *key,
                               const char *version_id, struct strata_obj_info *info,
                               struct strata_get **out);
/* Exactly len bytes at off (off + len <= size).  Never wrong bytes. */
int strata_obj_get_read(struct strata_get *g, uint64_t off, void *buf, size_t len);
/* Like strata_obj_get_read without a copy: *p points at *n (1..max) bytes
 * at off held by g, valid until the next call on g (0 bytes at the end).
 * Only where strata_obj_get_peekable (not encrypted); else STRATA_EINVAL:
 * use strata_obj_get_read.  Never past the end of a multipart part. */
bool strata_obj_get_peekable(const struct strata_get *g);
int strata_obj_get_peek(struct strata_get *g, uint64_t off, size_t max, const uint8_t **p,
                        size_t *n);
/* Nothing at or past end will be read (a Range answer): erasure-coded
 * data is then not read ahead past it.  Reads past it still work. */
void strata_obj_get_window(struct strata_get *g, uint64_t end);
/* Inline versions are decoded whole by open: their reads never wait on a
 * drive.  True for those (encrypted or not). */
bool strata_obj_get_in_memory(const struct strata_get *g);
/* Bytes [off, off + len) of an unencrypted version that the data cache
 * holds (one data object: a whole version or within one part; a part not
 * loaded yet is looked up, which may read a drive): a new descriptor of
 * the cache's file (the caller closes it; the bytes stay valid while it is
 * open, whatever the cache does) with the range at *fd_off, else -1. */
int strata_obj_get_fd(struct strata_get *g, uint64_t off, uint64_t len, uint64_t *fd_off);

/* The data cache (strata_meta_opts.data_cache_mb), all zero without one. */
struct strata_data_cache_stats {
    uint64_t budget;    /* bytes */
    uint64_t bytes;     /* held by entries, ready or being filled */
    uint64_t entries;
    uint64_t hits, misses; /* reader opens answered from memory, or not */
    uint64_t fills;     /* fills started */
    uint64_t evictions;
    uint64_t reused;    /* fills that took a spare's memfd and pages */
    uint64_t spare;     /* bytes of spares: pages kept for the next fills */
};
void strata_meta_data_cache_stats(struct strata_meta *m, struct strata_data_cache_stats *out);
/* The bytes of an inline, unencrypted version as held by g (valid until
 * close; answer straight from them), or NULL. */
const uint8_t *strata_obj_get_bytes(const struct strata_get *g);
void strata_obj_get_close(struct strata_get *g); /* NULL is a no-op */
/* An encrypted version (info->sse set) reads only after its object key
 * (32 bytes) is given; until then strata_obj_get_read returns
 * STRATA_EINVAL.  A wrong key shows as STRATA_ECORRUPT on the first read. */
int strata_obj_get_key(struct strata_get *g, const uint8_t *key);
/* The stored (sealed) bytes of an encrypted single-part version, read
 * without its key: their size (0: not such a version) and a read of
 * [off, off + len) of them (STRATA_ERANGE past the end, STRATA_EINVAL on
 * any other version).  Bucket replication sends these for SSE-C. */
uint64_t strata_obj_get_sealed_size(const struct strata_get *g);
int strata_obj_get_read_sealed(struct strata_get *g, uint64_t off, void *buf, size_t len);
struct strata_part_info; /* defined with the multipart API below */
/*
 * Part idx (1-based position in the completed object, what GET/HEAD
 * ?partNumber= means) of the version g reads: its offset, size, etag,
 * checksum and uploaded part number.  A single-part object has exactly one
 * part, the whole object.  STRATA_ERANGE when idx is 0 or > nparts
 * (InvalidPartNumber).  Loads only the part-table record holding idx.
 */
int strata_obj_get_part(struct strata_get *g, unsigned idx, struct strata_part_info *out);
/* The stored (sealed) stream of part idx (as strata_obj_get_part) of an
 * encrypted multipart version, read without its key: [off, off + len) of
 * its sealed_size bytes (STRATA_ERANGE past the end or for a bad idx,
 * STRATA_EINVAL on any other version).  Bucket replication sends these
 * for multipart SSE-C. */
int strata_obj_get_part_read_sealed(struct strata_get *g, unsigned idx, uint64_t off, void *buf,
                                    size_t len);

struct strata_del_result {
    bool delete_marker;                           /* a marker was created or removed */
    char version_id[STRATA_VERSION_ID_MAX + 1];   /* of the marker / removed version */
    int64_t seq_ns; /* the change stamp (strata_obj_info.seq_ns): a new marker's mtime,
                     * or, for a removal, just after the removed version's last stamp
                     * (not kept: the next change of the key need not follow it when
                     * the gateways' clocks differ); 0 when nothing was there */
};
/*
 * Without version_id: on an unversioned bucket removes the object (absent
 * is fine); on a versioned bucket adds a delete marker; on a suspended one
 * replaces the null version by a null delete marker.  With version_id:
 * removes that version for good (STRATA_ENOTFOUND is not an error for the
 * S3 caller, who answers 204 anyway).  out may be NULL.
 * A version under Object Lock is never removed: STRATA_ELOCKED (see
 * strata_obj_delete_opts for the governance bypass).
 */
int strata_obj_delete(struct strata_meta *m, const char *bucket, const char *key,
                      const char *version_id, struct strata_del_result *out);

/* Who deletes or changes a lock, for Object Lock decisions and the audit log. */
struct strata_lock_actor {
    const char *user;        /* access key, for the audit log; NULL = "-" */
    bool bypass_governance;  /* x-amz-bypass-governance-retention from a permitted user */
    /* Stored on the delete marker this delete creates, if it creates one
     * (bucket replication's status, committed with the marker); NULL: none. */
    const struct strata_kv *marker_hdr;
};
/*
 * strata_obj_delete with an actor: a version whose retention has not expired
 * (by strata_meta_lock_now_ms) or whose legal hold is on is refused with
 * STRATA_ELOCKED, except GOVERNANCE retention without legal hold when
 * bypass_governance is set.  Delete markers are never locked.  Every refusal
 * and every bypass is appended to the audit log.  actor may be NULL.
 */
int strata_obj_delete_opts(struct strata_meta *m, const char *bucket, const char *key,
                           const char *version_id, const struct strata_lock_actor *actor,
                           struct strata_del_result *out);
/* A replicated delete marker: a delete without a version id on a
 * versioning-enabled bucket whose marker gets marker_vid (the source's id)
 * and its time.  A marker of that id already there is success.
 * STRATA_EINVAL for a malformed id or a bucket whose versioning is not
 * Enabled. */
int strata_obj_delete_marker_replica(struct strata_meta *m, const char *bucket, const char *key,
                                     const char *marker_vid, struct strata_del_result *out);

/* Sets (value non-NULL) or removes one stored header (lower-case name) of
 * a version, in place: the replication status bucket replication keeps.
 * A delete marker named by its version id takes it too.
 * STRATA_ENOTFOUND (no such version, or a latest delete marker) as tags_put. */
int strata_obj_hdr_set(struct strata_meta *m, const char *bucket, const char *key,
                       const char *version_id, const char *name, const char *value);

/* ---- listing ------------------------------------------------------------ */

struct strata_list_opts {
    const char *bucket;
    const char *prefix;      /* NULL or "" for all */
    const char *delimiter;   /* NULL or "" for none */
    const char *start_after; /* exclusive; also V1 marker and continuation key */
    unsigned max_keys;       /* entries (keys + common prefixes) per page, <= 1000 */
    bool versions;           /* every version and delete marker, newest first */
    const char *version_id_marker; /* with versions: resume after this version of start_after */
    bool maintenance; /* a background walk: its blocks stay out of the block cache */
};

struct strata_list_entry {
    bool is_prefix;                      /* a CommonPrefix: only key is set */
    const struct strata_obj_info *info;  /* key, size, etag, mtime, ...; valid during cb */
    const char *key;
};

struct strata_list_result {
    bool truncated;
    char next_key[STRATA_KEY_MAX + 1];   /* last key or prefix returned, when truncated */
    char next_version_id[STRATA_VERSION_ID_MAX + 1];
};

/*
 * One page, in key order (and newest first per key with versions).  Without
 * versions only latest versions that are not delete markers are listed.
 * Keys under a delimiter roll up into common prefixes, skipped with a seek.
 * Memory use does not grow with the number of keys.
 */
int strata_obj_list(struct strata_meta *m, const struct strata_list_opts *opts,
                    int (*cb)(const struct strata_list_entry *e, void *ud), void *ud,
                    struct strata_list_result *res);

/* ---- object tags ------------------------------------------------------ */

/*
 * Per-version tag sets, stored in the version record itself (so they go
 * with the version and are rewritten on the write quorum of drives in one
 * synced batch per drive, rolled back below quorum).  version_id NULL or ""
 * means the latest.  Limits (10 tags, lengths) are the server's to enforce;
 * meta only caps the bytes at STRATA_TAGS_MAX (STRATA_ETOOBIG).
 * put with len 0 (or strata_obj_tags_delete) removes the tag set.
 * get returns a malloc'ed copy in *tags (caller frees; NULL with *len 0 when
 * the version has none).  vid_out (may be NULL) receives the version id
 * acted on.  Errors as strata_obj_head: STRATA_ENOTFOUND (no key/version;
 * a latest delete marker), STRATA_EMETHOD (a delete marker by version id).
 * Any thread.
 */
int strata_obj_tags_put(struct strata_meta *m, const char *bucket, const char *key,
                        const char *version_id, const void *tags, size_t len,
                        char vid_out[STRATA_VERSION_ID_MAX + 1]);
/* tags_put that also gives the rewrite's change stamp (strata_obj_info.seq_ns)
 * in *seq_ns_out (may be NULL). */
int strata_obj_tags_set(struct strata_meta *m, const char *bucket, const char *key,
                        const char *version_id, const void *tags, size_t len,
                        char vid_out[STRATA_VERSION_ID_MAX + 1], int64_t *seq_ns_out);
int strata_obj_tags_get(struct strata_meta *m, const char *bucket, const char *key,
                        const char *version_id, void **tags, size_t *len,
                        char vid_out[STRATA_VERSION_ID_MAX + 1]);
int strata_obj_tags_delete(struct strata_meta *m, const char *bucket, const char *key,
                           const char *version_id, char vid_out[STRATA_VERSION_ID_MAX + 1]);
/* Bucket tagging: strata_meta_bucket_config_put/get with kind "tagging". */

/*
 * Replace the access control list of a version (PutObjectAcl), in the
 * record itself, as strata_obj_tags_put (same errors, same quorum and
 * heal behaviour); len 0 goes back to the default (no stored ACL).
 */
int strata_obj_acl_put(struct strata_meta *m, const char *bucket, const char *key,
                       const char *version_id, const void *acl, size_t len,
                       char vid_out[STRATA_VERSION_ID_MAX + 1]);

/*
 * Replace the encryption descriptor of an encrypted version (by id) from
 * old to desc, in place (key rotation re-wraps the object key; the data
 * is not touched).  A compare-and-set under the key lock: STRATA_EPRECOND
 * when the stored descriptor is no longer old; STRATA_ENOTFOUND /
 * STRATA_EMETHOD as strata_obj_tags_put; STRATA_EINVAL for empty
 * arguments.
 */
int strata_obj_sse_rewrap(struct strata_meta *m, const char *bucket, const char *key,
                          const char *version_id, const void *old, size_t old_len,
                          const void *desc, size_t len);

/* ---- multipart uploads -------------------------------------------------- */

/*
 * An upload lives in the set of its bucket/key: one upload record, replicated
 * with the write quorum like a version record, and one record per uploaded
 * part.  Every part is erasure-coded into its own data as it arrives;
 * complete writes one version record that refers to the parts' data (no
 * data is copied) and removes the upload and the parts it did not use.
 *
 * Errors shared by every strata_mpu_* function below: STRATA_ENOTFOUND means
 * the upload does not exist (NoSuchUpload; also after abort or complete),
 * except for strata_mpu_create where it means the bucket does not exist.
 * STRATA_EQUORUM when too few drives answer (503).  Any thread; parts of one
 * upload may be uploaded concurrently from many threads.
 */
struct strata_mpu_opts {
    const char *bucket;
    const char *key;
    const struct strata_kv *hdrs; /* stored headers of the final object, copied */
    size_t nhdrs;
    int cksum_algo;  /* enum strata_cksum_algo; every part gets this checksum */
    int cksum_type;  /* enum strata_cksum_type; NONE picks FULL_OBJECT for CRC64NVME,
                        COMPOSITE otherwise.  CRC64NVME is FULL_OBJECT only, SHA1/SHA256
                        COMPOSITE only: STRATA_EINVAL otherwise */
    const void *tags; /* tag set of the final object, copied; <= STRATA_TAGS_MAX */
    size_t tags_len;
    struct strata_obj_lock lock; /* of the final object, as strata_put_opts.lock;
                                    the bucket default is applied at complete */
    /* Encryption: the descriptor (as strata_put_opts.sse) stored with the
     * upload and the completed object; every part must then be uploaded
     * with its object key (strata_part_opts.sse_key_cb). */
    const void *sse;
    size_t sse_len;
    /* Access control list of the final object (opaque; as
     * strata_put_opts.acl), copied; NULL/0 for the default. */
    const void *acl;
    size_t acl_len;
    /* Storage class reported for the upload and the final object (NULL:
     * STANDARD) and the tier its parts' data go to (NULL: hot; unknown:
     * STRATA_EINVAL).  The caller maps classes to tiers. */
    const char *storage_class;
    const char *tier;
};
/* Creates the upload; upload_id receives its id (NUL-terminated).
 * STRATA_ENOTFOUND (bucket), STRATA_EINVAL (key, checksum combination),
 * STRATA_ETOOBIG (headers or tags). */
int strata_mpu_create(struct strata_meta *m, const struct strata_mpu_opts *opts,
                      char upload_id[STRATA_UPLOAD_ID_MAX + 1]);

struct strata_part_opts {
    const char *bucket;
    const char *key;
    const char *upload_id;
    unsigned part_number; /* 1..STRATA_PARTS_MAX, else STRATA_EINVAL */
    uint64_t size;        /* exact body length when known, else UINT64_MAX */
    const uint8_t *md5;    /* as strata_put_opts */
    const uint8_t *sha256;
    /* The part's checksum: algo must be NONE or the upload's algorithm
     * (STRATA_EINVAL otherwise); the upload's algorithm is always computed.
     * The expected value may also come later through
     * strata_obj_put_expect_checksum. */
    int cksum_algo;
    const uint8_t *cksum;
    size_t cksum_len;
    /* Called (synchronously, once, from begin) with the upload's
     * descriptor to get the object key (32 bytes into key), or with
     * NULL/0 for an upload stored as sent (key unused); its non-zero
     * return is begin's.  NULL on an encrypted upload: EINVAL. */
    int (*sse_key_cb)(void *ud, const void *desc, size_t len, uint8_t *key);
    void *sse_ud;
    /* A replica's part (bucket replication of an encrypted multipart
     * version, whose key this side never has): with sealed_etag (32 hex
     * digits) the writes are the part's sealed stream as the source stores
     * it (strata_put_opts.sse_sealed), size its plaintext size, stored as
     * they come with sealed_etag as the part's ETag and the checksum given
     * as its checksum.  The upload must be encrypted under exactly the
     * descriptor sealed_desc (else STRATA_EINVAL); sse_key_cb is not
     * called. */
    const char *sealed_etag;
    const void *sealed_desc;
    size_t sealed_desc_len;
    /* The caller's thread must not wait on a remote store (the server's
     * event thread): on such a store (RADOS) the upload record is read, and
     * sse_key_cb called, with the first bytes written (or at commit), so
     * their errors (STRATA_ENOTFOUND for no such upload) come from
     * strata_obj_put_write or _commit; the options are copied. */
    bool late;
};
/*
 * Begin a part upload: returns a put handle driven exactly like a put
 * (strata_obj_put_write, _expect_checksum, _commit, _abort).  Commit
 * verifies the digests, makes the data durable, checks again that the
 * upload exists (STRATA_ENOTFOUND otherwise: the new data is removed), and
 * commits the part record on the write quorum; a part uploaded before under
 * the same number is replaced and its data removed after the commit.
 * Commit's out (may be NULL) gets size, etag and the part checksum
 * (cksum_algo/cksum/cksum_len); version_id and key fields are unset.
 */
int strata_mpu_part_begin(struct strata_meta *m, const struct strata_part_opts *opts,
                          struct strata_put **out);

struct strata_mpu_part {
    unsigned part_number;
    const char *etag;      /* as returned by the part upload; surrounding quotes ignored */
    const uint8_t *cksum;  /* raw part checksum the client sent, or NULL */
    size_t cksum_len;
};

struct strata_mpu_complete_opts {
    const char *bucket;
    const char *key;
    const char *upload_id;
    const struct strata_mpu_part *parts; /* as listed in the request */
    size_t nparts;                       /* 1..STRATA_PARTS_MAX, else STRATA_EINVAL */
    const char *if_match;                /* conditional write, as strata_put_opts */
    bool if_none_match_star;
    bool check_size;      /* x-amz-mp-object-size given: */
    uint64_t object_size; /* the parts must add up to this, else STRATA_EINVAL */
    /* Called before anything is written (under the key lock; again when a
     * store decides again after a conflict, so it must only check) with
     * the upload's encryption descriptor (NULL/0: stored as sent); a
     * non-zero return fails the complete with it.  NULL: no check. */
    int (*sse_check)(void *ud, const void *desc, size_t len);
    void *sse_ud;
};
/*
 * Complete: STRATA_EPARTORDER when part numbers are not strictly ascending;
 * STRATA_EBADPART when a listed part was not uploaded or its ETag (or given
 * checksum) differs; STRATA_ETOOSMALL when a part other than the last is
 * below the meta option part_size_min; STRATA_EPRECOND for a failed
 * conditional.  On success writes one version (versioning rules as put:
 * the replaced null version's data goes after the commit), with ETag = hex
 * MD5 of the concatenated binary part MD5s + "-N" and the upload's
 * checksum (COMPOSITE: the algorithm over the concatenated raw part
 * checksums; FULL_OBJECT: the CRC of the whole object, combined from the
 * part CRCs), and removes the upload, its part records and the data of
 * parts not listed.  Metadata work only.  out (may be NULL) receives the
 * committed version; the caller finis it.
 *
 * Retries: the upload is replaced by a completed-upload record (the part
 * list's digest and the version), kept for strata_meta_opts.mpu_retry_s.
 * Meanwhile a complete of the same upload with the same part list (part
 * numbers and ETags) answers 0 and the same version again (size, ETag,
 * version id, checksum, descriptor; conditionals are not evaluated again,
 * check_size is), without writing anything, also after the version was
 * overwritten or deleted; another list, or any list past the window,
 * STRATA_ENOTFOUND, as do abort, part uploads and ListParts of it.
 */
int strata_mpu_complete(struct strata_meta *m, const struct strata_mpu_complete_opts *opts,
                        struct strata_obj_info *out);
/* The same for a replica: the version keeps version_id, the source's id
 * and time (as strata_put_opts.version_id); NULL is strata_mpu_complete.
 * STRATA_EINVAL unless the bucket's versioning is Enabled and the id is
 * valid. */
int strata_mpu_complete_as(struct strata_meta *m, const struct strata_mpu_complete_opts *opts,
                           const char *version_id, struct strata_obj_info *out);

/* Remove the upload, its part records and their data. */
int strata_mpu_abort(struct strata_meta *m, const char *bucket, const char *key,
                     const char *upload_id);

struct strata_mpu_info {
    char bucket[STRATA_BUCKET_NAME_MAX + 1];
    char key[STRATA_KEY_MAX + 1];
    char upload_id[STRATA_UPLOAD_ID_MAX + 1];
    int64_t initiated_ms;
    int cksum_algo;
    int cksum_type;
    char storage_class[32];
};
/* The upload's own record (ListParts' header fields). */
int strata_mpu_get(struct strata_meta *m, const char *bucket, const char *key,
                   const char *upload_id, struct strata_mpu_info *out);

/* A part: of an upload (ListParts) or of a completed object. */
struct strata_part_info {
    unsigned part_number; /* as uploaded */
    uint64_t size;
    uint64_t sealed_size; /* completed encrypted objects: the part's stored bytes; else 0 */
    uint64_t offset;      /* completed objects: where the part starts; 0 for uploads */
    char etag[STRATA_ETAG_MAX + 1];
    int64_t mtime_ms;     /* uploads only */
    int cksum_algo;
    uint8_t cksum[STRATA_CKSUM_RAW_MAX];
    size_t cksum_len;
};

struct strata_mpu_parts_result {
    bool truncated;
    unsigned next_marker; /* last part number returned, when truncated */
};
/*
 * ListParts: parts with part_number > marker, ascending, at most max_parts
 * (1..1000; 0 means 1000).  cb's argument is valid during the call; a
 * non-zero return stops the walk and is returned.
 */
int strata_mpu_list_parts(struct strata_meta *m, const char *bucket, const char *key,
                          const char *upload_id, unsigned marker, unsigned max_parts,
                          int (*cb)(const struct strata_part_info *p, void *ud), void *ud,
                          struct strata_mpu_parts_result *res);

struct strata_mpu_list_opts {
    const char *bucket;
    const char *prefix;           /* NULL or "" for all */
    const char *delimiter;        /* NULL or "" for none */
    const char *key_marker;       /* exclusive (with upload_id_marker: after that upload) */
    const char *upload_id_marker; /* only with key_marker */
    unsigned max_uploads;         /* entries (uploads + prefixes), 1..1000; 0 means 1000 */
};
struct strata_mpu_list_entry {
    bool is_prefix;                     /* a CommonPrefix: only key is set */
    const char *key;
    const struct strata_mpu_info *info; /* NULL for a prefix; valid during cb */
};
struct strata_mpu_list_result {
    bool truncated;
    char next_key_marker[STRATA_KEY_MAX + 1];
    char next_upload_id_marker[STRATA_UPLOAD_ID_MAX + 1];
};
/*
 * ListMultipartUploads: one page in key order, then initiation order per
 * key.  STRATA_ENOTFOUND when the bucket does not exist.  Memory use does
 * not grow with the number of uploads.
 */
int strata_mpu_list(struct strata_meta *m, const struct strata_mpu_list_opts *opts,
                    int (*cb)(const struct strata_mpu_list_entry *e, void *ud), void *ud,
                    struct strata_mpu_list_result *res);

/* ---- copying ------------------------------------------------------------ */

/*
 * CopyObject and UploadPartCopy are a get streamed into a put: open the
 * source with strata_obj_get_open (by version id when the request names
 * one), begin a strata_obj_put_begin (or strata_mpu_part_begin) on the
 * destination, and feed strata_obj_get_read chunks (of a range, for
 * x-amz-copy-source-range) into strata_obj_put_write, then commit.  The get
 * handle keeps reading its version's data even while a put of the same key
 * (copy onto itself) commits a new version: the get handle pins its
 * version, and replaced data is removed only once no get handle reads it
 * (see strata_obj_get_open).  Headers
 * and tags of the source are in the get's info (REPLACE directives just
 * pass other ones to the put).
 */

/* ---- object lock ---------------------------------------------------------- */

/*
 * Object Lock (WORM), enforced here so that every caller (S3 handlers,
 * multipart, copy, lifecycle, healing, admin tools) is bound by it.
 *
 * A version is locked while its legal hold is on or its retain-until date
 * is after strata_meta_lock_now_ms().  A locked version's record and data
 * are never removed or replaced: deletes by version id and any overwrite of
 * a null version answer STRATA_ELOCKED.  Delete markers are never locked.
 *
 * Retention changes: COMPLIANCE may only be extended (same mode, later or
 * equal date); GOVERNANCE may be extended or turned into COMPLIANCE, and
 * shortened, removed or changed otherwise only with bypass_governance.
 * Expired retention may be replaced freely.  Refusal: STRATA_ELOCKED.
 * Every change and every refusal is appended to the audit log (its failure
 * fails the call with its error, the change stays unmade).
 *
 * Errors also: STRATA_ENOTFOUND (no bucket/key/version; a latest delete
 * marker), STRATA_EMETHOD (a delete marker by version id), STRATA_EINVAL
 * (bucket without object lock, bad mode/date, date not in the future for a
 * new retention), STRATA_EQUORUM.  version_id NULL or "" is the latest;
 * vid_out (may be NULL) receives the version acted on.  Any thread.
 *
 * Both rewrite the version record on the write quorum in one synced batch
 * per drive (as tag rewrites do), so after a crash either the old or the
 * new lock state holds.
 */
int strata_obj_retention_put(struct strata_meta *m, const char *bucket, const char *key,
                             const char *version_id, int mode, int64_t until_ms,
                             const struct strata_lock_actor *actor,
                             char vid_out[STRATA_VERSION_ID_MAX + 1]);
int strata_obj_legal_hold_put(struct strata_meta *m, const char *bucket, const char *key,
                              const char *version_id, bool on,
                              const struct strata_lock_actor *actor,
                              char vid_out[STRATA_VERSION_ID_MAX + 1]);
/* Read the lock state with strata_obj_head (info.lock). */

/*
 * PutObjectLockConfiguration: enables Object Lock on the bucket (only when
 * versioning is enabled: STRATA_EINVAL otherwise; it can never be disabled)
 * and sets the default retention (mode NONE clears it; with a mode exactly
 * one of days/years is non-zero, else STRATA_EINVAL).  Audited.
 */
int strata_meta_bucket_lock_set(struct strata_meta *m, const char *name, int mode,
                                unsigned days, unsigned years,
                                const struct strata_lock_actor *actor);
/* The retention clock (strata_meta_lock_now_ms) and the audit log
 * (strata_meta_audit_append) are declared below. */
/* True when the version described by lock is locked at now_ms. */
bool strata_obj_lock_active(const struct strata_obj_lock *lock, int64_t now_ms);

/* ---- store figures (for /metrics) ------------------------------------------ */

/* RocksDB's write-stall and compaction figures of one drive's metadata
 * store (RocksDB properties, read now).  Any thread. */
struct strata_meta_store_stats {
    uint64_t delayed_write_rate;       /* rocksdb.actual-delayed-write-rate, bytes/s; 0: no stall */
    uint64_t write_stopped;            /* rocksdb.is-write-stopped: 1 while writes stop */
    uint64_t running_compactions;      /* rocksdb.num-running-compactions */
    uint64_t compaction_pending;       /* rocksdb.compaction-pending: 1 when one is due */
    uint64_t pending_compaction_bytes; /* rocksdb.estimate-pending-compaction-bytes */
    uint64_t running_flushes;          /* rocksdb.num-running-flushes */
    uint64_t memtable_bytes;           /* rocksdb.cur-size-all-mem-tables */
    uint64_t live_sst_bytes;           /* rocksdb.live-sst-files-size */
    uint64_t table_readers_bytes;      /* rocksdb.estimate-table-readers-mem */
};
/* 0, or STRATA_ENOTFOUND for a drive out of range or whose store is not
 * open (offline). */
int strata_meta_store_stats_get(struct strata_meta *m, unsigned set, unsigned drive,
                                struct strata_meta_store_stats *out);
/* The cluster a store keeps its objects in (RADOS): its health, space
 * and the store's pools (the metadata pool first, then the data pool),
 * read now.  Drives have no cluster: STRATA_ENOTIMPL, and `strata admin
 * info` shows them instead.  Any thread. */
#define STRATA_CLUSTER_POOLS_MAX 2
struct strata_meta_cluster_stat {
    char health[32];          /* HEALTH_OK, HEALTH_WARN, HEALTH_ERR; "" unknown */
    /* Space and object counts come from ceph-mgr's statistics: without a
     * mgr the cluster reports none (usage_reported false, figures 0). */
    bool usage_reported;
    uint64_t total_bytes, used_bytes, free_bytes, objects;
    unsigned npools;
    struct {
        char name[96];
        const char *role;     /* "meta" or "data" */
        uint64_t bytes, objects;
    } pools[STRATA_CLUSTER_POOLS_MAX];
};
int strata_meta_cluster_stat(struct strata_meta *m, struct strata_meta_cluster_stat *out);
/* Bytes held by the block cache all stores share, and the memtable size
 * each store was opened with (strata_meta_opts.memtable_mb).  Any thread. */
uint64_t strata_meta_block_cache_bytes(struct strata_meta *m);
uint64_t strata_meta_memtable_size(const struct strata_meta *m);

/* ---- transitions between tiers ------------------------------------------ */

/*
 * Move one version's data to another tier, crash-safely:
 *   1. a transition intent (source and target data ids) is committed on the
 *      write quorum of the version's set;
 *   2. the data is copied (the version pinned, so a delete meanwhile cannot
 *      cut the copy) to new data ids on the target tier, with a CRC32C of
 *      every source byte;
 *   3. the copies are read back and their CRC32C compared (or, on a tier
 *      with a verify op, checked against what the tier stored: tier.h);
 *   4. the version record (and a multipart version's part table) is
 *      rewritten on the write quorum to name the copies, the tier and the
 *      class, only if it still names the data that was copied;
 *   5. the intent is resolved: the data ids the record does not name are
 *      removed (once no reader pins the version), then the intent.
 * A crash anywhere leaves the intent, and strata_meta_transition_reclaim
 * removes exactly the copy the record does not refer to.  Inline versions
 * (their bytes live in the records, on the hot tier) only change class and
 * tier name in their records.  Encrypted data moves as stored (ciphertext).
 * Object Lock does not stop a transition (nothing is removed that the
 * version needs), except to a tier that keeps lock state of its own and
 * cannot keep this version locked: STRATA_ELOCKED, nothing moved.
 * 0 with res filled (bytes copied; 0 when the version was on the tier
 * already); STRATA_EPRECOND when the version changed meanwhile, or
 * STRATA_ENOTFOUND when it is gone (nothing moved, the copy is removed);
 * STRATA_EBUSY when an earlier transition of it is still being resolved;
 * STRATA_EINVAL (unknown tier); the copy's errors, or progress's non-zero
 * return (the copy is removed again).
 */
struct strata_transition {
    const char *bucket, *key;
    const char *version_id;    /* NULL/"" the latest, "null", or an id */
    const char *tier;          /* target tier */
    const char *storage_class; /* class reported afterwards */
    /* Called with the bytes copied so far for every copied chunk (1 MiB):
     * pacing; a non-zero return aborts. */
    int (*progress)(void *ud, uint64_t bytes);
    void *ud;
};
struct strata_transition_result {
    uint64_t bytes;  /* bytes copied */
    bool moved;      /* the record now names the target tier */
    int64_t seq_ns;  /* with moved: the switch's change stamp (strata_obj_info.seq_ns) */
};
int strata_obj_transition(struct strata_meta *m, const struct strata_transition *t,
                          struct strata_transition_result *res);
/* After the retention or legal hold of a version changed: when its data
 * is on a tier that keeps lock state of its own (strata_tier_ops.lock_set,
 * a remote tier with lock), every data object of it gets the version's
 * lock state now (a retention already expired is not sent).  *sent (may
 * be NULL) says whether there was such a tier.  0, STRATA_ENOTFOUND /
 * STRATA_EMETHOD as strata_obj_head, or the tier's error (STRATA_EBUSY:
 * retry later). */
int strata_obj_tier_lock_sync(struct strata_meta *m, const char *bucket, const char *key,
                              const char *version_id, bool *sent);
/* Resolve the intents left by interrupted transitions (all sets; versions
 * a reader pins are resolved at its close).  *resolved (may be NULL)
 * counts them. */
int strata_meta_transition_reclaim(struct strata_meta *m, uint64_t *resolved);
/* Fault tests: hook(ud, step) runs at each step boundary of a transition:
 * STRATA_TR_STEP_*, and at STRATA_RESTORE_STEP_READ of a restore run.
 * Set before any transition or restore runs. */
enum {
    STRATA_TR_STEP_INTENT = 1, /* intent committed */
    STRATA_TR_STEP_COPYING,    /* first chunk copied */
    STRATA_TR_STEP_COPIED,     /* every copy durable */
    STRATA_TR_STEP_VERIFIED,   /* copies read back and compared */
    STRATA_TR_STEP_SWITCHED,   /* record names the copies */
    STRATA_TR_STEP_REMOVED,    /* unreferenced data removed, intent not yet */
    STRATA_TR_STEP_DONE,       /* intent removed */
    STRATA_TR_STEPS = STRATA_TR_STEP_DONE,
    /* A restore run (strata_obj_restore_run) read its version and is
     * about to pin it: not a transition's step. */
    STRATA_RESTORE_STEP_READ = 16
};
void strata_meta_set_step_hook(struct strata_meta *m, void (*hook)(void *ud, int step), void *ud);

/* ---- restored copies (archive tiers) -------------------------------------- */

/*
 * An archive tier's data is never read by a GET: a version there is read
 * through a restored copy (RestoreObject), a temporary copy of its data on
 * the hot tier with an expiry (meta/restore.c).  Until one is ready,
 * strata_obj_get_open answers STRATA_EARCHIVED.  The version record, its
 * tier data and its Object Lock state are never changed by a restore.
 */
/* Mark the (non-hot) tier of that name an archive tier; STRATA_EINVAL for
 * the hot tier or an unknown one, STRATA_ENOTIMPL on a store that keeps no
 * restore records.  Before any request. */
int strata_meta_tier_archive(struct strata_meta *m, const char *tier);
bool strata_meta_tier_archived(struct strata_meta *m, const char *tier);

struct strata_restore_state {
    bool present;      /* a restore was asked for, its copy not expired */
    bool ongoing;      /* the copy is being made */
    int64_t expiry_ms; /* a done copy's expiry, Unix ms */
    unsigned days;     /* asked for */
};
/* AWS's expiry of a copy restored for days at now_ms: now + days, rounded
 * up to the next day boundary (midnight UTC with day_ms of 86400000; a
 * shorter day_ms for tests, as --lc-day-seconds). */
int64_t strata_restore_expiry_ms(int64_t now_ms, unsigned days, int64_t day_ms);
/* The restore state of a version on an archive tier (st zeroed: none).
 * STRATA_EINVAL when its data is not on an archive tier; lookup errors
 * as strata_obj_head. */
int strata_obj_restore_get(struct strata_meta *m, const char *bucket, const char *key,
                           const char *version_id, struct strata_restore_state *st);
/*
 * Ask for a copy of days: 0 when a new copy was recorded (ongoing: the
 * caller runs strata_obj_restore_run, on any thread); STRATA_EBUSY while
 * one is being made; STRATA_EEXISTS when a copy is ready (its expiry is
 * set anew from now and days).  st receives the state afterwards.
 * STRATA_EINVAL when not on an archive tier.
 */
int strata_obj_restore_request(struct strata_meta *m, const char *bucket, const char *key,
                               const char *version_id, unsigned days, int64_t day_ms,
                               struct strata_restore_state *st);
/* Make the recorded copy: copy, read back and compare, then mark it done
 * with its expiry (from the end of the copy).  On failure the copy and its
 * record are removed (it may be asked for again), also when the run fails
 * before it starts the copy (the version unreadable, its pin busy), unless
 * the record cannot be found then (a "null" version that cannot be read).
 * 0 (also when done already) with st filled, or the error. */
int strata_obj_restore_run(struct strata_meta *m, const char *bucket, const char *key,
                           const char *version_id, int64_t day_ms,
                           struct strata_restore_state *st);
enum { STRATA_RESTORE_EV_RESUME = 1, STRATA_RESTORE_EV_EXPIRED };
typedef void (*strata_restore_sweep_cb)(void *ud, int ev, const char *bucket, const char *key,
                                        const char *version_id);
/* Remove every expired copy (cb EXPIRED after each) and name the copies
 * whose run gave no sign of life for resume_after_ms (cb RESUME: run them
 * again; 0: every copy being made, as after a crash of the only process;
 * negative: none).  *expired (may be NULL) counts the removed copies.
 * On a store shared by several gateways run it where meta's "ilm" lease
 * is held (once per cluster). */
int strata_meta_restore_sweep(struct strata_meta *m, int64_t resume_after_ms,
                              strata_restore_sweep_cb cb, void *ud, uint64_t *expired);
/* How long a copy being made may give no sign of life before a sweep
 * hands it to another run (an hour of a day of day_ms, at least 3 s); a
 * run shows one at least three times as often. */
int64_t strata_restore_stale_ms(int64_t day_ms);
/* Fault tests: the process exits at once (as kill -9) after a run copied
 * its pieces-th piece (0: never). */
void strata_meta_test_restore_crash(unsigned pieces);

/* ---- healing ------------------------------------------------------------ */

struct strata_heal_stats {
    uint64_t records_healed; /* bucket and version records rewritten */
    uint64_t shards_healed;
    uint64_t objects_scanned;
    uint64_t minority_removed; /* versions below quorum whose absence had a write quorum */
    uint64_t minority_healed;  /* versions below quorum rolled forward (locked, or undecided) */
};
/* Bring every drive of every set back to the quorum's records and shards.
 * Heal, the heal queue, orphan reclaim and the store figures are the local
 * drives' upkeep: on a backend whose cluster keeps its own redundancy
 * (RADOS) they answer STRATA_ENOTIMPL (not applicable), the queue is empty
 * and the figures are 0. */
int strata_meta_heal_all(struct strata_meta *m, struct strata_heal_stats *out);
/* Whether the store has a heal to run (false: its cluster heals itself). */
bool strata_meta_has_heal(const struct strata_meta *m);
/*
 * The same, paced by the caller: pace_cb(ud, keys) is called on the
 * caller's thread after every STRATA_HEAL_PACE_KEYS record keys (and for
 * the rest at the end of each set), between keys, with no key lock held
 * but with the heal lock held (so it must not heal: strata_meta_heal_queued
 * would wait for this very heal).  It may sleep to keep a rate.  A non-zero
 * return stops the heal, which returns it (fresh drives stay fresh).
 * Before each call up to STRATA_HEAL_PACE_KEYS keys of the heal queue are
 * healed too, and counted in keys: the queue is not held up by a long pass.
 */
#define STRATA_HEAL_PACE_KEYS 16
typedef int (*strata_heal_pace_cb)(void *ud, uint64_t keys);
int strata_meta_heal_all_paced(struct strata_meta *m, strata_heal_pace_cb pace_cb, void *ud,
                               struct strata_heal_stats *out);

/*
 * strata_meta_heal_all and strata_meta_heal_queued are serialised: one heal
 * runs at a time, whoever asked (the scanner, an admin request).
 *
 * Immediate heal queue: a commit that reached its write quorum but not every
 * drive of its set queues its record keys (in memory, bounded: when full,
 * further keys are counted as dropped and left to the next
 * strata_meta_heal_all).  strata_meta_heal_queued heals up to max queued
 * keys (0 = all) the way strata_meta_heal_all heals them, and returns how
 * many keys it took; pending (may be NULL) receives what is left.
 */
int strata_meta_heal_queued(struct strata_meta *m, size_t max, struct strata_heal_stats *out,
                            size_t *pending);
/* Keys waiting in the heal queue, and keys it dropped (queue full) since open. */
void strata_meta_heal_queue_stats(struct strata_meta *m, size_t *pending, uint64_t *dropped);

/* ---- orphan reclaim ------------------------------------------------------- */

/*
 * Shard files under data/ that no record references: the leftovers of a
 * crash between a commit and the deletion of replaced data, of a parked
 * drop lost in a crash, or of a write that published its shards and died
 * before its record commit.  A round lists the data ids with shard files at
 * least age_s seconds old, then reads every record that can hold a data id
 * (version records, part records of uploads in progress, part tables of
 * multipart versions) on every online drive of every set, and the drops
 * parked on readers' pins.  A data id is deleted (strata_ec_delete) only
 * when it was unreferenced in this round and in the previous one: a
 * reference that appears while a round reads (a multipart complete moving
 * part ids from part records to a part table) cannot be missed twice.  The
 * age covers writes in flight: shards are published seconds before their
 * record commits.  The state between rounds lives in *state (NULL at
 * first; freed by strata_meta_orphans_free).  *removed counts data ids
 * deleted.
 */
struct strata_orphans;
int strata_meta_orphan_round(struct strata_meta *m, struct strata_orphans **state,
                             unsigned age_s, uint64_t *removed);
void strata_meta_orphans_free(struct strata_orphans *state);

/* ---- version-time index (lifecycle due work) ----------------------------- */

/*
 * Every live version record has an index entry (bucket, mtime, key, version
 * id), written and removed in the same batch as the record on each drive
 * (meta/due.c).  Entries are hints: a consumer re-reads the version with the
 * quorum rule before acting and drops entries that no record backs.
 */
struct strata_due_entry {
    char key[STRATA_KEY_MAX + 1];
    char version_id[STRATA_VERSION_ID_MAX + 1];
    int64_t mtime_ms;
};
/*
 * Calls cb for the entries of bucket with from_ms <= mtime < to_ms, oldest
 * first (a merge of every online drive: an entry is seen once).  A non-zero
 * return from cb stops the walk and is returned.  Memory does not grow with
 * the number of entries.
 */
int strata_meta_due_scan(struct strata_meta *m, const char *bucket, int64_t from_ms, int64_t to_ms,
                         int (*cb)(const struct strata_due_entry *e, void *ud), void *ud);
/* Remove the entry of version_id of bucket/key from the drives where no
 * live record backs it (unsynced: a hint).  STRATA_ENOTFOUND on a store
 * whose entries go with their versions (RADOS): nothing to drop. */
int strata_meta_due_drop(struct strata_meta *m, const char *bucket, const char *key,
                         const char *version_id);

/* ---- daemon state documents ------------------------------------------------ */

/*
 * Small named documents of the daemon itself (e.g. the lifecycle scanner's
 * position), on every drive of set 0 with the write quorum; get is a
 * quorum read (STRATA_ENOTFOUND when absent, STRATA_EQUORUM when the
 * drives disagree without a quorum).  put with len 0 deletes.  name at most
 * 64 bytes, doc at most 64 KiB.
 */
int strata_meta_state_put(struct strata_meta *m, const char *name, const void *doc, size_t len);
int strata_meta_state_get(struct strata_meta *m, const char *name, void **doc, size_t *len);

/*
 * Leases: background work that must run once per cluster, not once per
 * gateway (the lifecycle scanner and due drains: "ilm").  The contract
 * every store keeps:
 * - TAKE: 0 when this gateway holds name now (taking a lease it holds
 *   renews it), STRATA_EBUSY while another gateway holds it: try again
 *   after strata_meta_lease_renew_ms.
 * - RENEW: every strata_meta_lease_renew_ms while working.  0 while held;
 *   STRATA_EBUSY when the lease was lost (this gateway did not renew for
 *   STRATA_LEASE_MS and another took it over): stop that work at once.
 * - RELEASE: 0, also when not held; another gateway may take it at once.
 * A holder that dies stops renewing, so another gateway takes over within
 * the lease's length (STRATA_LEASE_MS unless the store was opened with
 * another) plus a renew interval.  A lease only avoids duplicate
 * work: two holders at once (one stalled past its lease) must not be able
 * to do anything twice, so everything done under it is a guarded commit.
 * On local drives one process is the whole cluster: TAKE and RENEW always
 * return 0.  name: 1..STRATA_LEASE_NAME_MAX of [a-z0-9_-] (else
 * STRATA_EINVAL).
 */
enum strata_lease_op { STRATA_LEASE_TAKE, STRATA_LEASE_RENEW, STRATA_LEASE_RELEASE };
#define STRATA_LEASE_MS 15000
#define STRATA_LEASE_RENEW_MS 5000
#define STRATA_LEASE_NAME_MAX 32
int strata_meta_lease(struct strata_meta *m, const char *name, enum strata_lease_op op);
/* How often a holder renews (and a waiter asks): a third of the lease's
 * length; STRATA_LEASE_RENEW_MS on local drives. */
unsigned strata_meta_lease_renew_ms(struct strata_meta *m);
/* Test hook (unit tests only): the local store of this process answers TAKE
 * and RENEW of lease name with STRATA_EBUSY, as if another gateway held it
 * (NULL: none), so work that runs under a lease can be tested on local
 * drives. */
void strata_meta_test_lease_held_elsewhere(const char *name);

/*
 * Message queues kept in a store that several gateways share (RADOS:
 * object q.NAME of the meta pool, RADOS.md), for the event and
 * replication queues (server/pqueue.h).  queues_shared: whether the store
 * keeps them (false on local drives, where they are files: every other
 * call answers STRATA_ENOTIMPL there).  name: 1..STRATA_META_QUEUE_NAME_MAX
 * of [A-Za-z0-9._-] (else STRATA_EINVAL).
 * - push: msg (<= STRATA_META_QUEUE_MSG_MAX bytes) appended; 0 once it is
 *   durable in the cluster.  Keys sort in push order per gateway (and by
 *   time across gateways).
 * - read: up to max (<= STRATA_META_QUEUE_READ_MAX) messages whose keys
 *   sort after `after` ("" from the first), in key order: *n of them in
 *   out (msg malloc'ed, '\0'-terminated; strata_meta_queue_ents_fini).
 * - remove: the messages of keys[0..n) (delivered) are gone; absent keys
 *   are no error.
 * - count: how many are queued, counted up to upto (*n <= upto).
 * - lease: take, renew or release the right to deliver this queue, as
 *   strata_meta_lease (held by one gateway of the cluster at a time).
 */
#define STRATA_META_QUEUE_NAME_MAX 96
#define STRATA_META_QUEUE_KEY_MAX 40
#define STRATA_META_QUEUE_MSG_MAX (1u << 20)
#define STRATA_META_QUEUE_READ_MAX 64
struct strata_meta_queue_ent {
    char key[STRATA_META_QUEUE_KEY_MAX];
    char *msg;
    size_t len;
};
bool strata_meta_queues_shared(struct strata_meta *m);
int strata_meta_queue_push(struct strata_meta *m, const char *name, const void *msg, size_t len);
int strata_meta_queue_read(struct strata_meta *m, const char *name, const char *after, size_t max,
                           struct strata_meta_queue_ent *out, size_t *n);
void strata_meta_queue_ents_fini(struct strata_meta_queue_ent *e, size_t n);
int strata_meta_queue_remove(struct strata_meta *m, const char *name, const char *const *keys,
                             size_t n);
int strata_meta_queue_count(struct strata_meta *m, const char *name, uint64_t upto, uint64_t *n);
int strata_meta_queue_lease(struct strata_meta *m, const char *name, enum strata_lease_op op);

/*
 * A Ceph RADOS cluster for the store (meta/RADOS.md).  conf: a ceph.conf
 * (with its keyring); id: the cephx user without "client." (NULL: "admin");
 * prefix: pools are PREFIX.meta and PREFIX.data (NULL: "strata");
 * timeout_s: how long reaching the monitors may take (0: 10 s).
 * init creates the pools and the control objects, leaving what exists
 * (idempotent).  check tells whether the cluster is reachable, the pools
 * exist and the layout is initialised: 0, STRATA_ENOTFOUND (a pool or the
 * layout is missing: run init), STRATA_EIO (unreachable, refused),
 * STRATA_EINVAL (the conf file cannot be read), STRATA_ENOTIMPL (built
 * without librados).  Both write one line for a person into msg.
 */
struct strata_rados_tier {
    const char *name; /* a tier name (strata_tier_name_ok), not "hot" */
    const char *pool; /* an existing pool of the cluster, not PREFIX.meta/.data */
};
struct strata_rados_opts {
    const char *conf;
    const char *id;
    const char *prefix;
    unsigned timeout_s;
    /* strata_meta_open_rados only: tiers as pools (RADOS.md, "Tiers as
     * pools"), each a data tier over its pool, made and owned by meta. */
    const struct strata_rados_tier *tiers;
    unsigned ntiers;
    /* Data a commit unreferenced (a replaced or deleted version, an
     * aborted part) is removed 15 min after, so that readers on other
     * gateways finish; at most this many seconds when not 0. */
    unsigned reclaim_grace_max_s;
    /* A lease's length in seconds (0: STRATA_LEASE_MS): how soon another
     * gateway takes over the work of one that died; renewed every third. */
    unsigned lease_s;
};
int strata_meta_rados_init(const struct strata_rados_opts *o, char *msg, size_t cap);
int strata_meta_rados_check(const struct strata_rados_opts *o, char *msg, size_t cap);

/*
 * Open the namespace in the cluster of ro (the daemon with --rados-conf):
 * strata_meta_rados_check first, so the errors and ei->msg are its
 * (STRATA_EIO unreachable within ro->timeout_s, STRATA_ENOTFOUND a pool or
 * the layout missing: "run strata rados init", STRATA_EINVAL the conf file,
 * STRATA_ENOTIMPL built without librados).  No drive is used, nor the
 * RocksDB sizes: the tiers besides hot are ro->tiers, pools of the same
 * cluster (STRATA_ENOTFOUND when one's pool does not exist, STRATA_EINVAL
 * for a bad name or pool, both with ei->msg), then opts->tiers, the
 * caller's as on local drives (remote S3 tiers: their data is off the
 * cluster, every record naming it in the cluster; the caller must not hand
 * over a tier on local drives, which other gateways could not reach).
 * Close with strata_meta_close.
 */
int strata_meta_open_rados(const struct strata_rados_opts *ro, const struct strata_meta_opts *opts,
                           struct strata_meta **out, struct strata_errinfo *ei);
/* Which store holds the namespace: "local" (the drive sets) or "rados". */
const char *strata_meta_store_name(const struct strata_meta *m);
/*
 * Bucket caches across gateways.  cb(ud, bucket) runs on a backend thread
 * whenever another gateway changed bucket's record or configuration (the
 * change is answered to its client only after every watcher ran cb), and
 * cb(ud, NULL) when changes may have been missed (a broken watch, while it
 * is re-established, and once more when it is): drop everything cached.
 * Local drives have no other gateway: 0 and never called.  NULL cb
 * unregisters (before strata_meta_close).
 */
typedef void (*strata_meta_invalidate_cb)(void *ud, const char *bucket);
int strata_meta_on_invalidate(struct strata_meta *m, strata_meta_invalidate_cb cb, void *ud);

/* ---- object lock: retention clock and audit log ------------------------- */

/*
 * The retention clock.  Retention is judged by a clock the daemon keeps
 * itself, so setting the system clock forward releases nothing: at
 * strata_meta_open it takes start = max(wall clock now, highest high-water
 * mark persisted on any drive), and from then on advances by the elapsed
 * time of CLOCK_BOOTTIME, which settimeofday/clock_settime cannot move.  A
 * background thread persists the clock as a high-water mark on every drive
 * (DRIVE/lock-clock, every STRATA_LOCK_CLOCK_PERSIST_MS and at close:
 * tmp + fsync + rename), so it never runs backwards across restarts.  A
 * wall clock more than STRATA_LOCK_CLOCK_START_GAP_MS past the mark at open,
 * or a step of the wall clock of more than STRATA_LOCK_CLOCK_STEP_MS
 * relative to the lock clock while running, is logged (WARN) and written to
 * the audit log as action "ClockJump".  What a reboot with a forged clock
 * can and cannot do is in meta/README.md.
 */
#define STRATA_LOCK_CLOCK_PERSIST_MS 2000
#define STRATA_LOCK_CLOCK_START_GAP_MS (5 * 60 * 1000)
#define STRATA_LOCK_CLOCK_STEP_MS (60 * 1000)

/* The retention clock: Unix ms judged by the daemon's own clock (start wall
 * time + CLOCK_BOOTTIME elapsed), never below the persisted high-water mark.
 * Thread-safe, cheap (no syscall beyond clock_gettime). */
int64_t strata_meta_lock_now_ms(struct strata_meta *m);

/*
 * The audit log: an append-only, hash-chained log of every lock
 * configuration change, retention or legal-hold change, denied delete or
 * overwrite of a locked version, and clock jump.  Each drive of each set
 * keeps its own copy, DRIVE/audit.log: one JSON object per line, whose last
 * field "hash" is the SHA-256 of the line's bytes before it, which include
 * "prev", the hash of the drive's previous entry (64 zeros for the first).
 * Entries also carry "seq", a number shared by the copies of one event on
 * all drives.  The format is in meta/README.md.
 */
struct strata_audit_event {
    const char *user;       /* access key, or "-" (internal: lifecycle, admin) */
    const char *bucket;
    const char *key;        /* NULL for bucket-level events */
    const char *version_id; /* NULL when none */
    const char *action;     /* e.g. "PutObjectRetention", "DeleteObject", "PutObjectLockConfiguration", "ClockJump" */
    const char *outcome;    /* "allowed", "denied", or a short error name */
    const char *detail;     /* NULL or free text, e.g. "mode=COMPLIANCE until=2027-01-01T00:00:00Z" */
};
/* Append one entry, hash-chained, fsynced on the write quorum of drives before
 * returning.  STRATA_EQUORUM when too few drives took it.
 * (Every set needs its write quorum, as for bucket records; the drives that
 * did take an entry below quorum keep it: the log records the attempt.)
 * NULL strings are written as absent fields (user, bucket, action and
 * outcome as "-").  Strings are cut at a UTF-8 boundary (user and bucket
 * 256 bytes, key 1024, version id, action and outcome 64, detail 1024); a
 * key that is not UTF-8 is kept as "key_hex", other such strings as "-".
 * Any thread; appends are serialised and share fsyncs. */
int strata_meta_audit_append(struct strata_meta *m, const struct strata_audit_event *ev);

struct strata_audit_verify {
    uint64_t entries;       /* entries that verified (= broken_at when broken) */
    bool broken;
    uint64_t broken_at;     /* 0-based index of the first bad entry when broken */
    char reason[128];
    uint64_t last_seq;      /* "seq" of the last good entry (0 when none) */
};
/* Walk one drive's audit log (drive directory path); no daemon needed.
 * Besides the chain, the log must reach the last durable entry named in the
 * drive's lock-clock file (entries cut from the end are found; broken_at is
 * then the entry count).  An absent log with no such record is an empty,
 * unbroken chain.  Returns 0 whether or not the
 * chain is broken (see out->broken); STRATA_EIO/ENOMEM when the file cannot
 * be read. */
int strata_audit_verify_drive(const char *drive_dir, struct strata_audit_verify *out);
/* The same for the audit chain kept in the cluster of o (its segments
 * audit.N in PREFIX.meta); no daemon needed.  STRATA_EIO when the cluster
 * cannot be reached or read, STRATA_ENOTIMPL without librados. */
int strata_audit_verify_rados(const struct strata_rados_opts *o, struct strata_audit_verify *out);
/* The chain of m's store when it keeps one (RADOS: the cluster's, the same
 * walk as strata_audit_verify_rados, on a connection of its own); name
 * (cap bytes) names it.  STRATA_ENOTIMPL when the log has a copy per drive
 * (verify those with strata_audit_verify_drive). */
int strata_meta_audit_verify(struct strata_meta *m, struct strata_audit_verify *out, char *name,
                             size_t cap);

/* The last n entries of the audit log of a store with one chain (the
 * cluster's, on RADOS: every gateway's entries), oldest first: cb gets each
 * line (with its newline) until it returns non-zero.  where (cap bytes):
 * what was read (PREFIX.meta).  STRATA_ENOTIMPL when every drive keeps its
 * own copy (read one with strata_audit_verify_drive's files instead). */
int strata_meta_audit_tail(struct strata_meta *m, unsigned n,
                           int (*cb)(void *ud, const char *line, size_t len), void *ud,
                           char *where, size_t cap);

struct strata_audit_compare {
    uint64_t events;        /* distinct seqs seen */
    bool differ;
    uint64_t seq;           /* the first seq whose entries differ */
    unsigned drive_a, drive_b; /* indexes into drive_dirs of two that differ */
};
/*
 * Compare the drives' logs event by event: every copy of one seq must hold
 * the same event (all fields but "prev" and "hash").  With a chain that
 * verifies on each drive, an edit then has to be made consistently on every
 * drive that holds the entry.  Streams the logs (memory does not grow with
 * them); stops at the first difference, and at a drive's first unreadable
 * line (strata_audit_verify_drive reports that).  Absent logs are skipped.
 * STRATA_EIO/ENOMEM when a file cannot be read.
 */
int strata_audit_compare_drives(const char *const *drive_dirs, unsigned n,
                                struct strata_audit_compare *out);

#endif /* STRATA_META_H */
