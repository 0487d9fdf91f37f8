/*
 * url.c - percent-decoding and AWS URI-encoding (see url.h).  Pure, no
 * allocation, any thread.
 */
#include "url.h"

#include <string.h>

#include "sbuf.h"
#include "strata/hex.h"

long strata_url_decode(const char *s, size_t n, char *out, size_t cap, bool plus_space)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int hi = strata_hex_val(s[i + 1]), lo = strata_hex_val(s[i + 2]);
            if (hi < 0 || lo < 0 || (hi | lo) == 0)
                return -1;
            c = (char)(hi << 4 | lo);
            i += 2;
        } else if (c == '+' && plus_space) {
            c = ' ';
        }
        if (o >= cap)
            return -1;
        out[o++] = c;
    }
    return (long)o;
}

int strata_url_decode_str(char *s, bool plus_space)
{
    size_t n = strlen(s);
    long d = strata_url_decode(s, n, s, n, plus_space);
    if (d < 0)
        return -1;
    s[d] = '\0';
    return 0;
}

static bool unreserved(unsigned char c, bool keep_slash)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_' || c == '.' || c == '~' || (c == '/' && keep_slash);
}

long strata_url_encode(const char *s, size_t n, char *out, size_t cap, bool keep_slash)
{
    static const char digits[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (unreserved(c, keep_slash)) {
            if (o + 1 > cap)
                return -1;
            out[o++] = (char)c;
        } else {
            if (o + 3 > cap)
                return -1;
            out[o++] = '%';
            out[o++] = digits[c >> 4];
            out[o++] = digits[c & 15];
        }
    }
    return (long)o;
}

int strata_url_encode_sbuf(struct strata_sbuf *b, const char *s, bool keep_slash)
{
    /* In slices through a stack buffer: keys are up to 1 KiB, values of
     * any length. */
    char enc[3 * 256];
    for (size_t n = strlen(s); n && !b->failed;) {
        size_t k = n < 256 ? n : 256;
        long e = strata_url_encode(s, k, enc, sizeof(enc), keep_slash);
        strata_sbuf_append(b, enc, (size_t)e);
        s += k;
        n -= k;
    }
    return b->failed ? -1 : 0;
}

void strata_url_xml_elem(struct strata_sbuf *b, const char *tag, const char *v, bool url)
{
    strata_sbuf_printf(b, "<%s>", tag);
    if (url)
        strata_url_encode_sbuf(b, v, true);
    else
        strata_sbuf_xml(b, v);
    strata_sbuf_printf(b, "</%s>", tag);
}
