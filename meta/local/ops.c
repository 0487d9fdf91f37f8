/*
 * ops.c - the local backend's ops table (store.h), and what it does for
 * leases and cache invalidation: nothing, because on local drives one
 * process is the whole cluster.  It holds every lease (there is no other
 * gateway to take one over) and has no other gateway to tell about a
 * change or hear one from.
 */
#include "local.h"

#include <stdio.h>
#include <string.h>

/* strata_meta_test_lease_held_elsewhere's lease name ("" none). */
static pthread_mutex_t test_mu = PTHREAD_MUTEX_INITIALIZER;
static char test_held[STRATA_LEASE_NAME_MAX + 1];

void strata_meta_test_lease_held_elsewhere(const char *name)
{
    pthread_mutex_lock(&test_mu);
    snprintf(test_held, sizeof(test_held), "%s", name ? name : "");
    pthread_mutex_unlock(&test_mu);
}

int strata_meta__local_lease(struct strata_meta *m, const char *name, enum strata_lease_op op)
{
    (void)m;
    if (op == STRATA_LEASE_RELEASE)
        return 0;
    pthread_mutex_lock(&test_mu);
    bool elsewhere = test_held[0] && strcmp(test_held, name) == 0;
    pthread_mutex_unlock(&test_mu);
    return elsewhere ? STRATA_EBUSY : 0;
}

int strata_meta__local_invalidate(struct strata_meta *m, const char *bucket)
{
    (void)m;
    (void)bucket;
    return 0;
}

/* No other gateway changes this store, so cb is never called. */
int strata_meta__local_on_invalidate(struct strata_meta *m, strata_meta__invalidate_fn cb, void *ud)
{
    (void)m;
    (void)cb;
    (void)ud;
    return 0;
}

const struct strata_meta__store_ops strata_meta__store_local = {
    .name = "local",
    STRATA_META__STORE_OPS(STRATA_META__STORE_ENTRY, local)
};
