/*
 * post_policy.h - browser-based uploads (POST Object): who signed the form
 * and whether the form obeys its POST policy, as AWS documents them.
 *
 * A form carries a base64 JSON policy ({"expiration": ISO 8601,
 * "conditions": [...]}) signed with SigV4 (x-amz-algorithm,
 * x-amz-credential, x-amz-date, x-amz-signature = hex HMAC-SHA256 of the
 * base64 text with the signing key) or SigV2 (AWSAccessKeyId, signature =
 * base64 HMAC-SHA1 of the base64 text with the secret).  Conditions:
 * {"field": "value"} and ["eq", "$field", "value"] (exact),
 * ["starts-with", "$field", "prefix"] ("" allows any value; for
 * Content-Type every comma-separated value must start with it) and
 * ["content-length-range", min, max].  Every form field except
 * x-amz-signature, signature, AWSAccessKeyId, file, policy and x-ignore-*
 * must be named by a condition.  Field names compare case-insensitively;
 * "bucket" is the bucket the form was posted to.
 *
 * Pure functions (jansson, OpenSSL through sigv4_internal.h); any thread.
 */
#ifndef STRATA_SERVER_AUTH_POST_POLICY_H
#define STRATA_SERVER_AUTH_POST_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "auth.h"

/* The value of form field name (case-insensitive), or NULL. */
const char *strata_post_field(const struct strata_auth_hdr *f, size_t n, const char *name);

/*
 * The form's signer.  STRATA_AUTH_OK with *cred set (NULL: no policy and no
 * signature fields, an anonymous upload); BAD_ARGUMENT (a policy
 * without signature fields or the reverse, a bad credential, an
 * algorithm other than AWS4-HMAC-SHA256), UNKNOWN_KEY, BAD_SIGNATURE.  *msg: AWS's message (static)
 * or NULL.
 */
enum strata_auth_err strata_post_auth(const struct strata_creds *creds,
                                      const struct strata_auth_hdr *f, size_t n,
                                      const struct strata_cred **cred, const char **msg);

/* Whether a SigV4 form's x-amz-credential (AK/yyyymmdd/REGION/s3/
 * aws4_request) is scoped to region.  True also when there is nothing to
 * compare (a SigV2 or anonymous form, a credential strata_post_auth will
 * refuse as malformed); false with the credential's region in got. */
bool strata_post_region_ok(const struct strata_auth_hdr *f, size_t n, const char *region, char *got,
                           size_t got_len);

struct strata_post_policy; /* parsed policy */

/* Decodes and validates the policy field.  BAD_POLICY with msg
 * ("Invalid Policy: Invalid JSON.", "... Policy missing expiration.",
 * "... Invalid Condition: ..."), or STRATA_AUTH_OK with *out (caller frees). */
enum strata_auth_err strata_post_policy_parse(const char *b64, struct strata_post_policy **out,
                                              char *msg, size_t msg_len);
void strata_post_policy_free(struct strata_post_policy *p); /* NULL is a no-op */

/* Expiration (against now), every eq/starts-with condition and the
 * coverage rule, over the form fields f[0..n) with the form's bucket.
 * STRATA_AUTH_OK, or EXPIRED / POLICY_VIOLATION with msg ("Invalid
 * according to Policy: ..."). */
enum strata_auth_err strata_post_policy_check(const struct strata_post_policy *p,
                                              const char *bucket, const struct strata_auth_hdr *f,
                                              size_t n, time_t now, char *msg, size_t msg_len);

/* The content-length-range (the narrowest when given several): false when
 * the policy has none. */
bool strata_post_policy_length_range(const struct strata_post_policy *p, uint64_t *min,
                                     uint64_t *max);

#endif /* STRATA_SERVER_AUTH_POST_POLICY_H */
