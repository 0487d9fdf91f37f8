/*
 * test_body_budget.c - the daemon-wide bound on buffered request bodies
 * (server/http/body_budget.h): takes up to max and no further, gives back,
 * full exactly at max, NULL unlimited, and no lost update when threads
 * take and give at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>

#include "body_budget.h"

static void test_take_up_to_max(void **state)
{
    (void)state;
    struct strata_body_budget b = {.max = 100};
    assert_true(strata_body_budget_take(&b, 60));
    assert_false(strata_body_budget_full(&b));
    assert_false(strata_body_budget_take(&b, 41)); /* 101 > 100: nothing taken */
    assert_int_equal(atomic_load(&b.used), 60);
    assert_true(strata_body_budget_take(&b, 40)); /* exactly max */
    assert_true(strata_body_budget_full(&b));
    assert_false(strata_body_budget_take(&b, 1));
    assert_true(strata_body_budget_take(&b, 0)); /* nothing asked, nothing refused */
    strata_body_budget_give(&b, 60);
    assert_int_equal(atomic_load(&b.used), 40);
    assert_false(strata_body_budget_full(&b));
    assert_true(strata_body_budget_take(&b, 60));
}

/* A request larger than the whole budget never fits, even when idle, and
 * a huge n cannot wrap the sum. */
static void test_too_large(void **state)
{
    (void)state;
    struct strata_body_budget b = {.max = 100};
    assert_false(strata_body_budget_take(&b, 101));
    assert_true(strata_body_budget_take(&b, 1));
    assert_false(strata_body_budget_take(&b, SIZE_MAX));
    assert_int_equal(atomic_load(&b.used), 1);
}

static void test_null_is_unlimited(void **state)
{
    (void)state;
    assert_true(strata_body_budget_take(NULL, SIZE_MAX));
    assert_false(strata_body_budget_full(NULL));
    strata_body_budget_give(NULL, 5);
}

#define THREADS 4
#define ROUNDS  20000

static void *churn(void *arg)
{
    struct strata_body_budget *b = arg;
    for (int i = 0; i < ROUNDS; i++) {
        if (strata_body_budget_take(b, 7))
            strata_body_budget_give(b, 7);
    }
    return NULL;
}

/* Concurrent take/give: used never passes max and ends where it began. */
static void test_concurrent(void **state)
{
    (void)state;
    struct strata_body_budget b = {.max = 20};
    assert_true(strata_body_budget_take(&b, 3));
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, churn, &b), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&b.used), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_take_up_to_max),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_null_is_unlimited),
        cmocka_unit_test(test_concurrent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
