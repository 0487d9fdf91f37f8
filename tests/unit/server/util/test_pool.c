/*
 * test_pool.c - the storage worker pool (server/http/pool.c): every job
 * runs once, in order within a shard; a busy shard's jobs go to a free
 * worker of another (a blocked shard does not hold the others, and
 * pointer hints use every shard); stop runs what is queued and refuses
 * later submits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>
#include <pthread.h>

#include "pool.h"

struct job {
    struct strata_job j; /* first: fn gets this pointer */
    int seq;
};

static atomic_int g_ran;
static int g_order[64];
static atomic_int g_norder;

/* A gate that blocks the job that enters it until opened. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static bool g_open;
static atomic_int g_in_gate;

static void count_fn(struct strata_job *j)
{
    struct job *jb = (struct job *)j;
    int i = atomic_fetch_add(&g_norder, 1);
    if (i < 64)
        g_order[i] = jb->seq;
    atomic_fetch_add(&g_ran, 1);
}

static void gate_fn(struct strata_job *j)
{
    (void)j;
    atomic_fetch_add(&g_in_gate, 1);
    pthread_mutex_lock(&g_mu);
    while (!g_open)
        pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
}

static void gate_set(bool open)
{
    pthread_mutex_lock(&g_mu);
    g_open = open;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
}

/* Until *v reaches want, at most 2 s. */
static int wait_at_least(atomic_int *v, int want)
{
    for (int i = 0; i < 400 && atomic_load(v) < want; i++)
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    return atomic_load(v);
}

static void reset(void)
{
    atomic_store(&g_ran, 0);
    atomic_store(&g_norder, 0);
    atomic_store(&g_in_gate, 0);
    gate_set(false);
}

/* A pool whose shard 0 is held by a job waiting in the gate. */
static struct strata_pool *start_gated(unsigned nshards, unsigned nworkers, struct job *gate)
{
    reset();
    struct strata_pool *p;
    assert_int_equal(strata_pool_start(nshards, nworkers, &p), 0);
    *gate = (struct job){.j.fn = gate_fn};
    assert_int_equal(strata_pool_submit(p, 0, &gate->j), 0);
    assert_int_equal(wait_at_least(&g_in_gate, 1), 1);
    return p;
}

/* n count_fn jobs seq 0..n-1, hint i * step. */
static void submit_counted(struct strata_pool *p, struct job *jobs, int n, uint64_t step)
{
    for (int i = 0; i < n; i++) {
        jobs[i] = (struct job){.j.fn = count_fn, .seq = i};
        assert_int_equal(strata_pool_submit(p, (uint64_t)i * step, &jobs[i].j), 0);
    }
}

static void test_every_job_runs_once(void **state)
{
    (void)state;
    reset();
    struct strata_pool *p;
    assert_int_equal(strata_pool_start(4, 8, &p), 0);
    static struct job jobs[1000];
    submit_counted(p, jobs, 1000, 7919u);
    assert_int_equal(wait_at_least(&g_ran, 1000), 1000);
    strata_pool_stop(p);
    strata_pool_free(p);
    assert_int_equal(atomic_load(&g_ran), 1000);
}

/* One worker: jobs queued behind a blocked one run after it, in order. */
static void test_fifo_within_shard(void **state)
{
    (void)state;
    struct job gate, jobs[20];
    struct strata_pool *p = start_gated(1, 1, &gate);
    submit_counted(p, jobs, 20, 1);
    nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    assert_int_equal(atomic_load(&g_ran), 0); /* all behind the gate */
    gate_set(true);
    assert_int_equal(wait_at_least(&g_ran, 20), 20);
    for (int i = 0; i < 20; i++)
        assert_int_equal(g_order[i], i);
    strata_pool_stop(p);
    strata_pool_free(p);
}

/* Two shards of one worker each, one held in the gate: later jobs with
 * the gate's hint run on the other shard's worker, not behind the gate;
 * with both workers held a job waits, and runs once one is free. */
static void test_busy_shard_spills(void **state)
{
    (void)state;
    struct job gate, gate2, jobs[3];
    struct strata_pool *p = start_gated(2, 2, &gate);
    for (int i = 0; i < 3; i++) {
        jobs[i] = (struct job){.j.fn = count_fn, .seq = i};
        assert_int_equal(strata_pool_submit(p, 0, &jobs[i].j), 0);
        assert_int_equal(wait_at_least(&g_ran, i + 1), i + 1);
    }
    gate2 = (struct job){.j.fn = gate_fn};
    assert_int_equal(strata_pool_submit(p, 0, &gate2.j), 0);
    assert_int_equal(wait_at_least(&g_in_gate, 2), 2);
    struct job behind = {.j.fn = count_fn, .seq = 9};
    assert_int_equal(strata_pool_submit(p, 0, &behind.j), 0);
    nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    assert_int_equal(atomic_load(&g_ran), 3);
    gate_set(true);
    assert_int_equal(wait_at_least(&g_ran, 4), 4);
    assert_int_equal(g_order[3], 9);
    strata_pool_stop(p);
    strata_pool_free(p);
}

/* Hints that differ only above their low 4 bits (the transport passes
 * request pointers, 16-byte aligned) use every shard's workers: 4 jobs
 * held at once in 2 shards of 2 (hint % 2 sent them all to one shard). */
static void test_pointer_hints_use_every_worker(void **state)
{
    (void)state;
    reset();
    struct strata_pool *p;
    assert_int_equal(strata_pool_start(2, 4, &p), 0);
    nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL); /* the workers wait for jobs */
    struct job g[4];
    for (int i = 0; i < 4; i++) {
        g[i] = (struct job){.j.fn = gate_fn};
        assert_int_equal(strata_pool_submit(p, 0x7f3a5c001000ull + 0x40u * (unsigned)i, &g[i].j),
                         0);
    }
    assert_int_equal(wait_at_least(&g_in_gate, 4), 4);
    gate_set(true);
    strata_pool_stop(p);
    strata_pool_free(p);
}

static void *open_later(void *arg)
{
    (void)arg;
    nanosleep(&(struct timespec){0, 30 * 1000 * 1000}, NULL);
    gate_set(true);
    return NULL;
}

/* stop runs what is queued, then refuses: the caller runs its job. */
static void test_stop_drains_then_refuses(void **state)
{
    (void)state;
    struct job gate, jobs[10];
    struct strata_pool *p = start_gated(1, 1, &gate);
    submit_counted(p, jobs, 10, 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, open_later, NULL), 0);
    strata_pool_stop(p); /* returns once the queue ran */
    pthread_join(t, NULL);
    assert_int_equal(atomic_load(&g_ran), 10);
    struct job late = {.j.fn = count_fn, .seq = 99};
    assert_int_equal(strata_pool_submit(p, 0, &late.j), -1);
    nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    assert_int_equal(atomic_load(&g_ran), 10);
    strata_pool_free(p);
    assert_int_equal(strata_pool_submit(NULL, 0, &late.j), -1);
    strata_pool_stop(NULL);
    strata_pool_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_job_runs_once),
        cmocka_unit_test(test_fifo_within_shard),
        cmocka_unit_test(test_busy_shard_spills),
        cmocka_unit_test(test_pointer_hints_use_every_worker),
        cmocka_unit_test(test_stop_drains_then_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
