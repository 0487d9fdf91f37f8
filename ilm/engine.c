/*
 * engine.c - what the engine's files share: the clock, the interruptible
 * nap, the length of a lifecycle day, the counters' publication (totals
 * and the pass in progress) and the list of bucket names.  Kept apart from
 * the scanner so that the due drains, the mover, the walk, the lease, the
 * heal queue and the pass position depend on these and not on the scanner
 * that drives them.
 */
#include "ilm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int64_t strata_ilm__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t strata_ilm__day_ms(const struct strata_ilm *e)
{
    return e->o.day_ms > 0 ? e->o.day_ms : STRATA_LC_DAY_MS_DEFAULT;
}

bool strata_ilm__nap_until(struct strata_ilm *e, int64_t abs_ms, bool wake_on_kick)
{
    struct timespec ts = {.tv_sec = abs_ms / 1000, .tv_nsec = (abs_ms % 1000) * 1000000};
    pthread_mutex_lock(&e->mu);
    while (!atomic_load(&e->stop) && !(wake_on_kick && e->kick) && strata_ilm__now_ms() < abs_ms)
        if (pthread_cond_timedwait(&e->cv, &e->mu, &ts) != 0)
            break;
    pthread_mutex_unlock(&e->mu);
    return atomic_load(&e->stop);
}

void strata_ilm__stats_add_counts(struct strata_ilm_stats *t, const struct strata_ilm_stats *s)
{
    t->passes += s->passes;
    t->buckets += s->buckets;
    t->scanned += s->scanned;
    t->expired += s->expired;
    t->noncurrent_expired += s->noncurrent_expired;
    t->markers_removed += s->markers_removed;
    t->uploads_aborted += s->uploads_aborted;
    t->skipped_locked += s->skipped_locked;
    t->errors += s->errors;
    t->healed += s->healed;
    t->tmp_reclaimed += s->tmp_reclaimed;
    t->due_scanned += s->due_scanned;
    t->due_dropped += s->due_dropped;
    t->heal_queued += s->heal_queued;
    t->orphans_reclaimed += s->orphans_reclaimed;
    t->transitioned += s->transitioned;
    t->bytes_moved += s->bytes_moved;
    t->intents_resolved += s->intents_resolved;
}

void strata_ilm__publish(struct strata_ilm *e, const struct strata_ilm_stats *delta,
                         struct strata_ilm_stats *out)
{
    pthread_mutex_lock(&e->mu);
    strata_ilm__stats_add_counts(&e->total, delta);
    if (out)
        strata_ilm__stats_add_counts(out, delta);
    pthread_mutex_unlock(&e->mu);
}

static int name_cb(const struct strata_bucket_info *b, void *ud)
{
    struct strata_ilm_names *ns = ud;
    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? ns->cap * 2 : 16;
        void *v = realloc(ns->v, cap * sizeof(*ns->v));
        if (!v)
            return STRATA_ENOMEM;
        ns->v = v;
        ns->cap = cap;
    }
    snprintf(ns->v[ns->n++], sizeof(ns->v[0]), "%s", b->name);
    return 0;
}

int strata_ilm__bucket_names(struct strata_ilm *e, struct strata_ilm_names *out)
{
    *out = (struct strata_ilm_names){0};
    return strata_meta_bucket_list(e->o.meta, name_cb, out);
}

void strata_ilm__progress(struct strata_ilm *e, const struct strata_ilm_stats *st,
                          const char *bucket, const char *key)
{
    pthread_mutex_lock(&e->mu);
    e->prog.st = *st;
    snprintf(e->prog.bucket, sizeof(e->prog.bucket), "%s", bucket ? bucket : "");
    snprintf(e->prog.key, sizeof(e->prog.key), "%s", key ? key : "");
    pthread_mutex_unlock(&e->mu);
}
