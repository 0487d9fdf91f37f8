/*
 * admin_info.c - GET /strata/admin/v1/info: version, uptime, and every
 * set with its geometry, counters and drives (state, failed operations by
 * op, space via statvfs).
 * "sets" and the drive totals are the hot tier's (the metadata home);
 * "tiers" lists every tier with its storage classes and its own sets;
 * "store" says where the objects are (on RADOS: the cluster's health and
 * space and the store's pools, as there are no drives).
 * Any connection thread; reads only immutable set facts and atomics.
 */
#include "admin_internal.h"

#include <string.h>
#include <sys/statvfs.h>

#include "remote_lock.h"
#include "remote_tier.h"
#include "srv_tiers.h"

static json_t *drive_json(struct strata_set *set, unsigned d)
{
    const char *path = strata_set_drive_path(set, d);
    enum strata_drive_state ds = strata_set_drive_state(set, d);
    const char *state = ds == STRATA_DRIVE_ONLINE && strata_set_drive_fresh(set, d)
                            ? "fresh"
                            : strata_drive_state_name(ds);
    json_t *j = json_pack("{s:i, s:s, s:s}", "index", (int)d, "path", path ? path : "",
                          "state", state);
    /* Failed operations since start, by op (as in /metrics). */
    json_t *errs = json_object();
    for (int op = 0; op < STRATA_DRIVE_IO_OPS; op++) {
        struct strata_drive_io_stats st;
        strata_set_drive_io_get(set, d, (enum strata_drive_io_op)op, &st);
        json_object_set_new(errs, strata_drive_io_op_name((enum strata_drive_io_op)op),
                            json_integer((json_int_t)st.errors));
    }
    json_object_set_new(j, "io_errors", errs);
    struct statvfs vfs;
    if (path && statvfs(path, &vfs) == 0) {
        uint64_t total = (uint64_t)vfs.f_blocks * vfs.f_frsize;
        uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
        uint64_t fr = (uint64_t)vfs.f_bfree * vfs.f_frsize;
        json_object_set_new(j, "total_bytes", json_integer((json_int_t)total));
        json_object_set_new(j, "free_bytes", json_integer((json_int_t)avail));
        json_object_set_new(j, "used_bytes", json_integer((json_int_t)(total - fr)));
    }
    return j;
}

static json_t *set_json(struct strata_set *set, unsigned idx)
{
    struct strata_set_stats st;
    strata_set_stats_get(set, &st);
    unsigned n = strata_set_n(set), online = 0;
    json_t *drives = json_array();
    for (unsigned d = 0; d < n; d++) {
        online += strata_set_drive_state(set, d) == STRATA_DRIVE_ONLINE;
        json_array_append_new(drives, drive_json(set, d));
    }
    const char *dep = strata_set_deployment_id(set);
    return json_pack(
        "{s:i, s:s, s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:i, s:i, s:{s:I, s:I, s:I, s:I}, s:o}",
        "index", (int)idx, "deployment_id", dep ? dep : "", "drives_total", (int)n,
        "drives_online", (int)online, "data", (int)strata_set_k(set),
        "parity", (int)strata_set_m(set), "write_quorum", (int)strata_set_write_quorum(set),
        "shard_size", (json_int_t)strata_set_shard_size(set),
        "stripe_size", (json_int_t)strata_set_stripe_size(set),
        "read_quorum", (int)strata_set_read_quorum(set),
        "format_version", (int)strata_set_format_version(set),
        "errors", "bitrot_detected", (json_int_t)st.bitrot_detected,
        "shards_missing", (json_int_t)st.shards_missing,
        "stripes_reconstructed", (json_int_t)st.stripes_reconstructed,
        "shards_healed", (json_int_t)st.shards_healed,
        "drives", drives);
}

/* The sets' JSON; adds their drive counts to *total and *online. */
static json_t *sets_json(struct strata_set *const *sets, unsigned n, unsigned *total,
                         unsigned *online)
{
    json_t *a = json_array();
    for (unsigned i = 0; i < n; i++) {
        json_t *j = set_json(sets[i], i);
        *total += (unsigned)json_integer_value(json_object_get(j, "drives_total"));
        *online += (unsigned)json_integer_value(json_object_get(j, "drives_online"));
        json_array_append_new(a, j);
    }
    return a;
}

/* A tier's JSON around its sets' JSON js (a reference is taken), which holds
 * n sets with total drives of which online answer. */
static json_t *tier_json(const char *name, json_t *js, unsigned n, unsigned total,
                         unsigned online, const struct strata_class_map *map)
{
    json_t *classes = json_array();
    for (size_t i = 0; map && i < map->n; i++)
        if (strcmp(map->e[i].tier, name) == 0)
            json_array_append_new(classes, json_string(map->e[i].cls));
    if (!map && strcmp(name, STRATA_TIER_HOT) == 0)
        json_array_append_new(classes, json_string("STANDARD"));
    return json_pack("{s:s, s:o, s:i, s:i, s:i, s:O}", "name", name, "classes", classes,
                     "sets_total", (int)n, "drives_total", (int)total, "drives_online",
                     (int)online, "sets", js);
}

/* A remote tier's health: where, counters, last success and last error. */
static json_t *remote_json(struct strata_tier *t)
{
    struct strata_remote_health h;
    strata_remote_tier_health(t, &h);
    json_t *lu = h.lock ? strata_remote_lock_json() : NULL; /* one queue for all tiers */
    json_t *j = json_pack("{s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s}", "url", h.url,
                     "lock", h.lock, "puts", (json_int_t)h.puts, "put_bytes",
                     (json_int_t)h.put_bytes, "gets", (json_int_t)h.gets, "get_bytes",
                     (json_int_t)h.get_bytes, "errors", (json_int_t)h.errors, "missing",
                     (json_int_t)h.missing, "lock_refused", (json_int_t)h.lock_refused,
                     "last_success_ms", (json_int_t)h.last_ok_ms, "last_error_ms",
                     (json_int_t)h.last_error_ms, "last_error", h.last_error);
    if (j && lu)
        json_object_set_new(j, "lock_updates", lu);
    else
        json_decref(lu);
    return j;
}

/* Where the objects are: "local" (the drive sets above), or a cluster with
 * its health, space and the store's pools (no drives: an operator needs
 * the cluster's view instead). */
static json_t *store_json(struct strata_meta *m)
{
    struct strata_meta_cluster_stat cs;
    int rc = strata_meta_cluster_stat(m, &cs);
    if (rc == STRATA_ENOTIMPL)
        return json_pack("{s:s}", "backend", strata_meta_store_name(m));
    if (rc)
        return json_pack("{s:s, s:s}", "backend", strata_meta_store_name(m), "error",
                         strata_strerror(rc));
    json_t *pools = json_array();
    for (unsigned i = 0; i < cs.npools; i++) {
        json_t *p = json_pack("{s:s, s:s}", "name", cs.pools[i].name, "role", cs.pools[i].role);
        if (cs.usage_reported) {
            json_object_set_new(p, "bytes", json_integer((json_int_t)cs.pools[i].bytes));
            json_object_set_new(p, "objects", json_integer((json_int_t)cs.pools[i].objects));
        }
        json_array_append_new(pools, p);
    }
    json_t *j = json_pack("{s:s, s:s, s:b, s:o}", "backend", strata_meta_store_name(m), "health",
                          cs.health, "usage_reported", cs.usage_reported, "pools", pools);
    /* Without ceph-mgr the cluster reports no usage: absent, not 0. */
    if (cs.usage_reported)
        json_object_set_new(j, "cluster",
                            json_pack("{s:I, s:I, s:I, s:I}", "total_bytes",
                                      (json_int_t)cs.total_bytes, "used_bytes",
                                      (json_int_t)cs.used_bytes, "free_bytes",
                                      (json_int_t)cs.free_bytes, "objects",
                                      (json_int_t)cs.objects));
    return j;
}

void strata_admin__info(struct strata_req *r, const char *arg)
{
    struct strata_srv *s = r->srv;
    unsigned total = 0, online = 0;
    json_t *sets = sets_json(s->sets, s->nsets, &total, &online);
    const struct strata_class_map *map = s->tiers ? &s->tiers->map : NULL;
    json_t *tiers = json_array();
    /* The hot tier's sets are the top-level sets: one snapshot, shown twice. */
    json_array_append_new(tiers, tier_json(STRATA_TIER_HOT, sets, s->nsets, total, online, map));
    for (unsigned i = 0; s->tiers && i < s->tiers->n; i++) {
        const struct strata_srv_tier *t = &s->tiers->t[i];
        if (strcmp(t->name, STRATA_TIER_HOT) == 0)
            continue;
        unsigned tt = 0, to = 0;
        json_t *js = sets_json(t->sets, t->nsets, &tt, &to);
        json_t *tj = tier_json(t->name, js, t->nsets, tt, to, map);
        if (t->url && t->tier && strata_remote_tier_is(t->tier))
            json_object_set_new(tj, "remote", remote_json(t->tier));
        if (t->pool)
            json_object_set_new(tj, "pool", json_string(t->pool));
        json_array_append_new(tiers, tj);
        json_decref(js);
    }
    json_t *doc = json_pack("{s:s, s:f, s:i, s:i, s:i, s:i, s:o, s:o, s:o}", "version",
                            STRATA_VERSION, "uptime_s", strata_admin__uptime_s(), "inflight",
                            (int)atomic_load(&s->http.inflight), "sets_total", (int)s->nsets,
                            "drives_total", (int)total, "drives_online", (int)online,
                            "sets", sets, "tiers", tiers, "store", store_json(s->meta));
    strata_admin__send_json(r, 200, doc);
}
