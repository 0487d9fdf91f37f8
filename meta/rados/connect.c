/*
 * connect.c - reaching a Ceph cluster: the connection (bounded in time, so
 * an unreachable monitor is an error, not a hang), the pool and layout
 * check the daemon and `strata rados check` share, `strata rados init`
 * (pools and control objects, idempotent), and a strata_meta whose store
 * is the cluster.  Messages for a person go into the caller's buffer:
 * libraries never print.
 */
#include "rados.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

static unsigned knob_lease_ms;
static uint64_t knob_audit_seg;
static int64_t knob_reclaim_grace_ms;

void strata_meta__rados_test_reclaim_grace(int64_t ms)
{
    knob_reclaim_grace_ms = ms;
}

void strata_meta__rados_test_knobs(unsigned lease_ms, uint64_t audit_seg)
{
    knob_lease_ms = lease_ms;
    knob_audit_seg = audit_seg;
}

int strata_meta__rados_err(int r)
{
    switch (r) {
    case 0:
        return 0;
    case -ENOENT:
        return STRATA_ENOTFOUND;
    case -EEXIST:
        return STRATA_EEXISTS;
    case -ECANCELED:
        return STRATA_EPRECOND;
    case -EBUSY:
        return STRATA_EBUSY;
    case -ENOMEM:
        return STRATA_ENOMEM;
    case -ENOSPC:
    case -EDQUOT:
        return STRATA_ENOSPC;
    case -EINVAL:
        return STRATA_EINVAL;
    default:
        return STRATA_EIO;
    }
}

static void say(char *msg, size_t cap, const char *fmt, ...)
{
    if (!msg || !cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
}

static const char *opt_id(const struct strata_rados_opts *o)
{
    return o->id && *o->id ? o->id : "admin";
}

static const char *opt_prefix(const struct strata_rados_opts *o)
{
    return o->prefix && *o->prefix ? o->prefix : "strata";
}

void strata_meta__rados_disconnect(struct meta_rados *r)
{
    if (!r)
        return;
    strata_meta__rados_watch_stop(r);
    if (r->meta)
        rados_ioctx_destroy(r->meta);
    if (r->c)
        rados_shutdown(r->c);
    pthread_mutex_destroy(&r->audit_mu);
    pthread_mutex_destroy(&r->watch_mu);
    pthread_mutex_destroy(&r->bcache_mu);
    strata_meta__rados_stash_free(r);
    pthread_mutex_destroy(&r->stash_mu);
    pthread_cond_destroy(&r->watch_cv);
    free(r);
}

int strata_meta__rados_connect(const struct strata_rados_opts *o, bool meta,
                               struct meta_rados **out, char *msg, size_t cap)
{
    *out = NULL;
    if (!o || !o->conf || !*o->conf) {
        say(msg, cap, "no Ceph configuration file given (--rados-conf)");
        return STRATA_EINVAL;
    }
    const char *prefix = opt_prefix(o);
    if (strlen(prefix) > RADOS_PREFIX_MAX || strlen(opt_id(o)) > 128) {
        say(msg, cap, "pool prefix or cephx user name too long");
        return STRATA_EINVAL;
    }
    struct meta_rados *r = calloc(1, sizeof(*r));
    if (!r)
        return STRATA_ENOMEM;
    pthread_mutex_init(&r->audit_mu, NULL);
    pthread_mutex_init(&r->watch_mu, NULL);
    pthread_mutex_init(&r->bcache_mu, NULL);
    pthread_mutex_init(&r->stash_mu, NULL);
    pthread_cond_init(&r->watch_cv, NULL);
    snprintf(r->prefix, sizeof(r->prefix), "%s", prefix);
    if (strata_meta__rados_audit_where(r->where, sizeof(r->where), o) != 0)
        r->where[0] = 0; /* a conf path too long to name: no chain check */
    r->lease_ms = knob_lease_ms ? knob_lease_ms
                  : o->lease_s  ? o->lease_s * 1000u
                                : STRATA_LEASE_MS;
    r->audit_seg = knob_audit_seg ? knob_audit_seg : RADOS_AUDIT_SEG_ENTRIES;
    r->reclaim_grace_ms = knob_reclaim_grace_ms ? knob_reclaim_grace_ms : RADOS_RECLAIM_GRACE_MS;
    if (o->reclaim_grace_max_s && (int64_t)o->reclaim_grace_max_s * 1000 < r->reclaim_grace_ms)
        r->reclaim_grace_ms = (int64_t)o->reclaim_grace_max_s * 1000;
    unsigned char id[RADOS_GW_ID_LEN / 2];
    if (RAND_bytes(id, sizeof(id)) != 1) {
        strata_meta__rados_disconnect(r);
        return STRATA_EINTERNAL;
    }
    for (size_t i = 0; i < sizeof(id); i++)
        snprintf(r->gw + 2 * i, 3, "%02x", id[i]);

    int rc = rados_create(&r->c, opt_id(o));
    if (rc < 0) {
        r->c = NULL;
        say(msg, cap, "cannot create a Ceph client as client.%s: %s", opt_id(o), strerror(-rc));
        strata_meta__rados_disconnect(r);
        return STRATA_EINVAL;
    }
    rc = rados_conf_read_file(r->c, o->conf);
    if (rc < 0) {
        say(msg, cap, "cannot read the Ceph configuration %s: %s", o->conf, strerror(-rc));
        strata_meta__rados_disconnect(r);
        return STRATA_EINVAL;
    }
    /* Bounded: an unreachable monitor fails the connect after timeout_s
     * instead of librados' default of five minutes. */
    char t[16];
    snprintf(t, sizeof(t), "%u", o->timeout_s ? o->timeout_s : 10);
    rados_conf_set(r->c, "client_mount_timeout", t);
    rados_conf_set(r->c, "rados_mon_op_timeout", t);
    rados_conf_set(r->c, "rados_osd_op_timeout", "30");
    rc = rados_connect(r->c);
    if (rc < 0) {
        say(msg, cap, "cannot reach the Ceph cluster of %s as client.%s: %s", o->conf, opt_id(o),
            strerror(-rc));
        strata_meta__rados_disconnect(r);
        return STRATA_EIO;
    }
    if (meta) {
        char pool[RADOS_PREFIX_MAX + 8];
        snprintf(pool, sizeof(pool), "%s.meta", r->prefix);
        rc = rados_ioctx_create(r->c, pool, &r->meta);
        if (rc < 0) {
            r->meta = NULL;
            say(msg, cap, "pool %s: %s%s", pool, strerror(-rc),
                rc == -ENOENT ? " (run strata rados init)" : "");
            strata_meta__rados_disconnect(r);
            return rc == -ENOENT ? STRATA_ENOTFOUND : STRATA_EIO;
        }
    }
    *out = r;
    return 0;
}

/* Append item to the ", "-separated list in buf (len so far in *len). */
static void list_add(char *buf, size_t cap, size_t *len, const char *item)
{
    *len += (size_t)snprintf(buf + *len, cap - *len, "%s%s", *len ? ", " : "", item);
    if (*len >= cap)
        *len = cap - 1;
}

/* The pools a layout needs: PREFIX.meta (omap: replicated) and PREFIX.data. */
static const char *const pool_kinds[] = {"meta", "data"};
#define NPOOLS (sizeof(pool_kinds) / sizeof(pool_kinds[0]))

/* Check: pools exist and PREFIX.meta holds an initialised layout. */
static int check_layout(struct meta_rados *r, char *msg, size_t cap)
{
    char missing[256] = "";
    size_t ml = 0;
    for (size_t i = 0; i < NPOOLS; i++) {
        char pool[RADOS_PREFIX_MAX + 8];
        snprintf(pool, sizeof(pool), "%s.%s", r->prefix, pool_kinds[i]);
        int64_t id = rados_pool_lookup(r->c, pool);
        if (id == -ENOENT) {
            list_add(missing, sizeof(missing), &ml, pool);
        } else if (id < 0) {
            say(msg, cap, "cannot look up pool %s: %s", pool, strerror((int)-id));
            return STRATA_EIO;
        }
    }
    if (ml) {
        say(msg, cap, "missing pool(s) %s: run strata rados init", missing);
        return STRATA_ENOTFOUND;
    }
    char pool[RADOS_PREFIX_MAX + 8];
    snprintf(pool, sizeof(pool), "%s.meta", r->prefix);
    if (!r->meta) {
        int rc = rados_ioctx_create(r->c, pool, &r->meta);
        if (rc < 0) {
            r->meta = NULL;
            say(msg, cap, "pool %s: %s", pool, strerror(-rc));
            return STRATA_EIO;
        }
    }
    char *v = NULL;
    size_t vl = 0;
    int rc = strata_meta__rados_get1(r->meta, RADOS_OID_ROOT, "format", &v, &vl);
    if (rc == STRATA_ENOTFOUND) {
        say(msg, cap, "pool %s holds no Strata layout: run strata rados init", pool);
        return STRATA_ENOTFOUND;
    }
    if (rc) {
        say(msg, cap, "cannot read %s/%s: %s", pool, RADOS_OID_ROOT, strata_strerror(rc));
        return rc;
    }
    bool ok = vl == strlen(RADOS_LAYOUT_FORMAT) && memcmp(v, RADOS_LAYOUT_FORMAT, vl) == 0;
    if (!ok)
        say(msg, cap, "pool %s holds layout format %.*s, this Strata knows %s", pool,
            (int)(vl > 16 ? 16 : vl), v, RADOS_LAYOUT_FORMAT);
    free(v);
    return ok ? 0 : STRATA_EFORMAT;
}

int strata_meta_rados_check(const struct strata_rados_opts *o, char *msg, size_t cap)
{
    struct meta_rados *r;
    int rc = strata_meta__rados_connect(o, false, &r, msg, cap);
    if (rc)
        return rc;
    rc = check_layout(r, msg, cap);
    if (rc == 0)
        say(msg, cap, "cluster of %s reachable as client.%s; pools %s.meta and %s.data ready",
            o->conf, opt_id(o), r->prefix, r->prefix);
    strata_meta__rados_disconnect(r);
    return rc;
}

int64_t strata_meta__rados_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* root: format and creation time, set once (a second init keeps them). */
static int init_root(struct meta_rados *r)
{
    char created[24];
    int cl = snprintf(created, sizeof(created), "%lld", (long long)strata_meta__rados_wall_ms());
    const char *keys[] = {"format", "created"};
    const char *vals[] = {RADOS_LAYOUT_FORMAT, created};
    size_t lens[] = {strlen(RADOS_LAYOUT_FORMAT), (size_t)cl};
    int prval = 0;
    rados_write_op_t op = rados_create_write_op();
    rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
    rados_write_op_omap_cmp(op, "format", LIBRADOS_CMPXATTR_OP_EQ, "", 0, &prval);
    rados_write_op_omap_set(op, keys, vals, lens, 2);
    int rc = rados_write_op_operate(op, r->meta, RADOS_OID_ROOT, NULL, 0);
    rados_release_write_op(op);
    return rc == -ECANCELED ? 0 : rc; /* already there: check_layout reads it */
}

int strata_meta_rados_init(const struct strata_rados_opts *o, char *msg, size_t cap)
{
    struct meta_rados *r;
    int rc = strata_meta__rados_connect(o, false, &r, msg, cap);
    if (rc)
        return rc;
    char made[256] = "";
    size_t ml = 0;
    for (size_t i = 0; i < NPOOLS && rc == 0; i++) {
        char pool[RADOS_PREFIX_MAX + 8];
        snprintf(pool, sizeof(pool), "%s.%s", r->prefix, pool_kinds[i]);
        int64_t id = rados_pool_lookup(r->c, pool);
        if (id == -ENOENT) {
            /* Replicated with the cluster's defaults (omap needs a
             * replicated pool); the data pool may be moved to EC later. */
            int cr = rados_pool_create(r->c, pool);
            if (cr < 0 && cr != -EEXIST) {
                say(msg, cap, "cannot create pool %s: %s", pool, strerror(-cr));
                rc = cr == -EPERM || cr == -EACCES ? STRATA_EIO : strata_meta__rados_err(cr);
                break;
            }
            if (cr == 0)
                list_add(made, sizeof(made), &ml, pool);
        } else if (id < 0) {
            say(msg, cap, "cannot look up pool %s: %s", pool, strerror((int)-id));
            rc = STRATA_EIO;
            break;
        }
        rados_ioctx_t io;
        int ir = rados_ioctx_create(r->c, pool, &io);
        if (ir < 0) {
            say(msg, cap, "cannot open pool %s: %s", pool, strerror(-ir));
            rc = STRATA_EIO;
            break;
        }
        /* Tagged, so `ceph health` does not warn about an untagged pool. */
        int ar = rados_application_enable(io, "strata", 1);
        if (ar < 0 && ar != -EEXIST) {
            say(msg, cap, "cannot tag pool %s with application strata: %s", pool, strerror(-ar));
            rc = STRATA_EIO;
        }
        if (i == 0 && rc == 0)
            r->meta = io;
        else
            rados_ioctx_destroy(io);
    }
    if (rc == 0) {
        int wr = init_root(r);
        static const char *const objs[] = {RADOS_OID_BUCKETS, RADOS_OID_STATE, RADOS_OID_CLOCK,
                                           RADOS_OID_AUDIT, RADOS_OID_CTL};
        for (size_t i = 0; wr == 0 && i < sizeof(objs) / sizeof(objs[0]); i++) {
            rados_write_op_t op = rados_create_write_op();
            rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
            wr = rados_write_op_operate(op, r->meta, objs[i], NULL, 0);
            rados_release_write_op(op);
        }
        if (wr < 0) {
            say(msg, cap, "cannot write the control objects in %s.meta: %s", r->prefix,
                strerror(-wr));
            rc = strata_meta__rados_err(wr);
        }
    }
    if (rc == 0) {
        char why[256];
        rc = check_layout(r, why, sizeof(why));
        if (rc)
            say(msg, cap, "%s", why);
        else if (ml)
            say(msg, cap, "created pool(s) %s; layout format %s ready in %s.meta", made,
                RADOS_LAYOUT_FORMAT, r->prefix);
        else
            say(msg, cap, "pools %s.meta and %s.data already exist; layout format %s ready",
                r->prefix, r->prefix, RADOS_LAYOUT_FORMAT);
    }
    strata_meta__rados_disconnect(r);
    return rc;
}

int strata_meta__rados_open(const struct strata_rados_opts *o, struct strata_meta **out,
                            char *msg, size_t cap)
{
    *out = NULL;
    struct meta_rados *r;
    int rc = strata_meta__rados_connect(o, true, &r, msg, cap);
    if (rc == 0)
        rc = check_layout(r, msg, cap);
    if (rc) {
        strata_meta__rados_disconnect(r);
        return rc;
    }
    struct strata_meta *m = calloc(1, sizeof(*m));
    if (!m) {
        strata_meta__rados_disconnect(r);
        return STRATA_ENOMEM;
    }
    m->store = &strata_meta__store_rados;
    m->store_priv = r;
    rc = strata_meta__rados_hot_tier(m, msg, cap);
    if (rc) {
        strata_meta__rados_close(m);
        return rc;
    }
    *out = m;
    return 0;
}

int strata_meta__rados_hot_tier(struct strata_meta *m, char *msg, size_t cap)
{
    struct meta_rados *r = meta_rados_of(m);
    char pool[RADOS_PREFIX_MAX + 8];
    snprintf(pool, sizeof(pool), "%s.data", r->prefix);
    int rc = strata_meta__rados_data_create(r, STRATA_TIER_HOT, pool, NULL, &m->tiers[0]);
    if (rc) {
        say(msg, cap, "cannot open pool %s: %s", pool, strata_strerror(rc));
        return rc;
    }
    m->ntiers = r->tiers_owned = 1;
    return 0;
}

void strata_meta__rados_close(struct strata_meta *m)
{
    if (!m)
        return;
    if (m->ntiers > 0)
        strata_tier_destroy(m->tiers[0]); /* before its connection; the others are the caller's */
    strata_meta__rados_disconnect(meta_rados_of(m));
    free(m);
}
