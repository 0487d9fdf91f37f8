/*
 * repl_handlers.c - Put/Get/DeleteBucketReplication and the hooks S3
 * handlers call around a write, handed to the S3 API as the table
 * strata_repl_s3_hooks (repl.h, s3/repl_hooks.h).
 *
 * The configuration is validated as AWS validates it (the bucket's
 * versioning must be Enabled, each rule's destination a configured
 * target) and stored in canonical form as the bucket's "replication"
 * configuration document, cached parsed (bucket_doc_cache.h) because
 * every write of the bucket consults it.
 */
#include "repl.h"
#include "repl_config.h"
#include "repl_internal.h"

#include "authz.h"
#include "bucket_doc_cache.h"
#include "s3_bucket_config.h"
#include "sbuf.h"
#include "srv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

STRATA_BUCKET_CONFIG_CACHE(cache, "replication", rconf, struct strata_repl_conf,
                           strata_repl_config_free, strata_repl_config_format,
                           strata_repl_config_parse, NULL, NULL);

static void config_get(struct strata_req *r)
{
    strata_bucket_config_send_cached(r, &cache, S3E_ReplicationConfigurationNotFoundError,
                                     STRATA_SRV_XML_BODY_MAX * 2, rconf_format);
}

/* A strata_repl_dest_cb: ud is the daemon's struct strata_repl (or NULL). */
static bool dest_known(void *ud, const char *account)
{
    return strata_repl__target_find(ud, account) >= 0;
}

static void config_put(struct strata_req *r)
{
    struct strata_repl_conf *c = NULL;
    const char *msg = NULL;
    enum s3_err e = strata_repl_config_parse(r->body.data ? r->body.data : "", r->body.len,
                                             dest_known, r->srv->repl, &c, &msg);
    if (!e && r->binfo.versioning != STRATA_VERSIONING_ENABLED) {
        msg = "Versioning must be 'Enabled' on the bucket to apply a replication configuration";
        e = S3E_InvalidRequest;
    }
    if (e) {
        strata_repl_config_free(c);
        r->err_msg = msg;
        strata_req_error(r, e, 0);
        return;
    }
    for (size_t i = 0; i < c->n; i++)
        if (!c->r[i].id) {
            c->r[i].id = strata_doc_id_new(); /* AWS names a rule given without an ID */
        }
    /* The stored form must parse again (the cache reloads it with the
     * request-body parser and its ceiling). */
    struct strata_sbuf b;
    strata_sbuf_init(&b, STRATA_SRV_XML_BODY_MAX);
    strata_repl_config_format(&b, c);
    strata_repl_config_free(c);
    if (b.failed) {
        strata_sbuf_fini(&b);
        r->err_msg = "The replication configuration is too large.";
        strata_req_error(r, S3E_InvalidArgument, 0);
        return;
    }
    strata_bucket_config_write(r, "replication", b.data, b.len, &cache, 200);
    strata_sbuf_fini(&b);
}

static void config_delete(struct strata_req *r)
{
    strata_bucket_config_write(r, "replication", NULL, 0, &cache, 204);
}

/* ---- hooks ------------------------------------------------------------ */

/* The rule of c selecting key (tags: stored form): the enabled one with
 * the highest Priority (AWS: the larger number wins), else the first. */
static const struct strata_repl_rule *rule_for(const struct strata_repl_conf *c, const char *key,
                                               const void *tags, size_t tags_len)
{
    const struct strata_repl_rule *best = NULL;
    for (size_t i = 0; i < c->n; i++) {
        const struct strata_repl_rule *rl = &c->r[i];
        if (!strata_repl_rule_matches(rl, key, tags, tags_len))
            continue;
        if (!best || (rl->has_priority && best->has_priority && rl->priority > best->priority))
            best = rl;
    }
    return best;
}

/* Per target of rp, the rule of c sending key there (tags: stored form)
 * in to[ti], NULL for none: of the enabled rules selecting key whose
 * destination is that target, the one with the highest Priority.  AWS
 * replicates a version to every destination a rule selects it for, so
 * two rules naming two targets send it to both.  marker: a delete marker,
 * sent only by a rule replicating them.  Returns how many targets. */
static size_t rules_to(const struct strata_repl *rp, const struct strata_repl_conf *c,
                       const char *key, const void *tags, size_t tags_len, bool marker,
                       const struct strata_repl_rule *to[STRATA_REPL_TARGETS_MAX])
{
    memset(to, 0, STRATA_REPL_TARGETS_MAX * sizeof(*to));
    for (size_t i = 0; i < c->n; i++) {
        const struct strata_repl_rule *rl = &c->r[i];
        int ti = strata_repl__target_find(rp, rl->account);
        if (ti < 0 || !strata_repl_rule_matches(rl, key, tags, tags_len))
            continue;
        const struct strata_repl_rule *b = to[ti];
        if (!b || (rl->has_priority && b->has_priority && rl->priority > b->priority))
            to[ti] = rl;
    }
    size_t n = 0;
    for (size_t ti = 0; ti < STRATA_REPL_TARGETS_MAX; ti++) {
        if (to[ti] && marker && !to[ti]->dm_enabled)
            to[ti] = NULL;
        n += to[ti] != NULL;
    }
    return n;
}

static int peer(struct strata_req *r, const char *action)
{
    if (!strata_req_hdr(r, STRATA_REPL_HDR))
        return 0;
    enum s3_err e = strata_s3_err_from_auth(strata_authz_check(r, &r->binfo, action, r->key, NULL));
    if (e) {
        r->err_msg = "Only a replication peer with s3:ReplicateObject / s3:ReplicateDelete "
                     "may send " STRATA_REPL_HDR ".";
        strata_req_error(r, e, 0);
        return -1;
    }
    return 1;
}

static int peer_change(struct strata_req *r, const char *action)
{
    const char *v = strata_req_hdr(r, STRATA_REPL_HDR);
    if (!v)
        return 0;
    const char *q = strata_req_query(r, "versionId");
    if (!q || strcmp(q, v) != 0) {
        /* The header names the version the change is for: it must be the
         * one the request addresses, never the latest by default. */
        r->err_msg = STRATA_REPL_HDR " must equal the request's versionId.";
        strata_req_error(r, S3E_InvalidArgument, 0);
        return -1;
    }
    return peer(r, action);
}

static const char *status_for_new(struct strata_req *r, const char *key, const void *tags,
                                  size_t tags_len)
{
    if (strata_req_hdr(r, STRATA_REPL_HDR) && r->route &&
        (strcmp(r->route->op, "PutObject") == 0 ||
         strcmp(r->route->op, "CreateMultipartUpload") == 0))
        return "REPLICA";
    if (r->binfo.versioning != STRATA_VERSIONING_ENABLED)
        return NULL;
    struct strata_doc_ref *ref = NULL;
    if (strata_doc_cache_get(&cache, r->srv->meta, &r->binfo, &ref) != 0 || !ref)
        return NULL;
    const struct strata_repl_conf *c = strata_doc_ref_get(ref);
    const struct strata_repl_rule *rl = rule_for(c, key, tags, tags_len);
    const struct strata_repl_rule *to[STRATA_REPL_TARGETS_MAX];
    const char *st = NULL;
    if (rl && rules_to(r->srv->repl, c, key, tags, tags_len, false, to) > 0) {
        st = "PENDING";
    } else if (rl) {
        /* A rule selects the version but its target is not one of this
         * daemon's (removed from the options since the rule was stored):
         * said on the version and counted, never skipped in silence. */
        st = "FAILED";
        strata_repl__unknown_target_count();
    }
    strata_doc_ref_put(ref);
    return st;
}

static bool configured(struct strata_req *r)
{
    if (!r->srv->repl || r->binfo.versioning != STRATA_VERSIONING_ENABLED)
        return false;
    struct strata_doc_ref *ref = NULL;
    bool on = strata_doc_cache_get(&cache, r->srv->meta, &r->binfo, &ref) == 0 && ref;
    strata_doc_ref_put(ref);
    return on;
}

/* Queues (bucket, key, vid) to each target a rule of bucket bi sends it
 * to: the version whole, a delete marker, or op alone (repl.c's message
 * "op").  0, STRATA_ENOTFOUND (no rule sends it anywhere) or
 * STRATA_ENOSPC (a queue refused it). */
static int queue_by_rule(struct strata_repl *rp, struct strata_meta *m,
                         const struct strata_bucket_info *bi, const char *key, const char *vid,
                         const void *tags, size_t tags_len, bool marker, const char *op)
{
    struct strata_doc_ref *ref = NULL;
    int rc = strata_doc_cache_get(&cache, m, bi, &ref);
    if (rc || !ref)
        return rc ? rc : STRATA_ENOTFOUND;
    const struct strata_repl_rule *to[STRATA_REPL_TARGETS_MAX];
    rc = rules_to(rp, strata_doc_ref_get(ref), key, tags, tags_len, marker, to) ? 0
                                                                                : STRATA_ENOTFOUND;
    for (int ti = 0; ti < STRATA_REPL_TARGETS_MAX; ti++)
        if (to[ti] && strata_repl__enqueue(rp, ti, bi->name, key, vid, to[ti]->dest_bucket,
                                           to[ti]->storage_class, marker, op, false) != 0)
            rc = STRATA_ENOSPC;
    strata_doc_ref_put(ref);
    return rc;
}

/* The configuration of bucket, referenced in *ref: 0, or a STRATA_E*
 * code (STRATA_ENOTFOUND: none). */
static int conf_of(struct strata_meta *m, const char *bucket, struct strata_doc_ref **ref)
{
    struct strata_bucket_info bi;
    *ref = NULL;
    int rc = strata_bcache_get(m, bucket, &bi);
    if (rc == 0)
        rc = strata_doc_cache_get(&cache, m, &bi, ref);
    return rc ? rc : *ref ? 0 : STRATA_ENOTFOUND;
}

int strata_repl__rule_kms(struct strata_repl *rp, int ti, struct strata_meta *m,
                          const char *bucket, const char *key, const void *tags, size_t tags_len,
                          char *kms, size_t kms_len)
{
    struct strata_doc_ref *ref;
    int rc = conf_of(m, bucket, &ref);
    if (rc)
        return rc == STRATA_ENOTFOUND ? 0 : -1;
    const struct strata_repl_rule *to[STRATA_REPL_TARGETS_MAX];
    rules_to(rp, strata_doc_ref_get(ref), key, tags, tags_len, false, to);
    const struct strata_repl_rule *rl = ti >= 0 && ti < STRATA_REPL_TARGETS_MAX ? to[ti] : NULL;
    int on = rl && rl->kms_enabled && rl->replica_kms_key;
    if (on)
        snprintf(kms, kms_len, "%s", rl->replica_kms_key);
    strata_doc_ref_put(ref);
    return on;
}

int strata_repl__targets_of(struct strata_repl *rp, struct strata_meta *m, const char *bucket,
                            const char *key, const void *tags, size_t tags_len, bool marker,
                            bool sel[])
{
    struct strata_doc_ref *ref;
    memset(sel, 0, STRATA_REPL_TARGETS_MAX * sizeof(*sel));
    if (conf_of(m, bucket, &ref) != 0)
        return -1;
    const struct strata_repl_rule *to[STRATA_REPL_TARGETS_MAX];
    int n = (int)rules_to(rp, strata_doc_ref_get(ref), key, tags, tags_len, marker, to);
    for (size_t ti = 0; ti < STRATA_REPL_TARGETS_MAX; ti++)
        sel[ti] = to[ti] != NULL;
    strata_doc_ref_put(ref);
    return n;
}

static void emit_put(struct strata_req *r, const struct strata_obj_info *info)
{
    if (!r->srv->repl || r->binfo.versioning != STRATA_VERSIONING_ENABLED)
        return;
    const char *st = strata_obj_info_hdr(info, STRATA_REPL_STATUS_HDR);
    struct strata_obj_info again;
    memset(&again, 0, sizeof(again));
    if (!st && info->nhdrs == 0 && info->nparts > 0) {
        /* CompleteMultipartUpload's answer carries no stored headers: the
         * status CreateMultipartUpload stored is read back. */
        if (strata_obj_head(r->srv->meta, r->bucket, info->key, info->version_id, &again) == 0)
            st = strata_obj_info_hdr(&again, STRATA_REPL_STATUS_HDR);
    }
    const struct strata_obj_info *in = again.key[0] ? &again : info;
    if (st && strcmp(st, "PENDING") == 0 &&
        queue_by_rule(r->srv->repl, r->srv->meta, &r->binfo, in->key, in->version_id, in->tags,
                      in->tags_len, false, NULL) != 0) {
        /* The rule went away meanwhile, or the queue is full: the version
         * says so instead of staying PENDING for ever. */
        strata_obj_hdr_set(r->srv->meta, r->bucket, info->key, info->version_id,
                           STRATA_REPL_STATUS_HDR, "FAILED");
    }
    strata_obj_info_fini(&again);
}

static void emit_change(struct strata_req *r, const char *key, const char *vid,
                        enum strata_repl_change what)
{
    static const char *const ops[] = {[STRATA_REPL_TAGS] = "tags",
                                      [STRATA_REPL_RETENTION] = "retention",
                                      [STRATA_REPL_LEGAL_HOLD] = "legal-hold",
                                      [STRATA_REPL_ACL] = "acl"};
    if (!r->srv->repl || r->binfo.versioning != STRATA_VERSIONING_ENABLED || !vid || !vid[0])
        return;
    struct strata_obj_info in;
    memset(&in, 0, sizeof(in));
    if (strata_obj_head(r->srv->meta, r->bucket, key, vid, &in) == 0) {
        const char *st = strata_obj_info_hdr(&in, STRATA_REPL_STATUS_HDR);
        if (st && strcmp(st, "REPLICA") != 0 &&
            strata_repl__status_reset(r->srv->meta, r->bucket, key, vid,
                                      strata_obj_info_hdr(&in, STRATA_REPL_TARGETS_HDR)) == 0 &&
            queue_by_rule(r->srv->repl, r->srv->meta, &r->binfo, key, vid, in.tags, in.tags_len,
                          false, ops[what]) != 0)
            strata_obj_hdr_set(r->srv->meta, r->bucket, key, vid, STRATA_REPL_STATUS_HDR,
                               "FAILED");
    }
    strata_obj_info_fini(&in);
}

static const char *marker_status(struct strata_req *r, const char *key)
{
    if (!r->srv->repl || r->binfo.versioning != STRATA_VERSIONING_ENABLED ||
        strata_req_hdr(r, STRATA_REPL_HDR))
        return NULL;
    struct strata_doc_ref *ref = NULL;
    if (strata_doc_cache_get(&cache, r->srv->meta, &r->binfo, &ref) != 0 || !ref)
        return NULL;
    const struct strata_repl_rule *to[STRATA_REPL_TARGETS_MAX];
    const char *st = rules_to(r->srv->repl, strata_doc_ref_get(ref), key, NULL, 0, true, to)
                         ? "PENDING" : NULL;
    strata_doc_ref_put(ref);
    return st;
}

static void emit_delete_marker(struct strata_req *r, const char *key, const char *vid)
{
    if (!r->srv->repl || r->binfo.versioning != STRATA_VERSIONING_ENABLED)
        return;
    if (strata_req_hdr(r, STRATA_REPL_HDR))
        return; /* a replica: replicated further only by its own site's rules */
    if (queue_by_rule(r->srv->repl, r->srv->meta, &r->binfo, key, vid, NULL, 0, true, NULL) != 0)
        strata_obj_hdr_set(r->srv->meta, r->bucket, key, vid, STRATA_REPL_STATUS_HDR, NULL);
}
/* `strata admin replicate`: the walk of a bucket's versions and delete
 * markers, one key at a time (its entries gathered newest first, across
 * listing pages). */
struct existing {
    struct strata_repl *rp;
    struct strata_meta *m;
    const struct strata_bucket_info *bi;
    const struct strata_repl_conf *conf;
    uint64_t seen, queued;
    int rc;
    char key[STRATA_KEY_MAX + 1];
    struct strata_repl__owed_list k; /* the key's entries, newest first */
};

/* An entry of the key the walk queues, and the rule per target sending
 * it there. */
struct existing_owed {
    const struct strata_repl__owed *o;
    const struct strata_repl_rule *to[STRATA_REPL_TARGETS_MAX];
    bool listed; /* its record has a per-target list (repl_status.c) */
};

/* Whether entry w->o of x's key goes to a target (the rules in w->to):
 * when it is not replicated (no status: written before the rule, or
 * before delete markers had one; or FAILED); not when gone (*rc set when
 * it cannot be read now). */
static bool existing_owed(struct existing *x, struct existing_owed *w, int *rc)
{
    struct strata_obj_info in;
    memset(&in, 0, sizeof(in));
    int hrc = strata_obj_head(x->m, x->bi->name, x->key, w->o->vid, &in);
    const char *st = hrc == 0 || hrc == STRATA_EMETHOD
                         ? strata_obj_info_hdr(&in, STRATA_REPL_STATUS_HDR) : NULL;
    bool owed = false;
    if (hrc && hrc != STRATA_EMETHOD)
        *rc = hrc == STRATA_ENOTFOUND ? 0 : hrc; /* deleted meanwhile: nothing to send */
    else if (!st || strcmp(st, "FAILED") == 0)
        owed = rules_to(x->rp, x->conf, x->key, in.tags, in.tags_len, w->o->marker, w->to) > 0;
    w->listed = owed && strata_obj_info_hdr(&in, STRATA_REPL_TARGETS_HDR);
    strata_obj_info_fini(&in);
    return owed;
}

/* Queues the entries of x's key not replicated yet, oldest first, each
 * marked PENDING before the first is queued: the queue sends a key's
 * changes in order and each one's turn (repl_order.c) then sees the
 * older ones owed, so the target's history of the key is the source's. */
static void existing_key(struct existing *x)
{
    const struct strata_repl__owed *e = x->k.e;
    struct existing_owed *q = calloc(x->k.n ? x->k.n : 1, sizeof(*q));
    size_t nq = 0;
    int rc = q ? 0 : STRATA_ENOMEM;
    for (size_t i = x->k.n; rc == 0 && i-- > 0;) {
        q[nq].o = &e[i];
        if (existing_owed(x, &q[nq], &rc) &&
            (rc = strata_repl__status_reset(x->m, x->bi->name, x->key, e[i].vid,
                                            q[nq].listed)) == 0)
            nq++;
        rc = rc == STRATA_ENOTFOUND ? 0 : rc;
    }
    for (size_t j = 0; j < nq; j++) {
        const struct existing_owed *w = &q[j];
        for (int ti = 0; rc == 0 && ti < STRATA_REPL_TARGETS_MAX; ti++) {
            if (!w->to[ti])
                continue;
            if (strata_repl__enqueue(x->rp, ti, x->bi->name, x->key, w->o->vid,
                                     w->to[ti]->dest_bucket, w->to[ti]->storage_class,
                                     w->o->marker, NULL, true) != 0)
                rc = STRATA_ENOSPC;
            else
                x->queued++; /* one per target: what the targets' counters count */
        }
        if (rc) /* never PENDING without a message: said, and queued again next time */
            strata_obj_hdr_set(x->m, x->bi->name, x->key, w->o->vid, STRATA_REPL_STATUS_HDR,
                               "FAILED");
    }
    free(q);
    x->k.n = 0;
    if (rc && !x->rc)
        x->rc = rc;
}

static int existing_cb(const struct strata_list_entry *e, void *ud)
{
    struct existing *x = ud;
    if (e->is_prefix)
        return 0;
    if (x->k.n && strcmp(x->key, e->key) != 0)
        existing_key(x);
    if (!x->rc)
        x->rc = strata_repl__owed_add(&x->k, e->info->version_id, e->info->delete_marker);
    snprintf(x->key, sizeof(x->key), "%s", e->key);
    x->seen++;
    return x->rc ? -1 : 0;
}

int strata_repl_existing(struct strata_repl *rp, struct strata_meta *m, const char *bucket,
                         uint64_t *seen, uint64_t *queued)
{
    *seen = *queued = 0;
    struct strata_bucket_info bi;
    int rc = strata_bcache_get(m, bucket, &bi);
    if (rc)
        return rc;
    struct strata_doc_ref *ref = NULL;
    rc = strata_doc_cache_get(&cache, m, &bi, &ref);
    if (rc || !ref || !rp) {
        strata_doc_ref_put(ref);
        return rc ? rc : STRATA_ENOTFOUND;
    }
    struct existing x = {.rp = rp, .m = m, .bi = &bi, .conf = strata_doc_ref_get(ref)};
    struct strata_list_opts o = {.bucket = bucket, .max_keys = 1000, .versions = true,
                                 .maintenance = true};
    struct strata_list_result res;
    char after[STRATA_KEY_MAX + 1] = "", after_vid[STRATA_VERSION_ID_MAX + 1] = "";
    do {
        o.start_after = after[0] ? after : NULL;
        o.version_id_marker = after_vid[0] ? after_vid : NULL;
        memset(&res, 0, sizeof(res));
        rc = strata_obj_list(m, &o, existing_cb, &x, &res);
        snprintf(after, sizeof(after), "%s", res.next_key);
        snprintf(after_vid, sizeof(after_vid), "%s", res.next_version_id);
    } while (rc == 0 && x.rc == 0 && res.truncated);
    if (rc == 0 && x.rc == 0 && x.k.n)
        existing_key(&x);
    free(x.k.e);
    strata_doc_ref_put(ref);
    *seen = x.seen;
    *queued = x.queued;
    return x.rc ? x.rc : rc;
}

const struct strata_s3_repl strata_repl_s3_hooks = {
    .status_for_new = status_for_new,
    .configured = configured,
    .peer = peer,
    .peer_change = peer_change,
    .emit_put = emit_put,
    .emit_change = emit_change,
    .emit_delete_marker = emit_delete_marker,
    .marker_status = marker_status,
    .config_get = config_get,
    .config_put = config_put,
    .config_delete = config_delete,
};
