/*
 * test_heal.c - drive loss and healing: with M drives deleted every object
 * reads back identical; with more than M gone reads fail (never wrong
 * bytes); a wiped drive is healed by strata_meta_heal_all, after which the
 * other drives' M directories are deleted and everything still reads back
 * from the healed drive.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "meta_test_util.h"

static const size_t sizes[] = {0, 1, 4096, 128 * 1024, 128 * 1024 + 1, 3u << 20};
#define NOBJ (sizeof(sizes) / sizeof(sizes[0]))

static void load(struct mt_env *e, char vids[NOBJ][48])
{
    assert_int_equal(mt_bucket(e, "h", STRATA_VERSIONING_ENABLED), 0);
    assert_int_equal(strata_meta_bucket_config_put(e->m, "h", "tagging", "<T/>", 4), 0);
    uint8_t *d = malloc(3u << 20);
    for (size_t i = 0; i < NOBJ; i++) {
        char key[32];
        snprintf(key, sizeof(key), "o%zu", i);
        /* An older version first, so version records of both kinds heal. */
        assert_int_equal(mt_put(e, "h", key, "old", 3, NULL), 0);
        mt_fill(d, sizes[i], (uint32_t)i + 100);
        struct strata_obj_info out;
        assert_int_equal(mt_put(e, "h", key, d, sizes[i], &out), 0);
        snprintf(vids[i], 48, "%s", out.version_id);
        strata_obj_info_fini(&out);
    }
    assert_int_equal(strata_obj_delete(e->m, "h", "gone", NULL, NULL), 0);
    free(d);
}

static void verify(struct mt_env *e, char vids[NOBJ][48])
{
    uint8_t *exp = malloc(3u << 20);
    for (size_t i = 0; i < NOBJ; i++) {
        char key[32];
        snprintf(key, sizeof(key), "o%zu", i);
        mt_fill(exp, sizes[i], (uint32_t)i + 100);
        uint8_t *got = NULL;
        size_t gl = 0;
        assert_int_equal(mt_get(e, "h", key, NULL, &got, &gl), 0);
        assert_int_equal(gl, sizes[i]);
        if (gl)
            assert_memory_equal(got, exp, gl);
        free(got);
        assert_int_equal(mt_get(e, "h", key, vids[i], &got, &gl), 0);
        assert_int_equal(gl, sizes[i]);
        free(got);
    }
    struct strata_obj_info info;
    assert_int_equal(strata_obj_head(e->m, "h", "gone", NULL, &info), STRATA_ENOTFOUND);
    assert_true(info.delete_marker);
    strata_obj_info_fini(&info);
    void *doc;
    size_t len;
    assert_int_equal(strata_meta_bucket_config_get(e->m, "h", "tagging", &doc, &len), 0);
    assert_int_equal(len, 4);
    free(doc);
    free(exp);
}

static void kill_drive(struct mt_env *e, int i, bool recreate)
{
    mt_rm_rf(e->drive[i]);
    if (recreate)
        mkdir(e->drive[i], 0755);
}

static void test_m_drives_lost(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("lostm");
    assert_non_null(e);
    char vids[NOBJ][48];
    load(e, vids);
    mt_close(e);
    kill_drive(e, 1, false);
    kill_drive(e, 3, false);
    assert_int_equal(mt_open(e), 0);
    verify(e, vids);
    mt_teardown(e);
}

static void test_too_many_lost(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("lostmore");
    assert_non_null(e);
    char vids[NOBJ][48];
    load(e, vids);
    mt_close(e);
    for (int i = 0; i < 3; i++)
        kill_drive(e, i, true);
    if (mt_open(e) != 0) {
        print_message("set refused to open with 3 of 4 drives gone\n");
        mt_teardown(e); /* refusing to open is a fine answer */
        return;
    }
    uint8_t *got = NULL;
    size_t gl = 0;
    for (size_t i = 0; i < NOBJ; i++) {
        char key[32];
        snprintf(key, sizeof(key), "o%zu", i);
        assert_int_not_equal(mt_get(e, "h", key, NULL, &got, &gl), 0);
    }
    struct strata_bucket_info b;
    assert_int_equal(strata_meta_bucket_get(e->m, "h", &b), STRATA_EQUORUM);
    mt_teardown(e);
}

static void test_wipe_heal(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("heal");
    assert_non_null(e);
    char vids[NOBJ][48];
    load(e, vids);
    mt_close(e);
    kill_drive(e, 0, true); /* replaced by an empty directory */
    assert_int_equal(mt_open(e), 0);
    assert_true(strata_set_drive_fresh(e->set, 0));
    verify(e, vids); /* served by the other drives meanwhile */
    struct strata_heal_stats st;
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    /* bucket + config + 2 versions per object + a marker, all on drive 0 */
    assert_true(st.records_healed >= 2 + 2 * NOBJ + 1);
    assert_true(st.shards_healed >= 2); /* the two non-inline objects */
    assert_true(st.objects_scanned >= 2 * NOBJ + 1);
    assert_false(strata_set_drive_fresh(e->set, 0));
    /* A second pass finds nothing to do. */
    assert_int_equal(strata_meta_heal_all(e->m, &st), 0);
    assert_int_equal(st.records_healed, 0);
    assert_int_equal(st.shards_healed, 0);
    mt_close(e);
    /* Now lose M other drives: drive 0 must carry its share. */
    kill_drive(e, 1, false);
    kill_drive(e, 2, false);
    assert_int_equal(mt_open(e), 0);
    verify(e, vids);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_m_drives_lost),
        cmocka_unit_test(test_too_many_lost),
        cmocka_unit_test(test_wipe_heal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
