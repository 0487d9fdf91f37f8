/*
 * mpu.c - multipart uploads: create, part records, complete, abort, and the
 * two listings; plus the part table ('T' records) of completed objects.
 *
 * Invariants:
 * - The upload record ('U') and part records ('P') live in the set of the
 *   upload's bucket/key and are written like version records: one synced
 *   batch per drive, success on the write quorum, undone below it.
 * - Part commits, complete and abort of one key run under that key's stripe
 *   lock (the same lock as put and delete), so a part cannot be committed
 *   into an upload that complete or abort has already removed, and complete
 *   sees a stable set of parts.
 * - Complete never copies data: the new version's part table refers to the
 *   parts' data ids.  The version record, its part table, the upload
 *   record's replacement by the completed-upload record and the removal of
 *   the part records are one batch per drive.  Data of parts not used (and
 *   of replaced versions) is deleted only after that commit.
 * - Newest state wins per upload key: absent < live < dead (an abort's
 *   tombstone, a complete's completed-upload record; ids are never
 *   reused), so a drive that missed an abort or complete cannot bring the
 *   upload back (upload_state).  The completed-upload record answers a
 *   repeated complete with the same part list for m->mpu_retry_ns.
 * - A completed object's part data is deleted before its 'T' records (so a
 *   crash leaves at worst orphan 'T' records, never a table naming deleted
 *   data of a live version: the version record is gone first).
 * Threads: any caller thread.  Lock order: key stripe lock -> drive queues.
 */
#include "meta_internal.h"
#include "store.h"
#include "strata/hex.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
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

static bool names_ok(const char *bucket, const char *key)
{
    size_t bl = bucket ? strlen(bucket) : 0, kl = key ? strlen(key) : 0;
    return bl > 0 && bl <= STRATA_BUCKET_NAME_MAX && kl > 0 && kl <= STRATA_KEY_MAX;
}

/* ---- raw quorum reads --------------------------------------------------- */

void strata_meta__qraw_fini(struct meta_qraw *q)
{
    for (unsigned d = 0; d < STRATA_DRIVES_MAX; d++) {
        free(q->v[d]);
        q->v[d] = NULL;
    }
}

int strata_meta__qraw_get(struct strata_meta *m, unsigned set, const char *k, size_t kl,
                          bool read_all, struct meta_qraw *q)
{
    memset(q, 0, sizeof(*q));
    q->win = -1;
    struct meta_set *ms = &m->sets[set];
    unsigned rq = strata_set_read_quorum(ms->set);
    int result = STRATA_EQUORUM;
    bool decided = false;
    for (unsigned d = 0; d < ms->n; d++) {
        q->rc[d] = STRATA_EIO;
        if (!strata_meta__drive_readable(m, set, d))
            continue;
        q->tried[d] = true;
        q->rc[d] = strata_meta__drive_get(m, set, d, k, kl, &q->v[d], &q->vl[d]);
        if (decided || (q->rc[d] != 0 && q->rc[d] != STRATA_ENOTFOUND))
            continue;
        unsigned same = 0;
        for (unsigned j = 0; j <= d; j++) {
            if (!q->tried[j] || q->rc[j] != q->rc[d])
                continue;
            same += q->rc[d] == STRATA_ENOTFOUND ||
                    (q->vl[j] == q->vl[d] && memcmp(q->v[j], q->v[d], q->vl[d]) == 0);
        }
        if (same >= rq) {
            decided = true;
            result = q->rc[d];
            q->win = q->rc[d] == 0 ? (int)d : -1;
            if (!read_all)
                break;
        }
    }
    return result;
}

/* ---- upload ids and records --------------------------------------------- */

int strata_meta__upload_id_parse(const char *s, uint8_t upload[UPLOAD_LEN])
{
    if (strlen(s) != 2 * UPLOAD_LEN)
        return STRATA_EINVAL;
    for (int i = 0; i < 2 * UPLOAD_LEN; i++) {
        char c = s[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return STRATA_EINVAL;
        if (i % 2 == 0)
            upload[i / 2] = (uint8_t)(v << 4);
        else
            upload[i / 2] |= (uint8_t)v;
    }
    return 0;
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

int strata_mpu_create(struct strata_meta *m, const struct strata_mpu_opts *opts,
                      char upload_id[STRATA_UPLOAD_ID_MAX + 1])
{
    upload_id[0] = 0;
    if (!opts || !opts->bucket || !*opts->bucket || strlen(opts->bucket) > STRATA_BUCKET_NAME_MAX)
        return STRATA_ENOTFOUND;
    if (!names_ok(opts->bucket, opts->key))
        return STRATA_EINVAL;
    int algo = opts->cksum_algo, type = opts->cksum_type;
    if (algo < STRATA_CKSUM_NONE || algo > STRATA_CKSUM_SHA256 || type < 0 ||
        type > STRATA_CKSUM_TYPE_FULL_OBJECT)
        return STRATA_EINVAL;
    if (algo == STRATA_CKSUM_NONE) {
        if (type != STRATA_CKSUM_TYPE_NONE)
            return STRATA_EINVAL;
    } else if (type == STRATA_CKSUM_TYPE_NONE) {
        type = algo == STRATA_CKSUM_CRC64NVME ? STRATA_CKSUM_TYPE_FULL_OBJECT
                                              : STRATA_CKSUM_TYPE_COMPOSITE;
    } else if ((algo == STRATA_CKSUM_CRC64NVME && type != STRATA_CKSUM_TYPE_FULL_OBJECT) ||
               ((algo == STRATA_CKSUM_SHA1 || algo == STRATA_CKSUM_SHA256) &&
                type != STRATA_CKSUM_TYPE_COMPOSITE)) {
        return STRATA_EINVAL;
    }
    if (opts->tags_len > STRATA_TAGS_MAX || opts->acl_len > STRATA_ACL_MAX)
        return STRATA_ETOOBIG;
    if ((opts->sse == NULL) != (opts->sse_len == 0) || opts->sse_len > STRATA_SSE_DESC_MAX)
        return STRATA_EINVAL;
    size_t total = 0;
    for (size_t i = 0; i < opts->nhdrs; i++)
        total += strlen(opts->hdrs[i].name) + strlen(opts->hdrs[i].value);
    if (total > STRATA_HDRS_MAX)
        return STRATA_ETOOBIG;
    struct strata_bucket_info b;
    int rc = strata_meta_bucket_get(m, opts->bucket, &b);
    if (rc)
        return rc;
    rc = strata_meta__lock_check_req(m, &b, &opts->lock);
    if (rc)
        return rc;
    int tix = strata_meta__tier_idx(m, opts->tier);
    if (tix < 0 || (opts->storage_class && strlen(opts->storage_class) >= 32))
        return STRATA_EINVAL;
    struct meta_upload u;
    memset(&u, 0, sizeof(u));
    u.lock = opts->lock;
    u.init_ns = now_ns();
    u.cksum_algo = algo;
    u.cksum_type = type;
    snprintf(u.storage_class, sizeof(u.storage_class), "%s",
             opts->storage_class ? opts->storage_class : "STANDARD");
    if (tix > 0)
        snprintf(u.tier, sizeof(u.tier), "%s", m->tiers[tix]->name);
    u.hdrs = (struct strata_kv *)(uintptr_t)opts->hdrs; /* borrowed for encoding only */
    u.nhdrs = opts->nhdrs;
    u.tags = (uint8_t *)(uintptr_t)opts->tags;
    u.tags_len = opts->tags_len;
    u.sse = (uint8_t *)(uintptr_t)opts->sse; /* borrowed for encoding only */
    u.sse_len = opts->sse_len;
    u.acl = (uint8_t *)(uintptr_t)opts->acl; /* borrowed for encoding only */
    u.acl_len = opts->acl_len;
    uint8_t up[UPLOAD_LEN];
    for (int i = 0; i < 8; i++)
        up[i] = (uint8_t)((uint64_t)u.init_ns >> (56 - 8 * i));
    if (RAND_bytes(up + 8, 8) != 1)
        return STRATA_EINTERNAL;
    char *v = NULL;
    size_t vl = 0;
    rc = strata_meta__upload_encode(&u, &v, &vl);
    if (rc)
        return rc;
    unsigned set = strata_meta__set_of(m, opts->bucket, opts->key);
    char k[UKEY_MAX];
    size_t kl = strata_meta__key_upload(k, sizeof(k), opts->bucket, opts->key, up);
    rocksdb_writebatch_t *wbs[STRATA_DRIVES_MAX] = {0}, *undo[STRATA_DRIVES_MAX] = {0};
    for (unsigned d = 0; d < m->sets[set].n; d++) {
        if (!m->sets[set].drives[d].db)
            continue;
        wbs[d] = rocksdb_writebatch_create();
        undo[d] = rocksdb_writebatch_create();
        rocksdb_writebatch_put(wbs[d], k, kl, v, vl);
        rocksdb_writebatch_delete(undo[d], k, kl);
    }
    /* Not into a bucket deleted (or re-created) since the check above.
     * Under the key lock, as every other write of the upload: heal, which
     * takes it too, never sees a create half applied (and would take it
     * for a leftover that reached too few drives). */
    pthread_rwlock_t *bh = NULL;
    rc = strata_meta__bucket_hold(m, opts->bucket, b.incarnation, &bh);
    if (rc == 0) {
        pthread_mutex_t *lk = strata_meta__key_lock(m, opts->bucket, opts->key);
        pthread_mutex_lock(lk);
        rc = strata_meta__set_commit(m, set, wbs, undo);
        pthread_mutex_unlock(lk);
    }
    strata_meta__bucket_release(bh);
    for (unsigned d = 0; d < STRATA_DRIVES_MAX; d++) {
        if (wbs[d])
            rocksdb_writebatch_destroy(wbs[d]);
        if (undo[d])
            rocksdb_writebatch_destroy(undo[d]);
    }
    free(v);
    if (rc == 0)
        strata_hex_encode(up, UPLOAD_LEN, upload_id);
    return rc;
}

int strata_mpu_get(struct strata_meta *m, const char *bucket, const char *key,
                   const char *upload_id, struct strata_mpu_info *out)
{
    memset(out, 0, sizeof(*out));
    uint8_t up[UPLOAD_LEN];
    if (!names_ok(bucket, key) || !upload_id || strata_meta__upload_id_parse(upload_id, up))
        return STRATA_ENOTFOUND;
    struct meta_upload u;
    int rc = strata_meta__upload_read(m, strata_meta__set_of(m, bucket, key), bucket, key, up,
                                      &u);
    if (rc)
        return rc;
    strata_meta__upload_info(out, bucket, key, up, &u);
    strata_meta__upload_fini(&u);
    return 0;
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

int strata_meta__part_store(struct strata_meta *m, unsigned set, const char *bucket,
                            const char *key, const uint8_t upload[UPLOAD_LEN],
                            const struct meta_part *part)
{
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
            if (oq.tried[d] && oq.rc[d] == 0)
                rocksdb_writebatch_put(undo[d], pk, PKEY_LEN, oq.v[d], oq.vl[d]);
            else
                rocksdb_writebatch_delete(undo[d], pk, PKEY_LEN);
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
            if (!seen)
                strata_meta__data_rm(m, old.tier, bucket, key, old.data_id);
        }
    }
    strata_meta__qraw_fini(&oq);
    return rc;
}

/* ---- complete ----------------------------------------------------------- */

/* Strip the quotes a client may keep around an ETag. */
static bool etag_eq(const char *given, const char *ours)
{
    size_t n = strlen(given);
    if (n >= 2 && given[0] == '"' && given[n - 1] == '"') {
        given++;
        n -= 2;
    }
    return n == strlen(ours) && strncasecmp(given, ours, n) == 0;
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
    char **tv;             /* encoded 'T' chunks */
    size_t *tvl;
    size_t nchunks;
    /* What replaces the upload record: uval (an abort's tombstone), or
     * (complete) the completed-upload record made from done and the
     * version record r once the sort key is known. */
    const char *uval;
    size_t uvl;
    struct meta_done *done;
    const struct meta_rec *r;
    char *done_v;
    size_t done_vl;
    int err; /* the completed-upload record could not be made */
};

/* The completed-upload record of version sk (record cx->r), made once. */
static void done_make(struct cextra *cx, const uint8_t *sk)
{
    if (cx->done_v || cx->err)
        return;
    struct meta_done *dn = cx->done;
    const struct meta_rec *r = cx->r;
    memcpy(dn->sk, sk, SORTKEY_LEN);
    dn->flags = r->flags;
    snprintf(dn->etag, sizeof(dn->etag), "%s", r->etag);
    dn->size = r->sse_len ? r->psize : r->size;
    dn->mtime_ns = r->mtime_ns;
    dn->cksum_algo = r->cksum_algo;
    dn->cksum_type = r->cksum_type;
    memcpy(dn->cksum, r->cksum, r->cksum_len);
    dn->cksum_len = r->cksum_len;
    dn->nparts = r->nparts;
    snprintf(dn->storage_class, sizeof(dn->storage_class), "%s", r->storage_class);
    dn->sse = r->sse;
    dn->sse_len = r->sse_len;
    cx->err = strata_meta__done_encode(dn, &cx->done_v, &cx->done_vl);
}

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
    if (cx->done)
        done_make(cx, sk);
    const char *uv = cx->done ? cx->done_v : cx->uval;
    size_t uvl = cx->done ? cx->done_vl : cx->uvl;
    if (uv)
        rocksdb_writebatch_put(wb, k, ukl, uv, uvl);
    else
        rocksdb_writebatch_delete(wb, k, ukl); /* not reached: done_make failed, see err */
    if (cx->uq->tried[d] && cx->uq->rc[d] == 0)
        rocksdb_writebatch_put(undo, k, ukl, cx->uq->v[d], cx->uq->vl[d]);
    else
        rocksdb_writebatch_delete(undo, k, ukl);
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

/* Data of every part record in ps whose number is not kept[] (NULL: all). */
static void drop_parts_data(struct strata_meta *m, struct pscan *ps, const bool *kept,
                            const struct meta_part *byno)
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
            if (!dup)
                strata_meta__data_rm(m, p.tier, bucket, key, p.data_id);
        }
    }
}

static void be_put(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static uint64_t be_get(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* The object checksum from the part checksums (see meta.h). */
static int object_cksum(int algo, int type, const struct meta_part *const *parts, size_t n,
                        uint8_t *out, size_t *outlen)
{
    size_t cl = strata_meta__cksum_len(algo);
    *outlen = 0;
    if (algo == STRATA_CKSUM_NONE)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (parts[i]->cksum_len != cl)
            return STRATA_EBADPART; /* a part without the upload's checksum */
    if (type == STRATA_CKSUM_TYPE_FULL_OBJECT) {
        uint64_t crc = be_get(parts[0]->cksum, (unsigned)cl);
        for (size_t i = 1; i < n; i++)
            crc = strata_meta__crc_combine(algo, crc, be_get(parts[i]->cksum, (unsigned)cl),
                                           parts[i]->size);
        be_put(out, crc, (unsigned)cl);
        *outlen = cl;
        return 0;
    }
    uint8_t *cat = malloc(n * cl);
    if (!cat)
        return STRATA_ENOMEM;
    for (size_t i = 0; i < n; i++)
        memcpy(cat + i * cl, parts[i]->cksum, cl);
    switch (algo) {
    case STRATA_CKSUM_CRC32:
        be_put(out, strata_crc32(0, cat, n * cl), 4);
        break;
    case STRATA_CKSUM_CRC32C:
        be_put(out, strata_crc32c(0, cat, n * cl), 4);
        break;
    case STRATA_CKSUM_CRC64NVME:
        be_put(out, strata_crc64nvme(0, cat, n * cl), 8);
        break;
    default: {
        unsigned l = 0;
        if (EVP_Digest(cat, n * cl, out, &l, algo == STRATA_CKSUM_SHA1 ? EVP_sha1() : EVP_sha256(),
                       NULL) != 1) {
            free(cat);
            return STRATA_EINTERNAL;
        }
        break;
    }
    }
    free(cat);
    *outlen = cl;
    return 0;
}

/* The part list's digest: SHA-256 over each part's number (4 bytes,
 * big-endian), its ETag as given (surrounding quotes stripped, hex digits
 * in lower case) and a 0 byte. */
static int list_digest(const struct strata_mpu_part *parts, size_t n, uint8_t out[32])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1;
    for (size_t i = 0; ok && i < n; i++) {
        uint8_t no[4];
        be_put(no, parts[i].part_number, 4);
        const char *et = parts[i].etag;
        size_t el = strlen(et);
        if (el >= 2 && et[0] == '"' && et[el - 1] == '"') {
            et++;
            el -= 2;
        }
        char low[STRATA_ETAG_MAX + 2];
        if (el >= sizeof(low))
            el = sizeof(low) - 1; /* longer than any ETag: matches none anyway */
        for (size_t j = 0; j < el; j++)
            low[j] = (char)(et[j] >= 'A' && et[j] <= 'Z' ? et[j] + 32 : et[j]);
        low[el] = 0;
        ok = EVP_DigestUpdate(md, no, 4) == 1 && EVP_DigestUpdate(md, low, el + 1) == 1;
    }
    unsigned l = 0;
    ok = ok && EVP_DigestFinal_ex(md, out, &l) == 1 && l == 32;
    EVP_MD_CTX_free(md);
    return ok ? 0 : STRATA_EINTERNAL;
}

/*
 * A complete of an upload that was completed (v: its completed-upload
 * record): the same part list within the retry window is answered with the
 * version that complete made, nothing written; anything else is
 * STRATA_ENOTFOUND (NoSuchUpload: "aborted or completed").
 */
static int complete_replay(struct strata_meta *m, const struct strata_mpu_complete_opts *o,
                           const char *v, size_t vl, const uint8_t digest[32],
                           struct strata_obj_info *out)
{
    struct meta_done dn;
    int rc = strata_meta__done_decode(v, vl, &dn);
    if (rc)
        return rc;
    if (memcmp(dn.digest, digest, sizeof(dn.digest)) != 0 ||
        now_ns() - dn.done_ns > m->mpu_retry_ns)
        return STRATA_ENOTFOUND;
    if (o->sse_check && (rc = o->sse_check(o->sse_ud, dn.sse_len ? dn.sse : NULL, dn.sse_len)))
        return rc;
    if (o->check_size && o->object_size != dn.size)
        return STRATA_EINVAL;
    if (out) {
        struct meta_rec r;
        memset(&r, 0, sizeof(r));
        r.flags = dn.flags;
        r.size = dn.size;
        memcpy(r.etag, dn.etag, sizeof(r.etag));
        r.mtime_ns = dn.mtime_ns;
        memcpy(r.storage_class, dn.storage_class, sizeof(r.storage_class));
        r.cksum_algo = dn.cksum_algo;
        r.cksum_type = dn.cksum_type;
        memcpy(r.cksum, dn.cksum, dn.cksum_len);
        r.cksum_len = dn.cksum_len;
        r.nparts = dn.nparts;
        if (dn.sse_len) {
            r.sse = dn.sse;
            r.sse_len = dn.sse_len;
            r.psize = dn.size;
        }
        strata_meta__info_from_rec(out, o->bucket, o->key, dn.sk, &r);
        out->is_latest = true; /* as the first answer said */
    }
    return 0;
}

int strata_mpu_complete(struct strata_meta *m, const struct strata_mpu_complete_opts *o,
                        struct strata_obj_info *out)
{
    return strata_mpu_complete_as(m, o, NULL, out);
}

int strata_mpu_complete_as(struct strata_meta *m, const struct strata_mpu_complete_opts *o,
                           const char *version_id, struct strata_obj_info *out)
{
    if (out)
        memset(out, 0, sizeof(*out));
    uint8_t up[UPLOAD_LEN];
    if (!o || !names_ok(o->bucket, o->key) || !o->upload_id ||
        strata_meta__upload_id_parse(o->upload_id, up))
        return STRATA_ENOTFOUND;
    if (o->nparts == 0 || o->nparts > STRATA_PARTS_MAX || !o->parts)
        return STRATA_EINVAL;
    for (size_t i = 0; i < o->nparts; i++) {
        if (i > 0 && o->parts[i].part_number <= o->parts[i - 1].part_number)
            return STRATA_EPARTORDER;
    }
    for (size_t i = 0; i < o->nparts; i++)
        if (o->parts[i].part_number < 1 || o->parts[i].part_number > STRATA_PARTS_MAX ||
            !o->parts[i].etag)
            return STRATA_EBADPART;
    struct meta_done dn;
    memset(&dn, 0, sizeof(dn));
    int rc = list_digest(o->parts, o->nparts, dn.digest);
    if (rc)
        return rc;
    struct strata_bucket_info b;
    rc = strata_meta_bucket_get(m, o->bucket, &b);
    if (rc)
        return rc;
    unsigned set = strata_meta__set_of(m, o->bucket, o->key);
    struct cstate cs;
    memset(&cs, 0, sizeof(cs));
    struct pscan ps;
    memset(&ps, 0, sizeof(ps));
    struct meta_qraw uq;
    memset(&uq, 0, sizeof(uq));
    struct meta_upload u;
    memset(&u, 0, sizeof(u));
    const struct meta_part **sel = NULL;
    char **tv = NULL;
    size_t *tvl = NULL, nchunks = (o->nparts + MP_CHUNK_PARTS - 1) / MP_CHUNK_PARTS;
    uint8_t *pidx = NULL;
    struct meta_drop drop;
    memset(&drop, 0, sizeof(drop));
    struct meta_rec r;
    memset(&r, 0, sizeof(r));
    uint8_t sk[SORTKEY_LEN];
    cs.byno = calloc(META_PARTS_MAX + 1, sizeof(*cs.byno));
    cs.have = calloc(META_PARTS_MAX + 1, sizeof(*cs.have));
    cs.seen = calloc(META_PARTS_MAX + 1, sizeof(*cs.seen));
    sel = calloc(o->nparts, sizeof(*sel));
    tv = calloc(nchunks, sizeof(*tv));
    tvl = calloc(nchunks, sizeof(*tvl));
    pidx = calloc(nchunks, MP_IDX_ENT);
    struct meta_part *chunk = calloc(MP_CHUNK_PARTS, sizeof(*chunk));
    if (!cs.byno || !cs.have || !cs.seen || !sel || !tv || !tvl || !pidx || !chunk) {
        free(cs.byno);
        free(cs.have);
        free(cs.seen);
        free(sel);
        free(tv);
        free(tvl);
        free(pidx);
        free(chunk);
        return STRATA_ENOMEM;
    }

    /* Held until the version is committed: the bucket cannot go (or be
     * replaced by a namesake) under the complete. */
    pthread_rwlock_t *bh = NULL;
    rc = strata_meta__bucket_hold(m, o->bucket, b.incarnation, &bh);
    pthread_mutex_t *lk = strata_meta__key_lock(m, o->bucket, o->key);
    pthread_mutex_lock(lk);
    char uk[UKEY_MAX];
    size_t ukl = strata_meta__key_upload(uk, sizeof(uk), o->bucket, o->key, up);
    EVP_MD_CTX *md = NULL;
    bool replayed = false;
    struct cextra cx;
    memset(&cx, 0, sizeof(cx));
    int ust = 0;
    if (rc == 0)
        rc = upload_state(m, set, uk, ukl, true, &uq, &ust);
    if (rc == 0 && ust == US_DONE) {
        /* Completed before: a retry (the client lost the answer). */
        rc = complete_replay(m, o, uq.v[uq.win], uq.vl[uq.win], dn.digest, out);
        replayed = true;
        goto unlock;
    }
    if (rc == 0)
        rc = strata_meta__upload_decode(uq.v[uq.win], uq.vl[uq.win], &u);
    if (rc == 0 && o->sse_check)
        rc = o->sse_check(o->sse_ud, u.sse, u.sse_len);
    if (rc == 0)
        rc = pscan_run(m, set, up, 1, &ps);
    if (rc == 0)
        rc = pscan_walk(m, set, &ps, collect_cb, &cs);
    /* Validate the list against the committed parts. */
    uint64_t total = 0;
    for (size_t i = 0; rc == 0 && i < o->nparts; i++) {
        const struct strata_mpu_part *lp = &o->parts[i];
        const struct meta_part *p = &cs.byno[lp->part_number];
        char et[33];
        if (!cs.have[lp->part_number]) {
            rc = STRATA_EBADPART;
            break;
        }
        strata_hex_encode(p->md5, 16, et);
        if (!etag_eq(lp->etag, et) ||
            (lp->cksum && (lp->cksum_len != p->cksum_len ||
                           memcmp(lp->cksum, p->cksum, p->cksum_len) != 0))) {
            rc = STRATA_EBADPART;
            break;
        }
        if (i + 1 < o->nparts && p->size < m->part_size_min) {
            rc = STRATA_ETOOSMALL;
            break;
        }
        if (u.sse_len && p->size && !p->ssize) {
            rc = STRATA_ECORRUPT; /* a part of an encrypted upload stored as sent */
            break;
        }
        sel[i] = p;
        total += p->size;
    }
    if (rc == 0 && o->check_size && total != o->object_size)
        rc = STRATA_EINVAL;
    /* ETag: MD5 of the concatenated binary part MD5s, "-N". */
    if (rc == 0) {
        uint8_t d[EVP_MAX_MD_SIZE];
        unsigned dl = 0;
        md = EVP_MD_CTX_new();
        if (!md || EVP_DigestInit_ex(md, EVP_md5(), NULL) != 1)
            rc = STRATA_EINTERNAL;
        for (size_t i = 0; rc == 0 && i < o->nparts; i++)
            if (EVP_DigestUpdate(md, sel[i]->md5, 16) != 1)
                rc = STRATA_EINTERNAL;
        if (rc == 0 && EVP_DigestFinal_ex(md, d, &dl) != 1)
            rc = STRATA_EINTERNAL;
        if (rc == 0) {
            strata_hex_encode(d, 16, r.etag);
            snprintf(r.etag + 32, sizeof(r.etag) - 32, "-%zu", o->nparts);
        }
    }
    if (rc == 0)
        rc = object_cksum(u.cksum_algo, u.cksum_type, sel, o->nparts, r.cksum, &r.cksum_len);
    /* Part table chunks and their index. */
    uint64_t off = 0;
    for (size_t c = 0; rc == 0 && c < nchunks; c++) {
        size_t first = c * MP_CHUNK_PARTS, n = o->nparts - first;
        if (n > MP_CHUNK_PARTS)
            n = MP_CHUNK_PARTS;
        be_put(pidx + c * MP_IDX_ENT, off, 8);
        for (size_t i = 0; i < n; i++) {
            chunk[i] = *sel[first + i];
            off += chunk[i].size;
        }
        rc = strata_meta__ptab_encode(chunk, n, &tv[c], &tvl[c]);
        if (rc == 0)
            be_put(pidx + c * MP_IDX_ENT + 8, strata_crc32c(0, tv[c], tvl[c]), 4);
    }
    if (rc == 0) {
        r.flags = REC_F_MULTIPART;
        r.size = total;
        snprintf(r.tier, sizeof(r.tier), "%s", u.tier);
        snprintf(r.storage_class, sizeof(r.storage_class), "%s",
                 u.storage_class[0] ? u.storage_class : "STANDARD");
        r.cksum_algo = u.cksum_algo;
        r.cksum_type = u.cksum_algo ? u.cksum_type : 0;
        r.hdrs = u.hdrs;
        r.nhdrs = u.nhdrs;
        r.tags = u.tags;
        r.tags_len = u.tags_len;
        r.acl = u.acl;
        r.acl_len = u.acl_len;
        r.nparts = o->nparts;
        if (u.sse_len) {
            r.sse = u.sse;
            r.sse_len = u.sse_len;
            r.psize = total; /* parts sealed one stream each; sizes are plaintext */
        }
        /* The retention asked for at create, or the bucket's default from
         * now; a date that passed meanwhile is kept as given (AWS judges
         * it at CreateMultipartUpload). */
        r.lock = u.lock;
        if (!r.lock.mode) {
            struct strata_obj_lock deflt, hold = {0, 0, u.lock.legal_hold,
                                                         u.lock.legal_hold_set};
            rc = strata_meta__lock_for_new(m, &b, &hold, &deflt);
            r.lock = deflt;
        }
    }
    if (rc == 0) {
        r.pidx = pidx;
        r.pidx_len = nchunks * MP_IDX_ENT;
        dn.done_ns = now_ns();
        cx = (struct cextra){.bucket = o->bucket,
                             .key = o->key,
                             .up = up,
                             .uq = &uq,
                             .ps = &ps,
                             .tv = tv,
                             .tvl = tvl,
                             .nchunks = nchunks,
                             .done = &dn,
                             .r = &r};
        uint8_t rsk[SORTKEY_LEN];
        if (version_id && (b.versioning != STRATA_VERSIONING_ENABLED ||
                           strata_meta__vid_parse(version_id, rsk) != 0))
            rc = STRATA_EINVAL;
        else
            rc = strata_meta__version_commit_as(m, set, o->bucket, o->key, b.versioning, &r,
                                                o->if_match, o->if_none_match_star,
                                                version_id ? rsk : NULL, complete_extra, &cx,
                                                sk, &drop);
        if (rc == 0 && cx.err)
            strata_log(&m->log, STRATA_LOG_WARN, "meta",
                       "complete of %s/%s: no completed-upload record (%s): retries answer "
                       "NoSuchUpload",
                       o->bucket, o->key, strata_errname(cx.err));
    }
unlock:
    pthread_mutex_unlock(lk);
    strata_meta__bucket_release(bh);
    EVP_MD_CTX_free(md);
    free(cx.done_v);
    if (rc == 0 && !replayed) {
        strata_meta__drop(m, set, o->bucket, o->key, &drop);
        /* Keep the listed parts' data; everything else of the upload goes. */
        bool *kept = calloc(META_PARTS_MAX + 1, sizeof(bool));
        if (kept) {
            for (size_t i = 0; i < o->nparts; i++)
                kept[o->parts[i].part_number] = true;
            drop_parts_data(m, &ps, kept, cs.byno);
            free(kept);
        }
        if (out) {
            r.hdrs = NULL;
            r.nhdrs = 0;
            strata_meta__info_from_rec(out, o->bucket, o->key, sk, &r);
            out->is_latest = true;
        }
    }
    strata_meta__upload_fini(&u);
    strata_meta__qraw_fini(&uq);
    pscan_fini(&ps);
    for (size_t c = 0; c < nchunks; c++)
        free(tv[c]);
    free(tv);
    free(tvl);
    free(pidx);
    free(chunk);
    free(sel);
    free(cs.byno);
    free(cs.have);
    free(cs.seen);
    return rc;
}

/* ---- abort -------------------------------------------------------------- */

int strata_mpu_abort(struct strata_meta *m, const char *bucket, const char *key,
                     const char *upload_id)
{
    uint8_t up[UPLOAD_LEN];
    if (!names_ok(bucket, key) || !upload_id || strata_meta__upload_id_parse(upload_id, up))
        return STRATA_ENOTFOUND;
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
        drop_parts_data(m, &ps, NULL, NULL);
    pscan_fini(&ps);
    strata_meta__qraw_fini(&uq);
    return rc;
}

/* ---- ListParts ---------------------------------------------------------- */

struct lpstate {
    unsigned max, count;
    int cksum_algo;
    int (*cb)(const struct strata_part_info *p, void *ud);
    void *ud;
    struct strata_mpu_parts_result *res;
    unsigned last;
};

static int lp_cb(void *ud, unsigned no, const struct pent *won,
                 const struct pent *const *per_drive)
{
    (void)per_drive;
    struct lpstate *st = ud;
    struct meta_part p;
    if (!won || strata_meta__part_decode(won->v, won->vl, &p, NULL, NULL) != 0)
        return 0; /* not committed (or unreadable): not listed */
    if (st->count == st->max) {
        st->res->truncated = true;
        st->res->next_marker = st->last;
        return 1; /* stop: one more exists */
    }
    struct strata_part_info pi;
    memset(&pi, 0, sizeof(pi));
    pi.part_number = no;
    pi.size = p.size;
    strata_hex_encode(p.md5, 16, pi.etag);
    pi.mtime_ms = p.mtime_ns / 1000000;
    pi.cksum_algo = p.cksum_algo;
    memcpy(pi.cksum, p.cksum, p.cksum_len);
    pi.cksum_len = p.cksum_len;
    st->count++;
    st->last = no;
    int rc = st->cb(&pi, st->ud);
    return rc;
}

int strata_mpu_list_parts(struct strata_meta *m, const char *bucket, const char *key,
                          const char *upload_id, unsigned marker, unsigned max_parts,
                          int (*cb)(const struct strata_part_info *p, void *ud), void *ud,
                          struct strata_mpu_parts_result *res)
{
    memset(res, 0, sizeof(*res));
    uint8_t up[UPLOAD_LEN];
    if (!names_ok(bucket, key) || !upload_id || strata_meta__upload_id_parse(upload_id, up))
        return STRATA_ENOTFOUND;
    if (max_parts == 0 || max_parts > 1000)
        max_parts = 1000;
    if (marker >= META_PARTS_MAX)
        return 0;
    unsigned set = strata_meta__set_of(m, bucket, key);
    struct meta_upload u;
    int rc = strata_meta__upload_read(m, set, bucket, key, up, &u);
    if (rc)
        return rc;
    strata_meta__upload_fini(&u);
    struct pscan ps;
    rc = pscan_run(m, set, up, marker + 1, &ps);
    if (rc)
        return rc;
    struct lpstate st = {max_parts, 0, 0, cb, ud, res, 0};
    rc = pscan_walk(m, set, &ps, lp_cb, &st);
    if (rc == 1 && res->truncated)
        rc = 0;
    pscan_fini(&ps);
    return rc;
}

/* ---- part tables of completed objects ----------------------------------- */

int strata_meta__ptab_load(struct strata_meta *m, unsigned set, const char *bucket,
                           const char *key, const uint8_t *sk, const struct meta_rec *r,
                           unsigned c, struct meta_part *parts, size_t *n)
{
    size_t nc = r->pidx_len / MP_IDX_ENT;
    if (c >= nc)
        return STRATA_ERANGE;
    uint32_t want = (uint32_t)be_get(r->pidx + (size_t)c * MP_IDX_ENT + 8, 4);
    size_t expect = c + 1 < nc ? MP_CHUNK_PARTS : r->nparts - (size_t)c * MP_CHUNK_PARTS;
    char k[UKEY_MAX];
    size_t kl = strata_meta__key_ptab(k, sizeof(k), bucket, key, sk, c);
    struct meta_set *ms = &m->sets[set];
    int rc = STRATA_EQUORUM;
    /* Any drive's copy that matches the CRC32C the quorum-agreed version
     * record carries is the right one: one Get in the common case. */
    for (unsigned d = 0; d < ms->n; d++) {
        if (!ms->drives[d].db)
            continue;
        char *v = NULL;
        size_t vl = 0;
        int grc = strata_meta__drive_get(m, set, d, k, kl, &v, &vl);
        if (grc) {
            if (rc == STRATA_EQUORUM)
                rc = grc == STRATA_ENOTFOUND ? STRATA_ECORRUPT : grc;
            continue;
        }
        if (strata_crc32c(0, v, vl) == want &&
            strata_meta__ptab_decode(v, vl, parts, MP_CHUNK_PARTS, n) == 0 && *n == expect) {
            free(v);
            return 0;
        }
        free(v);
        rc = STRATA_ECORRUPT;
    }
    return rc;
}

void strata_meta__mp_drop(struct strata_meta *m, unsigned set, const char *bucket,
                          const char *key, const uint8_t *sk, size_t nparts, unsigned tier)
{
    struct strata_tier *t = m->tiers[tier < m->ntiers ? tier : 0];
    uint32_t place = strata_meta__place(bucket, key);
    struct meta_set *ms = &m->sets[set];
    size_t nc = (nparts + MP_CHUNK_PARTS - 1) / MP_CHUNK_PARTS;
    struct meta_part *parts = calloc(MP_CHUNK_PARTS, sizeof(*parts));
    if (!parts)
        return; /* the scanner reclaims unreferenced data */
    rocksdb_writebatch_t *wbs[STRATA_DRIVES_MAX] = {0};
    for (unsigned d = 0; d < ms->n; d++)
        if (ms->drives[d].db)
            wbs[d] = rocksdb_writebatch_create();
    char k[UKEY_MAX];
    for (size_t c = 0; c < nc; c++) {
        size_t kl = strata_meta__key_ptab(k, sizeof(k), bucket, key, sk, (unsigned)c);
        char *first = NULL;
        size_t firstl = 0;
        for (unsigned d = 0; d < ms->n; d++) {
            if (!ms->drives[d].db)
                continue;
            rocksdb_writebatch_delete(wbs[d], k, kl);
            char *v = NULL;
            size_t vl = 0, n = 0;
            if (strata_meta__drive_get(m, set, d, k, kl, &v, &vl) != 0)
                continue;
            /* Identical copies name the same data: delete it once. */
            if (first && firstl == vl && memcmp(first, v, vl) == 0) {
                free(v);
                continue;
            }
            if (strata_meta__ptab_decode(v, vl, parts, MP_CHUNK_PARTS, &n) == 0)
                for (size_t i = 0; i < n; i++)
                    if (parts[i].has_data_id)
                        t->ops->remove(t->impl, place, parts[i].data_id);
            if (!first) {
                first = v;
                firstl = vl;
            } else {
                free(v);
            }
        }
        free(first);
    }
    free(parts);
    /* Under the key lock so heal cannot write a 'T' record back meanwhile. */
    pthread_mutex_t *lk = strata_meta__key_lock(m, bucket, key);
    bool ok[STRATA_DRIVES_MAX];
    pthread_mutex_lock(lk);
    strata_meta__set_apply(m, set, wbs, ok);
    pthread_mutex_unlock(lk);
    for (unsigned d = 0; d < STRATA_DRIVES_MAX; d++)
        if (wbs[d])
            rocksdb_writebatch_destroy(wbs[d]);
}

/* ---- ListMultipartUploads ----------------------------------------------- */

int strata_mpu_list(struct strata_meta *m, const struct strata_mpu_list_opts *o,
                    int (*cb)(const struct strata_mpu_list_entry *e, void *ud), void *ud,
                    struct strata_mpu_list_result *res)
{
    memset(res, 0, sizeof(*res));
    if (!o || !o->bucket || !*o->bucket || strlen(o->bucket) > STRATA_BUCKET_NAME_MAX)
        return STRATA_ENOTFOUND;
    struct strata_bucket_info b;
    int rc = strata_meta_bucket_get(m, o->bucket, &b);
    if (rc)
        return rc;
    const char *prefix = o->prefix ? o->prefix : "";
    const char *delim = o->delimiter && *o->delimiter ? o->delimiter : NULL;
    unsigned max = o->max_uploads == 0 || o->max_uploads > 1000 ? 1000 : o->max_uploads;
    size_t pl = strlen(prefix), dl = delim ? strlen(delim) : 0;
    if (pl > STRATA_KEY_MAX)
        return 0;
    /* The store's UPLOADS scan applies the read rule: only live uploads. */
    struct strata_meta__scan_spec spec = {
        .bucket = o->bucket,
        .kind = STRATA_META__SCAN_UPLOADS,
        .prefix = prefix,
    };
    uint8_t skip_up[UPLOAD_LEN];
    bool marker_cp = false;
    const char *km = o->key_marker && *o->key_marker ? o->key_marker : NULL;
    if (km && strlen(km) <= STRATA_KEY_MAX && strcmp(km, prefix) >= 0) {
        size_t kml = strlen(km);
        spec.after = km; /* past every upload of the marker key, unless: */
        if (o->upload_id_marker && *o->upload_id_marker &&
            strata_meta__upload_id_parse(o->upload_id_marker, skip_up) == 0)
            spec.after_sk = skip_up; /* past that upload of it */
        else /* a marker that is a common prefix skips the keys under it */
            marker_cp = dl && kml >= pl + dl && strcmp(km + kml - dl, delim) == 0;
    }
    struct strata_meta__scan *sc;
    rc = m->store->scan_open(m, &spec, &sc);
    if (rc)
        return rc;
    if (marker_cp && !m->store->scan_skip_past(sc, km, strlen(km))) {
        m->store->scan_close(sc);
        return 0;
    }
    unsigned count = 0;
    char last_key[STRATA_KEY_MAX + 1] = "", last_up[STRATA_UPLOAD_ID_MAX + 1] = "";
    struct strata_meta__scan_ent se;
    int n = 0;
    while (rc == 0 && (n = m->store->scan_next(sc, &se)) == 1) {
        const char *key = se.key;
        size_t keyl = se.keylen;
        const char *dp = NULL;
        if (delim)
            for (size_t i = pl; i + dl <= keyl && !dp; i++)
                if (memcmp(key + i, delim, dl) == 0)
                    dp = key + i + dl;
        if (count == max) {
            res->truncated = true;
            break;
        }
        count++;
        if (dp) {
            /* A common prefix, shown once: only a live upload shows it. */
            char name[STRATA_KEY_MAX + 1];
            size_t cpl = (size_t)(dp - key);
            memcpy(name, key, cpl);
            name[cpl] = 0;
            struct strata_mpu_list_entry e = {true, name, NULL};
            snprintf(last_key, sizeof(last_key), "%s", name);
            last_up[0] = 0;
            rc = cb(&e, ud);
            /* Skip every key under the common prefix with one seek. */
            if (!m->store->scan_skip_past(sc, name, cpl))
                break;
            continue;
        }
        struct strata_mpu_list_entry e = {false, key, se.upload};
        snprintf(last_key, sizeof(last_key), "%s", key);
        snprintf(last_up, sizeof(last_up), "%s", se.upload->upload_id);
        rc = cb(&e, ud);
    }
    if (rc == 0 && n < 0)
        rc = n; /* the scan's error */
    if (res->truncated) {
        snprintf(res->next_key_marker, sizeof(res->next_key_marker), "%s", last_key);
        snprintf(res->next_upload_id_marker, sizeof(res->next_upload_id_marker), "%s", last_up);
    }
    m->store->scan_close(sc);
    return rc;
}
