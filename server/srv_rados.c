/*
 * srv_rados.c - the daemon on a Ceph RADOS store (contract in
 * srv_rados.h; layout in meta/RADOS.md).  With --rados-conf every object,
 * bucket, clock mark and audit entry lives in the cluster, so a gateway
 * needs nothing on local disk; options that would keep part of the
 * namespace or a queue on a local drive are refused rather than silently
 * splitting what several gateways must share.
 */
#include "srv_rados.h"

#include <stdio.h>

int strata_srv_rados_conflicts(const struct strata_srv_config *c, size_t ndrives)
{
    const char *why = NULL;
    if (ndrives)
        why = "drives: objects and metadata are all in the cluster (give no drive "
              "arguments nor \"drives\")";
    else if (c->ntier_specs)
        why = "--tier: tiers are local drives or remote endpoints, not pools of the "
              "cluster yet";
    else if (c->nnotify_specs)
        why = "--notify-target: event queues are kept on local drives";
    else if (c->nrepl_specs)
        why = "--replication-target: replication queues are kept on local drives";
    if (!why)
        return 0;
    fprintf(stderr, "strata: --rados-conf cannot be combined with %s\n", why);
    return 2;
}

int strata_srv_rados_open(struct strata_srv *s, size_t inline_max)
{
    /* An operator who shortens --orphan-grace-seconds wants unreferenced
     * data back sooner: it bounds the reclaim grace too (RADOS.md). */
    struct strata_rados_opts ro = {.conf = s->cfg.rados_conf, .id = s->cfg.rados_id,
                                   .prefix = s->cfg.rados_pool_prefix,
                                   .reclaim_grace_max_s = s->cfg.orphan_grace_s};
    struct strata_meta_opts mo = {.inline_max = inline_max, .log = strata_srv_logger(),
                                  .mpu_retry_s = s->cfg.mpu_retry_s};
    struct strata_errinfo ei = {.drive = -1};
    int rc = strata_meta_open_rados(&ro, &mo, &s->meta, &ei);
    if (rc) {
        strata_srv_log(STRATA_LOG_ERR, "cannot open the RADOS store: %s",
                       ei.msg[0] ? ei.msg : strata_strerror(rc));
        return rc == STRATA_EINVAL || rc == STRATA_ENOTIMPL ? 2 : 1;
    }
    strata_srv_log(STRATA_LOG_INFO, "store: RADOS pools %s.meta and %s.data of %s as client.%s",
                   s->cfg.rados_pool_prefix, s->cfg.rados_pool_prefix, s->cfg.rados_conf,
                   s->cfg.rados_id);
    return 0;
}
