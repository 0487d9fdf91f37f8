/*
 * cache_watch.c - the bucket caches of this daemon (records, policies and
 * access state, configuration documents) across gateways: several daemons
 * on one RADOS store each keep their own caches, so a change made through
 * one must drop the others' entries before it is answered
 * (strata_meta_on_invalidate runs the hook on every other gateway first).
 * A NULL bucket (a broken watch: changes may have been missed) drops
 * everything.  On local drives the hook never runs.
 */
#include "srv.h"
#include "epoch_cache.h"

/* Every bucket cache is a strata_ecache, listed at its first use: one
 * call drops the bucket (or everything) from all of them. */
static void caches_drop(void *ud, const char *bucket)
{
    (void)ud;
    strata_ecaches_invalidate(bucket);
}

int strata_srv_caches_watch(struct strata_srv *s)
{
    return strata_meta_on_invalidate(s->meta, caches_drop, s);
}

void strata_srv_caches_unwatch(struct strata_srv *s)
{
    strata_meta_on_invalidate(s->meta, NULL, NULL);
}
