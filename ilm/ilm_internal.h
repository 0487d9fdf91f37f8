/*
 * ilm_internal.h - private state of the scanner shared by the files of ilm/
 * (scanner.c, due.c, scanpos.c).  Nothing here leaves ilm/.
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

struct strata_ilm {
    struct strata_ilm_opts o;
    pthread_t thr;
    bool running;
    atomic_bool stop;
    bool kick;
    pthread_mutex_t mu; /* guards kick, stats, progress; with cv the thread's sleep */
    pthread_cond_t cv;
    pthread_mutex_t pass_mu; /* one pass at a time */
    struct strata_ilm_stats last, total;
    struct strata_ilm_progress prog; /* of the pass in progress (under mu) */
    struct strata_ilm_stats pass_dr; /* drains and heal ticks during the pass (under mu) */
    int64_t last_heal_ms;
    int64_t last_drain_ms;
    pthread_mutex_t due_mu; /* one drain at a time; guards due */
    struct due_state *due;  /* due.c's cursors */
    int64_t last_pos_save_ms;
    int64_t last_orphan_ms;
    struct strata_orphans *orphans; /* reclaim.c: candidates of the last round */
    struct strata_ilm_budget due_budget;  /* keys the due drains evaluate (due_rate) */
    struct strata_ilm_budget heal_budget; /* keys healed from the queue (heal_rate) */
    struct strata_ilm_budget move_budget; /* bytes transitions copy (move_mbps) */
};

/* Apply cfg to the versions of one key of bucket, as a pass does.  When
 * vid is given, *seen tells whether that version exists (quorum read). */
int strata_ilm__walk_key(struct strata_ilm *e, const char *bucket,
                         const struct strata_lc_config *cfg, const char *key, const char *vid,
                         bool *seen, struct strata_ilm_stats *st);

/* The names of every bucket, in listing order: a snapshot, so a pass or a
 * drain does not hold meta's bucket iteration while it works.  The caller
 * frees v (also on error). */
struct strata_ilm_names {
    char (*v)[STRATA_BUCKET_NAME_MAX + 1];
    size_t n, cap;
};
int strata_ilm__bucket_names(struct strata_ilm *e, struct strata_ilm_names *out);

/* The bucket's lifecycle rules: 0 with cfg filled (caller finis); non-zero
 * when it has none or they do not parse (logged and counted in st). */
int strata_ilm__load_rules(struct strata_ilm *e, const char *bucket, struct strata_lc_config *cfg,
                           struct strata_ilm_stats *st);

/* due.c: drain the version-time index of every bucket with rules when the
 * last drain is at least drain_ms old (force: now).  Its counts go into the
 * engine's totals as it goes (and into out when not NULL), not into a
 * pass's: a drain is not part of the pass that hosts it. */
void strata_ilm__due_tick(struct strata_ilm *e, bool force, struct strata_ilm_stats *out);
/* Free due.c's state (destroy). */
void strata_ilm__due_forget(struct strata_ilm *e);
/* The index bound of a Days action: a base time (ms) below the result is
 * due at now_ms (strata_lc_due_ms(base, days, day_ms) <= now_ms). */
int64_t strata_ilm__due_bound(int64_t now_ms, unsigned days, int64_t day_ms);

/* healing.c: the immediate heal queue, drained between pages and passes;
 * counts as due_tick does. */
void strata_ilm__heal_tick(struct strata_ilm *e, struct strata_ilm_stats *out);
/* Add delta's counters to the engine's totals and to out (may be NULL),
 * under e->mu. */
void strata_ilm__publish(struct strata_ilm *e, const struct strata_ilm_stats *delta,
                         struct strata_ilm_stats *out);

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

int64_t strata_ilm__now_ms(void);
int64_t strata_ilm__day_ms(const struct strata_ilm *e);
/* Publish the in-progress counters for status (under e->mu). */
void strata_ilm__progress(struct strata_ilm *e, const struct strata_ilm_stats *st,
                          const char *bucket, const char *key);

#endif /* STRATA_ILM_ILM_INTERNAL_H */
