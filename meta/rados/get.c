/*
 * get.c - the RADOS backend's key_get (store.h): the version GET and HEAD
 * show, in one read op on the key's index shard (RADOS.md, "Small and
 * large data"):
 *   latest:  omap_get_vals2(o/K\x01, max 1), the newest version;
 *   an id:   omap_get_vals_by_keys(o/K\x01SK) and the newest (is it the
 *            latest?) in the same op;
 *   "null":  the versions newest first, a page at a time, until the first
 *            null one (in an unversioned bucket it is the newest: one op).
 * An inline object's bytes are the record's field 6, so a GET of one is
 * that op.  The record is decoded where librados returned it and handed to
 * the callback before the op is released (no copy).  Nothing is cached:
 * a version committed or removed by another gateway is seen by the next
 * read.  The bucket's incarnation (which shards) comes from its record as
 * cached (bcache.c), so a GET is one round trip; the read op compares
 * \x01layout EQ "" (the shard is open), so a cached record naming a
 * deleted incarnation (its shards closed, or removed: -ENOENT) is caught
 * by the op itself and the record read again: a bucket deleted and created
 * again never shows the old incarnation's keys, whatever the cache holds.
 * A shard closed while its current incarnation is being deleted changes no
 * version: then the read goes on without the compare, as before.
 * Threads: any caller thread.
 */
#include "index.h"
#include "rados.h"

#include <errno.h>
#include <string.h>

#include "strata/erasure.h"

#define NULL_PAGE 16 /* "null" in a versioned bucket: pages of this many, doubling */

/* The inline object of the version found: the record holds it whole,
 * checked against its CRC32C. */
static int inline_copy(const struct strata_meta__key_found *f, uint8_t *out)
{
    const struct meta_rec *r = f->rec;
    if (!r->shard || r->shard_len != r->size ||
        strata_crc32c(0, r->shard, r->shard_len) != r->shard_crc)
        return STRATA_ECORRUPT;
    memcpy(out, r->shard, r->size);
    return 0;
}

/* Hand the version stored as (ok, val, vl) to fn. */
static int found(const char *ok, size_t obl, const char *val, size_t vl, bool latest,
                 strata_meta__key_found_fn fn, void *ud)
{
    struct strata_meta__key_found f;
    memset(&f, 0, sizeof(f));
    if (strata_meta__rados_sk_parse(ok + obl, f.sk))
        return STRATA_ECORRUPT;
    struct meta_rec rec;
    int rc = strata_meta__rec_decode(val, vl, false, &rec);
    if (rc)
        return rc;
    f.rec = &rec;
    f.raw = val;
    f.rawlen = vl;
    f.is_latest = latest;
    f.inline_read = inline_copy;
    rc = fn(ud, &f);
    strata_meta__rec_fini(&rec);
    return rc;
}

/* One read op: the newest version (vals2 after start, max n) and, with
 * named, that one version.  Calls fn with the version asked for when the
 * op finds it; *more: the versions go on past the page; *last: the key of
 * the page's last version (for the next page), "" when none. */
struct page {
    const char *oid, *obase, *named, *start;
    size_t obl;
    unsigned n;
    bool want_null, first;
    bool guard; /* compare \x01layout EQ "": -ECANCELED when closed */
    bool more, done, stale;
    char last[RADOS_IKEY_MAX + 2];
};

static int read_page(rados_ioctx_t io, struct page *p, strata_meta__key_found_fn fn, void *ud)
{
    rados_read_op_t op = rados_create_read_op();
    if (!op)
        return STRATA_ENOMEM;
    rados_omap_iter_t vit = NULL, nit = NULL;
    int vpr = 0, npr = 0;
    unsigned char pm = 0;
    int cpr = 0;
    if (p->guard)
        rados_read_op_omap_cmp(op, RADOS_LAYOUT_KEY, LIBRADOS_CMPXATTR_OP_EQ, "", 0, &cpr);
    rados_read_op_omap_get_vals2(op, p->start, p->obase, p->n, &vit, &pm, &vpr);
    if (p->named)
        rados_read_op_omap_get_vals_by_keys(op, &p->named, 1, &nit, &npr);
    int r = rados_read_op_operate(op, io, p->oid, 0);
    int rc = STRATA_ENOTFOUND;
    p->more = false;
    p->stale = false;
    p->last[0] = 0;
    if (p->guard && (r == -ENOENT || r == -ECANCELED)) {
        rc = STRATA_EBUSY; /* shard gone or closed: is the incarnation current? */
        p->stale = true;
    } else if (r == -ENOENT) {
        rc = STRATA_ENOTFOUND; /* no such incarnation's shard: no versions */
    } else if (r < 0 || vpr < 0 || npr < 0) {
        rc = strata_meta__rados_err(r < 0 ? r : vpr < 0 ? vpr : npr);
    } else {
        char *k, *v;
        size_t vl;
        /* Only the first page's first entry is the key's latest version. */
        const char *newest = NULL;
        for (unsigned i = 0; vit && rados_omap_get_next(vit, &k, &v, &vl) == 0 && k; i++) {
            bool latest = p->first && i == 0;
            if (latest)
                newest = k; /* valid until the iterator ends */
            snprintf(p->last, sizeof(p->last), "%s", k);
            if (p->named)
                break;
            struct meta_rec probe;
            bool hit = !p->want_null;
            if (p->want_null && strata_meta__rec_decode(v, vl, false, &probe) == 0) {
                hit = (probe.flags & REC_F_NULL) != 0;
                strata_meta__rec_fini(&probe);
            }
            if (hit) {
                rc = found(k, p->obl, v, vl, latest, fn, ud);
                p->done = true;
                break;
            }
        }
        if (p->named) {
            if (nit && rados_omap_get_next(nit, &k, &v, &vl) == 0 && k) {
                bool latest = newest && strcmp(newest, k) == 0;
                rc = found(k, p->obl, v, vl, latest, fn, ud);
            }
            p->done = true;
        }
        p->more = !p->done && pm != 0;
        if (!p->done && !p->more)
            p->done = true; /* the key's versions ran out */
    }
    strata_meta__rados_iter_end(vit);
    strata_meta__rados_iter_end(nit);
    rados_release_read_op(op);
    return rc;
}

int strata_meta__rados_key_get(struct strata_meta *m, const char *bucket, const char *key,
                               const char *version_id, strata_meta__key_found_fn fn, void *ud)
{
    bool want_null = version_id && strcmp(version_id, "null") == 0;
    bool named = version_id && *version_id && !want_null;
    uint8_t sk[16];
    if (named && strata_meta__vid_parse(version_id, sk))
        return STRATA_ENOTFOUND; /* no version can have a malformed id */
    struct strata_bucket_info b;
    int rc = strata_meta__rados_bucket_get(m, bucket, &b);
    if (rc)
        return rc;
    size_t kl = strlen(key);
    char oid[48], obase[RADOS_IKEY_MAX], nkey[RADOS_IKEY_MAX];
    size_t obl = strata_meta__rados_ikey(obase, 'o', key, kl);
    if (named) {
        memcpy(nkey, obase, obl);
        strata_meta__rados_sk_hex(sk, nkey + obl);
    }
    bool guard = true;
    for (int round = 0;; round++) {
        strata_meta__rados_idx_oid(oid, b.incarnation, strata_meta__rados_idx_shard(key, kl));
        struct page p = {.oid = oid, .obase = obase, .named = named ? nkey : NULL, .start = "",
                         .obl = obl, .n = want_null ? NULL_PAGE : 1, .want_null = want_null,
                         .first = true, .guard = guard};
        char start[RADOS_IKEY_MAX + 2];
        for (;;) {
            rc = read_page(meta_rados_of(m)->meta, &p, fn, ud);
            if (p.stale || p.done || rc != STRATA_ENOTFOUND || !p.more)
                break;
            /* "null" not among the newest: read on after the page. */
            memcpy(start, p.last, sizeof(start));
            p.start = start;
            p.first = false;
            p.n = p.n * 2 < 256 ? p.n * 2 : 256;
        }
        if (!p.stale)
            return rc;
        /* Closed or gone: the record as it is now.  Another incarnation:
         * read its shard (guarded again); the same one (being deleted, or
         * its shard not made): read on without the compare, as before. */
        uint64_t was = b.incarnation;
        rc = strata_meta__rados_bucket_fresh(m, bucket, &b);
        if (rc)
            return rc;
        if (b.incarnation == was || round >= 2)
            guard = false;
    }
}
