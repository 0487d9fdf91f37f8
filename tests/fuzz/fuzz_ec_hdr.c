/*
 * fuzz_ec_hdr.c - libFuzzer target for strata_ec__hdr_decode, the 4096-byte
 * header at the start of every shard file (erasure/shard.c has its
 * OFFSET/SIZE table).  A shard header is read from a drive that may hold
 * anything, so the decoder must refuse a bad magic or CRC and an unknown
 * version without trusting a field.
 *
 * Input: the header bytes (shorter inputs are zero-padded to 4096, longer
 * ones cut).  Each input is decoded twice: as given (so the magic and CRC
 * checks are exercised), and with the magic and the header CRC written in
 * (so the fields behind the CRC are reached at all: a fuzzer cannot guess
 * a CRC32C).  Whatever decodes must encode and decode to the same fields,
 * and its first 84 bytes must hash to the stored CRC.
 */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "ec_internal.h"

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void check(const uint8_t *in)
{
    struct strata_ec__hdr h, h2;
    memset(&h, 0xa5, sizeof(h));
    int rc = strata_ec__hdr_decode(in, &h);
    if (rc != 0 && rc != STRATA_ECORRUPT && rc != STRATA_EFORMAT)
        STRATA_FUZZ_FAIL();
    if (rc != 0)
        return;
    if (memcmp(in, "STRATASH", 8) != 0 || le32(in + 84) != strata_crc32c(0, in, 84) ||
        h.version < STRATA_FORMAT_VERSION_MIN || h.version > STRATA_FORMAT_VERSION || le32(in + 12) != STRATA_EC_HDR_SIZE)
        STRATA_FUZZ_FAIL(); /* accepted a header it must refuse */
    uint8_t *out = malloc(STRATA_EC_HDR_SIZE);
    if (!out)
        STRATA_FUZZ_FAIL();
    strata_ec__hdr_encode(&h, out);
    memset(&h2, 0x5a, sizeof(h2));
    if (strata_ec__hdr_decode(out, &h2) != 0)
        STRATA_FUZZ_FAIL();
    if (h.version != h2.version || memcmp(h.data_id, h2.data_id, STRATA_DATA_ID_LEN) != 0 ||
        h.shard_index != h2.shard_index || h.k != h2.k || h.m != h2.m ||
        h.block_size != h2.block_size || h.shard_size != h2.shard_size ||
        h.object_size != h2.object_size || h.block_count != h2.block_count ||
        h.table_crc != h2.table_crc)
        STRATA_FUZZ_FAIL();
    /* The encoder zeroes everything it does not define. */
    for (size_t i = 88; i < STRATA_EC_HDR_SIZE; i++)
        if (out[i])
            STRATA_FUZZ_FAIL();
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *in = calloc(1, STRATA_EC_HDR_SIZE);
    if (!in)
        STRATA_FUZZ_FAIL();
    memcpy(in, data, size < STRATA_EC_HDR_SIZE ? size : STRATA_EC_HDR_SIZE);
    check(in);

    /* The same bytes behind a valid magic and CRC. */
    memcpy(in, "STRATASH", 8);
    uint32_t c = strata_crc32c(0, in, 84);
    for (int i = 0; i < 4; i++)
        in[84 + i] = (uint8_t)(c >> (8 * i));
    check(in);
    free(in);
    return 0;
}
