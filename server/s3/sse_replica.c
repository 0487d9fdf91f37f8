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
 * source's ETag.
 */
#include "sse.h"

#include "base64.h"
#include "srv.h"
#include "strata/hex.h"

#include <ctype.h>
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

/* The sealed replica's descriptor (d64, base64) into n: 0, or -1. */
static int desc_hdr(const char *d64, struct strata_sse_new *n)
{
    memset(n, 0, sizeof(*n));
    int dl = strata_b64_decode(d64, n->desc, sizeof(n->desc));
    if (dl <= 0 || strata_sse_desc_mode(n->desc, (size_t)dl) != STRATA_SSE_MODE_C)
        return -1;
    n->desc_len = (size_t)dl;
    n->mode = STRATA_SSE_MODE_C;
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
    r->err_msg = "A sealed replica needs a valid " STRATA_SSE_REPLICA_HDR ", "
                 STRATA_SSE_REPLICA_SIZE_HDR " and " STRATA_SSE_REPLICA_ETAG_HDR ".";
    if (desc_hdr(d64, n) != 0 || !end || *end || etag_hdr(r, n->etag) != 0)
        return S3E_InvalidArgument;
    r->err_msg = NULL;
    *size = pt;
    return 0;
}

int strata_sse_replica_mpu_parse(struct strata_req *r, struct strata_sse_new *n)
{
    const char *d64 = strata_req_hdr(r, STRATA_SSE_REPLICA_HDR);
    if (!d64)
        return strata_sse_new_parse(r, n);
    if (desc_hdr(d64, n) != 0) {
        r->err_msg = "A sealed replica needs a valid " STRATA_SSE_REPLICA_HDR ".";
        return S3E_InvalidArgument;
    }
    return 0;
}
