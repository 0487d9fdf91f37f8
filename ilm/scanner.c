/*
 * scanner.c - the lifecycle scanner: a background thread that, once per
 * interval, walks every bucket that has a lifecycle configuration and
 * applies its rules through meta.h's object layer, then heals and
 * reclaims tmp/ leftovers.
 *
 * A pass walks each bucket's versions and uploads (walk.c, which decides
 * and carries out what the rules make due).
 *
 * A version whose delete Object Lock refused is looked at again on the
 * next pass only.  The walk is paced to rate_objs entries per second.
 * Its position is saved in meta (scanpos.c) so a pass a restart
 * interrupted continues where it was.  Between pages (the walk calls
 * host_drains) and between passes the thread drains the version-time
 * index's expirations (due.c) and meta's immediate heal queue
 * (healing.c), so due work waits for neither.  Moves are the mover's
 * (mover.c): the pass hands them over.  The full heal is paced to
 * heal_rate.
 *
 * Threads: the scanner thread and the mover thread (mover.c);
 * strata_ilm_run_once and the control functions may be called from
 * another thread (passes are serialised).
 */
#include "ilm_internal.h"
#include "ilm_transition.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MOD "ilm"

#define now_ms() strata_ilm__now_ms()

/* Both lanes of the due index when no mover thread runs the move lane. */
void strata_ilm__due_tick(struct strata_ilm *e, bool force, struct strata_ilm_stats *st)
{
    strata_ilm__due_lane_tick(e, STRATA_ILM_LANE_EXPIRE, force, st);
    if (!atomic_load(&e->mover_running))
        strata_ilm__move_tick(e, force, st);
}

/* What a pass runs between its pages (host_drains): the due drains and
 * the heal queue, counted in the pass's drains. */
static void host_drains(struct strata_ilm *e)
{
    strata_ilm__due_tick(e, false, &e->pass_dr);
    strata_ilm__heal_tick(e, &e->pass_dr);
}

/* After every few keys of the full heal: the expiry drains keep their
 * tick (the heal may last long at heal_rate), and the keys are charged to
 * the heal budget that the heal-queue drain spends too. */
static int heal_pace_cb(void *ud, uint64_t keys)
{
    struct strata_ilm *e = ud;
    strata_ilm__due_tick(e, false, &e->pass_dr);
    return strata_ilm__budget_take(&e->heal_budget, keys, &e->stop) ? STRATA_EBUSY : 0;
}

/* Healing and tmp/ reclaim, which nothing else in the daemon runs. */
static void housekeeping(struct strata_ilm *e, struct strata_ilm_stats *st)
{
    int64_t now = now_ms();
    if (e->o.heal_interval_s &&
        (e->last_heal_ms == 0 || now - e->last_heal_ms >= (int64_t)e->o.heal_interval_s * 1000)) {
        e->last_heal_ms = now;
        struct strata_heal_stats hs;
        memset(&hs, 0, sizeof(hs));
        int rc = strata_meta_heal_all_paced(e->o.meta, heal_pace_cb, e, &hs);
        st->healed += hs.records_healed + hs.shards_healed;
        /* ENOTIMPL: the backend's cluster heals itself (RADOS). */
        if (rc && rc != STRATA_ENOTIMPL && !atomic_load(&e->stop)) {
            st->errors++;
            strata_log(&e->o.log, STRATA_LOG_WARN, MOD, "heal pass: %s", strata_errname(rc));
        }
    }
    for (unsigned i = 0; e->o.tmp_age_s && i < e->o.nsets && !atomic_load(&e->stop); i++) {
        unsigned removed = 0;
        int rc = strata_ec_tmp_reclaim(e->o.sets[i], e->o.tmp_age_s, &removed);
        st->tmp_reclaimed += removed;
        if (rc) {
            st->errors++;
            strata_log(&e->o.log, STRATA_LOG_WARN, MOD, "tmp/ reclaim of set %u: %s", i,
                       strata_errname(rc));
        }
    }
    if (!atomic_load(&e->stop))
        strata_ilm__orphans(e, st);
}

static void stats_add(struct strata_ilm_stats *t, const struct strata_ilm_stats *s)
{
    strata_ilm__stats_add_counts(t, s);
    t->started_ms = s->started_ms;
    t->finished_ms = s->finished_ms;
}

/* The pass must end early: asked to stop, or the ilm lease is gone. */
static bool halted(struct strata_ilm *e)
{
    return atomic_load(&e->stop) || !atomic_load(&e->lease_held);
}

int strata_ilm_run_once(struct strata_ilm *e, struct strata_ilm_stats *out)
{
    if (out)
        memset(out, 0, sizeof(*out));
    /* Once per cluster: only the holder of the ilm lease runs a pass. */
    if (!strata_ilm__lease_ok(e))
        return STRATA_EBUSY;
    pthread_mutex_lock(&e->pass_mu);
    struct strata_ilm_stats st;
    memset(&st, 0, sizeof(st));
    st.started_ms = now_ms();
    /* Interrupted moves first; never beside a running move (its copies
     * would look like leftovers): with moves in flight, the next pass. */
    if (pthread_rwlock_trywrlock(&e->move_rw) == 0) {
        strata_ilm__transition_pass_begin(&e->o, &st);
        pthread_rwlock_unlock(&e->move_rw);
        pthread_mutex_lock(&e->mu);
        e->reclaimed = true; /* the mover may start */
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
    }
    /* Drains during the pass count into the totals at once and into the
     * pass's report (pass_dr, under mu) at its end. */
    pthread_mutex_lock(&e->mu);
    memset(&e->pass_dr, 0, sizeof(e->pass_dr));
    pthread_mutex_unlock(&e->mu);
    strata_ilm__due_tick(e, true, &e->pass_dr); /* due work first */
    int64_t pace_t0 = now_ms(); /* the walk's schedule starts after that drain */
    struct strata_ilm_names ns;
    int rc = strata_ilm__bucket_names(e, &ns);
    struct ilm_pos pos;
    if (strata_ilm__pos_load(e, &pos) != 0)
        memset(&pos, 0, sizeof(pos));
    if (pos.bucket[0])
        strata_log(&e->o.log, STRATA_LOG_INFO, MOD, "pass resumes at /%s/%s", pos.bucket,
                   pos.key);
    pthread_mutex_lock(&e->mu);
    memset(&e->prog, 0, sizeof(e->prog));
    e->prog.running = true;
    e->prog.resumed = pos.bucket[0] != 0;
    e->prog.buckets_total = ns.n;
    pthread_mutex_unlock(&e->mu);
    for (size_t i = 0; rc == 0 && i < ns.n && !halted(e); i++) {
        int c = pos.bucket[0] ? strcmp(ns.v[i], pos.bucket) : 1;
        if (c >= 0) {
            if (c > 0) { /* a bucket not begun yet */
                snprintf(pos.bucket, sizeof(pos.bucket), "%s", ns.v[i]);
                pos.key[0] = pos.vid[0] = '\0';
                strata_ilm__pos_save(e, &pos, false);
            }
            strata_ilm__progress(e, &st, ns.v[i], pos.key);
            strata_ilm__walk_bucket(e, ns.v[i], &st, &pace_t0, &pos);
        }
        pthread_mutex_lock(&e->mu);
        e->prog.buckets_done = i + 1;
        pthread_mutex_unlock(&e->mu);
    }
    free(ns.v);
    if (rc == 0 && !halted(e)) { /* the pass is complete */
        memset(&pos, 0, sizeof(pos));
        strata_ilm__pos_save(e, &pos, true);
    } else if (pos.bucket[0]) {
        strata_ilm__pos_save(e, &pos, true);
    }
    if (rc) {
        st.errors++;
        strata_log(&e->o.log, STRATA_LOG_WARN, MOD, "bucket list: %s", strata_errname(rc));
    }
    if (!halted(e))
        housekeeping(e, &st);
    pthread_mutex_lock(&e->mu);
    struct strata_ilm_stats own = st; /* what the totals do not hold yet */
    strata_ilm__stats_add_counts(&st, &e->pass_dr);
    pthread_mutex_unlock(&e->mu);
    own.passes = 1;
    st.passes = 1;
    st.finished_ms = now_ms();
    bool acted = st.expired || st.noncurrent_expired || st.markers_removed ||
                 st.uploads_aborted || st.skipped_locked || st.errors || st.healed ||
                 st.tmp_reclaimed || st.transitioned;
    strata_log(&e->o.log, acted ? STRATA_LOG_INFO : STRATA_LOG_DEBUG, MOD,
               "pass: %llu buckets, %llu scanned, %llu expired, %llu noncurrent, %llu markers, "
               "%llu uploads aborted, %llu locked, %llu healed, %llu tmp, %llu transitioned "
               "(%llu bytes), %llu errors, %lld ms",
               (unsigned long long)st.buckets, (unsigned long long)st.scanned,
               (unsigned long long)st.expired, (unsigned long long)st.noncurrent_expired,
               (unsigned long long)st.markers_removed, (unsigned long long)st.uploads_aborted,
               (unsigned long long)st.skipped_locked, (unsigned long long)st.healed,
               (unsigned long long)st.tmp_reclaimed, (unsigned long long)st.transitioned,
               (unsigned long long)st.bytes_moved, (unsigned long long)st.errors,
               (long long)(st.finished_ms - st.started_ms));
    pthread_mutex_lock(&e->mu);
    e->last = st;
    own.started_ms = st.started_ms;
    own.finished_ms = now_ms();
    stats_add(&e->total, &own);
    memset(&e->prog, 0, sizeof(e->prog));
    pthread_mutex_unlock(&e->mu);
    pthread_mutex_unlock(&e->pass_mu);
    if (out)
        *out = st;
    return rc;
}

static void *thread_main(void *arg)
{
    struct strata_ilm *e = arg;
    while (!atomic_load(&e->stop)) {
        int64_t t0 = now_ms();
        pthread_mutex_lock(&e->mu);
        e->kick = false;
        pthread_mutex_unlock(&e->mu);
        strata_ilm_run_once(e, NULL);
        /* Between passes: the due index and the heal queue, every drain_ms. */
        int64_t next = t0 + (int64_t)e->o.interval_s * 1000;
        unsigned tick = e->o.drain_ms ? e->o.drain_ms : 1000;
        bool stop = false;
        while (!stop && now_ms() < next) {
            pthread_mutex_lock(&e->mu);
            bool kicked = e->kick;
            pthread_mutex_unlock(&e->mu);
            if (kicked)
                break;
            strata_ilm__due_tick(e, false, NULL);
            strata_ilm__heal_tick(e, NULL);
            int64_t until = now_ms() + tick;
            stop = strata_ilm__nap_until(e, until < next ? until : next, true);
        }
        if (stop || atomic_load(&e->stop))
            break;
    }
    return NULL;
}

void strata_ilm_stats_now(struct strata_ilm *e, struct strata_ilm_stats *out)
{
    pthread_mutex_lock(&e->mu);
    *out = e->total;
    if (e->prog.running)
        strata_ilm__stats_add_counts(out, &e->prog.st);
    pthread_mutex_unlock(&e->mu);
}

void strata_ilm_progress_get(struct strata_ilm *e, struct strata_ilm_progress *p)
{
    pthread_mutex_lock(&e->mu);
    *p = e->prog;
    pthread_mutex_unlock(&e->mu);
    size_t pending = 0;
    strata_meta_heal_queue_stats(e->o.meta, &pending, NULL);
    p->heal_pending = pending;
    p->move_retries = strata_ilm__retry_pending(e);
}

int strata_ilm_create(const struct strata_ilm_opts *opts, struct strata_ilm **out)
{
    *out = NULL;
    if (!opts || !opts->meta || !opts->tags_decode_cb || opts->interval_s == 0 ||
        (opts->nsets && !opts->sets))
        return STRATA_EINVAL;
    struct strata_ilm *e = calloc(1, sizeof(*e));
    if (!e)
        return STRATA_ENOMEM;
    e->o = *opts;
    e->host_drains = host_drains;
    atomic_init(&e->stop, false);
    pthread_mutex_init(&e->mu, NULL);
    pthread_mutex_init(&e->lease_mu, NULL);
    atomic_init(&e->lease_held, false);
    e->lease_every_ms = strata_meta_lease_renew_ms(opts->meta);
    pthread_mutex_init(&e->pass_mu, NULL);
    for (int l = 0; l < STRATA_ILM_LANES; l++)
        pthread_mutex_init(&e->due_mu[l], NULL);
    pthread_rwlock_init(&e->move_rw, NULL);
    pthread_mutex_init(&e->retry_mu, NULL);
    atomic_init(&e->mover_running, false);
    pthread_cond_init(&e->cv, NULL);
    strata_ilm__budget_init(&e->due_budget, opts->due_rate);
    strata_ilm__budget_init(&e->heal_budget, opts->heal_rate);
    strata_ilm__budget_init(&e->move_budget, (uint64_t)opts->move_mbps << 20);
    *out = e;
    return 0;
}

int strata_ilm_start(struct strata_ilm *e)
{
    if (e->running)
        return STRATA_EBUSY;
    atomic_store(&e->stop, false);
    /* The mover first, so the first pass already hands its moves over;
     * without one the scanner thread moves, as a drain called directly
     * does. */
    if (strata_ilm__mover_start(e) != 0)
        strata_log(&e->o.log, STRATA_LOG_WARN, MOD, "no mover thread: moves run on the scanner");
    if (pthread_create(&e->thr, NULL, thread_main, e) != 0) {
        pthread_mutex_lock(&e->mu);
        atomic_store(&e->stop, true);
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
        strata_ilm__mover_join(e);
        return STRATA_ENOMEM;
    }
    e->running = true;
    return 0;
}

void strata_ilm_stop(struct strata_ilm *e, bool wait)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->mu);
    atomic_store(&e->stop, true);
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    if (wait && e->running) {
        pthread_join(e->thr, NULL);
        strata_ilm__mover_join(e);
        e->running = false;
    }
    if (wait)
        strata_ilm__lease_release(e);
}

void strata_ilm_destroy(struct strata_ilm *e)
{
    if (!e)
        return;
    strata_ilm_stop(e, true);
    strata_ilm__due_forget(e);
    strata_ilm__retry_forget(e);
    strata_meta_orphans_free(e->orphans);
    for (int l = 0; l < STRATA_ILM_LANES; l++)
        pthread_mutex_destroy(&e->due_mu[l]);
    pthread_rwlock_destroy(&e->move_rw);
    pthread_mutex_destroy(&e->retry_mu);
    strata_ilm__budget_fini(&e->due_budget);
    strata_ilm__budget_fini(&e->heal_budget);
    strata_ilm__budget_fini(&e->move_budget);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    pthread_mutex_destroy(&e->pass_mu);
    pthread_mutex_destroy(&e->lease_mu);
    free(e);
}

void strata_ilm_kick(struct strata_ilm *e)
{
    pthread_mutex_lock(&e->mu);
    e->kick = true;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

void strata_ilm_stats_get(struct strata_ilm *e, struct strata_ilm_stats *last,
                          struct strata_ilm_stats *total)
{
    pthread_mutex_lock(&e->mu);
    if (last)
        *last = e->last;
    if (total)
        *total = e->total;
    pthread_mutex_unlock(&e->mu);
}
