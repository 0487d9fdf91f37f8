/*
 * authz.c - request authorisation against the bucket owner and the bucket
 * policy (see authz.h): the decision for the action the route carries
 * (router.c), the condition keys of a request, and a one-second cache of
 * parsed policies.
 */
#include "authz.h"

#include <netinet/in.h> /* INET6_ADDRSTRLEN */
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "epoch_cache.h"
#include "srv_err.h"

/* What an ACL grant allows (AWS's "mapping of ACL permissions and access
 * policy permissions"): the permission each action needs, on the bucket
 * or on the object.  Actions not listed are not grantable by ACL. */
static const struct {
    const char *action;
    int perm;
    bool object;
} acl_actions[] = {
    {"s3:ListBucket", STRATA_ACL_READ, false},
    {"s3:ListBucketVersions", STRATA_ACL_READ, false},
    {"s3:ListBucketMultipartUploads", STRATA_ACL_READ, false},
    {"s3:PutObject", STRATA_ACL_WRITE, false},
    {"s3:DeleteObject", STRATA_ACL_WRITE, false},
    {"s3:DeleteObjectVersion", STRATA_ACL_WRITE, false},
    {"s3:AbortMultipartUpload", STRATA_ACL_WRITE, false},
    {"s3:GetBucketAcl", STRATA_ACL_READ_ACP, false},
    {"s3:PutBucketAcl", STRATA_ACL_WRITE_ACP, false},
    {"s3:GetObject", STRATA_ACL_READ, true},
    {"s3:GetObjectVersion", STRATA_ACL_READ, true},
    {"s3:GetObjectAcl", STRATA_ACL_READ_ACP, true},
    {"s3:GetObjectVersionAcl", STRATA_ACL_READ_ACP, true},
    {"s3:PutObjectAcl", STRATA_ACL_WRITE_ACP, true},
    {"s3:PutObjectVersionAcl", STRATA_ACL_WRITE_ACP, true},
};

static int acl_perm_of(const char *action, bool *object)
{
    for (size_t i = 0; i < sizeof(acl_actions) / sizeof(acl_actions[0]); i++)
        if (strcmp(acl_actions[i].action, action) == 0) {
            *object = acl_actions[i].object;
            return acl_actions[i].perm;
        }
    *object = false;
    return 0;
}

/* ---- policy cache ------------------------------------------------------------ */

struct strata_policy_ref {
    /* First: a thread's copy lends its original's p and acl. */
    struct strata_eref e;
    struct strata_policy *p;       /* NULL: no policy */
    struct strata_acl *acl;        /* the bucket ACL, the default when none is stored */
    int ownership;                 /* enum strata_ownership */
    unsigned pab;                  /* STRATA_PAB_* bits */
    bool pab_set;                  /* a public access block configuration exists */
};

const struct strata_policy *strata_policy_ref_get(const struct strata_policy_ref *ref)
{
    return ref ? ref->p : NULL;
}

const struct strata_acl *strata_policy_ref_acl(const struct strata_policy_ref *ref)
{
    return ref->acl;
}

int strata_policy_ref_ownership(const struct strata_policy_ref *ref)
{
    return ref->ownership;
}

unsigned strata_policy_ref_pab(const struct strata_policy_ref *ref, bool *set)
{
    if (set)
        *set = ref->pab_set;
    return ref->pab;
}

/* The original's release (strata_eref free_fn). */
static void ref_free(struct strata_eref *e)
{
    struct strata_policy_ref *ref = (struct strata_policy_ref *)e;
    strata_policy_destroy(ref->p);
    free(ref->acl);
    free(ref);
}

void strata_policy_ref_put(struct strata_policy_ref *ref)
{
    strata_eref_put(ref ? &ref->e : NULL);
}

/* Reads and parses the stored policy: *pp NULL when there is none. */
static int policy_load(struct strata_meta *m, const char *bucket, struct strata_policy **pp)
{
    void *doc = NULL;
    size_t len = 0;
    *pp = NULL;
    int rc = strata_meta_bucket_config_get(m, bucket, "policy", &doc, &len);
    if (rc == STRATA_ENOTFOUND || (rc == 0 && len == 0)) {
        free(doc);
        return 0;
    }
    if (rc)
        return rc;
    char msg[256];
    rc = strata_policy_parse(doc, len, bucket, pp, msg, sizeof(msg));
    free(doc);
    if (rc) {
        /* Stored only after validation: this is a bug or corruption, and
         * failing closed is the only safe answer. */
        strata_srv_log(STRATA_LOG_ERR, "bucket %s: stored policy does not parse: %s", bucket, msg);
        return STRATA_EINTERNAL;
    }
    return 0;
}

/* The ACL, ownership controls and public access block documents. */
static int access_load(struct strata_meta *m, const struct strata_bucket_info *bi,
                       struct strata_policy_ref *ref)
{
    void *doc = NULL;
    size_t len = 0;
    int rc = strata_meta_bucket_config_get(m, bi->name, "acl", &doc, &len);
    if (rc == 0 && len) {
        rc = strata_acl_decode(doc, len, ref->acl) == 0 ? 0 : STRATA_EINTERNAL;
        if (rc)
            strata_srv_log(STRATA_LOG_ERR, "bucket %s: stored ACL does not decode", bi->name);
    } else if (rc == 0 || rc == STRATA_ENOTFOUND) {
        strata_acl_default(ref->acl, bi->owner); /* older buckets: private */
        rc = 0;
    }
    STRATA_FREE(doc);
    if (rc)
        return rc;
    rc = strata_meta_bucket_config_get(m, bi->name, "ownership", &doc, &len);
    if (rc == 0)
        ref->ownership = strata_ownership_parse(doc, len);
    else if (rc != STRATA_ENOTFOUND)
        return rc;
    STRATA_FREE(doc);
    rc = strata_meta_bucket_config_get(m, bi->name, "public-access-block", &doc, &len);
    if (rc == 0 && len == 4) {
        const char *d = doc;
        ref->pab_set = true;
        for (unsigned i = 0; i < 4; i++)
            if (d[i] == '1')
                ref->pab |= 1u << i;
    } else if (rc && rc != STRATA_ENOTFOUND) {
        return rc;
    }
    STRATA_FREE(doc);
    return 0;
}

/* Everything authorisation needs of a bucket, in one reference. */
static int bucket_access_load(struct strata_meta *m, const struct strata_bucket_info *bi,
                              struct strata_policy_ref **out)
{
    *out = NULL;
    struct strata_policy_ref *ref = calloc(1, sizeof(*ref));
    if (!ref || !(ref->acl = malloc(sizeof(*ref->acl)))) {
        free(ref);
        return STRATA_ENOMEM;
    }
    strata_eref_init(&ref->e, sizeof(*ref), ref_free);
    int rc = policy_load(m, bi->name, &ref->p);
    if (rc == 0)
        rc = access_load(m, bi, ref);
    if (rc) {
        strata_policy_ref_put(ref);
        return rc;
    }
    *out = ref;
    return 0;
}

int strata_ownership_parse(const void *doc, size_t len)
{
    static const char *const names[] = {
        [STRATA_OWN_OBJECT_WRITER] = "ObjectWriter",
        [STRATA_OWN_PREFERRED] = "BucketOwnerPreferred",
        [STRATA_OWN_ENFORCED] = "BucketOwnerEnforced",
    };
    for (int i = STRATA_OWN_OBJECT_WRITER; i <= STRATA_OWN_ENFORCED; i++)
        if (len == strlen(names[i]) && memcmp(doc, names[i], len) == 0)
            return i;
    return STRATA_OWN_NONE;
}

const char *strata_ownership_name(int own)
{
    return own == STRATA_OWN_ENFORCED    ? "BucketOwnerEnforced"
           : own == STRATA_OWN_PREFERRED ? "BucketOwnerPreferred"
                                         : "ObjectWriter";
}

/* Keyed by bucket name and creation time. */
static struct strata_ecache pc_cache = STRATA_ECACHE_INIT(&strata_eref_ops);

struct pc_load_arg {
    struct strata_meta *m;
    const struct strata_bucket_info *bi;
};

static int pc_load(void *arg, void **out)
{
    struct pc_load_arg *a = arg;
    struct strata_policy_ref *ref;
    int rc = bucket_access_load(a->m, a->bi, &ref);
    *out = ref;
    return rc;
}

int strata_policy_cache_get(struct strata_meta *m, const struct strata_bucket_info *bi,
                            struct strata_policy_ref **out)
{
    struct pc_load_arg a = {m, bi};
    void *v = NULL;
    int rc = strata_ecache_get(&pc_cache, bi->name, bi->created_ms, pc_load, &a, &v);
    *out = v;
    return rc;
}

struct strata_policy_ref *strata_req_policy_ref(struct strata_req *r)
{
    struct strata_policy_ref *ref = NULL;
    int rc = strata_policy_cache_get(r->srv->meta, &r->binfo, &ref);
    if (rc) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return NULL;
    }
    return ref;
}

void strata_policy_cache_invalidate(const char *bucket)
{
    strata_ecache_invalidate(&pc_cache, bucket);
}

/* ---- the request context ----------------------------------------------------- */

#define KV_MAX 64

struct ctx_buf {
    struct strata_policy_kv kv[KV_MAX];
    size_t n;
    char ip[INET6_ADDRSTRLEN];
    char now_iso[32];
    char now_epoch[24];
    char remaining_days[24];
    char tag_keys[STRATA_SRV_QPARAMS_MAX][160]; /* "s3:RequestObjectTag/" + key */
    char *req_tags_buf;                       /* decoded x-amz-tagging */
    struct strata_qparam req_tags[STRATA_SRV_QPARAMS_MAX];
    void *obj_tags_buf;
    struct strata_qparam obj_tags[STRATA_SRV_QPARAMS_MAX];
    char obj_tag_keys[STRATA_SRV_QPARAMS_MAX][160];
};

static void kv_add(struct ctx_buf *c, const char *k, const char *v)
{
    if (v && c->n < KV_MAX) {
        c->kv[c->n].key = k;
        c->kv[c->n].value = v;
        c->n++;
    }
}

static void ctx_fini(struct ctx_buf *c)
{
    free(c->req_tags_buf);
    free(c->obj_tags_buf);
}

/* Adds "<prefix><key>" = value for each tag, and the key list. */
static void add_tags(struct ctx_buf *c, char names[][160], const struct strata_qparam *t, int n,
                     const char *prefix, const char *keys_name)
{
    for (int i = 0; i < n; i++) {
        snprintf(names[i], 160, "%s%s", prefix, t[i].name);
        kv_add(c, names[i], t[i].value);
        if (keys_name)
            kv_add(c, keys_name, t[i].name);
    }
}

/* Fills c with the condition keys of r; bi/key/version name the resource
 * (for s3:ExistingObjectTag, read only when the policy uses it). */
static void ctx_build(struct strata_req *r, const struct strata_policy *p, const char *action,
                      const struct strata_bucket_info *bi, const char *key,
                      const char *version_id, struct ctx_buf *c)
{
    memset(c, 0, offsetof(struct ctx_buf, tag_keys));
    c->req_tags_buf = NULL;
    c->obj_tags_buf = NULL;
    strata_req_client_ip(r, c->ip, sizeof(c->ip));
    if (c->ip[0])
        kv_add(c, "aws:SourceIp", c->ip);
    kv_add(c, "aws:SecureTransport", r->srv && r->srv->cfg.http.tls_cert ? "true" : "false");
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(c->now_iso, sizeof(c->now_iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(c->now_epoch, sizeof(c->now_epoch), "%lld", (long long)now);
    kv_add(c, "aws:CurrentTime", c->now_iso);
    kv_add(c, "aws:EpochTime", c->now_epoch);
    if (r->auth.cred) {
        kv_add(c, "aws:userid", r->auth.cred->access_key);
        kv_add(c, "aws:username", strata_req_display_name(r));
        kv_add(c, "aws:PrincipalType", "User");
    } else {
        kv_add(c, "aws:userid", "anonymous");
        kv_add(c, "aws:PrincipalType", "Anonymous");
    }
    kv_add(c, "aws:UserAgent", strata_req_hdr(r, "User-Agent"));
    kv_add(c, "aws:Referer", strata_req_hdr(r, "Referer"));
    if (r->auth.cred) {
        bool query = strata_req_query(r, "X-Amz-Signature") || strata_req_query(r, "Signature");
        kv_add(c, "s3:authType", query ? "REST-QUERY-STRING" : "REST-HEADER");
        const char *authz = strata_req_hdr(r, "Authorization");
        bool v4 = strata_req_query(r, "X-Amz-Algorithm") ||
                  (authz && strncmp(authz, "AWS4-", 5) == 0);
        kv_add(c, "s3:signatureversion", v4 ? "AWS4-HMAC-SHA256" : "AWS");
    }
    if (strcmp(action, "s3:ListBucket") == 0 || strcmp(action, "s3:ListBucketVersions") == 0 ||
        strcmp(action, "s3:ListBucketMultipartUploads") == 0) {
        kv_add(c, "s3:prefix", strata_req_query(r, "prefix"));
        kv_add(c, "s3:delimiter", strata_req_query(r, "delimiter"));
        kv_add(c, "s3:max-keys", strata_req_query(r, "max-keys"));
    }
    kv_add(c, "s3:VersionId", version_id);
    static const char *const hdr_keys[][2] = {
        {"s3:x-amz-acl", "x-amz-acl"},
        /* The grant headers as sent, e.g. id="...", emailAddress="..." (AWS
         * compares the header's text). */
        {"s3:x-amz-grant-read", "x-amz-grant-read"},
        {"s3:x-amz-grant-write", "x-amz-grant-write"},
        {"s3:x-amz-grant-read-acp", "x-amz-grant-read-acp"},
        {"s3:x-amz-grant-write-acp", "x-amz-grant-write-acp"},
        {"s3:x-amz-grant-full-control", "x-amz-grant-full-control"},
        {"s3:x-amz-server-side-encryption", "x-amz-server-side-encryption"},
        {"s3:x-amz-copy-source", "x-amz-copy-source"},
        {"s3:x-amz-metadata-directive", "x-amz-metadata-directive"},
        {"s3:x-amz-storage-class", "x-amz-storage-class"},
        {"s3:object-lock-mode", "x-amz-object-lock-mode"},
        {"s3:object-lock-retain-until-date", "x-amz-object-lock-retain-until-date"},
        {"s3:object-lock-legal-hold", "x-amz-object-lock-legal-hold"},
    };
    for (size_t i = 0; i < sizeof(hdr_keys) / sizeof(hdr_keys[0]); i++)
        kv_add(c, hdr_keys[i][0], strata_req_hdr(r, hdr_keys[i][1]));
    const char *until = strata_req_hdr(r, "x-amz-object-lock-retain-until-date");
    struct tm ut;
    memset(&ut, 0, sizeof(ut));
    if (until && strptime(until, "%Y-%m-%dT%H:%M:%S", &ut)) {
        long long days = ((long long)timegm(&ut) - (long long)now) / 86400;
        snprintf(c->remaining_days, sizeof(c->remaining_days), "%lld", days < 0 ? 0 : days);
        kv_add(c, "s3:object-lock-remaining-retention-days", c->remaining_days);
    }
    const char *tagging = strata_req_hdr(r, "x-amz-tagging");
    if (tagging && (strcmp(action, "s3:PutObject") == 0)) {
        c->req_tags_buf = strdup(tagging);
        int n = c->req_tags_buf ? strata_s3_query_parse(c->req_tags_buf, c->req_tags,
                                                        STRATA_SRV_QPARAMS_MAX)
                                : -1;
        if (n > 0)
            add_tags(c, c->tag_keys, c->req_tags, n, "s3:RequestObjectTag/",
                     "s3:RequestObjectTagKeys");
    }
    if (key && p && strata_policy_uses_key(p, "s3:ExistingObjectTag/")) {
        size_t len = 0;
        char vid[STRATA_VERSION_ID_MAX + 1];
        void *tags = NULL;
        if (strata_obj_tags_get(r->srv->meta, bi->name, key, version_id, &tags, &len, vid) == 0 &&
            tags) {
            char *s = realloc(tags, len + 1);
            if (s) {
                s[len] = '\0';
                c->obj_tags_buf = s;
                int n = strata_s3_query_parse(s, c->obj_tags, STRATA_SRV_QPARAMS_MAX);
                if (n > 0)
                    add_tags(c, c->obj_tag_keys, c->obj_tags, n, "s3:ExistingObjectTag/", NULL);
            } else {
                free(tags);
            }
        }
    }
}

/* ---- decisions ------------------------------------------------------------------ */

static enum strata_policy_decision evaluate(struct strata_req *r, const struct strata_policy *p,
                                            const char *action,
                                            const struct strata_bucket_info *bi, const char *key,
                                            const char *version_id)
{
    if (!p)
        return STRATA_POLICY_NOMATCH;
    char resource[16 + STRATA_BUCKET_NAME_MAX + STRATA_KEY_MAX];
    snprintf(resource, sizeof(resource), "arn:aws:s3:::%s%s%s", bi->name, key ? "/" : "",
             key ? key : "");
    struct ctx_buf *c = malloc(sizeof(*c));
    if (!c)
        return STRATA_POLICY_DENY; /* fail closed */
    ctx_build(r, p, action, bi, key, version_id, c);
    struct strata_policy_ctx ctx = {
        .principal = r->auth.cred ? r->auth.cred->access_key : NULL,
        .action = action,
        .resource = resource,
        .kv = c->kv,
        .nkv = c->n,
    };
    enum strata_policy_decision d = strata_policy_eval(p, &ctx);
    ctx_fini(c);
    free(c);
    return d;
}

static bool is_owner(const struct strata_req *r, const struct strata_bucket_info *bi)
{
    return r->auth.cred && strcmp(bi->owner, r->auth.cred->access_key) == 0;
}

/* The object's ACL as stored, or the default (bucket owner full control)
 * for versions written without one or when ACLs are disabled. */
static void object_acl(const struct strata_bucket_info *bi, const struct strata_obj_info *info,
                       int ownership, struct strata_acl *a)
{
    if (ownership == STRATA_OWN_ENFORCED || !info->acl || !info->acl_len ||
        strata_acl_decode(info->acl, info->acl_len, a) != 0)
        strata_acl_default(a, bi->owner);
}

/* Set in *defer (r->s3->acl_need) when the policy allowed: the grant check
 * then passes outright on a version the bucket owner owns. */
#define POLICY_ALLOWED 0x100

/* The object actions a bucket policy grants only on objects the bucket
 * owner owns (AWS: a policy speaks for the bucket owner; objects written
 * by others under ObjectWriter need their own ACL).  Writes and deletes
 * stay with the bucket: its owner may delete any object. */
static bool policy_needs_owned(const char *action)
{
    static const char *const actions_owned[] = {
        "s3:GetObject",           "s3:GetObjectVersion",
        "s3:GetObjectAcl",        "s3:GetObjectVersionAcl",
        "s3:PutObjectAcl",        "s3:PutObjectVersionAcl",
        "s3:GetObjectTagging",    "s3:GetObjectVersionTagging",
        "s3:PutObjectTagging",    "s3:PutObjectVersionTagging",
        "s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging",
        "s3:GetObjectAttributes", "s3:GetObjectVersionAttributes",
    };
    for (size_t i = 0; i < sizeof(actions_owned) / sizeof(actions_owned[0]); i++)
        if (strcmp(actions_owned[i], action) == 0)
            return true;
    return false;
}

/* Whether the bucket owner owns the version: no stored ACL (the
 * default), ACLs disabled, or a stored ACL whose owner it is. */
static bool owned_by_bucket_owner(const struct strata_bucket_info *bi,
                                  const struct strata_obj_info *info, int ownership)
{
    char id[STRATA_ACL_ID_MAX];
    if (ownership == STRATA_OWN_ENFORCED || !info->acl || !info->acl_len)
        return true;
    return strata_acl_owner(info->acl, info->acl_len, id) == 0 && strcmp(id, bi->owner) == 0;
}

/* The grant check of an object-level ACL permission on a version. */
static enum strata_auth_err object_grant(struct strata_req *r, const struct strata_bucket_info *bi,
                                         const struct strata_obj_info *info, int ownership,
                                         int perm, bool ignore_public)
{
    if (ownership == STRATA_OWN_ENFORCED || !info->acl || !info->acl_len)
        return is_owner(r, bi) ? STRATA_AUTH_OK : STRATA_AUTH_DENIED; /* the default ACL */
    struct strata_acl *a = malloc(sizeof(*a));
    if (!a)
        return STRATA_AUTH_INTERNAL;
    object_acl(bi, info, ownership, a);
    bool ok = strata_acl_allows(a, r->auth.cred ? r->auth.cred->access_key : NULL, perm,
                                ignore_public);
    free(a);
    return ok ? STRATA_AUTH_OK : STRATA_AUTH_DENIED;
}

/*
 * The decision, as AWS documents it: an explicit Deny in the policy wins;
 * then an Allow from the policy or from an ACL grant allows (a policy
 * Allow on an object only while the bucket owner owns it).  The bucket
 * owner holds every bucket permission; object permissions come from the
 * object's ACL (whose default is the bucket owner's full control), unless
 * BucketOwnerEnforced disables ACLs and the bucket owner owns everything.
 * For an object-level grant on the request's own object, *defer receives
 * the permission to check once the handler has read the version
 * (strata_authz_object); with defer NULL the version is read here.
 */
static enum strata_auth_err decide(struct strata_req *r, const struct strata_policy_ref *ref,
                                   const struct strata_bucket_info *bi, const char *action,
                                   const char *key, const char *version_id, int *defer)
{
    const struct strata_policy *p = strata_policy_ref_get(ref);
    enum strata_policy_decision d = evaluate(r, p, action, bi, key, version_id);
    if (d == STRATA_POLICY_DENY)
        return STRATA_AUTH_DENIED;
    bool owner = is_owner(r, bi);
    /* RestrictPublicBuckets: a public policy grants nobody but the owner. */
    if (d == STRATA_POLICY_ALLOW && !owner && (ref->pab & STRATA_PAB_RESTRICT_PUBLIC_BUCKETS) &&
        strata_policy_is_public(p))
        d = STRATA_POLICY_NOMATCH;
    bool object = false;
    int perm = acl_perm_of(action, &object);
    bool enforced = ref->ownership == STRATA_OWN_ENFORCED;
    bool ignore_public = (ref->pab & STRATA_PAB_IGNORE_PUBLIC_ACLS) != 0;
    if (d == STRATA_POLICY_ALLOW) {
        if (!key || enforced || !policy_needs_owned(action))
            return STRATA_AUTH_OK;
        /* Whose object it is: known once the version is read.  Actions
         * no ACL permission maps to fall back to FULL_CONTROL. */
        if (defer) {
            *defer = perm | POLICY_ALLOWED;
            return STRATA_AUTH_OK;
        }
        struct strata_obj_info info;
        memset(&info, 0, sizeof(info));
        int rc = strata_obj_head(r->srv->meta, bi->name, key, version_id, &info);
        enum strata_auth_err e = STRATA_AUTH_OK; /* a missing version: the caller reports rc */
        if (rc == 0 && !owned_by_bucket_owner(bi, &info, ref->ownership))
            e = object_grant(r, bi, &info, ref->ownership, perm ? perm : STRATA_ACL_FULL_CONTROL,
                             ignore_public);
        strata_obj_info_fini(&info);
        return e;
    }
    if (!object || !perm || !key || (enforced && owner)) {
        if (owner)
            return STRATA_AUTH_OK;
        if (!perm || object || enforced)
            return STRATA_AUTH_DENIED;
        return strata_acl_allows(ref->acl, r->auth.cred ? r->auth.cred->access_key : NULL, perm,
                                 ignore_public)
                   ? STRATA_AUTH_OK
                   : STRATA_AUTH_DENIED;
    }
    if (enforced)
        return STRATA_AUTH_DENIED; /* ACLs grant nothing; only the owner and policies */
    if (defer) {
        *defer = perm;
        return STRATA_AUTH_OK;
    }
    struct strata_obj_info info;
    memset(&info, 0, sizeof(info));
    int rc = strata_obj_head(r->srv->meta, bi->name, key, version_id, &info);
    enum strata_auth_err e =
        rc ? (owner ? STRATA_AUTH_OK : STRATA_AUTH_DENIED) /* the caller reports rc */
           : object_grant(r, bi, &info, ref->ownership, perm, ignore_public);
    strata_obj_info_fini(&info);
    return e;
}

enum strata_auth_err strata_authz_check(struct strata_req *r, const struct strata_bucket_info *bi,
                                        const char *action, const char *key, const char *version_id)
{
    struct strata_policy_ref *ref = NULL;
    int rc = strata_policy_cache_get(r->srv->meta, bi, &ref);
    if (rc)
        return STRATA_AUTH_INTERNAL;
    enum strata_auth_err e = decide(r, ref, bi, action, key, version_id, NULL);
    strata_policy_ref_put(ref);
    return e;
}

enum strata_auth_err strata_authz_object(struct strata_req *r, const struct strata_obj_info *info)
{
    if (!r->s3->acl_need)
        return STRATA_AUTH_OK;
    struct strata_policy_ref *ref = NULL;
    int rc = strata_policy_cache_get(r->srv->meta, &r->binfo, &ref);
    if (rc)
        return STRATA_AUTH_INTERNAL;
    int perm = r->s3->acl_need & ~POLICY_ALLOWED;
    enum strata_auth_err e = STRATA_AUTH_OK;
    if (!(r->s3->acl_need & POLICY_ALLOWED) ||
        !owned_by_bucket_owner(&r->binfo, info, ref->ownership))
        e = object_grant(r, &r->binfo, info, ref->ownership,
                         perm ? perm : STRATA_ACL_FULL_CONTROL,
                         (ref->pab & STRATA_PAB_IGNORE_PUBLIC_ACLS) != 0);
    strata_policy_ref_put(ref);
    return e;
}

enum strata_auth_err strata_authz_request(struct strata_req *r, int *serr)
{
    /* A caller that names the account it expects to own the bucket gets
     * 403 when another owns it (AWS), rather than acting on it anyway. */
    const char *expect = strata_req_hdr(r, "x-amz-expected-bucket-owner");
    if (expect && strcmp(expect, r->binfo.owner) != 0)
        return STRATA_AUTH_DENIED;
    const struct strata_route_authz *az = &r->route->authz;
    bool owner = is_owner(r, &r->binfo);
    if (az->kind == STRATA_AZ_PUBLIC || az->kind == STRATA_AZ_HANDLER)
        return STRATA_AUTH_OK; /* no credentials needed, or checked by the handler */
    bool evaluated = (az->kind == STRATA_AZ_POLICY || az->kind == STRATA_AZ_POLICY_OBJECT ||
                      az->kind == STRATA_AZ_POLICY_ADMIN) &&
                     az->action;
    if (!evaluated) /* no kind or action given: the owner only (fail closed) */
        return owner ? STRATA_AUTH_OK : STRATA_AUTH_DENIED;
    const char *vid = r->key ? strata_req_query(r, "versionId") : NULL;
    const char *action = vid && az->version_action ? az->version_action : az->action;
    struct strata_policy_ref *ref = NULL;
    int rc = strata_policy_cache_get(r->srv->meta, &r->binfo, &ref);
    if (rc) {
        *serr = rc;
        return STRATA_AUTH_STORE;
    }
    const struct strata_policy *p = strata_policy_ref_get(ref);
    enum strata_auth_err e;
    if (az->kind == STRATA_AZ_POLICY_ADMIN) {
        /* AWS: the owner's root can always manage the policy (no lockout);
         * other accounts never: 405 when a policy would allow them. */
        e = owner ? STRATA_AUTH_OK
            : evaluate(r, p, action, &r->binfo, NULL, NULL) == STRATA_POLICY_ALLOW
                ? STRATA_AUTH_OWNER_ONLY
                : STRATA_AUTH_DENIED;
    } else {
        /* Only the handlers that call strata_authz_object may be left the
         * object's grant check; any other route decides here (fail closed). */
        e = decide(r, ref, &r->binfo, action, r->key, vid,
                   az->kind == STRATA_AZ_POLICY_OBJECT ? &r->s3->acl_need : NULL);
    }
    strata_policy_ref_put(ref);
    return e;
}

enum s3_err strata_authz_missing_key(struct strata_req *r, enum s3_err e)
{
    if (e != S3E_NoSuchKey || !r->route || !r->binfo.name[0] || is_owner(r, &r->binfo))
        return e;
    return strata_authz_check(r, &r->binfo, "s3:ListBucket", NULL, NULL) ? S3E_AccessDenied : e;
}

bool strata_authz_bypass_governance(struct strata_req *r, const char *key, const char *version_id)
{
    const char *h = strata_req_hdr(r, "x-amz-bypass-governance-retention");
    return h && strcasecmp(h, "true") == 0 &&
           strata_authz_check(r, &r->binfo, "s3:BypassGovernanceRetention", key, version_id) ==
               STRATA_AUTH_OK;
}
