/*
 * ilm_internal.h - private state of the scanner shared by the files of ilm/
 * (scanner.c, due.c, mover.c, scanpos.c).  Nothing here leaves ilm/.
 */
#ifndef STRATA_ILM_ILM_INTERNAL_H
#define STRATA_ILM_ILM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "strata/ilm.h"

/* budget.c: a rate (units per second, 0: unbounded) shared by threads. */
struct strata_ilm_budget {
    pthread_mutex_t mu;
    uint64_t per_s;
    int64_t next_us; /* CLOCK_MONOTONIC: where the schedule's next slot begins */
};
void strata_ilm__budget_init(struct strata_ilm_budget *b, uint64_t per_s);
void strata_ilm__budget_fini(struct strata_ilm_budget *b);
/* Spend units: sleep until the rate allows them.  True when *stop (may be
 * NULL) was set meanwhile (the units count as spent). */
bool strata_ilm__budget_take(struct strata_ilm_budget *b, uint64_t units, atomic_bool *stop);

/* The due drains' two lanes: expirations (Expiration, Noncurrent-
 * VersionExpiration, ExpiredObjectDeleteMarker) on the scanner thread, and
 * moves (Transition, NoncurrentVersionTransition) on the mover thread, so
 * an expiration never waits behind a long copy. */
enum { STRATA_ILM_LANE_EXPIRE, STRATA_ILM_LANE_MOVE, STRATA_ILM_LANES };

/* What a walk of one key carries out (it always decides with every rule,
 * so an expiration due at the same time still wins over a move). */
enum strata_ilm_walk_mode {
    STRATA_ILM_WALK_ALL,      /* everything: the full pass */
    STRATA_ILM_WALK_NO_MOVES, /* the expiry lane: moves are the mover's */
    STRATA_ILM_WALK_MOVES     /* the mover: moves only, never a delete */
};

struct ilm_retry; /* mover.c: moves to try again */

struct strata_ilm {
    struct strata_ilm_opts o;
    pthread_t thr;
    bool running;
    pthread_t mover_thr;
    atomic_bool mover_running; /* moves found by the pass go to the mover */
    bool reclaimed; /* the first pass resolved interrupted moves (under mu) */
    atomic_bool stop;
    bool kick;
    pthread_mutex_t mu; /* guards kick, stats, progress; with cv the thread's sleep */
    pthread_cond_t cv;
    pthread_mutex_t pass_mu; /* one pass at a time */
    struct strata_ilm_stats last, total;
    struct strata_ilm_progress prog; /* of the pass in progress (under mu) */
    struct strata_ilm_stats pass_dr; /* drains and heal ticks during the pass (under mu) */
    int64_t last_heal_ms;
    int64_t last_drain_ms[STRATA_ILM_LANES];
    pthread_mutex_t due_mu[STRATA_ILM_LANES]; /* one drain per lane at a time; guards due */
    struct due_state *due[STRATA_ILM_LANES];  /* due.c's cursors, per lane */
    /* Moves in flight hold it shared; the resolution of interrupted moves
     * at a pass's start (which would remove a running move's copies) takes
     * it exclusive, and skips a pass's turn rather than wait for a move. */
    pthread_rwlock_t move_rw;
    pthread_mutex_t retry_mu; /* guards retry */
    struct ilm_retry *retry;
    int64_t last_pos_save_ms;
    int64_t last_orphan_ms;
    struct strata_orphans *orphans; /* reclaim.c: candidates of the last round */
    struct strata_ilm_budget due_budget;  /* keys the due drains evaluate (due_rate) */
    struct strata_ilm_budget heal_budget; /* keys healed from the queue (heal_rate) */
    struct strata_ilm_budget move_budget; /* bytes transitions copy (move_mbps) */
    /* The "ilm" lease (lease.c): passes and due drains run only while this
     * gateway holds it.  lease_mu guards the fields below; lease_held is
     * also read without it, by checks that only stop work. */
    pthread_mutex_t lease_mu;
    atomic_bool lease_held;
    int64_t lease_next_ms;   /* when to renew (held) or try again (not) */
    unsigned lease_every_ms; /* strata_meta_lease_renew_ms; tests shorten it */
    /* What a pass runs between its pages and while it waits to hand a move
     * over (scanner.c sets it at create): the walk (walk.c) calls its host
     * instead of the drains that walk keys themselves. */
    void (*host_drains)(struct strata_ilm *e);
};

/* lease.c: true while this gateway holds the "ilm" lease, renewing it (or
 * trying to take it) when lease_every_ms passed since the last ask.  A
 * lost or refused lease skips the work; another try comes later. */
bool strata_ilm__lease_ok(struct strata_ilm *e);
/* Let the lease go (stop): another gateway may take it at once. */
void strata_ilm__lease_release(struct strata_ilm *e);

struct ilm_pos;
/* walk.c: apply the bucket's rules to all its versions and uploads, for
 * the full pass: paced from *t0_ms (moved on by the work the walk did not
 * do itself), its position saved in *pos per page; counts into st. */
void strata_ilm__walk_bucket(struct strata_ilm *e, const char *bucket, struct strata_ilm_stats *st,
                             int64_t *t0_ms, struct ilm_pos *pos);
/* Apply cfg to the versions of one key of bucket, as a pass does, carrying
 * out what mode allows (enum strata_ilm_walk_mode).  When vid is given,
 * *seen tells whether that version exists (quorum read).  attempt: how
 * often a refused move of this key was tried already (mover.c). */
int strata_ilm__walk_key(struct strata_ilm *e, const char *bucket,
                         const struct strata_lc_config *cfg, const char *key, const char *vid,
                         int mode, unsigned attempt, bool *seen, struct strata_ilm_stats *st);

/* The bucket's lifecycle rules: 0 with cfg filled (caller finis); non-zero
 * when it has none or they do not parse (logged and counted in st). */
int strata_ilm__load_rules(struct strata_ilm *e, const char *bucket, struct strata_lc_config *cfg,
                           struct strata_ilm_stats *st);

/* due.c: drain the version-time index of every bucket with rules when the
 * last drain is at least drain_ms old (force: now).  Its counts go into the
 * engine's totals as it goes (and into out when not NULL), not into a
 * pass's: a drain is not part of the pass that hosts it.  due_tick
 * (scanner.c, which hosts the drains) drains the expiry lane, and the move
 * lane too (strata_ilm__move_tick) when no mover thread runs (tests
 * calling it directly). */
void strata_ilm__due_tick(struct strata_ilm *e, bool force, struct strata_ilm_stats *out);
void strata_ilm__due_lane_tick(struct strata_ilm *e, int lane, bool force,
                               struct strata_ilm_stats *out);
/* Free due.c's state (destroy). */
void strata_ilm__due_forget(struct strata_ilm *e);

/* mover.c: the move lane's drain and the moves to try again. */
void strata_ilm__move_tick(struct strata_ilm *e, bool force, struct strata_ilm_stats *out);
int strata_ilm__mover_start(struct strata_ilm *e);
void strata_ilm__mover_join(struct strata_ilm *e);

/* retry.c: the mover's list.  Hand a move of bucket/key/vid to the mover:
 * attempt 0 as soon as it looks (a move the full pass found), else after a
 * backoff that doubles with attempt.  False when the list is full or
 * attempt is past the limit (left to the next pass). */
bool strata_ilm__move_later(struct strata_ilm *e, const char *bucket, const char *key,
                            const char *vid, unsigned attempt);
struct retry_ent {
    char bucket[STRATA_BUCKET_NAME_MAX + 1];
    char *key; /* malloc'ed: the taker frees it */
    char vid[STRATA_VERSION_ID_MAX + 1];
    unsigned attempt;
    int64_t next_ms;
};
/* Take the entries whose turn came (at most max) out of the list. */
size_t strata_ilm__retry_take(struct strata_ilm *e, struct retry_ent *out, size_t max);
void strata_ilm__retry_forget(struct strata_ilm *e);
/* Moves waiting in the retry list. */
size_t strata_ilm__retry_pending(struct strata_ilm *e);
/* The index bound of a Days action: a base time (ms) below the result is
 * due at now_ms (strata_lc_due_ms(base, days, day_ms) <= now_ms). */
int64_t strata_ilm__due_bound(int64_t now_ms, unsigned days, int64_t day_ms);

/* healing.c: the immediate heal queue, drained between pages and passes;
 * counts as due_tick does. */
void strata_ilm__heal_tick(struct strata_ilm *e, struct strata_ilm_stats *out);

/* reclaim.c: a round of orphan reclaim when one is due (full pass). */
void strata_ilm__orphans(struct strata_ilm *e, struct strata_ilm_stats *st);

/* scanpos.c: the pass position, persisted in meta's state documents. */
struct ilm_pos {
    char bucket[STRATA_BUCKET_NAME_MAX + 1]; /* "" : no pass in progress */
    char key[STRATA_KEY_MAX + 1];
    char vid[STRATA_VERSION_ID_MAX + 1];
};
int strata_ilm__pos_load(struct strata_ilm *e, struct ilm_pos *p);
/* Saved at most once per second unless force. */
int strata_ilm__pos_save(struct strata_ilm *e, const struct ilm_pos *p, bool force);

/* engine.c: shared by the engine's files. */
int64_t strata_ilm__now_ms(void);
/* Sleep until abs_ms (CLOCK_REALTIME), a stop, or (wake_on_kick) a kick;
 * true when asked to stop. */
bool strata_ilm__nap_until(struct strata_ilm *e, int64_t abs_ms, bool wake_on_kick);
int64_t strata_ilm__day_ms(const struct strata_ilm *e);
/* Add the counters of s to t (not its times). */
void strata_ilm__stats_add_counts(struct strata_ilm_stats *t, const struct strata_ilm_stats *s);
/* Add delta's counters to the engine's totals and to out (may be NULL),
 * under e->mu. */
void strata_ilm__publish(struct strata_ilm *e, const struct strata_ilm_stats *delta,
                         struct strata_ilm_stats *out);
/* The names of every bucket, in listing order: a snapshot, so a pass or a
 * drain does not hold meta's bucket iteration while it works.  The caller
 * frees v (also on error). */
struct strata_ilm_names {
    char (*v)[STRATA_BUCKET_NAME_MAX + 1];
    size_t n, cap;
};
int strata_ilm__bucket_names(struct strata_ilm *e, struct strata_ilm_names *out);
/* Publish the in-progress counters for status (under e->mu). */
void strata_ilm__progress(struct strata_ilm *e, const struct strata_ilm_stats *st,
                          const char *bucket, const char *key);

#endif /* STRATA_ILM_ILM_INTERNAL_H */
