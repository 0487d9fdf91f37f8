/*
 * policy.c - bucket policy parsing, validation and evaluation (see
 * policy.h).  The validated JSON tree is kept and walked at evaluation
 * time; validation guarantees every shape the evaluator relies on.
 */
#include "policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>

#include "strata/err.h"

struct strata_policy {
    json_t *root;
    json_t *stmts;  /* array of statement objects (borrowed from root) */
    bool variables; /* Version 2012-10-17: ${...} are substituted */
};

/* What a statement is evaluated with. */
struct ectx {
    const struct strata_policy_ctx *c;
    bool variables;
};

/* ---- tables --------------------------------------------------------------- */

/* AWS S3 action names (without "s3:"), so a policy naming an action
 * without wildcards is checked as AWS checks it. */
static const char *const s3_actions[] = {
    "AbortMultipartUpload", "BypassGovernanceRetention", "CreateBucket", "DeleteBucket",
    "DeleteBucketOwnershipControls", "DeleteBucketPolicy", "DeleteBucketWebsite",
    "DeleteObject", "DeleteObjectTagging", "DeleteObjectVersion", "DeleteObjectVersionTagging",
    "GetAccelerateConfiguration", "GetAnalyticsConfiguration", "GetBucketAcl", "GetBucketCORS",
    "GetBucketLocation", "GetBucketLogging", "GetBucketNotification", "GetBucketObjectLockConfiguration",
    "GetBucketOwnershipControls", "GetBucketPolicy", "GetBucketPolicyStatus",
    "GetBucketPublicAccessBlock", "GetBucketRequestPayment", "GetBucketTagging",
    "GetBucketVersioning", "GetBucketWebsite", "GetEncryptionConfiguration",
    "GetIntelligentTieringConfiguration", "GetInventoryConfiguration", "GetLifecycleConfiguration",
    "GetMetricsConfiguration", "GetObject", "GetObjectAcl", "GetObjectAttributes",
    "GetObjectLegalHold", "GetObjectRetention", "GetObjectTagging", "GetObjectTorrent",
    "GetObjectVersion", "GetObjectVersionAcl", "GetObjectVersionAttributes",
    "GetObjectVersionForReplication", "GetObjectVersionTagging", "GetObjectVersionTorrent",
    "GetReplicationConfiguration", "ListAllMyBuckets", "ListBucket", "ListBucketMultipartUploads",
    "ListBucketVersions", "ListMultipartUploadParts", "ObjectOwnerOverrideToBucketOwner",
    "PutAccelerateConfiguration", "PutAnalyticsConfiguration", "PutBucketAcl", "PutBucketCORS",
    "PutBucketLogging", "PutBucketNotification", "PutBucketObjectLockConfiguration",
    "PutBucketOwnershipControls", "PutBucketPolicy", "PutBucketPublicAccessBlock",
    "PutBucketRequestPayment", "PutBucketTagging", "PutBucketVersioning", "PutBucketWebsite",
    "PutEncryptionConfiguration", "PutIntelligentTieringConfiguration",
    "PutInventoryConfiguration", "PutLifecycleConfiguration", "PutMetricsConfiguration",
    "PutObject", "PutObjectAcl", "PutObjectLegalHold", "PutObjectRetention", "PutObjectTagging",
    "PutObjectVersionAcl", "PutObjectVersionTagging", "PutReplicationConfiguration",
    "ReplicateDelete", "ReplicateObject", "ReplicateTags", "RestoreObject",
};

/* Condition keys Strata fills in (exact names, or prefixes ending in '/'). */
static const char *const cond_keys[] = {
    "aws:SourceIp", "aws:SecureTransport", "aws:CurrentTime", "aws:EpochTime", "aws:username",
    "aws:userid", "aws:UserAgent", "aws:Referer", "aws:PrincipalType", "s3:prefix",
    "s3:delimiter", "s3:max-keys", "s3:x-amz-acl", "s3:x-amz-server-side-encryption",
    "s3:x-amz-copy-source", "s3:x-amz-metadata-directive", "s3:x-amz-storage-class",
    "s3:VersionId", "s3:authType", "s3:signatureversion", "s3:ExistingObjectTag/",
    "s3:RequestObjectTag/", "s3:RequestObjectTagKeys", "s3:object-lock-mode",
    "s3:object-lock-retain-until-date", "s3:object-lock-remaining-retention-days",
    "s3:object-lock-legal-hold", "s3:x-amz-grant-read", "s3:x-amz-grant-write",
    "s3:x-amz-grant-read-acp", "s3:x-amz-grant-write-acp", "s3:x-amz-grant-full-control",
};

/* Keys that, compared for fixed values, make a policy not public
 * (AWS: "The meaning of public"). */
static const char *const nonpublic_keys[] = {
    "aws:SourceIp",    "aws:SourceArn",       "aws:SourceVpc",    "aws:SourceVpce",
    "aws:SourceOwner", "aws:SourceAccount",   "aws:userid",       "aws:username",
    "aws:PrincipalArn", "aws:PrincipalAccount", "aws:PrincipalOrgID", "aws:PrincipalOrgPaths",
    "s3:DataAccessPointArn", "s3:DataAccessPointAccount",
};

enum op_kind { OP_STRING, OP_STRING_NOCASE, OP_STRING_LIKE, OP_NUMERIC, OP_DATE, OP_BOOL,
               OP_IP, OP_NULL };
enum op_cmp { CMP_EQ, CMP_LT, CMP_LE, CMP_GT, CMP_GE };

struct op_def {
    const char *name;
    enum op_kind kind;
    enum op_cmp cmp;
    bool negate;
};

static const struct op_def ops[] = {
    {"StringEquals", OP_STRING, CMP_EQ, false},
    {"StringNotEquals", OP_STRING, CMP_EQ, true},
    {"StringEqualsIgnoreCase", OP_STRING_NOCASE, CMP_EQ, false},
    {"StringNotEqualsIgnoreCase", OP_STRING_NOCASE, CMP_EQ, true},
    {"StringLike", OP_STRING_LIKE, CMP_EQ, false},
    {"StringNotLike", OP_STRING_LIKE, CMP_EQ, true},
    {"ArnEquals", OP_STRING_LIKE, CMP_EQ, false},
    {"ArnLike", OP_STRING_LIKE, CMP_EQ, false},
    {"ArnNotEquals", OP_STRING_LIKE, CMP_EQ, true},
    {"ArnNotLike", OP_STRING_LIKE, CMP_EQ, true},
    {"NumericEquals", OP_NUMERIC, CMP_EQ, false},
    {"NumericNotEquals", OP_NUMERIC, CMP_EQ, true},
    {"NumericLessThan", OP_NUMERIC, CMP_LT, false},
    {"NumericLessThanEquals", OP_NUMERIC, CMP_LE, false},
    {"NumericGreaterThan", OP_NUMERIC, CMP_GT, false},
    {"NumericGreaterThanEquals", OP_NUMERIC, CMP_GE, false},
    {"DateEquals", OP_DATE, CMP_EQ, false},
    {"DateNotEquals", OP_DATE, CMP_EQ, true},
    {"DateLessThan", OP_DATE, CMP_LT, false},
    {"DateLessThanEquals", OP_DATE, CMP_LE, false},
    {"DateGreaterThan", OP_DATE, CMP_GT, false},
    {"DateGreaterThanEquals", OP_DATE, CMP_GE, false},
    {"Bool", OP_BOOL, CMP_EQ, false},
    {"IpAddress", OP_IP, CMP_EQ, false},
    {"NotIpAddress", OP_IP, CMP_EQ, true},
    {"Null", OP_NULL, CMP_EQ, false},
};

enum qual { Q_NONE, Q_ANY, Q_ALL };

/* A condition operator name split into qualifier, operator, IfExists; q
 * and if_exists may be NULL where the caller needs only some. */
static const struct op_def *op_lookup(const char *name, enum qual *q, bool *if_exists)
{
    enum qual qual = Q_NONE;
    if (strncasecmp(name, "ForAnyValue:", 12) == 0) {
        qual = Q_ANY;
        name += 12;
    } else if (strncasecmp(name, "ForAllValues:", 13) == 0) {
        qual = Q_ALL;
        name += 13;
    }
    size_t n = strlen(name);
    bool ifx = n > 8 && strcmp(name + n - 8, "IfExists") == 0;
    if (ifx)
        n -= 8;
    if (q)
        *q = qual;
    if (if_exists)
        *if_exists = ifx;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (strlen(ops[i].name) == n && strncmp(ops[i].name, name, n) == 0)
            return &ops[i];
    return NULL;
}

/* The i-th of a condition key's values: the list's, or the one value
 * itself (i 0); NULL past the last. */
static json_t *cond_value(json_t *vals, size_t i)
{
    if (json_is_array(vals))
        return json_array_get(vals, i);
    return i == 0 ? vals : NULL;
}

/* ---- matching primitives -------------------------------------------------- */

static int fold(int c, bool nocase)
{
    return nocase ? tolower((unsigned char)c) : (unsigned char)c;
}

/* With esc, a backslash makes the next pattern character literal (the
 * text a policy variable put in). */
static bool glob_x(const char *pat, const char *s, bool nocase, bool esc)
{
    const char *star = NULL, *resume = NULL;
    while (*s) {
        bool lit = esc && pat[0] == '\\' && pat[1];
        if (!lit && *pat == '*') {
            star = pat++;
            resume = s;
        } else if (*pat && ((!lit && *pat == '?') || fold(pat[lit], nocase) == fold(*s, nocase))) {
            pat += 1 + lit;
            s++;
        } else if (star) {
            pat = star + 1;
            s = ++resume;
        } else {
            return false;
        }
    }
    while (*pat == '*')
        pat++;
    return *pat == '\0';
}

bool strata_policy_glob(const char *pat, const char *s, bool nocase)
{
    return glob_x(pat, s, nocase, false);
}

/* The value of a single-valued context key, or NULL. */
static const char *ctx_value(const struct strata_policy_ctx *c, const char *key, size_t klen)
{
    for (size_t i = 0; i < c->nkv; i++)
        if (strlen(c->kv[i].key) == klen && strncasecmp(c->kv[i].key, key, klen) == 0)
            return c->kv[i].value;
    return NULL;
}

/*
 * Substitutes the policy variables of pat (${aws:username}, ${*}, ${?},
 * ${$}) into out.  With esc the result is a glob pattern: substituted
 * text is escaped for glob_x and a backslash of pat itself too.  False
 * when a variable's key is absent from the request (the value then
 * matches nothing, as on AWS) or the result does not fit.
 */
static bool expand(const char *pat, const struct strata_policy_ctx *c, bool esc, char *out,
                   size_t len)
{
    size_t o = 0;
    for (const char *p = pat; *p;) {
        const char *val = NULL;
        size_t vlen = 0, skip = 1;
        char one[2] = {*p, 0};
        const char *end = strncmp(p, "${", 2) == 0 ? strchr(p + 2, '}') : NULL;
        bool subst = end != NULL;
        if (subst) {
            size_t n = (size_t)(end - p - 2);
            skip = n + 3;
            if (n == 1 && strchr("*?$", p[2])) {
                one[0] = p[2];
                val = one;
            } else {
                val = ctx_value(c, p + 2, n);
                if (!val)
                    return false;
            }
        } else {
            val = one;
        }
        vlen = strlen(val);
        for (size_t i = 0; i < vlen; i++) {
            bool quote = esc && (val[i] == '\\' || (subst && (val[i] == '*' || val[i] == '?')));
            if (o + 2 >= len)
                return false;
            if (quote)
                out[o++] = '\\';
            out[o++] = val[i];
        }
        p += skip;
    }
    out[o] = '\0';
    return true;
}

/* pat (a glob) against s, with variables substituted when vars. */
static bool glob_vars(const char *pat, const char *s, bool nocase, const struct ectx *e)
{
    if (!e->variables || !strstr(pat, "${"))
        return glob_x(pat, s, nocase, false);
    char buf[4096];
    return expand(pat, e->c, true, buf, sizeof(buf)) && glob_x(buf, s, nocase, true);
}

static bool parse_number(const char *s, double *out)
{
    char *end;
    if (!*s)
        return false;
    double v = strtod(s, &end);
    if (*end || isnan(v))
        return false;
    *out = v;
    return true;
}

/* ISO 8601 (2026-01-01, 2026-01-01T00:00:00Z, with fraction or offset
 * "+hh:mm") or epoch seconds. */
static bool parse_date(const char *s, double *out)
{
    double epoch;
    if (strspn(s, "0123456789") == strlen(s) && parse_number(s, &epoch)) {
        *out = epoch;
        return true;
    }
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *p = strptime(s, "%Y-%m-%d", &tm);
    if (!p)
        return false;
    double frac = 0;
    long off = 0;
    if (*p == 'T' || *p == 't') {
        const char *q = strptime(p + 1, "%H:%M:%S", &tm);
        if (!q)
            q = strptime(p + 1, "%H:%M", &tm);
        if (!q)
            return false;
        p = q;
        if (*p == '.') {
            char *end;
            frac = strtod(p, &end);
            p = end;
        }
        if (*p == 'Z' || *p == 'z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int hh, mm;
            if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2 || strlen(p) != 6)
                return false;
            off = (hh * 3600L + mm * 60L) * (*p == '+' ? 1 : -1);
            p += 6;
        }
    }
    if (*p)
        return false;
    *out = (double)timegm(&tm) - (double)off + frac;
    return true;
}

struct cidr {
    int af;
    unsigned char addr[16];
    int bits;
};

static bool parse_cidr(const char *s, struct cidr *c)
{
    char buf[64];
    size_t n = strlen(s);
    if (n >= sizeof(buf))
        return false;
    memcpy(buf, s, n + 1);
    char *slash = strchr(buf, '/');
    if (slash)
        *slash++ = '\0';
    c->af = strchr(buf, ':') ? AF_INET6 : AF_INET;
    int max = c->af == AF_INET6 ? 128 : 32;
    if (inet_pton(c->af, buf, c->addr) != 1)
        return false;
    c->bits = max;
    if (slash) {
        char *end;
        long b = strtol(slash, &end, 10);
        if (!*slash || *end || b < 0 || b > max)
            return false;
        c->bits = (int)b;
    }
    return true;
}

static bool cidr_contains(const struct cidr *net, const struct cidr *ip)
{
    if (net->af != ip->af)
        return false;
    int full = net->bits / 8, rest = net->bits % 8;
    if (memcmp(net->addr, ip->addr, (size_t)full) != 0)
        return false;
    if (rest == 0)
        return true;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (net->addr[full] & mask) == (ip->addr[full] & mask);
}

/* A JSON condition value as text ("true", "10"); NULL for other types. */
static const char *value_text(json_t *v, char *buf, size_t len)
{
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_true(v))
        return "true";
    if (json_is_false(v))
        return "false";
    if (json_is_integer(v)) {
        snprintf(buf, len, "%lld", (long long)json_integer_value(v));
        return buf;
    }
    if (json_is_real(v)) {
        snprintf(buf, len, "%.17g", json_real_value(v));
        return buf;
    }
    return NULL;
}

/* ---- validation ------------------------------------------------------------ */

struct vctx {
    bool variables; /* Version 2012-10-17: ${...} are policy variables */
    const char *bucket;
    char *msg;
    size_t msg_len;
    int rc;
};

__attribute__((format(printf, 3, 4))) static int fail(struct vctx *v, int rc, const char *fmt,
                                                      ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->msg, v->msg_len, fmt, ap);
    va_end(ap);
    v->rc = rc;
    return rc;
}

/* A string or a non-empty array of strings: calls check on each. */
static int each_string(struct vctx *v, json_t *x, const char *what,
                       int (*check)(struct vctx *v, const char *s))
{
    if (json_is_string(x))
        return check(v, json_string_value(x));
    if (!json_is_array(x) || json_array_size(x) == 0)
        return fail(v, STRATA_EINVAL, "%s must be a string or a non-empty array of strings", what);
    size_t i;
    json_t *e;
    json_array_foreach(x, i, e) {
        if (!json_is_string(e))
            return fail(v, STRATA_EINVAL, "%s must be a string or a non-empty array of strings",
                        what);
        int rc = check(v, json_string_value(e));
        if (rc)
            return rc;
    }
    return 0;
}

static int check_action(struct vctx *v, const char *a)
{
    if (strcmp(a, "*") == 0)
        return 0;
    if (strncasecmp(a, "s3:", 3) != 0 || !a[3])
        return fail(v, STRATA_EINVAL, "Policy has invalid action: %s", a);
    if (strpbrk(a + 3, "*?"))
        return 0;
    for (size_t i = 0; i < sizeof(s3_actions) / sizeof(s3_actions[0]); i++)
        if (strcasecmp(s3_actions[i], a + 3) == 0)
            return 0;
    return fail(v, STRATA_EINVAL, "Policy has invalid action: %s", a);
}

static bool key_supported(const char *k);

/* Policy variables: ${*}, ${?}, ${$} and the condition keys Strata fills
 * in; anything else is refused rather than matched literally, which
 * would quietly void a Deny.  allowed is false where none may appear. */
static int check_variables(struct vctx *v, const char *s, bool allowed)
{
    if (!v->variables)
        return 0;
    for (const char *p = strstr(s, "${"); p; p = strstr(p + 2, "${")) {
        const char *end = strchr(p + 2, '}');
        if (!end)
            return fail(v, STRATA_EINVAL, "Unterminated policy variable in %s", s);
        char name[160];
        size_t n = (size_t)(end - p - 2);
        if (n >= sizeof(name))
            return fail(v, STRATA_ENOTIMPL, "Policy variable not supported in %s", s);
        memcpy(name, p + 2, n);
        name[n] = '\0';
        bool ok = (n == 1 && strchr("*?$", name[0])) || (key_supported(name) && !strchr(name, ','));
        if (!ok || !allowed)
            return fail(v, STRATA_ENOTIMPL, "Policy variable ${%s} is not supported here: %s", name, s);
    }
    return 0;
}

static int check_resource(struct vctx *v, const char *r)
{
    static const char pfx[] = "arn:aws:s3:::";
    if (strcmp(r, "*") == 0)
        return 0;
    if (strncmp(r, pfx, sizeof(pfx) - 1) != 0 || !r[sizeof(pfx) - 1])
        return fail(v, STRATA_EINVAL, "Policy has invalid resource: %s", r);
    /* The bucket part must name this bucket (wildcards allowed). */
    const char *b = r + sizeof(pfx) - 1;
    size_t blen = strcspn(b, "/");
    if (check_variables(v, b + blen, true))
        return v->rc;
    if (memchr(b, '$', blen) && check_variables(v, b, false))
        return v->rc;
    char pat[512];
    if (blen >= sizeof(pat))
        return fail(v, STRATA_EINVAL, "Policy has invalid resource: %s", r);
    memcpy(pat, b, blen);
    pat[blen] = '\0';
    if (!strata_policy_glob(pat, v->bucket, false))
        return fail(v, STRATA_EINVAL, "Policy has invalid resource: %s", r);
    return 0;
}

static int check_principal_str(struct vctx *v, const char *p)
{
    if (strcmp(p, "*") == 0)
        return 0;
    if (strncmp(p, "arn:", 4) == 0) {
        if (strncmp(p, "arn:aws:iam::", 13) != 0 || !strchr(p + 13, ':'))
            return fail(v, STRATA_EINVAL, "Invalid principal in policy: %s", p);
        return 0;
    }
    if (!*p || strpbrk(p, " *?"))
        return fail(v, STRATA_EINVAL, "Invalid principal in policy: %s", p);
    return 0;
}

static int check_principal(struct vctx *v, json_t *p)
{
    if (json_is_string(p)) {
        if (strcmp(json_string_value(p), "*") != 0)
            return fail(v, STRATA_EINVAL, "Invalid principal in policy");
        return 0;
    }
    if (!json_is_object(p) || json_object_size(p) == 0)
        return fail(v, STRATA_EINVAL, "Invalid principal in policy");
    const char *k;
    json_t *x;
    json_object_foreach(p, k, x) {
        if (strcmp(k, "AWS") == 0) {
            int rc = each_string(v, x, "Principal AWS", check_principal_str);
            if (rc)
                return rc;
        } else if (strcmp(k, "CanonicalUser") == 0 || strcmp(k, "Service") == 0 ||
                   strcmp(k, "Federated") == 0) {
            return fail(v, STRATA_ENOTIMPL, "Principal type %s is not supported", k);
        } else {
            return fail(v, STRATA_EINVAL, "Invalid principal in policy: unknown type %s", k);
        }
    }
    return 0;
}

static bool key_supported(const char *k)
{
    for (size_t i = 0; i < sizeof(cond_keys) / sizeof(cond_keys[0]); i++) {
        size_t n = strlen(cond_keys[i]);
        if (cond_keys[i][n - 1] == '/' ? strncasecmp(k, cond_keys[i], n) == 0 && k[n]
                                       : strcasecmp(k, cond_keys[i]) == 0)
            return true;
    }
    return false;
}

static int check_cond_value(struct vctx *v, const struct op_def *op, const char *key, json_t *x)
{
    char buf[64];
    const char *s = value_text(x, buf, sizeof(buf));
    if (!s)
        return fail(v, STRATA_EINVAL, "Invalid value for condition key %s", key);
    bool text = op->kind == OP_STRING || op->kind == OP_STRING_NOCASE ||
                op->kind == OP_STRING_LIKE;
    if (check_variables(v, s, text))
        return v->rc;
    double d;
    struct cidr c;
    switch (op->kind) {
    case OP_NUMERIC:
        if (!parse_number(s, &d))
            return fail(v, STRATA_EINVAL, "Invalid numeric value %s for condition key %s", s, key);
        break;
    case OP_DATE:
        if (!parse_date(s, &d))
            return fail(v, STRATA_EINVAL, "Invalid date value %s for condition key %s", s, key);
        break;
    case OP_IP:
        if (!parse_cidr(s, &c))
            return fail(v, STRATA_EINVAL, "Invalid IP address %s for condition key %s", s, key);
        break;
    case OP_BOOL:
    case OP_NULL:
        if (strcasecmp(s, "true") != 0 && strcasecmp(s, "false") != 0)
            return fail(v, STRATA_EINVAL, "Invalid boolean value %s for condition key %s", s, key);
        break;
    default:
        break;
    }
    return 0;
}

static int check_condition(struct vctx *v, json_t *cond)
{
    if (!json_is_object(cond))
        return fail(v, STRATA_EINVAL, "Condition must be an object");
    const char *opname;
    json_t *block;
    json_object_foreach(cond, opname, block) {
        const struct op_def *op = op_lookup(opname, NULL, NULL);
        if (!op)
            return fail(v, STRATA_EINVAL, "Invalid Condition type : %s", opname);
        if (!json_is_object(block) || json_object_size(block) == 0)
            return fail(v, STRATA_EINVAL, "Condition %s must map keys to values", opname);
        const char *key;
        json_t *vals;
        json_object_foreach(block, key, vals) {
            if (!key_supported(key)) {
                if (strncmp(key, "aws:", 4) == 0 || strncmp(key, "s3:", 3) == 0)
                    return fail(v, STRATA_ENOTIMPL, "Condition key %s is not supported", key);
                return fail(v, STRATA_EINVAL, "Policy has an invalid condition key: %s", key);
            }
            if (json_is_array(vals) && json_array_size(vals) == 0)
                return fail(v, STRATA_EINVAL, "Empty value list for condition key %s", key);
            json_t *e;
            for (size_t i = 0; (e = cond_value(vals, i)); i++) {
                int rc = check_cond_value(v, op, key, e);
                if (rc)
                    return rc;
            }
        }
    }
    return 0;
}

/* Exactly one of NAME and NotNAME, a string or a list of strings, each
 * passing check. */
static int check_either(struct vctx *v, json_t *st, const char *name,
                        int (*check)(struct vctx *v, const char *s))
{
    char not_name[32];
    snprintf(not_name, sizeof(not_name), "Not%s", name);
    json_t *x = json_object_get(st, name), *nx = json_object_get(st, not_name);
    if (x && nx)
        return fail(v, STRATA_EINVAL, "Statement has both %s and %s", name, not_name);
    if (!x && !nx)
        return fail(v, STRATA_EINVAL, "Missing required field %s", name);
    return each_string(v, x ? x : nx, x ? name : not_name, check);
}

static int check_statement(struct vctx *v, json_t *st)
{
    if (!json_is_object(st))
        return fail(v, STRATA_EINVAL, "Statement must be an object");
    static const char *const known[] = {"Sid", "Effect", "Principal", "NotPrincipal", "Action",
                                        "NotAction", "Resource", "NotResource", "Condition"};
    const char *k;
    json_t *x;
    json_object_foreach(st, k, x) {
        bool ok = false;
        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]) && !ok; i++)
            ok = strcmp(k, known[i]) == 0;
        if (!ok)
            return fail(v, STRATA_EINVAL, "Unknown field %s", k);
    }
    json_t *sid = json_object_get(st, "Sid");
    if (sid && !json_is_string(sid))
        return fail(v, STRATA_EINVAL, "Sid must be a string");
    json_t *eff = json_object_get(st, "Effect");
    if (!eff)
        return fail(v, STRATA_EINVAL, "Missing required field Effect");
    if (!json_is_string(eff) || (strcmp(json_string_value(eff), "Allow") != 0 &&
                                 strcmp(json_string_value(eff), "Deny") != 0))
        return fail(v, STRATA_EINVAL, "Invalid effect: Effect must be Allow or Deny");
    json_t *pr = json_object_get(st, "Principal"), *npr = json_object_get(st, "NotPrincipal");
    if (!pr == !npr)
        return fail(v, STRATA_EINVAL, pr ? "Statement has both Principal and NotPrincipal"
                                         : "Missing required field Principal");
    int rc = check_principal(v, pr ? pr : npr);
    if (rc)
        return rc;
    rc = check_either(v, st, "Action", check_action);
    if (rc)
        return rc;
    rc = check_either(v, st, "Resource", check_resource);
    if (rc)
        return rc;
    json_t *cond = json_object_get(st, "Condition");
    return cond ? check_condition(v, cond) : 0;
}

int strata_policy_parse(const char *doc, size_t len, const char *bucket,
                        struct strata_policy **out, char *msg, size_t msg_len)
{
    struct vctx v = {.bucket = bucket, .msg = msg, .msg_len = msg_len};
    *out = NULL;
    if (msg_len)
        msg[0] = '\0';
    if (len > STRATA_POLICY_MAX)
        return fail(&v, STRATA_ETOOBIG, "Policy exceeds the maximum allowed document size.");
    json_error_t jerr;
    /* Duplicate keys would let two readers see different policies. */
    json_t *root = json_loadb(doc, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return fail(&v, STRATA_EINVAL, "This policy contains invalid Json: %s", jerr.text);
    int rc = 0;
    json_t *stmts = NULL;
    if (!json_is_object(root)) {
        rc = fail(&v, STRATA_EINVAL, "Policies must be valid JSON and the first byte must be '{'");
        goto done;
    }
    const char *k;
    json_t *x;
    json_object_foreach(root, k, x) {
        if (strcmp(k, "Version") != 0 && strcmp(k, "Id") != 0 && strcmp(k, "Statement") != 0) {
            rc = fail(&v, STRATA_EINVAL, "Unknown field %s", k);
            goto done;
        }
    }
    json_t *ver = json_object_get(root, "Version");
    if (ver && (!json_is_string(ver) || (strcmp(json_string_value(ver), "2012-10-17") != 0 &&
                                         strcmp(json_string_value(ver), "2008-10-17") != 0))) {
        rc = fail(&v, STRATA_EINVAL,
                  "The policy must contain a valid version string (2012-10-17 or 2008-10-17)");
        goto done;
    }
    v.variables = ver && strcmp(json_string_value(ver), "2012-10-17") == 0;
    json_t *id = json_object_get(root, "Id");
    if (id && !json_is_string(id)) {
        rc = fail(&v, STRATA_EINVAL, "Id must be a string");
        goto done;
    }
    json_t *st = json_object_get(root, "Statement");
    if (!st) {
        rc = fail(&v, STRATA_EINVAL, "Missing required field Statement");
        goto done;
    }
    if (json_is_object(st)) {
        stmts = json_array();
        if (!stmts || json_array_append(stmts, st) != 0) {
            rc = fail(&v, STRATA_ENOMEM, "out of memory");
            goto done;
        }
        json_object_set_new(root, "Statement", stmts); /* root now owns it */
    } else if (json_is_array(st) && json_array_size(st) > 0) {
        stmts = st;
    } else {
        rc = fail(&v, STRATA_EINVAL, "Statement must be an object or a non-empty array");
        goto done;
    }
    size_t i;
    json_array_foreach(stmts, i, x) {
        rc = check_statement(&v, x);
        if (rc)
            goto done;
    }
    struct strata_policy *p = malloc(sizeof(*p));
    if (!p) {
        rc = fail(&v, STRATA_ENOMEM, "out of memory");
        goto done;
    }
    p->root = root;
    p->stmts = stmts;
    p->variables = v.variables;
    *out = p;
    return 0;
done:
    json_decref(root);
    return rc;
}

void strata_policy_destroy(struct strata_policy *p)
{
    if (!p)
        return;
    json_decref(p->root);
    free(p);
}

/* ---- evaluation ------------------------------------------------------------ */

/* Calls match(s) on a string or each string of an array: true if any. */
static bool any_string(json_t *x, bool (*match)(const char *s, const struct ectx *e),
                       const struct ectx *ec)
{
    if (json_is_string(x))
        return match(json_string_value(x), ec);
    size_t i;
    json_t *e;
    json_array_foreach(x, i, e) {
        if (json_is_string(e) && match(json_string_value(e), ec))
            return true;
    }
    return false;
}

static bool principal_match(const char *p, const struct ectx *e)
{
    const struct strata_policy_ctx *c = e->c;
    if (strcmp(p, "*") == 0)
        return true;
    if (!c->principal)
        return false;
    if (strcmp(p, c->principal) == 0)
        return true;
    if (strncmp(p, "arn:aws:iam::", 13) != 0)
        return false;
    const char *acct = p + 13, *colon = strchr(acct, ':');
    size_t alen = colon ? (size_t)(colon - acct) : 0;
    const char *res = colon ? colon + 1 : "";
    /* arn:aws:iam::KEY:root, or a user whose name is the key. */
    if (strcmp(res, "root") == 0)
        return alen == strlen(c->principal) && strncmp(acct, c->principal, alen) == 0;
    if (strncmp(res, "user/", 5) == 0) {
        const char *name = strrchr(res, '/') + 1;
        return strcmp(name, c->principal) == 0;
    }
    return false;
}

static bool stmt_principal(json_t *st, const struct ectx *c)
{
    json_t *pr = json_object_get(st, "Principal");
    bool negate = false;
    if (!pr) {
        pr = json_object_get(st, "NotPrincipal");
        negate = true;
    }
    bool hit = json_is_string(pr) ? true
                                  : any_string(json_object_get(pr, "AWS"), principal_match, c);
    return hit != negate;
}

static bool action_match(const char *a, const struct ectx *e)
{
    return strata_policy_glob(a, e->c->action, true);
}

static bool resource_match(const char *r, const struct ectx *e)
{
    return glob_vars(r, e->c->resource, false, e);
}

/* One context value against one policy value, for a positive operator. */
static bool value_match(const struct op_def *op, const char *ctxv, const char *polv,
                        const struct ectx *e)
{
    double a, b;
    struct cidr n, ip;
    char buf[4096];
    switch (op->kind) {
    case OP_STRING:
    case OP_STRING_NOCASE:
        if (e->variables && strstr(polv, "${")) {
            if (!expand(polv, e->c, false, buf, sizeof(buf)))
                return false;
            polv = buf;
        }
        return op->kind == OP_STRING ? strcmp(ctxv, polv) == 0 : strcasecmp(ctxv, polv) == 0;
    case OP_STRING_LIKE:
        return glob_vars(polv, ctxv, false, e);
    case OP_BOOL:
        return strcasecmp(ctxv, polv) == 0;
    case OP_IP:
        return parse_cidr(ctxv, &ip) && parse_cidr(polv, &n) && cidr_contains(&n, &ip);
    case OP_NUMERIC:
    case OP_DATE:
        if (op->kind == OP_NUMERIC ? !parse_number(ctxv, &a) || !parse_number(polv, &b)
                                   : !parse_date(ctxv, &a) || !parse_date(polv, &b))
            return false;
        switch (op->cmp) {
        case CMP_EQ: return a == b;
        case CMP_LT: return a < b;
        case CMP_LE: return a <= b;
        case CMP_GT: return a > b;
        case CMP_GE: return a >= b;
        }
        return false;
    case OP_NULL:
        return false;
    }
    return false;
}

/* Does the context value match any of the policy's values? */
static bool value_match_any(const struct op_def *op, const char *ctxv, json_t *vals,
                            const struct ectx *ec)
{
    char buf[64];
    json_t *e;
    for (size_t i = 0; (e = cond_value(vals, i)); i++) {
        const char *s = value_text(e, buf, sizeof(buf));
        if (s && value_match(op, ctxv, s, ec))
            return true;
    }
    return false;
}

static bool cond_key_true(const char *opname, const char *key, json_t *vals,
                          const struct ectx *ec)
{
    const struct strata_policy_ctx *c = ec->c;
    enum qual q;
    bool ifx;
    const struct op_def *op = op_lookup(opname, &q, &ifx);
    size_t present = 0, matched = 0;
    for (size_t i = 0; i < c->nkv; i++) {
        if (strcasecmp(c->kv[i].key, key) != 0)
            continue;
        present++;
        bool m = op->kind != OP_NULL && value_match_any(op, c->kv[i].value, vals, ec);
        if (op->negate)
            m = !m;
        matched += m;
    }
    if (op->kind == OP_NULL) {
        char buf[32]; /* a number prints as up to 24 chars; only "true" matters */
        const char *want = value_text(cond_value(vals, 0), buf, sizeof(buf));
        bool absent = present == 0;
        return want && (strcasecmp(want, "true") == 0) == absent;
    }
    if (present == 0) {
        /* AWS: a missing key fails a condition, except with IfExists, with
         * a negated operator, and under ForAllValues (vacuously true). */
        return ifx || q == Q_ALL || (op->negate && q == Q_NONE);
    }
    if (q == Q_ALL)
        return matched == present;
    if (q == Q_NONE && op->negate)
        return matched == present; /* none of the values matched */
    return matched > 0;
}

static bool stmt_conditions(json_t *st, const struct ectx *c)
{
    json_t *cond = json_object_get(st, "Condition");
    if (!cond)
        return true;
    const char *opname;
    json_t *block;
    json_object_foreach(cond, opname, block) {
        const char *key;
        json_t *vals;
        json_object_foreach(block, key, vals) {
            if (!cond_key_true(opname, key, vals, c))
                return false;
        }
    }
    return true;
}

static bool stmt_applies(json_t *st, const struct ectx *c)
{
    if (!stmt_principal(st, c))
        return false;
    json_t *ac = json_object_get(st, "Action");
    bool a = ac ? any_string(ac, action_match, c)
                : !any_string(json_object_get(st, "NotAction"), action_match, c);
    if (!a)
        return false;
    json_t *rs = json_object_get(st, "Resource");
    bool r = rs ? any_string(rs, resource_match, c)
                : !any_string(json_object_get(st, "NotResource"), resource_match, c);
    return r && stmt_conditions(st, c);
}

enum strata_policy_decision strata_policy_eval(const struct strata_policy *p,
                                               const struct strata_policy_ctx *ctx)
{
    bool allow = false;
    size_t i;
    json_t *st;
    const struct ectx ec = {.c = ctx, .variables = p->variables};
    json_array_foreach(p->stmts, i, st) {
        if (!stmt_applies(st, &ec))
            continue;
        if (strcmp(json_string_value(json_object_get(st, "Effect")), "Deny") == 0)
            return STRATA_POLICY_DENY;
        allow = true;
    }
    return allow ? STRATA_POLICY_ALLOW : STRATA_POLICY_NOMATCH;
}

/* ---- introspection ---------------------------------------------------------- */

static bool principal_is_everyone(json_t *st)
{
    if (json_object_get(st, "NotPrincipal"))
        return true; /* everyone but a few */
    json_t *pr = json_object_get(st, "Principal");
    if (json_is_string(pr))
        return true;
    json_t *aws = json_object_get(pr, "AWS");
    if (json_is_string(aws))
        return strchr(json_string_value(aws), '*') != NULL;
    size_t i;
    json_t *e;
    json_array_foreach(aws, i, e) {
        if (strchr(json_string_value(e), '*'))
            return true;
    }
    return false;
}

/* A condition that limits the caller to fixed values (not public). */
static bool cond_limits(json_t *st)
{
    json_t *cond = json_object_get(st, "Condition");
    const char *opname;
    json_t *block;
    json_object_foreach(cond, opname, block) {
        bool ifx;
        const struct op_def *op = op_lookup(opname, NULL, &ifx);
        if (op->negate || op->kind == OP_NULL || ifx)
            continue;
        const char *key;
        json_t *vals;
        json_object_foreach(block, key, vals) {
            for (size_t i = 0; i < sizeof(nonpublic_keys) / sizeof(nonpublic_keys[0]); i++) {
                if (strcasecmp(key, nonpublic_keys[i]) != 0)
                    continue;
                /* A wildcard value or an IP range /0 admits everyone. */
                bool wide = false;
                json_t *e;
                for (size_t j = 0; (e = cond_value(vals, j)); j++)
                    if (json_is_string(e) && (strchr(json_string_value(e), '*') ||
                                              strstr(json_string_value(e), "/0")))
                        wide = true;
                if (!wide)
                    return true;
            }
        }
    }
    return false;
}

bool strata_policy_is_public(const struct strata_policy *p)
{
    size_t i;
    json_t *st;
    json_array_foreach(p->stmts, i, st) {
        if (strcmp(json_string_value(json_object_get(st, "Effect")), "Allow") == 0 &&
            principal_is_everyone(st) && !cond_limits(st))
            return true;
    }
    return false;
}

bool strata_policy_uses_key(const struct strata_policy *p, const char *prefix)
{
    size_t i, n = strlen(prefix);
    json_t *st;
    json_array_foreach(p->stmts, i, st) {
        const char *opname, *key;
        json_t *block, *vals;
        json_object_foreach(json_object_get(st, "Condition"), opname, block) {
            json_object_foreach(block, key, vals) {
                if (strncasecmp(key, prefix, n) == 0)
                    return true;
            }
        }
    }
    return false;
}
