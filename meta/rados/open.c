/*
 * open.c - the daemon's strata_meta on a Ceph cluster: connect (bounded),
 * the same pool and layout check as `strata rados check`, then the handle
 * every backend shares (store.c) with this backend's ops, and the
 * retention clock and audit log opened through them.  No drive is used:
 * the namespace, the clock's mark and the audit chain are the cluster's.
 */
#include "rados.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* The tiers as pools of ro (RADOS.md, "Tiers as pools") after the hot
 * one: m->tiers[1..], owned by m.  Each pool must exist already (it is
 * the operator's, often an EC pool on other OSDs): a missing one is
 * STRATA_ENOTFOUND with a line saying how to make it. */
static int pool_tiers(struct strata_meta *m, const struct strata_rados_opts *ro, char *msg,
                      size_t cap)
{
    struct meta_rados *r = meta_rados_of(m);
    for (unsigned i = 0; i < ro->ntiers; i++) {
        const char *name = ro->tiers[i].name, *pool = ro->tiers[i].pool;
        char own_meta[RADOS_PREFIX_MAX + 8], own_data[RADOS_PREFIX_MAX + 8];
        snprintf(own_meta, sizeof(own_meta), "%s.meta", r->prefix);
        snprintf(own_data, sizeof(own_data), "%s.data", r->prefix);
        if (!name || !pool || !*pool || m->ntiers == STRATA_TIERS_MAX ||
            !strata_tier_name_ok(name) || strata_meta__tier(m, name) ||
            strcmp(name, STRATA_TIER_HOT) == 0 || strcmp(pool, own_meta) == 0 ||
            strcmp(pool, own_data) == 0) {
            snprintf(msg, cap,
                     "tier %s: pool \"%s\": want a tier name other than hot, given once, and "
                     "a pool other than %s.meta and %s.data",
                     name ? name : "", pool ? pool : "", r->prefix, r->prefix);
            return STRATA_EINVAL;
        }
        int64_t id = rados_pool_lookup(r->c, pool);
        if (id == -ENOENT) {
            snprintf(msg, cap,
                     "tier %s: pool %s does not exist: create it (e.g. ceph osd pool create %s "
                     "erasure; ceph osd pool application enable %s strata)",
                     name, pool, pool, pool);
            return STRATA_ENOTFOUND;
        }
        int rc = id < 0 ? strata_meta__rados_err((int)id)
                        : strata_meta__rados_data_create(r, name, pool, NULL,
                                                         &m->tiers[m->ntiers]);
        if (rc) {
            snprintf(msg, cap, "tier %s: cannot open pool %s: %s", name, pool,
                     strata_strerror(rc));
            return rc;
        }
        r->tiers_owned = ++m->ntiers;
    }
    return 0;
}

/* The caller's tiers (strata_meta_opts.tiers: remote S3 tiers, whose data
 * is off the cluster but whose records, intents and reclaim entries are in
 * it like a pool tier's) after the pools: kept, never closed by m. */
static int caller_tiers(struct strata_meta *m, const struct strata_meta_opts *opts, char *msg,
                        size_t cap)
{
    for (unsigned i = 0; opts && i < opts->ntiers; i++) {
        struct strata_tier *x = opts->tiers[i];
        if (!x || m->ntiers == STRATA_TIERS_MAX || strata_meta__tier(m, x->name) ||
            strcmp(x->name, STRATA_TIER_HOT) == 0) {
            snprintf(msg, cap, "tier %s: given twice, named hot, or more than %d tiers",
                     x ? x->name : "?", STRATA_TIERS_MAX);
            return STRATA_EINVAL;
        }
        m->tiers[m->ntiers++] = x;
    }
    return 0;
}

int strata_meta_open_rados(const struct strata_rados_opts *ro, const struct strata_meta_opts *opts,
                           struct strata_meta **out, struct strata_errinfo *ei)
{
    char msg[sizeof(ei->msg)] = "";
    *out = NULL;
    int rc = strata_meta_rados_check(ro, msg, sizeof(msg));
    struct meta_rados *r = NULL;
    if (rc == 0)
        rc = strata_meta__rados_connect(ro, true, &r, msg, sizeof(msg));
    struct strata_meta *m = NULL;
    if (rc == 0)
        rc = strata_meta__new(opts, &m);
    if (rc) {
        strata_meta__rados_disconnect(r);
        if (ei)
            snprintf(ei->msg, sizeof(ei->msg), "%s", msg[0] ? msg : strata_strerror(rc));
        return rc;
    }
    m->store = &strata_meta__store_rados;
    m->store_priv = r;
    rc = strata_meta__rados_hot_tier(m, msg, sizeof(msg));
    if (rc == 0)
        rc = pool_tiers(m, ro, msg, sizeof(msg));
    if (rc == 0)
        rc = caller_tiers(m, opts, msg, sizeof(msg));
    if (rc) {
        if (ei)
            snprintf(ei->msg, sizeof(ei->msg), "%s", msg);
        strata_meta_close(m);
        return rc;
    }
    rc = strata_meta__open_finish(m);
    if (rc == 0)
        atomic_store(&r->clock_of, m); /* answers "clock?" from now on */
    if (rc) {
        if (ei)
            snprintf(ei->msg, sizeof(ei->msg), "retention clock or audit log in %s.meta: %s",
                     r->prefix, strata_strerror(rc));
        strata_meta_close(m);
        return rc;
    }
    *out = m;
    return 0;
}

void strata_meta__rados_store_close(struct strata_meta *m)
{
    struct meta_rados *r = meta_rados_of(m);
    /* Ours before the connection (their aio needs it); the caller's stay. */
    for (unsigned i = 0; r && i < r->tiers_owned && i < m->ntiers; i++)
        strata_tier_destroy(m->tiers[i]);
    m->ntiers = 0;
    strata_meta__rados_disconnect(r);
    m->store_priv = NULL;
}
