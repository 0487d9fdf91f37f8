/*
 * stages.c - per-stage request times for profiling (stages.h).
 */
#include "stages.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "srv_log.h"

bool strata_stages_on;
static unsigned every;
static _Atomic unsigned running;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t sum[STRATA_ST_N], max[STRATA_ST_N], run_sum, n;

void strata_stages_init(void)
{
    const char *v = getenv("STRATA_DEBUG_STAGES");
    long e = v ? strtol(v, NULL, 10) : 0;
    every = e > 0 ? (unsigned)e : 0;
    strata_stages_on = every > 0;
}

unsigned strata_stages_run_begin(void)
{
    return atomic_fetch_add(&running, 1) + 1;
}

void strata_stages_run_end(void)
{
    atomic_fetch_sub(&running, 1);
}

static const char *const names[STRATA_ST_N] = {
    "", "start>body", "body>run", "run>answer", "answer>queued", "queued>done",
};

void strata_stages_add(const uint64_t t[STRATA_ST_N], unsigned run_n)
{
    for (int i = 1; i < STRATA_ST_N; i++)
        if (!t[i] || t[i] < t[i - 1])
            return; /* a stage skipped (an early answer): not this table's */
    pthread_mutex_lock(&mu);
    for (int i = 1; i < STRATA_ST_N; i++) {
        uint64_t d = t[i] - t[i - 1];
        sum[i] += d;
        max[i] = d > max[i] ? d : max[i];
    }
    run_sum += run_n;
    if (++n < every) {
        pthread_mutex_unlock(&mu);
        return;
    }
    double ms[STRATA_ST_N], mx[STRATA_ST_N];
    for (int i = 1; i < STRATA_ST_N; i++) {
        ms[i] = (double)sum[i] / (double)n / 1e6;
        mx[i] = (double)max[i] / 1e6;
        sum[i] = max[i] = 0;
    }
    double run_mean = (double)run_sum / (double)n;
    uint64_t cnt = n;
    run_sum = n = 0;
    pthread_mutex_unlock(&mu);
    strata_srv_log(STRATA_LOG_NOTICE,
                   "stages over %llu requests, mean (max) ms: %s %.2f (%.1f), %s %.2f (%.1f), "
                   "%s %.2f (%.1f), %s %.2f (%.1f), %s %.2f (%.1f); handlers running at start "
                   "%.1f",
                   (unsigned long long)cnt, names[1], ms[1], mx[1], names[2], ms[2], mx[2],
                   names[3], ms[3], mx[3], names[4], ms[4], mx[4], names[5], ms[5], mx[5],
                   run_mean);
}
