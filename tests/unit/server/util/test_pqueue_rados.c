/*
 * test_pqueue_rados.c - a queue of server/util/pqueue.c kept in a RADOS
 * cluster (pqueue_cluster.c) on a real Ceph cluster: its pending figure is
 * exact once a message is done, also when the removal ran while the lease
 * thread was counting the queue (a count that saw the message, taken after
 * its removal, left the figure one too high until the next count).
 *
 * The cluster: meta/rados_test_env.h (skipped, 77, without one);
 * tests/integration/test_rados_store.py runs it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "meta/rados_test_env.h"
#include "pqueue.h"
#include "pqueue_cluster.h"

static struct strata_rados_opts opts;

/* The test's view, shared by its thread, the queue's delivery thread
 * (send) and its lease thread (count_hook). */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct strata_pqueue *q;
    unsigned sends;
    bool release; /* send may answer DONE */
    int phase;    /* 1: the next count lets the send finish; 2: the one after reads pending */
    uint64_t pending_seen;
} t = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void deadline_in(struct timespec *ts, int s)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += s;
}

static enum strata_pqueue_sent send_held(void *ud, const char *msg, size_t len)
{
    (void)ud;
    (void)msg;
    (void)len;
    pthread_mutex_lock(&t.mu);
    t.sends++;
    pthread_cond_broadcast(&t.cv);
    while (!t.release)
        pthread_cond_wait(&t.cv, &t.mu);
    pthread_mutex_unlock(&t.mu);
    return STRATA_PQUEUE_DONE;
}

static uint64_t delivered(void)
{
    struct strata_pqueue_stats st;
    strata_pqueue_stats_get(t.q, &st);
    return st.delivered;
}

/* After a count of the cluster, before it is taken: in phase 1 the held
 * message is let go and its removal may finish meanwhile (waited for up
 * to 3 s: a queue that makes removals wait for its count never finishes
 * it here); in phase 2, once the message is done, the figure is read. */
static void count_hook(void *ud)
{
    (void)ud;
    pthread_mutex_lock(&t.mu);
    if (t.phase == 1) {
        t.release = true;
        pthread_cond_broadcast(&t.cv);
        struct timespec until;
        deadline_in(&until, 3);
        pthread_mutex_unlock(&t.mu);
        while (delivered() == 0) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            if (now.tv_sec > until.tv_sec ||
                (now.tv_sec == until.tv_sec && now.tv_nsec >= until.tv_nsec))
                break;
            usleep(10000);
        }
        pthread_mutex_lock(&t.mu);
        t.phase = 2;
    } else if (t.phase == 2 && delivered() == 1) {
        struct strata_pqueue_stats st;
        strata_pqueue_stats_get(t.q, &st);
        t.pending_seen = st.pending;
        t.phase = 3;
        pthread_cond_broadcast(&t.cv);
    }
    pthread_mutex_unlock(&t.mu);
}

static void test_pending_exact_when_done(void **state)
{
    (void)state;
    struct strata_meta *m = NULL;
    struct strata_errinfo ei;
    memset(&ei, 0, sizeof(ei));
    int rc = strata_meta_open_rados(&opts, NULL, &m, &ei);
    if (rc)
        print_message("cannot open the RADOS store: %s\n", ei.msg);
    assert_int_equal(rc, 0);
    char name[64];
    snprintf(name, sizeof(name), "pq%08x%04x", (unsigned)time(NULL), (unsigned)getpid() & 0xffff);
    struct strata_pqueue_opts o = {.name = name, .max = 100, .threads = 1, .send = send_held,
                                   .cluster = m, .space = "test"};
    strata_pqueue__cluster_test_count_hook(count_hook, NULL);
    char err[256] = "";
    struct strata_pqueue *q = NULL;
    assert_int_equal(strata_pqueue_create(NULL, 0, &o, &q, err, sizeof(err)), 0);
    pthread_mutex_lock(&t.mu);
    t.q = q;
    pthread_mutex_unlock(&t.mu);
    assert_int_equal(strata_pqueue_push(q, "one", 3), 0);
    struct strata_pqueue_stats st;
    strata_pqueue_stats_get(q, &st);
    assert_int_equal(st.pending, 1);

    /* The message taken (the lease held), then let go during a count. */
    struct timespec until;
    deadline_in(&until, 30);
    pthread_mutex_lock(&t.mu);
    while (t.sends == 0 && pthread_cond_timedwait(&t.cv, &t.mu, &until) == 0)
        ;
    assert_int_equal(t.sends, 1);
    t.phase = 1;
    deadline_in(&until, 30);
    while (t.phase != 3 && pthread_cond_timedwait(&t.cv, &t.mu, &until) == 0)
        ;
    assert_int_equal(t.phase, 3);
    uint64_t seen = t.pending_seen;
    pthread_mutex_unlock(&t.mu);
    assert_int_equal(delivered(), 1);
    assert_int_equal(seen, 0); /* not one too high until a count */
    strata_pqueue_stats_get(q, &st);
    assert_int_equal(st.pending, 0);
    assert_int_equal(st.queued, 1);

    strata_pqueue_destroy(q);
    strata_pqueue__cluster_test_count_hook(NULL, NULL);
    char qn[96];
    snprintf(qn, sizeof(qn), "test.%s", name);
    uint64_t n = 9;
    assert_int_equal(strata_meta_queue_count(m, qn, 100, &n), 0);
    assert_int_equal(n, 0); /* removed from the cluster */
    strata_meta_close(m);
}

int main(void)
{
    if (!rados_test_env(&opts, "test_pqueue_rados"))
        return 77;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pending_exact_when_done),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
