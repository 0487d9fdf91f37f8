/*
 * s3_object_headers.c - see s3_object_headers.h.
 */
#include "s3_object_headers.h"

#include <string.h>
#include <strings.h>

bool strata_s3_hdr_is_stored(const char *lname)
{
    static const char *const names[] = {
        "content-type",     "content-encoding", "content-disposition",
        "content-language", "cache-control",    "expires",
    };
    if (strncmp(lname, "x-amz-meta-", 11) == 0)
        return lname[11] != '\0';
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(lname, names[i]) == 0)
            return true;
    return false;
}

void strata_s3_content_encoding_strip(const char *in, char *out, size_t out_len)
{
    size_t w = 0;
    const char *p = in;
    out[0] = '\0';
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *start = p;
        while (*p && *p != ',')
            p++;
        size_t n = (size_t)(p - start);
        while (n && start[n - 1] == ' ')
            n--;
        if (n == 0 || (n == 11 && strncasecmp(start, "aws-chunked", 11) == 0))
            continue;
        if (w + n + 2 >= out_len)
            break;
        if (w)
            out[w++] = ',';
        memcpy(out + w, start, n);
        w += n;
        out[w] = '\0';
    }
}
