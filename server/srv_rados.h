/*
 * srv_rados.h - the daemon on a Ceph RADOS store (--rados-conf): which
 * other options it refuses, and opening the store with its start check.
 * Start-up only, main thread.
 */
#ifndef STRATA_SERVER_SRV_RADOS_H
#define STRATA_SERVER_SRV_RADOS_H

#include <stddef.h>

#include "srv.h"

/* 0, or 2 after printing why the options split the namespace between the
 * cluster and local drives (drives, tiers that are not pools). */
int strata_srv_rados_conflicts(const struct strata_srv_config *c, size_t ndrives);
/* s->meta on the cluster of s->cfg: 0, or after logging the check's one
 * line 1 (unreachable, pools or layout missing) or 2 (the conf file). */
int strata_srv_rados_open(struct strata_srv *s, size_t inline_max);

#endif /* STRATA_SERVER_SRV_RADOS_H */
