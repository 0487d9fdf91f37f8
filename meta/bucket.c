/*
 * bucket.c - bucket records and bucket configuration documents.
 *
 * Bucket records ('B') and configuration documents ('C') are replicated to
 * every drive of every set; a change succeeds when every set commits it on
 * its write quorum, and is rolled back everywhere otherwise.  Reads take the
 * value that the read quorum of set 0's drives agree on byte for byte.
 * Bucket changes are serialised by bucket_mu (they are rare).
 *
 * Deletion against commits: every commit that creates a version or an
 * upload (put, multipart create and complete, delete marker) holds its
 * bucket's bucket_rw stripe shared from before its key lock until after
 * the commit, and checks under it that the bucket still exists with the
 * incarnation it began with (strata_meta__bucket_hold).  Delete holds the
 * stripe exclusively from its emptiness check to the removal of the
 * record, so no commit lands in a bucket that is being or has been
 * deleted, nor in a namesake created since.
 * Lock order: bucket_mu -> bucket_rw -> key stripe lock.
 * Threads: any caller thread.
 */
#include "meta_internal.h"

#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#include "strata/assert.h"

#define KEYBUF (STRATA_BUCKET_NAME_MAX + 256)

/*
 * Read the value of a replicated key: the first value held identically by
 * the read quorum of set 0.  STRATA_ENOTFOUND when that many drives agree
 * it is absent, STRATA_EQUORUM when no answer gathers a quorum.
 */
static int quorum_get_raw(struct strata_meta *m, const char *k, size_t klen, char **val,
                          size_t *vlen)
{
    struct meta_set *ms = &m->sets[0];
    unsigned rq = strata_set_read_quorum(ms->set);
    char *vals[STRATA_DRIVES_MAX];
    size_t lens[STRATA_DRIVES_MAX];
    int rcs[STRATA_DRIVES_MAX];
    unsigned nread = 0, absent = 0;
    int rc = STRATA_EQUORUM;
    for (unsigned d = 0; d < ms->n; d++) {
        if (!strata_meta__drive_readable(m, 0, d))
            continue;
        unsigned i = nread++;
        vals[i] = NULL;
        rcs[i] = strata_meta__drive_get(m, 0, d, k, klen, &vals[i], &lens[i]);
        if (rcs[i] == STRATA_ENOTFOUND) {
            if (++absent >= rq) {
                rc = STRATA_ENOTFOUND;
                break;
            }
            continue;
        }
        if (rcs[i] != 0)
            continue;
        unsigned same = 0;
        for (unsigned j = 0; j <= i; j++)
            if (rcs[j] == 0 && lens[j] == lens[i] && memcmp(vals[j], vals[i], lens[i]) == 0)
                same++;
        if (same >= rq) {
            *val = vals[i];
            *vlen = lens[i];
            vals[i] = NULL;
            rc = 0;
            break;
        }
    }
    for (unsigned j = 0; j < nread; j++)
        free(vals[j]);
    return rc;
}

/*
 * Put (v != NULL) or delete key k on every drive of every set.  undo_v is
 * the previous value to restore on failure (NULL: delete on failure).
 */
static int replicated_write(struct strata_meta *m, const char *k, size_t klen, const char *v,
                            size_t vlen, const char *undo_v, size_t undo_len)
{
    int rc = 0;
    unsigned done;
    for (done = 0; done < m->nsets; done++) {
        unsigned n = m->sets[done].n;
        rocksdb_writebatch_t *wbs[STRATA_DRIVES_MAX] = {0}, *undo[STRATA_DRIVES_MAX] = {0};
        for (unsigned d = 0; d < n; d++) {
            wbs[d] = rocksdb_writebatch_create();
            undo[d] = rocksdb_writebatch_create();
            if (v)
                rocksdb_writebatch_put(wbs[d], k, klen, v, vlen);
            else
                rocksdb_writebatch_delete(wbs[d], k, klen);
            if (undo_v)
                rocksdb_writebatch_put(undo[d], k, klen, undo_v, undo_len);
            else
                rocksdb_writebatch_delete(undo[d], k, klen);
        }
        rc = strata_meta__set_commit(m, done, wbs, undo);
        for (unsigned d = 0; d < n; d++) {
            rocksdb_writebatch_destroy(wbs[d]);
            rocksdb_writebatch_destroy(undo[d]);
        }
        if (rc)
            break;
    }
    if (rc) {
        /* Sets that already committed go back to the old value. */
        for (unsigned s = 0; s < done; s++) {
            unsigned n = m->sets[s].n;
            rocksdb_writebatch_t *undo[STRATA_DRIVES_MAX] = {0};
            bool ok[STRATA_DRIVES_MAX];
            for (unsigned d = 0; d < n; d++) {
                undo[d] = rocksdb_writebatch_create();
                if (undo_v)
                    rocksdb_writebatch_put(undo[d], k, klen, undo_v, undo_len);
                else
                    rocksdb_writebatch_delete(undo[d], k, klen);
            }
            strata_meta__set_apply(m, s, undo, ok);
            for (unsigned d = 0; d < n; d++)
                rocksdb_writebatch_destroy(undo[d]);
        }
    }
    return rc;
}

static bool name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    return n > 0 && n <= STRATA_BUCKET_NAME_MAX;
}

int strata_meta_bucket_get(struct strata_meta *m, const char *name, struct strata_bucket_info *out)
{
    if (!name_ok(name))
        return STRATA_ENOTFOUND;
    char k[KEYBUF];
    size_t kl = strata_meta__key_bucket(k, sizeof(k), name);
    char *v;
    size_t vl;
    int rc = quorum_get_raw(m, k, kl, &v, &vl);
    if (rc)
        return rc;
    struct strata_bucket_info tmp;
    rc = strata_meta__bucket_decode(v, vl, &tmp);
    free(v);
    if (rc == 0 && out)
        *out = tmp;
    return rc;
}

int strata_meta_bucket_create(struct strata_meta *m, const struct strata_bucket_info *b)
{
    if (!b || !name_ok(b->name))
        return STRATA_EINVAL;
    /* Object Lock needs versioning, enabled for good. */
    if (b->object_lock && b->versioning != STRATA_VERSIONING_ENABLED)
        return STRATA_EINVAL;
    char k[KEYBUF];
    size_t kl = strata_meta__key_bucket(k, sizeof(k), b->name);
    pthread_mutex_lock(&m->bucket_mu);
    int rc = strata_meta_bucket_get(m, b->name, NULL);
    if (rc == 0) {
        rc = STRATA_EEXISTS;
    } else if (rc == STRATA_ENOTFOUND) {
        char *v;
        size_t vl;
        struct strata_bucket_info nb = *b;
        if (RAND_bytes((unsigned char *)&nb.incarnation, sizeof(nb.incarnation)) != 1)
            nb.incarnation = (uint64_t)nb.created_ms; /* unique enough for one name */
        rc = strata_meta__bucket_encode(&nb, &v, &vl);
        if (rc == 0) {
            rc = replicated_write(m, k, kl, v, vl, NULL, 0);
            free(v);
        }
    }
    pthread_mutex_unlock(&m->bucket_mu);
    return rc;
}

/*
 * Read-modify-write of a bucket record under bucket_mu: fn changes b (or
 * returns an error, which leaves the record untouched).
 */
static int bucket_update(struct strata_meta *m, const char *name,
                         int (*fn)(struct strata_bucket_info *b, void *ud), void *ud)
{
    if (!name_ok(name))
        return STRATA_ENOTFOUND;
    char k[KEYBUF];
    size_t kl = strata_meta__key_bucket(k, sizeof(k), name);
    pthread_mutex_lock(&m->bucket_mu);
    char *old = NULL, *v = NULL;
    size_t ol = 0, vl;
    int rc = quorum_get_raw(m, k, kl, &old, &ol);
    struct strata_bucket_info b;
    if (rc == 0)
        rc = strata_meta__bucket_decode(old, ol, &b);
    if (rc == 0)
        rc = fn(&b, ud);
    if (rc == 0)
        rc = strata_meta__bucket_encode(&b, &v, &vl);
    if (rc == 0)
        rc = replicated_write(m, k, kl, v, vl, old, ol);
    pthread_mutex_unlock(&m->bucket_mu);
    free(old);
    free(v);
    return rc;
}

static int set_versioning_cb(struct strata_bucket_info *b, void *ud)
{
    int versioning = *(const int *)ud;
    /* Object Lock keeps versioning enabled for good (InvalidBucketState). */
    if (b->object_lock && versioning != STRATA_VERSIONING_ENABLED)
        return STRATA_EINVAL;
    /* Once enabled, a bucket can only be suspended, never unversioned. */
    if (versioning == STRATA_VERSIONING_OFF && b->versioning != STRATA_VERSIONING_OFF)
        versioning = STRATA_VERSIONING_SUSPENDED;
    b->versioning = versioning;
    return 0;
}

int strata_meta_bucket_set_versioning(struct strata_meta *m, const char *name, int versioning)
{
    if (versioning != STRATA_VERSIONING_ENABLED && versioning != STRATA_VERSIONING_SUSPENDED &&
        versioning != STRATA_VERSIONING_OFF)
        return STRATA_EINVAL;
    return bucket_update(m, name, set_versioning_cb, &versioning);
}

struct lock_set {
    int mode;
    unsigned days, years;
};

static int lock_set_cb(struct strata_bucket_info *b, void *ud)
{
    const struct lock_set *ls = ud;
    /* Enabling the lock on an existing bucket needs versioning enabled. */
    if (!b->object_lock && b->versioning != STRATA_VERSIONING_ENABLED)
        return STRATA_EINVAL;
    b->object_lock = true;
    b->lock_mode = ls->mode;
    b->lock_days = ls->mode ? ls->days : 0;
    b->lock_years = ls->mode ? ls->years : 0;
    return 0;
}

int strata_meta_bucket_lock_set(struct strata_meta *m, const char *name, int mode,
                                unsigned days, unsigned years,
                                const struct strata_lock_actor *actor)
{
    if (mode < STRATA_LOCK_NONE || mode > STRATA_LOCK_COMPLIANCE ||
        (mode && (days == 0) == (years == 0)))
        return STRATA_EINVAL;
    struct lock_set ls = {mode, days, years};
    int rc = bucket_update(m, name, lock_set_cb, &ls);
    char detail[96];
    snprintf(detail, sizeof(detail), "default=%s days=%u years=%u",
             mode == STRATA_LOCK_COMPLIANCE   ? "COMPLIANCE"
             : mode == STRATA_LOCK_GOVERNANCE ? "GOVERNANCE"
                                              : "none",
             days, years);
    struct strata_audit_event ev = {actor && actor->user ? actor->user : "-", name, NULL, NULL,
                                    "PutObjectLockConfiguration",
                                    rc == 0 ? "allowed" : "failed", detail};
    if (rc == 0 || rc == STRATA_EINVAL) {
        int arc = strata_meta_audit_append(m, &ev);
        if (rc == 0)
            rc = arc;
    }
    return rc;
}

/* True when any record remains under prefix p in any set. */
static int prefix_used(struct strata_meta *m, const char *p, size_t pl, bool *used)
{
    char hi[KEYBUF];
    memcpy(hi, p, pl);
    hi[pl - 1]++; /* p ends with 0x00: the range is [p, p with 0x01) */
    *used = false;
    for (unsigned s = 0; s < m->nsets && !*used; s++) {
        struct meta_merge mg;
        int rc = strata_meta__merge_open(&mg, m, &s, 1, 0, hi, pl);
        if (rc)
            return rc;
        strata_meta__merge_seek(&mg, p, pl);
        const char *k, *v;
        size_t kl, vl;
        /* Tombstones of deleted versions do not keep a bucket in use. */
        while ((*used = strata_meta__merge_cur(&mg, &k, &kl, &v, &vl)) &&
               strata_meta__is_tomb(v, vl))
            strata_meta__merge_next(&mg);
        strata_meta__merge_close(&mg);
    }
    return 0;
}

static pthread_rwlock_t *bucket_stripe(struct strata_meta *m, const char *bucket)
{
    return &m->bucket_rw[strata_crc32c(0, bucket, strlen(bucket)) % META_BUCKET_STRIPES];
}

int strata_meta__bucket_hold(struct strata_meta *m, const char *bucket, uint64_t incarnation,
                             pthread_rwlock_t **held)
{
    pthread_rwlock_t *l = bucket_stripe(m, bucket);
    pthread_rwlock_rdlock(l);
    struct strata_bucket_info b;
    int rc = strata_meta_bucket_get(m, bucket, &b);
    if (rc == 0 && b.incarnation != incarnation)
        rc = STRATA_ENOTFOUND; /* deleted and created again since */
    if (rc) {
        pthread_rwlock_unlock(l);
        l = NULL;
    }
    *held = l;
    return rc;
}

void strata_meta__bucket_release(pthread_rwlock_t *held)
{
    if (held)
        pthread_rwlock_unlock(held);
}

/* Is anything left under 'kind' bucket 0x00 in any set? */
static int bucket_used(struct strata_meta *m, const char *name, char kind, bool *used)
{
    char p[KEYBUF];
    size_t bl = strlen(name);
    p[0] = kind;
    memcpy(p + 1, name, bl);
    p[bl + 1] = 0;
    return prefix_used(m, p, bl + 2, used);
}

struct upl {
    size_t n;
    char (*key)[STRATA_KEY_MAX + 1];
    char (*id)[STRATA_UPLOAD_ID_MAX + 1];
};

static int upl_cb(const struct strata_mpu_list_entry *e, void *ud)
{
    struct upl *u = ud;
    if (e->is_prefix || !e->info)
        return 0;
    snprintf(u->key[u->n], sizeof(u->key[u->n]), "%s", e->key);
    snprintf(u->id[u->n], sizeof(u->id[u->n]), "%s", e->info->upload_id);
    u->n++;
    return 0;
}

/* Abort every incomplete upload of the bucket, a page at a time. */
static int abort_uploads(struct strata_meta *m, const char *name)
{
    enum { PAGE = 1000 };
    struct upl u = {0, calloc(PAGE, sizeof(*u.key)), calloc(PAGE, sizeof(*u.id))};
    int rc = u.key && u.id ? 0 : STRATA_ENOMEM;
    while (rc == 0) {
        struct strata_mpu_list_opts o = {.bucket = name, .max_uploads = PAGE};
        struct strata_mpu_list_result res;
        u.n = 0;
        rc = strata_mpu_list(m, &o, upl_cb, &u, &res);
        if (rc || u.n == 0)
            break;
        size_t aborted = 0;
        for (size_t i = 0; rc == 0 && i < u.n; i++) {
            rc = strata_mpu_abort(m, name, u.key[i], u.id[i]);
            if (rc == 0)
                aborted++;
            else if (rc == STRATA_ENOTFOUND)
                rc = 0; /* completed or aborted meanwhile */
        }
        if (aborted == 0)
            break; /* only records no quorum holds: swept with the bucket */
    }
    free(u.key);
    free(u.id);
    return rc;
}

/* Delete every key 'kind' name 0x00 ... on every drive of every set. */
static void sweep(struct strata_meta *m, char kind, const char *name)
{
    char p[KEYBUF], hi[KEYBUF];
    size_t bl = strlen(name);
    p[0] = kind;
    memcpy(p + 1, name, bl);
    p[bl + 1] = 0;
    memcpy(hi, p, bl + 2);
    hi[bl + 1] = 1;
    /* Keys one by one, not a range delete: the writer threads merge
     * batches with rocksdb_writebatch_iterate, which carries only puts and
     * point deletes. */
    for (unsigned s = 0; s < m->nsets; s++) {
        unsigned n = m->sets[s].n;
        rocksdb_writebatch_t *wbs[STRATA_DRIVES_MAX] = {0};
        bool ok[STRATA_DRIVES_MAX];
        for (unsigned d = 0; d < n; d++)
            wbs[d] = rocksdb_writebatch_create();
        struct meta_merge mg;
        if (strata_meta__merge_open(&mg, m, &s, 1, MERGE_MAINTENANCE, hi, bl + 2) == 0) {
            strata_meta__merge_seek(&mg, p, bl + 2);
            const char *ck;
            size_t ckl;
            while (strata_meta__merge_cur(&mg, &ck, &ckl, NULL, NULL)) {
                for (unsigned d = 0; d < n; d++)
                    rocksdb_writebatch_delete(wbs[d], ck, ckl);
                strata_meta__merge_next(&mg);
            }
            strata_meta__merge_close(&mg);
        }
        strata_meta__set_apply(m, s, wbs, ok);
        for (unsigned d = 0; d < n; d++)
            rocksdb_writebatch_destroy(wbs[d]);
    }
}

int strata_meta_bucket_delete(struct strata_meta *m, const char *name)
{
    if (!name_ok(name))
        return STRATA_ENOTFOUND;
    char k[KEYBUF];
    size_t kl = strata_meta__key_bucket(k, sizeof(k), name);
    pthread_mutex_lock(&m->bucket_mu);
    pthread_rwlock_t *stripe = bucket_stripe(m, name);
    pthread_rwlock_wrlock(stripe);
    char *old = NULL;
    size_t ol = 0;
    int rc = quorum_get_raw(m, k, kl, &old, &ol);
    bool used = false;
    if (rc == 0)
        rc = bucket_used(m, name, 'O', &used);
    if (rc == 0 && used)
        rc = STRATA_ENOTEMPTY;
    /* Versions keep a bucket, uploads do not (AWS aborts them).  No upload
     * can be created meanwhile: that needs the stripe shared. */
    if (rc == 0)
        rc = abort_uploads(m, name);
    if (rc == 0)
        rc = replicated_write(m, k, kl, NULL, 0, old, ol);
    if (rc == 0) {
        /* Configuration documents go with the bucket; a leftover one would
         * reappear under a new bucket of the same name, so sweep them on
         * every drive, and any upload record a drive kept past its abort
         * (a failure here only leaves garbage for heal). */
        sweep(m, 'C', name);
        sweep(m, 'U', name);
        sweep(m, 'D', name); /* index entries a drive kept past a delete */
    }
    pthread_rwlock_unlock(stripe);
    pthread_mutex_unlock(&m->bucket_mu);
    free(old);
    return rc;
}

int strata_meta_bucket_list(struct strata_meta *m,
                            int (*cb)(const struct strata_bucket_info *b, void *ud), void *ud)
{
    unsigned s0 = 0;
    struct meta_merge mg;
    int rc = strata_meta__merge_open(&mg, m, &s0, 1, 0, "C", 1);
    if (rc)
        return rc;
    strata_meta__merge_seek(&mg, "B", 1);
    const char *k;
    size_t kl;
    char name[STRATA_BUCKET_NAME_MAX + 1];
    while (rc == 0 && strata_meta__merge_cur(&mg, &k, &kl, NULL, NULL)) {
        if (kl < 2 || kl - 1 > STRATA_BUCKET_NAME_MAX) {
            strata_meta__merge_next(&mg);
            continue;
        }
        memcpy(name, k + 1, kl - 1);
        name[kl - 1] = 0;
        strata_meta__merge_next(&mg);
        struct strata_bucket_info b;
        /* Each name is confirmed by quorum: a drive may hold a stale one. */
        int grc = strata_meta_bucket_get(m, name, &b);
        if (grc == STRATA_ENOTFOUND)
            continue;
        if (grc) {
            rc = grc;
            break;
        }
        rc = cb(&b, ud);
    }
    strata_meta__merge_close(&mg);
    return rc;
}

static bool kind_ok(const char *kind)
{
    size_t n = kind ? strlen(kind) : 0;
    return n > 0 && n <= 64;
}

int strata_meta_bucket_config_put(struct strata_meta *m, const char *bucket, const char *kind,
                                  const void *doc, size_t len)
{
    if (!name_ok(bucket) || !kind_ok(kind) || (len && !doc))
        return STRATA_EINVAL;
    char k[KEYBUF];
    size_t kl = strata_meta__key_config(k, sizeof(k), bucket, kind);
    pthread_mutex_lock(&m->bucket_mu);
    int rc = strata_meta_bucket_get(m, bucket, NULL);
    char *old = NULL, *v = NULL;
    size_t ol = 0;
    if (rc == 0) {
        int g = quorum_get_raw(m, k, kl, &old, &ol);
        if (g && g != STRATA_ENOTFOUND)
            rc = g;
    }
    if (rc == 0 && len) {
        v = malloc(len + 1);
        if (!v)
            rc = STRATA_ENOMEM;
        else {
            v[0] = VAL_VERSION_BYTE;
            memcpy(v + 1, doc, len);
        }
    }
    if (rc == 0)
        rc = replicated_write(m, k, kl, len ? v : NULL, len + 1, old, ol);
    pthread_mutex_unlock(&m->bucket_mu);
    free(old);
    free(v);
    return rc;
}

int strata_meta_bucket_config_get(struct strata_meta *m, const char *bucket, const char *kind,
                                  void **doc, size_t *len)
{
    if (!name_ok(bucket) || !kind_ok(kind))
        return STRATA_ENOTFOUND;
    char k[KEYBUF];
    size_t kl = strata_meta__key_config(k, sizeof(k), bucket, kind);
    char *v;
    size_t vl;
    int rc = quorum_get_raw(m, k, kl, &v, &vl);
    if (rc)
        return rc;
    if (vl < 1 || (uint8_t)v[0] != VAL_VERSION_BYTE) {
        free(v);
        return STRATA_ECORRUPT;
    }
    memmove(v, v + 1, vl - 1);
    *doc = v;
    *len = vl - 1;
    return 0;
}
