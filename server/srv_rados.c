/*
 * srv_rados.c - the daemon on a Ceph RADOS store (contract in
 * srv_rados.h; layout in meta/RADOS.md).  With --rados-conf every object,
 * bucket, clock mark and audit entry lives in the cluster, so a gateway
 * needs nothing on local disk (event and replication queues are in the
 * cluster too, pqueue_cluster.h); options that would keep part of the
 * namespace on a local drive are refused rather than silently
 * splitting what several gateways must share.  Tiers are pools of the same
 * cluster (--tier NAME:rados:POOL), opened by the store, or remote S3
 * endpoints (--tier NAME:s3:URL), opened here and handed to the store.
 */
#include "srv_rados.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_tiers.h"

int strata_srv_rados_conflicts(const struct strata_srv_config *c, size_t ndrives)
{
    const char *why = NULL;
    bool tier_on_drives = false; /* this gateway's disks, which no other reaches */
    for (unsigned i = 0; i < c->ntier_specs; i++)
        tier_on_drives |= !strata_srv_tier_spec_is_pool(c->tier_specs[i]) &&
                          !strata_srv_tier_spec_is_remote(c->tier_specs[i]);
    if (ndrives)
        why = "drives: objects and metadata are all in the cluster (give no drive "
              "arguments nor \"drives\")";
    else if (tier_on_drives)
        why = "--tier NAME:DRIVES: tiers of a RADOS store are pools of its cluster "
              "(--tier NAME:rados:POOL) or remote S3 endpoints (NAME:s3:URL)";
    if (!why)
        return 0;
    fprintf(stderr, "strata: --rados-conf cannot be combined with %s\n", why);
    return 2;
}

/* The remote S3 tiers, made and checked as on local drives (srv_tiers.c).
 * What such a tier keeps is all in the cluster (transition intents, the
 * records naming its objects, their reclaim entries, the lock flag's queue
 * of lock changes, the restore flag's records of restored copies) or per
 * gateway (its health counters, unlinked spool files).  0, or 1 (a tier
 * cannot be opened, logged); on failure closes what it opened. */
static int remote_tiers(struct strata_srv *s, struct strata_tier **out, unsigned *n)
{
    *n = 0;
    for (unsigned i = 0; s->tiers && i < s->tiers->n; i++) {
        struct strata_srv_tier *t = &s->tiers->t[i];
        if (!t->url)
            continue;
        char err[512];
        struct strata_logger log = strata_srv_logger();
        if (strata_srv_tier_open(s->tiers, t, 0, &log, err, sizeof(err)) != 0) {
            strata_srv_log(STRATA_LOG_ERR, "%s", err);
            for (unsigned j = 0; j < i; j++)
                strata_srv_tier_close(&s->tiers->t[j]);
            return 1;
        }
        out[(*n)++] = t->tier;
        strata_srv_log(STRATA_LOG_INFO, "tier %s: remote %s", t->name, t->url);
    }
    return 0;
}

int strata_srv_rados_open(struct strata_srv *s, size_t inline_max)
{
    struct strata_rados_tier tiers[STRATA_TIERS_MAX];
    unsigned nt = 0;
    for (unsigned i = 0; s->tiers && i < s->tiers->n && nt < STRATA_TIERS_MAX; i++)
        if (s->tiers->t[i].pool)
            tiers[nt++] = (struct strata_rados_tier){s->tiers->t[i].name, s->tiers->t[i].pool};
    struct strata_tier *remote[STRATA_TIERS_MAX];
    unsigned nr = 0;
    int trc = remote_tiers(s, remote, &nr);
    if (trc)
        return trc;
    struct strata_rados_opts ro = {.conf = s->cfg.rados_conf, .id = s->cfg.rados_id,
                                   .prefix = s->cfg.rados_pool_prefix, .tiers = tiers,
                                   .lease_s = s->cfg.lease_s,
                                   .ntiers = nt,
                                   /* An operator who shortens --orphan-grace-seconds wants
                                    * unreferenced data back sooner: it bounds the reclaim
                                    * grace too (RADOS.md). */
                                   .reclaim_grace_max_s = s->cfg.orphan_grace_s};
    struct strata_meta_opts mo = {.inline_max = inline_max, .log = strata_srv_logger(),
                                  .mpu_retry_s = s->cfg.mpu_retry_s, .tiers = remote,
                                  .ntiers = nr};
    struct strata_errinfo ei = {.drive = -1};
    int rc = strata_meta_open_rados(&ro, &mo, &s->meta, &ei);
    if (rc) {
        strata_srv_log(STRATA_LOG_ERR, "cannot open the RADOS store: %s",
                       ei.msg[0] ? ei.msg : strata_strerror(rc));
        for (unsigned j = 0; s->tiers && j < s->tiers->n; j++)
            strata_srv_tier_close(&s->tiers->t[j]);
        return rc == STRATA_EINVAL || rc == STRATA_ENOTIMPL ? 2 : 1;
    }
    strata_srv_log(STRATA_LOG_INFO, "store: RADOS pools %s.meta and %s.data of %s as client.%s",
                   s->cfg.rados_pool_prefix, s->cfg.rados_pool_prefix, s->cfg.rados_conf,
                   s->cfg.rados_id);
    for (unsigned i = 0; i < nt; i++)
        strata_srv_log(STRATA_LOG_INFO, "tier %s: RADOS pool %s", tiers[i].name, tiers[i].pool);
    if (strata_srv_tiers_archive(s->tiers, s->meta) != 0) {
        strata_meta_close(s->meta);
        s->meta = NULL;
        for (unsigned j = 0; s->tiers && j < s->tiers->n; j++)
            strata_srv_tier_close(&s->tiers->t[j]);
        return 1;
    }
    return 0;
}
