/*
 * bucket.c - bucket records and configuration documents in the cluster
 * (the seam's bucket_txn, bucket_get/list, config_put/get).
 *
 * `buckets` holds one omap key per bucket: name -> the bucket record
 * (msgpack, record.c's codec).  A bucket_txn reads the record, runs the
 * rules' decide on it and commits with one op guarded by
 * omap_cmp(name, EQ, the value read) (EQ "" when absent: the create race),
 * so two gateways changing one bucket cannot both win; the loser's op
 * fails with -ECANCELED and decide runs again on what is there now.
 *
 * A bucket incarnation's configuration documents are the omap of its own
 * object bucket.INC (c/KIND -> document), created before the record that
 * names it, so a document can only be written while the object exists; a
 * removal deletes the record first, then the object.  An object whose
 * record never committed (a lost create race, a crash) is removed by the
 * creator when it can, else left to the gc lease holder (RADOS.md).
 */
#include "rados.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TXN_TRIES 32
#define LIST_PAGE 1000

void strata_meta__rados_config_oid(char oid[32], uint64_t inc)
{
    snprintf(oid, 32, "bucket.%016" PRIx64, inc);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The configuration object and index shards of a new incarnation, before
 * its record. */
static int config_obj_create(struct meta_rados *r, uint64_t inc)
{
    char oid[32];
    strata_meta__rados_config_oid(oid, inc);
    int rc = strata_meta__rados_create(r->meta, oid);
    return rc ? rc : strata_meta__rados_shards_make(r, inc);
}

/* The objects of an incarnation whose record never committed. */
static void made_remove(struct meta_rados *r, uint64_t inc)
{
    char oid[32];
    strata_meta__rados_config_oid(oid, inc);
    rados_remove(r->meta, oid);
    strata_meta__rados_shards_remove(r, inc);
}

static void config_obj_remove(struct meta_rados *r, uint64_t inc)
{
    char oid[32];
    strata_meta__rados_config_oid(oid, inc);
    rados_remove(r->meta, oid); /* best effort: else the gc lease holder's */
}

int strata_meta__rados_bucket_txn(struct strata_meta *m, const struct strata_meta__bucket_txn *t)
{
    struct meta_rados *r = meta_rados_of(m);
    bool removed_before = false; /* before_remove ran (it runs once) */
    bool made = false;           /* this txn created bucket.made_inc */
    uint64_t made_inc = 0;
    bool closed = false; /* this txn closed bucket closed_inc's shards */
    uint64_t closed_inc = 0;
    bool removed = false;
    int rc = STRATA_EBUSY;
    for (int attempt = 0; attempt < TXN_TRIES; attempt++) {
        char *old = NULL;
        size_t ol = 0;
        struct strata_meta__bucket_view view = {0};
        rc = strata_meta__rados_get1(r->meta, RADOS_OID_BUCKETS, t->name, &old, &ol);
        if (rc == 0) {
            view.exists = true;
            view.info_rc = strata_meta__bucket_decode(old, ol, &view.info);
        } else if (rc == STRATA_ENOTFOUND) {
            rc = 0;
        }
        /* Emptiness is judged with the shards closed, so no version can
         * land between the check and the removal (shards.c). */
        if (rc == 0 && t->want_empty && view.exists && view.info_rc == 0) {
            rc = strata_meta__rados_shards_close(r, view.info.incarnation, &view.empty);
            if (rc == 0) {
                closed = true;
                closed_inc = view.info.incarnation;
            }
        }
        enum strata_meta__bucket_edit edit = STRATA_META__BUCKET_PUT;
        struct strata_bucket_info next;
        memset(&next, 0, sizeof(next));
        if (rc == 0)
            rc = t->decide(t->ud, &view, &edit, &next);
        if (rc == 0 && edit == STRATA_META__BUCKET_REMOVE && !view.exists)
            rc = STRATA_ENOTFOUND;
        if (rc == 0 && edit == STRATA_META__BUCKET_REMOVE && t->before_remove &&
            !removed_before) {
            removed_before = true;
            rc = t->before_remove(m, t->name, t->ud);
        }
        bool creates = rc == 0 && edit == STRATA_META__BUCKET_PUT &&
                       (!view.exists || view.info.incarnation != next.incarnation);
        if (creates && !(made && made_inc == next.incarnation)) {
            if (made)
                made_remove(r, made_inc);
            made = false;
            rc = config_obj_create(r, next.incarnation);
            if (rc == 0) {
                made = true;
                made_inc = next.incarnation;
            }
        }
        char *v = NULL;
        size_t vl = 0;
        if (rc == 0 && edit == STRATA_META__BUCKET_PUT)
            rc = strata_meta__bucket_encode_at(&next, now_ns(), &v, &vl);
        if (rc == 0)
            rc = strata_meta__rados_cas1(r->meta, RADOS_OID_BUCKETS, t->name, old, ol, t->name,
                                         edit == STRATA_META__BUCKET_PUT ? v : NULL, vl);
        free(v);
        if (rc == 0) {
            /* The record is committed: the object it named goes with it, and
             * one made for this record stays. */
            if (view.exists && (edit == STRATA_META__BUCKET_REMOVE ||
                                view.info.incarnation != next.incarnation))
                config_obj_remove(r, view.info.incarnation);
            if (creates)
                made = false;
            removed = edit == STRATA_META__BUCKET_REMOVE;
            strata_meta__rados_bcache_drop(r, t->name); /* read before: not current */
        }
        free(old);
        if (rc != STRATA_EPRECOND)
            break;
        rc = STRATA_EBUSY; /* another gateway changed the record: decide again */
    }
    if (made) /* decided otherwise, failed or lost the race: nothing left */
        made_remove(r, made_inc);
    if (closed && !removed) {
        /* Refused or failed: open the shards again, unless the bucket went
         * meanwhile (another deletion won). */
        struct strata_bucket_info now;
        if (strata_meta__rados_bucket_fresh(m, t->name, &now) == 0 && now.incarnation == closed_inc)
            strata_meta__rados_shards_open(r, closed_inc);
    }
    return rc;
}

/* A page of the bucket list: cb per readable record until it answers
 * non-zero (kept in rc). */
struct blist_page {
    int (*cb)(const struct strata_bucket_info *b, void *ud);
    void *ud;
    int rc;
    size_t got;
};

static int blist_take(void *ud, const char *k, const char *v, size_t vl)
{
    (void)k;
    struct blist_page *p = ud;
    p->got++;
    struct strata_bucket_info b;
    if (strata_meta__bucket_decode(v, vl, &b) != 0)
        return 0; /* unreadable: as a missing record */
    p->rc = p->cb(&b, p->ud);
    return p->rc != 0;
}

int strata_meta__rados_bucket_list(struct strata_meta *m,
                                   int (*cb)(const struct strata_bucket_info *b, void *ud),
                                   void *ud)
{
    struct meta_rados *r = meta_rados_of(m);
    char after[STRATA_BUCKET_NAME_MAX + 1] = "";
    for (;;) {
        struct blist_page p = {cb, ud, 0, 0};
        bool more;
        int rc = strata_meta__rados_page(r->meta, RADOS_OID_BUCKETS, after, "", LIST_PAGE,
                                         blist_take, &p, after, sizeof(after), &more);
        if (rc == 0)
            rc = p.rc;
        if (rc || !more || p.got == 0)
            return rc;
    }
}

int strata_meta__rados_config_put(struct strata_meta *m, const char *bucket, uint64_t inc,
                                  const char *kind, const void *doc, size_t len)
{
    struct meta_rados *r = meta_rados_of(m);
    struct strata_bucket_info b;
    int rc = strata_meta__rados_bucket_fresh(m, bucket, &b);
    if (rc == 0 && b.incarnation != inc)
        rc = STRATA_ENOTFOUND; /* deleted and created again since */
    if (rc)
        return rc;
    char oid[32], key[80];
    strata_meta__rados_config_oid(oid, inc);
    snprintf(key, sizeof(key), "c/%s", kind);
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return STRATA_ENOMEM;
    /* Only while the incarnation's object exists: a removal deletes it. */
    rados_write_op_assert_exists(op);
    const char *k = key, *v = doc;
    if (len)
        rados_write_op_omap_set(op, &k, &v, &len, 1);
    else
        rados_write_op_omap_rm_keys(op, &k, 1);
    int rr = rados_write_op_operate(op, r->meta, oid, NULL, 0);
    rados_release_write_op(op);
    return strata_meta__rados_err(rr);
}

int strata_meta__rados_config_get(struct strata_meta *m, const char *bucket, const char *kind,
                                  void **doc, size_t *len)
{
    /* Read, not cached: a stale incarnation's object is gone, and its
     * absence would look like an absent document. */
    struct strata_bucket_info b;
    int rc = strata_meta__rados_bucket_fresh(m, bucket, &b);
    if (rc)
        return rc;
    char oid[32], key[80], *v;
    strata_meta__rados_config_oid(oid, b.incarnation);
    snprintf(key, sizeof(key), "c/%s", kind);
    rc = strata_meta__rados_get1(meta_rados_of(m)->meta, oid, key, &v, len);
    *doc = rc == 0 ? v : NULL;
    return rc;
}

static int blist_add(const struct strata_bucket_info *b, void *ud)
{
    struct rados_blist *l = ud;
    if (l->n == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 16;
        void *nn = realloc(l->name, nc * sizeof(*l->name));
        if (nn)
            l->name = nn;
        uint64_t *ni = nn ? realloc(l->inc, nc * sizeof(*ni)) : NULL;
        if (!ni)
            return STRATA_ENOMEM;
        l->inc = ni;
        l->cap = nc;
    }
    snprintf(l->name[l->n], sizeof(l->name[0]), "%s", b->name);
    l->inc[l->n++] = b->incarnation;
    return 0;
}

int strata_meta__rados_blist_read(struct strata_meta *m, struct rados_blist *l)
{
    memset(l, 0, sizeof(*l));
    int rc = strata_meta__rados_bucket_list(m, blist_add, l);
    if (rc)
        strata_meta__rados_blist_free(l);
    return rc;
}

void strata_meta__rados_blist_free(struct rados_blist *l)
{
    free(l->name);
    free(l->inc);
    memset(l, 0, sizeof(*l));
}
