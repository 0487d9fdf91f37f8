/*
 * test_health.c - drive states: a drive whose writes fail leaves online
 * with the state its errno means, its failed operations are counted by op,
 * writers skip it, the set's probe thread brings it back once writes work
 * again, and heal then refills its shards.  meta/'s store reports hold a
 * drive in their state until a store write succeeds.
 *
 * No root needed: drive 0's tmp/ is replaced by a regular file, so its
 * creates fail with ENOTDIR (an I/O fault of the drive: faulty), and put
 * back to end the fault; a removed tmp/ is made again by the probe.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>

#include "ec_internal.h"
#include "ec_test_util.h"

static uint64_t errs(struct strata_set *s, unsigned d, enum strata_drive_io_op op)
{
    struct strata_drive_io_stats st;
    strata_set_drive_io_get(s, d, op, &st);
    return st.errors;
}

/* One object of len bytes; returns the writer's ok_mask. */
static uint32_t put(struct strata_set *s, const uint8_t id[STRATA_DATA_ID_LEN], const uint8_t *buf,
                    size_t len)
{
    struct strata_ec_writer *w;
    assert_int_equal(strata_ec_writer_create(s, id, &w), 0);
    assert_int_equal(strata_ec_writer_write(w, buf, len), 0);
    uint32_t mask = 0;
    assert_int_equal(strata_ec_writer_finish(w, &mask), 0);
    strata_ec_writer_destroy(w);
    return mask;
}

static bool shard_on(struct strata_set *s, unsigned d, const uint8_t id[STRATA_DATA_ID_LEN])
{
    char *p = NULL, *dir = NULL;
    assert_int_equal(strata_ec__shard_path(s, d, id, &p, &dir), 0);
    bool ok = access(p, F_OK) == 0;
    free(p);
    free(dir);
    return ok;
}

/* Wait up to 3 probe intervals for drive d to reach state st. */
static void wait_state(struct strata_set *s, unsigned d, enum strata_drive_state st)
{
    for (int i = 0; i < 3 * STRATA_DRIVE_PROBE_MS / 50; i++) {
        if (strata_set_drive_state(s, d) == st)
            return;
        usleep(50 * 1000);
    }
    fail_msg("drive %u is %s, not %s", d, strata_drive_state_name(strata_set_drive_state(s, d)),
             strata_drive_state_name(st));
}

static void names(void **state)
{
    (void)state;
    assert_string_equal(strata_drive_state_name(STRATA_DRIVE_ONLINE), "online");
    assert_string_equal(strata_drive_state_name(STRATA_DRIVE_OFFLINE), "offline");
    assert_string_equal(strata_drive_state_name(STRATA_DRIVE_FAULTY), "faulty");
    assert_string_equal(strata_drive_state_name(STRATA_DRIVE_READONLY), "read-only");
    assert_string_equal(strata_drive_state_name(STRATA_DRIVE_FULL), "full");
    assert_string_equal(strata_drive_io_op_name(STRATA_DRIVE_IO_OPEN), "open");
    assert_string_equal(strata_drive_io_op_name(STRATA_DRIVE_IO_PROBE), "probe");
}

static void faulty_drive_skipped_probed_back_and_healed(void **state)
{
    (void)state;
    const char *root = ect_dir("health");
    struct ect_drives dr;
    ect_drives_init(&dr, root, 4);
    struct strata_set *s;
    assert_int_equal(strata_set_open(dr.ptr, 4, NULL, &s, NULL), 0);
    for (unsigned d = 0; d < 4; d++)
        assert_int_equal(strata_set_drive_state(s, d), STRATA_DRIVE_ONLINE);

    char tmp[2100], away[2200];
    snprintf(tmp, sizeof(tmp), "%s/tmp", dr.path[0]);
    snprintf(away, sizeof(away), "%s/tmp.away", dr.path[0]);
    assert_int_equal(rename(tmp, away), 0);
    int fd = open(tmp, O_CREAT | O_WRONLY, 0644);
    assert_true(fd >= 0);
    close(fd);

    size_t len = 3 * strata_set_stripe_size(s) + 1000;
    uint8_t *buf = malloc(len);
    ect_fill(buf, len);
    uint8_t id1[STRATA_DATA_ID_LEN], id2[STRATA_DATA_ID_LEN];
    strata_data_id_new(id1);
    strata_data_id_new(id2);
    uint32_t mask = put(s, id1, buf, len);
    assert_int_equal(mask, 0xe); /* every drive but 0 */
    assert_int_equal(strata_set_drive_state(s, 0), STRATA_DRIVE_FAULTY);
    assert_true(strata_set_drive_online(s, 0)); /* still readable */
    assert_int_equal(errs(s, 0, STRATA_DRIVE_IO_OPEN), 1);
    assert_int_equal(errs(s, 1, STRATA_DRIVE_IO_OPEN), 0);
    assert_false(shard_on(s, 0, id1));

    /* Skipped now: no second failed open. */
    assert_int_equal(put(s, id2, buf, len), 0xe);
    assert_int_equal(errs(s, 0, STRATA_DRIVE_IO_OPEN), 1);
    unsigned healed = 9;
    assert_int_equal(strata_ec_heal(s, id1, len, &healed), 0);
    assert_int_equal(healed, 0); /* heal waits for the probe */

    /* The probe fails while the fault lasts, and says so. */
    for (int i = 0; i < 3 * STRATA_DRIVE_PROBE_MS / 50 && errs(s, 0, STRATA_DRIVE_IO_PROBE) == 0;
         i++)
        usleep(50 * 1000);
    assert_true(errs(s, 0, STRATA_DRIVE_IO_PROBE) >= 1);
    assert_int_equal(strata_set_drive_state(s, 0), STRATA_DRIVE_FAULTY);

    assert_int_equal(unlink(tmp), 0);
    assert_int_equal(rename(away, tmp), 0);
    wait_state(s, 0, STRATA_DRIVE_ONLINE);
    assert_int_equal(strata_ec_heal(s, id1, len, &healed), 0);
    assert_int_equal(healed, 1);
    assert_true(shard_on(s, 0, id1));
    assert_int_equal(put(s, id2, buf, len), 0xf);

    /* Only drive 0 and one other left: the read needs drive 0's shards. */
    uint8_t *got = malloc(len);
    struct strata_ec_reader *r;
    char gone[2100], kept[2200];
    for (unsigned d = 2; d < 4; d++) {
        snprintf(gone, sizeof(gone), "%s/data", dr.path[d]);
        snprintf(kept, sizeof(kept), "%s/data.away", dr.path[d]);
        assert_int_equal(rename(gone, kept), 0);
    }
    assert_int_equal(strata_ec_reader_open(s, id1, len, &r), 0);
    assert_int_equal(strata_ec_reader_read(r, 0, got, len), 0);
    strata_ec_reader_close(r);
    assert_memory_equal(got, buf, len);
    for (unsigned d = 2; d < 4; d++) {
        snprintf(gone, sizeof(gone), "%s/data", dr.path[d]);
        snprintf(kept, sizeof(kept), "%s/data.away", dr.path[d]);
        assert_int_equal(rename(kept, gone), 0);
    }
    free(got);
    free(buf);
    strata_set_close(s);
}

/* tmp/ removed under a running set: faulty, and the probe makes it again. */
static void removed_tmp_made_again(void **state)
{
    (void)state;
    const char *root = ect_dir("health-tmp");
    struct ect_drives dr;
    ect_drives_init(&dr, root, 4);
    struct strata_set *s;
    assert_int_equal(strata_set_open(dr.ptr, 4, NULL, &s, NULL), 0);
    char tmp[2100];
    snprintf(tmp, sizeof(tmp), "%s/tmp", dr.path[1]);
    assert_int_equal(rmdir(tmp), 0);
    uint8_t buf[5000], id[STRATA_DATA_ID_LEN];
    ect_fill(buf, sizeof(buf));
    strata_data_id_new(id);
    assert_int_equal(put(s, id, buf, sizeof(buf)), 0xd);
    assert_int_equal(strata_set_drive_state(s, 1), STRATA_DRIVE_FAULTY);
    wait_state(s, 1, STRATA_DRIVE_ONLINE);
    struct stat st;
    assert_int_equal(stat(tmp, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    unsigned healed = 0;
    assert_int_equal(strata_ec_heal(s, id, sizeof(buf), &healed), 0);
    assert_int_equal(healed, 1);
    strata_set_close(s);
}

static void store_reports_hold_the_state(void **state)
{
    (void)state;
    const char *root = ect_dir("health-store");
    struct ect_drives dr;
    ect_drives_init(&dr, root, 4);
    struct strata_set *s;
    assert_int_equal(strata_set_open(dr.ptr, 4, NULL, &s, NULL), 0);
    strata_set_drive_store_result(s, 2, STRATA_DRIVE_ONLINE);
    assert_int_equal(errs(s, 2, STRATA_DRIVE_IO_STORE), 0);
    strata_set_drive_store_result(s, 2, STRATA_DRIVE_FULL);
    strata_set_drive_store_result(s, 2, STRATA_DRIVE_FULL);
    assert_int_equal(strata_set_drive_state(s, 2), STRATA_DRIVE_FULL);
    assert_int_equal(errs(s, 2, STRATA_DRIVE_IO_STORE), 2);
    /* A full drive is still tried by writers: its space may be back. */
    assert_true(strata_ec__drive_writable(s, 2));
    /* The probe works on the drive, but only a store write ends a store fault. */
    usleep(2 * STRATA_DRIVE_PROBE_MS * 1000);
    assert_int_equal(strata_set_drive_state(s, 2), STRATA_DRIVE_FULL);
    /* Faulty and read-only drives are left out: two of them leave 2+2
     * below its write quorum of 3. */
    strata_set_drive_store_result(s, 2, STRATA_DRIVE_FAULTY);
    strata_set_drive_store_result(s, 3, STRATA_DRIVE_READONLY);
    assert_int_equal(strata_set_drive_state(s, 2), STRATA_DRIVE_FAULTY);
    assert_int_equal(strata_set_drive_state(s, 3), STRATA_DRIVE_READONLY);
    assert_false(strata_ec__drive_writable(s, 2));
    uint8_t id[STRATA_DATA_ID_LEN];
    strata_data_id_new(id);
    struct strata_ec_writer *w;
    assert_int_equal(strata_ec_writer_create(s, id, &w), STRATA_EQUORUM);
    strata_set_drive_store_result(s, 2, STRATA_DRIVE_ONLINE);
    strata_set_drive_store_result(s, 3, STRATA_DRIVE_ONLINE);
    assert_int_equal(strata_set_drive_state(s, 2), STRATA_DRIVE_ONLINE);
    assert_int_equal(errs(s, 2, STRATA_DRIVE_IO_STORE), 3);
    assert_int_equal(strata_ec_writer_create(s, id, &w), 0);
    strata_ec_writer_destroy(w);
    strata_set_close(s);
}

int main(void)
{
    ect_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names),
        cmocka_unit_test(faulty_drive_skipped_probed_back_and_healed),
        cmocka_unit_test(removed_tmp_made_again),
        cmocka_unit_test(store_reports_hold_the_state),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (rc == 0)
        ect_cleanup();
    return rc;
}
