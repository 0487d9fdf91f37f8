/*
 * s3_object_headers.c - see s3_object_headers.h.
 */
#include "s3_object_headers.h"

#include <string.h>
#include <strings.h>

#include "base64.h"

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

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                  : -1;
}

bool strata_s3_rfc2047_decode(const char *in, char *out, size_t out_len)
{
    size_t len = strlen(in);
    if (len < 8 || strncmp(in, "=?", 2) != 0 || strcmp(in + len - 2, "?=") != 0)
        return false;
    const char *cs = in + 2, *q1 = strchr(cs, '?');
    if (!q1 || q1[1] == '\0' || q1[2] != '?')
        return false;
    size_t csl = (size_t)(q1 - cs);
    if (!((csl == 5 && strncasecmp(cs, "UTF-8", 5) == 0) ||
          (csl == 8 && strncasecmp(cs, "US-ASCII", 8) == 0)))
        return false;
    char enc = q1[1];
    const char *text = q1 + 3, *end = in + len - 2;
    if (text > end || memchr(text, '?', (size_t)(end - text)) ||
        memchr(text, ' ', (size_t)(end - text)))
        return false;
    size_t tl = (size_t)(end - text);
    if (enc == 'B' || enc == 'b') {
        char b64[4096];
        if (tl >= sizeof(b64) || out_len == 0)
            return false;
        memcpy(b64, text, tl);
        b64[tl] = '\0';
        int n = strata_b64_decode(b64, (unsigned char *)out, out_len - 1);
        if (n < 0 || memchr(out, '\0', (size_t)n))
            return false;
        out[n] = '\0';
        return true;
    }
    if (enc != 'Q' && enc != 'q')
        return false;
    size_t w = 0;
    for (size_t i = 0; i < tl; i++) {
        int c = (unsigned char)text[i];
        if (c == '_') {
            c = ' ';
        } else if (c == '=') {
            int hi = i + 2 < tl ? hexval(text[i + 1]) : -1, lo = hi >= 0 ? hexval(text[i + 2]) : -1;
            if (lo < 0)
                return false;
            c = hi * 16 + lo;
            i += 2;
        }
        if (c == 0 || w + 1 >= out_len)
            return false;
        out[w++] = (char)c;
    }
    out[w] = '\0';
    return true;
}
