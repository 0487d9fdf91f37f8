/*
 * heal.c - bring every drive's records (and shards) back to the quorum's.
 *
 * For each set, a merge of every online drive's keys gives each record key
 * once; the key's value is then read on every drive.  Version records
 * ('O') follow the read rule of object.c: a tombstone on any drive means
 * the version is deleted, and the tombstone is copied to every drive (and
 * dropped everywhere once every drive of the set holds it); the data a
 * drive that missed the delete still names is dropped too.  Unless no
 * commit can have written the tombstone (strata_meta__tomb_uncommitted: an
 * overwrite or delete that crashed below its quorum): then the tombstoned
 * drives get the version back.  Voters are
 * the drives that are online, not fresh, and answered.  A version live on
 * at least Wq - (N - voters) of them may have been committed, and drives
 * that lack it, hold something else, or hold an inline shard failing its
 * CRC get the copy most drives agree on (for inline versions the drive's
 * own shard is recomputed by decoding and re-encoding the object).
 *
 * Below that count the version is a minority record: a write that reached
 * fewer drives than its quorum and crashed before its undo (never
 * acknowledged), or - only if a drive lost synced records without being
 * marked fresh - a committed version.  Store.c marks a drive whose store
 * vanished fresh, so the second case is excluded by construction, and:
 * - when the voters lacking it (ENOTFOUND) alone make a write quorum, no
 *   commit can have reached Wq drives (it would overlap them), so it is
 *   removed, with its data (strata_meta__drop: after the key lock, and
 *   after the readers of a pinned version), unless a copy carries an
 *   active Object Lock;
 * - otherwise (its absence has no write quorum, e.g. two drives of four,
 *   where the fast read path already shows it; or it is locked), acknowledged
 *   cannot be told from never acknowledged, and the safe side is taken: it
 *   is rolled forward when that can be done in full (its data heals first),
 *   else left alone.
 * A fresh drive never counts as evidence of absence, nor as a holder.
 *
 * Other records heal when the read quorum of drives hold the same value.
 * Non-inline versions also get strata_ec_heal for their shard files.
 * Version records are healed under their key's stripe lock so a concurrent
 * put or delete is not undone.
 * Upload records ('U') follow the newest-state rule of mpu.c (absent <
 * live < dead): an abort's tombstone or a complete's completed-upload
 * record on any drive is copied to the others and dropped once every drive
 * holds one (a completed-upload record only after the retry window); a
 * live record on fewer drives than a commit needs, absent on a write
 * quorum, is removed.  Part records ('P') of an upload that is dead on any
 * drive, or absent on a write quorum, are removed (their data is left to
 * the orphan reclaim); the others, and part table records ('T'), heal as
 * raw values.  Bucket records ('B') follow the newest state by time
 * (local/bucket.c).  All under their key's lock (a part record names its key;
 * bucket records take bucket_mu), and the data of parts and of completed
 * multipart objects' parts gets strata_ec_heal.
 * Heal writes are not synced one by one; each drive's WAL is synced once
 * at the end of the set, before fresh drives are marked healed (only after
 * a pass in which every version could be decided and written); drives of
 * the other tiers after a pass without any failure (tier op healed).
 * Tombstones are kept until every drive holds one, rather than dropped at
 * once: a drive that missed the delete would otherwise bring the version
 * back.
 * strata_meta_heal_all_paced hands the caller every STRATA_HEAL_PACE_KEYS
 * keys (the scanner keeps its --heal-rate with it; an admin request heals
 * unpaced), and at each of those points first heals up to as many keys of
 * the immediate heal queue, which would otherwise wait for the whole pass.
 * Threads: the caller's (the ILM scanner or an admin request).
 */
#include "local.h"
#include "qread.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

struct hvals {
    char *v[STRATA_DRIVES_MAX];
    size_t vl[STRATA_DRIVES_MAX];
    int rc[STRATA_DRIVES_MAX];
    struct meta_rec r[STRATA_DRIVES_MAX];
    bool dec[STRATA_DRIVES_MAX];
    uint8_t *logged[STRATA_DRIVES_MAX]; /* r[d]'s shard read from the drive's log */
    /* Data heal_one drops once the key lock is released. */
    struct meta_drop drops[STRATA_DRIVES_MAX];
    unsigned ndrops;
};

/* How many of n drives read the same value as drive d. */
static unsigned hvals_agree(const struct hvals *h, unsigned n, unsigned d)
{
    unsigned c = 0;
    for (unsigned j = 0; j < n; j++)
        c += h->rc[j] == 0 && h->vl[j] == h->vl[d] && memcmp(h->v[j], h->v[d], h->vl[d]) == 0;
    return c;
}

static void hvals_fini(struct hvals *h)
{
    for (unsigned d = 0; d < STRATA_DRIVES_MAX; d++) {
        free(h->v[d]);
        h->v[d] = NULL;
        if (h->dec[d])
            strata_meta__rec_fini(&h->r[d]);
        h->dec[d] = false;
        free(h->logged[d]);
        h->logged[d] = NULL;
    }
    h->ndrops = 0;
}

/* Queue the drop of record r's data (version sk), once per data object. */
static void drop_add(struct strata_meta *m, struct hvals *h, const struct meta_rec *r,
                     const uint8_t *sk)
{
    if (!(r->flags & REC_F_MULTIPART) &&
        (!r->has_data_id || (r->flags & (REC_F_INLINE | REC_F_DELETE_MARKER))))
        return;
    for (unsigned i = 0; i < h->ndrops; i++)
        if (h->drops[i].flags == r->flags && h->drops[i].has_data_id == r->has_data_id &&
            memcmp(h->drops[i].data_id, r->data_id, STRATA_DATA_ID_LEN) == 0)
            return;
    if (h->ndrops == STRATA_DRIVES_MAX)
        return; /* the orphan reclaim finds the rest */
    struct meta_drop *dr = &h->drops[h->ndrops++];
    memset(dr, 0, sizeof(*dr));
    dr->any = true;
    dr->flags = r->flags;
    dr->has_data_id = r->has_data_id;
    memcpy(dr->data_id, r->data_id, STRATA_DATA_ID_LEN);
    memcpy(dr->sk, sk, SORTKEY_LEN);
    dr->nparts = r->nparts;
    int t = strata_meta__tier_idx(m, r->tier);
    dr->tier = t < 0 ? 0 : (unsigned)t;
}

static void put_raw(struct strata_meta *m, unsigned set, unsigned d, rocksdb_writeoptions_t *wo,
                    const char *k, size_t kl, const char *v, size_t vl, uint64_t *healed,
                    unsigned *failed)
{
    /* The store logs its own write failures (once, not per key). */
    if (strata_meta__drive_put(m, set, d, wo, k, kl, v, vl) != 0) {
        (*failed)++;
        return;
    }
    (*healed)++;
}

static bool shard_ok(const struct meta_rec *r)
{
    if (!(r->flags & REC_F_INLINE) || r->shard_len == 0)
        return true;
    if (!r->shard)
        return false; /* a logged shard missing or bad */
    return strata_crc32c(0, r->shard, r->shard_len) == r->shard_crc;
}

/* A tombstone on some drive: copy it to the others, or drop it everywhere
 * once every drive of the set holds it. */
static void heal_tomb(struct strata_meta *m, unsigned set, rocksdb_writeoptions_t *wo,
                      const char *k, size_t kl, struct hvals *h, struct strata_heal_stats *st,
                      unsigned *failed)
{
    struct meta_set *ms = &m->sets[set];
    int src = -1;
    unsigned ntomb = 0;
    for (unsigned d = 0; d < ms->n; d++) {
        if (h->rc[d] == 0 && strata_meta__is_tomb(h->v[d], h->vl[d])) {
            ntomb++;
            if (src < 0)
                src = (int)d;
        }
    }
    /* A drive that missed the delete holds the live record, and its share
     * of the data, which the delete could not remove: drop that data too
     * (strata_meta__drop: after the key lock, and after the readers of a
     * pinned version).  Removing a data object is idempotent. */
    for (unsigned d = 0; d < ms->n; d++)
        if (h->rc[d] == 0 && h->dec[d])
            drop_add(m, h, &h->r[d], (const uint8_t *)k + kl - SORTKEY_LEN);
    if (ntomb == ms->n) {
        for (unsigned d = 0; d < ms->n; d++)
            if (strata_meta__drive_delete(m, set, d, wo, k, kl) != 0)
                (*failed)++;
        return;
    }
    for (unsigned d = 0; d < ms->n; d++) {
        if (!ms->drives[d].db || (h->rc[d] == 0 && strata_meta__is_tomb(h->v[d], h->vl[d])))
            continue;
        put_raw(m, set, d, wo, k, kl, h->v[src], h->vl[src], &st->records_healed, failed);
    }
}

/*
 * Heal data object id on its tier.  k (kl bytes, the last tail of them a
 * sort key or nothing) is an 'O'/'T'-style key: kind byte, bucket, 0, key,
 * 0, which gives the placement.
 */
static int data_heal(struct strata_meta *m, const char *tier, const char *k, size_t kl,
                     size_t tail, const uint8_t *id, uint64_t size, unsigned *healed)
{
    struct strata_tier *t = strata_meta__tier(m, tier);
    if (!t)
        return STRATA_EINVAL;
    if (!t->ops->heal)
        return 0;
    char b[STRATA_BUCKET_NAME_MAX + 1], key[STRATA_KEY_MAX + 1];
    size_t bl = strnlen(k + 1, kl - 1);
    if (kl < tail + 3 || 1 + bl + 1 > kl - tail || bl > STRATA_BUCKET_NAME_MAX)
        return STRATA_ECORRUPT;
    memcpy(b, k + 1, bl);
    b[bl] = 0;
    size_t klen = kl - tail - (1 + bl + 1) - 1; /* up to the 0 before the tail */
    if (klen > STRATA_KEY_MAX)
        return STRATA_ECORRUPT;
    memcpy(key, k + 1 + bl + 1, klen);
    key[klen] = 0;
    return t->ops->heal(t->impl, strata_meta__place(b, key), id, size, healed);
}

static int64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * A minority version (live on fewer voters than a commit needs) may be
 * removed when the voters that answered "absent" alone make a write
 * quorum: a commit reached >= Wq drives, so it would overlap them, and a
 * non-fresh drive does not lose a synced commit.  Likewise a null version
 * superseded by a newer null version that may have been committed
 * (newer_null).  Never when any copy carries an active Object Lock (a
 * locked version is rolled forward or left alone), and a multipart version
 * only when every drive of the set is online: its 'T' chunks go with it,
 * without tombstones that could later drop part data an unfinished upload
 * still names.
 */
static bool minority_removable(struct strata_meta *m, unsigned set, const struct hvals *h,
                               unsigned wq, bool superseded)
{
    const struct meta_set *ms = &m->sets[set];
    unsigned absent = 0;
    bool multipart = false, all_online = true;
    int64_t now = strata_meta_lock_now_ms(m);
    for (unsigned d = 0; d < ms->n; d++) {
        all_online &= ms->drives[d].db != NULL;
        if (strata_meta__drive_readable(m, set, d))
            absent += h->rc[d] == STRATA_ENOTFOUND;
        if (h->rc[d] == 0 && !h->dec[d])
            return false; /* a copy that does not decode: cannot judge its lock */
        if (h->rc[d] == 0 && h->dec[d]) {
            if (strata_obj_lock_active(&h->r[d].lock, now))
                return false;
            multipart |= (h->r[d].flags & REC_F_MULTIPART) != 0;
        }
    }
    return (absent >= wq || superseded) && (!multipart || all_online);
}

/* Delete key k on every online drive holding it (a remove when all are
 * online), else put a tombstone on every online drive (the offline ones
 * finish through the newest-state rule when they are back). */
static void remove_or_tomb(struct strata_meta *m, unsigned set, rocksdb_writeoptions_t *wo,
                           const char *k, size_t kl, const struct hvals *h, unsigned *failed)
{
    struct meta_set *ms = &m->sets[set];
    bool all_online = true;
    for (unsigned d = 0; d < ms->n; d++)
        all_online &= ms->drives[d].db != NULL;
    char tomb[TOMB_LEN];
    strata_meta__tomb_encode(wall_ns(), tomb);
    uint64_t puts = 0;
    for (unsigned d = 0; d < ms->n; d++) {
        if (!ms->drives[d].db)
            continue;
        if (!all_online)
            put_raw(m, set, d, wo, k, kl, tomb, TOMB_LEN, &puts, failed);
        else if (h->rc[d] == 0 && strata_meta__drive_delete(m, set, d, wo, k, kl) != 0)
            (*failed)++;
    }
}

/* Remove a minority version (minority_removable): delete it where all
 * drives are online, else put a tombstone on every online drive (the
 * offline ones may hold it too; heal_tomb finishes when they are back);
 * its data is dropped after the key lock. */
static void roll_back(struct strata_meta *m, unsigned set, rocksdb_writeoptions_t *wo,
                      const char *k, size_t kl, struct hvals *h, struct strata_heal_stats *st,
                      unsigned *failed)
{
    struct meta_set *ms = &m->sets[set];
    const uint8_t *sk = (const uint8_t *)k + kl - SORTKEY_LEN;
    size_t nparts = 0;
    for (unsigned d = 0; d < ms->n; d++) {
        if (h->rc[d] == 0 && h->dec[d]) {
            if (h->r[d].flags & REC_F_MULTIPART) {
                if (h->r[d].nparts > nparts)
                    nparts = h->r[d].nparts;
            } else {
                drop_add(m, h, &h->r[d], sk);
            }
        }
    }
    remove_or_tomb(m, set, wo, k, kl, h, failed);
    st->minority_removed++;
    /* A multipart version's part table: the part data stays for the
     * orphan reclaim, which keeps what an upload's part records name. */
    char tk[1 + STRATA_BUCKET_NAME_MAX + 1 + STRATA_KEY_MAX + 1 + SORTKEY_LEN + 2];
    for (size_t c = 0; c < (nparts + MP_CHUNK_PARTS - 1) / MP_CHUNK_PARTS; c++) {
        if (kl + 2 > sizeof(tk))
            break;
        memcpy(tk, k, kl);
        tk[0] = 'T';
        tk[kl] = (char)(c >> 8);
        tk[kl + 1] = (char)c;
        for (unsigned d = 0; d < ms->n; d++) {
            if (!ms->drives[d].db)
                continue; /* not reached: only with every drive online */
            if (strata_meta__drive_delete(m, set, d, wo, tk, kl + 2) != 0)
                (*failed)++;
        }
    }
}

/*
 * A null version newer than the one at key k (its sort key last) that may
 * have been committed (live on at least need voters): k's version is then
 * a leftover beside it, since a committed null write replaces (tombstones)
 * the null version its lookup finds, and a committed one is found.
 */
static bool newer_null(struct strata_meta *m, unsigned set, const char *k, size_t kl,
                       unsigned need)
{
    const struct meta_set *ms = &m->sets[set];
    size_t pl = kl - SORTKEY_LEN; /* 'O' bucket 0 key 0 */
    bool found = false;
    for (unsigned d = 0; d < ms->n && !found; d++) {
        if (!strata_meta__drive_readable(m, set, d))
            continue;
        rocksdb_readoptions_t *ro;
        rocksdb_iterator_t *it = strata_meta__iter_new(m, set, d, &ro, k, kl, false);
        if (!it)
            continue;
        /* Newer versions sort first: from the key's first version up to k. */
        for (rocksdb_iter_seek(it, k, pl); rocksdb_iter_valid(it) && !found;
             rocksdb_iter_next(it)) {
            size_t ikl, vl;
            const char *ik = rocksdb_iter_key(it, &ikl);
            const char *v = rocksdb_iter_value(it, &vl);
            struct meta_rec r;
            if (ikl != kl || memcmp(ik, k, pl) != 0 || strata_meta__is_tomb(v, vl) ||
                strata_meta__rec_decode(v, vl, false, &r) != 0)
                continue;
            bool null = (r.flags & REC_F_NULL) != 0;
            strata_meta__rec_fini(&r);
            unsigned holders = 0;
            for (unsigned j = 0; null && j < ms->n; j++) {
                char *jv;
                size_t jvl;
                if (!strata_meta__drive_readable(m, set, j) ||
                    strata_meta__drive_get_uncached(m, set, j, ik, ikl, &jv, &jvl) != 0)
                    continue;
                holders += !strata_meta__is_tomb(jv, jvl);
                free(jv);
            }
            found = null && holders >= need;
        }
        rocksdb_iter_destroy(it);
        rocksdb_readoptions_destroy(ro);
    }
    return found;
}

/*
 * Roll a minority version forward (its absence has no write quorum, or it
 * is locked): the safe side, since it cannot be told from a committed
 * version some drives lost.  Only when it can be done in full: its data
 * heals (shards written before the records), a multipart version has the
 * read quorum of copies (so heal_raw restores its 'T' chunks).  Otherwise
 * it is left alone and not counted as a failure.
 */
static bool roll_forward_ok(struct strata_meta *m, unsigned set, const char *k, size_t kl,
                            const struct meta_rec *w, bool data, unsigned copies,
                            struct strata_heal_stats *st)
{
    if ((w->flags & REC_F_MULTIPART) && copies < strata_set_read_quorum(m->sets[set].set)) {
        strata_log(&m->log, STRATA_LOG_NOTICE, "meta",
                   "heal: minority multipart version on %u drives left alone", copies);
        return false;
    }
    if (!data) {
        st->minority_healed++;
        return true;
    }
    unsigned healed = 0;
    int rc = data_heal(m, w->tier, k, kl, SORTKEY_LEN, w->data_id, w->size, &healed);
    st->shards_healed += healed;
    if (rc) {
        strata_log(&m->log, STRATA_LOG_NOTICE, "meta",
                   "heal: minority version's data not healable (%s), left alone",
                   strata_errname(rc));
        return false;
    }
    st->minority_healed++;
    return true;
}

/* A tombstone that no commit can have written (see
 * strata_meta__tomb_uncommitted): the version stands and the tombstoned
 * drives get it back, while the new version, below quorum, is removed as a
 * minority record or left alone.  Copying such a tombstone instead would
 * delete the acknowledged version. */
static bool tomb_uncommitted(struct strata_meta *m, unsigned set, const struct hvals *h)
{
    const struct meta_set *ms = &m->sets[set];
    unsigned live = 0, tombs = 0, resp = 0;
    for (unsigned d = 0; d < ms->n; d++) {
        if (!strata_meta__drive_readable(m, set, d))
            continue;
        resp += h->rc[d] == 0 || h->rc[d] == STRATA_ENOTFOUND;
        bool tomb = h->rc[d] == 0 && strata_meta__is_tomb(h->v[d], h->vl[d]);
        tombs += tomb;
        live += h->rc[d] == 0 && h->dec[d] && !tomb;
    }
    return strata_meta__tomb_uncommitted(ms->set, ms->n - resp, live, tombs);
}

static void heal_version(struct strata_meta *m, unsigned set, rocksdb_writeoptions_t *wo,
                         const char *k, size_t kl, struct hvals *h,
                         struct strata_heal_stats *st, unsigned *failed)
{
    struct meta_set *ms = &m->sets[set];
    st->objects_scanned++;
    for (unsigned d = 0; d < ms->n; d++) {
        if (h->rc[d] == 0 && strata_meta__is_tomb(h->v[d], h->vl[d])) {
            if (!tomb_uncommitted(m, set, h)) {
                heal_tomb(m, set, wo, k, kl, h, st, failed);
                return;
            }
            /* The tombstoned drives lack the version: healed below. */
            for (unsigned j = 0; j < ms->n; j++) {
                if (h->rc[j] != 0 || !strata_meta__is_tomb(h->v[j], h->vl[j]))
                    continue;
                free(h->v[j]);
                h->v[j] = NULL;
                if (h->dec[j])
                    strata_meta__rec_fini(&h->r[j]);
                h->dec[j] = false;
                h->rc[j] = STRATA_ENOTFOUND;
            }
            break;
        }
    }
    /* Voters are the readable drives (fresh ones are being refilled). */
    unsigned n = ms->n, resp = 0, live = 0;
    for (unsigned d = 0; d < n; d++) {
        if (!strata_meta__drive_readable(m, set, d))
            continue;
        resp += h->rc[d] == 0 || h->rc[d] == STRATA_ENOTFOUND;
        live += h->rc[d] == 0 && h->dec[d];
    }
    if (resp < strata_set_read_quorum(ms->set)) {
        (*failed)++; /* cannot be decided now: leave it to a later pass */
        return;
    }
    unsigned wq = strata_set_write_quorum(ms->set);
    if (live == 0)
        return; /* only on fresh drives, or undecodable: nothing to vote for */
    /* Below the count a commit needs, the record is a minority (see the
     * top of the file): rolled back when its absence has a write quorum,
     * else rolled forward if that can be done in full. */
    bool forward = false;
    unsigned quorum_live = wq > n - resp ? wq - (n - resp) : 1;
    if (live < quorum_live) {
        bool null = false;
        for (unsigned d = 0; d < n; d++)
            null |= h->rc[d] == 0 && h->dec[d] && (h->r[d].flags & REC_F_NULL);
        bool superseded = null && newer_null(m, set, k, kl, quorum_live);
        if (minority_removable(m, set, h, wq, superseded)) {
            roll_back(m, set, wo, k, kl, h, st, failed);
            return;
        }
        if (superseded)
            return; /* locked: kept, but never made a second null version */
        forward = true;
    }
    int best = -1;
    unsigned best_n = 0;
    for (unsigned d = 0; d < n; d++) {
        if (h->rc[d] || !h->dec[d] || !strata_meta__drive_readable(m, set, d))
            continue;
        unsigned c = 0;
        for (unsigned j = 0; j < n; j++)
            c += h->rc[j] == 0 && h->dec[j] && strata_meta__drive_readable(m, set, j) &&
                 strata_meta__rec_same(&h->r[j], &h->r[d]);
        if (c > best_n) {
            best_n = c;
            best = (int)d;
        }
    }
    const struct meta_rec *w = &h->r[best];
    bool need[STRATA_DRIVES_MAX] = {0}, any = false;
    for (unsigned d = 0; d < ms->n; d++) {
        if (!ms->drives[d].db)
            continue;
        need[d] = h->rc[d] != 0 || !h->dec[d] || !strata_meta__rec_same(&h->r[d], w) ||
                  !shard_ok(&h->r[d]);
        any |= need[d];
    }
    bool data = !(w->flags & (REC_F_INLINE | REC_F_DELETE_MARKER)) && w->has_data_id &&
                w->size > 0;
    if (forward && !roll_forward_ok(m, set, k, kl, w, data, best_n, st))
        return;
    if (any && !(w->flags & REC_F_INLINE)) {
        for (unsigned d = 0; d < ms->n; d++)
            if (need[d])
                put_raw(m, set, d, wo, k, kl, h->v[best], h->vl[best], &st->records_healed, failed);
    } else if (any && w->size > 0) {
        const uint8_t *shards[STRATA_DRIVES_MAX] = {0};
        uint32_t crcs[STRATA_DRIVES_MAX] = {0};
        for (unsigned d = 0; d < ms->n; d++) {
            if (!need[d] || (h->dec[d] && strata_meta__rec_same(&h->r[d], w))) {
                shards[d] = h->r[d].shard;
                crcs[d] = h->r[d].shard_crc;
            }
            if (!h->dec[d] || h->r[d].shard_len != w->shard_len)
                shards[d] = NULL;
        }
        uint8_t *obj = malloc(w->size);
        uint8_t *sbuf = NULL;
        size_t slen = 0;
        uint32_t ncrc[STRATA_DRIVES_MAX];
        if (obj &&
            strata_ec_inline_decode(ms->set, shards, crcs, w->shard_len, w->size, obj) == 0 &&
            strata_ec_inline_encode(ms->set, obj, w->size, &sbuf, &slen, ncrc) == 0 &&
            slen == w->shard_len) {
            struct meta_rec r;
            /* Re-decode with headers so the rewritten record keeps them. */
            if (strata_meta__rec_decode(h->v[best], h->vl[best], true, &r) == 0) {
                for (unsigned d = 0; d < ms->n; d++) {
                    if (!need[d])
                        continue;
                    r.logged = false;
                    r.shard = sbuf + (size_t)d * slen;
                    r.shard_crc = ncrc[d];
                    (void)strata_meta__slog_put(ms->drives[d].slog, &r);
                    char *v;
                    size_t vl;
                    if (strata_meta__rec_encode(&r, &v, &vl) == 0) {
                        put_raw(m, set, d, wo, k, kl, v, vl, &st->records_healed, failed);
                        free(v);
                    }
                }
                strata_meta__rec_fini(&r);
            }
        } else if (forward) {
            /* A minority record whose shards do not decode: left as it is. */
            strata_log(&m->log, STRATA_LOG_NOTICE, "meta",
                       "heal: minority inline version undecodable, left alone");
        } else {
            strata_log(&m->log, STRATA_LOG_WARN, "meta", "heal: inline object undecodable");
            (*failed)++;
        }
        free(obj);
        free(sbuf);
    } else if (any) {
        for (unsigned d = 0; d < ms->n; d++)
            if (need[d])
                put_raw(m, set, d, wo, k, kl, h->v[best], h->vl[best], &st->records_healed, failed);
    }
    if (data && !forward) {
        unsigned healed = 0;
        int rc = data_heal(m, w->tier, k, kl, SORTKEY_LEN, w->data_id, w->size, &healed);
        if (rc) {
            strata_log(&m->log, STRATA_LOG_WARN, "meta", "heal of data: %s", strata_errname(rc));
            (*failed)++;
        }
        st->shards_healed += healed;
    }
}

/* The tier of a 'T' chunk's parts: its version record's (any drive). */
static void ptab_tier(struct strata_meta *m, unsigned set, const char *k, size_t kl,
                      char tier[STRATA_TIER_NAME_MAX + 1])
{
    struct meta_set *ms = &m->sets[set];
    char ok[1 + STRATA_BUCKET_NAME_MAX + 1 + STRATA_KEY_MAX + 1 + SORTKEY_LEN];
    tier[0] = 0;
    if (kl < 2 || kl - 2 > sizeof(ok))
        return;
    memcpy(ok, k, kl - 2);
    ok[0] = 'O';
    for (unsigned d = 0; d < ms->n; d++) {
        char *v;
        size_t vl;
        struct meta_rec r;
        if (!ms->drives[d].db ||
            strata_meta__drive_get_uncached(m, set, d, ok, kl - 2, &v, &vl) != 0)
            continue;
        bool got = strata_meta__rec_decode(v, vl, false, &r) == 0;
        if (got)
            snprintf(tier, STRATA_TIER_NAME_MAX + 1, "%s", r.tier);
        strata_meta__rec_fini(&r);
        free(v);
        if (got)
            return;
    }
}

/* The shards of a part record's data, or of every part in a 'T' chunk:
 * from the value the read quorum agree on. */
static void heal_part_data(struct strata_meta *m, unsigned set, char kind, const char *k,
                           size_t kl, struct hvals *h, struct strata_heal_stats *st,
                           unsigned *failed)
{
    struct meta_set *ms = &m->sets[set];
    unsigned rq = strata_set_read_quorum(ms->set);
    int best = -1;
    for (unsigned d = 0; d < ms->n && best < 0; d++) {
        if (h->rc[d])
            continue;
        unsigned n = hvals_agree(h, ms->n, d);
        if (n >= rq)
            best = (int)d;
    }
    if (best < 0)
        return;
    struct meta_part one, *parts = &one;
    size_t n = 0;
    char tier[STRATA_TIER_NAME_MAX + 1] = "";
    char pb[STRATA_BUCKET_NAME_MAX + 1], pk[STRATA_KEY_MAX + 1];
    char okey[1 + STRATA_BUCKET_NAME_MAX + 1 + STRATA_KEY_MAX + 1];
    size_t okl = 0;
    if (kind == 'P') {
        if (strata_meta__part_decode(h->v[best], h->vl[best], &one, pb, pk) == 0) {
            n = 1;
            snprintf(tier, sizeof(tier), "%s", one.tier);
            okl = (size_t)snprintf(okey, sizeof(okey), "O%s", pb) + 1;
            okl += (size_t)snprintf(okey + okl, sizeof(okey) - okl, "%s", pk) + 1;
        }
    } else {
        ptab_tier(m, set, k, kl, tier);
        okl = kl - 2 - SORTKEY_LEN; /* 'T' bucket 0 key 0 | sk chunk */
        memcpy(okey, k, okl < sizeof(okey) ? okl : 0);
        parts = calloc(MP_CHUNK_PARTS, sizeof(*parts));
        if (!parts ||
            strata_meta__ptab_decode(h->v[best], h->vl[best], parts, MP_CHUNK_PARTS, &n) != 0)
            n = 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (!parts[i].has_data_id || parts[i].size == 0)
            continue;
        unsigned healed = 0;
        /* Encrypted parts store a sealed stream of ssize bytes. */
        uint64_t dsize = parts[i].ssize ? parts[i].ssize : parts[i].size;
        int rc = okl ? data_heal(m, tier, okey, okl, 0, parts[i].data_id, dsize, &healed)
                     : STRATA_ECORRUPT;
        if (rc) {
            strata_log(&m->log, STRATA_LOG_WARN, "meta", "heal of part data: %s",
                       strata_errname(rc));
            (*failed)++;
        }
        st->shards_healed += healed;
    }
    st->objects_scanned += kind == 'P' ? 1 : 0;
    if (parts != &one)
        free(parts);
}

static void heal_raw(struct strata_meta *m, unsigned set, rocksdb_writeoptions_t *wo,
                     const char *k, size_t kl, struct hvals *h, struct strata_heal_stats *st,
                     unsigned *failed)
{
    struct meta_set *ms = &m->sets[set];
    unsigned rq = strata_set_read_quorum(ms->set);
    int best = -1;
    unsigned best_n = 0;
    for (unsigned d = 0; d < ms->n; d++) {
        if (h->rc[d])
            continue;
        unsigned n = hvals_agree(h, ms->n, d);
        if (n > best_n) {
            best_n = n;
            best = (int)d;
        }
    }
    if (best < 0 || best_n < rq)
        return;
    for (unsigned d = 0; d < ms->n; d++) {
        if (!ms->drives[d].db)
            continue;
        if (h->rc[d] || h->vl[d] != h->vl[best] || memcmp(h->v[d], h->v[best], h->vl[d]) != 0)
            put_raw(m, set, d, wo, k, kl, h->v[best], h->vl[best], &st->records_healed, failed);
    }
}

/* Voters (readable drives that answered), the ones answering "absent",
 * and the read quorum's value (the most common one; -1 when none). */
static int raw_votes(struct strata_meta *m, unsigned set, const struct hvals *h, unsigned *voters,
                     unsigned *absent, unsigned *best_n)
{
    struct meta_set *ms = &m->sets[set];
    int best = -1;
    *voters = *absent = *best_n = 0;
    for (unsigned d = 0; d < ms->n; d++) {
        if (!strata_meta__drive_readable(m, set, d) ||
            (h->rc[d] != 0 && h->rc[d] != STRATA_ENOTFOUND))
            continue;
        (*voters)++;
        if (h->rc[d] == STRATA_ENOTFOUND) {
            (*absent)++;
            continue;
        }
        unsigned n = 0;
        for (unsigned j = 0; j < ms->n; j++)
            n += h->rc[j] == 0 && strata_meta__drive_readable(m, set, j) && h->vl[j] == h->vl[d] &&
                 memcmp(h->v[j], h->v[d], h->vl[d]) == 0;
        if (n > *best_n) {
            *best_n = n;
            best = (int)d;
        }
    }
    return best;
}

/*
 * An upload record ('U').  Newest state wins: absent < live < dead (an
 * abort's tombstone, or a complete's completed-upload record; upload ids
 * are never reused, so nothing comes after a dead state).
 * - A dead state on any drive: copied to every online drive without one
 *   (a completed-upload record in preference to a tombstone: it answers
 *   retries).  Once every drive of the set holds a dead state it is
 *   dropped everywhere: a tombstone at once, a completed-upload record
 *   once the retry window (strata_meta_opts.mpu_retry_s) has passed.
 * - Else the read quorum's live record is copied where it is missing or
 *   differs.  One live on fewer voters than a commit needs whose absence
 *   a write quorum of voters attests is removed: a create that reached
 *   too few drives and crashed, or what an abort or complete a drive
 *   missed left before these records had dead states.
 */
static void heal_upload(struct strata_meta *m, unsigned set, rocksdb_writeoptions_t *wo,
                        const char *k, size_t kl, struct hvals *h, struct strata_heal_stats *st,
                        unsigned *failed)
{
    struct meta_set *ms = &m->sets[set];
    int done = -1, tomb = -1;
    unsigned done_n = 0, ndead = 0;
    for (unsigned d = 0; d < ms->n; d++) {
        if (h->rc[d] != 0 || !strata_meta__is_dead(h->v[d], h->vl[d]))
            continue;
        ndead++;
        if (strata_meta__is_tomb(h->v[d], h->vl[d])) {
            if (tomb < 0)
                tomb = (int)d;
            continue;
        }
        unsigned n = hvals_agree(h, ms->n, d);
        if (n > done_n) {
            done_n = n;
            done = (int)d;
        }
    }
    int src = done >= 0 ? done : tomb;
    if (src >= 0) {
        bool keep = false;
        if (done >= 0) {
            struct meta_done dn;
            /* An undecodable record is kept (and left to a newer binary). */
            keep = strata_meta__done_decode(h->v[done], h->vl[done], &dn) != 0 ||
                   wall_ns() - dn.done_ns <= m->mpu_retry_ns;
        }
        if (ndead == ms->n && !keep) {
            for (unsigned d = 0; d < ms->n; d++)
                if (strata_meta__drive_delete(m, set, d, wo, k, kl) != 0)
                    (*failed)++;
            return;
        }
        for (unsigned d = 0; d < ms->n; d++) {
            if (!ms->drives[d].db || (h->rc[d] == 0 && strata_meta__is_dead(h->v[d], h->vl[d]) &&
                                      (done < 0 || strata_meta__is_done(h->v[d], h->vl[d]))))
                continue;
            put_raw(m, set, d, wo, k, kl, h->v[src], h->vl[src], &st->records_healed, failed);
        }
        return;
    }
    unsigned voters, absent, best_n;
    int best = raw_votes(m, set, h, &voters, &absent, &best_n);
    if (best < 0)
        return;
    unsigned n = ms->n, wq = strata_set_write_quorum(ms->set);
    unsigned need = wq > n - voters ? wq - (n - voters) : 1;
    if (best_n < need && absent >= wq) {
        remove_or_tomb(m, set, wo, k, kl, h, failed);
        st->minority_removed++;
        return;
    }
    heal_raw(m, set, wo, k, kl, h, st, failed);
}

/*
 * A part record ('P' upload partno; bucket and key in the value).  Garbage
 * once its upload is over - a dead state on any drive of the upload
 * record, or its absence on a write quorum of voters (never committed, or
 * removed) - and then removed from every online drive.  Its data is left
 * to the orphan reclaim: after a complete the listed parts' data belongs
 * to the new version.  Otherwise healed as heal_raw does, data included.
 */
static void heal_part_rec(struct strata_meta *m, unsigned set, rocksdb_writeoptions_t *wo,
                          const char *k, size_t kl, const char *bucket, const char *key,
                          struct hvals *h, struct strata_heal_stats *st, unsigned *failed)
{
    struct meta_set *ms = &m->sets[set];
    bool over = false;
    if (bucket[0] && kl == 1 + UPLOAD_LEN + 4) {
        char uk[1 + STRATA_BUCKET_NAME_MAX + 1 + STRATA_KEY_MAX + 1 + UPLOAD_LEN];
        size_t ukl = strata_meta__key_upload(uk, sizeof(uk), bucket, key, (const uint8_t *)k + 1);
        unsigned absent = 0, wq = strata_set_write_quorum(ms->set);
        for (unsigned d = 0; d < ms->n && !over; d++) {
            char *v = NULL;
            size_t vl = 0;
            if (!ms->drives[d].db)
                continue;
            int rc = strata_meta__drive_get_uncached(m, set, d, uk, ukl, &v, &vl);
            if (rc == 0)
                over = strata_meta__is_dead(v, vl);
            else if (rc == STRATA_ENOTFOUND && strata_meta__drive_readable(m, set, d))
                absent++;
            free(v);
        }
        over |= absent >= wq;
    }
    if (!over) {
        heal_raw(m, set, wo, k, kl, h, st, failed);
        heal_part_data(m, set, 'P', k, kl, h, st, failed);
        return;
    }
    for (unsigned d = 0; d < ms->n; d++)
        if (h->rc[d] == 0 && strata_meta__drive_delete(m, set, d, wo, k, kl) != 0)
            (*failed)++;
}

/*
 * A bucket record ('B' name, on every drive of every set).  Names are
 * reused, so the newest state wins by time: a live record's state time
 * (field 11), a tombstone's deletion time (strata_meta__bucket_newest).
 * A winning tombstone goes to every online drive without one, and once
 * every drive holds one they all go; a winning live record held by the
 * read quorum goes where it is missing or older.  Without a winner (live
 * records on too few drives, no tombstone) records whose absence a write
 * quorum of voters attests are removed: a DeleteBucket a drive missed
 * before bucket records had tombstones.
 */
static void heal_bucket(struct strata_meta *m, unsigned set, rocksdb_writeoptions_t *wo,
                        const char *k, size_t kl, struct hvals *h, struct strata_heal_stats *st,
                        unsigned *failed)
{
    struct meta_set *ms = &m->sets[set];
    bool voter[STRATA_DRIVES_MAX];
    unsigned voters = 0, absent = 0, ntomb = 0;
    for (unsigned d = 0; d < ms->n; d++) {
        voter[d] = strata_meta__drive_readable(m, set, d) &&
                   (h->rc[d] == 0 || h->rc[d] == STRATA_ENOTFOUND);
        voters += voter[d];
        absent += voter[d] && h->rc[d] == STRATA_ENOTFOUND;
        ntomb += h->rc[d] == 0 && strata_meta__is_tomb(h->v[d], h->vl[d]);
    }
    unsigned holders = 0;
    int w = strata_meta__bucket_newest(m, set, h->v, h->vl, h->rc, voter, &holders);
    unsigned wq = strata_set_write_quorum(ms->set), rq = strata_set_read_quorum(ms->set);
    if (w < 0) {
        unsigned live = 0;
        for (unsigned d = 0; d < ms->n; d++)
            live += h->rc[d] == 0;
        if (live && absent >= wq) {
            remove_or_tomb(m, set, wo, k, kl, h, failed);
            st->minority_removed++;
        }
        return;
    }
    bool tomb = strata_meta__is_tomb(h->v[w], h->vl[w]);
    if (tomb && ntomb == ms->n) {
        for (unsigned d = 0; d < ms->n; d++)
            if (strata_meta__drive_delete(m, set, d, wo, k, kl) != 0)
                (*failed)++;
        return;
    }
    if (!tomb && holders < rq)
        return; /* may have been committed, but too few copies to copy from */
    for (unsigned d = 0; d < ms->n; d++) {
        if (!ms->drives[d].db ||
            (h->rc[d] == 0 && h->vl[d] == h->vl[w] && memcmp(h->v[d], h->v[w], h->vl[w]) == 0))
            continue;
        if (tomb && h->rc[d] == 0 && strata_meta__is_tomb(h->v[d], h->vl[d]))
            continue; /* an older tombstone: dead either way */
        put_raw(m, set, d, wo, k, kl, h->v[w], h->vl[w], &st->records_healed, failed);
    }
}

/* A done restored copy ('R' bucket 0 key 0 sk, restore.c): its data on
 * the hot tier, from any copy of the record that decodes. */
static void heal_restored(struct strata_meta *m, unsigned set, const char *k, size_t kl,
                          struct hvals *h, struct strata_heal_stats *st, unsigned *failed)
{
    struct meta_set *ms = &m->sets[set];
    int src = -1;
    for (unsigned d = 0; d < ms->n && src < 0; d++)
        if (h->rc[d] == 0)
            src = (int)d;
    for (size_t i = 0; src >= 0; i++) {
        uint8_t id[STRATA_DATA_ID_LEN];
        uint64_t size = 0;
        if (strata_meta__restore_piece(h->v[src], h->vl[src], i, id, &size) != 0)
            break;
        unsigned healed = 0;
        if (data_heal(m, "", k, kl, SORTKEY_LEN, id, size, &healed) != 0)
            (*failed)++;
        st->shards_healed += healed;
    }
}

/* Heal one record key of set s; kcopy is a writable copy of the key. */
static void heal_one(struct strata_meta *m, unsigned s, rocksdb_writeoptions_t *wo, char *kcopy,
                     size_t kl, struct hvals *h, struct strata_heal_stats *st, unsigned *failed)
{
    struct meta_set *ms = &m->sets[s];
    pthread_mutex_t *lk = NULL;
    char pb[STRATA_BUCKET_NAME_MAX + 1] = "", pkk[STRATA_KEY_MAX + 1] = "";
    if (kcopy[0] == 'O' && kl > 1 + SORTKEY_LEN + 2) {
        /* 'O' bucket 0 key 0 sk: lock the key like put and delete do */
        kcopy[kl - SORTKEY_LEN - 1] = 0;
        const char *bucket = kcopy + 1, *key = bucket + strlen(bucket) + 1;
        if (key < kcopy + kl - SORTKEY_LEN - 1)
            lk = strata_meta__key_lock(m, bucket, key);
        else
            lk = strata_meta__key_lock(m, bucket, "");
    }
    if ((kcopy[0] == 'U' || kcopy[0] == 'T') && kl > 2) {
        /* 'U'/'T' bucket 0 key 0 ...: the key's lock, as mpu.c takes it */
        size_t tail = kcopy[0] == 'U' ? UPLOAD_LEN : SORTKEY_LEN + 2;
        if (kl > tail + 3 && kcopy[kl - tail - 1] == 0) {
            char save = kcopy[kl - tail - 1];
            kcopy[kl - tail - 1] = 0;
            const char *bucket = kcopy + 1;
            size_t blen = strnlen(bucket, kl - 1);
            if (1 + blen + 1 <= kl - tail - 1)
                lk = strata_meta__key_lock(m, bucket, bucket + blen + 1);
            kcopy[kl - tail - 1] = save;
        }
    } else if (kcopy[0] == 'B') {
        lk = &m->bucket_mu; /* bucket records change under it (local/bucket.c) */
    } else if (kcopy[0] == 'P') {
        /* A part record names its bucket and key in its value. */
        for (unsigned d = 0; d < ms->n && !lk; d++) {
            char *v;
            size_t vl;
            struct meta_part mp;
            if (!ms->drives[d].db ||
                strata_meta__drive_get_uncached(m, s, d, kcopy, kl, &v, &vl) != 0)
                continue;
            if (strata_meta__part_decode(v, vl, &mp, pb, pkk) == 0)
                lk = strata_meta__key_lock(m, pb, pkk);
            free(v);
        }
        if (!lk)
            pb[0] = pkk[0] = 0; /* no copy decodes: healed as raw bytes */
    }
    if (lk)
        pthread_mutex_lock(lk);
    for (unsigned d = 0; d < ms->n; d++) {
        h->rc[d] = ms->drives[d].db ? strata_meta__drive_get_uncached(m, s, d, kcopy, kl,
                                                                      &h->v[d], &h->vl[d])
                                    : STRATA_EIO;
        if (h->rc[d] == 0 && kcopy[0] == 'O') {
            h->dec[d] = strata_meta__rec_decode(h->v[d], h->vl[d], false, &h->r[d]) == 0;
            if (h->dec[d]) /* a missing or bad logged shard: r[d].shard NULL (shard_ok) */
                (void)strata_meta__slog_load(ms->drives[d].slog, &h->r[d], false, &h->logged[d]);
        }
    }
    if (kcopy[0] == 'O')
        heal_version(m, s, wo, kcopy, kl, h, st, failed);
    else if (kcopy[0] == 'U')
        heal_upload(m, s, wo, kcopy, kl, h, st, failed);
    else if (kcopy[0] == 'P')
        heal_part_rec(m, s, wo, kcopy, kl, pb, pkk, h, st, failed);
    else if (kcopy[0] == 'B')
        heal_bucket(m, s, wo, kcopy, kl, h, st, failed);
    else
        heal_raw(m, s, wo, kcopy, kl, h, st, failed);
    if (kcopy[0] == 'T')
        heal_part_data(m, s, kcopy[0], kcopy, kl, h, st, failed);
    if (kcopy[0] == 'R')
        heal_restored(m, s, kcopy, kl, h, st, failed);
    if (lk)
        pthread_mutex_unlock(lk);
    if (kcopy[0] == 'O')
        for (unsigned i = 0; i < h->ndrops; i++)
            strata_meta__drop(m, s, kcopy + 1, kcopy + 1 + strlen(kcopy + 1) + 1,
                              &h->drops[i]);
    hvals_fini(h);
}

void strata_meta__heal_key(struct strata_meta *m, unsigned set, const char *k, size_t kl,
                           struct strata_heal_stats *st, unsigned *failed)
{
    char *kcopy = malloc(kl + 1);
    struct hvals *h = calloc(1, sizeof(*h));
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    if (kcopy && h) {
        memcpy(kcopy, k, kl);
        heal_one(m, set, wo, kcopy, kl, h, st, failed);
    } else {
        (*failed)++;
    }
    rocksdb_writeoptions_destroy(wo);
    free(h);
    free(kcopy);
}

int strata_meta__local_heal_all(struct strata_meta *m, strata_heal_pace_cb pace_cb, void *ud,
                                      struct strata_heal_stats *out)
{
    pthread_mutex_lock(&m->heal_mu);
    struct strata_heal_stats st = {0};
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    char *kcopy = malloc(STRATA_KEY_MAX + STRATA_BUCKET_NAME_MAX + 64);
    struct hvals *h = calloc(1, sizeof(*h));
    int rc = 0;
    if (!kcopy || !h) {
        rc = STRATA_ENOMEM;
        goto out;
    }
    unsigned failed_all = 0;
    for (unsigned s = 0; s < m->nsets && rc == 0; s++) {
        struct meta_set *ms = &m->sets[s];
        struct meta_merge mg;
        unsigned failed = 0;
        rc = strata_meta__merge_open(&mg, m, &s, 1, MERGE_MAINTENANCE, "\x7f", 1);
        if (rc)
            break;
        strata_meta__merge_seek(&mg, "", 0);
        const char *k;
        size_t kl;
        uint64_t unpaced = 0; /* keys healed since the last pace_cb */
        while (strata_meta__merge_cur(&mg, &k, &kl, NULL, NULL)) {
            if (pace_cb && unpaced >= STRATA_HEAL_PACE_KEYS) {
                /* A paced heal of a large namespace runs for a long time
                 * with heal_mu held: writes that missed a drive meanwhile
                 * are healed here, within the same budget, instead of
                 * waiting for the whole pass. */
                unpaced += strata_meta__heal_queued_locked(m, STRATA_HEAL_PACE_KEYS, &st);
                rc = pace_cb(ud, unpaced);
                unpaced = 0;
                if (rc) {
                    failed++; /* not a whole pass: fresh drives stay fresh */
                    break;
                }
            }
            /* Transition intents ('X') are not healed: resolution reads every
             * drive's copy, and a copy written back here could outlive it. */
            if (kl > STRATA_KEY_MAX + STRATA_BUCKET_NAME_MAX + 64 || (kl > 0 && k[0] == 'X')) {
                strata_meta__merge_next(&mg);
                continue;
            }
            memcpy(kcopy, k, kl);
            strata_meta__merge_next(&mg);
            heal_one(m, s, wo, kcopy, kl, h, &st, &failed);
            unpaced++;
        }
        strata_meta__merge_close(&mg);
        if (pace_cb && unpaced && rc == 0)
            rc = pace_cb(ud, unpaced);
        failed_all += failed;
        for (unsigned d = 0; d < ms->n; d++) {
            if (!ms->drives[d].db)
                continue;
            /* Not durable (or the store failed a write): stays fresh, healed
             * again next pass. */
            if (strata_meta__drive_sync_wal(m, s, d) != 0)
                continue;
            if (strata_set_drive_fresh(ms->set, d) && failed == 0) {
                int mrc = strata_set_drive_mark_healed(ms->set, d);
                if (mrc)
                    strata_log(&m->log, STRATA_LOG_WARN, "meta", "drive %s stays fresh: %s",
                               strata_set_drive_path(ms->set, d), strata_errname(mrc));
            } else if (strata_set_drive_fresh(ms->set, d)) {
                strata_log(&m->log, STRATA_LOG_NOTICE, "meta",
                           "drive %s stays fresh: %u records or shards not healed this pass",
                           strata_set_drive_path(ms->set, d), failed);
            }
        }
    }
    /* The other tiers' data is named by the records of every set: their
     * refilled drives end their fresh state only after a pass in which
     * every record was decided and every data object healed. */
    for (unsigned t = 1; t < m->ntiers && rc == 0 && failed_all == 0; t++) {
        if (!m->tiers[t]->ops->healed)
            continue;
        int trc = m->tiers[t]->ops->healed(m->tiers[t]->impl);
        if (trc)
            strata_log(&m->log, STRATA_LOG_WARN, "meta", "tier %s: drives stay fresh: %s",
                       m->tiers[t]->name, strata_errname(trc));
    }
out:
    if (h)
        hvals_fini(h);
    free(h);
    free(kcopy);
    rocksdb_writeoptions_destroy(wo);
    pthread_mutex_unlock(&m->heal_mu);
    if (out)
        *out = st;
    return rc;
}
