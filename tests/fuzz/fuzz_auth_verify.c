/*
 * fuzz_auth_verify.c - libFuzzer target for strata_auth_verify: the input
 * is split on '\n' into method, path, query, then "name:value" headers
 * (Authorization, x-amz-*, Date...), so the fuzzer reaches the SigV4
 * header and presigned parsers, SigV2 and the canonicalisation.  Build with
 * tests/fuzz/build.sh.
 */
#include "fuzz.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"

static struct strata_creds *g_creds;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_creds &&
        strata_creds_load("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                          NULL, &g_creds, NULL, 0) != 0)
        abort();
    char *buf = strata_fuzz_strdup(data, size);
    char *lines[40];
    size_t n = 0;
    for (char *p = buf; n < 40;) {
        lines[n++] = p;
        char *nl = strchr(p, '\n');
        if (!nl)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    struct strata_auth_hdr hdrs[37];
    size_t nh = 0;
    for (size_t i = 3; i < n; i++) {
        char *colon = strchr(lines[i], ':');
        if (!colon)
            continue;
        *colon = '\0';
        hdrs[nh].name = lines[i];
        hdrs[nh].value = colon + 1;
        nh++;
    }
    struct strata_auth_req req = {
        .method = lines[0],
        .raw_path = n > 1 ? lines[1] : "/",
        .raw_query = n > 2 ? lines[2] : NULL,
        .hdrs = hdrs,
        .nhdrs = nh,
        .now = 1369353600,
    };
    struct strata_auth_result res;
    enum strata_auth_err e = strata_auth_verify(g_creds, &req, &res);
    if (e == STRATA_AUTH_OK && res.payload_mode >= STRATA_PAYLOAD_STREAMING_SIGNED) {
        struct strata_chunked *c;
        if (strata_chunked_create(&res, &c) == 0)
            strata_chunked_destroy(c);
    }
    free(buf);
    return 0;
}
