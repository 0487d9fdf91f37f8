/*
 * fuzz_chunked.c - libFuzzer target for the aws-chunked decoder.  The first
 * byte picks the payload mode and the feed split; the rest is the body,
 * fed in pieces.  Signed modes use the key and seed of AWS's streaming
 * example, so the framing parser, the trailer parser and the signature
 * paths all run.  Build with tests/fuzz/build.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int sink_cb(void *ud, const void *p, size_t n)
{
    uint64_t *total = ud;
    const volatile uint8_t *b = p;
    if (n)
        (void)b[n - 1]; /* the bytes handed out must be readable */
    *total += n;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const int modes[] = {STRATA_PAYLOAD_STREAMING_SIGNED,
                                STRATA_PAYLOAD_STREAMING_SIGNED_TRAILER,
                                STRATA_PAYLOAD_STREAMING_UNSIGNED_TRAILER};
    struct strata_auth_result a;
    memset(&a, 0, sizeof(a));
    a.payload_mode = modes[data[0] % 3];
    a.decoded_length = (data[0] & 0x80) ? 11 : UINT64_MAX;
    if (data[0] & 0x40)
        strcpy(a.trailer, "x-amz-checksum-crc32");
    memset(a.signing_key, 0x5a, sizeof(a.signing_key));
    strcpy(a.seed_signature, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
    strcpy(a.amz_date, "20130524T000000Z");
    strcpy(a.scope, "20130524/us-east-1/s3/aws4_request");
    struct strata_chunked *c;
    if (strata_chunked_create(&a, &c) != 0)
        abort();
    size_t step = 1 + ((data[0] >> 2) & 15) * 7;
    uint64_t total = 0;
    enum strata_auth_err err;
    int rc = 0;
    for (size_t off = 1; off < size && rc == 0; off += step) {
        size_t n = size - off < step ? size - off : step;
        rc = strata_chunked_feed(c, data + off, n, sink_cb, &total, &err);
    }
    if (rc == 0 && strata_chunked_finish(c, &err) == 0) {
        if (total != strata_chunked_decoded_bytes(c))
            abort();
        if (a.decoded_length != UINT64_MAX && total != a.decoded_length)
            abort();
    }
    strata_chunked_destroy(c);
    return 0;
}
