/*
 * key.c - the local backend's key_txn and key_read (store.h): one key's
 * read-decide-write made atomic by the key's stripe lock, a quorum read of
 * the versions asked for, and a quorum batch per drive with its undo.
 *
 * What the edit names is turned into per-drive batches here: a new
 * version's record (an inline object's bytes split into one shard per
 * drive, each drive's record carrying its own), a tombstone over a replaced
 * or deleted version (each drive's undo restores its own copy), an in-place
 * rewrite keeping each drive's own inline shard, and a version's new part
 * table chunks.  The version-time index entries follow from the batches
 * (due.c's hook, in store.c).
 * Lock order: bucket_rw (hold_bucket) -> key stripe lock -> drive queues.
 * Threads: any caller thread.
 */
#include "local.h"
#include "qread.h"

#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strata/erasure.h"

#define OKEY_MAX (1 + STRATA_BUCKET_NAME_MAX + 1 + STRATA_KEY_MAX + 1 + SORTKEY_LEN)
#define TKEY_MAX (OKEY_MAX + 2)

/* The reads behind one view. */
struct key_reads {
    unsigned set;
    struct qread lq, nq, vq;
    bool l_used, n_used, v_used;
};

static void reads_fini(struct key_reads *r)
{
    if (r->l_used)
        strata_meta__qread_fini(&r->lq);
    if (r->n_used)
        strata_meta__qread_fini(&r->nq);
    if (r->v_used)
        strata_meta__qread_fini(&r->vq);
}

static void slot_of(struct strata_meta__key_slot *s, const struct qread *q, int rc)
{
    s->rc = rc;
    s->rec = NULL;
    if (rc == 0 && q->win >= 0) {
        memcpy(s->sk, q->d[q->win].sk, SORTKEY_LEN);
        s->rec = &q->d[q->win].rec;
    }
}

static void qread_init(struct qread *q, unsigned set, enum qmode mode, bool settle)
{
    memset(q, 0, sizeof(*q));
    q->set = set;
    q->mode = mode;
    q->win = -1;
    q->settle = settle;
}

/* Read the slots of t->want into v (clocks included; fresh: the random
 * half of a new sort key too, under the key lock; otherwise the reads wait
 * out a commit in flight, see qread.c).  A slot that could
 * not be read carries its error; only a malformed version id fails here. */
static int read_view(struct strata_meta *m, const struct strata_meta__key_txn *t,
                     struct key_reads *r, struct strata_meta__key_view *v, bool fresh)
{
    memset(v, 0, sizeof(*v));
    v->bucket = t->bucket;
    v->key = t->key;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    v->now_ns = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    v->lock_now_ms = m->lock_clock ? strata_meta_lock_now_ms(m) : v->now_ns / 1000000;
    /* Only a txn that reads the latest version may add one (its sort key
     * needs the random half); RAND_bytes costs as much as the decide. */
    if (fresh && (t->want & STRATA_META__KEY_LATEST) && RAND_bytes(v->rand, sizeof(v->rand)) != 1)
        memset(v->rand, 0, sizeof(v->rand)); /* uniqueness then rests on the ns clock */
    v->latest.rc = v->null.rc = v->version.rc = STRATA_ENOTFOUND;
    unsigned w = t->want;
    if (w & STRATA_META__KEY_VERSION) {
        qread_init(&r->vq, r->set, Q_LATEST, !fresh);
        r->v_used = true;
        int rc = strata_meta__qread_for_vid(&r->vq, t->version_id);
        if (rc)
            return rc;
        rc = strata_meta__qread_run(m, &r->vq, t->bucket, t->key, t->want_copies);
        slot_of(&v->version, &r->vq, rc);
    }
    if ((w & STRATA_META__KEY_NULL) && (w & STRATA_META__KEY_NULL_IS_LATEST)) {
        qread_init(&r->nq, r->set, Q_NULL, !fresh);
        r->n_used = true;
        int rc = strata_meta__qread_run(m, &r->nq, t->bucket, t->key, t->want_copies);
        slot_of(&v->null, &r->nq, rc);
        v->latest = v->null;
        return 0;
    }
    if (w & STRATA_META__KEY_LATEST) {
        qread_init(&r->lq, r->set, Q_LATEST, !fresh);
        r->l_used = true;
        int rc = strata_meta__qread_run(m, &r->lq, t->bucket, t->key, false);
        slot_of(&v->latest, &r->lq, rc);
    }
    if (w & STRATA_META__KEY_NULL) {
        qread_init(&r->nq, r->set, Q_NULL, !fresh);
        r->n_used = true;
        int rc = strata_meta__qread_run(m, &r->nq, t->bucket, t->key, t->want_copies);
        slot_of(&v->null, &r->nq, rc);
    }
    return 0;
}

static const struct qread *slot_read(const struct key_reads *r, enum strata_meta__key_which which)
{
    switch (which) {
    case STRATA_META__SLOT_NULL:
        return r->n_used && r->nq.win >= 0 ? &r->nq : NULL;
    case STRATA_META__SLOT_VERSION:
        return r->v_used && r->vq.win >= 0 ? &r->vq : NULL;
    default:
        return NULL;
    }
}

/* A put's or a remove's hints for the small-object log's accounting
 * (meta_slog_hint): what the reads under the key lock say each drive holds
 * at the keys the batches write, with those keys. */
struct key_hints {
    char tk[OKEY_MAX], nk[OKEY_MAX];
    bool fresh; /* the new version's sort key was made here: no drive has it */
    struct meta_slog_hints d[STRATA_DRIVES_MAX];
};

/* Drive d's record of old's version (as read), or NULL when d's read
 * found another version or none. */
static const struct drec *own_copy(const struct qread *old, unsigned d)
{
    const struct drec *od = &old->d[d], *ow = &old->d[old->win];
    return od->tried && od->rc == 0 && memcmp(od->sk, ow->sk, SORTKEY_LEN) == 0 ? od : NULL;
}

static void hint_add(struct meta_slog_hints *h, const char *k, size_t kl, const struct drec *had)
{
    if (h->n == sizeof(h->h) / sizeof(h->h[0]))
        return; /* the write reads the key */
    h->h[h->n++] = (struct meta_slog_hint){.k = k,
                                           .kl = kl,
                                           .logged = had && had->rec.logged,
                                           .seg = had ? had->rec.log_seg : 0,
                                           .off = had ? had->rec.log_off : 0,
                                           .len = had ? had->rec.shard_len : 0};
}

/* Drive d's batch and undo (undo NULL: the batches alone), created on
 * first use. */
static bool batch_of(rocksdb_writebatch_t **wbs, rocksdb_writebatch_t **undo, unsigned d)
{
    if (!wbs[d])
        wbs[d] = rocksdb_writebatch_create();
    if (undo && !undo[d])
        undo[d] = rocksdb_writebatch_create();
    return wbs[d] && (!undo || undo[d]);
}

/* A tombstone over old's version on every drive (at tomb_ns), each drive's
 * undo restoring its own copy. */
static void put_tomb(struct strata_meta *m, unsigned set, const char *bucket, const char *key,
                     const struct qread *old, int64_t tomb_ns, rocksdb_writebatch_t **wbs,
                     rocksdb_writebatch_t **undo, struct key_hints *kh)
{
    struct meta_set *ms = &m->sets[set];
    const struct drec *ow = &old->d[old->win];
    char ok[OKEY_MAX], tomb[TOMB_LEN];
    size_t okl = strata_meta__key_obj(ok, sizeof(ok), bucket, key, ow->sk);
    strata_meta__tomb_encode(tomb_ns, tomb);
    if (kh)
        memcpy(kh->tk, ok, okl);
    for (unsigned d = 0; d < ms->n; d++) {
        if (!ms->drives[d].db || !batch_of(wbs, undo, d))
            continue;
        rocksdb_writebatch_put(wbs[d], ok, okl, tomb, TOMB_LEN); /* see meta_internal.h */
        if (kh && own_copy(old, d))
            hint_add(&kh->d[d], kh->tk, okl, own_copy(old, d));
        if (!undo)
            continue;
        const struct drec *od = &old->d[d];
        if (od->tried && od->rc == 0 && memcmp(od->sk, ow->sk, SORTKEY_LEN) == 0)
            rocksdb_writebatch_put(undo[d], ok, okl, od->raw, od->rawlen);
        else
            rocksdb_writebatch_delete(undo[d], ok, okl); /* no tombstone of a failed write */
    }
}

/* The new version's record on every drive: an inline object's shard i on
 * drive i. */
static int put_version(struct strata_meta *m, unsigned set, const char *bucket, const char *key,
                       const struct strata_meta__key_edit *e, const struct qread *old,
                       rocksdb_writebatch_t **wbs, rocksdb_writebatch_t **undo,
                       struct key_hints *kh)
{
    struct meta_set *ms = &m->sets[set];
    struct meta_rec *r = e->rec;
    uint8_t *shards = NULL;
    uint32_t crcs[STRATA_DRIVES_MAX] = {0};
    bool per_drive = (r->flags & REC_F_INLINE) != 0;
    if (per_drive && e->inline_len) {
        int rc = strata_ec_inline_encode(ms->set, e->inline_data, e->inline_len, &shards,
                                         &r->shard_len, crcs);
        if (rc)
            return rc;
    } else if (per_drive) {
        /* An empty object has empty shards; nothing to encode. */
        static const uint8_t none[1];
        r->shard = none;
        r->shard_len = 0;
        per_drive = false;
    }
    char nk[OKEY_MAX];
    size_t nkl = strata_meta__key_obj(nk, sizeof(nk), bucket, key, e->sk);
    /* The key held before: the replaced copy when the sort key is the
     * same (a replica sent again), nothing when the sort key is new. */
    bool same = old && memcmp(old->d[old->win].sk, e->sk, SORTKEY_LEN) == 0;
    if (kh)
        memcpy(kh->nk, nk, nkl);
    char *v = NULL;
    size_t vl = 0;
    int rc = 0;
    for (unsigned d = 0; d < ms->n; d++) {
        if (!ms->drives[d].db)
            continue;
        if (!v || per_drive) {
            free(v);
            v = NULL;
            if (per_drive) {
                r->logged = false;
                r->shard = shards + (size_t)d * r->shard_len;
                r->shard_crc = crcs[d];
                /* In the drive's log when it has one; else in the record. */
                (void)strata_meta__slog_put(ms->drives[d].slog, r);
            }
            rc = strata_meta__rec_encode(r, &v, &vl);
            if (rc)
                break;
        }
        if (!batch_of(wbs, undo, d)) {
            rc = STRATA_ENOMEM;
            break;
        }
        rocksdb_writebatch_put(wbs[d], nk, nkl, v, vl);
        if (undo)
            rocksdb_writebatch_delete(undo[d], nk, nkl);
        if (kh && same && own_copy(old, d))
            hint_add(&kh->d[d], kh->nk, nkl, own_copy(old, d));
        else if (kh && !same && kh->fresh)
            hint_add(&kh->d[d], kh->nk, nkl, NULL);
    }
    free(v);
    if (shards) {
        r->shard = NULL;
        r->shard_len = 0;
        r->logged = false;
    }
    free(shards);
    return rc;
}

/*
 * Rewrite the version's record on every drive, keeping each drive's own
 * inline shard: a drive holding the agreed version gets its own record
 * re-encoded; a drive lacking it gets the winner's record when the data is
 * not inline (an inline shard is per drive: heal brings those).
 */
static int rewrite(struct strata_meta *m, unsigned set, const char *bucket, const char *key,
                   const struct qread *q, const struct meta_edit *e, rocksdb_writebatch_t **wbs,
                   rocksdb_writebatch_t **undo)
{
    struct meta_set *ms = &m->sets[set];
    const struct drec *w = &q->d[q->win];
    char k[OKEY_MAX];
    size_t kl = strata_meta__key_obj(k, sizeof(k), bucket, key, w->sk);
    int rc = 0;
    for (unsigned d = 0; d < ms->n && rc == 0; d++) {
        if (!ms->drives[d].db)
            continue;
        const struct drec *x = &q->d[d];
        /* A drive that missed an earlier rewrite still holds this version's
         * data (its own inline shard): rewrite its record too, or two such
         * drives would keep an inline version below the write quorum. */
        bool own = x->tried && x->rc == 0 && memcmp(x->sk, w->sk, SORTKEY_LEN) == 0 &&
                   strata_meta__rec_same_data(&x->rec, &w->rec);
        if ((!own && (w->rec.flags & REC_F_INLINE)) || x->dead)
            continue; /* never write a record over a tombstone */
        const struct drec *src = own ? x : w;
        struct meta_rec r;
        rc = strata_meta__rec_decode(src->raw, src->rawlen, true, &r);
        if (rc)
            break;
        struct strata_kv *hkv = NULL;
        if ((rc = strata_meta__rec_edit(&r, e, &hkv)) != 0) {
            strata_meta__rec_fini(&r);
            break;
        }
        char *v = NULL;
        size_t vl = 0;
        rc = strata_meta__rec_encode(&r, &v, &vl);
        strata_meta__rec_fini(&r);
        free(hkv);
        if (rc)
            break;
        if (!batch_of(wbs, undo, d)) {
            free(v);
            rc = STRATA_ENOMEM;
            break;
        }
        rocksdb_writebatch_put(wbs[d], k, kl, v, vl);
        if (x->tried && x->rc == 0 && memcmp(x->sk, w->sk, SORTKEY_LEN) == 0)
            rocksdb_writebatch_put(undo[d], k, kl, x->raw, x->rawlen);
        else
            rocksdb_writebatch_delete(undo[d], k, kl);
        free(v);
        /* The new 'T' chunks, and each drive's old ones for the undo. */
        char tk[TKEY_MAX];
        for (size_t c = 0; c < e->nchunks; c++) {
            size_t tkl = strata_meta__key_ptab(tk, sizeof(tk), bucket, key, w->sk, (unsigned)c);
            rocksdb_writebatch_put(wbs[d], tk, tkl, e->chunk_v[c], e->chunk_len[c]);
            char *ov = NULL;
            size_t ovl = 0;
            if (strata_meta__drive_get(m, set, d, tk, tkl, &ov, &ovl) == 0)
                rocksdb_writebatch_put(undo[d], tk, tkl, ov, ovl);
            else
                rocksdb_writebatch_delete(undo[d], tk, tkl);
            free(ov);
        }
    }
    return rc;
}

/* A new version written over old's (same sort key: a replica sent
 * again): each drive's undo puts back its own copy, after put_version's
 * delete of the key. */
static void undo_restore(struct strata_meta *m, unsigned set, const char *bucket, const char *key,
                         const struct qread *old, rocksdb_writebatch_t **wbs,
                         rocksdb_writebatch_t **undo)
{
    const struct drec *ow = &old->d[old->win];
    char k[OKEY_MAX];
    size_t kl = strata_meta__key_obj(k, sizeof(k), bucket, key, ow->sk);
    for (unsigned d = 0; d < m->sets[set].n; d++) {
        const struct drec *od = &old->d[d];
        if (wbs[d] && od->tried && od->rc == 0 && memcmp(od->sk, ow->sk, SORTKEY_LEN) == 0)
            rocksdb_writebatch_put(undo[d], k, kl, od->raw, od->rawlen);
    }
}

/* Build the batches of e over the reads r; extra (local callers only) adds
 * to every drive's batch.  undo NULL (a put or a remove without extra):
 * the batches alone, their undos left to undo_build. */
static int build(struct strata_meta *m, const char *bucket, const char *key,
                 const struct key_reads *r, const struct strata_meta__key_edit *e,
                 meta_extra_fn extra, void *extra_ud, rocksdb_writebatch_t **wbs,
                 rocksdb_writebatch_t **undo, struct key_hints *kh)
{
    const struct qread *old = slot_read(r, e->replace);
    int rc = 0;
    switch (e->op) {
    case STRATA_META__KEY_PUT:
        if (old && memcmp(old->d[old->win].sk, e->sk, SORTKEY_LEN) != 0)
            put_tomb(m, r->set, bucket, key, old, e->tomb_ns, wbs, undo, kh);
        rc = put_version(m, r->set, bucket, key, e, old, wbs, undo, kh);
        if (rc == 0 && undo && old && memcmp(old->d[old->win].sk, e->sk, SORTKEY_LEN) == 0)
            undo_restore(m, r->set, bucket, key, old, wbs, undo);
        break;
    case STRATA_META__KEY_REMOVE:
        if (old)
            put_tomb(m, r->set, bucket, key, old, e->tomb_ns, wbs, undo, kh);
        break;
    case STRATA_META__KEY_REWRITE: {
        const struct qread *q = slot_read(r, STRATA_META__SLOT_VERSION);
        rc = q ? rewrite(m, r->set, bucket, key, q, &e->rw, wbs, undo) : STRATA_EINTERNAL;
        break;
    }
    default:
        break;
    }
    if (rc == 0 && extra && undo)
        for (unsigned d = 0; d < m->sets[r->set].n; d++)
            if (wbs[d])
                extra(extra_ud, d, e->sk, wbs[d], undo[d]);
    return rc;
}

/* What undo_build needs to build a put's or a remove's undos again. */
struct undo_ctx {
    struct strata_meta *m;
    const char *bucket, *key;
    const struct key_reads *r;
    const struct strata_meta__key_edit *e;
};

/* The undos of a commit below its write quorum, built only then: the same
 * build over the same reads (the replaced records stay in r until the
 * txn ends), its batches thrown away.  A build that fails here leaves the
 * undos it made, like a rollback cut short (heal settles the rest). */
static void undo_build(void *ud, rocksdb_writebatch_t **undo)
{
    const struct undo_ctx *c = ud;
    rocksdb_writebatch_t *scratch[STRATA_DRIVES_MAX] = {0}, *none[STRATA_DRIVES_MAX] = {0};
    (void)build(c->m, c->bucket, c->key, c->r, c->e, NULL, NULL, scratch, undo, NULL);
    strata_meta__batches_free(scratch, none);
}

static int audit_append(struct strata_meta *m, const char *bucket, const char *key,
                        const struct strata_meta__key_audit *a)
{
    struct strata_audit_event ev = {
        a->user ? a->user : "-", bucket, key, a->version_id, a->action, a->outcome, a->detail};
    return strata_meta_audit_append(m, &ev);
}

/* Decide on the view of r and apply; the caller holds the key lock. */
static int decide_apply(struct strata_meta *m, const struct strata_meta__key_txn *t,
                        struct key_reads *r, meta_extra_fn extra, void *extra_ud,
                        struct strata_meta__key_edit *e)
{
    struct strata_meta__key_view v;
    memset(e, 0, sizeof(*e));
    int rc = read_view(m, t, r, &v, true);
    if (rc)
        return rc;
    rc = t->decide(t->ud, &v, e);
    if (e->audit.any) {
        /* Once: a refusal's entry after it (its failure changes nothing),
         * an allowed lock decision's before the apply, which it gates. */
        int arc = audit_append(m, t->bucket, t->key, &e->audit);
        if (rc == 0)
            rc = arc;
    }
    if (rc || e->op == STRATA_META__KEY_NONE)
        return rc;
    rocksdb_writebatch_t *wbs[STRATA_DRIVES_MAX] = {0}, *undo[STRATA_DRIVES_MAX] = {0};
    /* A put's or a remove's undos wait for a rollback (a rewrite's undos read
     * the drives' current part table chunks, which the commit changes). */
    bool lazy = !extra && (e->op == STRATA_META__KEY_PUT || e->op == STRATA_META__KEY_REMOVE);
    struct key_hints kh;
    /* Made from this view (the random half is the view's, zero where the
     * txn drew none: an unversioned key's, unique by its ns time, which
     * new_mtime keeps past the latest).  A wrong "absent" hint could only
     * keep bytes counted, never free live ones. */
    kh.fresh = memcmp(e->sk + 8, v.rand, sizeof(v.rand)) == 0;
    for (unsigned d = 0; d < STRATA_DRIVES_MAX; d++)
        kh.d[d].n = 0;
    rc = build(m, t->bucket, t->key, r, e, extra, extra_ud, wbs, lazy ? NULL : undo, &kh);
    if (rc == 0) {
        /* Odd while the drives apply (and maybe undo) the batches: a
         * lock-free read meanwhile may see them half applied (qread.c). */
        _Atomic uint64_t *wseq = strata_meta__key_wseq(m, t->bucket, t->key);
        atomic_fetch_add(wseq, 1);
        struct undo_ctx uc = {m, t->bucket, t->key, r, e};
        rc = strata_meta__set_commit_hinted(m, r->set, wbs, kh.d, undo, lazy ? undo_build : NULL,
                                            &uc);
        atomic_fetch_add(wseq, 1);
    }
    strata_meta__batches_free(wbs, undo);
    return rc;
}

int strata_meta__local_key_txn(struct strata_meta *m, const struct strata_meta__key_txn *t)
{
    pthread_rwlock_t *bh = NULL;
    if (t->hold_bucket) {
        int rc = strata_meta__bucket_hold(m, t->bucket, t->incarnation, &bh);
        if (rc)
            return rc;
    }
    struct key_reads r;
    r.set = strata_meta__set_of(m, t->bucket, t->key);
    r.l_used = r.n_used = r.v_used = false;
    pthread_mutex_t *lk = strata_meta__key_lock(m, t->bucket, t->key);
    pthread_mutex_lock(lk);
    struct strata_meta__key_edit e;
    int rc = decide_apply(m, t, &r, NULL, NULL, &e);
    pthread_mutex_unlock(lk);
    strata_meta__bucket_release(bh);
    reads_fini(&r);
    return rc;
}

int strata_meta__local_key_read(struct strata_meta *m, const struct strata_meta__key_txn *t)
{
    struct key_reads r;
    r.set = strata_meta__set_of(m, t->bucket, t->key);
    r.l_used = r.n_used = r.v_used = false;
    struct strata_meta__key_view v;
    int rc = read_view(m, t, &r, &v, false);
    if (rc == 0) {
        struct strata_meta__key_edit e;
        memset(&e, 0, sizeof(e));
        rc = t->decide(t->ud, &v, &e);
    }
    reads_fini(&r);
    return rc;
}

/* ---- the multipart complete's apply (local/mpu.c) ----
 * Under the key lock mpu.c took for the upload's reads: decide on the
 * view and apply, with the upload and part records added per drive through
 * extra.  The edit is returned (its sort key, what it reclaims). */
int strata_meta__local_key_apply(struct strata_meta *m, const struct strata_meta__key_txn *t,
                                 unsigned set, meta_extra_fn extra, void *ud,
                                 struct strata_meta__key_edit *e)
{
    struct key_reads rd;
    rd.set = set;
    rd.l_used = rd.n_used = rd.v_used = false;
    int rc = decide_apply(m, t, &rd, extra, ud, e);
    reads_fini(&rd);
    return rc;
}
