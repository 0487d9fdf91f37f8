/*
 * crc.c - the checksums S3 and the shard format need.  CRC32C and CRC32
 * come from ISA-L; CRC-64/NVME (S3's x-amz-checksum-crc64nvme) is not in
 * ISA-L 2.30, so it is a slice-by-8 table implementation here.
 *
 * Threads: any; the CRC64 tables are built once through pthread_once.
 */
#include "strata/erasure.h"

#include <isa-l/crc.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

/* ISA-L takes an int length; feed it in chunks so huge buffers are fine. */
#define CRC_CHUNK ((size_t)1 << 30)

uint32_t strata_crc32c(uint32_t crc, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    /* crc32_iscsi neither pre- nor post-inverts; the standard CRC32C does. */
    uint32_t c = ~crc;
    while (len > 0) {
        size_t n = len < CRC_CHUNK ? len : CRC_CHUNK;
        c = crc32_iscsi((unsigned char *)p, (int)n, c);
        p += n;
        len -= n;
    }
    return ~c;
}

uint32_t strata_crc32(uint32_t crc, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    /* crc32_gzip_refl inverts on entry and exit itself. */
    while (len > 0) {
        size_t n = len < CRC_CHUNK ? len : CRC_CHUNK;
        crc = crc32_gzip_refl(crc, (const unsigned char *)p, (uint64_t)n);
        p += n;
        len -= n;
    }
    return crc;
}

/* Reflected polynomial of CRC-64/NVME (normal form 0xad93d23594c93659). */
#define CRC64NVME_POLY UINT64_C(0x9a6c9329ac4bc9b5)

static uint64_t crc64_tab[8][256];
static pthread_once_t crc64_once = PTHREAD_ONCE_INIT;

static void crc64_tab_init(void)
{
    for (unsigned i = 0; i < 256; i++) {
        uint64_t c = i;
        for (int j = 0; j < 8; j++)
            c = (c & 1) ? (c >> 1) ^ CRC64NVME_POLY : c >> 1;
        crc64_tab[0][i] = c;
    }
    for (unsigned i = 0; i < 256; i++)
        for (unsigned t = 1; t < 8; t++)
            crc64_tab[t][i] = (crc64_tab[t - 1][i] >> 8) ^ crc64_tab[0][crc64_tab[t - 1][i] & 0xff];
}

uint64_t strata_crc64nvme(uint64_t crc, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    pthread_once(&crc64_once, crc64_tab_init);
    uint64_t c = ~crc;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
        w = __builtin_bswap64(w);
#endif
        c ^= w;
        c = crc64_tab[7][c & 0xff] ^ crc64_tab[6][(c >> 8) & 0xff] ^
            crc64_tab[5][(c >> 16) & 0xff] ^ crc64_tab[4][(c >> 24) & 0xff] ^
            crc64_tab[3][(c >> 32) & 0xff] ^ crc64_tab[2][(c >> 40) & 0xff] ^
            crc64_tab[1][(c >> 48) & 0xff] ^ crc64_tab[0][c >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        c = crc64_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}
