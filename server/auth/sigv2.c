/*
 * sigv2.c - AWS Signature Version 2 for legacy clients (s3cmd with
 * signature_v2 = True, old SDKs): the "Authorization: AWS AKID:sig" header
 * and the AWSAccessKeyId/Expires/Signature query form.
 *
 *   StringToSign = METHOD \n Content-MD5 \n Content-Type \n Date \n
 *                  CanonicalizedAmzHeaders CanonicalizedResource
 *   Signature    = Base64(HMAC-SHA1(secret, StringToSign))
 *
 * Date is empty when x-amz-date is sent, and is the Expires value in the
 * query form.  CanonicalizedResource is the path as sent plus the S3
 * sub-resources of the query, sorted, with decoded values.  For a
 * virtual-host style request the path is preceded by "/" and the bucket the
 * Host header named, as the transport resolved it, so a signature binds its
 * bucket either way: a captured request replayed with another Host fails.
 * Query-string Expires may lie at most 7 days ahead, as SigV4's
 * X-Amz-Expires.
 *
 * Reentrant; runs on request threads; no heap allocation.
 */
#include "sigv4_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "strata/err.h"

#define V2_MAX_AMZ_HEADERS 64
#define V2_MAX_SUBRES 16

/* Sorted, as AWS lists them; response-* overrides are sub-resources too. */
static const char *const subresources[] = {
    "accelerate", "acl", "analytics", "cors", "delete", "encryption", "intelligent-tiering",
    "inventory", "legal-hold", "lifecycle", "location", "logging", "metrics", "notification",
    "object-lock", "ownershipControls", "partNumber", "policy", "publicAccessBlock",
    "replication", "requestPayment", "response-cache-control", "response-content-disposition",
    "response-content-encoding", "response-content-language", "response-content-type",
    "response-expires", "restore", "retention", "select", "select-type", "tagging", "torrent",
    "uploadId", "uploads", "versionId", "versioning", "versions", "website",
};

static bool is_subresource(const char *k, size_t kl)
{
    for (size_t i = 0; i < sizeof(subresources) / sizeof(subresources[0]); i++)
        if (strlen(subresources[i]) == kl && memcmp(subresources[i], k, kl) == 0)
            return true;
    return false;
}

static int buf_flush_fail_cb(void *ud, const void *p, size_t n)
{
    (void)ud;
    (void)p;
    (void)n;
    return STRATA_ETOOBIG; /* the string to sign must fit the sink */
}

static void put_line(struct strata_sigv4_sink *s, const char *v)
{
    if (v)
        strata_sigv4__sink_put_trimmed(s, v);
    strata_sigv4__sink_putc(s, '\n');
}

static void put_amz_headers(struct strata_sigv4_sink *s, const struct strata_auth_req *req,
                            bool skip_amz_date)
{
    const struct strata_auth_hdr *h[V2_MAX_AMZ_HEADERS];
    size_t n = 0;
    for (size_t i = 0; i < req->nhdrs && n < V2_MAX_AMZ_HEADERS; i++) {
        if (!req->hdrs[i].name || strncasecmp(req->hdrs[i].name, "x-amz-", 6) != 0 ||
            (skip_amz_date && strcasecmp(req->hdrs[i].name, "x-amz-date") == 0))
            continue;
        /* Stable insertion keeps repeated headers in arrival order. */
        size_t j = n++;
        while (j > 0 && strcasecmp(h[j - 1]->name, req->hdrs[i].name) > 0) {
            h[j] = h[j - 1];
            j--;
        }
        h[j] = &req->hdrs[i];
    }
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || strcasecmp(h[i - 1]->name, h[i]->name) != 0) {
            if (i)
                strata_sigv4__sink_putc(s, '\n');
            for (const char *c = h[i]->name; *c; c++)
                strata_sigv4__sink_putc(s, (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c));
            strata_sigv4__sink_putc(s, ':');
        } else {
            strata_sigv4__sink_putc(s, ',');
        }
        strata_sigv4__sink_put_trimmed(s, h[i]->value ? h[i]->value : "");
    }
    if (n)
        strata_sigv4__sink_putc(s, '\n');
}

struct subres {
    const char *k, *v;
    size_t kl, vl;
    bool has_eq;
};

static int key_cmp(const struct subres *a, const struct subres *b)
{
    int c = memcmp(a->k, b->k, a->kl < b->kl ? a->kl : b->kl);
    if (c)
        return c;
    return a->kl < b->kl ? -1 : a->kl > b->kl;
}

static int put_resource(struct strata_sigv4_sink *s, const struct strata_auth_req *req,
                        bool add_slash)
{
    if (req->host_bucket) {
        strata_sigv4__sink_putc(s, '/');
        strata_sigv4__sink_put(s, req->host_bucket, req->host_bucket_len);
    }
    strata_sigv4__sink_puts(s, req->raw_path && *req->raw_path ? req->raw_path : "/");
    if (add_slash)
        strata_sigv4__sink_putc(s, '/');
    struct subres sr[V2_MAX_SUBRES];
    size_t n = 0;
    for (const char *p = req->raw_query; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t seg = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', seg);
        size_t kl = eq ? (size_t)(eq - p) : seg;
        if (is_subresource(p, kl)) {
            if (n == V2_MAX_SUBRES)
                return STRATA_EINVAL;
            struct subres x = {p, eq ? eq + 1 : NULL, kl, eq ? seg - kl - 1 : 0, eq != NULL};
            size_t j = n++;
            while (j > 0 && key_cmp(&sr[j - 1], &x) > 0) {
                sr[j] = sr[j - 1];
                j--;
            }
            sr[j] = x;
        }
        if (!amp)
            break;
        p = amp + 1;
    }
    for (size_t i = 0; i < n; i++) {
        strata_sigv4__sink_putc(s, i ? '&' : '?');
        strata_sigv4__sink_put(s, sr[i].k, sr[i].kl);
        if (sr[i].has_eq) {
            char dec[1024];
            long d = strata_url_decode(sr[i].v, sr[i].vl, dec, sizeof(dec), true);
            if (d < 0)
                return STRATA_EINVAL;
            strata_sigv4__sink_putc(s, '=');
            strata_sigv4__sink_put(s, dec, (size_t)d);
        }
    }
    return 0;
}

/* Computes the base64 signature (28 chars + NUL) for date_line. */
static enum strata_auth_err v2_sign(const struct strata_auth_req *req,
                                    const struct strata_cred *cred, const char *date_line,
                                    bool skip_amz_date, bool add_slash, char out_b64[32])
{
    struct strata_sigv4_sink s = {.flush_cb = buf_flush_fail_cb};
    strata_sigv4__sink_puts(&s, req->method ? req->method : "");
    strata_sigv4__sink_putc(&s, '\n');
    put_line(&s, strata_sigv4__hdr(req, "content-md5"));
    put_line(&s, strata_sigv4__hdr(req, "content-type"));
    put_line(&s, date_line);
    put_amz_headers(&s, req, skip_amz_date);
    if (put_resource(&s, req, add_slash) != 0)
        return STRATA_AUTH_BAD_ARGUMENT;
    if (s.err || s.len == sizeof(s.buf))
        return STRATA_AUTH_HEADERS_TOO_LARGE;
    uint8_t mac[20];
    if (strata_sigv4__hmac_sha1(cred->secret, strlen(cred->secret), s.buf, s.len, mac) != 0)
        return STRATA_AUTH_INTERNAL;
    EVP_EncodeBlock((unsigned char *)out_b64, mac, 20);
    return STRATA_AUTH_OK;
}

/* botocore signs a bucket-level request as "/bucket/" but sends "/bucket":
 * for a path that is a bare bucket, the form with the slash is accepted
 * too (it names the same resource). */
static bool bare_bucket_path(const struct strata_auth_req *req)
{
    const char *p = req->raw_path;
    return !req->host_bucket && p && p[0] == '/' && p[1] && !strchr(p + 1, '/');
}

static enum strata_auth_err v2_compare(const char *want, const char *given, size_t given_len)
{
    size_t wl = strlen(want);
    if (given_len != wl || !strata_sigv4__ct_eq(want, given, wl))
        return STRATA_AUTH_BAD_SIGNATURE;
    return STRATA_AUTH_OK;
}

enum strata_auth_err strata_sigv2__verify_header(const struct strata_creds *creds,
                                                 const struct strata_auth_req *req,
                                                 const char *authz, struct strata_auth_result *out)
{
    const char *ak = authz + 4;
    const char *colon = strrchr(ak, ':');
    char akid[sizeof(((struct strata_cred *)0)->access_key)];
    if (!colon || colon == ak || (size_t)(colon - ak) >= sizeof(akid) || !colon[1]) {
        out->err_msg = "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature";
        return STRATA_AUTH_BAD_ARGUMENT;
    }
    memcpy(akid, ak, (size_t)(colon - ak));
    akid[colon - ak] = '\0';

    const char *xd = strata_sigv4__hdr(req, "x-amz-date");
    const char *d = xd ? xd : strata_sigv4__hdr(req, "date");
    time_t t;
    if (!d || strata_http_date_parse(d, &t) != 0) {
        out->err_msg = "AWS authentication requires a valid Date or x-amz-date header";
        return STRATA_AUTH_NO_DATE;
    }
    const struct strata_cred *cred = strata_creds_find(creds, akid);
    if (!cred)
        return STRATA_AUTH_UNKNOWN_KEY;
    if (t > req->now + STRATA_SIGV4_MAX_SKEW_S || t < req->now - STRATA_SIGV4_MAX_SKEW_S)
        return STRATA_AUTH_CLOCK_SKEW;
    /* With x-amz-date, AWS's text says the Date line is empty and
     * x-amz-date is signed among the x-amz-* headers (s3cmd, boto), but its
     * own example puts x-amz-date's value on the Date line instead, and
     * botocore keeps the Date header there.  Accept each; all of them sign
     * the same request content. */
    const char *date_hdr = strata_sigv4__hdr(req, "date");
    struct {
        const char *line;
        bool skip;
    } forms[3] = {{xd ? "" : d, false}, {xd, true}, {date_hdr, false}};
    size_t nforms = xd ? (date_hdr ? 3 : 2) : 1;
    const char *given = colon + 1;
    int nslash = bare_bucket_path(req) ? 2 : 1;
    enum strata_auth_err e = STRATA_AUTH_BAD_SIGNATURE;
    for (int sl = 0; sl < nslash && e == STRATA_AUTH_BAD_SIGNATURE; sl++) {
        for (size_t i = 0; i < nforms && e == STRATA_AUTH_BAD_SIGNATURE; i++) {
            char want[32];
            e = v2_sign(req, cred, forms[i].line, forms[i].skip, sl == 1, want);
            if (e == STRATA_AUTH_OK)
                e = v2_compare(want, given, strlen(given));
        }
    }
    if (e == STRATA_AUTH_OK)
        out->cred = cred;
    return e;
}

enum strata_auth_err strata_sigv2__verify_query(const struct strata_creds *creds,
                                                const struct strata_auth_req *req,
                                                struct strata_auth_result *out)
{
    const char *v;
    size_t n;
    char akid[sizeof(((struct strata_cred *)0)->access_key)], expires[24], sig[64];
    long d;
    if (!strata_sigv4__query_param(req->raw_query, "AWSAccessKeyId", &v, &n) ||
        (d = strata_url_decode(v, n, akid, sizeof(akid) - 1, false)) <= 0)
        goto bad;
    akid[d] = '\0';
    if (!strata_sigv4__query_param(req->raw_query, "Expires", &v, &n) ||
        (d = strata_url_decode(v, n, expires, sizeof(expires) - 1, false)) <= 0)
        goto bad;
    expires[d] = '\0';
    if (strspn(expires, "0123456789") != (size_t)d || d > 18)
        goto bad;
    /* '+' in a base64 signature only survives when the client encoded it. */
    if (!strata_sigv4__query_param(req->raw_query, "Signature", &v, &n) ||
        (d = strata_url_decode(v, n, sig, sizeof(sig) - 1, false)) <= 0)
        goto bad;
    sig[d] = '\0';

    const struct strata_cred *cred = strata_creds_find(creds, akid);
    if (!cred)
        return STRATA_AUTH_UNKNOWN_KEY;
    long long exp_at = strtoll(expires, NULL, 10);
    if ((long long)req->now > exp_at) {
        out->err_msg = "Request has expired";
        return STRATA_AUTH_EXPIRED;
    }
    if (exp_at - (long long)req->now > STRATA_SIGV4_MAX_EXPIRES_S) {
        out->err_msg = "Expires must be less than a week (604800 seconds) in the future";
        return STRATA_AUTH_DENIED;
    }
    int nslash = bare_bucket_path(req) ? 2 : 1;
    enum strata_auth_err e = STRATA_AUTH_BAD_SIGNATURE;
    for (int sl = 0; sl < nslash && e == STRATA_AUTH_BAD_SIGNATURE; sl++) {
        char want[32];
        e = v2_sign(req, cred, expires, false, sl == 1, want);
        if (e == STRATA_AUTH_OK)
            e = v2_compare(want, sig, (size_t)d);
    }
    if (e == STRATA_AUTH_OK)
        out->cred = cred;
    return e;
bad:
    out->err_msg = "Query-string authentication requires the Signature, Expires and "
                   "AWSAccessKeyId parameters";
    return STRATA_AUTH_DENIED;
}
