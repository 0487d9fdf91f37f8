/*
 * qread.h - the local backend's quorum read of one key's versions
 * (meta/local/qread.c): every drive of the key's set read by its own
 * iterator, the read quorum's agreement or the newest version that may have
 * been committed.  key_txn and key_read (meta/local/key.c) and key_get
 * (meta/local/get.c) are built on it.  Private to meta/local/.
 */
#ifndef STRATA_META_LOCAL_QREAD_H
#define STRATA_META_LOCAL_QREAD_H

#include "meta_internal.h"

enum qmode { Q_LATEST, Q_SK, Q_NULL };

struct drec {
    bool tried;
    bool dead; /* Q_SK: this drive holds a tombstone for the version */
    int rc;    /* 0 found, STRATA_ENOTFOUND absent, else no vote */
    uint8_t sk[SORTKEY_LEN];
    /* The record as stored: the iterator's value, pinned by keeping the
     * iterator where it found it (no copy of inline shards), or NULL. */
    const char *raw;
    size_t rawlen;
    rocksdb_iterator_t *it;
    rocksdb_readoptions_t *ro;
    struct meta_rec rec; /* shard points into raw */
    bool has_latest;
    uint8_t latest_sk[SORTKEY_LEN];
};

struct qread {
    unsigned set;
    enum qmode mode;
    uint8_t sk[SORTKEY_LEN]; /* Q_SK target */
    struct drec d[STRATA_DRIVES_MAX];
    int win; /* a drive of the winning group; -1 when the answer is "absent" */
    /* The caller does not hold the key lock: a commit may be half applied
     * under the read, which then waits it out rather than answer from it. */
    bool settle;
    /* Only what RocksDB holds in memory (memtables, block cache) is read:
     * a read that would reach a drive's files, wait out a commit or take
     * the slow path stops with STRATA_EBUSY instead (an event thread's
     * read, done again on a thread that may wait). */
    bool nowait;
    /* The slow path's answer leans on tombstones no commit can have
     * written or on a version below Wq: read again, like "absent", while
     * commits move under the read. */
    bool unsure;
};

void strata_meta__drec_release(struct drec *dr);
void strata_meta__qread_fini(struct qread *q);
/*
 * Read drive d's record for q's mode: the newest live version (Q_LATEST),
 * the newest live null version (Q_NULL) or version q->sk (Q_SK; a
 * tombstone there sets dead).  after (may be NULL): only versions older
 * than that sort key.  Replaces what q->d[d] held.
 */
void strata_meta__read_drive(struct strata_meta *m, struct qread *q, unsigned d, const char *bucket,
                             const char *key, const uint8_t *after);
/*
 * Tombstones of a version that no commit can have written: a committed
 * delete or overwrite reached Wq drives, so the drives holding the version
 * live alone (live) cannot make a write quorum; and a write the tombstones
 * (with every silent drive counted as one) did not reach a read quorum
 * with has never been shown by a read (an overwrite's batch puts the new
 * version on the drives it tombstones), so undoing it changes nothing a
 * client saw.  Heal gives the tombstoned drives the version back; a read
 * answers it.
 */
bool strata_meta__tomb_uncommitted(const struct strata_set *set, unsigned silent, unsigned live,
                                   unsigned tombs);
/* Two drives hold the same version (sort key, flags, size, etag, data id). */
bool strata_meta__drec_same(const struct drec *a, const struct drec *b);
/*
 * Read drives until the read quorum agree on a version (or on its absence);
 * without agreement, the newest version that may have been committed wins.
 * read_all reads every readable drive first (for undo).  With q->settle,
 * an "absent" read while a commit of the key's stripe moved is read again.
 * 0 with q->win set, STRATA_ENOTFOUND, or STRATA_EQUORUM; with q->nowait
 * also STRATA_EBUSY.
 */
int strata_meta__qread_run(struct strata_meta *m, struct qread *q, const char *bucket,
                           const char *key, bool read_all);
/* Set up q for a version id (NULL/"" latest, "null", or a 32-hex id);
 * STRATA_ENOTFOUND for a malformed id. */
int strata_meta__qread_for_vid(struct qread *q, const char *version_id);

#endif /* STRATA_META_LOCAL_QREAD_H */
