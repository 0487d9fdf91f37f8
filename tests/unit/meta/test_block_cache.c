/*
 * test_block_cache.c - maintenance walks leave the block cache alone.  The
 * scanner's pass, the full heal and the other background walks read every
 * record of every drive; were their blocks cached, they would evict the
 * blocks foreground GETs of inline objects read (the dataloader's p99 rose
 * ~1.7x while the start-up pass walked a million versions).  A listing a
 * client asks for still fills the cache, which is what shows that the
 * measure here can see a walk's blocks at all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "meta_test_util.h"

#define NOBJ     200
#define OBJ_SIZE (64u << 10) /* inline: two 32 KiB data shards per record */

static int count_cb(const struct strata_list_entry *le, void *ud)
{
    (void)le;
    (*(unsigned *)ud)++;
    return 0;
}

/* Every version of bucket "b", paged as the scanner pages; returns how many. */
static unsigned walk(struct mt_env *e, bool maintenance)
{
    unsigned n = 0;
    char after[STRATA_KEY_MAX + 1] = "";
    struct strata_list_result res;
    do {
        struct strata_list_opts lo = {.bucket = "b",
                                      .max_keys = 100,
                                      .versions = true,
                                      .maintenance = maintenance,
                                      .start_after = after[0] ? after : NULL};
        memset(&res, 0, sizeof(res));
        assert_int_equal(strata_obj_list(e->m, &lo, count_cb, &n, &res), 0);
        snprintf(after, sizeof(after), "%s", res.next_key);
    } while (res.truncated);
    return n;
}

static void test_maintenance_walks_skip_block_cache(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("block-cache");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    uint8_t *data = malloc(OBJ_SIZE);
    for (unsigned i = 0; i < NOBJ; i++) {
        char key[32];
        snprintf(key, sizeof(key), "k%04u", i);
        mt_fill(data, OBJ_SIZE, i);
        assert_int_equal(mt_put(e, "b", key, data, OBJ_SIZE, NULL), 0);
    }
    /* Reopen: recovery flushes the records into table files, read through
     * the (new, empty) block cache from here on. */
    mt_close(e);
    assert_int_equal(mt_open(e), 0);
    uint64_t u0 = strata_meta_block_cache_bytes(e->m);

    assert_int_equal(walk(e, true), NOBJ);
    struct strata_heal_stats hs;
    memset(&hs, 0, sizeof(hs));
    assert_int_equal(strata_meta_heal_all(e->m, &hs), 0);
    uint64_t u1 = strata_meta_block_cache_bytes(e->m);
    /* Both walks read every record (~6.4 MiB of shards per drive); at most
     * a few table metadata blocks may be cached. */
    assert_true(u1 - u0 < (512u << 10));

    /* A client's listing of the same records fills the cache: the drives it
     * reads hold 32 KiB of shard per record. */
    assert_int_equal(walk(e, false), NOBJ);
    uint64_t u2 = strata_meta_block_cache_bytes(e->m);
    assert_true(u2 - u1 > (uint64_t)NOBJ * (32u << 10));

    /* The bytes are intact after both kinds of walk. */
    uint8_t *got;
    size_t len;
    assert_int_equal(mt_get(e, "b", "k0007", NULL, &got, &len), 0);
    mt_fill(data, OBJ_SIZE, 7);
    assert_int_equal(len, OBJ_SIZE);
    assert_memory_equal(got, data, OBJ_SIZE);
    free(got);
    free(data);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maintenance_walks_skip_block_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
