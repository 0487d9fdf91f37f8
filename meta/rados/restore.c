/*
 * restore.c - the RADOS backend's records of restored copies (store.h
 * restore_get / restore_swap / restore_walk; the rules are meta/restore.c;
 * RADOS.md, "Restored copies").
 *
 * The record of version SK of key K is r/K\x01SK (index.h's skey, kind
 * 'r') on the key's index shard, beside o/K\x01SK.  A swap is one op on
 * that shard: omap_cmp(\x01layout, EQ, "") (a closed shard refuses),
 * omap_cmp(r/K\x01SK, EQ, the record read) and, when a record is set,
 * omap_cmp(o/K\x01SK, GT, "") (the version exists: its removal, key.c,
 * compares the record it read and removes it in the same op, so a record
 * never outlives its version); then the copy's data ids: w/ID entries set
 * for a new claim's ids (gc.c reclaims them if the record is never done),
 * compared present and stamped again (a long copy) or compared present
 * and removed (done), and the dropped ids' w/ removed and g/DUE/ID queued
 * (DUE = now + the reclaim grace, which covers other gateways' readers of
 * an expired copy); and the record set or removed.
 * Threads: any caller thread.
 */
#include "index.h"
#include "rados.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RWALK_PAGE 256

/* The index shard of bucket/key (the bucket's current incarnation). */
static int shard_of(struct strata_meta *m, const char *bucket, const char *key, char oid[48])
{
    struct strata_bucket_info b;
    int rc = strata_meta__rados_bucket_get(m, bucket, &b);
    if (rc)
        return rc;
    strata_meta__rados_idx_oid(oid, b.incarnation,
                               strata_meta__rados_idx_shard(key, strlen(key)));
    return 0;
}

int strata_meta__rados_restore_get(struct strata_meta *m, const char *bucket, const char *key,
                                   const uint8_t sk[16], char **v, size_t *vl)
{
    char oid[48], rk[RADOS_IKEY_MAX];
    int rc = shard_of(m, bucket, key, oid);
    if (rc)
        return rc;
    strata_meta__rados_skey(rk, 'r', key, strlen(key), sk);
    return strata_meta__rados_get1(meta_rados_of(m)->meta, oid, rk, v, vl);
}

/* The w/ value of a restored copy's data: "CREATED - BUCKET/KEY" (gc.c). */
static char *wval(const char *bucket, const char *key, size_t *len)
{
    size_t cap = 16 + 3 + strlen(bucket) + 1 + strlen(key) + 1;
    char *v = malloc(cap);
    if (v)
        *len = (size_t)snprintf(v, cap, "%016" PRIx64 " - %s/%s",
                                (uint64_t)strata_meta__rados_wall_ms(), bucket, key);
    return v;
}

int strata_meta__rados_restore_swap(struct strata_meta *m,
                                    const struct strata_meta__restore_swap *s)
{
    struct meta_rados *r = meta_rados_of(m);
    char oid[48], rk[RADOS_IKEY_MAX], ok[RADOS_IKEY_MAX];
    int rc = shard_of(m, s->bucket, s->key, oid);
    if (rc)
        return rc;
    size_t kl = strlen(s->key);
    strata_meta__rados_skey(rk, 'r', s->key, kl, s->sk);
    strata_meta__rados_skey(ok, 'o', s->key, kl, s->sk);
    size_t wl = 0;
    char *wv = s->npend ? wval(s->bucket, s->key, &wl) : NULL;
    /* prvals: layout, record, version, one per pending id. */
    int *pr = calloc(3 + s->npend, sizeof(*pr));
    rados_write_op_t op = rados_create_write_op();
    if (!pr || !op || (s->npend && !wv)) {
        free(wv);
        free(pr);
        if (op)
            rados_release_write_op(op);
        return STRATA_ENOMEM;
    }
    rados_write_op_omap_cmp(op, RADOS_LAYOUT_KEY, LIBRADOS_CMPXATTR_OP_EQ, "", 0, &pr[0]);
    rados_write_op_omap_cmp(op, rk, LIBRADOS_CMPXATTR_OP_EQ, s->old ? s->old : "",
                            s->old ? s->oldlen : 0, &pr[1]);
    if (s->nw)
        rados_write_op_omap_cmp(op, ok, LIBRADOS_CMPXATTR_OP_GT, "", 0, &pr[2]);
    for (size_t i = 0; i < s->npend; i++) {
        char wk[40];
        const char *k = wk;
        strata_meta__rados_wkey(wk, s->pend[i]);
        if (s->pend_op != STRATA_META__PEND_ADD)
            rados_write_op_omap_cmp(op, wk, LIBRADOS_CMPXATTR_OP_GT, "", 0, &pr[3 + i]);
        if (s->pend_op == STRATA_META__PEND_DONE)
            rados_write_op_omap_rm_keys(op, &k, 1);
        else if (s->pend_op != STRATA_META__PEND_NONE)
            rados_write_op_omap_set(op, &k, (const char *const *)&wv, &wl, 1);
    }
    int64_t due = strata_meta__rados_wall_ms() + r->reclaim_grace_ms;
    for (size_t i = 0; i < s->ndrop; i++) {
        char wk[40], gk[56];
        const char *k = wk, *g = gk;
        strata_meta__rados_wkey(wk, s->drop[i]);
        const char *tier = strata_meta__rados_gent(gk, due, NULL, s->drop[i]);
        size_t tl = strlen(tier);
        rados_write_op_omap_rm_keys(op, &k, 1);
        rados_write_op_omap_set(op, &g, &tier, &tl, 1);
    }
    const char *k = rk;
    if (s->nw) {
        const char *v = s->nw;
        size_t l = s->nwlen;
        rados_write_op_omap_set(op, &k, &v, &l, 1);
    } else {
        rados_write_op_omap_rm_keys(op, &k, 1);
    }
    int x = rados_write_op_operate(op, r->meta, oid, NULL, 0);
    rados_release_write_op(op);
    free(wv);
    free(pr);
    if (x == -ECANCELED)
        return STRATA_EPRECOND;
    if (x == -ENOENT)
        return STRATA_ENOTFOUND;
    return strata_meta__rados_err(x);
}

/* ---- in a version's commit (key.c) ---- */

int strata_meta__rados_restore_gone(rados_write_op_t op, struct rados_rgone *g, const char *key,
                                    const uint8_t sk[16], const char *val, size_t len,
                                    int64_t due_ms)
{
    strata_meta__rados_skey(g->rk, 'r', key, strlen(key), sk);
    rados_write_op_omap_cmp(op, g->rk, LIBRADOS_CMPXATTR_OP_EQ, val ? val : "", val ? len : 0,
                            &g->pr);
    if (!val)
        return 0; /* no restored copy: none may appear meanwhile */
    const char *k = g->rk;
    rados_write_op_omap_rm_keys(op, &k, 1);
    g->due_ms = due_ms;
    g->op = op;
    strata_meta__restore_refs(val, len, strata_meta__rados_restore_gone_id, g);
    return 0;
}

void strata_meta__rados_restore_gone_id(const uint8_t *id, void *ud)
{
    struct rados_rgone *g = ud;
    char wk[40], gk[56];
    const char *k = wk, *gp = gk;
    strata_meta__rados_wkey(wk, id);
    const char *tier = strata_meta__rados_gent(gk, g->due_ms, NULL, id);
    size_t tl = strlen(tier);
    rados_write_op_omap_rm_keys(g->op, &k, 1);
    rados_write_op_omap_set(g->op, &gp, &tier, &tl, 1);
}

/* ---- the sweep's walk ---- */

struct rwalk {
    const char *bucket;
    strata_meta__restore_walk_fn cb;
    void *ud;
};

static int walk_cb(void *ud, const char *k, const char *v, size_t vl)
{
    (void)v;
    (void)vl;
    struct rwalk *w = ud;
    char key[STRATA_KEY_MAX + 1];
    const char *rest = NULL;
    uint8_t sk[16];
    if (strata_meta__rados_ikey_parse(k, key, sizeof(key), &rest) == 0 || !rest ||
        strlen(rest) != 32 || strata_meta__rados_sk_parse(rest, sk))
        return 0; /* not a record key: left alone */
    w->cb(w->ud, w->bucket, key, sk);
    return 0;
}

int strata_meta__rados_restore_walk(struct strata_meta *m, strata_meta__restore_walk_fn cb,
                                    void *ud)
{
    struct meta_rados *r = meta_rados_of(m);
    struct rados_blist l;
    int rc = strata_meta__rados_blist_read(m, &l);
    for (size_t i = 0; rc == 0 && i < l.n; i++) {
        struct rwalk w = {l.name[i], cb, ud};
        for (unsigned s = 0; rc == 0 && s < RADOS_IDX_SHARDS; s++) {
            char oid[48], last[RADOS_IKEY_MAX] = "";
            strata_meta__rados_idx_oid(oid, l.inc[i], s);
            bool more = true;
            while (rc == 0 && more) {
                char start[RADOS_IKEY_MAX];
                snprintf(start, sizeof(start), "%s", last);
                rc = strata_meta__rados_page(r->meta, oid, start, "r/", RWALK_PAGE, walk_cb, &w,
                                             last, sizeof(last), &more);
            }
            if (rc == STRATA_ENOTFOUND)
                rc = 0; /* a bucket deleted meanwhile */
        }
    }
    strata_meta__rados_blist_free(&l);
    return rc;
}
