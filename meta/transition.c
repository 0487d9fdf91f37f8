/*
 * transition.c - moving a version's data between tiers, crash-safely.
 *
 * Order (strata_obj_transition): intent record -> copy -> read back and
 * compare -> switch the record (and part table) on the write quorum, only
 * if it still names the copied data -> resolve the intent.  The intent
 * (the store's intent records: locally 'X' bucket 0 key 0 sortkey,
 * meta_internal.h; on RADOS x/K\x01SK) lists the source and the target
 * data ids; resolving it decides here which of them the version record
 * does not name (both when the version is gone) and hands them to the
 * store's intent_resolve, which removes them (locally) or queues them for
 * reclaim (RADOS) and removes the intent.  So after a crash at any point
 * one copy is referenced and the other is reclaimed by
 * strata_meta_transition_reclaim (the store's INTENTS scan), without
 * looking at the data at all.
 *
 * Readers: the old data of a version a GET has pinned is removed only at
 * that GET's close (the resolution is parked on the pin, pin.c), so a GET
 * that began before the switch streams the old bytes to the end.  The copy
 * itself pins the version, so a delete meanwhile cannot cut it.
 *
 * Threads: any caller thread; one transition of a version at a time (a
 * version with an unresolved intent is refused with STRATA_EBUSY).
 */
#include "meta_internal.h"
#include "store.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "strata/assert.h"

#define COPY_CHUNK (1u << 20)

void strata_meta_set_step_hook(struct strata_meta *m, void (*hook)(void *ud, int step), void *ud)
{
    m->step_hook = hook;
    m->step_ud = ud;
}

void strata_meta__tr_step(struct strata_meta *m, int s)
{
    if (m->step_hook)
        m->step_hook(m->step_ud, s);
}

static void step(struct strata_meta *m, int s)
{
    strata_meta__tr_step(m, s);
}

/* ---- the intent record ----------------------------------------------------- */

struct intent {
    char src[STRATA_TIER_NAME_MAX + 1], dst[STRATA_TIER_NAME_MAX + 1];
    size_t nold, nnew;
    uint8_t (*old)[STRATA_DATA_ID_LEN];
    uint8_t (*nw)[STRATA_DATA_ID_LEN];
};

static void intent_fini(struct intent *x)
{
    free(x->old);
    free(x->nw);
    memset(x, 0, sizeof(*x));
}

void strata_meta__pk_ids(struct msgpack_packer *pk, uint8_t (*ids)[STRATA_DATA_ID_LEN], size_t n)
{
    msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++) {
        msgpack_pack_bin(pk, STRATA_DATA_ID_LEN);
        msgpack_pack_bin_body(pk, ids[i], STRATA_DATA_ID_LEN);
    }
}

void strata_meta__mp_map_begin(struct msgpack_sbuffer *sb, struct msgpack_packer *pk,
                               uint32_t nfields)
{
    msgpack_sbuffer_init(sb);
    msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
    char vb = VAL_VERSION_BYTE;
    msgpack_sbuffer_write(sb, &vb, 1);
    msgpack_pack_map(pk, nfields);
    msgpack_pack_uint64(pk, 0);
    msgpack_pack_uint64(pk, REC_FORMAT);
}

static int intent_encode(const struct intent *x, char **out, size_t *outlen)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    strata_meta__mp_map_begin(&sb, &pk, 5);
    msgpack_pack_uint64(&pk, 1);
    msgpack_pack_str(&pk, strlen(x->src));
    msgpack_pack_str_body(&pk, x->src, strlen(x->src));
    msgpack_pack_uint64(&pk, 2);
    msgpack_pack_str(&pk, strlen(x->dst));
    msgpack_pack_str_body(&pk, x->dst, strlen(x->dst));
    msgpack_pack_uint64(&pk, 3);
    strata_meta__pk_ids(&pk, x->old, x->nold);
    msgpack_pack_uint64(&pk, 4);
    strata_meta__pk_ids(&pk, x->nw, x->nnew);
    if (!sb.data) {
        msgpack_sbuffer_destroy(&sb);
        return STRATA_ENOMEM;
    }
    *outlen = sb.size;
    *out = msgpack_sbuffer_release(&sb);
    msgpack_sbuffer_destroy(&sb);
    return 0;
}

static bool get_ids(const msgpack_object *o, uint8_t (**ids)[STRATA_DATA_ID_LEN], size_t *n)
{
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size > META_PARTS_MAX)
        return false;
    *n = o->via.array.size;
    *ids = calloc(*n ? *n : 1, STRATA_DATA_ID_LEN);
    if (!*ids)
        return false;
    for (size_t i = 0; i < *n; i++) {
        const msgpack_object *e = &o->via.array.ptr[i];
        if (e->type != MSGPACK_OBJECT_BIN || e->via.bin.size != STRATA_DATA_ID_LEN)
            return false;
        memcpy((*ids)[i], e->via.bin.ptr, STRATA_DATA_ID_LEN);
    }
    return true;
}

static bool get_name(const msgpack_object *o, char out[STRATA_TIER_NAME_MAX + 1])
{
    if (o->type != MSGPACK_OBJECT_STR || o->via.str.size > STRATA_TIER_NAME_MAX)
        return false;
    if (o->via.str.size) /* "" (the hot tier) may come with a NULL pointer */
        memcpy(out, o->via.str.ptr, o->via.str.size);
    out[o->via.str.size] = 0;
    return true;
}

bool strata_meta__mp_map_open(const char *buf, size_t len, struct msgpack_unpacked *up)
{
    msgpack_unpacked_init(up);
    size_t off = 0;
    return len >= 2 && (uint8_t)buf[0] == VAL_VERSION_BYTE &&
           strata_meta__mp_sane((const uint8_t *)buf + 1, len - 1) &&
           msgpack_unpack_next(up, buf + 1, len - 1, &off) == MSGPACK_UNPACK_SUCCESS &&
           up->data.type == MSGPACK_OBJECT_MAP;
}

static int intent_decode(const char *buf, size_t len, struct intent *x)
{
    memset(x, 0, sizeof(*x));
    msgpack_unpacked up;
    bool ok = strata_meta__mp_map_open(buf, len, &up);
    unsigned seen = 0;
    for (uint32_t i = 0; ok && i < up.data.via.map.size; i++) {
        const msgpack_object_kv *kv = &up.data.via.map.ptr[i];
        if (kv->key.type != MSGPACK_OBJECT_POSITIVE_INTEGER || kv->key.via.u64 > 4 ||
            (seen & (1u << kv->key.via.u64))) {
            ok = false;
            break;
        }
        seen |= 1u << kv->key.via.u64;
        switch (kv->key.via.u64) {
        case 0:
            ok = kv->val.type == MSGPACK_OBJECT_POSITIVE_INTEGER && kv->val.via.u64 == REC_FORMAT;
            break;
        case 1: ok = get_name(&kv->val, x->src); break;
        case 2: ok = get_name(&kv->val, x->dst); break;
        case 3: ok = get_ids(&kv->val, &x->old, &x->nold); break;
        default: ok = get_ids(&kv->val, &x->nw, &x->nnew); break;
        }
    }
    msgpack_unpacked_destroy(&up);
    if (!ok || seen != 0x1f) {
        intent_fini(x);
        return STRATA_ECORRUPT;
    }
    return 0;
}

/* ---- the data a version refers to ------------------------------------------ */

int strata_meta__pieces_of(struct strata_meta *m, unsigned set, const char *bucket, const char *key,
                           const uint8_t *sk, const struct meta_rec *r, struct meta_piece **out,
                           size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!(r->flags & REC_F_MULTIPART)) {
        if (!r->has_data_id || r->size == 0)
            return 0;
        if (!(*out = calloc(1, sizeof(**out))))
            return STRATA_ENOMEM;
        memcpy((*out)[0].id, r->data_id, STRATA_DATA_ID_LEN);
        (*out)[0].size = r->size;
        *n = 1;
        return 0;
    }
    struct meta_piece *ps = calloc(r->nparts ? r->nparts : 1, sizeof(*ps));
    struct meta_part *parts = calloc(MP_CHUNK_PARTS, sizeof(*parts));
    int rc = ps && parts ? 0 : STRATA_ENOMEM;
    size_t nc = (r->nparts + MP_CHUNK_PARTS - 1) / MP_CHUNK_PARTS;
    for (size_t c = 0; rc == 0 && c < nc; c++) {
        size_t got = 0;
        rc = strata_meta__ptab_load(m, set, bucket, key, sk, r, (unsigned)c, parts, &got);
        for (size_t i = 0; rc == 0 && i < got; i++) {
            if (!parts[i].has_data_id || parts[i].size == 0)
                continue;
            if (*n >= r->nparts) {
                rc = STRATA_ECORRUPT;
                break;
            }
            memcpy(ps[*n].id, parts[i].data_id, STRATA_DATA_ID_LEN);
            ps[*n].size = parts[i].ssize ? parts[i].ssize : parts[i].size;
            (*n)++;
        }
    }
    free(parts);
    if (rc) {
        free(ps);
        *n = 0;
        return rc;
    }
    *out = ps;
    return 0;
}

static bool has_id(const struct meta_piece *ps, size_t n, const uint8_t *id)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(ps[i].id, id, STRATA_DATA_ID_LEN) == 0)
            return true;
    return false;
}

/* ---- resolution ---------------------------------------------------------------- */

/* The ids of one copy that the record does not refer to, as losses. */
static void add_unreferenced(const char *tier, uint8_t (*ids)[STRATA_DATA_ID_LEN], size_t n,
                             bool rec_here, const struct meta_piece *refs, size_t nrefs,
                             struct strata_meta__intent_loss *loss, size_t *nloss)
{
    for (size_t i = 0; i < n; i++) {
        if (rec_here && has_id(refs, nrefs, ids[i]))
            continue;
        loss[*nloss].tier = tier;
        loss[*nloss].id = ids[i];
        (*nloss)++;
    }
}

/* The version's record as the store holds it now (key_read, so any
 * backend): a copy in r with its bytes in raw. */
struct rec_read {
    struct meta_rec r;
    char *raw;
};

static int rec_read_decide(void *ud, const struct strata_meta__key_view *v,
                           struct strata_meta__key_edit *e)
{
    (void)e;
    struct rec_read *x = ud;
    const struct strata_meta__key_slot *s = &v->version;
    if (s->rc)
        return s->rc;
    if (s->rec->flags & REC_F_DELETE_MARKER)
        return STRATA_EMETHOD;
    size_t len;
    int rc = strata_meta__rec_encode(s->rec, &x->raw, &len);
    if (rc == 0)
        rc = strata_meta__rec_decode(x->raw, len, false, &x->r);
    if (rc) {
        free(x->raw);
        x->raw = NULL;
    }
    return rc;
}

static int rec_read(struct strata_meta *m, const char *bucket, const char *key, const char *vid,
                    struct meta_rec *r, char **raw)
{
    struct rec_read x;
    memset(&x, 0, sizeof(x));
    struct strata_meta__key_txn t = {.bucket = bucket,
                                     .key = key,
                                     .want = STRATA_META__KEY_VERSION,
                                     .version_id = vid,
                                     .decide = rec_read_decide,
                                     .ud = &x};
    int rc = m->store->key_read(m, &t);
    *r = x.r;
    *raw = x.raw;
    if (rc && x.raw) {
        strata_meta__rec_fini(&x.r);
        free(x.raw);
        *raw = NULL;
    }
    return rc;
}

void strata_meta__intent_resolve_now(struct strata_meta *m, unsigned set, const char *bucket,
                                     const char *key, const uint8_t sk[SORTKEY_LEN])
{
    char *iv = NULL;
    size_t ivl = 0;
    struct intent x;
    bool have =
        m->store->intent_get(m, bucket, key, sk, &iv, &ivl) == 0 && intent_decode(iv, ivl, &x) == 0;
    if (!have) {
        free(iv);
        return; /* resolved already (or unreadable: kept for the next pass) */
    }
    char vid[STRATA_VERSION_ID_MAX + 1];
    strata_meta__vid_format(sk, vid);
    struct meta_rec r;
    char *raw = NULL;
    struct meta_piece *refs = NULL;
    size_t nrefs = 0;
    int rc = rec_read(m, bucket, key, vid, &r, &raw);
    bool found = rc == 0;
    if (rc == STRATA_ENOTFOUND || rc == STRATA_EMETHOD)
        rc = 0; /* the version is gone: nothing is referenced */
    if (found)
        rc = strata_meta__pieces_of(m, set, bucket, key, sk, &r, &refs, &nrefs);
    if (rc == 0) {
        /* Which tier the record names decides which copy it refers to. */
        bool on_src = found && strcmp(r.tier, x.src) == 0;
        bool on_dst = found && strcmp(r.tier, x.dst) == 0;
        struct strata_meta__intent_loss *loss = calloc(x.nold + x.nnew + 1, sizeof(*loss));
        size_t nloss = 0;
        rc = loss ? 0 : STRATA_ENOMEM;
        if (rc == 0) {
            add_unreferenced(x.src, x.old, x.nold, on_src, refs, nrefs, loss, &nloss);
            add_unreferenced(x.dst, x.nw, x.nnew, on_dst, refs, nrefs, loss, &nloss);
            rc = m->store->intent_resolve(m, bucket, key, sk, iv, ivl, loss, nloss);
        }
        free(loss);
    }
    if (rc) {
        strata_log(&m->log, STRATA_LOG_WARN, "meta", "transition of %s/%s: cannot resolve: %s",
                   bucket, key, strata_errname(rc));
    }
    free(refs);
    if (found)
        strata_meta__rec_fini(&r);
    free(raw);
    free(iv);
    intent_fini(&x);
}

/* Resolve now, or at the close of the last reader pinning the version. */
static void intent_resolve(struct strata_meta *m, unsigned set, const char *bucket,
                           const char *key, const uint8_t sk[SORTKEY_LEN])
{
    struct meta_drop drop;
    memset(&drop, 0, sizeof(drop));
    drop.any = true;
    drop.intent = true;
    memcpy(drop.sk, sk, SORTKEY_LEN);
    if (!strata_meta__drop_park(m, set, bucket, key, &drop))
        strata_meta__intent_resolve_now(m, set, bucket, key, sk);
}

int strata_meta_transition_reclaim(struct strata_meta *m, uint64_t *resolved)
{
    uint64_t n = 0;
    struct strata_meta__scan_spec spec = {.kind = STRATA_META__SCAN_INTENTS, .no_cache = true};
    struct strata_meta__scan *sc;
    int rc = m->store->scan_open(m, &spec, &sc);
    if (rc)
        return rc;
    struct strata_meta__scan_ent e;
    while ((rc = m->store->scan_next(sc, &e)) == 1) {
        intent_resolve(m, strata_meta__set_of(m, e.bucket, e.key), e.bucket, e.key, e.sk);
        n++;
    }
    m->store->scan_close(sc);
    if (resolved)
        *resolved = n;
    return rc < 0 ? rc : 0;
}

int strata_obj_tier_lock_sync(struct strata_meta *m, const char *bucket, const char *key,
                              const char *version_id, bool *sent)
{
    if (sent)
        *sent = false;
    uint8_t sk[SORTKEY_LEN];
    struct meta_rec rec;
    char *raw = NULL;
    memset(&rec, 0, sizeof(rec));
    int rc = strata_meta__rec_get(m, bucket, key, version_id, sk, &rec, &raw);
    if (rc)
        return rc;
    struct strata_tier *t = rec.flags & REC_F_INLINE ? NULL : strata_meta__tier(m, rec.tier);
    if (t && t->ops->lock_set) {
        int64_t now = strata_meta_lock_now_ms(m);
        struct strata_tier_lock lk = {.legal_hold = rec.lock.legal_hold};
        if (rec.lock.mode != STRATA_LOCK_NONE && rec.lock.until_ms > now) {
            lk.mode = rec.lock.mode;
            lk.until_ms = rec.lock.until_ms;
        }
        struct meta_piece *ps = NULL;
        size_t n = 0;
        rc = strata_meta__pieces_of(m, strata_meta__set_of(m, bucket, key), bucket, key, sk, &rec,
                                    &ps, &n);
        uint32_t place = strata_meta__place(bucket, key);
        for (size_t i = 0; rc == 0 && i < n; i++)
            rc = t->ops->lock_set(t->impl, place, ps[i].id, &lk);
        free(ps);
        if (sent)
            *sent = n > 0;
    }
    strata_meta__rec_fini(&rec);
    free(raw);
    return rc;
}

/* ---- the move -------------------------------------------------------------------- */

struct tr {
    struct strata_meta *m;
    const struct strata_transition *t;
    unsigned set;
    uint32_t place;
    struct strata_tier *src, *dst;
    uint8_t sk[SORTKEY_LEN];
    struct meta_rec rec; /* the record copied from (decoded from raw) */
    char *raw;
    struct meta_piece *ps;
    size_t nps;
    uint8_t (*nids)[STRATA_DATA_ID_LEN];
    uint32_t *crcs;
    uint64_t bytes;
    bool copying_seen;
    /* The Object Lock state the new copy holds on a tier that keeps lock
     * state of its own (dst->ops->lock_set): the record's when the copy
     * began, brought up to date before the switch (lock_catch_up). */
    struct strata_obj_lock sent;
    /* Multipart: the new part table chunks and index. */
    char **tv;
    size_t *tvl;
    size_t nchunks;
    uint8_t *pidx;
};

int strata_meta__data_copy(struct strata_tier *src, struct strata_tier *dst, uint32_t place,
                           const uint8_t *id, const uint8_t *nid, uint64_t size,
                           const struct strata_tier_lock *lk,
                           int (*chunk_cb)(void *ud, size_t n), void *ud, uint8_t *buf,
                           uint32_t *crc_out)
{
    const struct strata_tier_ops *so = src->ops, *dop = dst->ops;
    void *r = NULL, *w = NULL;
    int rc = so->reader_open(src->impl, place, id, size, &r);
    if (rc == 0)
        rc = dop->writer_open(dst->impl, place, nid, &w);
    if (rc == 0 && lk && dop->writer_lock)
        rc = dop->writer_lock(w, lk);
    uint32_t crc = 0;
    for (uint64_t off = 0; rc == 0 && off < size;) {
        size_t n = size - off < COPY_CHUNK ? (size_t)(size - off) : COPY_CHUNK;
        rc = so->read(r, off, buf, n);
        if (rc == 0) {
            crc = strata_crc32c(crc, buf, n);
            rc = dop->write(w, buf, n);
        }
        off += n;
        if (rc == 0 && chunk_cb)
            rc = chunk_cb(ud, n);
    }
    if (rc == 0)
        rc = dop->finish(w);
    if (w)
        dop->writer_destroy(w);
    if (r)
        so->reader_close(r);
    *crc_out = crc;
    return rc;
}

int strata_meta__data_verify(struct strata_tier *dst, uint32_t place, const uint8_t *nid,
                             uint64_t size, uint32_t crc_want, uint8_t *buf)
{
    const struct strata_tier_ops *dop = dst->ops;
    if (dop->verify)
        return dop->verify(dst->impl, place, nid, size, crc_want);
    void *r = NULL;
    int rc = dop->reader_open(dst->impl, place, nid, size, &r);
    uint32_t crc = 0;
    for (uint64_t off = 0; rc == 0 && off < size;) {
        size_t n = size - off < COPY_CHUNK ? (size_t)(size - off) : COPY_CHUNK;
        rc = dop->read(r, off, buf, n);
        if (rc == 0)
            crc = strata_crc32c(crc, buf, n);
        off += n;
    }
    if (r)
        dop->reader_close(r);
    if (rc == 0 && crc != crc_want)
        rc = STRATA_ECORRUPT;
    return rc;
}

static int copy_chunk_cb(void *ud, size_t n)
{
    struct tr *x = ud;
    x->bytes += n;
    if (!x->copying_seen) {
        x->copying_seen = true;
        step(x->m, STRATA_TR_STEP_COPYING);
    }
    return x->t->progress ? x->t->progress(x->t->ud, x->bytes) : 0;
}

/* What a tier that keeps lock state holds for lock l: false when l locks
 * nothing now. */
static bool tier_lock_of(struct strata_meta *m, const struct strata_obj_lock *l,
                         struct strata_tier_lock *lk)
{
    int64_t now = strata_meta_lock_now_ms(m);
    memset(lk, 0, sizeof(*lk));
    lk->legal_hold = l->legal_hold;
    bool locked = strata_obj_lock_active(l, now);
    if (locked && l->mode != STRATA_LOCK_NONE && l->until_ms > now) {
        lk->mode = l->mode;
        lk->until_ms = l->until_ms;
    }
    return locked;
}

static int copy_piece(struct tr *x, size_t i, uint8_t *buf)
{
    /* A tier that keeps lock state of its own gets the version's, or
     * refuses the move (ELOCKED) when it cannot keep it locked. */
    struct strata_tier_lock lk;
    bool locked = tier_lock_of(x->m, &x->rec.lock, &lk);
    return strata_meta__data_copy(x->src, x->dst, x->place, x->ps[i].id, x->nids[i],
                                  x->ps[i].size, locked ? &lk : NULL, copy_chunk_cb, x, buf,
                                  &x->crcs[i]);
}

static bool lock_same(const struct strata_obj_lock *a, const struct strata_obj_lock *b)
{
    return a->mode == b->mode && a->until_ms == b->until_ms && a->legal_hold == b->legal_hold;
}

/* A retention or legal hold changed while the data was copied (the record
 * names the old tier then, so nothing else carries the change to the new
 * copy): the new copy gets the version's current state before the switch,
 * or the move is refused (ELOCKED from a tier that cannot lock, counted
 * there) rather than leave the data less locked than its version. */
static int lock_catch_up(struct tr *x)
{
    if (!x->dst->ops->lock_set)
        return 0; /* the record alone holds the lock state */
    uint8_t sk[SORTKEY_LEN];
    struct meta_rec rec;
    char *raw = NULL;
    char vid[STRATA_VERSION_ID_MAX + 1];
    memset(&rec, 0, sizeof(rec));
    strata_meta__vid_format(x->sk, vid);
    int rc = strata_meta__rec_get(x->m, x->t->bucket, x->t->key, vid, sk, &rec, &raw);
    if (rc == 0 && !lock_same(&rec.lock, &x->sent)) {
        struct strata_tier_lock lk;
        tier_lock_of(x->m, &rec.lock, &lk);
        for (size_t i = 0; rc == 0 && i < x->nps; i++)
            rc = x->dst->ops->lock_set(x->dst->impl, x->place, x->nids[i], &lk);
        if (rc == 0)
            x->sent = rec.lock;
    }
    strata_meta__rec_fini(&rec);
    free(raw);
    return rc;
}

static int verify_piece(struct tr *x, size_t i, uint8_t *buf)
{
    return strata_meta__data_verify(x->dst, x->place, x->nids[i], x->ps[i].size, x->crcs[i],
                                    buf);
}

/* The part table with the new data ids: chunks and their index. */
static int new_ptab(struct tr *x)
{
    const struct meta_rec *r = &x->rec;
    x->nchunks = (r->nparts + MP_CHUNK_PARTS - 1) / MP_CHUNK_PARTS;
    x->tv = calloc(x->nchunks, sizeof(*x->tv));
    x->tvl = calloc(x->nchunks, sizeof(*x->tvl));
    x->pidx = malloc(r->pidx_len ? r->pidx_len : 1);
    struct meta_part *parts = calloc(MP_CHUNK_PARTS, sizeof(*parts));
    if (!x->tv || !x->tvl || !x->pidx || !parts) {
        free(parts);
        return STRATA_ENOMEM;
    }
    if (r->pidx_len != x->nchunks * MP_IDX_ENT) {
        free(parts);
        return STRATA_ECORRUPT;
    }
    memcpy(x->pidx, r->pidx, r->pidx_len);
    size_t next = 0;
    int rc = 0;
    for (size_t c = 0; rc == 0 && c < x->nchunks; c++) {
        size_t got = 0;
        rc = strata_meta__ptab_load(x->m, x->set, x->t->bucket, x->t->key, x->sk, r,
                                    (unsigned)c, parts, &got);
        for (size_t i = 0; rc == 0 && i < got; i++) {
            if (!parts[i].has_data_id || parts[i].size == 0)
                continue;
            if (next >= x->nps || memcmp(parts[i].data_id, x->ps[next].id, STRATA_DATA_ID_LEN)) {
                rc = STRATA_EPRECOND;
                break;
            }
            memcpy(parts[i].data_id, x->nids[next++], STRATA_DATA_ID_LEN);
        }
        if (rc == 0)
            rc = strata_meta__ptab_encode(parts, got, &x->tv[c], &x->tvl[c]);
        if (rc == 0) {
            uint32_t crc = strata_crc32c(0, x->tv[c], x->tvl[c]);
            for (int b = 0; b < 4; b++)
                x->pidx[c * MP_IDX_ENT + 8 + b] = (uint8_t)(crc >> (24 - 8 * b));
        }
    }
    free(parts);
    return rc;
}

/* Under the key lock, on the agreed record: switch only if it still names
 * the data that was copied (an overwrite of a null version, a delete, an
 * earlier switch: EPRECOND). */
static int switch_cb(void *ud, const uint8_t *sk, const struct meta_rec *cur,
                     struct meta_edit *e)
{
    struct tr *x = ud;
    const struct meta_rec *o = &x->rec;
    if (memcmp(sk, x->sk, SORTKEY_LEN) != 0 || !strata_meta__rec_same_data(cur, o) ||
        strcmp(cur->tier, o->tier) != 0)
        return STRATA_EPRECOND;
    if (x->dst->ops->lock_set && !lock_same(&cur->lock, &x->sent))
        return STRATA_EBUSY; /* changed again since lock_catch_up: once more */
    e->storage_class = x->t->storage_class;
    e->tier = x->dst == x->m->tiers[0] ? "" : x->dst->name;
    if (cur->flags & REC_F_MULTIPART) {
        e->pidx = x->pidx;
        e->pidx_len = cur->pidx_len;
        e->nchunks = x->nchunks; /* the new 'T' chunks (the backend keeps undo copies) */
        e->chunk_v = x->tv;
        e->chunk_len = x->tvl;
    } else if (cur->has_data_id && x->nps == 1) {
        e->set_data_id = true;
        memcpy(e->data_id, x->nids[0], STRATA_DATA_ID_LEN);
    }
    return 0;
}

static void tr_fini(struct tr *x)
{
    for (size_t c = 0; x->tv && c < x->nchunks; c++)
        free(x->tv[c]);
    free(x->tv);
    free(x->tvl);
    free(x->pidx);
    free(x->ps);
    free(x->nids);
    free(x->crcs);
    strata_meta__rec_fini(&x->rec);
    free(x->raw);
}

/* The version is pinned by the caller.  Intent, copy, verify, switch. */
static int move_data(struct tr *x, struct strata_transition_result *res)
{
    struct strata_meta *m = x->m;
    const struct strata_transition *t = x->t;
    int rc = strata_meta__pieces_of(m, x->set, t->bucket, t->key, x->sk, &x->rec, &x->ps, &x->nps);
    if (rc)
        return rc;
    x->nids = calloc(x->nps ? x->nps : 1, STRATA_DATA_ID_LEN);
    x->crcs = calloc(x->nps ? x->nps : 1, sizeof(*x->crcs));
    uint8_t *buf = malloc(COPY_CHUNK);
    if (!x->nids || !x->crcs || !buf) {
        free(buf);
        return STRATA_ENOMEM;
    }
    for (size_t i = 0; i < x->nps; i++)
        strata_data_id_new(x->nids[i]);
    struct intent in;
    memset(&in, 0, sizeof(in));
    snprintf(in.src, sizeof(in.src), "%s", x->src == m->tiers[0] ? "" : x->src->name);
    snprintf(in.dst, sizeof(in.dst), "%s", x->dst == m->tiers[0] ? "" : x->dst->name);
    in.old = malloc(x->nps * STRATA_DATA_ID_LEN + 1);
    in.nold = in.nnew = x->nps;
    in.nw = x->nids;
    char *v = NULL;
    size_t vl = 0;
    rc = in.old ? 0 : STRATA_ENOMEM;
    for (size_t i = 0; rc == 0 && i < x->nps; i++)
        memcpy(in.old[i], x->ps[i].id, STRATA_DATA_ID_LEN);
    if (rc == 0)
        rc = intent_encode(&in, &v, &vl);
    free(in.old);
    if (rc == 0)
        rc = m->store->intent_put(m, t->bucket, t->key, x->sk, v, vl);
    free(v);
    if (rc) {
        free(buf);
        return rc;
    }
    step(m, STRATA_TR_STEP_INTENT);
    for (size_t i = 0; rc == 0 && i < x->nps; i++)
        rc = copy_piece(x, i, buf);
    if (rc == 0)
        step(m, STRATA_TR_STEP_COPIED);
    for (size_t i = 0; rc == 0 && i < x->nps; i++)
        rc = verify_piece(x, i, buf);
    free(buf);
    if (rc == 0)
        step(m, STRATA_TR_STEP_VERIFIED);
    if (rc == 0 && (x->rec.flags & REC_F_MULTIPART))
        rc = new_ptab(x);
    char vid[STRATA_VERSION_ID_MAX + 1];
    strata_meta__vid_format(x->sk, vid);
    /* The switch keeps the record's current lock state (it edits the
     * tier and data ids only); the new copy is brought up to it first. */
    x->sent = x->rec.lock;
    for (int tries = 0; rc == 0; tries++) {
        rc = lock_catch_up(x);
        if (rc == 0)
            rc = strata_meta__rec_rewrite(m, t->bucket, t->key, vid, switch_cb, x, NULL,
                                          &res->seq_ns);
        if (rc != STRATA_EBUSY || tries == 7)
            break;
        rc = 0;
    }
    res->bytes = x->bytes;
    if (rc == 0) {
        res->moved = true;
        step(m, STRATA_TR_STEP_SWITCHED);
    }
    return rc;
}

/* Inline data lives in the records: only the class and tier change. */
static int inline_cb(void *ud, const uint8_t *sk, const struct meta_rec *cur,
                     struct meta_edit *e)
{
    struct tr *x = ud;
    if (memcmp(sk, x->sk, SORTKEY_LEN) != 0 || !strata_meta__rec_same_data(cur, &x->rec) ||
        strcmp(cur->tier, x->rec.tier) != 0)
        return STRATA_EPRECOND;
    e->storage_class = x->t->storage_class;
    e->tier = x->dst == x->m->tiers[0] ? "" : x->dst->name;
    return 0;
}

int strata_obj_transition(struct strata_meta *m, const struct strata_transition *t,
                          struct strata_transition_result *res)
{
    memset(res, 0, sizeof(*res));
    if (!t->bucket || !t->key || !t->storage_class || strlen(t->storage_class) >= 32)
        return STRATA_EINVAL;
    struct tr x;
    memset(&x, 0, sizeof(x));
    x.m = m;
    x.t = t;
    x.dst = strata_meta__tier(m, t->tier);
    if (!x.dst || !t->tier)
        return STRATA_EINVAL;
    x.set = strata_meta__set_of(m, t->bucket, t->key);
    x.place = strata_meta__place(t->bucket, t->key);
    struct meta_pin *pin = NULL;
    int rc;
    for (unsigned attempt = 0;; attempt++) {
        uint64_t gen = strata_meta__pin_gen(m, t->bucket, t->key);
        rc = strata_meta__rec_get(m, t->bucket, t->key, t->version_id, x.sk, &x.rec, &x.raw);
        if (rc)
            return rc;
        rc = strata_meta__pin(m, x.set, t->bucket, t->key, x.sk, gen, &pin);
        if (rc != STRATA_EBUSY || attempt == 16)
            break;
        strata_meta__rec_fini(&x.rec);
        free(x.raw);
        x.raw = NULL;
    }
    if (rc) {
        tr_fini(&x);
        return rc;
    }
    x.src = strata_meta__tier(m, x.rec.tier);
    char *iv = NULL;
    size_t ivl = 0;
    int qrc = m->store->intent_get(m, t->bucket, t->key, x.sk, &iv, &ivl);
    bool pending = qrc == 0;
    free(iv);
    if (!x.src) {
        rc = STRATA_EINVAL; /* on a tier this daemon does not know */
    } else if (pending) {
        rc = STRATA_EBUSY; /* resolved below, or at its readers' close */
    } else if (qrc != 0 && qrc != STRATA_ENOTFOUND) {
        rc = qrc;
    } else if (x.src == x.dst && strcmp(x.rec.storage_class, t->storage_class) == 0) {
        rc = 0; /* there already */
    } else if ((x.rec.flags & REC_F_INLINE) || x.src == x.dst) {
        char vid[STRATA_VERSION_ID_MAX + 1];
        strata_meta__vid_format(x.sk, vid);
        rc = strata_meta__rec_rewrite(m, t->bucket, t->key, vid, inline_cb, &x, NULL,
                                      &res->seq_ns);
        res->moved = rc == 0;
        if (rc == 0)
            step(m, STRATA_TR_STEP_SWITCHED);
        strata_meta__unpin(m, pin);
        tr_fini(&x);
        return rc;
    } else {
        rc = move_data(&x, res);
    }
    /* Our own pin goes first, so the resolution is not parked on it.  On
     * success it removes the source, on failure the copies (a failed
     * intent write left nothing to resolve). */
    strata_meta__unpin(m, pin);
    intent_resolve(m, x.set, t->bucket, t->key, x.sk);
    tr_fini(&x);
    return rc;
}
