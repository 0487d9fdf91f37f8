/*
 * authz.h - request authorisation: who may do what on a bucket, the way
 * AWS decides it for a bucket owner account with a bucket policy.
 *
 *   - the bucket owner is allowed unless the policy explicitly denies;
 *   - any other user from --users, and an anonymous (unsigned) request,
 *     is allowed only when the policy allows the action on the resource;
 *   - an explicit Deny always wins;
 *   - Get/Put/DeleteBucketPolicy and GetBucketPolicyStatus: the owner
 *     always (so a policy cannot lock its owner out, as on AWS), anyone
 *     else never (403, or 405 when the policy would allow it, as AWS).
 *
 * Each route maps to one s3: action (one table in authz.c); operations
 * with a versionId map to their *Version action.  Connection threads.
 */
#ifndef STRATA_SERVER_AUTH_AUTHZ_H
#define STRATA_SERVER_AUTH_AUTHZ_H

#include "policy.h"
#include "srv.h"

/* Authorise r (its route, r->binfo loaded) as a whole.  S3E_NONE, or
 * AccessDenied / MethodNotAllowed / InternalError (a stored policy that
 * no longer parses, or a metadata error: *serr set). */
enum s3_err strata_authz_request(struct strata_req *r, int *serr);

/* Authorise one more (action, bucket, key) within r: the source of a copy
 * (bi is the source bucket) and each key of DeleteObjects.  key NULL for
 * the bucket itself. */
enum s3_err strata_authz_check(struct strata_req *r, const struct strata_bucket_info *bi,
                               const char *action, const char *key, const char *version_id);

/* x-amz-bypass-governance-retention: true, from a caller holding
 * s3:BypassGovernanceRetention on the version: the owner unless the policy
 * denies it, anyone else only when it allows it. */
bool strata_authz_bypass_governance(struct strata_req *r, const char *key,
                                    const char *version_id);

/* The error to answer instead of e: a missing key (NoSuchKey) is
 * AccessDenied for a caller without s3:ListBucket on the bucket, as AWS
 * does, so that permission to read is not permission to probe names. */
enum s3_err strata_authz_missing_key(struct strata_req *r, enum s3_err e);

/* The parsed policy of a bucket, shared and reference counted: NULL in
 * *out when it has none.  Cached one second; created_ms tells a bucket
 * from an earlier one of the same name.  0 or a STRATA_E* code. */
struct strata_policy_ref;
int strata_policy_cache_get(struct strata_meta *m, const struct strata_bucket_info *bi,
                            struct strata_policy_ref **out);
const struct strata_policy *strata_policy_ref_get(const struct strata_policy_ref *ref);
void strata_policy_ref_put(struct strata_policy_ref *ref);
/* After this daemon stores or deletes a bucket's policy. */
void strata_policy_cache_invalidate(const char *bucket);

#endif /* STRATA_SERVER_AUTH_AUTHZ_H */
