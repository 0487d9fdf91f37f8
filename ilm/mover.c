/*
 * mover.c - the mover: a thread beside the scanner that carries out moves
 * between tiers, so that a copy paced by --ilm-move-mbps never holds back
 * the expirations of the same tick (they stay on the scanner thread).
 *
 * Every drain_ms it drains the move lane of the version-time index
 * (due.c: Transition and NoncurrentVersionTransition cursors), then the
 * moves waiting in its list:
 * - moves the full pass decided (handed over at once, attempt 0);
 * - moves meta refused (STRATA_EBUSY: an earlier move of the version is
 *   not resolved yet because a reader still holds the previous copy;
 *   STRATA_EPRECOND: the version changed during the copy), tried again
 *   after 1, 2, 4 ... s (at most RETRY_ATTEMPTS times, then left to the
 *   next full pass).
 * An entry is only a hint: its key is decided again from the bucket's
 * current rules (strata_ilm__walk_key, moves only), so an expiration due
 * meanwhile wins, the waterfall and Object Lock hold, and a version gone
 * or moved already is left alone.  The list is bounded (RETRY_MAX): a
 * pass waits for room (scanner.c), a refused move that does not fit is
 * the next pass's.  Every move is meta's crash-safe
 * strata_obj_transition charged to the engine's one move budget; moves
 * hold move_rw shared (the resolution of interrupted moves waits for none
 * of them, see scanner.c).  The mover never deletes: two walks of one key
 * (the mover's and the scanner's) can never both expire it.
 *
 * Threads: the mover thread; strata_ilm__move_tick also from a caller that
 * drains by hand (no mover running); move_later from any thread.
 */
#include "ilm_internal.h"

#include <stdlib.h>
#include <string.h>

#define MOD "ilm"
#define RETRY_TICK_MAX 256 /* entries tried per tick */

/* Decide each entry's key again and carry out its moves; a move refused
 * again comes back through the walk (strata_ilm__move_later). */
static void retry_run(struct strata_ilm *e, struct retry_ent *v, size_t n,
                      struct strata_ilm_stats *out)
{
    for (size_t i = 0; i < n; i++) {
        struct retry_ent *x = &v[i];
        struct strata_ilm_stats st;
        memset(&st, 0, sizeof(st));
        struct strata_lc_config cfg;
        if (!atomic_load(&e->stop) && !strata_ilm__budget_take(&e->due_budget, 1, &e->stop) &&
            strata_ilm__load_rules(e, x->bucket, &cfg, &st) == 0) {
            int rc = strata_ilm__walk_key(e, x->bucket, &cfg, x->key, x->vid,
                                          STRATA_ILM_WALK_MOVES, x->attempt, NULL, &st);
            if (rc && rc != STRATA_ENOTFOUND) {
                st.errors++;
                strata_log(&e->o.log, STRATA_LOG_DEBUG, MOD, "move of /%s/%s again: %s",
                           x->bucket, x->key, strata_errname(rc));
            }
            strata_lc_config_fini(&cfg);
        }
        strata_ilm__publish(e, &st, out);
        free(x->key);
    }
}

void strata_ilm__move_tick(struct strata_ilm *e, bool force, struct strata_ilm_stats *out)
{
    strata_ilm__due_lane_tick(e, STRATA_ILM_LANE_MOVE, force, out);
    struct retry_ent *v = malloc(RETRY_TICK_MAX * sizeof(*v));
    if (!v)
        return;
    size_t n = strata_ilm__retry_take(e, v, RETRY_TICK_MAX);
    retry_run(e, v, n, out);
    free(v);
}

static void *mover_main(void *arg)
{
    struct strata_ilm *e = arg;
    /* Interrupted moves are resolved by the first pass before any move
     * starts (scanner.c). */
    pthread_mutex_lock(&e->mu);
    while (!atomic_load(&e->stop) && !e->reclaimed)
        pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    unsigned tick = e->o.drain_ms ? e->o.drain_ms : 1000;
    while (!atomic_load(&e->stop)) {
        strata_ilm__move_tick(e, false, NULL);
        if (strata_ilm__nap_until(e, strata_ilm__now_ms() + tick, false))
            break;
    }
    return NULL;
}

int strata_ilm__mover_start(struct strata_ilm *e)
{
    if (pthread_create(&e->mover_thr, NULL, mover_main, e) != 0)
        return STRATA_ENOMEM;
    atomic_store(&e->mover_running, true);
    return 0;
}

void strata_ilm__mover_join(struct strata_ilm *e)
{
    if (!atomic_load(&e->mover_running))
        return;
    pthread_join(e->mover_thr, NULL);
    atomic_store(&e->mover_running, false);
}
