/*
 * sse_replica.c - the encryption of a replica a Strata replication source
 * sends (contract in sse.h).
 *
 * An SSE-C version is sent as it is stored, sealed: the key that reads it
 * is the customer's, which neither side keeps, so the replica stores the
 * same sealed stream under the same descriptor and reads with the same
 * customer key; a multipart one the same way, its upload with the
 * descriptor and each part as its own sealed stream (stream number = part
 * number, so the source's part numbers are kept).  An SSE-KMS version
 * arrives as plaintext with the aws:kms headers naming the rule's
 * ReplicaKmsKeyID, encrypted here as any SSE-KMS PutObject, keeping the
 * source's ETag; or sealed, as SSE-C is, when that is its own key and
 * this side holds the same key (its descriptor unwraps here): no
 * plaintext on the wire, no second encryption.
 */
#include "sse.h"

#include "base64.h"
#include "srv.h"
#include "strata/hex.h"

#include <openssl/crypto.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A 32-hex-digit ETag header into out (33 bytes): 0, or -1. */
static int etag_hdr(struct strata_req *r, char out[33])
{
    const char *e = strata_req_hdr(r, STRATA_SSE_REPLICA_ETAG_HDR);
    uint8_t raw[16];
    if (!e || strlen(e) != 32 || strata_hex_decode(e, 16, raw, false) != 0)
        return -1;
    memcpy(out, e, 33);
    return 0;
}

/* An SSE-KMS descriptor d sent sealed: 0 when this side's key store holds
 * its master key, enabled, and that key unwraps d (the same key, not
 * only the same name), else an enum s3_err with r->err_msg set. */
static int kms_same_key(struct strata_req *r, const uint8_t *d, size_t len)
{
    const struct strata_kms *k = r->srv->kms;
    char name[80];
    uint8_t key[32];
    if (strata_sse_desc_key_name(d, len, name, sizeof(name)) != 0)
        return S3E_InvalidArgument;
    int st = k ? strata_kms_state(k, name) : STRATA_ENOTFOUND;
    int rc = st ? st : strata_sse_s3_object_key(k, d, len, key);
    OPENSSL_cleanse(key, sizeof(key));
    if (rc == 0)
        return 0;
    snprintf(r->err_msg_buf, sizeof(r->err_msg_buf),
             "The key store has no usable key '%.64s' this sealed replica unwraps with.", name);
    r->err_msg = r->err_msg_buf;
    return st == STRATA_EMETHOD ? S3E_KMS_DisabledException : S3E_KMS_NotFoundException;
}

/* The sealed replica's descriptor (d64, base64) into n: 0, or an enum
 * s3_err (err_msg set). */
static int desc_hdr(struct strata_req *r, const char *d64, struct strata_sse_new *n)
{
    memset(n, 0, sizeof(*n));
    int dl = strata_b64_decode(d64, n->desc, sizeof(n->desc));
    int mode = dl > 0 ? strata_sse_desc_mode(n->desc, (size_t)dl) : 0;
    r->err_msg = "A sealed replica needs a valid " STRATA_SSE_REPLICA_HDR ", "
                 STRATA_SSE_REPLICA_SIZE_HDR " and " STRATA_SSE_REPLICA_ETAG_HDR ".";
    if (mode != STRATA_SSE_MODE_C && mode != STRATA_SSE_MODE_KMS)
        return S3E_InvalidArgument;
    int e = mode == STRATA_SSE_MODE_KMS ? kms_same_key(r, n->desc, (size_t)dl) : 0;
    if (e)
        return e;
    r->err_msg = NULL;
    n->desc_len = (size_t)dl;
    n->mode = mode;
    n->sealed = true;
    return 0;
}

int strata_sse_replica_parse(struct strata_req *r, struct strata_sse_new *n, uint64_t *size)
{
    const char *d64 = strata_req_hdr(r, STRATA_SSE_REPLICA_HDR);
    if (!d64) {
        int e = strata_sse_new_parse(r, n);
        char etag[33];
        if (e == 0 && n->mode == STRATA_SSE_MODE_KMS && etag_hdr(r, etag) == 0)
            memcpy(n->etag, etag, sizeof(etag));
        return e;
    }
    const char *sz = strata_req_hdr(r, STRATA_SSE_REPLICA_SIZE_HDR);
    char *end = NULL;
    unsigned long long pt = sz && isdigit((unsigned char)*sz) ? strtoull(sz, &end, 10) : 0;
    int e = desc_hdr(r, d64, n);
    if (e)
        return e;
    if (!end || *end || etag_hdr(r, n->etag) != 0) {
        r->err_msg = "A sealed replica needs a valid " STRATA_SSE_REPLICA_SIZE_HDR " and "
                     STRATA_SSE_REPLICA_ETAG_HDR ".";
        return S3E_InvalidArgument;
    }
    *size = pt;
    return 0;
}

int strata_sse_replica_mpu_parse(struct strata_req *r, struct strata_sse_new *n)
{
    const char *d64 = strata_req_hdr(r, STRATA_SSE_REPLICA_HDR);
    if (!d64)
        return strata_sse_new_parse(r, n);
    return desc_hdr(r, d64, n);
}
