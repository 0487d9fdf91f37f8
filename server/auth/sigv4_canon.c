/*
 * sigv4_canon.c - the SigV4 canonical request and string to sign, as AWS
 * documents them for S3:
 *
 *   method \n canonical-uri \n canonical-query \n canonical-headers \n
 *   signed-headers \n payload-hash
 *
 * S3 signs the path exactly as sent (no second encoding, no dot-segment
 * normalisation), so the canonical URI is raw_path verbatim.  The query is
 * decoded and re-encoded per AWS rules and sorted by name, then value.  The
 * canonical request streams straight into SHA-256 through a small sink, so
 * no heap buffer is needed except for unusually long query strings.
 *
 * Pure, reentrant; runs on request threads.
 */
#include "sigv4_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "strata/err.h"

#define MAX_QUERY_PARAMS 256
#define MAX_SIGNED_HEADERS 64
#define QUERY_STACK_BYTES 4096

struct qparam {
    const char *name; /* encoded: in the arena, or the raw query when already canonical */
    size_t name_len;
    const char *value;
    size_t value_len;
};

static int qparam_cmp(const struct qparam *a, const struct qparam *b)
{
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = memcmp(a->name, b->name, n);
    if (c || a->name_len != b->name_len)
        return c ? c : (a->name_len < b->name_len ? -1 : 1);
    n = a->value_len < b->value_len ? a->value_len : b->value_len;
    c = memcmp(a->value, b->value, n);
    if (c || a->value_len != b->value_len)
        return c ? c : (a->value_len < b->value_len ? -1 : 1);
    return 0;
}

static int upper_hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Whether raw is already what decoding and AWS-encoding it would give:
 * unreserved bytes, and %XX (upper-case hex) only for a byte that must be
 * escaped.  SDKs send presigned parameters in exactly this form. */
static bool canonical_already(const char *raw, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (strata_url_unreserved(c))
            continue;
        if (c != '%' || i + 2 >= n)
            return false;
        int hi = upper_hex(raw[i + 1]), lo = upper_hex(raw[i + 2]);
        if (hi < 0 || lo < 0 || (hi | lo) == 0 ||
            strata_url_unreserved((unsigned char)(hi << 4 | lo)))
            return false;
        i += 2;
    }
    return true;
}

/* Decode what the client sent, then encode it the AWS way into the arena. */
static int recode(const char *raw, size_t raw_len, char *scratch, char **arena, char *arena_end,
                  const char **out, size_t *out_len)
{
    if (canonical_already(raw, raw_len)) {
        *out = raw;
        *out_len = raw_len;
        return 0;
    }
    long d = strata_url_decode(raw, raw_len, scratch, raw_len, true);
    if (d < 0)
        return -1;
    long e = strata_url_encode(scratch, (size_t)d, *arena, (size_t)(arena_end - *arena),
                                      false);
    if (e < 0)
        return -1;
    *out = *arena;
    *out_len = (size_t)e;
    *arena += e;
    return 0;
}

static enum strata_auth_err put_canonical_query(struct strata_sigv4_sink *s, const char *q,
                                                const char *skip_param)
{
    if (!q || !*q)
        return STRATA_AUTH_OK;
    size_t qlen = strlen(q);
    /* Scratch for one decoded segment (<= qlen) plus encoded output
     * (<= 3 * qlen). */
    size_t need = 4 * qlen + 4;
    char stack_buf[QUERY_STACK_BYTES];
    char *buf = need <= sizeof(stack_buf) ? stack_buf : malloc(need);
    if (!buf)
        return STRATA_AUTH_INTERNAL;
    char *scratch = buf, *arena = buf + qlen + 1, *arena_end = buf + need;

    struct qparam ps[MAX_QUERY_PARAMS];
    size_t np = 0;
    enum strata_auth_err err = STRATA_AUTH_OK;
    const char *p = q;
    while (*p && err == STRATA_AUTH_OK) {
        const char *amp = strchr(p, '&');
        size_t seg = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', seg);
        size_t kl = eq ? (size_t)(eq - p) : seg;
        bool skip = seg == 0 || (skip_param && strlen(skip_param) == kl &&
                                 memcmp(p, skip_param, kl) == 0);
        if (!skip) {
            if (np == MAX_QUERY_PARAMS) {
                err = STRATA_AUTH_BAD_ARGUMENT;
                break;
            }
            struct qparam *qp = &ps[np++];
            if (recode(p, kl, scratch, &arena, arena_end, &qp->name, &qp->name_len) ||
                recode(eq ? eq + 1 : p + seg, eq ? seg - kl - 1 : 0, scratch, &arena, arena_end,
                       &qp->value, &qp->value_len))
                err = STRATA_AUTH_BAD_ARGUMENT;
        }
        if (!amp)
            break;
        p = amp + 1;
    }
    if (err == STRATA_AUTH_OK) {
        /* Insertion sort: S3 queries have a handful of parameters. */
        for (size_t i = 1; i < np; i++) {
            struct qparam t = ps[i];
            size_t j = i;
            while (j > 0 && qparam_cmp(&ps[j - 1], &t) > 0) {
                ps[j] = ps[j - 1];
                j--;
            }
            ps[j] = t;
        }
        for (size_t i = 0; i < np; i++) {
            if (i)
                strata_sigv4__sink_putc(s, '&');
            strata_sigv4__sink_put(s, ps[i].name, ps[i].name_len);
            strata_sigv4__sink_putc(s, '=');
            strata_sigv4__sink_put(s, ps[i].value, ps[i].value_len);
        }
    }
    if (buf != stack_buf)
        free(buf);
    return err;
}

static bool name_eq(const char *a, const char *b, size_t blen)
{
    return (a[0] | 0x20) == b[0] && strncasecmp(a, b, blen) == 0 && a[blen] == '\0';
}

static enum strata_auth_err put_canonical_headers(struct strata_sigv4_sink *s,
                                                  const struct strata_auth_req *req, const char *sh,
                                                  size_t sh_len, const char *host_override)
{
    const char *p = sh, *end = sh + sh_len;
    size_t count = 0;
    while (p < end) {
        const char *semi = memchr(p, ';', (size_t)(end - p));
        size_t nl = semi ? (size_t)(semi - p) : (size_t)(end - p);
        if (nl == 0 || ++count > MAX_SIGNED_HEADERS)
            return STRATA_AUTH_MALFORMED_HEADER;
        for (size_t i = 0; i < nl; i++)
            if (p[i] >= 'A' && p[i] <= 'Z')
                return STRATA_AUTH_MALFORMED_HEADER;
        strata_sigv4__sink_put(s, p, nl);
        strata_sigv4__sink_putc(s, ':');
        if (host_override && nl == 4 && memcmp(p, "host", 4) == 0) {
            strata_sigv4__sink_put_trimmed(s, host_override);
        } else {
            bool first = true;
            for (size_t i = 0; i < req->nhdrs; i++) {
                if (!req->hdrs[i].name || !name_eq(req->hdrs[i].name, p, nl))
                    continue;
                if (!first)
                    strata_sigv4__sink_putc(s, ',');
                first = false;
                strata_sigv4__sink_put_trimmed(s, req->hdrs[i].value ? req->hdrs[i].value : "");
            }
        }
        strata_sigv4__sink_putc(s, '\n');
        p += nl + 1;
    }
    return STRATA_AUTH_OK;
}

static int sha_flush_cb(void *ud, const void *p, size_t n)
{
    (void)ud;
    return strata_sigv4__sha_update(p, n);
}

enum strata_auth_err strata_sigv4__canonical_hash(const struct strata_auth_req *req,
                                                  const char *signed_headers,
                                                  size_t signed_headers_len, const char *skip_param,
                                                  const char *host_override,
                                                  const char *payload_hash, char out_hex[65])
{
    struct strata_sigv4_sink s = {.flush_cb = sha_flush_cb};
    if (strata_sigv4__sha_begin() != 0)
        return STRATA_AUTH_INTERNAL;
    strata_sigv4__sink_puts(&s, req->method ? req->method : "");
    strata_sigv4__sink_putc(&s, '\n');
    strata_sigv4__sink_puts(&s, req->raw_path && *req->raw_path ? req->raw_path : "/");
    strata_sigv4__sink_putc(&s, '\n');
    enum strata_auth_err err = put_canonical_query(&s, req->raw_query, skip_param);
    if (err != STRATA_AUTH_OK)
        return err;
    strata_sigv4__sink_putc(&s, '\n');
    err = put_canonical_headers(&s, req, signed_headers, signed_headers_len, host_override);
    if (err != STRATA_AUTH_OK)
        return err;
    strata_sigv4__sink_putc(&s, '\n');
    strata_sigv4__sink_put(&s, signed_headers, signed_headers_len);
    strata_sigv4__sink_putc(&s, '\n');
    strata_sigv4__sink_puts(&s, payload_hash);
    uint8_t h[32];
    if (strata_sigv4__sink_flush(&s) != 0 || strata_sigv4__sha_end(h) != 0)
        return STRATA_AUTH_INTERNAL;
    strata_hex_encode(h, 32, out_hex);
    return STRATA_AUTH_OK;
}

int strata_sigv4__sign(const uint8_t key[32], const char *amz_date, const char *scope,
                       const char *creq_hex, char out_hex[65])
{
    char sts[sizeof(STRATA_SIGV4_ALGO) + 17 + 128 + 65 + 4];
    size_t dl = strlen(amz_date), sl = strlen(scope), al = sizeof(STRATA_SIGV4_ALGO) - 1;
    if (dl != 16 || sl >= 128 || strlen(creq_hex) != 64)
        return STRATA_EINVAL;
    char *p = sts;
    memcpy(p, STRATA_SIGV4_ALGO "\n", al + 1);
    p += al + 1;
    memcpy(p, amz_date, dl);
    p += dl;
    *p++ = '\n';
    memcpy(p, scope, sl);
    p += sl;
    *p++ = '\n';
    memcpy(p, creq_hex, 64);
    p += 64;
    uint8_t mac[32];
    int rc = strata_sigv4__hmac_signing(key, sts, (size_t)(p - sts), mac);
    if (rc == 0)
        strata_hex_encode(mac, 32, out_hex);
    return rc;
}
