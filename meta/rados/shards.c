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

int strata_meta__rados_shards_make(struct meta_rados *r, uint64_t inc)
{
    for (unsigned i = 0; i < RADOS_IDX_SHARDS; i++) {
        char oid[48];
        strata_meta__rados_idx_oid(oid, inc, i);
        int rc = strata_meta__rados_create(r->meta, oid);
        if (rc)
            return rc;
    }
    return 0;
}

void strata_meta__rados_shards_remove(struct meta_rados *r, uint64_t inc)
{
    for (unsigned i = 0; i < RADOS_IDX_SHARDS; i++) {
        char oid[48];
        strata_meta__rados_idx_oid(oid, inc, i);
        rados_remove(r->meta, oid); /* best effort: else the gc lease holder's */
    }
}

int strata_meta__rados_shards_close(struct meta_rados *r, uint64_t inc, bool *empty)
{
    *empty = true;
    const char *k = RADOS_LAYOUT_KEY, *v = LAYOUT_CLOSED;
    size_t vl = strlen(LAYOUT_CLOSED);
    for (unsigned i = 0; i < RADOS_IDX_SHARDS; i++) {
        char oid[48];
        strata_meta__rados_idx_oid(oid, inc, i);
        rados_write_op_t op = rados_create_write_op();
        if (!op)
            return STRATA_ENOMEM;
        rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
        rados_write_op_omap_set(op, &k, &v, &vl, 1);
        int x = rados_write_op_operate(op, r->meta, oid, NULL, 0);
        rados_release_write_op(op);
        if (x < 0)
            return strata_meta__rados_err(x);
    }
    for (unsigned i = 0; i < RADOS_IDX_SHARDS && *empty; i++) {
        char oid[48];
        strata_meta__rados_idx_oid(oid, inc, i);
        rados_read_op_t op = rados_create_read_op();
        if (!op)
            return STRATA_ENOMEM;
        rados_omap_iter_t it = NULL;
        unsigned char more = 0;
        int pr = 0;
        rados_read_op_omap_get_vals2(op, "", "h/", 1, &it, &more, &pr);
        int x = rados_read_op_operate(op, r->meta, oid, 0);
        if (x == 0 && pr == 0 && it && rados_omap_iter_size(it) > 0)
            *empty = false;
        if (it)
            rados_omap_get_end(it);
        rados_release_read_op(op);
        if (x < 0 || pr < 0)
            return strata_meta__rados_err(x < 0 ? x : pr);
    }
    return 0;
}

void strata_meta__rados_shards_open(struct meta_rados *r, uint64_t inc)
{
    for (unsigned i = 0; i < RADOS_IDX_SHARDS; i++) {
        char oid[48];
        strata_meta__rados_idx_oid(oid, inc, i);
        /* Only a shard this close set (compare): best effort otherwise. */
        strata_meta__rados_cas1(r->meta, oid, RADOS_LAYOUT_KEY, LAYOUT_CLOSED,
                                strlen(LAYOUT_CLOSED), RADOS_LAYOUT_KEY, NULL, 0);
    }
}
