/*
 * omap.c - the two shapes most of the backend's operations take: read one
 * omap key, and one compound op that compares one key and sets or removes
 * another (RADOS.md: an absent key compares as the empty value, a failed
 * compare cancels the whole op with -ECANCELED); and one page of an
 * object's omap under a prefix, or of its keys alone.
 */
#include "rados.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int strata_meta__rados_get1(rados_ioctx_t io, const char *oid, const char *key, char **val,
                            size_t *len)
{
    *val = NULL;
    *len = 0;
    rados_read_op_t op = rados_create_read_op();
    if (!op)
        return STRATA_ENOMEM;
    rados_omap_iter_t it = NULL;
    int prval = 0;
    rados_read_op_omap_get_vals_by_keys(op, &key, 1, &it, &prval);
    int r = rados_read_op_operate(op, io, oid, 0);
    if (r == 0)
        r = prval;
    int rc = r < 0 ? strata_meta__rados_err(r) : STRATA_ENOTFOUND;
    if (r == 0 && it) {
        char *k = NULL, *v = NULL;
        size_t vl = 0;
        if (rados_omap_get_next(it, &k, &v, &vl) == 0 && k) {
            char *copy = malloc(vl + 1);
            if (!copy) {
                rc = STRATA_ENOMEM;
            } else {
                memcpy(copy, v, vl);
                copy[vl] = 0;
                *val = copy;
                *len = vl;
                rc = 0;
            }
        }
    }
    strata_meta__rados_iter_end(it);
    rados_release_read_op(op);
    return rc;
}

int strata_meta__rados_cas1(rados_ioctx_t io, const char *oid, const char *cmp_key,
                            const char *cmp_val, size_t cmp_len, const char *key,
                            const char *val, size_t len)
{
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return STRATA_ENOMEM;
    int prval = 0;
    if (cmp_key)
        rados_write_op_omap_cmp(op, cmp_key, LIBRADOS_CMPXATTR_OP_EQ, cmp_val ? cmp_val : "",
                                cmp_val ? cmp_len : 0, &prval);
    if (val)
        rados_write_op_omap_set(op, &key, &val, &len, 1);
    else
        rados_write_op_omap_rm_keys(op, &key, 1);
    int r = rados_write_op_operate(op, io, oid, NULL, 0);
    rados_release_write_op(op);
    return strata_meta__rados_err(r);
}

int strata_meta__rados_create(rados_ioctx_t io, const char *oid)
{
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return STRATA_ENOMEM;
    rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
    int r = rados_write_op_operate(op, io, oid, NULL, 0);
    rados_release_write_op(op);
    return strata_meta__rados_err(r);
}

/* One page of oid's omap: its keys and values (under prefix), or with
 * keys_only its keys alone (prefix unused; cb gets empty values). */
static int omap_page(rados_ioctx_t io, const char *oid, const char *start, const char *prefix,
                     bool keys_only, unsigned max,
                     int (*cb)(void *ud, const char *k, const char *v, size_t vl), void *ud,
                     char *last, size_t lastcap, bool *more)
{
    rados_read_op_t op = rados_create_read_op();
    if (!op)
        return STRATA_ENOMEM;
    rados_omap_iter_t it = NULL;
    unsigned char pm = 0;
    int pr = 0;
    if (keys_only)
        rados_read_op_omap_get_keys2(op, start, max, &it, &pm, &pr);
    else
        rados_read_op_omap_get_vals2(op, start, prefix, max, &it, &pm, &pr);
    int x = rados_read_op_operate(op, io, oid, 0);
    int rc = x < 0 ? strata_meta__rados_err(x) : pr < 0 ? strata_meta__rados_err(pr) : 0;
    *more = false;
    if (rc == 0) {
        char *k, *v;
        size_t vl;
        int stop = 0;
        while (!stop && rados_omap_get_next(it, &k, &v, &vl) == 0 && k) {
            snprintf(last, lastcap, "%s", k);
            stop = cb(ud, k, v, vl);
        }
        *more = pm && !stop;
        if (stop < 0)
            rc = stop;
    }
    strata_meta__rados_iter_end(it);
    rados_release_read_op(op);
    return rc;
}

int strata_meta__rados_page(rados_ioctx_t io, const char *oid, const char *start,
                            const char *prefix, unsigned max,
                            int (*cb)(void *ud, const char *k, const char *v, size_t vl), void *ud,
                            char *last, size_t lastcap, bool *more)
{
    return omap_page(io, oid, start, prefix, false, max, cb, ud, last, lastcap, more);
}

int strata_meta__rados_key_page(rados_ioctx_t io, const char *oid, const char *start, unsigned max,
                                int (*cb)(void *ud, const char *k, const char *v, size_t vl),
                                void *ud, char *last, size_t lastcap, bool *more)
{
    return omap_page(io, oid, start, NULL, true, max, cb, ud, last, lastcap, more);
}
