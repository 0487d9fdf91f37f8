/*
 * key_order.c - the lock one key's commit and queueing are made under
 * (key_order.h).
 */
#include "key_order.h"

#include "notify.h"
#include "repl_hooks.h"
#include "srv.h"

#include <pthread.h>
#include <string.h>

#include "strata/erasure.h"

/* Striped: writers of other keys rarely wait, and only for a commit. */
#define ORDER_STRIPES 64
static pthread_mutex_t order_mu[ORDER_STRIPES] = {[0 ... ORDER_STRIPES - 1] =
                                                      PTHREAD_MUTEX_INITIALIZER};

void *strata_key_order_hold(struct strata_req *r, const char *key)
{
    if (!strata_repl_configured(r) && !strata_notify_configured(r))
        return NULL;
    uint32_t h = strata_crc32c(0, r->bucket, strlen(r->bucket) + 1);
    h = strata_crc32c(h, key, strlen(key));
    pthread_mutex_t *mu = &order_mu[h % ORDER_STRIPES];
    pthread_mutex_lock(mu);
    return mu;
}

void strata_key_order_release(void *hold)
{
    if (hold)
        pthread_mutex_unlock(hold);
}
