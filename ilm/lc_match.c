/*
 * lc_match.c - which lifecycle rule applies to a version, and when.
 *
 * Precedence follows AWS's "overlapping filters and conflicting actions":
 * every enabled rule whose filter matches is considered, and among rules
 * with the same kind of action the one that makes the object due earliest
 * wins (the shorter expiration).  Disabled rules never act.  Pure
 * functions, any thread.
 */
#include "strata/ilm.h"

#include <string.h>

static bool has_tag(const struct strata_lc_obj *o, const struct strata_lc_tag *t)
{
    for (size_t i = 0; i < o->ntags; i++)
        if (strcmp(o->tags[i].name, t->key) == 0 && strcmp(o->tags[i].value, t->value) == 0)
            return true;
    return false;
}

static bool prefix_match(const struct strata_lc_filter *f, const char *key)
{
    return !f->prefix || strncmp(key, f->prefix, strlen(f->prefix)) == 0;
}

bool strata_lc_filter_match(const struct strata_lc_filter *f, const struct strata_lc_obj *o)
{
    if (!prefix_match(f, o->key))
        return false;
    if (f->has_size_gt && !(o->size > f->size_gt))
        return false;
    if (f->has_size_lt && !(o->size < f->size_lt))
        return false;
    for (size_t i = 0; i < f->ntags; i++)
        if (!has_tag(o, &f->tags[i]))
            return false;
    return true;
}

int64_t strata_lc_due_ms(int64_t base_ms, unsigned days, int64_t day_ms)
{
    if (day_ms <= 0)
        day_ms = STRATA_LC_DAY_MS_DEFAULT;
    int64_t t = base_ms + (int64_t)days * day_ms;
    int64_t rem = t % day_ms;
    if (rem < 0)
        rem += day_ms;
    return rem ? t - rem + day_ms : t;
}

/* What a rule is judged on: the version (or, for markers and uploads,
 * only its key) and the time its clock starts. */
struct lc_query {
    const struct strata_lc_obj *o;
    const char *key;
    int64_t base_ms;
    unsigned newer_nc;
    int64_t day_ms;
};

/* Whether enabled rule r acts on q, and when (*due). */
typedef bool (*rule_due_fn)(const struct strata_lc_rule *r, const struct lc_query *q, int64_t *due);

/* The enabled rule of c that due accepts and that makes the object due
 * earliest (the first of equals), and that time in *due_ms. */
static const struct strata_lc_rule *earliest(const struct strata_lc_config *c, rule_due_fn due,
                                             const struct lc_query *q, int64_t *due_ms)
{
    const struct strata_lc_rule *best = NULL;
    int64_t best_due = 0;
    for (size_t i = 0; c && i < c->nrules; i++) {
        const struct strata_lc_rule *r = &c->rules[i];
        int64_t t;
        if (r->enabled && due(r, q, &t) && (!best || t < best_due)) {
            best = r;
            best_due = t;
        }
    }
    if (best && due_ms)
        *due_ms = best_due;
    return best;
}

static bool expiry_due(const struct strata_lc_rule *r, const struct lc_query *q, int64_t *due)
{
    if ((!r->exp_days && !r->exp_has_date) || !strata_lc_filter_match(&r->filter, q->o))
        return false;
    *due = r->exp_days ? strata_lc_due_ms(q->base_ms, r->exp_days, q->day_ms) : r->exp_date_ms;
    return true;
}

const struct strata_lc_rule *strata_lc_expiry(const struct strata_lc_config *c,
                                              const struct strata_lc_obj *o, int64_t mtime_ms,
                                              int64_t day_ms, int64_t *due_ms)
{
    struct lc_query q = {.o = o, .base_ms = mtime_ms, .day_ms = day_ms};
    return earliest(c, expiry_due, &q, due_ms);
}

static bool noncurrent_due(const struct strata_lc_rule *r, const struct lc_query *q, int64_t *due)
{
    /* NewerNoncurrentVersions N retains the N newest noncurrent versions. */
    if (!r->nc_days || q->newer_nc < r->nc_newer || !strata_lc_filter_match(&r->filter, q->o))
        return false;
    *due = strata_lc_due_ms(q->base_ms, r->nc_days, q->day_ms);
    return true;
}

const struct strata_lc_rule *strata_lc_noncurrent_expiry(const struct strata_lc_config *c,
                                                         const struct strata_lc_obj *o,
                                                         int64_t since_ms, unsigned newer_nc,
                                                         int64_t day_ms, int64_t *due_ms)
{
    struct lc_query q = {.o = o, .base_ms = since_ms, .newer_nc = newer_nc, .day_ms = day_ms};
    return earliest(c, noncurrent_due, &q, due_ms);
}

static bool marker_due(const struct strata_lc_rule *r, const struct lc_query *q, int64_t *due)
{
    /* Tag filters cannot name markers (the parser refuses the mix with
     * ExpiredObjectDeleteMarker); a size filter never matches what has
     * no size. */
    if ((!r->exp_delete_marker && !r->exp_days) || r->filter.ntags || r->filter.has_size_gt ||
        r->filter.has_size_lt || !prefix_match(&r->filter, q->key))
        return false;
    *due = r->exp_delete_marker ? q->base_ms : strata_lc_due_ms(q->base_ms, r->exp_days, q->day_ms);
    return true;
}

const struct strata_lc_rule *strata_lc_marker_rule(const struct strata_lc_config *c,
                                                   const char *key, int64_t mtime_ms,
                                                   int64_t day_ms, int64_t *due_ms)
{
    struct lc_query q = {.key = key, .base_ms = mtime_ms, .day_ms = day_ms};
    return earliest(c, marker_due, &q, due_ms);
}

static bool abort_due(const struct strata_lc_rule *r, const struct lc_query *q, int64_t *due)
{
    if (!r->abort_days || !prefix_match(&r->filter, q->key))
        return false;
    *due = strata_lc_due_ms(q->base_ms, r->abort_days, q->day_ms);
    return true;
}

const struct strata_lc_rule *strata_lc_abort_rule(const struct strata_lc_config *c,
                                                  const char *key, int64_t init_ms,
                                                  int64_t day_ms, int64_t *due_ms)
{
    struct lc_query q = {.key = key, .base_ms = init_ms, .day_ms = day_ms};
    return earliest(c, abort_due, &q, due_ms);
}
