/*
 * chunked.c - the aws-chunked body decoder for the three STREAMING-*
 * payload modes.
 *
 * Wire format (AWS "sigv4-streaming" and "sigv4-streaming-trailers"):
 *
 *   signed:    hex-size ";chunk-signature=" sig CRLF data CRLF ... 0-size chunk,
 *              then CRLF, or (trailer mode) trailer lines, then
 *              "x-amz-trailer-signature:" sig CRLF, then CRLF
 *   unsigned:  hex-size CRLF data CRLF ... "0" CRLF trailer lines CRLF
 *
 * Each chunk signature is HMAC(signing key, "AWS4-HMAC-SHA256-PAYLOAD" \n
 * date \n scope \n previous-signature \n sha256("") \n sha256(data)),
 * chained from the seed signature of the Authorization header; the trailer
 * signature is HMAC(key, "AWS4-HMAC-SHA256-TRAILER" \n date \n scope \n
 * last-chunk-signature \n sha256("name:value\n"...)).
 *
 * A signed chunk's bytes are handed on only after its signature verifies,
 * so the decoder buffers at most one chunk (bounded by
 * STRATA_CHUNKED_MAX_CHUNK, and charged to the daemon's body budget).  Unsigned chunks pass straight through.  Input
 * may be split anywhere.  One decoder belongs to one request and is driven
 * by one thread at a time (any thread: it owns its own digest context).
 */
#include "auth.h"
#include "sigv4_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "strata/assert.h"
#include "strata/err.h"

#define STRATA_CHUNKED_MAX_CHUNK (16u << 20)
#define CHUNKED_LINE_MAX 1024
#define CHUNKED_MAX_TRAILERS 8

enum ch_state {
    CH_HDR,      /* reading "size[;ext]" CRLF */
    CH_DATA,     /* reading size bytes */
    CH_DATA_CR,  /* CRLF after the data */
    CH_DATA_LF,
    CH_TRAILER,  /* trailer lines until an empty one */
    CH_DONE,
    CH_ERROR,
};

struct ch_trailer {
    char name[64];
    char value[256];
};

struct strata_chunked {
    int mode;
    bool signed_chunks;
    bool trailer_mode;
    enum ch_state state;
    enum strata_auth_err err;

    uint8_t key[32];
    char prev_sig[65];
    char amz_date[17];
    char scope[128];
    char expect_trailer[64];

    uint64_t decoded_length; /* UINT64_MAX: not announced */
    uint64_t announced;      /* sum of chunk sizes so far */
    uint64_t delivered;

    char line[CHUNKED_LINE_MAX];
    size_t line_len;

    uint64_t chunk_size, chunk_got;
    bool final_seen;
    char chunk_sig[65];
    uint8_t *buf;
    size_t buf_cap;                     /* all of it charged to budget */
    struct strata_body_budget *budget; /* NULL: unlimited */
    EVP_MD_CTX *md;

    struct ch_trailer tr[CHUNKED_MAX_TRAILERS];
    size_t ntr;
    bool blank_skipped;
    bool trailer_sig_ok;
};

int strata_chunked_create(const struct strata_auth_result *auth, struct strata_chunked **out)
{
    *out = NULL;
    int m = auth->payload_mode;
    if (m != STRATA_PAYLOAD_STREAMING_SIGNED && m != STRATA_PAYLOAD_STREAMING_SIGNED_TRAILER &&
        m != STRATA_PAYLOAD_STREAMING_UNSIGNED_TRAILER)
        return STRATA_EINVAL;
    struct strata_chunked *c = calloc(1, sizeof(*c));
    if (!c)
        return STRATA_ENOMEM;
    c->mode = m;
    c->signed_chunks = m != STRATA_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
    c->trailer_mode = m != STRATA_PAYLOAD_STREAMING_SIGNED;
    c->decoded_length = auth->decoded_length;
    memcpy(c->expect_trailer, auth->trailer, sizeof(c->expect_trailer));
    c->expect_trailer[sizeof(c->expect_trailer) - 1] = '\0';
    if (c->signed_chunks) {
        if (strlen(auth->seed_signature) != 64 || strlen(auth->amz_date) != 16) {
            free(c);
            return STRATA_EINVAL;
        }
        memcpy(c->key, auth->signing_key, 32);
        memcpy(c->prev_sig, auth->seed_signature, 65);
        memcpy(c->amz_date, auth->amz_date, 17);
        memcpy(c->scope, auth->scope, sizeof(c->scope));
        c->scope[sizeof(c->scope) - 1] = '\0';
        c->md = EVP_MD_CTX_new();
        if (!c->md) {
            free(c);
            return STRATA_ENOMEM;
        }
    }
    c->state = CH_HDR;
    *out = c;
    return 0;
}

void strata_chunked_destroy(struct strata_chunked *c)
{
    if (!c)
        return;
    EVP_MD_CTX_free(c->md);
    strata_body_budget_give(c->budget, c->buf_cap);
    free(c->buf);
    OPENSSL_cleanse(c->key, sizeof(c->key));
    free(c);
}

void strata_chunked_set_budget(struct strata_chunked *c, struct strata_body_budget *budget)
{
    STRATA_ASSERT(c->buf_cap == 0);
    c->budget = budget;
}

static int fail(struct strata_chunked *c, enum strata_auth_err e, enum strata_auth_err *err)
{
    c->state = CH_ERROR;
    c->err = e;
    *err = e;
    return -1;
}

/* HMAC over "algo\ndate\nscope\nprev\n<tail>" -> hex, compared with want. */
static bool sig_matches(struct strata_chunked *c, const char *algo, const char *tail,
                        const char *want)
{
    char sts[64 + 17 + 128 + 65 + 140];
    int n = snprintf(sts, sizeof(sts), "%s\n%s\n%s\n%s\n%s", algo, c->amz_date, c->scope,
                     c->prev_sig, tail);
    uint8_t mac[32];
    char hex[65];
    if (n < 0 || (size_t)n >= sizeof(sts) ||
        strata_sigv4__hmac_signing(c->key, sts, (size_t)n, mac) != 0)
        return false;
    strata_hex_encode(mac, 32, hex);
    if (!strata_sigv4__ct_eq(hex, want, 64))
        return false;
    memcpy(c->prev_sig, hex, 65);
    return true;
}

static bool verify_chunk(struct strata_chunked *c)
{
    uint8_t h[32];
    unsigned int hl = 0;
    char tail[64 + 1 + 65];
    if (!EVP_DigestFinal_ex(c->md, h, &hl) || hl != 32)
        return false;
    memcpy(tail, STRATA_SIGV4_EMPTY_SHA256 "\n", 65);
    strata_hex_encode(h, 32, tail + 65);
    return sig_matches(c, "AWS4-HMAC-SHA256-PAYLOAD", tail, c->chunk_sig);
}

static bool verify_trailer(struct strata_chunked *c, const char *want)
{
    char canon[CHUNKED_MAX_TRAILERS * (64 + 256 + 2)];
    size_t n = 0;
    for (size_t i = 0; i < c->ntr; i++) {
        size_t nl = strlen(c->tr[i].name), vl = strlen(c->tr[i].value);
        memcpy(canon + n, c->tr[i].name, nl);
        n += nl;
        canon[n++] = ':';
        memcpy(canon + n, c->tr[i].value, vl);
        n += vl;
        canon[n++] = '\n';
    }
    uint8_t h[32];
    char hex[65];
    if (strata_sigv4__sha256(canon, n, h) != 0)
        return false;
    strata_hex_encode(h, 32, hex);
    return sig_matches(c, "AWS4-HMAC-SHA256-TRAILER", hex, want);
}

/* "size[;chunk-signature=sig]" */
static enum strata_auth_err parse_chunk_header(struct strata_chunked *c)
{
    const char *p = c->line;
    size_t digits = 0;
    uint64_t size = 0;
    while (digits < c->line_len) {
        int v = strata_hex_val(p[digits]);
        if (v < 0)
            break;
        if (++digits > 8)
            return STRATA_AUTH_BAD_CHUNK;
        size = size << 4 | (uint64_t)v;
    }
    if (digits == 0)
        return STRATA_AUTH_INCOMPLETE_BODY;
    if (size > STRATA_CHUNKED_MAX_CHUNK)
        return STRATA_AUTH_BAD_CHUNK;
    const char *ext = p + digits;
    size_t ext_len = c->line_len - digits;
    if (c->signed_chunks) {
        static const char key[] = ";chunk-signature=";
        if (ext_len != sizeof(key) - 1 + 64 || memcmp(ext, key, sizeof(key) - 1) != 0 ||
            !strata_hex_is(ext + sizeof(key) - 1, 64, false))
            return STRATA_AUTH_INCOMPLETE_BODY;
        memcpy(c->chunk_sig, ext + sizeof(key) - 1, 64);
        c->chunk_sig[64] = '\0';
    } else if (ext_len && ext[0] != ';') {
        /* Unsigned chunks may carry extensions (ignored), nothing else. */
        return STRATA_AUTH_INCOMPLETE_BODY;
    }
    c->chunk_size = size;
    c->chunk_got = 0;
    c->announced += size;
    if (c->decoded_length != UINT64_MAX && c->announced > c->decoded_length)
        return STRATA_AUTH_INCOMPLETE_BODY;
    if (size == 0) {
        c->final_seen = true;
        if (c->signed_chunks) {
            if (!EVP_DigestInit_ex(c->md, EVP_sha256(), NULL))
                return STRATA_AUTH_INTERNAL;
            if (!verify_chunk(c))
                return STRATA_AUTH_BAD_SIGNATURE;
        }
        c->state = c->trailer_mode ? CH_TRAILER : CH_DATA_CR;
        return STRATA_AUTH_OK;
    }
    if (c->signed_chunks) {
        if (size > c->buf_cap) {
            if (!strata_body_budget_take(c->budget, size - c->buf_cap))
                return STRATA_AUTH_OVER_BUDGET;
            uint8_t *nb = realloc(c->buf, size);
            if (!nb) {
                strata_body_budget_give(c->budget, size - c->buf_cap);
                return STRATA_AUTH_INTERNAL;
            }
            c->buf = nb;
            c->buf_cap = size;
        }
        if (!EVP_DigestInit_ex(c->md, EVP_sha256(), NULL))
            return STRATA_AUTH_INTERNAL;
    }
    c->state = CH_DATA;
    return STRATA_AUTH_OK;
}

static bool trailer_complete(const struct strata_chunked *c)
{
    if (c->signed_chunks && !c->trailer_sig_ok)
        return false;
    if (!c->expect_trailer[0])
        return true;
    for (size_t i = 0; i < c->ntr; i++)
        if (strcmp(c->tr[i].name, c->expect_trailer) == 0)
            return true;
    return false;
}

static enum strata_auth_err parse_trailer_line(struct strata_chunked *c)
{
    if (c->line_len == 0) {
        /* Some SDKs put an empty line between the 0-size chunk and the
         * trailers: skip one before any trailer has been seen. */
        if (c->ntr == 0 && !c->trailer_sig_ok && !c->blank_skipped && c->expect_trailer[0]) {
            c->blank_skipped = true;
            return STRATA_AUTH_OK;
        }
        if (!trailer_complete(c))
            return STRATA_AUTH_BAD_CHUNK;
        c->state = CH_DONE;
        return STRATA_AUTH_OK;
    }
    if (c->trailer_sig_ok)
        return STRATA_AUTH_BAD_CHUNK; /* nothing may follow the signature but CRLF */
    const char *colon = memchr(c->line, ':', c->line_len);
    if (!colon || colon == c->line)
        return STRATA_AUTH_BAD_CHUNK;
    size_t nl = (size_t)(colon - c->line);
    const char *v = colon + 1;
    size_t vl = c->line_len - nl - 1;
    while (vl && (*v == ' ' || *v == '\t'))
        v++, vl--;
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
        vl--;
    if (nl == 23 && strncasecmp(c->line, "x-amz-trailer-signature", 23) == 0) {
        if (!c->signed_chunks)
            return STRATA_AUTH_BAD_CHUNK;
        char want[65];
        if (vl != 64 || !strata_hex_is(v, 64, false))
            return STRATA_AUTH_BAD_CHUNK;
        memcpy(want, v, 64);
        want[64] = '\0';
        if (!verify_trailer(c, want))
            return STRATA_AUTH_BAD_SIGNATURE;
        c->trailer_sig_ok = true;
        return STRATA_AUTH_OK;
    }
    if (c->ntr == CHUNKED_MAX_TRAILERS || nl >= sizeof(c->tr[0].name) ||
        vl >= sizeof(c->tr[0].value))
        return STRATA_AUTH_BAD_CHUNK;
    struct ch_trailer *t = &c->tr[c->ntr++];
    for (size_t i = 0; i < nl; i++)
        t->name[i] = (char)(c->line[i] >= 'A' && c->line[i] <= 'Z' ? c->line[i] + 32 : c->line[i]);
    t->name[nl] = '\0';
    memcpy(t->value, v, vl);
    t->value[vl] = '\0';
    return STRATA_AUTH_OK;
}

/* Collects one CRLF-terminated line; returns 1 when complete, 0 when more
 * input is needed, -1 on a bad line. */
static int take_line(struct strata_chunked *c, const uint8_t **p, const uint8_t *end)
{
    while (*p < end) {
        uint8_t b = *(*p)++;
        if (b == '\n') {
            if (c->line_len == 0 || c->line[c->line_len - 1] != '\r')
                return -1;
            c->line_len--;
            c->line[c->line_len] = '\0';
            return 1;
        }
        if (c->line_len + 1 >= sizeof(c->line))
            return -1;
        c->line[c->line_len++] = (char)b;
    }
    return 0;
}

int strata_chunked_feed(struct strata_chunked *c, const void *data, size_t len,
                        int (*out_cb)(void *ud, const void *buf, size_t len), void *ud,
                        enum strata_auth_err *err)
{
    *err = STRATA_AUTH_OK;
    if (c->state == CH_ERROR) {
        *err = c->err;
        return -1;
    }
    const uint8_t *p = data, *end = p + len;
    while (p < end) {
        switch (c->state) {
        case CH_HDR:
        case CH_TRAILER: {
            int r = take_line(c, &p, end);
            if (r == 0)
                return 0;
            if (r < 0)
                return fail(c, STRATA_AUTH_INCOMPLETE_BODY, err);
            enum strata_auth_err e =
                c->state == CH_HDR ? parse_chunk_header(c) : parse_trailer_line(c);
            c->line_len = 0;
            if (e != STRATA_AUTH_OK)
                return fail(c, e, err);
            break;
        }
        case CH_DATA: {
            size_t want = (size_t)(c->chunk_size - c->chunk_got);
            size_t k = (size_t)(end - p) < want ? (size_t)(end - p) : want;
            if (c->signed_chunks) {
                memcpy(c->buf + c->chunk_got, p, k);
                if (!EVP_DigestUpdate(c->md, p, k))
                    return fail(c, STRATA_AUTH_INTERNAL, err);
            } else if (out_cb(ud, p, k) != 0) {
                c->state = CH_ERROR;
                c->err = STRATA_AUTH_OK;
                return -1;
            } else {
                c->delivered += k;
            }
            c->chunk_got += k;
            p += k;
            if (c->chunk_got < c->chunk_size)
                return 0;
            if (c->signed_chunks) {
                if (!verify_chunk(c))
                    return fail(c, STRATA_AUTH_BAD_SIGNATURE, err);
                if (out_cb(ud, c->buf, (size_t)c->chunk_size) != 0) {
                    c->state = CH_ERROR;
                    c->err = STRATA_AUTH_OK;
                    return -1;
                }
                c->delivered += c->chunk_size;
            }
            c->state = CH_DATA_CR;
            break;
        }
        case CH_DATA_CR:
            if (*p++ != '\r')
                return fail(c, STRATA_AUTH_INCOMPLETE_BODY, err);
            c->state = CH_DATA_LF;
            break;
        case CH_DATA_LF:
            if (*p++ != '\n')
                return fail(c, STRATA_AUTH_INCOMPLETE_BODY, err);
            c->state = c->final_seen ? CH_DONE : CH_HDR;
            break;
        case CH_DONE:
            /* Bytes after the end of the aws-chunked body. */
            return fail(c, STRATA_AUTH_BAD_CHUNK, err);
        case CH_ERROR:
            *err = c->err;
            return -1;
        }
    }
    return 0;
}

int strata_chunked_finish(struct strata_chunked *c, enum strata_auth_err *err)
{
    *err = STRATA_AUTH_OK;
    if (c->state == CH_ERROR) {
        *err = c->err;
        return -1;
    }
    /* A body may stop right after the trailer signature line, without the
     * closing CRLF (several SDKs send it that way). */
    if (c->state == CH_TRAILER && c->line_len == 0 && c->ntr > 0 && trailer_complete(c))
        c->state = CH_DONE;
    if (c->state != CH_DONE)
        return fail(c, STRATA_AUTH_INCOMPLETE_BODY, err);
    if (c->decoded_length != UINT64_MAX && c->delivered != c->decoded_length)
        return fail(c, STRATA_AUTH_INCOMPLETE_BODY, err);
    return 0;
}

const char *strata_chunked_trailer(const struct strata_chunked *c, const char *name)
{
    for (size_t i = 0; i < c->ntr; i++)
        if (strcasecmp(c->tr[i].name, name) == 0)
            return c->tr[i].value;
    return NULL;
}

uint64_t strata_chunked_decoded_bytes(const struct strata_chunked *c)
{
    return c->delivered;
}
