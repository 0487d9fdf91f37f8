/*
 * rados.h - shared between the files of the RADOS store backend
 * (meta/rados/; layout and design in meta/RADOS.md).  Private to meta/:
 * nothing above the seam includes it, and no rados_* type leaves meta/
 * (the library links librados PRIVATE).
 */
#ifndef STRATA_META_RADOS_RADOS_H
#define STRATA_META_RADOS_RADOS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rados/librados.h>

#include "index.h"
#include "meta_internal.h"
#include "store.h"

#define RADOS_PREFIX_MAX 64
#define RADOS_GW_ID_LEN 16 /* hex characters of a connection's gateway id */
#define RADOS_AUDIT_SEG_ENTRIES 100000u

/* Names of the control objects in PREFIX.meta (RADOS.md, "Objects"). */
#define RADOS_OID_ROOT "root"
#define RADOS_OID_BUCKETS "buckets"
#define RADOS_OID_STATE "state"
#define RADOS_OID_CLOCK "clock"
#define RADOS_OID_AUDIT "audit"
#define RADOS_OID_CTL "ctl"
#define RADOS_LAYOUT_FORMAT "1"
#define RADOS_BCACHE_SLOTS 256 /* bucket records a gateway caches (bcache.c) */
/* The longest a gateway keeps a cached bucket record: a notifier whose
 * watchers did not all ack waits this long (lease_ctl.c). */
#define RADOS_CACHE_MAX_AGE_US 1000000
#define RADOS_STASH_SLOTS      16 /* listings whose next page may start on their read-ahead */

/* One connection to the cluster: what a strata_meta's store_priv holds. */
struct meta_rados {
    rados_t c;
    rados_ioctx_t meta; /* PREFIX.meta */
    char prefix[RADOS_PREFIX_MAX + 1];
    char where[4200]; /* rados:ID:PREFIX:CONF, as audit_copy_open takes it */
    char gw[RADOS_GW_ID_LEN + 1]; /* this connection's id: lease cookie, notify sender */
    unsigned lease_ms;            /* STRATA_LEASE_MS unless a test shortened it */
    uint64_t audit_seg;           /* entries per audit segment */
    /* The audit chain's tail as this gateway last saw it (audit_mu). */
    pthread_mutex_t audit_mu;
    uint64_t audit_seq;
    char audit_hash[65];
    /* Invalidation watch on ctl (watch_mu guards cb, ud, watching). */
    pthread_mutex_t watch_mu;
    bool watching;
    uint64_t watch_cookie;
    strata_meta__invalidate_fn cb;
    void *cb_ud;
    int64_t reclaim_grace_ms; /* g/ entries' DUE = commit + this (RADOS_RECLAIM_GRACE_MS) */
    /* m->tiers[0..tiers_owned) are this store's (hot and the pools), closed
     * with it; the ones after are the caller's (strata_meta_opts.tiers). */
    unsigned tiers_owned;
    /* A broken watch is re-established by its own thread (lease_ctl.c),
     * woken through watch_cv; caches are dropped meanwhile. */
    pthread_cond_t watch_cv;
    pthread_t rewatch_thr;
    bool rewatch_started, watch_broken, stopping;
    /* The handle whose lock clock answers other gateways' "clock?" (set
     * once that clock runs; NULL before and for tool handles). */
    struct strata_meta *_Atomic clock_of;
    /* Bucket records cached while the watch holds (bcache.c). */
    pthread_mutex_t bcache_mu;
    uint64_t bcache_epoch; /* bumped by every drop (bcache_mu) */
    struct rados_bcache_slot {
        bool used;
        int64_t at_us; /* CLOCK_MONOTONIC when read */
        struct strata_bucket_info b;
    } bcache[RADOS_BCACHE_SLOTS];
    /* What listing pages read past their end, for the next page (scan.c;
     * stash_mu guards the slots). */
    pthread_mutex_t stash_mu;
    struct rados_stash *stash[RADOS_STASH_SLOTS];
};

/* The store ops (store.h) as strata_meta__rados_OP, and their table (ops.c). */
STRATA_META__STORE_OPS(STRATA_META__STORE_DECLARE, rados)
extern const struct strata_meta__store_ops strata_meta__store_rados;

static inline struct meta_rados *meta_rados_of(struct strata_meta *m)
{
    return (struct meta_rados *)m->store_priv;
}

/* ---- bcache.c ---- */
/* CLOCK_MONOTONIC in microseconds (cache ages). */
int64_t strata_meta__rados_mono_us(void);

/* ---- scan.c ---- */
/* Free the stashed read-ahead of listing pages (at disconnect). */
void strata_meta__rados_stash_free(struct meta_rados *r);

/* ---- connect.c ---- */
/* Connect as o->id with o->conf, bounded by o->timeout_s; with meta, open
 * PREFIX.meta too.  msg gets a line for a person on failure. */
int strata_meta__rados_connect(const struct strata_rados_opts *o, bool meta,
                               struct meta_rados **out, char *msg, size_t cap);
void strata_meta__rados_disconnect(struct meta_rados *r);
/* A strata_meta whose store is the cluster of o (checked: pools and layout),
 * for the rados tools and tests; close with strata_meta__rados_close. */
int strata_meta__rados_open(const struct strata_rados_opts *o, struct strata_meta **out,
                            char *msg, size_t cap);
void strata_meta__rados_close(struct strata_meta *m);
/* open.c: the ops table's close (the connection of a daemon's handle). */
void strata_meta__rados_store_close(struct strata_meta *m);
/* librados' -errno as a STRATA_E* code. */
int strata_meta__rados_err(int r);
/* End omap iterator it, which a read op leaves NULL when it did not run. */
static inline void strata_meta__rados_iter_end(rados_omap_iter_t it)
{
    if (it)
        rados_omap_get_end(it);
}
/* The lease contract (strata_meta_lease) on object oid of the meta pool:
 * its cls_lock "strata" with this gateway's cookie (lease_ctl.c). */
int strata_meta__rados_lock(struct meta_rados *r, const char *oid, enum strata_lease_op op);

/* Test-only knobs, read by the next connect: lease length (0: STRATA_LEASE_MS)
 * and audit segment size (0: RADOS_AUDIT_SEG_ENTRIES). */
void strata_meta__rados_test_knobs(unsigned lease_ms, uint64_t audit_seg);

/* ---- data.c: a data tier over one pool (RADOS.md, "Small and large data") ---- */
#define RADOS_DATA_STRIPE (4u << 20) /* bytes per data object ID.NNNNNNNN */
#define RADOS_DATA_WINDOW 8          /* stripe writes in flight per writer (at most 16) */
#define RADOS_DATA_READAHEAD 8       /* stripe reads in flight per reader */
struct strata_meta__rados_data_opts {
    size_t stripe;      /* 0: RADOS_DATA_STRIPE */
    unsigned window;    /* 0: RADOS_DATA_WINDOW; 1..16 */
    unsigned readahead; /* 0: RADOS_DATA_READAHEAD */
};
/* A tier named name over pool (opened on r's connection, which must outlive
 * the tier; strata_tier_destroy closes it).  o may be NULL (defaults).
 * STRATA_EINVAL (name, window), STRATA_ENOTFOUND (no such pool). */
int strata_meta__rados_data_create(struct meta_rados *r, const char *name, const char *pool,
                                   const struct strata_meta__rados_data_opts *o,
                                   struct strata_tier **out);

/* The hot tier of a RADOS handle m (its store_priv set): data objects in
 * PREFIX.data (RADOS.md, "Pools"), m->tiers[0].  msg says why not. */
int strata_meta__rados_hot_tier(struct strata_meta *m, char *msg, size_t cap);

/* ---- gc.c: w/ (data written before its commit) and g/ (reclaim queue) ---- */
#define RADOS_RECLAIM_GRACE_MS (15 * 60 * 1000) /* unreferenced data kept for readers */
/* The w/ and g/ keys of data id (w/ + 32 hex; g/ + 16 hex DUE ms + / + 32 hex). */
void strata_meta__rados_wkey(char out[40], const uint8_t id[STRATA_DATA_ID_LEN]);
void strata_meta__rados_gkey(char out[56], int64_t due_ms, const uint8_t id[STRATA_DATA_ID_LEN]);
/* The reclaim entry of data id of tier (NULL or "": the hot tier) due at
 * due_ms: its key into key, its value ("TIER", "-" the hot tier) returned
 * (static or tier itself).  Every g/ writer builds its entries here. */
const char *strata_meta__rados_gent(char key[56], int64_t due_ms, const char *tier,
                                   const uint8_t id[STRATA_DATA_ID_LEN]);
/* The reclaim entry of multipart version sk of okey (the raw S3 key) due
 * at due_ms: g/DUE/SK/t into key, "TIER t/K\x01SK/" (the prefix of its part
 * table chunks) into val (RADOS_GPARTS_VAL_MAX bytes); returns val's
 * length.  The gc pass removes the parts' data, then the chunks. */
#define RADOS_GPARTS_VAL_MAX (STRATA_TIER_NAME_MAX + 2 + RADOS_IKEY_MAX + 2)
size_t strata_meta__rados_gent_parts(char key[64], char *val, int64_t due_ms, const char *tier,
                                     const char *okey, const uint8_t sk[16]);
/* w/ID's value once the data is part of upload uphex (32 hex) of
 * bucket/key (part_put sets it in the part's op): "CREATED TIER @UP
 * BUCKET/KEY", malloc'ed, its length in *len.  The entry stays until the
 * complete or abort that read the part removes it; the gc pass moves one
 * whose upload is no longer open (a part committed after that read) to
 * g/. */
char *strata_meta__rados_wval_part(const char *tier, const char *uphex, const char *bucket,
                                   const char *key, size_t *len);
/* Test hook (mpu.c): fn(ud) runs in a complete or an abort after its
 * reads, before its guarded op (NULL: none). */
void strata_meta__rados_test_settle_hook(void (*fn)(void *ud), void *ud);
/* Test knob read by the next connect: the reclaim grace (0: the default). */
void strata_meta__rados_test_reclaim_grace(int64_t ms);
/* Wall clock, ms. */
int64_t strata_meta__rados_wall_ms(void);

/* ---- omap.c: one-key reads and guarded writes ---- */
/* The value of key in oid's omap: 0 with a malloc'ed copy (NUL-terminated
 * beyond len), STRATA_ENOTFOUND when the key or the object is absent. */
int strata_meta__rados_get1(rados_ioctx_t io, const char *oid, const char *key, char **val,
                            size_t *len);
/* One op on oid: [omap_cmp(cmp_key, EQ, cmp_val) when cmp_key] then set key
 * to val (val NULL: remove key).  0, STRATA_EPRECOND when the compare
 * failed, or the error. */
int strata_meta__rados_cas1(rados_ioctx_t io, const char *oid, const char *cmp_key,
                            const char *cmp_val, size_t cmp_len, const char *key,
                            const char *val, size_t len);

/* One page (at most max entries) of oid's omap under prefix after start:
 * cb per entry until it returns non-zero (a negative value is returned).
 * *more: the page was full and cb never stopped.  last (lastcap bytes):
 * the last key seen. */
int strata_meta__rados_page(rados_ioctx_t io, const char *oid, const char *start, const char *prefix,
                            unsigned max, int (*cb)(void *ud, const char *k, const char *v, size_t vl),
                            void *ud, char *last, size_t lastcap, bool *more);
/* The same page of oid's keys alone (no prefix; cb's value is empty). */
int strata_meta__rados_key_page(rados_ioctx_t io, const char *oid, const char *start, unsigned max,
                                int (*cb)(void *ud, const char *k, const char *v, size_t vl),
                                void *ud, char *last, size_t lastcap, bool *more);

/* Create oid (an empty object) unless it exists. */
int strata_meta__rados_create(rados_ioctx_t io, const char *oid);

/* ---- audit.c, bucket.c, lease_ctl.c: what their ops share ---- */
int strata_meta__rados_audit_tail(struct strata_meta *m, unsigned n,
                                  int (*cb)(void *ud, const char *line, size_t len), void *ud,
                                  char *where, size_t cap);
/* The "where" of audit_copy_open for a cluster: rados:ID:PREFIX:CONF. */
int strata_meta__rados_audit_where(char *buf, size_t cap, const struct strata_rados_opts *o);

/* The record as cached while the invalidation watch holds (bcache.c):
 * callers that find its incarnation's shards closed or gone ask again with
 * bucket_fresh, which reads `buckets` and refreshes the cache. */
int strata_meta__rados_bucket_fresh(struct strata_meta *m, const char *name,
                                    struct strata_bucket_info *out);
/* A request holding incarnation inc (read when it began, maybe from the
 * cache) met inc's shards closed or gone: the record read again (the cache
 * keeps it).  STRATA_EBUSY when the bucket exists under another
 * incarnation (the request began on a record since replaced, e.g. a cached
 * one whose notification this gateway missed: never NoSuchBucket for a
 * bucket that exists; the retry meets the current one), 0 while it is
 * still inc (being deleted), STRATA_ENOTFOUND when gone, or a read error. */
int strata_meta__rados_inc_recheck(struct strata_meta *m, const char *bucket, uint64_t inc);
/* bcache.c: drop bucket's cached record (NULL: every record). */
void strata_meta__rados_bcache_drop(struct meta_rados *r, const char *bucket);
/* lease_ctl.c: the invalidation watch holds (a cached record is current). */
bool strata_meta__rados_watch_holds(struct meta_rados *r);
/* Every bucket's name and incarnation, read at once (the walks of every
 * bucket: the INTENTS scan, the restore sweep). */
struct rados_blist {
    char (*name)[STRATA_BUCKET_NAME_MAX + 1];
    uint64_t *inc;
    size_t n, cap;
};
int strata_meta__rados_blist_read(struct strata_meta *m, struct rados_blist *l);
void strata_meta__rados_blist_free(struct rados_blist *l);
/* The configuration object of a bucket incarnation: bucket.INC (16 hex). */
void strata_meta__rados_config_oid(char oid[32], uint64_t inc);

/* Stop the re-watch thread and the watch (disconnect). */
void strata_meta__rados_watch_stop(struct meta_rados *r);

/* shards.c: close a bucket incarnation's index shards (no commit lands
 * until they open again) and say whether any key has a version; open
 * them again after a refused or failed deletion. */
int strata_meta__rados_shards_close(struct meta_rados *r, uint64_t inc, bool *empty);
/* Make a new incarnation's 8 empty shards (before its record), or remove
 * those of one whose record never committed. */
int strata_meta__rados_shards_make(struct meta_rados *r, uint64_t inc);
void strata_meta__rados_shards_remove(struct meta_rados *r, uint64_t inc);
void strata_meta__rados_shards_open(struct meta_rados *r, uint64_t inc);

/* key.c: versions in the index shards */
/* What a multipart complete adds to a key_txn (mpu.c): read, on every
 * attempt after the key's own read op, more of the key's shard oid (an
 * error ends the txn with it); write, into the guarded op of an edit that
 * is not NONE, its compares, sets and removals (the op is one apply). */
struct rados_key_ext {
    int (*read)(void *ud, rados_ioctx_t io, const char *oid);
    int (*write)(void *ud, rados_write_op_t op, const struct strata_meta__key_edit *e);
    void *ud;
};
int strata_meta__rados_key_txn_ext(struct strata_meta *m, const struct strata_meta__key_txn *t,
                                   const struct rados_key_ext *x);
/* mpu.c: part tables */
/* Into op: set the part table chunks t/K\x01SK/CCCC of version sk of key
 * (a transition's rewrite names the copies' data ids). */
int strata_meta__rados_ptab_set(rados_write_op_t op, const char *key, const uint8_t sk[16],
                                size_t nchunks, char *const *v, const size_t *vl);
/* Into op: version sk of key, multipart, is written over under the same
 * sort key (a replica sent again): its part table chunks as read now are
 * compared (any change: -ECANCELED) and removed, and every part's data
 * (of tier; not except, the new version's data id when non-NULL) queued in
 * g/ due at due_ms, all before the new version's chunks are set.  *prvals:
 * the compares' results, to free after the op ran. */
int strata_meta__rados_ptab_requeue(rados_ioctx_t io, const char *oid, rados_write_op_t op,
                                    const char *key, const uint8_t sk[16], const char *tier,
                                    const uint8_t *except, int64_t due_ms, int **prvals);

/* ---- restore.c: r/ records of restored copies ---- */
/* In the op of a commit that removes version sk of key (key.c): compare
 * its record r/K\x01SK with val as read (NULL: none, and none may come),
 * and with one remove it and queue its copy's data for reclaim at due_ms.
 * g lives until the op ran (its compare's prval). */
struct rados_rgone {
    char rk[RADOS_IKEY_MAX];
    int pr;
    int64_t due_ms;
    rados_write_op_t op;
};
int strata_meta__rados_restore_gone(rados_write_op_t op, struct rados_rgone *g, const char *key,
                                    const uint8_t sk[16], const char *val, size_t len,
                                    int64_t due_ms);
void strata_meta__rados_restore_gone_id(const uint8_t *id, void *ud);

#endif /* STRATA_META_RADOS_RADOS_H */
