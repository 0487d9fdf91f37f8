/*
 * sse.c - seal and open the chunks of encrypted object data with OpenSSL's
 * AES-256-GCM (the format is in sse.h).  Pure: no I/O, no keys kept
 * beyond the context.  Any thread; a context belongs to one thread.
 */
#include "sse.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "strata/err.h"

struct sse_ctx {
    EVP_CIPHER_CTX *enc, *dec; /* keyed once; each chunk sets only its nonce */
    uint32_t stream;
};

int strata_sse__create(const uint8_t key[SSE_KEY_LEN], uint32_t stream, struct sse_ctx **out)
{
    *out = NULL;
    struct sse_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return STRATA_ENOMEM;
    c->stream = stream;
    c->enc = EVP_CIPHER_CTX_new();
    c->dec = EVP_CIPHER_CTX_new();
    if (!c->enc || !c->dec ||
        EVP_EncryptInit_ex(c->enc, EVP_aes_256_gcm(), NULL, key, NULL) != 1 ||
        EVP_DecryptInit_ex(c->dec, EVP_aes_256_gcm(), NULL, key, NULL) != 1) {
        strata_sse__destroy(c);
        return STRATA_EINTERNAL;
    }
    *out = c;
    return 0;
}

void strata_sse__destroy(struct sse_ctx *c)
{
    if (!c)
        return;
    EVP_CIPHER_CTX_free(c->enc);
    EVP_CIPHER_CTX_free(c->dec);
    free(c);
}

uint64_t strata_sse__nchunks(uint64_t pt_size)
{
    return (pt_size + SSE_CHUNK - 1) / SSE_CHUNK;
}

uint64_t strata_sse__stream_size(uint64_t pt_size)
{
    return pt_size + strata_sse__nchunks(pt_size) * SSE_TAG;
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static void nonce_aad(const struct sse_ctx *c, uint64_t idx, bool last, uint8_t nonce[12],
                      uint8_t aad[14])
{
    put_be(nonce, c->stream, 4);
    put_be(nonce + 4, idx, 8);
    aad[0] = SSE_FORMAT;
    aad[1] = last ? 1 : 0;
    memcpy(aad + 2, nonce, 12);
}

int strata_sse__seal(struct sse_ctx *c, uint64_t idx, bool last, const uint8_t *pt, size_t len,
                     uint8_t *out)
{
    uint8_t nonce[12], aad[14];
    int n = 0, f = 0;
    if (len == 0 || len > SSE_CHUNK)
        return STRATA_EINVAL;
    nonce_aad(c, idx, last, nonce, aad);
    if (EVP_EncryptInit_ex(c->enc, NULL, NULL, NULL, nonce) != 1 ||
        EVP_EncryptUpdate(c->enc, NULL, &n, aad, sizeof(aad)) != 1 ||
        EVP_EncryptUpdate(c->enc, out, &n, pt, (int)len) != 1 ||
        EVP_EncryptFinal_ex(c->enc, out + n, &f) != 1 ||
        EVP_CIPHER_CTX_ctrl(c->enc, EVP_CTRL_GCM_GET_TAG, SSE_TAG, out + len) != 1)
        return STRATA_EINTERNAL;
    return 0;
}

int strata_sse__open(struct sse_ctx *c, uint64_t idx, bool last, const uint8_t *in, size_t clen,
                     uint8_t *out)
{
    uint8_t nonce[12], aad[14], tag[SSE_TAG];
    int n = 0, f = 0;
    if (clen <= SSE_TAG || clen > SSE_CCHUNK)
        return STRATA_ECORRUPT;
    size_t len = clen - SSE_TAG;
    memcpy(tag, in + len, SSE_TAG);
    nonce_aad(c, idx, last, nonce, aad);
    if (EVP_DecryptInit_ex(c->dec, NULL, NULL, NULL, nonce) != 1 ||
        EVP_DecryptUpdate(c->dec, NULL, &n, aad, sizeof(aad)) != 1 ||
        EVP_DecryptUpdate(c->dec, out, &n, in, (int)len) != 1 ||
        EVP_CIPHER_CTX_ctrl(c->dec, EVP_CTRL_GCM_SET_TAG, SSE_TAG, tag) != 1)
        return STRATA_EINTERNAL;
    if (EVP_DecryptFinal_ex(c->dec, out + n, &f) != 1) {
        OPENSSL_cleanse(out, len); /* never hand out unauthenticated bytes */
        return STRATA_ECORRUPT;
    }
    return 0;
}

void strata_sse__range(uint64_t pt_size, uint64_t off, uint64_t len, uint64_t *c0, uint64_t *c1,
                       uint64_t *soff, uint64_t *slen)
{
    *c0 = off / SSE_CHUNK;
    *c1 = (off + len - 1) / SSE_CHUNK;
    *soff = *c0 * SSE_CCHUNK;
    uint64_t end = (*c1 + 1) * SSE_CCHUNK;
    uint64_t total = strata_sse__stream_size(pt_size);
    *slen = (end < total ? end : total) - *soff;
}

/* ---- streams ------------------------------------------------------------ */

struct sse_writer {
    struct sse_ctx *c;
    uint64_t idx;
    size_t have;
    uint8_t pt[SSE_CHUNK];
    uint8_t ct[SSE_CCHUNK];
};

int strata_sse__writer_create(const uint8_t key[SSE_KEY_LEN], uint32_t stream,
                              struct sse_writer **out)
{
    *out = NULL;
    struct sse_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return STRATA_ENOMEM;
    int rc = strata_sse__create(key, stream, &w->c);
    if (rc) {
        free(w);
        return rc;
    }
    *out = w;
    return 0;
}

void strata_sse__writer_destroy(struct sse_writer *w)
{
    if (!w)
        return;
    strata_sse__destroy(w->c);
    OPENSSL_cleanse(w->pt, sizeof(w->pt));
    free(w);
}

static int writer_flush(struct sse_writer *w, bool last, sse_emit_fn emit, void *ud)
{
    int rc = strata_sse__seal(w->c, w->idx, last, w->pt, w->have, w->ct);
    if (rc == 0)
        rc = emit(ud, w->ct, w->have + SSE_TAG);
    w->idx++;
    w->have = 0;
    return rc;
}

int strata_sse__writer_write(struct sse_writer *w, const void *buf, size_t len, sse_emit_fn emit,
                             void *ud)
{
    const uint8_t *p = buf;
    while (len > 0) {
        if (w->have == SSE_CHUNK) {
            int rc = writer_flush(w, false, emit, ud); /* more follows: not the last */
            if (rc)
                return rc;
        }
        size_t n = SSE_CHUNK - w->have < len ? SSE_CHUNK - w->have : len;
        memcpy(w->pt + w->have, p, n);
        w->have += n;
        p += n;
        len -= n;
    }
    return 0;
}

int strata_sse__writer_finish(struct sse_writer *w, sse_emit_fn emit, void *ud)
{
    return w->have ? writer_flush(w, true, emit, ud) : 0;
}

#define SSE_BATCH 16u /* chunks read from the store in one call */

struct sse_reader {
    struct sse_ctx *c;
    uint64_t pt_size, nchunks;
    int64_t cached; /* index of the chunk in plain, -1 none */
    uint8_t plain[SSE_CHUNK];
    uint8_t *scratch; /* SSE_BATCH stored chunks */
};

int strata_sse__reader_create(const uint8_t key[SSE_KEY_LEN], uint32_t stream, uint64_t pt_size,
                              struct sse_reader **out)
{
    *out = NULL;
    struct sse_reader *r = calloc(1, sizeof(*r));
    if (!r || !(r->scratch = malloc((size_t)SSE_BATCH * SSE_CCHUNK))) {
        strata_sse__reader_destroy(r);
        return STRATA_ENOMEM;
    }
    r->pt_size = pt_size;
    r->nchunks = strata_sse__nchunks(pt_size);
    r->cached = -1;
    int rc = strata_sse__create(key, stream, &r->c);
    if (rc) {
        strata_sse__reader_destroy(r);
        return rc;
    }
    *out = r;
    return 0;
}

void strata_sse__reader_destroy(struct sse_reader *r)
{
    if (!r)
        return;
    strata_sse__destroy(r->c);
    OPENSSL_cleanse(r->plain, sizeof(r->plain));
    free(r->scratch);
    free(r);
}

/* Plaintext bytes of chunk i. */
static size_t chunk_len(const struct sse_reader *r, uint64_t i)
{
    return i + 1 < r->nchunks ? SSE_CHUNK : (size_t)(r->pt_size - i * SSE_CHUNK);
}

int strata_sse__reader_read(struct sse_reader *r, uint64_t off, void *buf, size_t len,
                            sse_read_fn read, void *ud)
{
    if (off > r->pt_size || len > r->pt_size - off)
        return STRATA_ERANGE;
    uint8_t *out = buf;
    while (len > 0) {
        uint64_t i = off / SSE_CHUNK, in = off % SSE_CHUNK;
        size_t cl = chunk_len(r, i);
        size_t n = cl - in < len ? cl - in : len;
        if ((int64_t)i == r->cached) {
            memcpy(out, r->plain + in, n);
        } else {
            /* Read this chunk and the following ones this call needs. */
            uint64_t c0, c1, soff, slen;
            strata_sse__range(r->pt_size, off, len, &c0, &c1, &soff, &slen);
            if (c1 - c0 + 1 > SSE_BATCH) {
                c1 = c0 + SSE_BATCH - 1;
                slen = SSE_BATCH * (uint64_t)SSE_CCHUNK;
            }
            int rc = read(ud, soff, r->scratch, (size_t)slen);
            if (rc)
                return rc;
            for (uint64_t k = c0; k <= c1; k++) {
                cl = chunk_len(r, k);
                in = off % SSE_CHUNK;
                n = cl - in < len ? cl - in : len;
                const uint8_t *sc = r->scratch + (k - c0) * SSE_CCHUNK;
                bool whole = in == 0 && n == cl;
                uint8_t *dst = whole ? out : r->plain;
                r->cached = whole ? r->cached : -1;
                rc = strata_sse__open(r->c, k, k + 1 == r->nchunks, sc, cl + SSE_TAG, dst);
                if (rc)
                    return rc;
                if (!whole) {
                    r->cached = (int64_t)k;
                    memcpy(out, r->plain + in, n);
                }
                out += n;
                off += n;
                len -= n;
            }
            continue;
        }
        out += n;
        off += n;
        len -= n;
    }
    return 0;
}
