/*
 * fuzz_range.c - libFuzzer target for strata_s3_range_parse, the Range
 * header of GetObject/HeadObject.
 *
 * Input: "<object size>\n<Range header value>", e.g. "100\nbytes=0-9"; with
 * no newline the whole input is the header against a 100-byte object.
 * Checks what a GET relies on: the result is 0, 1 or -1, and a range to
 * serve is non-empty and lies inside the object, with no overflow; the
 * parse does not depend on the case of "bytes=".
 */
#include "fuzz.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "s3_range.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = strata_fuzz_strdup(data, size);
    uint64_t obj = 100;
    char *hdr = s;
    char *nl = strchr(s, '\n');
    if (nl) {
        *nl = '\0';
        obj = strtoull(s, NULL, 10);
        hdr = nl + 1;
    }
    uint64_t off = UINT64_MAX, len = UINT64_MAX;
    int r = strata_s3_range_parse(hdr, obj, &off, &len);
    if (r != 0 && r != 1 && r != -1)
        STRATA_FUZZ_FAIL();
    if (r == 1 && (len == 0 || off >= obj || len > obj - off))
        STRATA_FUZZ_FAIL(); /* a served range must be non-empty and inside the object */

    /* Unit names are case-insensitive: "BYTES=" must parse identically. */
    for (char *p = hdr; *p && *p != '='; p++)
        *p = (char)toupper((unsigned char)*p);
    uint64_t off2 = UINT64_MAX, len2 = UINT64_MAX;
    int r2 = strata_s3_range_parse(hdr, obj, &off2, &len2);
    if (r2 != r || (r == 1 && (off2 != off || len2 != len)))
        STRATA_FUZZ_FAIL();
    free(s);
    return 0;
}
