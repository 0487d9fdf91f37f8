/*
 * policy.h - S3 bucket policies: parse and validate a policy document
 * (JSON, jansson) and evaluate a request against it the way AWS's policy
 * engine does for one resource-based policy.
 *
 * Pure: no I/O, no server types, so unit tests and fuzzers call it
 * directly.  A parsed policy is immutable and may be evaluated from any
 * number of threads at once.
 *
 * Supported, as documented by AWS (IAM JSON policy reference):
 *   Version "2012-10-17" / "2008-10-17" (optional); Id; Statement (object
 *   or array); Sid; Effect Allow/Deny; Principal / NotPrincipal "*" or
 *   {"AWS": "*" | ARN | access key | [...]}; Action / NotAction and
 *   Resource / NotResource with the wildcards * and ?; Condition with the
 *   operators String{Equals,NotEquals,EqualsIgnoreCase,NotEqualsIgnoreCase,
 *   Like,NotLike}, Numeric{Equals,NotEquals,LessThan,LessThanEquals,
 *   GreaterThan,GreaterThanEquals}, Date{same six}, Bool, IpAddress,
 *   NotIpAddress, Arn{Equals,Like,NotEquals,NotLike}, Null, each with the
 *   ...IfExists suffix and the ForAnyValue: / ForAllValues: qualifiers.
 * With Version 2012-10-17, policy variables ${key} (a condition key of
 * the request), ${*}, ${?} and ${$} are substituted in Resource /
 * NotResource and in String and Arn condition values; elsewhere, or for a
 * key Strata does not fill in, the policy is refused (STRATA_ENOTIMPL).
 * A principal matches a caller when it is "*", the caller's access key, or
 * an IAM ARN naming it (arn:aws:iam::KEY:root, arn:aws:iam::ACCT:user/KEY).
 */
#ifndef STRATA_SERVER_AUTH_POLICY_H
#define STRATA_SERVER_AUTH_POLICY_H

#include <stdbool.h>
#include <stddef.h>

/* AWS: "Bucket policies are limited to 20 KB in size." */
#define STRATA_POLICY_MAX 20480

struct strata_policy; /* a parsed, validated policy */

enum strata_policy_decision {
    STRATA_POLICY_NOMATCH = 0, /* no statement applies: implicit deny */
    STRATA_POLICY_ALLOW,
    STRATA_POLICY_DENY,        /* an explicit Deny: wins over any Allow */
};

/* One value of a condition key.  A key given several times is
 * multi-valued (tags, for ForAnyValue/ForAllValues). */
struct strata_policy_kv {
    const char *key;   /* "aws:SourceIp"; matched case-insensitively */
    const char *value; /* as text: "true", "10", "2026-01-01T00:00:00Z" */
};

struct strata_policy_ctx {
    const char *principal; /* caller's access key, NULL when anonymous */
    const char *action;    /* "s3:GetObject" */
    const char *resource;  /* "arn:aws:s3:::bucket" or "arn:aws:s3:::bucket/key" */
    const struct strata_policy_kv *kv; /* the request's condition keys */
    size_t nkv;
};

/*
 * Parse and validate doc (len bytes) as the policy of bucket.  Returns 0
 * and *out (caller destroys), or:
 *   STRATA_EINVAL   malformed (AWS's MalformedPolicy), msg says why;
 *   STRATA_ETOOBIG  over STRATA_POLICY_MAX bytes;
 *   STRATA_ENOTIMPL valid for AWS but uses a condition key or operator
 *                   Strata cannot evaluate, msg names it;
 *   STRATA_ENOMEM.
 * msg (msg_len bytes) always holds a NUL-terminated string.
 */
int strata_policy_parse(const char *doc, size_t len, const char *bucket,
                        struct strata_policy **out, char *msg, size_t msg_len);
void strata_policy_destroy(struct strata_policy *p);

/* Evaluate the request ctx: DENY when any matching statement denies,
 * else ALLOW when one allows, else NOMATCH. */
enum strata_policy_decision strata_policy_eval(const struct strata_policy *p,
                                               const struct strata_policy_ctx *ctx);

/* GetBucketPolicyStatus: true when an Allow statement applies to every
 * principal ("*") without a condition that pins the caller down to fixed
 * values (aws:SourceIp other than a /0, aws:userid, aws:username,
 * aws:PrincipalArn, aws:SourceVpc...), as AWS defines "public". */
bool strata_policy_is_public(const struct strata_policy *p);

/* True when some condition of p uses a key starting with prefix
 * (case-insensitive), e.g. "s3:ExistingObjectTag/": lets the caller skip
 * gathering context that no statement reads. */
bool strata_policy_uses_key(const struct strata_policy *p, const char *prefix);

/* Glob match with * (any run) and ? (one character), as Action, Resource
 * and StringLike use it. */
bool strata_policy_glob(const char *pattern, const char *s, bool nocase);

#endif /* STRATA_SERVER_AUTH_POLICY_H */
