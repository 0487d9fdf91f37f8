/*
 * test_set.c - drive set formatting: new deployment, reopen, refusals
 * (wrong order, foreign deployment, unknown format version, N out of
 * range) with the drive path in the message, and an empty replacement
 * drive taking a dead member's place (marked fresh).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>

#include "ec_test_util.h"
#include "strata/erasure.h"

static void test_set_new_and_reopen(void **state)
{
    (void)state;
    struct ect_drives d;
    ect_drives_init(&d, ect_dir("newreopen"), 6);
    struct strata_set *s = NULL;
    struct strata_errinfo ei;
    assert_int_equal(strata_set_open(d.ptr, 6, NULL, &s, &ei), 0);
    assert_int_equal(strata_set_n(s), 6);
    assert_int_equal(strata_set_m(s), 3);
    assert_int_equal(strata_set_k(s), 3);
    assert_int_equal(strata_set_write_quorum(s), 4); /* K == M */
    assert_int_equal(strata_set_read_quorum(s), 3);
    /* ceil(1 MiB / 3) rounded up to 4096 */
    assert_int_equal(strata_set_shard_size(s), 352256);
    assert_int_equal(strata_set_stripe_size(s), 3 * 352256);
    char dep[64];
    snprintf(dep, sizeof(dep), "%s", strata_set_deployment_id(s));
    assert_int_equal(strlen(dep), 36);
    for (unsigned i = 0; i < 6; i++) {
        assert_true(strata_set_drive_online(s, i));
        assert_false(strata_set_drive_fresh(s, i));
        char p[4200];
        struct stat sb;
        snprintf(p, sizeof(p), "%s/meta", d.path[i]);
        assert_int_equal(stat(p, &sb), 0);
        snprintf(p, sizeof(p), "%s/data", d.path[i]);
        assert_int_equal(stat(p, &sb), 0);
        assert_true(S_ISDIR(sb.st_mode));
        snprintf(p, sizeof(p), "%s/tmp", d.path[i]);
        assert_int_equal(stat(p, &sb), 0);
        snprintf(p, sizeof(p), "%s/format.json", d.path[i]);
        json_t *j = json_load_file(p, 0, NULL);
        assert_non_null(j);
        assert_int_equal(json_integer_value(json_object_get(j, "drive_index")), i);
        assert_string_equal(json_string_value(json_object_get(j, "deployment_id")), dep);
        assert_int_equal(json_array_size(json_object_get(j, "drives")), 6);
        json_decref(j);
    }
    assert_string_equal(strata_set_drive_path(s, 2), d.path[2]);
    strata_set_close(s);

    /* A write a crash interrupted leaves files in tmp/: gone after open. */
    char lp[4200];
    snprintf(lp, sizeof(lp), "%s/tmp/leftover.part", d.path[4]);
    FILE *lf = fopen(lp, "w");
    assert_non_null(lf);
    fputs("half a shard", lf);
    fclose(lf);
    assert_int_equal(strata_set_open(d.ptr, 6, NULL, &s, &ei), 0);
    assert_int_equal(access(lp, F_OK), -1);
    strata_set_close(s);

    /* Reopen: same identity, geometry from format.json (m given = default). */
    struct strata_set_opts o = {.m = 0};
    assert_int_equal(strata_set_open(d.ptr, 6, &o, &s, &ei), 0);
    assert_string_equal(strata_set_deployment_id(s), dep);
    assert_int_equal(strata_set_m(s), 3);
    strata_set_close(s);

    /* A different parity count than formatted is refused. */
    o.m = 2;
    assert_int_equal(strata_set_open(d.ptr, 6, &o, &s, &ei), STRATA_EFORMAT);
}

static void test_set_defaults(void **state)
{
    (void)state;
    struct ect_drives d;
    ect_drives_init(&d, ect_dir("defaults"), 12);
    struct strata_set *s;
    assert_int_equal(strata_set_open(d.ptr, 12, NULL, &s, NULL), 0);
    assert_int_equal(strata_set_m(s), 4); /* N/2 capped at 4 */
    assert_int_equal(strata_set_k(s), 8);
    assert_int_equal(strata_set_write_quorum(s), 8);
    strata_set_close(s);
}

static void test_set_wrong_order(void **state)
{
    (void)state;
    struct ect_drives d;
    ect_drives_init(&d, ect_dir("order"), 4);
    struct strata_set *s;
    struct strata_errinfo ei;
    assert_int_equal(strata_set_open(d.ptr, 4, NULL, &s, &ei), 0);
    strata_set_close(s);
    const char *swapped[4] = {d.ptr[0], d.ptr[1], d.ptr[3], d.ptr[2]};
    assert_int_equal(strata_set_open(swapped, 4, NULL, &s, &ei), STRATA_EFORMAT);
    assert_non_null(strstr(ei.msg, d.path[3]));
    assert_non_null(strstr(ei.msg, "is drive 3 of its set but was given as drive 2"));
    assert_int_equal(ei.drive, 2);
}

static void test_set_foreign_drive(void **state)
{
    (void)state;
    const char *root = ect_dir("foreign");
    struct ect_drives a, b;
    char ra[1100], rb[1100];
    snprintf(ra, sizeof(ra), "%s/a", root);
    snprintf(rb, sizeof(rb), "%s/b", root);
    mkdir(ra, 0755);
    mkdir(rb, 0755);
    ect_drives_init(&a, ra, 4);
    ect_drives_init(&b, rb, 4);
    struct strata_set *s;
    struct strata_errinfo ei;
    assert_int_equal(strata_set_open(a.ptr, 4, NULL, &s, &ei), 0);
    strata_set_close(s);
    assert_int_equal(strata_set_open(b.ptr, 4, NULL, &s, &ei), 0);
    strata_set_close(s);
    /* Drive 1 of deployment b, in position 1 of deployment a. */
    const char *mixed[4] = {a.ptr[0], b.ptr[1], a.ptr[2], a.ptr[3]};
    assert_int_equal(strata_set_open(mixed, 4, NULL, &s, &ei), STRATA_EFORMAT);
    assert_non_null(strstr(ei.msg, b.path[1]));
    assert_non_null(strstr(ei.msg, "deployment"));
    assert_int_equal(ei.drive, 1);
}

static void test_set_unknown_version(void **state)
{
    (void)state;
    struct ect_drives d;
    ect_drives_init(&d, ect_dir("version"), 4);
    struct strata_set *s;
    struct strata_errinfo ei;
    assert_int_equal(strata_set_open(d.ptr, 4, NULL, &s, &ei), 0);
    strata_set_close(s);
    char p[4200];
    snprintf(p, sizeof(p), "%s/format.json", d.path[2]);
    json_t *j = json_load_file(p, 0, NULL);
    assert_non_null(j);
    json_object_set_new(j, "format_version", json_integer(99));
    assert_int_equal(json_dump_file(j, p, 0), 0);
    json_decref(j);
    assert_int_equal(strata_set_open(d.ptr, 4, NULL, &s, &ei), STRATA_EFORMAT);
    assert_non_null(strstr(ei.msg, d.path[2]));
    assert_non_null(strstr(ei.msg, "version 99"));
}

static void test_set_replacement_fresh(void **state)
{
    (void)state;
    struct ect_drives d;
    ect_drives_init(&d, ect_dir("replace"), 4);
    struct strata_set *s;
    struct strata_errinfo ei;
    assert_int_equal(strata_set_open(d.ptr, 4, NULL, &s, &ei), 0);
    char dep[64];
    snprintf(dep, sizeof(dep), "%s", strata_set_deployment_id(s));
    strata_set_close(s);
    ect_rm_rf(d.path[1]); /* the dead drive is replaced by an empty one */
    mkdir(d.path[1], 0755);
    assert_int_equal(strata_set_open(d.ptr, 4, NULL, &s, &ei), 0);
    assert_string_equal(strata_set_deployment_id(s), dep);
    assert_true(strata_set_drive_fresh(s, 1));
    assert_false(strata_set_drive_fresh(s, 0));
    assert_true(strata_set_drive_online(s, 1));
    /* Fresh until healed, across restarts (a marker file on the drive). */
    for (int i = 0; i < 2; i++) {
        strata_set_close(s);
        assert_int_equal(strata_set_open(d.ptr, 4, NULL, &s, &ei), 0);
        assert_true(strata_set_drive_fresh(s, 1));
        assert_false(strata_set_drive_fresh(s, 0));
    }
    assert_int_equal(strata_set_drive_mark_healed(s, 1), 0);
    assert_false(strata_set_drive_fresh(s, 1));
    strata_set_close(s);
    /* Formatted with the set's identity: a plain reopen now, nothing fresh. */
    assert_int_equal(strata_set_open(d.ptr, 4, NULL, &s, &ei), 0);
    assert_false(strata_set_drive_fresh(s, 1));
    strata_set_close(s);

    /* A non-empty unformatted directory is not silently formatted. */
    ect_rm_rf(d.path[3]);
    mkdir(d.path[3], 0755);
    char p[4200];
    snprintf(p, sizeof(p), "%s/precious.txt", d.path[3]);
    FILE *f = fopen(p, "w");
    fputs("x", f);
    fclose(f);
    assert_int_equal(strata_set_open(d.ptr, 4, NULL, &s, &ei), STRATA_EFORMAT);
    assert_non_null(strstr(ei.msg, d.path[3]));
}

static void test_set_offline_and_quorum(void **state)
{
    (void)state;
    const char *root = ect_dir("offline");
    struct ect_drives d;
    ect_drives_init(&d, root, 4);
    struct strata_set *s;
    struct strata_errinfo ei;
    assert_int_equal(strata_set_open(d.ptr, 4, NULL, &s, &ei), 0);
    strata_set_close(s);
    /* A drive path under a regular file cannot be created: offline. */
    char blocker[4200], bad[4300];
    snprintf(blocker, sizeof(blocker), "%s/file", root);
    FILE *f = fopen(blocker, "w");
    fclose(f);
    snprintf(bad, sizeof(bad), "%s/d", blocker);
    const char *p1[4] = {d.ptr[0], d.ptr[1], bad, d.ptr[3]};
    assert_int_equal(strata_set_open(p1, 4, NULL, &s, &ei), 0);
    assert_false(strata_set_drive_online(s, 2));
    assert_true(strata_set_drive_online(s, 3));
    strata_set_close(s);
    const char *p2[4] = {d.ptr[0], bad, bad, bad};
    assert_int_equal(strata_set_open(p2, 4, NULL, &s, &ei), STRATA_EQUORUM);
}

static void test_set_n_range(void **state)
{
    (void)state;
    struct ect_drives d;
    ect_drives_init(&d, ect_dir("range"), 16);
    struct strata_set *s = NULL;
    struct strata_errinfo ei;
    assert_int_equal(strata_set_open(d.ptr, 3, NULL, &s, &ei), STRATA_EINVAL);
    assert_int_equal(strata_set_open(d.ptr, 17, NULL, &s, &ei), STRATA_EINVAL);
    assert_null(s);
    struct strata_set_opts o = {.m = 4};
    assert_int_equal(strata_set_open(d.ptr, 4, &o, &s, &ei), STRATA_EINVAL);
    assert_int_equal(strata_set_open(d.ptr, 16, NULL, &s, &ei), 0);
    assert_int_equal(strata_set_k(s), 12);
    strata_set_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_new_and_reopen),  cmocka_unit_test(test_set_defaults),
        cmocka_unit_test(test_set_wrong_order),     cmocka_unit_test(test_set_foreign_drive),
        cmocka_unit_test(test_set_unknown_version), cmocka_unit_test(test_set_replacement_fresh),
        cmocka_unit_test(test_set_offline_and_quorum), cmocka_unit_test(test_set_n_range),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (rc == 0)
        ect_cleanup();
    return rc;
}
