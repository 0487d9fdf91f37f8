/*
 * mpu.c - the RADOS backend's multipart records (store.h, "multipart
 * uploads"; RADOS.md, "Uploads and parts") on the key's index shard:
 *   u/K\x01UP       the upload record (UP: 32 hex), replaced by the
 *                   completed-upload record at complete, removed by abort;
 *   p/K\x01UP/NNNN  part record NNNN (4 hex);
 *   t/K\x01SK/CCCC  part table chunk CCCC of the completed version SK.
 * Every write is one guarded op on the shard: omap_cmp(\x01layout, EQ, "")
 * (a bucket deletion closes its shards; not for an abort, which the
 * deletion itself runs), omap_cmp(u/, EQ, value read) (the
 * upload is still open, and as it was read), and for a part or a
 * complete's parts, omap_cmp(p/, EQ, value read) of each record the
 * decision stood on.  -ECANCELED: read and decide again (TRIES times, then
 * STRATA_EBUSY).  A complete is key.c's key_txn (the same read op, decide
 * and guarded op as a PUT) with this file's reads and compares added to
 * it, so the version, its head, its part table, the completed-upload
 * record and the removal of every part record (omap_rm_range over
 * p/K\x01UP/) apply together or not at all.  Data a commit stops referring
 * to (a replaced part's, the parts a complete leaves out, an aborted
 * upload's) goes to the reclaim queue g/ in the commit's own op (gc.c), so
 * nothing is returned to the caller; a part's w/ entry (set before its
 * data, object.c) is compared and removed by its part_put.
 * Threads: any caller thread.
 */
#include "index.h"
#include "rados.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strata/hex.h"

#define TRIES 32
#define PART_PAGE 1000 /* an OSD answers at most 1,024 omap entries per read */
/* u/K\x01 + 32 hex upload id + /NNNN */
#define MKEY_MAX (RADOS_IKEY_MAX + 48)

/* The names of one upload on its shard. */
struct names {
    char oid[48];
    char ukey[MKEY_MAX];  /* u/K\x01UP */
    char pfx[MKEY_MAX];   /* p/K\x01UP/ */
    char pend[MKEY_MAX];  /* p/K\x01UP0: the end of the part range */
    size_t pfxl;
};

static void names_of(struct names *n, uint64_t inc, const char *key, const uint8_t *up)
{
    size_t kl = strlen(key);
    char hex[33];
    strata_hex_encode(up, UPLOAD_LEN, hex);
    strata_meta__rados_idx_oid(n->oid, inc, strata_meta__rados_idx_shard(key, kl));
    size_t o = strata_meta__rados_ikey(n->ukey, 'u', key, kl);
    memcpy(n->ukey + o, hex, 33);
    o = strata_meta__rados_ikey(n->pfx, 'p', key, kl);
    memcpy(n->pfx + o, hex, 32);
    n->pfx[o + 32] = '/';
    n->pfx[o + 33] = 0;
    n->pfxl = o + 33;
    memcpy(n->pend, n->pfx, n->pfxl + 1);
    n->pend[n->pfxl - 1] = '0'; /* '/' + 1 */
}

static void part_key(char *out, const struct names *n, unsigned no)
{
    static const char hx[] = "0123456789abcdef";
    memcpy(out, n->pfx, n->pfxl);
    for (int i = 0; i < 4; i++)
        out[n->pfxl + (size_t)i] = hx[(no >> (12 - 4 * i)) & 15];
    out[n->pfxl + 4] = 0;
}

/* g/ entries (gc.c) for the data of parts[0..n) not kept (kept NULL:
 * every one), due at due, set in op; *keys: their names (56 bytes each),
 * to free after the op ran (the values point into parts). */
static int queue_parts(rados_write_op_t op, const struct meta_part *parts, size_t n,
                       const bool *kept, int64_t due, char **keys)
{
    *keys = malloc(n * 56 + 1);
    const char **ks = calloc(n + 1, sizeof(*ks)), **vs = calloc(n + 1, sizeof(*vs));
    size_t *ls = calloc(n + 1, sizeof(*ls)), q = 0;
    int rc = *keys && ks && vs && ls ? 0 : STRATA_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const struct meta_part *p = &parts[i];
        if (!p->has_data_id || (kept && p->number <= META_PARTS_MAX && kept[p->number]))
            continue;
        char *k = *keys + q * 56;
        vs[q] = strata_meta__rados_gent(k, due, p->tier, p->data_id);
        ks[q] = k;
        ls[q] = strlen(vs[q]);
        q++;
    }
    if (rc == 0 && q)
        rados_write_op_omap_set(op, ks, vs, ls, q);
    free(ks);
    free(vs);
    free(ls);
    return rc;
}

/* The w/ entries of parts[0..n)'s data (a part's stays until the complete
 * or abort that read it: gc.c), removed in op. */
static int rm_pending(rados_write_op_t op, const struct meta_part *parts, size_t n)
{
    char *keys = malloc(n * 40 + 1);
    const char **ks = calloc(n + 1, sizeof(*ks));
    size_t q = 0;
    if (!keys || !ks) {
        free(keys);
        free(ks);
        return STRATA_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (!parts[i].has_data_id)
            continue;
        strata_meta__rados_wkey(keys + q * 40, parts[i].data_id);
        ks[q] = keys + q * 40;
        q++;
    }
    if (q) /* librados copies the keys into the op */
        rados_write_op_omap_rm_keys(op, ks, q);
    free(keys);
    free(ks);
    return 0;
}

static void (*settle_hook)(void *ud);
static void *settle_hook_ud;

void strata_meta__rados_test_settle_hook(void (*fn)(void *ud), void *ud)
{
    settle_hook = fn;
    settle_hook_ud = ud;
}

static void settle_hook_run(void)
{
    if (settle_hook)
        settle_hook(settle_hook_ud);
}

/* The part records of an upload read from one shard. */
struct rparts {
    char **k;
    char **v;
    size_t *vl;
    struct meta_part *p; /* decoded; number from the key */
    size_t n, cap;
};

static void rparts_fini(struct rparts *ps)
{
    for (size_t i = 0; i < ps->n; i++) {
        free(ps->k[i]);
        free(ps->v[i]);
    }
    free(ps->k);
    free(ps->v);
    free(ps->vl);
    free(ps->p);
    memset(ps, 0, sizeof(*ps));
}

static int rparts_add(struct rparts *ps, const struct names *n, const char *k, const char *v,
                      size_t vl)
{
    unsigned no = 0;
    if (strncmp(k, n->pfx, n->pfxl) != 0 || strlen(k) != n->pfxl + 4 ||
        sscanf(k + n->pfxl, "%4x", &no) != 1)
        return 0; /* not a part record of this upload */
    if (ps->n == ps->cap) {
        size_t nc = ps->cap ? 2 * ps->cap : 16;
        char **nk = realloc(ps->k, nc * sizeof(*nk));
        if (nk)
            ps->k = nk;
        char **nv = realloc(ps->v, nc * sizeof(*nv));
        if (nv)
            ps->v = nv;
        size_t *nl = realloc(ps->vl, nc * sizeof(*nl));
        if (nl)
            ps->vl = nl;
        struct meta_part *np = realloc(ps->p, nc * sizeof(*np));
        if (np)
            ps->p = np;
        if (!nk || !nv || !nl || !np)
            return STRATA_ENOMEM;
        ps->cap = nc;
    }
    struct meta_part p;
    if (strata_meta__part_decode(v, vl, &p, NULL, NULL) != 0)
        return 0; /* unreadable: not a committed part */
    p.number = no;
    char *kc = strdup(k), *vc = malloc(vl ? vl : 1);
    if (!kc || !vc) {
        free(kc);
        free(vc);
        return STRATA_ENOMEM;
    }
    memcpy(vc, v, vl);
    ps->k[ps->n] = kc;
    ps->v[ps->n] = vc;
    ps->vl[ps->n] = vl;
    ps->p[ps->n] = p;
    ps->n++;
    return 0;
}

/* One read op: the upload record, the shard's layout key and, with ps, a
 * page of part records after start.  *more: the page was full. */
static int read_page(rados_ioctx_t io, const struct names *n, char **uv, size_t *uvl,
                     bool *closed, struct rparts *ps, char *start, unsigned char *more)
{
    *uv = NULL;
    *uvl = 0;
    *closed = false;
    rados_read_op_t op = rados_create_read_op();
    if (!op)
        return STRATA_ENOMEM;
    const char *keys[2] = {n->ukey, RADOS_LAYOUT_KEY};
    rados_omap_iter_t it = NULL, pit = NULL;
    int pr = 0, ppr = 0;
    rados_read_op_omap_get_vals_by_keys(op, keys, 2, &it, &pr);
    if (ps)
        rados_read_op_omap_get_vals2(op, start, n->pfx, PART_PAGE, &pit, more, &ppr);
    int r = rados_read_op_operate(op, io, n->oid, 0);
    int rc = r < 0 ? strata_meta__rados_err(r) : pr < 0 ? strata_meta__rados_err(pr) : 0;
    if (rc == 0 && ppr < 0)
        rc = strata_meta__rados_err(ppr);
    char *k, *v;
    size_t vl;
    while (rc == 0 && it && rados_omap_get_next(it, &k, &v, &vl) == 0 && k) {
        if (strcmp(k, RADOS_LAYOUT_KEY) == 0) {
            *closed = true;
            continue;
        }
        *uv = malloc(vl + 1);
        if (!*uv) {
            rc = STRATA_ENOMEM;
            break;
        }
        memcpy(*uv, v, vl);
        *uvl = vl;
    }
    while (rc == 0 && pit && rados_omap_get_next(pit, &k, &v, &vl) == 0 && k) {
        snprintf(start, MKEY_MAX, "%s", k);
        rc = rparts_add(ps, n, k, v, vl);
    }
    strata_meta__rados_iter_end(it);
    strata_meta__rados_iter_end(pit);
    rados_release_read_op(op);
    return rc;
}

/* The upload record and, with ps, every part record of a live upload, as
 * one view: each page's read op reads the upload record again, and the
 * whole read starts over when it changed between pages (a complete or an
 * abort committed meanwhile), so a view never pairs an upload with parts
 * that another commit already removed. */
static int read_upload(rados_ioctx_t io, const struct names *n, char **uv, size_t *uvl,
                       bool *closed, struct rparts *ps)
{
    for (int attempt = 0; attempt < TRIES; attempt++) {
        char start[MKEY_MAX] = "";
        unsigned char more = 1;
        int rc = read_page(io, n, uv, uvl, closed, ps, start, &more);
        bool parts = ps && *uv && !strata_meta__is_dead(*uv, *uvl);
        bool same = true;
        while (rc == 0 && parts && more && same) {
            char *v2;
            size_t vl2;
            bool c2;
            rc = read_page(io, n, &v2, &vl2, &c2, ps, start, &more);
            same = v2 && vl2 == *uvl && memcmp(v2, *uv, vl2) == 0;
            free(v2);
        }
        if (rc || same)
            return rc;
        free(*uv);
        *uv = NULL;
        rparts_fini(ps);
    }
    return STRATA_EBUSY;
}

/* Part records numbered from on, in order, a page at a time, to cb until
 * it returns non-zero (*stop). */
static int parts_walk(rados_ioctx_t io, const struct names *n, unsigned from,
                      int (*cb)(void *ud, const struct meta_part *p), void *ud, int *stop)
{
    char start[MKEY_MAX] = "";
    if (from > 1)
        part_key(start, n, from - 1);
    unsigned char more = 1;
    int rc = 0;
    while (rc == 0 && more && !*stop) {
        struct rparts ps;
        memset(&ps, 0, sizeof(ps));
        char *uv;
        size_t uvl;
        bool closed;
        rc = read_page(io, n, &uv, &uvl, &closed, &ps, start, &more);
        free(uv);
        for (size_t i = 0; rc == 0 && i < ps.n && !*stop; i++)
            *stop = cb(ud, &ps.p[i]);
        rparts_fini(&ps);
    }
    return rc;
}

/* t/K\x01SK/CCCC: chunk ch of version sk's part table (k: MKEY_MAX). */
static void tkey(char *k, const char *key, size_t kl, const uint8_t sk[16], unsigned ch)
{
    size_t o = strata_meta__rados_ikey(k, 't', key, kl);
    strata_meta__rados_sk_hex(sk, k + o);
    k[o + 32] = '/';
    for (int i = 0; i < 4; i++)
        k[o + 33 + (size_t)i] = "0123456789abcdef"[(ch >> (12 - 4 * i)) & 15];
    k[o + 37] = 0;
}

int strata_meta__rados_ptab_set(rados_write_op_t op, const char *key, const uint8_t sk[16],
                                size_t nchunks, char *const *v, const size_t *vl)
{
    size_t kl = strlen(key);
    const char **ks = calloc(nchunks ? nchunks : 1, sizeof(*ks));
    char *tk = malloc(nchunks * MKEY_MAX + 1);
    if (!ks || !tk) {
        free(ks);
        free(tk);
        return STRATA_ENOMEM;
    }
    for (size_t ch = 0; ch < nchunks; ch++) {
        ks[ch] = tk + ch * MKEY_MAX;
        tkey(tk + ch * MKEY_MAX, key, kl, sk, (unsigned)ch);
    }
    if (nchunks) /* librados copies keys and values into the op */
        rados_write_op_omap_set(op, ks, (const char *const *)v, vl, nchunks);
    free(ks);
    free(tk);
    return 0;
}

int strata_meta__rados_ptab_requeue(rados_ioctx_t io, const char *oid, rados_write_op_t op,
                                    const char *key, const uint8_t sk[16], const char *tier,
                                    const uint8_t *except, int64_t due_ms, int **prvals)
{
    *prvals = NULL;
    size_t kl = strlen(key);
    char pfx[MKEY_MAX], pend[MKEY_MAX];
    tkey(pfx, key, kl, sk, 0);
    size_t pl = strlen(pfx) - 4; /* t/K\x01SK/ */
    pfx[pl] = 0;
    memcpy(pend, pfx, pl + 1);
    pend[pl - 1] = '0'; /* '/' + 1: the end of the chunk range */
    /* 10,000 parts are 79 chunks: one page holds any table. */
    rados_read_op_t rop = rados_create_read_op();
    struct meta_part *parts = calloc(MP_CHUNK_PARTS, sizeof(*parts));
    int *pr = calloc(PART_PAGE, sizeof(*pr));
    if (!rop || !parts || !pr) {
        if (rop)
            rados_release_read_op(rop);
        free(parts);
        free(pr);
        return STRATA_ENOMEM;
    }
    rados_omap_iter_t it = NULL;
    unsigned char more = 0;
    int rpr = 0;
    rados_read_op_omap_get_vals2(rop, "", pfx, PART_PAGE, &it, &more, &rpr);
    int x = rados_read_op_operate(rop, io, oid, 0);
    int rc = x < 0 ? strata_meta__rados_err(x) : rpr < 0 ? strata_meta__rados_err(rpr) : 0;
    char *k, *v;
    size_t vl, nc = 0;
    while (rc == 0 && rados_omap_get_next(it, &k, &v, &vl) == 0 && k && nc < PART_PAGE) {
        /* The table as read: a writer of the same version meanwhile fails
         * this op, which is read and decided again. */
        rados_write_op_omap_cmp(op, k, LIBRADOS_CMPXATTR_OP_EQ, v, vl, &pr[nc++]);
        size_t n = 0;
        if (strata_meta__ptab_decode(v, vl, parts, MP_CHUNK_PARTS, &n) != 0)
            continue; /* unreadable: its data is left to the data audit */
        for (size_t i = 0; i < n; i++) {
            snprintf(parts[i].tier, sizeof(parts[i].tier), "%s", tier ? tier : "");
            if (except && parts[i].has_data_id &&
                memcmp(parts[i].data_id, except, STRATA_DATA_ID_LEN) == 0)
                parts[i].has_data_id = false;
        }
        char *gks = NULL;
        rc = queue_parts(op, parts, n, NULL, due_ms, &gks);
        free(gks); /* librados copied the keys and values into the op */
    }
    strata_meta__rados_iter_end(it);
    rados_release_read_op(rop);
    free(parts);
    if (rc == 0 && more)
        rc = STRATA_ECORRUPT; /* more chunks than any table has */
    if (rc) {
        free(pr);
        return rc;
    }
    rados_write_op_omap_rm_range2(op, pfx, pl, pend, pl);
    *prvals = pr;
    return 0;
}

int strata_meta__rados_ptab_get(struct strata_meta *m, const char *bucket, const char *key,
                                const uint8_t sk[16], unsigned c, char **v, size_t *vl)
{
    *v = NULL;
    *vl = 0;
    struct strata_bucket_info b;
    int rc = strata_meta__rados_bucket_fresh(m, bucket, &b);
    if (rc)
        return rc;
    size_t kl = strlen(key);
    char oid[48], k[MKEY_MAX];
    strata_meta__rados_idx_oid(oid, b.incarnation, strata_meta__rados_idx_shard(key, kl));
    tkey(k, key, kl, sk, c);
    return strata_meta__rados_get1(meta_rados_of(m)->meta, oid, k, v, vl);
}

/* A shard found closed (or a compare on \x01layout failed): the bucket is
 * being deleted.  STRATA_ENOTFOUND when it is gone, STRATA_EBUSY when it
 * is another incarnation now (inc_recheck), else 0 after a wait that grows
 * with the attempt (the deletion's outcome decides). */
static int closed_wait(struct strata_meta *m, const char *bucket, uint64_t inc, int attempt)
{
    int rc = strata_meta__rados_inc_recheck(m, bucket, inc);
    if (rc)
        return rc;
    struct timespec ts = {0, (long)(1000000L << (attempt < 5 ? attempt : 5))};
    nanosleep(&ts, NULL);
    return 0;
}

/* The names of an upload of the bucket's current incarnation (*inc unless
 * inc is NULL). */
static int locate(struct strata_meta *m, const char *bucket, const char *key, const uint8_t *up,
                  struct names *n, uint64_t *inc)
{
    struct strata_bucket_info b;
    int rc = strata_meta__rados_bucket_fresh(m, bucket, &b);
    if (rc == 0) {
        if (inc)
            *inc = b.incarnation;
        names_of(n, b.incarnation, key, up);
    }
    return rc;
}

static bool live(const char *uv, size_t uvl)
{
    return uv && !strata_meta__is_dead(uv, uvl);
}

int strata_meta__rados_upload_create(struct strata_meta *m, const char *bucket, const char *key,
                                     uint64_t inc, const uint8_t *up, const void *v, size_t vl)
{
    struct meta_rados *r = meta_rados_of(m);
    struct names n;
    names_of(&n, inc, key, up);
    const char *uk = n.ukey, *vv = v;
    for (int attempt = 0; attempt < TRIES; attempt++) {
        rados_write_op_t op = rados_create_write_op();
        if (!op)
            return STRATA_ENOMEM;
        int pr[2] = {0};
        rados_write_op_omap_cmp(op, RADOS_LAYOUT_KEY, LIBRADOS_CMPXATTR_OP_EQ, "", 0, &pr[0]);
        rados_write_op_omap_cmp(op, uk, LIBRADOS_CMPXATTR_OP_EQ, "", 0, &pr[1]);
        rados_write_op_omap_set(op, &uk, &vv, &vl, 1);
        int rc = strata_meta__rados_err(rados_write_op_operate(op, r->meta, n.oid, NULL, 0));
        rados_release_write_op(op);
        if (rc == STRATA_ENOTFOUND) { /* no shard, so no such incarnation */
            int brc = strata_meta__rados_inc_recheck(m, bucket, inc);
            return brc ? brc : rc;
        }
        if (rc != STRATA_EPRECOND)
            return rc;
        if (pr[0] == 0)
            return STRATA_EEXISTS; /* the same 16 random bytes twice: never */
        if ((rc = closed_wait(m, bucket, inc, attempt)) != 0)
            return rc;
    }
    return STRATA_EBUSY;
}

int strata_meta__rados_upload_get(struct strata_meta *m, const char *bucket, const char *key,
                                  const uint8_t *up, struct meta_upload *u)
{
    memset(u, 0, sizeof(*u));
    uint64_t inc;
    struct names n;
    int rc = locate(m, bucket, key, up, &n, &inc);
    if (rc)
        return rc;
    char *uv;
    size_t uvl;
    bool closed;
    rc = read_upload(meta_rados_of(m)->meta, &n, &uv, &uvl, &closed, NULL);
    if (rc == 0 && !live(uv, uvl))
        rc = STRATA_ENOTFOUND; /* aborted, completed or never created */
    if (rc == 0)
        rc = strata_meta__upload_decode(uv, uvl, u);
    free(uv);
    return rc;
}

int strata_meta__rados_part_put(struct strata_meta *m, const char *bucket, const char *key,
                                const uint8_t *up, const struct meta_part *p,
                                struct strata_meta__data_refs *old)
{
    memset(old, 0, sizeof(*old));
    struct meta_rados *r = meta_rados_of(m);
    uint64_t inc;
    struct names n;
    int rc = locate(m, bucket, key, up, &n, &inc);
    if (rc)
        return rc;
    char pk[MKEY_MAX];
    part_key(pk, &n, p->number);
    char *v = NULL;
    size_t vl = 0;
    if ((rc = strata_meta__part_encode(p, bucket, key, &v, &vl)) != 0)
        return rc;
    rc = STRATA_EBUSY;
    for (int attempt = 0; attempt < TRIES; attempt++) {
        char *uv = NULL, *ov = NULL;
        size_t uvl = 0, ovl = 0;
        bool closed;
        int x = read_upload(r->meta, &n, &uv, &uvl, &closed, NULL);
        if (x == 0 && closed) {
            free(uv);
            if ((x = closed_wait(m, bucket, inc, attempt)) != 0) {
                rc = x;
                break;
            }
            continue;
        }
        if (x == 0 && !live(uv, uvl))
            x = STRATA_ENOTFOUND; /* completed or aborted meanwhile */
        if (x == 0) {
            x = strata_meta__rados_get1(r->meta, n.oid, pk, &ov, &ovl);
            if (x == STRATA_ENOTFOUND)
                x = 0;
        }
        if (x) {
            free(uv);
            rc = x;
            break;
        }
        rados_write_op_t op = rados_create_write_op();
        if (!op) {
            free(uv);
            free(ov);
            rc = STRATA_ENOMEM;
            break;
        }
        int pr[3] = {0}, wpr = 1;
        const char *kk = pk, *vv = v;
        char wkey[40], owkey[40], *gks = NULL, *wv = NULL;
        const char *wk = wkey, *owk = owkey;
        size_t wvl = 0;
        /* The part's data is pending (w/) until this op; gone: the gc
         * pass took it (first, so its prval tells it from the others).
         * From this op on the entry names the upload, and the complete or
         * abort that reads this part removes it; one committed after
         * that read is left to the gc pass (gc.c). */
        if (p->has_data_id) {
            strata_meta__rados_wkey(wkey, p->data_id);
            char uphex[33];
            strata_hex_encode(up, UPLOAD_LEN, uphex);
            wv = strata_meta__rados_wval_part(p->tier, uphex, bucket, key, &wvl);
            if (!wv) {
                rados_release_write_op(op);
                free(uv);
                free(ov);
                rc = STRATA_ENOMEM;
                break;
            }
            rados_write_op_omap_cmp(op, wkey, LIBRADOS_CMPXATTR_OP_GT, "", 0, &wpr);
            rados_write_op_omap_set(op, &wk, (const char *const *)&wv, &wvl, 1);
        }
        rados_write_op_omap_cmp(op, RADOS_LAYOUT_KEY, LIBRADOS_CMPXATTR_OP_EQ, "", 0, &pr[0]);
        rados_write_op_omap_cmp(op, n.ukey, LIBRADOS_CMPXATTR_OP_EQ, uv, uvl, &pr[1]);
        rados_write_op_omap_cmp(op, pk, LIBRADOS_CMPXATTR_OP_EQ, ov ? ov : "", ovl, &pr[2]);
        rados_write_op_omap_set(op, &kk, &vv, &vl, 1);
        /* The replaced part's data (other than this one's) to g/. */
        struct meta_part o;
        if (ov && strata_meta__part_decode(ov, ovl, &o, NULL, NULL) == 0 && o.has_data_id &&
            memcmp(o.data_id, p->data_id, STRATA_DATA_ID_LEN) != 0) {
            x = queue_parts(op, &o, 1, NULL, strata_meta__rados_wall_ms() + r->reclaim_grace_ms,
                            &gks);
            strata_meta__rados_wkey(owkey, o.data_id); /* queued: no longer pending */
            rados_write_op_omap_rm_keys(op, &owk, 1);
        }
        int ox = 0;
        if (x == 0) {
            ox = rados_write_op_operate(op, r->meta, n.oid, NULL, 0);
            x = strata_meta__rados_err(ox);
        }
        rados_release_write_op(op);
        free(gks);
        free(wv);
        free(uv);
        free(ov);
        rc = x;
        if (ox == -ECANCELED && p->has_data_id && wpr < 0) {
            rc = STRATA_EIO; /* its data went to g/: never a part record without data */
            break;
        }
        if (x != STRATA_EPRECOND)
            break; /* applied, or an error with nothing written */
        rc = STRATA_EBUSY; /* the upload or the part changed: read again */
    }
    free(v);
    return rc;
}

int strata_meta__rados_parts_read(struct strata_meta *m, const char *bucket, const char *key,
                                  const uint8_t *up, unsigned from,
                                  int (*cb)(void *ud, const struct meta_part *p), void *ud)
{
    uint64_t inc;
    struct names n;
    int rc = locate(m, bucket, key, up, &n, &inc);
    if (rc)
        return rc;
    int stop = 0;
    rc = parts_walk(meta_rados_of(m)->meta, &n, from, cb, ud, &stop);
    return rc ? rc : stop;
}

/* ---- complete: key.c's txn with the upload's reads and compares ---- */

struct rcomplete {
    const struct strata_meta__mpu_txn *t;
    struct names n;
    char *uv;
    size_t uvl;
    struct rparts ps;
    int *pr; /* the compares' results (live until the op ran) */
    char *gks; /* the g/ keys of the parts left out (live until the op ran) */
    int64_t due; /* their DUE */
    struct strata_meta__mpu_edit me;
};

static void rcomplete_reset(struct rcomplete *c)
{
    free(c->uv);
    c->uv = NULL;
    c->uvl = 0;
    rparts_fini(&c->ps);
    free(c->pr);
    c->pr = NULL;
    free(c->gks);
    c->gks = NULL;
}

static int rc_read(void *ud, rados_ioctx_t io, const char *oid)
{
    (void)oid; /* the key's shard: n.oid */
    struct rcomplete *c = ud;
    rcomplete_reset(c);
    bool closed;
    int rc = read_upload(io, &c->n, &c->uv, &c->uvl, &closed, &c->ps);
    if (rc == 0 && (!c->uv || strata_meta__is_tomb(c->uv, c->uvl)))
        return STRATA_ENOTFOUND; /* aborted or never created */
    return rc;
}

static int rc_decide(void *ud, const struct strata_meta__key_view *v,
                     struct strata_meta__key_edit *e)
{
    struct rcomplete *c = ud;
    return strata_meta__mpu_decide(c->t, v, strata_meta__is_done(c->uv, c->uvl), c->uv, c->uvl,
                                   c->ps.p, c->ps.n, &c->me, e);
}

static int rc_write(void *ud, rados_write_op_t op, const struct strata_meta__key_edit *e)
{
    struct rcomplete *c = ud;
    const struct strata_meta__mpu_edit *me = &c->me;
    c->pr = calloc(c->ps.n + 1, sizeof(*c->pr));
    size_t nk = me->nchunks + 1;
    const char **ks = calloc(nk, sizeof(*ks)), **vs = calloc(nk, sizeof(*vs));
    size_t *ls = calloc(nk, sizeof(*ls));
    char *tk = malloc(me->nchunks * MKEY_MAX + 1);
    int rc = c->pr && ks && vs && ls && tk ? 0 : STRATA_ENOMEM;
    if (rc == 0) {
        /* The upload as read, and every part record the decision stood on. */
        rados_write_op_omap_cmp(op, c->n.ukey, LIBRADOS_CMPXATTR_OP_EQ, c->uv, c->uvl, &c->pr[0]);
        for (size_t i = 0; i < c->ps.n; i++)
            rados_write_op_omap_cmp(op, c->ps.k[i], LIBRADOS_CMPXATTR_OP_EQ, c->ps.v[i],
                                    c->ps.vl[i], &c->pr[i + 1]);
        /* The part table t/K\x01SK/CCCC, and the completed-upload record. */
        size_t kl = strlen(c->t->key);
        for (size_t ch = 0; ch < me->nchunks; ch++) {
            char *k = tk + ch * MKEY_MAX;
            tkey(k, c->t->key, kl, e->sk, (unsigned)ch);
            ks[ch] = k;
            vs[ch] = me->chunk_v[ch];
            ls[ch] = me->chunk_len[ch];
        }
        ks[me->nchunks] = c->n.ukey;
        vs[me->nchunks] = me->done_v;
        ls[me->nchunks] = me->done_vl;
        rados_write_op_omap_set(op, ks, vs, ls, nk);
        /* Every part record of the upload, also one put after the read
         * (its w/ entry stays: the gc pass reclaims its data); the data of
         * the parts read and not kept to g/, and the w/ entries of all the
         * parts read removed (each is in the table or in g/ now). */
        rados_write_op_omap_rm_range2(op, c->n.pfx, c->n.pfxl, c->n.pend, c->n.pfxl);
        free(c->gks);
        c->gks = NULL;
        rc = queue_parts(op, c->ps.p, c->ps.n, me->kept, c->due, &c->gks);
        if (rc == 0)
            rc = rm_pending(op, c->ps.p, c->ps.n);
    }
    if (rc == 0)
        settle_hook_run();
    free(ks);
    free(vs);
    free(ls);
    free(tk);
    return rc;
}

int strata_meta__rados_mpu_complete(struct strata_meta *m, const struct strata_meta__mpu_txn *t,
                                    struct strata_meta__data_refs *unref)
{
    memset(unref, 0, sizeof(*unref));
    struct rcomplete c;
    memset(&c, 0, sizeof(c));
    c.t = t;
    names_of(&c.n, t->incarnation, t->key, t->upload);
    struct strata_meta__key_txn kt = {
        .bucket = t->bucket,
        .key = t->key,
        .incarnation = t->incarnation,
        .hold_bucket = true,
        .want = t->want,
        .version_id = t->version_id,
        .decide = rc_decide,
        .ud = &c,
    };
    c.due = strata_meta__rados_wall_ms() + meta_rados_of(m)->reclaim_grace_ms;
    struct rados_key_ext x = {rc_read, rc_write, &c};
    int rc = strata_meta__rados_key_txn_ext(m, &kt, &x);
    rcomplete_reset(&c);
    return rc;
}

int strata_meta__rados_mpu_abort(struct strata_meta *m, const char *bucket, const char *key,
                                 const uint8_t *up, struct strata_meta__data_refs *unref)
{
    memset(unref, 0, sizeof(*unref));
    struct meta_rados *r = meta_rados_of(m);
    struct names n;
    int rc = locate(m, bucket, key, up, &n, NULL);
    if (rc)
        return rc;
    rc = STRATA_EBUSY;
    for (int attempt = 0; attempt < TRIES; attempt++) {
        char *uv = NULL;
        size_t uvl = 0;
        bool closed;
        struct rparts ps;
        memset(&ps, 0, sizeof(ps));
        /* A closed shard does not stop an abort: a bucket deletion aborts
         * the bucket's uploads while its shards are closed, and an abort
         * adds nothing. */
        int x = read_upload(r->meta, &n, &uv, &uvl, &closed, &ps);
        if (x == 0 && !live(uv, uvl))
            x = STRATA_ENOTFOUND; /* completed (AWS: NoSuchUpload) or aborted */
        int *pr = x == 0 ? calloc(ps.n + 1, sizeof(*pr)) : NULL;
        rados_write_op_t op = x == 0 && pr ? rados_create_write_op() : NULL;
        char *gks = NULL;
        if (x == 0 && !op)
            x = STRATA_ENOMEM;
        if (x == 0) {
            const char *uk = n.ukey;
            rados_write_op_omap_cmp(op, uk, LIBRADOS_CMPXATTR_OP_EQ, uv, uvl, &pr[0]);
            for (size_t i = 0; i < ps.n; i++)
                rados_write_op_omap_cmp(op, ps.k[i], LIBRADOS_CMPXATTR_OP_EQ, ps.v[i], ps.vl[i],
                                        &pr[i + 1]);
            rados_write_op_omap_rm_keys(op, &uk, 1);
            rados_write_op_omap_rm_range2(op, n.pfx, n.pfxl, n.pend, n.pfxl);
            /* Every part's data to g/, in the same op. */
            x = queue_parts(op, ps.p, ps.n, NULL,
                            strata_meta__rados_wall_ms() + r->reclaim_grace_ms, &gks);
            if (x == 0)
                x = rm_pending(op, ps.p, ps.n);
            if (x == 0) {
                settle_hook_run();
                x = strata_meta__rados_err(rados_write_op_operate(op, r->meta, n.oid, NULL, 0));
            }
        }
        if (op)
            rados_release_write_op(op);
        free(gks);
        free(pr);
        free(uv);
        rparts_fini(&ps);
        rc = x;
        if (x != STRATA_EPRECOND)
            break;
        rc = STRATA_EBUSY; /* the upload or a part changed (a complete, a part): again */
    }
    return rc;
}
