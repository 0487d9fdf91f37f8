/*
 * shards.c - closing a bucket incarnation's index shards for its deletion
 * (RADOS.md, "Keys of an index shard": `\x01layout`).
 *
 * Every commit compares `\x01layout` EQ "" (absent), so setting it on all
 * 8 shards stops new versions from landing; only then is the bucket
 * looked at for versions (any `h/` key), so nothing can slip in between
 * the emptiness check and the record's removal.  A deletion that is
 * refused (not empty) or fails opens the shards again.  The shards are
 * made with the bucket's configuration object, before the record that
 * names the incarnation: a commit never creates one, so a commit for an
 * incarnation that never was finds no shard (-ENOENT: not found), and one
 * for a deleted incarnation finds its shards closed.
 */
#include "index.h"
#include "rados.h"

#include <errno.h>
#include <string.h>

#define LAYOUT_CLOSED "closed"

/* fn on the oid of each of incarnation inc's index shards in turn, until
 * one answers non-zero (returned). */
static int each_shard(struct meta_rados *r, uint64_t inc,
                      int (*fn)(struct meta_rados *r, const char *oid, void *ud), void *ud)
{
    for (unsigned i = 0; i < RADOS_IDX_SHARDS; i++) {
        char oid[48];
        strata_meta__rados_idx_oid(oid, inc, i);
        int rc = fn(r, oid, ud);
        if (rc)
            return rc;
    }
    return 0;
}

static int shard_make(struct meta_rados *r, const char *oid, void *ud)
{
    (void)ud;
    return strata_meta__rados_create(r->meta, oid);
}

int strata_meta__rados_shards_make(struct meta_rados *r, uint64_t inc)
{
    return each_shard(r, inc, shard_make, NULL);
}

static int shard_remove(struct meta_rados *r, const char *oid, void *ud)
{
    (void)ud;
    rados_remove(r->meta, oid); /* best effort: else the gc lease holder's */
    return 0;
}

void strata_meta__rados_shards_remove(struct meta_rados *r, uint64_t inc)
{
    each_shard(r, inc, shard_remove, NULL);
}

static int shard_close(struct meta_rados *r, const char *oid, void *ud)
{
    (void)ud;
    const char *k = RADOS_LAYOUT_KEY, *v = LAYOUT_CLOSED;
    size_t vl = strlen(LAYOUT_CLOSED);
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return STRATA_ENOMEM;
    rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
    rados_write_op_omap_set(op, &k, &v, &vl, 1);
    int x = rados_write_op_operate(op, r->meta, oid, NULL, 0);
    rados_release_write_op(op);
    return strata_meta__rados_err(x);
}

static int found_one(void *ud, const char *k, const char *v, size_t vl)
{
    (void)k;
    (void)v;
    (void)vl;
    *(bool *)ud = true;
    return 1;
}

/* Stops the walk (1) at the first shard holding a version. */
static int shard_has_versions(struct meta_rados *r, const char *oid, void *ud)
{
    bool *found = ud, more;
    char last[64];
    int rc = strata_meta__rados_page(r->meta, oid, "", "h/", 1, found_one, found, last,
                                     sizeof(last), &more);
    return rc ? rc : *found;
}

int strata_meta__rados_shards_close(struct meta_rados *r, uint64_t inc, bool *empty)
{
    *empty = true;
    int rc = each_shard(r, inc, shard_close, NULL);
    if (rc)
        return rc;
    bool found = false;
    rc = each_shard(r, inc, shard_has_versions, &found);
    *empty = !found;
    return rc < 0 ? rc : 0;
}

static int shard_open(struct meta_rados *r, const char *oid, void *ud)
{
    (void)ud;
    /* Only a shard this close set (compare): best effort otherwise. */
    strata_meta__rados_cas1(r->meta, oid, RADOS_LAYOUT_KEY, LAYOUT_CLOSED, strlen(LAYOUT_CLOSED),
                            RADOS_LAYOUT_KEY, NULL, 0);
    return 0;
}

void strata_meta__rados_shards_open(struct meta_rados *r, uint64_t inc)
{
    each_shard(r, inc, shard_open, NULL);
}
