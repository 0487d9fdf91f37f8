/*
 * restore.c - restored copies of versions on archive tiers (RestoreObject).
 *
 * A version whose data is on an archive tier (strata_meta_tier_archive) is
 * not read from there: a GET needs a restored copy, a temporary copy of
 * its data on the hot tier, kept beside the version (the version record
 * and its tier data are never changed by a restore).
 *
 * The copy is recorded in its own record ('R' bucket 0 key 0 sortkey, on
 * the version's set, written like a transition intent with the write
 * quorum): its state (ongoing, done), the days asked for, the expiry of a
 * done copy, and the data ids: the version's (in part order), the copy's on
 * the hot tier, their sizes.  The record is written before the first byte
 * is copied and switched to done only after every copy was read back and
 * compared, so:
 *   - a GET serves only a done, unexpired copy (strata_meta__restore_map);
 *   - the copy's data is always named by a record while it exists (orphan
 *     reclaim and heal read 'R' records: local/orphan.c, local/heal.c);
 *   - a crash mid-copy leaves an ongoing record, which the sweep hands back
 *     for a resumed copy (whose first step removes what the crash left);
 *   - a failed copy removes its data and the record: it can be asked again;
 *   - the version's drop (delete, overwrite) removes the copy with it
 *     (strata_meta__restore_drop, from strata_meta__drop_now);
 *   - expiry (strata_meta_restore_sweep) removes the record, then the data,
 *     unless a GET pins the version: that data is then left to orphan
 *     reclaim (no record names it any more).
 * Object Lock is untouched: the copy is not a version.
 *
 * Threads: any; the record's read-modify-writes hold the key lock.
 */
#include "meta_internal.h"
#include "store.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RKEY_MAX (1 + STRATA_BUCKET_NAME_MAX + 1 + STRATA_KEY_MAX + 1 + SORTKEY_LEN)
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

static size_t rkey(char *out, const char *bucket, const char *key, const uint8_t *sk)
{
    size_t n = strata_meta__key_obj(out, RKEY_MAX, bucket, key, sk);
    out[0] = 'R';
    return n;
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

/* The quorum's record: 0, STRATA_ENOTFOUND, or a read error. */
static int rrec_read(struct strata_meta *m, unsigned set, const char *k, size_t kl,
                     struct rrec *x)
{
    memset(x, 0, sizeof(*x));
    struct meta_qraw q;
    int rc = strata_meta__qraw_get(m, set, k, kl, false, &q);
    if (rc == 0)
        rc = rrec_decode(q.v[q.win], q.vl[q.win], x);
    strata_meta__qraw_fini(&q);
    return rc;
}

static int rrec_write(struct strata_meta *m, unsigned set, const char *k, size_t kl,
                      const struct rrec *x)
{
    char *v = NULL;
    size_t vl = 0;
    int rc = rrec_encode(x, &v, &vl);
    if (rc == 0)
        rc = strata_meta__intent_write(m, set, k, kl, v, vl);
    free(v);
    return rc;
}

static void rm_copies(struct strata_meta *m, const char *bucket, const char *key,
                      const struct rrec *x)
{
    for (size_t i = 0; i < x->n; i++) {
        int rc = strata_meta__data_rm(m, "", bucket, key, x->dst[i]);
        if (rc)
            strata_log(&m->log, STRATA_LOG_WARN, "meta", "restored copy of %s/%s: remove: %s",
                       bucket, key, strata_errname(rc));
    }
}

static bool same_ids(const struct rrec *a, const struct rrec *b)
{
    return a->n == b->n && memcmp(a->dst, b->dst, a->n * STRATA_DATA_ID_LEN) == 0;
}

/* ---- archive tiers ----------------------------------------------------------- */

int strata_meta_tier_archive(struct strata_meta *m, const char *tier)
{
    if (m->store != &strata_meta__store_local)
        return STRATA_ENOTIMPL; /* the 'R' records live on the local drive sets */
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

/* ---- state and request ------------------------------------------------------- */

/* The version (its record decoded), its set and its 'R' key. */
struct rver {
    unsigned set;
    uint8_t sk[SORTKEY_LEN];
    struct meta_rec rec;
    char *raw;
    char k[RKEY_MAX];
    size_t kl;
};

static int rver_get(struct strata_meta *m, const char *bucket, const char *key, const char *vid,
                    struct rver *v)
{
    memset(v, 0, sizeof(*v));
    int rc = strata_meta__rec_get(m, bucket, key, vid, v->sk, &v->rec, &v->raw);
    if (rc)
        return rc;
    v->set = strata_meta__set_of(m, bucket, key);
    v->kl = rkey(v->k, bucket, key, v->sk);
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
    struct rrec x;
    if (rc == 0) {
        rc = rrec_read(m, v.set, v.k, v.kl, &x);
        if (rc == 0) {
            /* An expired copy the sweep has not removed yet is gone. */
            if (x.state == R_ONGOING || x.expiry_ms > wall_ms())
                state_of(&x, st);
            rrec_fini(&x);
        }
        if (rc == STRATA_ENOTFOUND)
            rc = 0;
    }
    rver_fini(&v);
    return rc;
}

int strata_obj_restore_request(struct strata_meta *m, const char *bucket, const char *key,
                               const char *version_id, unsigned days, int64_t day_ms,
                               struct strata_restore_state *st)
{
    memset(st, 0, sizeof(*st));
    struct rver v;
    int rc = rver_get(m, bucket, key, version_id, &v);
    if (rc) {
        rver_fini(&v);
        return rc;
    }
    pthread_mutex_t *lk = strata_meta__key_lock(m, bucket, key);
    pthread_mutex_lock(lk);
    struct rrec x;
    rc = rrec_read(m, v.set, v.k, v.kl, &x);
    if (rc == 0 && x.state == R_DONE && x.expiry_ms > wall_ms()) {
        /* AWS: a restore of a restored copy sets its new expiry. */
        x.days = days;
        x.expiry_ms = strata_restore_expiry_ms(wall_ms(), days, day_ms);
        rc = rrec_write(m, v.set, v.k, v.kl, &x);
        state_of(&x, st);
        rc = rc ? rc : STRATA_EEXISTS;
    } else if (rc == 0 && x.state == R_ONGOING) {
        state_of(&x, st);
        rc = STRATA_EBUSY;
    } else if (rc == 0 && !strata_meta__pinned(m, v.set, bucket, key, v.sk)) {
        /* Expired, its removal not swept yet: removed now, then a new copy. */
        rc = strata_meta__intent_write(m, v.set, v.k, v.kl, NULL, 0);
        if (rc == 0)
            rm_copies(m, bucket, key, &x);
        rrec_fini(&x);
        rc = rc ? rc : STRATA_ENOTFOUND;
    } else if (rc == 0) {
        rc = STRATA_EBUSY; /* expired, still read: asked again after the sweep */
    }
    if (rc == STRATA_ENOTFOUND) {
        struct meta_piece *ps = NULL;
        size_t n = 0;
        rc = strata_meta__pieces_of(m, v.set, bucket, key, v.sk, &v.rec, &ps, &n);
        if (rc == 0)
            rc = rrec_alloc(&x, n);
        for (size_t i = 0; rc == 0 && i < n; i++) {
            memcpy(x.src[i], ps[i].id, STRATA_DATA_ID_LEN);
            strata_data_id_new(x.dst[i]);
            x.size[i] = ps[i].size;
        }
        free(ps);
        x.state = R_ONGOING;
        x.days = days;
        if (rc == 0)
            rc = rrec_write(m, v.set, v.k, v.kl, &x);
        if (rc == 0)
            state_of(&x, st);
    }
    pthread_mutex_unlock(lk);
    rrec_fini(&x);
    rver_fini(&v);
    return rc;
}

/* ---- the copy ------------------------------------------------------------------ */

/* Remove the copy and its record (key k), if the record still names
 * these ids. */
static void drop_if_ours(struct strata_meta *m, unsigned set, const char *bucket,
                         const char *key, const char *k, size_t kl, const struct rrec *mine)
{
    pthread_mutex_t *lk = strata_meta__key_lock(m, bucket, key);
    pthread_mutex_lock(lk);
    struct rrec cur;
    bool ours = rrec_read(m, set, k, kl, &cur) == 0 && same_ids(&cur, mine);
    if (ours)
        strata_meta__intent_write(m, set, k, kl, NULL, 0);
    pthread_mutex_unlock(lk);
    if (ours)
        rm_copies(m, bucket, key, mine);
    rrec_fini(&cur);
}

static int run_copy(struct strata_meta *m, const char *bucket, const char *key,
                    const struct rver *v, const struct rrec *x)
{
    struct strata_tier *src = strata_meta__tier(m, v->rec.tier);
    struct strata_tier *hot = m->tiers[0];
    if (!src)
        return STRATA_EINVAL;
    struct meta_piece *ps = NULL;
    size_t n = 0;
    int rc = strata_meta__pieces_of(m, v->set, bucket, key, v->sk, &v->rec, &ps, &n);
    if (rc == 0 && n != x->n)
        rc = STRATA_EPRECOND; /* not the data the record was made for */
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (memcmp(ps[i].id, x->src[i], STRATA_DATA_ID_LEN) != 0 || ps[i].size != x->size[i])
            rc = STRATA_EPRECOND;
    free(ps);
    uint8_t *buf = rc == 0 ? malloc(COPY_BUF) : NULL;
    if (rc == 0 && !buf)
        rc = STRATA_ENOMEM;
    uint32_t place = strata_meta__place(bucket, key);
    for (size_t i = 0; rc == 0 && i < x->n; i++) {
        uint32_t crc = 0;
        /* What a crash left of an earlier attempt goes first. */
        hot->ops->remove(hot->impl, place, x->dst[i]);
        rc = strata_meta__data_copy(src, hot, place, x->src[i], x->dst[i], x->size[i], NULL,
                                    NULL, NULL, buf, &crc);
        if (rc == 0)
            rc = strata_meta__data_verify(hot, place, x->dst[i], x->size[i], crc, buf);
    }
    free(buf);
    return rc;
}

int strata_obj_restore_run(struct strata_meta *m, const char *bucket, const char *key,
                           const char *version_id, int64_t day_ms,
                           struct strata_restore_state *st)
{
    memset(st, 0, sizeof(*st));
    struct rver v;
    struct meta_pin *pin = NULL;
    int rc;
    for (unsigned attempt = 0;; attempt++) {
        uint64_t gen = strata_meta__pin_gen(m, bucket, key);
        rc = rver_get(m, bucket, key, version_id, &v);
        if (rc == 0)
            rc = strata_meta__pin(m, v.set, bucket, key, v.sk, gen, &pin);
        if (rc != STRATA_EBUSY || attempt == 16)
            break;
        rver_fini(&v);
    }
    struct rrec x;
    memset(&x, 0, sizeof(x));
    if (rc == 0)
        rc = rrec_read(m, v.set, v.k, v.kl, &x);
    bool have = rc == 0;
    if (rc == 0 && x.state != R_ONGOING)
        rc = STRATA_EEXISTS; /* done already: nothing to do */
    if (rc == 0)
        rc = run_copy(m, bucket, key, &v, &x);
    if (rc == 0) {
        pthread_mutex_t *lk = strata_meta__key_lock(m, bucket, key);
        pthread_mutex_lock(lk);
        struct rrec cur;
        rc = rrec_read(m, v.set, v.k, v.kl, &cur);
        if (rc == 0 && (!same_ids(&cur, &x) || cur.state != R_ONGOING))
            rc = STRATA_EPRECOND;
        if (rc == 0) {
            cur.state = R_DONE;
            cur.expiry_ms = strata_restore_expiry_ms(wall_ms(), cur.days, day_ms);
            rc = rrec_write(m, v.set, v.k, v.kl, &cur);
            state_of(&cur, st);
        }
        pthread_mutex_unlock(lk);
        rrec_fini(&cur);
    }
    if (rc && rc != STRATA_EEXISTS && have)
        drop_if_ours(m, v.set, bucket, key, v.k, v.kl, &x);
    strata_meta__unpin(m, pin);
    rrec_fini(&x);
    rver_fini(&v);
    return rc == STRATA_EEXISTS ? 0 : rc;
}

/* ---- reads, drops, expiry --------------------------------------------------- */

int strata_meta__restore_map(struct strata_meta *m, unsigned set, const char *bucket,
                             const char *key, const uint8_t sk[SORTKEY_LEN],
                             uint8_t (**map)[2][STRATA_DATA_ID_LEN], size_t *n)
{
    *map = NULL;
    *n = 0;
    char k[RKEY_MAX];
    size_t kl = rkey(k, bucket, key, sk);
    struct rrec x;
    int rc = rrec_read(m, set, k, kl, &x);
    if (rc == STRATA_ENOTFOUND)
        return STRATA_EARCHIVED;
    if (rc)
        return rc;
    if (x.state != R_DONE || x.expiry_ms <= wall_ms()) {
        rrec_fini(&x);
        return STRATA_EARCHIVED;
    }
    *map = calloc(x.n ? x.n : 1, sizeof(**map));
    if (!*map) {
        rrec_fini(&x);
        return STRATA_ENOMEM;
    }
    for (size_t i = 0; i < x.n; i++) {
        memcpy((*map)[i][0], x.src[i], STRATA_DATA_ID_LEN);
        memcpy((*map)[i][1], x.dst[i], STRATA_DATA_ID_LEN);
    }
    *n = x.n;
    rrec_fini(&x);
    return 0;
}

void strata_meta__restore_drop(struct strata_meta *m, unsigned set, const char *bucket,
                               const char *key, const uint8_t sk[SORTKEY_LEN])
{
    char k[RKEY_MAX];
    size_t kl = rkey(k, bucket, key, sk);
    struct rrec x;
    if (rrec_read(m, set, k, kl, &x) != 0)
        return;
    /* An ongoing copy pins the version: its drop runs after the copy. */
    strata_meta__intent_write(m, set, k, kl, NULL, 0);
    rm_copies(m, bucket, key, &x);
    rrec_fini(&x);
}

/* An interrupted copy whose version is gone or off the archive tier (a
 * crash before its drop ran): its record and data are removed (true). */
static bool stale_drop(struct strata_meta *m, unsigned set, const char *bucket, const char *key,
                       const uint8_t *sk, const char *vid, const struct rrec *x)
{
    struct rver v;
    int rc = rver_get(m, bucket, key, vid, &v);
    bool stale = rc == STRATA_ENOTFOUND || rc == STRATA_EMETHOD || rc == STRATA_EINVAL ||
                 (rc == 0 && memcmp(v.sk, sk, SORTKEY_LEN) != 0);
    rver_fini(&v);
    if (!stale)
        return false;
    char k[RKEY_MAX];
    size_t kl = rkey(k, bucket, key, sk);
    drop_if_ours(m, set, bucket, key, k, kl, x);
    return true;
}

struct sweep {
    bool resume;
    strata_restore_sweep_cb cb;
    void *ud;
    uint64_t expired;
};

int strata_meta__walk_vkeys(struct strata_meta *m, char kind, meta_vkey_fn cb, void *ud,
                            uint64_t *n)
{
    *n = 0;
    for (unsigned s = 0; s < m->nsets; s++) {
        struct meta_merge mg;
        char lo[1] = {kind}, hi[1] = {(char)(kind + 1)};
        int rc = strata_meta__merge_open(&mg, m, &s, 1, MERGE_MAINTENANCE, hi, 1);
        if (rc)
            return rc;
        strata_meta__merge_seek(&mg, lo, 1);
        const char *k, *v;
        size_t kl, vl;
        while (strata_meta__merge_cur(&mg, &k, &kl, &v, &vl)) {
            /* kind bucket 0 key 0 sk */
            char kc[RKEY_MAX + 1];
            if (kl > 3 + SORTKEY_LEN && kl <= RKEY_MAX && k[kl - SORTKEY_LEN - 1] == 0) {
                memcpy(kc, k, kl);
                kc[kl - SORTKEY_LEN - 1] = 0;
                const char *bucket = kc + 1;
                size_t bl = strnlen(bucket, kl - SORTKEY_LEN - 2);
                if (1 + bl + 1 <= kl - SORTKEY_LEN - 1) {
                    uint8_t sk[SORTKEY_LEN];
                    memcpy(sk, k + kl - SORTKEY_LEN, SORTKEY_LEN);
                    cb(m, s, bucket, bucket + bl + 1, sk, ud);
                    (*n)++;
                }
            }
            strata_meta__merge_next(&mg);
        }
        strata_meta__merge_close(&mg);
    }
    return 0;
}

/* One 'R' key found by the sweep. */
static void sweep_one(struct strata_meta *m, unsigned set, const char *bucket, const char *key,
                      const uint8_t *sk, void *ud)
{
    struct sweep *sw = ud;
    char k[RKEY_MAX], vid[STRATA_VERSION_ID_MAX + 1];
    size_t kl = rkey(k, bucket, key, sk);
    strata_meta__vid_format(sk, vid);
    pthread_mutex_t *lk = strata_meta__key_lock(m, bucket, key);
    pthread_mutex_lock(lk);
    struct rrec x;
    int rc = rrec_read(m, set, k, kl, &x);
    bool expire = rc == 0 && x.state == R_DONE && x.expiry_ms <= wall_ms();
    if (expire)
        expire = strata_meta__intent_write(m, set, k, kl, NULL, 0) == 0;
    pthread_mutex_unlock(lk);
    if (expire) {
        /* A GET that pinned the version before the record went may still
         * read the copy: its data is then orphan reclaim's. */
        if (!strata_meta__pinned(m, set, bucket, key, sk))
            rm_copies(m, bucket, key, &x);
        sw->expired++;
        if (sw->cb)
            sw->cb(sw->ud, STRATA_RESTORE_EV_EXPIRED, bucket, key, vid);
    } else if (rc == 0 && x.state == R_ONGOING && sw->resume) {
        if (!stale_drop(m, set, bucket, key, sk, vid, &x) && sw->cb)
            sw->cb(sw->ud, STRATA_RESTORE_EV_RESUME, bucket, key, vid);
    }
    rrec_fini(&x);
}

int strata_meta_restore_sweep(struct strata_meta *m, bool resume, strata_restore_sweep_cb cb,
                              void *ud, uint64_t *expired)
{
    struct sweep sw = {.resume = resume, .cb = cb, .ud = ud};
    uint64_t seen = 0;
    int rc = m->archive_tiers ? strata_meta__walk_vkeys(m, 'R', sweep_one, &sw, &seen) : 0;
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
