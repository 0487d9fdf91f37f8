/*
 * mpu.c - the local backend's multipart records (store.h, "multipart
 * uploads"): upload records ('U') and part records ('P') in the set of the
 * upload's bucket/key, written like version records: one synced batch per
 * drive, success on the write quorum, undone below it.
 *
 * - Part commits, complete and abort of one key run under that key's
 *   stripe lock (the same lock as put and delete), so a part cannot be
 *   committed into an upload that complete or abort has already removed,
 *   and complete sees a stable set of parts.
 * - Complete is key.c's decide-and-apply of the new version, with this
 *   file's per-drive additions: the part table chunks, the upload record
 *   replaced by the completed-upload record, every part record removed; one
 *   batch per drive.
 * - Newest state wins per upload key: absent < live < dead (an abort's
 *   tombstone, a complete's completed-upload record; ids are never
 *   reused), so a drive that missed an abort or complete cannot bring the
 *   upload back (upload_state).
 * - Data that a commit stops referring to is returned to the caller
 *   (mpu.c), which removes it after the apply.
 * Threads: any caller thread.  Lock order: bucket_rw -> key stripe lock ->
 * drive queues.
 */
#include "local.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UKEY_MAX (1 + STRATA_BUCKET_NAME_MAX + 1 + STRATA_KEY_MAX + 1 + UPLOAD_LEN + 8)
#define PKEY_LEN (1 + UPLOAD_LEN + 4)

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* States of an upload key (upload_state). */
enum { US_LIVE = 1, US_DONE = 2 };

/*
 * The state of upload key uk, newest state winning (absent < live <
 * aborted or completed; upload ids are never reused): 0 with *state
 * US_LIVE (q->v[q->win] is the upload record) or US_DONE (q->v[q->win] is
 * the completed-upload record); STRATA_ENOTFOUND when it was aborted or
 * never existed; STRATA_EQUORUM.  The read quorum of identical values (or
 * of absences) decides at once.  Without it every readable drive has been
 * read: a completed-upload record that may have been committed (held by
 * Wq - (N - responding) drives) is the answer, else a tombstone or a
 * completed-upload record on any drive means the upload is over (a drive
 * that missed the abort or complete cannot bring it back), else
 * STRATA_EQUORUM.  Caller qraw_fini's q.
 */
static int upload_state(struct strata_meta *m, unsigned set, const char *uk, size_t ukl,
                        bool read_all, struct meta_qraw *q, int *state)
{
    *state = 0;
    int rc = strata_meta__qraw_get(m, set, uk, ukl, read_all, q);
    if (rc == 0) {
        const char *v = q->v[q->win];
        size_t vl = q->vl[q->win];
        if (strata_meta__is_tomb(v, vl))
            return STRATA_ENOTFOUND;
        *state = strata_meta__is_done(v, vl) ? US_DONE : US_LIVE;
        return 0;
    }
    if (rc != STRATA_EQUORUM)
        return rc;
    struct meta_set *ms = &m->sets[set];
    unsigned wq = strata_set_write_quorum(ms->set), resp = 0, best_n = 0;
    int best = -1;
    bool dead = false;
    for (unsigned d = 0; d < ms->n; d++) {
        if (!q->tried[d] || (q->rc[d] != 0 && q->rc[d] != STRATA_ENOTFOUND))
            continue;
        resp++;
        if (q->rc[d] != 0 || !strata_meta__is_dead(q->v[d], q->vl[d]))
            continue;
        dead = true;
        if (!strata_meta__is_done(q->v[d], q->vl[d]))
            continue;
        unsigned same = 0;
        for (unsigned j = 0; j < ms->n; j++)
            same += q->tried[j] && q->rc[j] == 0 && q->vl[j] == q->vl[d] &&
                    memcmp(q->v[j], q->v[d], q->vl[d]) == 0;
        if (same > best_n) {
            best_n = same;
            best = (int)d;
        }
    }
    if (resp < strata_set_read_quorum(ms->set))
        return STRATA_EQUORUM; /* too few drives answer to decide anything */
    unsigned need = wq > ms->n - resp ? wq - (ms->n - resp) : 1;
    if (best >= 0 && best_n >= need) {
        q->win = best;
        *state = US_DONE;
        return 0;
    }
    return dead ? STRATA_ENOTFOUND : STRATA_EQUORUM;
}

int strata_meta__upload_read(struct strata_meta *m, unsigned set, const char *bucket,
                             const char *key, const uint8_t upload[UPLOAD_LEN],
                             struct meta_upload *u)
{
    memset(u, 0, sizeof(*u));
    char k[UKEY_MAX];
    size_t kl = strata_meta__key_upload(k, sizeof(k), bucket, key, upload);
    struct meta_qraw q;
    int state;
    int rc = upload_state(m, set, k, kl, false, &q, &state);
    if (rc == 0 && state != US_LIVE)
        rc = STRATA_ENOTFOUND; /* completed */
    if (rc == 0)
        rc = strata_meta__upload_decode(q.v[q.win], q.vl[q.win], u);
    strata_meta__qraw_fini(&q);
    return rc;
}

/* ---- part scans --------------------------------------------------------- */

struct pent {
    unsigned no;
    char *v;
    size_t vl;
};

/* Every drive's part records of one upload, from part number 'from' on. */
struct pscan {
    unsigned n; /* drives of the set */
    struct pent *e[STRATA_DRIVES_MAX];
    size_t ne[STRATA_DRIVES_MAX];
    bool voter[STRATA_DRIVES_MAX];
    bool ok[STRATA_DRIVES_MAX]; /* scanned */
};

static void pscan_fini(struct pscan *ps)
{
    for (unsigned d = 0; d < STRATA_DRIVES_MAX; d++) {
        for (size_t i = 0; i < ps->ne[d]; i++)
            free(ps->e[d][i].v);
        free(ps->e[d]);
        ps->e[d] = NULL;
        ps->ne[d] = 0;
    }
}

static int pscan_run(struct strata_meta *m, unsigned set, const uint8_t up[UPLOAD_LEN],
                     unsigned from, struct pscan *ps)
{
    memset(ps, 0, sizeof(*ps));
    struct meta_set *ms = &m->sets[set];
    ps->n = ms->n;
    char lo[PKEY_LEN], hi[PKEY_LEN];
    strata_meta__key_part(lo, up, from);
    strata_meta__key_part(hi, up, META_PARTS_MAX + 1);
    for (unsigned d = 0; d < ms->n; d++) {
        if (!ms->drives[d].db)
            continue;
        ps->voter[d] = strata_meta__drive_readable(m, set, d);
        rocksdb_readoptions_t *ro;
        rocksdb_iterator_t *it = strata_meta__iter_new(m, set, d, &ro, hi, PKEY_LEN, true);
        if (!it)
            continue;
        size_t cap = 0;
        int rc = 0;
        for (rocksdb_iter_seek(it, lo, PKEY_LEN); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
            size_t kl, vl;
            const char *k = rocksdb_iter_key(it, &kl);
            const char *v = rocksdb_iter_value(it, &vl);
            if (kl != PKEY_LEN)
                continue;
            if (ps->ne[d] == cap) {
                cap = cap ? 2 * cap : 64;
                struct pent *ne = realloc(ps->e[d], cap * sizeof(*ne));
                if (!ne) {
                    rc = STRATA_ENOMEM;
                    break;
                }
                ps->e[d] = ne;
            }
            struct pent *pe = &ps->e[d][ps->ne[d]];
            const uint8_t *pk = (const uint8_t *)k + 1 + UPLOAD_LEN;
            pe->no = (unsigned)pk[0] << 24 | (unsigned)pk[1] << 16 | (unsigned)pk[2] << 8 | pk[3];
            pe->v = malloc(vl ? vl : 1);
            if (!pe->v) {
                rc = STRATA_ENOMEM;
                break;
            }
            memcpy(pe->v, v, vl);
            pe->vl = vl;
            ps->ne[d]++;
        }
        char *err = NULL;
        rocksdb_iter_get_error(it, &err);
        rocksdb_iter_destroy(it);
        rocksdb_readoptions_destroy(ro);
        if (err) {
            free(err);
            ps->voter[d] = false; /* a drive we could not read does not vote */
        } else if (rc) {
            pscan_fini(ps);
            return rc;
        }
        ps->ok[d] = !err;
    }
    return 0;
}

/* Walk the union of part numbers; for each, the committed value (or NULL
 * when no value has the read quorum among voters) and the per-drive entries. */
typedef int (*pwalk_fn)(void *ud, unsigned no, const struct pent *won,
                        const struct pent *const *per_drive);

static int pscan_walk(struct strata_meta *m, unsigned set, struct pscan *ps, pwalk_fn fn,
                      void *ud)
{
    unsigned rq = strata_set_read_quorum(m->sets[set].set);
    size_t idx[STRATA_DRIVES_MAX] = {0};
    for (;;) {
        unsigned no = UINT32_MAX;
        for (unsigned d = 0; d < ps->n; d++)
            if (idx[d] < ps->ne[d] && ps->e[d][idx[d]].no < no)
                no = ps->e[d][idx[d]].no;
        if (no == UINT32_MAX)
            return 0;
        const struct pent *pd[STRATA_DRIVES_MAX] = {0};
        for (unsigned d = 0; d < ps->n; d++)
            if (idx[d] < ps->ne[d] && ps->e[d][idx[d]].no == no)
                pd[d] = &ps->e[d][idx[d]++];
        const struct pent *won = NULL;
        for (unsigned d = 0; d < ps->n && !won; d++) {
            if (!pd[d] || !ps->voter[d])
                continue;
            unsigned same = 0;
            for (unsigned j = 0; j < ps->n; j++)
                same += pd[j] && ps->voter[j] && pd[j]->vl == pd[d]->vl &&
                        memcmp(pd[j]->v, pd[d]->v, pd[d]->vl) == 0;
            if (same >= rq)
                won = pd[d];
        }
        int rc = fn(ud, no, won, pd);
        if (rc)
            return rc;
    }
}

/* ---- part commit -------------------------------------------------------- */

int strata_meta__local_part_put(struct strata_meta *m, const char *bucket, const char *key,
                                const uint8_t *upload, const struct meta_part *part,
                                struct strata_meta__data_refs *old_data)
{
    memset(old_data, 0, sizeof(*old_data));
    unsigned set = strata_meta__set_of(m, bucket, key);
    struct meta_set *ms = &m->sets[set];
    char uk[UKEY_MAX], pk[PKEY_LEN];
    size_t ukl = strata_meta__key_upload(uk, sizeof(uk), bucket, key, upload);
    strata_meta__key_part(pk, upload, part->number);
    char *v = NULL;
    size_t vl = 0;
    int rc = strata_meta__part_encode(part, bucket, key, &v, &vl);
    if (rc)
        return rc;
    rocksdb_writebatch_t *wbs[STRATA_DRIVES_MAX] = {0}, *undo[STRATA_DRIVES_MAX] = {0};
    struct meta_qraw uq, oq;
    memset(&oq, 0, sizeof(oq));
    pthread_mutex_t *lk = strata_meta__key_lock(m, bucket, key);
    pthread_mutex_lock(lk);
    int ust;
    rc = upload_state(m, set, uk, ukl, false, &uq, &ust);
    strata_meta__qraw_fini(&uq);
    if (rc == 0 && ust != US_LIVE)
        rc = STRATA_ENOTFOUND; /* completed meanwhile */
    if (rc == 0) {
        int orc = strata_meta__qraw_get(m, set, pk, PKEY_LEN, true, &oq);
        if (orc != 0 && orc != STRATA_ENOTFOUND && orc != STRATA_EQUORUM)
            rc = orc;
    }
    if (rc == 0) {
        for (unsigned d = 0; d < ms->n; d++) {
            if (!ms->drives[d].db)
                continue;
            wbs[d] = rocksdb_writebatch_create();
            undo[d] = rocksdb_writebatch_create();
            rocksdb_writebatch_put(wbs[d], pk, PKEY_LEN, v, vl);
            strata_meta__wb_write(undo[d], pk, PKEY_LEN, oq.tried[d] && oq.rc[d] == 0, oq.v[d],
                                  oq.vl[d]);
        }
        rc = strata_meta__set_commit(m, set, wbs, undo);
    }
    pthread_mutex_unlock(lk);
    strata_meta__batches_free(wbs, undo);
    free(v);
    if (rc == 0) {
        /* The replaced part's data (every distinct old copy), after the commit. */
        for (unsigned d = 0; d < ms->n; d++) {
            struct meta_part old;
            if (!oq.tried[d] || oq.rc[d] != 0 ||
                strata_meta__part_decode(oq.v[d], oq.vl[d], &old, NULL, NULL) != 0 ||
                !old.has_data_id || memcmp(old.data_id, part->data_id, STRATA_DATA_ID_LEN) == 0)
                continue;
            bool seen = false;
            for (unsigned j = 0; j < d && !seen; j++)
                seen = oq.tried[j] && oq.rc[j] == 0 && oq.vl[j] == oq.vl[d] &&
                       memcmp(oq.v[j], oq.v[d], oq.vl[d]) == 0;
            if (!seen && strata_meta__data_refs_add(old_data, old.tier, old.data_id))
                break; /* out of memory: the orphan reclaim finds it */
        }
    }
    strata_meta__qraw_fini(&oq);
    return rc;
}

struct cstate {
    struct meta_part *byno; /* committed parts, indexed by number */
    bool *have;
    /* Per drive: its old part records (for undo) and the keys to delete. */
    struct pscan *ps;
    const uint8_t *up;
    /* Set by collect: the union of part numbers seen. */
    unsigned *seen;
    size_t nseen;
};

static int collect_cb(void *ud, unsigned no, const struct pent *won,
                      const struct pent *const *per_drive)
{
    (void)per_drive;
    struct cstate *cs = ud;
    cs->seen[cs->nseen++] = no;
    if (won && strata_meta__part_decode(won->v, won->vl, &cs->byno[no], NULL, NULL) == 0) {
        cs->byno[no].number = no;
        cs->have[no] = true;
    }
    return 0;
}

struct cextra {
    const char *bucket, *key;
    const uint8_t *up;
    struct meta_qraw *uq;  /* the upload record on every drive */
    struct pscan *ps;
    char *const *tv;       /* encoded 'T' chunks */
    const size_t *tvl;
    size_t nchunks;
    /* What replaces the upload record: an abort's tombstone, or a
     * complete's completed-upload record (from its decide). */
    const char *uval;
    size_t uvl;
};

static void complete_extra(void *ud, unsigned d, const uint8_t *sk, rocksdb_writebatch_t *wb,
                           rocksdb_writebatch_t *undo)
{
    struct cextra *cx = ud;
    char k[UKEY_MAX];
    for (size_t c = 0; c < cx->nchunks; c++) {
        size_t kl = strata_meta__key_ptab(k, sizeof(k), cx->bucket, cx->key, sk, (unsigned)c);
        rocksdb_writebatch_put(wb, k, kl, cx->tv[c], cx->tvl[c]);
        rocksdb_writebatch_delete(undo, k, kl);
    }
    /* The upload record becomes its dead state (a tombstone, or the
     * completed-upload record), never just removed: a drive that missed
     * this keeps the live record, which the dead state outvotes. */
    size_t ukl = strata_meta__key_upload(k, sizeof(k), cx->bucket, cx->key, cx->up);
    rocksdb_writebatch_put(wb, k, ukl, cx->uval, cx->uvl);
    strata_meta__wb_write(undo, k, ukl, cx->uq->tried[d] && cx->uq->rc[d] == 0, cx->uq->v[d],
                          cx->uq->vl[d]);
    /* Every part record of the upload on any drive goes; each drive's own
     * copies come back on undo. */
    for (unsigned j = 0; j < cx->ps->n; j++) {
        for (size_t i = 0; i < cx->ps->ne[j]; i++) {
            char pk[PKEY_LEN];
            strata_meta__key_part(pk, cx->up, cx->ps->e[j][i].no);
            rocksdb_writebatch_delete(wb, pk, PKEY_LEN);
            if (j == d)
                rocksdb_writebatch_put(undo, pk, PKEY_LEN, cx->ps->e[j][i].v,
                                       cx->ps->e[j][i].vl);
        }
    }
}

/* Data of every part record in ps whose number is not kept[] (NULL: all),
 * each distinct copy once, into refs. */
static void parts_data(struct pscan *ps, const bool *kept, const struct meta_part *byno,
                       struct strata_meta__data_refs *refs)
{
    char bucket[STRATA_BUCKET_NAME_MAX + 1], key[STRATA_KEY_MAX + 1];
    for (unsigned d = 0; d < ps->n; d++) {
        for (size_t i = 0; i < ps->ne[d]; i++) {
            const struct pent *pe = &ps->e[d][i];
            struct meta_part p;
            if (strata_meta__part_decode(pe->v, pe->vl, &p, bucket, key) != 0 || !p.has_data_id)
                continue;
            if (kept && pe->no <= META_PARTS_MAX && kept[pe->no] &&
                memcmp(byno[pe->no].data_id, p.data_id, STRATA_DATA_ID_LEN) == 0)
                continue;
            /* Skip a copy an earlier drive already had (same bytes). */
            bool dup = false;
            for (unsigned j = 0; j < d && !dup; j++)
                for (size_t x = 0; x < ps->ne[j] && !dup; x++)
                    dup = ps->e[j][x].no == pe->no && ps->e[j][x].vl == pe->vl &&
                          memcmp(ps->e[j][x].v, pe->v, pe->vl) == 0;
            if (!dup && strata_meta__data_refs_add(refs, p.tier, p.data_id))
                return; /* out of memory: the orphan reclaim finds the rest */
        }
    }
}

/* ---- abort -------------------------------------------------------------- */

int strata_meta__local_mpu_abort(struct strata_meta *m, const char *bucket, const char *key,
                                const uint8_t *up, struct strata_meta__data_refs *unref)
{
    memset(unref, 0, sizeof(*unref));
    unsigned set = strata_meta__set_of(m, bucket, key);
    struct meta_set *ms = &m->sets[set];
    struct meta_qraw uq;
    struct pscan ps;
    memset(&ps, 0, sizeof(ps));
    rocksdb_writebatch_t *wbs[STRATA_DRIVES_MAX] = {0}, *undo[STRATA_DRIVES_MAX] = {0};
    char uk[UKEY_MAX];
    size_t ukl = strata_meta__key_upload(uk, sizeof(uk), bucket, key, up);
    pthread_mutex_t *lk = strata_meta__key_lock(m, bucket, key);
    pthread_mutex_lock(lk);
    int ust;
    int rc = upload_state(m, set, uk, ukl, true, &uq, &ust);
    if (rc == 0 && ust != US_LIVE)
        rc = STRATA_ENOTFOUND; /* completed: AWS answers NoSuchUpload */
    if (rc == 0)
        rc = pscan_run(m, set, up, 1, &ps);
    if (rc == 0) {
        /* A tombstone over the upload record; dropped at once when every
         * drive takes it (store.c), else by heal once every drive has it. */
        char tomb[TOMB_LEN];
        strata_meta__tomb_encode(now_ns(), tomb);
        struct cextra cx = {.bucket = bucket,
                            .key = key,
                            .up = up,
                            .uq = &uq,
                            .ps = &ps,
                            .uval = tomb,
                            .uvl = TOMB_LEN};
        for (unsigned d = 0; d < ms->n; d++) {
            if (!ms->drives[d].db)
                continue;
            wbs[d] = rocksdb_writebatch_create();
            undo[d] = rocksdb_writebatch_create();
            complete_extra(&cx, d, NULL, wbs[d], undo[d]);
        }
        rc = strata_meta__set_commit(m, set, wbs, undo);
    }
    pthread_mutex_unlock(lk);
    strata_meta__batches_free(wbs, undo);
    if (rc == 0)
        parts_data(&ps, NULL, NULL, unref);
    pscan_fini(&ps);
    strata_meta__qraw_fini(&uq);
    return rc;
}

/* ---- create, read ------------------------------------------------------- */

int strata_meta__local_upload_create(struct strata_meta *m, const char *bucket, const char *key,
                                     uint64_t inc, const uint8_t *up, const void *v, size_t vl)
{
    unsigned set = strata_meta__set_of(m, bucket, key);
    char k[UKEY_MAX];
    size_t kl = strata_meta__key_upload(k, sizeof(k), bucket, key, up);
    rocksdb_writebatch_t *wbs[STRATA_DRIVES_MAX] = {0}, *undo[STRATA_DRIVES_MAX] = {0};
    for (unsigned d = 0; d < m->sets[set].n; d++) {
        if (!m->sets[set].drives[d].db)
            continue;
        wbs[d] = rocksdb_writebatch_create();
        undo[d] = rocksdb_writebatch_create();
        rocksdb_writebatch_put(wbs[d], k, kl, v, vl);
        rocksdb_writebatch_delete(undo[d], k, kl);
    }
    /* Not into a bucket deleted (or re-created) since the caller's check.
     * Under the key lock, as every other write of the upload: heal, which
     * takes it too, never sees a create half applied (and would take it
     * for a leftover that reached too few drives). */
    pthread_rwlock_t *bh = NULL;
    int rc = strata_meta__bucket_hold(m, bucket, inc, &bh);
    if (rc == 0) {
        pthread_mutex_t *lk = strata_meta__key_lock(m, bucket, key);
        pthread_mutex_lock(lk);
        rc = strata_meta__set_commit(m, set, wbs, undo);
        pthread_mutex_unlock(lk);
    }
    strata_meta__bucket_release(bh);
    strata_meta__batches_free(wbs, undo);
    return rc;
}

int strata_meta__local_upload_get(struct strata_meta *m, const char *bucket, const char *key,
                                  const uint8_t *up, struct meta_upload *u)
{
    return strata_meta__upload_read(m, strata_meta__set_of(m, bucket, key), bucket, key, up, u);
}

struct pread {
    int (*cb)(void *ud, const struct meta_part *p);
    void *ud;
};

static int pread_cb(void *ud, unsigned no, const struct pent *won,
                    const struct pent *const *per_drive)
{
    (void)per_drive;
    struct pread *x = ud;
    struct meta_part p;
    if (!won || strata_meta__part_decode(won->v, won->vl, &p, NULL, NULL) != 0)
        return 0; /* not committed (or unreadable): not listed */
    p.number = no;
    return x->cb(x->ud, &p);
}

int strata_meta__local_parts_read(struct strata_meta *m, const char *bucket, const char *key,
                                  const uint8_t *up, unsigned from,
                                  int (*cb)(void *ud, const struct meta_part *p), void *ud)
{
    (void)bucket;
    (void)key;
    unsigned set = strata_meta__set_of(m, bucket, key);
    struct pscan ps;
    int rc = pscan_run(m, set, up, from, &ps);
    if (rc)
        return rc;
    struct pread x = {cb, ud};
    rc = pscan_walk(m, set, &ps, pread_cb, &x);
    pscan_fini(&ps);
    return rc;
}

/* ---- complete ----------------------------------------------------------- */

/* The complete's txn around key.c's decide: the upload and its parts read
 * under the key lock, the mpu decide's extras kept for complete_extra. */
struct lcomplete {
    const struct strata_meta__mpu_txn *t;
    struct meta_qraw *uq;
    int ust;
    const struct meta_part *parts;
    size_t nparts;
    struct cextra *cx;
    struct strata_meta__mpu_edit me;
};

static int lcomplete_decide(void *ud, const struct strata_meta__key_view *v,
                            struct strata_meta__key_edit *e)
{
    struct lcomplete *c = ud;
    int rc = strata_meta__mpu_decide(c->t, v, c->ust == US_DONE, c->uq->v[c->uq->win],
                                     c->uq->vl[c->uq->win], c->parts, c->nparts, &c->me, e);
    if (rc == 0 && e->op != STRATA_META__KEY_NONE) {
        c->cx->tv = c->me.chunk_v;
        c->cx->tvl = c->me.chunk_len;
        c->cx->nchunks = c->me.nchunks;
        c->cx->uval = c->me.done_v;
        c->cx->uvl = c->me.done_vl;
    }
    return rc;
}

int strata_meta__local_mpu_complete(struct strata_meta *m, const struct strata_meta__mpu_txn *t,
                                    struct strata_meta__data_refs *unref)
{
    memset(unref, 0, sizeof(*unref));
    unsigned set = strata_meta__set_of(m, t->bucket, t->key);
    struct cstate cs;
    memset(&cs, 0, sizeof(cs));
    cs.byno = calloc(META_PARTS_MAX + 1, sizeof(*cs.byno));
    cs.have = calloc(META_PARTS_MAX + 1, sizeof(*cs.have));
    cs.seen = calloc(META_PARTS_MAX + 1, sizeof(*cs.seen));
    struct meta_part *parts = calloc(META_PARTS_MAX + 1, sizeof(*parts));
    struct pscan ps;
    memset(&ps, 0, sizeof(ps));
    struct meta_qraw uq;
    memset(&uq, 0, sizeof(uq));
    int rc = cs.byno && cs.have && cs.seen && parts ? 0 : STRATA_ENOMEM;
    /* Held until the version is committed: the bucket cannot go (or be
     * replaced by a namesake) under the complete. */
    pthread_rwlock_t *bh = NULL;
    if (rc == 0)
        rc = strata_meta__bucket_hold(m, t->bucket, t->incarnation, &bh);
    if (rc) {
        free(cs.byno);
        free(cs.have);
        free(cs.seen);
        free(parts);
        return rc;
    }
    pthread_mutex_t *lk = strata_meta__key_lock(m, t->bucket, t->key);
    pthread_mutex_lock(lk);
    char uk[UKEY_MAX];
    size_t ukl = strata_meta__key_upload(uk, sizeof(uk), t->bucket, t->key, t->upload);
    struct lcomplete c = {.t = t, .uq = &uq};
    rc = upload_state(m, set, uk, ukl, true, &uq, &c.ust);
    if (rc == 0 && c.ust == US_LIVE)
        rc = pscan_run(m, set, t->upload, 1, &ps);
    if (rc == 0 && c.ust == US_LIVE)
        rc = pscan_walk(m, set, &ps, collect_cb, &cs);
    for (size_t i = 0; rc == 0 && i < cs.nseen; i++)
        if (cs.have[cs.seen[i]])
            parts[c.nparts++] = cs.byno[cs.seen[i]];
    c.parts = parts;
    struct cextra cx = {.bucket = t->bucket, .key = t->key, .up = t->upload, .uq = &uq, .ps = &ps};
    c.cx = &cx;
    struct strata_meta__key_edit e;
    memset(&e, 0, sizeof(e));
    if (rc == 0) {
        struct strata_meta__key_txn kt = {
            .bucket = t->bucket,
            .key = t->key,
            .want = t->want,
            .want_copies = true,
            .version_id = t->version_id,
            .decide = lcomplete_decide,
            .ud = &c,
        };
        rc = strata_meta__local_key_apply(m, &kt, set, complete_extra, &cx, &e);
    }
    pthread_mutex_unlock(lk);
    strata_meta__bucket_release(bh);
    /* Keep the listed parts' data; everything else of the upload goes. */
    if (rc == 0 && e.op != STRATA_META__KEY_NONE)
        parts_data(&ps, c.me.kept, cs.byno, unref);
    strata_meta__qraw_fini(&uq);
    pscan_fini(&ps);
    free(cs.byno);
    free(cs.have);
    free(cs.seen);
    free(parts);
    return rc;
}
