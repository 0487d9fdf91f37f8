/*
 * lock_stub.c - stand-ins for the retention clock and the audit log until
 * their modules land: the wall clock and a no-op log.  Removed by the merge
 * that brings the real ones.
 */
#include "meta_internal.h"

#include <time.h>

int64_t strata_meta_lock_now_ms(struct strata_meta *m)
{
    (void)m;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int strata_meta_audit_append(struct strata_meta *m, const struct strata_audit_event *ev)
{
    (void)m;
    (void)ev;
    return 0;
}
