/*
 * healing.c - the scanner's share of healing between full heals: meta's
 * immediate heal queue (the keys of commits that reached their quorum but
 * missed a drive) is drained on every tick, a bounded batch at a time, so
 * redundancy comes back within a tick instead of a heal interval.
 * strata_meta_heal_queued takes meta's heal lock, so this never runs
 * beside strata_meta_heal_all (the scanner's or an admin request's).
 */
#include "ilm_internal.h"

#include <string.h>

#define HEAL_BATCH 4096
#define HEAL_CHUNK 16

void strata_ilm__heal_tick(struct strata_ilm *e, struct strata_ilm_stats *out)
{
    if (!e->o.heal_interval_s)
        return; /* healing is off */
    size_t pending = 0;
    strata_meta_heal_queue_stats(e->o.meta, &pending, NULL);
    if (!pending)
        return;
    struct strata_heal_stats hs = {0};
    int n = 0;
    /* heal_rate: chunks charged to the heal budget, so a burst of missed
     * writes is not healed back to back beside foreground requests. */
    size_t chunk = e->o.heal_rate ? HEAL_CHUNK : HEAL_BATCH;
    while (pending && n < HEAL_BATCH && !atomic_load(&e->stop)) {
        struct strata_heal_stats c = {0};
        int k = strata_meta_heal_queued(e->o.meta, chunk, &c, &pending);
        hs.records_healed += c.records_healed;
        hs.shards_healed += c.shards_healed;
        hs.objects_scanned += c.objects_scanned;
        hs.minority_removed += c.minority_removed;
        hs.minority_healed += c.minority_healed;
        n += k;
        if (k <= 0 || strata_ilm__budget_take(&e->heal_budget, (uint64_t)k, &e->stop))
            break;
    }
    struct strata_ilm_stats st;
    memset(&st, 0, sizeof(st));
    st.heal_queued = (uint64_t)n;
    st.healed = hs.records_healed + hs.shards_healed;
    strata_ilm__publish(e, &st, out);
    if (hs.records_healed || hs.shards_healed)
        strata_log(&e->o.log, STRATA_LOG_INFO, "ilm",
                   "heal queue: %d keys, %llu records and %llu shards healed, %zu pending", n,
                   (unsigned long long)hs.records_healed, (unsigned long long)hs.shards_healed,
                   pending);
}
