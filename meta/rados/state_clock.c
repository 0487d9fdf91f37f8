/*
 * state_clock.c - the daemon's state documents (omap of `state`: name ->
 * document) and the retention clock's high-water mark (omap of `clock`:
 * mark -> lock ms as 16 lower-case hex digits, with the writer's wall clock
 * and gateway id beside it).  The mark only moves forward: an advance is
 * guarded by omap_cmp(mark, LT, new), so a gateway whose clock is behind
 * another's loses the compare and leaves the higher mark in place.
 * Hex, not 8 bytes big-endian as first planned: the OSD (Ceph 16) compares
 * omap values bytewise as signed chars, so a byte >= 0x80 sorts below 0x7f
 * and a big-endian mark could be lowered (measured: test_store_rados);
 * ASCII digits of one width compare as the numbers do.
 */
#include "rados.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int strata_meta__rados_state_put(struct strata_meta *m, const char *name, const void *doc,
                                 size_t len)
{
    struct meta_rados *r = meta_rados_of(m);
    return strata_meta__rados_cas1(r->meta, RADOS_OID_STATE, NULL, NULL, 0, name,
                                   len ? (const char *)doc : NULL, len);
}

int strata_meta__rados_state_get(struct strata_meta *m, const char *name, void **doc,
                                 size_t *len)
{
    char *v;
    int rc = strata_meta__rados_get1(meta_rados_of(m)->meta, RADOS_OID_STATE, name, &v, len);
    *doc = rc == 0 ? v : NULL;
    return rc;
}

#define MARK_LEN 16

int64_t strata_meta__rados_clock_mark_read(struct strata_meta *m)
{
    char *v;
    size_t vl;
    if (strata_meta__rados_get1(meta_rados_of(m)->meta, RADOS_OID_CLOCK, "mark", &v, &vl) != 0)
        return -1; /* none yet (or unreadable: nothing to trust) */
    int64_t ms = -1;
    if (vl == MARK_LEN && strspn(v, "0123456789abcdef") == MARK_LEN) {
        unsigned long long u = strtoull(v, NULL, 16);
        if (u <= INT64_MAX)
            ms = (int64_t)u;
    }
    free(v);
    return ms;
}

int strata_meta__rados_clock_mark_advance(struct strata_meta *m, int64_t lock_ms)
{
    struct meta_rados *r = meta_rados_of(m);
    if (lock_ms < 0)
        return STRATA_EINVAL;
    char mark[MARK_LEN + 1];
    snprintf(mark, sizeof(mark), "%016llx", (unsigned long long)lock_ms);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char wall[24];
    int wl = snprintf(wall, sizeof(wall), "%lld",
                      (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    const char *keys[] = {"mark", "wall", "by"};
    const char *vals[] = {mark, wall, r->gw};
    size_t lens[] = {MARK_LEN, (size_t)wl, strlen(r->gw)};
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return STRATA_ENOMEM;
    int prval = 0;
    /* Passes when the stored mark is below the new one (an absent mark
     * compares as the empty value, below any). */
    rados_write_op_omap_cmp(op, "mark", LIBRADOS_CMPXATTR_OP_LT, mark, MARK_LEN, &prval);
    rados_write_op_omap_set(op, keys, vals, lens, 3);
    int rc = rados_write_op_operate(op, r->meta, RADOS_OID_CLOCK, NULL, 0);
    rados_release_write_op(op);
    /* A mark at or past lock_ms is already durable: the clock only grows. */
    return rc == -ECANCELED ? 0 : strata_meta__rados_err(rc);
}
