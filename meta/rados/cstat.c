/*
 * cstat.c - the cluster's view of a RADOS store for `strata admin info`
 * (strata_meta_cluster_stat): the health the monitors report, the
 * cluster's space and objects (rados_cluster_stat), and the usage of the
 * store's pools PREFIX.meta and PREFIX.data (rados_ioctx_pool_stat; both
 * are ceph-mgr's statistics, all 0 in a cluster without a mgr).  A
 * gateway has no drives of its own: this is what an operator looks at
 * instead.  The daemon's cephx user has `mon 'allow r'`, enough for all.
 */
#include "rados.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* `ceph health`'s status word, or "" when the monitors do not say. */
static void health(rados_t c, char out[32])
{
    const char *cmd[] = {"{\"prefix\": \"health\", \"format\": \"json\"}"};
    char *buf = NULL, *st = NULL;
    size_t bl = 0, sl = 0;
    out[0] = 0;
    if (rados_mon_command(c, cmd, 1, "", 0, &buf, &bl, &st, &sl) == 0 && buf) {
        json_t *doc = json_loadb(buf, bl, 0, NULL);
        const char *v = json_string_value(json_object_get(doc, "status"));
        if (v)
            snprintf(out, 32, "%s", v);
        json_decref(doc);
    }
    rados_buffer_free(buf);
    rados_buffer_free(st);
}

int strata_meta__rados_cluster_stat(struct strata_meta *m, struct strata_meta_cluster_stat *out)
{
    struct meta_rados *r = meta_rados_of(m);
    struct rados_cluster_stat_t cs;
    int rc = rados_cluster_stat(r->c, &cs);
    if (rc < 0)
        return strata_meta__rados_err(rc);
    out->total_bytes = cs.kb * 1024;
    out->used_bytes = cs.kb_used * 1024;
    out->free_bytes = cs.kb_avail * 1024;
    out->objects = cs.num_objects;
    out->usage_reported = cs.kb > 0; /* a cluster with OSDs has space once reported */
    static const char *const roles[STRATA_CLUSTER_POOLS_MAX] = {"meta", "data"};
    for (unsigned i = 0; i < STRATA_CLUSTER_POOLS_MAX; i++) {
        snprintf(out->pools[i].name, sizeof(out->pools[i].name), "%s.%s", r->prefix, roles[i]);
        out->pools[i].role = roles[i];
        rados_ioctx_t io;
        rc = rados_ioctx_create(r->c, out->pools[i].name, &io);
        if (rc < 0)
            return strata_meta__rados_err(rc);
        struct rados_pool_stat_t ps;
        rc = rados_ioctx_pool_stat(io, &ps);
        rados_ioctx_destroy(io);
        if (rc < 0)
            return strata_meta__rados_err(rc);
        out->pools[i].bytes = ps.num_bytes;
        out->pools[i].objects = ps.num_objects;
        out->npools = i + 1;
    }
    health(r->c, out->health);
    return 0;
}
