/*
 * store.h - the store seam of meta/ (private to meta/; design in RADOS.md,
 * "The store seam in meta/").
 *
 * The rule code of meta/ reaches the storage of the cluster state only
 * through this ops table, so a second backend (RADOS) can take the local
 * drives' place without the rules knowing.  No rocksdb_* or rados_* type
 * appears here.  The table grows one step at a time (RADOS.md, "Next
 * step"): it holds what has moved behind it, nothing more.
 *
 * Behind it now: the daemon's state documents, the retention clock's
 * high-water mark, the audit log's copies, leases and cache invalidation,
 * bucket records and buckets' configuration documents; (step 3, in part)
 * the commits of one key's versions through key_txn / key_read: PUT and
 * copy commits, delete markers, deletes of a version, tag / ACL / SSE
 * rewrites, Object Lock retention and legal-hold changes, a transition's
 * switch of a version record, and the conditional pre-check of a PUT; the
 * reads of GET and HEAD (key_get); a transition's intent records
 * (intent_put / intent_get / intent_resolve, the resolution handed the
 * losing copies); ordered scans of a bucket's current versions, versions,
 * live uploads and version-time index (the listings,
 * ListMultipartUploads, strata_meta_due_scan), with the drive merge and
 * its read rule, and of the transition intents left to resolve
 * (strata_meta_transition_reclaim); multipart uploads: upload and part
 * records, ListParts, the complete (a pure decide over the key's versions,
 * the upload and its parts, applied at once with the upload's and parts'
 * removal) and abort; and, as optional ops a backend may leave NULL, the
 * local drives' upkeep: heal, the heal queue, orphan reclaim and the store
 * figures.  The local backend (meta/local/) keeps them on the drives of
 * the sets.  The RADOS backend (meta/rados/) has all but the upkeep; its
 * orphan_round is the gc pass of data written before a commit that never
 * came (pending_add) and of data commits stopped referring to; its due
 * index entries are written in the op of their version, its intents'
 * resolution queues the losing data for reclaim (g/) in the op that
 * removes the intent.
 *
 * Not behind it yet (they call the local functions directly): the part
 * tables a transition reads and rewrites of a multipart version.
 */
#ifndef STRATA_META_STORE_H
#define STRATA_META_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/meta.h"

/* State documents: names of 1..STATE_NAME_MAX bytes, documents up to
 * STATE_DOC_MAX bytes (checked above the seam, state.c). */
#define STRATA_META__STATE_NAME_MAX 64
#define STRATA_META__STATE_DOC_MAX (64 * 1024)

/* An audit entry's line is at most this long (longer lines are corrupt),
 * and sealing adds at most SEAL_MAX bytes to the event's fields. */
#define STRATA_META__AUDIT_LINE_MAX (32u * 1024)
#define STRATA_META__AUDIT_SEAL_MAX 256

/* What opening the audit log's storage found and repaired, for the audit
 * layer to record as entries (empty strings: nothing). */
struct strata_meta__audit_found {
    char torn[512];    /* copies whose incomplete last entry was cut */
    char missing[512]; /* copies that end before their recorded anchor */
};

/* One copy of the audit log opened for reading (verify, compare). */
struct strata_meta__audit_copy;

/*
 * Makes the line of entry seq on one copy: the event's fields (body, as
 * audit.c built them) chained to prev, the hash of the copy's previous
 * entry (64 zeros for its first).  Writes the line with its newline into
 * line (cap bytes) and its hash into hash; returns the line's length.
 * The backend calls it once per copy, and again for a copy whose tail moved
 * (RADOS: another gateway appended first), so it must have no effects.
 */
typedef size_t (*strata_meta__audit_seal_fn)(uint64_t seq, const char *body, const char *prev,
                                             char *line, size_t cap, char hash[65]);

/* The seq and hash of an entry's line (len bytes, no newline); false when
 * the line is not a readable entry. Writes hash only on success. */
typedef bool (*strata_meta__audit_tail_fn)(const char *line, size_t len, uint64_t *seq,
                                           char hash[65]);

/* What a bucket_txn's decide sees of one bucket record. */
struct strata_meta__bucket_view {
    bool exists;   /* a live record (a deleted bucket's tombstone is absent) */
    int info_rc;   /* with exists: 0, or why info could not be decoded */
    struct strata_bucket_info info;
    bool empty;    /* with want_empty and exists: no version keeps the bucket */
};

enum strata_meta__bucket_edit {
    STRATA_META__BUCKET_PUT,    /* write next (create or change) */
    STRATA_META__BUCKET_REMOVE, /* delete the bucket and its configuration */
};

/*
 * A read-decide-write of one bucket record.  decide gets the view and
 * returns 0 with the edit (and next for PUT) or an error, which leaves the
 * record untouched; it must be a pure function of the view (a backend may
 * run it again on a conflict).  want_empty fills view.empty and holds off
 * the bucket's new versions and uploads until the txn ends.
 * before_remove (NULL: none) runs once, after decide chose REMOVE and
 * before it applies, while nothing new can land in the bucket (aborting
 * its uploads); an error from it cancels the removal.
 */
struct strata_meta__bucket_txn {
    const char *name;
    bool want_empty;
    int (*decide)(void *ud, const struct strata_meta__bucket_view *view,
                  enum strata_meta__bucket_edit *edit, struct strata_bucket_info *next);
    int (*before_remove)(struct strata_meta *m, const char *name, void *ud);
    void *ud;
};

/* ---- keys: one key's versions (step 3; RADOS.md, "The store seam") ---- */

struct meta_rec; /* a decoded version record (meta_internal.h; no storage type in it) */

/* Which versions of the key a key_txn or key_read reads into its view. */
#define STRATA_META__KEY_LATEST 0x1u /* the newest live version (delete markers too) */
#define STRATA_META__KEY_NULL 0x2u   /* the newest live null version */
#define STRATA_META__KEY_VERSION 0x4u /* the version named by version_id */
/* With NULL (never-versioned buckets hold only null versions): the null
 * version is the latest, one read fills both slots. */
#define STRATA_META__KEY_NULL_IS_LATEST 0x8u
/* decide judges the records, never an inline object's bytes: a backend may
 * fill LATEST (and NULL with NULL_IS_LATEST) without them (shard_len 0). */
#define STRATA_META__KEY_NO_BYTES 0x10u

/* One version slot of a view.  rc: 0 (rec and sk valid until decide
 * returns; rec is decoded without the stored headers), STRATA_ENOTFOUND,
 * or why it could not be read (decide chooses whether that matters: a
 * rule may refuse before it needs the slot). */
struct strata_meta__key_slot {
    int rc;
    uint8_t sk[16];
    const struct meta_rec *rec;
};

/* What decide sees: the slots asked for, and the clocks it must judge by
 * (read once per txn, so a rerun of decide on the same view decides the
 * same). */
struct strata_meta__key_view {
    const char *bucket, *key;
    int64_t now_ns;      /* wall clock: the mtime of a new version */
    int64_t lock_now_ms; /* the retention clock (strata_meta_lock_now_ms) */
    uint8_t rand[8];     /* the random half of a new sort key: key_txn fills
                          * it when LATEST is wanted (every commit of a new
                          * version reads the latest); zero otherwise and
                          * in key_read, whose edit is never applied */
    struct strata_meta__key_slot latest, null, version;
};

/*
 * An in-place rewrite of a version record: the tag set, the lock state,
 * the encryption descriptor and the ACL (preset to the record's values;
 * pointers into it), for a transition the class, the tier, the data id
 * or part index (NULL / false: unchanged) with the version's new part
 * table chunks (nchunks values, chunk c at chunk_v[c]), and one stored
 * header set or removed (the view's records are decoded without their
 * headers, so the backend applies it to each drive's record).
 */
struct meta_edit {
    const void *tags;
    size_t tags_len;
    struct strata_obj_lock lock;
    const uint8_t *sse; /* encryption descriptor (key rotation re-wraps it) */
    size_t sse_len;
    const uint8_t *acl; /* access control list (PutObjectAcl) */
    size_t acl_len;
    const char *storage_class;
    const char *tier;
    bool set_data_id;
    uint8_t data_id[STRATA_DATA_ID_LEN];
    const uint8_t *pidx;
    size_t pidx_len;
    size_t nchunks;
    char *const *chunk_v;
    const size_t *chunk_len;
    const char *hdr_name; /* a stored header to set to hdr_value (NULL: remove it); the
                           * record's other headers are kept (NULL name: none) */
    const char *hdr_value;
    int64_t changed_ns; /* the rewrite's change stamp (record field 27); set by
                         * strata_meta__rewrite_begin */
};

/* Data a committed edit stopped referring to: dropped once, by the caller,
 * after the apply (strata_meta__drop; pinned readers delay it). */
struct strata_meta__key_reclaim {
    bool any;
    uint32_t flags;
    bool has_data_id;
    uint8_t data_id[STRATA_DATA_ID_LEN];
    uint8_t sk[16];
    size_t nparts;
    char tier[STRATA_TIER_NAME_MAX + 1];
};

/* An audit entry an edit needs (Object Lock decisions).  key_txn appends
 * it once: before the apply when decide returned 0 (its failure cancels
 * the apply and is returned), after a refusal otherwise. */
struct strata_meta__key_audit {
    bool any;
    const char *user; /* the actor's, or NULL ("-") */
    char version_id[STRATA_VERSION_ID_MAX + 1];
    const char *action;
    const char *outcome;
    char detail[192];
};

enum strata_meta__key_op {
    STRATA_META__KEY_NONE,    /* nothing to write (decide's answer is all) */
    STRATA_META__KEY_PUT,     /* a new version rec under sk */
    STRATA_META__KEY_REMOVE,  /* the version of slot `replace` deleted for good */
    STRATA_META__KEY_REWRITE, /* the version slot's record rewritten (rw) */
};

enum strata_meta__key_which { STRATA_META__SLOT_NONE, STRATA_META__SLOT_NULL, STRATA_META__SLOT_VERSION };

/* What decide returns.  The pointers stay the caller's (decide's ud) until
 * key_txn returns. */
struct strata_meta__key_edit {
    enum strata_meta__key_op op;
    uint8_t sk[16];        /* PUT: the new version's sort key */
    struct meta_rec *rec;  /* PUT: its record (inline: shard fields unset) */
    const void *inline_data; /* PUT of REC_F_INLINE: the object's bytes; the backend
                              * splits them into per-drive shards */
    size_t inline_len;
    enum strata_meta__key_which replace; /* PUT / REMOVE: the version deleted for good
                                          * (a PUT under its own sort key, a replica
                                          * sent again: written over) */
    int64_t tomb_ns;                     /* its deletion time */
    struct meta_edit rw;                 /* REWRITE */
    struct strata_meta__key_audit audit;
    struct strata_meta__key_reclaim reclaim;
};

/*
 * A read-decide-write of one key.  The backend reads the slots of want
 * into a consistent view (locally under the key's stripe lock), calls
 * decide, and applies the edit atomically: all of it or nothing.  decide
 * must be a pure function of the view (a backend may run it again after a
 * conflict); effects outside the edit happen once: the audit entry by
 * key_txn, the reclaim by the caller after a successful return.
 * incarnation (non-zero): the bucket must exist with it, and cannot be
 * deleted until the edit is applied (version and upload commits).
 */
struct strata_meta__key_txn {
    const char *bucket, *key;
    uint64_t incarnation;
    bool hold_bucket;      /* check and hold the bucket (incarnation above) */
    unsigned want;         /* STRATA_META__KEY_* */
    bool want_copies;      /* the slots' copies on every drive (for undo) */
    const char *version_id; /* VERSION: NULL/"" latest, "null", or an id */
    int (*decide)(void *ud, const struct strata_meta__key_view *v, struct strata_meta__key_edit *e);
    void *ud;
};
/* One version of a key as key_get found it, pinned by the backend until
 * key_get's callback returns (locally: the drives' iterators, so an inline
 * object's shards are read in place, never copied out first). */
struct strata_meta__key_found {
    uint8_t sk[16];
    const struct meta_rec *rec; /* decoded without the stored headers */
    const char *raw;            /* the record as stored (record.c's map): its headers */
    size_t rawlen;
    bool is_latest;             /* the key's newest version */
    /* An inline object (REC_F_INLINE, rec->size > 0): write its rec->size
     * bytes to out.  0, STRATA_EQUORUM (not enough copies readable) or
     * STRATA_ECORRUPT. */
    int (*inline_read)(const struct strata_meta__key_found *f, uint8_t *out);
    /* Optional (NULL: copy with inline_read): the same bytes where the
     * backend keeps them, verified already, valid until release(*hold)
     * (a cached object's GET body refers to the cache, never copied). */
    const uint8_t *(*inline_hold)(const struct strata_meta__key_found *f, void **hold);
    void (*release)(void *hold);
    void *priv; /* the backend's */
};

/* key_get's callback: runs once with the version found; its answer is
 * key_get's. */
typedef int (*strata_meta__key_found_fn)(void *ud, const struct strata_meta__key_found *f);
/* ---- multipart uploads: upload and part records of one key ---- */

struct meta_part;   /* a decoded part record (meta_internal.h) */
struct meta_upload; /* a decoded upload record (meta_internal.h) */

/* Data a multipart commit stopped referring to (a replaced part, parts a
 * complete did not list, an aborted upload's parts): reclaimed once, by
 * the caller, after the apply.  v is malloc'ed (the caller frees it). */
struct strata_meta__data_ref {
    char tier[STRATA_TIER_NAME_MAX + 1]; /* "" = hot */
    uint8_t data_id[STRATA_DATA_ID_LEN];
};
struct strata_meta__data_refs {
    struct strata_meta__data_ref *v;
    size_t n;
};

/* What a complete's decide sees: the key's slots (key.*; want as for a
 * version commit), the upload's record as stored (done: the completed-
 * upload record of an earlier complete, else the live upload record; both
 * record.c's encodings) and its committed part records in part number
 * order.  Valid until decide returns. */
struct strata_meta__mpu_view {
    struct strata_meta__key_view key;
    bool done;
    const char *uv;
    size_t uvl;
    const struct meta_part *parts;
    size_t nparts;
};

/* What a complete's decide returns: key.op PUT of the new (multipart)
 * version with its part table chunks (chunk c at chunk_v[c]) and the
 * completed-upload record that replaces the upload record; or key.op NONE
 * (nothing written: a retried complete answered from the completed-upload
 * record).  kept[n] (n <= 10,000): part n's data is in the part table;
 * every other part record's data is reclaimed.  Pointers stay decide's ud's
 * until mpu_complete returns. */
struct strata_meta__mpu_edit {
    struct strata_meta__key_edit key;
    size_t nchunks;
    char *const *chunk_v;
    const size_t *chunk_len;
    const char *done_v;
    size_t done_vl;
    const bool *kept;
};

/* A complete: the upload (16-byte id) of bucket/key, the bucket held with
 * its incarnation as for a version commit; decide must be pure (a backend
 * runs it again after a conflict). */
struct strata_meta__mpu_txn {
    const char *bucket, *key;
    uint64_t incarnation;
    const uint8_t *upload;
    unsigned want; /* STRATA_META__KEY_* (strata_meta__version_want) */
    const char *version_id; /* with VERSION in want: the version of this id in
                             * the view's version slot (a replica's complete
                             * under the source's id), as key_txn's */
    int (*decide)(void *ud, const struct strata_meta__mpu_view *v, struct strata_meta__mpu_edit *e);
    void *ud;
};

/* The state an orphan_round keeps between rounds: the backend's, opaque
 * above the seam; strata_meta_orphans_free calls release. */
struct strata_orphans {
    void (*release)(struct strata_orphans *state);
};

/* What a scan walks (scan_open).  The backend applies its read rule (the
 * local drives: quorum for a version not every merged drive holds), so
 * the entries are what HEAD and GET would show. */
enum strata_meta__scan_kind {
    STRATA_META__SCAN_CURRENT,  /* per key, its latest version (delete markers too) */
    STRATA_META__SCAN_VERSIONS, /* every version of every key, keys in order, newest first */
    STRATA_META__SCAN_UPLOADS,  /* live multipart uploads, by key, then upload id */
    STRATA_META__SCAN_DUE,      /* the version-time index: versions by mtime (hints) */
    STRATA_META__SCAN_INTENTS,  /* transition intents left to resolve (every bucket's) */
};

/* Where and what a scan reads.  CURRENT, VERSIONS, UPLOADS: entries have
 * keys starting with prefix (NULL: ""), in key order.  after (NULL: none;
 * at or past prefix, checked above the seam): start past every version
 * (upload) of that key, or, with after_sk, past that one version (upload)
 * of it: the ones after it follow.  DUE: the entries with from_ms <= mtime
 * < to_ms, oldest first, seen on any drive (hints: the consumer re-reads
 * the version); prefix and after are not used.  no_cache: a maintenance
 * walk that leaves the read caches alone. */
struct strata_meta__scan_spec {
    const char *bucket;
    enum strata_meta__scan_kind kind;
    const char *prefix;
    const char *after;
    const uint8_t *after_sk; /* VERSIONS: a sort key; UPLOADS: an upload id (16 bytes) */
    int64_t from_ms, to_ms;  /* DUE */
    bool no_cache;
    /* Entries the caller means to take, 0 when it may seek past prefixes
     * (a delimiter) or does not know: a backend may size its first reads
     * by it (RADOS: one read per shard for a page instead of several). */
    unsigned want;
};
/* INTENTS: bucket NULL (every bucket's intents, a bucket at a time, each
 * in key order); prefix and after are not used.  Entries are the intents
 * stored when they were read: the consumer reads each again (intent_get)
 * before acting. */

/* One entry of a scan, valid until the next call on the scan. */
struct strata_meta__scan_ent {
    const char *key;                /* the object key, keylen bytes, NUL-terminated */
    size_t keylen;
    const uint8_t *sk;              /* VERSIONS, DUE: the version's sort key; else NULL */
    struct strata_obj_info *info;   /* CURRENT, VERSIONS: the version (is_latest unset) */
    struct strata_mpu_info *upload; /* UPLOADS: the live upload */
    int64_t due_ms;                 /* DUE: the version's mtime */
    const char *bucket;             /* INTENTS: the intent's bucket (sk: its version) */
};

/* A copy a transition's resolution found unreferenced (transition.c
 * decides which): data id `id` on tier `tier` ("" the hot tier). */
struct strata_meta__intent_loss {
    const char *tier;
    const uint8_t *id; /* STRATA_DATA_ID_LEN bytes */
};

/* An open scan (the backend's). */
struct strata_meta__scan;
/* A restored copy's record swapped (restore_swap) and what it means for
 * the copy's data ids: pend (npend) are the data of nw, written before
 * nw is done: ADD records them as pending (a backend that reclaims data
 * whose commit never came, RADOS's w/, reclaims them unless a DONE comes),
 * KEEP asserts they are still pending and stamps them again (a long copy),
 * DONE asserts they are still pending and hands them to nw for good.  drop
 * (ndrop): data of old that nothing names after the swap: with
 * reclaim_in_txn the swap queues it for reclaim, else the caller removes
 * it.  Locally the data ids are the caller's alone. */
enum strata_meta__restore_pend { STRATA_META__PEND_NONE, STRATA_META__PEND_ADD,
                                 STRATA_META__PEND_KEEP, STRATA_META__PEND_DONE };
struct strata_meta__restore_swap {
    const char *bucket, *key;
    const uint8_t *sk;
    const void *old;
    size_t oldlen;
    const void *nw;
    size_t nwlen;
    const uint8_t (*pend)[STRATA_DATA_ID_LEN];
    size_t npend;
    enum strata_meta__restore_pend pend_op;
    const uint8_t (*drop)[STRATA_DATA_ID_LEN];
    size_t ndrop;
};
typedef int (*strata_meta__restore_walk_fn)(void *ud, const char *bucket, const char *key,
                                            const uint8_t sk[16]);


/* Callback of on_invalidate: another gateway changed bucket's records. */
typedef void (*strata_meta__invalidate_fn)(void *ud, const char *bucket);

/*
 * The store ops, one line each: X(b, who, ret, op, params) for backend b,
 * who naming the backends that implement it (both, local or rados; the
 * other leaves it NULL).  The struct's members, each backend's prototypes
 * (strata_meta__B_OP) and its ops table are all made from this one list,
 * so an op is added in one place.
 */
#define STRATA_META__STORE_OPS(X, b)                                                               \
    /* ---- state documents ('S' name locally) ----                                                \
     * put with len 0 removes the document.  get: 0 with a malloc'ed copy,                         \
     * STRATA_ENOTFOUND, or a quorum / read error.  Names and sizes are                            \
     * checked above (state.c). */                                                                 \
    X(b, both, int, state_put, (struct strata_meta *m, const char *name, const void *doc,          \
      size_t len))                                                                                 \
    X(b, both, int, state_get, (struct strata_meta *m, const char *name, void **doc, size_t *len)) \
                                                                                                   \
    /* ---- the retention clock's high-water mark ----                                             \
     * mark_read: the mark the clock must not start below, or -1 when the                          \
     * store has none it can trust yet (a new store).  mark_advance: persist                       \
     * lock_ms as the new mark (the clock only moves forward, so the mark                          \
     * does); 0 when it is durable where the backend needs it. */                                  \
    X(b, both, int64_t, clock_mark_read, (struct strata_meta *m))                                  \
    X(b, both, int, clock_mark_advance, (struct strata_meta *m, int64_t lock_ms))                  \
    /* clock_peers (NULL: a store one process owns): ask the gateways                              \
     * running on the store for their lock clocks; the number that answered                        \
     * (0: none runs) with the highest in *max_ms.  Runs at open, before the                       \
     * clock exists: it must not call strata_meta_lock_now_ms. */                                  \
    X(b, rados, int, clock_peers, (struct strata_meta *m, int64_t *max_ms))                        \
                                                                                                   \
    /* ---- the audit log's storage (the hash chain is audit.c's) ----                             \
     * audit_open: open the copies and find their tails (tail reads the                            \
     * last entry), repairing what a crash left (reported in found);                               \
     * audit_close releases them (no-op when not open).  audit_append:                             \
     * take the next seq, seal the entry on every copy and return once it                          \
     * is durable (STRATA_EQUORUM when not on enough copies).                                      \
     * audit_last_seq: the highest durable seq, 0 for an empty log. */                             \
    X(b, both, int, audit_open, (struct strata_meta *m, strata_meta__audit_tail_fn tail,           \
      struct strata_meta__audit_found *found))                                                     \
    X(b, both, void, audit_close, (struct strata_meta *m))                                         \
    X(b, both, int, audit_append, (struct strata_meta *m, const char *body,                        \
      strata_meta__audit_seal_fn seal))                                                            \
    X(b, both, uint64_t, audit_last_seq, (struct strata_meta *m))                                  \
    /* Read one copy without a running daemon (strata audit, the admin                             \
     * API): locally where names a drive directory.  STRATA_ENOTFOUND when                         \
     * the copy has no log.  The anchor is the copy's last durable entry as                        \
     * recorded beside the log (false when none was). */                                           \
    X(b, both, int, audit_copy_open, (const char *where, struct strata_meta__audit_copy **out))    \
    X(b, both, bool, audit_copy_anchor, (const char *where, uint64_t *seq, char hash[65]))         \
    /* Next line with its newline (a torn last line lacks it): 1 and line,                         \
     * 0 at the end, STRATA_EIO on a read error.  line is valid until the                          \
     * next call. */                                                                               \
    X(b, both, int, audit_copy_next, (struct strata_meta__audit_copy *c, const char **line,        \
      size_t *len))                                                                                \
    /* audit_copy_close: NULL is a no-op. */                                                       \
    X(b, both, void, audit_copy_close, (struct strata_meta__audit_copy *c))                        \
    /* The last n entries of the store's one chain, oldest first, to cb                            \
     * (each line with its newline) until it returns non-zero; where (cap                          \
     * bytes) names what was read.  NULL: the log has a copy per drive                             \
     * (the admin API reads a drive's file). */                                                    \
    X(b, rados, int, audit_tail, (struct strata_meta *m, unsigned n,                               \
      int (*cb)(void *ud, const char *line, size_t len), void *ud, char *where,                    \
      size_t cap))                                                                                 \
    /* The store's one chain as audit_copy_open takes it (copy, ccap bytes)                        \
     * and its display name (name, ncap bytes): 0 or STRATA_EINVAL.  NULL:                         \
     * a copy per drive (the admin API verifies each drive's file). */                             \
    X(b, rados, int, audit_chain, (struct strata_meta *m, char *copy, size_t ccap, char *name,     \
      size_t ncap))                                                                                \
                                                                                                   \
    /* ---- bucket records ('B' name locally) ----                                                 \
     * Names are checked above (bucket.c).  bucket_txn: see struct                                 \
     * strata_meta__bucket_txn; 0 once the edit is committed, decide's                             \
     * error, or a quorum / write error with nothing changed.  bucket_get:                         \
     * 0 (out may be NULL), STRATA_ENOTFOUND, or a read error.  bucket_list:                       \
     * cb for every bucket in name order until it returns non-zero (that                           \
     * value is returned). */                                                                      \
    X(b, both, int, bucket_txn, (struct strata_meta *m, const struct strata_meta__bucket_txn *t))  \
    X(b, both, int, bucket_get, (struct strata_meta *m, const char *name,                          \
      struct strata_bucket_info *out))                                                             \
    X(b, both, int, bucket_list, (struct strata_meta *m,                                           \
      int (*cb)(const struct strata_bucket_info *b, void *ud), void *ud))                          \
                                                                                                   \
    /* ---- bucket configuration documents ('C' bucket 0x00 kind locally) ----                     \
     * config_put: store doc as bucket's document of that kind, len 0                              \
     * removes it; only while the bucket exists with incarnation inc                               \
     * (STRATA_ENOTFOUND otherwise).  config_get: 0 with a malloc'ed copy,                         \
     * STRATA_ENOTFOUND, or a read error.  A bucket's documents go with it                         \
     * (REMOVE).  Names and kinds are checked above (bucket.c). */                                 \
    X(b, both, int, config_put, (struct strata_meta *m, const char *bucket, uint64_t inc,          \
      const char *kind, const void *doc, size_t len))                                              \
    X(b, both, int, config_get, (struct strata_meta *m, const char *bucket, const char *kind,      \
      void **doc, size_t *len))                                                                    \
                                                                                                   \
    /* ---- leases: background work that runs once per cluster ----                                \
     * See strata_meta_lease in include/strata/meta.h for the contract. */                         \
    X(b, both, int, lease, (struct strata_meta *m, const char *name, enum strata_lease_op op))     \
    /* Optional: strata_meta_lease_renew_ms (NULL: STRATA_LEASE_RENEW_MS). */                      \
    X(b, rados, unsigned, lease_renew_ms, (struct strata_meta *m))                                 \
                                                                                                   \
    /* ---- message queues shared by the gateways (optional; NULL: none,                           \
     * strata_meta_queue_* answer STRATA_ENOTIMPL) ----                                            \
     * See strata_meta_queue_push in include/strata/meta.h; names are                              \
     * checked above (queue.c). */                                                                 \
    X(b, rados, int, queue_push, (struct strata_meta *m, const char *name, const void *msg,        \
      size_t len))                                                                                 \
    X(b, rados, int, queue_read, (struct strata_meta *m, const char *name, const char *after,      \
      size_t max, struct strata_meta_queue_ent *out, size_t *n))                                   \
    X(b, rados, int, queue_remove, (struct strata_meta *m, const char *name,                       \
      const char *const *keys, size_t n))                                                          \
    X(b, rados, int, queue_count, (struct strata_meta *m, const char *name, uint64_t upto,         \
      uint64_t *n))                                                                                \
    X(b, rados, int, queue_lease, (struct strata_meta *m, const char *name,                        \
      enum strata_lease_op op))                                                                    \
                                                                                                   \
    /* ---- bucket caches across gateways ----                                                     \
     * invalidate: tell the other gateways that bucket's records changed,                          \
     * before the change is answered (bucket.c calls it after each                                 \
     * committed bucket_txn and config_put).  on_invalidate: cb runs (on a backend                 \
     * thread) for every such change made elsewhere; NULL unregisters. */                          \
    X(b, both, int, invalidate, (struct strata_meta *m, const char *bucket))                       \
    X(b, both, int, on_invalidate, (struct strata_meta *m, strata_meta__invalidate_fn cb,          \
      void *ud))                                                                                   \
                                                                                                   \
    /* ---- keys: one key's versions ---- */                                                       \
    /* key_txn: see struct strata_meta__key_txn.  0 once the edit is                               \
     * applied (or decide chose NONE), decide's error (nothing changed), or                        \
     * a read / quorum / write error with nothing changed (a partial apply                         \
     * is undone).  key_read: the view of t without a lock or an apply;                            \
     * returns decide's answer (the edit is ignored). */                                           \
    X(b, both, int, key_txn, (struct strata_meta *m, const struct strata_meta__key_txn *t))        \
    X(b, both, int, key_read, (struct strata_meta *m, const struct strata_meta__key_txn *t))       \
    /* key_get: the version of bucket/key that GET and HEAD show: version_id                       \
     * NULL/"" the latest, "null" the newest null version, else the one                            \
     * with that id (delete markers too: the caller judges them).  fn runs                         \
     * with it and its answer is returned; STRATA_ENOTFOUND (no such key or                        \
     * version, a malformed id, no such bucket) or a read / quorum error                           \
     * without calling fn.  Read-after-write holds: across gateways                                \
     * nothing is cached (RADOS reads the store every call); the local                             \
     * backend, the only writer of its drives, answers the latest version                          \
     * of a key nobody wrote since its last quorum read from memory                                \
     * (local/rcache.c). */                                                                        \
    X(b, both, int, key_get, (struct strata_meta *m, const char *bucket, const char *key,          \
      const char *version_id, strata_meta__key_found_fn fn, void *ud))                             \
    /* Optional (NULL: key_get serves): key_get from memory only, for an                           \
     * event thread; STRATA_EBUSY, fn not run or its read of an inline                             \
     * object's bytes refused, where the answer needs a drive read or a                            \
     * wait (the caller then calls key_get on a thread that may wait). */                          \
    X(b, local, int, key_get_nowait, (struct strata_meta *m, const char *bucket, const char *key,  \
      const char *version_id, strata_meta__key_found_fn fn, void *ud))                             \
    /* ---- scans ----                                                                             \
     * scan_open: 0 with *out, or STRATA_EINVAL / a read error.  The bucket                        \
     * is not checked (the caller did).  scan_next: 1 with *e, 0 at the end                        \
     * (past the prefix), or an error (a read quorum not reached), after                           \
     * which only scan_close is valid.  scan_skip_past: the next scan_next                         \
     * starts at the first key that does not start with p[0..n) (a                                 \
     * delimiter's common prefix: one seek, not a walk of the keys under                           \
     * it); false when no key can follow.  scan_close: NULL is a no-op. */                         \
    X(b, both, int, scan_open, (struct strata_meta *m, const struct strata_meta__scan_spec *spec,  \
      struct strata_meta__scan **out))                                                             \
    X(b, both, int, scan_next, (struct strata_meta__scan *s, struct strata_meta__scan_ent *e))     \
    X(b, both, bool, scan_skip_past, (struct strata_meta__scan *s, const char *p, size_t n))       \
    X(b, both, void, scan_close, (struct strata_meta__scan *s))                                    \
                                                                                                   \
    /* ---- multipart uploads (upload ids are 16 bytes, never reused) ----                         \
     * upload_create: store the encoded upload record v of a new upload                            \
     * while the bucket exists with incarnation inc (STRATA_ENOTFOUND                              \
     * otherwise).  upload_get: the live upload, decoded (caller                                   \
     * strata_meta__upload_fini's); STRATA_ENOTFOUND when aborted, completed                       \
     * or never created.  part_put: store part record p of a live upload                           \
     * (STRATA_ENOTFOUND otherwise), replacing one of that number; *old gets                       \
     * the replaced record's data (none when the same data).  parts_read: cb                       \
     * for each committed part record numbered from on, in order, until it                         \
     * returns non-zero (returned).  mpu_complete: see struct                                      \
     * strata_meta__mpu_txn; 0 once applied (or decide chose NONE), decide's                       \
     * error, or a read / write error with nothing changed; *unref: data of                        \
     * part records not kept (only when applied).  mpu_abort: the live                             \
     * upload and its part records removed in one apply; *unref: their                             \
     * data. */                                                                                    \
    X(b, both, int, upload_create, (struct strata_meta *m, const char *bucket, const char *key,    \
      uint64_t inc, const uint8_t *upload, const void *v, size_t vl))                              \
    X(b, both, int, upload_get, (struct strata_meta *m, const char *bucket, const char *key,       \
      const uint8_t *upload, struct meta_upload *u))                                               \
    X(b, both, int, part_put, (struct strata_meta *m, const char *bucket, const char *key,         \
      const uint8_t *upload, const struct meta_part *p, struct strata_meta__data_refs *old))       \
    X(b, both, int, parts_read, (struct strata_meta *m, const char *bucket, const char *key,       \
      const uint8_t *upload, unsigned from, int (*cb)(void *ud, const struct meta_part *p),        \
      void *ud))                                                                                   \
    X(b, both, int, mpu_complete, (struct strata_meta *m, const struct strata_meta__mpu_txn *t,    \
      struct strata_meta__data_refs *unref))                                                       \
    X(b, both, int, mpu_abort, (struct strata_meta *m, const char *bucket, const char *key,        \
      const uint8_t *upload, struct strata_meta__data_refs *unref))                                \
    /* ptab_get (optional; NULL: the local drives' copies, mpu.c): the                             \
     * stored bytes of chunk c of the part table of completed version sk                           \
     * (malloc'ed), STRATA_ENOTFOUND, or a read error.  The caller checks                          \
     * them against the version record's CRC32C. */                                                \
    X(b, rados, int, ptab_get, (struct strata_meta *m, const char *bucket, const char *key,        \
      const uint8_t sk[16], unsigned c, char **v, size_t *vl))                                     \
                                                                                                   \
    /* ---- a transition's intent records (transition.c's protocol) ----                           \
     * One record per version being moved, in the version's shard or set:                          \
     * the bytes are transition.c's (its msgpack map).  intent_put: durable                        \
     * (a quorum locally) before the copy starts, or an error with nothing                         \
     * kept.  intent_get: 0 with a malloc'ed copy of the stored bytes (seen                        \
     * on any copy: a partial write counts, it must be resolved),                                  \
     * STRATA_ENOTFOUND, or a read error.  intent_resolve: the losing copies                       \
     * (n of them) go and the intent v/vl as read goes with them: locally                          \
     * each removed from its tier now, then the intent (best effort: a copy                        \
     * that keeps it is resolved again, harmlessly); on RADOS one op that                          \
     * queues them for reclaim and removes the intent, only while it still                         \
     * holds v (else another gateway resolved it: 0). */                                           \
    X(b, both, int, intent_put, (struct strata_meta *m, const char *bucket, const char *key,       \
      const uint8_t sk[16], const void *v, size_t vl))                                             \
    X(b, both, int, intent_get, (struct strata_meta *m, const char *bucket, const char *key,       \
      const uint8_t sk[16], char **v, size_t *vl))                                                 \
    X(b, both, int, intent_resolve, (struct strata_meta *m, const char *bucket, const char *key,   \
      const uint8_t sk[16], const void *v, size_t vl, const struct strata_meta__intent_loss *loss, \
      size_t n))                                                                                   \
                                                                                                   \
    /* ---- restored copies of versions on archive tiers (restore.c) ----                          \
     * Optional (NULL: no archive tier on this backend).  One record per                           \
     * version, beside it (its set locally, its index shard on RADOS); the                         \
     * bytes are restore.c's.  restore_get: 0 with a malloc'ed copy,                               \
     * STRATA_ENOTFOUND, or a read error.  restore_swap: replace the record                        \
     * old (NULL: none) with nw (NULL: remove it) at once, only while it is                        \
     * old (STRATA_EPRECOND otherwise) and, when nw is set, the version                            \
     * exists (STRATA_EPRECOND); with it the copy's data: see struct                               \
     * strata_meta__restore_swap.  A version's removal (key_txn) takes its                         \
     * record along: locally strata_meta__restore_drop after the drop, on                          \
     * RADOS in the commit's op (its copy's data queued for reclaim).                              \
     * restore_walk: cb for every record (the sweep); cb may swap it. */                           \
    X(b, both, int, restore_get, (struct strata_meta *m, const char *bucket, const char *key,      \
      const uint8_t sk[16], char **v, size_t *vl))                                                 \
    X(b, both, int, restore_swap, (struct strata_meta *m,                                          \
      const struct strata_meta__restore_swap *s))                                                  \
    X(b, both, int, restore_walk, (struct strata_meta *m, strata_meta__restore_walk_fn cb,         \
      void *ud))                                                                                   \
                                                                                                   \
    /* ---- local-only: heal, orphans, stats ----                                                  \
     * Optional: a backend whose cluster keeps its own redundancy (RADOS:                          \
     * Ceph scrubs and recovers) leaves them NULL, and the public entry                            \
     * points (upkeep.c) answer STRATA_ENOTIMPL, report an empty heal                              \
     * queue and zero store figures.  Contracts: the strata_meta_heal_*,                           \
     * strata_meta_orphan_round and strata_meta_store_stats_get ones in                            \
     * include/strata/meta.h.  orphan_round allocates *state on its first                          \
     * round with its own release. */                                                              \
    X(b, local, int, heal_all, (struct strata_meta *m, strata_heal_pace_cb pace_cb, void *ud,      \
      struct strata_heal_stats *out))                                                              \
    X(b, local, int, heal_queued, (struct strata_meta *m, size_t max,                              \
      struct strata_heal_stats *out, size_t *pending))                                             \
    X(b, local, void, heal_queue_stats, (struct strata_meta *m, size_t *pending,                   \
      uint64_t *dropped))                                                                          \
    X(b, both, int, orphan_round, (struct strata_meta *m, struct strata_orphans **state,           \
      unsigned age_s, uint64_t *removed))                                                          \
    X(b, local, int, store_stats, (struct strata_meta *m, unsigned set, unsigned drive,            \
      struct strata_meta_store_stats *out))                                                        \
    /* Optional: the cluster's view (strata_meta_cluster_stat). */                                 \
    X(b, rados, int, cluster_stat, (struct strata_meta *m, struct strata_meta_cluster_stat *out))  \
    X(b, local, uint64_t, block_cache_bytes, (struct strata_meta *m))                              \
    X(b, local, uint64_t, memtable_size, (const struct strata_meta *m))                            \
                                                                                                   \
    /* ---- data written before its commit (RADOS.md, "Data whose commit                           \
     * never happened") ----                                                                       \
     * Optional pending_add (NULL: the backend's orphan reclaim finds such                         \
     * data): before the first byte of a new version's or part's data id                           \
     * on tier (NULL / "": the hot tier) for bucket (incarnation inc) / key,                       \
     * record it as pending; the key_txn PUT or the part_put whose record                          \
     * names the data id clears it in its own op, and fails (STRATA_EIO)                           \
     * when the backend's reclaim took it meanwhile.  0, STRATA_ENOTFOUND                          \
     * (no such bucket incarnation), or a write error (the data must not                           \
     * be written).  reclaim_in_txn: key_txn queues the data an edit's                             \
     * reclaim names (a data id, or a multipart version's parts) in the                            \
     * commit itself, removed after a grace, so the caller's                                       \
     * strata_meta__drop of it does nothing; part_put, mpu_complete and                            \
     * mpu_abort queue theirs too and return no data refs. */                                      \
    X(b, rados, int, pending_add, (struct strata_meta *m, const char *bucket, uint64_t inc,        \
      const char *key, const char *tier, const uint8_t id[STRATA_DATA_ID_LEN]))

#define STRATA_META__STORE_MEMBER(b, who, ret, op, params) ret(*op) params;

struct strata_meta__store_ops {
    const char *name; /* "local" */
    /* Release the backend's own state (store_priv) at strata_meta_close,
     * after the clock's last mark and the audit log's close; NULL: none. */
    void (*close)(struct strata_meta *m);
    STRATA_META__STORE_OPS(STRATA_META__STORE_MEMBER, _)
    /* reclaim_in_txn: see pending_add. */
    bool reclaim_in_txn;
    /* due_exact: a due index entry is written and removed in the op of its
     * version, so the DUE scan never yields a stale hint and
     * strata_meta_due_drop has nothing to drop (RADOS: e/). */
    bool due_exact;
};

/* Backend b's prototypes (STRATA_META__STORE_OPS(STRATA_META__STORE_DECLARE,
 * b)) and table members (..._ENTRY) for the ops it implements. */
#define STRATA_META__STORE_IF_local_both(...)  __VA_ARGS__
#define STRATA_META__STORE_IF_local_local(...) __VA_ARGS__
#define STRATA_META__STORE_IF_local_rados(...)
#define STRATA_META__STORE_IF_rados_both(...)  __VA_ARGS__
#define STRATA_META__STORE_IF_rados_local(...)
#define STRATA_META__STORE_IF_rados_rados(...) __VA_ARGS__
#define STRATA_META__STORE_DECLARE(b, who, ret, op, params)                                        \
    STRATA_META__STORE_IF_##b##_##who(ret strata_meta__##b##_##op params;)
#define STRATA_META__STORE_ENTRY(b, who, ret, op, params)                                          \
    STRATA_META__STORE_IF_##b##_##who(.op = strata_meta__##b##_##op, )

/* The local backend: per-drive RocksDB and files on the sets' drives. */
extern const struct strata_meta__store_ops strata_meta__store_local;

#endif /* STRATA_META_STORE_H */
