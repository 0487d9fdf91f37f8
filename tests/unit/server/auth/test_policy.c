/*
 * test_policy.c - the bucket policy evaluator: a table of requests against
 * the policy shapes of AWS's documentation ("Bucket policy examples",
 * "IAM JSON policy elements: Condition operators"), then validation:
 * every malformed shape gets STRATA_EINVAL with a message, and the
 * previous behaviour of a policy is never changed by a bad one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"
#include "strata/err.h"

#define B "arn:aws:s3:::doc-bucket"
#define AK2 "AKIAUSERTWO"
#define AK3 "AKIAUSERTHREE"

/* ---- policies, as in AWS's examples (bucket "doc-bucket") ------------------ */

static const char P_PUBLIC_READ[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Sid\":\"PublicRead\",\"Effect\":\"Allow\","
    "\"Principal\":\"*\",\"Action\":[\"s3:GetObject\",\"s3:GetObjectVersion\"],"
    "\"Resource\":[\"" B "/*\"]}]}";

static const char P_READ_ONLY_USER[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":["
    "{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"arn:aws:iam::123456789012:user/" AK2 "\"},"
    "\"Action\":\"s3:ListBucket\",\"Resource\":\"" B "\"},"
    "{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"" AK2 "\"]},"
    "\"Action\":[\"s3:Get*\"],\"Resource\":\"" B "/*\"}]}";

static const char P_DENY_PREFIX[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":["
    "{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"*\"},\"Action\":\"s3:*\","
    "\"Resource\":[\"" B "\",\"" B "/*\"]},"
    "{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:*\","
    "\"Resource\":\"" B "/private/*\"}]}";

static const char P_DENY_INSECURE[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Sid\":\"RestrictToTLSRequestsOnly\","
    "\"Action\":\"s3:*\",\"Effect\":\"Deny\",\"Resource\":[\"" B "\",\"" B "/*\"],"
    "\"Condition\":{\"Bool\":{\"aws:SecureTransport\":\"false\"}},\"Principal\":\"*\"}]}";

static const char P_IP[] =
    "{\"Version\":\"2012-10-17\",\"Id\":\"S3PolicyId1\",\"Statement\":[{\"Sid\":\"IPAllow\","
    "\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
    "\"Resource\":[\"" B "\",\"" B "/*\"],\"Condition\":{"
    "\"IpAddress\":{\"aws:SourceIp\":[\"192.0.2.0/24\",\"2001:DB8:1234:5678::/64\"]},"
    "\"NotIpAddress\":{\"aws:SourceIp\":[\"192.0.2.188/32\","
    "\"2001:DB8:1234:5678:ABCD::/80\"]}}}]}";

static const char P_LIST_PREFIX[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"" AK2
    "\"},\"Action\":\"s3:ListBucket\",\"Resource\":\"" B "\",\"Condition\":{"
    "\"StringEquals\":{\"s3:prefix\":[\"\",\"home/\"],\"s3:delimiter\":[\"/\"]}}},"
    "{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"" AK2 "\"},\"Action\":\"s3:ListBucket\","
    "\"Resource\":\"" B "\",\"Condition\":{\"StringLike\":{\"s3:prefix\":\"home/" AK2 "/*\"}}}]}";

static const char P_MAX_KEYS[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\","
    "\"Action\":\"s3:ListBucket\",\"Resource\":\"" B "\",\"Condition\":{"
    "\"NumericLessThanEquals\":{\"s3:max-keys\":\"10\"}}}]}";

static const char P_OWNER_FULL_CONTROL[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":["
    "{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"" AK2 "\",\"" AK3 "\"]},"
    "\"Action\":\"s3:PutObject\",\"Resource\":\"" B "/*\"},"
    "{\"Effect\":\"Deny\",\"Principal\":{\"AWS\":[\"" AK2 "\",\"" AK3 "\"]},"
    "\"Action\":\"s3:PutObject\",\"Resource\":\"" B "/*\",\"Condition\":{"
    "\"StringNotEquals\":{\"s3:x-amz-acl\":\"bucket-owner-full-control\"}}}]}";

/* AWS's "grant the bucket owner full control" with the grant header. */
static const char P_GRANT_HDR[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":["
    "{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"" AK2 "\"},"
    "\"Action\":\"s3:PutObject\",\"Resource\":\"" B "/*\",\"Condition\":{"
    "\"StringEquals\":{\"s3:x-amz-grant-full-control\":\"id=OWNERKEY\"}}},"
    "{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:PutObject\",\"Resource\":\"" B
    "/*\",\"Condition\":{\"Null\":{\"s3:x-amz-grant-read\":\"false\"}}}]}";

static const char P_TIME_WINDOW[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\","
    "\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\",\"Condition\":{"
    "\"DateGreaterThan\":{\"aws:CurrentTime\":\"2026-01-01T00:00:00Z\"},"
    "\"DateLessThan\":{\"aws:CurrentTime\":\"2026-06-30T00:00:00Z\"}}}]}";

static const char P_NOT_ACTION[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Deny\",\"Principal\":{\"AWS\":\"" AK2
    "\"},\"NotAction\":[\"s3:GetObject\",\"s3:ListBucket\"],\"Resource\":[\"" B "\",\"" B
    "/*\"]},{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"" AK2 "\"},\"Action\":\"s3:*\","
    "\"Resource\":[\"" B "\",\"" B "/*\"]}]}";

static const char P_NOT_RESOURCE[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\","
    "\"Action\":\"s3:GetObject\",\"NotResource\":\"" B "/secret/*\"}]}";

static const char P_TAG[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"" AK2
    "\"},\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\",\"Condition\":{"
    "\"StringEquals\":{\"s3:ExistingObjectTag/environment\":\"production\"}}}]}";

static const char P_TAG_KEYS[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\","
    "\"Action\":\"s3:PutObject\",\"Resource\":\"" B "/*\",\"Condition\":{"
    "\"ForAllValues:StringLike\":{\"s3:RequestObjectTagKeys\":[\"Owner\",\"Project*\"]}}},"
    "{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:PutObject\",\"Resource\":\"" B
    "/*\",\"Condition\":{\"ForAnyValue:StringEquals\":{\"s3:RequestObjectTagKeys\":"
    "\"Forbidden\"}}}]}";

static const char P_NULL_IFEXISTS[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":["
    "{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:PutObject\",\"Resource\":\"" B
    "/*\",\"Condition\":{\"Null\":{\"s3:x-amz-server-side-encryption\":\"true\"}}},"
    "{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"" B
    "/*\",\"Condition\":{\"StringEqualsIfExists\":{\"aws:UserAgent\":\"good-agent\"}}}]}";

static const char P_WILDCARDS[] =
    "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"arn:aws:iam::" AK3 ":root\"},"
    "\"Action\":[\"s3:?etObject\",\"S3:*Tagging\"],\"Resource\":\"arn:aws:s3:::doc-*/data/??.csv\"}}";

static const char P_CASE[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\","
    "\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\",\"Condition\":{"
    "\"StringEqualsIgnoreCase\":{\"aws:username\":\"ALICE\"},"
    "\"NumericGreaterThan\":{\"s3:object-lock-remaining-retention-days\":5},"
    "\"StringNotLike\":{\"aws:Referer\":\"*evil*\"}}}]}";

static const char P_NOT_PRINCIPAL[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Deny\",\"NotPrincipal\":{\"AWS\":\"" AK2
    "\"},\"Action\":\"s3:DeleteObject\",\"Resource\":\"" B "/*\"}]}";

static const char P_EPOCH[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Deny\",\"Principal\":\"*\","
    "\"Action\":\"s3:*\",\"Resource\":\"" B "/*\",\"Condition\":{"
    "\"DateGreaterThanEquals\":{\"aws:CurrentTime\":\"1767225600\"}}}]}";

/* AWS's "home directory" example with policy variables. */
static const char P_HOME[] =
    "{\"Version\":\"2012-10-17\",\"Statement\":["
    "{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"" AK2 "\",\"" AK3 "\"]},"
    "\"Action\":\"s3:ListBucket\",\"Resource\":\"" B "\",\"Condition\":{\"StringLike\":"
    "{\"s3:prefix\":[\"\",\"home/\",\"home/${aws:username}/*\"]}}},"
    "{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"" AK2 "\",\"" AK3 "\"]},"
    "\"Action\":[\"s3:GetObject\",\"s3:PutObject\"],\"Resource\":\"" B "/home/${aws:username}/*\"},"
    "{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
    "\"Resource\":\"" B "/literal${*}star${?}\",\"Condition\":{\"StringEquals\":"
    "{\"aws:Referer\":\"from-${aws:userid}\"}}}]}";

/* Without Version the same text is literal, as on AWS. */
static const char P_HOME_LITERAL[] =
    "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
    "\"Resource\":\"" B "/home/${aws:username}/*\"}]}";

/* ---- the table ------------------------------------------------------------- */

#define N STRATA_POLICY_NOMATCH
#define A STRATA_POLICY_ALLOW
#define D STRATA_POLICY_DENY

struct ecase {
    const char *policy;
    const char *principal; /* NULL: anonymous */
    const char *action;
    const char *resource;
    const char *kv;        /* "key=value;key=value" */
    enum strata_policy_decision want;
};

static const struct ecase cases[] = {
    /* public read */
    {P_PUBLIC_READ, NULL, "s3:GetObject", B "/index.html", "", A},
    {P_PUBLIC_READ, AK2, "s3:GetObject", B "/a/b/c", "", A},
    {P_PUBLIC_READ, NULL, "s3:GetObjectVersion", B "/x", "", A},
    {P_PUBLIC_READ, NULL, "s3:PutObject", B "/x", "", N},
    {P_PUBLIC_READ, NULL, "s3:ListBucket", B, "", N},
    {P_PUBLIC_READ, NULL, "s3:GetObject", B, "", N},
    {P_PUBLIC_READ, NULL, "s3:GetObject", "arn:aws:s3:::other/x", "", N},
    {P_PUBLIC_READ, NULL, "s3:getobject", B "/x", "", A},
    /* read-only user */
    {P_READ_ONLY_USER, AK2, "s3:ListBucket", B, "", A},
    {P_READ_ONLY_USER, AK2, "s3:GetObject", B "/k", "", A},
    {P_READ_ONLY_USER, AK2, "s3:GetObjectTagging", B "/k", "", A},
    {P_READ_ONLY_USER, AK2, "s3:PutObject", B "/k", "", N},
    {P_READ_ONLY_USER, AK2, "s3:DeleteObject", B "/k", "", N},
    {P_READ_ONLY_USER, AK3, "s3:GetObject", B "/k", "", N},
    {P_READ_ONLY_USER, NULL, "s3:GetObject", B "/k", "", N},
    {P_READ_ONLY_USER, AK2, "s3:ListBucket", B "/k", "", N},
    /* deny a prefix: explicit deny wins */
    {P_DENY_PREFIX, AK2, "s3:GetObject", B "/public/a", "", A},
    {P_DENY_PREFIX, AK2, "s3:GetObject", B "/private/a", "", D},
    {P_DENY_PREFIX, NULL, "s3:PutObject", B "/private/x/y", "", D},
    {P_DENY_PREFIX, AK3, "s3:ListBucket", B, "", A},
    {P_DENY_PREFIX, AK3, "s3:GetObject", B "/privateer", "", A},
    /* deny unless TLS */
    {P_DENY_INSECURE, AK2, "s3:GetObject", B "/k", "aws:SecureTransport=false", D},
    {P_DENY_INSECURE, AK2, "s3:GetObject", B "/k", "aws:SecureTransport=true", N},
    {P_DENY_INSECURE, NULL, "s3:ListBucket", B, "aws:securetransport=FALSE", D},
    {P_DENY_INSECURE, AK2, "s3:GetObject", B "/k", "", N},
    /* IP allow list with an exception, IPv4 and IPv6 */
    {P_IP, NULL, "s3:GetObject", B "/k", "aws:SourceIp=192.0.2.10", A},
    {P_IP, NULL, "s3:GetObject", B "/k", "aws:SourceIp=192.0.2.188", N},
    {P_IP, NULL, "s3:GetObject", B "/k", "aws:SourceIp=192.0.3.1", N},
    {P_IP, NULL, "s3:GetObject", B "/k", "aws:SourceIp=2001:db8:1234:5678::1", A},
    {P_IP, NULL, "s3:GetObject", B "/k", "aws:SourceIp=2001:db8:1234:5678:abcd::1", N},
    {P_IP, NULL, "s3:GetObject", B "/k", "aws:SourceIp=2001:db8:1234:5679::1", N},
    {P_IP, NULL, "s3:GetObject", B "/k", "", N},
    {P_IP, NULL, "s3:GetObject", B "/k", "aws:SourceIp=not-an-ip", N},
    /* ListBucket restricted by s3:prefix / s3:delimiter */
    {P_LIST_PREFIX, AK2, "s3:ListBucket", B, "s3:prefix=;s3:delimiter=/", A},
    {P_LIST_PREFIX, AK2, "s3:ListBucket", B, "s3:prefix=home/;s3:delimiter=/", A},
    {P_LIST_PREFIX, AK2, "s3:ListBucket", B, "s3:prefix=home/", N},
    {P_LIST_PREFIX, AK2, "s3:ListBucket", B, "s3:prefix=etc/;s3:delimiter=/", N},
    {P_LIST_PREFIX, AK2, "s3:ListBucket", B, "s3:prefix=home/" AK2 "/docs", A},
    {P_LIST_PREFIX, AK2, "s3:ListBucket", B, "s3:prefix=home/" AK3 "/docs", N},
    /* numeric */
    {P_MAX_KEYS, NULL, "s3:ListBucket", B, "s3:max-keys=10", A},
    {P_MAX_KEYS, NULL, "s3:ListBucket", B, "s3:max-keys=1000", N},
    {P_MAX_KEYS, NULL, "s3:ListBucket", B, "s3:max-keys=abc", N},
    {P_MAX_KEYS, NULL, "s3:ListBucket", B, "", N},
    /* grant PutObject only with bucket-owner-full-control */
    {P_OWNER_FULL_CONTROL, AK2, "s3:PutObject", B "/k", "s3:x-amz-acl=bucket-owner-full-control", A},
    {P_OWNER_FULL_CONTROL, AK3, "s3:PutObject", B "/k", "s3:x-amz-acl=public-read", D},
    {P_OWNER_FULL_CONTROL, AK2, "s3:PutObject", B "/k", "", D},
    {P_OWNER_FULL_CONTROL, NULL, "s3:PutObject", B "/k", "", N},
    /* the x-amz-grant-* keys */
    {P_GRANT_HDR, AK2, "s3:PutObject", B "/k", "s3:x-amz-grant-full-control=id=OWNERKEY", A},
    {P_GRANT_HDR, AK2, "s3:PutObject", B "/k", "s3:x-amz-grant-full-control=id=" AK2, N},
    {P_GRANT_HDR, AK2, "s3:PutObject", B "/k", "", N},
    {P_GRANT_HDR, AK2, "s3:PutObject", B "/k",
     "s3:x-amz-grant-full-control=id=OWNERKEY;s3:x-amz-grant-read=id=" AK3, D},
    /* dates */
    {P_TIME_WINDOW, NULL, "s3:GetObject", B "/k", "aws:CurrentTime=2026-03-01T12:00:00Z", A},
    {P_TIME_WINDOW, NULL, "s3:GetObject", B "/k", "aws:CurrentTime=2025-12-31T23:59:59Z", N},
    {P_TIME_WINDOW, NULL, "s3:GetObject", B "/k", "aws:CurrentTime=2026-07-01T00:00:00Z", N},
    {P_EPOCH, NULL, "s3:GetObject", B "/k", "aws:CurrentTime=2026-01-01T00:00:00Z", D},
    {P_EPOCH, NULL, "s3:GetObject", B "/k", "aws:CurrentTime=2025-12-31T23:59:59.5+00:00", N},
    /* NotAction / NotResource / NotPrincipal */
    {P_NOT_ACTION, AK2, "s3:GetObject", B "/k", "", A},
    {P_NOT_ACTION, AK2, "s3:ListBucket", B, "", A},
    {P_NOT_ACTION, AK2, "s3:DeleteObject", B "/k", "", D},
    {P_NOT_ACTION, AK3, "s3:DeleteObject", B "/k", "", N},
    {P_NOT_RESOURCE, NULL, "s3:GetObject", B "/open/a", "", A},
    {P_NOT_RESOURCE, NULL, "s3:GetObject", B "/secret/a", "", N},
    {P_NOT_PRINCIPAL, AK3, "s3:DeleteObject", B "/k", "", D},
    {P_NOT_PRINCIPAL, NULL, "s3:DeleteObject", B "/k", "", D},
    {P_NOT_PRINCIPAL, AK2, "s3:DeleteObject", B "/k", "", N},
    /* tags, ForAnyValue / ForAllValues */
    {P_TAG, AK2, "s3:GetObject", B "/k", "s3:ExistingObjectTag/environment=production", A},
    {P_TAG, AK2, "s3:GetObject", B "/k", "s3:ExistingObjectTag/environment=dev", N},
    {P_TAG, AK2, "s3:GetObject", B "/k", "s3:ExistingObjectTag/team=production", N},
    {P_TAG_KEYS, NULL, "s3:PutObject", B "/k",
     "s3:RequestObjectTagKeys=Owner;s3:RequestObjectTagKeys=ProjectX", A},
    {P_TAG_KEYS, NULL, "s3:PutObject", B "/k",
     "s3:RequestObjectTagKeys=Owner;s3:RequestObjectTagKeys=Cost", N},
    {P_TAG_KEYS, NULL, "s3:PutObject", B "/k", "", A},
    {P_TAG_KEYS, NULL, "s3:PutObject", B "/k",
     "s3:RequestObjectTagKeys=Owner;s3:RequestObjectTagKeys=Forbidden", D},
    /* Null and IfExists */
    {P_NULL_IFEXISTS, NULL, "s3:PutObject", B "/k", "", D},
    {P_NULL_IFEXISTS, NULL, "s3:PutObject", B "/k", "s3:x-amz-server-side-encryption=AES256", N},
    {P_NULL_IFEXISTS, NULL, "s3:GetObject", B "/k", "", A},
    {P_NULL_IFEXISTS, NULL, "s3:GetObject", B "/k", "aws:UserAgent=good-agent", A},
    {P_NULL_IFEXISTS, NULL, "s3:GetObject", B "/k", "aws:UserAgent=curl", N},
    /* wildcards in Action and Resource, the root ARN principal */
    {P_WILDCARDS, AK3, "s3:GetObject", "arn:aws:s3:::doc-bucket/data/ab.csv", "", A},
    {P_WILDCARDS, AK3, "s3:SetObject", "arn:aws:s3:::doc-bucket/data/ab.csv", "", A},
    {P_WILDCARDS, AK3, "s3:PutObjectTagging", "arn:aws:s3:::doc-bucket/data/ab.csv", "", A},
    {P_WILDCARDS, AK3, "s3:GetObject", "arn:aws:s3:::doc-bucket/data/abc.csv", "", N},
    {P_WILDCARDS, AK3, "s3:GetObjectAcl", "arn:aws:s3:::doc-bucket/data/ab.csv", "", N},
    {P_WILDCARDS, AK2, "s3:GetObject", "arn:aws:s3:::doc-bucket/data/ab.csv", "", N},
    {P_WILDCARDS, AK3, "s3:GetObject", "arn:aws:s3:::doc-bucket/DATA/ab.csv", "", N},
    /* policy variables */
    {P_HOME, AK2, "s3:GetObject", B "/home/alice/notes", "aws:username=alice", A},
    {P_HOME, AK2, "s3:PutObject", B "/home/bob/notes", "aws:username=alice", N},
    {P_HOME, AK2, "s3:GetObject", B "/home/alice/notes", "", N},
    {P_HOME, AK3, "s3:GetObject", B "/home/a*/x", "aws:username=a*", A},
    {P_HOME, AK3, "s3:GetObject", B "/home/ab/x", "aws:username=a*", N},
    {P_HOME, AK2, "s3:ListBucket", B, "aws:username=alice;s3:prefix=home/alice/docs/", A},
    {P_HOME, AK2, "s3:ListBucket", B, "aws:username=alice;s3:prefix=home/bob/", N},
    {P_HOME, AK2, "s3:ListBucket", B, "aws:username=alice;s3:prefix=home/", A},
    {P_HOME, NULL, "s3:GetObject", B "/literal*star?", "aws:userid=anonymous;aws:Referer=from-anonymous", D},
    {P_HOME, NULL, "s3:GetObject", B "/literalXstarY", "aws:userid=anonymous;aws:Referer=from-anonymous", N},
    {P_HOME, NULL, "s3:GetObject", B "/literal*star?", "aws:userid=anonymous;aws:Referer=from-x", N},
    {P_HOME_LITERAL, NULL, "s3:GetObject", B "/home/${aws:username}/x", "aws:username=alice", A},
    {P_HOME_LITERAL, NULL, "s3:GetObject", B "/home/alice/x", "aws:username=alice", N},
    /* several operators in one Condition are ANDed */
    {P_CASE, NULL, "s3:GetObject", B "/k",
     "aws:username=alice;s3:object-lock-remaining-retention-days=6", A},
    {P_CASE, NULL, "s3:GetObject", B "/k",
     "aws:username=alice;s3:object-lock-remaining-retention-days=5", N},
    {P_CASE, NULL, "s3:GetObject", B "/k",
     "aws:username=bob;s3:object-lock-remaining-retention-days=9", N},
    {P_CASE, NULL, "s3:GetObject", B "/k",
     "aws:username=Alice;s3:object-lock-remaining-retention-days=9;aws:Referer=http://evil.example/", N},
};

static enum strata_policy_decision eval_case(const struct ecase *c)
{
    char msg[256];
    struct strata_policy *p = NULL;
    int rc = strata_policy_parse(c->policy, strlen(c->policy), "doc-bucket", &p, msg, sizeof(msg));
    if (rc)
        fail_msg("policy did not parse: %s\n%s", msg, c->policy);
    struct strata_policy_kv kv[16];
    size_t nkv = 0;
    char *buf = strdup(c->kv), *save = NULL;
    for (char *t = strtok_r(buf, ";", &save); t && nkv < 16; t = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(t, '=');
        assert_non_null(eq);
        *eq = '\0';
        kv[nkv].key = t;
        kv[nkv].value = eq + 1;
        nkv++;
    }
    struct strata_policy_ctx ctx = {.principal = c->principal, .action = c->action,
                                    .resource = c->resource, .kv = kv, .nkv = nkv};
    enum strata_policy_decision d = strata_policy_eval(p, &ctx);
    free(buf);
    strata_policy_destroy(p);
    return d;
}

static void test_eval_table(void **state)
{
    size_t n = sizeof(cases) / sizeof(cases[0]);
    assert_true(n >= 60);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        enum strata_policy_decision d = eval_case(&cases[i]);
        if (d != cases[i].want) {
            print_error("case %zu: %s %s %s [%s]: got %d want %d\n", i,
                        cases[i].principal ? cases[i].principal : "(anonymous)", cases[i].action,
                        cases[i].resource, cases[i].kv, d, cases[i].want);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}

/* ---- validation -------------------------------------------------------------- */

struct vcase {
    const char *policy;
    int want;            /* 0, STRATA_EINVAL, STRATA_ENOTIMPL */
    const char *msg_has; /* substring of the message */
};

#define ST(body) "{\"Version\":\"2012-10-17\",\"Statement\":[" body "]}"
#define OK_ST "{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\"}"

static const struct vcase vcases[] = {
    {ST(OK_ST), 0, ""},
    {"", STRATA_EINVAL, "invalid Json"},
    {"{", STRATA_EINVAL, "invalid Json"},
    {"[]", STRATA_EINVAL, "first byte"},
    {"{\"Version\":\"2012-10-17\"}", STRATA_EINVAL, "Missing required field Statement"},
    {"{\"Version\":\"2010-01-01\",\"Statement\":[" OK_ST "]}", STRATA_EINVAL, "version"},
    {"{\"Version\":\"2012-10-17\",\"Statement\":[]}", STRATA_EINVAL, "non-empty"},
    {"{\"Version\":\"2012-10-17\",\"Statement\":\"x\"}", STRATA_EINVAL, "Statement"},
    {"{\"Version\":\"2012-10-17\",\"Bogus\":1,\"Statement\":[" OK_ST "]}", STRATA_EINVAL, "Unknown field Bogus"},
    {"{\"Version\":\"2012-10-17\",\"Version\":\"2012-10-17\",\"Statement\":[" OK_ST "]}", STRATA_EINVAL, "invalid Json"},
    {ST("{\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\"}"), STRATA_EINVAL, "Effect"},
    {ST("{\"Effect\":\"allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\"}"), STRATA_EINVAL, "Effect"},
    {ST("{\"Effect\":\"Allow\",\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\"}"), STRATA_EINVAL, "Principal"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"someone\",\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\"}"), STRATA_EINVAL, "principal"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"arn:aws:s3:::x\"},\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\"}"), STRATA_EINVAL, "principal"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":{\"Service\":\"cloudtrail.amazonaws.com\"},\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\"}"), STRATA_ENOTIMPL, "Service"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Resource\":\"" B "/*\"}"), STRATA_EINVAL, "Action"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"NotAction\":\"s3:PutObject\",\"Resource\":\"" B "/*\"}"), STRATA_EINVAL, "both Action and NotAction"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObjekt\",\"Resource\":\"" B "/*\"}"), STRATA_EINVAL, "invalid action: s3:GetObjekt"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"ec2:RunInstances\",\"Resource\":\"" B "/*\"}"), STRATA_EINVAL, "invalid action"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":[],\"Resource\":\"" B "/*\"}"), STRATA_EINVAL, "non-empty array"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":[1],\"Resource\":\"" B "/*\"}"), STRATA_EINVAL, "Action"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\"}"), STRATA_EINVAL, "Resource"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::other-bucket/*\"}"), STRATA_EINVAL, "invalid resource"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"doc-bucket/*\"}"), STRATA_EINVAL, "invalid resource"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::doc-*/*\"}"), 0, ""},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\",\"Condition\":{\"StringEqualz\":{\"s3:prefix\":\"a\"}}}"), STRATA_EINVAL, "Invalid Condition type"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"300.1.1.1/8\"}}}"), STRATA_EINVAL, "Invalid IP"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\",\"Condition\":{\"NumericLessThan\":{\"s3:max-keys\":\"ten\"}}}"), STRATA_EINVAL, "numeric"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\",\"Condition\":{\"DateLessThan\":{\"aws:CurrentTime\":\"yesterday\"}}}"), STRATA_EINVAL, "date"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\",\"Condition\":{\"StringEquals\":{\"foo:bar\":\"x\"}}}"), STRATA_EINVAL, "invalid condition key"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\",\"Condition\":{\"StringEquals\":{\"aws:PrincipalOrgID\":\"o-1\"}}}"), STRATA_ENOTIMPL, "aws:PrincipalOrgID"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/*\",\"Extra\":1}"), STRATA_EINVAL, "Unknown field Extra"},
    {ST("{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/home/${aws:PrincipalOrgID}/*\"}"), STRATA_ENOTIMPL, "${aws:PrincipalOrgID}"},
    {ST("{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::${aws:username}/*\"}"), STRATA_ENOTIMPL, "not supported here"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:ListBucket\",\"Resource\":\"" B "\",\"Condition\":{\"NumericLessThan\":{\"s3:max-keys\":\"${aws:username}\"}}}"), STRATA_ENOTIMPL, "not supported here"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:ListBucket\",\"Resource\":\"" B "\",\"Condition\":{\"StringLike\":{\"s3:prefix\":\"home/${aws:username\"}}}"), STRATA_EINVAL, "Unterminated"},
    {ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:ListBucket\",\"Resource\":\"" B "\",\"Condition\":{\"StringLike\":{\"s3:prefix\":\"home/${aws:username}/*\"}}}"), 0, ""},
    {"{\"Version\":\"2008-10-17\",\"Statement\":[{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"" B "/home/${aws:username}/*\"}]}", 0, ""},
};

static void test_validation(void **state)
{
    for (size_t i = 0; i < sizeof(vcases) / sizeof(vcases[0]); i++) {
        char msg[256];
        struct strata_policy *p = NULL;
        const char *doc = vcases[i].policy;
        int rc = strata_policy_parse(doc, strlen(doc), "doc-bucket", &p, msg, sizeof(msg));
        if (rc != vcases[i].want || !strstr(msg, vcases[i].msg_has))
            fail_msg("vcase %zu: rc %d msg \"%s\", want %d \"%s\"\n%s", i, rc, msg,
                     vcases[i].want, vcases[i].msg_has, doc);
        assert_true(rc == 0 ? p != NULL : p == NULL);
        strata_policy_destroy(p);
    }
}

static void test_size_limit(void **state)
{
    /* A valid policy padded with whitespace: 20480 bytes pass, 20481 fail. */
    char *doc = malloc(STRATA_POLICY_MAX + 2);
    const char *body = ST(OK_ST);
    size_t n = strlen(body);
    for (size_t len = STRATA_POLICY_MAX; len <= STRATA_POLICY_MAX + 1; len++) {
        memset(doc, ' ', len);
        memcpy(doc, body, n);
        char msg[128];
        struct strata_policy *p = NULL;
        int rc = strata_policy_parse(doc, len, "doc-bucket", &p, msg, sizeof(msg));
        assert_int_equal(rc, len == STRATA_POLICY_MAX ? 0 : STRATA_ETOOBIG);
        strata_policy_destroy(p);
    }
    free(doc);
}

static bool is_public(const char *doc)
{
    char msg[256];
    struct strata_policy *p = NULL;
    if (strata_policy_parse(doc, strlen(doc), "doc-bucket", &p, msg, sizeof(msg)))
        fail_msg("%s", msg);
    bool pub = strata_policy_is_public(p);
    strata_policy_destroy(p);
    return pub;
}

static void test_public(void **state)
{
    assert_true(is_public(P_PUBLIC_READ));
    assert_true(is_public(P_DENY_PREFIX));
    assert_true(is_public(P_MAX_KEYS));      /* s3:max-keys does not pin the caller */
    assert_false(is_public(P_READ_ONLY_USER));
    assert_false(is_public(P_DENY_INSECURE)); /* Deny only */
    assert_false(is_public(P_IP));            /* fixed source addresses */
    assert_true(is_public(ST("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
                             "\"Resource\":\"" B "/*\",\"Condition\":{\"IpAddress\":"
                             "{\"aws:SourceIp\":\"0.0.0.0/0\"}}}")));
}

static void test_glob(void **state)
{
    assert_true(strata_policy_glob("*", "", false));
    assert_true(strata_policy_glob("a*b*c", "aXXbYYc", false));
    assert_false(strata_policy_glob("a*b*c", "aXXbYY", false));
    assert_true(strata_policy_glob("a?c", "abc", false));
    assert_false(strata_policy_glob("a?c", "ac", false));
    assert_true(strata_policy_glob("S3:GET*", "s3:GetObject", true));
    assert_false(strata_policy_glob("S3:GET*", "s3:GetObject", false));
    assert_true(strata_policy_glob("**a", "bba", false));
}

static void test_uses_key(void **state)
{
    char msg[256];
    struct strata_policy *p = NULL;
    assert_int_equal(strata_policy_parse(P_TAG, strlen(P_TAG), "doc-bucket", &p, msg, sizeof(msg)), 0);
    assert_true(strata_policy_uses_key(p, "s3:ExistingObjectTag/"));
    assert_false(strata_policy_uses_key(p, "aws:SourceIp"));
    strata_policy_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval_table), cmocka_unit_test(test_validation),
        cmocka_unit_test(test_size_limit), cmocka_unit_test(test_public),
        cmocka_unit_test(test_glob),       cmocka_unit_test(test_uses_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
