/*
 * post_policy.c - POST Object form signatures and POST policy evaluation
 * (post_policy.h).  Pure; any thread.
 */
#include "post_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "base64.h"
#include "sigv4_internal.h"

#define POLICY_B64_MAX (20u * 1024) /* the form fields before the file are that big at most */

struct strata_post_policy {
    json_t *root;
    json_t *conditions; /* borrowed from root */
    time_t expiration;
    bool has_range;
    uint64_t min, max;
};

const char *strata_post_field(const struct strata_auth_hdr *f, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(f[i].name, name) == 0)
            return f[i].value;
    return NULL;
}

/* ---- signatures ------------------------------------------------------------- */

/* A credential AK/yyyymmdd/region/s3/aws4_request (or NULL): its first
 * three slashes, or false when it has fewer. */
static bool credential_split(const char *c, const char **s1, const char **s2, const char **s3)
{
    *s1 = c ? strchr(c, '/') : NULL;
    *s2 = *s1 ? strchr(*s1 + 1, '/') : NULL;
    *s3 = *s2 ? strchr(*s2 + 1, '/') : NULL;
    return *s3 != NULL;
}

static enum strata_auth_err auth_v4(const struct strata_creds *creds,
                                    const struct strata_auth_hdr *f, size_t n, const char *policy,
                                    const struct strata_cred **cred, const char **msg)
{
    const char *algo = strata_post_field(f, n, "x-amz-algorithm");
    const char *credential = strata_post_field(f, n, "x-amz-credential");
    const char *sig = strata_post_field(f, n, "x-amz-signature");
    if (!algo || !credential || !sig || !strata_post_field(f, n, "x-amz-date")) {
        *msg = "Bucket POST must contain the fields x-amz-algorithm, x-amz-credential, "
               "x-amz-date and x-amz-signature.";
        return STRATA_AUTH_BAD_ARGUMENT;
    }
    if (strcmp(algo, STRATA_SIGV4_ALGO) != 0) {
        *msg = "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"";
        return STRATA_AUTH_BAD_ARGUMENT;
    }
    char ak[128], date8[16], region[64];
    const char *p = credential, *s1, *s2, *s3;
    if (!credential_split(p, &s1, &s2, &s3) || (size_t)(s1 - p) >= sizeof(ak) || s2 - s1 - 1 != 8 ||
        (size_t)(s3 - s2 - 1) >= sizeof(region) || strcmp(s3, "/s3/aws4_request") != 0) {
        *msg = "Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; "
               "expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".";
        return STRATA_AUTH_BAD_ARGUMENT;
    }
    snprintf(ak, sizeof(ak), "%.*s", (int)(s1 - p), p);
    snprintf(date8, sizeof(date8), "%.8s", s1 + 1);
    snprintf(region, sizeof(region), "%.*s", (int)(s3 - s2 - 1), s2 + 1);
    const struct strata_cred *c = strata_creds_find(creds, ak);
    if (!c)
        return STRATA_AUTH_UNKNOWN_KEY;
    uint8_t key[32], mac[32];
    char hex[65];
    if (strata_sigv4__signing_key(c, date8, region, strlen(region), key) != 0 ||
        strata_sigv4__hmac_signing(key, policy, strlen(policy), mac) != 0)
        return STRATA_AUTH_INTERNAL;
    strata_hex_encode(mac, sizeof(mac), hex);
    if (strlen(sig) != 64 || !strata_sigv4__ct_eq(hex, sig, 64))
        return STRATA_AUTH_BAD_SIGNATURE;
    *cred = c;
    return STRATA_AUTH_OK;
}

bool strata_post_region_ok(const struct strata_auth_hdr *f, size_t n, const char *region, char *got,
                           size_t got_len)
{
    const char *s1, *s2, *s3;
    if (!credential_split(strata_post_field(f, n, "x-amz-credential"), &s1, &s2, &s3) || !region)
        return true;
    size_t len = (size_t)(s3 - s2 - 1);
    if (len == strlen(region) && memcmp(s2 + 1, region, len) == 0)
        return true;
    snprintf(got, got_len, "%.*s", (int)len, s2 + 1);
    return false;
}

static enum strata_auth_err auth_v2(const struct strata_creds *creds,
                                    const struct strata_auth_hdr *f, size_t n, const char *policy,
                                    const struct strata_cred **cred, const char **msg)
{
    const char *ak = strata_post_field(f, n, "AWSAccessKeyId");
    const char *sig = strata_post_field(f, n, "signature");
    if (!sig) {
        *msg = "Bucket POST must contain a field named 'signature'.  If it is specified, please "
               "check the order of the fields.";
        return STRATA_AUTH_BAD_ARGUMENT;
    }
    const struct strata_cred *c = strata_creds_find(creds, ak);
    if (!c)
        return STRATA_AUTH_UNKNOWN_KEY;
    uint8_t mac[20];
    char b64[64];
    if (strata_sigv4__hmac_sha1(c->secret, strlen(c->secret), policy, strlen(policy), mac) != 0 ||
        strata_b64_encode(mac, sizeof(mac), b64, sizeof(b64)) < 0)
        return STRATA_AUTH_INTERNAL;
    size_t len = strlen(b64);
    if (strlen(sig) != len || !strata_sigv4__ct_eq(b64, sig, len))
        return STRATA_AUTH_BAD_SIGNATURE;
    *cred = c;
    return STRATA_AUTH_OK;
}

enum strata_auth_err strata_post_auth(const struct strata_creds *creds,
                                      const struct strata_auth_hdr *f, size_t n,
                                      const struct strata_cred **cred, const char **msg)
{
    *cred = NULL;
    *msg = NULL;
    const char *policy = strata_post_field(f, n, "policy");
    bool v4 = strata_post_field(f, n, "x-amz-signature") ||
              strata_post_field(f, n, "x-amz-credential") ||
              strata_post_field(f, n, "x-amz-algorithm");
    bool v2 = strata_post_field(f, n, "AWSAccessKeyId") || strata_post_field(f, n, "signature");
    if (!policy && !v4 && !v2)
        return STRATA_AUTH_OK; /* anonymous: the bucket's policy decides */
    if (!policy) {
        *msg = "Bucket POST must contain a field named 'policy'.  If it is specified, please "
               "check the order of the fields.";
        return STRATA_AUTH_BAD_ARGUMENT;
    }
    if (v4)
        return auth_v4(creds, f, n, policy, cred, msg);
    if (v2)
        return auth_v2(creds, f, n, policy, cred, msg);
    *msg = "Bucket POST must contain a field named 'AWSAccessKeyId'.  If it is specified, please "
           "check the order of the fields.";
    return STRATA_AUTH_BAD_ARGUMENT;
}

/* ---- the policy document ------------------------------------------------------- */

void strata_post_policy_free(struct strata_post_policy *p)
{
    if (!p)
        return;
    json_decref(p->root);
    free(p);
}

/* An integer bound, given as a JSON integer or a decimal string. */
static bool bound(const json_t *v, uint64_t *out)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return true;
    }
    const char *s = json_string_value(v);
    char *end = NULL;
    if (!s || *s < '0' || *s > '9')
        return false;
    *out = strtoull(s, &end, 10);
    return *end == '\0';
}

/* One condition: a structural check, and content-length-range noted. */
static bool condition_ok(struct strata_post_policy *p, const json_t *c)
{
    if (json_is_object(c)) {
        const char *k;
        json_t *v;
        size_t n = 0;
        json_object_foreach((json_t *)c, k, v) {
            if (!json_is_string(v))
                return false;
            n++;
        }
        return n == 1;
    }
    if (!json_is_array(c) || json_array_size(c) != 3)
        return false;
    const char *op = json_string_value(json_array_get(c, 0));
    if (!op)
        return false;
    if (strcasecmp(op, "content-length-range") == 0) {
        uint64_t lo, hi;
        if (!bound(json_array_get(c, 1), &lo) || !bound(json_array_get(c, 2), &hi) || lo > hi)
            return false;
        if (!p->has_range || lo > p->min)
            p->min = lo;
        if (!p->has_range || hi < p->max)
            p->max = hi;
        p->has_range = true;
        return true;
    }
    const char *field = json_string_value(json_array_get(c, 1));
    return (strcasecmp(op, "eq") == 0 || strcasecmp(op, "starts-with") == 0) && field &&
           field[0] == '$' && json_is_string(json_array_get(c, 2));
}

enum strata_auth_err strata_post_policy_parse(const char *b64, struct strata_post_policy **out,
                                              char *msg, size_t msg_len)
{
    *out = NULL;
    size_t blen = strlen(b64);
    uint8_t *raw = blen <= POLICY_B64_MAX ? malloc(blen + 1) : NULL;
    int n = raw ? strata_b64_decode(b64, raw, blen + 1) : -1;
    json_t *root = n > 0 ? json_loadb((const char *)raw, (size_t)n, JSON_REJECT_DUPLICATES, NULL)
                         : NULL;
    free(raw);
    if (!json_is_object(root)) {
        json_decref(root);
        snprintf(msg, msg_len, "Invalid Policy: Invalid JSON.");
        return STRATA_AUTH_BAD_POLICY;
    }
    struct strata_post_policy *p = calloc(1, sizeof(*p));
    if (!p) {
        json_decref(root);
        snprintf(msg, msg_len, "Out of memory.");
        return STRATA_AUTH_INTERNAL;
    }
    p->root = root;
    const char *exp = json_string_value(json_object_get(root, "expiration"));
    p->conditions = json_object_get(root, "conditions");
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *rest = exp ? strptime(exp, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (rest && *rest == '.') /* fraction of a second */
        rest += 1 + strspn(rest + 1, "0123456789");
    enum strata_auth_err e = STRATA_AUTH_OK;
    if (!exp) {
        snprintf(msg, msg_len, "Invalid Policy: Policy missing expiration.");
        e = STRATA_AUTH_BAD_POLICY;
    } else if (!rest || strcmp(rest, "Z") != 0) {
        snprintf(msg, msg_len, "Invalid Policy: Invalid 'expiration' value: '%.64s'", exp);
        e = STRATA_AUTH_BAD_POLICY;
    } else if (!json_is_array(p->conditions)) {
        snprintf(msg, msg_len, "Invalid Policy: Policy missing conditions.");
        e = STRATA_AUTH_BAD_POLICY;
    }
    p->expiration = timegm(&tm);
    for (size_t i = 0; !e && i < json_array_size(p->conditions); i++) {
        json_t *c = json_array_get(p->conditions, i);
        if (!condition_ok(p, c)) {
            char *s = json_dumps(c, JSON_ENCODE_ANY);
            snprintf(msg, msg_len, "Invalid Policy: Invalid Condition: %.200s", s ? s : "?");
            free(s);
            e = STRATA_AUTH_BAD_POLICY;
        }
    }
    if (e) {
        strata_post_policy_free(p);
        return e;
    }
    *out = p;
    return STRATA_AUTH_OK;
}

bool strata_post_policy_length_range(const struct strata_post_policy *p, uint64_t *min,
                                     uint64_t *max)
{
    *min = p->min;
    *max = p->max;
    return p->has_range;
}

/* The value a condition on field sees: "" for a field not in the form.
 * "bucket" is the bucket posted to, whatever a form field of that name
 * says (a form signed for one bucket must not write into another). */
static const char *value_of(const char *field, const char *bucket, const struct strata_auth_hdr *f,
                            size_t n)
{
    if (strcasecmp(field, "bucket") == 0)
        return bucket;
    const char *v = strata_post_field(f, n, field);
    return v ? v : "";
}

static bool starts_with(const char *field, const char *v, const char *prefix)
{
    size_t pl = strlen(prefix);
    if (strcasecmp(field, "Content-Type") != 0)
        return strncmp(v, prefix, pl) == 0;
    /* Content-Type may list several types: each must match. */
    for (;;) {
        v += strspn(v, " ");
        if (strncmp(v, prefix, pl) != 0)
            return false;
        v = strchr(v, ',');
        if (!v)
            return true;
        v++;
    }
}

/* Whether condition c holds; *named is the field it names, or NULL. */
static bool condition_holds(const json_t *c, const char *bucket, const struct strata_auth_hdr *f,
                            size_t n, const char **named)
{
    *named = NULL;
    if (json_is_object(c)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)c, k, v) {
            *named = k;
            return strcmp(value_of(k, bucket, f, n), json_string_value(v)) == 0;
        }
        return false;
    }
    const char *op = json_string_value(json_array_get(c, 0));
    if (strcasecmp(op, "content-length-range") == 0)
        return true; /* checked against the file's length at the end */
    const char *field = json_string_value(json_array_get(c, 1)) + 1;
    const char *want = json_string_value(json_array_get(c, 2));
    const char *have = value_of(field, bucket, f, n);
    *named = field;
    if (strcasecmp(op, "eq") == 0)
        return strcmp(have, want) == 0;
    return starts_with(field, have, want);
}

static bool exempt(const char *name)
{
    static const char *const names[] = {"x-amz-signature", "signature", "AWSAccessKeyId", "file",
                                        "policy"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcasecmp(name, names[i]) == 0)
            return true;
    return strncasecmp(name, "x-ignore-", 9) == 0;
}

enum strata_auth_err strata_post_policy_check(const struct strata_post_policy *p,
                                              const char *bucket, const struct strata_auth_hdr *f,
                                              size_t n, time_t now, char *msg, size_t msg_len)
{
    if (now > p->expiration) {
        snprintf(msg, msg_len, "Invalid according to Policy: Policy expired.");
        return STRATA_AUTH_EXPIRED;
    }
    size_t nc = json_array_size(p->conditions);
    for (size_t i = 0; i < nc; i++) {
        const json_t *c = json_array_get(p->conditions, i);
        const char *named;
        if (!condition_holds(c, bucket, f, n, &named)) {
            char *s = json_dumps(c, JSON_ENCODE_ANY);
            snprintf(msg, msg_len, "Invalid according to Policy: Policy Condition failed: %.300s",
                     s ? s : "?");
            free(s);
            return STRATA_AUTH_POLICY_VIOLATION;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (exempt(f[i].name))
            continue;
        bool covered = false;
        for (size_t j = 0; j < nc && !covered; j++) {
            const char *named;
            condition_holds(json_array_get(p->conditions, j), bucket, f, n, &named);
            covered = named && strcasecmp(named, f[i].name) == 0;
        }
        if (!covered) {
            snprintf(msg, msg_len, "Invalid according to Policy: Extra input fields: %.200s",
                     f[i].name);
            return STRATA_AUTH_POLICY_VIOLATION;
        }
    }
    return STRATA_AUTH_OK;
}
