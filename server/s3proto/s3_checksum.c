/*
 * s3_checksum.c - see s3_checksum.h.
 */
#include "s3_checksum.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <openssl/evp.h>

#include "base64.h"
#include "strata/erasure.h"
#include "strata/meta.h"

static const struct {
    int algo;
    const char *hdr;
    const char *name;
    size_t len;
} cksums[] = {
    {STRATA_CKSUM_CRC32, "x-amz-checksum-crc32", "CRC32", 4},
    {STRATA_CKSUM_CRC32C, "x-amz-checksum-crc32c", "CRC32C", 4},
    {STRATA_CKSUM_CRC64NVME, "x-amz-checksum-crc64nvme", "CRC64NVME", 8},
    {STRATA_CKSUM_SHA1, "x-amz-checksum-sha1", "SHA1", 20},
    {STRATA_CKSUM_SHA256, "x-amz-checksum-sha256", "SHA256", 32},
};

#define NCKSUMS (sizeof(cksums) / sizeof(cksums[0]))

int strata_s3_cksum_from_hdr(const char *name)
{
    for (size_t i = 0; i < NCKSUMS; i++)
        if (strcasecmp(name, cksums[i].hdr) == 0)
            return cksums[i].algo;
    return 0;
}

int strata_s3_cksum_from_algo_name(const char *name)
{
    for (size_t i = 0; i < NCKSUMS; i++)
        if (strcasecmp(name, cksums[i].name) == 0)
            return cksums[i].algo;
    return 0;
}

const char *strata_s3_cksum_hdr(int algo)
{
    for (size_t i = 0; i < NCKSUMS; i++)
        if (cksums[i].algo == algo)
            return cksums[i].hdr;
    return NULL;
}

size_t strata_s3_cksum_len(int algo)
{
    for (size_t i = 0; i < NCKSUMS; i++)
        if (cksums[i].algo == algo)
            return cksums[i].len;
    return 0;
}

int strata_s3_cksum_compute(int algo, const void *buf, size_t len, uint8_t *out)
{
    uint32_t c32;
    uint64_t c64;
    unsigned mdlen;
    switch (algo) {
    case STRATA_CKSUM_CRC32:
    case STRATA_CKSUM_CRC32C:
        c32 = algo == STRATA_CKSUM_CRC32 ? strata_crc32(0, buf, len) : strata_crc32c(0, buf, len);
        for (int i = 0; i < 4; i++)
            out[i] = (uint8_t)(c32 >> (24 - 8 * i)); /* big-endian, as S3 encodes it */
        return 0;
    case STRATA_CKSUM_CRC64NVME:
        c64 = strata_crc64nvme(0, buf, len);
        for (int i = 0; i < 8; i++)
            out[i] = (uint8_t)(c64 >> (56 - 8 * i));
        return 0;
    case STRATA_CKSUM_SHA1:
        return EVP_Digest(buf, len, out, &mdlen, EVP_sha1(), NULL) == 1 ? 0 : -1;
    case STRATA_CKSUM_SHA256:
        return EVP_Digest(buf, len, out, &mdlen, EVP_sha256(), NULL) == 1 ? 0 : -1;
    default:
        return -1;
    }
}

size_t strata_s3_cksum_value(const struct strata_obj_info *in, char *out, size_t out_len)
{
    if (!strata_s3_cksum_hdr(in->cksum_algo) || in->cksum_len == 0 || out_len < 64)
        return 0;
    int n = strata_b64_encode(in->cksum, in->cksum_len, out, out_len);
    if (n <= 0)
        return 0;
    if (in->cksum_type == STRATA_CKSUM_TYPE_COMPOSITE && in->nparts > 0)
        n += snprintf(out + n, out_len - (size_t)n, "-%u", in->nparts);
    return (size_t)n;
}

const char *strata_s3_cksum_type_name(int type)
{
    return type == STRATA_CKSUM_TYPE_COMPOSITE     ? "COMPOSITE"
           : type == STRATA_CKSUM_TYPE_FULL_OBJECT ? "FULL_OBJECT"
                                                   : NULL;
}

const char *strata_s3_cksum_algo_name(int algo)
{
    for (size_t i = 0; i < NCKSUMS; i++)
        if (cksums[i].algo == algo)
            return cksums[i].name;
    return NULL;
}
