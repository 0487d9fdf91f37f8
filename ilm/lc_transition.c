/*
 * lc_transition.c - which tier serves which storage class, and which
 * Transition / NoncurrentVersionTransition of a lifecycle configuration is
 * due for a version.  Pure functions, any thread.
 */
#include <stdio.h>
#include <string.h>

#include "strata/ilm.h"
#include "strata/tier.h"

void strata_class_map_default(struct strata_class_map *m)
{
    static const char *const def[][2] = {
        {"STANDARD", "hot"},     {"STANDARD_IA", "warm"},        {"WARM", "warm"},
        {"GLACIER", "compliance"}, {"DEEP_ARCHIVE", "compliance"}, {"COMPLIANCE", "compliance"},
    };
    memset(m, 0, sizeof(*m));
    for (size_t i = 0; i < sizeof(def) / sizeof(def[0]); i++) {
        snprintf(m->e[i].cls, sizeof(m->e[i].cls), "%s", def[i][0]);
        snprintf(m->e[i].tier, sizeof(m->e[i].tier), "%s", def[i][1]);
        m->n++;
    }
}

static bool class_name_ok(const char *s, size_t n)
{
    if (n == 0 || n >= 32)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

int strata_class_map_set(struct strata_class_map *m, const char *spec)
{
    const char *colon = spec ? strchr(spec, ':') : NULL;
    if (!colon || !class_name_ok(spec, (size_t)(colon - spec)) ||
        !strata_tier_name_ok(colon + 1))
        return STRATA_EINVAL;
    char cls[32];
    snprintf(cls, sizeof(cls), "%.*s", (int)(colon - spec), spec);
    size_t i = 0;
    while (i < m->n && strcmp(m->e[i].cls, cls) != 0)
        i++;
    if (i == m->n) {
        if (m->n == STRATA_CLASS_MAP_MAX)
            return STRATA_ENOSPC;
        m->n++;
    }
    snprintf(m->e[i].cls, sizeof(m->e[i].cls), "%s", cls);
    snprintf(m->e[i].tier, sizeof(m->e[i].tier), "%s", colon + 1);
    return 0;
}

const char *strata_class_map_tier(const struct strata_class_map *m, const char *cls)
{
    for (size_t i = 0; cls && i < m->n; i++)
        if (strcmp(m->e[i].cls, cls) == 0)
            return m->e[i].tier;
    return NULL;
}

const char *strata_class_map_class(const struct strata_class_map *m, const char *tier)
{
    for (size_t i = 0; tier && i < m->n; i++)
        if (strcmp(m->e[i].tier, tier) == 0)
            return m->e[i].cls;
    return NULL;
}

int strata_lc_class_rank(const char *cls)
{
    /* AWS's waterfall, warm to cold; Strata's WARM sits with STANDARD_IA
     * and COMPLIANCE with GLACIER. */
    static const struct {
        const char *cls;
        int rank;
    } ranks[] = {
        {"STANDARD", 0},   {"STANDARD_IA", 1}, {"WARM", 1},       {"INTELLIGENT_TIERING", 2},
        {"ONEZONE_IA", 3}, {"GLACIER_IR", 4},  {"GLACIER", 5},    {"COMPLIANCE", 5},
        {"DEEP_ARCHIVE", 6},
    };
    for (size_t i = 0; cls && i < sizeof(ranks) / sizeof(ranks[0]); i++)
        if (strcmp(ranks[i].cls, cls) == 0)
            return ranks[i].rank;
    return 0;
}

int strata_lc_check_min_days(const struct strata_lc_config *c, struct strata_lc_error *err)
{
    for (size_t i = 0; c && i < c->nrules; i++) {
        const struct strata_lc_rule *r = &c->rules[i];
        for (int nc = 0; nc < 2; nc++) {
            const struct strata_lc_transition *t = nc ? r->nctr : r->tr;
            size_t n = nc ? r->nnctr : r->ntr;
            for (size_t j = 0; j < n; j++) {
                bool ia = strcmp(t[j].storage_class, "STANDARD_IA") == 0 ||
                          strcmp(t[j].storage_class, "ONEZONE_IA") == 0;
                if (!ia || t[j].has_date || t[j].days >= 30)
                    continue;
                if (err) {
                    err->fault = STRATA_LC_INVALID_ARG;
                    snprintf(err->msg, sizeof(err->msg),
                             "'%s' in the %s action for StorageClass '%s' for filter must be "
                             "30 or greater",
                             nc ? "NoncurrentDays" : "Days",
                             nc ? "NoncurrentVersionTransition" : "Transition",
                             t[j].storage_class);
                }
                return STRATA_EINVAL;
            }
        }
    }
    return 0;
}

/* Among the transitions of the enabled rules matching o (the noncurrent
 * ones with nc, which NewerNoncurrentVersions may hold back), the one due
 * latest by now_ms: the class the version belongs in now. */
static const struct strata_lc_transition *latest_due(const struct strata_lc_config *c,
                                                     const struct strata_lc_obj *o, bool nc,
                                                     int64_t base_ms, unsigned newer_nc,
                                                     int64_t now_ms, int64_t day_ms)
{
    const struct strata_lc_transition *best = NULL;
    int64_t best_due = 0;
    for (size_t i = 0; c && i < c->nrules; i++) {
        const struct strata_lc_rule *r = &c->rules[i];
        const struct strata_lc_transition *tr = nc ? r->nctr : r->tr;
        size_t n = nc ? r->nnctr : r->ntr;
        if (!r->enabled || !n || !strata_lc_filter_match(&r->filter, o))
            continue;
        for (size_t j = 0; j < n; j++) {
            const struct strata_lc_transition *t = &tr[j];
            /* NewerNoncurrentVersions N keeps the N newest noncurrent ones. */
            if (nc && newer_nc < t->newer)
                continue;
            int64_t due =
                !nc && t->has_date ? t->date_ms : strata_lc_due_ms(base_ms, t->days, day_ms);
            if (due <= now_ms && (!best || due > best_due)) {
                best = t;
                best_due = due;
            }
        }
    }
    return best;
}

const struct strata_lc_transition *strata_lc_transition_due(const struct strata_lc_config *c,
                                                            const struct strata_lc_obj *o,
                                                            int64_t mtime_ms, int64_t now_ms,
                                                            int64_t day_ms)
{
    return latest_due(c, o, false, mtime_ms, 0, now_ms, day_ms);
}

const struct strata_lc_transition *
strata_lc_nc_transition_due(const struct strata_lc_config *c, const struct strata_lc_obj *o,
                            int64_t since_ms, unsigned newer_nc, int64_t now_ms, int64_t day_ms)
{
    return latest_due(c, o, true, since_ms, newer_nc, now_ms, day_ms);
}
