/*
 * s3_names.c - see s3_names.h.
 */
#include "s3_names.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

bool strata_s3_region_name_valid(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n <= 31 && name[0] != '-' && name[n - 1] != '-' &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") == n;
}

bool strata_s3_bucket_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n < 3 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
            return false;
        if (c == '.' && i + 1 < n && (name[i + 1] == '.' || name[i + 1] == '-'))
            return false;
        if (c == '-' && i + 1 < n && name[i + 1] == '.')
            return false;
    }
    if (!isalnum((unsigned char)name[0]) || !isalnum((unsigned char)name[n - 1]))
        return false;
    if (strncmp(name, "xn--", 4) == 0 || strncmp(name, "sthree-", 7) == 0)
        return false;
    if ((n > 8 && strcmp(name + n - 8, "-s3alias") == 0) ||
        (n > 7 && strcmp(name + n - 7, "--ol-s3") == 0))
        return false;
    /* An IPv4 address looks like a host, so AWS refuses it. */
    unsigned a, b, c, d;
    char tail;
    if (sscanf(name, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) == 4)
        return false;
    return true;
}

bool strata_s3_utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p++;
        if (c < 0x80)
            continue;
        unsigned n, cp, min;
        if (c >= 0xC2 && c <= 0xDF)
            n = 1, cp = c & 0x1F, min = 0x80;
        else if (c >= 0xE0 && c <= 0xEF)
            n = 2, cp = c & 0x0F, min = 0x800;
        else if (c >= 0xF0 && c <= 0xF4)
            n = 3, cp = c & 0x07, min = 0x10000;
        else
            return false; /* a continuation byte, C0/C1 or F5-FF lead */
        for (unsigned i = 0; i < n; i++, p++) {
            if ((*p & 0xC0) != 0x80)
                return false; /* also stops at the terminating NUL */
            cp = (cp << 6) | (*p & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
    }
    return true;
}
