/*
 * sigv4.c - strata_auth_verify: picks the scheme a request uses (SigV4
 * Authorization header, SigV4 presigned query, SigV2 header or query, or
 * none) and verifies SigV4 header-signed requests.
 *
 * Order of checks, as S3 answers them: syntax (AuthorizationHeaderMalformed,
 * InvalidRequest/InvalidArgument), date presence, access key
 * (InvalidAccessKeyId), clock skew (RequestTimeTooSkewed), then the
 * signature (SignatureDoesNotMatch, compared in constant time).
 *
 * Pure and reentrant; runs on request threads.  No heap allocation on the
 * common path (see sigv4_crypto.c for the per-thread OpenSSL contexts).
 */
#include "sigv4_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "strata/err.h"
#include "strata/hex.h"

static enum strata_auth_err fail(struct strata_auth_result *out, enum strata_auth_err e,
                                 const char *msg)
{
    out->err_msg = msg;
    return e;
}

/* x-amz-content-sha256 -> payload mode.  NULL value means "not sent". */
static enum strata_auth_err parse_content_sha(const char *v, struct strata_auth_result *out)
{
    static const struct {
        const char *name;
        int mode;
    } modes[] = {
        {"UNSIGNED-PAYLOAD", STRATA_PAYLOAD_UNSIGNED},
        {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", STRATA_PAYLOAD_STREAMING_SIGNED},
        {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", STRATA_PAYLOAD_STREAMING_SIGNED_TRAILER},
        {"STREAMING-UNSIGNED-PAYLOAD-TRAILER", STRATA_PAYLOAD_STREAMING_UNSIGNED_TRAILER},
    };
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        if (strcmp(v, modes[i].name) == 0) {
            out->payload_mode = modes[i].mode;
            return STRATA_AUTH_OK;
        }
    }
    if (strlen(v) == 64 && strata_hex_decode(v, 32, out->payload_sha256, false) == 0) {
        out->payload_mode = STRATA_PAYLOAD_SIGNED;
        return STRATA_AUTH_OK;
    }
    return fail(out, STRATA_AUTH_BAD_ARGUMENT,
                "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, "
                "STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, "
                "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.");
}

/* x-amz-decoded-content-length and x-amz-trailer, for the chunk decoder. */
static enum strata_auth_err parse_streaming_hdrs(const struct strata_auth_req *req,
                                                 struct strata_auth_result *out)
{
    const char *dl = strata_sigv4__hdr(req, "x-amz-decoded-content-length");
    if (dl) {
        char *end;
        if (*dl < '0' || *dl > '9')
            return fail(out, STRATA_AUTH_BAD_ARGUMENT, "Invalid x-amz-decoded-content-length.");
        unsigned long long v = strtoull(dl, &end, 10);
        if (*end || v == UINT64_MAX)
            return fail(out, STRATA_AUTH_BAD_ARGUMENT, "Invalid x-amz-decoded-content-length.");
        out->decoded_length = v;
    }
    const char *tr = strata_sigv4__hdr(req, "x-amz-trailer");
    if (tr) {
        while (*tr == ' ')
            tr++;
        size_t n = strlen(tr);
        while (n && tr[n - 1] == ' ')
            n--;
        if (n >= sizeof(out->trailer) || memchr(tr, ',', n))
            return fail(out, STRATA_AUTH_BAD_ARGUMENT, "Unsupported x-amz-trailer.");
        for (size_t i = 0; i < n; i++)
            out->trailer[i] = (char)((tr[i] >= 'A' && tr[i] <= 'Z') ? tr[i] + 32 : tr[i]);
        out->trailer[n] = '\0';
    }
    return STRATA_AUTH_OK;
}

/* "AKID/yyyymmdd/region/s3/aws4_request" -> parts.  The scope is the text
 * after the first '/'. */
struct v4_cred {
    char akid[sizeof(((struct strata_cred *)0)->access_key)];
    char date8[9];
    const char *region;
    size_t region_len;
    char scope[128];
};

static bool parse_credential(const char *c, size_t n, struct v4_cred *cr)
{
    const char *slash = memchr(c, '/', n);
    if (!slash || slash == c || (size_t)(slash - c) >= sizeof(cr->akid))
        return false;
    memcpy(cr->akid, c, (size_t)(slash - c));
    cr->akid[slash - c] = '\0';
    const char *sc = slash + 1;
    size_t sn = n - (size_t)(sc - c);
    if (sn >= sizeof(cr->scope) || sn < 8 + 1 + 1 + 1 + 2 + 1 + 12)
        return false;
    memcpy(cr->scope, sc, sn);
    cr->scope[sn] = '\0';
    /* date */
    for (int i = 0; i < 8; i++)
        if (cr->scope[i] < '0' || cr->scope[i] > '9')
            return false;
    if (cr->scope[8] != '/')
        return false;
    memcpy(cr->date8, cr->scope, 8);
    cr->date8[8] = '\0';
    const char *reg = cr->scope + 9;
    const char *rs = strchr(reg, '/');
    if (!rs || rs == reg || (size_t)(rs - reg) >= 64)
        return false;
    cr->region = reg;
    cr->region_len = (size_t)(rs - reg);
    return strcmp(rs, "/s3/aws4_request") == 0;
}

/* The credential's region against the server's (req->region; NULL: any).
 * prefix starts AWS's message: the header's or the query's wording. */
static enum strata_auth_err check_region(const struct strata_auth_req *req,
                                         const struct v4_cred *cr, enum strata_auth_err e,
                                         const char *prefix, struct strata_auth_result *out)
{
    if (!req->region || (strlen(req->region) == cr->region_len &&
                         memcmp(req->region, cr->region, cr->region_len) == 0))
        return STRATA_AUTH_OK;
    snprintf(out->err_buf, sizeof(out->err_buf), "%s; the region '%.*s' is wrong; expecting '%s'",
             prefix, (int)cr->region_len, cr->region, req->region);
    out->wrong_region = true;
    return fail(out, e, out->err_buf);
}

/* Every x-amz-* header the client sent must be signed: otherwise anyone on
 * the path could add one (x-amz-copy-source, x-amz-acl...). */
static bool all_amz_headers_signed(const struct strata_auth_req *req, const char *sh,
                                   size_t sh_len, bool presigned)
{
    for (size_t i = 0; i < req->nhdrs; i++) {
        const char *n = req->hdrs[i].name;
        if (!n || strncasecmp(n, "x-amz-", 6) != 0)
            continue;
        if (presigned && strcasecmp(n, "x-amz-content-sha256") == 0)
            continue;
        size_t nl = strlen(n);
        bool found = false;
        for (const char *p = sh, *end = sh + sh_len; p < end && !found;) {
            const char *semi = memchr(p, ';', (size_t)(end - p));
            size_t l = semi ? (size_t)(semi - p) : (size_t)(end - p);
            found = l == nl && strncasecmp(p, n, nl) == 0;
            p += l + 1;
        }
        if (!found)
            return false;
    }
    return true;
}

/* SignedHeaders: non-empty lower-case names separated by single ';', and
 * "host" among them (AWS requires it signed). */
static bool signed_headers_ok(const char *sh, size_t sh_len)
{
    if (sh_len == 0 || sh[0] == ';' || sh[sh_len - 1] == ';')
        return false;
    bool host = false;
    for (const char *p = sh, *end = sh + sh_len; p < end;) {
        const char *semi = memchr(p, ';', (size_t)(end - p));
        size_t l = semi ? (size_t)(semi - p) : (size_t)(end - p);
        if (l == 0)
            return false;
        for (size_t i = 0; i < l; i++)
            if ((p[i] >= 'A' && p[i] <= 'Z') || p[i] <= ' ' || p[i] == ':' || p[i] == ',')
                return false;
        host |= l == 4 && memcmp(p, "host", 4) == 0;
        p += l + 1;
    }
    return host;
}

/* Signs and compares; fills the streaming fields of out on success. */
static enum strata_auth_err check_signature(const struct strata_auth_req *req,
                                            const struct strata_cred *cred,
                                            const struct v4_cred *cr, const char *amz_date,
                                            const char *sh, size_t sh_len, const char *skip,
                                            const char *payload_hash, const char *given_sig,
                                            struct strata_auth_result *out)
{
    char creq[65], sig[65];
    enum strata_auth_err e =
        strata_sigv4__canonical_hash(req, sh, sh_len, skip, NULL, payload_hash, creq);
    if (e != STRATA_AUTH_OK)
        return fail(out, e, NULL);
    uint8_t *key = out->signing_key;
    if (strata_sigv4__signing_key(cred, cr->date8, cr->region, cr->region_len, key) != 0 ||
        strata_sigv4__sign(key, amz_date, cr->scope, creq, sig) != 0)
        return fail(out, STRATA_AUTH_INTERNAL, NULL);
    if (!strata_sigv4__ct_eq(sig, given_sig, 64))
        return fail(out, STRATA_AUTH_BAD_SIGNATURE, NULL);
    out->cred = cred;
    memcpy(out->seed_signature, sig, 65);
    memcpy(out->amz_date, amz_date, 17);
    memcpy(out->scope, cr->scope, sizeof(out->scope));
    return STRATA_AUTH_OK;
}

/* ---- Authorization: AWS4-HMAC-SHA256 ... --------------------------------- */

struct v4_authz {
    const char *cred, *sh, *sig;
    size_t cred_len, sh_len, sig_len;
};

static bool parse_authz(const char *a, struct v4_authz *z)
{
    memset(z, 0, sizeof(*z));
    const char *p = a + strlen(STRATA_SIGV4_ALGO);
    if (*p != ' ')
        return false;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        const char *eq = strchr(p, '=');
        if (!eq)
            return false;
        const char *v = eq + 1;
        size_t vl = strcspn(v, ", ");
        size_t kl = (size_t)(eq - p);
        if (kl == 10 && memcmp(p, "Credential", 10) == 0 && !z->cred) {
            z->cred = v;
            z->cred_len = vl;
        } else if (kl == 13 && memcmp(p, "SignedHeaders", 13) == 0 && !z->sh) {
            z->sh = v;
            z->sh_len = vl;
        } else if (kl == 9 && memcmp(p, "Signature", 9) == 0 && !z->sig) {
            z->sig = v;
            z->sig_len = vl;
        } else {
            return false;
        }
        p = v + vl;
    }
    return z->cred && z->sh && z->sig && z->sh_len > 0 && z->sig_len == 64 &&
           strata_hex_is(z->sig, 64, false);
}

enum strata_auth_err strata_sigv4__verify_header(const struct strata_creds *creds,
                                                 const struct strata_auth_req *req,
                                                 const char *authz, struct strata_auth_result *out)
{
    struct v4_authz z;
    struct v4_cred cr;
    if (!parse_authz(authz, &z) || !parse_credential(z.cred, z.cred_len, &cr))
        return fail(out, STRATA_AUTH_MALFORMED_HEADER, NULL);
    if (!signed_headers_ok(z.sh, z.sh_len))
        return fail(out, STRATA_AUTH_MALFORMED_HEADER, NULL);
    enum strata_auth_err re = check_region(req, &cr, STRATA_AUTH_MALFORMED_HEADER,
                                           "The authorization header is malformed", out);
    if (re != STRATA_AUTH_OK)
        return re;

    /* S3 requires the payload hash header with every SigV4 header-signed
     * request, and answers InvalidRequest without it. */
    const char *csha = strata_sigv4__hdr(req, "x-amz-content-sha256");
    if (!csha)
        return fail(out, STRATA_AUTH_MISSING_CONTENT_SHA,
                    "Missing required header for this request: x-amz-content-sha256");
    enum strata_auth_err e = parse_content_sha(csha, out);
    if (e == STRATA_AUTH_OK)
        e = parse_streaming_hdrs(req, out);
    if (e != STRATA_AUTH_OK)
        return e;

    char amz_date[17];
    time_t t;
    const char *xd = strata_sigv4__hdr(req, "x-amz-date");
    if (xd) {
        if (strata_sigv4__parse_iso8601(xd, &t) != 0)
            return fail(out, STRATA_AUTH_NO_DATE,
                        "AWS authentication requires a valid Date or x-amz-date header");
        memcpy(amz_date, xd, 17);
    } else {
        const char *d = strata_sigv4__hdr(req, "date");
        if (!d || strata_http_date_parse(d, &t) != 0)
            return fail(out, STRATA_AUTH_NO_DATE,
                        "AWS authentication requires a valid Date or x-amz-date header");
        strata_sigv4__fmt_iso8601(t, amz_date);
    }
    if (memcmp(amz_date, cr.date8, 8) != 0)
        return fail(out, STRATA_AUTH_MALFORMED_HEADER,
                    "Invalid credential date. Date is not the same as X-Amz-Date.");

    const struct strata_cred *cred = strata_creds_find(creds, cr.akid);
    if (!cred)
        return fail(out, STRATA_AUTH_UNKNOWN_KEY, NULL);
    if (t > req->now + STRATA_SIGV4_MAX_SKEW_S || t < req->now - STRATA_SIGV4_MAX_SKEW_S)
        return fail(out, STRATA_AUTH_CLOCK_SKEW, NULL);
    if (!all_amz_headers_signed(req, z.sh, z.sh_len, false))
        return fail(out, STRATA_AUTH_UNSIGNED_HEADER,
                    "There were headers present in the request which were not signed");

    char sig[65];
    memcpy(sig, z.sig, 64);
    sig[64] = '\0';
    return check_signature(req, cred, &cr, amz_date, z.sh, z.sh_len, NULL, csha, sig, out);
}

/* ---- presigned: ?X-Amz-Algorithm=...&X-Amz-Signature=... --------------- */

/* The presigned parameters, found in one pass over the query (the first
 * occurrence of each, as strata_sigv4__query_param would return). */
enum { QP_ALGO, QP_CRED, QP_DATE, QP_EXPIRES, QP_SH, QP_SIG, QP_CSHA, QP_V2KEY, QP_N };
static const struct {
    const char *name;
    size_t len;
} qp_names[QP_N] = {
    [QP_ALGO] = {"X-Amz-Algorithm", 15},      [QP_CRED] = {"X-Amz-Credential", 16},
    [QP_DATE] = {"X-Amz-Date", 10},           [QP_EXPIRES] = {"X-Amz-Expires", 13},
    [QP_SH] = {"X-Amz-SignedHeaders", 19},    [QP_SIG] = {"X-Amz-Signature", 15},
    [QP_CSHA] = {"X-Amz-Content-Sha256", 20}, [QP_V2KEY] = {"AWSAccessKeyId", 14},
};
struct qparams {
    const char *v[QP_N];
    size_t n[QP_N];
};

static void qparams_scan(const char *q, struct qparams *out)
{
    memset(out, 0, sizeof(*out));
    while (q && *q) {
        const char *amp = strchr(q, '&');
        size_t seg = amp ? (size_t)(amp - q) : strlen(q);
        const char *eq = memchr(q, '=', seg);
        size_t kl = eq ? (size_t)(eq - q) : seg;
        for (int i = 0; i < QP_N; i++) {
            if (!out->v[i] && kl == qp_names[i].len && memcmp(q, qp_names[i].name, kl) == 0) {
                out->v[i] = eq ? eq + 1 : q + seg;
                out->n[i] = eq ? seg - kl - 1 : 0;
                break;
            }
        }
        if (!amp)
            break;
        q = amp + 1;
    }
}

/* Decoded query parameter into buf; false when absent or undecodable. */
static bool qparam(const struct qparams *qp, int which, char *buf, size_t cap)
{
    if (!qp->v[which])
        return false;
    long d = strata_url_decode(qp->v[which], qp->n[which], buf, cap - 1, false);
    if (d < 0)
        return false;
    buf[d] = '\0';
    return true;
}

static enum strata_auth_err verify_query(const struct strata_creds *creds,
                                         const struct strata_auth_req *req, const struct qparams *q,
                                         struct strata_auth_result *out)
{
    char algo[32], credential[256], date[32], expires[32], sh[1024], sig[80], csha[80];
    if (!qparam(q, QP_ALGO, algo, sizeof(algo)) || strcmp(algo, STRATA_SIGV4_ALGO))
        return fail(out, STRATA_AUTH_MALFORMED_QUERY,
                    "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"");
    if (!qparam(q, QP_CRED, credential, sizeof(credential)) ||
        !qparam(q, QP_DATE, date, sizeof(date)) ||
        !qparam(q, QP_EXPIRES, expires, sizeof(expires)) || !qparam(q, QP_SH, sh, sizeof(sh)) ||
        !qparam(q, QP_SIG, sig, sizeof(sig)))
        return fail(out, STRATA_AUTH_MALFORMED_QUERY,
                    "Query-string authentication version 4 requires the X-Amz-Algorithm, "
                    "X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, "
                    "and X-Amz-Expires parameters.");
    struct v4_cred cr;
    if (!parse_credential(credential, strlen(credential), &cr))
        return fail(out, STRATA_AUTH_MALFORMED_QUERY,
                    "Error parsing the X-Amz-Credential parameter.");
    enum strata_auth_err re = check_region(req, &cr, STRATA_AUTH_MALFORMED_QUERY,
                                           "Error parsing the X-Amz-Credential parameter", out);
    if (re != STRATA_AUTH_OK)
        return re;
    time_t t;
    if (strata_sigv4__parse_iso8601(date, &t) != 0)
        return fail(out, STRATA_AUTH_MALFORMED_QUERY,
                    "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
    if (memcmp(date, cr.date8, 8) != 0)
        return fail(out, STRATA_AUTH_MALFORMED_QUERY,
                    "Invalid credential date. Date is not the same as X-Amz-Date.");
    size_t el = strlen(expires);
    /* AWS answers a negative value (an expiry in the past) 400, not 403. */
    if (expires[0] == '-' && el > 1 && el <= 8 && strspn(expires + 1, "0123456789") == el - 1)
        return fail(out, STRATA_AUTH_MALFORMED_QUERY, "X-Amz-Expires must be non-negative");
    if (el == 0 || el > 7 || strspn(expires, "0123456789") != el)
        return fail(out, STRATA_AUTH_MALFORMED_QUERY, "X-Amz-Expires should be a number");
    long exp_s = strtol(expires, NULL, 10);
    if (exp_s < 1)
        return fail(out, STRATA_AUTH_MALFORMED_QUERY, "X-Amz-Expires must be at least 1 second");
    if (exp_s > STRATA_SIGV4_MAX_EXPIRES_S)
        return fail(out, STRATA_AUTH_MALFORMED_QUERY,
                    "X-Amz-Expires must be less than a week (in seconds) that is 604800 seconds");
    size_t shl = strlen(sh);
    if (!signed_headers_ok(sh, shl))
        return fail(out, STRATA_AUTH_MALFORMED_QUERY, "X-Amz-SignedHeaders must include host");
    if (strlen(sig) != 64 || !strata_hex_is(sig, 64, false))
        return fail(out, STRATA_AUTH_MALFORMED_QUERY, "X-Amz-Signature must be 64 hex characters");

    const char *payload = "UNSIGNED-PAYLOAD";
    out->payload_mode = STRATA_PAYLOAD_UNSIGNED;
    if (qparam(q, QP_CSHA, csha, sizeof(csha))) {
        enum strata_auth_err e = parse_content_sha(csha, out);
        if (e != STRATA_AUTH_OK)
            return e;
        if (out->payload_mode != STRATA_PAYLOAD_UNSIGNED &&
            out->payload_mode != STRATA_PAYLOAD_SIGNED)
            return fail(out, STRATA_AUTH_MALFORMED_QUERY, "Streaming payloads cannot be presigned");
        payload = csha;
    }

    const struct strata_cred *cred = strata_creds_find(creds, cr.akid);
    if (!cred)
        return fail(out, STRATA_AUTH_UNKNOWN_KEY, NULL);
    if (t > req->now + STRATA_SIGV4_MAX_SKEW_S)
        return fail(out, STRATA_AUTH_EXPIRED, "Request is not valid yet");
    if (req->now > t + exp_s)
        return fail(out, STRATA_AUTH_EXPIRED, "Request has expired");
    if (!all_amz_headers_signed(req, sh, shl, true))
        return fail(out, STRATA_AUTH_UNSIGNED_HEADER,
                    "There were headers present in the request which were not signed");
    return check_signature(req, cred, &cr, date, sh, shl, "X-Amz-Signature", payload, sig, out);
}

enum strata_auth_err strata_sigv4__verify_query(const struct strata_creds *creds,
                                                const struct strata_auth_req *req,
                                                struct strata_auth_result *out)
{
    struct qparams q;
    qparams_scan(req->raw_query, &q);
    return verify_query(creds, req, &q, out);
}

/* ---- dispatch ------------------------------------------------------------- */

static enum strata_auth_err verify(const struct strata_creds *creds,
                                   const struct strata_auth_req *req,
                                   struct strata_auth_result *out)
{
    memset(out, 0, sizeof(*out));
    out->decoded_length = UINT64_MAX;
    out->payload_mode = STRATA_PAYLOAD_UNSIGNED;

    const char *authz = strata_sigv4__hdr(req, "authorization");
    struct qparams q;
    qparams_scan(req->raw_query, &q);
    bool q_v4 = q.v[QP_ALGO] || q.v[QP_CRED] || q.v[QP_SIG];
    bool q_v2 = q.v[QP_V2KEY] != NULL;

    if (authz && (q_v4 || q_v2))
        return fail(out, STRATA_AUTH_BAD_ARGUMENT, "Only one auth mechanism allowed");
    if (authz) {
        size_t al = strlen(STRATA_SIGV4_ALGO);
        if (strncmp(authz, STRATA_SIGV4_ALGO, al) == 0 && (authz[al] == ' ' || authz[al] == '\0'))
            return strata_sigv4__verify_header(creds, req, authz, out);
        if (strncmp(authz, "AWS ", 4) == 0)
            return strata_sigv2__verify_header(creds, req, authz, out);
        return fail(out, STRATA_AUTH_BAD_ARGUMENT, "Unsupported Authorization Type");
    }
    if (q_v4)
        return verify_query(creds, req, &q, out);
    if (q_v2)
        return strata_sigv2__verify_query(creds, req, out);

    /* Anonymous: the caller decides whether that is allowed.  The payload
     * mode still follows x-amz-content-sha256 (an SDK with unsigned config
     * sends STREAMING-UNSIGNED-PAYLOAD-TRAILER bodies), but a signed
     * streaming body cannot be verified without credentials. */
    out->anonymous = true;
    const char *csha = strata_sigv4__hdr(req, "x-amz-content-sha256");
    if (csha) {
        enum strata_auth_err e = parse_content_sha(csha, out);
        if (e == STRATA_AUTH_OK)
            e = parse_streaming_hdrs(req, out);
        if (e != STRATA_AUTH_OK)
            return e;
        if (out->payload_mode == STRATA_PAYLOAD_STREAMING_SIGNED ||
            out->payload_mode == STRATA_PAYLOAD_STREAMING_SIGNED_TRAILER)
            return fail(out, STRATA_AUTH_DENIED, "Signed streaming payload without credentials");
    }
    return STRATA_AUTH_OK;
}

/* A disabled user is refused after the signature checks out (so the
 * answer does not tell a stranger which keys exist), with AWS's code for
 * an inactive key and MinIO's message. */
enum strata_auth_err strata_auth_verify(const struct strata_creds *creds,
                                        const struct strata_auth_req *req,
                                        struct strata_auth_result *out)
{
    enum strata_auth_err e = verify(creds, req, out);
    if (e == STRATA_AUTH_OK && out->cred && out->cred->disabled) {
        out->cred = NULL;
        return fail(out, STRATA_AUTH_DISABLED_KEY,
                    "Your account is disabled; please contact your administrator.");
    }
    return e;
}
