/*
 * intent.c - the RADOS backend's transition intents (store.h, "a
 * transition's intent records"; RADOS.md, "Tiers as pools"): x/K\x01SK on
 * the key's index shard, next to the version it moves.
 *
 *   put:     one op: omap_cmp(\x01layout, EQ, "") (not while the bucket is
 *            being deleted) + omap_set(x/K\x01SK -> transition.c's bytes);
 *   resolve: one op: omap_cmp(x/K\x01SK, EQ, the bytes read) + omap_rm of
 *            it + omap_set(g/DUE/ID -> [tier, 0]) for every losing copy,
 *            so the losing data is queued for reclaim exactly when the
 *            intent goes, and two gateways resolving the same intent queue
 *            it once (the second one's compare fails: already resolved).
 * g/ entries (RADOS.md, "Data whose commit never happened"): DUE = now +
 * the reclaim grace as 16 hex ms, ID the data id as 32 hex; the value a
 * msgpack array [tier name ("" the hot tier), stripes (0: unknown, the
 * reclaimer removes stripes until it meets absent ones)].
 * Threads: any caller thread.
 */
#include "index.h"
#include "rados.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RECLAIM_GRACE_MS (15 * 60 * 1000) /* a GET elsewhere may still stream it */

/* The shard object of bucket/key and the intent's key in it. */
static int intent_where(struct strata_meta *m, const char *bucket, const char *key,
                        const uint8_t sk[16], char oid[48], char xkey[RADOS_IKEY_MAX])
{
    struct strata_bucket_info b;
    int rc = strata_meta__rados_bucket_get(m, bucket, &b);
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

/* One reclaim entry: its g/ key and msgpack value. */
struct gent {
    char key[2 + 16 + 1 + 32 + 1];
    msgpack_sbuffer val;
};

static void gent_make(struct gent *g, uint64_t due_ms, const struct strata_meta__intent_loss *l)
{
    char due[17];
    strata_meta__rados_hex16(due_ms, due);
    uint8_t id[16];
    memcpy(id, l->id, 16);
    char idhex[33];
    strata_meta__rados_sk_hex(id, idhex); /* a data id is 16 bytes too: 32 hex */
    snprintf(g->key, sizeof(g->key), "g/%s/%s", due, idhex);
    msgpack_sbuffer_init(&g->val);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &g->val, msgpack_sbuffer_write);
    size_t tl = strlen(l->tier);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_str(&pk, tl);
    msgpack_pack_str_body(&pk, l->tier, tl);
    msgpack_pack_uint64(&pk, 0);
}

int strata_meta__rados_intent_resolve(struct strata_meta *m, const char *bucket, const char *key,
                                      const uint8_t sk[16], const void *v, size_t vl,
                                      const struct strata_meta__intent_loss *loss, size_t n)
{
    char oid[48], xkey[RADOS_IKEY_MAX];
    int rc = intent_where(m, bucket, key, sk, oid, xkey);
    if (rc)
        return rc;
    struct gent *g = calloc(n ? n : 1, sizeof(*g));
    const char **ks = calloc(n ? n : 1, sizeof(*ks)), **vs = calloc(n ? n : 1, sizeof(*vs));
    size_t *ls = calloc(n ? n : 1, sizeof(*ls));
    rados_write_op_t op = g && ks && vs && ls ? rados_create_write_op() : NULL;
    if (!op) {
        free(g);
        free(ks);
        free(vs);
        free(ls);
        return STRATA_ENOMEM;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t due = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u + RECLAIM_GRACE_MS;
    for (size_t i = 0; i < n; i++) {
        gent_make(&g[i], due, &loss[i]);
        ks[i] = g[i].key;
        vs[i] = g[i].val.data ? g[i].val.data : "";
        ls[i] = g[i].val.size;
    }
    int pr = 0;
    const char *rk = xkey;
    rados_write_op_omap_cmp(op, xkey, LIBRADOS_CMPXATTR_OP_EQ, v, vl, &pr);
    rados_write_op_omap_rm_keys(op, &rk, 1);
    if (n)
        rados_write_op_omap_set(op, ks, vs, ls, n);
    int r = rados_write_op_operate(op, meta_rados_of(m)->meta, oid, NULL, 0);
    rados_release_write_op(op);
    for (size_t i = 0; i < n; i++)
        msgpack_sbuffer_destroy(&g[i].val);
    free(g);
    free(ks);
    free(vs);
    free(ls);
    rc = strata_meta__rados_err(r);
    if (rc == STRATA_EPRECOND)
        rc = 0; /* another gateway resolved it first (or it is gone) */
    if (rc == 0) {
        strata_meta__tr_step(m, STRATA_TR_STEP_REMOVED);
        strata_meta__tr_step(m, STRATA_TR_STEP_DONE);
    }
    return rc;
}
