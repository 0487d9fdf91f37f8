/*
 * restore.c - restored copies of versions on archive tiers (RestoreObject).
 *
 * A version whose data is on an archive tier (strata_meta_tier_archive) is
 * not read from there: a GET needs a restored copy, a temporary copy of
 * its data on the hot tier, kept beside the version (the version record
 * and its tier data are never changed by a restore).
 *
 * The copy is recorded in its own record, beside the version in the store
 * (store.h restore_*: an 'R' key on the version's set locally, r/ on its
 * index shard on RADOS): its state (ongoing, done), the days asked for,
 * the expiry of a done copy (of an ongoing one: its last sign of life),
 * and the data ids: the version's (in part order), the copy's on the hot
 * tier, their sizes.  Every change is a swap of the record as read (a
 * compare-and-set), so gateways sharing a store agree:
 *   - a request writes an ongoing record without copy ids;
 *   - a run claims it: fresh copy ids (pending: reclaimed by a backend's
 *     gc unless the record is done) in one swap that drops an earlier
 *     attempt's; it copies, reads back and compares, shows a sign of life
 *     now and then, and switches the record to done only while it is
 *     still its claim; so a GET serves only a done, unexpired copy;
 *   - a run that fails, or finds its claim gone (the version dropped, a
 *     sweep that judged it dead handed it to another run), removes its
 *     copy (and its record while it holds it): it can be asked again;
 *   - the copy's data is always named by a record or pending while it
 *     exists (orphan reclaim and heal read 'R' records locally:
 *     local/orphan.c, local/heal.c);
 *   - the version's drop (delete, overwrite) removes the copy with it
 *     (locally strata_meta__restore_drop, from strata_meta__drop_now; on
 *     RADOS the commit's own op, rados/key.c);
 *   - the sweep (strata_meta_restore_sweep) removes expired copies, unless
 *     a GET here pins the version (that data is then left to orphan
 *     reclaim; a backend that reclaims in its ops queues it after a grace
 *     that covers other gateways' readers), and hands back copies whose
 *     run gave no sign of life.
 * Object Lock is untouched: the copy is not a version.
 *
 * Threads: any.
 */
#include "meta_internal.h"
#include "store.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define COPY_BUF (1u << 20)

enum { R_ONGOING = 0, R_DONE = 1 };

struct rrec {
    unsigned state, days;
    int64_t expiry_ms;
    size_t n;
    uint8_t (*src)[STRATA_DATA_ID_LEN];
    uint8_t (*dst)[STRATA_DATA_ID_LEN];
    uint64_t *size;
};

static void rrec_fini(struct rrec *x)
{
    free(x->src);
    free(x->dst);
    free(x->size);
    memset(x, 0, sizeof(*x));
}

static int rrec_alloc(struct rrec *x, size_t n)
{
    x->n = n;
    x->src = calloc(n ? n : 1, STRATA_DATA_ID_LEN);
    x->dst = calloc(n ? n : 1, STRATA_DATA_ID_LEN);
    x->size = calloc(n ? n : 1, sizeof(*x->size));
    return x->src && x->dst && x->size ? 0 : STRATA_ENOMEM;
}

int64_t strata_restore_expiry_ms(int64_t now_ms, unsigned days, int64_t day_ms)
{
    if (day_ms <= 0)
        day_ms = 86400000;
    /* AWS: now + Days, rounded up to the next midnight UTC (a day
     * boundary of the epoch). */
    int64_t t = now_ms + (int64_t)days * day_ms;
    int64_t rem = t % day_ms;
    if (rem < 0)
        rem += day_ms;
    return rem ? t - rem + day_ms : t;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int rrec_encode(const struct rrec *x, char **out, size_t *outlen)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    strata_meta__mp_map_begin(&sb, &pk, 7);
    msgpack_pack_uint64(&pk, 1);
    msgpack_pack_uint64(&pk, x->state);
    msgpack_pack_uint64(&pk, 2);
    msgpack_pack_uint64(&pk, x->days);
    msgpack_pack_uint64(&pk, 3);
    msgpack_pack_int64(&pk, x->expiry_ms);
    msgpack_pack_uint64(&pk, 4);
    strata_meta__pk_ids(&pk, x->src, x->n);
    msgpack_pack_uint64(&pk, 5);
    strata_meta__pk_ids(&pk, x->dst, x->n);
    msgpack_pack_uint64(&pk, 6);
    msgpack_pack_array(&pk, x->n);
    for (size_t i = 0; i < x->n; i++)
        msgpack_pack_uint64(&pk, x->size[i]);
    if (!sb.data) {
        msgpack_sbuffer_destroy(&sb);
        return STRATA_ENOMEM;
    }
    *outlen = sb.size;
    *out = msgpack_sbuffer_release(&sb);
    msgpack_sbuffer_destroy(&sb);
    return 0;
}

static bool get_ids(const msgpack_object *o, uint8_t (*ids)[STRATA_DATA_ID_LEN], size_t n)
{
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        const msgpack_object *e = &o->via.array.ptr[i];
        if (e->type != MSGPACK_OBJECT_BIN || e->via.bin.size != STRATA_DATA_ID_LEN)
            return false;
        memcpy(ids[i], e->via.bin.ptr, STRATA_DATA_ID_LEN);
    }
    return true;
}

static bool get_u64(const msgpack_object *o, uint64_t *v)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return false;
    *v = o->via.u64;
    return true;
}

static int rrec_decode(const char *buf, size_t len, struct rrec *x)
{
    memset(x, 0, sizeof(*x));
    msgpack_unpacked up;
    bool ok = strata_meta__mp_map_open(buf, len, &up) && up.data.via.map.size == 7;
    const msgpack_object *f[7] = {0};
    for (uint32_t i = 0; ok && i < 7; i++) {
        const msgpack_object_kv *kv = &up.data.via.map.ptr[i];
        ok = kv->key.type == MSGPACK_OBJECT_POSITIVE_INTEGER && kv->key.via.u64 < 7 &&
             !f[kv->key.via.u64];
        if (ok)
            f[kv->key.via.u64] = &kv->val;
    }
    uint64_t fmt = 0, state = 0, days = 0;
    ok = ok && get_u64(f[0], &fmt) && fmt == REC_FORMAT && get_u64(f[1], &state) &&
         state <= R_DONE && get_u64(f[2], &days) && days <= UINT32_MAX &&
         (f[3]->type == MSGPACK_OBJECT_POSITIVE_INTEGER ||
          f[3]->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) &&
         f[4]->type == MSGPACK_OBJECT_ARRAY && f[4]->via.array.size <= META_PARTS_MAX &&
         f[6]->type == MSGPACK_OBJECT_ARRAY && f[6]->via.array.size == f[4]->via.array.size;
    if (ok) {
        x->state = (unsigned)state;
        x->days = (unsigned)days;
        x->expiry_ms = f[3]->via.i64;
        ok = rrec_alloc(x, f[4]->via.array.size) == 0 && get_ids(f[4], x->src, x->n) &&
             get_ids(f[5], x->dst, x->n);
        for (size_t i = 0; ok && i < x->n; i++)
            ok = get_u64(&f[6]->via.array.ptr[i], &x->size[i]);
    }
    msgpack_unpacked_destroy(&up);
    if (!ok) {
        rrec_fini(x);
        return STRATA_ECORRUPT;
    }
    return 0;
}


/* ---- the record through the store (store.h restore_*) -------------------------- */

/* A record as stored: decoded, and its bytes (the swap's compare). */
struct rcur {
    struct rrec x;
    char *raw;
    size_t len;
};

static void rcur_fini(struct rcur *c)
{
    rrec_fini(&c->x);
    free(c->raw);
    c->raw = NULL;
    c->len = 0;
}

/* 0, STRATA_ENOTFOUND (c zeroed), or a read or decode error. */
static int rcur_get(struct strata_meta *m, const char *bucket, const char *key, const uint8_t *sk,
                    struct rcur *c)
{
    memset(c, 0, sizeof(*c));
    int rc = m->store->restore_get(m, bucket, key, sk, &c->raw, &c->len);
    if (rc == 0)
        rc = rrec_decode(c->raw, c->len, &c->x);
    if (rc)
        rcur_fini(c);
    return rc;
}

static bool zero_id(const uint8_t *id)
{
    static const uint8_t z[STRATA_DATA_ID_LEN];
    return memcmp(id, z, STRATA_DATA_ID_LEN) == 0;
}

/* Replace the record c (NULL: none) with nw (NULL: remove), with the
 * data meanings of store.h's struct strata_meta__restore_swap.  0 or
 * STRATA_EPRECOND (changed meanwhile) or an error. */
static int swap(struct strata_meta *m, const char *bucket, const char *key, const uint8_t *sk,
                const struct rcur *c, const struct rrec *nw, const struct rrec *pend,
                enum strata_meta__restore_pend op, const struct rrec *drop)
{
    struct strata_meta__restore_swap s = {.bucket = bucket, .key = key, .sk = sk,
                                          .old = c ? c->raw : NULL, .oldlen = c ? c->len : 0,
                                          .pend_op = pend ? op : STRATA_META__PEND_NONE};
    char *v = NULL;
    int rc = nw ? rrec_encode(nw, &v, &s.nwlen) : 0;
    if (rc)
        return rc;
    s.nw = v;
    if (pend) {
        s.pend = (const uint8_t(*)[STRATA_DATA_ID_LEN])pend->dst;
        s.npend = pend->n;
    }
    if (drop && drop->n && !zero_id(drop->dst[0])) {
        s.drop = (const uint8_t(*)[STRATA_DATA_ID_LEN])drop->dst;
        s.ndrop = drop->n;
    }
    rc = m->store->restore_swap(m, &s);
    free(v);
    return rc;
}

static void rm_ids(struct strata_meta *m, const char *bucket, const char *key, const struct rrec *x)
{
    for (size_t i = 0; i < x->n; i++) {
        if (zero_id(x->dst[i]))
            continue; /* not assigned yet: no data */
        int rc = strata_meta__data_rm(m, "", bucket, key, x->dst[i]);
        if (rc && rc != STRATA_ENOTFOUND)
            strata_log(&m->log, STRATA_LOG_WARN, "meta", "restored copy of %s/%s: remove: %s",
                       bucket, key, strata_errname(rc));
    }
}

/* The copy x's data after a swap that dropped it: the backend queued it
 * (reclaim_in_txn) or it goes now. */
static void reclaim_copies(struct strata_meta *m, const char *bucket, const char *key,
                           const struct rrec *x)
{
    if (!m->store->reclaim_in_txn)
        rm_ids(m, bucket, key, x);
}

static bool same_ids(const struct rrec *a, const struct rrec *b)
{
    return a->n == b->n && memcmp(a->dst, b->dst, a->n * STRATA_DATA_ID_LEN) == 0;
}

static int rrec_copy(const struct rrec *x, struct rrec *y)
{
    memset(y, 0, sizeof(*y));
    int rc = rrec_alloc(y, x->n);
    if (rc) {
        rrec_fini(y);
        return rc;
    }
    y->state = x->state;
    y->days = x->days;
    y->expiry_ms = x->expiry_ms;
    memcpy(y->src, x->src, x->n * STRATA_DATA_ID_LEN);
    memcpy(y->dst, x->dst, x->n * STRATA_DATA_ID_LEN);
    memcpy(y->size, x->size, x->n * sizeof(*x->size));
    return 0;
}

#define SWAP_TRIES 16
#define NOT_OURS 1 /* update_mine: the record is not this run's any more */

/* ---- archive tiers ----------------------------------------------------------- */

int strata_meta_tier_archive(struct strata_meta *m, const char *tier)
{
    if (!m->store->restore_swap)
        return STRATA_ENOTIMPL; /* the backend keeps no restore records */
    int i = strata_meta__tier_idx(m, tier);
    if (i <= 0)
        return STRATA_EINVAL; /* unknown, or the hot tier */
    m->archive_tiers |= 1u << i;
    return 0;
}

bool strata_meta_tier_archived(struct strata_meta *m, const char *tier)
{
    int i = strata_meta__tier_idx(m, tier);
    return i > 0 && (m->archive_tiers & (1u << i));
}

int64_t strata_restore_stale_ms(int64_t day_ms)
{
    if (day_ms <= 0)
        day_ms = 86400000;
    int64_t t = day_ms / 24; /* an hour of a real day */
    return t < 3000 ? 3000 : t;
}

/* ---- state and request ------------------------------------------------------- */

/* The version (its record decoded). */
struct rver {
    unsigned set;
    uint8_t sk[SORTKEY_LEN];
    struct meta_rec rec;
    char *raw;
};

static int rver_get(struct strata_meta *m, const char *bucket, const char *key, const char *vid,
                    struct rver *v)
{
    memset(v, 0, sizeof(*v));
    int rc = strata_meta__rec_get(m, bucket, key, vid, v->sk, &v->rec, &v->raw);
    if (rc)
        return rc;
    v->set = strata_meta__set_of(m, bucket, key);
    if (!strata_meta_tier_archived(m, v->rec.tier[0] ? v->rec.tier : STRATA_TIER_HOT))
        return STRATA_EINVAL;
    return 0;
}

static void rver_fini(struct rver *v)
{
    strata_meta__rec_fini(&v->rec);
    free(v->raw);
}

static void state_of(const struct rrec *x, struct strata_restore_state *st)
{
    st->present = true;
    st->ongoing = x->state == R_ONGOING;
    st->expiry_ms = x->state == R_DONE ? x->expiry_ms : 0;
    st->days = x->days;
}

int strata_obj_restore_get(struct strata_meta *m, const char *bucket, const char *key,
                           const char *version_id, struct strata_restore_state *st)
{
    memset(st, 0, sizeof(*st));
    struct rver v;
    int rc = rver_get(m, bucket, key, version_id, &v);
    struct rcur c;
    if (rc == 0) {
        rc = rcur_get(m, bucket, key, v.sk, &c);
        if (rc == 0) {
            /* An expired copy the sweep has not removed yet is gone. */
            if (c.x.state == R_ONGOING || c.x.expiry_ms > wall_ms())
                state_of(&c.x, st);
            rcur_fini(&c);
        }
        if (rc == STRATA_ENOTFOUND)
            rc = 0;
    }
    rver_fini(&v);
    return rc;
}

/* A new ongoing record for version v: its pieces, no copy ids yet (the
 * run assigns them), the time it was asked in the field a done record
 * keeps its expiry in (an ongoing copy's last sign of life). */
static int new_record(struct strata_meta *m, const char *bucket, const char *key,
                      const struct rver *v, unsigned days, struct rrec *x)
{
    struct meta_piece *ps = NULL;
    size_t n = 0;
    int rc = strata_meta__pieces_of(m, v->set, bucket, key, v->sk, &v->rec, &ps, &n);
    if (rc == 0)
        rc = rrec_alloc(x, n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        memcpy(x->src[i], ps[i].id, STRATA_DATA_ID_LEN);
        x->size[i] = ps[i].size;
    }
    free(ps);
    x->state = R_ONGOING;
    x->days = days;
    x->expiry_ms = wall_ms();
    return rc;
}

int strata_obj_restore_request(struct strata_meta *m, const char *bucket, const char *key,
                               const char *version_id, unsigned days, int64_t day_ms,
                               struct strata_restore_state *st)
{
    memset(st, 0, sizeof(*st));
    struct rver v;
    int rc = rver_get(m, bucket, key, version_id, &v);
    for (unsigned attempt = 0; rc == 0; attempt++) {
        if (attempt == SWAP_TRIES) {
            rc = STRATA_EBUSY;
            break;
        }
        struct rcur c;
        rc = rcur_get(m, bucket, key, v.sk, &c);
        if (rc == 0 && c.x.state == R_DONE && c.x.expiry_ms > wall_ms()) {
            /* AWS: a restore of a restored copy sets its new expiry. */
            struct rrec y;
            rc = rrec_copy(&c.x, &y);
            if (rc == 0) {
                y.days = days;
                y.expiry_ms = strata_restore_expiry_ms(wall_ms(), days, day_ms);
                rc = swap(m, bucket, key, v.sk, &c, &y, NULL, 0, NULL);
                if (rc == 0)
                    state_of(&y, st);
                rrec_fini(&y);
            }
            rc = rc ? rc : STRATA_EEXISTS;
        } else if (rc == 0 && c.x.state == R_ONGOING) {
            state_of(&c.x, st);
            rc = STRATA_EBUSY;
        } else if (rc == 0 && strata_meta__pinned(m, v.set, bucket, key, v.sk)) {
            rc = STRATA_EBUSY; /* expired, still read here: asked again after the sweep */
        } else if (rc == 0) {
            /* Expired, its removal not swept yet: removed now, then a new copy. */
            rc = swap(m, bucket, key, v.sk, &c, NULL, NULL, 0, &c.x);
            if (rc == 0)
                reclaim_copies(m, bucket, key, &c.x);
            rc = rc ? rc : STRATA_ENOTFOUND;
        }
        if (rc == STRATA_ENOTFOUND) {
            struct rrec x;
            memset(&x, 0, sizeof(x));
            rc = new_record(m, bucket, key, &v, days, &x);
            if (rc == 0)
                rc = swap(m, bucket, key, v.sk, NULL, &x, NULL, 0, NULL);
            if (rc == 0)
                state_of(&x, st);
            rrec_fini(&x);
        }
        rcur_fini(&c);
        if (rc != STRATA_EPRECOND)
            break; /* else changed meanwhile: read again */
    }
    rver_fini(&v);
    return rc;
}

/* ---- the copy ------------------------------------------------------------------ */

/* A run's copy: the record as this run claimed it (its own copy ids). */
struct run {
    struct strata_meta *m;
    const char *bucket, *key;
    const uint8_t *sk;
    struct rrec mine;
    int64_t beat_ms, every_ms; /* last sign of life, and how often */
};

/* Claim the ongoing record for this run: fresh copy ids and the time now,
 * the ids of an earlier attempt (a crash, or a run another gateway took
 * it from) dropped in the same swap.  STRATA_EEXISTS: done already. */
static int claim(struct run *r)
{
    struct strata_meta *m = r->m;
    for (unsigned attempt = 0; attempt < SWAP_TRIES; attempt++) {
        struct rcur c;
        int rc = rcur_get(m, r->bucket, r->key, r->sk, &c);
        if (rc == 0 && c.x.state != R_ONGOING)
            rc = STRATA_EEXISTS;
        if (rc == 0)
            rc = rrec_copy(&c.x, &r->mine);
        if (rc == 0) {
            for (size_t i = 0; i < r->mine.n; i++)
                strata_data_id_new(r->mine.dst[i]);
            r->mine.expiry_ms = r->beat_ms = wall_ms();
            rc = swap(m, r->bucket, r->key, r->sk, &c, &r->mine, &r->mine,
                      STRATA_META__PEND_ADD, &c.x);
            if (rc == 0)
                reclaim_copies(m, r->bucket, r->key, &c.x);
            else
                rrec_fini(&r->mine);
        }
        rcur_fini(&c);
        if (rc != STRATA_EPRECOND)
            return rc;
    }
    return STRATA_EBUSY;
}

/* Swap the claimed record (still ours and ongoing) for nw (NULL: remove
 * it, our copy dropped with it) with pending op on our ids:
 * STRATA_EPRECOND when it is no longer ours. */
static int update_mine(struct run *r, const struct rrec *nw, enum strata_meta__restore_pend op)
{
    for (unsigned attempt = 0; attempt < SWAP_TRIES; attempt++) {
        struct rcur c;
        int rc = rcur_get(r->m, r->bucket, r->key, r->sk, &c);
        if (rc == STRATA_ENOTFOUND || (rc == 0 && (!same_ids(&c.x, &r->mine) ||
                                                   c.x.state != R_ONGOING)))
            rc = NOT_OURS; /* dropped with its version, or claimed again */
        if (rc == 0)
            rc = swap(r->m, r->bucket, r->key, r->sk, &c, nw, nw ? &r->mine : NULL, op,
                      nw ? NULL : &r->mine);
        rcur_fini(&c);
        if (rc == NOT_OURS)
            return STRATA_EPRECOND;
        if (rc == 0 && !nw)
            reclaim_copies(r->m, r->bucket, r->key, &r->mine);
        if (rc != STRATA_EPRECOND)
            return rc; /* else changed meanwhile: still ours? */
    }
    return STRATA_EBUSY;
}

/* After each piece: a sign of life now and then, so the sweep does not
 * hand a long copy to another run (strata_restore_stale_ms). */
static int heartbeat(struct run *r)
{
    int64_t now = wall_ms();
    if (now - r->beat_ms < r->every_ms)
        return 0;
    r->mine.expiry_ms = now;
    int rc = update_mine(r, &r->mine, STRATA_META__PEND_KEEP);
    if (rc == 0)
        r->beat_ms = now;
    return rc;
}

/* Fault tests: the process exits (as kill -9) after this many pieces were
 * copied (0: never; strata_meta_test_restore_crash). */
static unsigned crash_after;

void strata_meta_test_restore_crash(unsigned pieces)
{
    crash_after = pieces;
}

static int run_copy(struct run *r, const struct rver *v)
{
    struct strata_meta *m = r->m;
    struct strata_tier *src = strata_meta__tier(m, v->rec.tier);
    struct strata_tier *hot = m->tiers[0];
    const struct rrec *x = &r->mine;
    if (!src)
        return STRATA_EINVAL;
    struct meta_piece *ps = NULL;
    size_t n = 0;
    int rc = strata_meta__pieces_of(m, v->set, r->bucket, r->key, v->sk, &v->rec, &ps, &n);
    if (rc == 0 && n != x->n)
        rc = STRATA_EPRECOND; /* not the data the record was made for */
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (memcmp(ps[i].id, x->src[i], STRATA_DATA_ID_LEN) != 0 || ps[i].size != x->size[i])
            rc = STRATA_EPRECOND;
    free(ps);
    uint8_t *buf = rc == 0 ? malloc(COPY_BUF) : NULL;
    if (rc == 0 && !buf)
        rc = STRATA_ENOMEM;
    uint32_t place = strata_meta__place(r->bucket, r->key);
    for (size_t i = 0; rc == 0 && i < x->n; i++) {
        uint32_t crc = 0;
        rc = strata_meta__data_copy(src, hot, place, x->src[i], x->dst[i], x->size[i], NULL,
                                    NULL, NULL, buf, &crc);
        if (rc == 0)
            rc = strata_meta__data_verify(hot, place, x->dst[i], x->size[i], crc, buf);
        if (rc == 0 && crash_after && i + 1 == crash_after)
            _exit(137);
        if (rc == 0)
            rc = heartbeat(r);
    }
    free(buf);
    return rc;
}

static bool unclaimed(const struct rrec *x)
{
    for (size_t i = 0; i < x->n; i++)
        if (!zero_id(x->dst[i]))
            return false;
    return true;
}

/* A run that failed before its claim (the version unreadable, its pin
 * busy): the request's record, still ongoing and unclaimed, is removed,
 * since no run is left to make its copy; it may be asked for again.  A
 * record some run claimed meanwhile is that run's. */
static void release(struct strata_meta *m, const char *bucket, const char *key,
                    const uint8_t *sk)
{
    for (unsigned attempt = 0; attempt < SWAP_TRIES; attempt++) {
        struct rcur c;
        int rc = rcur_get(m, bucket, key, sk, &c);
        if (rc == 0 && c.x.state == R_ONGOING && unclaimed(&c.x))
            rc = swap(m, bucket, key, sk, &c, NULL, NULL, 0, NULL);
        rcur_fini(&c);
        if (rc != STRATA_EPRECOND)
            return;
    }
}

int strata_obj_restore_run(struct strata_meta *m, const char *bucket, const char *key,
                           const char *version_id, int64_t day_ms,
                           struct strata_restore_state *st)
{
    memset(st, 0, sizeof(*st));
    struct rver v;
    struct meta_pin *pin = NULL;
    int rc;
    bool found = false; /* v.sk names the version */
    for (unsigned attempt = 0;; attempt++) {
        uint64_t gen = strata_meta__pin_gen(m, bucket, key);
        rc = rver_get(m, bucket, key, version_id, &v);
        found = rc == 0;
        if (rc == 0) {
            strata_meta__tr_step(m, STRATA_RESTORE_STEP_READ);
            rc = strata_meta__pin(m, v.set, bucket, key, v.sk, gen, &pin);
        }
        if (rc != STRATA_EBUSY || attempt == 16)
            break;
        rver_fini(&v);
    }
    struct run r = {.m = m, .bucket = bucket, .key = key, .sk = v.sk,
                    .every_ms = strata_restore_stale_ms(day_ms) / 3};
    if (rc == 0)
        rc = claim(&r);
    bool mine = rc == 0;
    if (rc == 0)
        rc = run_copy(&r, &v);
    if (rc == 0) {
        struct rrec done;
        rc = rrec_copy(&r.mine, &done);
        if (rc == 0) {
            done.state = R_DONE;
            done.expiry_ms = strata_restore_expiry_ms(wall_ms(), done.days, day_ms);
            rc = update_mine(&r, &done, STRATA_META__PEND_DONE);
            if (rc == 0)
                state_of(&done, st);
            rrec_fini(&done);
        }
    }
    if (rc && mine) {
        /* Failed, or no longer ours: our copy goes, and our record with it
         * while it is ours (it may be asked for again).  Ids no record
         * names are removed now: whoever took the record over queued them
         * for reclaim, but this run may have written after that ran. */
        if (update_mine(&r, NULL, STRATA_META__PEND_NONE) == STRATA_EPRECOND)
            rm_ids(m, bucket, key, &r.mine);
    } else if (rc && rc != STRATA_EEXISTS) {
        uint8_t sk[SORTKEY_LEN];
        if (found)
            release(m, bucket, key, v.sk);
        else if (rc != STRATA_ENOTFOUND && strata_meta__vid_parse(version_id, sk) == 0)
            release(m, bucket, key, sk); /* the version unreadable: its id names it */
    }
    strata_meta__unpin(m, pin);
    rrec_fini(&r.mine);
    rver_fini(&v);
    return rc == STRATA_EEXISTS ? 0 : rc;
}

/* ---- reads, drops, expiry --------------------------------------------------- */

int strata_meta__restore_map(struct strata_meta *m, const char *bucket, const char *key,
                             const uint8_t sk[SORTKEY_LEN],
                             uint8_t (**map)[2][STRATA_DATA_ID_LEN], size_t *n)
{
    *map = NULL;
    *n = 0;
    struct rcur c;
    int rc = rcur_get(m, bucket, key, sk, &c);
    if (rc == STRATA_ENOTFOUND)
        return STRATA_EARCHIVED;
    if (rc)
        return rc;
    const struct rrec *x = &c.x;
    if (x->state != R_DONE || x->expiry_ms <= wall_ms()) {
        rcur_fini(&c);
        return STRATA_EARCHIVED;
    }
    *map = calloc(x->n ? x->n : 1, sizeof(**map));
    if (!*map) {
        rcur_fini(&c);
        return STRATA_ENOMEM;
    }
    for (size_t i = 0; i < x->n; i++) {
        memcpy((*map)[i][0], x->src[i], STRATA_DATA_ID_LEN);
        memcpy((*map)[i][1], x->dst[i], STRATA_DATA_ID_LEN);
    }
    *n = x->n;
    rcur_fini(&c);
    return 0;
}

/* Remove the record c of version sk and its copy (unless a reader here
 * pins the version: then the data is orphan reclaim's, or on a backend
 * that reclaims in its ops, queued after a grace). */
static int remove_record(struct strata_meta *m, unsigned set, const char *bucket, const char *key,
                         const uint8_t *sk, const struct rcur *c, bool mind_pins)
{
    int rc = swap(m, bucket, key, sk, c, NULL, NULL, 0, &c->x);
    if (rc == 0 && !(mind_pins && strata_meta__pinned(m, set, bucket, key, sk)))
        reclaim_copies(m, bucket, key, &c->x);
    return rc;
}

void strata_meta__restore_drop(struct strata_meta *m, unsigned set, const char *bucket,
                               const char *key, const uint8_t sk[SORTKEY_LEN])
{
    struct rcur c;
    if (rcur_get(m, bucket, key, sk, &c) != 0)
        return;
    /* An ongoing copy pins the version: its drop runs after the copy. */
    remove_record(m, set, bucket, key, sk, &c, false);
    rcur_fini(&c);
}

/* An interrupted copy whose version is gone or off the archive tier (a
 * crash before its drop ran): its record and data are removed (true). */
static bool stale_drop(struct strata_meta *m, unsigned set, const char *bucket, const char *key,
                       const uint8_t *sk, const char *vid, const struct rcur *c)
{
    struct rver v;
    int rc = rver_get(m, bucket, key, vid, &v);
    bool stale = rc == STRATA_ENOTFOUND || rc == STRATA_EMETHOD || rc == STRATA_EINVAL ||
                 (rc == 0 && memcmp(v.sk, sk, SORTKEY_LEN) != 0);
    rver_fini(&v);
    if (stale)
        remove_record(m, set, bucket, key, sk, c, false);
    return stale;
}

struct sweep {
    struct strata_meta *m;
    int64_t resume_after_ms;
    strata_restore_sweep_cb cb;
    void *ud;
    uint64_t expired;
};

/* One record found by the sweep. */
static int sweep_one(void *ud, const char *bucket, const char *key, const uint8_t sk[16])
{
    struct sweep *sw = ud;
    struct strata_meta *m = sw->m;
    unsigned set = strata_meta__set_of(m, bucket, key);
    char vid[STRATA_VERSION_ID_MAX + 1];
    strata_meta__vid_format(sk, vid);
    struct rcur c;
    int rc = rcur_get(m, bucket, key, sk, &c);
    int64_t now = wall_ms();
    if (rc == 0 && c.x.state == R_DONE && c.x.expiry_ms <= now) {
        /* A GET that pinned the version before the record went may still
         * read the copy: its data is then orphan reclaim's. */
        if (remove_record(m, set, bucket, key, sk, &c, true) == 0) {
            sw->expired++;
            if (sw->cb)
                sw->cb(sw->ud, STRATA_RESTORE_EV_EXPIRED, bucket, key, vid);
        }
    } else if (rc == 0 && c.x.state == R_ONGOING && sw->resume_after_ms >= 0 &&
               now - c.x.expiry_ms >= sw->resume_after_ms) {
        if (!stale_drop(m, set, bucket, key, sk, vid, &c) && sw->cb)
            sw->cb(sw->ud, STRATA_RESTORE_EV_RESUME, bucket, key, vid);
    }
    rcur_fini(&c);
    return 0;
}

int strata_meta_restore_sweep(struct strata_meta *m, int64_t resume_after_ms,
                              strata_restore_sweep_cb cb, void *ud, uint64_t *expired)
{
    struct sweep sw = {.m = m, .resume_after_ms = resume_after_ms, .cb = cb, .ud = ud};
    int rc = m->archive_tiers ? m->store->restore_walk(m, sweep_one, &sw) : 0;
    if (expired)
        *expired = sw.expired;
    return rc;
}

void strata_meta__restore_refs(const char *v, size_t vl, void (*cb)(const uint8_t *id, void *ud),
                               void *ud)
{
    struct rrec x;
    if (rrec_decode(v, vl, &x) != 0)
        return;
    for (size_t i = 0; i < x.n; i++)
        if (!zero_id(x.dst[i]))
            cb(x.dst[i], ud);
    rrec_fini(&x);
}

int strata_meta__restore_piece(const char *v, size_t vl, size_t i, uint8_t id[STRATA_DATA_ID_LEN],
                               uint64_t *size)
{
    struct rrec x;
    if (rrec_decode(v, vl, &x) != 0)
        return STRATA_ECORRUPT;
    int rc = STRATA_ENOTFOUND;
    if (i < x.n && x.state == R_DONE) {
        memcpy(id, x.dst[i], STRATA_DATA_ID_LEN);
        *size = x.size[i];
        rc = 0;
    } else if (i < x.n) {
        rc = STRATA_EBUSY; /* ongoing: nothing to heal yet */
    }
    rrec_fini(&x);
    return rc;
}
