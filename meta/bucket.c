/*
 * bucket.c - the bucket rules: create, delete, versioning, the default
 * Object Lock, configuration documents.
 *
 * The rules are decide functions of a bucket_txn (store.h): they see the
 * record as the store read it and return the edit or an error; the store
 * makes the read-decide-write atomic and keeps the records (locally on
 * every drive of every set, meta/local/bucket.c).  After each committed
 * change the other gateways' caches are invalidated before it is answered.
 * Threads: any caller thread.
 */
#include "meta_internal.h"
#include "store.h"

#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

static bool name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    return n > 0 && n <= STRATA_BUCKET_NAME_MAX;
}

/* Run t and, once its edit is committed, tell the other gateways. */
static int bucket_txn(struct strata_meta *m, const struct strata_meta__bucket_txn *t)
{
    int rc = m->store->bucket_txn(m, t);
    return rc ? rc : m->store->invalidate(m, t->name);
}

int strata_meta_bucket_get(struct strata_meta *m, const char *name, struct strata_bucket_info *out)
{
    if (!name_ok(name))
        return STRATA_ENOTFOUND;
    return m->store->bucket_get(m, name, out);
}

static int create_decide(void *ud, const struct strata_meta__bucket_view *view,
                         enum strata_meta__bucket_edit *edit, struct strata_bucket_info *next)
{
    if (view->exists)
        return view->info_rc ? view->info_rc : STRATA_EEXISTS;
    *next = *(const struct strata_bucket_info *)ud;
    *edit = STRATA_META__BUCKET_PUT;
    return 0;
}

int strata_meta_bucket_create(struct strata_meta *m, const struct strata_bucket_info *b)
{
    if (!b || !name_ok(b->name))
        return STRATA_EINVAL;
    /* Object Lock needs versioning, enabled for good. */
    if (b->object_lock && b->versioning != STRATA_VERSIONING_ENABLED)
        return STRATA_EINVAL;
    /* Chosen once, outside decide, which must be pure. */
    struct strata_bucket_info nb = *b;
    if (RAND_bytes((unsigned char *)&nb.incarnation, sizeof(nb.incarnation)) != 1)
        nb.incarnation = (uint64_t)nb.created_ms; /* unique enough for one name */
    struct strata_meta__bucket_txn t = {.name = b->name, .decide = create_decide, .ud = &nb};
    return bucket_txn(m, &t);
}

/* A change of an existing record: fn changes b or returns an error. */
struct change {
    int (*fn)(struct strata_bucket_info *b, const void *arg);
    const void *arg;
};

static int change_decide(void *ud, const struct strata_meta__bucket_view *view,
                         enum strata_meta__bucket_edit *edit, struct strata_bucket_info *next)
{
    const struct change *c = ud;
    if (!view->exists)
        return STRATA_ENOTFOUND;
    if (view->info_rc)
        return view->info_rc;
    *next = view->info;
    *edit = STRATA_META__BUCKET_PUT;
    return c->fn(next, c->arg);
}

static int bucket_change(struct strata_meta *m, const char *name,
                         int (*fn)(struct strata_bucket_info *b, const void *arg), const void *arg)
{
    if (!name_ok(name))
        return STRATA_ENOTFOUND;
    struct change c = {fn, arg};
    struct strata_meta__bucket_txn t = {.name = name, .decide = change_decide, .ud = &c};
    return bucket_txn(m, &t);
}

static int set_versioning_cb(struct strata_bucket_info *b, const void *arg)
{
    int versioning = *(const int *)arg;
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
    return bucket_change(m, name, set_versioning_cb, &versioning);
}

struct lock_set {
    int mode;
    unsigned days, years;
};

static int lock_set_cb(struct strata_bucket_info *b, const void *arg)
{
    const struct lock_set *ls = arg;
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
    int rc = bucket_change(m, name, lock_set_cb, &ls);
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
        if (rc == STRATA_ENOTIMPL)
            rc = 0; /* a store without uploads yet (RADOS): none to abort */
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

static int delete_decide(void *ud, const struct strata_meta__bucket_view *view,
                         enum strata_meta__bucket_edit *edit, struct strata_bucket_info *next)
{
    (void)ud;
    (void)next;
    if (!view->exists)
        return STRATA_ENOTFOUND;
    if (!view->empty)
        return STRATA_ENOTEMPTY;
    *edit = STRATA_META__BUCKET_REMOVE;
    return 0;
}

/* Versions keep a bucket, uploads do not (AWS aborts them).  No upload
 * can be created meanwhile: the txn holds off the bucket's commits. */
static int delete_before(struct strata_meta *m, const char *name, void *ud)
{
    (void)ud;
    return abort_uploads(m, name);
}

int strata_meta_bucket_delete(struct strata_meta *m, const char *name)
{
    if (!name_ok(name))
        return STRATA_ENOTFOUND;
    struct strata_meta__bucket_txn t = {.name = name,
                                        .want_empty = true,
                                        .decide = delete_decide,
                                        .before_remove = delete_before};
    return bucket_txn(m, &t);
}

int strata_meta_bucket_list(struct strata_meta *m,
                            int (*cb)(const struct strata_bucket_info *b, void *ud), void *ud)
{
    return m->store->bucket_list(m, cb, ud);
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
    /* The document belongs to this incarnation of the bucket: the store
     * refuses it if the bucket is deleted (or created again) meanwhile. */
    struct strata_bucket_info b;
    int rc = m->store->bucket_get(m, bucket, &b);
    if (rc == 0)
        rc = m->store->config_put(m, bucket, b.incarnation, kind, doc, len);
    return rc ? rc : m->store->invalidate(m, bucket);
}

int strata_meta_bucket_config_get(struct strata_meta *m, const char *bucket, const char *kind,
                                  void **doc, size_t *len)
{
    if (!name_ok(bucket) || !kind_ok(kind))
        return STRATA_ENOTFOUND;
    return m->store->config_get(m, bucket, kind, doc, len);
}
