/*
 * intent.c - the RADOS backend's transition intents (store.h, "a
 * transition's intent records"; RADOS.md, "Tiers as pools"): x/K\x01SK on
 * the key's index shard, next to the version it moves.
 *
 *   put:     one op: omap_cmp(\x01layout, EQ, "") (not while the bucket is
 *            being deleted) + omap_set(x/K\x01SK -> transition.c's bytes);
 *   resolve: one op: omap_cmp(x/K\x01SK, EQ, the bytes read) + omap_rm of
 *            it + omap_set(g/DUE/ID -> "TIER") for every losing copy,
 *            so the losing data is queued for reclaim exactly when the
 *            intent goes, and two gateways resolving the same intent queue
 *            it once (the second one's compare fails: already resolved).
 * g/ entries are gc.c's (strata_meta__rados_gent): DUE = now + the reclaim
 * grace, the value the tier's name ("-" the hot tier); the gc pass removes
 * their data.
 * Threads: any caller thread.
 */
#include "index.h"
#include "rados.h"

#include <stdlib.h>
#include <string.h>

/* The shard object of bucket/key and the intent's key in it. */
static int intent_where(struct strata_meta *m, const char *bucket, const char *key,
                        const uint8_t sk[16], char oid[48], char xkey[RADOS_IKEY_MAX])
{
    struct strata_bucket_info b;
    int rc = strata_meta__rados_bucket_fresh(m, bucket, &b);
    if (rc)
        return rc;
    size_t kl = strlen(key);
    strata_meta__rados_idx_oid(oid, b.incarnation, strata_meta__rados_idx_shard(key, kl));
    strata_meta__rados_skey(xkey, 'x', key, kl, sk);
    return 0;
}

int strata_meta__rados_intent_put(struct strata_meta *m, const char *bucket, const char *key,
                                  const uint8_t sk[16], const void *v, size_t vl)
{
    char oid[48], xkey[RADOS_IKEY_MAX];
    int rc = intent_where(m, bucket, key, sk, oid, xkey);
    if (rc)
        return rc;
    rc = strata_meta__rados_cas1(meta_rados_of(m)->meta, oid, RADOS_LAYOUT_KEY, "", 0, xkey, v, vl);
    return rc == STRATA_EPRECOND ? STRATA_EBUSY : rc; /* a deletion closed the shard */
}

int strata_meta__rados_intent_get(struct strata_meta *m, const char *bucket, const char *key,
                                  const uint8_t sk[16], char **v, size_t *vl)
{
    *v = NULL;
    *vl = 0;
    char oid[48], xkey[RADOS_IKEY_MAX];
    int rc = intent_where(m, bucket, key, sk, oid, xkey);
    if (rc)
        return rc;
    return strata_meta__rados_get1(meta_rados_of(m)->meta, oid, xkey, v, vl);
}

int strata_meta__rados_intent_resolve(struct strata_meta *m, const char *bucket, const char *key,
                                      const uint8_t sk[16], const void *v, size_t vl,
                                      const struct strata_meta__intent_loss *loss, size_t n)
{
    char oid[48], xkey[RADOS_IKEY_MAX];
    int rc = intent_where(m, bucket, key, sk, oid, xkey);
    if (rc)
        return rc;
    struct meta_rados *r = meta_rados_of(m);
    size_t cap = n ? n : 1;
    char(*gk)[56] = calloc(cap, sizeof(*gk));
    const char **ks = calloc(cap, sizeof(*ks)), **vs = calloc(cap, sizeof(*vs));
    size_t *ls = calloc(cap, sizeof(*ls));
    rados_write_op_t op = gk && ks && vs && ls ? rados_create_write_op() : NULL;
    if (!op) {
        free(gk);
        free(ks);
        free(vs);
        free(ls);
        return STRATA_ENOMEM;
    }
    int64_t due = strata_meta__rados_wall_ms() + r->reclaim_grace_ms;
    for (size_t i = 0; i < n; i++) {
        ks[i] = gk[i];
        vs[i] = strata_meta__rados_gent(gk[i], due, loss[i].tier, loss[i].id);
        ls[i] = strlen(vs[i]);
    }
    int pr = 0;
    const char *rk = xkey;
    rados_write_op_omap_cmp(op, xkey, LIBRADOS_CMPXATTR_OP_EQ, v, vl, &pr);
    rados_write_op_omap_rm_keys(op, &rk, 1);
    if (n)
        rados_write_op_omap_set(op, ks, vs, ls, n);
    int x = rados_write_op_operate(op, r->meta, oid, NULL, 0);
    rados_release_write_op(op);
    free(gk);
    free(ks);
    free(vs);
    free(ls);
    rc = strata_meta__rados_err(x);
    if (rc == STRATA_EPRECOND)
        rc = 0; /* another gateway resolved it first (or it is gone) */
    if (rc == 0) {
        strata_meta__tr_step(m, STRATA_TR_STEP_REMOVED);
        strata_meta__tr_step(m, STRATA_TR_STEP_DONE);
    }
    return rc;
}
