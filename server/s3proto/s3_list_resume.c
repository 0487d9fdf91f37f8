/*
 * s3_list_resume.c - see s3_list_resume.h.
 */
#include "s3_list_resume.h"

#include <stdio.h>
#include <string.h>

char *strata_s3_list_resume_key(const char *prefix, const char *delim, const char *marker,
                                char *out, size_t out_len)
{
    size_t plen = prefix ? strlen(prefix) : 0;
    snprintf(out, out_len, "%s", marker);
    if (!delim || !*delim || strncmp(marker, prefix ? prefix : "", plen) != 0)
        return out;
    const char *d = strstr(marker + plen, delim);
    if (!d)
        return out;
    size_t cut = (size_t)(d - marker) + strlen(delim);
    if (cut + 2 <= out_len) {
        out[cut] = '\xff';
        out[cut + 1] = '\0';
    }
    return out;
}
