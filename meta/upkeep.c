/*
 * upkeep.c - the public entry points of heal, the heal queue, orphan
 * reclaim and the store figures (contracts in meta.h).  They are the
 * store's optional operations (store.h, "local-only"): the local drives
 * need them, a cluster that keeps its own redundancy (RADOS) does not, and
 * there they answer STRATA_ENOTIMPL, an empty queue and zero figures, so
 * callers can tell "not applicable on this backend" from a failure.
 */
#include "meta_internal.h"
#include "store.h"

#include <string.h>

int strata_meta_heal_all(struct strata_meta *m, struct strata_heal_stats *out)
{
    return strata_meta_heal_all_paced(m, NULL, NULL, out);
}

bool strata_meta_has_heal(const struct strata_meta *m)
{
    return m->store->heal_all != NULL;
}

int strata_meta_heal_all_paced(struct strata_meta *m, strata_heal_pace_cb pace_cb, void *ud,
                               struct strata_heal_stats *out)
{
    if (out)
        memset(out, 0, sizeof(*out));
    if (!m->store->heal_all)
        return STRATA_ENOTIMPL;
    return m->store->heal_all(m, pace_cb, ud, out);
}

int strata_meta_heal_queued(struct strata_meta *m, size_t max, struct strata_heal_stats *out,
                            size_t *pending)
{
    if (out)
        memset(out, 0, sizeof(*out));
    if (pending)
        *pending = 0;
    if (!m->store->heal_queued)
        return STRATA_ENOTIMPL;
    return m->store->heal_queued(m, max, out, pending);
}

void strata_meta_heal_queue_stats(struct strata_meta *m, size_t *pending, uint64_t *dropped)
{
    if (pending)
        *pending = 0;
    if (dropped)
        *dropped = 0;
    if (m->store->heal_queue_stats)
        m->store->heal_queue_stats(m, pending, dropped);
}

int strata_meta_orphan_round(struct strata_meta *m, struct strata_orphans **state,
                             unsigned age_s, uint64_t *removed)
{
    *removed = 0;
    if (!m->store->orphan_round)
        return STRATA_ENOTIMPL;
    return m->store->orphan_round(m, state, age_s, removed);
}

void strata_meta_orphans_free(struct strata_orphans *state)
{
    if (state)
        state->release(state);
}

int strata_meta_store_stats_get(struct strata_meta *m, unsigned set, unsigned drive,
                                struct strata_meta_store_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!m->store->store_stats)
        return STRATA_ENOTIMPL;
    return m->store->store_stats(m, set, drive, out);
}

int strata_meta_cluster_stat(struct strata_meta *m, struct strata_meta_cluster_stat *out)
{
    memset(out, 0, sizeof(*out));
    return m->store->cluster_stat ? m->store->cluster_stat(m, out) : STRATA_ENOTIMPL;
}

uint64_t strata_meta_block_cache_bytes(struct strata_meta *m)
{
    return m->store->block_cache_bytes ? m->store->block_cache_bytes(m) : 0;
}

uint64_t strata_meta_memtable_size(const struct strata_meta *m)
{
    return m->store->memtable_size ? m->store->memtable_size(m) : 0;
}
