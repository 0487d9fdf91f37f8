/*
 * bucket.c - the local backend's bucket records and configuration
 * documents (the seam's bucket_txn, bucket_get/list, config_put/get).
 *
 * Bucket records ('B') and configuration documents ('C') are replicated to
 * every drive of every set; a change succeeds when every set commits it on
 * its write quorum, and is rolled back everywhere otherwise.  Reads take the
 * value that the read quorum of set 0's drives agree on byte for byte.
 * Bucket changes are serialised by bucket_mu (they are rare).
 * Bucket records follow the newest-state rule: DeleteBucket writes a
 * tombstone, every state is stamped (field 11, tombstone time) after the
 * newest any drive holds, and without a read quorum of identical copies
 * the newest state that is a tombstone, or a record that may have been
 * committed, wins (strata_meta__bucket_newest; heal.c uses it too).
 *
 * Deletion against commits: every commit that creates a version or an
 * upload (put, multipart create and complete, delete marker) holds its
 * bucket's bucket_rw stripe shared from before its key lock until after
 * the commit, and checks under it that the bucket still exists with the
 * incarnation it began with (strata_meta__bucket_hold).  A bucket_txn that
 * asks whether the bucket is empty holds the stripe exclusively from that
 * check to the removal of the record, so no commit lands in a bucket that
 * is being or has been deleted, nor in a namesake created since.
 * Lock order: bucket_mu -> bucket_rw -> key stripe lock.
 * Threads: any caller thread.
 */
#include "local.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEYBUF (STRATA_BUCKET_NAME_MAX + 256)

/* The state time of a bucket key's value: a live record's (field 11, or
 * its creation time), a tombstone's deletion time; -1: undecodable. */
static int64_t bucket_state_ns(const char *v, size_t vl)
{
    if (strata_meta__is_tomb(v, vl))
        return vl >= TOMB_LEN ? strata_meta__tomb_time(v, vl) : -1;
    struct strata_bucket_info b;
    int64_t st;
    return strata_meta__bucket_decode_at(v, vl, &b, &st) == 0 ? st : -1;
}

int strata_meta__bucket_newest(struct strata_meta *m, unsigned set, char *const *v,
                               const size_t *vl, const int *rc, const bool *voter,
                               unsigned *holders)
{
    struct meta_set *ms = &m->sets[set];
    unsigned n = ms->n, voters = 0, wq = strata_set_write_quorum(ms->set);
    int64_t t[STRATA_DRIVES_MAX];
    bool done[STRATA_DRIVES_MAX];
    for (unsigned d = 0; d < n; d++) {
        voters += voter[d];
        t[d] = rc[d] == 0 ? bucket_state_ns(v[d], vl[d]) : -1;
        done[d] = t[d] < 0;
    }
    unsigned need = wq > n - voters ? wq - (n - voters) : 1;
    *holders = 0;
    for (;;) {
        int c = -1;
        for (unsigned d = 0; d < n; d++)
            if (!done[d] && (c < 0 || t[d] > t[c]))
                c = (int)d;
        if (c < 0)
            return -1;
        unsigned same = 0;
        for (unsigned d = 0; d < n; d++) {
            if (done[d] || vl[d] != vl[c] || memcmp(v[d], v[c], vl[c]) != 0)
                continue;
            same += voter[d];
            done[d] = true;
        }
        if (strata_meta__is_tomb(v[c], vl[c]) || same >= need) {
            *holders = same;
            return c;
        }
    }
}

/*
 * Read the value of a replicated key from set 0: the first value held
 * identically by the read quorum, or STRATA_ENOTFOUND when that many
 * drives agree it is absent.  For a bucket record (bucket) a tombstone so
 * agreed on is STRATA_ENOTFOUND too, and without agreement every readable
 * drive's copy counts, the newest state winning (strata_meta__bucket_newest):
 * a drive that missed a DeleteBucket (or a re-creation) is outvoted.
 * STRATA_EQUORUM when nothing can be decided.
 */
static int quorum_get(struct strata_meta *m, const char *k, size_t klen, bool bucket, char **val,
                      size_t *vlen)
{
    struct meta_set *ms = &m->sets[0];
    unsigned rq = strata_set_read_quorum(ms->set);
    char *vals[STRATA_DRIVES_MAX] = {0};
    size_t lens[STRATA_DRIVES_MAX] = {0};
    int rcs[STRATA_DRIVES_MAX];
    bool voter[STRATA_DRIVES_MAX] = {0};
    unsigned absent = 0;
    int rc = STRATA_EQUORUM, win = -1;
    bool decided = false;
    for (unsigned d = 0; d < ms->n && !decided; d++) {
        rcs[d] = STRATA_EIO;
        if (!strata_meta__drive_readable(m, 0, d))
            continue;
        rcs[d] = strata_meta__drive_get(m, 0, d, k, klen, &vals[d], &lens[d]);
        voter[d] = rcs[d] == 0 || rcs[d] == STRATA_ENOTFOUND;
        if (rcs[d] == STRATA_ENOTFOUND) {
            if (++absent >= rq) {
                rc = STRATA_ENOTFOUND;
                decided = true;
            }
            continue;
        }
        if (rcs[d] != 0)
            continue;
        unsigned same = 0;
        for (unsigned j = 0; j <= d; j++)
            same += rcs[j] == 0 && lens[j] == lens[d] && memcmp(vals[j], vals[d], lens[d]) == 0;
        if (same >= rq) {
            win = (int)d;
            decided = true;
        }
    }
    unsigned voters = 0;
    for (unsigned d = 0; d < ms->n; d++)
        voters += voter[d];
    if (!decided && bucket && voters >= rq) { /* fewer: EQUORUM, as for objects */
        unsigned holders;
        win = strata_meta__bucket_newest(m, 0, vals, lens, rcs, voter, &holders);
    }
    if (win >= 0) {
        if (bucket && strata_meta__is_tomb(vals[win], lens[win])) {
            rc = STRATA_ENOTFOUND;
        } else {
            *val = vals[win];
            *vlen = lens[win];
            vals[win] = NULL;
            rc = 0;
        }
    }
    for (unsigned d = 0; d < ms->n; d++)
        free(vals[d]);
    return rc;
}

/* The newest state time of bucket key k on any readable drive of any set
 * (0: none): a new state (create, change, delete) is stamped after it, so
 * that it wins even when the wall clock went back meanwhile. */
static int64_t bucket_newest_ns(struct strata_meta *m, const char *k, size_t kl)
{
    int64_t newest = 0;
    for (unsigned s = 0; s < m->nsets; s++) {
        for (unsigned d = 0; d < m->sets[s].n; d++) {
            char *v = NULL;
            size_t vl = 0;
            if (!strata_meta__drive_readable(m, s, d) ||
                strata_meta__drive_get(m, s, d, k, kl, &v, &vl) != 0)
                continue;
            int64_t t = bucket_state_ns(v, vl);
            if (t > newest)
                newest = t;
            free(v);
        }
    }
    return newest;
}

static int64_t bucket_stamp(struct strata_meta *m, const char *k, size_t kl)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, newest = bucket_newest_ns(m, k, kl);
    return now > newest ? now : newest + 1;
}

/*
 * Put (v != NULL) or delete key k on every drive of every set.  undo_v is
 * the previous value to restore on failure (NULL: delete on failure).
 */
static int replicated_write(struct strata_meta *m, const char *k, size_t klen, const char *v,
                            size_t vlen, const char *undo_v, size_t undo_len)
{
    int rc = 0;
    unsigned done;
    for (done = 0; done < m->nsets; done++) {
        unsigned n = m->sets[done].n;
        rocksdb_writebatch_t *wbs[STRATA_DRIVES_MAX] = {0}, *undo[STRATA_DRIVES_MAX] = {0};
        for (unsigned d = 0; d < n; d++) {
            wbs[d] = rocksdb_writebatch_create();
            undo[d] = rocksdb_writebatch_create();
            strata_meta__wb_write(wbs[d], k, klen, v != NULL, v, vlen);
            strata_meta__wb_write(undo[d], k, klen, undo_v != NULL, undo_v, undo_len);
        }
        rc = strata_meta__set_commit(m, done, wbs, undo);
        for (unsigned d = 0; d < n; d++) {
            rocksdb_writebatch_destroy(wbs[d]);
            rocksdb_writebatch_destroy(undo[d]);
        }
        if (rc)
            break;
    }
    if (rc) {
        /* Sets that already committed go back to the old value. */
        for (unsigned s = 0; s < done; s++) {
            unsigned n = m->sets[s].n;
            rocksdb_writebatch_t *undo[STRATA_DRIVES_MAX] = {0};
            bool ok[STRATA_DRIVES_MAX];
            for (unsigned d = 0; d < n; d++) {
                undo[d] = rocksdb_writebatch_create();
                strata_meta__wb_write(undo[d], k, klen, undo_v != NULL, undo_v, undo_len);
            }
            strata_meta__set_apply(m, s, undo, ok);
            for (unsigned d = 0; d < n; d++)
                rocksdb_writebatch_destroy(undo[d]);
        }
    }
    return rc;
}

/* True when any record remains under prefix p in any set. */
static int prefix_used(struct strata_meta *m, const char *p, size_t pl, bool *used)
{
    char hi[KEYBUF];
    memcpy(hi, p, pl);
    hi[pl - 1]++; /* p ends with 0x00: the range is [p, p with 0x01) */
    *used = false;
    for (unsigned s = 0; s < m->nsets && !*used; s++) {
        struct meta_merge mg;
        int rc = strata_meta__merge_open(&mg, m, &s, 1, 0, hi, pl);
        if (rc)
            return rc;
        strata_meta__merge_seek(&mg, p, pl);
        const char *k, *v;
        size_t kl, vl;
        /* Tombstones of deleted versions do not keep a bucket in use. */
        while ((*used = strata_meta__merge_cur(&mg, &k, &kl, &v, &vl)) &&
               strata_meta__is_tomb(v, vl))
            strata_meta__merge_next(&mg);
        strata_meta__merge_close(&mg);
    }
    return 0;
}

static pthread_rwlock_t *bucket_stripe(struct strata_meta *m, const char *bucket)
{
    return &m->bucket_rw[strata_crc32c(0, bucket, strlen(bucket)) % META_BUCKET_STRIPES];
}

int strata_meta__bucket_hold(struct strata_meta *m, const char *bucket, uint64_t incarnation,
                             pthread_rwlock_t **held)
{
    pthread_rwlock_t *l = bucket_stripe(m, bucket);
    pthread_rwlock_rdlock(l);
    struct strata_bucket_info b;
    int rc = strata_meta__local_bucket_get(m, bucket, &b);
    if (rc == 0 && b.incarnation != incarnation)
        rc = STRATA_ENOTFOUND; /* deleted and created again since */
    if (rc) {
        pthread_rwlock_unlock(l);
        l = NULL;
    }
    *held = l;
    return rc;
}

void strata_meta__bucket_release(pthread_rwlock_t *held)
{
    if (held)
        pthread_rwlock_unlock(held);
}

/* Is anything left under 'kind' bucket 0x00 in any set? */
static int bucket_used(struct strata_meta *m, const char *name, char kind, bool *used)
{
    char p[KEYBUF];
    size_t bl = strlen(name);
    p[0] = kind;
    memcpy(p + 1, name, bl);
    p[bl + 1] = 0;
    return prefix_used(m, p, bl + 2, used);
}

/* Delete every key 'kind' name 0x00 ... on every drive of every set. */
static void sweep(struct strata_meta *m, char kind, const char *name)
{
    char p[KEYBUF], hi[KEYBUF];
    size_t bl = strlen(name);
    p[0] = kind;
    memcpy(p + 1, name, bl);
    p[bl + 1] = 0;
    memcpy(hi, p, bl + 2);
    hi[bl + 1] = 1;
    /* Keys one by one, not a range delete: the writer threads merge
     * batches with rocksdb_writebatch_iterate, which carries only puts and
     * point deletes. */
    for (unsigned s = 0; s < m->nsets; s++) {
        unsigned n = m->sets[s].n;
        rocksdb_writebatch_t *wbs[STRATA_DRIVES_MAX] = {0};
        bool ok[STRATA_DRIVES_MAX];
        for (unsigned d = 0; d < n; d++)
            wbs[d] = rocksdb_writebatch_create();
        struct meta_merge mg;
        if (strata_meta__merge_open(&mg, m, &s, 1, MERGE_MAINTENANCE, hi, bl + 2) == 0) {
            strata_meta__merge_seek(&mg, p, bl + 2);
            const char *ck;
            size_t ckl;
            while (strata_meta__merge_cur(&mg, &ck, &ckl, NULL, NULL)) {
                for (unsigned d = 0; d < n; d++)
                    rocksdb_writebatch_delete(wbs[d], ck, ckl);
                strata_meta__merge_next(&mg);
            }
            strata_meta__merge_close(&mg);
        }
        strata_meta__set_apply(m, s, wbs, ok);
        for (unsigned d = 0; d < n; d++)
            rocksdb_writebatch_destroy(wbs[d]);
    }
}

int strata_meta__local_bucket_get(struct strata_meta *m, const char *name,
                                  struct strata_bucket_info *out)
{
    char k[KEYBUF];
    size_t kl = strata_meta__key_bucket(k, sizeof(k), name);
    char *v;
    size_t vl;
    int rc = quorum_get(m, k, kl, true, &v, &vl);
    return rc ? rc : strata_meta__bucket_decode_take(v, vl, out);
}

int strata_meta__local_bucket_txn(struct strata_meta *m, const struct strata_meta__bucket_txn *t)
{
    char k[KEYBUF];
    size_t kl = strata_meta__key_bucket(k, sizeof(k), t->name);
    pthread_mutex_lock(&m->bucket_mu);
    pthread_rwlock_t *stripe = NULL;
    if (t->want_empty) {
        stripe = bucket_stripe(m, t->name);
        pthread_rwlock_wrlock(stripe);
    }
    struct strata_meta__bucket_view view = {0};
    char *old = NULL, *v = NULL;
    size_t ol = 0, vl = 0;
    int rc = quorum_get(m, k, kl, true, &old, &ol);
    if (rc == 0) {
        view.exists = true;
        view.info_rc = strata_meta__bucket_decode(old, ol, &view.info);
    } else if (rc == STRATA_ENOTFOUND) {
        rc = 0;
    }
    if (rc == 0 && t->want_empty && view.exists) {
        bool used = false;
        rc = bucket_used(m, t->name, 'O', &used);
        view.empty = !used;
    }
    enum strata_meta__bucket_edit edit = STRATA_META__BUCKET_PUT;
    struct strata_bucket_info next;
    if (rc == 0)
        rc = t->decide(t->ud, &view, &edit, &next);
    if (rc == 0 && edit == STRATA_META__BUCKET_REMOVE && !view.exists)
        rc = STRATA_ENOTFOUND;
    if (rc == 0 && edit == STRATA_META__BUCKET_REMOVE && t->before_remove)
        rc = t->before_remove(m, t->name, t->ud);
    if (rc == 0) {
        /* Stamped after every state a drive holds, so that it wins even
         * when the wall clock went back.  A new record is undone as a
         * deletion, a tombstone, so that a record a drive kept past an
         * earlier delete does not win instead. */
        int64_t stamp = bucket_stamp(m, k, kl);
        char tomb[TOMB_LEN];
        strata_meta__tomb_encode(stamp, tomb);
        if (edit == STRATA_META__BUCKET_PUT)
            rc = strata_meta__bucket_encode_at(&next, stamp, &v, &vl);
        if (rc == 0 && edit == STRATA_META__BUCKET_PUT)
            rc = replicated_write(m, k, kl, v, vl, view.exists ? old : tomb,
                                  view.exists ? ol : TOMB_LEN);
        /* A removal writes a tombstone, not a plain delete: a drive that
         * misses it keeps the record, which the newer tombstone outvotes.
         * Dropped at once by a set whose every drive took it (store.c),
         * else by heal once every drive of the set holds one. */
        else if (rc == 0)
            rc = replicated_write(m, k, kl, tomb, TOMB_LEN, old, ol);
    }
    if (rc == 0 && edit == STRATA_META__BUCKET_REMOVE) {
        /* Configuration documents go with the bucket; a leftover one would
         * reappear under a new bucket of the same name, so sweep them on
         * every drive, and any upload record a drive kept past its abort
         * (a failure here only leaves garbage for heal). */
        sweep(m, 'C', t->name);
        sweep(m, 'U', t->name);
        sweep(m, 'D', t->name); /* index entries a drive kept past a delete */
    }
    if (stripe)
        pthread_rwlock_unlock(stripe);
    pthread_mutex_unlock(&m->bucket_mu);
    free(old);
    free(v);
    return rc;
}

int strata_meta__local_bucket_list(struct strata_meta *m,
                                   int (*cb)(const struct strata_bucket_info *b, void *ud),
                                   void *ud)
{
    unsigned s0 = 0;
    struct meta_merge mg;
    int rc = strata_meta__merge_open(&mg, m, &s0, 1, 0, "C", 1);
    if (rc)
        return rc;
    strata_meta__merge_seek(&mg, "B", 1);
    const char *k;
    size_t kl;
    char name[STRATA_BUCKET_NAME_MAX + 1];
    while (rc == 0 && strata_meta__merge_cur(&mg, &k, &kl, NULL, NULL)) {
        if (kl < 2 || kl - 1 > STRATA_BUCKET_NAME_MAX) {
            strata_meta__merge_next(&mg);
            continue;
        }
        memcpy(name, k + 1, kl - 1);
        name[kl - 1] = 0;
        strata_meta__merge_next(&mg);
        struct strata_bucket_info b;
        /* Each name is confirmed by quorum: a drive may hold a stale one. */
        int grc = strata_meta__local_bucket_get(m, name, &b);
        if (grc == STRATA_ENOTFOUND)
            continue;
        if (grc) {
            rc = grc;
            break;
        }
        rc = cb(&b, ud);
    }
    strata_meta__merge_close(&mg);
    return rc;
}

int strata_meta__local_config_put(struct strata_meta *m, const char *bucket, uint64_t inc,
                                  const char *kind, const void *doc, size_t len)
{
    char k[KEYBUF];
    size_t kl = strata_meta__key_config(k, sizeof(k), bucket, kind);
    pthread_mutex_lock(&m->bucket_mu);
    /* Under bucket_mu the bucket cannot go (or come back) meanwhile. */
    struct strata_bucket_info b;
    int rc = strata_meta__local_bucket_get(m, bucket, &b);
    if (rc == 0 && b.incarnation != inc)
        rc = STRATA_ENOTFOUND; /* deleted and created again since */
    char *old = NULL, *v = NULL;
    size_t ol = 0;
    if (rc == 0) {
        int g = quorum_get(m, k, kl, false, &old, &ol);
        if (g && g != STRATA_ENOTFOUND)
            rc = g;
    }
    if (rc == 0 && len) {
        v = malloc(len + 1);
        if (!v) {
            rc = STRATA_ENOMEM;
        } else {
            v[0] = VAL_VERSION_BYTE;
            memcpy(v + 1, doc, len);
        }
    }
    if (rc == 0)
        rc = replicated_write(m, k, kl, len ? v : NULL, len + 1, old, ol);
    pthread_mutex_unlock(&m->bucket_mu);
    free(old);
    free(v);
    return rc;
}

int strata_meta__local_config_get(struct strata_meta *m, const char *bucket, const char *kind,
                                  void **doc, size_t *len)
{
    char k[KEYBUF];
    size_t kl = strata_meta__key_config(k, sizeof(k), bucket, kind);
    char *v;
    size_t vl;
    int rc = quorum_get(m, k, kl, false, &v, &vl);
    if (rc)
        return rc;
    if (vl < 1 || (uint8_t)v[0] != VAL_VERSION_BYTE) {
        free(v);
        return STRATA_ECORRUPT;
    }
    memmove(v, v + 1, vl - 1);
    *doc = v;
    *len = vl - 1;
    return 0;
}
