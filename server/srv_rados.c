/*
 * srv_rados.c - the daemon on a Ceph RADOS store (contract in
 * srv_rados.h; layout in meta/RADOS.md).  With --rados-conf every object,
 * bucket, clock mark and audit entry lives in the cluster, so a gateway
 * needs nothing on local disk (event and replication queues are in the
 * cluster too, pqueue_cluster.h); options that would keep part of the
 * namespace on a local drive are refused rather than silently
 * splitting what several gateways must share.  Tiers are pools of the same
 * cluster (--tier NAME:rados:POOL), opened by the store.
 */
#include "srv_rados.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_tiers.h"

int strata_srv_rados_conflicts(const struct strata_srv_config *c, size_t ndrives)
{
    const char *why = NULL;
    bool tier_off_cluster = false; /* drives or a remote endpoint */
    for (unsigned i = 0; i < c->ntier_specs; i++)
        tier_off_cluster |= !strata_srv_tier_spec_is_pool(c->tier_specs[i]);
    if (ndrives)
        why = "drives: objects and metadata are all in the cluster (give no drive "
              "arguments nor \"drives\")";
    else if (tier_off_cluster)
        why = "--tier NAME:DRIVES or NAME:s3:URL: tiers of a RADOS store are pools of "
              "its cluster (--tier NAME:rados:POOL)";
    if (!why)
        return 0;
    fprintf(stderr, "strata: --rados-conf cannot be combined with %s\n", why);
    return 2;
}

int strata_srv_rados_open(struct strata_srv *s, size_t inline_max)
{
    struct strata_rados_tier tiers[STRATA_TIERS_MAX];
    unsigned nt = 0;
    for (unsigned i = 0; s->tiers && i < s->tiers->n && nt < STRATA_TIERS_MAX; i++)
        if (s->tiers->t[i].pool)
            tiers[nt++] = (struct strata_rados_tier){s->tiers->t[i].name, s->tiers->t[i].pool};
    struct strata_rados_opts ro = {.conf = s->cfg.rados_conf, .id = s->cfg.rados_id,
                                   .prefix = s->cfg.rados_pool_prefix, .tiers = tiers,
                                   .ntiers = nt,
                                   /* An operator who shortens --orphan-grace-seconds wants
                                    * unreferenced data back sooner: it bounds the reclaim
                                    * grace too (RADOS.md). */
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
    for (unsigned i = 0; i < nt; i++)
        strata_srv_log(STRATA_LOG_INFO, "tier %s: RADOS pool %s", tiers[i].name, tiers[i].pool);
    return 0;
}
