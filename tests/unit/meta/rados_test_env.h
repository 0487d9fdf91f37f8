/*
 * rados_test_env.h - the cluster the RADOS cmocka tests run against:
 * STRATA_TEST_RADOS_CONF (a ceph.conf of a cluster prepared with `strata
 * rados init`), STRATA_TEST_RADOS_ID and _PREFIX (NULL: admin, strata).
 * tests/integration/test_rados_store.py starts a cluster and sets them.
 * Header-only, after cmocka.h.
 */
#ifndef STRATA_TESTS_RADOS_TEST_ENV_H
#define STRATA_TESTS_RADOS_TEST_ENV_H

#include <stdlib.h>

#include "strata/meta.h"

static void rados_test_skip_cb(void **state)
{
    (void)state;
    skip();
}

/* Fill o from the environment: true when a cluster is given; else say why
 * name is skipped and run one skipped test (the caller returns 77). */
static bool rados_test_env(struct strata_rados_opts *o, const char *name)
{
    o->conf = getenv("STRATA_TEST_RADOS_CONF");
    o->id = getenv("STRATA_TEST_RADOS_ID");
    o->prefix = getenv("STRATA_TEST_RADOS_PREFIX");
    if (o->conf && *o->conf)
        return true;
    print_message("%s: skipped: STRATA_TEST_RADOS_CONF is not set (a Ceph cluster prepared "
                  "with `strata rados init`; tests/integration/test_rados_store.py sets it)\n",
                  name);
    const struct CMUnitTest skipped[] = {cmocka_unit_test(rados_test_skip_cb)};
    cmocka_run_group_tests(skipped, NULL, NULL);
    return false;
}

#endif /* STRATA_TESTS_RADOS_TEST_ENV_H */
