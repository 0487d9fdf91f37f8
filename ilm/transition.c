/*
 * transition.c - the scanner's half of tier transitions: picking the class
 * a version is due to move to (rules + class map), pacing the copy to
 * --ilm-move-mbps, and counting.  The move itself, crash safety included,
 * is meta's strata_obj_transition.
 */
#include "ilm_transition.h"
#include "ilm_internal.h"

#include <string.h>

#define MOD "ilm"

const char *strata_ilm__transition_target(const struct strata_ilm_opts *o,
                                          const struct strata_lc_config *cfg,
                                          const struct strata_lc_obj *obj,
                                          const struct strata_obj_info *in, bool current,
                                          int64_t since_ms, unsigned newer_nc, int64_t now_ms,
                                          int64_t day_ms)
{
    if (!o->classes || in->delete_marker)
        return NULL;
    const struct strata_lc_transition *t =
        current ? strata_lc_transition_due(cfg, obj, in->mtime_ms, now_ms, day_ms)
                : strata_lc_nc_transition_due(cfg, obj, since_ms, newer_nc, now_ms, day_ms);
    /* Only colder (AWS's waterfall): an object PUT as GLACIER never moves
     * back to STANDARD_IA. */
    if (!t || strata_lc_class_rank(t->storage_class) <= strata_lc_class_rank(in->storage_class))
        return NULL;
    const char *tier = strata_class_map_tier(o->classes, t->storage_class);
    if (!tier || !strata_meta_tier_known(o->meta, tier))
        return NULL; /* the server refuses such rules; a tier removed since */
    return t->storage_class;
}

struct pace {
    struct strata_ilm_budget *b;
    atomic_bool *stop;
    uint64_t spent; /* bytes already charged to the budget */
};

/* After each copied MiB: charge it to the engine's move budget, shared by
 * every thread that moves (the pass and the due drains' workers), so they
 * copy move_mbps together. */
static int pace_cb(void *ud, uint64_t bytes)
{
    struct pace *p = ud;
    uint64_t delta = bytes > p->spent ? bytes - p->spent : 0;
    p->spent += delta;
    return strata_ilm__budget_take(p->b, delta, p->stop) ? STRATA_EBUSY : 0;
}

int strata_ilm__transition_run(const struct strata_ilm_opts *o, struct strata_ilm_budget *move,
                               atomic_bool *stop, const char *bucket, const char *key,
                               const char *vid, const char *cls, struct strata_ilm_stats *st)
{
    struct pace p = {.b = move, .stop = stop};
    struct strata_transition t = {.bucket = bucket, .key = key, .version_id = vid,
                                  .tier = strata_class_map_tier(o->classes, cls),
                                  .storage_class = cls, .progress = pace_cb, .ud = &p};
    struct strata_transition_result res;
    int rc = strata_obj_transition(o->meta, &t, &res);
    st->bytes_moved += res.bytes;
    if (rc == 0 && res.moved) {
        st->transitioned++;
        if (o->event_cb)
            o->event_cb(o->event_ud, STRATA_ILM_EV_TRANSITION, bucket, key, vid ? vid : "",
                        res.seq_ns);
        strata_log(&o->log, STRATA_LOG_DEBUG, MOD, "/%s/%s (%s): moved to %s (%s), %llu bytes",
                   bucket, key, vid, t.tier, cls, (unsigned long long)res.bytes);
    }
    return rc;
}

void strata_ilm__transition_pass_begin(const struct strata_ilm_opts *o,
                                       struct strata_ilm_stats *st)
{
    uint64_t n = 0;
    int rc = strata_meta_transition_reclaim(o->meta, &n);
    st->intents_resolved += n;
    if (rc) {
        st->errors++;
        strata_log(&o->log, STRATA_LOG_WARN, MOD, "transition reclaim: %s", strata_errname(rc));
    } else if (n) {
        strata_log(&o->log, STRATA_LOG_INFO, MOD, "finished %llu interrupted transitions",
                   (unsigned long long)n);
    }
}
