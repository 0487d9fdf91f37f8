/*
 * state.c - the daemon's cluster state above the store seam: its own small
 * documents ('S' name locally), what must survive a restart but belongs to
 * no bucket, such as the lifecycle scanner's position; and the leases of
 * work that runs once per cluster.  Checks the caller's arguments, then
 * goes through the store's ops (store.h).
 */
#include "meta_internal.h"
#include "store.h"

#include <string.h>

int strata_meta_state_put(struct strata_meta *m, const char *name, const void *doc, size_t len)
{
    if (!name || !*name || strlen(name) > STRATA_META__STATE_NAME_MAX ||
        len > STRATA_META__STATE_DOC_MAX)
        return STRATA_EINVAL;
    return m->store->state_put(m, name, doc, len);
}

int strata_meta_state_get(struct strata_meta *m, const char *name, void **doc, size_t *len)
{
    *doc = NULL;
    *len = 0;
    if (!name || !*name || strlen(name) > STRATA_META__STATE_NAME_MAX)
        return STRATA_EINVAL;
    return m->store->state_get(m, name, doc, len);
}

bool strata_meta__name_plain(const char *name, size_t max, const char *chars)
{
    size_t n = name ? strlen(name) : 0;
    return n > 0 && n <= max && strspn(name, chars) == n;
}

/* Lease names become object names on RADOS (lease.NAME): keep them plain. */
static bool lease_name_ok(const char *name)
{
    return strata_meta__name_plain(name, STRATA_LEASE_NAME_MAX,
                                   "abcdefghijklmnopqrstuvwxyz0123456789-_");
}

int strata_meta_lease(struct strata_meta *m, const char *name, enum strata_lease_op op)
{
    if (!lease_name_ok(name) ||
        (op != STRATA_LEASE_TAKE && op != STRATA_LEASE_RENEW && op != STRATA_LEASE_RELEASE))
        return STRATA_EINVAL;
    return m->store->lease(m, name, op);
}

unsigned strata_meta_lease_renew_ms(struct strata_meta *m)
{
    return m->store->lease_renew_ms ? m->store->lease_renew_ms(m) : STRATA_LEASE_RENEW_MS;
}
