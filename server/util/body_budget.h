/*
 * body_budget.h - one daemon-wide bound on the memory request bodies are
 * buffered in: the aws-chunked decoder holds a whole signed chunk (up to
 * 16 MiB) until its signature checks out, and XML bodies are read whole
 * (up to 2 MiB).  Each is bounded per request, but not the sum over every
 * request in flight; this counter is.  A request that would go over it is
 * answered 503 SlowDown.
 *
 * Lock-free; any thread.  A NULL budget is unlimited (unit tests, fuzzers).
 */
#ifndef STRATA_SERVER_BODY_BUDGET_H
#define STRATA_SERVER_BODY_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct strata_body_budget {
    atomic_size_t used; /* bytes taken and not given back */
    size_t max;         /* set before any request runs */
};

/* Take n bytes; false (nothing taken) when that would pass max. */
static inline bool strata_body_budget_take(struct strata_body_budget *b, size_t n)
{
    if (!b || n == 0)
        return true;
    size_t cur = atomic_load(&b->used);
    do {
        if (n > b->max || cur > b->max - n)
            return false;
    } while (!atomic_compare_exchange_weak(&b->used, &cur, cur + n));
    return true;
}

/* Give back n bytes taken earlier. */
static inline void strata_body_budget_give(struct strata_body_budget *b, size_t n)
{
    if (b && n)
        atomic_fetch_sub(&b->used, n);
}

/* Whether nothing more can be taken at all (answer SlowDown up front). */
static inline bool strata_body_budget_full(struct strata_body_budget *b)
{
    return b && atomic_load(&b->used) >= b->max;
}

#endif /* STRATA_SERVER_BODY_BUDGET_H */
