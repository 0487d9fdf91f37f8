/*
 * s3_range.c - see s3_range.h.
 */
#include "s3_range.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

/* Parses a decimal uint64 at *p; advances p.  -1 when no digits/overflow. */
static int parse_u64(const char **p, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    if (!isdigit((unsigned char)*s))
        return -1;
    while (isdigit((unsigned char)*s)) {
        unsigned dgt = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - dgt) / 10)
            return -1;
        v = v * 10 + dgt;
        s++;
    }
    *p = s;
    *out = v;
    return 0;
}

int strata_s3_range_parse(const char *hdr, uint64_t size, uint64_t *off, uint64_t *len)
{
    if (!hdr)
        return 0;
    while (*hdr == ' ')
        hdr++;
    if (strncasecmp(hdr, "bytes=", 6) != 0)
        return 0; /* other units are ignored, as AWS does */
    const char *p = hdr + 6;
    while (*p == ' ')
        p++;
    if (strchr(p, ','))
        return 0; /* several ranges: AWS answers with the whole object */
    uint64_t a = 0, b = 0;
    bool has_a = false, has_b = false;
    if (isdigit((unsigned char)*p)) {
        if (parse_u64(&p, &a) != 0)
            return 0;
        has_a = true;
    }
    if (*p != '-')
        return 0;
    p++;
    if (isdigit((unsigned char)*p)) {
        if (parse_u64(&p, &b) != 0)
            return 0;
        has_b = true;
    }
    while (*p == ' ')
        p++;
    if (*p != '\0' || (!has_a && !has_b))
        return 0;
    if (!has_a) { /* suffix: the last b bytes */
        if (b == 0 || size == 0)
            return -1;
        if (b > size)
            b = size;
        *off = size - b;
        *len = b;
        return 1;
    }
    if (has_b && b < a)
        return 0; /* syntactically invalid: ignored (RFC 7233 2.1) */
    if (a >= size)
        return -1;
    if (!has_b || b >= size)
        b = size - 1;
    *off = a;
    *len = b - a + 1;
    return 1;
}
