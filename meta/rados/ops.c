/*
 * ops.c - the RADOS backend's ops table (store.h): the cluster state of
 * several gateways in one Ceph cluster (meta/RADOS.md).
 */
#include "rados.h"

const struct strata_meta__store_ops strata_meta__store_rados = {
    .name = "rados",
    .close = strata_meta__rados_store_close,
    STRATA_META__STORE_OPS(STRATA_META__STORE_ENTRY, rados)
    .reclaim_in_txn = true,
    .due_exact = true,
};
