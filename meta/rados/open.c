/*
 * open.c - the daemon's strata_meta on a Ceph cluster: connect (bounded),
 * the same pool and layout check as `strata rados check`, then the handle
 * every backend shares (store.c) with this backend's ops, and the
 * retention clock and audit log opened through them.  No drive is used:
 * the namespace, the clock's mark and the audit chain are the cluster's.
 */
#include "rados.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

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
    if (m->ntiers > 0) /* the hot tier's aio needs its connection */
        strata_tier_destroy(m->tiers[0]);
    m->ntiers = 0;
    strata_meta__rados_disconnect(meta_rados_of(m));
    m->store_priv = NULL;
}
