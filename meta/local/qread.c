/*
 * qread.c - the local backend's quorum read of one key's versions.
 *
 * When the first read quorum of drives agree on a version (same sort key,
 * flags, size, etag, data id) or on there being none, that is the answer:
 * any read quorum overlaps every write quorum, so a newer committed version
 * would be on one of them.  Otherwise the newest version that may have been
 * committed wins: one without a tombstone a commit can have written
 * (strata_meta__tomb_uncommitted) and on at least Wq - (N - responding
 * drives) of them (counting the drives that tombstoned it), or on a read
 * quorum with its absence on fewer than Wq (heal rolls it forward); a
 * drive that missed a write can delay but never hide it.  A fresh,
 * unhealed drive does not vote.
 *
 * A read without the key lock (GET, HEAD, key_read) can meet a commit half
 * applied: an overwrite puts the new version and the old one's tombstone
 * in one batch per drive, and the drives apply their batches one by one,
 * so some drives hold the new version (below a write quorum) and a
 * tombstone of the old one while others hold only the old; and a read
 * that crosses several quick commits sees each drive at another moment.
 * Neither version then passes the slow path's test and the answer would
 * be "absent" for a key that exists throughout.  Such a read is done
 * again once the key stripe's commit sequence (key.c) shows no commit in
 * flight and none since the read began: the answer then comes from the
 * drives' settled state (a genuine leftover of a failed write, or the
 * key's absence).
 * Threads: any caller thread; a qread is used by one thread.
 */
#include "qread.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OKEY_MAX (1 + STRATA_BUCKET_NAME_MAX + 1 + STRATA_KEY_MAX + 1 + SORTKEY_LEN)

void strata_meta__drec_release(struct drec *dr)
{
    if (dr->it) {
        rocksdb_iter_destroy(dr->it);
        rocksdb_readoptions_destroy(dr->ro);
    }
    dr->it = NULL;
    dr->ro = NULL;
    dr->raw = NULL;
}

void strata_meta__qread_fini(struct qread *q)
{
    for (unsigned i = 0; i < STRATA_DRIVES_MAX; i++) {
        strata_meta__rec_fini(&q->d[i].rec);
        strata_meta__drec_release(&q->d[i]);
    }
}

/* The iterator stopped on an error (with q->nowait: a block that is not
 * in memory), not at the end of the key's versions. */
static bool iter_failed(rocksdb_iterator_t *it)
{
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    if (!err)
        return false;
    rocksdb_free(err);
    return true;
}

/* strata_meta__iter_new over what drive d's store holds in memory only
 * (kBlockCacheTier: a block not in the block cache stops it with an
 * error instead of a file read). */
static rocksdb_iterator_t *iter_in_memory(struct strata_meta *m, unsigned set, unsigned d,
                                          rocksdb_readoptions_t **ro, const char *upper,
                                          size_t upper_len)
{
    struct meta_drive *dr = &m->sets[set].drives[d];
    if (!dr->db)
        return NULL;
    *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_iterate_upper_bound(*ro, upper, upper_len);
    rocksdb_readoptions_set_read_tier(*ro, 1);
    return rocksdb_create_iterator(dr->db, *ro);
}

/*
 * Read drive d's record for q's mode: the newest live version (Q_LATEST),
 * the newest live null version (Q_NULL) or version q->sk (Q_SK; a
 * tombstone there sets dead).  after (may be NULL): only versions older
 * than that sort key.  Replaces what q->d[d] held.
 */
void strata_meta__read_drive(struct strata_meta *m, struct qread *q, unsigned d, const char *bucket,
                             const char *key, const uint8_t *after)
{
    struct drec *dr = &q->d[d];
    strata_meta__rec_fini(&dr->rec);
    strata_meta__drec_release(dr);
    memset(dr, 0, sizeof(*dr));
    dr->tried = true;
    dr->rc = STRATA_EIO;
    char pfx[OKEY_MAX], hi[OKEY_MAX];
    size_t pl = strata_meta__key_obj(pfx, sizeof(pfx), bucket, key, NULL);
    memcpy(hi, pfx, pl);
    hi[pl - 1] = 1; /* every version of this key sorts below "key\x01" */
    rocksdb_readoptions_t *ro;
    rocksdb_iterator_t *it = q->nowait ? iter_in_memory(m, q->set, d, &ro, hi, pl)
                                       : strata_meta__iter_new(m, q->set, d, &ro, hi, pl, true);
    if (!it)
        return;
    rocksdb_iter_seek(it, pfx, pl);
    for (; rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(it, &kl);
        if (strata_meta__is_tomb(rocksdb_iter_value(it, &vl), vl))
            continue; /* deleted: the latest is the newest live version */
        if (kl == pl + SORTKEY_LEN) {
            dr->has_latest = true;
            memcpy(dr->latest_sk, k + pl, SORTKEY_LEN);
        }
        break;
    }
    dr->rc = STRATA_ENOTFOUND;
    if (q->nowait && iter_failed(it))
        goto out; /* the latest is not known */
    if (q->mode == Q_SK && after)
        goto out; /* nothing older is version q->sk */
    if (q->mode == Q_SK || after) {
        memcpy(pfx + pl, after ? after : q->sk, SORTKEY_LEN);
        rocksdb_iter_seek(it, pfx, pl + SORTKEY_LEN);
        if (after && rocksdb_iter_valid(it)) {
            size_t kl;
            const char *k = rocksdb_iter_key(it, &kl);
            if (kl == pl + SORTKEY_LEN && memcmp(k, pfx, kl) == 0)
                rocksdb_iter_next(it);
        }
    }
    for (; rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(it, &kl);
        if (kl != pl + SORTKEY_LEN)
            continue; /* not a version key of ours: cannot happen with NUL-free keys */
        if (q->mode == Q_SK && memcmp(k + pl, q->sk, SORTKEY_LEN) != 0)
            break;
        const char *v = rocksdb_iter_value(it, &vl);
        if (strata_meta__is_tomb(v, vl)) {
            if (q->mode != Q_SK)
                continue;
            dr->dead = true;
            break;
        }
        /* Decoded once, in place (without headers nothing is allocated). */
        int rc = strata_meta__rec_decode(v, vl, false, &dr->rec);
        if (rc) {
            memset(&dr->rec, 0, sizeof(dr->rec));
            strata_log(&m->log, STRATA_LOG_WARN, "meta", "drive %s: corrupt record for %s/%s",
                       strata_set_drive_path(m->sets[q->set].set, d), bucket, key);
            if (q->mode == Q_NULL)
                continue;
            dr->rc = STRATA_ECORRUPT;
            break;
        }
        if (q->mode == Q_NULL && !(dr->rec.flags & REC_F_NULL)) {
            memset(&dr->rec, 0, sizeof(dr->rec));
            continue;
        }
        dr->raw = v;
        dr->rawlen = vl;
        memcpy(dr->sk, k + pl, SORTKEY_LEN);
        dr->rc = 0;
        /* The iterator stays on the record: it keeps raw (and the inline
         * shard rec points into) valid until drec_release. */
        dr->it = it;
        dr->ro = ro;
        return;
    }
out:
    if (q->nowait && iter_failed(it))
        dr->rc = STRATA_EBUSY; /* a block not in memory: not an answer */
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
}

bool strata_meta__tomb_uncommitted(const struct strata_set *set, unsigned silent, unsigned live,
                                   unsigned tombs)
{
    return live >= strata_set_write_quorum(set) || tombs + silent < strata_set_read_quorum(set);
}

bool strata_meta__drec_same(const struct drec *a, const struct drec *b)
{
    return a->rc == 0 && b->rc == 0 && memcmp(a->sk, b->sk, SORTKEY_LEN) == 0 &&
           strata_meta__rec_same(&a->rec, &b->rec);
}

/*
 * No read quorum agreed (some drive missed a write or a delete, or holds
 * the leftover of a write that failed): walk the drives' candidates newest
 * first.  A candidate with a tombstone on any drive is dead; one live on
 * fewer than Wq - (N - responding) drives cannot have been committed.  The
 * first candidate that is neither wins, and q->d[] then holds every drive's
 * copy of it (for inline shards and undo).  Each drive's state for every
 * candidate is read, so a drive that never saw a write cannot outvote the
 * drives that did.
 */
static int qread_slow(struct strata_meta *m, struct qread *q, const char *bucket, const char *key)
{
    struct meta_set *ms = &m->sets[q->set];
    unsigned n = ms->n, resp = 0;
    for (unsigned d = 0; d < n; d++)
        resp += q->d[d].tried && (q->d[d].rc == 0 || q->d[d].rc == STRATA_ENOTFOUND);
    if (resp < strata_set_read_quorum(ms->set))
        return STRATA_EQUORUM;
    unsigned wq = strata_set_write_quorum(ms->set);
    unsigned need = wq > n - resp ? wq - (n - resp) : 1;
    struct qread *at = calloc(1, sizeof(*at));
    if (!at)
        return STRATA_ENOMEM;
    at->set = q->set;
    at->mode = Q_SK;
    for (;;) {
        int c = -1;
        for (unsigned d = 0; d < n; d++)
            if (q->d[d].tried && q->d[d].rc == 0 &&
                (c < 0 || memcmp(q->d[d].sk, q->d[c].sk, SORTKEY_LEN) < 0))
                c = (int)d;
        if (c < 0) {
            free(at);
            return STRATA_ENOTFOUND;
        }
        memcpy(at->sk, q->d[c].sk, SORTKEY_LEN);
        unsigned live = 0, tombs = 0;
        for (unsigned d = 0; d < n; d++) {
            if (!q->d[d].tried)
                continue;
            strata_meta__read_drive(m, at, d, bucket, key, NULL);
            tombs += at->d[d].dead;
            live += at->d[d].rc == 0;
        }
        /* Tombstones no commit can have written do not delete, as heal
         * judges them (strata_meta__tomb_uncommitted), and the version
         * they cover was written on those drives too.  A version on a
         * read quorum whose absence has no write quorum is one heal rolls
         * forward (and a fast path may have shown). */
        bool dead = tombs > 0 && !strata_meta__tomb_uncommitted(ms->set, n - resp, live, tombs);
        bool forward = live >= strata_set_read_quorum(ms->set) && resp - live < wq;
        if (!dead && (live + tombs >= need || forward)) {
            /* The copy most drives agree on (they differ only after a
             * missed tag rewrite). */
            int best = -1;
            unsigned best_n = 0;
            for (unsigned d = 0; d < n; d++) {
                unsigned same = 0;
                for (unsigned j = 0; j < n; j++)
                    same += at->d[j].tried && strata_meta__drec_same(&at->d[j], &at->d[d]);
                if (same > best_n) {
                    best_n = same;
                    best = (int)d;
                }
            }
            q->unsure = tombs > 0 || live < need;
            strata_meta__qread_fini(q);
            memcpy(q->d, at->d, sizeof(q->d));
            q->win = best;
            free(at);
            return 0;
        }
        strata_meta__qread_fini(at);
        memset(at->d, 0, sizeof(at->d));
        for (unsigned d = 0; d < n; d++)
            if (q->d[d].tried && q->d[d].rc == 0 && memcmp(q->d[d].sk, at->sk, SORTKEY_LEN) == 0)
                strata_meta__read_drive(m, q, d, bucket, key, at->sk);
    }
}

/*
 * Read drives until the read quorum agree on a version (or on its absence);
 * without agreement, qread_slow decides (*slow set).  read_all reads every
 * readable drive first (put and delete want every drive's copy to roll
 * back).  0 with q->win set, STRATA_ENOTFOUND, or STRATA_EQUORUM.
 */
static int qread_pass(struct strata_meta *m, struct qread *q, const char *bucket, const char *key,
                      bool read_all, bool *slow)
{
    struct meta_set *ms = &m->sets[q->set];
    unsigned rq = strata_set_read_quorum(ms->set);
    q->win = -1;
    q->unsure = false;
    int result = STRATA_EQUORUM;
    bool decided = false;
    for (unsigned d = 0; d < ms->n; d++) {
        if (!strata_meta__drive_readable(m, q->set, d))
            continue;
        strata_meta__read_drive(m, q, d, bucket, key, NULL);
        if (q->d[d].rc == STRATA_EBUSY)
            return STRATA_EBUSY; /* q->nowait: the rest on a thread that may wait */
        if (decided)
            continue;
        unsigned same = 0;
        for (unsigned j = 0; j <= d; j++) {
            if (!q->d[j].tried)
                continue;
            if (q->d[d].rc == STRATA_ENOTFOUND)
                same += q->d[j].rc == STRATA_ENOTFOUND;
            else
                same += strata_meta__drec_same(&q->d[j], &q->d[d]);
        }
        if ((q->d[d].rc == 0 || q->d[d].rc == STRATA_ENOTFOUND) && same >= rq) {
            decided = true;
            result = q->d[d].rc;
            q->win = q->d[d].rc == 0 ? (int)d : -1;
            if (!read_all)
                break;
        }
    }
    *slow = !decided;
    if (!decided && q->nowait)
        return STRATA_EBUSY; /* the slow path reads every drive, maybe again */
    if (!decided) {
        /* The remaining readable drives were read above: decide by state. */
        result = qread_slow(m, q, bucket, key);
    }
    return result;
}

/* Reads again while commits keep moving, at most this long in all (a
 * commit stuck on a drive must not hang its readers for good). */
#define SETTLE_MAX_NS (2 * 1000000000LL)

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int strata_meta__qread_run(struct strata_meta *m, struct qread *q, const char *bucket,
                           const char *key, bool read_all)
{
    _Atomic uint64_t *wseq = q->settle ? strata_meta__key_wseq(m, bucket, key) : NULL;
    int64_t start = 0;
    long nap_ns = 20000;
    for (;;) {
        uint64_t s0 = wseq ? atomic_load(wseq) : 0;
        bool slow = false;
        int rc = qread_pass(m, q, bucket, key, read_all, &slow);
        if (!wseq || !slow || (rc != STRATA_ENOTFOUND && !(rc == 0 && q->unsure)))
            return rc;
        uint64_t s1 = atomic_load(wseq);
        if (s0 == s1 && !(s1 & 1))
            return rc; /* nothing moved under the read: the drives' settled answer */
        if (q->nowait)
            return STRATA_EBUSY; /* waiting out a commit is for a thread that may wait */
        if (!start)
            start = mono_ns();
        else if (mono_ns() - start > SETTLE_MAX_NS)
            return rc;
        strata_meta__qread_fini(q);
        memset(q->d, 0, sizeof(q->d));
        if (s1 & 1) {
            /* A commit is in flight: give its drives time to apply it. */
            struct timespec ts = {0, nap_ns};
            nanosleep(&ts, NULL);
            if (nap_ns < 1000000)
                nap_ns *= 2;
        }
    }
}

/* Set up q for a version id (NULL/"" latest, "null", or a 32-hex id). */
int strata_meta__qread_for_vid(struct qread *q, const char *version_id)
{
    if (!version_id || !*version_id)
        q->mode = Q_LATEST;
    else if (strcmp(version_id, "null") == 0)
        q->mode = Q_NULL;
    else {
        q->mode = Q_SK;
        if (strata_meta__vid_parse(version_id, q->sk))
            return STRATA_ENOTFOUND; /* no version can have a malformed id */
    }
    return 0;
}
