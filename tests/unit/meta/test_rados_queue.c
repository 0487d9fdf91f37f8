/*
 * test_rados_queue.c - message queues in the cluster (meta/rados/queue.c,
 * strata_meta_queue_*) on a real Ceph cluster, through two connections
 * (two gateways): a queue never pushed to reads empty and counts 0;
 * pushes from both are read by either in key order (each gateway's own in
 * push order), byte-exact with a '\0' after each, paged with `after` and
 * max; count stops at upto; remove takes exactly the keys given (absent
 * ones no error, a queue never created not created); the queue's lease is
 * held by one connection at a time (taking it renews, the other's TAKE
 * EBUSY, RELEASE frees it for the other); bad names, max and a message
 * over the bound are refused with EINVAL; a local store answers
 * ENOTIMPL (test_store_local.c).
 *
 * The cluster: rados_test_env.h (skipped, 77, without one);
 * tests/integration/test_rados_store.py runs it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rados/rados.h"
#include "rados_test_env.h"

static struct strata_rados_opts opts;
static struct strata_meta *g1, *g2;
static char qname[64];

static int group_setup(void **state)
{
    (void)state;
    char msg[512];
    int rc = strata_meta__rados_open(&opts, &g1, msg, sizeof(msg));
    if (rc == 0)
        rc = strata_meta__rados_open(&opts, &g2, msg, sizeof(msg));
    if (rc) {
        print_message("cannot open the RADOS store: %s\n", msg);
        return -1;
    }
    snprintf(qname, sizeof(qname), "test.q%08x%04x", (unsigned)time(NULL),
             (unsigned)getpid() & 0xffff);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    strata_meta__rados_close(g1);
    strata_meta__rados_close(g2);
    return 0;
}

static void push(struct strata_meta *m, const char *s)
{
    assert_int_equal(strata_meta_queue_push(m, qname, s, strlen(s)), 0);
}

static void test_push_read_remove(void **state)
{
    (void)state;
    assert_true(strata_meta_queues_shared(g1));
    struct strata_meta_queue_ent e[STRATA_META_QUEUE_READ_MAX];
    size_t n = 99;
    uint64_t cnt = 99;
    assert_int_equal(strata_meta_queue_read(g1, qname, "", 8, e, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(strata_meta_queue_count(g1, qname, 100, &cnt), 0);
    assert_int_equal(cnt, 0);
    /* Removing from a queue never pushed to does not create it. */
    const char *none[] = {"0000000000000000.x"};
    assert_int_equal(strata_meta_queue_remove(g2, qname, none, 1), 0);
    assert_int_equal(strata_meta_queue_count(g1, qname, 100, &cnt), 0);
    assert_int_equal(cnt, 0);

    push(g1, "a1");
    push(g2, "b1");
    push(g1, "a2");
    const char bin[] = {'z', 0, 'z'}; /* bytes as given, NUL included */
    assert_int_equal(strata_meta_queue_push(g2, qname, bin, sizeof(bin)), 0);
    push(g1, "a3");
    assert_int_equal(strata_meta_queue_count(g2, qname, 100, &cnt), 0);
    assert_int_equal(cnt, 5);
    assert_int_equal(strata_meta_queue_count(g2, qname, 3, &cnt), 0);
    assert_int_equal(cnt, 3);

    /* Key order is push order here (one process: stamps never repeat). */
    assert_int_equal(strata_meta_queue_read(g2, qname, "", 8, e, &n), 0);
    assert_int_equal(n, 5);
    const char *want[] = {"a1", "b1", "a2", NULL, "a3"};
    for (size_t i = 0; i < n; i++) {
        if (want[i]) {
            assert_int_equal(e[i].len, strlen(want[i]));
            assert_string_equal(e[i].msg, want[i]);
        } else {
            assert_int_equal(e[i].len, sizeof(bin));
            assert_memory_equal(e[i].msg, bin, sizeof(bin));
            assert_int_equal(e[i].msg[sizeof(bin)], 0);
        }
        if (i)
            assert_true(strcmp(e[i - 1].key, e[i].key) < 0);
        /* STAMP.GWID: the gateway of the push. */
        assert_int_equal(strlen(e[i].key), 16 + 1 + RADOS_GW_ID_LEN);
        struct meta_rados *by = meta_rados_of(i == 1 || i == 3 ? g2 : g1);
        assert_string_equal(e[i].key + 17, by->gw);
    }
    /* Paging: after the second key, two at most. */
    struct strata_meta_queue_ent p[3];
    size_t pn = 0;
    assert_int_equal(strata_meta_queue_read(g1, qname, e[1].key, 2, p, &pn), 0);
    assert_int_equal(pn, 2);
    assert_string_equal(p[0].key, e[2].key);
    assert_string_equal(p[1].key, e[3].key);
    strata_meta_queue_ents_fini(p, pn);
    assert_null(p[0].msg);

    /* Remove exactly what is given (an absent key is no error). */
    const char *rm[] = {e[0].key, e[2].key, "0000000000000000.absent"};
    assert_int_equal(strata_meta_queue_remove(g2, qname, rm, 3), 0);
    assert_int_equal(strata_meta_queue_read(g1, qname, "", 3, p, &pn), 0);
    assert_int_equal(pn, 3);
    assert_string_equal(p[0].msg, "b1");
    assert_string_equal(p[1].key, e[3].key);
    assert_string_equal(p[2].msg, "a3");
    strata_meta_queue_ents_fini(p, pn);
    const char *rest[] = {e[1].key, e[3].key, e[4].key};
    assert_int_equal(strata_meta_queue_remove(g1, qname, rest, 3), 0);
    assert_int_equal(strata_meta_queue_count(g2, qname, 100, &cnt), 0);
    assert_int_equal(cnt, 0);
    strata_meta_queue_ents_fini(e, n);
}

static void test_lease(void **state)
{
    (void)state;
    assert_int_equal(strata_meta_queue_lease(g1, qname, STRATA_LEASE_TAKE), 0);
    assert_int_equal(strata_meta_queue_lease(g1, qname, STRATA_LEASE_TAKE), 0);
    assert_int_equal(strata_meta_queue_lease(g1, qname, STRATA_LEASE_RENEW), 0);
    assert_int_equal(strata_meta_queue_lease(g2, qname, STRATA_LEASE_TAKE), STRATA_EBUSY);
    assert_int_equal(strata_meta_queue_lease(g2, qname, STRATA_LEASE_RENEW), STRATA_EBUSY);
    assert_int_equal(strata_meta_queue_lease(g1, qname, STRATA_LEASE_RELEASE), 0);
    assert_int_equal(strata_meta_queue_lease(g2, qname, STRATA_LEASE_TAKE), 0);
    assert_int_equal(strata_meta_queue_lease(g1, qname, STRATA_LEASE_TAKE), STRATA_EBUSY);
    assert_int_equal(strata_meta_queue_lease(g2, qname, STRATA_LEASE_RELEASE), 0);
    assert_int_equal(strata_meta_queue_lease(g2, qname, STRATA_LEASE_RELEASE), 0);
    /* The queue's lease is its own: a queue of another name is free. */
    char other[80];
    snprintf(other, sizeof(other), "%s-2", qname);
    assert_int_equal(strata_meta_queue_lease(g1, qname, STRATA_LEASE_TAKE), 0);
    assert_int_equal(strata_meta_queue_lease(g2, other, STRATA_LEASE_TAKE), 0);
    assert_int_equal(strata_meta_queue_lease(g1, qname, STRATA_LEASE_RELEASE), 0);
    assert_int_equal(strata_meta_queue_lease(g2, other, STRATA_LEASE_RELEASE), 0);
}

static void test_refusals(void **state)
{
    (void)state;
    struct strata_meta_queue_ent e[1];
    size_t n;
    char longname[STRATA_META_QUEUE_NAME_MAX + 2];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = 0;
    const char *bad[] = {NULL, "", "a/b", "a b", longname};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(strata_meta_queue_push(g1, bad[i], "x", 1), STRATA_EINVAL);
        assert_int_equal(strata_meta_queue_read(g1, bad[i], "", 1, e, &n), STRATA_EINVAL);
        assert_int_equal(strata_meta_queue_lease(g1, bad[i], STRATA_LEASE_TAKE), STRATA_EINVAL);
    }
    assert_int_equal(strata_meta_queue_read(g1, qname, "", 0, e, &n), STRATA_EINVAL);
    assert_int_equal(strata_meta_queue_read(g1, qname, "", STRATA_META_QUEUE_READ_MAX + 1, e, &n),
                     STRATA_EINVAL);
    assert_int_equal(strata_meta_queue_lease(g1, qname, (enum strata_lease_op)7), STRATA_EINVAL);
    size_t big = STRATA_META_QUEUE_MSG_MAX + 1;
    char *m = calloc(1, big);
    assert_non_null(m);
    assert_int_equal(strata_meta_queue_push(g1, qname, m, big), STRATA_EINVAL);
    free(m);
    uint64_t cnt = 9;
    assert_int_equal(strata_meta_queue_count(g1, qname, 100, &cnt), 0);
    assert_int_equal(cnt, 0);
}

int main(void)
{
    if (!rados_test_env(&opts, "test_rados_queue"))
        return 77;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push_read_remove),
        cmocka_unit_test(test_lease),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
