/*
 * get.c - the local backend's key_get (store.h): the read quorum's answer
 * for one version of a key (qread.c), handed to the caller while the
 * drives' iterators still hold the records, so an inline object's shards
 * are decoded where RocksDB keeps them, never copied out first (the GET
 * path's cost); and key_get_nowait, the same from memory only (the cache
 * below or RocksDB's memtables and block cache), for event threads.  Also
 * strata_meta__obj_resolve, the same read by sort key
 * for the merged scans whose drives disagree (scan.c).
 * Threads: any caller thread.
 */
#include "local.h"
#include "qread.h"
#include "rcache.h"

#include <stdlib.h>
#include <string.h>

#include "strata/erasure.h"

/* What inline_read needs of the read behind a found version; data: a copy
 * of the bytes it decoded, for the cache (latest reads only). */
struct found_priv {
    struct strata_meta *m;
    struct qread *q;
    const char *bucket, *key;
    bool keep;
    uint8_t *data;
};

/* Decode the inline object of the winning version from the shards of every
 * drive holding that same version; when some shards are bad, read the
 * drives the quorum read left out and try once more. */
static int inline_decode(const struct strata_meta__key_found *f, uint8_t *out)
{
    struct found_priv *p = f->priv;
    struct strata_meta *m = p->m;
    struct qread *q = p->q;
    struct meta_set *ms = &m->sets[q->set];
    const struct drec *w = &q->d[q->win];
    for (int pass = 0; pass < 2; pass++) {
        const uint8_t *shards[STRATA_DRIVES_MAX] = {0};
        uint32_t crcs[STRATA_DRIVES_MAX] = {0};
        uint8_t *logged[STRATA_DRIVES_MAX] = {0}; /* shards read from the drives' logs */
        for (unsigned d = 0; d < ms->n; d++) {
            const struct drec *x = &q->d[d];
            if (strata_meta__drec_same(x, w) && x->rec.shard_len == w->rec.shard_len &&
                (x->rec.flags & REC_F_INLINE)) {
                struct meta_rec r = x->rec;
                /* A missing or bad logged shard is a corrupt shard. */
                int lrc = strata_meta__slog_load(ms->drives[d].slog, &r, q->nowait, &logged[d]);
                if (lrc == STRATA_EBUSY) {
                    for (unsigned j = 0; j < d; j++)
                        free(logged[j]);
                    return lrc; /* on a thread that may wait */
                }
                if (lrc)
                    continue;
                shards[d] = r.shard;
                crcs[d] = x->rec.shard_crc;
            }
        }
        int rc = strata_ec_inline_decode(ms->set, shards, crcs, w->rec.shard_len, w->rec.size, out);
        for (unsigned d = 0; d < ms->n; d++)
            free(logged[d]);
        if (rc == 0) {
            /* A copy for the cache only when the cache can keep it: an
             * object over its entry size (the dataloader's 100 KiB) would
             * pay a malloc and a copy per GET for nothing. */
            if (p->keep && !p->data &&
                strata_meta__rcache_fits(m, p->bucket, p->key, w->rawlen, w->rec.size) &&
                (p->data = malloc(w->rec.size)))
                memcpy(p->data, out, w->rec.size);
            return 0;
        }
        if (q->nowait)
            return STRATA_EBUSY; /* the other drives: on a thread that may wait */
        if (pass == 1)
            break;
        /* Some shards were bad: bring in the drives not read yet. */
        enum qmode saved = q->mode;
        q->mode = Q_SK;
        memcpy(q->sk, w->sk, SORTKEY_LEN);
        for (unsigned d = 0; d < ms->n; d++)
            if (!q->d[d].tried && ms->drives[d].db)
                strata_meta__read_drive(m, q, d, p->bucket, p->key, NULL);
        q->mode = saved;
    }
    /* Fewer than K drives hold the version at all (the others missed the
     * write or are away): unavailable (503), not corrupt. */
    unsigned holders = 0;
    for (unsigned d = 0; d < ms->n; d++)
        holders += strata_meta__drec_same(&q->d[d], w);
    return holders < strata_set_k(ms->set) ? STRATA_EQUORUM : STRATA_ECORRUPT;
}

/* The winner of q as a found version. */
static void found_of(struct strata_meta__key_found *f, struct qread *q, struct found_priv *p)
{
    const struct drec *w = &q->d[q->win];
    memcpy(f->sk, w->sk, SORTKEY_LEN);
    f->rec = &w->rec;
    f->raw = w->raw;
    f->rawlen = w->rawlen;
    f->is_latest =
        q->mode == Q_LATEST || (w->has_latest && memcmp(w->latest_sk, w->sk, SORTKEY_LEN) == 0);
    f->inline_read = inline_decode;
    f->inline_hold = NULL;
    f->release = NULL;
    f->priv = p;
}

/* An inline object's bytes from a cached version. */
static int cached_inline_read(const struct strata_meta__key_found *f, uint8_t *out)
{
    const struct meta_rc_hit *h = f->priv;
    memcpy(out, h->data, h->rec->size);
    return 0;
}

/* An inline object's bytes in its cache entry, held past the lookup. */
static const uint8_t *cached_inline_hold(const struct strata_meta__key_found *f, void **hold)
{
    const struct meta_rc_hit *h = f->priv;
    *hold = strata_meta__rcache_hold(h);
    return h->data;
}

/* The latest version from the cache (true, fn's answer in *rc). */
static bool get_cached(struct strata_meta *m, unsigned set, uint32_t hash, const char *bucket,
                       const char *key, strata_meta__key_found_fn fn, void *ud, int *rc)
{
    struct meta_rc_hit h;
    if (!strata_meta__rcache_get(m, set, hash, bucket, key, &h))
        return false;
    struct strata_meta__key_found f = {.rec = h.rec,
                                       .raw = h.raw,
                                       .rawlen = h.rawlen,
                                       .is_latest = true,
                                       .inline_read = cached_inline_read,
                                       .inline_hold = cached_inline_hold,
                                       .release = strata_meta__rcache_release,
                                       .priv = &h};
    memcpy(f.sk, h.sk, SORTKEY_LEN);
    *rc = fn(ud, &f);
    strata_meta__rcache_put(&h);
    return true;
}

/* Every drive read answered (no read error or corrupt record): what the
 * same drives would answer again while nothing is written. */
static bool all_answered(const struct qread *q, unsigned n)
{
    for (unsigned d = 0; d < n; d++)
        if (q->d[d].tried && q->d[d].rc != 0 && q->d[d].rc != STRATA_ENOTFOUND)
            return false;
    return true;
}

static int key_get(struct strata_meta *m, const char *bucket, const char *key,
                   const char *version_id, strata_meta__key_found_fn fn, void *ud, bool nowait)
{
    struct qread q;
    memset(&q, 0, sizeof(q));
    q.set = strata_meta__set_of(m, bucket, key);
    q.settle = true; /* no key lock held */
    q.nowait = nowait;
    int rc = strata_meta__qread_for_vid(&q, version_id);
    bool keep = rc == 0 && q.mode == Q_LATEST && m->rcache;
    uint32_t hash = 0, voters = 0;
    uint64_t gen = 0;
    if (keep) {
        hash = strata_meta__key_hash(bucket, key);
        if (get_cached(m, q.set, hash, bucket, key, fn, ud, &rc))
            return rc;
        /* Both read before the quorum read whose answer may be kept. */
        gen = strata_meta__rcache_gen(m, hash);
        voters = strata_meta__rcache_voters(m, q.set);
    }
    if (rc == 0)
        rc = strata_meta__qread_run(m, &q, bucket, key, false);
    if (rc == 0) {
        struct found_priv p = {m, &q, bucket, key, keep, NULL};
        struct strata_meta__key_found f;
        found_of(&f, &q, &p);
        rc = fn(ud, &f);
        const struct drec *w = &q.d[q.win];
        bool inl = (w->rec.flags & REC_F_INLINE) && w->rec.size > 0;
        /* An inline object is kept only with its bytes (a GET's read). */
        if (keep && (!inl || p.data) && all_answered(&q, m->sets[q.set].n) &&
            strata_meta__rcache_voters(m, q.set) == voters)
            strata_meta__rcache_fill(m, q.set, hash, gen, voters, bucket, key, w->sk, w->raw,
                                     w->rawlen, p.data, inl ? w->rec.size : 0);
        free(p.data);
    }
    strata_meta__qread_fini(&q);
    return rc;
}

int strata_meta__local_key_get(struct strata_meta *m, const char *bucket, const char *key,
                               const char *version_id, strata_meta__key_found_fn fn, void *ud)
{
    return key_get(m, bucket, key, version_id, fn, ud, false);
}

int strata_meta__local_key_get_nowait(struct strata_meta *m, const char *bucket, const char *key,
                                      const char *version_id, strata_meta__key_found_fn fn,
                                      void *ud)
{
    return key_get(m, bucket, key, version_id, fn, ud, true);
}

int strata_meta__obj_resolve(struct strata_meta *m, const char *bucket, const char *key,
                             const uint8_t *sk, struct strata_obj_info *info)
{
    struct qread q;
    memset(&q, 0, sizeof(q));
    q.set = strata_meta__set_of(m, bucket, key);
    q.mode = sk ? Q_SK : Q_LATEST;
    q.settle = true; /* no key lock held */
    if (sk)
        memcpy(q.sk, sk, SORTKEY_LEN);
    int rc = strata_meta__qread_run(m, &q, bucket, key, false);
    if (rc == 0) {
        struct found_priv p = {m, &q, bucket, key, false, NULL};
        struct strata_meta__key_found f;
        found_of(&f, &q, &p);
        rc = strata_meta__info_from_found(info, bucket, key, &f);
    }
    strata_meta__qread_fini(&q);
    return rc;
}
