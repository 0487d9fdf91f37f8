/*
 * test_orphan.c - orphan reclaim of data/ shard files (meta/orphan.c) on
 * four real drive directories.  File ages are faked with utimensat, so no
 * test waits for a grace period.  Safety first: young files, the data of
 * live versions, of an upload in progress, of a completed multipart
 * object, and of a deleted version a reader is still streaming are never
 * removed; an old unreferenced shard set goes only on the second round
 * that finds it so; nothing goes when too many drives are offline to see
 * every record.
 */
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>

#include "meta_internal.h"
#include "meta_test_util.h"
#include "strata/hex.h"

#define BIG (300 * 1024) /* above the inline limit: shard files */
#define AGE 3600

static int age_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag == FTW_F) {
        struct timespec ts[2] = {{time(NULL) - 2 * AGE, 0}, {time(NULL) - 2 * AGE, 0}};
        utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW);
    }
    return 0;
}

/* Every file under every drive's data/ looks two grace periods old. */
static void age_all(struct mt_env *e)
{
    for (int i = 0; i < MT_DRIVES; i++) {
        char p[700];
        snprintf(p, sizeof(p), "%s/data", e->drive[i]);
        nftw(p, age_cb, 16, FTW_PHYS);
    }
}

/* A shard file for a data id no record has, on every drive. */
static void plant(struct mt_env *e, uint8_t id[STRATA_DATA_ID_LEN])
{
    strata_data_id_new(id);
    char hex[2 * STRATA_DATA_ID_LEN + 1];
    strata_hex_encode(id, STRATA_DATA_ID_LEN, hex);
    for (int i = 0; i < MT_DRIVES; i++) {
        char p[800];
        snprintf(p, sizeof(p), "%s/data/%.2s", e->drive[i], hex);
        mkdir(p, 0755);
        snprintf(p, sizeof(p), "%s/data/%.2s/%s", e->drive[i], hex, hex);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs("orphan", f);
        fclose(f);
    }
}

static bool planted(struct mt_env *e, const uint8_t id[STRATA_DATA_ID_LEN])
{
    char hex[2 * STRATA_DATA_ID_LEN + 1];
    strata_hex_encode(id, STRATA_DATA_ID_LEN, hex);
    int n = 0;
    for (int i = 0; i < MT_DRIVES; i++) {
        char p[800];
        snprintf(p, sizeof(p), "%s/data/%.2s/%s", e->drive[i], hex, hex);
        n += access(p, F_OK) == 0;
    }
    return n > 0;
}

static void put_big(struct mt_env *e, const char *b, const char *k, uint32_t seed)
{
    uint8_t *d = malloc(BIG);
    mt_fill(d, BIG, seed);
    assert_int_equal(mt_put(e, b, k, d, BIG, NULL), 0);
    free(d);
}

static void check_big(struct mt_env *e, const char *b, const char *k, uint32_t seed)
{
    uint8_t *exp = malloc(BIG), *got = NULL;
    size_t gl = 0;
    mt_fill(exp, BIG, seed);
    assert_int_equal(mt_get(e, b, k, NULL, &got, &gl), 0);
    assert_int_equal(gl, BIG);
    assert_memory_equal(got, exp, BIG);
    free(got);
    free(exp);
}

static void test_reclaims_only_old_unreferenced_twice(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("orph-basic");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "o", STRATA_VERSIONING_OFF), 0);
    put_big(e, "o", "live", 1);
    int live_files = mt_data_files(e);
    assert_true(live_files >= MT_DRIVES);
    uint8_t old_id[STRATA_DATA_ID_LEN], young_id[STRATA_DATA_ID_LEN];
    plant(e, old_id);
    age_all(e);
    plant(e, young_id); /* written now: within the grace period */
    struct strata_orphans *st = NULL;
    uint64_t removed = 99;
    assert_int_equal(strata_meta_orphan_round(e->m, &st, AGE, &removed), 0);
    assert_int_equal(removed, 0); /* first sighting only */
    assert_true(planted(e, old_id));
    assert_int_equal(strata_meta_orphan_round(e->m, &st, AGE, &removed), 0);
    assert_int_equal(removed, 1);
    assert_false(planted(e, old_id));
    assert_true(planted(e, young_id));
    assert_int_equal(mt_data_files(e), live_files + MT_DRIVES); /* the young orphan */
    check_big(e, "o", "live", 1);
    /* More rounds change nothing. */
    assert_int_equal(strata_meta_orphan_round(e->m, &st, AGE, &removed), 0);
    assert_int_equal(removed, 0);
    check_big(e, "o", "live", 1);
    strata_meta_orphans_free(st);
    mt_teardown(e);
}

static void test_uploads_and_multipart_kept(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("orph-mpu");
    assert_non_null(e);
    assert_int_equal(mt_reopen_part_min(e, 1), 0);
    assert_int_equal(mt_bucket(e, "m", STRATA_VERSIONING_OFF), 0);
    /* An upload in progress with one part. */
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = "m";
    mo.key = "pending";
    char uid[STRATA_UPLOAD_ID_MAX + 1];
    assert_int_equal(strata_mpu_create(e->m, &mo, uid), 0);
    uint8_t *d = malloc(BIG);
    mt_fill(d, BIG, 5);
    struct strata_part_opts po;
    memset(&po, 0, sizeof(po));
    po.bucket = "m";
    po.key = "pending";
    po.upload_id = uid;
    po.part_number = 1;
    po.size = BIG;
    struct strata_put *pp;
    assert_int_equal(strata_mpu_part_begin(e->m, &po, &pp), 0);
    assert_int_equal(strata_obj_put_write(pp, d, BIG), 0);
    struct strata_obj_info part;
    assert_int_equal(strata_obj_put_commit(pp, &part), 0);
    strata_obj_info_fini(&part);
    /* A completed multipart object. */
    mo.key = "done";
    assert_int_equal(mt_mpu_single(e->m, &mo, d, BIG, NULL), 0);
    free(d);
    int files = mt_data_files(e);
    age_all(e);
    struct strata_orphans *st = NULL;
    uint64_t removed = 0;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(strata_meta_orphan_round(e->m, &st, AGE, &removed), 0);
        assert_int_equal(removed, 0);
    }
    assert_int_equal(mt_data_files(e), files);
    uint8_t *got = NULL;
    size_t gl = 0;
    assert_int_equal(mt_get(e, "m", "done", NULL, &got, &gl), 0);
    assert_int_equal(gl, BIG);
    free(got);
    strata_meta_orphans_free(st);
    mt_teardown(e);
}

static void test_pinned_reader_kept(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("orph-pin");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "p", STRATA_VERSIONING_OFF), 0);
    put_big(e, "p", "k", 9);
    struct strata_obj_info info;
    struct strata_get *g;
    assert_int_equal(strata_obj_get_open(e->m, "p", "k", NULL, &info, &g), 0);
    /* Deleted while a reader streams it: the drop is parked on the pin. */
    assert_int_equal(strata_obj_delete(e->m, "p", "k", NULL, NULL), 0);
    age_all(e);
    struct strata_orphans *st = NULL;
    uint64_t removed = 0;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(strata_meta_orphan_round(e->m, &st, AGE, &removed), 0);
        assert_int_equal(removed, 0);
    }
    uint8_t *exp = malloc(BIG), *got = malloc(BIG);
    mt_fill(exp, BIG, 9);
    assert_int_equal(strata_obj_get_read(g, 0, got, BIG), 0);
    assert_memory_equal(got, exp, BIG);
    free(exp);
    free(got);
    strata_obj_get_close(g);
    strata_obj_info_fini(&info);
    assert_int_equal(mt_data_files(e), 0); /* the last reader ran the drop */
    strata_meta_orphans_free(st);
    mt_teardown(e);
}

static void test_offline_drives_skip(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("orph-off");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "o", STRATA_VERSIONING_OFF), 0);
    uint8_t id[STRATA_DATA_ID_LEN];
    plant(e, id);
    age_all(e);
    /* 2+2, write quorum 3: with three stores away a record may sit on them alone. */
    rocksdb_t *db[3];
    for (int i = 0; i < 3; i++) {
        db[i] = e->m->sets[0].drives[i].db;
        e->m->sets[0].drives[i].db = NULL;
    }
    struct strata_orphans *st = NULL;
    uint64_t removed = 0;
    for (int i = 0; i < 2; i++)
        assert_int_equal(strata_meta_orphan_round(e->m, &st, AGE, &removed), STRATA_EQUORUM);
    for (int i = 0; i < 3; i++)
        e->m->sets[0].drives[i].db = db[i];
    assert_true(planted(e, id));
    strata_meta_orphans_free(st);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reclaims_only_old_unreferenced_twice),
        cmocka_unit_test(test_uploads_and_multipart_kept),
        cmocka_unit_test(test_pinned_reader_kept),
        cmocka_unit_test(test_offline_drives_skip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
