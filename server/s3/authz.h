/*
 * authz.h - request authorisation: who may do what on a bucket, the way
 * AWS decides it for a bucket owner account with a bucket policy.
 *
 *   - the bucket owner is allowed unless the policy explicitly denies;
 *   - any other user from --users, and an anonymous (unsigned) request,
 *     is allowed only when the policy allows the action on the resource;
 *   - an explicit Deny always wins;
 *   - a policy Allow of an object read, ACL or tagging action covers only
 *     objects the bucket owner owns (all of them under BucketOwnerEnforced);
 *     another user's object in an ObjectWriter bucket needs its own ACL;
 *   - Get/Put/DeleteBucketPolicy and GetBucketPolicyStatus: the owner
 *     always (so a policy cannot lock its owner out, as on AWS), anyone
 *     else never (403, or 405 when the policy would allow it, as AWS).
 *
 * Each route carries its s3: action and how it is authorised (struct
 * strata_route_authz, srv.h; the route table in s3/router.c); operations
 * with a versionId use their *Version action.  Connection threads.
 */
#ifndef STRATA_SERVER_AUTH_AUTHZ_H
#define STRATA_SERVER_AUTH_AUTHZ_H

#include "acl.h"
#include "policy.h"
#include "srv.h"

/* S3 Object Ownership of a bucket ("ownership" configuration document,
 * the ObjectOwnership name verbatim).  NONE: the bucket has no ownership
 * controls (buckets created before them): objects belong to their
 * writer, as with ObjectWriter. */
enum strata_ownership {
    STRATA_OWN_NONE = 0,
    STRATA_OWN_OBJECT_WRITER,
    STRATA_OWN_PREFERRED,
    STRATA_OWN_ENFORCED,
};
/* A stored or received ObjectOwnership value; NONE when unknown. */
int strata_ownership_parse(const void *doc, size_t len);
const char *strata_ownership_name(int own);

/* Public access block settings (the "public-access-block" configuration
 * document: four bytes '0'/'1' in this bit order). */
#define STRATA_PAB_BLOCK_PUBLIC_ACLS 0x1u
#define STRATA_PAB_IGNORE_PUBLIC_ACLS 0x2u
#define STRATA_PAB_BLOCK_PUBLIC_POLICY 0x4u
#define STRATA_PAB_RESTRICT_PUBLIC_BUCKETS 0x8u

/* Authorise r (its route, r->binfo loaded) as a whole.  STRATA_AUTH_OK,
 * or DENIED, OWNER_ONLY (a bucket-policy operation by a non-owner the
 * policy would allow), INTERNAL (a stored policy that no longer parses),
 * STORE (a metadata error: *serr set).  The S3 layer maps these
 * (strata_s3_err_from_auth). */
enum strata_auth_err strata_authz_request(struct strata_req *r, int *serr);

/* The object-level ACL check strata_authz_request left to the handler
 * (r->s3->acl_need: GetObject, HeadObject, Get/PutObjectAcl by a caller that
 * neither the owner nor the policy allowed outright), once the handler
 * has the version: STRATA_AUTH_OK, DENIED or INTERNAL.  A no-op when
 * nothing was left. */
enum strata_auth_err strata_authz_object(struct strata_req *r, const struct strata_obj_info *info);

/* Authorise one more (action, bucket, key) within r: the source of a copy
 * (bi is the source bucket) and each key of DeleteObjects.  key NULL for
 * the bucket itself.  STRATA_AUTH_OK, DENIED or INTERNAL. */
enum strata_auth_err strata_authz_check(struct strata_req *r, const struct strata_bucket_info *bi,
                                        const char *action, const char *key,
                                        const char *version_id);

/* x-amz-bypass-governance-retention: true, from a caller holding
 * s3:BypassGovernanceRetention on the version: the owner unless the policy
 * denies it, anyone else only when it allows it. */
bool strata_authz_bypass_governance(struct strata_req *r, const char *key,
                                    const char *version_id);

/* The error to answer instead of e: a missing key (NoSuchKey) is
 * AccessDenied for a caller without s3:ListBucket on the bucket, as AWS
 * does, so that permission to read is not permission to probe names. */
enum s3_err strata_authz_missing_key(struct strata_req *r, enum s3_err e);

/* The parsed policy of a bucket with its ACL, ownership controls and
 * public access block, shared and reference counted (never NULL on
 * success; strata_policy_ref_get is NULL when it has no policy).  Cached
 * one second; created_ms tells a bucket
 * from an earlier one of the same name.  0 or a STRATA_E* code. */
struct strata_policy_ref;
int strata_policy_cache_get(struct strata_meta *m, const struct strata_bucket_info *bi,
                            struct strata_policy_ref **out);
/* The same for the request's bucket, or NULL once the store's error is
 * answered. */
struct strata_policy_ref *strata_req_policy_ref(struct strata_req *r);
const struct strata_policy *strata_policy_ref_get(const struct strata_policy_ref *ref);
/* The rest of the bucket's access state, loaded with the policy (ref
 * must not be NULL): its ACL (the default when none is stored), its
 * enum strata_ownership, its STRATA_PAB_* bits (*set: a configuration
 * exists; may be NULL). */
const struct strata_acl *strata_policy_ref_acl(const struct strata_policy_ref *ref);
int strata_policy_ref_ownership(const struct strata_policy_ref *ref);
unsigned strata_policy_ref_pab(const struct strata_policy_ref *ref, bool *set);
void strata_policy_ref_put(struct strata_policy_ref *ref);
/* After this daemon stores or deletes a bucket's policy, ACL, ownership
 * controls or public access block (NULL: every bucket's). */
void strata_policy_cache_invalidate(const char *bucket);

#endif /* STRATA_SERVER_AUTH_AUTHZ_H */
