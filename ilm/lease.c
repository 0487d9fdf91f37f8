/*
 * lease.c - the lifecycle engine runs once per cluster: its passes and due
 * drains run only while this gateway holds meta's "ilm" lease
 * (strata_meta_lease; on local drives always granted).  Taken before the
 * first round, renewed every STRATA_LEASE_RENEW_MS by the checks the work
 * makes as it goes, released at stop.  When a renew fails (this gateway
 * stalled past STRATA_LEASE_MS and another took over) the work stops at
 * once and the engine tries to take the lease again every
 * STRATA_LEASE_RENEW_MS.  Everything done under the lease is a guarded
 * commit of meta, so two holders at once cannot do anything twice.
 * Threads: the scanner thread, a caller of strata_ilm_run_once, the mover.
 */
#include "ilm_internal.h"

#define MOD "ilm"
#define LEASE "ilm"

bool strata_ilm__lease_ok(struct strata_ilm *e)
{
    int64_t now = strata_ilm__now_ms();
    pthread_mutex_lock(&e->lease_mu);
    if (now >= e->lease_next_ms) {
        bool was = atomic_load(&e->lease_held);
        int rc = strata_meta_lease(e->o.meta, LEASE, was ? STRATA_LEASE_RENEW : STRATA_LEASE_TAKE);
        atomic_store(&e->lease_held, rc == 0);
        e->lease_next_ms = now + e->lease_every_ms;
        if (was && rc)
            strata_log(&e->o.log, STRATA_LOG_WARN, MOD,
                       "lost the ilm lease (%s): lifecycle work stops until it is back",
                       strata_errname(rc));
        else if (!was && rc == 0)
            strata_log(&e->o.log, STRATA_LOG_INFO, MOD, "holds the ilm lease");
        else if (!was && rc != STRATA_EBUSY)
            strata_log(&e->o.log, STRATA_LOG_WARN, MOD, "cannot take the ilm lease: %s",
                       strata_errname(rc));
    }
    bool held = atomic_load(&e->lease_held);
    pthread_mutex_unlock(&e->lease_mu);
    return held;
}

void strata_ilm__lease_release(struct strata_ilm *e)
{
    pthread_mutex_lock(&e->lease_mu);
    if (atomic_load(&e->lease_held))
        strata_meta_lease(e->o.meta, LEASE, STRATA_LEASE_RELEASE);
    atomic_store(&e->lease_held, false);
    e->lease_next_ms = 0;
    pthread_mutex_unlock(&e->lease_mu);
}
