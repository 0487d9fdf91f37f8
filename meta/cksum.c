/*
 * cksum.c - CRC combination for FULL_OBJECT multipart checksums.
 *
 * crc(A||B) = crc(A) * x^(8*len(B)) mod P  xor  crc(B), for CRCs whose init
 * and final xor are equal (all ones here), which is why the pre/post
 * inversion cancels out.  This is zlib's crc32_combine (multmodp and
 * x2nmodp, reflected bit order: the x^0 coefficient is the top bit),
 * generalised to any width up to 64 so one routine serves CRC32 (IEEE),
 * CRC32C and CRC-64/NVME.  Cost: O(w * log len) per combine, no tables kept.
 * Pure functions, any thread.
 */
#include "meta_internal.h"

struct crcdef {
    unsigned w;    /* width in bits */
    uint64_t poly; /* reflected polynomial */
};

static bool crc_def(int algo, struct crcdef *d)
{
    switch (algo) {
    case STRATA_CKSUM_CRC32:
        *d = (struct crcdef){32, 0xedb88320u};
        return true;
    case STRATA_CKSUM_CRC32C:
        *d = (struct crcdef){32, 0x82f63b78u};
        return true;
    case STRATA_CKSUM_CRC64NVME:
        *d = (struct crcdef){64, 0x9a6c9329ac4bc9b5ull};
        return true;
    default:
        return false;
    }
}

/* a * b mod P; a must be non-zero (x^n mod P never is). */
static uint64_t multmodp(const struct crcdef *d, uint64_t a, uint64_t b)
{
    uint64_t m = 1ull << (d->w - 1), p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ d->poly : b >> 1;
    }
    return p;
}

/* x^(n * 2^k) mod P by square-and-multiply. */
static uint64_t x2nmodp(const struct crcdef *d, uint64_t n, unsigned k)
{
    uint64_t p = 1ull << (d->w - 1); /* x^0 */
    uint64_t sq = 1ull << (d->w - 2); /* x^1, squared up to x^(2^k) below */
    for (unsigned i = 0; i < k; i++)
        sq = multmodp(d, sq, sq);
    while (n) {
        if (n & 1)
            p = multmodp(d, sq, p);
        n >>= 1;
        sq = multmodp(d, sq, sq);
    }
    return p;
}

uint64_t strata_meta__crc_combine(int algo, uint64_t crc_a, uint64_t crc_b, uint64_t len_b)
{
    struct crcdef d;
    if (!crc_def(algo, &d))
        return 0;
    if (len_b == 0)
        return crc_a;
    uint64_t mask = d.w == 64 ? UINT64_MAX : (1ull << d.w) - 1;
    /* len_b bytes = 8 * len_b bits = x^(len_b * 2^3). */
    return (multmodp(&d, x2nmodp(&d, len_b, 3), crc_a & mask) ^ crc_b) & mask;
}
