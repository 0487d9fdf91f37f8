/*
 * key.c - the RADOS backend's key_txn and key_read (store.h) on a
 * bucket's index shards (RADOS.md, "Commit of a version").
 *
 * Every entry of one S3 key is on one shard (crc32c of the key), so a
 * commit is one read op and one compound write op on one object:
 *   read:  h/K (the key's head: the latest version's sort key, 32 hex, and
 *          its record without inline bytes, what CURRENT lists) and
 *          the key's versions o/K\x01SK, newest first, a page at a time
 *          until the slots asked for are found;
 *   decide (the rules' pure function of the view);
 *   write: omap_cmp(\x01layout, EQ, "") (a shard closed by a bucket
 *          deletion refuses), omap_cmp(h/K, EQ, head read) (any new version
 *          of the key changes the head, so a racing commit fails ours), and
 *          omap_cmp(o/K\x01SK, EQ, value read) for every slot the view
 *          used; then the sets and removals of the edit and the new head,
 *          and with every version set or removed its due index entry
 *          e/MTIME\x01K\x01SK (index.h), so the index and the records
 *          never disagree.
 * A failed compare cancels the whole op (-ECANCELED): the view is read and
 * decided again, KEY_TRIES times, then STRATA_EBUSY (503 SlowDown above).
 * Compares are EQ only: the OSD orders bytes as signed chars (RADOS.md).
 *
 * Records are the msgpack maps of record.c; an inline object's bytes are
 * the record's field 6 whole (no per-drive shards on RADOS).  There are no
 * tombstones: a removed version's entry is deleted.  A version commit
 * (hold_bucket) goes to the shards of the incarnation it names, which
 * exist from the bucket's creation on: none (-ENOENT) is a 404.  Other
 * txns read the incarnation from the bucket record.  A bucket deletion
 * sets \x01layout on every shard (shards.c) before it checks for
 * versions: a commit that meets it re-reads the bucket record (gone or
 * another incarnation: 404), else waits for the deletion's outcome; one
 * whose write raced the close fails its compare and reads again.
 * Threads: any caller thread.
 */
#include "index.h"
#include "rados.h"

#include <errno.h>
#include <openssl/rand.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strata/erasure.h"

#define KEY_TRIES 32
#define VER_PAGE 256

struct ver {
    char *okey;
    char *raw;
    size_t len;
    uint8_t sk[16];
    struct meta_rec rec;
    int rc;         /* decode */
    bool from_head; /* read from h/K: no inline bytes, guarded by h/K's compare */
};

/* What one read of a key saw. */
struct kread {
    char oid[48];
    char hkey[RADOS_IKEY_MAX], obase[RADOS_IKEY_MAX];
    size_t obl;
    char *head;
    size_t headlen;
    struct ver *v;
    size_t n, cap;
    int latest, null, named; /* indexes into v, -1: none */
    bool missing;            /* the shard object does not exist yet */
    bool rrec;               /* read the key's restore records r/ too (archive tiers) */
    struct rrec_seen {
        uint8_t sk[16];
        char *raw;
        size_t len;
    } *rs;
    size_t nrs;
    bool rmore; /* more r/ entries than one page: the removed one's is read alone */
    bool closed;             /* \x01layout is set: the bucket is being deleted */
};

static void kread_fini(struct kread *k)
{
    for (size_t i = 0; i < k->n; i++) {
        if (k->v[i].rc == 0)
            strata_meta__rec_fini(&k->v[i].rec);
        free(k->v[i].okey);
        free(k->v[i].raw);
    }
    free(k->v);
    free(k->head);
    for (size_t i = 0; i < k->nrs; i++)
        free(k->rs[i].raw);
    free(k->rs);
    k->rs = NULL;
    k->nrs = 0;
    k->v = NULL;
    k->head = NULL;
    k->n = k->cap = 0;
}

static int add_ver(struct kread *k, const char *ok, const char *val, size_t vl)
{
    uint8_t sk[16];
    if (strncmp(ok, k->obase, k->obl) != 0 || strata_meta__rados_sk_parse(ok + k->obl, sk))
        return 0; /* not a version of this key */
    if (k->n == k->cap) {
        size_t nc = k->cap ? 2 * k->cap : 8;
        struct ver *nv = realloc(k->v, nc * sizeof(*nv));
        if (!nv)
            return STRATA_ENOMEM;
        k->v = nv;
        k->cap = nc;
    }
    struct ver *x = &k->v[k->n];
    memset(x, 0, sizeof(*x));
    x->okey = strdup(ok);
    x->raw = malloc(vl + 1);
    if (!x->okey || !x->raw) {
        free(x->okey);
        free(x->raw);
        return STRATA_ENOMEM;
    }
    memcpy(x->raw, val, vl);
    x->len = vl;
    memcpy(x->sk, sk, 16);
    x->rc = strata_meta__rec_decode(x->raw, vl, false, &x->rec);
    k->n++;
    return 0;
}

/* A restore record r/K\x01SK of this key, as read (restore.c). */
static int add_rrec(struct kread *k, size_t rbl, const char *rk, const char *val, size_t vl)
{
    uint8_t sk[16];
    if (strlen(rk) != rbl + 32 || strata_meta__rados_sk_parse(rk + rbl, sk))
        return 0;
    struct rrec_seen *n = realloc(k->rs, (k->nrs + 1) * sizeof(*n));
    if (!n)
        return STRATA_ENOMEM;
    k->rs = n;
    n[k->nrs].raw = malloc(vl + 1);
    if (!n[k->nrs].raw)
        return STRATA_ENOMEM;
    memcpy(n[k->nrs].raw, val, vl);
    n[k->nrs].len = vl;
    memcpy(n[k->nrs].sk, sk, 16);
    k->nrs++;
    return 0;
}

/* One read op: the head (first page only) and a page of versions after
 * start (none when head_only).  *more: the page was full. */
static int read_page(rados_ioctx_t io, struct kread *k, const char *start, bool first,
                     bool head_only, bool *more)
{
    rados_read_op_t op = rados_create_read_op();
    if (!op)
        return STRATA_ENOMEM;
    rados_omap_iter_t hit = NULL, vit = NULL, rit = NULL;
    int hpr = 0, vpr = 0, rpr = 0;
    unsigned char pm = 0, rm = 0;
    char rbase[RADOS_IKEY_MAX];
    size_t rbl = 0;
    const char *hk[2] = {k->hkey, RADOS_LAYOUT_KEY};
    if (first)
        rados_read_op_omap_get_vals_by_keys(op, hk, 2, &hit, &hpr);
    if (first && k->rrec) {
        /* A version's removal takes its restore record along (key.c apply). */
        memcpy(rbase, k->obase, k->obl + 1);
        rbase[0] = 'r';
        rbl = k->obl;
        rados_read_op_omap_get_vals2(op, "", rbase, VER_PAGE, &rit, &rm, &rpr);
    }
    if (!head_only)
        rados_read_op_omap_get_vals2(op, start, k->obase, VER_PAGE, &vit, &pm, &vpr);
    int r = rados_read_op_operate(op, io, k->oid, 0);
    int rc = 0;
    *more = false;
    if (r == -ENOENT) {
        k->missing = true; /* no shard yet: no versions */
    } else if (r < 0 || hpr < 0 || vpr < 0 || rpr < 0) {
        rc = strata_meta__rados_err(r < 0 ? r : hpr < 0 ? hpr : vpr < 0 ? vpr : rpr);
    } else {
        k->rmore = rm != 0;
        char *key, *val;
        size_t vl;
        while (rc == 0 && hit && rados_omap_get_next(hit, &key, &val, &vl) == 0 && key) {
            if (strcmp(key, RADOS_LAYOUT_KEY) == 0) {
                k->closed = true;
                continue;
            }
            k->head = malloc(vl + 1);
            if (!k->head) {
                rc = STRATA_ENOMEM;
            } else {
                memcpy(k->head, val, vl);
                k->head[vl] = 0;
                k->headlen = vl;
            }
        }
        while (rc == 0 && vit && rados_omap_get_next(vit, &key, &val, &vl) == 0 && key)
            rc = add_ver(k, key, val, vl);
        while (rc == 0 && rit && rados_omap_get_next(rit, &key, &val, &vl) == 0 && key)
            rc = add_rrec(k, rbl, key, val, vl);
        *more = pm != 0;
    }
    strata_meta__rados_iter_end(hit);
    strata_meta__rados_iter_end(vit);
    strata_meta__rados_iter_end(rit);
    rados_release_read_op(op);
    return rc;
}

static bool is_null(const struct ver *x)
{
    return x->rc == 0 && (x->rec.flags & REC_F_NULL);
}

/* The newest version as its head h/K carries it (32 hex of its sort key,
 * then its record without inline bytes): v[0], from_head.  No head: the
 * key has no versions (the last version's removal removes it). */
static int ver_of_head(struct kread *k)
{
    if (!k->head)
        return 0;
    char ok[RADOS_IKEY_MAX];
    if (k->headlen < 32 || k->obl + 33 > sizeof(ok))
        return STRATA_EIO;
    memcpy(ok, k->obase, k->obl);
    memcpy(ok + k->obl, k->head, 32);
    ok[k->obl + 32] = 0;
    int rc = add_ver(k, ok, k->head + 32, k->headlen - 32);
    if (rc == 0 && k->n == 0)
        return STRATA_EIO; /* a malformed sort key */
    if (rc == 0)
        k->v[0].from_head = true;
    return rc;
}

/* The slots of want the head alone fills, when decide needs no inline
 * bytes: the latest is the newest version, and the null version of a
 * never-versioned bucket is the latest (when the head is not null, the
 * versions are read). */
static bool head_fills(unsigned want)
{
    if (!(want & STRATA_META__KEY_NO_BYTES) || (want & STRATA_META__KEY_VERSION))
        return false;
    return !(want & STRATA_META__KEY_NULL) || (want & STRATA_META__KEY_NULL_IS_LATEST);
}

/* Nothing read yet of key, on its shard of incarnation inc. */
static void kread_init(struct kread *k, uint64_t inc, const char *key)
{
    memset(k, 0, sizeof(*k));
    k->latest = k->null = k->named = -1;
    size_t kl = strlen(key);
    strata_meta__rados_idx_oid(k->oid, inc, strata_meta__rados_idx_shard(key, kl));
    strata_meta__rados_ikey(k->hkey, 'h', key, kl);
    k->obl = strata_meta__rados_ikey(k->obase, 'o', key, kl);
}

/* Read the key's head and versions until the slots of t are found; with
 * head_ok, the head alone when it fills them (a commit then does not read
 * or compare the replaced version's inline bytes: RADOS.md). */
static int read_key(struct meta_rados *r, uint64_t inc, const struct strata_meta__key_txn *t,
                    bool head_ok, bool rrec, struct kread *k)
{
    kread_init(k, inc, t->key);
    k->rrec = rrec;
    const char *vid = t->version_id;
    bool want_null = (t->want & STRATA_META__KEY_NULL) ||
                     ((t->want & STRATA_META__KEY_VERSION) && vid && strcmp(vid, "null") == 0);
    uint8_t want_sk[16];
    bool want_named = (t->want & STRATA_META__KEY_VERSION) && vid && *vid &&
                      strcmp(vid, "null") != 0;
    if (want_named && strata_meta__vid_parse(vid, want_sk))
        return STRATA_ENOTFOUND; /* no version can have a malformed id */
    if (head_ok && head_fills(t->want)) {
        bool more;
        int rc = read_page(r->meta, k, "", true, true, &more);
        if (rc == 0 && !k->missing)
            rc = ver_of_head(k);
        if (rc)
            return rc;
        if (k->n == 0 || !(t->want & STRATA_META__KEY_NULL) || is_null(&k->v[0])) {
            k->latest = k->n ? 0 : -1;
            k->null = k->n && is_null(&k->v[0]) ? 0 : -1;
            return 0;
        }
        kread_fini(k); /* a versioned head: read the versions */
        k->missing = k->closed = false;
        k->rrec = rrec;
    }
    bool first = true, more = true;
    while (more) {
        const char *start = k->n ? k->v[k->n - 1].okey : "";
        size_t from = k->n;
        int rc = read_page(r->meta, k, start, first, false, &more);
        if (rc)
            return rc;
        first = false;
        for (size_t i = from; i < k->n; i++) {
            if (k->latest < 0)
                k->latest = (int)i;
            if (k->null < 0 && is_null(&k->v[i]))
                k->null = (int)i;
            if (k->named < 0 && want_named && memcmp(k->v[i].sk, want_sk, 16) == 0)
                k->named = (int)i;
        }
        bool need = (want_null && k->null < 0) || (want_named && k->named < 0);
        if (!need)
            break;
    }
    return 0;
}

static void slot_set(struct strata_meta__key_slot *s, const struct kread *k, int i)
{
    s->rec = NULL;
    if (i < 0) {
        s->rc = STRATA_ENOTFOUND;
        return;
    }
    s->rc = k->v[i].rc;
    memcpy(s->sk, k->v[i].sk, 16);
    if (s->rc == 0)
        s->rec = &k->v[i].rec;
}

static int64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The view of k for t, and which version index each slot stands on. */
static void make_view(struct strata_meta *m, const struct strata_meta__key_txn *t,
                      const struct kread *k, bool fresh, struct strata_meta__key_view *v,
                      int *vslot)
{
    memset(v, 0, sizeof(*v));
    v->bucket = t->bucket;
    v->key = t->key;
    v->now_ns = wall_ns();
    v->lock_now_ms = m->lock_clock ? strata_meta_lock_now_ms(m) : v->now_ns / 1000000;
    if (fresh && (t->want & STRATA_META__KEY_LATEST) && RAND_bytes(v->rand, sizeof(v->rand)) != 1)
        memset(v->rand, 0, sizeof(v->rand));
    v->latest.rc = v->null.rc = v->version.rc = STRATA_ENOTFOUND;
    *vslot = -1;
    unsigned w = t->want;
    if (w & STRATA_META__KEY_VERSION) {
        const char *vid = t->version_id;
        *vslot = !vid || !*vid ? k->latest : strcmp(vid, "null") == 0 ? k->null : k->named;
        slot_set(&v->version, k, *vslot);
    }
    if ((w & STRATA_META__KEY_NULL) && (w & STRATA_META__KEY_NULL_IS_LATEST)) {
        slot_set(&v->null, k, k->null);
        v->latest = v->null;
        return;
    }
    if (w & STRATA_META__KEY_LATEST)
        slot_set(&v->latest, k, k->latest);
    if (w & STRATA_META__KEY_NULL)
        slot_set(&v->null, k, k->null);
}

/* The record of x rewritten by e (record.c's codec; headers kept). */
static int rewrite_rec(const struct ver *x, const struct meta_edit *e, char **out, size_t *len)
{
    struct meta_rec r;
    int rc = strata_meta__rec_decode(x->raw, x->len, true, &r);
    if (rc)
        return rc;
    struct strata_kv *hkv = NULL;
    rc = strata_meta__rec_edit(&r, e, &hkv);
    if (rc == 0)
        rc = strata_meta__rec_encode(&r, out, len);
    strata_meta__rec_fini(&r);
    free(hkv);
    return rc;
}

/* Up to 4 sets: a new or rewritten version, its due index entry (PUT), the
 * head, the reclaim of unreferenced data (g/).  Up to 3 removals: a PUT's
 * replaced version, its due index entry and the pending entry of the new
 * version's data (w/); a removed version, its due index entry and the head
 * (the key's last version). */
struct wbuf {
    const char *sk[4], *sv[4];
    size_t sl[4];
    int ns;
    const char *rk[3];
    int nr;
    char *owned[2]; /* the version's value, the head's */
    char nkey[RADOS_IKEY_MAX];
    char wkey[40], gkey[64];
    char gval[RADOS_GPARTS_VAL_MAX];
    char ekey_new[RADOS_EKEY_MAX], ekey_old[RADOS_EKEY_MAX];
    int removed; /* the version removed (rm_version), -1: none */
};

/* The value of h/K for the newest version (sk, r): its sort key as 32 hex,
 * then its record without an inline object's bytes (RADOS.md, "Keys of an
 * index shard"), so CURRENT lists a key from its head alone. */
static int head_value(const uint8_t sk[16], const struct meta_rec *r, char **out, size_t *len)
{
    struct meta_rec s = *r;
    if (s.flags & REC_F_INLINE) {
        s.shard = (const uint8_t *)"";
        s.shard_len = 0;
        s.shard_crc = 0;
    }
    char *enc;
    size_t el;
    int rc = strata_meta__rec_encode(&s, &enc, &el);
    if (rc)
        return rc;
    *out = malloc(32 + el + 1);
    if (!*out) {
        free(enc);
        return STRATA_ENOMEM;
    }
    strata_meta__rados_sk_hex(sk, *out);
    memcpy(*out + 32, enc, el);
    *len = 32 + el;
    free(enc);
    return 0;
}

/* head_value of a version as stored (headers kept). */
static int head_of_raw(const uint8_t sk[16], const char *raw, size_t len, char **out,
                       size_t *outlen)
{
    struct meta_rec r;
    int rc = strata_meta__rec_decode(raw, len, true, &r);
    if (rc)
        return rc;
    rc = head_value(sk, &r, out, outlen);
    strata_meta__rec_fini(&r);
    return rc;
}

/* The head as read. */
static int head_copy(const struct kread *k, char **out, size_t *len)
{
    *out = malloc(k->headlen + 1);
    if (!*out)
        return STRATA_ENOMEM;
    memcpy(*out, k->head, k->headlen);
    *len = k->headlen;
    return 0;
}

/* Data the edit stops referring to, queued in g/ (gc.c) by the commit
 * itself: a single data id, or the parts of a multipart version a PUT
 * replaces or a REMOVE removes (its part table names them; when a
 * replica's PUT writes that same version again, whose new table goes under
 * the same sort key, the old table's parts are queued one by one and its
 * chunks removed before the new ones are set: reclaim_table_over). */
static bool reclaim_queued(const struct strata_meta__key_reclaim *rc)
{
    return rc->any && rc->has_data_id &&
           !(rc->flags & (REC_F_INLINE | REC_F_DELETE_MARKER | REC_F_MULTIPART));
}

static bool reclaim_parts(const struct strata_meta__key_reclaim *rc,
                          const struct strata_meta__key_edit *e)
{
    return rc->any && (rc->flags & REC_F_MULTIPART) && !(rc->flags & REC_F_DELETE_MARKER) &&
           (e->op == STRATA_META__KEY_REMOVE ||
            (e->op == STRATA_META__KEY_PUT && memcmp(rc->sk, e->sk, 16) != 0));
}

static bool reclaim_table_over(const struct strata_meta__key_reclaim *rc,
                               const struct strata_meta__key_edit *e)
{
    return rc->any && (rc->flags & REC_F_MULTIPART) && !(rc->flags & REC_F_DELETE_MARKER) &&
           e->op == STRATA_META__KEY_PUT && memcmp(rc->sk, e->sk, 16) == 0;
}

/* Remove version i and its due index entry. */
static void rm_version(struct wbuf *w, const struct kread *k, const char *key, int i)
{
    w->removed = i;
    w->rk[w->nr++] = k->v[i].okey;
    strata_meta__rados_ekey(w->ekey_old, key, strlen(key), k->v[i].sk);
    w->rk[w->nr++] = w->ekey_old;
}

/* Build and run the guarded op of edit e over k.  STRATA_EPRECOND: a
 * compare failed (someone else committed first). */
static int apply(struct meta_rados *r, struct kread *k, const struct strata_meta__key_view *v,
                 const struct strata_meta__key_edit *e, int vslot, const struct rados_key_ext *x)
{
    int idx_replace = e->replace == STRATA_META__SLOT_NULL      ? k->null
                      : e->replace == STRATA_META__SLOT_VERSION ? vslot
                                                                : -1;
    if (e->replace == STRATA_META__SLOT_NULL && !(v->null.rc == 0 || v->null.rc == STRATA_ENOTFOUND))
        idx_replace = -1;
    struct wbuf w;
    memset(&w, 0, sizeof(w));
    w.removed = -1;
    int rc = 0;
    const uint8_t *newest_new = NULL; /* PUT: the new version's sort key */
    struct meta_rec rec = {0};        /* PUT: the new version's record */
    switch (e->op) {
    case STRATA_META__KEY_PUT: {
        rec = *e->rec;
        if (rec.flags & REC_F_INLINE) {
            rec.shard = e->inline_len ? e->inline_data : (const void *)"";
            rec.shard_len = e->inline_len;
            rec.shard_crc = strata_crc32c(0, rec.shard, rec.shard_len);
        }
        rc = strata_meta__rec_encode(&rec, &w.owned[0], &w.sl[0]);
        if (rc)
            return rc;
        memcpy(w.nkey, k->obase, k->obl);
        strata_meta__rados_sk_hex(e->sk, w.nkey + k->obl);
        w.sk[0] = w.nkey;
        w.sv[0] = w.owned[0];
        /* The due index entry goes in the same op as its record. */
        strata_meta__rados_ekey(w.ekey_new, v->key, strlen(v->key), e->sk);
        w.sk[1] = w.ekey_new;
        w.sv[1] = "";
        w.sl[1] = 0;
        w.ns = 2;
        newest_new = e->sk;
        if (idx_replace >= 0 && memcmp(k->v[idx_replace].sk, e->sk, 16) != 0)
            rm_version(&w, k, v->key, idx_replace);
        else
            idx_replace = -1;
        break;
    }
    case STRATA_META__KEY_REMOVE:
        if (idx_replace < 0)
            return 0; /* nothing to remove */
        rm_version(&w, k, v->key, idx_replace);
        break;
    case STRATA_META__KEY_REWRITE:
        if (vslot < 0 || k->v[vslot].rc)
            return STRATA_EINTERNAL;
        rc = rewrite_rec(&k->v[vslot], &e->rw, &w.owned[0], &w.sl[0]);
        if (rc)
            return rc;
        w.sk[0] = k->v[vslot].okey;
        w.sv[0] = w.owned[0];
        w.ns = 1;
        break;
    default:
        return 0;
    }
    /* The new head: the newest version left (versions read newest first),
     * as it is after the edit: a new version at or above the newest, a
     * rewrite of the newest, or the one below a removed newest. */
    int hi = -1;
    for (size_t i = 0; i < k->n && hi < 0; i++)
        if ((int)i != idx_replace)
            hi = (int)i;
    size_t hl = 0;
    if (newest_new && (hi < 0 || memcmp(newest_new, k->v[hi].sk, 16) <= 0))
        rc = head_value(newest_new, &rec, &w.owned[1], &hl);
    else if (hi >= 0 && e->op == STRATA_META__KEY_REWRITE && hi == vslot)
        rc = head_of_raw(k->v[hi].sk, w.owned[0], w.sl[0], &w.owned[1], &hl);
    else if (hi >= 0 && k->v[hi].from_head)
        rc = head_copy(k, &w.owned[1], &hl); /* the head stays */
    else if (hi >= 0)
        rc = head_of_raw(k->v[hi].sk, k->v[hi].raw, k->v[hi].len, &w.owned[1], &hl);
    if (rc) {
        free(w.owned[0]);
        return rc;
    }
    if (w.owned[1]) {
        if (!k->head || k->headlen != hl || memcmp(k->head, w.owned[1], hl) != 0) {
            w.sk[w.ns] = k->hkey;
            w.sv[w.ns] = w.owned[1];
            w.sl[w.ns++] = hl;
        }
    } else {
        w.rk[w.nr++] = k->hkey; /* the key's last version went */
    }
    /* A new version's data: its w/ entry goes in this op, and must still be
     * there (the gc pass moves entries of stalled PUTs to g/). */
    bool pending = e->op == STRATA_META__KEY_PUT && e->rec->has_data_id &&
                   !(e->rec->flags & REC_F_INLINE);
    if (pending) {
        strata_meta__rados_wkey(w.wkey, e->rec->data_id);
        w.rk[w.nr++] = w.wkey;
    }
    const struct strata_meta__key_reclaim *rcl = &e->reclaim;
    int64_t due = strata_meta__rados_wall_ms() + r->reclaim_grace_ms;
    if (reclaim_queued(rcl)) {
        const char *tier = strata_meta__rados_gent(w.gkey, due, rcl->tier, rcl->data_id);
        w.sk[w.ns] = w.gkey;
        w.sv[w.ns] = tier;
        w.sl[w.ns++] = strlen(tier);
    } else if (reclaim_parts(rcl, e)) {
        w.sk[w.ns] = w.gkey;
        w.sv[w.ns] = w.gval;
        w.sl[w.ns++] = strata_meta__rados_gent_parts(w.gkey, w.gval, due, rcl->tier, v->key, rcl->sk);
    }

    rados_write_op_t op = rados_create_write_op();
    if (!op) {
        free(w.owned[0]);
        free(w.owned[1]);
        return STRATA_ENOMEM;
    }
    int pr[5] = {0}, wpr = 1;
    if (pending) /* first: its prval tells this compare from the others */
        rados_write_op_omap_cmp(op, w.wkey, LIBRADOS_CMPXATTR_OP_GT, "", 0, &wpr);
    rados_write_op_omap_cmp(op, RADOS_LAYOUT_KEY, LIBRADOS_CMPXATTR_OP_EQ, "", 0, &pr[0]);
    rados_write_op_omap_cmp(op, k->hkey, LIBRADOS_CMPXATTR_OP_EQ, k->head ? k->head : "",
                            k->head ? k->headlen : 0, &pr[1]);
    /* Every version the read found for a slot: the view stood on them (one
     * read from the head is guarded by the head's compare above: any
     * change of the newest version changes its head). */
    int used[3] = {k->latest, k->null, vslot};
    for (int i = 0; i < 3; i++)
        if (used[i] >= 0 && !k->v[used[i]].from_head)
            rados_write_op_omap_cmp(op, k->v[used[i]].okey, LIBRADOS_CMPXATTR_OP_EQ,
                                    k->v[used[i]].raw, k->v[used[i]].len, &pr[2 + i]);
    if (w.ns)
        rados_write_op_omap_set(op, w.sk, w.sv, w.sl, (size_t)w.ns);
    if (w.nr)
        rados_write_op_omap_rm_keys(op, w.rk, (size_t)w.nr);
    int xr = 0, ox = 0, *tpr = NULL;
    struct rados_rgone rg;
    if (k->rrec && w.removed >= 0) {
        const struct rrec_seen *rs = NULL;
        for (size_t i = 0; i < k->nrs && !rs; i++)
            if (memcmp(k->rs[i].sk, k->v[w.removed].sk, 16) == 0)
                rs = &k->rs[i];
        char *rv = NULL;
        size_t rvl = 0;
        if (!rs && k->rmore) { /* past the page read with the key: read it alone */
            strata_meta__rados_skey(rg.rk, 'r', v->key, strlen(v->key), k->v[w.removed].sk);
            xr = strata_meta__rados_get1(r->meta, k->oid, rg.rk, &rv, &rvl);
            if (xr == STRATA_ENOTFOUND)
                xr = 0;
        }
        if (xr == 0)
            xr = strata_meta__rados_restore_gone(op, &rg, v->key, k->v[w.removed].sk,
                                                 rs ? rs->raw : rv, rs ? rs->len : rvl, due);
        free(rv);
    }
    if (reclaim_table_over(rcl, e)) /* before the new version's chunks are set */
        xr = strata_meta__rados_ptab_requeue(
            r->meta, k->oid, op, v->key, rcl->sk, rcl->tier,
            e->rec->has_data_id && !(e->rec->flags & REC_F_INLINE) ? e->rec->data_id : NULL, due,
            &tpr);
    if (xr == 0 && x)
        xr = x->write(x->ud, op, e);
    if (xr == 0 && e->op == STRATA_META__KEY_REWRITE && e->rw.nchunks) /* a transition's */
        xr = strata_meta__rados_ptab_set(op, v->key, k->v[vslot].sk, e->rw.nchunks,
                                         e->rw.chunk_v, e->rw.chunk_len);
    if (xr == 0) {
        ox = rados_write_op_operate(op, r->meta, k->oid, NULL, 0);
        xr = strata_meta__rados_err(ox);
    }
    rados_release_write_op(op);
    free(tpr);
    free(w.owned[0]);
    free(w.owned[1]);
    if (ox == -ECANCELED && pending && wpr < 0)
        return STRATA_EIO; /* its data went to g/: never a record without data */
    return xr;
}

/* The bucket's incarnation (t's, checked, when it holds the bucket); fresh:
 * read from `buckets`, not the cache (its shards were found closed or
 * gone: the cached record may name a deleted incarnation). */
static int bucket_inc(struct strata_meta *m, const struct strata_meta__key_txn *t, bool fresh,
                      uint64_t *inc)
{
    struct strata_bucket_info b;
    int rc = fresh ? strata_meta__rados_bucket_fresh(m, t->bucket, &b)
                   : strata_meta__rados_bucket_get(m, t->bucket, &b);
    if (rc)
        return rc;
    if (t->hold_bucket && t->incarnation && b.incarnation != t->incarnation)
        return STRATA_ENOTFOUND;
    *inc = b.incarnation;
    return 0;
}

static bool same_audit(const struct strata_meta__key_audit *a, const struct strata_meta__key_audit *b)
{
    return a->any && b->any && strcmp(a->version_id, b->version_id) == 0 &&
           strcmp(a->action ? a->action : "", b->action ? b->action : "") == 0 &&
           strcmp(a->outcome ? a->outcome : "", b->outcome ? b->outcome : "") == 0 &&
           strcmp(a->detail, b->detail) == 0;
}

static int audit_append(struct strata_meta *m, const struct strata_meta__key_txn *t,
                        const struct strata_meta__key_audit *a)
{
    struct strata_audit_event ev = {a->user ? a->user : "-", t->bucket, t->key, a->version_id,
                                    a->action, a->outcome, a->detail};
    return strata_meta_audit_append(m, &ev);
}

/* How often this gateway's version commits met a key with no head (new
 * keys): above 0, a commit first tries the blind write below.  Each blind
 * success, and each read that found no head, counts up; each blind write
 * that lost, or read that found a head, counts down: a workload of
 * overwrites stops paying a rejected op per PUT within a few commits. */
#define BLIND_MAX 8
#define BLIND_MIN (-8)
static _Atomic int blind_score = 1;

static void blind_learn(int d)
{
    int o = atomic_load(&blind_score), n;
    do {
        n = o + d;
        n = n > BLIND_MAX ? BLIND_MAX : n < BLIND_MIN ? BLIND_MIN : n;
    } while (!atomic_compare_exchange_weak(&blind_score, &o, n));
}

/* A version commit whose rules judge the head alone (head_fills), tried
 * without the read: decide on the view of a key that has no versions, and
 * write guarded by h/K EQ "" and \x01layout EQ "", the compares a read
 * that found nothing would have made.  Applied, it is exactly the commit a
 * read would have led to; a compare that fails (the key has a head, the
 * shard is closed), a shard that is not there (-ENOENT) or a decision that
 * is not a plain PUT (a refusal, an audit entry) leave nothing applied,
 * and the caller reads and decides as usual: 1 when not applied. */
static int blind_put(struct strata_meta *m, const struct strata_meta__key_txn *t)
{
    struct meta_rados *r = meta_rados_of(m);
    uint64_t inc = t->incarnation;
    if (!(t->hold_bucket && inc) && bucket_inc(m, t, false, &inc))
        return 1;
    struct kread k;
    kread_init(&k, inc, t->key);
    struct strata_meta__key_view v;
    struct strata_meta__key_edit e;
    int vslot = -1;
    memset(&e, 0, sizeof(e));
    make_view(m, t, &k, true, &v, &vslot);
    int rc = t->decide(t->ud, &v, &e);
    if (rc || e.op != STRATA_META__KEY_PUT || e.audit.any || e.reclaim.any)
        return 1; /* decided on an assumption: only a plain PUT is taken */
    rc = apply(r, &k, &v, &e, vslot, NULL);
    if (rc == STRATA_EPRECOND || rc == STRATA_ENOTFOUND) {
        blind_learn(-4);
        return 1;
    }
    if (rc == 0)
        blind_learn(1);
    return rc;
}

static int key_txn(struct strata_meta *m, const struct strata_meta__key_txn *t,
                   const struct rados_key_ext *x)
{
    struct meta_rados *r = meta_rados_of(m);
    struct strata_meta__key_audit done = {0}; /* the entry appended last */
    int rc = STRATA_EBUSY;
    bool head_ok = true; /* until an edit needs the versions themselves */
    bool blind = !x && head_fills(t->want) && atomic_load(&blind_score) > 0;
    if (blind && (rc = blind_put(m, t)) != 1)
        return rc;
    for (int attempt = 0; attempt < KEY_TRIES; attempt++) {
        /* A version commit names its incarnation, whose shards are the
         * guard (shards.c); other txns read it from the bucket record. */
        uint64_t inc = t->incarnation;
        bool cached = !(t->hold_bucket && inc);
        if (cached) {
            rc = bucket_inc(m, t, false, &inc);
            if (rc)
                return rc;
        }
        struct kread k;
        rc = read_key(r, inc, t, head_ok, m->archive_tiers != 0, &k);
        if (rc == 0 && (k.missing || k.closed) && cached) {
            /* The cached record may name a deleted incarnation: read it. */
            uint64_t now;
            int brc = bucket_inc(m, t, true, &now);
            if (brc || now != inc) {
                kread_fini(&k);
                if (brc)
                    return brc;
                rc = STRATA_EBUSY;
                continue; /* the bucket's current incarnation, decided anew */
            }
        }
        if (rc == 0 && k.missing) { /* no such incarnation: shards come with the bucket */
            int brc = strata_meta__rados_inc_recheck(m, t->bucket, inc);
            rc = brc ? brc : STRATA_ENOTFOUND;
        }
        if (rc == 0 && attempt == 0 && !blind && !x && head_fills(t->want))
            blind_learn(k.head ? -1 : 1);
        if (rc == 0 && !k.closed && x)
            rc = x->read(x->ud, r->meta, k.oid);
        if (rc == 0 && k.closed) {
            int brc = strata_meta__rados_inc_recheck(m, t->bucket, inc);
            if (brc) {
                kread_fini(&k);
                return brc; /* deleted: 404; another incarnation now: 503 */
            }
            /* The bucket is being deleted: wait for the outcome (gone: 404
             * on the next round; refused: the shards open again). */
            kread_fini(&k);
            struct timespec ts = {0, (long)(1000000L << (attempt < 5 ? attempt : 5))};
            nanosleep(&ts, NULL);
            rc = STRATA_EBUSY;
            continue;
        }
        struct strata_meta__key_view v;
        struct strata_meta__key_edit e;
        int vslot = -1;
        memset(&e, 0, sizeof(e));
        if (rc == 0) {
            make_view(m, t, &k, true, &v, &vslot);
            rc = t->decide(t->ud, &v, &e);
            /* Once per outcome: a refusal's entry after it, an allowed
             * decision's before the apply it gates; a rerun that decides
             * the same appends nothing more. */
            if (e.audit.any && !same_audit(&e.audit, &done)) {
                int arc = audit_append(m, t, &e.audit);
                if (arc == 0)
                    done = e.audit;
                if (rc == 0)
                    rc = arc;
            }
        }
        bool conflict = false;
        if (rc == 0 && k.n && k.v[0].from_head && e.op != STRATA_META__KEY_PUT &&
            e.op != STRATA_META__KEY_NONE) {
            /* A rewrite needs the version's bytes, a removal the version
             * below it: read the versions and decide again. */
            head_ok = false;
            conflict = true;
        } else if (rc == 0 && e.op != STRATA_META__KEY_NONE) {
            rc = apply(r, &k, &v, &e, vslot, x);
            conflict = rc == STRATA_EPRECOND; /* not decide's own 412 */
        }
        kread_fini(&k);
        if (!conflict)
            return rc;
        rc = STRATA_EBUSY; /* another commit of the key came first: decide again */
    }
    return rc;
}

int strata_meta__rados_key_txn(struct strata_meta *m, const struct strata_meta__key_txn *t)
{
    return key_txn(m, t, NULL);
}

int strata_meta__rados_key_txn_ext(struct strata_meta *m, const struct strata_meta__key_txn *t,
                                   const struct rados_key_ext *x)
{
    return key_txn(m, t, x);
}

int strata_meta__rados_key_read(struct strata_meta *m, const struct strata_meta__key_txn *t)
{
    uint64_t inc;
    int rc = bucket_inc(m, t, false, &inc);
    if (rc)
        return rc;
    struct kread k;
    rc = read_key(meta_rados_of(m), inc, t, true, false, &k);
    uint64_t now = inc;
    if (rc == 0 && (k.missing || k.closed) && bucket_inc(m, t, true, &now) == 0 &&
        now != inc) { /* the cache was stale */
        kread_fini(&k);
        rc = read_key(meta_rados_of(m), now, t, true, false, &k);
    }
    if (rc == 0) {
        struct strata_meta__key_view v;
        struct strata_meta__key_edit e;
        int vslot;
        memset(&e, 0, sizeof(e));
        make_view(m, t, &k, false, &v, &vslot);
        rc = t->decide(t->ud, &v, &e);
    }
    kread_fini(&k);
    return rc;
}
