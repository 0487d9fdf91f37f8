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
};

static inline struct meta_rados *meta_rados_of(struct strata_meta *m)
{
    return (struct meta_rados *)m->store_priv;
}

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
unsigned strata_meta__rados_lease_renew_ms(struct strata_meta *m);

/* Message queues q.NAME (queue.c); the ops of store.h. */
int strata_meta__rados_queue_push(struct strata_meta *m, const char *name, const void *msg,
                                  size_t len);
int strata_meta__rados_queue_read(struct strata_meta *m, const char *name, const char *after,
                                  size_t max, struct strata_meta_queue_ent *out, size_t *n);
int strata_meta__rados_queue_remove(struct strata_meta *m, const char *name,
                                    const char *const *keys, size_t n);
int strata_meta__rados_queue_count(struct strata_meta *m, const char *name, uint64_t upto,
                                   uint64_t *n);
int strata_meta__rados_queue_lease(struct strata_meta *m, const char *name,
                                   enum strata_lease_op op);
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
/* store op pending_add: w/ID on bucket/key's shard, guarded by \x01layout. */
int strata_meta__rados_pending_add(struct strata_meta *m, const char *bucket, uint64_t inc,
                                   const char *key, const char *tier,
                                   const uint8_t id[STRATA_DATA_ID_LEN]);
/* w/ID's value once the data is part of upload uphex (32 hex) of
 * bucket/key (part_put sets it in the part's op): "CREATED TIER @UP
 * BUCKET/KEY", malloc'ed, its length in *len.  The entry stays until the
 * complete or abort that read the part removes it; the gc pass moves one
 * whose upload is no longer open (a part committed after that read) to
 * g/. */
char *strata_meta__rados_wval_part(const char *tier, const char *uphex, const char *bucket,
                                   const char *key, size_t *len);
/* store op orphan_round, the gc pass under the `gc` lease: w/ entries older
 * than age_s move to g/ (due now), due g/ entries' data is removed, then
 * the entry.  *removed counts data objects removed.  0 also when another
 * gateway holds the lease (nothing done). */
int strata_meta__rados_gc_round(struct strata_meta *m, struct strata_orphans **state,
                                unsigned age_s, uint64_t *removed);
/* Test hook (mpu.c): fn(ud) runs in a complete or an abort after its
 * reads, before its guarded op (NULL: none). */
void strata_meta__rados_test_settle_hook(void (*fn)(void *ud), void *ud);
/* Test knob read by the next connect: the reclaim grace (0: the default). */
void strata_meta__rados_test_reclaim_grace(int64_t ms);
/* Wall clock, ms. */
int64_t strata_meta__rados_wall_ms(void);

/* ---- cstat.c: the cluster's view for `strata admin info` ---- */
int strata_meta__rados_cluster_stat(struct strata_meta *m, struct strata_meta_cluster_stat *out);

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

/* ---- the ops (state_clock.c, audit.c, bucket.c, lease_ctl.c) ---- */
int strata_meta__rados_state_put(struct strata_meta *m, const char *name, const void *doc,
                                 size_t len);
int strata_meta__rados_state_get(struct strata_meta *m, const char *name, void **doc,
                                 size_t *len);
int64_t strata_meta__rados_mark_read(struct strata_meta *m);
int strata_meta__rados_mark_advance(struct strata_meta *m, int64_t lock_ms);

int strata_meta__rados_audit_open(struct strata_meta *m, strata_meta__audit_tail_fn tail,
                                  struct strata_meta__audit_found *found);
void strata_meta__rados_audit_close(struct strata_meta *m);
int strata_meta__rados_audit_append(struct strata_meta *m, const char *body,
                                    strata_meta__audit_seal_fn seal);
uint64_t strata_meta__rados_audit_last_seq(struct strata_meta *m);
int strata_meta__rados_audit_copy_open(const char *where, struct strata_meta__audit_copy **out);
bool strata_meta__rados_audit_copy_anchor(const char *where, uint64_t *seq, char hash[65]);
int strata_meta__rados_audit_copy_next(struct strata_meta__audit_copy *c, const char **line,
                                       size_t *len);
void strata_meta__rados_audit_copy_close(struct strata_meta__audit_copy *c);
int strata_meta__rados_audit_tail(struct strata_meta *m, unsigned n,
                                  int (*cb)(void *ud, const char *line, size_t len), void *ud,
                                  char *where, size_t cap);
/* The "where" of audit_copy_open for a cluster: rados:ID:PREFIX:CONF. */
int strata_meta__rados_audit_where(char *buf, size_t cap, const struct strata_rados_opts *o);
int strata_meta__rados_audit_chain(struct strata_meta *m, char *copy, size_t ccap, char *name,
                                   size_t ncap);

int strata_meta__rados_bucket_txn(struct strata_meta *m, const struct strata_meta__bucket_txn *t);
/* The record as cached while the invalidation watch holds (bcache.c):
 * callers that find its incarnation's shards closed or gone ask again with
 * bucket_fresh, which reads `buckets` and refreshes the cache. */
int strata_meta__rados_bucket_get(struct strata_meta *m, const char *name,
                                  struct strata_bucket_info *out);
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
int strata_meta__rados_bucket_list(struct strata_meta *m,
                                   int (*cb)(const struct strata_bucket_info *b, void *ud),
                                   void *ud);
int strata_meta__rados_config_put(struct strata_meta *m, const char *bucket, uint64_t inc,
                                  const char *kind, const void *doc, size_t len);
int strata_meta__rados_config_get(struct strata_meta *m, const char *bucket, const char *kind,
                                  void **doc, size_t *len);
/* The configuration object of a bucket incarnation: bucket.INC (16 hex). */
void strata_meta__rados_config_oid(char oid[32], uint64_t inc);

int strata_meta__rados_lease(struct strata_meta *m, const char *name, enum strata_lease_op op);
int strata_meta__rados_invalidate(struct strata_meta *m, const char *bucket);
int strata_meta__rados_on_invalidate(struct strata_meta *m, strata_meta__invalidate_fn cb,
                                     void *ud);
/* Ask the other gateways on ctl for their lock clocks (RADOS.md,
 * "Retention clock"): the number of answers, their highest in *max_ms. */
int strata_meta__rados_clock_peers(struct strata_meta *m, int64_t *max_ms);
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

/* key.c, scan.c: versions in the index shards */
int strata_meta__rados_key_txn(struct strata_meta *m, const struct strata_meta__key_txn *t);
int strata_meta__rados_key_read(struct strata_meta *m, const struct strata_meta__key_txn *t);
int strata_meta__rados_key_get(struct strata_meta *m, const char *bucket, const char *key,
                               const char *version_id, strata_meta__key_found_fn fn, void *ud);
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
/* mpu.c: upload and part records */
int strata_meta__rados_upload_create(struct strata_meta *m, const char *bucket, const char *key,
                                     uint64_t inc, const uint8_t *up, const void *v, size_t vl);
int strata_meta__rados_upload_get(struct strata_meta *m, const char *bucket, const char *key,
                                  const uint8_t *up, struct meta_upload *u);
int strata_meta__rados_part_put(struct strata_meta *m, const char *bucket, const char *key,
                                const uint8_t *up, const struct meta_part *p,
                                struct strata_meta__data_refs *old);
int strata_meta__rados_parts_read(struct strata_meta *m, const char *bucket, const char *key,
                                  const uint8_t *up, unsigned from,
                                  int (*cb)(void *ud, const struct meta_part *p), void *ud);
int strata_meta__rados_mpu_complete(struct strata_meta *m, const struct strata_meta__mpu_txn *t,
                                    struct strata_meta__data_refs *unref);
int strata_meta__rados_mpu_abort(struct strata_meta *m, const char *bucket, const char *key,
                                 const uint8_t *up, struct strata_meta__data_refs *unref);
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
int strata_meta__rados_ptab_get(struct strata_meta *m, const char *bucket, const char *key,
                                const uint8_t sk[16], unsigned c, char **v, size_t *vl);
int strata_meta__rados_scan_open(struct strata_meta *m, const struct strata_meta__scan_spec *spec,
                                 struct strata_meta__scan **out);
int strata_meta__rados_scan_next(struct strata_meta__scan *s, struct strata_meta__scan_ent *e);
bool strata_meta__rados_scan_skip_past(struct strata_meta__scan *s, const char *p, size_t n);
void strata_meta__rados_scan_close(struct strata_meta__scan *s);

/* intent.c: a transition's x/ records, and the reclaim of its losing copy */
int strata_meta__rados_intent_put(struct strata_meta *m, const char *bucket, const char *key,
                                  const uint8_t sk[16], const void *v, size_t vl);
int strata_meta__rados_intent_get(struct strata_meta *m, const char *bucket, const char *key,
                                  const uint8_t sk[16], char **v, size_t *vl);
int strata_meta__rados_intent_resolve(struct strata_meta *m, const char *bucket, const char *key,
                                      const uint8_t sk[16], const void *v, size_t vl,
                                      const struct strata_meta__intent_loss *loss, size_t n);

extern const struct strata_meta__store_ops strata_meta__store_rados;

/* ---- restore.c: r/ records of restored copies (store.h restore_*) ---- */
int strata_meta__rados_restore_get(struct strata_meta *m, const char *bucket, const char *key,
                                   const uint8_t sk[16], char **v, size_t *vl);
int strata_meta__rados_restore_swap(struct strata_meta *m,
                                    const struct strata_meta__restore_swap *s);
int strata_meta__rados_restore_walk(struct strata_meta *m, strata_meta__restore_walk_fn cb,
                                    void *ud);
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
