/*
 * backend.c - what the layers above meta/ may know of the store behind the
 * seam (store.h): its name and the hook of their bucket caches for changes
 * made by other gateways.
 */
#include "meta_internal.h"
#include "store.h"

const char *strata_meta_store_name(const struct strata_meta *m)
{
    return m->store->name;
}

int strata_meta_on_invalidate(struct strata_meta *m, strata_meta_invalidate_cb cb, void *ud)
{
    return m->store->on_invalidate ? m->store->on_invalidate(m, cb, ud) : 0;
}
