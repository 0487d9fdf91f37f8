/*
 * test_epoch_cache.c - the per-bucket cache behind the bucket record,
 * policy and configuration document caches (server/epoch_cache.h): a
 * value is loaded once and then served from the thread's copy, an
 * invalidation or another stamp loads again, errors are not cached, NULL
 * is a value, another thread is served from the shared table, entries
 * expire after a second, and every reference is given back (values and
 * thread copies are counted); strata_eref, the shared value the caches
 * keep, frees its original once, after its last copy.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "epoch_cache.h"

struct val {
    atomic_int refs;
    int id;
    struct val *parent; /* a thread copy's shared value */
};

static atomic_int live; /* values and copies not freed yet */

static void v_hold(void *v)
{
    atomic_fetch_add(&((struct val *)v)->refs, 1);
}

static void v_put(void *p)
{
    struct val *v = p;
    if (atomic_fetch_sub(&v->refs, 1) == 1) {
        if (v->parent)
            v_put(v->parent);
        free(v);
        atomic_fetch_sub(&live, 1);
    }
}

static struct val *v_new(int id, struct val *parent)
{
    struct val *v = malloc(sizeof(*v));
    atomic_init(&v->refs, 1);
    v->id = id;
    v->parent = parent;
    atomic_fetch_add(&live, 1);
    return v;
}

static void *v_local_copy(void *p)
{
    struct val *v = p, *shared = v->parent ? v->parent : v;
    v_hold(shared);
    return v_new(shared->id, shared);
}

static const struct strata_ecache_ops ops = {v_hold, v_put, v_local_copy};

struct loader {
    int loads;
    int next_id; /* 0: load answers NULL */
    int rc;
};

static int load(void *arg, void **out)
{
    struct loader *l = arg;
    l->loads++;
    if (l->rc)
        return l->rc;
    *out = l->next_id ? v_new(l->next_id, NULL) : NULL;
    return 0;
}

/* get's id (0 for NULL), putting the reference back. */
static int get_id(struct strata_ecache *c, const char *name, int64_t stamp, struct loader *l)
{
    void *v = (void *)1;
    int rc = strata_ecache_get(c, name, stamp, load, l, &v);
    assert_int_equal(rc, 0);
    int id = v ? ((struct val *)v)->id : 0;
    if (v)
        v_put(v);
    return id;
}

static void test_load_once_then_copy(void **state)
{
    (void)state;
    static struct strata_ecache c = STRATA_ECACHE_INIT(&ops);
    struct loader l = {0, 7, 0};
    assert_int_equal(get_id(&c, "b1", 5, &l), 7);
    assert_int_equal(get_id(&c, "b1", 5, &l), 7);
    assert_int_equal(get_id(&c, "b1", 5, &l), 7);
    assert_int_equal(l.loads, 1);
    assert_int_equal(atomic_load(&live), 2); /* the table's value and this thread's copy */
    /* A re-created bucket (another stamp) never sees the old value. */
    l.next_id = 8;
    assert_int_equal(get_id(&c, "b1", 6, &l), 8);
    assert_int_equal(l.loads, 2);
    /* Invalidation: the table and this thread's copy are both stale. */
    l.next_id = 9;
    strata_ecache_invalidate(&c, "b1");
    assert_int_equal(get_id(&c, "b1", 6, &l), 9);
    assert_int_equal(l.loads, 3);
    strata_ecache_invalidate(&c, "b1");
}

static void test_errors_not_cached_null_is(void **state)
{
    (void)state;
    static struct strata_ecache c = STRATA_ECACHE_INIT(&ops);
    struct loader l = {0, 0, -5};
    void *v = (void *)1;
    assert_int_equal(strata_ecache_get(&c, "b2", 0, load, &l, &v), -5);
    assert_int_equal(strata_ecache_get(&c, "b2", 0, load, &l, &v), -5);
    assert_int_equal(l.loads, 2);
    l.rc = 0; /* the bucket has no value: NULL is cached */
    assert_int_equal(get_id(&c, "b2", 0, &l), 0);
    assert_int_equal(get_id(&c, "b2", 0, &l), 0);
    assert_int_equal(l.loads, 3);
}

struct thread_arg {
    struct strata_ecache *c;
    struct loader *l;
    int id;
};

static void *other_thread(void *p)
{
    struct thread_arg *a = p;
    a->id = get_id(a->c, "b3", 1, a->l);
    return NULL;
}

static void test_other_thread_and_release(void **state)
{
    (void)state;
    static struct strata_ecache c = STRATA_ECACHE_INIT(&ops);
    struct loader l = {0, 11, 0};
    assert_int_equal(get_id(&c, "b3", 1, &l), 11);
    int mine = atomic_load(&live);
    struct thread_arg a = {&c, &l, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, other_thread, &a), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(a.id, 11);
    assert_int_equal(l.loads, 1);               /* served from the shared table */
    assert_int_equal(atomic_load(&live), mine); /* its copy went with the thread */
    strata_ecache_invalidate(&c, "b3");
}

static void test_expiry(void **state)
{
    (void)state;
    static struct strata_ecache c = STRATA_ECACHE_INIT(&ops);
    struct loader l = {0, 21, 0};
    assert_int_equal(get_id(&c, "b4", 0, &l), 21);
    struct timespec ts = {1, 200000000};
    nanosleep(&ts, NULL);
    l.next_id = 22;
    assert_int_equal(get_id(&c, "b4", 0, &l), 22);
    assert_int_equal(l.loads, 2);
}

/* NULL drops every bucket; strata_ecaches_invalidate reaches every cache
 * used so far (another gateway's change, cache_watch.c). */
static void test_invalidate_all_and_every_cache(void **state)
{
    (void)state;
    static struct strata_ecache c1 = STRATA_ECACHE_INIT(&ops), c2 = STRATA_ECACHE_INIT(&ops);
    struct loader l1 = {0, 1, 0}, l2 = {0, 2, 0};
    assert_int_equal(get_id(&c1, "x1", 0, &l1), 1);
    assert_int_equal(get_id(&c1, "x2", 0, &l1), 1);
    assert_int_equal(get_id(&c2, "x1", 0, &l2), 2);
    assert_int_equal(l1.loads, 2);
    l1.next_id = 3;
    strata_ecache_invalidate(&c1, NULL);
    assert_int_equal(get_id(&c1, "x1", 0, &l1), 3);
    assert_int_equal(get_id(&c1, "x2", 0, &l1), 3);
    assert_int_equal(l1.loads, 4);
    assert_int_equal(get_id(&c2, "x1", 0, &l2), 2); /* the other cache kept its value */
    assert_int_equal(l2.loads, 1);
    /* One bucket from every cache, then everything from every cache. */
    l1.next_id = 4;
    l2.next_id = 5;
    strata_ecaches_invalidate("x1");
    assert_int_equal(get_id(&c1, "x1", 0, &l1), 4);
    assert_int_equal(get_id(&c2, "x1", 0, &l2), 5);
    assert_int_equal(get_id(&c1, "x2", 0, &l1), 3);
    assert_int_equal(l1.loads, 5);
    assert_int_equal(l2.loads, 2);
    l1.next_id = 6;
    l2.next_id = 7;
    strata_ecaches_invalidate(NULL);
    assert_int_equal(get_id(&c1, "x2", 0, &l1), 6);
    assert_int_equal(get_id(&c2, "x1", 0, &l2), 7);
    strata_ecache_invalidate(&c1, NULL);
    strata_ecache_invalidate(&c2, NULL);
}

/* strata_eref: a thread's copy lends its original's contents and keeps
 * it alive; a copy of a copy hangs on the original; the original is
 * released once, by its free_fn, when the last of them goes. */
struct shared_val {
    struct strata_eref e;
    int id;
};

static int shared_freed;

static void shared_free(struct strata_eref *e)
{
    shared_freed++;
    free(e);
}

static void test_eref_copies_keep_original(void **state)
{
    (void)state;
    shared_freed = 0;
    struct shared_val *v = malloc(sizeof(*v));
    assert_non_null(v);
    strata_eref_init(&v->e, sizeof(*v), shared_free);
    v->id = 42;
    struct shared_val *c = strata_eref_ops.local_copy(v);
    assert_non_null(c);
    assert_ptr_not_equal(c, v);
    assert_int_equal(c->id, 42);
    assert_ptr_equal(c->e.parent, &v->e);
    struct shared_val *cc = strata_eref_ops.local_copy(c);
    assert_non_null(cc);
    assert_ptr_equal(cc->e.parent, &v->e);
    strata_eref_ops.hold(v);
    strata_eref_put(&v->e);
    strata_eref_put(&v->e); /* the original's own references are gone */
    assert_int_equal(shared_freed, 0);
    strata_eref_ops.put(c);
    assert_int_equal(shared_freed, 0);
    assert_int_equal(cc->id, 42);
    strata_eref_put(&cc->e);
    assert_int_equal(shared_freed, 1);
    strata_eref_put(NULL); /* a no-op */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_once_then_copy),
        cmocka_unit_test(test_errors_not_cached_null_is),
        cmocka_unit_test(test_other_thread_and_release),
        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_invalidate_all_and_every_cache),
        cmocka_unit_test(test_eref_copies_keep_original),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
