/*
 * transition.c - the scanner's half of tier transitions: picking the class
 * a version is due to move to (rules + class map), pacing the copy to
 * --ilm-move-mbps, and counting.  The move itself, crash safety included,
 * is meta's strata_obj_transition.
 */
#include "ilm_transition.h"

#include <string.h>
#include <time.h>

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

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct pace {
    const struct strata_ilm_opts *o;
    atomic_bool *stop;
    int64_t t0_ms;
};

/* After each copied MiB: sleep until the copy is back at move_mbps. */
static int pace_cb(void *ud, uint64_t bytes)
{
    struct pace *p = ud;
    if (atomic_load(p->stop))
        return STRATA_EBUSY;
    if (!p->o->move_mbps)
        return 0;
    int64_t due = p->t0_ms + (int64_t)(bytes * 1000 / ((uint64_t)p->o->move_mbps << 20));
    for (int64_t now = mono_ms(); now < due; now = mono_ms()) {
        if (atomic_load(p->stop))
            return STRATA_EBUSY;
        int64_t nap = due - now < 50 ? due - now : 50;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = nap * 1000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

int strata_ilm__transition_run(const struct strata_ilm_opts *o, atomic_bool *stop,
                               const char *bucket, const char *key, const char *vid,
                               const char *cls, struct strata_ilm_stats *st)
{
    struct pace p = {.o = o, .stop = stop, .t0_ms = mono_ms()};
    struct strata_transition t = {.bucket = bucket, .key = key, .version_id = vid,
                                  .tier = strata_class_map_tier(o->classes, cls),
                                  .storage_class = cls, .progress = pace_cb, .ud = &p};
    struct strata_transition_result res;
    int rc = strata_obj_transition(o->meta, &t, &res);
    st->bytes_moved += res.bytes;
    if (rc == 0 && res.moved) {
        st->transitioned++;
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
