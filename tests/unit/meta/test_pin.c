/*
 * test_pin.c - reader pins (meta/pin.c): a get handle opened before an
 * overwrite or delete commits keeps reading the old version's bytes, of a
 * single-part object and of a multipart one whose parts span two part-table
 * chunks; the replaced data stays on the drives until the last reader
 * closes and goes then; a second reader of the same version keeps it past
 * the first one's close; a shard file that vanished reads as
 * STRATA_ENOTFOUND, never STRATA_ECORRUPT; four reader threads against a
 * writer overwriting the key 12 times see only whole versions, and no data
 * is left behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>

#include "meta_internal.h"
#include "meta_test_util.h"

#define PMIN (64u * 1024) /* part_size_min for these tests */
#define BIG (3u * 1024 * 1024 + 12345) /* several stripes, not inline */

static struct mt_env *setup(const char *name)
{
    struct mt_env *e = mt_setup(name);
    assert_non_null(e);
    assert_int_equal(mt_reopen_part_min(e, PMIN), 0);
    assert_int_equal(mt_bucket(e, "b", STRATA_VERSIONING_OFF), 0);
    return e;
}

static void read_all(struct strata_get *g, const uint8_t *want, size_t len)
{
    uint8_t *got = malloc(len);
    assert_non_null(got);
    /* Sequential reads in uneven steps, as a GET streams. */
    for (size_t off = 0; off < len;) {
        size_t n = len - off < 700000 ? len - off : 700000;
        assert_int_equal(strata_obj_get_read(g, off, got + off, n), 0);
        off += n;
    }
    assert_memory_equal(got, want, len);
    free(got);
}

static void test_single_part(void **state)
{
    (void)state;
    struct mt_env *e = setup("pin1");
    uint8_t *v1 = malloc(BIG), *v2 = malloc(BIG);
    mt_fill(v1, BIG, 1);
    mt_fill(v2, BIG, 2);
    assert_int_equal(mt_put(e, "b", "k", v1, BIG, NULL), 0);
    int one = mt_data_files(e);
    assert_int_equal(one, MT_DRIVES);

    /* Two readers open before the overwrite; nothing read yet, so no
     * shard file is open. */
    struct strata_obj_info info;
    struct strata_get *g1, *g2;
    assert_int_equal(strata_obj_get_open(e->m, "b", "k", NULL, &info, &g1), 0);
    strata_obj_info_fini(&info);
    assert_int_equal(strata_obj_get_open(e->m, "b", "k", NULL, &info, &g2), 0);
    strata_obj_info_fini(&info);
    assert_int_equal(mt_put(e, "b", "k", v2, BIG, NULL), 0);
    assert_int_equal(mt_data_files(e), 2 * one); /* old data deferred */
    read_all(g1, v1, BIG);
    strata_obj_get_close(g1);
    assert_int_equal(mt_data_files(e), 2 * one); /* g2 still reads it */
    read_all(g2, v1, BIG);
    strata_obj_get_close(g2);
    assert_int_equal(mt_data_files(e), one); /* the last close dropped it */

    /* A reader of v2, then the object is deleted: the reader finishes. */
    assert_int_equal(strata_obj_get_open(e->m, "b", "k", NULL, &info, &g1), 0);
    strata_obj_info_fini(&info);
    assert_int_equal(strata_obj_delete(e->m, "b", "k", NULL, NULL), 0);
    uint8_t *d;
    size_t dl;
    assert_int_equal(mt_get(e, "b", "k", NULL, &d, &dl), STRATA_ENOTFOUND);
    read_all(g1, v2, BIG);
    assert_int_equal(mt_data_files(e), one);
    strata_obj_get_close(g1);
    assert_int_equal(mt_data_files(e), 0);

    /* Without readers the drop is immediate, as before. */
    assert_int_equal(mt_put(e, "b", "k", v1, BIG, NULL), 0);
    assert_int_equal(mt_put(e, "b", "k", v2, BIG, NULL), 0);
    assert_int_equal(mt_data_files(e), one);
    free(v1);
    free(v2);
    mt_teardown(e);
}

static void mpu_put(struct mt_env *e, const char *key, const uint8_t *d, size_t nparts,
                    size_t psize)
{
    struct strata_mpu_opts mo;
    memset(&mo, 0, sizeof(mo));
    mo.bucket = "b";
    mo.key = key;
    char uid[STRATA_UPLOAD_ID_MAX + 1];
    assert_int_equal(strata_mpu_create(e->m, &mo, uid), 0);
    struct strata_mpu_part *parts = calloc(nparts, sizeof(*parts));
    char (*etags)[STRATA_ETAG_MAX + 1] = calloc(nparts, sizeof(*etags));
    for (size_t i = 0; i < nparts; i++) {
        struct strata_part_opts o;
        memset(&o, 0, sizeof(o));
        o.bucket = "b";
        o.key = key;
        o.upload_id = uid;
        o.part_number = (unsigned)i + 1;
        o.size = psize;
        struct strata_put *p;
        assert_int_equal(strata_mpu_part_begin(e->m, &o, &p), 0);
        assert_int_equal(strata_obj_put_write(p, d + i * psize, psize), 0);
        struct strata_obj_info info;
        assert_int_equal(strata_obj_put_commit(p, &info), 0);
        snprintf(etags[i], sizeof(etags[i]), "%s", info.etag);
        strata_obj_info_fini(&info);
        parts[i].part_number = (unsigned)i + 1;
        parts[i].etag = etags[i];
    }
    struct strata_mpu_complete_opts co;
    memset(&co, 0, sizeof(co));
    co.bucket = "b";
    co.key = key;
    co.upload_id = uid;
    co.parts = parts;
    co.nparts = nparts;
    assert_int_equal(strata_mpu_complete(e->m, &co, NULL), 0);
    free(parts);
    free(etags);
}

static void test_multipart(void **state)
{
    (void)state;
    struct mt_env *e = setup("pin2");
    /* 130 parts: two part-table chunks, the second loaded only when the
     * read reaches it, after the overwrite. */
    const size_t np = MP_CHUNK_PARTS + 2, ps = PMIN, len = np * ps;
    uint8_t *v1 = malloc(len), *v2 = malloc(BIG);
    mt_fill(v1, len, 3);
    mt_fill(v2, BIG, 4);
    mpu_put(e, "m", v1, np, ps);
    int files = mt_data_files(e);
    assert_int_equal(files, (int)np * MT_DRIVES);

    struct strata_obj_info info;
    struct strata_get *g;
    assert_int_equal(strata_obj_get_open(e->m, "b", "m", NULL, &info, &g), 0);
    assert_int_equal(info.nparts, np);
    strata_obj_info_fini(&info);
    uint8_t head[4096];
    assert_int_equal(strata_obj_get_read(g, 0, head, sizeof(head)), 0);
    assert_memory_equal(head, v1, sizeof(head));
    /* Overwrite, then delete: both commits leave the old parts alone. */
    assert_int_equal(mt_put(e, "b", "m", v2, BIG, NULL), 0);
    assert_int_equal(strata_obj_delete(e->m, "b", "m", NULL, NULL), 0);
    assert_int_equal(mt_data_files(e), files);
    struct strata_part_info pi;
    assert_int_equal(strata_obj_get_part(g, (unsigned)np, &pi), 0);
    assert_int_equal(pi.offset, (np - 1) * ps);
    read_all(g, v1, len);
    strata_obj_get_close(g);
    /* The parts' data (and then the part table) went with the last close. */
    assert_int_equal(mt_data_files(e), 0);
    free(v1);
    free(v2);
    mt_teardown(e);
}

/* Remove every shard file of every drive (as if the data were deleted
 * behind the reader's back). */
static void wipe_data(struct mt_env *e)
{
    for (int i = 0; i < MT_DRIVES; i++) {
        char p[700];
        snprintf(p, sizeof(p), "%s/data", e->drive[i]);
        DIR *d = opendir(p);
        assert_non_null(d);
        struct dirent *de;
        while ((de = readdir(d))) {
            if (de->d_name[0] == '.')
                continue;
            char sub[1400];
            snprintf(sub, sizeof(sub), "%s/%s", p, de->d_name);
            mt_rm_rf(sub);
        }
        closedir(d);
    }
}

static void test_vanished_is_not_corrupt(void **state)
{
    (void)state;
    struct mt_env *e = setup("pin3");
    uint8_t *v1 = malloc(BIG);
    mt_fill(v1, BIG, 5);
    assert_int_equal(mt_put(e, "b", "k", v1, BIG, NULL), 0);
    struct strata_obj_info info;
    struct strata_get *g;
    assert_int_equal(strata_obj_get_open(e->m, "b", "k", NULL, &info, &g), 0);
    strata_obj_info_fini(&info);
    wipe_data(e);
    uint8_t buf[4096];
    assert_int_equal(strata_obj_get_read(g, 0, buf, sizeof(buf)), STRATA_ENOTFOUND);
    strata_obj_get_close(g);
    free(v1);
    mt_teardown(e);
}

#define NVER 12
#define VLEN ((1u << 20) + 4096) /* two stripes */

struct race {
    struct mt_env *e;
    uint8_t *ver[NVER];
    int done;
    int reads, bad;
};

static void *race_reader(void *arg)
{
    struct race *r = arg;
    uint8_t *buf = malloc(VLEN);
    while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
        struct strata_obj_info info;
        struct strata_get *g;
        int rc = strata_obj_get_open(r->e->m, "b", "k", NULL, &info, &g);
        strata_obj_info_fini(&info);
        if (rc == STRATA_ENOTFOUND)
            continue;
        if (rc) {
            __atomic_add_fetch(&r->bad, 1, __ATOMIC_RELAXED);
            continue;
        }
        /* Pause between open and the first read (when the shard files are
         * opened), so commits land in between. */
        usleep(2000);
        rc = strata_obj_get_read(g, 0, buf, 4096);
        if (rc == 0)
            rc = strata_obj_get_read(g, 4096, buf + 4096, VLEN - 4096);
        strata_obj_get_close(g);
        bool match = false;
        for (int v = 0; rc == 0 && v < NVER && !match; v++)
            match = memcmp(buf, r->ver[v], VLEN) == 0;
        if (!match)
            __atomic_add_fetch(&r->bad, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&r->reads, 1, __ATOMIC_RELAXED);
    }
    free(buf);
    return NULL;
}

static void test_readers_race_writer(void **state)
{
    (void)state;
    struct race r;
    memset(&r, 0, sizeof(r));
    r.e = setup("pin4");
    for (int v = 0; v < NVER; v++) {
        r.ver[v] = malloc(VLEN);
        mt_fill(r.ver[v], VLEN, 100 + (uint32_t)v);
    }
    assert_int_equal(mt_put(r.e, "b", "k", r.ver[0], VLEN, NULL), 0);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, race_reader, &r), 0);
    for (int v = 1; v < NVER; v++)
        assert_int_equal(mt_put(r.e, "b", "k", r.ver[v], VLEN, NULL), 0);
    assert_int_equal(strata_obj_delete(r.e->m, "b", "k", NULL, NULL), 0);
    __atomic_store_n(&r.done, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(r.bad, 0);
    assert_true(r.reads > 0);
    assert_int_equal(mt_data_files(r.e), 0); /* every parked drop ran */
    for (int v = 0; v < NVER; v++)
        free(r.ver[v]);
    mt_teardown(r.e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_part),
        cmocka_unit_test(test_multipart),
        cmocka_unit_test(test_vanished_is_not_corrupt),
        cmocka_unit_test(test_readers_race_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
