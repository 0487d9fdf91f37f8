/*
 * queue.c - message queues in a store that several gateways share
 * (strata_meta_queue_* in include/strata/meta.h): the caller's arguments
 * checked, then the store's optional queue ops (store.h); a store without
 * them (local drives, whose queues are files in server/pqueue.c) answers
 * STRATA_ENOTIMPL.
 */
#include "meta_internal.h"
#include "store.h"

#include <stdlib.h>
#include <string.h>

/* Queue names become object names (q.NAME on RADOS): keep them plain. */
static bool name_ok(const char *name)
{
    return strata_meta__name_plain(name, STRATA_META_QUEUE_NAME_MAX,
                                   "abcdefghijklmnopqrstuvwxyz"
                                   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.");
}

bool strata_meta_queues_shared(struct strata_meta *m)
{
    return m && m->store->queue_push;
}

int strata_meta_queue_push(struct strata_meta *m, const char *name, const void *msg, size_t len)
{
    if (!m->store->queue_push)
        return STRATA_ENOTIMPL;
    if (!name_ok(name) || len > STRATA_META_QUEUE_MSG_MAX)
        return STRATA_EINVAL;
    return m->store->queue_push(m, name, msg, len);
}

int strata_meta_queue_read(struct strata_meta *m, const char *name, const char *after, size_t max,
                           struct strata_meta_queue_ent *out, size_t *n)
{
    *n = 0;
    if (!m->store->queue_read)
        return STRATA_ENOTIMPL;
    if (!name_ok(name) || !after || strlen(after) >= STRATA_META_QUEUE_KEY_MAX || max == 0 ||
        max > STRATA_META_QUEUE_READ_MAX)
        return STRATA_EINVAL;
    return m->store->queue_read(m, name, after, max, out, n);
}

void strata_meta_queue_ents_fini(struct strata_meta_queue_ent *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(e[i].msg);
        e[i].msg = NULL;
    }
}

int strata_meta_queue_remove(struct strata_meta *m, const char *name, const char *const *keys,
                             size_t n)
{
    if (!m->store->queue_remove)
        return STRATA_ENOTIMPL;
    if (!name_ok(name) || n > STRATA_META_QUEUE_READ_MAX)
        return STRATA_EINVAL;
    return n ? m->store->queue_remove(m, name, keys, n) : 0;
}

int strata_meta_queue_count(struct strata_meta *m, const char *name, uint64_t upto, uint64_t *n)
{
    *n = 0;
    if (!m->store->queue_count)
        return STRATA_ENOTIMPL;
    if (!name_ok(name))
        return STRATA_EINVAL;
    return m->store->queue_count(m, name, upto, n);
}

int strata_meta_queue_lease(struct strata_meta *m, const char *name, enum strata_lease_op op)
{
    if (!m->store->queue_lease)
        return STRATA_ENOTIMPL;
    if (!name_ok(name) ||
        (op != STRATA_LEASE_TAKE && op != STRATA_LEASE_RENEW && op != STRATA_LEASE_RELEASE))
        return STRATA_EINVAL;
    return m->store->queue_lease(m, name, op);
}
