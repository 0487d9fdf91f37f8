/*
 * retry.c - the mover's list of moves to look at again (mover.c): moves
 * the full pass hands over (attempt 0, at once) and moves meta refused,
 * after 1, 2, 4 ... s (at most RETRY_ATTEMPTS times).  Bounded
 * (RETRY_MAX); an entry already listed keeps its own turn.  Kept apart
 * from the mover so that the walk, which adds to it, does not depend on
 * the mover, which walks.
 *
 * Threads: any; retry_mu guards the list.
 */
#include "ilm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_MAX 1024
#define RETRY_ATTEMPTS 8
#define RETRY_FIRST_MS 1000

struct ilm_retry {
    struct retry_ent v[RETRY_MAX];
    size_t n;
};

bool strata_ilm__move_later(struct strata_ilm *e, const char *bucket, const char *key,
                            const char *vid, unsigned attempt)
{
    if (attempt > RETRY_ATTEMPTS)
        return false;
    int64_t now = strata_ilm__now_ms();
    int64_t next = attempt ? now + ((int64_t)RETRY_FIRST_MS << (attempt - 1)) : now;
    bool ok = false;
    pthread_mutex_lock(&e->retry_mu);
    if (!e->retry)
        e->retry = calloc(1, sizeof(*e->retry));
    struct ilm_retry *r = e->retry;
    for (size_t i = 0; r && i < r->n && !ok; i++)
        ok = strcmp(r->v[i].bucket, bucket) == 0 && strcmp(r->v[i].key, key) == 0 &&
             strcmp(r->v[i].vid, vid) == 0; /* there already: its own turn stands */
    if (r && !ok && r->n < RETRY_MAX) {
        struct retry_ent *x = &r->v[r->n];
        x->key = strdup(key);
        if (x->key) {
            snprintf(x->bucket, sizeof(x->bucket), "%s", bucket);
            snprintf(x->vid, sizeof(x->vid), "%s", vid);
            x->attempt = attempt;
            x->next_ms = next;
            r->n++;
            ok = true;
        }
    }
    pthread_mutex_unlock(&e->retry_mu);
    return ok;
}

size_t strata_ilm__retry_pending(struct strata_ilm *e)
{
    pthread_mutex_lock(&e->retry_mu);
    size_t n = e->retry ? e->retry->n : 0;
    pthread_mutex_unlock(&e->retry_mu);
    return n;
}

void strata_ilm__retry_forget(struct strata_ilm *e)
{
    if (!e->retry)
        return;
    for (size_t i = 0; i < e->retry->n; i++)
        free(e->retry->v[i].key);
    free(e->retry);
    e->retry = NULL;
}

size_t strata_ilm__retry_take(struct strata_ilm *e, struct retry_ent *out, size_t max)
{
    int64_t now = strata_ilm__now_ms();
    size_t n = 0;
    pthread_mutex_lock(&e->retry_mu);
    struct ilm_retry *r = e->retry;
    for (size_t i = 0; r && i < r->n;) {
        if (n < max && r->v[i].next_ms <= now) {
            out[n++] = r->v[i];
            r->v[i] = r->v[--r->n]; /* order does not matter: each has its time */
            continue;
        }
        i++;
    }
    pthread_mutex_unlock(&e->retry_mu);
    return n;
}
