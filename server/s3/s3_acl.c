/*
 * s3_acl.c - ACLs of buckets and objects: Get/PutBucketAcl,
 * Get/PutObjectAcl, and the ACL a request sets with x-amz-acl or the
 * x-amz-grant-* headers (CreateBucket, PutObject, CopyObject,
 * CreateMultipartUpload).  The model and its evaluation are in
 * auth/acl.c, the decisions in s3/authz.c.
 *
 * Stored: a bucket's ACL is its "acl" configuration document, an
 * object's is in its version record (strata_obj_acl_put); both in
 * acl.h's msgpack form, and absent when the ACL is the default (the
 * bucket owner with FULL_CONTROL), so older records read as private.
 * With BucketOwnerEnforced nothing but the default is ever accepted or
 * stored, and reads answer the bucket owner's full control.
 * Connection threads.
 */
#include "srv.h"
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "authz.h"
#include "key_order.h"
#include "repl_hooks.h"

static const char *const grant_hdrs[] = {
    "x-amz-grant-read", "x-amz-grant-write", "x-amz-grant-read-acp", "x-amz-grant-write-acp",
    "x-amz-grant-full-control",
};
static const int grant_perms[] = {
    STRATA_ACL_READ, STRATA_ACL_WRITE, STRATA_ACL_READ_ACP, STRATA_ACL_WRITE_ACP,
    STRATA_ACL_FULL_CONTROL,
};

/* strata_acl_resolve_cb over the users of --users. */
static bool resolve_user(void *ud, bool by_email, const char *value, char *id_out)
{
    struct strata_req *r = ud;
    const struct strata_creds *c = r->http->creds;
    const struct strata_cred *u =
        by_email ? strata_creds_find_email(c, value) : strata_creds_find(c, value);
    if (!u)
        return false;
    snprintf(id_out, STRATA_ACL_ID_MAX, "%s", u->access_key);
    return true;
}

/* strata_acl_resolve_cb of a replication peer's PutObjectAcl: the
 * source's canonical ids are kept as they are (AWS replicates ACLs
 * as-is); an id no user of this daemon has grants nothing here. */
static bool resolve_as_is(void *ud, bool by_email, const char *value, char *id_out)
{
    if (by_email)
        return resolve_user(ud, by_email, value, id_out);
    snprintf(id_out, STRATA_ACL_ID_MAX, "%s", value);
    return true;
}

/* strata_acl_name_cb: a user's display name. */
static const char *user_name(void *ud, const char *id)
{
    struct strata_req *r = ud;
    const struct strata_cred *u = strata_creds_find(r->http->creds, id);
    return u ? u->display_name : NULL;
}

bool strata_acl_hdrs_present(struct strata_req *r)
{
    if (strata_req_hdr(r, "x-amz-acl"))
        return true;
    for (size_t i = 0; i < sizeof(grant_hdrs) / sizeof(grant_hdrs[0]); i++)
        if (strata_req_hdr(r, grant_hdrs[i]))
            return true;
    return false;
}

enum s3_err strata_acl_from_hdrs(struct strata_req *r, bool bucket, const char *owner,
                                 const char *bucket_owner, struct strata_acl *out, bool *given)
{
    const char *canned = strata_req_hdr(r, "x-amz-acl");
    bool grants = false;
    for (size_t i = 0; i < sizeof(grant_hdrs) / sizeof(grant_hdrs[0]); i++)
        grants = grants || strata_req_hdr(r, grant_hdrs[i]) != NULL;
    *given = canned || grants;
    if (canned && grants) {
        r->err_msg = "Specifying both Canned ACLs and Header Grants is not allowed";
        return S3E_InvalidRequest;
    }
    if (!grants)
        return strata_s3_err_from_auth(
            strata_acl_canned(out, canned ? canned : "private", bucket, owner, bucket_owner));
    /* Grant headers are the whole ACL: the owner keeps only the implicit
     * READ_ACP and WRITE_ACP unless a header grants it more, as on AWS. */
    out->n = 0;
    snprintf(out->owner, sizeof(out->owner), "%s", owner);
    for (size_t i = 0; i < sizeof(grant_hdrs) / sizeof(grant_hdrs[0]); i++) {
        const char *v = strata_req_hdr(r, grant_hdrs[i]);
        enum s3_err e = v ? strata_s3_err_from_auth(
                                strata_acl_grant_hdr(out, grant_perms[i], v, resolve_user, r))
                          : S3E_NONE;
        if (e)
            return e;
    }
    return S3E_NONE;
}

enum s3_err strata_acl_check_set(struct strata_req *r, const struct strata_policy_ref *ref,
                                 const struct strata_acl *a, bool given)
{
    if (!given)
        return S3E_NONE;
    if (strata_policy_ref_ownership(ref) == STRATA_OWN_ENFORCED &&
        !strata_acl_is_owner_full_control(a, r->binfo.owner))
        return S3E_AccessControlListNotSupported;
    if ((strata_policy_ref_pab(ref, NULL) & STRATA_PAB_BLOCK_PUBLIC_ACLS) &&
        strata_acl_is_public(a))
        return S3E_AccessDenied;
    return S3E_NONE;
}

/* The encoded ACL to store into out: nothing for the default. */
static enum s3_err acl_store_form(const struct strata_acl *a, const char *bucket_owner,
                                  struct strata_sbuf *out)
{
    if (strata_acl_is_default(a, bucket_owner))
        return S3E_NONE;
    return strata_acl_encode(a, out) == 0 ? S3E_NONE : S3E_InternalError;
}

enum s3_err strata_acl_new_object(struct strata_req *r, struct strata_sbuf *out)
{
    /* The common case, the bucket owner (or an anonymous writer, whose
     * objects go to it) without ACL headers: the default ACL, whatever the
     * ownership mode, and nothing to store or look up. */
    if (!strata_acl_hdrs_present(r) &&
        (!r->auth.cred || strcmp(r->auth.cred->access_key, r->binfo.owner) == 0))
        return S3E_NONE;
    struct strata_policy_ref *ref = NULL;
    int rc = strata_policy_cache_get(r->srv->meta, &r->binfo, &ref);
    if (rc)
        return strata_s3_err_from_strata(rc, S3CTX_BUCKET);
    struct strata_acl *a = malloc(sizeof(*a));
    if (!a) {
        strata_policy_ref_put(ref);
        return S3E_InternalError;
    }
    /* Who owns the new object: its writer, except that the bucket owner
     * takes it under BucketOwnerEnforced, and under BucketOwnerPreferred
     * when it is written with bucket-owner-full-control.  Anonymous
     * writers (public-read-write buckets) leave it to the bucket owner. */
    int own = strata_policy_ref_ownership(ref);
    const char *canned = strata_req_hdr(r, "x-amz-acl");
    const char *owner = r->auth.cred ? r->auth.cred->access_key : r->binfo.owner;
    if (own == STRATA_OWN_ENFORCED ||
        (own == STRATA_OWN_PREFERRED && canned && strcmp(canned, "bucket-owner-full-control") == 0))
        owner = r->binfo.owner;
    bool given = false;
    /* Under BucketOwnerEnforced the ACL is judged as the writer asked for
     * it (private from another user is not bucket-owner-full-control),
     * then dropped. */
    enum s3_err e = strata_acl_from_hdrs(
        r, false, own == STRATA_OWN_ENFORCED && r->auth.cred ? r->auth.cred->access_key : owner,
        r->binfo.owner, a, &given);
    if (!e)
        e = strata_acl_check_set(r, ref, a, given);
    if (!e && own != STRATA_OWN_ENFORCED)
        e = acl_store_form(a, r->binfo.owner, out);
    free(a);
    strata_policy_ref_put(ref);
    return e;
}

/* The version an object ACL call acts on, checked against r->s3->acl_need. */
static enum s3_err object_lookup(struct strata_req *r, struct strata_obj_info *info, int *rc)
{
    const char *vid = strata_req_query(r, "versionId");
    *rc = strata_obj_head(r->srv->meta, r->bucket, r->key, vid, info);
    if (*rc)
        return S3E_NONE; /* the caller answers rc */
    return strata_s3_err_from_auth(strata_authz_object(r, info));
}

/* The ACL in force on the bucket or object (default under enforcement). */
static enum s3_err current_acl(struct strata_req *r, const struct strata_policy_ref *ref,
                               const struct strata_obj_info *info, struct strata_acl *a)
{
    if (strata_policy_ref_ownership(ref) == STRATA_OWN_ENFORCED) {
        strata_acl_default(a, r->binfo.owner);
    } else if (!info) {
        memcpy(a, strata_policy_ref_acl(ref), sizeof(*a));
    } else if (!info->acl || strata_acl_decode(info->acl, info->acl_len, a) != 0) {
        if (info->acl)
            return S3E_InternalError;
        strata_acl_default(a, r->binfo.owner);
    }
    return S3E_NONE;
}

/* Loads what the ACL handlers share: the bucket's access state, and the
 * version for an object.  Answers and returns false on failure. */
static bool acl_begin(struct strata_req *r, struct strata_policy_ref **ref,
                      struct strata_obj_info *info, struct strata_acl **a)
{
    *a = NULL;
    int rc = strata_policy_cache_get(r->srv->meta, &r->binfo, ref);
    if (rc) {
        strata_req_error_strata(r, rc, S3CTX_BUCKET);
        return false;
    }
    if (r->key) {
        enum s3_err e = object_lookup(r, info, &rc);
        if (rc) {
            strata_req_error_strata(r, rc,
                                    strata_req_query(r, "versionId") ? S3CTX_VERSION
                                                                     : S3CTX_OBJECT);
            return false;
        }
        if (e) {
            strata_req_error(r, e, 0);
            return false;
        }
    }
    *a = malloc(sizeof(**a));
    enum s3_err e = *a ? current_acl(r, *ref, r->key ? info : NULL, *a) : S3E_InternalError;
    if (e) {
        strata_req_error(r, e, 0);
        return false;
    }
    return true;
}

void strata_h_acl_get(struct strata_req *r)
{
    struct strata_policy_ref *ref = NULL;
    struct strata_obj_info info;
    memset(&info, 0, sizeof(info));
    struct strata_acl *a = NULL;
    if (acl_begin(r, &ref, &info, &a)) {
        struct strata_sbuf b;
        strata_sbuf_init(&b, 64 * 1024);
        strata_acl_xml(a, user_name, r, &b);
        strata_req_send_xml(r, 200, &b);
    }
    free(a);
    strata_obj_info_fini(&info);
    strata_policy_ref_put(ref);
}

/* The new ACL of a PutBucketAcl/PutObjectAcl: headers or body. */
static enum s3_err acl_put_parse(struct strata_req *r, const struct strata_acl *cur,
                                 struct strata_acl *a, bool *given, bool peer)
{
    bool hdrs = strata_acl_hdrs_present(r);
    if (hdrs && r->body.len) {
        r->err_msg = "This request does not support content";
        return S3E_UnexpectedContent;
    }
    if (!hdrs && r->body.len == 0)
        return S3E_MissingSecurityHeader;
    if (hdrs)
        return strata_acl_from_hdrs(r, !r->key, cur->owner, r->binfo.owner, a, given);
    *given = true;
    enum s3_err e = strata_xml_acl_parse(r->body.data, r->body.len, a,
                                         peer ? resolve_as_is : resolve_user, r);
    /* The owner cannot be changed through an ACL; a replica's owner is
     * the source version's. */
    if (!e && !peer && strcmp(a->owner, cur->owner) != 0)
        e = S3E_AccessDenied;
    return e;
}

void strata_h_acl_put(struct strata_req *r)
{
    struct strata_policy_ref *ref = NULL;
    struct strata_obj_info info;
    memset(&info, 0, sizeof(info));
    struct strata_acl *cur = NULL, *a = malloc(sizeof(*a));
    struct strata_sbuf enc;
    strata_sbuf_init(&enc, STRATA_ACL_MAX);
    int peer = r->key ? strata_repl_peer_change(r, "s3:ReplicateObject") : 0;
    if (peer < 0) {
        /* answered */
    } else if (!a) {
        strata_req_error(r, S3E_InternalError, 0);
    } else if (acl_begin(r, &ref, &info, &cur)) {
        bool given = false;
        enum s3_err e = acl_put_parse(r, cur, a, &given, peer > 0);
        if (!e)
            e = strata_acl_check_set(r, ref, a, given);
        if (!e)
            e = acl_store_form(a, r->binfo.owner, &enc);
        int rc = 0;
        if (!e && r->key) {
            void *order = strata_key_order_hold(r, r->key);
            rc = strata_obj_acl_put(r->srv->meta, r->bucket, r->key, info.version_id,
                                    enc.data, enc.len, NULL);
            if (!rc && !peer)
                strata_repl_emit_change(r, r->key, info.version_id, STRATA_REPL_ACL);
            strata_key_order_release(order);
        } else if (!e) {
            rc = strata_meta_bucket_config_put(r->srv->meta, r->bucket, "acl",
                                               enc.len ? enc.data : "", enc.len);
            strata_policy_cache_invalidate(r->bucket);
        }
        if (e)
            strata_req_error(r, e, 0);
        else if (rc && !(rc == STRATA_ENOTFOUND && !r->key && !enc.len))
            strata_req_error_strata(r, rc,
                                    !r->key                               ? S3CTX_BUCKET
                                    : strata_req_query(r, "versionId") ? S3CTX_VERSION
                                                                          : S3CTX_OBJECT);
        else
            strata_req_send_empty(r, 200);
    }
    strata_sbuf_fini(&enc);
    free(a);
    free(cur);
    strata_obj_info_fini(&info);
    strata_policy_ref_put(ref);
}

enum s3_err strata_acl_bucket_set(struct strata_req *r, int ownership, bool check_only)
{
    struct strata_acl *a = malloc(sizeof(*a));
    if (!a)
        return S3E_InternalError;
    bool given = false;
    const char *me = strata_req_user(r);
    enum s3_err e = strata_acl_from_hdrs(r, true, me, me, a, &given);
    if (!e && given && ownership == STRATA_OWN_ENFORCED && !strata_acl_is_owner_only(a, me))
        e = S3E_InvalidBucketAclWithObjectOwnership;
    struct strata_sbuf enc;
    strata_sbuf_init(&enc, STRATA_ACL_MAX);
    if (!e)
        e = acl_store_form(a, me, &enc);
    if (!e && !check_only) {
        int rc = strata_meta_bucket_config_put(r->srv->meta, r->bucket, "acl",
                                               enc.len ? enc.data : "", enc.len);
        strata_policy_cache_invalidate(r->bucket);
        if (rc && !(rc == STRATA_ENOTFOUND && !enc.len))
            e = strata_s3_err_from_strata(rc, S3CTX_BUCKET);
    }
    strata_sbuf_fini(&enc);
    free(a);
    return e;
}
