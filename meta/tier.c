/*
 * tier.c - the local tier: data objects erasure-coded over drive sets,
 * behind the strata_tier_ops of tier.h.  The hot tier (the sets holding the
 * records) is one of these, so object data always goes through the ops:
 * a remote tier needs only another ops table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/tier.h"

struct local_tier {
    struct strata_set **sets; /* a copy of the caller's array */
    unsigned nsets;
};

static struct strata_set *pick(void *impl, uint32_t place)
{
    struct local_tier *t = impl;
    return t->sets[place % t->nsets];
}

static int l_writer_open(void *impl, uint32_t place, const uint8_t *id, void **w)
{
    return strata_ec_writer_create(pick(impl, place), id, (struct strata_ec_writer **)w);
}

static int l_observe(void *w, strata_ec_observe_cb cb, void *ud)
{
    return strata_ec_writer_observe(w, cb, ud);
}

static int l_expect(void *w, uint64_t size)
{
    return strata_ec_writer_expect(w, size);
}

static int l_write(void *w, const void *buf, size_t len)
{
    return strata_ec_writer_write(w, buf, len);
}

static int l_finish(void *w)
{
    uint32_t mask = 0;
    return strata_ec_writer_finish(w, &mask);
}

static void l_writer_destroy(void *w)
{
    strata_ec_writer_destroy(w);
}

static int l_reader_open(void *impl, uint32_t place, const uint8_t *id, uint64_t size, void **r)
{
    return strata_ec_reader_open(pick(impl, place), id, size, (struct strata_ec_reader **)r);
}

static int l_read(void *r, uint64_t off, void *buf, size_t len)
{
    return strata_ec_reader_read(r, off, buf, len);
}

static int l_peek(void *r, uint64_t off, size_t max, const uint8_t **p, size_t *n)
{
    return strata_ec_reader_peek(r, off, max, p, n);
}

static void l_reader_limit(void *r, uint64_t end)
{
    strata_ec_reader_limit(r, end);
}

static void l_reader_close(void *r)
{
    strata_ec_reader_close(r);
}

static int l_remove(void *impl, uint32_t place, const uint8_t *id)
{
    return strata_ec_delete(pick(impl, place), id);
}

static int l_stat(void *impl, uint32_t place, const uint8_t *id, uint64_t size)
{
    if (size == 0)
        return 0;
    struct strata_ec_reader *r;
    int rc = strata_ec_reader_open(pick(impl, place), id, size, &r);
    if (rc)
        return rc;
    uint8_t b;
    rc = strata_ec_reader_read(r, 0, &b, 1);
    if (rc == 0)
        rc = strata_ec_reader_read(r, size - 1, &b, 1);
    strata_ec_reader_close(r);
    return rc;
}

static int l_heal(void *impl, uint32_t place, const uint8_t *id, uint64_t size, unsigned *healed)
{
    return strata_ec_heal(pick(impl, place), id, size, healed);
}

static int l_healed(void *impl)
{
    struct local_tier *l = impl;
    int rc = 0;
    for (unsigned s = 0; s < l->nsets; s++) {
        for (unsigned d = 0; d < strata_set_n(l->sets[s]); d++) {
            if (!strata_set_drive_online(l->sets[s], d) || !strata_set_drive_fresh(l->sets[s], d))
                continue;
            int mrc = strata_set_drive_mark_healed(l->sets[s], d);
            rc = rc ? rc : mrc;
        }
    }
    return rc;
}

static void l_destroy(void *impl)
{
    struct local_tier *l = impl;
    free(l->sets);
    free(l);
}

static const struct strata_tier_ops local_ops = {
    .writer_open = l_writer_open,
    .writer_observe = l_observe,
    .writer_expect = l_expect,
    .write = l_write,
    .finish = l_finish,
    .writer_destroy = l_writer_destroy,
    .reader_open = l_reader_open,
    .read = l_read,
    .peek = l_peek,
    .reader_limit = l_reader_limit,
    .reader_close = l_reader_close,
    .remove = l_remove,
    .stat = l_stat,
    .heal = l_heal,
    .healed = l_healed,
    .destroy = l_destroy,
};

bool strata_tier_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > STRATA_TIER_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
    }
    return true;
}

int strata_tier_local_create(const char *name, struct strata_set *const *sets, unsigned nsets,
                             struct strata_tier **out)
{
    *out = NULL;
    if (!strata_tier_name_ok(name) || !sets || nsets == 0)
        return STRATA_EINVAL;
    struct strata_tier *t = calloc(1, sizeof(*t));
    struct local_tier *l = calloc(1, sizeof(*l));
    struct strata_set **copy = malloc(nsets * sizeof(*copy));
    if (!t || !l || !copy) {
        free(t);
        free(l);
        free(copy);
        return STRATA_ENOMEM;
    }
    memcpy(copy, sets, nsets * sizeof(*copy));
    l->sets = copy;
    l->nsets = nsets;
    snprintf(t->name, sizeof(t->name), "%s", name);
    t->ops = &local_ops;
    t->impl = l;
    *out = t;
    return 0;
}

void strata_tier_destroy(struct strata_tier *t)
{
    if (!t)
        return;
    t->ops->destroy(t->impl);
    free(t);
}
