/*
 * reclaim.c - the full pass's orphan reclaim of data/ shard files
 * (strata_meta_orphan_round: unreferenced in two rounds, older than
 * orphan_age_s).  A round reads every record, so it runs at most once per
 * half grace period (and at least a second apart): a file orphaned at t
 * is gone by about t + 2 grace periods.
 */
#include "ilm_internal.h"

void strata_ilm__orphans(struct strata_ilm *e, struct strata_ilm_stats *st)
{
    if (!e->o.orphan_age_s)
        return;
    int64_t now = strata_ilm__now_ms();
    int64_t every = (int64_t)e->o.orphan_age_s * 500;
    if (every < 1000)
        every = 1000;
    if (e->last_orphan_ms && now - e->last_orphan_ms < every)
        return;
    e->last_orphan_ms = now;
    uint64_t removed = 0;
    int rc = strata_meta_orphan_round(e->o.meta, &e->orphans, e->o.orphan_age_s, &removed);
    st->orphans_reclaimed += removed;
    if (rc == STRATA_ENOTIMPL)
        return; /* the backend has no data files of its own to reclaim */
    if (rc && rc != STRATA_EQUORUM) {
        st->errors++;
        strata_log(&e->o.log, STRATA_LOG_WARN, "ilm", "orphan reclaim: %s", strata_errname(rc));
    } else if (rc) {
        strata_log(&e->o.log, STRATA_LOG_DEBUG, "ilm",
                   "orphan reclaim skipped: too many drives offline to see every record");
    } else if (removed) {
        strata_log(&e->o.log, STRATA_LOG_INFO, "ilm", "orphan reclaim: %llu data ids removed",
                   (unsigned long long)removed);
    }
}
