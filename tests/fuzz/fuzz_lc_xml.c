/*
 * fuzz_lc_xml.c - libFuzzer target for the LifecycleConfiguration parser
 * (ilm/lc_parse.c, libxml2) and the canonical form the server stores
 * (strata_lifecycle_format in server/s3/s3_lifecycle.c).
 *
 * Input: the request body.  Checks the contracts the handler and the
 * scanner rely on: a refusal returns nothing and names a fault; an accepted
 * document has 1..1000 rules with unique non-empty IDs, positive day
 * counts, one kind of Expiration at most, size bounds in order,
 * transitions with distinct non-empty classes, not mixing Date and Days;
 * and its canonical form parses back into the same rules.
 */
#include "fuzz.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_xml.h"

#include "sbuf.h"
#include "srv.h"
#include "strata/ilm.h"

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool tr_eq(const struct strata_lc_transition *a, const struct strata_lc_transition *b,
                  size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].days != b[i].days || a[i].has_date != b[i].has_date ||
            a[i].date_ms != b[i].date_ms ||
            a[i].newer != b[i].newer || strcmp(a[i].storage_class, b[i].storage_class) != 0)
            return false;
    return true;
}

static bool rule_eq(const struct strata_lc_rule *a, const struct strata_lc_rule *b)
{
    const struct strata_lc_filter *fa = &a->filter, *fb = &b->filter;
    if (strcmp(a->id, b->id) != 0 || a->enabled != b->enabled ||
        a->legacy_prefix != b->legacy_prefix || fa->and_form != fb->and_form ||
        !str_eq(fa->prefix, fb->prefix) ||
        fa->ntags != fb->ntags || fa->has_size_gt != fb->has_size_gt ||
        fa->has_size_lt != fb->has_size_lt || fa->size_gt != fb->size_gt ||
        fa->size_lt != fb->size_lt || a->exp_days != b->exp_days ||
        a->exp_has_date != b->exp_has_date || a->exp_date_ms != b->exp_date_ms || a->exp_delete_marker != b->exp_delete_marker ||
        a->nc_days != b->nc_days || a->nc_newer != b->nc_newer || a->abort_days != b->abort_days ||
        a->ntr != b->ntr || a->nnctr != b->nnctr || !tr_eq(a->tr, b->tr, a->ntr) ||
        !tr_eq(a->nctr, b->nctr, a->nnctr))
        return false;
    for (size_t i = 0; i < fa->ntags; i++)
        if (strcmp(fa->tags[i].key, fb->tags[i].key) || strcmp(fa->tags[i].value, fb->tags[i].value))
            return false;
    return true;
}

static void check_rules(const struct strata_lc_config *c)
{
    if (c->nrules == 0 || c->nrules > STRATA_LC_RULES_MAX)
        STRATA_FUZZ_FAIL();
    for (size_t i = 0; i < c->nrules; i++) {
        const struct strata_lc_rule *r = &c->rules[i];
        if (!r->id[0] || r->has_transition != (r->ntr > 0) ||
            r->has_nc_transition != (r->nnctr > 0) || r->ntr > STRATA_LC_TRANSITIONS_MAX ||
            r->nnctr > STRATA_LC_TRANSITIONS_MAX)
            STRATA_FUZZ_FAIL();
        for (int nc = 0; nc < 2; nc++) {
            const struct strata_lc_transition *t = nc ? r->nctr : r->tr;
            size_t n = nc ? r->nnctr : r->ntr;
            for (size_t a = 0; a < n; a++) {
                if (!t[a].storage_class[0] || t[a].newer > STRATA_LC_NEWER_NONCURRENT_MAX ||
                    (nc && (t[a].has_date || t[a].date_ms)) ||
                    t[a].has_date != t[0].has_date || (!t[a].has_date && t[a].date_ms))
                    STRATA_FUZZ_FAIL();
                for (size_t b2 = 0; b2 < a; b2++)
                    if (strcmp(t[a].storage_class, t[b2].storage_class) == 0)
                        STRATA_FUZZ_FAIL();
            }
        }
        if (!!r->exp_days + r->exp_has_date + r->exp_delete_marker > 1 ||
            (!r->exp_has_date && r->exp_date_ms))
            STRATA_FUZZ_FAIL();
        if (r->filter.has_size_gt && r->filter.has_size_lt &&
            r->filter.size_gt >= r->filter.size_lt)
            STRATA_FUZZ_FAIL();
        if (r->nc_newer > STRATA_LC_NEWER_NONCURRENT_MAX || (r->nc_newer && !r->nc_days))
            STRATA_FUZZ_FAIL();
        for (size_t j = 0; j < i; j++)
            if (strcmp(c->rules[j].id, r->id) == 0)
                STRATA_FUZZ_FAIL();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    strata_fuzz_xml_init();
    char *b = strata_fuzz_memdup(data, size);
    struct strata_lc_config c;
    struct strata_lc_error e;
    int rc = strata_lc_config_parse(b, size, &c, &e);
    free(b);
    if (rc) {
        if (c.rules || c.nrules || (rc != STRATA_ENOMEM && e.fault == STRATA_LC_OK))
            STRATA_FUZZ_FAIL();
        return 0;
    }
    check_rules(&c);
    struct strata_sbuf out;
    strata_sbuf_init(&out, 8u << 20);
    strata_lifecycle_format(&out, &c);
    if (out.failed)
        STRATA_FUZZ_FAIL();
    struct strata_lc_config again;
    if (strata_lc_config_parse(out.data, out.len, &again, &e) != 0 || again.nrules != c.nrules)
        STRATA_FUZZ_FAIL();
    for (size_t i = 0; i < c.nrules; i++)
        if (!rule_eq(&c.rules[i], &again.rules[i]))
            STRATA_FUZZ_FAIL();
    strata_sbuf_fini(&out);
    strata_lc_config_fini(&again);
    strata_lc_config_fini(&c);
    return 0;
}
