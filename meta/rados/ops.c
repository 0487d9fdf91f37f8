/*
 * ops.c - the RADOS backend's ops table (store.h): the cluster state of
 * several gateways in one Ceph cluster (meta/RADOS.md).
 */
#include "rados.h"

const struct strata_meta__store_ops strata_meta__store_rados = {
    .name = "rados",
    /* Data objects, GET / HEAD reads and multipart are not on RADOS yet
     * (RADOS.md, "What the daemon needs from the other steps"). */
    .objects_pending = true,
    .close = strata_meta__rados_store_close,
    .state_put = strata_meta__rados_state_put,
    .state_get = strata_meta__rados_state_get,
    .clock_mark_read = strata_meta__rados_mark_read,
    .clock_mark_advance = strata_meta__rados_mark_advance,
    .clock_peers = strata_meta__rados_clock_peers,
    .audit_open = strata_meta__rados_audit_open,
    .audit_close = strata_meta__rados_audit_close,
    .audit_append = strata_meta__rados_audit_append,
    .audit_last_seq = strata_meta__rados_audit_last_seq,
    .audit_copy_open = strata_meta__rados_audit_copy_open,
    .audit_copy_anchor = strata_meta__rados_audit_copy_anchor,
    .audit_copy_next = strata_meta__rados_audit_copy_next,
    .audit_copy_close = strata_meta__rados_audit_copy_close,
    .bucket_txn = strata_meta__rados_bucket_txn,
    .bucket_get = strata_meta__rados_bucket_get,
    .bucket_list = strata_meta__rados_bucket_list,
    .config_put = strata_meta__rados_config_put,
    .config_get = strata_meta__rados_config_get,
    .lease = strata_meta__rados_lease,
    .invalidate = strata_meta__rados_invalidate,
    .on_invalidate = strata_meta__rados_on_invalidate,
    .key_txn = strata_meta__rados_key_txn,
    .key_read = strata_meta__rados_key_read,
    .key_get = strata_meta__rados_key_get,
    .upload_create = strata_meta__rados_upload_create,
    .upload_get = strata_meta__rados_upload_get,
    .part_put = strata_meta__rados_part_put,
    .parts_read = strata_meta__rados_parts_read,
    .mpu_complete = strata_meta__rados_mpu_complete,
    .mpu_abort = strata_meta__rados_mpu_abort,
    .scan_open = strata_meta__rados_scan_open,
    .scan_next = strata_meta__rados_scan_next,
    .scan_skip_past = strata_meta__rados_scan_skip_past,
    .scan_close = strata_meta__rados_scan_close,
    .orphan_round = strata_meta__rados_gc_round,
    .pending_add = strata_meta__rados_pending_add,
    .reclaim_in_txn = true,
    .intent_put = strata_meta__rados_intent_put,
    .intent_get = strata_meta__rados_intent_get,
    .intent_resolve = strata_meta__rados_intent_resolve,
};
