/*
 * gc.c - data written before its commit, and data no record refers to any
 * more (RADOS.md, "Data whose commit never happened"), on the key's index
 * shard:
 *
 *   w/ID        -> "CREATED TIER BUCKET/KEY": CREATED = wall ms as 16 hex,
 *                  TIER = the tier's name or "-" for the hot tier.  Set by
 *                  pending_add before the first stripe of a PUT is written
 *                  (guarded by \x01layout: a closed shard refuses); the
 *                  PUT's commit compares it (present) and removes it in
 *                  the same op (key.c).
 *               A part's entry is not removed by its commit but set to
 *               "CREATED TIER @UP BUCKET/KEY" (UP: the upload id, 32 hex;
 *               CREATED: the commit's time): the complete or abort that
 *               read the part removes it in its op, so an entry left once
 *               the upload is no longer open is a part committed after
 *               that read, whose record the complete's or abort's range
 *               removal took: the gc pass moves it to g/ (guarded by the
 *               upload record it read) and never one of an open upload.
 *   g/DUE/ID    -> "TIER": data to remove once DUE (16 hex wall ms) has
 *                  passed.  Set by the commit that unreferences the data
 *                  (DUE = now + reclaim grace: readers on other gateways
 *                  keep reading meanwhile), or by the gc pass for a w/
 *                  entry whose commit never came (DUE = now).  A part's
 *                  data (w/ set before its stripes like a PUT's) goes the
 *                  same ways: replaced by a part of the same number, left
 *                  out of a complete, or aborted.
 *   g/DUE/SK/t  -> "TIER t/K\x01SK/": a multipart version SK removed or
 *                  replaced by a commit: at DUE every part's data named by
 *                  its part table chunks (t/K\x01SK/CCCC) is removed, then
 *                  the chunks and the entry in one op.  The chunks stay
 *                  until then, so a GET of the version on another gateway
 *                  reads its table and its parts through the grace.
 *
 * The gc pass (the store's orphan_round) runs under the `gc` lease, so
 * once per cluster: it lists the index shards in PREFIX.meta (every
 * incarnation's, deleted buckets' too), moves each w/ entry older than
 * age_s to g/ in one op guarded by the entry's value (a commit racing it
 * loses either way: the commit's compare on w/ID fails, or the move's
 * compare does), then removes the data of the due g/ entries (the tier's
 * remove: every stripe) and the entry, guarded by its value.  Every step
 * is guarded, so two holders at once (one stalled past its lease) do
 * nothing twice.  The lease is renewed between shards; a lost lease stops
 * the pass.
 */
#include "index.h"
#include "rados.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GC_PAGE 256
#define GC_LEASE "gc"

void strata_meta__rados_wkey(char out[40], const uint8_t id[STRATA_DATA_ID_LEN])
{
    char hex[33];
    strata_meta__rados_sk_hex(id, hex);
    snprintf(out, 40, "w/%s", hex);
}

void strata_meta__rados_gkey(char out[56], int64_t due_ms, const uint8_t id[STRATA_DATA_ID_LEN])
{
    char hex[33];
    strata_meta__rados_sk_hex(id, hex);
    snprintf(out, 56, "g/%016" PRIx64 "/%s", (uint64_t)(due_ms < 0 ? 0 : due_ms), hex);
}

const char *strata_meta__rados_gent(char key[56], int64_t due_ms, const char *tier,
                                   const uint8_t id[STRATA_DATA_ID_LEN])
{
    strata_meta__rados_gkey(key, due_ms, id);
    return tier && tier[0] ? tier : "-";
}

/* store op pending_add: w/ID on bucket/key's shard, guarded by \x01layout. */
int strata_meta__rados_pending_add(struct strata_meta *m, const char *bucket, uint64_t inc,
                                   const char *key, const char *tier,
                                   const uint8_t id[STRATA_DATA_ID_LEN])
{
    struct meta_rados *r = meta_rados_of(m);
    char oid[48], wkey[40];
    size_t kl = strlen(key);
    strata_meta__rados_idx_oid(oid, inc, strata_meta__rados_idx_shard(key, kl));
    strata_meta__rados_wkey(wkey, id);
    size_t cap = 16 + 2 + STRATA_TIER_NAME_MAX + strlen(bucket) + kl + 4;
    char *val = malloc(cap);
    if (!val)
        return STRATA_ENOMEM;
    int vl = snprintf(val, cap, "%016" PRIx64 " %s %s/%s", (uint64_t)strata_meta__rados_wall_ms(),
                      tier && *tier ? tier : "-", bucket, key);
    /* The shard exists from the bucket's creation on; absent: no bucket. */
    rados_write_op_t op = rados_create_write_op();
    if (!op) {
        free(val);
        return STRATA_ENOMEM;
    }
    int pr = 0;
    const char *k = wkey;
    size_t l = (size_t)vl;
    rados_write_op_assert_exists(op);
    rados_write_op_omap_cmp(op, RADOS_LAYOUT_KEY, LIBRADOS_CMPXATTR_OP_EQ, "", 0, &pr);
    rados_write_op_omap_set(op, &k, (const char *const *)&val, &l, 1);
    int x = rados_write_op_operate(op, r->meta, oid, NULL, 0);
    rados_release_write_op(op);
    free(val);
    if (x != -ECANCELED && x != -ENOENT)
        return strata_meta__rados_err(x);
    /* A closed or removed shard: the bucket is being deleted (404 unless
     * refused), gone, or (a record since replaced) there again. */
    int rc = strata_meta__rados_inc_recheck(m, bucket, inc);
    return rc ? rc : STRATA_ENOTFOUND;
}

char *strata_meta__rados_wval_part(const char *tier, const char *uphex, const char *bucket,
                                   const char *key, size_t *len)
{
    size_t cap = 16 + 2 + STRATA_TIER_NAME_MAX + 2 + 32 + 2 + strlen(bucket) + strlen(key) + 2;
    char *v = malloc(cap);
    if (!v)
        return NULL;
    int n = snprintf(v, cap, "%016" PRIx64 " %s @%.32s %s/%s",
                     (uint64_t)strata_meta__rados_wall_ms(), tier && *tier ? tier : "-", uphex,
                     bucket, key);
    *len = (size_t)n;
    return v;
}

size_t strata_meta__rados_gent_parts(char key[64], char *val, int64_t due_ms, const char *tier,
                                     const char *okey, const uint8_t sk[16])
{
    char hex[33];
    strata_meta__rados_sk_hex(sk, hex);
    snprintf(key, 64, "g/%016" PRIx64 "/%s/t", (uint64_t)(due_ms < 0 ? 0 : due_ms), hex);
    int o = snprintf(val, STRATA_TIER_NAME_MAX + 3, "%s ", tier && tier[0] ? tier : "-");
    size_t l = strata_meta__rados_skey(val + o, 't', okey, strlen(okey), sk);
    val[o + l] = '/';
    val[o + l + 1] = 0;
    return (size_t)o + l + 1;
}

struct gc {
    struct strata_meta *m;
    struct meta_rados *r;
    const char *oid;
    int64_t now_ms, age_ms;
    int64_t renewed_ms; /* the lease's last take or renew */
    uint64_t removed;
    int err; /* the first error (the pass goes on with the next entries) */
};

/* Renew the lease when due: 0 while held, STRATA_EBUSY once lost (the
 * pass stops; the new holder goes on). */
static int keep_lease(struct gc *g)
{
    int64_t now = strata_meta__rados_wall_ms();
    if (now - g->renewed_ms < strata_meta_lease_renew_ms(g->m))
        return 0;
    int rc = strata_meta__rados_lease(g->m, GC_LEASE, STRATA_LEASE_RENEW);
    if (rc == 0)
        g->renewed_ms = now;
    return rc;
}

static int hexid(const char *h, uint8_t id[STRATA_DATA_ID_LEN])
{
    char b[33];
    memcpy(b, h, 32);
    b[32] = 0;
    return strlen(h) >= 32 ? strata_meta__rados_sk_parse(b, id) : -1;
}

/* Whether w/ID's entry (value v, tier parsed) may go to g/: 1 (with the
 * upload record read into *uv, ukey set, for a part's entry; ukey empty for
 * a PUT's), 0 while its upload is open (or v is not ours), or an error. */
static int part_upload(struct gc *g, const char *v, size_t vl, const char *tier, char *ukey,
                       char **uv, size_t *uvl)
{
    ukey[0] = 0;
    size_t at = 16 + 1 + strlen(tier) + 1; /* "CREATED TIER " */
    if (vl < at + 1 || v[at] != '@')
        return 1; /* a PUT's or a part's before its commit */
    const char *up = v + at + 1, *bk = up + 33;
    const char *slash = vl > (size_t)(bk - v) ? memchr(bk, '/', vl - (size_t)(bk - v)) : NULL;
    if (vl < at + 1 + 33 || up[32] != ' ' || !slash)
        return 0; /* malformed: left alone */
    const char *key = slash + 1;
    size_t kl = vl - (size_t)(key - v);
    if (kl > STRATA_KEY_MAX)
        return 0;
    char kbuf[STRATA_KEY_MAX + 1];
    memcpy(kbuf, key, kl);
    kbuf[kl] = 0;
    size_t o = strata_meta__rados_ikey(ukey, 'u', kbuf, kl);
    memcpy(ukey + o, up, 32);
    ukey[o + 32] = 0;
    int rc = strata_meta__rados_get1(g->r->meta, g->oid, ukey, uv, uvl);
    if (rc == STRATA_ENOTFOUND)
        return 1; /* aborted (or its shard went): no record names the part */
    if (rc)
        return rc;
    if (strata_meta__is_done(*uv, *uvl) || strata_meta__is_tomb(*uv, *uvl))
        return 1; /* completed: the complete removed the entries of its parts */
    free(*uv);
    *uv = NULL;
    return 0; /* open: its parts are named by their records */
}

/* w/ID older than the grace: to g/ due now, guarded by its value. */
static int w_cb(void *ud, const char *k, const char *v, size_t vl)
{
    struct gc *g = ud;
    uint8_t id[STRATA_DATA_ID_LEN];
    char head[16 + 1 + STRATA_TIER_NAME_MAX + 2];
    size_t hl = vl < sizeof(head) - 1 ? vl : sizeof(head) - 1;
    memcpy(head, v, hl);
    head[hl] = 0;
    char tier[STRATA_TIER_NAME_MAX + 2];
    unsigned long long created;
    if (hexid(k + 2, id) || sscanf(head, "%16llx %32s", &created, tier) != 2)
        return 0; /* not ours: left alone */
    if (g->now_ms - (int64_t)created < g->age_ms)
        return 0;
    /* A committed part's: only once its upload is no longer open. */
    char ukey[RADOS_IKEY_MAX + 40], *uv = NULL;
    size_t uvl = 0;
    int up = part_upload(g, v, vl, tier, ukey, &uv, &uvl);
    if (up <= 0) {
        if (up < 0 && !g->err)
            g->err = up;
        return 0;
    }
    char gkey[56];
    strata_meta__rados_gkey(gkey, g->now_ms, id);
    rados_write_op_t op = rados_create_write_op();
    if (!op) {
        free(uv);
        return STRATA_ENOMEM;
    }
    int pr = 0, upr = 0;
    const char *gk = gkey, *gv = tier;
    size_t gl = strlen(tier);
    rados_write_op_omap_cmp(op, k, LIBRADOS_CMPXATTR_OP_EQ, v, vl, &pr);
    if (ukey[0])
        rados_write_op_omap_cmp(op, ukey, LIBRADOS_CMPXATTR_OP_EQ, uv ? uv : "", uvl, &upr);
    free(uv);
    rados_write_op_omap_rm_keys(op, &k, 1);
    rados_write_op_omap_set(op, &gk, &gv, &gl, 1);
    int x = rados_write_op_operate(op, g->r->meta, g->oid, NULL, 0);
    rados_release_write_op(op);
    if (x < 0 && x != -ECANCELED && !g->err) /* -ECANCELED: committed or moved meanwhile */
        g->err = strata_meta__rados_err(x);
    return 0;
}

/* The part data of one part table chunk of a multipart version. */
struct gparts {
    struct gc *g;
    struct strata_tier *t;
    struct meta_part *parts;
    int err;
};

static int chunk_cb(void *ud, const char *k, const char *v, size_t vl)
{
    (void)k;
    struct gparts *gp = ud;
    size_t n = 0;
    if (strata_meta__ptab_decode(v, vl, gp->parts, MP_CHUNK_PARTS, &n) != 0)
        return 0; /* unreadable: its data is left to the data audit */
    for (size_t i = 0; i < n && !gp->err; i++) {
        if (!gp->parts[i].has_data_id)
            continue;
        int lrc = keep_lease(gp->g);
        int rc = lrc ? lrc : gp->t->ops->remove(gp->t->impl, 0, gp->parts[i].data_id);
        if (rc)
            gp->err = rc;
        else
            gp->g->removed++;
    }
    return gp->err ? gp->err : 0;
}

/* g/DUE/SK/t due: every part's data named by the version's part table,
 * then the chunks and the entry in one op guarded by the entry's value (a
 * retry after a failure removes again what is gone: 0). */
static int parts_reclaim(struct gc *g, struct strata_tier *t, const char *k, const char *v,
                         size_t vl, size_t tl)
{
    size_t pl = vl - tl - 1; /* "TIER " then the chunks' prefix t/K\x01SK/ */
    char *pfx = malloc(pl + 1), *pend = malloc(pl + 1), *last = malloc(RADOS_IKEY_MAX + 8);
    struct gparts gp = {.g = g, .t = t, .parts = calloc(MP_CHUNK_PARTS, sizeof(struct meta_part))};
    int rc = pfx && pend && last && gp.parts ? 0 : STRATA_ENOMEM;
    if (rc == 0) {
        memcpy(pfx, v + tl + 1, pl);
        pfx[pl] = 0;
        memcpy(pend, pfx, pl + 1);
        pend[pl - 1] = '0'; /* '/' + 1: the end of the chunk range */
        last[0] = 0;
        bool more = true;
        while (rc == 0 && more) {
            char *start = strdup(last);
            rc = start ? strata_meta__rados_page(g->r->meta, g->oid, start, pfx, GC_PAGE, chunk_cb, &gp,
                                              last, RADOS_IKEY_MAX + 8, &more)
                       : STRATA_ENOMEM;
            free(start);
            if (rc == 0 && gp.err)
                rc = gp.err;
        }
    }
    if (rc == 0) {
        rados_write_op_t op = rados_create_write_op();
        if (!op) {
            rc = STRATA_ENOMEM;
        } else {
            int pr = 0;
            rados_write_op_omap_cmp(op, k, LIBRADOS_CMPXATTR_OP_EQ, v, vl, &pr);
            rados_write_op_omap_rm_range2(op, pfx, pl, pend, pl);
            rados_write_op_omap_rm_keys(op, &k, 1);
            rc = strata_meta__rados_err(rados_write_op_operate(op, g->r->meta, g->oid, NULL, 0));
            rados_release_write_op(op);
        }
    }
    free(pfx);
    free(pend);
    free(last);
    free(gp.parts);
    return rc;
}

/* g/DUE/ID due: remove the data, then the entry (guarded by its value);
 * g/DUE/SK/t: a multipart version's parts (parts_reclaim). */
static int g_cb(void *ud, const char *k, const char *v, size_t vl)
{
    struct gc *g = ud;
    unsigned long long due;
    uint8_t id[STRATA_DATA_ID_LEN];
    size_t kl = strlen(k);
    bool parts = kl == 2 + 16 + 1 + 32 + 2 && strcmp(k + kl - 2, "/t") == 0;
    if ((kl != 2 + 16 + 1 + 32 && !parts) || sscanf(k + 2, "%16llx", &due) != 1 ||
        hexid(k + 19, id))
        return 0;
    if ((int64_t)due > g->now_ms)
        return 1; /* in DUE order: nothing further is due */
    int lrc = keep_lease(g); /* a large object's stripes take a while */
    if (lrc)
        return lrc;
    char tier[STRATA_TIER_NAME_MAX + 1];
    const char *sp = parts ? memchr(v, ' ', vl) : NULL;
    if (parts && (!sp || (size_t)(sp - v) + 2 >= vl))
        return 0; /* malformed: not ours */
    size_t tl = parts ? (size_t)(sp - v) : vl;
    if (tl > sizeof(tier) - 1)
        tl = sizeof(tier) - 1;
    memcpy(tier, v, tl);
    tier[tl] = 0;
    struct strata_tier *t = strata_meta__tier(g->m, strcmp(tier, "-") == 0 ? "" : tier);
    if (!t)
        return 0; /* a tier this gateway does not have: kept for one that has it */
    if (parts) {
        int prc = parts_reclaim(g, t, k, v, vl, tl);
        if (prc == STRATA_EBUSY)
            return prc; /* the lease went */
        if (prc && prc != STRATA_EPRECOND && !g->err)
            g->err = prc;
        return 0;
    }
    int rc = t->ops->remove(t->impl, 0, id);
    if (rc == 0)
        rc = strata_meta__rados_cas1(g->r->meta, g->oid, k, v, vl, k, NULL, 0);
    if (rc == 0)
        g->removed++;
    else if (rc != STRATA_EPRECOND && !g->err)
        g->err = rc;
    return 0;
}

static int walk(struct gc *g, const char *prefix, int (*cb)(void *, const char *, const char *, size_t))
{
    char last[64] = "";
    bool more = true;
    while (more) {
        char start[64];
        snprintf(start, sizeof(start), "%s", last);
        int rc = strata_meta__rados_page(g->r->meta, g->oid, start, prefix, GC_PAGE, cb, g, last,
                                         sizeof(last), &more);
        if (rc)
            return rc == STRATA_ENOTFOUND ? 0 : rc; /* the shard went */
    }
    return 0;
}

/* store op orphan_round, the gc pass under the `gc` lease: w/ entries older
 * than age_s move to g/ (due now), due g/ entries' data is removed, then
 * the entry.  *removed counts data objects removed.  0 also when another
 * gateway holds the lease (nothing done). */
int strata_meta__rados_orphan_round(struct strata_meta *m, struct strata_orphans **state,
                                unsigned age_s, uint64_t *removed)
{
    (void)state; /* everything is in the shards */
    *removed = 0;
    struct meta_rados *r = meta_rados_of(m);
    int rc = strata_meta__rados_lease(m, GC_LEASE, STRATA_LEASE_TAKE);
    if (rc)
        return rc == STRATA_EBUSY ? 0 : rc; /* another gateway runs it */
    struct gc g = {.m = m, .r = r, .age_ms = (int64_t)age_s * 1000};
    rados_list_ctx_t ls;
    int x = rados_nobjects_list_open(r->meta, &ls);
    if (x < 0) {
        strata_meta__rados_lease(m, GC_LEASE, STRATA_LEASE_RELEASE);
        return strata_meta__rados_err(x);
    }
    g.renewed_ms = strata_meta__rados_wall_ms();
    const char *oid;
    while (rc == 0 && rados_nobjects_list_next(ls, &oid, NULL, NULL) == 0) {
        if (strncmp(oid, "idx.", 4) != 0)
            continue;
        char name[64];
        snprintf(name, sizeof(name), "%s", oid);
        g.oid = name;
        g.now_ms = strata_meta__rados_wall_ms();
        rc = keep_lease(&g);
        if (rc == 0)
            rc = walk(&g, "w/", w_cb);
        if (rc == 0)
            rc = walk(&g, "g/", g_cb);
    }
    rados_nobjects_list_close(ls);
    *removed = g.removed;
    if (rc == STRATA_EBUSY)
        return 0; /* the lease was lost: its new holder goes on */
    strata_meta__rados_lease(m, GC_LEASE, STRATA_LEASE_RELEASE);
    return rc ? rc : g.err;
}
