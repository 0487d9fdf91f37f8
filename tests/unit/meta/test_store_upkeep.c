/*
 * test_store_upkeep.c - heal, the heal queue, orphan reclaim and the store
 * figures as the store's optional operations (store.h, "local-only"): the
 * local backend provides them and the public entry points reach them; a
 * backend that leaves them NULL (RADOS: the cluster keeps its own
 * redundancy) gets STRATA_ENOTIMPL from heal and orphan reclaim, an empty
 * heal queue and zero figures, with every output cleared.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "meta_internal.h"
#include "meta_test_util.h"
#include "store.h"

static void test_local_provides_upkeep(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("upkeep-local");
    assert_non_null(e);
    const struct strata_meta__store_ops *ops = e->m->store;
    assert_non_null(ops->heal_all);
    assert_non_null(ops->heal_queued);
    assert_non_null(ops->heal_queue_stats);
    assert_non_null(ops->orphan_round);
    assert_non_null(ops->store_stats);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    static const char body[] = "upkeep";
    for (int i = 0; i < 3; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(mt_put(e, "b", key, body, sizeof(body), NULL), 0);
    }
    struct strata_heal_stats hs;
    memset(&hs, 0xff, sizeof(hs));
    assert_int_equal(strata_meta_heal_all(e->m, &hs), 0);
    assert_true(hs.objects_scanned >= 3);
    assert_int_equal(hs.records_healed, 0); /* every drive took every write */
    size_t pending = 99;
    uint64_t dropped = 99;
    strata_meta_heal_queue_stats(e->m, &pending, &dropped);
    assert_int_equal(pending, 0);
    assert_int_equal(dropped, 0);
    assert_int_equal(strata_meta_heal_queued(e->m, 0, &hs, &pending), 0);
    struct strata_orphans *os = NULL;
    uint64_t removed = 7;
    assert_int_equal(strata_meta_orphan_round(e->m, &os, 0, &removed), 0);
    assert_int_equal(removed, 0);
    assert_non_null(os); /* the backend's state, released through it */
    strata_meta_orphans_free(os);
    strata_meta_orphans_free(NULL);
    struct strata_meta_store_stats ss;
    assert_int_equal(strata_meta_store_stats_get(e->m, 0, 0, &ss), 0);
    assert_true(ss.memtable_bytes > 0); /* the puts are in drive 0's memtable */
    assert_int_equal(strata_meta_store_stats_get(e->m, 0, MT_DRIVES, &ss), STRATA_ENOTFOUND);
    assert_true(strata_meta_memtable_size(e->m) >= (1u << 20));
    mt_teardown(e);
}

static void test_without_upkeep(void **state)
{
    (void)state;
    struct mt_env *e = mt_setup("upkeep-none");
    assert_non_null(e);
    assert_int_equal(mt_bucket(e, "b", 0), 0);
    assert_int_equal(mt_put(e, "b", "k", "x", 1, NULL), 0);
    /* A backend without the optional ops: the local one with them cut. */
    struct strata_meta__store_ops none = *e->m->store;
    none.heal_all = NULL;
    none.heal_queued = NULL;
    none.heal_queue_stats = NULL;
    none.orphan_round = NULL;
    none.store_stats = NULL;
    none.block_cache_bytes = NULL;
    none.memtable_size = NULL;
    const struct strata_meta__store_ops *saved = e->m->store;
    e->m->store = &none;

    struct strata_heal_stats hs;
    memset(&hs, 0xff, sizeof(hs));
    assert_int_equal(strata_meta_heal_all(e->m, &hs), STRATA_ENOTIMPL);
    assert_int_equal(hs.objects_scanned, 0);
    assert_int_equal(hs.records_healed, 0);
    memset(&hs, 0xff, sizeof(hs));
    size_t pending = 99;
    assert_int_equal(strata_meta_heal_queued(e->m, 0, &hs, &pending), STRATA_ENOTIMPL);
    assert_int_equal(pending, 0);
    assert_int_equal(hs.shards_healed, 0);
    uint64_t dropped = 99;
    pending = 99;
    strata_meta_heal_queue_stats(e->m, &pending, &dropped);
    assert_int_equal(pending, 0);
    assert_int_equal(dropped, 0);
    struct strata_orphans *os = NULL;
    uint64_t removed = 7;
    assert_int_equal(strata_meta_orphan_round(e->m, &os, 0, &removed), STRATA_ENOTIMPL);
    assert_int_equal(removed, 0);
    assert_null(os);
    struct strata_meta_store_stats ss;
    memset(&ss, 0xff, sizeof(ss));
    assert_int_equal(strata_meta_store_stats_get(e->m, 0, 0, &ss), STRATA_ENOTIMPL);
    assert_int_equal(ss.memtable_bytes, 0);
    assert_int_equal(ss.live_sst_bytes, 0);
    assert_int_equal(strata_meta_block_cache_bytes(e->m), 0);
    assert_int_equal(strata_meta_memtable_size(e->m), 0);
    /* The object is untouched by the refusals. */
    e->m->store = saved;
    uint8_t *got = NULL;
    size_t n = 0;
    assert_int_equal(mt_get(e, "b", "k", NULL, &got, &n), 0);
    assert_int_equal(n, 1);
    assert_memory_equal(got, "x", 1);
    free(got);
    mt_teardown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_provides_upkeep),
        cmocka_unit_test(test_without_upkeep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
