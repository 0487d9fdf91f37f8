/*
 * budget.c - a rate shared by every thread that spends it: the due drains'
 * workers (objects/s), the heal-queue drain (keys/s) and transition copies
 * (MiB/s).  Each spender reserves the next slot of the schedule and sleeps
 * until it begins, so N concurrent workers together keep the one rate.
 * At most BUDGET_BURST_MS of unused time is kept as credit: after a pause
 * a short burst goes at once, a long one is paced from the start.
 */
#include "ilm_internal.h"

#include <time.h>

#define BUDGET_BURST_MS 100
#define BUDGET_NAP_MS 50

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void strata_ilm__budget_init(struct strata_ilm_budget *b, uint64_t per_s)
{
    pthread_mutex_init(&b->mu, NULL);
    b->per_s = per_s;
    b->next_us = 0;
}

void strata_ilm__budget_fini(struct strata_ilm_budget *b)
{
    pthread_mutex_destroy(&b->mu);
}

bool strata_ilm__budget_take(struct strata_ilm_budget *b, uint64_t units, atomic_bool *stop)
{
    if (!b->per_s || !units)
        return stop && atomic_load(stop);
    pthread_mutex_lock(&b->mu);
    int64_t now = mono_us(), floor = now - BUDGET_BURST_MS * 1000;
    int64_t start = b->next_us > floor ? b->next_us : floor;
    b->next_us = start + (int64_t)(units * 1000000 / b->per_s);
    int64_t until = start;
    pthread_mutex_unlock(&b->mu);
    for (now = mono_us(); now < until; now = mono_us()) {
        if (stop && atomic_load(stop))
            return true;
        int64_t nap = until - now < BUDGET_NAP_MS * 1000 ? until - now : BUDGET_NAP_MS * 1000;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)nap * 1000};
        nanosleep(&ts, NULL);
    }
    return stop && atomic_load(stop);
}
