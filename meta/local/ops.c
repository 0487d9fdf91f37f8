/*
 * ops.c - the local backend's ops table (store.h), and what it does for
 * leases and cache invalidation: nothing, because on local drives one
 * process is the whole cluster.  It holds every lease (there is no other
 * gateway to take one over) and has no other gateway to tell about a
 * change or hear one from.
 */
#include "local.h"

#include <stdio.h>
#include <string.h>

/* strata_meta_test_lease_held_elsewhere's lease name ("" none). */
static pthread_mutex_t test_mu = PTHREAD_MUTEX_INITIALIZER;
static char test_held[STRATA_LEASE_NAME_MAX + 1];

void strata_meta_test_lease_held_elsewhere(const char *name)
{
    pthread_mutex_lock(&test_mu);
    snprintf(test_held, sizeof(test_held), "%s", name ? name : "");
    pthread_mutex_unlock(&test_mu);
}

static int local_lease(struct strata_meta *m, const char *name, enum strata_lease_op op)
{
    (void)m;
    if (op == STRATA_LEASE_RELEASE)
        return 0;
    pthread_mutex_lock(&test_mu);
    bool elsewhere = test_held[0] && strcmp(test_held, name) == 0;
    pthread_mutex_unlock(&test_mu);
    return elsewhere ? STRATA_EBUSY : 0;
}

static int local_invalidate(struct strata_meta *m, const char *bucket)
{
    (void)m;
    (void)bucket;
    return 0;
}

/* No other gateway changes this store, so cb is never called. */
static int local_on_invalidate(struct strata_meta *m, strata_meta__invalidate_fn cb, void *ud)
{
    (void)m;
    (void)cb;
    (void)ud;
    return 0;
}

const struct strata_meta__store_ops strata_meta__store_local = {
    .name = "local",
    .state_put = strata_meta__local_state_put,
    .state_get = strata_meta__local_state_get,
    .clock_mark_read = strata_meta__local_mark_read,
    .clock_mark_advance = strata_meta__local_mark_advance,
    .audit_open = strata_meta__local_audit_open,
    .audit_close = strata_meta__local_audit_close,
    .audit_append = strata_meta__local_audit_append,
    .audit_last_seq = strata_meta__local_audit_last_seq,
    .audit_copy_open = strata_meta__local_audit_copy_open,
    .audit_copy_anchor = strata_meta__local_audit_copy_anchor,
    .audit_copy_next = strata_meta__local_audit_copy_next,
    .audit_copy_close = strata_meta__local_audit_copy_close,
    .bucket_txn = strata_meta__local_bucket_txn,
    .bucket_get = strata_meta__local_bucket_get,
    .bucket_list = strata_meta__local_bucket_list,
    .config_put = strata_meta__local_config_put,
    .config_get = strata_meta__local_config_get,
    .lease = local_lease,
    .invalidate = local_invalidate,
    .on_invalidate = local_on_invalidate,
    /* ---- keys ---- */
    .key_txn = strata_meta__local_key_txn,
    .key_read = strata_meta__local_key_read,
    .key_get = strata_meta__local_key_get,
    .key_get_nowait = strata_meta__local_key_get_nowait,
    /* ---- multipart uploads ---- */
    .upload_create = strata_meta__local_upload_create,
    .upload_get = strata_meta__local_upload_get,
    .part_put = strata_meta__local_part_put,
    .parts_read = strata_meta__local_parts_read,
    .mpu_complete = strata_meta__local_mpu_complete,
    .mpu_abort = strata_meta__local_mpu_abort,
    /* ---- scans ---- */
    .scan_open = strata_meta__local_scan_open,
    .scan_next = strata_meta__local_scan_next,
    .scan_skip_past = strata_meta__local_scan_skip_past,
    .scan_close = strata_meta__local_scan_close,
    .intent_put = strata_meta__local_intent_put,
    .intent_get = strata_meta__local_intent_get,
    .intent_resolve = strata_meta__local_intent_resolve,
    .restore_get = strata_meta__local_restore_get,
    .restore_swap = strata_meta__local_restore_swap,
    .restore_walk = strata_meta__local_restore_walk,
    /* ---- local-only: heal, orphans, stats ---- */
    .heal_all = strata_meta__local_heal_all_paced,
    .heal_queued = strata_meta__local_heal_queued,
    .heal_queue_stats = strata_meta__local_heal_queue_stats,
    .orphan_round = strata_meta__local_orphan_round,
    .store_stats = strata_meta__local_store_stats,
    .block_cache_bytes = strata_meta__local_block_cache_bytes,
    .memtable_size = strata_meta__local_memtable_size,
};
